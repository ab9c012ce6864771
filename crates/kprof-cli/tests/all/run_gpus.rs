//! Without a GPU: `kprof run --gpus` over two fake GPUs (`CUDA_VISIBLE_DEVICES=5,7` is what
//! kprof sees), with a program in `sh` that logs the `CUDA_VISIBLE_DEVICES` it got and writes a
//! process file as `libkprof_inject.so` would (CUDA reports the one GPU it sees as device 0).

use std::path::{Path, PathBuf};
use std::process::Output;

use kprof_core::io::{self, ReadOptions};
use kprof_core::ParamValue;

use crate::common::{self, fake_inject_lib, text};

/// The program: logs `<CUDA_VISIBLE_DEVICES> <N>` and writes one `matmul` sample of `N` ns on
/// device 0. With `PAIR` set it first marks its GPU busy and waits (5 s at most) until two GPUs
/// are, so the test fails unless two executions run at once. With `INTERRUPT_AT` set, the
/// execution with that `N` sends SIGINT to kprof, and every execution waits until it did.
fn program(dir: &Path) -> PathBuf {
    let script = format!(
        r#"out=$(printf '%s' "$KPROF_RUN_SPEC" | sed -n 's/.*"output":"\([^"]*\)".*/\1/p')
wait_for() {{ i=0; while ! eval "$1" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done; }}
cd {dir}
echo "$CUDA_VISIBLE_DEVICES $N" >> log
if [ -n "${{PAIR:-}}" ]; then
  mkdir -p busy && touch "busy/$CUDA_VISIBLE_DEVICES"
  wait_for '[ "$(ls busy | wc -l)" -ge 2 ]'
fi
if [ -n "${{INTERRUPT_AT:-}}" ]; then
  if [ "$N" = "$INTERRUPT_AT" ]; then kill -INT $PPID; sleep 0.2; touch interrupted; fi
  wait_for '[ -e interrupted ]'
fi
{{
echo "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,DeviceOrdinal,Device,DeviceUUID,Benchmark,Run"
echo "matmul,$N,gpu__time_duration.sum,gemm,NVIDIA H100,vm,,,ns,0,0,GPU-0000,app,0"
}} > "$out/kprof-run-$$.csv"
echo '{{"pid": '$$', "cuda_injected": true, "warnings": [], "errors": []}}' > "$out/kprof-run-$$.json"
"#,
        dir = dir.display()
    );
    let path = dir.join("program.sh");
    std::fs::write(&path, script).unwrap();
    path
}

/// `kprof run --benchmark app --out <dir>/out ARGS -- sh program.sh` with two visible GPUs.
fn kprof_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = common::kprof();
    c.env_remove("KPROF_STORE")
        .env("KPROF_NO_DEVICE", "1")
        .env("KPROF_INJECT_PATH", fake_inject_lib(dir))
        .env("CUDA_VISIBLE_DEVICES", "5,7")
        .env_remove("INTERRUPT_AT")
        .env_remove("PAIR");
    c.envs(env.iter().copied());
    c.args(["run", "--benchmark", "app", "--out"])
        .arg(dir.join("out"))
        .args(args)
        .arg("--")
        .arg("sh")
        .arg(program(dir));
    c.output().unwrap()
}

/// The log's lines: (CUDA_VISIBLE_DEVICES, N), sorted by N.
fn log(dir: &Path) -> Vec<(String, i64)> {
    let text = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
    let mut lines: Vec<(String, i64)> = text
        .lines()
        .map(|l| {
            let (gpu, n) = l.split_once(' ').unwrap();
            (gpu.to_string(), n.parse().unwrap())
        })
        .collect();
    lines.sort_by_key(|l| l.1);
    lines
}

