//! The choices of a bench call's run loop: [`RunOrder`] (`order`), [`DurationSource`]
//! (`duration_source`), [`Backend`] (`backend`) and [`ThermalMode`] (`thermal_mode`), one enum and
//! one [`FromStr`](std::str::FromStr) each (re-exported from `choices`, `runner` and `conditions`).

use super::choice_names;

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

choice_names!(RunOrder, "order", {
    Interleaved => "interleaved",
    Sequential => "sequential",
});

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

choice_names!(DurationSource, "duration_source", {
    Auto => "auto",
    Records => "records",
    Counters => "counters",
});

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

choice_names!(Backend, "backend", {
    Cupti => "cupti",
    CudaEvents => "cuda-events",
    Ncu => "ncu",
});

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

choice_names!(ThermalMode, "thermal_mode", fold_case, {
    Auto => "auto",
    Manual => "manual",
    Off => "off" | "none" | "false",
});
