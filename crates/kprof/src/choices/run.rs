//! The choices of a bench call's run loop: [`RunOrder`] (`order`), [`DurationSource`]
//! (`duration_source`), [`Backend`] (`backend`) and [`ThermalMode`] (`thermal_mode`), one enum and
//! one [`FromStr`](std::str::FromStr) each (re-exported from `choices`, `runner` and `conditions`).

use super::{display_as_str, InvalidOptionValue};

/// The order of (configuration, run) pairs: the one enum of the `order` option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RunOrder {
    /// Run r of every configuration, then run r+1 (the default): slow drifts (thermal, clocks)
    /// spread over all configurations instead of biasing the last ones.
    #[default]
    Interleaved,
    /// All runs of a configuration, then the next configuration.
    Sequential,
}

impl RunOrder {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["interleaved", "sequential"];

    /// The option's canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOrder::Interleaved => "interleaved",
            RunOrder::Sequential => "sequential",
        }
    }
}

impl std::str::FromStr for RunOrder {
    type Err = InvalidOptionValue;

    /// Parses `"interleaved"` or `"sequential"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "interleaved" => Ok(RunOrder::Interleaved),
            "sequential" => Ok(RunOrder::Sequential),
            _ => Err(InvalidOptionValue::new("order", s, Self::NAMES)),
        }
    }
}

/// Where the durations of [`DEFAULT_METRIC`](kprof_core::model::DEFAULT_METRIC)
/// (`gpu__time_duration.sum`) come from: the one enum of the `duration_source` option (Python's
/// `duration_source`, `BenchOptions::duration`, `kprof run --durations`).
///
/// What a duration means in kprof: **an eager kernel's duration is Nsight Compute's
/// `gpu__time_duration`** (what nsight-python reports), and **a CUDA graph launch counts as the
/// graph's GPU span** (first node's start to last node's end, as CUDA events around the replay
/// see it), never one node's time. A region's value combines its kernels and graph launches
/// (the sum by default). Each sample's `DurationSource` column says which source gave it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DurationSource {
    /// Counters when this profiler can collect them, else records (the default). The choice is
    /// made once per bench call, before any recorded run: the counter session is opened then, and
    /// a failure (no counter permission, another profiler holding the counters, the CUDA events
    /// backend) falls back to records with one warning. A call whose warm-up runs replay CUDA
    /// graphs instantiated before the CUPTI session falls back to records too (with CUPTI 13.0 a
    /// counter pass corrupts the spans merged from their node records). Costs one more run of the
    /// closure per recorded run, and the Range Profiler session once per process (it stays open
    /// between benchmarks). With range replay (`ReplayMode::User`) auto is the records: the
    /// counter `gpu__time_duration` of a range runs from its push to its pop, idle time and
    /// launch latency included (a 1 MB `x * 2` read 75-89 us that way on the H200 against its
    /// 3 us kernel).
    #[default]
    Auto,
    /// CUPTI's kernel activity records of the timing pass: one pass, no counter permission
    /// needed, CUDA graphs timed as their span. With concurrent records (the default trace) short
    /// kernels read below ncu (1M-float kernel: 3.46 vs 4.22 us on the H200) and kernels of many
    /// tiny blocks above it (instrumentation); with serial records every kernel reads about 0.5 us
    /// above ncu, and CUDA graphs cannot be timed for the rest of the process.
    Records,
    /// The counter `gpu__time_duration.sum` of every kernel, collected in the counter pass of every
    /// recorded run (with the kernel records off), as Nsight Compute measures it; needs counter
    /// permission and `Profiler::new`. A recorded run of eager kernels is its counter pass alone,
    /// mapped to regions through the warm-up's records (`BenchOptions::one_pass`); runs with CUDA
    /// graph launches (which the Range Profiler does not profile) or a warm cache keep a timing
    /// pass too. Needs
    /// kernel or application replay (an error with range replay, whose ranges are not kernels).
    Counters,
}

impl DurationSource {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "records", "counters"];

    /// The option's canonical name, and the `DurationSource` column's value.
    pub fn as_str(self) -> &'static str {
        match self {
            DurationSource::Auto => "auto",
            DurationSource::Records => "records",
            DurationSource::Counters => "counters",
        }
    }
}

impl std::str::FromStr for DurationSource {
    type Err = InvalidOptionValue;

