//! The conditions wiring of the run loop: what [`crate::runner::Profiler`] holds (NVML, the
//! monitored device, the fingerprint) and what one `bench` call holds (thermal guard, sampler,
//! collectors and their values). The runner calls a few hooks; everything else lives here.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kprof_core::{Config, ExtraValue};

use super::background::{
    idle_blurs_energy, poll_interval_from_env, BackgroundSampler, DEFAULT_POLL_INTERVAL, IDLE_SHARE_MAX, POLL_ENV,
};
use super::collectors::{CollectorSession, CollectorSet, InfoCollector};
use super::fingerprint::{Fingerprint, FingerprintInputs};
use super::nvml::{GpuDevice, Nvml};
use super::sampler::{ConditionsSource, RunConditions, THERMAL_OR_POWER};
use super::thermal::{Clock, SystemClock, TemperatureSensor, ThermalGuard, ThermalMode, ThermalSettings};
use super::ConditionsError;

/// The thermal guard's options (nsight-python's `thermal_mode`, `thermal_wait`,
/// `thermal_cont`, `thermal_timeout`). Default: auto, 10 °C / 20 °C, 180 s, like nsight.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ThermalOptions {
    /// `auto` (default), `manual` or `off`.
    pub mode: ThermalMode,
    /// Pause when the headroom to the slowdown temperature is at most this, °C.
    pub wait_c: f64,
    /// Resume when the headroom is at least this, °C (the start value in auto mode).
    pub cont_c: f64,
    /// Longest wait for cooling.
    pub timeout: Duration,
}

impl Default for ThermalOptions {
    fn default() -> Self {
        let s = ThermalSettings::default();
        ThermalOptions {
            mode: ThermalMode::Auto,
            wait_c: s.wait_c,
            cont_c: s.cont_c,
            timeout: s.timeout,
        }
    }
}

impl ThermalOptions {
    /// No guard.
    pub fn off() -> Self {
        ThermalOptions {
            mode: ThermalMode::Off,
            ..Default::default()
        }
    }

    /// The guard's settings.
    pub fn settings(&self) -> ThermalSettings {
        ThermalSettings {
            wait_c: self.wait_c,
            cont_c: self.cont_c,
            timeout: self.timeout,
            ..ThermalSettings::default()
        }
    }

    /// Checks the thresholds (nothing to check when off).
    pub fn validate(&self) -> Result<(), ConditionsError> {
        if self.mode == ThermalMode::Off {
            return Ok(());
        }
        self.settings().validate()
    }
}

/// User info collectors of a bench call, shareable so that [`crate::runner::BenchOptions`] stays
/// `Clone` (clones share the same collectors).
#[derive(Clone, Default)]
pub struct Collectors(Arc<Mutex<Vec<Box<dyn InfoCollector>>>>);

impl fmt::Debug for Collectors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = lock(&self.0);
        f.debug_list()
            .entries(g.iter().map(|c| (c.name().to_string(), c.scope())))
            .finish()
    }
}

impl Collectors {
    /// From boxed collectors.
    pub fn new(collectors: Vec<Box<dyn InfoCollector>>) -> Self {
        Collectors(Arc::new(Mutex::new(collectors)))
    }

    /// Adds one.
    pub fn push(&self, c: Box<dyn InfoCollector>) {
        lock(&self.0).push(c);
    }

    /// Number of collectors.
    pub fn len(&self) -> usize {
        lock(&self.0).len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&self) -> Vec<Box<dyn InfoCollector>> {
        std::mem::take(&mut *lock(&self.0))
    }

    fn restore(&self, mut v: Vec<Box<dyn InfoCollector>>) {
        let mut g = lock(&self.0);
        v.append(&mut g);
        *g = v;
    }
}

/// A boxed temperature sensor.
pub type BoxSensor = Box<dyn TemperatureSensor + Send>;
/// A boxed conditions source.
pub type BoxSource = Box<dyn ConditionsSource + Send>;
/// A boxed clock.
pub type BoxClock = Box<dyn Clock + Send>;

