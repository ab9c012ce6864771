//! `kprof run --metrics` without a GPU: name checking with the CUPTI host library (the unpacked
//! wheel; skipped with a printed reason without it) and the two launches per repetition.

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof::counters::{MetricsCatalog, ReplayMode};
use kprof::run_spec::RunSpec;
use kprof_cli::run_cmd::validate_metrics;

use crate::common::{self, cupti_wheel_dir as wheel_dir};

/// A temporary folder with a fake injection library in it ([`common::fake_inject_lib`]): the
/// folder and the library.
fn with_fake_inject_lib() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let lib = common::fake_inject_lib(tmp.path());
    (tmp, lib)
}

fn kprof() -> Command {
    let mut c = common::kprof();
    c.env_remove("KPROF_CUPTI_PATH")
        .env_remove("KPROF_CHIP")
        .env("KPROF_NO_DEVICE", "1");
    c
}

#[test]
fn metric_names_are_checked_with_the_chip_catalog() {
    let Some(dir) = wheel_dir() else { return };
    let lib = kprof::counters::cupti_in(&dir).unwrap();
    let catalog = MetricsCatalog::open(&lib, "GH100").unwrap();
    let units = validate_metrics(
        &catalog,
        &[
            "dram__bytes_read.sum".into(),
            "sm__throughput.avg.pct_of_peak_sustained_elapsed".into(),
        ],
    )
    .unwrap();
    assert_eq!(units[0], ("dram__bytes_read.sum".to_string(), "byte".to_string()));
    assert_eq!(units[1].1, "%");
    let e = validate_metrics(&catalog, &["dram__bytes_red.sum".into()]).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("unknown metric \"dram__bytes_red.sum\"") && msg.contains("dram__bytes_read.sum"),
        "{msg}"
    );
}

#[test]
fn the_quick_check_accepts_what_the_catalog_accepts() {
    let Some(dir) = wheel_dir() else { return };
    let lib = kprof::counters::CuptiLib::load(&kprof::counters::cupti_in(&dir).unwrap()).unwrap();
    let catalog = MetricsCatalog::with_lib(lib, "GH100", None).unwrap();
    let sets: &[&[&str]] = &[
        &[
            "dram__bytes_read.sum",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
        &["gpu__time_duration.sum"],
        &["dram__bytes_read.sum.per_second", "lts__t_bytes.sum"],
        &["smsp__inst_executed.sum", "sm__cycles_elapsed.avg.per_second"],
        &["dram__bytes_red.sum"],
        &["dram__bytes_read"],
        &["dram__bytes_read.sum.nonsense"],
        &["dram__bytes_read.sum", "nope__x.sum"],
        &["nvlrx__bytes.sum", "nvltx__bytes.sum"],
        &["nvlrx__bytes.sum", "dram__bytes_read.sum"],
    ];
    for set in sets {
        let names: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        let quick = kprof_cli::run_cmd::check_metrics(lib, "GH100", &names);
        let full = validate_metrics(&catalog, &names);
        assert_eq!(
            quick.is_ok(),
            full.is_ok(),
            "{set:?}: quick {quick:?}, catalog {full:?}"
        );
        if let (Err(q), Err(f)) = (&quick, &full) {
            // A refusal is explained as before: the catalog's message.
            assert_eq!(format!("{q:#}"), format!("{f:#}"), "{set:?}");
        }
    }
}

#[test]
fn unknown_metric_exits_2_before_launching() {
    let Some(dir) = wheel_dir() else { return };
    let (tmp, fake_lib) = with_fake_inject_lib();
    let marker = tmp.path().join("ran");
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .env("KPROF_CUPTI_WHEEL_DIR", &dir)
        .env("KPROF_CHIP", "GH100")
        .args(["run", "--metrics", "dram__bytes_red.sum", "--out"])
        .arg(tmp.path().join("out"))
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown metric \"dram__bytes_red.sum\"")
            && err.contains("closest valid names: dram__bytes_read.sum"),
        "{err}"
    );
    assert!(!marker.exists(), "the command must not run");
}

/// `sh -c` that appends `<KPROF_RUN_METRICS or "unset">\t<KPROF_RUN_SPEC>` to `log`.
fn log_spec(log: &Path) -> String {
    format!(
        "printf '%s\\t%s\\n' \"${{KPROF_RUN_METRICS-unset}}\" \"$KPROF_RUN_SPEC\" >> {}",
        log.display()
    )
}

