"""backend="ncu" without a GPU: the argv for each option, the notebook error, and the relaunch
end to end through the wheel with a fake ``ncu`` (a shell script): the parent re-runs a script
under it, the child runs only the selected function (its NVTX range names are traced with
KPROF_NCU_CHILD_TRACE), the fake turns the trace into a raw-page CSV, the parent reads it back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import kprof
from kprof import BackendError, _core, _ncu

# The shared stand-in for ncu (what it does is said at its top).
FAKE_NCU = os.path.join(os.path.dirname(__file__), "..", "fixtures", "fake-ncu", "ncu.sh")


def _under_fake_ncu(tmp_path, name, source, **env_extra):
    """Writes the script `source` (dedented) as `name` and a copy of the fake ncu into tmp_path:
    the script's path and an environment that runs it under that ncu (its trace, the options it
    saw and the children it started in tmp_path, on an "NVIDIA H200"), outside any ncu child."""
    ncu = tmp_path / "ncu"
    with open(FAKE_NCU) as f:
        ncu.write_text(f.read())
    ncu.chmod(0o755)
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    env = dict(
        os.environ,
        KPROF_NCU=str(ncu),
        KPROF_NCU_CHILD_TRACE=str(tmp_path / "trace.txt"),
        FAKE_ARGS=str(tmp_path / "args.txt"),
        FAKE_CHILDREN=str(tmp_path / "children.txt"),
        FAKE_DEVICE="NVIDIA H200",
        **env_extra,
    )
    for k in ("KPROF_NCU_CHILD", "KPROF_NCU_MODE", "FAKE_MODE"):
        if k not in env_extra:
            env.pop(k, None)
    return script, env

SCRIPT = """
import json, os, sys
import kprof

@kprof.analyze.kernel(configs=[(1,), (2,)], runs=3, backend="ncu", output_prefix=os.environ["OUT_PREFIX"])
def first(n):
    with open(os.environ["CALLS"], "a") as f:
        f.write(f"first {n}\\n")
    with kprof.annotate("one"):
        pass

@kprof.analyze.kernel(configs=[(1,), (2,)], runs=3, warmup=2, backend="ncu", combine_kernel_metrics="sum")
def second(n):
    with open(os.environ["CALLS"], "a") as f:
        f.write(f"second {n}\\n")
    with kprof.annotate("one"):
        pass
    with kprof.annotate("two"):
        pass

r1 = first()
r1.to_dict()  # code that uses the results of earlier benchmarks keeps working in the child
r2 = second()
cols = r2.raw_columns()
print("RESULT " + json.dumps({k: cols[k] for k in ("Annotation", "Value", "Run", "n", "Benchmark", "Unit")}))
print("FILES " + json.dumps(sorted(os.listdir(os.path.dirname(os.environ["OUT_PREFIX"])))))
print("FP " + json.dumps(r2.fingerprint))
"""


def test_relaunch_end_to_end_with_a_fake_ncu(tmp_path):
    script, env = _under_fake_ncu(
        tmp_path, "bench_script.py", SCRIPT, CALLS=str(tmp_path / "calls.txt"), OUT_PREFIX=str(tmp_path / "out" / "run-")
    )
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    # One child per benchmark, selected by module.qualname#call.
    children = (tmp_path / "children.txt").read_text().split()
    assert children == ["child", "main__.first#0", "child", "main__.second#0"], children
    # The parent ran nothing itself; each child ran only its function (warm-ups included).
    calls = (tmp_path / "calls.txt").read_text().split("\n")
    assert calls.count("first 1") == 4 and calls.count("first 2") == 4, calls
    assert calls.count("second 1") == 5 and calls.count("second 2") == 5, calls
    # Ranges of recorded runs only (second's child is the last one traced).
    trace = (tmp_path / "trace.txt").read_text().split()
    assert len(trace) == 2 * 3 * 2 and "two#c0.1.2" in trace, trace

    result = json.loads(next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))[7:])
    rows = sorted(zip(result["Annotation"], result["n"], result["Run"], result["Value"]))
    assert ("one", 1, 0, 1000.0) in rows and ("one", 2, 2, 2020.0) in rows, rows
    assert ("two", 2, 1, 2 * 2010.0 + 1) in rows, rows  # two kernels summed
    assert len(rows) == 12 and set(result["Benchmark"]) == {"second"} and set(result["Unit"]) == {"ns"}
    # first's report, log and CSV next to its output prefix; mode reported at INFO.
    files = json.loads(next(l for l in p.stdout.splitlines() if l.startswith("FILES "))[6:])
    stems = [f for f in files if f.endswith(".ncu-rep")]
    assert len(stems) == 1 and stems[0].startswith("run-"), files
    base = stems[0][: -len(".ncu-rep")]
    assert base + ".log" in files and base + ".csv" in files, files
    summary = "ncu 2025.3.1.0 in relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)"
    assert summary in p.stderr + p.stdout, p.stderr
    args = (tmp_path / "args.txt").read_text().split("\n")
    assert "--clock-control" in args and "regex:kprof@.+/" in args
    # The results record the ncu run: version, mode, what was asked for and why.
    fp = json.loads(next(l for l in p.stdout.splitlines() if l.startswith("FP "))[3:])
    assert fp["backend"] == "ncu" and fp["ncu"]["path"] == env["KPROF_NCU"], fp
    assert (fp["ncu"]["version"], fp["ncu"]["mode"], fp["ncu"]["mode_requested"]) == ("2025.3.1.0", "relaunch", "auto")
    assert fp["ncu"]["mode_reason"] == "attach needs ncu >= 2026.2.1.0; found 2025.3.1.0" and fp["ncu"]["summary"] == summary


MODE_SCRIPT = """
import json, sys
import kprof

