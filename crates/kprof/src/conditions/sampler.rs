//! Per-run conditions: SM and memory clocks, clock-event ("throttle") reasons, temperature, power and
//! energy, turned into extra columns ([`CONDITION_COLUMNS`], [`RunConditions`]), whether a run was
//! throttled ([`RunConditions::classify`]) and the `ThrottledRuns` count of the processed table.
//! The profiler computes each run's conditions from the background sampler's samples
//! ([`super::background`]); [`RunSampler`] here reads NVML right before and after a run instead.
//! Without NVML every number is NaN and `ThrottleReasons` is empty; nothing fails.
//!
//! What each column holds, as users read it: `docs/python-differences.md` (Run conditions).

use std::time::{Duration, Instant};

use kprof_core::columns::THROTTLED_COLUMN;
use kprof_core::{ExtraValue, ProcessedResults, RawResults};

use super::background::Sample;
use super::nvml::GpuDevice;

/// Column names written for every run, in order (defined in kprof-core, whose raw-CSV reader
/// reads them as extra columns).
pub use kprof_core::columns::CONDITION_COLUMNS;

/// The processed-table column counting throttled runs. kprof-core's `stats::aggregate` adds it
/// itself whenever the raw results have a `Throttled` column; [`add_throttled_runs`] is for
/// processed tables built some other way.
pub use kprof_core::columns::THROTTLED_RUNS_COLUMN;

/// A run whose SM clock is below this fraction of the max boost clock is throttled.
pub const THROTTLE_CLOCK_FRACTION: f64 = 0.9;

/// NVML clock-event reason bits (`nvmlClocksEventReason*`).
pub mod reasons {
    /// Nothing is running on the GPU.
    pub const GPU_IDLE: u64 = 0x1;
    /// Clocks limited by the applications-clocks setting.
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    /// Software power cap.
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Hardware slowdown (temperature, power brake or fast power trigger).
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Held back by another GPU of its sync-boost group.
    pub const SYNC_BOOST: u64 = 0x10;
    /// Software thermal slowdown.
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    /// Hardware thermal slowdown.
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    /// Hardware power-brake slowdown.
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    /// Clocks limited by the display clock setting.
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;
}

/// The reason bits that flag a run as throttled (thermal or power).
pub const THERMAL_OR_POWER: u64 = reasons::SW_POWER_CAP
    | reasons::HW_SLOWDOWN
    | reasons::SW_THERMAL_SLOWDOWN
    | reasons::HW_THERMAL_SLOWDOWN
    | reasons::HW_POWER_BRAKE_SLOWDOWN;

const REASON_NAMES: [(u64, &str); 9] = [
    (reasons::GPU_IDLE, "GpuIdle"),
    (reasons::APPLICATIONS_CLOCKS_SETTING, "ApplicationsClocksSetting"),
    (reasons::SW_POWER_CAP, "SwPowerCap"),
    (reasons::HW_SLOWDOWN, "HwSlowdown"),
    (reasons::SYNC_BOOST, "SyncBoost"),
    (reasons::SW_THERMAL_SLOWDOWN, "SwThermalSlowdown"),
    (reasons::HW_THERMAL_SLOWDOWN, "HwThermalSlowdown"),
    (reasons::HW_POWER_BRAKE_SLOWDOWN, "HwPowerBrakeSlowdown"),
    (reasons::DISPLAY_CLOCK_SETTING, "DisplayClockSetting"),
];

/// Names of the set reason bits, in bit order; unknown bits as hex (`0x200`); `None` for 0.
pub fn throttle_reason_names(bits: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = bits;
    for (bit, name) in REASON_NAMES {
        if bits & bit != 0 {
            out.push(name.to_string());
            rest &= !bit;
        }
    }
    for i in 0..64 {
        if rest & (1 << i) != 0 {
            out.push(format!("{:#x}", 1u64 << i));
        }
    }
    if out.is_empty() {
        out.push("None".into());
    }
    out
}

/// Where the sampler reads conditions (NVML in production, a fake in tests).
pub trait ConditionsSource {
    /// Current SM clock, MHz.
    fn sm_clock_mhz(&mut self) -> Option<f64>;
    /// Current memory clock, MHz.
    fn mem_clock_mhz(&mut self) -> Option<f64>;
    /// Max boost SM clock, MHz (read once).
    fn max_sm_clock_mhz(&mut self) -> Option<f64>;
    /// Clock-event reasons bitmask.
    fn throttle_reasons(&mut self) -> Option<u64>;
    /// GPU temperature, °C.
    fn temperature_c(&mut self) -> Option<f64>;
    /// Power draw, mW.
    fn power_mw(&mut self) -> Option<f64>;
    /// Total-energy counter, mJ.
    fn total_energy_mj(&mut self) -> Option<u64>;
    /// Headroom to the slowdown temperature (NVML margin temperature), °C, for the thermal
    /// guard's check before each run ([`super::background`]); `None` (the default) when the
    /// source cannot read it, and then the guard reads its own sensor.
    fn margin_c(&mut self) -> Option<f64> {
        None
    }
    /// Enforced power limit, mW (read once, for the rests' power windows:
    /// [`super::power::PowerWindow`]); `None` (the default) when the source cannot read it.
    fn power_limit_mw(&mut self) -> Option<f64> {
        None
    }
}

