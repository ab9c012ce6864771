"""Plots and reports from Python: ``ProfileResults.plot``, ``ProfileResults.report`` and the
``@kprof.analyze.plot`` decorator stacked on ``@kprof.analyze.kernel`` (FakeBackend; the images
come from kprof's Rust renderer through ``kprof._core.render_plot`` / ``render_report``)."""

from __future__ import annotations


import pytest

import kprof
from kprof import ConfigError
from kprof.plotting import Plot, matplotlib_available

SILENT = kprof.VerbosityLevel.SILENT
METRIC = "gpu__time_duration.sum"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_bench(runs=4, configs=((512,), (1024,), (2048,)), names=("base", "impl")):
    @kprof.analyze.kernel(configs=list(configs), runs=runs, verbosity=SILENT)
    def bench(n):
        for name in names:
            with kprof.annotate(name):
                pass

    return bench


def test_plot_svg_has_one_series_per_annotation_and_error_bars(fake_backend, tmp_path):
    results = make_bench()()
    out = tmp_path / "fig.svg"
    ret = results.plot(str(out), METRIC, title="two kernels", ylabel="time")
    svg = out.read_text()
    assert svg.lstrip().startswith("<svg") or "<svg" in svg[:200]
    assert "two kernels" in svg and "time" in svg
    assert svg.count("kprof-legend-entry") == 2, "one legend entry per annotation"
    assert "base" in svg and "impl" in svg
    assert "kprof-errorbar" in svg, "CI95 error bars by default with 4 runs"
    assert "n (log2 scale)" in svg, "the single numeric parameter is a log-2 x axis"
    assert isinstance(results.plot_image, Plot) and results.plot_image.svg == svg
    if matplotlib_available():
        assert ret is results.figure and ret.__class__.__name__ == "Figure"
    else:
        assert ret == str(out) and results.figure is results.plot_image


def test_error_bars_off_and_absent_for_single_runs(fake_backend, tmp_path):
    results = make_bench()()
    results.plot(str(tmp_path / "a.svg"), error_bars=False)
    assert "kprof-errorbar" not in (tmp_path / "a.svg").read_text()
    single = make_bench(runs=1)()
    single.plot(str(tmp_path / "b.svg"))
    assert "kprof-errorbar" not in (tmp_path / "b.svg").read_text(), "no CI from one run"


def test_plot_options_bar_aggregate_points_and_panels(fake_backend, tmp_path):
    results = make_bench()()
    out = tmp_path / "bar.svg"
    results.plot(str(out), plot_type="bar", show_aggregate="geomean", annotate_points=True)
    svg = out.read_text()
    assert "Geomean" in svg
    out2 = tmp_path / "panels.svg"
    results.plot(str(out2), col_panels=["n"])
    assert svg != out2.read_text()
    assert out2.read_text().count('kprof-panel"') == 3, "one panel per n"


def test_variant_fields_split_series(fake_backend, tmp_path):
    @kprof.analyze.kernel(configs=[(512, "fp32"), (1024, "fp32"), (512, "fp16"), (1024, "fp16")], runs=3,
                          verbosity=SILENT)
    def bench(n, dtype):
        with kprof.annotate("gemm"):
            pass

    results = bench()
    out = tmp_path / "v.svg"
    results.plot(str(out), x_keys=["n"], variant_fields=["dtype"], variant_annotations=["gemm"])
    svg = out.read_text()
    assert svg.count("kprof-legend-entry") == 2
    assert "dtype=fp32" in svg and "dtype=fp16" in svg


def test_decorator_stacks_on_kernel_and_writes_png(fake_backend, tmp_path):
    out = tmp_path / "sub" / "sweep.png"

    @kprof.analyze.plot(str(out), METRIC, show_aggregate="avg")
    @kprof.analyze.kernel(configs=[(512,), (1024,)], runs=3, verbosity=SILENT)
    def bench(n):
        with kprof.annotate("a"):
            pass

    results = bench()
    assert isinstance(results, kprof.ProfileResults), "nsight-python returns the ProfileResults"
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert out.stat().st_size > 5000
    assert results.figure is not None
    assert "<svg" in results.plot_image._repr_svg_()
    assert len(results.to_dataframe()) == 2


