//! The counter pass of a recorded run (counter metrics, and durations from the counters) with
//! CUPTI's Range Profiler: the plan validated on the host before any GPU work ([`CounterPlan`]),
//! the counter backend and its session, the state of a bench call's counters, and the recording
//! of their values, mapped to regions through the run's timing pass or its configuration's
//! warm-up (`one_pass.rs`). The pass itself runs in `pass/counters.rs`; the replay modes, their
//! cost and their agreement with ncu: `docs/counters.md`.

use std::sync::{Arc, Mutex, OnceLock};

use kprof_core::model::DEFAULT_METRIC;

use super::counter_cost;
use super::l2_flush::is_flush_kernel;
use super::run::SpanRec;
use super::{Backend, BeforeEachKernel, BenchOptions, DurationSource, FlushSpec, KernelRun, CUDA_EVENTS_METRIC};
use crate::counters::range::{chip_name, profiler_deinitialize, profiler_initialize};
use crate::counters::{CountersError, CuptiLib, MetricsCatalog, RangeProfiler, RangeResult, ReplayMode};
use crate::error::EngineError;
use crate::loader::Libraries;

mod record;

pub(super) use record::{record_counters, RecordedRun};

/// Whether `m` is a hardware counter metric (anything but the timing tier's metrics).
pub fn is_counter_metric(m: &str) -> bool {
    m != DEFAULT_METRIC && m != CUDA_EVENTS_METRIC
}

/// A validated counter metric set: what the host API says about it.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterPlan {
    /// Chip the names were checked against (e.g. `GH100`).
    pub chip: String,
    /// Counter metric names, in the order given.
    pub metrics: Vec<String>,
    /// Their units in ncu's base spelling (`byte`, `%`, `ns`, ...): `cuptiProfilerHostGetMetricProperties`
    /// mapped by [`crate::counters::ncu_unit`].
    pub units: Vec<String>,
    /// Replay passes the set needs (`cuptiProfilerHostGetNumOfPasses`).
    pub passes: usize,
    /// How the passes are replayed.
    pub mode: ReplayMode,
}

impl CounterPlan {
    /// Validates `metrics` with the host API of `catalog`'s chip (no GPU work).
    pub fn new(catalog: &MetricsCatalog, metrics: &[String], mode: ReplayMode) -> Result<Self, CountersError> {
        let infos = catalog.validate(metrics)?;
        let passes = catalog.num_passes(metrics)?;
        Ok(CounterPlan {
            chip: catalog.chip().to_string(),
            metrics: infos.iter().map(|i| i.name.clone()).collect(),
            units: infos.iter().map(|i| i.properties.dim_unit.clone()).collect(),
            passes,
            mode,
        })
    }

    /// The plan of durations alone (`gpu__time_duration.sum`, in ns) on `chip`, with the pass
    /// count of the Range Profiler session that was opened for it: what [`CounterPlan::new`]
    /// gives for that metric (a test checks it on GH100) without the host catalog (about 0.03 s
    /// of the 0.11 s the seed sweep's first benchmark spent planning on the H200; the rest is
    /// CUPTI's profiler initialisation).
    pub fn for_durations(chip: &str, passes: usize, mode: ReplayMode) -> Self {
        CounterPlan {
            chip: chip.to_string(),
            metrics: vec![DEFAULT_METRIC.to_string()],
            units: vec!["ns".to_string()],
            passes,
            mode,
        }
    }

    /// One line for warnings/debug output.
    pub fn describe(&self) -> String {
        format!(
            "counter metrics {} on {}: {} replay pass(es) in {} replay per recorded run",
            self.metrics.join(", "),
            self.chip,
            self.passes,
            self.mode.cupti_name()
        )
    }
}

/// The last plan of every profiler, by the address of its backend (kept out of the `Profiler`
/// struct, which other work changes too).
static LAST_PLAN: Mutex<Vec<(usize, CounterPlan)>> = Mutex::new(Vec::new());

/// Opens and closes named ranges (user replay); [`crate::counters::UserRanges`] on the GPU.
pub(crate) use crate::sys::scoped::RangeSink;
/// The range sink of a counter pass.
pub(crate) type Sink<'a> = dyn RangeSink<Error = CountersError> + 'a;

impl RangeSink for crate::counters::UserRanges<'_> {
    type Error = CountersError;
    fn push(&mut self, name: &str) -> Result<(), CountersError> {
        crate::counters::UserRanges::push(self, name)
    }
    fn pop(&mut self) -> Result<(), CountersError> {
        crate::counters::UserRanges::pop(self)
    }
}

