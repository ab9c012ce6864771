//! Unit tests of the run loop without a GPU: the scheduler, option validation, and
//! [`Profiler::bench`] over a mock backend (regions, failures, adaptive stopping). Replays of
//! recorded H200 activity are in `tests/replay.rs`, batched flushing in `tests/batching.rs`, run
//! conditions in `tests/conditions.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kprof_core::model::{DeviceInfo, ExtraValue, DEFAULT_METRIC};

use super::profiler::PROFILER_ACTIVE;
use super::*;
use crate::conditions::runtime::{Collectors, ThermalOptions};
use crate::sys::loader::LoadError;

mod batching;
mod cancel;
mod conditions;
mod replay;

/// Default options but `runs` runs after `warmup` warm-up runs.
pub(super) fn runs_and_warmup(runs: u32, warmup: u32) -> BenchOptions {
    BenchOptions {
        runs,
        warmup,
        ..Default::default()
    }
}

/// Adaptive stopping: 3 to 20 runs, until the CI half-width is within 1% of the mean.
fn ci_target_policy() -> StoppingPolicy {
    StoppingPolicy {
        min_runs: 3,
        max_runs: 20,
        target_rel_ci_half_width: Some(0.01),
        ..StoppingPolicy::fixed(20)
    }
}

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
    /// The flush specs asked for, in order.
    flush_specs: Mutex<Vec<FlushSpec>>,
    syncs: AtomicU64,
    /// Flushes (`collect` calls) and the spans each was given.
    collects: AtomicU64,
    spans_per_collect: Mutex<Vec<usize>>,
    /// When non-zero, the synchronisation with this number (1-based) fails.
    fail_sync_at: AtomicU64,
    names: Mutex<Vec<String>>,
    /// `set_idle` calls, with the number of kernels launched before each.
    idle_calls: Mutex<Vec<(bool, usize)>>,
    launched: AtomicU64,
    /// The last launch-order number given (`correlation_mark`), and the spans every flush got.
    marks: std::sync::atomic::AtomicU32,
    spans_seen: Mutex<Vec<Span>>,
    /// What each flush reports as attributed by launch order across threads.
    ambiguous: AtomicU64,
    /// What each flush reports as benchmark calls that stopped holding the stream (CUDA-events
    /// backend).
    hold_dropped: AtomicU64,
    /// The numbered call gets no id (`correlation_mark` gives `Some(0)`).
    marks_fail: std::sync::atomic::AtomicBool,
}

impl Mock {
    fn launch(&self, name: &str, dur: u64) {
        self.launched.fetch_add(1, Ordering::SeqCst);
        let t = self.clock.fetch_add(dur + 10, Ordering::SeqCst);
        self.run_kernel(KernelRun {
            device: 0,
            stream: 0,
            graph: false,
            name: name.to_string(),
            demangled: Some(format!("{name}()")),
            start_ns: t,
            end_ns: t + dur,
        });
    }

    /// A CUDA graph launch traced as a whole (a graph record), `dur` ns long.
    fn launch_graph(&self, name: &str, dur: u64) {
        let t = self.clock.fetch_add(dur + 10, Ordering::SeqCst);
        self.run_kernel(KernelRun {
            device: 0,
            stream: 0,
            graph: true,
            name: name.to_string(),
            demangled: None,
            start_ns: t,
            end_ns: t + dur,
        });
    }

