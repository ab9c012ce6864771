//! The [`Profiler`] and its run loop: a bench call ([`Profiler::bench`]) runs the steps of the
//! scheduler, flushes and attributes batches of runs ([`FlushPolicy`]), and records each run's
//! samples.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use kprof_core::io::trace::Timeline;
use kprof_core::model::{Config, DeviceInfo, ExtraValue, RawResults, DEFAULT_METRIC};

use super::pass::counters::{rewarm_after_counters, CounterPass};
use super::pass::one_pass::{OnePass, OnePassRun};
use super::pass::timing::{TimingPass, TimingRun};
use super::pass::{MeasurementPass, PassCx, RunAt, Workload};
use super::sink::SampleSink;
use super::{counter_cost, counter_pass, events, gpu};
use super::{
    invalid_option, write_raw, Backend, BenchOptions, CacheControl, DurationSource, FlushPolicy, Run, SampleSource,
    CUDA_EVENTS_METRIC,
};
use crate::choices::TraceOptions;
use crate::conditions::runtime::ProfilerConditions;
use crate::error::EngineError;

mod batch_warnings;
mod record;
mod sweep;

use batch_warnings::BatchWarnings;
use record::Recorder;
use sweep::{MapRefresh, PendingRun, Sweep};

pub(super) static PROFILER_ACTIVE: AtomicBool = AtomicBool::new(false);

/// The profiler: owns the CUPTI activity session. One per process.
pub struct Profiler {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) device: DeviceInfo,
    /// Constant extra columns of every sample (device ordinal, versions).
    pub(super) extras: Vec<(String, ExtraValue)>,
    pub(super) next_call: u64,
    pub(super) warnings: Vec<String>,
    pub(super) unattributed: u64,
    /// Activity flushes of all bench calls so far.
    pub(super) flushes: u64,
    pub(super) flush_policy: FlushPolicy,
    /// Whether this instance holds the process-wide slot (the mock backends in tests do not).
    pub(super) holds_slot: bool,
    /// Whether a benchmark opened the backend's Range Profiler session (given back on drop).
    pub(super) counters_used: bool,
    /// The metric the samples carry: [`DEFAULT_METRIC`] from CUPTI kernel records, or
    /// [`CUDA_EVENTS_METRIC`] from the CUDA-events fallback.
    pub(super) metric: &'static str,
    /// NVML, the monitored device, the fingerprint, and the current bench call's guard,
    /// sampler and collectors.
    pub(super) conditions: ProfilerConditions,
    /// The current bench call's `DurationSource` column: `counters`, `records` or `cuda-events`
    /// (the resolved [`DurationSource`]).
    pub(super) duration_source: SampleSource,
    /// Ranges the next kernel- or application-replay counter pass starts with: the largest
    /// counter-data image a benchmark of this profiler needed so far, so that a later benchmark
    /// does not grow it again (see `counter_pass`).
    pub(super) counter_capacity: usize,
    /// Whether the note that CUPTI slows the CUDA graphs it times was given (once per profiler).
    pub(super) warned_graphs_under_cupti: bool,
    /// The current bench call's closure asked whether it runs in a counter pass: it times
    /// itself, so its recorded runs keep their timing pass (`one_pass`).
    pub(super) closure_asked_counter_pass: bool,
    /// The last bench call's timeline (kernel records and regions; not with CUDA events).
    pub(super) timeline: Timeline,
}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler")
            .field("device", &self.device)
            .field("extras", &self.extras)
            .finish_non_exhaustive()
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if self.counters_used {
            // Give the device's profiling resources back, so another tool (Nsight Compute, a
            // second profiler) can use them.
            if let Some(cb) = self.backend.counters() {
                cb.release();
            }
        }
        if self.holds_slot {
            PROFILER_ACTIVE.store(false, Ordering::SeqCst);
        }
    }
}

