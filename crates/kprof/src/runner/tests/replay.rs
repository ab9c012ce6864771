//! Replays of activity recorded on the H200 through the real backend's adapter
//! (`gpu::collect_batch`) and the run loop: the raw CSVs written now against the ones written on
//! the H200.

use kprof_core::kernels::MANGLED_KERNEL_COLUMN;
use kprof_core::transforms::combine_kernels;

use super::*;

/// The replayed graph rows against the recorded ones (sum of nodes): the same rows, each
/// value the graph's span (at least the nodes' sum, at most 2 us more: the gaps between its 3
/// nodes), the kernel column the graph's name.
fn check_graph_span_rows(now: &str, then: &str) {
    let (now, then): (Vec<&str>, Vec<&str>) = (now.lines().collect(), then.lines().collect());
    assert_eq!(now.len(), then.len());
    assert_eq!(now[0], then[0]);
    for (n, t) in now[1..].iter().zip(&then[1..]) {
        let (n, t): (Vec<&str>, Vec<&str>) = (n.split(',').collect(), t.split(',').collect());
        let (span, sum): (f64, f64) = (n[1].parse().unwrap(), t[1].parse().unwrap());
        assert!(span >= sum && span <= sum + 2000.0, "span {span} vs node sum {sum}");
        assert_eq!(n[3], "cuda-graph:2");
        assert_eq!((&n[..1], &n[4..]), (&t[..1], &t[4..]));
    }
}

