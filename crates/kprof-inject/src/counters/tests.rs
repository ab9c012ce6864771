//! Tests of the counter launch's pure parts: the matching of ranges to kernels and the counter samples.

use super::*;
use crate::report::{group_kernels, Grouping};
use crate::test_support::{fixture, kernel};

#[test]
fn images_double_until_full_and_are_full_once_graphs_run() {
    // Eager launches: 64, 128, 256, ... up to the spec's 300.
    assert_eq!(next_image(63, 64, 300, false), None);
    assert_eq!(next_image(64, 64, 300, false), Some(128));
    assert_eq!(next_image(256, 256, 300, false), Some(300));
    assert_eq!(next_image(300, 300, 300, false), Some(300));
    // A graph launch: a non-empty image smaller than full is switched at once, to full.
    assert_eq!(next_image(3, 64, 4096, true), Some(4096));
    assert_eq!(
        next_image(0, 128, 4096, true),
        None,
        "an empty image takes the graph first"
    );
    assert_eq!(next_image(10, 4096, 4096, true), None);
    assert_eq!(next_image(4096, 4096, 4096, true), Some(4096));
    assert!(is_graph_launch(DOMAIN_DRIVER, cbid::CU_GRAPH_LAUNCH));
    assert!(is_graph_launch(DOMAIN_RUNTIME, cbid::CUDA_GRAPH_LAUNCH_PTSZ));
    assert!(!is_graph_launch(DOMAIN_DRIVER, cbid::CU_LAUNCH_KERNEL));
    assert!(!is_graph_launch(DOMAIN_RUNTIME, cbid::CU_GRAPH_LAUNCH));
}

#[test]
fn captured_launches_and_graph_launches_before_the_start_are_not_profiled() {
    for (domain, id, want) in [
        (DOMAIN_DRIVER, cbid::CU_STREAM_BEGIN_CAPTURE_V2, Some(Capture::Begin)),
        (DOMAIN_RUNTIME, cbid::CUDA_STREAM_BEGIN_CAPTURE, Some(Capture::Begin)),
        (DOMAIN_DRIVER, cbid::CU_STREAM_END_CAPTURE_PTSZ, Some(Capture::End)),
        (DOMAIN_RUNTIME, cbid::CUDA_STREAM_END_CAPTURE, Some(Capture::End)),
        (DOMAIN_DRIVER, cbid::CU_LAUNCH_KERNEL, None),
        // The ids are per domain: the runtime's 497 is not an end of capture.
        (DOMAIN_RUNTIME, cbid::CU_STREAM_END_CAPTURE, None),
    ] {
        assert_eq!(capture_call(domain, id), want, "domain {domain}, callback id {id}");
    }
    assert_eq!(CAPTURES.load(Ordering::SeqCst), 0);
    on_capture_call(true, Some(1)); // a begin that failed starts no capture
    assert_eq!(CAPTURES.load(Ordering::SeqCst), 0);
    on_capture_call(true, Some(0));
    let mut live = Live::default();
    assert!(
        !on_launch(&mut live, 0x1000, false),
        "a captured launch is not profiled"
    );
    assert!(
        live.profiler.is_none() && live.error.is_none(),
        "nor is the profiler started"
    );
    assert_eq!((live.status.captured_launches, live.status.times.launches), (1, 0));
    on_capture_call(false, Some(0));
    on_capture_call(false, Some(0)); // an unmatched end does not go below zero
    assert_eq!(CAPTURES.load(Ordering::SeqCst), 0);
    // Outside a capture (one test: CAPTURES is the process's): graph launches before the
    // first kernel launch do not start the profiler.
    let mut live = Live::default();
    assert!(!on_launch(&mut live, 0x1000, true));
    assert!(!on_launch(&mut live, 0x1000, true));
    assert!(live.profiler.is_none() && live.error.is_none() && !live.saw_graph);
    assert_eq!(
        (live.status.graph_launches_before_start, live.status.times.launches),
        (2, 0)
    );
}

