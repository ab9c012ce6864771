"""``ProfileResults``: what a ``@kprof.kernel`` function returns.

It holds the raw table (one row per annotation x config x run x metric) and turns it into the
processed table (one row per annotation x metric x config) through kprof's Rust core,
``kprof._core.process_raw``, the same code the ``kprof summarize`` command uses. There is no
second statistics engine in Python.

The contract of ``_core.process_raw(raw_columns, options) -> dict[str, list]``:

* ``raw_columns``: dict of equally long lists, in raw order: ``Annotation`` (str), ``Value``
  (float, NaN for failed runs), ``Metric`` (str), ``Kernel`` (str), ``GPU`` (str), ``Host`` (str),
  ``ComputeClock`` (float | None), ``MemoryClock`` (float | None), ``Unit`` (str | None), then one
  column per parameter (values int | float | bool | str, already converted with
  ``_core.param_value``; the original objects stay here), then ``Benchmark`` (str) and ``Run``
  (int).
* ``options``: ``{"params": [parameter names in order], "normalize_against": str | None,
  "stable_rsd_pct": float}``.
* returns a dict of equally long lists, one entry per processed row in first-occurrence order of
  the raw rows, with the columns of :data:`PROCESSED_COLUMNS` (``NormalizationValue`` only when
  normalising; ``<params>`` stands for the parameter columns, returned as the converted scalars):
  floats or None (NaN) for the statistics, ints for the counts, ``StableMeasurement`` True / False /
  None, ``Normalized`` False or the baseline's name. Extra columns are kept, after these.
* raises ``ValueError`` for input it cannot process (the message is shown to the user).
"""

from __future__ import annotations

import html
import json
import math
import os
from typing import Any, Callable, Iterable

from . import _core, plotting
from . import throughput as _throughput
from . import timeline as _timeline
from ._backend import RAW_COLUMNS
from .exceptions import BackendError, ConfigError, NotAvailableYetError, ProfilerError

__all__ = ["ProfileResults", "PROCESSED_COLUMNS", "FLOAT_COLUMNS", "INT_COLUMNS", "WORKER_COLUMNS"]

#: The processed columns, in order; ``<params>`` is replaced by the parameter columns and
#: ``NormalizationValue`` is present only when normalising. Up to ``Geomean`` this is
#: nsight-python 1.1's order; the rest are kprof's. All names here are kprof-core's
#: (``kprof_core::columns``), through ``kprof._core``.
PROCESSED_COLUMNS: tuple[str, ...] = (
    *_core.PROCESSED_KEY_COLUMNS,
    "<params>",
    *_core.PROCESSED_COLUMNS[len(_core.PROCESSED_KEY_COLUMNS) :],
)

#: The processed columns holding floats (None / NaN when missing).
FLOAT_COLUMNS = frozenset(_core.PROCESSED_FLOAT_COLUMNS)
#: The processed columns holding run counts.
INT_COLUMNS = frozenset(_core.PROCESSED_INT_COLUMNS)

STABLE_RSD_PCT = 2.0

#: The columns a scale-out call (``devices=`` / ``executor=``, :mod:`kprof.scaleout`) adds to the
#: raw and processed tables, last: the GPU's ordinal on its host (-1: unknown), its UUID, and why
#: the row's runs could not be measured ("" when they were). They are part of a processed row's key.
WORKER_COLUMNS = ("Device", "DeviceUUID", "Failure")


def _require_pandas(what: str):
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - pandas is a dependency
        raise ImportError(f"{what} needs pandas: pip install pandas") from e
    return pd


def _param_key(value: Any) -> tuple[str, Any]:
    kind, converted = _core.param_value(value)
    return kind, converted


