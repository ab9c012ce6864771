//! `bench_ncu` end to end against a fake `ncu` (a shell script), without a GPU: the parent
//! relaunches this test binary under the fake ncu with `KPROF_NCU_CHILD`; in the child only the
//! selected benchmark runs (warm-ups without ranges), its NVTX range names are traced
//! (`KPROF_NCU_CHILD_TRACE`), the fake ncu turns the trace into a raw-page CSV (one kernel per
//! range, two for region `two`), and the parent reads it back by key.
#![cfg(unix)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common;
use kprof::core::{Config, RawResults};
use kprof::ncu::{bench_ncu, last_run, NcuError, NcuMode, NcuModeRequest, NcuOptions, Relaunch, CHILD_ENV};
use kprof::runner::{BenchOptions, Run};
use kprof::EngineError;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn configs() -> Vec<Config> {
    vec![Config::new().with("n", 1i64), Config::new().with("n", 2i64)]
}

fn log_call(what: &str) {
    if let Some(p) = std::env::var_os("TEST_CALL_LOG") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
        writeln!(f, "{what}").unwrap();
    }
}

fn relaunch(dir: &Path, ncu: &Path, bench: &str) -> Relaunch {
    let exe = std::env::current_exe().unwrap();
    let args: Vec<OsString> = [
        "--exact",
        "ncu_bench::relaunch_end_to_end",
        "--nocapture",
        "--test-threads=1",
    ]
    .map(OsString::from)
    .to_vec();
    Relaunch {
        program: Some((exe.into_os_string(), args)),
        env: vec![
            (
                "KPROF_NCU_CHILD_TRACE".into(),
                dir.join(format!("trace-{bench}.txt")).into(),
            ),
            ("TEST_CALL_LOG".into(), dir.join(format!("calls-{bench}.txt")).into()),
            ("FAKE_ARGS".into(), dir.join("args.txt").into()),
            ("TEST_DIR".into(), dir.into()),
        ],
        module: Some("tests/ncu_bench.rs".into()),
        ncu: Some(ncu.to_path_buf()),
    }
}

fn run_both(dir: &Path, ncu: &Path) -> (RawResults, RawResults) {
    let mut opts = BenchOptions::default();
    opts.runs = 3;
    opts.warmup = 1;
    opts.output_prefix = Some(dir.join("out/"));
    let ncu_opts = NcuOptions::default();
    // Benchmark `name` over both configs, each call logged, relaunched under the fake ncu.
    let bench = |name: &str, regions: &dyn Fn(&mut Run) -> Result<(), BoxError>| {
        bench_ncu(
            name,
            &configs(),
            &opts,
            &ncu_opts,
            &relaunch(dir, ncu, name),
            |c, run| {
                log_call(&format!("{name} {} {}", c, run.is_warmup()));
                regions(run)
            },
        )
        .unwrap()
    };
    let first = bench("first", &|run| {
        let _g = run.region("one")?;
        Ok(())
    });
    let second = bench("second", &|run| {
        run.annotate("one", |_| ())?;
        run.annotate("two", |_| ())?;
        Ok(())
    });
    (first, second)
}