/// A CSV text without one column (every line split on plain commas: the fixtures quote none).
fn without_column(csv: &str, column: &str) -> String {
    let Some(header) = csv.lines().next() else {
        return String::new();
    };
    let Some(idx) = header.split(',').position(|c| c == column) else {
        return csv.to_string();
    };
    csv.lines()
        .map(|l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            if idx < cells.len() {
                cells.remove(idx);
            }
            cells.join(",") + "\n"
        })
        .collect()
}
#[test]
fn adapter_attributes_the_recorded_h200_fixture() {
    use crate::attribution::{attribute, encode_region_key};
    use crate::cupti::records::RecordedBuffer;
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/cupti-activity-records/h200-cuda13-region-threads.jsonl");
    let rb = RecordedBuffer::read_jsonl(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let fl = rb.flushes.iter().find(|f| f.flush == 1).expect("flush 1");
    let spans: Vec<Span> = fl
        .regions
        .iter()
        .map(|r| Span {
            key: r.id,
            parent: r.parent,
            thread_id: r.thread_id as u64,
            start_ns: r.start_ns,
            end_ns: r.end_ns,
            start_correlation_id: r.start_correlation_id,
            end_correlation_id: r.end_correlation_id,
        })
        .collect();
    let regions = gpu::region_spans(&spans);
    assert_eq!(regions, fl.regions);
    let c = gpu::collect_batch(&fl.batch, &regions);
    let id = encode_region_key(0, 0, 0, 1).unwrap();
    let ks = &c.by_region[&id];
    assert_eq!(ks.len(), 5);
    assert_eq!(c.unattributed, 1);
    let pairs: Vec<(&str, f64)> = ks
        .iter()
        .map(|k| (k.name.as_str(), (k.end_ns - k.start_ns) as f64))
        .collect();
    let (names, total) = combine_kernels(&pairs, &Reducer::Sum).unwrap();
    assert_eq!(names, "fill|fill|fill|fill|fill");
    assert_eq!(total, attribute(&fl.batch, &fl.regions).total_ns(id) as f64);
}

/// Replays an activity recording (`KPROF_RECORD_ACTIVITY`): each `collect` hands the run
/// loop the next recorded flush, attributed by the real backend's adapter, after checking
/// that the run opened exactly the regions (same keys) the recorded run had.
struct Replay {
    flushes: Mutex<std::collections::VecDeque<crate::cupti::records::RecordedFlush>>,
    clock: AtomicU64,
}

impl Backend for Replay {
    fn timestamp_ns(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
    fn thread_id(&self) -> u64 {
        1
    }
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        crate::attribution::encode_region_key(c(call), c(config), c(run), c(region))
    }
    fn enter(&self, _key: u64, _name: &str) -> Result<(), EngineError> {
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        Ok(())
    }
    fn flush_l2(&self, _spec: crate::runner::FlushSpec) -> Result<(), EngineError> {
        Ok(())
    }
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError> {
        let fl = self
            .flushes
            .lock()
            .unwrap()
            .pop_front()
            .expect("more runs than recorded flushes");
        let keys: Vec<(u64, Option<u64>)> = spans.iter().map(|s| (s.key, s.parent)).collect();
        let recorded: Vec<(u64, Option<u64>)> = fl.regions.iter().map(|r| (r.id, r.parent)).collect();
        assert_eq!(
            keys, recorded,
            "flush {}: the replayed run opened other regions",
            fl.flush
        );
        Ok(gpu::collect_batch(&fl.batch, &fl.regions))
    }
}

/// A raw CSV recorded before kernel names were demangled, as kprof writes it now: the Kernel
/// column demangled and the mangled label in `KernelMangled` (after the engine's info
/// columns) when some kernel was mangled.
fn with_demangled_kernels(csv_text: &str) -> String {
    let mut rdr = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<Vec<String>> = rdr
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    let k = header.iter().position(|h| h == "Kernel").unwrap();
    if rows.iter().all(|r| kprof_core::kernels::demangle_label(&r[k]) == r[k]) {
        return csv_text.to_string();
    }
    let at = header.iter().position(|h| h == "CuptiVersion").unwrap() + 1;
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut h = header.clone();
    h.insert(at, MANGLED_KERNEL_COLUMN.into());
    w.write_record(&h).unwrap();
    for mut r in rows {
        let shown = kprof_core::kernels::demangle_label(&r[k]).into_owned();
        let mangled = if shown != r[k] { r[k].clone() } else { String::new() };
        r[k] = shown;
        r.insert(at, mangled);
        w.write_record(&r).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

/// The GPU check of 2026-11-30 on the H200 (examples/gpu_check.rs, checks a b c d e g), replayed
/// from its activity recording through the real run loop and adapter: the raw CSVs written now
/// are byte-identical to the ones the runner wrote on the H200.
#[test]
fn replaying_the_h200_gpu_check_rewrites_its_raw_csvs() {
    use crate::cupti::records::RecordedBuffer;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rb = RecordedBuffer::read_jsonl(
        &root.join("../../tests/fixtures/cupti-activity-records/h200-cuda13-gpu-check.jsonl"),
    )
    .unwrap();
    assert_eq!(rb.flushes.len(), 107, "one flush per run, warm-ups included");
    let replay = Arc::new(Replay {
        flushes: Mutex::new(rb.flushes.into_iter().collect()),
        clock: AtomicU64::new(0),
    });
    let device = DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "vm".into(),
        compute_clock_khz: Some(1_980_000.0),
        memory_clock_khz: Some(3_201_000.0),
    };
    let extras = vec![
        ("DeviceOrdinal".to_string(), ExtraValue::Number(0.0)),
        ("DriverVersion".to_string(), ExtraValue::Text("580.159.04".into())),
        ("CudaVersion".to_string(), ExtraValue::Text("13.0".into())),
        ("CuptiVersion".to_string(), ExtraValue::Number(130_001.0)),
    ];
    let mut prof = Profiler::with_backend(replay.clone(), device, extras);
    // The recording has one flush per run (the policy of the engine that recorded it).
    prof.set_flush_policy(FlushPolicy::every_run());
    let out = tempfile::tempdir().unwrap();
    let opts = |runs: u32, warmup: u32, cache: CacheControl| BenchOptions {
        runs,
        warmup,
        cache,
        output_prefix: Some(out.path().to_path_buf()),
        // The recorded CSVs predate the condition columns.
        conditions: false,
        ..Default::default()
    };
    let one = |n: i64| vec![Config::new().with("n", n)];
    let sweep: Vec<Config> = [512i64, 1024, 2048, 4096, 8192]
        .iter()
        .map(|&n| Config::new().with("n", n))
        .collect();
    // (benchmark, region, configs, runs, warm-ups, cache) exactly as gpu_check.rs calls bench.
    type Call = (&'static str, &'static str, Vec<Config>, u32, u32, CacheControl);
    let calls: Vec<Call> = vec![
        ("a_sgemm4096", "matmul", one(4096), 20, 3, CacheControl::None),
        ("b_scale256mb", "scale", one(64 << 20), 10, 1, CacheControl::All),
        ("c_three_kernels", "three", one(1 << 24), 5, 1, CacheControl::None),
        ("d_second_thread", "threaded", one(1 << 22), 5, 1, CacheControl::None),
        ("e_graph", "graph_replay", one(1 << 22), 5, 1, CacheControl::None),
        ("g_sgemm_sweep", "matmul", sweep, 10, 1, CacheControl::All),
    ];
    let fixtures = root.join("../../tests/fixtures/h200-engine-checks-raw-concurrent-trace");
    let mut results = Vec::new();
    for (name, region, configs, runs, warmup, cache) in calls {
        let raw = prof
            .bench(name, &configs, &opts(runs, warmup, cache), |_, run| {
                let _r = run.region(region)?;
                Ok(())
            })
            .unwrap();
        // The recordings predate the DurationSource column (added later): compare
        // without it.
        let now = without_column(
            &std::fs::read_to_string(raw_csv_path(out.path(), name)).unwrap(),
            "DurationSource",
        );
        let then = std::fs::read_to_string(fixtures.join(format!("{name}-raw.csv"))).unwrap();
        let then = with_demangled_kernels(&then);
        if name == "e_graph" {
            // Recorded when a graph launch counted as the sum of its nodes; it is now the
            // graph's span (first node's start to last node's end), named after the graph.
            check_graph_span_rows(&now, &then);
            results.push(raw);
            continue;
        }
        assert_eq!(
            now, then,
            "{name}: replayed raw CSV differs from the one written on the H200"
        );
        results.push(raw);
    }
    assert!(replay.flushes.lock().unwrap().is_empty(), "recorded flushes left over");
    // One note: check e's graph is timed from its graph record with CUPTI attached.
    assert!(
        prof.warnings().len() == 1 && prof.warnings()[0].starts_with("e_graph: CUDA graph replays are timed from"),
        "{:?}",
        prof.warnings()
    );
    // The H200 run reported 184 unattributed kernels (cushions, L2 flushes, epilogue setup).
    assert_eq!(prof.unattributed_kernels(), 184);
    // The breakdown (not in the raw CSV): check c's run 0 is the 3 kernels the H200 reported.
    let c = &results[2];
    let parts: Vec<(&str, f64)> = c
        .kernel_breakdown
        .iter()
        .filter(|k| k.run == 0)
        .map(|k| (k.kernel.as_str(), k.value))
        .collect();
    assert_eq!(
        parts,
        [
            ("kprof_scale", 55_488.0),
            ("kprof_add", 63_744.0),
            ("kprof_scale", 56_704.0)
        ]
    );
    assert_eq!(c.samples[0].value, 175_936.0);
}
