//! Re-parses every activity fixture under tests/fixtures/cupti-activity-records/ (JSON lines written by the
//! collector with KPROF_RECORD_ACTIVITY on a GPU machine, plus one hand-built synthetic file) and
//! checks parser and attribution invariants on them; the synthetic file also has exact answers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use kprof::attribution::{attribute, decode_region_key, encode_region_key};
use kprof::cupti::records::graph_item_name;
use kprof::cupti::RecordedBuffer;
use kprof::sys::cupti::{cbid, ACTIVITY_KIND_CONCURRENT_KERNEL, ACTIVITY_KIND_KERNEL};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cupti-activity-records");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_fixture_parses_and_attributes_consistently() {
    let files = fixtures();
    assert!(!files.is_empty());
    for f in files {
        let rb = RecordedBuffer::read_jsonl(&f).unwrap_or_else(|e| panic!("{e}"));
        let mut kernels = 0;
        for fl in &rb.flushes {
            let b = &fl.batch;
            kernels += b.kernels.len();
            let launch_of: HashMap<u32, u64> = b.launches.iter().map(|a| (a.correlation_id, a.start_ns)).collect();
            for k in &b.kernels {
                assert!(k.end_ns >= k.start_ns, "{}: {k:?}", f.display());
                assert!(!k.name.is_empty(), "{}: kernel without a name {k:?}", f.display());
                if k.start_ns == 0 {
                    // Serial kernel tracing (KIND_KERNEL) times a CUDA graph launch as a whole:
                    // one node record carries the span, the other nodes have no timestamps.
                    assert!(
                        k.graph_id != 0 && k.end_ns == 0,
                        "{}: untimed kernel outside a graph {k:?}",
                        f.display()
                    );
                    continue;
                }
                if let Some(&t) = launch_of.get(&k.correlation_id) {
                    // API and kernel records share one clock: a kernel starts after its launch.
                    assert!(t <= k.start_ns, "{}: launch after kernel {k:?}", f.display());
                }
            }
            let a = attribute(b, &fl.regions);
            let ext: HashMap<u32, u64> = b.external.iter().map(|e| (e.correlation_id, e.external_id)).collect();
            // Every kernel with an external id lands in that region; a timed graph node as part
            // of its launch's item (the graph's span, named after the graph).
            for k in &b.kernels {
                if let Some(id) = ext.get(&k.correlation_id) {
                    let timed_node = k.graph_id != 0 && !(k.start_ns == 0 && k.end_ns == 0);
                    let found = a.by_region.get(id).is_some_and(|v| {
                        if timed_node {
                            v.iter().any(|it| {
                                it.name == graph_item_name(k.graph_id)
                                    && it.correlation_id == k.correlation_id
                                    && it.start_ns <= k.start_ns
                                    && k.end_ns <= it.end_ns
                            })
                        } else {
                            v.contains(k)
                        }
                    });
                    assert!(found, "{}: {k:?} not in region {id:#x}", f.display());
                }
            }
            // No kernel launched inside a recorded span is left unattributed.
            for k in &a.unattributed {
                if let Some(&t) = launch_of.get(&k.correlation_id) {
                    assert!(
                        !fl.regions.iter().any(|r| r.start_ns <= t && t <= r.end_ns),
                        "{}: {k:?} launched inside a region but unattributed",
                        f.display()
                    );
                }
            }
            // Graph launches: all nodes share the launch's correlation id.
            let graph_corrs: HashSet<u32> = b
                .launches
                .iter()
                .filter(|l| cbid::is_graph_launch(l.kind, l.cbid))
                .map(|l| l.correlation_id)
                .collect();
            for k in &b.kernels {
                if k.graph_id != 0 && launch_of.contains_key(&k.correlation_id) {
                    assert!(graph_corrs.contains(&k.correlation_id), "{}: {k:?}", f.display());
                }
            }
        }
        eprintln!("{}: {} flushes, {kernels} kernels", f.display(), rb.flushes.len());
    }
}