    /// A kernel record without timestamps, as serial tracing gives a CUDA-graph node.
    fn launch_untimed(&self, name: &str) {
        self.run_kernel(KernelRun {
            device: 0,
            stream: 0,
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
    mock_clock_thread_and_keys!();
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
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError> {
        self.flush_specs.lock().unwrap().push(spec);
        self.l2_flushes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn set_idle(&self, idle: bool) -> Result<(), EngineError> {
        let n = self.launched.load(Ordering::SeqCst) as usize;
        self.idle_calls.lock().unwrap().push((idle, n));
        Ok(())
    }
    fn correlation_mark(&self) -> Option<u32> {
        if self.marks_fail.load(Ordering::SeqCst) {
            return Some(0);
        }
        Some(self.marks.fetch_add(1, Ordering::SeqCst) + 1)
    }
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError> {
        self.collects.fetch_add(1, Ordering::SeqCst);
        self.spans_per_collect.lock().unwrap().push(spans.len());
        self.spans_seen.lock().unwrap().extend_from_slice(spans);
        let mut out = Collected {
            ambiguous: self.ambiguous.load(Ordering::SeqCst) as usize,
            hold_dropped: self.hold_dropped.load(Ordering::SeqCst) as usize,
            ..Collected::default()
        };
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

/// A mock backend and a profiler on it.
fn mock_profiler() -> (Arc<Mock>, Profiler) {
    let mock = Arc::new(Mock::default());
    let prof = profiler(&mock);
    (mock, prof)
}

/// Three runs with the default warm-up, conditions off.
fn three_runs() -> BenchOptions {
    BenchOptions {
        runs: 3,
        conditions: false,
        ..Default::default()
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

/// The profiler's warnings that contain `phrase`.
pub(super) fn warnings_with<'a>(prof: &'a Profiler, phrase: &str) -> Vec<&'a String> {
    prof.warnings().iter().filter(|w| w.contains(phrase)).collect()
}

/// Asserts that one of the profiler's warnings contains `phrase`.
#[track_caller]
pub(super) fn assert_warned(prof: &Profiler, phrase: &str) {
    assert!(
        !warnings_with(prof, phrase).is_empty(),
        "no warning with {phrase:?}: {:?}",
        prof.warnings()
    );
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
fn kernels_are_traced_only_while_a_benchmark_runs_even_when_it_fails() {
    let (mock, mut prof) = mock_profiler();
    let m = mock.clone();
    let opts = runs_and_warmup(2, 0);
    prof.bench("a", &[], &opts, |_, run| {
        run.annotate("r", |_| m.launch("k", 5))?;
        Ok(())
    })
    .unwrap();
    // Traced from before the first launch to after the last.
    assert_eq!(*mock.idle_calls.lock().unwrap(), vec![(false, 0), (true, 2)]);
    let m = mock.clone();
    let failing = prof.bench("b", &[], &opts, |_, run| {
        run.annotate("r", |_| m.launch("k", 5))?;
        Err("the closure failed".into())
    });
    assert!(failing.is_err());
    assert_eq!(mock.idle_calls.lock().unwrap().last(), Some(&(true, 3)));
}

#[test]
fn regions_carry_launch_order_numbers_taken_inside_their_open_and_close() {
    let (mock, mut prof) = mock_profiler();
    let (m, m2) = (mock.clone(), mock.clone());
    prof.bench("nested", &[], &runs_and_warmup(1, 0), |_, run| {
        run.annotate("outer", |run| run.annotate("inner", |_| m.launch("k", 5)).map(|_| ()))??;
        Ok(())
    })
    .unwrap();
    let spans = mock.spans_seen.lock().unwrap().clone();
    let [outer, inner] = spans.as_slice() else {
        panic!("{spans:?}")
    };
    assert_eq!(inner.parent, Some(outer.key));
    // The outer region opens first and closes last: its numbers enclose the inner region's.
    let order = [
        outer.start_correlation_id,
        inner.start_correlation_id,
        inner.end_correlation_id,
        outer.end_correlation_id,
    ];
    assert_eq!(order, [1, 2, 3, 4]);
    // A numbered call without an id: the region's numbers enclose nothing (not every launch before
    // its end, as an opening number of 0 would).
    mock.marks_fail.store(true, Ordering::SeqCst);
    mock.spans_seen.lock().unwrap().clear();
    prof.bench("unnumbered", &[], &runs_and_warmup(1, 0), |_, run| {
        run.annotate("r", |_| m2.launch("k", 5))?;
        Ok(())
    })
    .unwrap();
    let spans = mock.spans_seen.lock().unwrap().clone();
    assert_eq!(
        spans
            .iter()
            .map(|s| (s.start_correlation_id, s.end_correlation_id))
            .collect::<Vec<_>>(),
        [(u32::MAX, 0)]
    );
}

#[test]
fn kernels_of_regions_of_two_threads_open_at_once_give_one_warning_naming_the_records_attribution() {
    let mock = Arc::new(Mock::default());
    mock.ambiguous.store(2, Ordering::SeqCst);
    let mut prof = profiler(&mock);
    let m = mock.clone();
    prof.bench("threads", &[], &runs_and_warmup(3, 0), |_, run| {
        run.annotate("r", |_| m.launch("k", 5))?;
        Ok(())
    })
    .unwrap();
    let w = warnings_with(&prof, "more than one thread");
    assert_eq!(w.len(), 1, "{:?}", prof.warnings());
    assert!(
        w[0].starts_with("threads: 2 kernel(s)") && w[0].contains("attribution='records'"),
        "{}",
        w[0]
    );
}

#[test]
fn a_dropped_stream_hold_gives_one_warning_per_benchmark() {
    let mock = Arc::new(Mock::default());
    mock.hold_dropped.store(1, Ordering::SeqCst);
    let mut prof = profiler(&mock);
    let m = mock.clone();
    for name in ["syncs", "syncs-again"] {
        prof.bench(name, &[], &runs_and_warmup(3, 1), |_, run| {
            run.annotate("r", |_| m.launch("k", 5))?;
            Ok(())
        })
        .unwrap();
    }
    let w = warnings_with(&prof, "held the stream");
    assert_eq!(w.len(), 2, "one per benchmark: {:?}", prof.warnings());
    assert!(
        w[0].starts_with("syncs: ") && w[0].contains("20 ms") && w[0].contains("launch gaps"),
        "{}",
        w[0]
    );
}

#[test]
fn graph_regions_under_cupti_give_one_note_per_profiler_naming_the_cuda_events_backend() {
    let (mock, mut prof) = mock_profiler();
    let m = mock.clone();
    let opts = three_runs();
    prof.bench("eager", &[], &opts, |_, run| {
        run.annotate("r", |_| m.launch("k", 5))?;
        Ok(())
    })
    .unwrap();
    // "slows graphs": the note, and the warning about graphs instantiated before the session.
    assert!(
        warnings_with(&prof, "slows graphs").is_empty(),
        "no graph, no note: {:?}",
        prof.warnings()
    );
    for name in ["graph", "graph-again"] {
        let raw = prof
            .bench(name, &[], &opts, |_, run| {
                run.annotate("g", |_| m.launch_graph("cuda-graph:1", 200))?;
                Ok(())
            })
            .unwrap();
        assert_eq!(values(&raw, "g", 0), vec![200.0; 3]);
    }
    let w = warnings_with(&prof, "slows graphs");
    assert_eq!(w.len(), 1, "once per profiler: {:?}", prof.warnings());
    assert!(
        w[0].starts_with("graph: ") && w[0].contains("backend='cuda-events'"),
        "{}",
        w[0]
    );
    // This backend measured no start overhead of a graph launch: the note says it is left out.
    assert!(
        w[0].contains("could not be measured and is left out of the spans"),
        "{}",
        w[0]
    );
}

#[test]
fn untimed_graph_kernels_give_one_warning_per_benchmark_naming_the_concurrent_mode() {
    let (mock, mut prof) = mock_profiler();
    let m = mock.clone();
    let opts = three_runs();
    let raw = prof
        .bench("graph", &[], &opts, |_, run| {
            let _r = run.region("g")?;
            m.launch("node0", 100);
            m.launch_untimed("node1");
            Ok(())
        })
        .unwrap();
    assert_eq!(values(&raw, "g", 0), vec![100.0; 3]);
    let w = warnings_with(&prof, "without timestamps");
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
    assert!(
        matches!(e, EngineError::Load(LoadError::LibraryNotFound { .. })),
        "{msg}"
    );
    assert!(msg.contains("libcuda"), "{msg}");
    // The slot is free again after a failed start.
    assert!(!PROFILER_ACTIVE.load(Ordering::SeqCst));
    // The CUDA-events fallback needs the driver too, and says so the same way.
    let e = Profiler::with_cuda_events().unwrap_err();
    assert!(
        matches!(e, EngineError::Load(LoadError::LibraryNotFound { .. })) && e.to_string().contains("libcuda"),
        "{e}"
    );
    assert!(!PROFILER_ACTIVE.load(Ordering::SeqCst));
}

#[test]
fn bench_sums_kernels_keeps_breakdown_and_flags_empty_regions() {
    let (mock, mut p) = mock_profiler();
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
fn every_flush_of_a_bench_call_uses_its_l2_flush_options() {
    let (mock, mut p) = mock_profiler();
    let m = mock.clone();
    let opts = BenchOptions {
        runs: 1,
        warmup: 0,
        l2_flush: crate::choices::L2Flush::Write,
        l2_flush_bytes: Some(1 << 30),
        ..Default::default()
    };
    p.bench("flush", &[], &opts, |_, run| {
        run.annotate("a", |_| m.launch("k", 1)).map_err(Into::into)
    })
    .unwrap();
    let want = FlushSpec {
        method: crate::choices::L2Flush::Write,
        bytes: Some(1 << 30),
    };
    // KPROF_L2_FLUSH / KPROF_L2_FLUSH_BYTES are not set in the test environment.
    assert_eq!(*mock.flush_specs.lock().unwrap(), vec![want, want]);
}

#[test]
fn nested_regions_are_inclusive() {
    let (mock, mut p) = mock_profiler();
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
    let (_mock, mut p) = mock_profiler();
    let opts = runs_and_warmup(1, 0);
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
    let (mock, mut p) = mock_profiler();
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
    assert_warned(&p, "out of memory");

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
    let (mock, mut p) = mock_profiler();
    let m = mock.clone();
    let policy = ci_target_policy();
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
    // The progress total follows the policy: 2 x 20 at first, then 3 + 20
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
        device: 0,
        stream: 0,
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
        device: 0,
        stream: 0,
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
    let (_mock, mut p) = mock_profiler();
    let c = Config::new().with("n", 1);
    let e = p
        .bench("d", &[c.clone(), c], &BenchOptions::default(), |_, _| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("listed twice"), "{e}");
}

#[test]
fn raw_csv_paths() {
    assert_eq!(raw_csv_path(Path::new("out/"), "mm"), PathBuf::from("out/mm-raw.csv"));
    assert_eq!(
        raw_csv_path(Path::new("/nonexistent/run1_"), "mm"),
        PathBuf::from("/nonexistent/run1_mm-raw.csv")
    );
}

/// The last bench call's timeline: every recorded run's regions and their kernels (warm-ups
/// left out), on the backend's clock, each kernel inside its region; a new bench call starts a
/// new timeline.
#[test]
fn the_timeline_holds_each_recorded_runs_regions_and_kernels() {
    let (mock, mut prof) = mock_profiler();
    let m = mock.clone();
    prof.bench("t", &configs(2), &runs_and_warmup(3, 1), |_, run| {
        run.annotate("outer", |run| {
            m.launch("k1", 5);
            run.annotate("inner", |_| m.launch("k2", 7))
        })??;
        Ok(())
    })
    .unwrap();
    let t = prof.take_timeline();
    assert_eq!(t.regions.len(), 2 * 3 * 2, "{t:?}");
    // Inclusive nesting: outer has k1 and k2, inner k2.
    assert_eq!(t.kernels.len(), 2 * 3 * 3, "{t:?}");
    for k in &t.kernels {
        let r = t
            .regions
            .iter()
            .find(|r| r.name == k.region && r.config == k.config && r.run == k.run)
            .unwrap();
        assert!(r.start_ns <= k.start_ns && k.end_ns <= r.end_ns, "{k:?} outside {r:?}");
    }
    let configs_seen: std::collections::BTreeSet<&str> = t.regions.iter().map(|r| r.config.as_str()).collect();
    assert_eq!(configs_seen.len(), 2);
    assert!(t.regions.iter().all(|r| r.run < 3));
    assert!(prof.take_timeline().regions.is_empty(), "taken");
    let m = mock.clone();
    prof.bench("u", &[], &runs_and_warmup(1, 0), |_, run| {
        run.annotate("r", |_| m.launch("k", 5))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(prof.take_timeline().kernels.len(), 1);
}