class ProfileResults:
    """The results of one call of a ``@kprof.kernel`` function.

    * :meth:`to_dataframe`: the processed table (pandas), nsight-python's columns then kprof's;
    * :meth:`raw`: the raw table (pandas);
    * :meth:`to_polars`, :meth:`to_dict`: the processed table as polars / plain columns;
    * :meth:`save`: write the processed table (``.csv``) or everything (``.json``);
      :func:`kprof.load` reads a raw CSV or a JSON file back;
    * :meth:`save_to_store`: keep the run in a results store (``kprof history``, ``kprof compare --against``);
    * :meth:`plot`: plot a metric (PNG/SVG, matplotlib Figure when available);
    * :meth:`report`: write the self-contained HTML report;
    * :meth:`to_trace`: write the timeline as Chrome trace-event JSON (Perfetto).

    After :meth:`plot` (or ``@kprof.analyze.plot``), :attr:`figure` holds the matplotlib Figure
    when matplotlib is installed, else the :class:`kprof.plotting.Plot` (SVG).
    """

    #: The last plot: a matplotlib Figure when matplotlib is installed, else a
    #: :class:`kprof.plotting.Plot`; None before any plot.
    figure: Any = None
    #: The last plot as a :class:`kprof.plotting.Plot` (SVG text, path written); None before any plot.
    plot_image: Any = None

    def __init__(
        self,
        raw: dict[str, list],
        params: list[str],
        *,
        normalize_against: str | None = None,
        benchmark: str | None = None,
        stable_rsd_pct: float = STABLE_RSD_PCT,
        key_columns: Iterable[str] = (),
        pool_devices: bool = False,
    ):
        #: The measurement's timeline when the backend recorded one (:meth:`to_trace`).
        self._timeline: Any = raw.pop(_timeline.TIMELINE_KEY, None)
        self._raw = raw
        # Raw columns that join the statistics key (WORKER_COLUMNS): runs of different GPUs make
        # different rows; with pool_devices, runs of one GPU model pool (Device lists the GPUs).
        self._keys = [c for c in key_columns if c in raw]
        self._pool_devices = pool_devices
        self._params = list(params)
        self._normalize_against = normalize_against
        self._stable_rsd_pct = stable_rsd_pct
        bench = raw.get("Benchmark") or []
        self.benchmark = benchmark if benchmark is not None else (bench[0] if bench else "")
        self._processed: dict[str, list] | None = None
        #: The work of one run (the decorator's ``throughput=``), for :meth:`throughput`.
        self.throughput_work: Callable | None = None

    # -- public API --

    @property
    def params(self) -> list[str]:
        """The parameter names of the profiled function, in order."""
        return list(self._params)

    def raw(self):
        """The raw table as a pandas DataFrame: one row per annotation x config x run x metric.

        Columns: Annotation, Value, Metric, Kernel, GPU, Host, ComputeClock, MemoryClock, Unit,
        <params>, Benchmark, Run.
        """
        pd = _require_pandas("ProfileResults.raw()")
        df = pd.DataFrame({name: self._column_series(pd, name, values) for name, values in self._raw.items()})
        return df

    def raw_columns(self) -> dict[str, list]:
        """The raw table as plain columns (a copy)."""
        return {k: list(v) for k, v in self._raw.items()}

    def to_dict(self) -> dict[str, list]:
        """The processed table as plain columns (a copy), parameter values as the user gave them."""
        return {k: list(v) for k, v in self._process().items()}

    def to_dataframe(self):
        """The processed table as a pandas DataFrame (a new frame on each call).

        Columns: nsight-python 1.1's ``Annotation, Metric, <params>, AvgValue, StdDev, MinValue,
        MaxValue, NumRuns, Kernel, GPU, Host, ComputeClock, MemoryClock, Unit, CI95_Lower,
        CI95_Upper, RelativeStdDevPct, StableMeasurement, Normalized, [NormalizationValue],
        Geomean``, then kprof's ``Benchmark, Median, P05, P95, TotalRuns, OutliersMild,
        OutliersSevere``.
        """
        pd = _require_pandas("ProfileResults.to_dataframe()")
        cols = self._process()
        return pd.DataFrame({name: self._column_series(pd, name, values) for name, values in cols.items()})

    def to_polars(self):
        """The processed table as a polars DataFrame (needs ``pip install polars``)."""
        try:
            import polars as pl
        except ImportError as e:
            raise ImportError(
                "ProfileResults.to_polars() needs polars: pip install polars (or pip install 'kprof[polars]')"
            ) from e
        cols = self._process()
        data = {}
        for name, values in cols.items():
            if name in FLOAT_COLUMNS:
                data[name] = pl.Series(name, [_float_or_none(v) for v in values], dtype=pl.Float64)
            elif name in INT_COLUMNS:
                data[name] = pl.Series(name, [int(v) for v in values], dtype=pl.Int64)
            elif name == "StableMeasurement":
                data[name] = pl.Series(name, [None if v is None else bool(v) for v in values], dtype=pl.Boolean)
            elif name == "Normalized":
                data[name] = pl.Series(name, ["" if v is False else str(v) for v in values], dtype=pl.Utf8)
            else:
                try:
                    data[name] = pl.Series(name, values)
                except Exception:
                    data[name] = pl.Series(name, [str(v) for v in values], dtype=pl.Utf8)
        return pl.DataFrame(data)

    def save(self, path: str | os.PathLike) -> str:
        """Writes the results; returns the path written. Missing folders are created, an existing
        file is replaced atomically, a symbolic link's target is written (kprof's one writer).

        ``.csv``: the processed CSV (nsight-python's ``processed_data`` layout plus kprof's
        columns). ``.json``: kprof's JSON result file (raw and processed tables and the
        environment fingerprint), the file ``kprof summarize RAW -o x.json`` writes; read it back
        with :func:`kprof.load`.
        """
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".csv":
            columns, options, _ = self._core_inputs()
            try:
                _core.write_csv(columns, options, path, "processed")
            except ValueError as e:
                raise ProfilerError(f"cannot save the results of {self.benchmark!r} to {path}: {e}") from e
            return path
        if ext == ".json":
            columns, options, _ = self._core_inputs()
            fingerprint = getattr(self, "fingerprint", None)
            environment = None if fingerprint is None else json.dumps(fingerprint)
            try:
                _core.save_results_json(columns, options, path, environment)
            except ValueError as e:
                raise ProfilerError(f"cannot save the results of {self.benchmark!r} to {path}: {e}") from e
            return path
        raise ConfigError(
            f"ProfileResults.save({path!r}): unknown file type {ext or '(none)'!r}; use a .csv or .json path"
        )

    def save_to_store(
        self,
        path: str | os.PathLike | None = None,
        *,
        tags: dict[str, Any] | None = None,
        commit: str | None = None,
        name: str | None = None,
    ) -> int:
        """Stores these results (raw samples, processed table, fingerprint) as one run of the
        results store at ``path`` (default: ``$KPROF_STORE``, else ``kprof.db``), created when
        missing; returns the run id. See ``docs/store.md``.

        The run records the git commit, branch and dirty state of the current directory (or
        ``commit``), the host, ``name`` (default: the benchmark name) and ``tags``
        (``{"gpu": "h200"}``). ``kprof history`` and ``kprof compare --against`` read it back.
        """
        if path is None:
            path = os.environ.get("KPROF_STORE") or "kprof.db"
        path = os.fspath(path)
        if tags is None:
            tags = {}
        if not isinstance(tags, dict):
            raise ConfigError(f"tags must be a dict like {{'gpu': 'h200'}}, got {tags!r}")
        fingerprint = getattr(self, "fingerprint", None)
        columns, options, _ = self._core_inputs()
        try:
            return _core.store_raw(
                columns,
                options,
                path,
                name or self.benchmark or "results",
                [(str(k), str(v)) for k, v in tags.items()],
                commit,
                None if fingerprint is None else json.dumps(fingerprint),
            )
        except ValueError as e:
            raise ConfigError(str(e)) from e
        except RuntimeError as e:
            raise BackendError(str(e)) from e

    def to_trace(self, path: str | os.PathLike) -> str:
        """Writes the measurement's timeline as Chrome trace-event JSON (open it in Perfetto,
        ui.perfetto.dev, or chrome://tracing); returns the path. Every kernel of every run is a
        slice on its GPU and stream, every region a slice on the thread that opened it, every
        counter value (metrics other than durations) a point of a counter track of its GPU.

        Only results measured in this process with a backend that records a timeline have one;
        others (results read from a file, merged from scale-out workers) raise
        :class:`kprof.ConfigError`.
        """
        if self._timeline is None:
            raise ConfigError(
                f"the results of {self.benchmark!r} hold no timeline: to_trace() needs results measured in this "
                "process by a backend that records kernel timestamps (not read from a file or merged from workers)"
            )
        try:
            return self._timeline.write(path)
        except ValueError as e:
            raise ProfilerError(f"cannot write the trace of {self.benchmark!r} to {path}: {e}") from e

    def plot(
        self,
        filename: str | os.PathLike | None = None,
        metric: str | None = None,
        *,
        title: str | None = None,
        ylabel: str | None = None,
        annotate_points: bool = False,
        show_aggregate: str | None = None,
        plot_type: str = "line",
        row_panels: Iterable[str] | None = None,
        col_panels: Iterable[str] | None = None,
        x_keys: Iterable[str] | None = None,
        print_data: bool = False,
        variant_fields: Iterable[str] | None = None,
        variant_annotations: Iterable[str] | None = None,
        error_bars: bool = True,
        plot_width: float | None = None,
        plot_height: float | None = None,
        plot_callback: Callable | None = None,
    ):
        """Plots one metric against the configurations, with CI95 error bars (kprof's renderer,
        the same as ``kprof plot``).

        Options are those of nsight-python's ``@analyze.plot`` (see :func:`kprof.analyze.plot`)
        plus ``error_bars``. ``filename``: write a ``.png`` or ``.svg`` file. ``metric``: may be
        left out when the results have one metric; an unknown metric or parameter raises
        :class:`kprof.ConfigError` listing the available ones.

        Returns a matplotlib ``Figure`` (the rendered image) when matplotlib is installed;
        otherwise the path written, or, without ``filename``, a :class:`kprof.plotting.Plot`
        (SVG; shows inline in Jupyter). Either way :attr:`figure` holds the Figure when there is
        one, else the :class:`~kprof.plotting.Plot`.
        """
        spec = plotting.plot_spec(
            self,
            metric,
            title=title,
            ylabel=ylabel,
            annotate_points=annotate_points,
            show_aggregate=show_aggregate,
            plot_type=plot_type,
            row_panels=row_panels,
            col_panels=col_panels,
            x_keys=x_keys,
            variant_fields=variant_fields,
            variant_annotations=variant_annotations,
            error_bars=error_bars,
            plot_width=plot_width,
            plot_height=plot_height,
        )
        if print_data:
            self._print_data(metric)
        drawn, figure = plotting.render(self, spec, filename, want_figure=True, plot_callback=plot_callback)
        self.plot_image = drawn
        self.figure = figure if figure is not None else drawn
        if figure is not None:
            return figure
        return drawn.path if drawn.path is not None else drawn

    def report(self, path: str | os.PathLike = "report.html", *, title: str | None = None) -> str:
        """Writes the self-contained HTML report (summary table, a plot per metric with error
        bars, per-configuration distributions, warnings), the page ``kprof report`` writes;
        returns the path."""
        path = os.fspath(path)
        columns, options, _ = self._core_inputs()
        inputs = [{"title": self.benchmark or "results", "raw": columns, "options": options}]
        try:
            _core.render_report(inputs, {"title": title or f"kprof report: {self.benchmark}"}, path)
        except ValueError as e:
            raise ConfigError(str(e)) from e
        return path

    def speed_of_light(self):
        """Speed of light per region and configuration, as a pandas DataFrame (kprof-core's
        ``sol``, the table of ``kprof sol``): SM, memory, DRAM, L1 and L2 throughput as % of
        peak, achieved FLOP/s per precision with the device's peak, DRAM bytes/s and its peak,
        arithmetic intensity, and ``Verdict`` (``compute-bound``, ``memory-bound``,
        ``balanced``, ``latency-bound``, ``unknown``) with its ``Reason``. The verdict follows
        ncu's rule: SM and memory both under 60 % of peak latency-bound, within 10 points
        balanced, else the busier one. Profile with ``metrics=["SpeedOfLight"]`` (and
        ``"SpeedOfLight_RooflineChart"`` for FLOP/s); what was not measured is NaN."""
        pd = _require_pandas("ProfileResults.speed_of_light()")
        columns, options, _ = self._core_inputs()
        try:
            return pd.DataFrame(_core.speed_of_light(columns, options))
        except ValueError as e:
            raise ConfigError(str(e)) from e

    def throughput(self, work: Callable | None = None):
        """Rates per region and configuration as a pandas DataFrame: the work of one run over its
        duration, e.g. ``results.throughput(lambda n: {"flops": 2 * n**3})``, with the interval
        the duration's CI95 gives and the share of the device's peak (bytes against the DRAM's,
        FLOPs against a precision's) when the counters measured it. ``work`` defaults to the
        decorator's ``throughput=``. Columns: ``Annotation``, the parameters, ``Quantity``,
        ``PerRun``, ``PerSecond``, ``CI95_Lower``, ``CI95_Upper``, ``Peak``, ``PctOfPeak`` and its
        interval; see :mod:`kprof.throughput`."""
        work = _throughput.check(work if work is not None else self.throughput_work)
        if work is None:
            raise ConfigError("throughput() needs the work of one run: pass work=f(*config values) or decorate with throughput=")
        pd = _require_pandas("ProfileResults.throughput()")
        return pd.DataFrame(_throughput.table(self._process(), self._params, work, self.speed_of_light()))

    def plot_roofline(self, filename: str | os.PathLike | None = None, *, title: str | None = None):
        """The roofline (kprof-plot's, as in the HTML report): each region and configuration a
        point per precision measured (arithmetic intensity, FLOP/s), a sweep's configurations
        joined as a path, under the device's roofs from the counters' peak metrics. Needs
        ``metrics=["SpeedOfLight", "SpeedOfLight_RooflineChart"]`` (fp32, fp64; add
        ``"SpeedOfLight_HierarchicalHalfRooflineChart"`` for fp16). Writes ``filename`` (PNG
        when it ends in ``.png``, else SVG) when given and returns its path; else returns a :class:`kprof.plotting.Plot`.
        :class:`kprof.ConfigError` when no region has FLOP/s and DRAM bytes/s."""
        columns, options, _ = self._core_inputs()
        path = None if filename is None else os.fspath(filename)
        try:
            svg = _core.render_roofline(columns, options, title, path)
        except ValueError as e:
            raise ConfigError(str(e)) from e
        return path if path is not None else plotting.Plot(svg)

    def _print_data(self, metric: str | None) -> None:
        cols = self._process()
        header, rows = self._summary_rows(cols)
        if metric is not None:
            rows = [r for r, m in zip(rows, cols["Metric"]) if m == metric]
        print(self._durations_head() + _text_table(header, rows))

    def durations_line(self) -> str | None:
        """The line printed before the tables: which definition of a kernel's duration the
        ``gpu__time_duration.sum`` rows used (their ``DurationSource``: Nsight Compute's
        ``gpu__time_duration`` from the counters by default, ``kprof run``'s CUPTI kernel records
        with ``duration_source="records"``) and how to choose the other; None without such rows."""
        metrics = self._raw.get("Metric", [])
        given = self._raw.get("DurationSource") or [None] * len(metrics)
        sources: list[str] = []
        for m, src in zip(metrics, given):
            if m == "gpu__time_duration.sum" and isinstance(src, str) and src and src not in sources:
                sources.append(src)
        return _core.durations_line(sources)

    def _durations_head(self) -> str:
        line = self.durations_line()
        return "" if line is None else line + "\n"

    def _write_raw_csv(self, path: str) -> str:
        """Writes the raw table through kprof-core's raw CSV writer (``_core.write_csv``, the
        engine's and ``kprof run``'s): nsight-python's columns, the extra columns (run conditions,
        info collectors), the parameters, then ``Benchmark,Run``."""
        columns, options, _ = self._core_inputs(check_baseline=False)
        try:
            _core.write_csv(columns, options, path, "raw")
        except ValueError as e:
            raise ProfilerError(f"cannot write the raw results of {self.benchmark!r} to {path}: {e}") from e
        return path

    def __len__(self) -> int:
        return len(self._process()["Annotation"])

    def __repr__(self) -> str:
        try:
            cols = self._process()
        except Exception as e:  # a repr never raises
            n = len(self._raw.get("Annotation", []))
            return (
                f"<ProfileResults {self.benchmark!r}: {n} raw rows; processed table unavailable: "
                f"{type(e).__name__}: {e}>"
            )
        header, rows = self._summary_rows(cols)
        head = f"ProfileResults {self.benchmark!r} ({len(rows)} rows)\n"
        try:
            head += self._durations_head()
        except Exception:  # a repr never raises
            pass
        return head + _text_table(header, rows)

    def _repr_html_(self) -> str:
        try:
            cols = self._process()
        except Exception:
            return f"<pre>{html.escape(repr(self))}</pre>"
        header, rows = self._summary_rows(cols)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        plots = "".join(self._inline_plots(cols))
        return (
            f"<div><b>ProfileResults</b> {html.escape(self.benchmark)} ({len(rows)} rows; "
            f"<code>.to_dataframe()</code> has every column)"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{plots}</div>"
        )

    #: At most this many metrics are plotted under the table in a notebook.
    INLINE_PLOTS = 3

    def _inline_plots(self, cols: dict[str, list]) -> list[str]:
        """The SVG plot of each metric (at most :attr:`INLINE_PLOTS`) against the configurations,
        for :meth:`_repr_html_`; none without parameters, and a plot that cannot be drawn is left
        out (a repr never raises)."""
        if not self._params:
            return []
        metrics = list(dict.fromkeys(cols.get("Metric", [])))[: self.INLINE_PLOTS]
        out = []
        for metric in metrics:
            try:
                spec = plotting.plot_spec(self, metric)
                drawn, _ = plotting.render(self, spec, None, want_figure=False)
            except Exception:
                continue
            svg = drawn.svg[drawn.svg.find("<svg") :] if "<svg" in drawn.svg else ""
            if svg:
                out.append(f'<div class="kprof-plot" style="max-width:760px">{svg}</div>')
        return out

    # -- processing --

    def _process(self) -> dict[str, list]:
        if self._processed is None:
            self._processed = self._run_process_raw()
        return self._processed

    def _core_inputs(
        self, check_baseline: bool = True, keys: bool = False
    ) -> tuple[dict[str, list], dict[str, Any], dict[str, dict]]:
        """The raw columns and options ``_core.process_raw`` (and ``render_plot``) take, and the
        original parameter objects by converted value. ``check_baseline``: a ``normalize_against``
        that names no annotation raises :class:`kprof.ConfigError`. ``keys``: the key columns
        (:data:`WORKER_COLUMNS`) go to the core as parameters, so that they split the rows (the
        processed table); else they are extras like any other column (plots, report, files)."""
        raw = self._raw
        n = len(raw.get("Annotation", []))
        if check_baseline and self._normalize_against is not None and n:
            names = list(dict.fromkeys(raw["Annotation"]))
            if self._normalize_against not in names:
                raise ConfigError(
                    f"normalize_against={self._normalize_against!r} names no annotation of this run; "
                    f"the annotations are {names}"
                )
        # Parameter values as the core stores them, remembering the original objects.
        originals: dict[str, dict[tuple[str, Any], Any]] = {}
        columns: dict[str, list] = {}
        for name in RAW_COLUMNS[:9]:
            columns[name] = list(raw[name])
        columns["Value"] = [_float_or_nan(v) for v in columns["Value"]]
        key_values = self._key_values() if keys else {}
        for p in [*self._params, *key_values]:
            back: dict[tuple[str, Any], Any] = {}
            converted = []
            for v in key_values.get(p, raw.get(p)):
                key = _param_key(v)
                back.setdefault(key, v)
                converted.append(key[1])
            originals[p] = back
            columns[p] = converted
        columns["Benchmark"] = list(raw["Benchmark"])
        columns["Run"] = [int(r) for r in raw["Run"]]
        # Run conditions and info-collector values: aggregated by the core (X_Avg/X_Std/X_Min/X_Max).
        known = set(RAW_COLUMNS) | set(self._params) | set(key_values) | {"_config"}
        extras = [c for c in raw if c not in known]
        for c in extras:
            columns[c] = list(raw[c])
        options = {
            "params": [*self._params, *key_values],
            "normalize_against": self._normalize_against,
            "stable_rsd_pct": float(self._stable_rsd_pct),
        }
        if extras:
            options["extras"] = extras
        return columns, options, originals

    def _key_values(self) -> dict[str, list]:
        """The key columns' values per raw row; pooled: per (configuration, GPU model), the GPUs joined."""
        values = {c: ["" if v is None else v for v in self._raw[c]] for c in self._keys}
        if not self._pool_devices or "Device" not in values:
            return values
        groups: dict[tuple, dict[str, dict]] = {}
        rows = []
        failure = values.get("Failure")
        for i in range(len(self._raw["Annotation"])):
            params = tuple(_param_key(self._raw[p][i]) for p in self._params)
            key = (params, self._raw["GPU"][i], failure[i] if failure else "")
            g = groups.setdefault(key, {c: {} for c in ("Device", "DeviceUUID") if c in values})
            for c in g:
                g[c][values[c][i]] = None
            rows.append(g)
        for c in ("Device", "DeviceUUID"):
            if c in values:
                values[c] = [next(iter(g[c])) if len(g[c]) == 1 else "|".join(str(v) for v in sorted(g[c])) for g in rows]
        return values

    def _run_process_raw(self) -> dict[str, list]:
        columns, options, originals = self._core_inputs(keys=True)
        try:
            out = _core.process_raw(columns, options)
        except NotImplementedError as e:
            raise NotAvailableYetError(
                "the processed table from Python (kprof._core.process_raw) is not available yet in this "
                "version of kprof; it lands with the statistics bindings. ProfileResults.raw() works"
            ) from e
        except ValueError as e:
            raise ProfilerError(f"cannot process the results of {self.benchmark!r}: {e}") from e
        return self._check_processed(out, originals)

    def _check_processed(self, out: dict, originals: dict) -> dict[str, list]:
        if not isinstance(out, dict):
            raise BackendError(f"_core.process_raw returned {type(out).__name__}, expected a dict of columns")
        expected = self._expected_columns(out)
        missing = [c for c in expected if c not in out]
        if missing:
            raise BackendError(f"_core.process_raw returned no column(s) {missing}")
        lengths = {len(v) for v in out.values()}
        if len(lengths) > 1:
            raise BackendError(
                f"_core.process_raw returned columns of different lengths: "
                f"{ {k: len(v) for k, v in out.items()} }"
            )
        ordered: dict[str, list] = {}
        # Then the extras (run conditions, info collectors), then the key columns (scale-out), last.
        keys = [c for c in self._keys if c not in expected and c in out]
        for name in expected + [c for c in out if c not in expected and c not in keys] + keys:
            values = list(out[name])
            if name in originals:
                back = originals[name]
                values = [back.get(_param_key(v), v) for v in values]
            ordered[name] = values
        return ordered

    def _expected_columns(self, out: dict) -> list[str]:
        cols: list[str] = []
        for c in PROCESSED_COLUMNS:
            if c == "<params>":
                cols.extend(self._params)
            elif c == _core.NORMALIZATION_VALUE_COLUMN:
                if self._normalize_against is not None or c in out:
                    cols.append(c)
            else:
                cols.append(c)
        return cols

    # -- helpers --

    def _column_series(self, pd, name: str, values: list):
        if name in FLOAT_COLUMNS or name == "Value":
            return pd.Series([_float_or_nan(v) for v in values], dtype="float64")
        if name in INT_COLUMNS or name == "Run":
            return pd.Series([int(v) for v in values], dtype="int64")
        if name == "StableMeasurement":
            return pd.Series([pd.NA if v is None else bool(v) for v in values], dtype="boolean")
        if name == "Normalized":
            return pd.Series(values, dtype="object")
        try:
            return pd.Series(values)
        except Exception:
            return pd.Series(values, dtype="object")

    def _summary_rows(self, cols: dict[str, list]) -> tuple[list[str], list[list[str]]]:
        header = ["Annotation", "Metric", *self._params, "AvgValue", "CI95", "RSD%", "NumRuns", "Unit", "Stable"]
        if self._normalize_against is not None:
            header.insert(header.index("Unit") + 1, "Normalized")
        rows = []
        for i in range(len(cols["Annotation"])):
            lo, hi = cols["CI95_Lower"][i], cols["CI95_Upper"][i]
            ci = "" if _missing(lo) or _missing(hi) else f"[{_fmt(lo)}, {_fmt(hi)}]"
            stable = cols["StableMeasurement"][i]
            row = [
                str(cols["Annotation"][i]),
                str(cols["Metric"][i]),
                *[str(cols[p][i]) for p in self._params],
                _fmt(cols["AvgValue"][i]),
                ci,
                _fmt_pct(cols["RelativeStdDevPct"][i]),
                str(cols["NumRuns"][i]),
                "" if _missing(cols["Unit"][i]) else str(cols["Unit"][i]),
                "<NA>" if stable is None else str(bool(stable)),
            ]
            if self._normalize_against is not None:
                row.insert(header.index("Normalized"), str(cols["Normalized"][i]))
            rows.append(row)
        return header, rows


