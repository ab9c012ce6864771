//! Tests of `kprof run`'s planning, merging and joining ([`super`]).
use super::*;
use kprof_core::{DeviceInfo, SampleRecord};

#[test]
fn env_sweep_parsing() {
    assert_eq!(
        parse_env_sweep("N=1,2,4").unwrap(),
        ("N".into(), vec!["1".into(), "2".into(), "4".into()])
    );
    assert!(parse_env_sweep("N").is_err());
    assert!(parse_env_sweep("=1").is_err());
    assert!(parse_env_sweep("A-B=1").is_err());
    assert!(parse_env_sweep("N=").is_err());
}

#[test]
fn benchmark_names() {
    let v = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
    assert_eq!(benchmark_name(&v(&["./bin/sgemm", "4096"])), "sgemm");
    assert_eq!(
        benchmark_name(&v(&["/opt/torch/.venv/bin/python3", "-u", "train.py"])),
        "train"
    );
    assert_eq!(benchmark_name(&v(&["python", "-c", "pass"])), "python");
    assert_eq!(
        benchmark_name(&v(&["torchrun", "--nproc-per-node", "2", "app.py"])),
        "app"
    );
}

#[test]
fn foreign_injection_is_refused() {
    let ours = Path::new("/x/libkprof_inject.so");
    assert!(check_foreign_injection(|_| None, ours).is_ok());
    assert!(check_foreign_injection(
        |v| (v == "CUDA_INJECTION64_PATH").then(|| ours.display().to_string()),
        ours
    )
    .is_ok());
    let e = check_foreign_injection(
        |v| (v == "NVTX_INJECTION64_PATH").then(|| "/opt/ncu/libInterceptor.so".into()),
        ours,
    )
    .unwrap_err();
    assert!(e.to_string().contains("ncu"), "{e}");
}

#[test]
fn plan_orders_sweep_then_repeat() {
    let timing_only = Launches::of(&[], DurationSource::Auto);
    let p = plan(Some(&("N".into(), vec!["1".into(), "2".into()])), 2, timing_only);
    assert_eq!(p.len(), 4);
    assert_eq!(p[1].sweep, Some(("N".into(), "1".into())));
    assert_eq!(p[1].repeat, 1);
    assert_eq!(p[2].dir, PathBuf::from("procs/sweep1-rep0"));
    assert_eq!(plan(None, 1, timing_only)[0].dir, PathBuf::from("procs/rep0"));
    let dirs = |launches| {
        plan(None, 2, launches)
            .iter()
            .map(|i| (i.dir.display().to_string(), i.counters, i.repeat))
            .collect::<Vec<_>>()
    };
    let dram = ["dram__bytes_read.sum".to_string()];
    assert_eq!(
        dirs(Launches::of(&dram, DurationSource::Records)),
        [
            ("procs/rep0".to_string(), false, 0),
            ("procs/rep0-counters".to_string(), true, 0),
            ("procs/rep1".to_string(), false, 1),
            ("procs/rep1-counters".to_string(), true, 1),
        ]
    );
    // --metrics by default: the counter launch alone (a timing launch only after CUDA graphs).
    let counters_only = [
        ("procs/rep0-counters".to_string(), true, 0),
        ("procs/rep1-counters".to_string(), true, 1),
    ];
    assert_eq!(dirs(Launches::of(&dram, DurationSource::Auto)), counters_only);
    assert_eq!(dirs(Launches::of(&[], DurationSource::Counters)), counters_only);
    let after = plan(None, 2, Launches::of(&dram, DurationSource::Auto))[1].timing_after();
    assert_eq!(
        (after.dir, after.counters, after.repeat),
        (PathBuf::from("procs/rep1"), false, 1)
    );
}