def test_decorator_default_filename_is_plot_png(fake_backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    @kprof.analyze.plot()
    @kprof.analyze.kernel(configs=[(512,), (1024,)], runs=2, verbosity=SILENT)
    def bench(n):
        with kprof.annotate("a"):
            pass

    bench()
    assert (tmp_path / "plot.png").read_bytes()[:8] == PNG_SIGNATURE


def test_decorator_must_sit_on_kernel(tmp_path):
    @kprof.analyze.plot(str(tmp_path / "x.png"))
    def not_profiled():
        return 42

    with pytest.raises(ConfigError, match="stacked on @kprof.analyze.kernel"):
        not_profiled()


def test_bad_metric_and_parameter_list_the_available_ones(fake_backend, tmp_path):
    results = make_bench()()
    with pytest.raises(ConfigError, match=r'unknown metric "nope"; available metrics: gpu__time_duration\.sum'):
        results.plot(str(tmp_path / "x.svg"), "nope")
    with pytest.raises(ValueError, match=r'unknown parameter "m" \(used as row_panels\); available parameters: n'):
        results.plot(str(tmp_path / "x.svg"), row_panels=["m"])
    with pytest.raises(ConfigError, match=r"x_keys \['m'\] are not parameters; available parameters: n"):
        results.plot(str(tmp_path / "x.svg"), x_keys=["m"])
    assert not (tmp_path / "x.svg").exists()

    @kprof.analyze.plot(str(tmp_path / "y.png"), "nope")
    @kprof.analyze.kernel(configs=[(512,)], runs=2, verbosity=SILENT)
    def bench(n):
        with kprof.annotate("a"):
            pass

    with pytest.raises(ConfigError, match="available metrics"):
        bench()


def test_plot_without_file_and_print_data(fake_backend, capsys):
    results = make_bench()()
    ret = results.plot(print_data=True)
    printed = capsys.readouterr().out
    assert "AvgValue" in printed and "impl" in printed
    if matplotlib_available():
        assert ret.__class__.__name__ == "Figure"
    else:
        assert isinstance(ret, Plot) and ret.path is None and "<svg" in ret._repr_svg_()


@pytest.mark.skipif(not matplotlib_available(), reason="matplotlib is not installed")
def test_matplotlib_figure_and_callback(fake_backend, tmp_path):
    seen = []
    results = make_bench()()
    fig = results.plot(str(tmp_path / "cb.png"), plot_callback=lambda f: seen.append(f))
    assert seen == [fig] and (tmp_path / "cb.png").read_bytes()[:8] == PNG_SIGNATURE


def test_report_writes_self_contained_html(fake_backend, tmp_path):
    results = make_bench()()
    path = results.report(tmp_path / "r.html", title="fake sweep")
    html = open(path, encoding="utf-8").read()
    assert "<title>fake sweep</title>" in html
    assert 'class="kprof-summary sortable"' in html
    assert html.count("<svg") >= 2, "a plot and distributions"
    assert "kprof-errorbar" in html


def test_decorator_displays_the_svg_inline_in_jupyter(fake_backend, tmp_path, monkeypatch):
    import sys
    import types

    from kprof import plotting

    shown = []
    display_mod = types.ModuleType("IPython.display")
    display_mod.display = shown.append
    ipython = types.ModuleType("IPython")
    ipython.display = display_mod
    ipython.get_ipython = lambda: types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_mod)
    assert plotting.in_jupyter()

    @kprof.analyze.plot(str(tmp_path / "j.svg"))
    @kprof.analyze.kernel(configs=[(512,), (1024,)], runs=2, verbosity=SILENT)
    def bench(n):
        with kprof.annotate("a"):
            pass

    results = bench()
    assert shown == [results.plot_image] and "<svg" in shown[0]._repr_svg_()