#[test]
fn request_from_the_spec() {
    let spec = |metrics: &[&str], mode, ranges| CounterSpec {
        metrics: metrics.iter().map(|m| m.to_string()).collect(),
        replay_mode: mode,
        ranges_per_image: ranges,
    };
    let k = ReplayMode::Kernel;
    assert_eq!(CounterRequest::from_spec(None), Ok(None));
    assert_eq!(CounterRequest::from_spec(Some(&spec(&[], k, 1))), Ok(None));
    assert_eq!(CounterRequest::from_spec(Some(&spec(&[" ", ""], k, 1))), Ok(None));
    // The durations alone (kprof run --durations counters).
    assert_eq!(
        CounterRequest::from_spec(Some(&spec(&["gpu__time_duration.sum", " "], k, 1)))
            .unwrap()
            .unwrap()
            .metrics,
        ["gpu__time_duration.sum"]
    );
    let r = CounterRequest::from_spec(Some(&spec(
        &[
            " dram__bytes_read.sum",
            "gpu__time_duration.sum",
            "sm__cycles_elapsed.avg ",
            "dram__bytes_read.sum",
        ],
        k,
        DEFAULT_CAPACITY,
    )))
    .unwrap()
    .unwrap();
    assert_eq!(
        r.metrics,
        [
            "dram__bytes_read.sum",
            "gpu__time_duration.sum",
            "sm__cycles_elapsed.avg"
        ]
    );
    assert_eq!(r.capacity, DEFAULT_CAPACITY);
    assert_eq!(
        CounterRequest::from_spec(Some(&spec(&["a.sum"], k, 16)))
            .unwrap()
            .unwrap()
            .capacity,
        16
    );
    let e = CounterRequest::from_spec(Some(&spec(&["a.sum"], ReplayMode::User, 16))).unwrap_err();
    assert_eq!(e, RequestError::ReplayMode(ReplayMode::User));
    assert!(
        e.to_string().contains("range replay") && e.to_string().contains("kernel replay only"),
        "{e}"
    );
    assert_eq!(
        CounterRequest::from_spec(Some(&spec(&["a.sum"], k, 0))),
        Err(RequestError::Capacity)
    );
}

#[test]
fn ranges_map_to_kernels_in_launch_order() {
    // Records arrive out of order and one is reported twice (kernel replay).
    let ks = vec![
        kernel(12, "b", 200, 5),
        kernel(10, "a", 100, 5),
        kernel(12, "b", 200, 5),
        kernel(15, "c", 300, 5),
    ];
    let ranges = vec![vec![1.0], vec![2.0], vec![3.0]];
    let m = map_ranges(&ks, &ranges).unwrap();
    assert_eq!(m[&(10, 0)], [1.0]);
    assert_eq!(m[&(12, 0)], [2.0]);
    assert_eq!(m[&(15, 0)], [3.0]);
    // Kernels of one graph launch share the correlation id and differ by node.
    let mut g1 = kernel(20, "g", 400, 1);
    g1.graph_node_id = 2;
    let mut g2 = kernel(20, "g", 410, 1);
    g2.graph_node_id = 1;
    let m = map_ranges(&[g2.clone(), g1.clone()], &[vec![7.0], vec![8.0]]).unwrap();
    assert_eq!(m[&(20, 2)], [7.0]);
    assert_eq!(m[&(20, 1)], [8.0]);
}

#[test]
fn more_kernels_than_ranges_is_an_error() {
    let ks = vec![kernel(1, "a", 0, 1), kernel(2, "b", 10, 1), kernel(3, "c", 20, 1)];
    let e = map_ranges(&ks, &[vec![1.0], vec![2.0]]).unwrap_err();
    assert_eq!(e, MapError::CountMismatch { kernels: 3, ranges: 2 });
    assert!(e.to_string().contains("another context"), "{e}");
    let e = map_ranges(&ks[..1], &[vec![1.0], vec![2.0]]).unwrap_err();
    assert_eq!(e, MapError::CountMismatch { kernels: 1, ranges: 2 });
    assert!(map_ranges(&[], &[]).unwrap().is_empty());
}

/// `(name, unit)` pairs as the counter metrics of a request.
fn metric_units(pairs: &[(&str, &str)]) -> Vec<MetricUnit> {
    pairs
        .iter()
        .map(|(name, unit)| MetricUnit {
            name: name.to_string(),
            unit: unit.to_string(),
        })
        .collect()
}

/// The `(run, value)` of every sample of `annotation` and `metric`.
fn values(raw: &RawResults, annotation: &str, metric: &str) -> Vec<(u32, f64)> {
    raw.samples
        .iter()
        .filter(|s| {
            let k = &raw.series_of(s).key;
            k.annotation == annotation && k.metric == metric
        })
        .map(|s| (s.run, s.value))
        .collect()
}