impl Profiler {
    /// Loads the CUDA driver and CUPTI, makes sure a CUDA context is current (retaining device
    /// 0's primary context when none is), and starts the CUPTI activity session. One profiler
    /// per process: a second `new()` while one is alive is an error. Kernels and CUDA graphs are
    /// traced as the default [`TraceOptions`] say (under their environment overrides).
    pub fn new() -> Result<Profiler, EngineError> {
        Self::with_trace(TraceOptions::default())
    }

    /// As [`Profiler::new`], with the activity session tracing kernels and CUDA graphs as `trace`
    /// says (`KPROF_KERNEL_TRACE` and `KPROF_GRAPH_TRACE`, when set, override it: see
    /// [`crate::overrides`]). These are per-process settings: they hold for this profiler's
    /// lifetime.
    pub fn with_trace(trace: TraceOptions) -> Result<Profiler, EngineError> {
        if super::ncu_child::is_ncu_child() {
            // Under ncu (relaunch mode): no CUPTI session, NVTX ranges only (runner/ncu_child.rs).
            return Self::for_ncu_child();
        }
        Self::claim_slot(|| {
            let (backend, device, extras) = gpu::GpuBackend::start(trace)?;
            Ok(Self::assemble(
                Arc::new(backend),
                device,
                extras,
                true,
                DEFAULT_METRIC,
                ProfilerConditions::new(),
            ))
        })
    }

    /// Takes the process-wide profiler slot, builds the profiler, and gives the slot back when
    /// building fails.
    fn claim_slot(build: impl FnOnce() -> Result<Profiler, EngineError>) -> Result<Profiler, EngineError> {
        if PROFILER_ACTIVE.swap(true, Ordering::SeqCst) {
            return Err(EngineError::SessionActive);
        }
        build().inspect_err(|_| PROFILER_ACTIVE.store(false, Ordering::SeqCst))
    }

    /// A profiler over `backend`, with empty counters and the default flush policy.
    fn assemble(
        backend: Arc<dyn Backend>,
        device: DeviceInfo,
        extras: Vec<(String, ExtraValue)>,
        holds_slot: bool,
        metric: &'static str,
        conditions: ProfilerConditions,
    ) -> Profiler {
        Profiler {
            backend,
            device,
            extras,
            next_call: 1,
            warnings: Vec::new(),
            unattributed: 0,
            flushes: 0,
            flush_policy: FlushPolicy::default(),
            holds_slot,
            counters_used: false,
            metric,
            conditions,
            duration_source: SampleSource::Records,
            counter_capacity: counter_pass::FIRST_CAPACITY,
            warned_graphs_under_cupti: false,
            closure_asked_counter_pass: false,
            timeline: Timeline::default(),
        }
    }

    /// The CUDA-events backend, for when CUPTI cannot be used (its single subscriber slot is
    /// taken by torch.profiler, Nsight Systems or another tool, or libcupti is missing) or must
    /// not be (CUPTI slows CUDA graphs while attached, those captured from several streams by
    /// 8-20 % on the H200): each region is timed by two CUDA events recorded on the legacy
    /// default stream around it. Needs only the CUDA driver. Before the outermost region's start
    /// event the stream waits on a word of host memory that kprof sets once the region has
    /// exited, so the events and the region's work run back to back as the GPU reaches them and
    /// the host's launch gaps do not count (as NVBench's blocking kernel; a region that waits for
    /// the GPU inside is released by a watchdog after 20 ms, and after two such regions in a row
    /// the rest of the benchmark runs without the hold, with a warning). The samples' metric is
    /// [`CUDA_EVENTS_METRIC`], not `gpu__time_duration.sum`: the GPU time from the region's first
    /// work to its last, idle gaps between kernels on the GPU included, and there is no
    /// per-kernel breakdown or kernel name (`Kernel` is `(cuda events)`). Work on non-blocking
    /// streams is not ordered by the legacy stream, not held, and may be missed.
    pub fn with_cuda_events() -> Result<Profiler, EngineError> {
        Self::claim_slot(|| {
            let (backend, device, extras) = events::EventsBackend::start()?;
            Ok(Self::assemble(
                Arc::new(backend),
                device,
                extras,
                true,
                CUDA_EVENTS_METRIC,
                ProfilerConditions::new(),
            ))
        })
    }