/// raw.csv's samples: (Device, N, value), sorted by N.
fn samples(dir: &Path) -> Vec<(String, i64, f64)> {
    let raw = io::read_raw_csv(&dir.join("out/raw.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(raw.param_names(), ["Device", "N"]);
    let int = |v: Option<&ParamValue>| match v {
        Some(ParamValue::Int(i)) => *i,
        other => panic!("{other:?}"),
    };
    let mut out: Vec<(String, i64, f64)> = raw
        .samples
        .iter()
        .map(|s| {
            let config = raw.config_of(raw.series_of(s));
            (int(config.get("Device")).to_string(), int(config.get("N")), s.value)
        })
        .collect();
    out.sort_by_key(|s| s.1);
    out
}

#[test]
fn two_gpus_take_every_execution_once_and_the_table_says_where_each_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kprof_run(
        tmp.path(),
        &["--gpus", "all", "--env-sweep", "N=1,2,3,4,5"],
        &[("PAIR", "1")],
    );
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    // Every execution once, each on one of the two GPUs, both used.
    let ran = log(tmp.path());
    assert_eq!(ran.iter().map(|r| r.1).collect::<Vec<_>>(), [1, 2, 3, 4, 5], "{se}");
    assert!(ran.iter().all(|r| r.0 == "5" || r.0 == "7"), "{ran:?}");
    assert!(
        ran.iter().any(|r| r.0 == "5") && ran.iter().any(|r| r.0 == "7"),
        "{ran:?}"
    );
    // One table: each sample's Device is the GPU its execution got (not CUDA's 0).
    let want: Vec<(String, i64, f64)> = ran.iter().map(|(g, n)| (g.clone(), *n, *n as f64)).collect();
    assert_eq!(samples(tmp.path()), want);
    let header = so.lines().find(|l| l.contains("Annotation")).unwrap_or_default();
    assert!(header.contains("Device") && header.contains('N'), "{so}");
    // Executions are numbered as they start: with two workers N=2 may start first.
    assert!(
        se.lines()
            .any(|l| l.starts_with("kprof run: execution ") && l.contains("/5 (repetition 1, N=1, GPU ")),
        "{se}"
    );
}

#[test]
fn one_gpu_runs_every_execution_in_order_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kprof_run(
        tmp.path(),
        &["--gpus", "1", "--repeat", "2", "--env-sweep", "N=1,2"],
        &[],
    );
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    let text = std::fs::read_to_string(tmp.path().join("log")).unwrap();
    assert_eq!(text, "7 1\n7 1\n7 2\n7 2\n", "{se}");
    let devices: Vec<String> = samples(tmp.path()).into_iter().map(|s| s.0).collect();
    assert_eq!(devices, ["7"; 4]);
}

#[test]
fn ctrl_c_stops_every_worker_and_keeps_what_ran() {
    let tmp = tempfile::tempdir().unwrap();
    // N=1 sends SIGINT to kprof, then both running executions finish: nothing further starts.
    let o = kprof_run(
        tmp.path(),
        &["--gpus", "all", "--env-sweep", "N=1,2,3,4,5,6"],
        &[("PAIR", "1"), ("INTERRUPT_AT", "1")],
    );
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{so}{se}");
    let ran = log(tmp.path());
    assert_eq!(ran.iter().map(|r| r.1).collect::<Vec<_>>(), [1, 2], "{se}");
    assert!(se.contains("interrupted (Ctrl-C) after 2 of 6 execution(s)"), "{se}");
    let want: Vec<(String, i64, f64)> = ran.iter().map(|(g, n)| (g.clone(), *n, *n as f64)).collect();
    assert_eq!(samples(tmp.path()), want);
}

#[test]
fn bad_gpus_exit_2_naming_the_problem_and_run_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (&["--gpus", "0,x"], &[], "\"x\" is not a GPU ordinal"),
        (&["--gpus", "1,1"], &[], "GPU 1 is listed twice"),
        (
            &["--gpus", "2"],
            &[],
            "no GPU 2 here; kprof sees 2 (CUDA_VISIBLE_DEVICES=5,7)",
        ),
        (
            &["--gpus", "all"],
            &[("CUDA_VISIBLE_DEVICES", "")],
            "shows no NVIDIA GPU",
        ),
        (&["--gpus", "0", "--gpus", "1"], &[], "cannot be used multiple times"),
    ];
    for (args, env, message) in cases {
        let o = kprof_run(tmp.path(), args, env);
        let (so, se) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {so}{se}");
        assert!(se.contains(message), "{args:?}: {se}");
    }
    assert!(!tmp.path().join("log").exists());
    // Without --gpus the command sees kprof's CUDA_VISIBLE_DEVICES as it is.
    let o = kprof_run(tmp.path(), &["--env-sweep", "N=1"], &[]);
    assert_eq!(log(tmp.path()), [("5,7".to_string(), 1)], "{}", text(&o).1);
}
