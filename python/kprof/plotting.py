"""Plots and HTML reports of :class:`kprof.ProfileResults`, drawn by kprof's Rust renderer
(crate ``kprof-plot``, through ``kprof._core.render_plot`` / ``render_report``): the same images
as ``kprof plot`` and ``kprof report`` on the command line.

* :class:`Plot`: an SVG plot; shows inline in Jupyter (``_repr_svg_``).
* :func:`plot_spec`: nsight-python's ``@analyze.plot`` options checked and turned into the spec
  ``render_plot`` takes.
* :func:`render`: draws the plot, writes the file, and makes the matplotlib ``Figure`` when
  matplotlib is installed.
"""

from __future__ import annotations

import io
import math
import os
import tempfile
from typing import Any, Callable, Iterable

from . import _core
from .exceptions import ConfigError

__all__ = ["Plot", "plot_spec", "render", "IMAGE_EXTENSIONS", "DPI"]

#: File types the renderer writes.
IMAGE_EXTENSIONS = (".png", ".svg")

#: Pixels per inch when nsight-python's ``plot_width`` / ``plot_height`` (inches) are given.
DPI = 100


class Plot:
    """A plot drawn by kprof: the SVG text, and the file written (if any).

    In Jupyter the object displays as the SVG. ``str(plot)`` is the SVG text.
    """

    def __init__(self, svg: str, path: str | None = None):
        #: The SVG document.
        self.svg = svg
        #: The image file written, or None.
        self.path = path

    def _repr_svg_(self) -> str:
        return self.svg

    def save(self, path: str | os.PathLike) -> str:
        """Writes the SVG text to ``path`` (use :meth:`ProfileResults.plot` for PNG); returns the path."""
        path = os.fspath(path)
        _core.write_file(path, self.svg.encode("utf-8"))
        return path

    def __str__(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        where = f" written to {self.path!r}" if self.path else ""
        return f"<kprof.Plot: SVG of {len(self.svg)} characters{where}>"


def _names(option: str, value: Any) -> list[str]:
    """``None`` → ``[]``; a string → ``[string]``; an iterable of strings → the list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    try:
        items = list(value)
    except TypeError:
        raise ConfigError(f"{option} must be a list of parameter names, got {value!r}") from None
    for v in items:
        if not isinstance(v, str):
            raise ConfigError(f"{option} must be a list of names (strings), got the item {v!r}")
    return items


def check_options(
    *,
    filename: Any = None,
    plot_type: Any = "line",
    show_aggregate: Any = None,
    plot_width: Any = None,
    plot_height: Any = None,
    plot_callback: Any = None,
) -> None:
    """Checks the options that do not depend on the results (``@plot`` checks them when it is applied)."""
    if filename is not None:
        if not isinstance(filename, (str, os.PathLike)):
            raise ConfigError(f"filename must be a path, got {filename!r}")
        ext = os.path.splitext(os.fspath(filename))[1].lower()
        if ext not in IMAGE_EXTENSIONS:
            raise ConfigError(
                f"filename {os.fspath(filename)!r}: kprof writes .png or .svg images, got {ext or '(no extension)'!r}"
            )
    if not isinstance(plot_type, str) or plot_type.lower() not in ("line", "bar"):
        raise ConfigError(f"plot_type must be 'line' or 'bar', got {plot_type!r}")
    if show_aggregate is not None and (
        not isinstance(show_aggregate, str) or show_aggregate.lower() not in ("avg", "geomean")
    ):
        raise ConfigError(f"show_aggregate must be None, 'avg' or 'geomean', got {show_aggregate!r}")
    for name, v in (("plot_width", plot_width), ("plot_height", plot_height)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or math.isinf(v)):
            raise ConfigError(f"{name} must be a positive number of inches, got {v!r}")
    if plot_callback is not None and not callable(plot_callback):
        raise ConfigError(f"plot_callback must be callable, got {plot_callback!r}")


def _is_numeric(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    kind, _ = _core.param_value(v)
    return kind in ("int", "float")


def plot_spec(
    results: Any,
    metric: str | None,
    *,
    title: str | None = None,
    ylabel: str | None = None,
    annotate_points: bool = False,
    show_aggregate: str | None = None,
    plot_type: str = "line",
    row_panels: Iterable[str] | None = None,
    col_panels: Iterable[str] | None = None,
    x_keys: Iterable[str] | None = None,
    variant_fields: Iterable[str] | None = None,
    variant_annotations: Iterable[str] | None = None,
    error_bars: bool = True,
    plot_width: float | None = None,
    plot_height: float | None = None,
) -> dict[str, Any]:
    """The spec dict of ``_core.render_plot`` for ``results`` (a :class:`kprof.ProfileResults`).

    The x axis: ``x_keys`` with one parameter puts that parameter on the axis (numeric, log-2
    for powers of two); several ``x_keys`` must be all the parameters not used for panels or
    variants (a categorical ``"p1=v1, p2=v2"`` axis, nsight-python's default). Without
    ``x_keys``, a single remaining parameter with numeric values goes on a numeric axis, and
    otherwise the axis is categorical.
    """
    check_options(plot_type=plot_type, show_aggregate=show_aggregate, plot_width=plot_width, plot_height=plot_height)
    if metric is not None and not isinstance(metric, str):
        raise ConfigError(f"metric must be a metric name (a string) or None, got {metric!r}")
    rows, cols = _names("row_panels", row_panels), _names("col_panels", col_panels)
    variants, variant_anns = _names("variant_fields", variant_fields), _names("variant_annotations", variant_annotations)
    if variant_anns and not variant_fields:
        raise ConfigError("variant_annotations needs variant_fields (the parameters that split those annotations)")
    params = results.params
    used = rows + cols + variants
    x: str | None = None
    if x_keys is not None:
        keys = _names("x_keys", x_keys)
        unknown = [k for k in keys if k not in params]
        if unknown:
            raise ConfigError(f"x_keys {unknown} are not parameters; available parameters: {', '.join(params) or '(none)'}")
        overlap = [k for k in keys if k in used]
        if overlap:
            raise ConfigError(f"x_keys {overlap} are also used as row_panels, col_panels or variant_fields")
        remaining = [p for p in params if p not in used]
        if len(keys) == 1:
            x = keys[0]
        elif sorted(keys) != sorted(remaining):
            raise ConfigError(
                f"x_keys={keys}: with several x keys kprof draws a categorical axis of every parameter not used "
                f"for panels or variants ({remaining}); name one x key, or move the others to "
                "row_panels / col_panels / variant_fields"
            )
    else:
        remaining = [p for p in params if p not in used]
        if len(remaining) == 1:
            values = results._raw.get(remaining[0], [])
            if values and all(_is_numeric(v) for v in values):
                x = remaining[0]
    spec: dict[str, Any] = {
        "metric": metric,
        "x": x,
        "plot_type": plot_type.lower(),
        "error_bars": bool(error_bars),
        "row_panels": rows,
        "col_panels": cols,
        "aggregate": show_aggregate.lower() if isinstance(show_aggregate, str) else None,
        "annotate_points": bool(annotate_points),
        "title": title,
        "ylabel": ylabel,
        "variant_fields": variants,
        "variant_annotations": variant_anns,
    }
    if plot_width is not None or plot_height is not None:
        # nsight-python: figsize = (max(plot_width * ncols, 8), max(plot_height * nrows, 6)) inches.
        ncols = _combinations(results, cols)
        nrows = _combinations(results, rows)
        spec["width"] = int(round(max((plot_width or 6) * ncols, 8) * DPI))
        spec["height"] = int(round(max((plot_height or 4) * nrows, 6) * DPI))
    return spec


def _combinations(results: Any, names: list[str]) -> int:
    if not names:
        return 1
    raw = results._raw
    n = len(raw.get("Annotation", []))
    seen = set()
    for i in range(n):
        try:
            seen.add(tuple(str(raw[p][i]) for p in names))
        except KeyError:
            return 1  # an unknown name: the renderer reports it with the available ones
    return max(len(seen), 1)


def matplotlib_available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure_from_png(png_path: str):
    """A matplotlib Figure showing the PNG at its pixel size (axes off)."""
    import matplotlib.image
    from matplotlib.figure import Figure

    img = matplotlib.image.imread(png_path)
    h, w = img.shape[0], img.shape[1]
    fig = Figure(figsize=(w / DPI, h / DPI), dpi=DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(img, interpolation="none")
    ax.set_axis_off()
    return fig


def render(
    results: Any,
    spec: dict[str, Any],
    filename: str | os.PathLike | None,
    *,
    want_figure: bool,
    plot_callback: Callable | None = None,
) -> tuple[Plot, Any]:
    """Draws the plot of ``results``; writes ``filename`` (PNG or SVG by extension) when given.

    Returns the :class:`Plot` and the matplotlib Figure (None when ``want_figure`` is false or
    matplotlib is not installed). ``plot_callback(fig)`` (nsight-python) needs matplotlib; it
    runs before the file is written, and the file is then saved from the Figure.
    """
    path = None if filename is None else os.fspath(filename)
    if path is not None:
        check_options(filename=path)
    if plot_callback is not None and not matplotlib_available():
        raise ImportError("plot_callback receives a matplotlib Figure: pip install matplotlib")
    columns, options, _ = results._core_inputs()
    figure = None
    if (want_figure or plot_callback is not None) and matplotlib_available():
        with tempfile.TemporaryDirectory(prefix="kprof-plot-") as tmp:
            png = os.path.join(tmp, "plot.png")
            svg = _call_render(_core.render_plot, columns, options, spec, png)
            figure = _figure_from_png(png)
        if plot_callback is not None:
            plot_callback(figure)
            if path is not None:
                buf = io.BytesIO()
                figure.savefig(buf, dpi=DPI, format=os.path.splitext(path)[1].lstrip(".").lower() or "png")
                _core.write_file(path, buf.getvalue())
        elif path is not None:
            _call_render(_core.render_plot, columns, options, spec, path)
    else:
        svg = _call_render(_core.render_plot, columns, options, spec, path)
    return Plot(svg, path), figure


def _call_render(fn: Callable, *args: Any) -> str:
    try:
        return fn(*args)
    except ValueError as e:
        raise ConfigError(str(e)) from e


def in_jupyter() -> bool:
    """Whether the code runs in a Jupyter kernel (IPython with a kernel attached)."""
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def display_inline(plot: Plot) -> None:
    """Shows the SVG in the Jupyter output (no-op outside Jupyter)."""
    if not in_jupyter():
        return
    try:
        from IPython.display import display  # type: ignore[import-not-found]
    except ImportError:
        return
    display(plot)