/// The counter side of a backend.
pub(crate) trait CounterBackend: Send + Sync {
    /// Validates the metric set for the device's chip, on the host (no GPU work).
    fn plan(&self, metrics: &[String], mode: ReplayMode) -> Result<CounterPlan, EngineError>;
    /// One collection: calls `workload` once (kernel replay) or once per pass (user replay) and
    /// returns the ranges (one per kernel, or one per pushed range).
    fn collect(
        &self,
        plan: &CounterPlan,
        max_ranges: usize,
        workload: &mut dyn FnMut(&mut Sink<'_>),
    ) -> Result<Vec<RangeResult>, EngineError>;
    /// Opens the Range Profiler session for `plan` now (it is reused by the next
    /// [`CounterBackend::collect`] with the same plan): the check that counters can be collected
    /// at all, before any recorded run.
    fn open(&self, _plan: &CounterPlan) -> Result<(), EngineError> {
        Ok(())
    }
    /// The plan of durations alone, with its session open ([`CounterPlan::for_durations`]); by
    /// default [`CounterBackend::plan`] then [`CounterBackend::open`].
    fn open_for_durations(&self, mode: ReplayMode) -> Result<CounterPlan, EngineError> {
        let plan = self.plan(&[DEFAULT_METRIC.to_string()], mode)?;
        self.open(&plan)?;
        Ok(plan)
    }
    /// Ends the Range Profiler session and gives the device's profiling resources back (called
    /// at the end of every benchmark that collected counters).
    fn release(&self) {}
    /// Disables the Range Profiler between benchmarks, keeping its configuration: the next
    /// collection enables it again.
    fn pause(&self) {}
}

// ------------------------------------------------------------------------------------------------
// GPU implementation
// ------------------------------------------------------------------------------------------------

/// The open Range Profiler session (used under the mutex, from the thread that runs the benchmark).
struct Session(RangeProfiler);

pub(super) struct GpuCounters {
    libs: &'static Libraries,
    catalogs: Mutex<Vec<MetricsCatalog>>,
    session: Mutex<Option<Session>>,
}

/// The process-wide counter backend (set on first use).
static GPU_COUNTERS: OnceLock<GpuCounters> = OnceLock::new();

/// The process-wide counter backend on the engine's libraries.
pub(super) fn gpu_counters(libs: &'static Libraries) -> &'static GpuCounters {
    GPU_COUNTERS.get_or_init(|| GpuCounters {
        libs,
        catalogs: Mutex::new(Vec::new()),
        session: Mutex::new(None),
    })
}

impl GpuCounters {
    fn lib(&self) -> Result<&'static CuptiLib, EngineError> {
        Ok(CuptiLib::load(&self.libs.cupti_path)?)
    }

    fn device(&self) -> Result<(usize, String), EngineError> {
        let lib = self.lib()?;
        self.libs.cuda.ensure_context()?;
        let ordinal = self.libs.cuda.current_device()? as usize;
        profiler_initialize(lib)?;
        Ok((ordinal, chip_name(lib, ordinal)?))
    }

    fn plan_inner(&self, metrics: &[String], mode: ReplayMode) -> Result<CounterPlan, EngineError> {
        let lib = self.lib()?;
        let (_, chip) = self.device()?;
        let mut cats = self.catalogs.lock().unwrap_or_else(|p| p.into_inner());
        if !cats.iter().any(|c| c.chip() == chip) {
            let t0 = std::time::Instant::now();
            cats.push(MetricsCatalog::with_lib(lib, &chip, None)?);
            counter_cost::add(|c| c.plan_catalog_s += counter_cost::since(t0));
        }
        let cat = cats.iter().find(|c| c.chip() == chip).expect("just added");
        Ok(CounterPlan::new(cat, metrics, mode)?)
    }

    fn open_inner(&self, plan: &CounterPlan) -> Result<(), EngineError> {
        let mut slot = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let reuse =
            matches!(&*slot, Some(Session(rp)) if rp.metrics() == plan.metrics.as_slice() && rp.mode() == plan.mode);
        if !reuse {
            // Every collection opens: the context, device and chip are only looked up for a new
            // session.
            let lib = self.lib()?;
            let ctx = self.libs.cuda.ensure_context()?;
            let (ordinal, _) = self.device()?;
            *slot = None; // disable the old session before enabling a new one
            let rp = RangeProfiler::new(lib, ctx as _, ordinal, &plan.metrics, plan.mode)?;
            let (config_s, enable_s) = (rp.config_s(), rp.enable_s());
            counter_cost::add(|c| {
                c.sessions += 1;
                c.session_config_s += config_s;
                c.session_enable_s += enable_s;
            });
            *slot = Some(Session(rp));
        }
        Ok(())
    }
}

impl CounterBackend for GpuCounters {
    fn plan(&self, metrics: &[String], mode: ReplayMode) -> Result<CounterPlan, EngineError> {
        let t0 = std::time::Instant::now();
        let planned = self.plan_inner(metrics, mode);
        counter_cost::add(|c| c.plan_s += counter_cost::since(t0));
        planned
    }

