//! The counter pass with a mock backend (no GPU): validation before GPU work, kernel-to-region
//! mapping in kernel and application replay, one value per region in user replay, overflow
//! handling.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use kprof_core::model::{DeviceInfo, ExtraValue, RawResults};

use super::super::*;
use super::*;
use crate::cupti::kernel_flush::{PassLaunch, PassLaunches};
use crate::runner::tests::{assert_warned, warnings_with};

/// Timing kernels get `dur` ns; counter metric `bytes.sum` of a kernel is `dur * 2`, `pct` is 50,
/// `gpu__time_duration.sum` is `dur + 3` (the counters' duration differs from the records').
#[derive(Default)]
struct Mock {
    clock: AtomicU64,
    stack: Mutex<Vec<u64>>,
    running: Mutex<Vec<(Option<u64>, KernelRun)>>,
    done: Mutex<Vec<(Option<u64>, KernelRun)>>,
    in_counter_pass: AtomicBool,
    /// Kernel activity records turned off ([`Backend::kernel_records`]).
    records_off: AtomicBool,
    /// Whether records were off, per counter collection.
    records_off_in_collect: Mutex<Vec<bool>>,
    /// Kernels of the closure launched outside a counter collection while records were off.
    unrecorded_timing_kernels: AtomicUsize,
    /// Counter pass: kernel durations of the pass (kernel replay) or (range, dur) (user replay).
    counted: Mutex<Vec<(Option<String>, u64)>>,
    open_range: Mutex<Option<String>>,
    l2_flushes: AtomicUsize,
    collects: AtomicUsize,
    capacities: Mutex<Vec<usize>>,
    passes: usize,
    /// No counter side, as the CUDA-events profiler.
    without_counters: bool,
    /// Opening a counter session fails with this message (no counter permission, say).
    fail_open: Option<String>,
    /// A graph launch gives one range in a counter pass (seen on the H200 with the kernel
    /// records off and graph records on), instead of none.
    graph_ranges: bool,
    /// Graph spans come from CUPTI's graph records (`KPROF_GRAPH_TRACE=graph`), not merged from
    /// node records: a span past the timing pass is then the graph's own.
    graph_records: bool,
    /// A graph's node records run this far past the timing pass (CUPTI 13.0 mixing in node
    /// records of the counter pass).
    graph_stretch_ns: u64,
    /// Launches of graphs instantiated before the session (spans merged from node records).
    old_graph_launches: AtomicU64,
    /// Every graph launch ([`Backend::graph_launches_seen`]).
    graph_launches: AtomicU64,
    /// Launches of graphs instantiated before the counter session was enabled.
    stale_graph_launches: AtomicU64,
    /// [`CounterBackend::release`] calls.
    releases: AtomicUsize,
    /// Launch callbacks as the CUPTI backend has ([`Backend::before_each_kernel`]): the log of
    /// the counter pass's launches while armed.
    each_kernel: bool,
    pass_log: Mutex<Option<Vec<PassLaunch>>>,
}

impl Mock {
    /// A CUDA graph launch of `dur` ns: one span in the timing records; the Range Profiler does not
    /// profile graph launches, so a counter pass sees nothing of it.
    fn launch_graph(&self, dur: u64) {
        self.graph_launches.fetch_add(1, Ordering::SeqCst);
        if self.in_counter_pass.load(Ordering::SeqCst) {
            if self.graph_ranges {
                let r = self.open_range.lock().unwrap().clone();
                self.counted.lock().unwrap().push((r, 1_000_000));
            }
            return;
        }
        self.run_in_timing_pass("cuda-graph:1", true, dur, self.graph_stretch_ns);
    }

    /// A timing-pass run of `dur` ns (its records span `stretch_ns` more) in the innermost open
    /// region, 10 ns after the previous one.
    fn run_in_timing_pass(&self, name: &str, graph: bool, dur: u64, stretch_ns: u64) {
        let ext = self.stack.lock().unwrap().last().copied();
        let t = self.clock.fetch_add(dur + 10, Ordering::SeqCst);
        self.running.lock().unwrap().push((
            ext,
            KernelRun {
                device: 0,
                stream: 0,
                graph,
                name: name.into(),
                demangled: None,
                start_ns: t,
                end_ns: t + dur + stretch_ns,
            },
        ));
    }

