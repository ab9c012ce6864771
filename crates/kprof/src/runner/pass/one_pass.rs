//! A recorded run in one pass ([`OnePass`]): its counter pass alone, its values mapped to regions
//! through its configuration's map of kernels (`one_pass.rs` says when a run may take one pass
//! and how the map is made; the [`Profiler`](super::super::Profiler) decides per run).

use super::super::counter_pass::{CounterRun, CounterState};
use super::super::one_pass::{mapped_kernels, KernelMap};
use super::super::run::SpanRec;
use super::super::Collected;
use super::counters::CounterPass;
use super::{MeasurementPass, PassCx, RunAt, Workload};
use crate::error::EngineError;

/// The counter pass of a recorded run in one pass, mapped through `map`.
pub(in crate::runner) struct OnePass<'s> {
    pub(in crate::runner) st: &'s mut CounterState,
    pub(in crate::runner) map: &'s KernelMap,
}

/// What one recorded run measured in one pass: the counter pass, with the regions it opened.
pub(in crate::runner) struct OnePassRun {
    /// The counter pass, its window set to the map's.
    pub(in crate::runner) counters: CounterRun,
    /// The regions of the pass (the map's when the pass failed before opening them).
    pub(in crate::runner) spans: Vec<SpanRec>,
    /// Their kernels, from the map.
    pub(in crate::runner) kernels: Collected,
}

impl MeasurementPass for OnePass<'_> {
    /// `None` when the pass does not match the map (another number of kernels or other
    /// regions), so the run is taken again with a timing pass.
    type Output = Option<OnePassRun>;

    /// The recorded run `at` in one pass, under the run conditions of a recorded run.
    fn measure(
        &mut self,
        cx: &mut PassCx<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<Option<OnePassRun>, EngineError> {
        let map = self.map;
        cx.conditions.thermal_guard()?;
        cx.conditions
            .before_run(at.step.config, at.config, at.step.run, false)?;
        let mut pass = CounterPass {
            st: self.st,
            regions: map.regions(),
            graph_launches: 0,
            window: map.window(),
        };
        let counters = pass.measure(cx, at, f);
        cx.conditions.after_run(at.step.config, at.step.run, false);
        match counters? {
            CounterRun::PerKernel {
                values,
                flushes_profiled,
                spans,
                ..
            } => {
                let Some(collected) = map.collected_for(&spans) else {
                    return Ok(None);
                };
                let expected = mapped_kernels(&collected, map.window(), flushes_profiled);
                if expected != values.len() {
                    return Ok(None);
                }
                Ok(Some(OnePassRun {
                    counters: CounterRun::PerKernel {
                        values,
                        window: map.window(),
                        flushes_profiled,
                        spans: Vec::new(),
                    },
                    spans,
                    kernels: collected,
                }))
            }
            failed @ CounterRun::Failed(_) => Ok(Some(OnePassRun {
                counters: failed,
                spans: map.spans(),
                kernels: Collected::default(),
            })),
            CounterRun::PerRegion(_) => Ok(None),
        }
    }
}