#[test]
fn counter_samples_follow_the_timing_groups() {
    let (ranges, batch) = fixture();
    let (groups, _) = group_kernels(&ranges, &batch, &Grouping::default());
    // Per kernel: bytes read (additive) and an average.
    let per_range = vec![
        vec![100.0, 10.0],
        vec![20.0, 30.0],
        vec![110.0, 12.0],
        vec![21.0, 40.0],
        vec![5.0, 50.0],
    ];
    let map = map_ranges(&batch.kernels, &per_range).unwrap();
    let metrics = metric_units(&[
        ("dram__bytes_read.sum", "byte"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ]);
    let ctx = SampleContext {
        benchmark: "prog".into(),
        ..Default::default()
    };
    let (raw, warnings) = build_counter_raw(&groups, &map, &metrics, &ctx);
    assert_eq!(values(&raw, "step", "dram__bytes_read.sum"), [(0, 120.0), (1, 131.0)]);
    assert_eq!(
        values(&raw, "step/mm", "dram__bytes_read.sum"),
        [(0, 100.0), (1, 110.0)]
    );
    // The kernel outside every range is its own annotation, as in the timing samples.
    assert_eq!(values(&raw, "copy", "dram__bytes_read.sum"), [(0, 5.0)]);
    let pct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
    assert_eq!(values(&raw, "step", pct), [(0, 20.0), (1, 26.0)]);
    assert_eq!(values(&raw, "step/mm", pct), [(0, 10.0), (1, 12.0)]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let unit = raw
        .series
        .iter()
        .find(|s| s.key.metric == "dram__bytes_read.sum")
        .map(|s| s.unit.clone());
    assert_eq!(unit.as_deref(), Some("byte"));
    // Breakdown of the two-kernel regions: 2 step runs x 2 metrics x 2 kernels.
    assert_eq!(raw.kernel_breakdown.len(), 8);
    raw.check_unique_runs().unwrap();
    // Same keys as the timing samples.
    let (timing, _) = crate::report::build_raw(&ranges, &batch, &Grouping::default(), &ctx);
    let keys = |r: &RawResults, metric: &str| {
        let mut k: Vec<(String, u32)> = r
            .samples
            .iter()
            .filter(|s| r.series_of(s).key.metric == metric)
            .map(|s| (r.series_of(s).key.annotation.clone(), s.run))
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&timing, DEFAULT_METRIC), keys(&raw, "dram__bytes_read.sum"));
}

#[test]
fn a_kernel_without_a_range_value_gives_nan() {
    let (ranges, batch) = fixture();
    let (groups, _) = group_kernels(&ranges, &batch, &Grouping::default());
    let map: HashMap<KernelKey, Vec<f64>> = [((1, 0), vec![1.0])].into_iter().collect();
    let metrics = metric_units(&[("dram__bytes_read.sum", "byte")]);
    let (raw, _) = build_counter_raw(&groups, &map, &metrics, &SampleContext::default());
    let v = values(&raw, "step", "dram__bytes_read.sum");
    assert!(v[0].1.is_nan() && v[1].1.is_nan());
}

#[test]
fn only_the_durations_of_a_counter_launch_say_where_they_come_from() {
    let (ranges, batch) = fixture();
    let (groups, _) = group_kernels(&ranges, &batch, &Grouping::default());
    let per_range: Vec<Vec<f64>> = (0..5).map(|i| vec![i as f64, 10.0 * i as f64]).collect();
    let map = map_ranges(&batch.kernels, &per_range).unwrap();
    let metrics = metric_units(&[("dram__bytes_read.sum", "byte"), (DEFAULT_METRIC, "ns")]);
    let (raw, _) = build_counter_raw(&groups, &map, &metrics, &SampleContext::default());
    let source = raw
        .extras
        .iter()
        .find(|c| c.name == "DurationSource")
        .expect("a DurationSource column");
    for (s, v) in raw.samples.iter().zip(&source.values) {
        let durations = raw.series_of(s).key.metric == DEFAULT_METRIC;
        let want = if durations {
            kprof_core::ExtraValue::Text("counters".into())
        } else {
            kprof_core::ExtraValue::Missing
        };
        assert_eq!(*v, want, "{}", raw.series_of(s).key.metric);
    }
    // The counter durations of a range carry its own time, as the records' do: kernel i has
    // 10 * i ns; "step" holds gemm (kernel 0 or 2, in "step/mm") and relu (1 or 3, its own).
    let own = raw
        .extras
        .iter()
        .find(|c| c.name == crate::report::SELF_COLUMN)
        .unwrap();
    let own_of = |annotation: &str, metric: &str| -> Vec<kprof_core::ExtraValue> {
        raw.samples
            .iter()
            .zip(&own.values)
            .filter(|(s, _)| raw.series_of(s).key.annotation == annotation && raw.series_of(s).key.metric == metric)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let n = kprof_core::ExtraValue::Number;
    assert_eq!(own_of("step", DEFAULT_METRIC), [n(10.0), n(30.0)]);
    assert_eq!(own_of("step/mm", DEFAULT_METRIC), [n(0.0), n(20.0)]);
    assert_eq!(
        own_of("step", "dram__bytes_read.sum"),
        vec![kprof_core::ExtraValue::Missing; 2]
    );
}
