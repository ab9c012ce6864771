//! Relaunch mode against a fake `ncu` (a shell script): the child environment, the report, log
//! and CSV beside each other, and one clear error for each failure (counter permission, unknown
//! metric, crash with the log tail, nothing profiled, no report, export failure).
#![cfg(unix)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::common;
use kprof::ncu::{
    relaunch_with, report_stem, ImportOptions, NcuError, NcuInstall, NcuMode, NcuOptions, NcuVersion, CHILD_ENV,
};

struct Fake {
    dir: tempfile::TempDir,
    install: NcuInstall,
}

fn fake() -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let ncu = common::write_fake_ncu(dir.path());
    let install = common::retry_text_busy(|| NcuInstall::at(ncu.clone()));
    assert_eq!(install.version, NcuVersion::new(2025, 3, 1, 0));
    Fake { dir, install }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/ncu-csv-exports")
        .join(name)
}

impl Fake {
    fn run(&self, mode: &str, program_args: &[&str]) -> Result<kprof::ncu::RunOutput, NcuError> {
        let d = self.dir.path();
        let env: Vec<(OsString, OsString)> = vec![
            ("FAKE_MODE".into(), mode.into()),
            ("FAKE_CSV".into(), fixture("kprof-keyed.csv").into()),
            ("FAKE_ARGS".into(), d.join("args.txt").into()),
            (CHILD_ENV.into(), "bench.matmul".into()),
        ];
        let mut opts = NcuOptions::default();
        opts.report_path = Some(d.join("out/r1.ncu-rep"));
        let mut import = ImportOptions::default();
        import.benchmark = "matmul".into();
        import.metrics = Some(opts.metrics.clone());
        relaunch_with(&self.install, &opts, "/bin/sh", program_args, &env, &import)
    }
    /// The error of a run of `/bin/sh -c true` under the fake in mode `mode` (a failure of ncu's).
    fn fail(&self, mode: &str) -> NcuError {
        self.run(mode, &["-c", "true"]).unwrap_err()
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn success_runs_the_child_with_its_target_and_keeps_report_log_and_csv() {
    let f = fake();
    let marker = f.path("child.txt");
    let script = format!("echo \"$KPROF_NCU_CHILD\" > '{}'", marker.display());
    let out = f.run("ok", &["-c", &script]).unwrap();
    assert_eq!(read(&marker).trim(), "bench.matmul");
    assert_eq!(out.info.id, "bench.matmul");
    assert_eq!(out.info.mode.mode, NcuMode::Relaunch);
    assert!(
        out.info
            .mode
            .reason
            .starts_with("attach needs ncu >= 2026.2.1.0; found "),
        "{}",
        out.info.mode.reason
    );
    assert_eq!(out.info.report, f.path("out/r1.ncu-rep"));
    assert_eq!(out.info.log, f.path("out/r1.log"));
    assert_eq!(out.info.csv, f.path("out/r1.csv"));
    assert!(out.info.report.is_file() && out.info.log.is_file() && out.info.csv.is_file());
    assert!(read(&out.info.csv).contains("matmul#c0.1.0"));
    // Only the requested metric was read back, attributed by key.
    assert!(out.raw.series.iter().all(|s| s.key.metric == "gpu__time_duration.sum"));
    assert!(out
        .raw
        .series
        .iter()
        .any(|s| s.key.benchmark == "matmul" && s.key.annotation == "matmul"));
    // ncu saw the flags; the log file is passed explicitly.
    let args = read(&f.path("args.txt"));
    for want in ["--cache-control", "--clock-control", "--nvtx", "regex:kprof@.+/", "-f"] {
        assert!(args.lines().any(|l| l == want), "{want} not in {args}");
    }
    assert_eq!(out.info.argv[0], "--log-file");
    assert_eq!(out.info.argv[1], f.path("out/r1.log").as_os_str());
}

#[test]
fn counter_permission_error_says_what_to_change() {
    let e = fake().fail("perm");
    assert!(matches!(e, NcuError::CounterPermission { .. }), "{e:?}");
    let msg = e.to_string();
    for want in [
        "ERR_NVGPUCTRPERM",
        "NVreg_RestrictProfilingToAdminUsers=0",
        "/etc/modprobe.d",
        "root",
        "r1.log",
        "does not have permission",
    ] {
        assert!(msg.contains(want), "{want:?} missing in {msg}");
    }
}

#[test]
fn unknown_metric() {
    let e = fake().fail("metric");
    match &e {
        NcuError::InvalidMetric { metrics, .. } => assert_eq!(metrics, &vec!["nope__x.sum".to_string()]),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("--query-metrics"), "{e}");
}

#[test]
fn crash_shows_exit_code_and_log_tail() {
    let e = fake().fail("crash");
    let msg = e.to_string();
    assert!(matches!(e, NcuError::Crashed { .. }), "{e:?}");
    assert!(msg.contains("exit code 11") && msg.contains("/bin/sh -c true"), "{msg}");
    assert!(
        msg.contains("The application returned an error code (11)") && msg.contains("line 25"),
        "{msg}"
    );
    assert!(!msg.contains("line 5\n"), "tail only: {msg}");
    let e = fake().fail("signal");
    assert!(
        e.to_string().contains("signal 9") && e.to_string().contains("about to die"),
        "{e}"
    );
}

#[test]
fn nothing_profiled_and_missing_report() {
    let e = fake().fail("nokernels");
    let msg = e.to_string();
    assert!(matches!(e, NcuError::NoKernels { .. }), "{e:?}");
    assert!(
        msg.contains("regex:kprof@.+/") && msg.contains("KPROF_NCU_CHILD=bench.matmul"),
        "{msg}"
    );
    let e = fake().fail("noreport");
    assert!(matches!(e, NcuError::ReportMissing { .. }), "{e:?}");
    assert!(e.to_string().contains("r1.ncu-rep"), "{e}");
}

#[test]
fn export_failure_shows_the_command_and_output() {
    let e = fake().fail("badexport");
    assert!(matches!(e, NcuError::Export { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("--import") && msg.contains("--csv --page raw --print-units base"),
        "{msg}"
    );
    assert!(
        msg.contains("exit code 3") && msg.contains("cannot read report"),
        "{msg}"
    );
}

#[test]
fn report_stems_never_collide() {
    let a = report_stem("pkg/bench.py", "matmul", 0);
    let b = report_stem("pkg_bench.py", "matmul", 0);
    let c = report_stem("other/bench.py", "matmul", 0);
    let d = report_stem("pkg/bench.py", "matmul", 1);
    let e = report_stem("my_crate::benches", "matmul", 0);
    let all = [&a, &b, &c, &d, &e];
    for (i, x) in all.iter().enumerate() {
        for y in &all[i + 1..] {
            assert_ne!(x, y);
        }
        assert!(x.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)), "{x}");
    }
    assert!(a.starts_with("pkg_bench.matmul-0-"), "{a}");
    assert_eq!(a, report_stem("pkg/bench.py", "matmul", 0));
    assert!(report_stem(&"m".repeat(500), &"f".repeat(500), 7).len() < 160);
}
