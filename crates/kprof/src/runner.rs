//! The run loop and the Rust API: [`Profiler`], [`BenchOptions`], [`Run`] and [`RegionGuard`].
//!
//! A benchmark is a closure over a configuration. [`Profiler::bench`] calls it once per
//! (configuration, run), in the order chosen by [`RunOrder`], with warm-up runs first. Inside the
//! closure the user opens regions ([`Run::region`] or [`Run::annotate`]); every kernel launched
//! while a region is open is attributed to it by the engine (external correlation on the opening
//! thread, CPU launch timestamps for other threads). After every run the device is synchronised
//! (runs never overlap). Once per batch of runs ([`FlushPolicy`]: by default every 50 ms of runs,
//! at the end, and before a configuration under a [`StoppingPolicy`] gets its next run) the CUPTI
//! activity buffers are flushed, kernels are attributed to the regions of every waiting run by
//! key, ignored kernels are dropped, and each region's kernels are combined with the reducer
//! into one [`kprof_core::model::SampleRecord`] of metric `gpu__time_duration.sum` (ns).
//!
//! Nested regions are inclusive: an outer region's value includes the kernels of its inner
//! regions (the attribution rule lives in `attribution.rs`).
//!
//! The GPU-facing part is a small private [`Backend`] trait; the real one wraps the engine
//! modules (loader, driver, CUPTI session, attribution, NVTX) and a mock one drives the unit tests
//! on machines without a GPU.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kprof_core::model::{Config, RawResults};

use crate::conditions::FingerprintInputs;
use crate::error::EngineError;

mod counter_pass;
mod events;
mod gpu;
mod l2_flush;
mod options;
mod profiler;
mod progress;
mod run;
mod schedule;

pub use crate::counters::ReplayMode;
pub use counter_pass::{is_counter_metric, CounterPlan};
pub use kprof_core::policy::{Decision, StopReason, StoppingPolicy};
pub use kprof_core::transforms::Reducer;
pub use l2_flush::{L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV};
pub use options::{BenchOptions, CacheControl, ClockControl, DurationSource, FlushPolicy, RunOrder};
pub use profiler::{Profiler, CUDA_EVENTS_METRIC};
pub use progress::{Progress, ProgressHook};
pub use run::{RegionGuard, Run};
pub(crate) use schedule::{Scheduler, Step};

/// The unit of [`DEFAULT_METRIC`](kprof_core::model::DEFAULT_METRIC).
pub const DEFAULT_UNIT: &str = "ns";

// ------------------------------------------------------------------------------------------------
// Combining, stopping, CSV (small private functions; MERGE: replace with kprof-core's)
// ------------------------------------------------------------------------------------------------

/// Whether a kernel matches an entry of [`BenchOptions::ignore_kernels`]: the exact (mangled)
/// name, the demangled name when known, or any spelling [`kprof_core::kernels::matches`] accepts
/// (demangled with or without parameters, bare function name).
fn kernel_matches(k: &KernelRun, ignore: &str) -> bool {
    k.demangled.as_deref() == Some(ignore) || kprof_core::kernels::matches(&k.name, ignore)
}

/// The raw CSV path for a benchmark under an output prefix.
pub fn raw_csv_path(prefix: &Path, benchmark: &str) -> PathBuf {
    let s = prefix.to_string_lossy();
    let file = format!("{benchmark}-raw.csv");
    if prefix.is_dir() || s.ends_with('/') || s.is_empty() {
        prefix.join(file)
    } else {
        PathBuf::from(format!("{s}{file}"))
    }
}

/// Writes the raw results atomically (a sweep that dies later keeps what it measured).
fn write_raw(path: &Path, raw: &RawResults) -> Result<(), EngineError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
    }
    kprof_core::io::write_raw_csv(path, raw).map_err(EngineError::Results)
}

fn invalid_option(msg: &str) -> EngineError {
    EngineError::InvalidOption(msg.to_string())
}

fn closure_error(benchmark: &str, config: &Config, run: u32, e: &(dyn std::error::Error + Send + Sync)) -> EngineError {
    EngineError::Benchmark {
        benchmark: benchmark.to_string(),
        config: config.to_string(),
        run,
        message: e.to_string(),
    }
}

fn model_error(e: kprof_core::model::ModelError) -> EngineError {
    EngineError::Model(e)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

// ------------------------------------------------------------------------------------------------
// Backend: what the run loop needs from the GPU side
// ------------------------------------------------------------------------------------------------

/// One kernel attributed to a region.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KernelRun {
    pub name: String,
    /// A whole CUDA graph launch (its GPU span), not one kernel: the Range Profiler does not
    /// profile graph launches, so counter passes skip these.
    pub graph: bool,
    /// Demangled name, when the backend has one.
    pub demangled: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl KernelRun {
    /// A kernel record without timestamps (a CUDA-graph node under serial kernel tracing).
    pub fn is_untimed(&self) -> bool {
        self.start_ns == 0 && self.end_ns == 0
    }
}

/// One region instance of one run, as handed to attribution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    pub key: u64,
    pub parent: Option<u64>,
    pub thread_id: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Kernels of one run, by region key.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub by_region: HashMap<u64, Vec<KernelRun>>,
    pub unattributed: usize,
    /// The unattributed kernels themselves (kernel replay orders a run's kernels with them).
    pub outside: Vec<KernelRun>,
    /// Graph launches so far (this session) of executables instantiated before it: timed from
    /// their node records, not graph records (see [`crate::cupti::graph_guard`]).
    pub graph_launches_from_nodes: u64,
}

