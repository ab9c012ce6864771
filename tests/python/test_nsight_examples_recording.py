"""nsight-python's examples as they ran on kprof on the GPU machine
(``tests/fixtures/h200-nsight-python-examples``, captured by ``gpu-checks/nsight-examples.sh``; its
README says how): every example ran in both modes, or was skipped for a missing optional library,
and its tables are nsight-python's (``nsight_examples_checks.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nsight_examples_checks import load, problems

RECORDING = Path(__file__).resolve().parent.parent / "fixtures" / "h200-nsight-python-examples"

pytestmark = pytest.mark.skipif(
    not (RECORDING / "summary.json").exists(), reason=f"no GPU recording in {RECORDING} yet (see its README)"
)


def test_every_example_ran_on_the_gpu_or_lacked_an_optional_library() -> None:
    assert problems(RECORDING) == []


def test_the_recording_was_measured_by_kprofs_engine() -> None:
    import json

    summary = json.loads((RECORDING / "summary.json").read_text())
    assert summary["backend"] is None  # the engine, not a test backend
    ran = [r for r in load(RECORDING).values() if r["outcome"] == "ok"]
    assert ran, "no example ran"
    assert all(r.get("kprof") for r in ran), "a row without the kprof version that ran it"
