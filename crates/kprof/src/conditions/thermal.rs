//! The thermal guard: nsight-python's Thermovision, with the same algorithm and defaults, checked
//! before every run ([`ThermalGuard`], which describes the algorithm). The sensor and the clock are
//! traits ([`TemperatureSensor`], [`Clock`]), so tests drive the state machine with a scripted
//! sensor and a fake clock. The options, as users set them: `docs/python-differences.md`.

use std::fmt;
use std::time::{Duration, Instant};

use super::ConditionsError;

/// Pause when the headroom is at most this, °C (`DEFAULT_THERMAL_WAIT`).
pub const DEFAULT_THERMAL_WAIT_C: f64 = 10.0;
/// Resume when the headroom is at least this, °C (`DEFAULT_THERMAL_CONT`).
pub const DEFAULT_THERMAL_CONT_C: f64 = 20.0;
/// Give up cooling after this long (`DEFAULT_THERMAL_TIMEOUT`).
pub const DEFAULT_THERMAL_TIMEOUT: Duration = Duration::from_secs(180);
/// Lowest resume threshold in auto mode, °C (`MIN_THERMAL_CONT`).
pub const MIN_THERMAL_CONT_C: f64 = 12.0;
/// Highest resume threshold in auto mode, °C (`MAX_THERMAL_CONT`).
pub const MAX_THERMAL_CONT_C: f64 = 50.0;
/// Fewer runs than this between pauses: cool more (`TARGET_MIN_ITERATIONS`).
pub const TARGET_MIN_ITERATIONS: u32 = 5;
/// More runs than this between pauses: cool less (`TARGET_MAX_ITERATIONS`).
pub const TARGET_MAX_ITERATIONS: u32 = 50;
/// Step of every threshold adjustment, °C (`ADJUSTMENT_STEP`).
pub const ADJUSTMENT_STEP_C: f64 = 3.0;
/// Polling interval while cooling.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

pub use crate::choices::ThermalMode;

/// The guard's thresholds (nsight-python's `thermal_wait`, `thermal_cont`, `thermal_timeout`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ThermalSettings {
    /// Pause when the headroom is at most this, °C.
    pub wait_c: f64,
    /// Resume when the headroom is at least this, °C (the starting value in auto mode).
    pub cont_c: f64,
    /// Longest wait before giving up (auto: before lowering `cont_c`).
    pub timeout: Duration,
    /// Polling interval while cooling.
    pub poll: Duration,
}

impl Default for ThermalSettings {
    fn default() -> Self {
        ThermalSettings {
            wait_c: DEFAULT_THERMAL_WAIT_C,
            cont_c: DEFAULT_THERMAL_CONT_C,
            timeout: DEFAULT_THERMAL_TIMEOUT,
            poll: POLL_INTERVAL,
        }
    }
}

impl ThermalSettings {
    /// Checks that the thresholds are finite, `wait_c < cont_c`, and the times positive.
    pub fn validate(&self) -> Result<(), ConditionsError> {
        let bad = |m: String| Err(ConditionsError::InvalidThermalSettings(m));
        if !self.wait_c.is_finite() || !self.cont_c.is_finite() {
            return bad(format!(
                "thermal_wait {} and thermal_cont {} must be finite",
                self.wait_c, self.cont_c
            ));
        }
        if self.wait_c >= self.cont_c {
            return bad(format!(
                "thermal_wait ({} °C) must be below thermal_cont ({} °C): the guard pauses at a headroom <= thermal_wait and resumes at >= thermal_cont",
                self.wait_c, self.cont_c
            ));
        }
        if self.timeout.is_zero() || self.poll.is_zero() {
            return bad("thermal_timeout and the polling interval must be positive".into());
        }
        Ok(())
    }
}

/// Where the guard reads the GPU's temperatures.
pub trait TemperatureSensor {
    /// Headroom to the slowdown temperature (NVML margin temperature), °C; `None` when it
    /// cannot be read.
    fn margin_c(&mut self) -> Option<f64>;
    /// GPU temperature, °C, for reports; `None` when it cannot be read.
    fn temperature_c(&mut self) -> Option<f64>;
    /// The headroom read afresh, used while the guard polls for cooling. The default is
    /// [`TemperatureSensor::margin_c`]; a sensor that answers `margin_c` from the background
    /// sampler's latest sample reads the device here.
    fn margin_c_fresh(&mut self) -> Option<f64> {
        self.margin_c()
    }
}

/// Time as the guard sees it.
pub trait Clock {
    /// Time since an arbitrary fixed origin.
    fn now(&self) -> Duration;
    /// Sleeps (a fake clock just advances).
    fn sleep(&mut self, d: Duration);
}

/// The real clock (`Instant`, `thread::sleep`).
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&mut self, d: Duration) {
        // In slices: a cancelled benchmark (`crate::cancel`) stops waiting at once.
        crate::cancel::sleep(d);
    }
}