    /// A launch of a graph instantiated before the session: its span is merged from node records.
    fn launch_old_graph(&self, dur: u64) {
        if !self.in_counter_pass.load(Ordering::SeqCst) {
            self.old_graph_launches.fetch_add(1, Ordering::SeqCst);
        }
        self.launch_graph(dur);
    }

    fn launch(&self, name: &str, dur: u64) {
        if let Some(log) = self.pass_log.lock().unwrap().as_mut() {
            log.push(PassLaunch::Kernel);
        }
        if self.in_counter_pass.load(Ordering::SeqCst) {
            let r = self.open_range.lock().unwrap().clone();
            self.counted.lock().unwrap().push((r, dur));
            return;
        }
        if self.records_off.load(Ordering::SeqCst) && !crate::runner::l2_flush::is_flush_kernel(name) {
            self.unrecorded_timing_kernels.fetch_add(1, Ordering::SeqCst);
        }
        self.run_in_timing_pass(name, false, dur, 0);
    }
}

impl Backend for Mock {
    mock_clock_thread_and_keys!();
    fn enter(&self, key: u64, _name: &str) -> Result<(), EngineError> {
        self.stack.lock().unwrap().push(key);
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        self.stack.lock().unwrap().pop();
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        let d: Vec<_> = self.running.lock().unwrap().drain(..).collect();
        self.done.lock().unwrap().extend(d);
        Ok(())
    }
    fn graph_spans_from_nodes(&self) -> bool {
        !self.graph_records || self.old_graph_launches.load(Ordering::SeqCst) > 0
    }
    fn graph_launches_from_nodes(&self) -> u64 {
        self.old_graph_launches.load(Ordering::SeqCst)
    }
    fn graph_launches_seen(&self) -> u64 {
        self.graph_launches.load(Ordering::SeqCst)
    }
    fn graph_launches_instantiated_before_counters(&self) -> u64 {
        self.stale_graph_launches.load(Ordering::SeqCst)
    }
    fn kernels_started_in(&self, window: (u64, u64)) -> Option<usize> {
        let done = self.done.lock().unwrap();
        let running = self.running.lock().unwrap();
        Some(
            done.iter()
                .chain(running.iter())
                .filter(|(_, k)| !k.graph && (window.0..=window.1).contains(&k.start_ns))
                .count(),
        )
    }
    fn flush_l2(&self, _spec: crate::runner::FlushSpec) -> Result<(), EngineError> {
        // As on the GPU: the flush is a kernel the activity records see, outside every region.
        self.l2_flushes.fetch_add(1, Ordering::SeqCst);
        self.launch(crate::runner::l2_flush::L2_FLUSH_KERNEL, 7);
        Ok(())
    }
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError> {
        // As the CUPTI backend: the process's count so far, not this collection's.
        let mut out = Collected {
            graph_launches_from_nodes: self.old_graph_launches.load(Ordering::SeqCst),
            ..Collected::default()
        };
        for (ext, k) in self.done.lock().unwrap().drain(..) {
            let mut cur = ext.and_then(|e| spans.iter().find(|s| s.key == e));
            if cur.is_none() {
                out.unattributed += 1;
                out.outside.push(k.clone());
            }
            while let Some(s) = cur {
                out.by_region.entry(s.key).or_default().push(k.clone());
                cur = s.parent.and_then(|p| spans.iter().find(|x| x.key == p));
            }
        }
        Ok(out)
    }
    fn kernel_records(&self, on: bool) -> Result<(), EngineError> {
        self.records_off.store(!on, Ordering::SeqCst);
        Ok(())
    }
    fn counters(&self) -> Option<&dyn CounterBackend> {
        (!self.without_counters).then_some(self as &dyn CounterBackend)
    }
    fn can_act_before_each_kernel(&self) -> bool {
        self.each_kernel
    }
    fn before_each_kernel(&self, _what: BeforeEachKernel) -> Result<(), EngineError> {
        *self.pass_log.lock().unwrap() = Some(Vec::new());
        Ok(())
    }
    fn stop_before_each_kernel(&self) -> PassLaunches {
        let launches = self.pass_log.lock().unwrap().take().unwrap_or_default();
        PassLaunches {
            launches,
            failure: None,
        }
    }
}