    fn open(&self, plan: &CounterPlan) -> Result<(), EngineError> {
        self.open_inner(plan)
    }

    /// The session checks the metric and counts its passes itself (a few ms): the host catalog
    /// is not needed for the duration alone.
    fn open_for_durations(&self, mode: ReplayMode) -> Result<CounterPlan, EngineError> {
        let t0 = std::time::Instant::now();
        let (_, chip) = self.device()?;
        counter_cost::add(|c| c.plan_s += counter_cost::since(t0));
        let provisional = CounterPlan::for_durations(&chip, 1, mode);
        self.open_inner(&provisional)?;
        let slot = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let passes = slot.as_ref().map_or(1, |Session(rp)| rp.passes());
        Ok(CounterPlan::for_durations(&chip, passes, mode))
    }

    fn collect(
        &self,
        plan: &CounterPlan,
        max_ranges: usize,
        workload: &mut dyn FnMut(&mut Sink<'_>),
    ) -> Result<Vec<RangeResult>, EngineError> {
        self.open(plan)?;
        let mut slot = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let Some(Session(rp)) = slot.as_mut() else {
            unreachable!("open() leaves a session")
        };
        let rec = rp.collect(max_ranges, |ur| workload(ur))?;
        let t = rec.timings;
        counter_cost::add(|c| {
            c.collections += 1;
            c.collect_setup_s += t.setup_s;
            c.collect_passes_s += t.passes_s;
            c.collect_start_s += t.start_s;
            c.collect_stop_s += t.stop_s;
            c.collect_decode_s += t.decode_s;
            c.collect_evaluate_s += t.evaluate_s;
        });
        Ok(rec.ranges)
    }

    /// Called when a profiler ends and before kprof starts Nsight Compute ([`release_counters`]),
    /// not after every benchmark: opening a session costs about 0.4 s on the H200 (host object,
    /// configuration image, profiler initialization; `truth_check`), which a
    /// sweep of several benchmarks paid each time.
    fn pause(&self) {
        if let Some(Session(rp)) = self.session.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            rp.pause();
        }
    }

    fn release(&self) {
        // Disabling the Range Profiler alone is not enough: while CUPTI's profiler stays
        // initialized, ncu in a child process fails with "a driver resource was unavailable"
        // (seen on the H200), so the profiler is deinitialized too.
        *self.session.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Ok(lib) = self.lib() {
            profiler_deinitialize(lib);
        }
    }
}

/// Disables this process's Range Profiler session, if one is open, keeping its configuration
/// for the next benchmark (which enables it again): the process runs as without it meanwhile.
pub fn pause_counters() {
    if let Some(g) = GPU_COUNTERS.get() {
        g.pause();
    }
}

/// Ends this process's Range Profiler session, if one is open, and deinitializes CUPTI's
/// profiler, so that Nsight Compute started from this process can profile (it cannot while the
/// profiler is initialized: "a driver resource was unavailable", seen on the H200).
pub fn release_counters() {
    if let Some(g) = GPU_COUNTERS.get() {
        if g.session.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            g.release();
        }
    }
}

/// Counter state of one bench call.
pub(super) struct CounterState {
    pub plan: CounterPlan,
    /// Kernel replay: counter-data image capacity (kernels per run).
    pub(super) capacity: usize,
    /// Whether kernels keep their activity records during counter passes
    /// ([`BenchOptions::counter_pass_records`], after its override).
    pub kernel_records: bool,
}

/// Ranges of a profiler's first counter-data image in kernel and application replay. A Range
/// Profiler session's first `cuptiRangeProfilerStart` costs about 0.7 ms of host time per range
/// of its image on top of 135 ms (H200, `truth_check firstpass cap=N`, 1 to 1025 ranges), later
/// ones microseconds; a workload with more kernels grows the image ×4 and runs its counter pass
/// again, once per profiler (in application replay on a new session, whose first `Start` sizes
/// what it can hold: `RangeProfiler::collect`).
pub(super) const FIRST_CAPACITY: usize = 64;
pub(super) const MAX_CAPACITY: usize = 1 << 16;