#[test]
fn launches_and_their_metrics() {
    let dram = ["dram__bytes_read.sum".to_string()];
    let m = |launches: Launches, metrics: &[String]| launches.counter_launch_metrics(metrics);
    let auto = Launches::of(&dram, DurationSource::Auto);
    assert!(auto.counters && auto.counter_durations && auto.timing_for_graphs && !auto.timing);
    assert_eq!(m(auto, &dram), ["dram__bytes_read.sum", "gpu__time_duration.sum"]);
    let records = Launches::of(&dram, DurationSource::Records);
    assert!(records.timing && records.counters && !records.counter_durations);
    assert_eq!(m(records, &dram), ["dram__bytes_read.sum"]);
    assert!(
        m(Launches::of(&[], DurationSource::Auto), &[]).is_empty(),
        "no counter launch"
    );
    assert!(m(Launches::of(&[], DurationSource::Records), &[]).is_empty());
    assert_eq!(
        m(Launches::of(&[], DurationSource::Counters), &[]),
        ["gpu__time_duration.sum"]
    );
    let graph = serde_json::json!({"counters": {"graph_kernels": 60}});
    let eager = serde_json::json!({"counters": {"graph_kernels": 0}});
    assert!(saw_graphs(&[eager.clone(), graph]));
    let graph_records = serde_json::json!({"counters": {"graph_kernels": 0, "graph_launches": 23}});
    assert!(saw_graphs(&[eager.clone(), graph_records]));
    assert!(!saw_graphs(&[eager, serde_json::json!({"pid": 1})]));
    assert!(parse_choice::<DurationSource>("nope")
        .unwrap_err()
        .contains("'records'"));
}

#[test]
fn a_timing_launch_takes_the_durations_from_the_counter_launch() {
    let mut counters = part(&[10.0, 20.0]);
    for run in 0..2 {
        sample(
            &mut counters,
            "mm",
            "dram__bytes_read.sum",
            "byte",
            run,
            1.0 + run as f64,
        );
    }
    let kept = without_durations(&counters).unwrap();
    let metrics: Vec<_> = kept
        .samples
        .iter()
        .map(|s| (kept.series_of(s).key.metric.clone(), s.value))
        .collect();
    assert_eq!(
        metrics,
        [
            ("dram__bytes_read.sum".to_string(), 1.0),
            ("dram__bytes_read.sum".to_string(), 2.0)
        ]
    );
    // Joined to a timing launch, the durations are the timing launch's only.
    let (joined, warnings) = join_counters(&part(&[5.0, 6.0]), &kept).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let durations: Vec<f64> = joined
        .samples
        .iter()
        .filter(|s| joined.series_of(s).key.metric == DEFAULT_METRIC)
        .map(|s| s.value)
        .collect();
    assert_eq!(durations, [5.0, 6.0]);
}

fn part(values: &[f64]) -> RawResults {
    let mut r = RawResults::new();
    for (run, v) in values.iter().enumerate() {
        sample(&mut r, "mm", DEFAULT_METRIC, "ns", run as u32, *v);
    }
    r
}

#[test]
fn merge_offsets_runs_and_adds_sweep_params() {
    let parts = vec![(None, part(&[1.0, 2.0])), (None, part(&[3.0]))];
    let m = merge(&parts).unwrap();
    assert_eq!(m.samples.iter().map(|s| s.run).collect::<Vec<_>>(), [0, 1, 2]);
    m.check_unique_runs().unwrap();
    let sweep = vec![
        (Some(("N".to_string(), "1".to_string())), part(&[1.0])),
        (Some(("N".to_string(), "2".to_string())), part(&[2.0])),
        (Some(("N".to_string(), "1".to_string())), part(&[1.5])),
    ];
    let m = merge(&sweep).unwrap();
    assert_eq!(m.configs.len(), 2);
    assert_eq!(m.configs[0].get("N"), Some(&ParamValue::Int(1)));
    assert_eq!(m.samples.iter().map(|s| s.run).collect::<Vec<_>>(), [0, 0, 1]);
    m.check_unique_runs().unwrap();
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: RunArgs,
}

fn parse(argv: &[&str]) -> Result<RunArgs, clap::Error> {
    use clap::Parser;
    Cli::try_parse_from(std::iter::once("run").chain(argv.iter().copied())).map(|c| c.args)
}

