//! The exact ncu argument list for each option.

use std::ffi::OsString;
use std::path::PathBuf;

use kprof::ncu::{
    CacheControl, ClockControl, NcuModeRequest, NcuOptions, ReplayMode, TargetProcesses, DEFAULT_NVTX_INCLUDE,
};

fn strs(v: &[OsString]) -> Vec<String> {
    v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

const BASE: [&str; 14] = [
    "--cache-control",
    "all",
    "--clock-control",
    "none",
    "--replay-mode",
    "kernel",
    "--target-processes",
    "all",
    "--nvtx",
    "--nvtx-include",
    "regex:kprof@.+/",
    "--metrics",
    "gpu__time_duration.sum",
    "-f",
];

fn expect(opts: &NcuOptions, want: &[&str]) {
    let got = strs(&opts.argv("python3", ["bench.py", "--n", "4096"]));
    let mut full: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    full.extend(["--", "python3", "bench.py", "--n", "4096"].map(String::from));
    assert_eq!(got, full);
}

#[test]
fn defaults() {
    assert_eq!(DEFAULT_NVTX_INCLUDE, "regex:kprof@.+/");
    expect(&NcuOptions::default(), &BASE);
}

#[test]
fn cache_clock_replay_and_target_combinations() {
    for cache in [CacheControl::All, CacheControl::None] {
        for clock in [ClockControl::Base, ClockControl::None] {
            for replay in [ReplayMode::Kernel, ReplayMode::User, ReplayMode::Application] {
                for target in [TargetProcesses::All, TargetProcesses::ApplicationOnly] {
                    let mut o = NcuOptions::default();
                    o.cache_control = cache;
                    o.clock_control = clock;
                    o.replay_mode = replay;
                    o.target_processes = target;
                    let mut want: Vec<&str> = BASE.to_vec();
                    want[1] = cache.as_str();
                    want[3] = clock.as_str();
                    want[5] = replay.as_str();
                    want[7] = target.as_str();
                    expect(&o, &want);
                }
            }
        }
    }
    assert_eq!(CacheControl::None.to_string(), "none");
    assert_eq!(ClockControl::Base.to_string(), "base");
    assert_eq!(ReplayMode::Application.to_string(), "application");
    assert_eq!(TargetProcesses::ApplicationOnly.to_string(), "application-only");
    for t in [TargetProcesses::All, TargetProcesses::ApplicationOnly] {
        assert_eq!(t.as_str().parse::<TargetProcesses>(), Ok(t));
    }
    assert_eq!(
        "parent".parse::<TargetProcesses>().unwrap_err().to_string(),
        "ncu_options['target_processes'] must be one of 'all', 'application-only'; got 'parent'"
    );
}

#[test]
fn everything_set() {
    let mut o = NcuOptions::default();
    o.metrics = vec!["gpu__time_duration.sum".into(), "dram__bytes_read.sum".into()];
    o.set = Some("full".into());
    o.sections = vec!["SpeedOfLight".into(), "MemoryWorkloadAnalysis".into()];
    o.replay_mode = ReplayMode::User;
    o.cache_control = CacheControl::None;
    o.clock_control = ClockControl::Base;
    o.target_processes = TargetProcesses::ApplicationOnly;
    o.launch_skip = Some(3);
    o.launch_count = Some(10);
    o.nvtx_include = vec!["kprof@matmul#c0.0.0/".into(), "regex:kprof@scale.*/".into()];
    o.extra_args = vec!["--verbose".into(), "--graph-profiling".into(), "graph".into()];
    o.log_file = Some(PathBuf::from("/tmp/out dir/a.log"));
    o.report_path = Some(PathBuf::from("/tmp/out dir/a.ncu-rep"));
    o.force_overwrite = true;
    // Not an ncu argument: the argv below has no trace of it.
    o.mode = NcuModeRequest::Relaunch;
    expect(
        &o,
        &[
            "--log-file",
            "/tmp/out dir/a.log",
            "--cache-control",
            "none",
            "--clock-control",
            "base",
            "--replay-mode",
            "range",
            "--target-processes",
            "application-only",
            "--nvtx",
            "--nvtx-include",
            "kprof@matmul#c0.0.0/",
            "--nvtx-include",
            "regex:kprof@scale.*/",
            "--metrics",
            "gpu__time_duration.sum,dram__bytes_read.sum",
            "--set",
            "full",
            "--section",
            "SpeedOfLight",
            "--section",
            "MemoryWorkloadAnalysis",
            "--launch-skip",
            "3",
            "--launch-count",
            "10",
            "--verbose",
            "--graph-profiling",
            "graph",
            "-f",
            "-o",
            "/tmp/out dir/a.ncu-rep",
        ],
    );
}

#[test]
fn no_metrics_no_filter_no_overwrite() {
    let mut o = NcuOptions::default();
    o.metrics = vec![];
    o.nvtx_include = vec![];
    o.force_overwrite = false;
    o.set = Some("basic".into());
    // The defaults up to `--nvtx`, then the section set instead of the filter, metrics and `-f`.
    let want: Vec<&str> = BASE[..9].iter().copied().chain(["--set", "basic"]).collect();
    expect(&o, &want);
    assert_eq!(o.filters_label(), "(none)");
}

#[test]
fn program_arguments_are_passed_verbatim() {
    // No shell: spaces, quotes and `;` stay inside one argument.
    let o = NcuOptions::default();
    let got = strs(&o.argv("/usr/bin/my prog", ["a b", "\"q\"", "; rm -rf /", "--", "-f"]));
    assert_eq!(
        &got[got.len() - 6..],
        &["/usr/bin/my prog", "a b", "\"q\"", "; rm -rf /", "--", "-f"]
    );
    assert_eq!(got[got.len() - 7], "--");
}