struct MockSink<'a>(&'a Mock);
impl RangeSink for MockSink<'_> {
    type Error = CountersError;
    fn push(&mut self, name: &str) -> Result<(), CountersError> {
        let mut r = self.0.open_range.lock().unwrap();
        if r.is_some() {
            return Err(CountersError::Usage("nested ranges are not configured".into()));
        }
        *r = Some(name.into());
        Ok(())
    }
    fn pop(&mut self) -> Result<(), CountersError> {
        *self.0.open_range.lock().unwrap() = None;
        Ok(())
    }
}

impl CounterBackend for Mock {
    fn release(&self) {
        self.releases.fetch_add(1, Ordering::SeqCst);
    }

    fn open(&self, _plan: &CounterPlan) -> Result<(), EngineError> {
        match &self.fail_open {
            Some(why) => Err(EngineError::Unsupported(why.clone())),
            None => Ok(()),
        }
    }

    fn plan(&self, metrics: &[String], mode: ReplayMode) -> Result<CounterPlan, EngineError> {
        let known = ["bytes.sum", "pct", DEFAULT_METRIC];
        let bad: Vec<_> = metrics
            .iter()
            .filter(|m| !known.contains(&m.as_str()))
            .map(|m| crate::counters::UnknownMetric {
                name: m.clone(),
                reason: String::new(),
                closest: vec!["bytes.sum".into()],
            })
            .collect();
        if !bad.is_empty() {
            return Err(CountersError::UnknownMetrics(bad).into());
        }
        Ok(CounterPlan {
            chip: "MOCK".into(),
            metrics: metrics.to_vec(),
            units: metrics
                .iter()
                .map(|m| match m.as_str() {
                    "pct" => "%",
                    DEFAULT_METRIC => "ns",
                    _ => "byte",
                })
                .map(String::from)
                .collect(),
            passes: self.passes,
            mode,
        })
    }

