//! `kprof metrics` (crates/kprof-cli/src/metrics_cmd.rs). Needs the unpacked CUPTI wheel (see
//! crates/kprof/tests/counters_host.rs); skips with a printed reason without it.

use std::path::{Path, PathBuf};

use clap::Parser;
use kprof_cli::metrics_cmd::{run, MetricsArgs};

use crate::common;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: MetricsArgs,
}

fn lib() -> Option<PathBuf> {
    kprof::counters::cupti_in(&common::cupti_wheel_dir()?)
}

fn args(lib: &Path, extra: &[&str]) -> MetricsArgs {
    let mut argv = vec!["metrics".to_string(), "--cupti".into(), lib.display().to_string()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    Cli::try_parse_from(argv).unwrap().args
}

#[test]
fn lists_and_counts_passes() {
    let Some(lib) = lib() else { return };
    run(&args(&lib, &["--chip", "GH100", "--filter", "dram__bytes"])).unwrap();
    run(&args(&lib, &["--filter", "dram__bytes_read", "--suffixes"])).unwrap();
    let a = args(
        &lib,
        &[
            "--passes",
            "gpu__time_duration.sum,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
    );
    assert_eq!(a.passes.as_ref().unwrap().len(), 3);
    run(&a).unwrap();
}

#[test]
fn unknown_metric_is_an_error_naming_closest() {
    let Some(lib) = lib() else { return };
    let err = run(&args(&lib, &["--passes", "dram__bytes_red.sum,gpu__time_duration.sum"])).unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("unknown metric \"dram__bytes_red.sum\"") && msg.contains("dram__bytes_read.sum"),
        "{msg}"
    );
    let err = run(&args(&lib, &["--chip", "NOPE1", "--filter", "dram"])).unwrap_err();
    assert!(format!("{err:#}").contains("GH100"), "{err:#}");
}

fn kprof_metrics(lib: &Path, extra: &[&str]) -> (String, String) {
    let o = common::kprof()
        .args(["metrics", "--chip", "GH100", "--cupti"])
        .arg(lib)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{:?}", common::text(&o));
    common::text(&o)
}

/// `--expand` prints a section's metrics (what the engine collects for it) and `--passes` of the
/// section is the passes of those names.
#[test]
fn sections_expand_and_count_passes() {
    let Some(lib) = lib() else { return };
    let (names, err) = kprof_metrics(&lib, &["--expand", "SpeedOfLight"]);
    let names: Vec<&str> = names.lines().collect();
    let want = kprof_core::sections::expand(&["SpeedOfLight"], 90).unwrap().metrics;
    assert_eq!(names, want);
    assert!(err.contains("launch__waves_per_multiprocessor"), "{err}");
    let (by_section, _) = kprof_metrics(&lib, &["--passes", "SpeedOfLight"]);
    let (by_names, _) = kprof_metrics(&lib, &["--passes", &names.join(",")]);
    assert_eq!(by_section, by_names);
    let (one, _) = kprof_metrics(&lib, &["--passes", "dram__bytes_read.sum"]);
    assert!(by_section.trim().parse::<usize>().unwrap() > one.trim().parse::<usize>().unwrap());
}

/// `kprof run --metrics SpeedOfLight` needs the chip to expand the section: without a GPU or
/// KPROF_CHIP it stops before running anything.
#[test]
fn run_with_a_section_and_no_chip_stops() {
    let dir = tempfile::tempdir().unwrap();
    let o = common::kprof()
        .env("KPROF_NO_DEVICE", "1")
        .env_remove("KPROF_CHIP")
        .args(["run", "--out"])
        .arg(dir.path().join("out"))
        .args(["--metrics", "SpeedOfLight", "--", "true"])
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("section and set names need the chip"), "{err}");
    assert!(!dir.path().join("out").exists());
}
