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