/// One pause of the guard.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThermalWait {
    /// Time spent waiting, s.
    pub waited_s: f64,
    /// Headroom when the pause started, °C.
    pub margin_start_c: f64,
    /// Headroom when it ended, °C (NaN if the sensor failed).
    pub margin_end_c: f64,
    /// GPU temperature when it started, °C (NaN if unknown).
    pub temperature_start_c: f64,
    /// GPU temperature when it ended, °C (NaN if unknown).
    pub temperature_end_c: f64,
    /// Resume threshold that ended the pause, °C.
    pub cont_c: f64,
    /// Runs since the previous pause (0 for the first).
    pub runs_since_last: u32,
}

/// nsight-python's Thermovision guard (`nsight/thermovision.py`, v1.1.0: same algorithm and
/// defaults) over a [`TemperatureSensor`] and a [`Clock`], checked before every run.
///
/// It watches the headroom to the slowdown temperature (NVML's margin temperature, "T.Limit").
/// When the headroom is at most `wait_c` (10 °C) it pauses, polling every 0.5 s, until the
/// headroom is at least `cont_c` (20 °C). In `auto` mode the resume threshold adapts: when the GPU
/// needs to pause again after fewer than 5 runs, it cools more next time (`cont_c + 3`, at most
/// 50 °C); after more than 50 runs, it cools less (`cont_c - 3`, at least 12 °C); when cooling
/// takes longer than the timeout (180 s), it lowers `cont_c` by 3 (floor 12) and waits again, and
/// only at 12 °C does it give up with [`ConditionsError::CoolingTimeout`]. `manual` mode keeps the
/// thresholds fixed and gives up at the first timeout; `off` reads nothing. A sensor that cannot
/// read the headroom disables the guard with one warning.
///
/// In the profiler the check before each run reads the background sampler's latest sample
/// ([`super::background::SampledSensor`]), not NVML; the polls while cooling read NVML
/// ([`TemperatureSensor::margin_c_fresh`]).
pub struct ThermalGuard<S, C = SystemClock> {
    mode: ThermalMode,
    settings: ThermalSettings,
    cont_c: f64,
    sensor: Option<S>,
    clock: C,
    counting: bool,
    iterations_since_cont: u32,
    warnings: Vec<String>,
    waits: Vec<ThermalWait>,
    total_wait: Duration,
}

impl<S, C> fmt::Debug for ThermalGuard<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThermalGuard")
            .field("mode", &self.mode)
            .field("settings", &self.settings)
            .field("cont_c", &self.cont_c)
            .field("active", &self.sensor.is_some())
            .field("counting", &self.counting)
            .field("iterations_since_cont", &self.iterations_since_cont)
            .field("total_wait", &self.total_wait)
            .finish_non_exhaustive()
    }
}

impl<S: TemperatureSensor, C: Clock> ThermalGuard<S, C> {
    /// A guard in `mode` with `settings`. `sensor = None` (no NVML, no device) gives an inactive
    /// guard without a warning: the caller already reported why NVML is missing.
    pub fn new(
        mode: ThermalMode,
        settings: ThermalSettings,
        sensor: Option<S>,
        clock: C,
    ) -> Result<Self, ConditionsError> {
        if mode != ThermalMode::Off {
            settings.validate()?;
        }
        Ok(ThermalGuard {
            mode,
            settings,
            cont_c: settings.cont_c,
            sensor: if mode == ThermalMode::Off { None } else { sensor },
            clock,
            counting: false,
            iterations_since_cont: 0,
            warnings: Vec::new(),
            waits: Vec::new(),
            total_wait: Duration::ZERO,
        })
    }

    /// Call before every run. Returns the time spent waiting for the GPU to cool (zero when it
    /// did not pause), or [`ConditionsError::CoolingTimeout`] when it gave up.
    pub fn guard_before_run(&mut self) -> Result<Duration, ConditionsError> {
        let Some(margin) = self.read_margin() else {
            return Ok(Duration::ZERO);
        };
        if self.counting {
            self.iterations_since_cont += 1;
        }
        if margin <= self.settings.wait_c {
            let runs_since_last = self.iterations_since_cont;
            if self.mode == ThermalMode::Auto && self.counting && self.iterations_since_cont > 0 {
                if self.iterations_since_cont < TARGET_MIN_ITERATIONS {
                    self.cont_c = (self.cont_c + ADJUSTMENT_STEP_C).min(MAX_THERMAL_CONT_C);
                } else if self.iterations_since_cont > TARGET_MAX_ITERATIONS {
                    self.cont_c = (self.cont_c - ADJUSTMENT_STEP_C).max(MIN_THERMAL_CONT_C);
                }
            }
            self.counting = false;
            self.iterations_since_cont = 0;
            let waited = self.wait_for_cooling(margin, runs_since_last)?;
            if self.sensor.is_some() {
                self.counting = true;
                self.iterations_since_cont = 0;
            }
            return Ok(waited);
        }
        if margin >= self.cont_c && !self.counting {
            self.counting = true;
            self.iterations_since_cont = 0;
        }
        Ok(Duration::ZERO)
    }