/// `impl Trait for Box<T>`: each listed reading (a `&mut self` method without arguments) is the
/// boxed value's.
macro_rules! boxed_readings {
    ($trait:ident: $($reading:ident -> $ty:ty),* $(,)?) => {
        impl<T: $trait + ?Sized> $trait for Box<T> {
            $(
                fn $reading(&mut self) -> $ty {
                    (**self).$reading()
                }
            )*
        }
    };
}

boxed_readings!(TemperatureSensor:
    margin_c -> Option<f64>,
    temperature_c -> Option<f64>,
    margin_c_fresh -> Option<f64>,
);

boxed_readings!(ConditionsSource:
    sm_clock_mhz -> Option<f64>,
    mem_clock_mhz -> Option<f64>,
    max_sm_clock_mhz -> Option<f64>,
    throttle_reasons -> Option<u64>,
    temperature_c -> Option<f64>,
    power_mw -> Option<f64>,
    total_energy_mj -> Option<u64>,
    margin_c -> Option<f64>,
    power_limit_mw -> Option<f64>,
);

impl<T: Clock + ?Sized> Clock for Box<T> {
    fn now(&self) -> Duration {
        (**self).now()
    }
    fn sleep(&mut self, d: Duration) {
        (**self).sleep(d)
    }
}

/// Where a profiler reads the conditions: NVML in production; tests inject fakes through
/// [`ProfilerConditions::with_probe`].
pub trait ConditionsProbe: Send {
    /// The thermal guard's sensor (`None`: no guard).
    fn sensor(&mut self) -> Option<BoxSensor>;
    /// The sampler's source (`None`: NaN columns).
    fn source(&mut self) -> Option<BoxSource>;
    /// The guard's clock.
    fn clock(&mut self) -> BoxClock {
        Box::new(SystemClock::new())
    }
}

struct NvmlProbe(GpuDevice);

impl ConditionsProbe for NvmlProbe {
    fn sensor(&mut self) -> Option<BoxSensor> {
        Some(Box::new(self.0.clone()))
    }
    fn source(&mut self) -> Option<BoxSource> {
        Some(Box::new(self.0.clone()))
    }
}

/// A probe with nothing to read (conditions NaN, no guard), without a warning.
pub struct NullProbe;

impl ConditionsProbe for NullProbe {
    fn sensor(&mut self) -> Option<BoxSensor> {
        None
    }
    fn source(&mut self) -> Option<BoxSource> {
        None
    }
}

enum Source {
    /// Not looked at yet: NVML is loaded at the first bench call.
    Lazy,
    /// NVML loaded (the device may be missing).
    Nvml { nvml: Nvml, device: Option<GpuDevice> },
    /// Injected.
    Probe(Box<dyn ConditionsProbe>),
    /// NVML could not be loaded.
    Missing,
}

/// What a [`crate::runner::Profiler`] keeps for the conditions of its runs. It drives the parts of
/// [`crate::conditions`] like this:
///
/// ```ignore
/// let bg = BackgroundSampler::start(device.clone(), Duration::from_millis(20)); // once
/// bg.set_active(true);                              // per bench call; polls every 20 ms
/// let mut guard = ThermalGuard::new(mode, settings, Some(bg.sensor(device.clone())), SystemClock::new())?;
/// for run in .. {
///     let waited = guard.guard_before_run()?;       // latest sample's margin, no NVML read
///     let start = Instant::now();
///     /* the run */
///     windows.push((start, Instant::now(), waited));
/// }
/// // at each flush, before the runs are recorded:
/// for cond in bg.conditions(&windows, None) { extras.extend(cond.to_extras()); }
/// ```
pub struct ProfilerConditions {
    source: Source,
    /// Warning to report once (NVML missing, device fallback) at the first bench call.
    pending_warning: Option<String>,
    fingerprint: Option<Fingerprint>,
    /// The state of the bench call in progress.
    sweep: Option<SweepConditions>,
    /// The background sampler, started at the first bench call that needs it, stopped on drop.
    background: Option<BackgroundSampler>,
    /// Its poll interval.
    poll_interval: Duration,
    /// The energy notes given so far (see [`EnergyNote`]).
    energy_noted: Vec<EnergyNote>,
}

