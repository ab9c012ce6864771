//! The measurement passes of a run, behind one trait ([`MeasurementPass`]): the timing pass
//! (`pass/timing.rs`), the counter pass (`pass/counters.rs`) and a run in one pass, its counter
//! pass alone (`pass/one_pass.rs`). The [`Profiler`](super::Profiler) schedules the runs and picks
//! the passes of each; a pass runs the closure as it measures and says what it measured. What a
//! pass may use of the profiler comes in one [`PassCx`].

use std::sync::Arc;

use kprof_core::model::Config;

use super::{Backend, BenchOptions, Run, Step};
use crate::conditions::runtime::ProfilerConditions;
use crate::error::EngineError;

pub(super) mod counters;
pub(super) mod one_pass;
pub(super) mod timing;

/// The benchmark closure as the passes call it.
pub(super) type Workload<'f> =
    dyn FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + 'f;

/// One run of a bench call: the benchmark, the call's number, the step (configuration, run,
/// warm-up or not), the step's configuration and the call's options.
#[derive(Clone, Copy)]
pub(super) struct RunAt<'a> {
    pub(super) name: &'a str,
    pub(super) call: u64,
    pub(super) step: Step,
    pub(super) config: &'a Config,
    pub(super) opts: &'a BenchOptions,
    /// The run takes one pass, the counter pass (`one_pass`).
    pub(super) one_pass: bool,
}

/// What a pass may use of the profiler: the backend, the run conditions, the warnings, and the
/// little state the passes carry from one run to the next.
pub(super) struct PassCx<'a> {
    pub(super) backend: &'a Arc<dyn Backend>,
    pub(super) conditions: &'a mut ProfilerConditions,
    pub(super) warnings: &'a mut Vec<String>,
    /// Ranges the next kernel- or application-replay counter pass starts with
    /// (`Profiler::counter_capacity`): a pass that overflowed its image grows it.
    pub(super) counter_capacity: &'a mut usize,
    /// Set when the closure asked whether it runs in a counter pass (`Run::is_counter_pass`).
    pub(super) closure_asked_counter_pass: &'a mut bool,
}

/// One way of measuring a run: runs the closure as the pass needs (under the activity records,
/// the Range Profiler, ...) and returns what it measured, for the profiler to record at the
/// next flush.
pub(super) trait MeasurementPass {
    /// What the pass measured of the run.
    type Output;
    /// Measures the run `at` of the closure `f`.
    fn measure(
        &mut self,
        cx: &mut PassCx<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<Self::Output, EngineError>;
}