    fn read_margin(&mut self) -> Option<f64> {
        self.read_margin_with(false)
    }

    fn read_margin_with(&mut self, fresh: bool) -> Option<f64> {
        let sensor = self.sensor.as_mut()?;
        let m = if fresh {
            sensor.margin_c_fresh()
        } else {
            sensor.margin_c()
        };
        match m {
            Some(m) if m.is_finite() => Some(m),
            _ => {
                self.sensor = None;
                self.warnings.push(
                    "thermal guard: the GPU's temperature headroom (NVML margin temperature) cannot be read on this machine; the thermal guard is disabled"
                        .into(),
                );
                None
            }
        }
    }

    fn read_temperature(&mut self) -> f64 {
        self.sensor.as_mut().and_then(|s| s.temperature_c()).unwrap_or(f64::NAN)
    }

    fn wait_for_cooling(&mut self, margin_start: f64, runs_since_last: u32) -> Result<Duration, ConditionsError> {
        let temperature_start = self.read_temperature();
        let first = self.clock.now();
        let mut attempt_start = first;
        let mut margin = margin_start;
        let finish = |g: &mut Self, margin_end: f64| {
            let waited = g.clock.now().saturating_sub(first);
            let temperature_end = g.read_temperature();
            g.total_wait += waited;
            g.waits.push(ThermalWait {
                waited_s: waited.as_secs_f64(),
                margin_start_c: margin_start,
                margin_end_c: margin_end,
                temperature_start_c: temperature_start,
                temperature_end_c: temperature_end,
                cont_c: g.cont_c,
                runs_since_last,
            });
            waited
        };
        loop {
            if margin >= self.cont_c {
                return Ok(finish(self, margin));
            }
            let now = self.clock.now();
            if now.saturating_sub(attempt_start) > self.settings.timeout {
                if self.mode == ThermalMode::Auto && self.cont_c > MIN_THERMAL_CONT_C {
                    let old = self.cont_c;
                    self.cont_c = (self.cont_c - ADJUSTMENT_STEP_C).max(MIN_THERMAL_CONT_C);
                    self.warnings.push(format!(
                        "thermal guard: the GPU did not reach {old} °C of headroom within {} s (headroom {margin} °C); resuming at {} °C instead",
                        self.settings.timeout.as_secs_f64(),
                        self.cont_c
                    ));
                    attempt_start = now;
                    continue;
                }
                let waited = now.saturating_sub(first);
                self.total_wait += waited;
                return Err(ConditionsError::CoolingTimeout {
                    margin_c: margin,
                    cont_c: self.cont_c,
                    waited_s: waited.as_secs_f64(),
                    timeout_s: self.settings.timeout.as_secs_f64(),
                    mode: self.mode.to_string(),
                });
            }
            self.clock.sleep(self.settings.poll);
            if crate::cancel::requested() {
                // The run loop returns the cancellation right after the guard.
                return Ok(finish(self, margin));
            }
            match self.read_margin_with(true) {
                Some(m) => margin = m,
                None => return Ok(finish(self, f64::NAN)),
            }
        }
    }

    /// The mode.
    pub fn mode(&self) -> ThermalMode {
        self.mode
    }

    /// Whether the guard still watches a sensor (false when off, without NVML, or disabled
    /// because the headroom cannot be read).
    pub fn is_active(&self) -> bool {
        self.sensor.is_some()
    }

    /// The current resume threshold, °C (adapted in auto mode).
    pub fn cont_c(&self) -> f64 {
        self.cont_c
    }

    /// The pause threshold, °C.
    pub fn wait_c(&self) -> f64 {
        self.settings.wait_c
    }

    /// Whether runs are being counted since the last resume (nsight's `counting`).
    pub fn is_counting(&self) -> bool {
        self.counting
    }

    /// Runs since counting started (nsight's `iterations_since_cont`).
    pub fn iterations_since_cont(&self) -> u32 {
        self.iterations_since_cont
    }

    /// Every pause so far.
    pub fn waits(&self) -> &[ThermalWait] {
        &self.waits
    }

    /// Total time spent waiting.
    pub fn total_wait(&self) -> Duration {
        self.total_wait
    }

    /// Warnings produced since the last call (print each once).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The clock (tests read the fake time through it).
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The sensor, while the guard is active.
    pub fn sensor_mut(&mut self) -> Option<&mut S> {
        self.sensor.as_mut()
    }
}