    fn collect(
        &self,
        plan: &CounterPlan,
        max_ranges: usize,
        workload: &mut dyn FnMut(&mut super::Sink<'_>),
    ) -> Result<Vec<RangeResult>, EngineError> {
        self.collects.fetch_add(1, Ordering::SeqCst);
        self.records_off_in_collect
            .lock()
            .unwrap()
            .push(self.records_off.load(Ordering::SeqCst));
        self.capacities.lock().unwrap().push(max_ranges);
        self.in_counter_pass.store(true, Ordering::SeqCst);
        let runs = if plan.mode == ReplayMode::Kernel {
            1
        } else {
            plan.passes
        };
        let mut counted = Vec::new();
        for _ in 0..runs {
            self.counted.lock().unwrap().clear();
            workload(&mut MockSink(self));
            counted = std::mem::take(&mut *self.counted.lock().unwrap());
        }
        self.in_counter_pass.store(false, Ordering::SeqCst);
        let value = |m: &str, dur: u64| -> f64 {
            match m {
                "pct" => 50.0,
                DEFAULT_METRIC => dur as f64 + 3.0,
                _ => dur as f64 * 2.0,
            }
        };
        let vals =
            |dur: u64| -> Vec<(String, f64)> { plan.metrics.iter().map(|m| (m.clone(), value(m, dur))).collect() };
        match plan.mode {
            ReplayMode::Kernel | ReplayMode::Application => {
                if counted.len() > max_ranges {
                    return Err(CountersError::DroppedRanges {
                        dropped: counted.len() - max_ranges,
                        capacity: max_ranges,
                    }
                    .into());
                }
                Ok(counted
                    .iter()
                    .enumerate()
                    .map(|(i, (_, d))| RangeResult {
                        name: i.to_string(),
                        values: vals(*d),
                    })
                    .collect())
            }
            ReplayMode::User => {
                let mut out: Vec<RangeResult> = Vec::new();
                for (r, d) in counted {
                    let Some(r) = r else { continue };
                    match out.iter_mut().find(|x| x.name == r) {
                        Some(x) => {
                            for (m, v) in &mut x.values {
                                if m != "pct" {
                                    *v += value(m, d);
                                }
                            }
                        }
                        None => out.push(RangeResult {
                            name: r,
                            values: vals(d),
                        }),
                    }
                }
                Ok(out)
            }
        }
    }
}

fn setup(passes: usize) -> (Arc<Mock>, Profiler) {
    setup_mock(Mock {
        passes,
        ..Default::default()
    })
}

fn setup_mock(mock: Mock) -> (Arc<Mock>, Profiler) {
    let mock = Arc::new(mock);
    let device = DeviceInfo {
        gpu: "Mock GPU".into(),
        host: "h".into(),
        compute_clock_khz: None,
        memory_clock_khz: None,
    };
    let p = Profiler::with_backend(mock.clone(), device, vec![]);
    (mock, p)
}

/// Benchmark `name` (no configurations) with `o` on `p`, whose backend is `mock`; the closure
/// gets the mock to launch on.
fn bench_on<F>(
    mock: &Mock,
    p: &mut Profiler,
    name: &str,
    o: &BenchOptions,
    mut body: F,
) -> Result<RawResults, EngineError>
where
    F: FnMut(&Mock, &mut Run) -> BodyResult,
{
    p.bench(name, &[], o, |_, run| body(mock, run))
}

/// What a benchmark's closure returns.
type BodyResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A closure body: region "a" with kernel k1 (10 ns).
fn region_a_k1(m: &Mock, run: &mut Run) -> BodyResult {
    run.annotate("a", |_| m.launch("k1", 10))?;
    Ok(())
}

/// A closure body: region "a" with kernels k1 (10 ns) and k2 (20 ns).
fn region_a_k1_k2(m: &Mock, run: &mut Run) -> BodyResult {
    run.annotate("a", |_| {
        m.launch("k1", 10);
        m.launch("k2", 20);
    })?;
    Ok(())
}

/// A closure body: region "a" with kernel k1 (10 ns) and then a graph whose records span 500 ns.
fn region_a_k1_graph(m: &Mock, run: &mut Run) -> BodyResult {
    run.annotate("a", |_| {
        m.launch("k1", 10);
        m.launch_graph(500);
    })?;
    Ok(())
}

/// Unit and values of a region's metric, configs in order, runs in order.
fn series(raw: &RawResults, region: &str, metric: &str) -> (String, Vec<f64>) {
    let mut idx: Vec<(u32, usize)> = raw
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.key.annotation == region && s.key.metric == metric)
        .map(|(i, s)| (s.key.config, i))
        .collect();
    assert!(!idx.is_empty(), "no series {region}/{metric}");
    idx.sort();
    let unit = raw.series[idx[0].1].unit.clone();
    let v = idx
        .iter()
        .flat_map(|&(_, i)| {
            raw.samples
                .iter()
                .filter(move |x| x.series as usize == i)
                .map(|x| x.value)
        })
        .collect();
    (unit, v)
}

/// Asserts that both durations of region "a" are `value` (`why`) and come from the kernel
/// records.
#[track_caller]
fn assert_record_durations(raw: &RawResults, value: f64, why: &str) {
    assert_eq!(series(raw, "a", DEFAULT_METRIC).1, vec![value, value], "{why}");
    assert_eq!(duration_sources(raw, "a"), vec![ExtraValue::Text("records".into()); 2]);
}

/// The `DurationSource` values of a region's duration samples.
fn duration_sources(raw: &RawResults, region: &str) -> Vec<ExtraValue> {
    let col = raw
        .extras
        .iter()
        .find(|c| c.name == "DurationSource")
        .expect("DurationSource column");
    raw.samples
        .iter()
        .enumerate()
        .filter(|(_, x)| {
            let key = &raw.series[x.series as usize].key;
            key.annotation == region && key.metric == DEFAULT_METRIC
        })
        .map(|(i, _)| col.values[i].clone())
        .collect()
}

