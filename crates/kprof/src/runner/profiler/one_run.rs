//! One timing run of the closure: the thermal guard and the GPU's rest, the cold-cache flush, the
//! run conditions, the closure itself and the synchronisation after it, each part's time added
//! to the process's cost (`counter_cost`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use super::super::run::{RunInner, RunState, SpanRec};
use super::super::{closure_error, counter_cost, gpu_rest, CacheControl, Run, Span};
use super::{Profiler, RunAt};
use crate::error::EngineError;
use kprof_core::model::Config;

impl Profiler {
    /// One run: cache flush, the closure, synchronise. Returns the spans (their wire form is
    /// appended to `wire` for the next flush) and the closure's error (if any) as an engine
    /// error. Engine failures are `Err`.
    pub(super) fn one_run<F>(
        &mut self,
        at: RunAt,
        f: &mut F,
        wire: &mut Vec<Span>,
    ) -> Result<(Vec<SpanRec>, Option<EngineError>), EngineError>
    where
        F: FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
    {
        let t_guard = Instant::now();
        self.conditions.thermal_guard()?;
        let guard_s = counter_cost::since(t_guard);
        // After long GPU work the GPU idles as long again, or the power cap slows what follows.
        gpu_rest::before_gpu_work();
        crate::cancel::check()?;
        let pass_start = std::time::Instant::now();
        if at.opts.cache == CacheControl::All {
            self.backend.flush_l2(at.opts.flush_spec())?;
        }
        let l2_flush_s = counter_cost::since(pass_start);
        let t_before = Instant::now();
        self.conditions
            .before_run(at.step.config, at.config, at.step.run, at.step.warmup)?;
        let mut conditions_s = guard_s + counter_cost::since(t_before);
        // Warm-up runs get run indices above every recorded run, so their keys never collide.
        let key_run = if at.step.warmup {
            at.opts.max_runs() as u64 + at.step.run as u64
        } else {
            at.step.run as u64
        };
        let state = Rc::new(RunState {
            backend: Arc::clone(&self.backend),
            call: at.call,
            config: at.step.config as u64,
            run: key_run,
            inner: RefCell::new(RunInner::default()),
            on_enter: self
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
        self.closure_asked_counter_pass |= state.asked_counter_pass.get();
        let (spans, misuse) = state.finish();
        let t_sync = Instant::now();
        self.backend.synchronize()?;
        let sync_s = counter_cost::since(t_sync);
        let t_after = Instant::now();
        if at.step.warmup {
            gpu_rest::after_warmup();
        } else {
            // Whether NVML saw the power or thermal limits slow the GPU during the pass (unknown
            // counts as slowed): a long run that was slowed still rests (`gpu_rest`).
            let slowed = self
                .conditions
                .gpu_slowed_between(pass_start, std::time::Instant::now())
                .unwrap_or(true);
            gpu_rest::after_timing_pass(slowed);
        }
        self.conditions.after_run(at.step.config, at.step.run, at.step.warmup);
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
}