/// NVML's device is a source: each reading is its method of that name (`margin_c`: its margin
/// temperature), as `f64` where NVML gives a narrower number.
macro_rules! nvml_readings {
    (widened: $($reading:ident = $method:ident),*; as_is: $($same:ident),*) => {
        impl ConditionsSource for GpuDevice {
            $(
                fn $reading(&mut self) -> Option<f64> {
                    GpuDevice::$method(self).map(f64::from)
                }
            )*
            $(
                fn $same(&mut self) -> Option<u64> {
                    GpuDevice::$same(self)
                }
            )*
        }
    };
}

nvml_readings! {
    widened: sm_clock_mhz = sm_clock_mhz,
        mem_clock_mhz = mem_clock_mhz,
        max_sm_clock_mhz = max_sm_clock_mhz,
        temperature_c = temperature_c,
        power_mw = power_mw,
        margin_c = margin_temperature_c,
        power_limit_mw = power_limit_mw;
    as_is: throttle_reasons, total_energy_mj
}

/// The conditions of one run. Numbers are NaN when unknown.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunConditions {
    /// SM clock right before the run (background sampler: the nearest sample before it), MHz.
    pub sm_clock_mhz_before: f64,
    /// SM clock of the run, MHz (the `SMClockMHz` column): right after it with direct reads;
    /// the mean of the samples during it (or the nearest sample) with the background sampler.
    pub sm_clock_mhz_after: f64,
    /// Max boost SM clock of the device, MHz.
    pub max_sm_clock_mhz: f64,
    /// Memory clock after (background sampler: mean during) the run, MHz.
    pub mem_clock_mhz: f64,
    /// Clock-event reasons before the run (background sampler: of the nearest sample before).
    pub throttle_reasons_before: Option<u64>,
    /// Clock-event reasons after the run (background sampler: OR of the samples during the run
    /// and the nearest before and after); the `ThrottleReasons` column.
    pub throttle_reasons: Option<u64>,
    /// GPU temperature after (background sampler: mean during) the run, °C.
    pub temperature_c: f64,
    /// Power draw after (background sampler: mean during) the run, mW.
    pub power_mw: f64,
    /// Energy used during the run (counter difference; background sampler: of the interpolated
    /// counter), mJ.
    pub energy_mj: f64,
    /// Host time between the before and after readings (background sampler: the run's start
    /// and end stamps), s.
    pub wall_s: f64,
    /// Time the thermal guard waited before the run, s.
    pub thermal_wait_s: f64,
    /// Whether the run was throttled: its SM clock (the lowest sample during the run; with direct
    /// reads the clock after it) below [`THROTTLE_CLOCK_FRACTION`] of the max boost clock, or a
    /// [`THERMAL_OR_POWER`] reason set before, during or after it; `None` when neither the clock
    /// nor the reasons can be read.
    pub throttled: Option<bool>,
    /// Lowest SM clock seen during the run, MHz (background sampler: the minimum of the samples
    /// inside the run; direct reads: NaN, and [`RunConditions::classify`] uses the clock after
    /// the run).
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub sm_clock_mhz_min: f64,
    /// Background sampler: the number of samples taken inside the run. `Some(0)` means the run
    /// was shorter than the poll interval and its clocks, temperature and power are the nearest
    /// sample's; with fewer than 2 the energy is an interpolation at the counter's resolution
    /// (an estimate). `None` for direct reads ([`RunSampler`]) or without NVML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_in_run: Option<u32>,
    /// Background sampler: the update period of NVML's energy counter seen around the run, s
    /// (NaN when unknown). A run shorter than it has NaN energy (not resolved).
    #[serde(default = "nan", skip_serializing_if = "is_nan")]
    pub energy_update_period_s: f64,
    /// Background sampler: whether the energy counter was read around the run (its energy can
    /// then be NaN only for want of resolution).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub energy_counter_read: bool,
}

fn nan() -> f64 {
    f64::NAN
}

fn is_nan(x: &f64) -> bool {
    x.is_nan()
}