/// Options with durations from the kernel records (the counter metrics alone in the pass).
fn opts(metrics: &[&str], mode: ReplayMode) -> BenchOptions {
    BenchOptions {
        runs: 2,
        warmup: 1,
        metrics: metrics.iter().map(|s| s.to_string()).collect(),
        replay_mode: mode,
        duration: DurationSource::Records,
        ..Default::default()
    }
}

/// [`opts`] without counter metrics and with `duration_source="auto"` (the default).
fn auto_opts(mode: ReplayMode) -> BenchOptions {
    BenchOptions {
        duration: DurationSource::Auto,
        ..opts(&[], mode)
    }
}

/// [`opts`] without counter metrics and with `duration_source="counters"`.
fn counters_opts(mode: ReplayMode) -> BenchOptions {
    BenchOptions {
        duration: DurationSource::Counters,
        ..opts(&[], mode)
    }
}

#[test]
fn unknown_counter_metric_fails_before_any_gpu_work() {
    let (mock, mut p) = setup(8);
    let o = opts(&["gpu__time_duration.sum", "bytes.sun"], ReplayMode::Kernel);
    let e = p
        .bench("b", &[], &o, |_, _| panic!("the closure must not run"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bytes.sun") && e.contains("closest valid names: bytes.sum"),
        "{e}"
    );
    assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), 0);
    assert_eq!(mock.collects.load(Ordering::SeqCst), 0);
}

#[test]
fn the_cuda_events_backend_refuses_counter_metrics() {
    let (_, mut p) = setup_mock(Mock {
        without_counters: true,
        ..Default::default()
    });
    let e = p
        .bench("b", &[], &opts(&["bytes.sum"], ReplayMode::Kernel), |_, _| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("need the CUPTI backend"), "{e}");
}

#[test]
fn kernel_replay_maps_the_ith_profiled_kernel_to_the_ith_launch_and_combines_per_region() {
    let (mock, mut p) = setup(8);
    let m = mock.clone();
    let configs = [Config::new().with("n", 1i64), Config::new().with("n", 2i64)];
    let o = opts(&["gpu__time_duration.sum", "bytes.sum", "pct"], ReplayMode::Kernel);
    let runs = AtomicUsize::new(0);
    let raw = p
        .bench("b", &configs, &o, |c, run| {
            runs.fetch_add(1, Ordering::SeqCst);
            let n = c.get("n").unwrap().as_f64().unwrap() as u64;
            run.annotate("outer", |run| {
                m.launch("k1", 100 * n);
                run.annotate("inner", |_| {
                    m.launch("k2", 10);
                    m.launch("k3", 20);
                })
                .unwrap();
            })?;
            run.annotate("other", |_| m.launch("k4", 7))?;
            Ok(())
        })
        .unwrap();
    // 2 configs x (1 warm-up + 2 timing + 2 counter passes).
    assert_eq!(runs.load(Ordering::SeqCst), 10);
    assert_eq!(mock.collects.load(Ordering::SeqCst), 4);
    // Cold cache: per timing run (warm-ups included) one flush and one before each of its 2
    // top-level regions; one per counter pass, none inside a kernel-replay pass.
    assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), 6 * 3 + 4);
    let (u, t) = series(&raw, "outer", "gpu__time_duration.sum");
    assert_eq!((u.as_str(), t), ("ns", vec![130.0, 130.0, 230.0, 230.0]));
    let (u, b) = series(&raw, "outer", "bytes.sum");
    assert_eq!((u.as_str(), b), ("byte", vec![260.0, 260.0, 460.0, 460.0]));
    assert_eq!(series(&raw, "inner", "bytes.sum").1, vec![60.0; 4]);
    assert_eq!(series(&raw, "other", "bytes.sum").1, vec![14.0; 4]);
    let (u, pct) = series(&raw, "other", "pct");
    assert_eq!((u.as_str(), pct), ("%", vec![50.0; 4]));
    // Per-kernel breakdown kept for counters too.
    let s = raw
        .series
        .iter()
        .position(|s| s.key.annotation == "inner" && s.key.metric == "bytes.sum")
        .unwrap();
    let kb: Vec<(String, f64)> = raw
        .kernel_breakdown
        .iter()
        .filter(|k| k.series as usize == s && k.run == 0)
        .map(|k| (k.kernel.clone(), k.value))
        .collect();
    assert_eq!(kb, vec![("k2".to_string(), 20.0), ("k3".to_string(), 40.0)]);
    assert_warned(&p, "8 replay pass(es) in kernel replay");
    assert_eq!(p.counter_plan().unwrap().passes, 8);
}