#[test]
fn synthetic_fixture_exact_answers() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/cupti-activity-records/synthetic-cuda13.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap();
    assert_eq!(rb.flushes.len(), 2);

    let f0 = &rb.flushes[0];
    let a_id = encode_region_key(0, 0, 0, 1).unwrap();
    let a = attribute(&f0.batch, &f0.regions);
    let names: Vec<&str> = a.by_region[&a_id].iter().map(|k| k.name.as_str()).collect();
    // 3 kernels by external correlation + one from a worker thread by launch timestamp.
    assert_eq!(names, ["_Z4gemmv", "_Z6reducev", "_Z8backwardv", "_Z5scalev"]);
    assert_eq!((a.direct_via[&a_id].external, a.direct_via[&a_id].launch_time), (3, 1));
    assert_eq!(a.total_ns(a_id), 50_000 + 8_000 + 12_000 + 3_000);
    assert_eq!(a.unattributed.len(), 1);
    assert_eq!(a.unattributed[0].name, "_Z7outsidev");

    let f1 = &rb.flushes[1];
    assert_eq!(f1.unparsed, 1, "the marker record is not parsed");
    let b_id = encode_region_key(0, 0, 1, 1).unwrap();
    assert_eq!(decode_region_key(b_id).run, 1);
    let a = attribute(&f1.batch, &f1.regions);
    // The graph launch's 3 nodes (12 us of kernels) are one item: the graph's span.
    assert_eq!(a.by_region[&b_id].len(), 1);
    let it = &a.by_region[&b_id][0];
    assert_eq!((it.graph_id, it.name.as_str()), (5, "cuda-graph:5"));
    let nodes: Vec<_> = f1.batch.kernels.iter().filter(|k| k.graph_id == 5).collect();
    let span = nodes.iter().map(|k| k.end_ns).max().unwrap() - nodes.iter().map(|k| k.start_ns).min().unwrap();
    assert_eq!(a.total_ns(b_id), span);
    assert!(span >= 12_000);
}

#[test]
fn h200_fixture_exact_answers() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/cupti-activity-records/h200-cuda13-region-threads.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap();
    let fl = rb.flushes.iter().find(|f| f.flush == 1).expect("flush 1");
    assert_eq!(fl.batch.kernels.len(), 6);
    assert_eq!(fl.batch.external.len(), 3);
    assert!(fl.batch.launches.iter().filter(|l| l.cbid == 307).count() >= 6);
    let id = encode_region_key(0, 0, 0, 1).unwrap();
    let a = attribute(&fl.batch, &fl.regions);
    assert_eq!(a.by_region[&id].len(), 5);
    assert_eq!((a.direct_via[&id].external, a.direct_via[&id].launch_time), (3, 2));
    assert_eq!(a.unattributed.len(), 1);
    for k in &a.by_region[&id] {
        assert_eq!(k.name, "fill");
        // 64 MiB written at ~1.66 TB/s on the H200.
        assert!((30_000..60_000).contains(&k.duration_ns()), "{k:?}");
    }
}

/// The GPU check of 2026-11-30 on the H200 (`gpu-checks/harness/src/gpu_check.rs a b c d e g` with
/// `KPROF_RECORD_ACTIVITY`; see the README), recorded with concurrent kernel tracing
/// (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL` records): every recorded run, attributed here and
/// combined like the runner does (sum, kernel names joined by `|`), gives exactly the value and
/// kernel names that the runner wrote to the raw CSVs on the H200
/// (`tests/fixtures/h200-engine-checks-raw-concurrent-trace/*-raw.csv`).
#[test]
fn h200_gpu_check_matches_the_raw_csvs_written_on_the_h200() {
    check_gpu_check_recording(
        "h200-cuda13-gpu-check.jsonl",
        "h200-engine-checks-raw-concurrent-trace",
        ACTIVITY_KIND_CONCURRENT_KERNEL,
    );
}

/// The same check recorded later that day with serial kernel tracing, kprof's default since
/// (`CUPTI_ACTIVITY_KIND_KERNEL` records; raw CSVs in `tests/fixtures/h200-engine-checks-raw-serial-trace/`).
#[test]
fn h200_gpu_check_with_serial_kernel_records_matches_its_raw_csvs() {
    check_gpu_check_recording(
        "h200-cuda13-gpu-check-serial.jsonl",
        "h200-engine-checks-raw-serial-trace",
        ACTIVITY_KIND_KERNEL,
    );
}