/// The ranges of a kernel- or application-replay counter pass's image: room for `kernels` (the
/// benchmark's kernel capacity, grown ×4 when a pass overflows it, or with graph launches the
/// ranges the timing pass's kernels will take if more) plus one range per CUDA graph launch of
/// the run's timing pass. Graph launches take ranges too, and a pass whose graph
/// launches overflow the image crashes the process inside CUPTI 13.0 (H200: 130
/// replays of a one-node graph in one region against an image of 64 ranges; 64 held), where
/// overflowing eager kernels are dropped and seen in the spare range. `None` past
/// [`MAX_CAPACITY`].
pub(super) fn pass_capacity(kernels: usize, graph_launches: u64) -> Option<usize> {
    let capacity = kernels.checked_add(usize::try_from(graph_launches).ok()?)?;
    (capacity <= MAX_CAPACITY).then_some(capacity)
}

/// What a counter pass gave for one run.
#[derive(Debug)]
pub(super) enum CounterRun {
    /// Kernel or application replay: the values of every profiled kernel, in launch order.
    PerKernel {
        /// Per kernel, the value of every metric.
        values: Vec<Vec<f64>>,
        /// The timing run's window `(start, end)` on the activity clock (its kernels outside every
        /// region started inside it).
        window: (u64, u64),
        /// Whether the L2 flush kernels were profiled too (application replay with a cold cache).
        flushes_profiled: bool,
        /// The regions the closure opened in the (last) pass, as a timing pass records them.
        spans: Vec<SpanRec>,
    },
    /// User replay: the values of every region, by name.
    PerRegion(Vec<(String, Vec<f64>)>),
    /// The closure failed in the counter pass (the message).
    Failed(String),
}

/// What an application-replay counter pass does before each kernel: with a cold cache an L2
/// flush (as Nsight Compute), with a warm one a wait and a rest when `rests_between_kernels`
/// (its run's timing pass was long enough to reach the power cap back to back:
/// [`gpu_rest::counter_pass_rests_between_kernels`]); nothing where the backend cannot act
/// before each kernel (the pass then flushes before its regions, and rests only after it).
pub(crate) fn before_each_kernel(
    app: bool,
    cold: bool,
    backend_can: bool,
    rests_between_kernels: bool,
    flush: FlushSpec,
) -> Option<BeforeEachKernel> {
    match (app && backend_can, cold) {
        (false, _) => None,
        (true, true) => Some(BeforeEachKernel::Flush(flush)),
        (true, false) => rests_between_kernels.then_some(BeforeEachKernel::Rest),
    }
}

/// The run's kernels outside every region that its counter pass profiled: the eager ones that
/// started in the run's `window` (e.g. input set-up), the L2 flush kernels only when the pass
/// flushed the same way (`flushes_profiled`).
pub(crate) fn profiled_outside(
    outside: &[KernelRun],
    (t0, t1): (u64, u64),
    flushes_profiled: bool,
) -> impl Iterator<Item = &KernelRun> {
    outside.iter().filter(move |k| {
        !k.graph && k.start_ns >= t0 && k.start_ns <= t1 && (flushes_profiled || !is_flush_kernel(&k.name))
    })
}

/// The distinct kernels of a run's regions in launch (start-time) order, and for every region the
/// positions of its kernels in that order (nested regions share their inner kernels).
pub(crate) fn kernel_order(regions: &[&[KernelRun]]) -> (usize, Vec<Vec<usize>>) {
    let mut all: Vec<(u64, u64, &str)> = regions
        .iter()
        .flat_map(|ks| ks.iter().map(|k| (k.start_ns, k.end_ns, k.name.as_str())))
        .collect();
    all.sort();
    all.dedup();
    let per_region = regions
        .iter()
        .map(|ks| {
            ks.iter()
                .map(|k| {
                    all.binary_search(&(k.start_ns, k.end_ns, k.name.as_str()))
                        .expect("every kernel is in the union")
                })
                .collect()
        })
        .collect();
    (all.len(), per_region)
}

/// The key of a profiler's last plan: the address of its backend.
fn plan_key(backend: &Arc<dyn Backend>) -> usize {
    Arc::as_ptr(backend) as *const () as usize
}