def _missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return isinstance(v, float) and math.isnan(v)
    except Exception:
        return False


def _float_or_nan(v: Any) -> float:
    if v is None:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _float_or_none(v: Any) -> float | None:
    f = _float_or_nan(v)
    return None if math.isnan(f) else f


def _fmt_pct(v: Any) -> str:
    """A percentage with two decimals (``1.95``), so it reads against the stability threshold
    (``2.0``) without rounding across it."""
    if _missing(v):
        return "NaN"
    try:
        return f"{float(v):.2f}"
    except (TypeError, ValueError):
        return str(v)


def _fmt(v: Any, digits: int = 4) -> str:
    """Readable number: thousands separators for large values, ``digits`` significant otherwise."""
    if _missing(v):
        return "NaN"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isinf(x):
        return str(x)
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.{digits}g}" if abs(x) < 10 ** (digits - 1) else f"{x:,.1f}"
    return f"{x:.{digits}g}"


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    numeric = {"AvgValue", "RSD%", "NumRuns"}

    def line(cells):
        return "  ".join(
            c.rjust(w) if h in numeric else c.ljust(w) for c, w, h in zip(cells, widths, header)
        ).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def load(path: str | os.PathLike) -> ProfileResults:
    """Reads saved results back: a raw CSV (kprof's ``*-raw.csv`` or nsight-python's
    ``profiled_data-*.csv``) or a kprof JSON file (:meth:`ProfileResults.save` with ``.json``,
    ``kprof summarize RAW -o x.json``). The processed table is computed again by kprof-core (the
    same statistics); a JSON file's normalisation is kept. A processed CSV holds no raw samples
    and raises :class:`kprof.ConfigError` saying what to load instead; an unreadable file raises
    ``OSError`` naming it.
    """
    path = os.fspath(path)
    try:
        table, configs, params, normalized = _core.load_results(path)
    except ValueError as e:
        raise ConfigError(str(e)) from e
    raw: dict[str, list] = {name: list(table[name]) for name in RAW_COLUMNS[:9]}
    pairs = [dict(c) for c in configs]
    # A scale-out result's Device, DeviceUUID and Failure read back as parameters: keys again.
    keys = list(WORKER_COLUMNS) if {"Device", "DeviceUUID"} <= set(params) else []
    params = [p for p in params if p not in keys]
    for p in params:
        raw[p] = [pairs[i].get(p) for i in table["_config"]]
    raw["Benchmark"] = list(table["Benchmark"])
    raw["Run"] = [int(r) for r in table["Run"]]
    for name in table:
        if name not in raw and name != "_config":
            raw[name] = list(table[name])
    for k in keys:
        raw[k] = [pairs[i].get(k, "") for i in table["_config"]]
    benchmark = raw["Benchmark"][0] if raw["Benchmark"] else os.path.splitext(os.path.basename(path))[0]
    return ProfileResults(raw, list(params), normalize_against=normalized, benchmark=benchmark, key_columns=keys)