#[test]
fn kernel_replay_counts_kernels_outside_regions_when_mapping() {
    let (mock, mut p) = setup(2);
    let o = opts(&["bytes.sum"], ReplayMode::Kernel);
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        m.launch("setup", 5);
        run.annotate("r", |_| m.launch("k", 10))?;
        m.launch("after", 3);
        run.annotate("s", |_| m.launch("k2", 4))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(series(&raw, "r", "gpu__time_duration.sum").1, vec![10.0, 10.0]);
    assert_eq!(series(&raw, "r", "bytes.sum").1, vec![20.0, 20.0]);
    assert_eq!(series(&raw, "s", "bytes.sum").1, vec![8.0, 8.0]);
}

#[test]
fn a_closure_that_launches_differently_in_the_counter_pass_gives_nan_with_a_warning() {
    let (mock, mut p) = setup(2);
    let o = opts(&["bytes.sum"], ReplayMode::Kernel);
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        if m.in_counter_pass.load(Ordering::SeqCst) {
            m.launch("extra", 1);
        }
        run.annotate("r", |_| m.launch("k", 10))?;
        Ok(())
    })
    .unwrap();
    assert!(series(&raw, "r", "bytes.sum").1.iter().all(|v| v.is_nan()));
    assert_warned(&p, "must launch the same kernels");
}

#[test]
fn auto_durations_fall_back_to_the_records_when_a_counter_pass_does_not_match() {
    // Durations from the counters (auto) of a run whose counter pass launched other kernels (on
    // the H200: 100,000 kernels in one region, more than a counter-data image held) are the
    // records' of that run, marked so, never NaN; the closure can tell its counter pass.
    let (mock, mut p) = setup(1);
    let o = auto_opts(ReplayMode::Application);
    let seen = std::cell::RefCell::new(Vec::new());
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        let counter_pass = m.in_counter_pass.load(Ordering::SeqCst);
        seen.borrow_mut().push((counter_pass, run.is_counter_pass()));
        if counter_pass {
            m.launch("extra", 1);
        }
        region_a_k1(m, run)
    })
    .unwrap();
    assert!(
        seen.borrow().iter().all(|(mock_says, run_says)| mock_says == run_says),
        "{:?}",
        seen.borrow()
    );
    assert!(seen.borrow().iter().any(|(c, _)| *c), "a counter pass ran");
    assert_record_durations(&raw, 10.0, "the records' 10 ns, not NaN");
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("must launch the same kernels") && w.contains("kernel records instead")),
        "{:?}",
        p.warnings()
    );
}

#[test]
fn kernel_replay_grows_the_counter_data_image_instead_of_dropping_kernels() {
    let (mock, mut p) = setup(2);
    let o = BenchOptions {
        runs: 1,
        warmup: 0,
        ..opts(&["bytes.sum"], ReplayMode::Kernel)
    };
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        run.annotate("r", |_| {
            for _ in 0..100 {
                m.launch("k", 1)
            }
        })?;
        Ok(())
    })
    .unwrap();
    assert_eq!(*mock.capacities.lock().unwrap(), vec![64, 256]);
    assert_eq!(series(&raw, "r", "bytes.sum").1, vec![200.0]);
    // The profiler's next benchmark starts with the image the first one needed.
    mock.capacities.lock().unwrap().clear();
    bench_on(&mock, &mut p, "b2", &o, |m, run| {
        run.annotate("r", |_| m.launch("k", 1))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(*mock.capacities.lock().unwrap(), vec![256]);
}

/// Benchmark "b" with `bytes.sum` in `mode` (2 runs, no warm-up, 3 passes): the mock, the
/// results, and how many times the closure ran.
fn bench_counting_calls<F>(mode: ReplayMode, body: F) -> (Arc<Mock>, RawResults, usize)
where
    F: Fn(&Mock, &mut Run) -> BodyResult,
{
    let (mock, mut p) = setup(3);
    let calls = AtomicUsize::new(0);
    let o = BenchOptions {
        runs: 2,
        warmup: 0,
        ..opts(&["bytes.sum"], mode)
    };
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        calls.fetch_add(1, Ordering::SeqCst);
        body(m, run)
    })
    .unwrap();
    (mock, raw, calls.load(Ordering::SeqCst))
}