/// The last counter metric set validated by a bench call of the profiler over `backend` (chip,
/// units, pass count).
pub(super) fn last_plan(backend: &Arc<dyn Backend>) -> Option<CounterPlan> {
    let me = plan_key(backend);
    let plans = LAST_PLAN.lock().unwrap_or_else(|p| p.into_inner());
    plans.iter().find(|(k, _)| *k == me).map(|(_, p)| p.clone())
}

/// What preparing a bench call's counters uses of the profiler: its backend, its metric, the
/// counter-data image its passes start with, and its warnings.
pub(super) struct Prepare<'a> {
    pub(super) backend: &'a Arc<dyn Backend>,
    pub(super) metric: &'static str,
    pub(super) capacity: usize,
    pub(super) warnings: &'a mut Vec<String>,
}

/// Validates the counter metrics of `opts` on the host and resolves the duration source
/// ([`DurationSource::Auto`]: the counters when this profiler can collect them, else the
/// records, with one warning saying why); the state is `None` without counter metrics.
pub(super) fn prepare(
    p: Prepare<'_>,
    name: &str,
    opts: &BenchOptions,
) -> Result<(Option<CounterState>, DurationSource), EngineError> {
    let counted: Vec<String> = opts.metrics.iter().filter(|m| is_counter_metric(m)).cloned().collect();
    let mut duration = opts.duration_before_counters();
    // The duration-only plan that "auto" checked, reused when it is the whole metric set.
    let mut checked = None;
    if duration == DurationSource::Auto {
        duration = match counter_durations_available(&p, opts) {
            Ok(plan) => {
                checked = Some(plan);
                DurationSource::Counters
            }
            // A backend without counters (CUDA events, an ncu child) measures time its own way.
            Err(_) if p.backend.counters().is_none() => DurationSource::Records,
            Err(why) => {
                if p.metric == DEFAULT_METRIC {
                    p.warnings.push(format!(
                        "{name}: durations are CUPTI kernel records, not Nsight Compute's gpu__time_duration: the \
                         counters cannot be used here ({why}); see the DurationSource column"
                    ));
                }
                DurationSource::Records
            }
        };
    }
    let metrics: Vec<String> = match duration {
        DurationSource::Counters => std::iter::once(DEFAULT_METRIC.to_string()).chain(counted).collect(),
        _ => counted,
    };
    if metrics.is_empty() {
        return Ok((None, duration));
    }
    let kernel_records = opts.counter_pass_records;
    let backend = Arc::clone(p.backend);
    let cb = backend.counters().ok_or_else(|| {
        let what = match duration {
            DurationSource::Counters => "durations from the counters (duration source \"counters\")".to_string(),
            _ => format!("counter metrics {metrics:?}"),
        };
        EngineError::Unsupported(format!(
            "{what} need the CUPTI backend (Profiler::new); this profiler ({}) measures only time",
            p.metric
        ))
    })?;
    let plan = match checked.filter(|p| p.metrics == metrics) {
        Some(p) => p,
        None if metrics == [DEFAULT_METRIC] => cb.open_for_durations(opts.replay_mode)?,
        None => cb.plan(&metrics, opts.replay_mode)?,
    };
    // The session opens before any GPU work of the sweep: a failure (no counter permission)
    // ends the bench call here, and the first recorded run pays no set-up.
    cb.open(&plan)?;
    if metrics.len() > 1 || duration != DurationSource::Counters {
        // What the user's counter metrics cost (the duration alone is one pass, said in the docs).
        p.warnings.push(format!("{name}: {}", plan.describe()));
    }
    let me = plan_key(p.backend);
    let mut plans = LAST_PLAN.lock().unwrap_or_else(|p| p.into_inner());
    plans.retain(|(k, _)| *k != me);
    plans.push((me, plan.clone()));
    drop(plans);
    Ok((
        Some(CounterState {
            plan,
            capacity: p.capacity,
            kernel_records,
        }),
        duration,
    ))
}

/// Whether this profiler can take durations from the counters: it has a counter backend, the
/// host API accepts `gpu__time_duration.sum` for the device, and a Range Profiler session
/// opens (this is where missing counter permission or another profiler holding the counters
/// shows). `Ok`: the plan of `gpu__time_duration.sum` alone; `Err` says why not.
fn counter_durations_available(p: &Prepare<'_>, opts: &BenchOptions) -> Result<CounterPlan, String> {
    let cb = p
        .backend
        .counters()
        .ok_or_else(|| format!("this profiler ({}) has no hardware counters", p.metric))?;
    cb.open_for_durations(opts.replay_mode).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
