//! The timing pass of a run: the thermal guard and the GPU's rest, the cold-cache flush, the run
//! conditions, the closure itself and the synchronisation after it, each part's time added to the
//! process's cost (`counter_cost`). The backend times the regions: CUPTI's kernel records, the
//! CUDA events around each region, or, in an ncu child, NVTX ranges that Nsight Compute profiles.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use super::super::run::{RunInner, RunState, SpanRec};
use super::super::{closure_error, counter_cost, gpu_rest, CacheControl, Run, Span};
use super::{MeasurementPass, PassCx, RunAt, Workload};
use crate::error::EngineError;

/// The timing pass; the wire form of its spans is appended to `wire` for the next flush.
pub(in crate::runner) struct TimingPass<'w> {
    pub(in crate::runner) wire: &'w mut Vec<Span>,
}

/// What a timing pass gave: the regions, the closure's error (if any) as an engine error, the
/// run's window on the activity clock, and the CUDA graph launches it made.
pub(in crate::runner) struct TimingRun {
    pub(in crate::runner) spans: Vec<SpanRec>,
    pub(in crate::runner) failure: Option<EngineError>,
    pub(in crate::runner) window: (u64, u64),
    pub(in crate::runner) graph_launches: u64,
}

impl MeasurementPass for TimingPass<'_> {
    type Output = TimingRun;

    /// One run: cache flush, the closure, synchronise. Engine failures (and a cancellation) are
    /// `Err`.
    fn measure(&mut self, cx: &mut PassCx<'_>, at: RunAt<'_>, f: &mut Workload<'_>) -> Result<TimingRun, EngineError> {
        let run_start_ns = cx.backend.timestamp_ns();
        let graph_launches_before = cx.backend.graph_launches_seen();
        let (spans, failure) = one_run(cx, at, f, self.wire)?;
        crate::cancel::check()?;
        Ok(TimingRun {
            spans,
            failure,
            window: (run_start_ns, cx.backend.timestamp_ns()),
            graph_launches: cx.backend.graph_launches_seen() - graph_launches_before,
        })
    }
}

/// The key run index of the run `at`: warm-up runs get indices above every recorded run, so
/// their keys never collide.
fn key_run(at: RunAt<'_>) -> u64 {
    if at.step.warmup {
        at.opts.max_runs() as u64 + at.step.run as u64
    } else {
        at.step.run as u64
    }
}

/// Cache flush, the closure, synchronise: the spans and the closure's error.
fn one_run(
    cx: &mut PassCx<'_>,
    at: RunAt<'_>,
    f: &mut Workload<'_>,
    wire: &mut Vec<Span>,
) -> Result<(Vec<SpanRec>, Option<EngineError>), EngineError> {
    let t_guard = Instant::now();
    cx.conditions.thermal_guard()?;
    let guard_s = counter_cost::since(t_guard);
    // After long GPU work the GPU idles as long again, or the power cap slows what follows.
    gpu_rest::before_gpu_work();
    crate::cancel::check()?;
    let pass_start = std::time::Instant::now();
    if at.opts.cache == CacheControl::All {
        cx.backend.flush_l2(at.opts.flush_spec())?;
    }
    let l2_flush_s = counter_cost::since(pass_start);
    let t_before = Instant::now();
    cx.conditions
        .before_run(at.step.config, at.config, at.step.run, at.step.warmup)?;
    let mut conditions_s = guard_s + counter_cost::since(t_before);
    let state = Rc::new(RunState {
        backend: Arc::clone(cx.backend),
        call: at.call,
        config: at.step.config as u64,
        run: key_run(at),
        inner: RefCell::new(RunInner::default()),
        on_enter: cx
            .conditions
            .annotation_hook(at.step.config, at.config, at.step.run, at.step.warmup),
        flush_before_regions: (at.opts.cache == CacheControl::All).then(|| at.opts.flush_spec()),
        asked_counter_pass: Default::default(),
    });
    let mut run = Run {
        state: Rc::clone(&state),
        warmup: at.step.warmup,
        run_index: at.step.run,
        counter_pass: false,
        one_pass: false,
    };
    let t_closure = Instant::now();
    let result = crate::cancel::in_workload(|| f(at.config, &mut run));
    let closure_s = counter_cost::since(t_closure);
    drop(run);
    // A closure that times itself keeps its timing passes (`Run::is_counter_pass`).
    *cx.closure_asked_counter_pass |= state.asked_counter_pass.get();
    let (spans, misuse) = state.finish();
    let t_sync = Instant::now();
    cx.backend.synchronize()?;
    let sync_s = counter_cost::since(t_sync);
    let t_after = Instant::now();
    rest_after(cx, at, pass_start);
    cx.conditions.after_run(at.step.config, at.step.run, at.step.warmup);
    conditions_s += counter_cost::since(t_after);
    counter_cost::add(|c| {
        c.timing_runs += 1;
        c.run_l2_flush_s += l2_flush_s;
        c.run_conditions_s += conditions_s;
        c.run_closure_s += closure_s;
        c.run_sync_s += sync_s;
    });
    wire.extend(spans.iter().map(|s| Span {
        key: s.key,
        parent: s.parent.map(|p| spans[p].key),
        thread_id: s.thread_id,
        start_ns: s.start_ns,
        end_ns: s.end_ns.unwrap_or(s.start_ns),
        start_correlation_id: s.start_correlation_id,
        end_correlation_id: s.end_correlation_id,
    }));
    let failure = match result {
        Err(e) => Some(closure_error(at.name, at.config, at.step.run, e.as_ref())),
        Ok(()) if !misuse.is_empty() => Some(EngineError::RegionMisuse(misuse.join("; "))),
        Ok(()) => None,
    };
    Ok((spans, failure))
}

/// The rest the GPU earned by the pass that started at `pass_start` (`gpu_rest`).
fn rest_after(cx: &PassCx<'_>, at: RunAt<'_>, pass_start: Instant) {
    if at.step.warmup {
        gpu_rest::after_warmup();
    } else {
        // Whether NVML saw the power or thermal limits slow the GPU during the pass (unknown
        // counts as slowed): a long run that was slowed still rests (`gpu_rest`).
        let slowed = cx
            .conditions
            .gpu_slowed_between(pass_start, std::time::Instant::now())
            .unwrap_or(true);
        gpu_rest::after_timing_pass(slowed);
    }
}