#[test]
fn user_replay_reruns_the_closure_per_pass_flushes_l2_per_pass_and_gives_one_value_per_region() {
    let (mock, raw, calls) = bench_counting_calls(ReplayMode::User, |m, run| {
        run.annotate("a", |_| {
            m.launch("k1", 10);
            m.launch("k2", 20);
        })?;
        m.launch("outside", 1000);
        run.annotate("b", |_| m.launch("k3", 5))?;
        Ok(())
    });
    // 2 timing runs + 2 x 3 passes.
    assert_eq!(calls, 8);
    // Per timing run and per pass: one flush, and one before each of the 2 regions.
    assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), (2 + 6) * 3);
    assert_eq!(*mock.capacities.lock().unwrap(), vec![2, 2]);
    assert_eq!(series(&raw, "a", "bytes.sum").1, vec![60.0, 60.0]);
    assert_eq!(series(&raw, "b", "bytes.sum").1, vec![10.0, 10.0]);
    assert_eq!(series(&raw, "a", "gpu__time_duration.sum").1, vec![30.0, 30.0]);
}

#[test]
fn application_replay_reruns_the_closure_per_pass_flushing_as_the_timing_pass_and_maps_kernels_past_the_flushes() {
    let (mock, raw, calls) = bench_counting_calls(ReplayMode::Application, |m, run| {
        m.launch("setup", 1000);
        run.annotate("a", |run| {
            m.launch("k1", 10);
            // Nesting is fine: regions are not ranges in this mode.
            run.annotate("inner", |_| m.launch("k2", 20)).unwrap();
        })?;
        run.annotate("b", |_| m.launch("k3", 5))?;
        Ok(())
    });
    // 2 timing runs + 2 x 3 passes.
    assert_eq!(calls, 8);
    // Per timing run and per pass: one flush, and one before each of the 2 top-level regions.
    assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), (2 + 6) * 3);
    // The flush kernels (7 ns, 14 bytes) are ranges of the pass; the regions get only their own.
    assert_eq!(series(&raw, "a", "bytes.sum").1, vec![60.0, 60.0]);
    assert_eq!(series(&raw, "inner", "bytes.sum").1, vec![40.0, 40.0]);
    assert_eq!(series(&raw, "b", "bytes.sum").1, vec![10.0, 10.0]);
    assert_eq!(series(&raw, "a", "gpu__time_duration.sum").1, vec![30.0, 30.0]);
}

#[test]
fn counter_passes_run_without_kernel_records_and_timing_runs_keep_them() {
    for mode in [ReplayMode::Kernel, ReplayMode::Application, ReplayMode::User] {
        let (mock, mut p) = setup(2);
        bench_on(&mock, &mut p, "b", &opts(&["bytes.sum"], mode), region_a_k1).unwrap();
        let off = mock.records_off_in_collect.lock().unwrap().clone();
        assert_eq!(
            off,
            vec![true, true],
            "{mode:?}: one collection per recorded run, records off in each"
        );
        assert!(
            !mock.records_off.load(Ordering::SeqCst),
            "{mode:?}: records back on after the bench"
        );
        assert_eq!(mock.unrecorded_timing_kernels.load(Ordering::SeqCst), 0, "{mode:?}");
    }
}

