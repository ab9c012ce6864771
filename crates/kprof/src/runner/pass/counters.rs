//! The counter pass of a recorded run ([`CounterPass`]): the closure run again under CUPTI's Range
//! Profiler, with the kernel activity records off, in kernel, application or range replay
//! (`counter_pass.rs` says what each gives, how its values are mapped to regions and recorded),
//! and the unrecorded run that re-warms the cache after it ([`rewarm_after_counters`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::super::counter_pass::{before_each_kernel, pass_capacity, CounterRun, CounterState, Sink, MAX_CAPACITY};
use super::super::run::{RunInner, RunState, SpanRec};
use super::super::{counter_cost, gpu_rest, Backend, BeforeEachKernel, CacheControl, Collected, FlushSpec, Run, Span};
use super::{MeasurementPass, PassCx, RunAt, Workload};
use crate::counters::{CountersError, ReplayMode};
use crate::cupti::kernel_flush::{kernel_ranges, PassLaunch, PassLaunches};
use crate::error::EngineError;
use crate::sys::scoped::Lent;

/// The counter pass of one recorded run, with what its timing pass (or, for a run in one pass,
/// its configuration's map) tells: the regions it opened and the CUDA graph launches it made
/// (each takes a range of the counter-data image in kernel and application replay: see
/// [`pass_capacity`]), and its window on the activity clock.
pub(in crate::runner) struct CounterPass<'s> {
    pub(in crate::runner) st: &'s mut CounterState,
    pub(in crate::runner) regions: usize,
    pub(in crate::runner) graph_launches: u64,
    pub(in crate::runner) window: (u64, u64),
}

impl MeasurementPass for CounterPass<'_> {
    type Output = CounterRun;

    /// The pass, with the activity records of kernels off unless the call keeps them
    /// ([`CounterState::kernel_records`]).
    fn measure(&mut self, cx: &mut PassCx<'_>, at: RunAt<'_>, f: &mut Workload<'_>) -> Result<CounterRun, EngineError> {
        let backend = cx.backend;
        without_kernel_records(backend, self.st.kernel_records, || self.counter_run(cx, at, f))
    }
}

/// How a kernel- or application-replay pass runs: application replay or not, a cold cache or
/// not, the flush, the pass's key run index, and what it does before every kernel.
#[derive(Clone, Copy)]
struct Replay {
    app: bool,
    cold: bool,
    flush: FlushSpec,
    key_run: u64,
    each_kernel: Option<BeforeEachKernel>,
}

/// What one collection of a kernel- or application-replay pass gave: the ranges (or the
/// collection's error), the closure's failure, the launches seen before every kernel, and the
/// regions the closure opened in the last pass.
struct Collection {
    got: Result<Vec<crate::counters::RangeResult>, EngineError>,
    failure: Option<String>,
    launches: Option<Vec<PassLaunch>>,
    spans: Vec<SpanRec>,
}

/// Keys of counter passes never collide with timing or warm-up runs (nothing is attributed to
/// them anyway: the pass backend pushes no external id).
fn key_run(at: RunAt<'_>) -> u64 {
    at.opts.max_runs() as u64 + at.opts.warmup as u64 + at.step.run as u64
}

