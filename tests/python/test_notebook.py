"""The example notebook (examples/notebook.ipynb) executed end to end by a real Jupyter kernel
(nbclient, ipykernel): without a GPU it replays the H200 recording, so this runs anywhere. Checks
that the results show as an HTML table with an inline plot, that the progress bar is a display
updated in place (no carriage returns in the cell's text), and that no cell fails."""

from __future__ import annotations

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "examples")


def test_example_notebook_runs_and_shows_html_results_with_a_plot():
    nb = nbformat.read(os.path.join(EXAMPLES, "notebook.ipynb"), as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": EXAMPLES}}
    )
    client.execute()  # raises CellExecutionError on a failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # The sweep's cell: a progress display (plain text, updated in place) and the results.
    sweep = next(c for c in code if "results = sgemm()" in c.source)
    html = [o.data["text/html"] for o in sweep.outputs if o.output_type == "execute_result"]
    assert len(html) == 1, sweep.outputs
    assert "<table>" in html[0] and html[0].count("<svg") == 1
    for n in ("512", "1024", "2048", "4096"):
        assert f"<td>{n}</td>" in html[0]
    progress = [o for o in sweep.outputs if o.output_type == "display_data"]
    assert len(progress) == 1 and "kprof sgemm [" in progress[0].data["text/plain"]
    assert "40/40 runs" in progress[0].data["text/plain"]  # the last update replaced the first
    streams = "".join(o.text for o in sweep.outputs if o.output_type == "stream")
    assert "\r" not in streams
    # The file read back shows the same way.
    loaded = next(c for c in code if "kprof.load" in c.source)
    assert any("<svg" in o.data.get("text/html", "") for o in loaded.outputs if "data" in o)