mode = sys.argv[1] if len(sys.argv) > 1 else None

@kprof.analyze.kernel(runs=1, backend="ncu", ncu_options=None if mode is None else {"mode": mode})
def f():
    with kprof.annotate("one"):
        pass

try:
    r = f()
except kprof.BackendError as e:
    print("ERROR " + str(e))
else:
    print("FP " + json.dumps(r.fingerprint))
"""


def _run_mode(tmp_path, *args, **env_extra):
    script, env = _under_fake_ncu(tmp_path, "mode_script.py", MODE_SCRIPT, **env_extra)
    (tmp_path / "children.txt").unlink(missing_ok=True)
    p = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith(("ERROR ", "FP ")))
    ran = (tmp_path / "children.txt").exists()
    if line.startswith("ERROR "):
        return "error", line[6:], ran
    return "ok", json.loads(line[3:])["ncu"], ran


def test_asking_for_attach_with_an_old_ncu_is_one_clear_error(tmp_path):
    kind, msg, ran = _run_mode(tmp_path, "attach")
    assert kind == "error" and not ran, msg
    assert msg.startswith("ncu attach mode needs Nsight Compute >= 2026.2.1.0"), msg
    assert "found 2025.3.1.0 at" in msg and 'mode "relaunch"' in msg, msg
    # The same through the environment.
    kind, msg, ran = _run_mode(tmp_path, KPROF_NCU_MODE="attach")
    assert kind == "error" and "found 2025.3.1.0" in msg and not ran, msg


def test_attach_on_a_new_ncu_is_not_implemented_and_auto_relaunches(tmp_path):
    kind, msg, ran = _run_mode(tmp_path, "attach", FAKE_NCU_VERSION="2026.2.1.0")
    assert kind == "error" and not ran, msg
    assert msg.startswith("ncu attach mode is not implemented in this version of kprof (ncu 2026.2.1.0 at"), msg
    kind, info, ran = _run_mode(tmp_path, FAKE_NCU_VERSION="2026.2.1.0")
    assert kind == "ok" and ran, info
    assert (info["mode"], info["mode_requested"]) == ("relaunch", "auto"), info
    assert info["mode_reason"] == "ncu 2026.2.1.0 could attach, but kprof does not implement attach mode yet", info


def test_the_mode_option_wins_over_the_environment(tmp_path):
    kind, info, _ = _run_mode(tmp_path, "relaunch", KPROF_NCU_MODE="attach")
    assert kind == "ok" and (info["mode"], info["mode_requested"]) == ("relaunch", "relaunch"), info
    assert info["mode_reason"] == "relaunch requested (KPROF_NCU_MODE or the mode option)"
    kind, msg, _ = _run_mode(tmp_path, KPROF_NCU_MODE="inject")
    assert kind == "error" and msg.startswith('KPROF_NCU_MODE is "inject"'), msg


def test_a_crashing_child_shows_the_log_tail(tmp_path):
    script, env = _under_fake_ncu(
        tmp_path,
        "crash.py",
        """
        import kprof
        @kprof.analyze.kernel(backend="ncu")
        def boom():
            raise RuntimeError("the user's code failed")
        boom()
        """,
    )
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert "BackendError" in p.stderr and "ncu exited with exit code 9" in p.stderr, p.stderr


def test_notebook_gives_a_clear_error(monkeypatch):
    import __main__

    monkeypatch.delattr(__main__, "__file__", raising=False)
    monkeypatch.delenv("KPROF_NCU_CHILD", raising=False)

    @kprof.analyze.kernel(backend="ncu")
    def f():
        pass

    with pytest.raises(BackendError, match="backend='cupti'"):
        f()


def test_in_a_child_other_functions_return_empty_results(monkeypatch):
    monkeypatch.setenv("KPROF_NCU_CHILD", "some.other#0")
    ran = []

    @kprof.analyze.kernel(configs=[(1,)], backend="ncu")
    def f(n):
        ran.append(n)

    @kprof.analyze.kernel(configs=[(1,)])
    def g(n):
        ran.append(n)

    for r in (f(), g()):
        assert r.raw_columns()["Value"] == []
    assert ran == []


def _argv(**options):
    return _core.ncu_argv(options, "python3", ["s.py"])


def test_argv_for_each_option():
    base = _argv()
    assert base[:2] == ["--cache-control", "all"] and base[-3:] == ["--", "python3", "s.py"]
    assert base[base.index("--clock-control") + 1] == "none"
    assert base[base.index("--metrics") + 1] == "gpu__time_duration.sum"
    assert "--nvtx" in base and base[base.index("--nvtx-include") + 1] == "regex:kprof@.+/"

    def value(argv, flag):
        return argv[argv.index(flag) + 1]

    assert value(_argv(cache_control="none"), "--cache-control") == "none"
    assert value(_argv(clock_control="base"), "--clock-control") == "base"
    for mode in ("kernel", "range", "application"):
        assert value(_argv(replay_mode=mode), "--replay-mode") == mode
    assert value(_argv(metrics=["a__x.sum", "b__y.avg"]), "--metrics") == "a__x.sum,b__y.avg"
    a = _argv(
        ncu_options=dict(
            set="full",
            sections=["SpeedOfLight", "MemoryWorkloadAnalysis"],
            target_processes="application-only",
            launch_skip=2,
            launch_count=5,
            extra_args=["--print-summary", "none"],
        )
    )
    assert value(a, "--set") == "full"
    assert [a[i + 1] for i, x in enumerate(a) if x == "--section"] == ["SpeedOfLight", "MemoryWorkloadAnalysis"]
    assert value(a, "--target-processes") == "application-only"
    assert value(a, "--launch-skip") == "2" and value(a, "--launch-count") == "5"
    assert a.index("--print-summary") < a.index("--")
    with pytest.raises(ValueError, match="replay_mode"):
        _argv(replay_mode="app")


def test_check_ncu_options_normalises():
    assert _ncu.check_ncu_options({"sections": ("A",)}) == {"sections": ["A"]}
    assert _ncu.check_ncu_options(None) is None
    for mode in ("auto", "relaunch", "attach"):
        assert _ncu.check_ncu_options({"mode": mode}) == {"mode": mode}
        argv = _argv(ncu_options={"mode": mode})
        assert argv == _argv() and mode not in argv  # not an ncu argument
    with pytest.raises(kprof.ConfigError, match="ncu_options\\['mode'\\] must be one of 'auto', 'relaunch', 'attach'"):
        _ncu.check_ncu_options({"mode": "inject"})