fn values(raw: &RawResults, region: &str, config: u32) -> Vec<f64> {
    let mut v: Vec<(u32, f64)> = raw
        .samples
        .iter()
        .filter(|s| {
            let k = &raw.series_of(s).key;
            k.annotation == region && k.config == config
        })
        .map(|s| (s.run, s.value))
        .collect();
    v.sort_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn relaunch_end_to_end() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // The child: the same calls; bench_ncu exits the process after the selected one.
        let dir = PathBuf::from(std::env::var_os("TEST_DIR").unwrap());
        let ncu = dir.join("ncu");
        run_both(&dir, &ncu);
        panic!("the ncu child must exit inside its selected benchmark");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ncu = common::write_fake_ncu(dir);

    let (first, second) = run_both(dir, &ncu);

    // Only the selected benchmark ran in each child, warm-ups included, in interleaved order.
    let calls = read(dir.join("calls-first.txt"));
    assert_eq!(calls.lines().filter(|l| l.starts_with("first")).count(), 8, "{calls}");
    assert!(!calls.contains("second"), "{calls}");
    let calls = read(dir.join("calls-second.txt"));
    assert_eq!(calls.lines().filter(|l| l.starts_with("second")).count(), 8, "{calls}");
    assert!(!calls.contains("first"), "{calls}");
    // Ranges only for recorded runs, named region#c0.<config>.<run>.
    let trace = read(dir.join("trace-second.txt"));
    assert_eq!(trace.lines().count(), 2 * 3 * 2, "{trace}");
    assert!(trace.lines().any(|l| l == "two#c0.1.2"), "{trace}");
    assert!(!trace.contains(".3\n"), "warm-up runs get no range: {trace}");

    // Results by key: value = 1000 * (config + 1) + 10 * run (+ k for the k-th kernel).
    assert_eq!(values(&first, "one", 0), vec![1000.0, 1010.0, 1020.0]);
    assert_eq!(values(&first, "one", 1), vec![2000.0, 2010.0, 2020.0]);
    assert_eq!(values(&second, "two", 1), vec![4001.0, 4021.0, 4041.0]);
    assert!(second
        .samples
        .iter()
        .all(|s| second.series_of(s).key.benchmark == "second"));
    assert!(second.configs.contains(&Config::new().with("n", 2i64)));
    assert_eq!(
        second.kernel_breakdown.iter().filter(|k| k.kernel == "kern_1").count(),
        6
    );

    // Report, log, CSV and raw CSV side by side under the output prefix.
    let info = last_run().unwrap();
    assert_eq!(info.id, "second.0");
    assert_eq!(info.mode.mode, NcuMode::Relaunch);
    assert_eq!(
        info.summary(),
        "ncu 2025.3.1.0 in relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)"
    );
    assert!(info.report.starts_with(dir.join("out")), "{}", info.report.display());
    assert!(info
        .report
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("tests_ncu_bench.second-0-"));
    assert!(info.report.is_file() && info.log.is_file() && info.csv.is_file());
    assert!(dir.join("out/second-raw.csv").is_file() && dir.join("out/first-raw.csv").is_file());
    let args = read(dir.join("args.txt"));
    for want in ["--cache-control", "all", "--clock-control", "none", "regex:kprof@.+/"] {
        assert!(args.lines().any(|l| l == want), "{want} not in {args}");
    }
}

#[test]
fn missing_ncu_is_an_engine_error() {
    let r = Relaunch {
        ncu: Some("/nonexistent/ncu".into()),
        ..Relaunch::default()
    };
    let e = bench_ncu(
        "missing",
        &[],
        &BenchOptions::default(),
        &NcuOptions::default(),
        &r,
        |_, _| Ok(()),
    )
    .unwrap_err();
    assert!(matches!(e, EngineError::Ncu(NcuError::VersionRun { .. })), "{e:?}");
}

#[test]
fn asking_for_attach_fails_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = common::write_fake_ncu(dir.path());
    let r = Relaunch {
        ncu: Some(ncu.clone()),
        program: Some(("/nonexistent/program".into(), Vec::new())),
        ..Relaunch::default()
    };
    let mut opts = NcuOptions::default();
    opts.mode = NcuModeRequest::Attach;
    let mut ran = false;
    // Retry ETXTBSY: another test thread may have forked while the fake was being written.
    let mut tries = 0;
    let e = loop {
        let e = bench_ncu("attach", &[], &BenchOptions::default(), &opts, &r, |_, _| {
            ran = true;
            Ok(())
        })
        .unwrap_err();
        match &e {
            EngineError::Ncu(NcuError::VersionRun { source, .. })
                if source.raw_os_error() == Some(26) && tries < 200 =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => break e,
        }
    };
    assert!(!ran);
    assert!(
        matches!(e, EngineError::Ncu(NcuError::AttachUnavailable { .. })),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("found 2025.3.1.0 at") && msg.contains("relaunch"), "{msg}");
}