impl CounterPass<'_> {
    /// The counter pass of one recorded run (see the module docs of `counter_pass.rs`).
    fn counter_run(
        &mut self,
        cx: &mut PassCx<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<CounterRun, EngineError> {
        if cx.backend.counters().is_none() {
            return Err(EngineError::Unsupported("this backend has no counters".into()));
        }
        match self.st.plan.mode {
            ReplayMode::Kernel | ReplayMode::Application => self.per_kernel(cx, at, f),
            ReplayMode::User => self.per_region(cx, at, f),
        }
    }

    /// Kernel or application replay: the values of every profiled kernel; the image grows ×4
    /// and the pass runs again when it overflowed.
    fn per_kernel(
        &mut self,
        cx: &mut PassCx<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<CounterRun, EngineError> {
        let backend = Arc::clone(cx.backend);
        let cold = at.opts.cache == CacheControl::All;
        let flush = at.opts.flush_spec();
        loop {
            let app = self.st.plan.mode == ReplayMode::Application;
            // Application replay with a cold cache: the L2 flushed before every kernel, as
            // Nsight Compute does (`kernel_flush`), where the backend can; else before the
            // pass and every top-level region, as the timing pass. With a warm cache after a
            // long timing pass: a wait and a rest before every kernel (`gpu_rest`).
            let each_kernel = before_each_kernel(
                app,
                cold,
                backend.can_act_before_each_kernel(),
                gpu_rest::counter_pass_rests_between_kernels(),
                flush,
            );
            if cold && !app {
                backend.flush_l2(flush)?;
            }
            let capacity = match self.capacity(&backend, app, cold)? {
                Ok(capacity) => capacity,
                Err(msg) => return Ok(CounterRun::Failed(msg)),
            };
            let r = Replay {
                app,
                cold,
                flush,
                key_run: key_run(at),
                each_kernel,
            };
            let Collection {
                got,
                failure,
                launches,
                spans,
            } = self.collect(&backend, at, f, capacity, r);
            if let Some(msg) = failure {
                return Ok(CounterRun::Failed(msg));
            }
            match got {
                Err(EngineError::Counters(CountersError::DroppedRanges { .. })) if self.st.capacity < MAX_CAPACITY => {
                    self.st.capacity *= 4;
                    *cx.counter_capacity = (*cx.counter_capacity).max(self.st.capacity);
                }
                Err(e) => return Err(e),
                Ok(ranges) => {
                    let mut values: Vec<Vec<f64>> = ranges
                        .into_iter()
                        .map(|r| r.values.into_iter().map(|(_, v)| v).collect())
                        .collect();
                    if let Some(launches) = &launches {
                        keep_kernel_ranges(&mut values, launches, at.name, cx.warnings);
                    }
                    return Ok(CounterRun::PerKernel {
                        values,
                        window: self.window,
                        flushes_profiled: app && cold && each_kernel.is_none(),
                        spans,
                    });
                }
            }
        }
    }

    /// The ranges of the pass's image (`Ok`), or why the pass cannot run (`Err`: graph launches
    /// in kernel replay, or more than an image holds).
    fn capacity(
        &self,
        backend: &Arc<dyn Backend>,
        app: bool,
        cold: bool,
    ) -> Result<Result<usize, String>, EngineError> {
        let graph_launches = self.graph_launches;
        if !app && graph_launches > 0 {
            // Any graph launch in a kernel-replay pass crashed the process inside CUPTI
            // 13.0 (H200; one replay of a one-node graph among five adds).
            return Ok(Err(format!(
                "the run launched {graph_launches} CUDA graph(s), which CUPTI's kernel replay cannot profile \
                 (it crashed the process with CUPTI 13.0): use replay_mode=\"application\" (the \
                 default) for counters of runs that launch graphs"
            )));
        }
        // With graph launches the image must hold the whole pass (an overflow crashes
        // CUPTI): the timing pass's kernels, with the flush kernels before each of them
        // in a cold application-replay pass (two: instruction cache and L2).
        let kernel_room = if graph_launches > 0 {
            backend.synchronize()?;
            let per_kernel = if cold { 3 } else { 1 };
            let kernels = backend.kernels_started_in(self.window).unwrap_or(0);
            self.st.capacity.max(kernels.saturating_mul(per_kernel))
        } else {
            self.st.capacity
        };
        Ok(pass_capacity(kernel_room, graph_launches).ok_or_else(|| {
            format!(
                "the timing pass made {graph_launches} CUDA graph launches, more than a counter-data image \
                 holds ({MAX_CAPACITY} ranges): time this benchmark with duration_source=\"records\""
            )
        }))
    }

    /// One collection of a kernel- or application-replay pass into an image of `capacity` ranges.
    fn collect(
        &self,
        backend: &Arc<dyn Backend>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
        capacity: usize,
        r: Replay,
    ) -> Collection {
        let cb = backend.counters().expect("checked by counter_run");
        let mut failure = None;
        let mut launches: Option<Vec<PassLaunch>> = None;
        let mut spans = Vec::new();
        let got = cb.collect(&self.st.plan, capacity, &mut |_sink| {
            // The rest owed by the timing pass (or the previous counter pass) comes after
            // CUPTI's set-up of the pass, right before its GPU work (`gpu_rest`).
            gpu_rest::before_gpu_work();
            if let Some(what) = r.each_kernel {
                match each_kernel_pass(backend, at, r.key_run, f, what) {
                    Ok((l, s)) => {
                        launches.get_or_insert(l);
                        spans = s;
                    }
                    Err(msg) => {
                        failure.get_or_insert(msg);
                    }
                }
                pass_work_done(backend);
                return;
            }
            // Kernel replay: no flush inside the pass (CUPTI replays each kernel back to
            // back). Application replay: every pass flushes as the timing pass did (before
            // the run and every top-level region); those flush kernels are ranges too.
            if r.app && r.cold {
                if let Err(e) = backend.flush_l2(r.flush) {
                    failure.get_or_insert(format!("L2 flush before a counter pass failed: {e}"));
                }
            }
            let (closure_failure, s) = pass_closure(backend, at, r.key_run, f, (r.app && r.cold).then_some(r.flush));
            if let Some(msg) = closure_failure {
                failure.get_or_insert(msg);
            }
            spans = s;
            pass_work_done(backend);
        });
        Collection {
            got,
            failure,
            launches,
            spans,
        }
    }

    /// User (range) replay: one value per region, by name.
    fn per_region(
        &mut self,
        cx: &mut PassCx<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<CounterRun, EngineError> {
        let backend = Arc::clone(cx.backend);
        let cb = backend.counters().expect("checked by counter_run");
        let cold = at.opts.cache == CacheControl::All;
        let flush = at.opts.flush_spec();
        let key_run = key_run(at);
        let mut failure = None;
        let got = cb.collect(&self.st.plan, self.regions.max(1), &mut |sink| {
            gpu_rest::before_gpu_work();
            if cold {
                if let Err(e) = backend.flush_l2(flush) {
                    failure.get_or_insert(format!("L2 flush before a counter pass failed: {e}"));
                }
            }
            // A flush before every region, outside the user ranges, as in the timing pass.
            let (r, _) = with_sink(sink, || pass_closure(&backend, at, key_run, f, cold.then_some(flush)));
            if let Some(msg) = r {
                failure.get_or_insert(msg);
            }
            pass_work_done(&backend);
        });
        if let Some(msg) = failure {
            return Ok(CounterRun::Failed(msg));
        }
        Ok(CounterRun::PerRegion(
            got?.into_iter()
                .map(|r| (r.name, r.values.into_iter().map(|(_, v)| v).collect()))
                .collect(),
        ))
    }
}

/// Keeps the ranges of the kernels among a pass's `launches` (not those of the flushes or waits
/// before them); when the launches do not account for the ranges, warns once per benchmark and
/// keeps them all (the run's values then fail to match the timing pass and say so).
fn keep_kernel_ranges(values: &mut Vec<Vec<f64>>, launches: &[PassLaunch], name: &str, warnings: &mut Vec<String>) {
    match kernel_ranges(launches, values.len()) {
        Some(keep) => *values = keep.into_iter().map(|i| std::mem::take(&mut values[i])).collect(),
        None => {
            let head = format!(
                "{name}: a counter pass gave ranges that its kernel launches seen by CUPTI's \
                 callbacks (each after an L2 flush or a wait) do not account for"
            );
            if !warnings.iter().any(|w| w.starts_with(&head)) {
                warnings.push(format!(
                    "{head} ({} ranges, {} launches): a launch API kprof does not follow, or \
                     kernels of the driver's own",
                    values.len(),
                    launches.iter().filter(|l| **l == PassLaunch::Kernel).count()
                ));
            }
        }
    }
}

thread_local! {
    /// The range sink of the user-replay pass running on this thread.
    static SINK: Lent<Sink<'static>> = const { Lent::new() };
}

/// Lends `sink` to the regions of the closure `f` runs (through [`PassBackend`]).
fn with_sink<R>(sink: &mut Sink<'_>, f: impl FnOnce() -> R) -> R {
    SINK.with(|s| s.lend_sink(sink, f))
}

fn sink_call(f: impl FnOnce(&mut Sink<'static>) -> Result<(), CountersError>) -> Result<(), EngineError> {
    match SINK.with(|s| s.with(f)) {
        Some(r) => r.map_err(EngineError::from),
        None => Ok(()),
    }
}

/// The backend the closure sees in a counter pass: regions open user ranges (user replay) instead
/// of NVTX ranges and external ids, so the activity records of the pass are not attributed.
struct PassBackend {
    inner: Arc<dyn Backend>,
}

impl Backend for PassBackend {
    fn timestamp_ns(&self) -> u64 {
        self.inner.timestamp_ns()
    }
    fn thread_id(&self) -> u64 {
        self.inner.thread_id()
    }
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        self.inner.encode_key(call, config, run, region)
    }
    fn enter(&self, _key: u64, name: &str) -> Result<(), EngineError> {
        sink_call(|s| s.push(name))
    }
    fn exit(&self) -> Result<(), EngineError> {
        sink_call(|s| s.pop())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        self.inner.synchronize()
    }
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError> {
        self.inner.flush_l2(spec)
    }
    fn collect(&self, _spans: &[Span]) -> Result<Collected, EngineError> {
        Err(EngineError::Unsupported(
            "no activity collection inside a counter pass".into(),
        ))
    }
}

/// The end of a counter pass's GPU work: a synchronization, so that the work `gpu_rest` counts
/// is the pass's kernels, not CUPTI's decoding and evaluation of the pass on the host after it.
fn pass_work_done(backend: &Arc<dyn Backend>) {
    if backend.synchronize().is_ok() {
        gpu_rest::after_synchronize();
    }
}

/// Runs the benchmark closure once on a [`PassBackend`] for the run `at` (its regions keyed with
/// run number `key_run`); returns the failure, if any, and the regions it opened.
fn pass_closure(
    inner: &Arc<dyn Backend>,
    at: RunAt<'_>,
    key_run: u64,
    f: &mut Workload<'_>,
    flush_before_regions: Option<FlushSpec>,
) -> (Option<String>, Vec<SpanRec>) {
    let RunAt {
        name,
        call,
        step,
        config,
        ..
    } = at;
    let backend: Arc<dyn Backend> = Arc::new(PassBackend {
        inner: Arc::clone(inner),
    });
    let state = Rc::new(RunState {
        backend,
        call,
        config: step.config as u64,
        run: key_run,
        inner: RefCell::new(RunInner::default()),
        // Annotation collectors ran in the timing pass of this run.
        on_enter: None,
        flush_before_regions,
        asked_counter_pass: Default::default(),
    });
    let mut run = Run {
        state: Rc::clone(&state),
        warmup: false,
        run_index: step.run,
        counter_pass: true,
        one_pass: at.one_pass,
    };
    let result = crate::cancel::in_workload(|| f(config, &mut run));
    drop(run);
    let (spans, misuse) = state.finish();
    let failure = match result {
        Err(e) => Some(format!(
            "{name}: counter pass of run {} of config [{config}] failed: {e}",
            step.run
        )),
        Ok(()) if !misuse.is_empty() => Some(format!(
            "{name}: counter pass of run {} of config [{config}]: {}",
            step.run,
            misuse.join("; ")
        )),
        Ok(()) => None,
    };
    (failure, spans)
}

/// One application-replay counter pass with `what` done before every kernel (an L2 flush, or a
/// wait and the rest the GPU earned): the launches it made in order, or why it failed.
fn each_kernel_pass(
    backend: &Arc<dyn Backend>,
    at: RunAt<'_>,
    key_run: u64,
    f: &mut Workload<'_>,
    what: BeforeEachKernel,
) -> Result<(Vec<PassLaunch>, Vec<SpanRec>), String> {
    backend.before_each_kernel(what).map_err(|e| match what {
        BeforeEachKernel::Flush(_) => format!("could not flush the L2 before every kernel of the counter pass: {e}"),
        BeforeEachKernel::Rest => format!("could not wait for every kernel of the counter pass: {e}"),
    })?;
    let (closure_failure, spans) = pass_closure(backend, at, key_run, f, None);
    let PassLaunches { launches, failure } = backend.stop_before_each_kernel();
    match closure_failure.or(failure) {
        Some(msg) => Err(msg),
        None => Ok((launches, spans)),
    }
}

/// Runs `pass` (a counter pass) with the activity records of kernels off unless
/// `kernel_records` ([`CounterState::kernel_records`]), and turns them back on after it.
fn without_kernel_records<R>(
    backend: &Arc<dyn Backend>,
    kernel_records: bool,
    pass: impl FnOnce() -> Result<R, EngineError>,
) -> Result<R, EngineError> {
    let records_off = !kernel_records;
    let t0 = std::time::Instant::now();
    if records_off {
        // The timing pass's kernels end (and get their records) before recording stops.
        backend.synchronize()?;
        backend.kernel_records(false)?;
    }
    let mut switch_s = counter_cost::since(t0);
    let got = pass();
    if records_off {
        let t1 = std::time::Instant::now();
        backend.kernel_records(true)?;
        switch_s += counter_cost::since(t1);
    }
    counter_cost::add(|c| {
        c.counter_runs += 1;
        c.counter_run_s += counter_cost::since(t0);
        c.records_switch_s += switch_s;
    });
    got
}

/// With a warm cache, runs the closure once more after a counter pass, unrecorded: kernel
/// replay saves and restores memory and user replay re-runs the closure many times, which
/// leaves an L2 the next timing run would not see after a plain run of the closure (on the
/// H200 a warm 1 MB `x * 2` was slower than a cold one until this was added).
pub(in crate::runner) fn rewarm_after_counters(
    cx: &mut PassCx<'_>,
    at: RunAt<'_>,
    f: &mut Workload<'_>,
) -> Result<(), EngineError> {
    let t0 = std::time::Instant::now();
    let key_run = 2 * (at.opts.max_runs() as u64 + at.opts.warmup as u64) + at.step.run as u64;
    gpu_rest::before_gpu_work();
    if let (Some(msg), _) = pass_closure(cx.backend, at, key_run, f, None) {
        cx.warnings.push(format!("re-warming run after a counter pass: {msg}"));
    }
    let synced = cx.backend.synchronize();
    gpu_rest::after_synchronize();
    counter_cost::add(|c| c.rewarm_s += counter_cost::since(t0));
    synced
}
