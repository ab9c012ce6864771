//! `--format markdown` of `kprof compare` and `kprof history` against the expected files in
//! `tests/expected/`, on the recorded H200 sgemm sweeps, and `--json` as `--format json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kprof_core::io::{self, ReadOptions};

use crate::common::{self, text};

fn kprof(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kprof"));
    c.env_remove("KPROF_STORE").current_dir(dir);
    c
}

fn expected(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The output against `tests/expected/<name>`; on a difference, the whole output to paste there.
fn assert_matches_expected(out: &Output, name: &str) {
    let (stdout, stderr) = text(out);
    assert!(
        stdout == expected(name),
        "kprof's markdown differs from tests/expected/{name}; it printed:\n{stdout}\n(stderr: {stderr})"
    );
}

/// A copy of a raw fixture, the samples of each configuration multiplied by `factor(config)`.
fn scaled_by_config(src: &Path, out: &Path, factor: impl Fn(&str) -> f64) {
    let mut raw = io::read_raw_csv(src, &ReadOptions::default()).unwrap();
    let configs: Vec<String> = raw.series.iter().map(|s| raw.config_of(s).to_string()).collect();
    for s in &mut raw.samples {
        s.value *= factor(&configs[s.series as usize]);
    }
    io::write_raw_csv(out, &raw).unwrap();
}

/// The recorded sweep as base.csv and new.csv in `dir`: 1024 10 % slower, 2048 10 % faster,
/// 4096 1 % slower (under the threshold), the others as recorded.
fn sweep_pair(dir: &Path) {
    let src = common::fixture_path("h200-engine-checks-raw-concurrent-trace/g_sgemm_sweep-raw.csv");
    std::fs::copy(&src, dir.join("base.csv")).unwrap();
    scaled_by_config(&src, &dir.join("new.csv"), |c| {
        if c.contains("1024") {
            1.1
        } else if c.contains("2048") {
            0.9
        } else if c.contains("4096") {
            1.01
        } else {
            1.0
        }
    });
}

#[test]
fn compare_markdown_is_the_expected_summary_worst_first() {
    let dir = tempfile::tempdir().unwrap();
    sweep_pair(dir.path());
    let o = kprof(dir.path())
        .args(["compare", "--format", "markdown", "base.csv", "new.csv"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert_matches_expected(&o, "compare-sgemm-sweep.md");
    // Faster everywhere: no regression, exit 0, and the heading says so.
    scaled_by_config(&dir.path().join("base.csv"), &dir.path().join("fast.csv"), |_| 0.8);
    let o = kprof(dir.path())
        .args(["compare", "--format", "markdown", "base.csv", "fast.csv"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        text(&o).0.starts_with("### kprof compare: no regression\n"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn json_is_format_json_and_the_two_flags_conflict() {
    let dir = tempfile::tempdir().unwrap();
    sweep_pair(dir.path());
    let run = |args: &[&str]| kprof(dir.path()).arg("compare").args(args).output().unwrap();
    let a = run(&["--json", "base.csv", "new.csv"]);
    let b = run(&["--format", "json", "base.csv", "new.csv"]);
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 5);
    let both = run(&["--json", "--format", "markdown", "base.csv", "new.csv"]);
    assert_eq!(both.status.code(), Some(2), "{:?}", text(&both));
}

const COMMITS: [&str; 3] = [
    "aaaaaaaaaa1111111111aaaaaaaaaa1111111111",
    "bbbbbbbbbb2222222222bbbbbbbbbb2222222222",
    "cccccccccc3333333333cccccccccc3333333333",
];

/// A store of the recorded sweep at three commits: the second 10 % slower for 1024, the third
/// 5 % slower for 2048 than the second (and 1024 back to normal).
fn store_with_history(dir: &Path) -> PathBuf {
    let src = common::fixture_path("h200-engine-checks-raw-concurrent-trace/g_sgemm_sweep-raw.csv");
    let db = dir.join("kprof.db");
    let factors: [fn(&str) -> f64; 3] = [
        |_| 1.0,
        |c| if c.contains("1024") { 1.1 } else { 1.0 },
        |c| if c.contains("2048") { 1.05 } else { 1.0 },
    ];
    for (i, (commit, factor)) in COMMITS.iter().zip(factors).enumerate() {
        let f = dir.join(format!("c{i}.csv"));
        scaled_by_config(&src, &f, factor);
        let o = kprof(dir)
            .args(["store", "add"])
            .arg(&f)
            .arg("--db")
            .arg(&db)
            .args(["--commit", commit])
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
    }
    db
}

#[test]
fn history_markdown_is_the_expected_summary_worst_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = store_with_history(dir.path());
    let o = kprof(dir.path())
        .args(["history", "--format", "markdown", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_matches_expected(&o, "history-sgemm-sweep.md");
}