impl RunConditions {
    /// The conditions of a run without NVML: every reading NaN, only the guard's wait known.
    pub fn unknown(thermal_wait: Duration) -> Self {
        RunConditions {
            sm_clock_mhz_before: f64::NAN,
            sm_clock_mhz_after: f64::NAN,
            max_sm_clock_mhz: f64::NAN,
            mem_clock_mhz: f64::NAN,
            throttle_reasons_before: None,
            throttle_reasons: None,
            temperature_c: f64::NAN,
            power_mw: f64::NAN,
            energy_mj: f64::NAN,
            wall_s: f64::NAN,
            thermal_wait_s: thermal_wait.as_secs_f64(),
            throttled: None,
            sm_clock_mhz_min: f64::NAN,
            samples_in_run: None,
            energy_update_period_s: f64::NAN,
            energy_counter_read: false,
        }
    }

    /// Decides [`RunConditions::throttled`] from the other fields.
    pub fn classify(&mut self) {
        let clock = if self.sm_clock_mhz_min.is_finite() {
            self.sm_clock_mhz_min
        } else {
            self.sm_clock_mhz_after
        };
        let clock_low = (clock.is_finite() && self.max_sm_clock_mhz.is_finite() && self.max_sm_clock_mhz > 0.0)
            .then_some(clock < THROTTLE_CLOCK_FRACTION * self.max_sm_clock_mhz);
        let reasons = match (self.throttle_reasons_before, self.throttle_reasons) {
            (None, None) => None,
            (a, b) => Some((a.unwrap_or(0) | b.unwrap_or(0)) & THERMAL_OR_POWER != 0),
        };
        self.throttled = match (clock_low, reasons) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(false) || b.unwrap_or(false)),
        };
    }

    /// Names of the reasons after the run.
    pub fn throttle_reason_names(&self) -> Vec<String> {
        self.throttle_reasons.map(throttle_reason_names).unwrap_or_default()
    }

    /// The run's extra columns ([`CONDITION_COLUMNS`], in order).
    pub fn to_extras(&self) -> Vec<(&'static str, ExtraValue)> {
        let n = ExtraValue::Number;
        vec![
            ("SMClockMHz", n(self.sm_clock_mhz_after)),
            ("MemClockMHz", n(self.mem_clock_mhz)),
            ("TemperatureC", n(self.temperature_c)),
            ("PowerW", n(self.power_mw / 1000.0)),
            ("EnergyMilliJ", n(self.energy_mj)),
            (
                "ThrottleReasons",
                self.throttle_reasons
                    .map(|b| ExtraValue::Text(format!("{b:#x}")))
                    .unwrap_or(ExtraValue::Missing),
            ),
            (
                THROTTLED_COLUMN,
                n(self.throttled.map(|t| if t { 1.0 } else { 0.0 }).unwrap_or(f64::NAN)),
            ),
            ("ThermalWaitS", n(self.thermal_wait_s)),
        ]
    }
}

struct Before {
    at: Instant,
    sm: f64,
    reasons: Option<u64>,
    energy: Option<u64>,
}

/// Reads conditions around each run: [`RunSampler::begin_run`] right before the run,
/// [`RunSampler::end_run`] right after it has synchronised. The direct alternative to the
/// profiler's background sampler ([`super::background`]), kept for standalone checks that want
/// readings at the run's edges; its NVML reads cost milliseconds per run
/// (`docs/python-differences.md`).
pub struct RunSampler<S> {
    source: Option<S>,
    max_sm_clock_mhz: f64,
    before: Option<Before>,
}

impl<S: ConditionsSource> RunSampler<S> {
    /// A sampler over `source`; `None` (no NVML) gives NaN conditions.
    pub fn new(mut source: Option<S>) -> Self {
        let max_sm_clock_mhz = source.as_mut().and_then(|s| s.max_sm_clock_mhz()).unwrap_or(f64::NAN);
        RunSampler {
            source,
            max_sm_clock_mhz,
            before: None,
        }
    }

    /// Whether a source is present.
    pub fn is_active(&self) -> bool {
        self.source.is_some()
    }

    /// The max boost SM clock read at construction, MHz (NaN if unknown).
    pub fn max_sm_clock_mhz(&self) -> f64 {
        self.max_sm_clock_mhz
    }

    /// Reads the "before" values: energy counter, SM clock, reasons. Cheap (a few NVML calls,
    /// tens of microseconds); call it outside the timed region.
    pub fn begin_run(&mut self) {
        self.before = self.source.as_mut().map(|s| {
            let energy = s.total_energy_mj();
            let sm = s.sm_clock_mhz().unwrap_or(f64::NAN);
            let reasons = s.throttle_reasons();
            Before {
                at: Instant::now(),
                sm,
                reasons,
                energy,
            }
        });
    }