/// Replays `cupti-activity-records/<jsonl>` against the raw CSVs in `fixtures/<raw_dir>/`; every kernel record
/// of the recording has `kernel_kind`.
fn check_gpu_check_recording(jsonl: &str, raw_dir: &str, kernel_kind: u32) {
    use kprof::core::io::{read_raw_csv, ReadOptions};
    use kprof::core::transforms::{combine_kernels, Reducer};

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("../../tests/fixtures/cupti-activity-records").join(jsonl);
    let rb = RecordedBuffer::read_jsonl(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let kernel_records = [ACTIVITY_KIND_KERNEL, ACTIVITY_KIND_CONCURRENT_KERNEL].map(|k| count_kind(&text, k));
    let wanted = if kernel_kind == ACTIVITY_KIND_KERNEL { 0 } else { 1 };
    assert!(
        kernel_records[wanted] > 0 && kernel_records[1 - wanted] == 0,
        "{jsonl}: kernel records {kernel_records:?}"
    );
    // the Profiler's first six bench calls, in gpu_check's order: (benchmark, region, recorded runs).
    let calls = [
        ("a_sgemm4096", "matmul", 20u32),
        ("b_scale256mb", "scale", 10),
        ("c_three_kernels", "three", 5),
        ("d_second_thread", "threaded", 5),
        ("e_graph", "graph_replay", 5),
        ("g_sgemm_sweep", "matmul", 10),
    ];
    // (benchmark, n, run) -> (value, kernel names) from the H200's raw CSVs.
    let mut csv: HashMap<(String, i64, u32), (f64, String)> = HashMap::new();
    let opts = ReadOptions {
        params: Some(vec!["n".into()]),
        benchmark: None,
    };
    for (name, region, runs) in calls {
        let p = root.join(format!("../../tests/fixtures/{raw_dir}/{name}-raw.csv"));
        let raw = read_raw_csv(&p, &opts).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let configs = if name == "g_sgemm_sweep" { 5 } else { 1 };
        assert_eq!(raw.samples.len(), runs as usize * configs, "{name}");
        for s in &raw.samples {
            let series = raw.series_of(s);
            assert_eq!(series.key.annotation, region);
            assert_eq!(series.key.metric, "gpu__time_duration.sum");
            let n = match raw.config_of(series).get("n") {
                Some(kprof::core::ParamValue::Int(n)) => *n,
                other => panic!("{name}: n = {other:?}"),
            };
            let k = raw.kernel_names[s.kernel as usize].clone();
            csv.insert((name.to_string(), n, s.run), (s.value, k));
        }
    }
    let sweep = [512i64, 1024, 2048, 4096, 8192];
    let n_of = |call: usize, config: u32| -> i64 {
        match call {
            1 => 4096,
            2 => 64 << 20,
            3 => 1 << 24,
            4 | 5 => 1 << 22,
            6 => sweep[config as usize],
            _ => panic!("call {call}"),
        }
    };

    let mut matched = 0;
    let mut warmups = 0;
    // (call, n) -> kernel counts seen.
    let mut counts: HashMap<(u32, i64), HashSet<usize>> = HashMap::new();
    for (fl, r) in rb.flushes.iter().flat_map(|fl| fl.regions.iter().map(move |r| (fl, r))) {
        let a = attribute(&fl.batch, &fl.regions);
        let key = decode_region_key(r.id);
        let (name, _, runs) = calls[key.call as usize - 1];
        if key.run >= runs {
            warmups += 1; // warm-up runs are keyed above every recorded run
            continue;
        }
        let ks = &a.by_region[&r.id];
        let pairs: Vec<(&str, f64)> = ks.iter().map(|k| (k.name.as_str(), k.duration_ns() as f64)).collect();
        let (names, value) = combine_kernels(&pairs, &Reducer::Sum).unwrap();
        let n = n_of(key.call as usize, key.config);
        let (want, want_names) = &csv[&(name.to_string(), n, key.run)];
        if key.call == 5 && kernel_kind == ACTIVITY_KIND_CONCURRENT_KERNEL {
            // Recorded when a graph launch counted as the sum of its nodes: it is now the
            // graph's span, at least that sum and at most the 2 gaps between its 3 nodes more.
            assert!(
                value >= *want && value <= *want + 2_000.0,
                "{name} run {}: {value} vs {want}",
                key.run
            );
            assert_eq!(names, "cuda-graph:2");
        } else if key.call == 5 {
            // Serial records: the same value; the one timed node record now carries the graph's name.
            assert_eq!(value, *want, "{name} run {}", key.run);
            assert!(names.contains("cuda-graph:2"), "{names}");
        } else {
            assert_eq!((value, &names), (*want, want_names), "{name} n={n} run {}", key.run);
        }
        counts.entry((key.call, n)).or_default().insert(ks.len());
        let (ext, ts) = (a.direct_via[&r.id].external, a.direct_via[&r.id].launch_time);
        match key.call {
            // (a) one cuBLAS kernel of ~2.67 ms per run, by external correlation.
            1 => {
                assert_eq!((ext, ts), (1, 0));
                assert!(names.starts_with("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8"));
                assert!((2_660_000.0..2_680_000.0).contains(&value), "{value}");
            }
            // (c) 3 kernels on the main thread: their sum.
            3 => {
                assert_eq!((ext, ts), (3, 0));
                assert_eq!(names, "kprof_scale|kprof_add|kprof_scale");
            }
            // (d) 1 kernel on the main thread (external id) + 2 from the worker thread, which
            // only the launch timestamps place in the region.
            4 => {
                assert_eq!((ext, ts), (1, 2));
                assert_eq!(names, "kprof_scale|kprof_add|kprof_add");
            }
            // (e) one graph launch: its 3 kernel nodes share the launch's correlation id.
            5 => {
                assert!(ks
                    .iter()
                    .all(|k| k.graph_id != 0 && k.correlation_id == ks[0].correlation_id));
                if kernel_kind == ACTIVITY_KIND_KERNEL {
                    // Serial records: one node record carries a span, the 2 others are untimed;
                    // the timed one becomes the graph's item.
                    assert_eq!(ks.len(), 3);
                    let timed: Vec<_> = ks.iter().filter(|k| k.start_ns != 0).collect();
                    assert_eq!(timed.len(), 1);
                    assert_eq!(timed[0].name, "cuda-graph:2");
                    assert_eq!(value, timed[0].duration_ns() as f64);
                } else {
                    assert_eq!(ks.len(), 1, "concurrent records: the 3 nodes merged into one span");
                }
            }
            _ => {}
        }
        matched += 1;
    }
    assert_eq!(matched, csv.len(), "every CSV row has its recorded run");
    assert_eq!(matched, 20 + 10 + 5 + 5 + 5 + 50);
    assert_eq!(warmups, 3 + 1 + 1 + 1 + 1 + 5);
    // (g) kernel counts per size: split-K at 512 (2), one GEMM at 1024, GEMM + epilogue scale
    // from 2048 on; the same count in every run of a size.
    let g: Vec<Vec<usize>> = sweep
        .iter()
        .map(|&n| counts[&(6, n)].iter().copied().collect())
        .collect();
    assert_eq!(g, [vec![2], vec![1], vec![2], vec![2], vec![2]]);
}

/// Records of activity kind `kind` in a recording (JSON lines with `"kind":N`).
fn count_kind(jsonl: &str, kind: u32) -> usize {
    jsonl
        .lines()
        .filter(|l| l.contains(&format!("\"kind\":{kind},")))
        .count()
}

/// The 2026-12-02 GPU check on the H200 with `attribution="order"`, the default since then
/// (`gpu-checks/harness/src/gpu_check.rs c d e` with `KPROF_RECORD_ACTIVITY`; see the README): no launch API or
/// external-correlation record was traced, every region carries the correlation ids taken when it
/// opened and closed, and launch order alone gives each run its kernels: check c's three kernels
/// in launch order, check d's kernel of the region's thread and the two of a second thread, check
/// e's graph launch as one item.
#[test]
fn h200_launch_order_fixture_attributes_every_run_by_correlation_ids() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/cupti-activity-records/h200-cuda13-launch-order.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap_or_else(|e| panic!("{e}"));
    let mut seen_calls = HashSet::new();
    for fl in &rb.flushes {
        assert!(
            fl.batch.launches.is_empty() && fl.batch.external.is_empty(),
            "flush {}",
            fl.flush
        );
        let a = attribute(&fl.batch, &fl.regions);
        assert_eq!(a.ambiguous, 0);
        for r in &fl.regions {
            assert!(
                0 < r.start_correlation_id && r.start_correlation_id < r.end_correlation_id,
                "{r:?}"
            );
            let key = decode_region_key(r.id);
            seen_calls.insert(key.call);
            let items = &a.by_region[&r.id];
            let names: Vec<&str> = items.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(a.direct_via[&r.id].launch_order, items.len());
            match key.call {
                1 => assert_eq!(names, ["kprof_scale", "kprof_add", "kprof_scale"], "{key:?}"),
                2 => assert_eq!(names, ["kprof_scale", "kprof_add", "kprof_add"], "{key:?}"),
                3 => {
                    assert_eq!(items.len(), 1, "{key:?}");
                    assert!(names[0].starts_with("cuda-graph:"), "{names:?}");
                    assert!((30_000..50_000).contains(&items[0].duration_ns()), "{:?}", items[0]);
                }
                other => panic!("unexpected bench call {other}"),
            }
        }
        // Kernels launched between the regions (outside every pair of ids) stay unattributed.
        for k in &a.unattributed {
            assert!(
                !fl.regions
                    .iter()
                    .any(|r| r.start_correlation_id < k.correlation_id && k.correlation_id < r.end_correlation_id),
                "{k:?}"
            );
        }
    }
    assert_eq!(seen_calls, HashSet::from([1, 2, 3]));
}
