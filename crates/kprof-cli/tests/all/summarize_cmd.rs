//! `kprof summarize` and `kprof show` through the CLI library: outputs, and one clear message with
//! exit code 1 for each bad input.

use crate::common::{self, run};

fn fixture(name: &str) -> String {
    common::fixture(&format!("nsight-python-csv-handwritten/{name}"))
}

#[test]
fn summarize_writes_the_processed_table_with_t_based_cis() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("processed.csv");
    assert_eq!(
        run(&[
            "summarize",
            &fixture("profiled_data-matmul-0.csv"),
            "-o",
            out.to_str().unwrap()
        ]),
        0
    );
    let p = kprof_core::io::read_processed_csv(&out).unwrap();
    assert!(!p.rows.is_empty());
    for row in &p.rows {
        let s = &row.summary;
        if s.num_runs >= 2 {
            let t = kprof_core::stats::t_quantile(0.975, (s.num_runs - 1) as f64);
            let half = t * s.std_dev / (s.num_runs as f64).sqrt();
            assert!(
                (s.ci95_upper - s.mean - half).abs() <= 1e-9 * s.mean.abs().max(1.0),
                "{row:?}"
            );
        }
    }
    let json = dir.path().join("all.json");
    assert_eq!(
        run(&[
            "summarize",
            &fixture("profiled_data-matmul-0.csv"),
            "-o",
            json.to_str().unwrap()
        ]),
        0
    );
    assert_eq!(run(&["show", json.to_str().unwrap()]), 0);
    assert_eq!(run(&["show", out.to_str().unwrap()]), 0);
}

#[test]
fn summarize_normalises_against_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("n.csv");
    let code = run(&[
        "summarize",
        &fixture("profiled_data-matmul-0.csv"),
        "--normalize-against",
        "base",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let p = kprof_core::io::read_processed_csv(&out).unwrap();
    assert!(
        p.rows
            .iter()
            .all(|r| r.unit == "x" && r.normalized.as_deref() == Some("base")),
        "{:?}",
        p.rows
    );
}

#[test]
fn bad_inputs_exit_1() {
    assert_eq!(run(&["summarize", "/nonexistent/raw.csv"]), 1);
    assert_eq!(
        run(&["summarize", &fixture("profiled_data-matmul-0.csv"), "--stable-rsd=-1"]),
        1
    );
    assert_eq!(
        run(&[
            "summarize",
            &fixture("profiled_data-matmul-0.csv"),
            "--normalize-against",
            "nope"
        ]),
        1
    );
    assert_eq!(
        run(&["summarize", &fixture("profiled_data-matmul-0.csv"), "--params", "nope"]),
        1
    );
    assert_eq!(
        run(&["summarize", &fixture("profiled_data-matmul-0.csv"), "--bootstrap", "0"]),
        1
    );
    assert_eq!(run(&["show", "/nonexistent/file.csv"]), 1);
    assert_eq!(run(&["summarize"]), 2); // usage error from clap
}

/// A results file that says where its durations came from (`DurationSource`) is shown and
/// summarized under a line naming the definition; one that does not say (nsight-python's) is not.
#[test]
fn tables_of_a_file_with_duration_sources_say_which_definition() {
    let file = common::fixture("h200-kprof-run-metrics-vs-ncu/2026-12-02-graph-app-raw.csv");
    for cmd in ["summarize", "show"] {
        let o = common::kprof().args([cmd, &file]).output().unwrap();
        let (out, err) = common::text(&o);
        assert!(o.status.success(), "{err}");
        let first = out
            .lines()
            .find(|l| l.starts_with("durations: "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(first.starts_with("durations: CUPTI kernel records"), "{cmd}: {out}");
        assert!(
            first.contains("`kprof run --durations records|counters`"),
            "{cmd}: {out}"
        );
    }
    let nsight = fixture("profiled_data-matmul-0.csv");
    let o = common::kprof().args(["summarize", &nsight]).output().unwrap();
    let (out, err) = common::text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!out.contains("durations:"), "{out}");
}