    /// A profiler over another backend (the ncu child's), not holding the process-wide slot.
    pub(crate) fn from_parts(
        backend: Arc<dyn Backend>,
        device: DeviceInfo,
        extras: Vec<(String, ExtraValue)>,
    ) -> Profiler {
        // Under ncu, which profiles every run, no NVML sampling around runs.
        let conditions = ProfilerConditions::with_probe(Box::new(crate::conditions::runtime::NullProbe));
        Self::assemble(backend, device, extras, false, DEFAULT_METRIC, conditions)
    }

    /// The profiler of an ncu child: NVTX ranges only, no CUPTI (`runner/ncu_child.rs`).
    pub(crate) fn for_ncu_child() -> Result<Profiler, EngineError> {
        let (backend, device, extras) = super::ncu_child::child_parts()?;
        Ok(Self::from_parts(backend, device, extras))
    }

    /// A profiler over a test backend (no NVML sampling, as [`Profiler::from_parts`]).
    #[cfg(test)]
    pub(crate) fn with_backend(
        backend: Arc<dyn Backend>,
        device: DeviceInfo,
        extras: Vec<(String, ExtraValue)>,
    ) -> Profiler {
        Self::from_parts(backend, device, extras)
    }

    /// Replaces where conditions are read (tests: fake sensors, or NVML missing).
    #[cfg(test)]
    pub(crate) fn set_conditions(&mut self, c: ProfilerConditions) {
        self.conditions = c;
    }

    /// The environment fingerprint (GPU, driver, CUDA, CUPTI, host, kprof), collected once at
    /// the first bench call; `None` before it.
    pub fn fingerprint(&self) -> Option<&crate::conditions::Fingerprint> {
        self.conditions.fingerprint()
    }