    /// Parses `"auto"`, `"records"` or `"counters"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(DurationSource::Auto),
            "records" => Ok(DurationSource::Records),
            "counters" => Ok(DurationSource::Counters),
            _ => Err(InvalidOptionValue::new("duration_source", s, Self::NAMES)),
        }
    }
}

/// The measurement backend of a bench call: the one enum of the `backend` option (Python's
/// `backend`; the Rust API chooses it by constructor: `Profiler::new`, `Profiler::with_cuda_events`,
/// the ncu backend's relaunch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// CUPTI activity records and, for counters, the Range Profiler (the default).
    #[default]
    Cupti,
    /// Two CUDA events around each region, no CUPTI.
    CudaEvents,
    /// The program relaunched under Nsight Compute (the ncu child runs the benchmark with CUPTI
    /// off).
    Ncu,
}

impl Backend {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["cupti", "cuda-events", "ncu"];

    /// The option's canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cupti => "cupti",
            Backend::CudaEvents => "cuda-events",
            Backend::Ncu => "ncu",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = InvalidOptionValue;

    /// Parses `"cupti"`, `"cuda-events"` or `"ncu"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cupti" => Ok(Backend::Cupti),
            "cuda-events" => Ok(Backend::CudaEvents),
            "ncu" => Ok(Backend::Ncu),
            _ => Err(InvalidOptionValue::new("backend", s, Self::NAMES)),
        }
    }
}

/// The thermal guard's mode: the one enum of the `thermal_mode` option (nsight-python's):
/// `auto` (adaptive resume threshold, the default), `manual` (fixed thresholds), `off`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThermalMode {
    /// nsight-python's default: adaptive resume threshold.
    #[default]
    Auto,
    /// Fixed thresholds; the first cooling timeout is an error.
    Manual,
    /// No guard.
    Off,
}

impl ThermalMode {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "manual", "off"];

    /// The option's canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            ThermalMode::Auto => "auto",
            ThermalMode::Manual => "manual",
            ThermalMode::Off => "off",
        }
    }
}

impl std::str::FromStr for ThermalMode {
    type Err = InvalidOptionValue;

    /// Parses `"auto"`, `"manual"` or `"off"` (also `"none"` and `"false"`), in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(ThermalMode::Auto),
            "manual" => Ok(ThermalMode::Manual),
            "off" | "none" | "false" => Ok(ThermalMode::Off),
            _ => Err(InvalidOptionValue::new("thermal_mode", s, Self::NAMES)),
        }
    }
}

display_as_str!(RunOrder, DurationSource, Backend, ThermalMode);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_choices_round_trip_and_name_bad_values() {
        for o in [RunOrder::Interleaved, RunOrder::Sequential] {
            assert_eq!(o.as_str().parse::<RunOrder>(), Ok(o));
        }
        for d in [DurationSource::Auto, DurationSource::Records, DurationSource::Counters] {
            assert_eq!(d.to_string().parse::<DurationSource>(), Ok(d));
        }
        for b in [Backend::Cupti, Backend::CudaEvents, Backend::Ncu] {
            assert_eq!(b.as_str().parse::<Backend>(), Ok(b));
        }
        for t in [ThermalMode::Auto, ThermalMode::Manual, ThermalMode::Off] {
            assert_eq!(t.as_str().parse::<ThermalMode>(), Ok(t));
        }
        assert_eq!("None".parse::<ThermalMode>(), Ok(ThermalMode::Off));
        let e = |r: Result<(), InvalidOptionValue>| r.unwrap_err().to_string();
        assert_eq!(
            e("ncu".parse::<DurationSource>().map(|_| ())),
            "duration_source must be one of 'auto', 'records', 'counters'; got 'ncu'"
        );
        assert_eq!(
            e("random".parse::<RunOrder>().map(|_| ())),
            "order must be one of 'interleaved', 'sequential'; got 'random'"
        );
        assert_eq!(
            e("nsys".parse::<Backend>().map(|_| ())),
            "backend must be one of 'cupti', 'cuda-events', 'ncu'; got 'nsys'"
        );
        assert_eq!(
            e("hot".parse::<ThermalMode>().map(|_| ())),
            "thermal_mode must be one of 'auto', 'manual', 'off'; got 'hot'"
        );
    }
}