/// The GPU side of the run loop. Implementations use interior mutability; region enter/exit are
/// called on the thread that opens the region.
pub(crate) trait Backend: Send + Sync {
    /// A timestamp on the clock of the activity records.
    fn timestamp_ns(&self) -> u64;
    /// The calling thread's id as the activity records report it.
    fn thread_id(&self) -> u64;
    /// Packs (call, config, run, region) into the 64-bit external correlation id.
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError>;
    /// Opens a region on the calling thread: NVTX push and external-id push.
    fn enter(&self, key: u64, name: &str) -> Result<(), EngineError>;
    /// Closes the innermost region on the calling thread.
    fn exit(&self) -> Result<(), EngineError>;
    /// Waits for all work on the device.
    fn synchronize(&self) -> Result<(), EngineError>;
    /// Evicts the L2 (goes through a buffer of at least twice its size, see [`l2_flush`]) and
    /// waits for it.
    fn flush_l2(&self) -> Result<(), EngineError>;
    /// Turns the activity records of kernels off (`false`) or back on: counter passes run with
    /// them off (see [`counter_pass`]). Backends without such records do nothing.
    fn kernel_records(&self, _on: bool) -> Result<(), EngineError> {
        Ok(())
    }
    /// Whether graph launches get their spans merged from node records (`KPROF_GRAPH_TRACE=nodes`,
    /// or graphs instantiated before the session), which a counter pass can corrupt (see
    /// [`counter_pass`]).
    fn graph_spans_from_nodes(&self) -> bool {
        false
    }
    /// Flushes the activity buffers (after [`Backend::synchronize`]) and attributes the kernels
    /// to the given spans: those of every run since the last flush (keys tell runs apart).
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError>;
    /// Hardware counters (CUPTI Range Profiler), when this backend has them.
    fn counters(&self) -> Option<&dyn counter_pass::CounterBackend> {
        None
    }
    /// What the backend knows about its device for the environment fingerprint.
    fn fingerprint_inputs(&self) -> FingerprintInputs {
        FingerprintInputs::default()
    }
}
// ------------------------------------------------------------------------------------------------
// Tests (pure parts, and the run loop over a mock backend)
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    use kprof_core::kernels::MANGLED_KERNEL_COLUMN;
    use kprof_core::model::{DeviceInfo, ExtraValue, DEFAULT_METRIC};
    use kprof_core::transforms::combine_kernels;

    use super::profiler::PROFILER_ACTIVE;
    use super::*;
    use crate::conditions::runtime::{Collectors, ThermalOptions};

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
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    /// A fake GPU: `launch` records a kernel under the calling thread's innermost external id.
    /// As with CUPTI, a kernel's record reaches a flush only once the kernel has completed:
    /// launched kernels are `running` until the next synchronisation.
    #[derive(Default)]
    struct Mock {
        clock: AtomicU64,
        stacks: Mutex<HashMap<std::thread::ThreadId, Vec<u64>>>,
        running: Mutex<Vec<(Option<u64>, KernelRun)>>,
        pending: Mutex<Vec<(Option<u64>, KernelRun)>>,
        l2_flushes: AtomicU64,
        syncs: AtomicU64,
        /// Flushes (`collect` calls) and the spans each was given.
        collects: AtomicU64,
        spans_per_collect: Mutex<Vec<usize>>,
        /// When non-zero, the synchronisation with this number (1-based) fails.
        fail_sync_at: AtomicU64,
        names: Mutex<Vec<String>>,
    }

    impl Mock {
        fn launch(&self, name: &str, dur: u64) {
            let t = self.clock.fetch_add(dur + 10, Ordering::SeqCst);
            self.run_kernel(KernelRun {
                graph: false,
                name: name.to_string(),
                demangled: Some(format!("{name}()")),
                start_ns: t,
                end_ns: t + dur,
            });
        }

        /// A kernel record without timestamps, as serial tracing gives a CUDA-graph node.
        fn launch_untimed(&self, name: &str) {
            self.run_kernel(KernelRun {
                graph: false,
                name: name.to_string(),
                demangled: None,
                start_ns: 0,
                end_ns: 0,
            });
        }

        /// Starts `k` under the calling thread's innermost external id.
        fn run_kernel(&self, k: KernelRun) {
            let ext = self
                .stacks
                .lock()
                .unwrap()
                .get(&std::thread::current().id())
                .and_then(|s| s.last().copied());
            self.running.lock().unwrap().push((ext, k));
        }
    }

    impl Backend for Mock {
        fn timestamp_ns(&self) -> u64 {
            self.clock.fetch_add(1, Ordering::SeqCst)
        }
        fn thread_id(&self) -> u64 {
            1
        }
        fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
            Ok(call << 52 | config << 32 | run << 12 | region)
        }
        fn enter(&self, key: u64, name: &str) -> Result<(), EngineError> {
            self.names.lock().unwrap().push(name.to_string());
            self.stacks
                .lock()
                .unwrap()
                .entry(std::thread::current().id())
                .or_default()
                .push(key);
            Ok(())
        }
        fn exit(&self) -> Result<(), EngineError> {
            self.stacks
                .lock()
                .unwrap()
                .get_mut(&std::thread::current().id())
                .and_then(|s| s.pop());
            Ok(())
        }
        fn synchronize(&self) -> Result<(), EngineError> {
            let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.fail_sync_at.load(Ordering::SeqCst) {
                return Err(EngineError::Unsupported("mock device lost".into()));
            }
            let done: Vec<_> = self.running.lock().unwrap().drain(..).collect();
            self.pending.lock().unwrap().extend(done);
            Ok(())
        }
        fn flush_l2(&self) -> Result<(), EngineError> {
            self.l2_flushes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError> {
            self.collects.fetch_add(1, Ordering::SeqCst);
            self.spans_per_collect.lock().unwrap().push(spans.len());
            let mut out = Collected::default();
            for (ext, k) in self.pending.lock().unwrap().drain(..) {
                let mut cur = ext.and_then(|e| spans.iter().find(|s| s.key == e));
                if cur.is_none() {
                    out.unattributed += 1;
                }
                // Inclusive nesting: the kernel also counts for every ancestor.
                while let Some(s) = cur {
                    out.by_region.entry(s.key).or_default().push(k.clone());
                    cur = s.parent.and_then(|p| spans.iter().find(|x| x.key == p));
                }
            }
            Ok(out)
        }
    }

    fn profiler(mock: &Arc<Mock>) -> Profiler {
        let dev = DeviceInfo {
            gpu: "Fake GPU".into(),
            host: "h".into(),
            compute_clock_khz: Some(1.0),
            memory_clock_khz: Some(2.0),
        };
        Profiler::with_backend(
            mock.clone(),
            dev,
            vec![("DeviceOrdinal".into(), ExtraValue::Number(0.0))],
        )
    }

    fn configs(n: i64) -> Vec<Config> {
        (0..n).map(|i| Config::new().with("n", 512 << i)).collect()
    }

    fn values(raw: &RawResults, region: &str, config: u32) -> Vec<f64> {
        raw.samples
            .iter()
            .filter(|s| {
                let k = &raw.series_of(s).key;
                k.annotation == region && k.config == config
            })
            .map(|s| s.value)
            .collect()
    }

    fn steps(mut s: Scheduler) -> Vec<(usize, u32, bool)> {
        std::iter::from_fn(|| s.next_step())
            .map(|s| (s.config, s.run, s.warmup))
            .collect()
    }

    #[test]
    fn untimed_graph_kernels_give_one_warning_per_benchmark_naming_the_concurrent_mode() {
        let mock = Arc::new(Mock::default());
        let mut prof = profiler(&mock);
        let m = mock.clone();
        let opts = BenchOptions {
            runs: 3,
            conditions: false,
            ..Default::default()
        };
        let raw = prof
            .bench("graph", &[], &opts, |_, run| {
                let _r = run.region("g")?;
                m.launch("node0", 100);
                m.launch_untimed("node1");
                Ok(())
            })
            .unwrap();
        assert_eq!(values(&raw, "g", 0), vec![100.0; 3]);
        let w: Vec<_> = prof
            .warnings()
            .iter()
            .filter(|w| w.contains("without timestamps"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", prof.warnings());
        assert!(
            w[0].starts_with("graph: ") && w[0].contains("KPROF_KERNEL_TRACE=concurrent"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn interleaved_order_runs_warmups_first_then_run_r_of_every_config() {
        let got = steps(Scheduler::new(3, 1, 2, RunOrder::Interleaved));
        assert_eq!(
            got,
            vec![
                (0, 0, true),
                (1, 0, true),
                (2, 0, true),
                (0, 0, false),
                (1, 0, false),
                (2, 0, false),
                (0, 1, false),
                (1, 1, false),
                (2, 1, false)
            ]
        );
    }

    #[test]
    fn sequential_order_finishes_each_config_before_the_next() {
        let got = steps(Scheduler::new(2, 2, 2, RunOrder::Sequential));
        assert_eq!(
            got,
            vec![
                (0, 0, true),
                (0, 1, true),
                (0, 0, false),
                (0, 1, false),
                (1, 0, true),
                (1, 1, true),
                (1, 0, false),
                (1, 1, false)
            ]
        );
        assert_eq!(steps(Scheduler::new(0, 1, 3, RunOrder::Sequential)), vec![]);
        assert_eq!(
            steps(Scheduler::new(1, 0, 1, RunOrder::Interleaved)),
            vec![(0, 0, false)]
        );
    }

    #[test]
    fn stopped_configs_get_no_more_runs() {
        let mut s = Scheduler::new(2, 0, 4, RunOrder::Interleaved);
        assert_eq!(s.next_step().map(|s| (s.config, s.run)), Some((0, 0)));
        s.stop(0);
        let rest: Vec<_> = std::iter::from_fn(|| s.next_step())
            .map(|s| (s.config, s.run))
            .collect();
        assert_eq!(rest, vec![(1, 0), (1, 1), (1, 2), (1, 3)]);
    }

    #[test]
    fn base_clocks_point_to_the_ncu_backend() {
        let o = BenchOptions {
            clock: ClockControl::Base,
            ..Default::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("ncu backend"), "{e}");
    }

    #[test]
    fn counter_metric_names_pass_option_validation_and_duplicates_do_not() {
        // Counter names are checked on the host by Profiler::bench (runner/counter_pass/tests.rs).
        let ok = BenchOptions {
            metrics: vec![DEFAULT_METRIC.into(), "dram__bytes_read.sum".into()],
            ..Default::default()
        };
        ok.validate().unwrap();
        let o = BenchOptions {
            metrics: vec!["dram__bytes_read.sum".into(), "dram__bytes_read.sum".into()],
            ..Default::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn option_validation() {
        let d = BenchOptions::default();
        assert_eq!(
            (d.runs, d.warmup, d.cache, d.order),
            (10, 1, CacheControl::All, RunOrder::Interleaved)
        );
        assert!(matches!(d.combine, Reducer::Sum));
        d.validate().unwrap();
        assert!(BenchOptions {
            runs: 0,
            ..Default::default()
        }
        .validate()
        .is_err());
        let p = StoppingPolicy {
            min_runs: 5,
            max_runs: 3,
            ..StoppingPolicy::fixed(3)
        };
        let e = BenchOptions {
            policy: Some(p),
            ..Default::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("min_runs"), "{e}");
        let p = StoppingPolicy {
            target_rsd_pct: Some(-1.0),
            ..StoppingPolicy::fixed(3)
        };
        assert!(BenchOptions {
            policy: Some(p),
            ..Default::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn profiler_new_without_a_driver_gives_a_clear_error() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a GPU machine: nothing to check here
        }
        let e = Profiler::new().unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, EngineError::LibraryNotFound { .. }), "{msg}");
        assert!(msg.contains("libcuda"), "{msg}");
        // The slot is free again after a failed start.
        assert!(!PROFILER_ACTIVE.load(Ordering::SeqCst));
        // The CUDA-events fallback needs the driver too, and says so the same way.
        let e = Profiler::with_cuda_events().unwrap_err();
        assert!(
            matches!(e, EngineError::LibraryNotFound { .. }) && e.to_string().contains("libcuda"),
            "{e}"
        );
        assert!(!PROFILER_ACTIVE.load(Ordering::SeqCst));
    }

    #[test]
    fn bench_sums_kernels_keeps_breakdown_and_flags_empty_regions() {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let m = mock.clone();
        let opts = BenchOptions {
            runs: 3,
            warmup: 1,
            ignore_kernels: vec!["noise()".into()],
            ..Default::default()
        };
        let raw = p
            .bench("mm", &configs(2), &opts, |c, run| {
                let n = c.get("n").unwrap().as_f64().unwrap() as u64;
                {
                    let _g = run.region("gemm")?;
                    m.launch("gemm", n);
                    if n > 512 {
                        m.launch("splitk_reduce", 7);
                    }
                    m.launch("noise", 1000);
                }
                m.launch("outside", 5);
                run.annotate("empty", |_| ())?;
                Ok(())
            })
            .unwrap();
        // 2 configs x 3 runs x 2 regions; warm-up not recorded.
        assert_eq!(raw.samples.len(), 12);
        assert_eq!(values(&raw, "gemm", 0), vec![512.0; 3]);
        assert_eq!(values(&raw, "gemm", 1), vec![1031.0; 3]);
        assert!(values(&raw, "empty", 0).iter().all(|v| v.is_nan()));
        assert!(raw.kernel_names.contains(&"gemm|splitk_reduce".to_string()));
        // Breakdown: 1 kernel for n=512, 2 for n=1024, per run.
        assert_eq!(raw.kernel_breakdown.len(), 3 + 6);
        assert!(raw
            .kernel_breakdown
            .iter()
            .any(|k| k.kernel == "splitk_reduce" && k.value == 7.0 && k.position == 1));
        assert_eq!(p.warnings().len(), 6);
        let w = raw.extras.iter().find(|c| c.name == "Warning").unwrap();
        assert_eq!(w.values.iter().filter(|v| **v != ExtraValue::Missing).count(), 6);
        // Cold cache by default: per run (warm-ups included) one flush and one before each of
        // its 2 top-level regions; one sync per run.
        assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), 8 * 3);
        assert_eq!(mock.syncs.load(Ordering::SeqCst), 8);
    }

    #[test]
    fn nested_regions_are_inclusive() {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let m = mock.clone();
        let opts = BenchOptions {
            runs: 1,
            warmup: 0,
            cache: CacheControl::None,
            ..Default::default()
        };
        let raw = p
            .bench("nest", &[], &opts, |_, run| {
                let _outer = run.region("outer")?;
                m.launch("a", 10);
                run.annotate("inner", |_| m.launch("b", 20))?;
                Ok(())
            })
            .unwrap();
        assert_eq!(values(&raw, "outer", 0), vec![30.0]);
        assert_eq!(values(&raw, "inner", 0), vec![20.0]);
        assert_eq!(mock.l2_flushes.load(Ordering::SeqCst), 0);
        assert_eq!(*mock.names.lock().unwrap(), vec!["outer", "inner"]);
    }

    #[test]
    fn duplicate_region_names_in_one_run_are_an_error() {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let opts = BenchOptions {
            runs: 1,
            warmup: 0,
            ..Default::default()
        };
        let e = p
            .bench("dup", &[], &opts, |_, run| {
                let _a = run.region("x")?;
                let _b = run.region("x")?;
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("opened twice"), "{e}");
    }

    #[test]
    fn failures_are_nan_with_ignore_failures_and_errors_without() {
        let dir = tempfile::tempdir().unwrap();
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let m = mock.clone();
        let mut opts = BenchOptions {
            runs: 2,
            warmup: 0,
            order: RunOrder::Sequential,
            ignore_failures: true,
            output_prefix: Some(dir.path().to_path_buf()),
            // The expected CSV below predates the condition columns.
            conditions: false,
            ..Default::default()
        };
        let body = |c: &Config, run: &mut Run| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            let _g = run.region("k")?;
            m.launch("k", 100);
            if c.get("n") == Some(&1024.into()) && run.index() == 1 {
                return Err("out of memory".into());
            }
            Ok(())
        };
        let raw = p.bench("f", &configs(3), &opts, body).unwrap();
        assert_eq!(values(&raw, "k", 1).len(), 2);
        assert!(values(&raw, "k", 1)[1].is_nan());
        assert_eq!(values(&raw, "k", 2), vec![100.0, 100.0]);
        assert!(p.warnings().iter().any(|w| w.contains("out of memory")));

        opts.ignore_failures = false;
        let m = mock.clone();
        let e = p
            .bench("g", &configs(3), &opts, |c, run| {
                let _g = run.region("k")?;
                m.launch("k", 100);
                if c.get("n") == Some(&1024.into()) && run.index() == 1 {
                    return Err("out of memory".into());
                }
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of memory") && e.contains("n=1024"), "{e}");
        // Config 0 finished before the failure: its rows are on disk.
        let csv = std::fs::read_to_string(dir.path().join("g-raw.csv")).unwrap();
        assert!(
            csv.starts_with("Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit"),
            "{csv}"
        );
        assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
        assert!(
            csv.contains("k,100.0,gpu__time_duration.sum,k,Fake GPU,h,1.0,2.0,ns,0.0,records,512,g,0"),
            "{csv}"
        );
    }

    #[test]
    fn adaptive_stopping_ends_stable_configs_early() {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let m = mock.clone();
        let policy = StoppingPolicy {
            min_runs: 3,
            max_runs: 20,
            target_rel_ci_half_width: Some(0.01),
            ..StoppingPolicy::fixed(20)
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let opts = BenchOptions {
            warmup: 0,
            policy: Some(policy),
            progress: Some(ProgressHook::new(move |p| log.lock().unwrap().push(*p))),
            ..Default::default()
        };
        let raw = p
            .bench("s", &configs(2), &opts, |c, run| {
                let i = run.index() as u64;
                let noisy = c.get("n") == Some(&1024.into());
                let _g = run.region("k")?;
                m.launch("k", if noisy { 100 + (i % 2) * 50 } else { 100 });
                Ok(())
            })
            .unwrap();
        assert_eq!(values(&raw, "k", 0).len(), 3);
        assert_eq!(values(&raw, "k", 1).len(), 20);
        // Issue 18 item 17: the progress total follows the policy: 2 x 20 at first, then 3 + 20
        // once config 0 stopped; one report per recorded run, never done > total.
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 23);
        assert_eq!(seen[0].total_runs, 40);
        assert!(seen
            .windows(2)
            .all(|w| w[1].done_runs == w[0].done_runs + 1 && w[1].total_runs <= w[0].total_runs));
        assert!(seen.iter().all(|p| p.done_runs <= p.total_runs));
        let last = seen.last().unwrap();
        assert_eq!((last.done_runs, last.total_runs), (23, 23));
    }

    #[test]
    fn ignore_list_matches_mangled_and_demangled_names() {
        let k = KernelRun {
            graph: false,
            name: "_Z5scalePfPKffi".into(),
            demangled: None,
            start_ns: 0,
            end_ns: 1,
        };
        assert!(kernel_matches(&k, "_Z5scalePfPKffi"));
        assert!(kernel_matches(&k, "scale(float*, float const*, float, int)"));
        assert!(kernel_matches(&k, "scale"));
        assert!(!kernel_matches(&k, "scal"));
        let plain = KernelRun {
            graph: false,
            name: "copyk".into(),
            demangled: None,
            start_ns: 0,
            end_ns: 1,
        };
        assert!(kernel_matches(&plain, "copyk") && !kernel_matches(&plain, "copy"));
    }

    #[test]
    fn duplicate_configs_are_rejected() {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        let c = Config::new().with("n", 1);
        let e = p
            .bench("d", &[c.clone(), c], &BenchOptions::default(), |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("listed twice"), "{e}");
    }

    #[test]
    fn adapter_attributes_the_recorded_h200_fixture() {
        use crate::attribution::{attribute, encode_region_key};
        use crate::cupti::records::RecordedBuffer;
        let f = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/activity/h200-cuda13-region-threads.jsonl");
        if !f.exists() {
            return;
        }
        let rb = RecordedBuffer::read_jsonl(&f).unwrap();
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
        fn flush_l2(&self) -> Result<(), EngineError> {
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

    /// The GPU check of 2026-11-30 on the H200 (examples/gpu_check.rs, checks a b c d e g), replayed
    /// from its activity recording through the real run loop and adapter: the raw CSVs written now
    /// are byte-identical to the ones the runner wrote on the H200.
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

    #[test]
    fn replaying_the_h200_gpu_check_rewrites_its_raw_csvs() {
        use crate::cupti::records::RecordedBuffer;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rb = RecordedBuffer::read_jsonl(&root.join("../../tests/fixtures/activity/h200-cuda13-gpu-check.jsonl"))
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
        let fixtures = root.join("../../tests/fixtures/h200");
        let mut results = Vec::new();
        for (name, region, configs, runs, warmup, cache) in calls {
            let raw = prof
                .bench(name, &configs, &opts(runs, warmup, cache), |_, run| {
                    let _r = run.region(region)?;
                    Ok(())
                })
                .unwrap();
            // The recordings predate the DurationSource column (added for issue 17): compare
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
        assert!(prof.warnings().is_empty(), "{:?}", prof.warnings());
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

    #[test]
    fn raw_csv_paths() {
        assert_eq!(raw_csv_path(Path::new("out/"), "mm"), PathBuf::from("out/mm-raw.csv"));
        assert_eq!(
            raw_csv_path(Path::new("/nonexistent/run1_"), "mm"),
            PathBuf::from("/nonexistent/run1_mm-raw.csv")
        );
    }

    // --------------------------------------------------------------------------------------------
    // Batched flushing
    // --------------------------------------------------------------------------------------------

    /// Never flush for time in tests (timing on a loaded machine must not change the counts).
    fn batches_of(max_runs: u32) -> FlushPolicy {
        FlushPolicy {
            max_runs,
            max_time: Duration::from_secs(3600),
        }
    }

    /// Every sample as comparable text (NaN-safe): region, config, run, value, kernels, warning.
    fn rows(raw: &RawResults) -> Vec<String> {
        let warning = raw.extras.iter().find(|c| c.name == "Warning");
        raw.samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let k = &raw.series_of(s).key;
                let w = warning.map(|c| format!("{:?}", c.values[i])).unwrap_or_default();
                format!(
                    "{}|{}|{}|{:?}|{}|{w}",
                    k.annotation, k.config, s.run, s.value, raw.kernel_names[s.kernel as usize]
                )
            })
            .collect()
    }

    /// How long a kernel of (config, run, part) lasts in `sweep_with`; warm-ups add 10^9.
    fn dur(config: usize, run: u32, warmup: bool, part: u64) -> u64 {
        100_000 * (config as u64 + 1) + 1000 * run as u64 + part + if warmup { 1_000_000_000 } else { 0 }
    }

    /// 5 configs x 10 runs (+1 warm-up) with nested regions, a kernel outside every region and
    /// one launched from a second thread inside the outer region (attributed by key only in the
    /// mock, by launch time on a GPU). Returns the results, the profiler and the mock.
    fn sweep_with(policy: FlushPolicy, order: RunOrder) -> (RawResults, Profiler, Arc<Mock>) {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        p.set_flush_policy(policy);
        let m = mock.clone();
        let opts = BenchOptions {
            runs: 10,
            warmup: 1,
            cache: CacheControl::None,
            order,
            ..Default::default()
        };
        let cfgs = configs(5);
        let raw = p
            .bench("sweep", &cfgs, &opts, |c, run| {
                let i = cfgs.iter().position(|x| x == c).unwrap();
                let (r, w) = (run.index(), run.is_warmup());
                m.launch("before", 3);
                {
                    let _outer = run.region("outer")?;
                    m.launch("gemm", dur(i, r, w, 1));
                    run.annotate("inner", |_| m.launch("epilogue", dur(i, r, w, 2)))?;
                }
                m.launch("after", 3);
                Ok(())
            })
            .unwrap();
        (raw, p, mock)
    }

    #[test]
    fn one_flush_serves_a_whole_sweep_and_every_kernel_keeps_its_config_run_and_region() {
        let (raw, p, mock) = sweep_with(batches_of(256), RunOrder::Interleaved);
        // 55 runs (50 recorded + 5 warm-ups), all in one batch: one flush, at the end.
        assert_eq!(p.flush_count(), 1);
        assert_eq!(mock.collects.load(Ordering::SeqCst), 1);
        assert_eq!(*mock.spans_per_collect.lock().unwrap(), vec![55 * 2]);
        // Still one synchronisation per run: runs never overlap.
        assert_eq!(mock.syncs.load(Ordering::SeqCst), 55);
        assert_eq!(raw.samples.len(), 5 * 10 * 2);
        for s in &raw.samples {
            let k = &raw.series_of(s).key;
            let (c, r) = (k.config as usize, s.run);
            let want = match k.annotation.as_str() {
                "outer" => dur(c, r, false, 1) + dur(c, r, false, 2),
                "inner" => dur(c, r, false, 2),
                other => panic!("unexpected region {other}"),
            };
            assert_eq!(s.value, want as f64, "{} config {c} run {r}", k.annotation);
        }
        // Warm-up kernels (same run index 0, other key) never leak into recorded samples.
        assert!(raw.samples.iter().all(|s| s.value < 1e9));
        // The two kernels outside regions of each of the 55 runs are unattributed.
        assert_eq!(p.unattributed_kernels(), 110);
        assert!(p.warnings().is_empty(), "{:?}", p.warnings());
    }

    #[test]
    fn the_default_policy_flushes_far_fewer_times_than_runs() {
        let (_, p, _) = sweep_with(FlushPolicy::default(), RunOrder::Interleaved);
        // 55 mock runs take microseconds: the 50 ms budget is not reached (10 would need 0.5 s).
        assert!(p.flush_count() <= 10, "{} flushes", p.flush_count());
        let (_, p, _) = sweep_with(FlushPolicy::every_run(), RunOrder::Interleaved);
        assert_eq!(p.flush_count(), 55);
    }

    #[test]
    fn batches_split_anywhere_give_the_same_results_as_a_flush_per_run() {
        for order in [RunOrder::Interleaved, RunOrder::Sequential] {
            let (every, p1, _) = sweep_with(FlushPolicy::every_run(), order);
            assert_eq!(p1.flush_count(), 55);
            // Batches of 4 and 7 runs split rounds and configs in the middle.
            for (n, flushes) in [(4, 14), (7, 8), (256, 1)] {
                let (batched, p, mock) = sweep_with(batches_of(n), order);
                assert_eq!(p.flush_count(), flushes, "{order:?} batches of {n}");
                assert_eq!(rows(&batched), rows(&every), "{order:?} batches of {n}");
                assert_eq!(batched.kernel_breakdown, every.kernel_breakdown);
                assert_eq!(p.unattributed_kernels(), p1.unattributed_kernels());
                let spans = mock.spans_per_collect.lock().unwrap().clone();
                assert_eq!(spans.iter().sum::<usize>(), 110, "{spans:?}");
            }
        }
    }

    #[test]
    fn a_zero_time_budget_flushes_after_every_run_and_zero_runs_counts_as_one() {
        let p0 = FlushPolicy {
            max_runs: 1000,
            max_time: Duration::ZERO,
        };
        let (_, p, _) = sweep_with(p0, RunOrder::Interleaved);
        assert_eq!(p.flush_count(), 55);
        let (_, p, _) = sweep_with(batches_of(0), RunOrder::Interleaved);
        assert_eq!(p.flush_count(), 55);
    }

    /// Adaptive stopping over 2 configs (one stable, one noisy) under a flush policy.
    fn adaptive(policy: FlushPolicy, order: RunOrder) -> (RawResults, Profiler) {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        p.set_flush_policy(policy);
        let m = mock.clone();
        let stopping = StoppingPolicy {
            min_runs: 3,
            max_runs: 20,
            target_rel_ci_half_width: Some(0.01),
            ..StoppingPolicy::fixed(20)
        };
        let opts = BenchOptions {
            warmup: 1,
            cache: CacheControl::None,
            order,
            policy: Some(stopping),
            ..Default::default()
        };
        let raw = p
            .bench("s", &configs(3), &opts, |c, run| {
                let i = run.index() as u64;
                let n = c.get("n").and_then(|v| v.as_f64()).unwrap() as i64;
                let _g = run.region("k")?;
                // 512: stable, 1024: noisy, 2048: slightly noisy.
                m.launch("k", 100 + (i % 2) * [0, 50, 1][(n / 1024) as usize]);
                Ok(())
            })
            .unwrap();
        (raw, p)
    }

    #[test]
    fn adaptive_stopping_decides_as_before_with_batched_flushes() {
        for order in [RunOrder::Interleaved, RunOrder::Sequential] {
            let (every, _) = adaptive(FlushPolicy::every_run(), order);
            let (batched, p) = adaptive(batches_of(256), order);
            assert_eq!(rows(&batched), rows(&every), "{order:?}");
            assert_eq!(values(&batched, "k", 0).len(), 3, "{order:?}");
            assert_eq!(values(&batched, "k", 1).len(), 20, "{order:?}");
            assert_eq!(values(&batched, "k", 2).len(), 4, "{order:?}");
            let flushes = p.flush_count();
            match order {
                // One flush per round (before run r of a config whose run r-1 is waiting) for
                // rounds 1..19 (config 1 needs all 20 runs), then one at the end.
                RunOrder::Interleaved => assert_eq!(flushes, 20, "{order:?}"),
                // Sequential: a decision after every recorded run, as a flush per run did: before
                // runs 1..3 of config 0 (run 3 is then not run), 1..19 of config 1 and 1..4 of
                // config 2; nothing is left for the end.
                RunOrder::Sequential => assert_eq!(flushes, 3 + 19 + 4, "{order:?}"),
            }
        }
    }

    /// The failure scenario of `failures_are_nan_with_ignore_failures_and_errors_without`, plus
    /// a failed warm-up, a region marked failed and an empty region, in the given order.
    fn failing(
        policy: FlushPolicy,
        order: RunOrder,
        ignore: bool,
        dir: &Path,
    ) -> (Result<RawResults, String>, Profiler) {
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        p.set_flush_policy(policy);
        let m = mock.clone();
        let opts = BenchOptions {
            runs: 3,
            warmup: 1,
            order,
            ignore_failures: ignore,
            output_prefix: Some(dir.to_path_buf()),
            ..Default::default()
        };
        let res = p.bench("f", &configs(3), &opts, |c, run| {
            let n = c.get("n").and_then(|v| v.as_f64()).unwrap() as i64;
            if n == 2048 && run.is_warmup() {
                return Err("warm-up out of memory".into());
            }
            {
                let g = run.region("k")?;
                m.launch("k", 100 + n as u64);
                if n == 512 && run.index() == 2 && !run.is_warmup() {
                    g.mark_failed();
                }
            }
            run.annotate("empty", |_| ())?;
            if n == 1024 && run.index() == 1 && !run.is_warmup() {
                return Err("out of memory".into());
            }
            Ok(())
        });
        (res.map_err(|e| e.to_string()), p)
    }

    #[test]
    fn failures_and_nan_rows_are_unchanged_by_batching() {
        for order in [RunOrder::Interleaved, RunOrder::Sequential] {
            let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            // ignore_failures: NaN rows and warnings, in the same order, the same file.
            let (every, p1) = failing(FlushPolicy::every_run(), order, true, d1.path());
            let (batched, p2) = failing(batches_of(256), order, true, d2.path());
            let (every, batched) = (every.unwrap(), batched.unwrap());
            assert_eq!(rows(&batched), rows(&every), "{order:?}");
            assert_eq!(p2.warnings(), p1.warnings(), "{order:?}");
            assert!(values(&batched, "k", 1)[1].is_nan());
            assert!(values(&batched, "k", 0)[2].is_nan());
            assert!(values(&batched, "empty", 0).iter().all(|v| v.is_nan()));
            assert!(p2.warnings().iter().any(|w| w.contains("warm-up out of memory")));
            assert!(p2.flush_count() < p1.flush_count(), "{order:?}");
            let read = |d: &Path| std::fs::read_to_string(d.join("f-raw.csv")).unwrap();
            assert_eq!(read(d2.path()), read(d1.path()), "{order:?}");

            // Without: the same error, and the same rows on disk (those recorded before it).
            // (Interleaved order fails at config 2's warm-up, sequential at config 1's run 1.)
            let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (e1, _) = failing(FlushPolicy::every_run(), order, false, d1.path());
            let (e2, _) = failing(batches_of(256), order, false, d2.path());
            let (e1, e2) = (e1.unwrap_err(), e2.unwrap_err());
            assert_eq!(e2, e1, "{order:?}");
            assert!(e2.contains("out of memory"), "{e2}");
            assert_eq!(read(d2.path()), read(d1.path()), "{order:?}");
            if order == RunOrder::Sequential {
                // Config 0 (3 runs x 2 regions) and config 1's run 0 (2 regions).
                assert_eq!(read(d2.path()).lines().count(), 1 + 8);
            }
        }
    }

    #[test]
    fn an_engine_error_mid_batch_still_records_and_writes_the_runs_before_it() {
        for policy in [FlushPolicy::every_run(), batches_of(256)] {
            let dir = tempfile::tempdir().unwrap();
            let mock = Arc::new(Mock::default());
            // Runs c0r0 c0r1 c0r2 c1r0 synchronise; c1r1's synchronisation fails.
            mock.fail_sync_at.store(5, Ordering::SeqCst);
            let mut p = profiler(&mock);
            p.set_flush_policy(policy);
            let m = mock.clone();
            let opts = BenchOptions {
                runs: 3,
                warmup: 0,
                cache: CacheControl::None,
                order: RunOrder::Sequential,
                output_prefix: Some(dir.path().to_path_buf()),
                ..Default::default()
            };
            let e = p
                .bench("e", &configs(2), &opts, |_, run| {
                    let _g = run.region("k")?;
                    m.launch("k", 100);
                    Ok(())
                })
                .unwrap_err()
                .to_string();
            assert!(e.contains("mock device lost"), "{e}");
            let csv = std::fs::read_to_string(dir.path().join("e-raw.csv")).unwrap();
            assert_eq!(csv.lines().count(), 1 + 4, "{policy:?}: {csv}");
            assert_eq!(csv.matches("k,100.0,").count(), 4, "{policy:?}: {csv}");
        }
    }

    #[test]
    fn a_finished_config_is_written_at_the_flush_that_records_its_last_run() {
        let dir = tempfile::tempdir().unwrap();
        let mock = Arc::new(Mock::default());
        let mut p = profiler(&mock);
        p.set_flush_policy(batches_of(2));
        let m = mock.clone();
        let path = dir.path().join("w-raw.csv");
        let mut on_disk = Vec::new();
        let opts = BenchOptions {
            runs: 2,
            warmup: 0,
            cache: CacheControl::None,
            order: RunOrder::Sequential,
            output_prefix: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        p.bench("w", &configs(3), &opts, |_, run| {
            let rows = std::fs::read_to_string(&path).map(|s| s.lines().count() - 1);
            on_disk.push(rows.unwrap_or(0));
            let _g = run.region("k")?;
            m.launch("k", 1);
            Ok(())
        })
        .unwrap();
        // c0r0 c0r1 | flush: config 0 written | c1r0 c1r1 | flush | c2r0 c2r1 | flush.
        assert_eq!(on_disk, vec![0, 0, 2, 2, 4, 4]);
        assert_eq!(p.flush_count(), 3);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1 + 6);
    }

    // -- run conditions (issue 7): guard, sampler, collectors, fingerprint --------------------

    mod conditions {
        use super::*;
        use crate::conditions::runtime::{BoxClock, BoxSensor, BoxSource, ConditionsProbe, ProfilerConditions};
        use crate::conditions::sampler::{ConditionsSource, CONDITION_COLUMNS};
        use crate::conditions::thermal::{Clock, TemperatureSensor, ThermalMode};
        use crate::conditions::{CollectionScope, FnCollector};

        fn column<'a>(raw: &'a RawResults, name: &str) -> &'a [ExtraValue] {
            &raw.extras
                .iter()
                .find(|c| c.name == name)
                .unwrap_or_else(|| panic!("no column {name}"))
                .values
        }

        fn num(v: &ExtraValue) -> f64 {
            match v {
                ExtraValue::Number(x) => *x,
                other => panic!("not a number: {other:?}"),
            }
        }

        fn body(m: Arc<Mock>) -> impl FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            move |_c, run| {
                {
                    let _a = run.region("a")?;
                    m.launch("ka", 100);
                }
                let _b = run.region("b")?;
                m.launch("kb", 50);
                Ok(())
            }
        }

        #[test]
        fn without_nvml_the_condition_columns_are_nan_with_one_warning() {
            let mock = Arc::new(Mock::default());
            let mut p = profiler(&mock);
            p.set_conditions(ProfilerConditions::unavailable("libnvidia-ml.so.1 not found"));
            let opts = BenchOptions {
                runs: 3,
                ..Default::default()
            };
            let raw = p.bench("g", &configs(2), &opts, body(mock.clone())).unwrap();
            for c in CONDITION_COLUMNS {
                assert_eq!(column(&raw, c).len(), raw.samples.len(), "{c}");
            }
            assert!(column(&raw, "SMClockMHz").iter().all(|v| num(v).is_nan()));
            assert!(column(&raw, "EnergyMilliJ").iter().all(|v| num(v).is_nan()));
            assert!(column(&raw, "ThermalWaitS").iter().all(|v| num(v) == 0.0));
            assert!(column(&raw, "ThrottleReasons")
                .iter()
                .all(|v| *v == ExtraValue::Missing));
            let nvml: Vec<_> = p.warnings().iter().filter(|w| w.contains("NVML")).collect();
            assert_eq!(nvml.len(), 1, "{:?}", p.warnings());
            p.bench("g2", &configs(1), &opts, body(mock.clone())).unwrap();
            assert_eq!(p.warnings().iter().filter(|w| w.contains("NVML")).count(), 1);
            // Processed: all-NaN columns stay single columns, ThrottledRuns is NaN.
            let processed = kprof_core::stats::aggregate(&raw, &Default::default());
            let row = &processed.rows[0];
            let tr = row.extras.iter().find(|(n, _)| n == "ThrottledRuns").unwrap();
            assert!(num(&tr.1).is_nan());
            // Off: no columns at all.
            let off = BenchOptions {
                conditions: false,
                ..opts
            };
            let raw = p.bench("g3", &configs(1), &off, body(mock.clone())).unwrap();
            assert!(!raw.extras.iter().any(|c| c.name == "SMClockMHz"));
        }

        /// Scripted headroom readings (the last one repeats) and counters of the reads. The
        /// source (polled by the background sampler thread) has constant readings, except the
        /// energy counter, and records the threads it is read on; `source_margin: None` makes the
        /// guard read the scripted sensor directly before every run.
        struct Fake {
            margins: Arc<Mutex<Vec<f64>>>,
            margin_reads: Arc<AtomicU64>,
            energy: Arc<AtomicU64>,
            now: Duration,
            source_margin: Option<f64>,
            source_threads: Arc<Mutex<Vec<std::thread::ThreadId>>>,
        }

        struct Sensor(Arc<Mutex<Vec<f64>>>, Arc<AtomicU64>);
        impl TemperatureSensor for Sensor {
            fn margin_c(&mut self) -> Option<f64> {
                self.1.fetch_add(1, Ordering::SeqCst);
                let mut m = self.0.lock().unwrap();
                Some(if m.len() > 1 { m.remove(0) } else { m[0] })
            }
            fn temperature_c(&mut self) -> Option<f64> {
                Some(60.0)
            }
        }

        struct Source(Arc<AtomicU64>, Option<f64>, Arc<Mutex<Vec<std::thread::ThreadId>>>);
        impl ConditionsSource for Source {
            fn sm_clock_mhz(&mut self) -> Option<f64> {
                self.2.lock().unwrap().push(std::thread::current().id());
                // Below 90% of 1980 MHz: every run is throttled.
                Some(1500.0)
            }
            fn margin_c(&mut self) -> Option<f64> {
                self.2.lock().unwrap().push(std::thread::current().id());
                self.1
            }
            fn mem_clock_mhz(&mut self) -> Option<f64> {
                Some(3201.0)
            }
            fn max_sm_clock_mhz(&mut self) -> Option<f64> {
                Some(1980.0)
            }
            fn throttle_reasons(&mut self) -> Option<u64> {
                Some(0)
            }
            fn temperature_c(&mut self) -> Option<f64> {
                Some(55.0)
            }
            fn power_mw(&mut self) -> Option<f64> {
                Some(300_000.0)
            }
            fn total_energy_mj(&mut self) -> Option<u64> {
                Some(self.0.fetch_add(250, Ordering::SeqCst))
            }
        }

        struct FakeClock(Duration);
        impl Clock for FakeClock {
            fn now(&self) -> Duration {
                self.0
            }
            fn sleep(&mut self, d: Duration) {
                self.0 += d;
            }
        }

        impl ConditionsProbe for Fake {
            fn sensor(&mut self) -> Option<BoxSensor> {
                Some(Box::new(Sensor(self.margins.clone(), self.margin_reads.clone())))
            }
            fn source(&mut self) -> Option<BoxSource> {
                Some(Box::new(Source(
                    self.energy.clone(),
                    self.source_margin,
                    self.source_threads.clone(),
                )))
            }
            fn clock(&mut self) -> BoxClock {
                Box::new(FakeClock(self.now))
            }
        }

        /// `body` with 2 ms of host time per run, so that the 1 ms sampler polls inside runs.
        fn slow_body(
            m: Arc<Mock>,
        ) -> impl FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            let mut inner = body(m);
            move |c, run| {
                std::thread::sleep(Duration::from_millis(2));
                inner(c, run)
            }
        }

        #[test]
        fn the_run_loop_reads_no_nvml_per_run_only_the_sampler_thread_polls() {
            let mock = Arc::new(Mock::default());
            let mut p = profiler(&mock);
            let reads = Arc::new(AtomicU64::new(0));
            let threads: Arc<Mutex<Vec<std::thread::ThreadId>>> = Arc::default();
            p.set_conditions(ProfilerConditions::with_probe(Box::new(Fake {
                margins: Arc::new(Mutex::new(vec![30.0])),
                margin_reads: reads.clone(),
                energy: Arc::new(AtomicU64::new(1000)),
                now: Duration::ZERO,
                source_margin: Some(30.0),
                source_threads: threads.clone(),
            })));
            p.conditions.set_poll_interval(Duration::from_millis(5));
            let opts = BenchOptions {
                runs: 20,
                warmup: 2,
                ..Default::default()
            };
            let raw = p.bench("g", &configs(3), &opts, body(mock.clone())).unwrap();
            assert_eq!(raw.samples.len(), 3 * 20 * 2);
            let me = std::thread::current().id();
            let polled = threads.lock().unwrap().clone();
            assert!(!polled.is_empty(), "the sampler thread polled");
            assert!(
                polled.iter().all(|t| *t != me),
                "a source read on the run loop's thread"
            );
            // The guard checked the sampler's margin before each of the 66 runs, never the device.
            assert_eq!(reads.load(Ordering::SeqCst), 0);
            assert!(column(&raw, "PowerW").iter().all(|v| num(v) == 300.0));
            // Between bench calls the sampler is paused; dropping the profiler stops it.
            std::thread::sleep(Duration::from_millis(10)); // a poll in progress ends
            let n = threads.lock().unwrap().len();
            std::thread::sleep(Duration::from_millis(30));
            assert_eq!(threads.lock().unwrap().len(), n, "polls while no bench call runs");
            drop(p);
        }

        #[test]
        fn the_thermal_guard_runs_before_every_run_and_its_wait_is_reported() {
            let mock = Arc::new(Mock::default());
            let mut p = profiler(&mock);
            let reads = Arc::new(AtomicU64::new(0));
            // Runs: warm-up (30), run 0 (30), run 1 (5: pause; polls 15, 15, 25: resume), run 2 (30).
            let margins = Arc::new(Mutex::new(vec![30.0, 30.0, 5.0, 15.0, 15.0, 25.0, 30.0]));
            p.set_conditions(ProfilerConditions::with_probe(Box::new(Fake {
                margins,
                margin_reads: reads.clone(),
                energy: Arc::new(AtomicU64::new(1000)),
                now: Duration::ZERO,
                source_margin: None,
                source_threads: Arc::default(),
            })));
            p.conditions.set_poll_interval(Duration::from_millis(1));
            let opts = BenchOptions {
                runs: 3,
                warmup: 1,
                ..Default::default()
            };
            let raw = p.bench("g", &configs(1), &opts, slow_body(mock.clone())).unwrap();
            // One headroom read per run (4 runs) plus 3 polls while cooling.
            assert_eq!(reads.load(Ordering::SeqCst), 4 + 3);
            let wait: Vec<(u32, f64)> = raw
                .samples
                .iter()
                .zip(column(&raw, "ThermalWaitS"))
                .map(|(s, v)| (s.run, num(v)))
                .collect();
            for (run, w) in wait {
                assert_eq!(w, if run == 1 { 1.5 } else { 0.0 }, "run {run}");
            }
            assert!(
                p.warnings().iter().any(|w| w.contains("waited 1.5 s")),
                "{:?}",
                p.warnings()
            );
            // The background sampler: readings of the samples around each run (their number
            // depends on timing; the values of this fake do not, except the energy).
            assert!(column(&raw, "PowerW").iter().all(|v| num(v) == 300.0));
            assert!(column(&raw, "EnergyMilliJ").iter().all(|v| {
                let e = num(v);
                e.is_nan() || e >= 0.0
            }));
            let throttled: Vec<f64> = column(&raw, "Throttled").iter().map(num).collect();
            assert_eq!(throttled, vec![1.0; 6]);
            let processed = kprof_core::stats::aggregate(&raw, &Default::default());
            for row in &processed.rows {
                let get = |n: &str| row.extras.iter().find(|(x, _)| x == n).map(|(_, v)| num(v)).unwrap();
                assert_eq!(get("ThrottledRuns"), 3.0);
                assert_eq!(get("SMClockMHz_Min"), 1500.0);
                assert_eq!(get("SMClockMHz_Max"), 1500.0);
                assert_eq!(get("TemperatureC_Avg"), 55.0);
            }
            // Off: the sensor is never read.
            let before = reads.load(Ordering::SeqCst);
            let off = BenchOptions {
                thermal: ThermalOptions::off(),
                ..opts
            };
            p.bench("g2", &configs(1), &off, body(mock.clone())).unwrap();
            assert_eq!(reads.load(Ordering::SeqCst), before);
            assert_eq!(off.thermal.mode, ThermalMode::Off);
        }

        #[test]
        fn collectors_are_called_at_each_scope_and_become_columns() {
            let mock = Arc::new(Mock::default());
            let mut p = profiler(&mock);
            let calls = Arc::new(Mutex::new(Vec::<String>::new()));
            let log = |tag: &'static str, calls: &Arc<Mutex<Vec<String>>>| {
                let calls = calls.clone();
                move |ctx: &crate::conditions::CollectContext<'_>| {
                    calls.lock().unwrap().push(tag.to_string());
                    match tag {
                        "once" => ExtraValue::Text("580.159.04".into()),
                        "config" => {
                            ExtraValue::Number(ctx.config.and_then(|c| c.get("n")).and_then(|v| v.as_f64()).unwrap())
                        }
                        "run" => ExtraValue::Number(ctx.run.unwrap() as f64 * 10.0),
                        _ => ExtraValue::Number(ctx.annotation.unwrap().len() as f64 + ctx.run.unwrap() as f64),
                    }
                }
            };
            let collectors = Collectors::new(vec![
                FnCollector::new("Driver", CollectionScope::Once, log("once", &calls)).boxed(),
                FnCollector::new("N2", CollectionScope::Config, log("config", &calls)).boxed(),
                FnCollector::new("RunX", CollectionScope::Run, log("run", &calls)).boxed(),
                FnCollector::new("Ann", CollectionScope::Annotation, log("annotation", &calls)).boxed(),
                FnCollector::fallible(
                    "Broken",
                    CollectionScope::Run,
                    |_: &crate::conditions::CollectContext<'_>| Err::<f64, _>("no sensor"),
                )
                .boxed(),
            ]);
            let opts = BenchOptions {
                runs: 3,
                warmup: 1,
                collectors: collectors.clone(),
                ..Default::default()
            };
            let raw = p.bench("g", &configs(2), &opts, body(mock.clone())).unwrap();
            let count = |t: &str| calls.lock().unwrap().iter().filter(|c| *c == t).count();
            assert_eq!(
                (count("once"), count("config"), count("run"), count("annotation")),
                (1, 2, 6, 12)
            );
            for (i, s) in raw.samples.iter().enumerate() {
                let region = &raw.series[s.series as usize].key.annotation;
                let n = raw.configs[raw.series[s.series as usize].key.config as usize]
                    .get("n")
                    .unwrap()
                    .as_f64()
                    .unwrap();
                assert_eq!(column(&raw, "Driver")[i], ExtraValue::Text("580.159.04".into()));
                assert_eq!(num(&column(&raw, "N2")[i]), n);
                assert_eq!(num(&column(&raw, "RunX")[i]), s.run as f64 * 10.0);
                assert_eq!(num(&column(&raw, "Ann")[i]), region.len() as f64 + s.run as f64);
                assert_eq!(column(&raw, "Broken")[i], ExtraValue::Missing);
            }
            assert_eq!(
                p.warnings().iter().filter(|w| w.contains("\"Broken\"")).count(),
                1,
                "{:?}",
                p.warnings()
            );
            let processed = kprof_core::stats::aggregate(&raw, &Default::default());
            let row = &processed.rows[0];
            let names: Vec<&str> = row.extras.iter().map(|(n, _)| n.as_str()).collect();
            for c in [
                "Driver", "N2_Avg", "RunX_Avg", "RunX_Std", "RunX_Min", "RunX_Max", "Ann_Avg",
            ] {
                assert!(names.contains(&c), "{c} not in {names:?}");
            }
            // The collectors are back in the options: a second call uses them again.
            assert_eq!(collectors.len(), 5);
            p.bench("h", &configs(1), &opts, body(mock.clone())).unwrap();
            assert_eq!(count("once"), 2);
            // Reserved names and parameter collisions are clear errors.
            for bad in ["AvgValue", "SMClockMHz", "n"] {
                let o = BenchOptions {
                    collectors: Collectors::new(vec![FnCollector::new(
                        bad,
                        CollectionScope::Run,
                        |_: &crate::conditions::CollectContext<'_>| 1.0,
                    )
                    .boxed()]),
                    ..Default::default()
                };
                let e = p
                    .bench("x", &configs(1), &o, body(mock.clone()))
                    .unwrap_err()
                    .to_string();
                assert!(e.contains(bad), "{e}");
            }
        }

        #[test]
        fn the_fingerprint_is_collected_once_and_written_next_to_the_raw_csv() {
            let dir = tempfile::tempdir().unwrap();
            let mock = Arc::new(Mock::default());
            let mut p = profiler(&mock);
            assert!(p.fingerprint().is_none());
            let opts = BenchOptions {
                runs: 2,
                output_prefix: Some(dir.path().to_path_buf()),
                ..Default::default()
            };
            p.bench("g", &configs(1), &opts, body(mock.clone())).unwrap();
            let csv = dir.path().join("g-raw.csv");
            assert!(csv.exists());
            let side = dir.path().join("g-raw.env.json");
            let fp = crate::conditions::Fingerprint::from_json(&std::fs::read_to_string(&side).unwrap()).unwrap();
            assert_eq!(Some(&fp), p.fingerprint());
            assert_eq!(fp.kprof_version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
            assert_eq!(fp.thermal_mode.as_deref(), Some("auto"));
            assert!(fp.hostname.is_some());
            assert_eq!(crate::conditions::Fingerprint::read_sidecar(&csv).unwrap(), fp);
        }
    }
}