/// Why runs have NaN energy where that is expected of NVML's energy counter, not something to act
/// on: each is a warning of the first bench call that has it, and a debug log line after that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EnergyNote {
    /// Runs shorter than the counter's update period.
    Unresolved,
    /// Runs with idle GPU time beside them within an update of the counter.
    Rested,
    /// Runs before the counter had updated three times (its period unknown).
    TooEarly,
}

impl fmt::Debug for ProfilerConditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProfilerConditions")
            .field("has_fingerprint", &self.fingerprint.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ProfilerConditions {
    fn default() -> Self {
        Self::new()
    }
}

impl ProfilerConditions {
    /// NVML is loaded at the first bench call.
    pub fn new() -> Self {
        ProfilerConditions {
            source: Source::Lazy,
            pending_warning: None,
            fingerprint: None,
            sweep: None,
            background: None,
            poll_interval: poll_interval_from_env(std::env::var(POLL_ENV).ok().as_deref())
                .unwrap_or(DEFAULT_POLL_INTERVAL),
            energy_noted: Vec::new(),
        }
    }

    /// `message` as a warning into `out` the first time `note` comes, as a debug log line later.
    fn energy_note(&mut self, out: &mut Vec<String>, note: EnergyNote, message: String) {
        if self.energy_noted.contains(&note) {
            log::debug!("kprof: {message}");
        } else {
            self.energy_noted.push(note);
            out.push(format!(
                "{message} (said once per process; later benchmarks log it at debug level)"
            ));
        }
    }

    /// The background sampler's poll interval (default 20 ms, or `KPROF_CONDITIONS_POLL_MS`).
    /// Takes effect when the sampler starts, at the first bench call that samples.
    pub fn set_poll_interval(&mut self, interval: Duration) {
        self.poll_interval = interval.max(Duration::from_millis(1));
    }

    /// The background sampler, once started.
    pub fn background(&self) -> Option<&BackgroundSampler> {
        self.background.as_ref()
    }

    /// Reads through `probe` instead of NVML (tests).
    pub fn with_probe(probe: Box<dyn ConditionsProbe>) -> Self {
        ProfilerConditions {
            source: Source::Probe(probe),
            ..Self::new()
        }
    }

    /// As if NVML were missing: one warning, NaN columns, no guard.
    pub fn unavailable(reason: &str) -> Self {
        ProfilerConditions {
            source: Source::Missing,
            pending_warning: Some(
                ConditionsError::NvmlUnavailable {
                    reason: reason.to_string(),
                }
                .to_string(),
            ),
            ..Self::new()
        }
    }

    /// Loads NVML and resolves the device by UUID once; collects the fingerprint once.
    /// Returns the warning to report, once.
    pub fn init(&mut self, inputs: &FingerprintInputs) -> Option<String> {
        if matches!(self.source, Source::Lazy) {
            match Nvml::load() {
                Ok(nvml) => {
                    let r = nvml.resolve_device(inputs.uuid.as_deref());
                    self.pending_warning = r.warning;
                    self.source = Source::Nvml { nvml, device: r.device };
                }
                Err(e) => {
                    self.pending_warning = Some(e.to_string());
                    self.source = Source::Missing;
                }
            }
        }
        if self.fingerprint.is_none() {
            self.fingerprint = Some(match &self.source {
                Source::Nvml { nvml, device } => Fingerprint::collect(inputs, Some(nvml), device.as_ref()),
                _ => Fingerprint::collect(inputs, None, None),
            });
        }
        self.pending_warning.take()
    }

    /// The environment fingerprint (after the first bench call).
    pub fn fingerprint(&self) -> Option<&Fingerprint> {
        self.fingerprint.as_ref()
    }

    fn probe_parts(&mut self) -> (Option<BoxSensor>, Option<BoxSource>, BoxClock) {
        match &mut self.source {
            Source::Nvml { device: Some(d), .. } => {
                let mut p = NvmlProbe(d.clone());
                (p.sensor(), p.source(), p.clock())
            }
            Source::Probe(p) => (p.sensor(), p.source(), p.clock()),
            _ => (None, None, Box::new(SystemClock::new())),
        }
    }

    /// Starts a bench call: builds the guard, the sampler and the collector set (validated
    /// against the parameter names), and calls the once-collectors.
    pub fn begin_sweep(
        &mut self,
        thermal: &ThermalOptions,
        sample: bool,
        collectors: &Collectors,
        param_names: &[String],
    ) -> Result<(), ConditionsError> {
        thermal.validate()?;
        if let Some(fp) = self.fingerprint.as_mut() {
            fp.thermal_mode = Some(thermal.mode.to_string());
        }
        let (sensor, source, clock) = self.probe_parts();
        if self.background.is_none() && (sample || thermal.mode != ThermalMode::Off) {
            if let Some(src) = source {
                self.background = Some(BackgroundSampler::start(src, self.poll_interval));
            }
        }
        let sensor: Option<BoxSensor> = match (&self.background, sensor) {
            (Some(bg), Some(s)) => Some(Box::new(bg.sensor(s))),
            (_, s) => s,
        };
        if let Some(bg) = &self.background {
            bg.set_active(true);
        }
        let guard = ThermalGuard::new(thermal.mode, thermal.settings(), sensor, clock)?;
        {
            let g = lock(&collectors.0);
            let names: Vec<&str> = g.iter().map(|c| c.name()).collect();
            super::collectors::validate_names(&names, param_names)?;
        }
        let session = CollectorSession::start(CollectorSet::new(collectors.take(), param_names)?);
        self.sweep = Some(SweepConditions {
            guard,
            sample: sample && self.background.is_some(),
            unknown: sample && self.background.is_none(),
            start: None,
            windows: Vec::new(),
            session: Arc::new(Mutex::new(session)),
            collectors: collectors.clone(),
            wait: Duration::ZERO,
            energy_unresolved: (0, f64::NAN),
            energy_rested: (0, f64::NAN),
            energy_too_early: 0,
        });
        Ok(())
    }

    /// Before every run (warm-ups too), before the L2 flush: the thermal guard. The time it
    /// waited is the run's `ThermalWaitS`.
    pub fn thermal_guard(&mut self) -> Result<(), ConditionsError> {
        if let Some(sw) = self.sweep.as_mut() {
            sw.wait = sw.guard.guard_before_run()?;
        }
        Ok(())
    }

    /// Before a run (after the L2 flush, right before the closure): the config and run
    /// collectors, then the run's start time (no NVML read: see [`super::background`]).
    pub fn before_run(
        &mut self,
        config_idx: usize,
        config: &Config,
        run: u32,
        warmup: bool,
    ) -> Result<(), ConditionsError> {
        let Some(sw) = self.sweep.as_mut() else { return Ok(()) };
        lock(&sw.session).before_run(config_idx, config, run, warmup);
        sw.start = (sw.sample && !warmup).then(Instant::now);
        Ok(())
    }

    /// After a run has synchronised: its end time (no NVML read). Without a sampler (no NVML,
    /// no device) the NaN conditions are stored at once.
    pub fn after_run(&mut self, config_idx: usize, run: u32, warmup: bool) {
        let Some(sw) = self.sweep.as_mut() else { return };
        if warmup {
            return;
        }
        if sw.unknown {
            let cond = RunConditions::unknown(sw.wait);
            store(&sw.session, config_idx, run, &cond);
            return;
        }
        if let Some(start) = sw.start.take() {
            sw.windows.push(Window {
                config_idx,
                run,
                start,
                end: Instant::now(),
                wait: sw.wait,
            });
        }
    }

    /// Whether NVML's clock-event reasons polled by the background sampler from `start` to `end`
    /// say the GPU was slowed by its power or thermal limits ([`THERMAL_OR_POWER`]); `None`
    /// without the sampler or a sample of that time (the run loop's rests treat it as slowed).
    pub fn gpu_slowed_between(&self, start: Instant, end: Instant) -> Option<bool> {
        let bg = self.background.as_ref()?;
        bg.reasons_between(start, end).map(|r| r & THERMAL_OR_POWER != 0)
    }

    /// Before the runs that ended since the last call are recorded: their conditions from the
    /// background sampler's samples (no NVML read, no waiting; see [`super::background`]).
    pub fn settle(&mut self) {
        let Some(sw) = self.sweep.as_mut() else { return };
        if sw.windows.is_empty() {
            return;
        }
        let Some(bg) = &self.background else {
            sw.windows.clear();
            return;
        };
        let windows = std::mem::take(&mut sw.windows);
        let spans: Vec<(Instant, Instant, Duration)> = windows.iter().map(|w| (w.start, w.end, w.wait)).collect();
        let keep_from = windows.iter().map(|w| w.end).max();
        let conds = bg.conditions(&spans, keep_from);
        for (w, mut cond) in windows.iter().zip(conds) {
            // Idle GPU time beside the run (the run loop's rests against the power cap,
            // `runner::gpu_rest`, or its host work) blurs its energy (`idle_blurs_energy`).
            if cond.energy_mj.is_finite()
                && cond.energy_update_period_s.is_finite()
                && idle_blurs_energy(w.start, w.end, Duration::from_secs_f64(cond.energy_update_period_s))
            {
                cond.energy_mj = f64::NAN;
                sw.energy_rested.0 += 1;
                sw.energy_rested.1 = cond.energy_update_period_s;
            } else if cond.energy_mj.is_nan()
                && cond.energy_update_period_s.is_finite()
                && cond.wall_s < cond.energy_update_period_s
            {
                sw.energy_unresolved.0 += 1;
                sw.energy_unresolved.1 = cond.energy_update_period_s;
            } else if cond.energy_mj.is_nan() && cond.energy_counter_read && cond.energy_update_period_s.is_nan() {
                sw.energy_too_early += 1;
            }
            store(&sw.session, w.config_idx, w.run, &cond);
        }
    }

    /// A hook for region enters of the current run: calls the annotation collectors.
    pub fn annotation_hook(
        &self,
        config_idx: usize,
        config: &Config,
        run: u32,
        warmup: bool,
    ) -> Option<AnnotationHook> {
        let sw = self.sweep.as_ref()?;
        if warmup || !lock(&sw.session).has_scope(super::CollectionScope::Annotation) {
            return None;
        }
        let (session, config) = (Arc::clone(&sw.session), config.clone());
        Some(Box::new(move |name: &str| {
            lock(&session).enter_annotation(name, config_idx, &config, run);
        }))
    }

    /// The extra columns of a sample of `region` in `run` of `config_idx`.
    pub fn extras_for(&self, config_idx: usize, run: u32, region: &str) -> Vec<(String, ExtraValue)> {
        match &self.sweep {
            Some(sw) => lock(&sw.session).values().extras_for(config_idx as u32, run, region),
            None => Vec::new(),
        }
    }

    /// Ends the bench call: gives the collectors back to the options and returns the warnings
    /// of the guard and the collectors.
    pub fn end_sweep(&mut self) -> Vec<String> {
        self.settle();
        if let Some(bg) = &self.background {
            bg.set_active(false);
        }
        let Some(mut sw) = self.sweep.take() else {
            return Vec::new();
        };
        let mut out = sw.guard.take_warnings();
        let (unresolved, period_s) = sw.energy_unresolved;
        if unresolved > 0 {
            let message = format!(
                "energy: {unresolved} run(s) shorter than the update period of NVML's energy counter ({:.0} ms) have \
                 EnergyMilliJ NaN: the counter cannot resolve them (use more work per run, or PowerW x the duration \
                 as an estimate)",
                period_s * 1e3
            );
            self.energy_note(&mut out, EnergyNote::Unresolved, message);
        }
        let (rested, period_s) = sw.energy_rested;
        if rested > 0 {
            let message = format!(
                "energy: {rested} run(s) have EnergyMilliJ NaN: the GPU was idle for more than {:.0} % of the run \
                 within one update of NVML's energy counter ({:.0} ms) of it, or of it and the second before it (kprof's \
                 rests against the power cap: after 10 ms of GPU work it idles as long, runs of 200 ms or more only \
                 when slowed by the cap or until one shows it is that long by itself; or its own host work between \
                 passes), and neither the counter nor NVML's one-second power average can tell that idle time from \
                 the run (use PowerW x the duration of steady runs as an estimate)",
                IDLE_SHARE_MAX * 100.0,
                period_s * 1e3
            );
            self.energy_note(&mut out, EnergyNote::Rested, message);
        }
        if sw.energy_too_early > 0 {
            let message = format!(
                "energy: {} run(s) came before NVML's energy counter had updated three times (the updates give its \
                 period), so its update rate was unknown: EnergyMilliJ NaN",
                sw.energy_too_early
            );
            self.energy_note(&mut out, EnergyNote::TooEarly, message);
        }
        let total = sw.guard.total_wait();
        if total > Duration::ZERO {
            out.push(format!(
                "thermal guard: waited {:.1} s in {} pause(s) for the GPU to cool (see the ThermalWaitS column)",
                total.as_secs_f64(),
                sw.guard.waits().len()
            ));
        }
        drop(sw.guard);
        match Arc::try_unwrap(sw.session) {
            Ok(m) => {
                let mut session = m.into_inner().unwrap_or_else(|p| p.into_inner());
                out.extend(session.take_warnings());
                sw.collectors.restore(session.into_set().into_collectors());
            }
            Err(shared) => out.extend(lock(&shared).take_warnings()),
        }
        out
    }
}

/// Called with the region name when a region is entered.
pub type AnnotationHook = Box<dyn Fn(&str)>;

/// Stores a run's condition columns before its collector values.
fn store(session: &Mutex<CollectorSession>, config_idx: usize, run: u32, cond: &RunConditions) {
    let mut session = lock(session);
    let values = session.values_mut();
    let mut run_values: Vec<(String, ExtraValue)> =
        cond.to_extras().into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    run_values.extend(values.run_values(config_idx as u32, run));
    values.set_run(config_idx as u32, run, run_values);
}

/// A measured run waiting for its conditions.
struct Window {
    config_idx: usize,
    run: u32,
    start: Instant,
    end: Instant,
    wait: Duration,
}

use crate::lock;

/// The fingerprint inputs of the CUDA device a profiler runs on.
pub fn fingerprint_inputs(
    ordinal: i32,
    props: &crate::driver::DeviceProps,
    cuda_driver_version: i32,
    cupti_version: Option<String>,
) -> FingerprintInputs {
    FingerprintInputs {
        cuda_ordinal: Some(ordinal),
        gpu_name: Some(props.name.clone()),
        uuid: Some(props.uuid.clone()).filter(|u| !u.is_empty()),
        compute_capability: Some(props.cc),
        cuda_driver_version: Some(cuda_driver_version),
        cuda_runtime_version: None,
        cupti_version,
        clock_policy: Some("none (clocks not locked)".into()),
        thermal_mode: None,
        kernel_timing: None,
        rated_sm_clock_khz: (props.clock_khz > 0).then_some(props.clock_khz),
        rated_mem_clock_khz: (props.mem_clock_khz > 0).then_some(props.mem_clock_khz),
        sm_count: (props.sm_count > 0).then_some(props.sm_count),
    }
}

/// The conditions state of one bench call.
struct SweepConditions {
    guard: ThermalGuard<BoxSensor, BoxClock>,
    /// Per-run conditions from the background sampler.
    sample: bool,
    /// Per-run conditions asked for but no sampler (no NVML or device): NaN columns.
    unknown: bool,
    /// Start of the measured run in progress.
    start: Option<Instant>,
    /// Measured runs whose conditions are not computed yet.
    windows: Vec<Window>,
    /// The info collectors at work, and the values collected (run conditions too).
    session: Arc<Mutex<CollectorSession>>,
    collectors: Collectors,
    /// The guard's wait before the current run.
    wait: Duration,
    /// Runs whose energy the counter could not resolve, and the counter's update period (s).
    energy_unresolved: (usize, f64),
    /// Runs given NaN energy for idle GPU time beside them, and the counter's update period.
    energy_rested: (usize, f64),
    /// Runs with NaN energy because the counter had not updated often enough yet for its period
    /// to be known (the first few hundred ms of sampling).
    energy_too_early: usize,
}