#[test]
fn metrics_and_replay_mode_arguments() {
    let a = parse(&["--", "prog"]).unwrap();
    assert!(a.metrics.is_empty());
    assert_eq!(a.replay_mode, ReplayMode::Kernel);
    let a = parse(&[
        "--metrics",
        "dram__bytes_read.sum,gpu__time_duration.sum",
        "--metrics",
        "sm__cycles_elapsed.avg",
        "--replay-mode",
        "kernel",
        "--",
        "prog",
    ])
    .unwrap();
    assert_eq!(
        a.metrics,
        [
            "dram__bytes_read.sum",
            "gpu__time_duration.sum",
            "sm__cycles_elapsed.avg"
        ]
    );
    assert_eq!(
        counter_metrics(&a.metrics),
        ["dram__bytes_read.sum", "sm__cycles_elapsed.avg"]
    );
    assert!(counter_metrics(&["gpu__time_duration.sum".into(), " ".into()]).is_empty());
    let e = parse(&["--replay-mode", "range", "--", "prog"]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let msg = e.to_string();
    assert!(
        msg.contains("range replay is not available for `kprof run`") && msg.contains("--replay-mode kernel"),
        "{msg}"
    );
    let msg = parse(&["--replay-mode", "warp", "--", "prog"]).unwrap_err().to_string();
    assert!(
        msg.contains("\"warp\"") && msg.contains("--replay-mode") && msg.contains("use kernel"),
        "{msg}"
    );
    assert_eq!(
        parse(&["--replay-mode", "user", "--", "prog"]).unwrap_err().exit_code(),
        2
    );
}

#[test]
fn the_run_spec_carries_the_options() {
    let a = parse(&[
        "--group-by",
        "both",
        "--nvtx-include",
        "app@step*",
        "--nvtx-include",
        "mm",
        "--nvtx-exclude",
        "warm",
        "--verbose",
        "--",
        "prog",
    ])
    .unwrap();
    let dir = Path::new("/tmp/out/procs/rep0");
    let timing = run_spec(&a, "prog", dir, None);
    assert_eq!(timing.output.as_deref(), Some(dir));
    assert_eq!(timing.benchmark.as_deref(), Some("prog"));
    assert_eq!(timing.group_by, GroupBy::Both);
    assert_eq!(timing.nvtx_include, ["app@step*", "mm"]);
    assert_eq!(timing.nvtx_exclude, ["warm"]);
    assert!(timing.verbose && timing.counters.is_none());
    assert_eq!(
        (timing.kernel_trace, timing.graph_trace, timing.attribution),
        (KernelTrace::Concurrent, None, Attribution::Order)
    );
    let traced = parse(&[
        "--kernel-trace",
        "serial",
        "--graph-trace",
        "graph",
        "--attribution",
        "records",
        "--",
        "p",
    ])
    .unwrap();
    let spec = run_spec(&traced, "p", dir, None);
    assert_eq!(
        (spec.kernel_trace, spec.graph_trace, spec.attribution),
        (KernelTrace::Serial, Some(GraphTrace::Graph), Attribution::Records)
    );
    assert_eq!(RunSpec::from_json(&spec.to_json().unwrap()).unwrap(), spec);
    let e = parse(&["--kernel-trace", "parallel", "--", "p"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("kernel_trace must be one of 'concurrent', 'serial'; got 'parallel'"),
        "{e}"
    );
    // What the injection library reads back is what was written.
    assert_eq!(RunSpec::from_json(&timing.to_json().unwrap()).unwrap(), timing);
    let metrics = vec!["dram__bytes_read.sum".to_string()];
    let c = run_spec(&a, "prog", dir, Some((&metrics, 16))).counters.unwrap();
    assert_eq!(
        (c.metrics, c.replay_mode, c.ranges_per_image),
        (metrics, ReplayMode::Kernel, 16)
    );
    let plain = run_spec(&parse(&["--", "p"]).unwrap(), "p", dir, None);
    assert_eq!(
        (plain.group_by, plain.nvtx_nesting),
        (GroupBy::Nvtx, NvtxNesting::Inclusive)
    );
    let flat = parse(&["--nvtx-nesting", "innermost", "--", "p"]).unwrap();
    assert_eq!(run_spec(&flat, "p", dir, None).nvtx_nesting, NvtxNesting::Innermost);
    assert!(parse(&["--nvtx-nesting", "outer", "--", "p"]).is_err());
}

#[test]
fn counter_ranges_override() {
    assert_eq!(counter_ranges(None).unwrap(), DEFAULT_COUNTER_RANGES);
    assert_eq!(counter_ranges(Some(" ")).unwrap(), DEFAULT_COUNTER_RANGES);
    assert_eq!(counter_ranges(Some("16")).unwrap(), 16);
    for bad in ["0", "-1", "many"] {
        let e = counter_ranges(Some(bad)).unwrap_err().to_string();
        assert!(e.contains("KPROF_RUN_COUNTER_RANGES") && e.contains("positive"), "{e}");
    }
}

pub(super) fn sample(raw: &mut RawResults, annotation: &str, metric: &str, unit: &str, run: u32, value: f64) {
    raw.push(&SampleRecord {
        benchmark: "b",
        annotation,
        config: &Config::new(),
        run,
        metric,
        value,
        unit,
        kernel: "k",
        device: &DeviceInfo::default(),
        extras: &[],
    })
    .unwrap();
}

#[test]
fn counter_samples_join_the_timing_table_by_key() {
    // Two repetitions, each a timing and a counter launch with two "mm" occurrences.
    let launches = |metric: &str, unit: &str, base: f64| -> Vec<_> {
        (0..2)
            .map(|rep| {
                let mut r = RawResults::new();
                for occ in 0..2 {
                    sample(&mut r, "mm", metric, unit, occ, base + rep as f64 * 10.0 + occ as f64);
                }
                (None, r)
            })
            .collect()
    };
    let timing_parts = launches(DEFAULT_METRIC, "ns", 100.0);
    let counter_parts = launches("dram__bytes_read.sum", "byte", 1e6);
    let (joined, warnings) = join_counters(&merge(&timing_parts).unwrap(), &merge(&counter_parts).unwrap()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    joined.check_unique_runs().unwrap();
    let by = |metric: &str| {
        joined
            .samples
            .iter()
            .filter(|s| joined.series_of(s).key.metric == metric)
            .map(|s| (s.run, s.value))
            .collect::<Vec<_>>()
    };
    // Run k of each metric is the same occurrence: repetition k/2, occurrence k%2.
    assert_eq!(by(DEFAULT_METRIC), [(0, 100.0), (1, 101.0), (2, 110.0), (3, 111.0)]);
    assert_eq!(
        by("dram__bytes_read.sum"),
        [(0, 1e6), (1, 1e6 + 1.0), (2, 1e6 + 10.0), (3, 1e6 + 11.0)]
    );
    let units: Vec<_> = joined.series.iter().map(|s| s.unit.as_str()).collect();
    assert_eq!(units, ["ns", "byte"]);
    let processed = process(&joined, &ProcessOptions::default()).unwrap();
    assert_eq!(processed.rows.len(), 2);

    // A counter launch that saw one occurrence fewer is reported.
    let mut short = RawResults::new();
    sample(&mut short, "mm", "dram__bytes_read.sum", "byte", 0, 1.0);
    let (_, warnings) = join_counters(&merge(&timing_parts[..1]).unwrap(), &short).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("1 occurrence(s), the timing launches 2"),
        "{}",
        warnings[0]
    );
    // No counters at all: nothing to warn about, the timing table unchanged.
    let (j, w) = join_counters(&merge(&timing_parts).unwrap(), &RawResults::new()).unwrap();
    assert!(w.is_empty());
    assert_eq!(j.samples.len(), 4);
}

#[test]
fn missing_library_message() {
    let dir = tempfile::tempdir().unwrap();
    // Without the copy a release build carries (the lookup itself is tested in inject_lib).
    let e = crate::inject_lib::find(None, Some(dir.path().join("kprof")), &[], None, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("libkprof_inject.so") && e.contains("KPROF_INJECT_PATH"),
        "{e}"
    );
    std::fs::write(dir.path().join(INJECT_LIB), b"").unwrap();
    assert!(find_inject_lib(None, Some(dir.path().join("kprof"))).is_ok());
    assert!(find_inject_lib(Some(dir.path().join("nope.so")), None).is_err());
}