/// The launches logged by [`log_spec`]: the counter-launch marker and the run spec of each.
fn launches(log: &Path) -> Vec<(String, RunSpec)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let (marker, spec) = l.split_once('\t').unwrap();
            (marker.to_string(), RunSpec::from_json(spec).unwrap())
        })
        .collect()
}

#[test]
fn the_launches_of_each_repetition_follow_metrics_and_durations() {
    let (tmp, fake_lib) = with_fake_inject_lib();
    let log = tmp.path().join("log");
    // `kprof run ARGS --out ... -- sh -c <log the launch>` with KPROF_RUN_COUNTER_RANGES=ranges.
    let run = |ranges: &str, args: &[&str]| {
        kprof()
            .env("KPROF_INJECT_PATH", &fake_lib)
            .env("KPROF_RUN_COUNTER_RANGES", ranges)
            .arg("run")
            .args(args)
            .arg("--out")
            .arg(tmp.path().join("out"))
            .args(["--", "sh", "-c"])
            .arg(log_spec(&log))
            .output()
            .unwrap()
    };
    // (counter-launch marker, output folder, counters: metrics, replay mode, kernels per image)
    type Launch = (String, String, Option<(Vec<String>, ReplayMode, usize)>);
    let seen = || -> Vec<Launch> {
        launches(&log)
            .into_iter()
            .map(|(marker, spec)| {
                let dir = spec.output.unwrap().file_name().unwrap().to_string_lossy().into_owned();
                (
                    marker,
                    dir,
                    spec.counters.map(|c| (c.metrics, c.replay_mode, c.ranges_per_image)),
                )
            })
            .collect()
    };
    let metrics = [
        "--repeat",
        "2",
        "--metrics",
        "dram__bytes_read.sum,gpu__time_duration.sum",
    ];
    // By default one counter launch per repetition, which also collects the durations.
    let o = run("16", &metrics);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let both = "dram__bytes_read.sum,gpu__time_duration.sum".to_string();
    let with_durations = Some((
        vec!["dram__bytes_read.sum".to_string(), "gpu__time_duration.sum".to_string()],
        ReplayMode::Kernel,
        16,
    ));
    assert_eq!(
        seen(),
        [
            (both.clone(), "rep0-counters".to_string(), with_durations.clone()),
            (both, "rep1-counters".to_string(), with_durations),
        ]
    );
    // --durations records: a timing launch, then the counter launch, in every repetition. No
    // CUDA process: no results, exit 1; but every launch ran, in order.
    std::fs::remove_file(&log).unwrap();
    let o = run("16", &[&metrics[..], &["--durations", "records"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let seen = seen();
    let counters = Some((vec!["dram__bytes_read.sum".to_string()], ReplayMode::Kernel, 16));
    let m = "dram__bytes_read.sum".to_string();
    assert_eq!(
        seen,
        [
            ("unset".to_string(), "rep0".to_string(), None),
            (m.clone(), "rep0-counters".to_string(), counters.clone()),
            ("unset".to_string(), "rep1".to_string(), None),
            (m, "rep1-counters".to_string(), counters),
        ]
    );
    // One launch: only the timing metric, no counter launch; --durations counters without
    // metrics, a counter launch of the durations alone.
    for (args, marker, counter_metrics) in [
        (["--metrics", "gpu__time_duration.sum"], "unset", None),
        (
            ["--durations", "counters"],
            "gpu__time_duration.sum",
            Some(vec!["gpu__time_duration.sum".to_string()]),
        ),
    ] {
        std::fs::remove_file(&log).unwrap();
        let o = run("", &args);
        assert_eq!(o.status.code(), Some(1));
        let seen = launches(&log);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, marker);
        assert_eq!(seen[0].1.counters.as_ref().map(|c| c.metrics.clone()), counter_metrics);
    }
    // A bad KPROF_RUN_COUNTER_RANGES stops kprof run before the command runs.
    std::fs::remove_file(&log).unwrap();
    let o = run("0", &["--metrics", "dram__bytes_read.sum"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("KPROF_RUN_COUNTER_RANGES=\"0\" is not a positive number"),
        "{err}"
    );
    assert!(!log.exists(), "the command must not run");
}

#[test]
fn a_counter_launch_that_ran_cuda_graphs_is_followed_by_a_timing_launch() {
    let (tmp, fake_lib) = with_fake_inject_lib();
    let log = tmp.path().join("log");
    // Logs the launch; a counter launch writes a status saying it saw 60 kernels of CUDA graphs.
    let script = format!(
        r#"{}
dir=$(printf '%s' "$KPROF_RUN_SPEC" | sed -n 's/.*"output":"\([^"]*\)".*/\1/p')
if [ -n "$KPROF_RUN_METRICS" ]; then
  echo '{{"pid": 1, "cuda_injected": true, "counters": {{"graph_kernels": 60}}, "warnings": [], "errors": []}}' > "$dir/kprof-run-1.json"
fi"#,
        log_spec(&log)
    );
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--repeat", "2", "--metrics", "dram__bytes_read.sum", "--out"])
        .arg(tmp.path().join("out"))
        .args(["--", "sh", "-c"])
        .arg(script)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("launched CUDA graphs"), "{err}");
    let dirs: Vec<String> = launches(&log)
        .into_iter()
        .map(|(_, spec)| spec.output.unwrap().file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs, ["rep0-counters", "rep0", "rep1-counters", "rep1"]);
    assert!(err.contains("execution 4/4"), "{err}");
}

#[test]
fn range_replay_is_refused_at_parsing() {
    let o = kprof()
        .args([
            "run",
            "--metrics",
            "dram__bytes_read.sum",
            "--replay-mode",
            "range",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("range replay is not available for `kprof run`"), "{err}");
}

/// `sh -c` that writes, into the output folder of its run spec, a status file whose time line
/// says CUDA started 1 s after `now` (Unix seconds at the call), with one counter collection of
/// 8 passes in the counter launch.
fn fake_status_script() -> String {
    r#"dir=$(printf '%s' "$KPROF_RUN_SPEC" | sed -n 's/.*"output":"\([^"]*\)".*/\1/p')
now=$(date +%s)
case "$KPROF_RUN_METRICS" in
  "") counters=null ;;
  *) counters='{"launches": 10, "passes": 8, "images_decoded": 1, "start_s": 0.25, "replay_s": 2.5, "decode_s": 0.01, "evaluate_s": 0.01}' ;;
esac
cat > "$dir/kprof-run-$$.json" <<JSON
{"pid": $$, "cuda_injected": true, "counters": $counters, "warnings": [], "errors": [],
 "timeline": {"cuda_init_unix_ns": $(( (now - 100) * 1000000000 )), "exit_handler_unix_ns": $(( (now - 95) * 1000000000 )),
  "results_unix_ns": $(( (now - 95) * 1000000000 )), "kernel_records": 10, "kernels": 10,
  "records_gpu_ns": 1000000, "kernels_gpu_ns": 1000000,
  "region_means": [{"annotation": "mm", "runs": 10, "mean_ns": 100000.0}]}}
JSON"#
        .to_string()
}

#[test]
fn verbose_prints_the_time_split_and_every_run_writes_it() {
    let (tmp, fake_lib) = with_fake_inject_lib();
    let out = tmp.path().join("out");
    let run = |options: &[&str]| {
        kprof()
            .env("KPROF_INJECT_PATH", &fake_lib)
            .arg("run")
            .args(options)
            .arg("--out")
            .arg(&out)
            .args(["--", "sh", "-c"])
            .arg(fake_status_script())
            .output()
            .unwrap()
    };
    let o = run(&[
        "--verbose",
        "--metrics",
        "dram__bytes_read.sum",
        "--durations",
        "records",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    // The fake processes wrote no samples: exit 1, but the split is printed and written.
    assert_eq!(o.status.code(), Some(1), "{err}");
    let line = |needle: &str| {
        err.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{err}"))
            .to_string()
    };
    assert!(err.contains("kprof: time split (wall clock)"), "{err}");
    // The line holding the first text holds the second. The fake time line: 5 s with CUDA; the
    // counter launch's collection as written.
    for (needle, want) in [
        ("execution 1/2: repetition 1, timing launch", " s "),
        ("execution 2/2: repetition 1, counter launch", " s "),
        ("with CUDA", "5.000 s"),
        ("config image of 8 passes", "0.250 s"),
        ("replay: 10 profiled launch calls", "250.0 ms per launch"),
        ("mean per region", "mm x1.000"),
    ] {
        assert!(line(needle).contains(want), "{needle}: {want}\n{err}");
    }
    let split: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("time-split.json")).unwrap()).unwrap();
    assert_eq!(split["executions"].as_array().unwrap().len(), 2);
    assert_eq!(split["executions"][1]["replay"]["passes"], 8);
    assert_eq!(split["executions"][0]["kernels"], 10);
    assert!(split["total_s"].as_f64().unwrap() > 0.0);

    // Without --verbose nothing is printed, the file is still written.
    std::fs::remove_file(out.join("time-split.json")).unwrap();
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("time split"), "{err}");
    assert!(out.join("time-split.json").exists());
}