    /// Reads the "after" values and returns the run's conditions. `thermal_wait` is what
    /// [`super::ThermalGuard::guard_before_run`] returned for this run.
    pub fn end_run(&mut self, thermal_wait: Duration) -> RunConditions {
        let before = self.before.take();
        let Some(s) = self.source.as_mut() else {
            return RunConditions::unknown(thermal_wait);
        };
        let after = Sample::read(s, false);
        let (sm_before, reasons_before, energy, wall) = match &before {
            Some(b) => (
                b.sm,
                b.reasons,
                match (b.energy, after.energy_mj) {
                    // An unchanged counter did not resolve the run (it moves in steps of tens of
                    // joules): NaN, not a zero that is not true.
                    (Some(a), Some(z)) if z > a => (z - a) as f64,
                    _ => f64::NAN,
                },
                b.at.elapsed().as_secs_f64(),
            ),
            None => (f64::NAN, None, f64::NAN, f64::NAN),
        };
        let mut c = RunConditions {
            sm_clock_mhz_before: sm_before,
            sm_clock_mhz_after: after.sm_clock_mhz,
            max_sm_clock_mhz: self.max_sm_clock_mhz,
            mem_clock_mhz: after.mem_clock_mhz,
            throttle_reasons_before: reasons_before,
            throttle_reasons: after.reasons,
            temperature_c: after.temperature_c,
            power_mw: after.power_mw,
            energy_mj: energy,
            wall_s: wall,
            ..RunConditions::unknown(thermal_wait)
        };
        c.classify();
        c
    }
}

fn number(v: &ExtraValue) -> Option<f64> {
    match v {
        ExtraValue::Number(x) if x.is_finite() => Some(*x),
        ExtraValue::Text(t) => t.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// Per series of `raw` (indexed like `raw.series`): the number of runs whose `Throttled`
/// column is 1; `None` when no run of the series has a known `Throttled` value (no NVML, or no
/// `Throttled` column at all).
pub fn throttled_runs(raw: &RawResults) -> Vec<Option<u32>> {
    let mut out = vec![None; raw.series.len()];
    let Some(col) = raw.extras.iter().find(|c| c.name == THROTTLED_COLUMN) else {
        return out;
    };
    for (sample, v) in raw.samples.iter().zip(&col.values) {
        if let Some(x) = number(v) {
            let slot = out[sample.series as usize].get_or_insert(0);
            if x > 0.5 {
                *slot += 1;
            }
        }
    }
    out
}

/// Adds a `ThrottledRuns` column to every row of `processed` whose (benchmark, annotation,
/// metric, configuration) is a series of `raw`: the count from [`throttled_runs`], NaN when
/// unknown. Does nothing when `raw` has no `Throttled` column. Replaces an existing
/// `ThrottledRuns` value.
pub fn add_throttled_runs(processed: &mut ProcessedResults, raw: &RawResults) {
    if !raw.extras.iter().any(|c| c.name == THROTTLED_COLUMN) {
        return;
    }
    let counts = throttled_runs(raw);
    for row in &mut processed.rows {
        let found = raw.series.iter().position(|s| {
            s.key.benchmark == row.benchmark
                && s.key.annotation == row.annotation
                && s.key.metric == row.metric
                && raw.configs[s.key.config as usize] == row.config
        });
        let value = match found.and_then(|i| counts[i]) {
            Some(n) => ExtraValue::Number(n as f64),
            None => ExtraValue::Number(f64::NAN),
        };
        row.extras.retain(|(n, _)| n != THROTTLED_RUNS_COLUMN);
        row.extras.push((THROTTLED_RUNS_COLUMN.to_string(), value));
    }
}

/// Pearson correlation of each series' values with its `SMClockMHz` column over the runs where
/// both are finite (indexed like `raw.series`); `None` with fewer than 3 such runs or when
/// either has no variance. A strongly negative value means the time follows the clock.
pub fn clock_correlation(raw: &RawResults) -> Vec<Option<f64>> {
    let mut pairs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); raw.series.len()];
    if let Some(col) = raw.extras.iter().find(|c| c.name == "SMClockMHz") {
        for (s, v) in raw.samples.iter().zip(&col.values) {
            if let Some(clock) = number(v) {
                if s.value.is_finite() {
                    pairs[s.series as usize].push((s.value, clock));
                }
            }
        }
    }
    pairs.iter().map(|p| pearson(p)).collect()
}

/// Pearson's r of `(x, y)` pairs; `None` with fewer than 3 pairs or zero variance.
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let n = pairs.len() as f64;
    let (mx, my) = pairs.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (mx / n, my / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}