#[test]
fn counter_pass_records_keeps_kernel_records_on_in_counter_passes() {
    let (mock, mut p) = setup(1);
    let o = BenchOptions {
        counter_pass_records: true,
        ..opts(&["bytes.sum"], ReplayMode::Application)
    };
    bench_on(&mock, &mut p, "b", &o, region_a_k1).unwrap();
    assert_eq!(
        *mock.records_off_in_collect.lock().unwrap(),
        vec![false, false],
        "records on in both recorded runs' passes"
    );
}

#[test]
fn application_replay_with_a_warm_cache_flushes_nothing_in_its_passes() {
    let (mock, mut p) = setup(2);
    let o = BenchOptions {
        runs: 1,
        warmup: 0,
        cache: CacheControl::None,
        ..opts(&["bytes.sum"], ReplayMode::Application)
    };
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        m.launch("setup", 1000);
        region_a_k1(m, run)
    })
    .unwrap();
    assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), 0);
    assert_eq!(series(&raw, "a", "bytes.sum").1, vec![20.0]);
}

#[test]
fn user_replay_refuses_nested_regions() {
    let (mock, mut p) = setup(2);
    let e = bench_on(&mock, &mut p, "b", &opts(&["bytes.sum"], ReplayMode::User), |m, run| {
        run.annotate("a", |run| run.annotate("b", |_| m.launch("k", 1)).map(|_| ()))??;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("nested"), "{e}");
}

#[test]
fn kernel_order_dedups_nested_kernels_and_orders_by_start() {
    let k = |n: &str, s: u64| KernelRun {
        device: 0,
        stream: 0,
        graph: false,
        name: n.into(),
        demangled: None,
        start_ns: s,
        end_ns: s + 1,
    };
    let outer = vec![k("a", 5), k("b", 1), k("c", 9)];
    let inner = vec![k("c", 9)];
    let other = vec![k("d", 3)];
    let (n, pos) = kernel_order(&[&outer, &inner, &other]);
    assert_eq!(n, 4);
    assert_eq!(pos, vec![vec![2, 0, 3], vec![3], vec![1]]);
}

#[test]
fn a_warm_cache_gets_an_unrecorded_closure_run_after_every_counter_pass() {
    for (cache, per_run) in [(CacheControl::None, 3), (CacheControl::All, 2)] {
        let (mock, mut p) = setup(2);
        let calls = AtomicUsize::new(0);
        let o = BenchOptions {
            warmup: 0,
            cache,
            ..opts(&["bytes.sum"], ReplayMode::Kernel)
        };
        let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
            calls.fetch_add(1, Ordering::SeqCst);
            run.annotate("r", |_| m.launch("k", 10))?;
            Ok(())
        })
        .unwrap();
        // Timing pass + counter pass (+ the re-warming run when warm) for each of the 2 runs.
        assert_eq!(calls.load(Ordering::SeqCst), 2 * per_run, "{cache:?}");
        assert_eq!(series(&raw, "r", "gpu__time_duration.sum").1, vec![10.0, 10.0]);
        assert_eq!(series(&raw, "r", "bytes.sum").1, vec![20.0, 20.0]);
    }
}

#[test]
fn application_replay_flushes_before_each_kernel_when_cold_and_rests_between_them_when_warm_only_after_long_runs() {
    let flush = FlushSpec::default();
    let choose = |app, cold, can, rests| before_each_kernel(app, cold, can, rests, flush);
    // Cold: a flush before every kernel, rests or not (the flush hook rests after it).
    assert_eq!(choose(true, true, true, false), Some(BeforeEachKernel::Flush(flush)));
    assert_eq!(choose(true, true, true, true), Some(BeforeEachKernel::Flush(flush)));
    // Warm: a wait and a rest only when the timing pass earned them.
    assert_eq!(choose(true, false, true, true), Some(BeforeEachKernel::Rest));
    assert_eq!(choose(true, false, true, false), None);
    // Kernel replay, or a backend without launch callbacks: nothing before each kernel.
    for (cold, rests) in [(true, true), (false, true), (true, false)] {
        assert_eq!(choose(false, cold, true, rests), None);
        assert_eq!(choose(true, cold, false, rests), None);
    }
}

mod durations;
mod graphs;
mod one_pass;
mod sections;