    /// The metric this profiler's samples carry (`gpu__time_duration.sum`, or
    /// [`CUDA_EVENTS_METRIC`] for the CUDA-events fallback).
    pub fn metric(&self) -> &'static str {
        self.metric
    }

    /// The device every sample is attributed to.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Constant extra columns (DeviceOrdinal, DriverVersion, CudaVersion, CuptiVersion).
    pub fn extras(&self) -> &[(String, ExtraValue)] {
        &self.extras
    }

    /// The timeline of the last bench call's recorded runs, taken out of the profiler: every
    /// kernel record on its device and stream, every region on its thread, on CUPTI's clock
    /// (`kprof_core::io::trace::write_chrome_trace` writes it). Empty with CUDA events.
    pub fn take_timeline(&mut self) -> Timeline {
        std::mem::take(&mut self.timeline)
    }

    /// Warnings of all bench calls so far (e.g. a region that launched no kernel in a run).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Kernels of all bench calls so far that ran outside every region (recorded runs and
    /// warm-ups; they are not part of any sample).
    pub fn unattributed_kernels(&self) -> u64 {
        self.unattributed
    }

    /// How many times the bench calls so far flushed the activity buffers (one flush serves a
    /// batch of runs; see [`FlushPolicy`]).
    pub fn flush_count(&self) -> u64 {
        self.flushes
    }

    /// When the run loop flushes the activity buffers.
    pub fn flush_policy(&self) -> FlushPolicy {
        self.flush_policy
    }

    /// Sets when the run loop flushes the activity buffers (for the following bench calls).
    pub fn set_flush_policy(&mut self, policy: FlushPolicy) {
        self.flush_policy = policy;
    }

    /// Waits for all work on the device.
    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.backend.synchronize()
    }

    /// Runs the benchmark closure `f` over `configs` and returns the raw samples: one sample per
    /// region per recorded run, metric `gpu__time_duration.sum` in ns. An empty `configs` means
    /// one configuration without parameters.
    ///
    /// The device is synchronised after every run; the CUPTI activity buffers are flushed and the
    /// kernels attributed once per batch of runs (see [`FlushPolicy`]). With a
    /// [`StoppingPolicy`](super::StoppingPolicy), a configuration's pending values are flushed
    /// and decided on before it gets its next run: the policy sees exactly the values it saw with
    /// a flush after every run (in interleaved order that is one flush per round; in sequential
    /// order one per run).
    pub fn bench<F>(
        &mut self,
        name: &str,
        configs: &[Config],
        opts: &BenchOptions,
        mut f: F,
    ) -> Result<RawResults, EngineError>
    where
        F: FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
    {
        if super::ncu_child::skip_in_child() {
            // An ncu child runs only its selected benchmark (runner/ncu_child.rs).
            return Ok(RawResults::new());
        }
        self.timeline = Timeline::default();
        let resolved = self.resolve_options(name, opts)?;
        let opts = &resolved;
        // Counter metrics are validated on the host before any GPU work. Durations from the
        // counters by default ("auto", no counter metric, warm-up runs) are decided after the
        // warm-up runs instead (see `resolve_auto`).
        let lazy_auto = opts.duration_before_counters() == DurationSource::Auto
            && opts.warmup > 0
            && self.backend.counters().is_some()
            && !opts.metrics.iter().any(|m| counter_pass::is_counter_metric(m));
        let (counters, duration) = if lazy_auto {
            (None, DurationSource::Records)
        } else {
            self.counters_prepare(name, opts)?
        };
        self.closure_asked_counter_pass = false;
        let old_graph_launches_at_start = self.backend.graph_launches_from_nodes();
        let graph_launches_at_start = self.backend.graph_launches_seen();
        let stale_graph_launches_at_start = self.backend.graph_launches_instantiated_before_counters();
        self.duration_source = match (self.metric, duration) {
            (CUDA_EVENTS_METRIC, _) => SampleSource::CudaEvents,
            (_, DurationSource::Counters) => SampleSource::Counters,
            _ => SampleSource::Records,
        };
        let default_configs = [Config::new()];
        let configs: &[Config] = if configs.is_empty() { &default_configs } else { configs };
        let call = self.next_call;
        self.next_call += 1;

        let mut raw = RawResults::new();
        for (i, c) in configs.iter().enumerate() {
            if raw.intern_config(c) as usize != i {
                return Err(invalid_option(&format!(
                    "configuration [{c}] is listed twice in {name:?}"
                )));
            }
        }
        let device_idx = raw.intern_device(&self.device);
        if let Some(w) = self.conditions.init(&self.backend.fingerprint_inputs()) {
            self.warnings.push(w);
        }
        self.conditions
            .begin_sweep(&opts.thermal, opts.conditions, &opts.collectors, &raw.param_names())?;
        let mut sw = Sweep::new(name, configs, opts, raw, device_idx);
        sw.counters = counters;
        sw.auto_pending = lazy_auto;
        sw.old_graph_launches_at_start = old_graph_launches_at_start;
        sw.graph_launches_at_start = graph_launches_at_start;
        // Kernels are traced during benchmarks only: launches between them cost what they cost
        // without kprof.
        // The caller's cancellation token, polled by the loop and by the waits inside it.
        let cancel_scope = crate::cancel::scope(opts.cancel.as_ref());
        let result = self
            .backend
            .set_idle(false)
            .and_then(|()| self.sweep(call, &mut sw, &mut f));
        drop(cancel_scope);
        if result.is_err() {
            // Keep what was measured before the error: attribute the runs still waiting for a
            // flush (best effort) while their conditions are still known.
            let _ = self.flush_batch(&mut sw, None);
        }
        self.end_bench(sw, result, stale_graph_launches_at_start)
    }

    /// The options of a bench call: the environment's overrides (read once per bench call), and
    /// Nsight Compute's section and set names expanded into their metrics, validated.
    fn resolve_options(&mut self, name: &str, opts: &BenchOptions) -> Result<BenchOptions, EngineError> {
        let mut resolved = opts.with_env_overrides()?;
        let table = kprof_core::sections::table();
        let names_a_section = |m: &String| table.section(m.trim()).is_some() || table.set(m.trim()).is_some();
        if resolved.metrics.iter().any(names_a_section) {
            // Nsight Compute's section and set names stand for their metrics on this chip.
            let expansion = crate::counters::sections::expand_metrics(&resolved.metrics)?;
            if let Some(note) = expansion.left_out_note() {
                self.warnings.push(format!("{name}: {note}"));
            }
            resolved.metrics = expansion.metrics;
        }
        resolved.validate()?;
        Ok(resolved)
    }

    /// The end of a bench call: tracing stopped, the call's warnings, the Range Profiler session
    /// kept for the next call, and the files written (`end_files`).
    fn end_bench(
        &mut self,
        sw: Sweep<'_>,
        result: Result<(), EngineError>,
        stale_graph_launches_at_start: u64,
    ) -> Result<RawResults, EngineError> {
        let name = sw.name;
        if let Err(e) = self.backend.set_idle(true) {
            self.warnings.push(format!(
                "{name}: could not stop tracing kernels after the benchmark: {e}"
            ));
        }
        let stale = self.backend.graph_launches_instantiated_before_counters() - stale_graph_launches_at_start;
        if stale > 0 {
            self.warnings.push(format!(
                "{name}: {stale} launch(es) of CUDA graphs instantiated before kprof's counter session was enabled \
                 (the first benchmark with counters, or one that needed a larger counter image): such graphs run \
                 faster than in a process without a profiler once it is on (by up to about a fifth for graphs of many \
                 short kernels: docs/timing.md), and their spans say what they did here. \
                 Capture graphs after a first kprof benchmark that took its durations from the counters, or time them \
                 with the CUDA-events backend in a process without kprof's CUPTI session"
            ));
        }
        // The Range Profiler session stays open for the next benchmark (opening one costs about
        // 0.4 s); it is given back when this profiler is dropped or kprof starts ncu.
        self.counters_used |= sw.counters.is_some();
        let cond_warnings = self.conditions.end_sweep();
        self.warnings.extend(cond_warnings);
        self.end_files(sw, result)
    }

    /// Writes the environment fingerprint beside the raw CSV and the raw CSV itself when not
    /// written yet (after an error, best effort); returns the raw results or the error.
    fn end_files(&mut self, sw: Sweep<'_>, result: Result<(), EngineError>) -> Result<RawResults, EngineError> {
        if let (Some(p), Some(fp)) = (&sw.out_path, self.conditions.fingerprint()) {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = fp.write_sidecar(p) {
                self.warnings
                    .push(format!("could not write the environment fingerprint: {e}"));
            }
        }
        match result {
            Ok(()) => {
                if let Some(p) = &sw.out_path {
                    if sw.samples_on_disk != Some(sw.raw.samples.len()) {
                        write_raw(p, &sw.raw)?;
                    }
                }
                Ok(sw.raw)
            }
            Err(e) => {
                if let Some(p) = &sw.out_path {
                    let _ = write_raw(p, &sw.raw);
                }
                Err(e)
            }
        }
    }

    /// The run loop: runs steps, batches them, flushes per [`FlushPolicy`], at the end, when a
    /// closure error ends the sweep, and before a configuration under a stopping policy gets its
    /// next run.
    fn sweep(&mut self, call: u64, sw: &mut Sweep<'_>, f: &mut Workload<'_>) -> Result<(), EngineError> {
        let opts = sw.opts;
        let configs = sw.configs;
        while let Some(step) = sw.sched.next_step() {
            crate::cancel::check()?;
            if !step.warmup {
                self.resolve_auto(sw)?;
            }
            if opts.policy.is_some() && !step.warmup && sw.pending_recorded[step.config] > 0 {
                // The policy decides on this config's last run before it gets another one.
                self.flush_batch(sw, Some(step.config))?;
                if sw.sched.is_stopped(step.config) {
                    continue;
                }
            }
            let t0 = Instant::now();
            let at = RunAt {
                name: sw.name,
                call,
                step,
                config: &configs[step.config],
                opts,
                one_pass: false,
            };
            let (run, abort) = match self.one_pass_step(sw, at, f)? {
                Some(run) => {
                    let failed = matches!(run.counters, counter_pass::CounterRun::Failed(_));
                    if failed {
                        crate::cancel::check()?;
                    }
                    let run = PendingRun {
                        step,
                        spans: run.spans,
                        failure: None,
                        wall: t0.elapsed(),
                        counters: Some(run.counters),
                        window: (0, 0),
                        own_kernels: Some(run.kernels),
                    };
                    // A failed run ends the sweep at once, as a failed timing pass does.
                    (run, failed && !opts.ignore_failures)
                }
                None => self.two_pass_run(sw, at, f, t0)?,
            };
            self.push_pending(sw, run, t0, abort)?;
        }
        self.flush_batch(sw, None)
    }

    /// A run with its timing pass, then its counter pass when the call has counters and the run
    /// is recorded (and, with a warm cache, the re-warming run after it): the run to wait for the
    /// next flush, and whether its failure ends the sweep.
    fn two_pass_run(
        &mut self,
        sw: &mut Sweep<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
        t0: Instant,
    ) -> Result<(PendingRun, bool), EngineError> {
        let step = at.step;
        let TimingRun {
            spans,
            failure,
            window,
            graph_launches,
        } = TimingPass { wire: &mut sw.wire }.measure(&mut self.pass_cx(), at, f)?;
        let abort = failure.is_some() && !at.opts.ignore_failures;
        if step.warmup && graph_launches > 0 {
            sw.two_passes[step.config] = true;
        }
        let counters = match (&mut sw.counters, step.warmup, &failure) {
            (Some(st), false, None) => {
                let mut pass = CounterPass {
                    st,
                    regions: spans.len(),
                    graph_launches,
                    window,
                };
                Some(pass.measure(&mut self.pass_cx(), at, f)?)
            }
            _ => None,
        };
        if counters.is_some() && at.opts.cache == CacheControl::None {
            rewarm_after_counters(&mut self.pass_cx(), at, f)?;
        }
        // Cancelled: a run whose counter pass was cut short is dropped, a finished one kept.
        if matches!(counters, Some(counter_pass::CounterRun::Failed(_))) {
            crate::cancel::check()?;
        }
        let run = PendingRun {
            step,
            spans,
            failure,
            wall: t0.elapsed(),
            counters,
            window,
            own_kernels: None,
        };
        Ok((run, abort))
    }

    /// Puts a measured run (started at `t0`) with those waiting for the next flush, and flushes
    /// when the run's failure ends the sweep (`abort`) or the [`FlushPolicy`] says so.
    fn push_pending(
        &mut self,
        sw: &mut Sweep<'_>,
        run: PendingRun,
        t0: Instant,
        abort: bool,
    ) -> Result<(), EngineError> {
        if !run.step.warmup {
            sw.pending_recorded[run.step.config] += 1;
        }
        let started = *sw.batch_start.get_or_insert(t0);
        sw.pending.push(run);
        crate::cancel::check()?;
        let max_runs = self.flush_policy.max_runs.max(1) as usize;
        if abort || sw.pending.len() >= max_runs || started.elapsed() >= self.flush_policy.max_time {
            self.flush_batch(sw, None)?;
        }
        Ok(())
    }

    /// The last counter metric set validated by a bench call (chip, units, pass count).
    pub fn counter_plan(&self) -> Option<counter_pass::CounterPlan> {
        counter_pass::last_plan(&self.backend)
    }

    /// Validates the counter metrics of `opts` on the host and resolves the duration source
    /// (`counter_pass::prepare`).
    fn counters_prepare(
        &mut self,
        name: &str,
        opts: &BenchOptions,
    ) -> Result<(Option<counter_pass::CounterState>, DurationSource), EngineError> {
        let p = counter_pass::Prepare {
            backend: &self.backend,
            metric: self.metric,
            capacity: self.counter_capacity,
            warnings: &mut self.warnings,
        };
        counter_pass::prepare(p, name, opts)
    }

    /// What recording a flushed run may use of this profiler.
    fn recorder(&mut self) -> Recorder<'_> {
        Recorder {
            sink: SampleSink {
                metric: self.metric,
                extras: &self.extras,
                conditions: &self.conditions,
                duration_source: self.duration_source,
                warnings: &mut self.warnings,
            },
            timeline: &mut self.timeline,
            backend: &*self.backend,
        }
    }

    /// What a measurement pass may use of this profiler.
    fn pass_cx(&mut self) -> PassCx<'_> {
        PassCx {
            backend: &self.backend,
            conditions: &mut self.conditions,
            warnings: &mut self.warnings,
            counter_capacity: &mut self.counter_capacity,
            closure_asked_counter_pass: &mut self.closure_asked_counter_pass,
        }
    }

    /// [`DurationSource::Auto`], decided before the first recorded run: when the warm-up runs
    /// launched CUDA graphs instantiated before the CUPTI session (their spans merged from node
    /// records, which a counter pass corrupts on CUPTI 13.0:
    /// the short-kernel and graph recordings),
    /// the call takes its durations from the records, with a warning, without touching the Range
    /// Profiler (node records of a torch graph of 60 kernels read 139.2 us in a process that never
    /// enabled it, 128.0-128.1 us once it had been, CUDA events 135.7 us);
    /// otherwise the counters when they can be used ([`Profiler::counters_prepare`]).
    fn resolve_auto(&mut self, sw: &mut Sweep<'_>) -> Result<(), EngineError> {
        if !std::mem::take(&mut sw.auto_pending) {
            return Ok(());
        }
        if self.backend.graph_launches_from_nodes() != sw.old_graph_launches_at_start {
            // This warning says what the collections' would.
            sw.warned.old_graphs = true;
            self.warnings.push(format!(
                "{}: durations are CUPTI kernel records, not Nsight Compute's gpu__time_duration: the benchmark \
                 replays CUDA graphs instantiated before kprof's CUPTI session, whose spans a counter pass would \
                 corrupt; they are timed from their node records, which run instrumented under CUPTI and read a few \
                 percent long (up to about a fifth for one captured from several streams: docs/timing.md). \
                 Instantiate them after the first kprof benchmark for their graph records, or time them without \
                 CUPTI with the CUDA-events backend (Python backend='cuda-events', Rust \
                 Profiler::with_cuda_events()) in a process where kprof's CUPTI session has not started; \
                 duration_source=\"records\" silences this; see the DurationSource column",
                sw.name
            ));
            return Ok(());
        }
        if sw.opts.replay_mode == crate::choices::ReplayMode::Kernel
            && self.backend.graph_launches_seen() > sw.graph_launches_at_start
        {
            self.warnings.push(format!(
                "{}: durations are CUPTI kernel records, not Nsight Compute's gpu__time_duration: the benchmark \
                 launches CUDA graphs, which CUPTI 13.0's kernel replay cannot profile (it crashed the \
                 process); replay_mode=\"application\" (the default) takes them from the counters",
                sw.name
            ));
            return Ok(());
        }
        let (counters, duration) = self.counters_prepare(sw.name, sw.opts)?;
        sw.counters = counters;
        if duration == DurationSource::Counters {
            self.duration_source = SampleSource::Counters;
        }
        Ok(())
    }

    /// A recorded run in one pass (`one_pass`), where its configuration allows it: durations
    /// from the counters in application replay with a cold cache, a map from its last warm-up
    /// run, no annotation-scope collectors. `None`: the run takes its timing pass.
    fn one_pass_step(
        &mut self,
        sw: &mut Sweep<'_>,
        at: RunAt<'_>,
        f: &mut Workload<'_>,
    ) -> Result<Option<OnePassRun>, EngineError> {
        let c = at.step.config;
        let allowed = !at.step.warmup
            && may_take_one_pass(self.duration_source, at.opts)
            && !self.closure_asked_counter_pass
            && !sw.two_passes[c]
            && self.backend.can_act_before_each_kernel()
            && sw
                .counters
                .as_ref()
                .is_some_and(|st| st.plan.mode == crate::choices::ReplayMode::Application)
            && self
                .conditions
                .annotation_hook(c, at.config, at.step.run, false)
                .is_none();
        if !allowed {
            return Ok(None);
        }
        let refresh = sw.map_refresh[c] == MapRefresh::Waiting;
        if sw
            .pending
            .iter()
            .any(|r| r.step.config == c && (r.step.warmup || (refresh && r.own_kernels.is_none())))
        {
            // The map comes from the configuration's last warm-up (or, taken again, from a
            // recorded run's timing pass), still waiting for a flush.
            self.flush_batch(sw, None)?;
        }
        let (Some(map), Some(st)) = (sw.kernel_maps[c].clone(), sw.counters.as_mut()) else {
            return Ok(None);
        };
        let at = RunAt { one_pass: true, ..at };
        let run = OnePass { st, map: &map }.measure(&mut self.pass_cx(), at, f)?;
        if run.is_none() {
            // The closure launched other kernels than its warm-up: the next recorded run's timing
            // pass gives the map once more (first calls can launch kernels that later ones do not);
            // a second mismatch keeps two passes from now on.
            if sw.map_refresh[c] == MapRefresh::FromWarmup {
                sw.map_refresh[c] = MapRefresh::Waiting;
                sw.kernel_maps[c] = None;
            } else {
                sw.two_passes[c] = true;
            }
        }
        Ok(run)
    }

    /// Flushes the activity buffers once for every waiting run, records their samples in run
    /// order, and writes the raw CSV when configurations have finished (`in_flight`: a config
    /// whose next run is already handed out and so is not finished unless stopped).
    fn flush_batch(&mut self, sw: &mut Sweep<'_>, in_flight: Option<usize>) -> Result<(), EngineError> {
        if sw.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut sw.pending);
        sw.batch_start = None;
        for r in &pending {
            if !r.step.warmup {
                sw.pending_recorded[r.step.config] -= 1;
            }
        }
        let t0 = Instant::now();
        self.flushes += 1;
        let collected = self.backend.collect(&sw.wire);
        counter_cost::add(|c| {
            c.records_flushes += 1;
            c.records_flush_s += counter_cost::since(t0);
        });
        sw.wire.clear();
        let collected = collected?;
        self.unattributed += collected.unattributed as u64;
        BatchWarnings {
            name: sw.name,
            warned: &mut sw.warned,
            old_graph_launches_at_start: sw.old_graph_launches_at_start,
            backend: &*self.backend,
            warned_graphs_under_cupti: &mut self.warned_graphs_under_cupti,
            warnings: &mut self.warnings,
        }
        .give(&collected);
        // The flush's wall time counts towards the time budgets of the batch's configs.
        let share = t0.elapsed() / pending.len() as u32;
        // The runs' conditions from the background sampler's samples (no NVML read here).
        self.conditions.settle();
        let mut rec = self.recorder();
        for mut run in pending {
            // A run in one pass has its kernels from its configuration's map (`one_pass`).
            match run.own_kernels.take() {
                Some(own) => rec.record_run(sw, run, &own, share, true)?,
                None => rec.record_run(sw, run, &collected, share, false)?,
            }
        }
        if let Some(p) = &sw.out_path {
            let newly: Vec<usize> = (0..sw.configs.len())
                .filter(|&c| !sw.written[c] && sw.sched.finished(c) && (Some(c) != in_flight || sw.sched.is_stopped(c)))
                .collect();
            if !newly.is_empty() {
                write_raw(p, &sw.raw)?;
                sw.samples_on_disk = Some(sw.raw.samples.len());
                for c in newly {
                    sw.written[c] = true;
                }
            }
        }
        Ok(())
    }
}

/// Whether a bench call's runs may take one pass (`one_pass`) as its options go: durations from
/// the counters (`source`), a cold cache, `one_pass` on.
fn may_take_one_pass(source: SampleSource, opts: &BenchOptions) -> bool {
    opts.one_pass && source == SampleSource::Counters && opts.cache == CacheControl::All
}
