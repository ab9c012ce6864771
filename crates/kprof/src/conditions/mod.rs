//! The conditions of every run: thermal guard, measured clocks and throttling, energy, the
//! environment fingerprint, and user info collectors (issue 7).
//!
//! - [`nvml`]: NVML loaded at run time through `nvml-wrapper`; the benchmark's CUDA device is
//!   mapped to its NVML device by UUID, so `CUDA_VISIBLE_DEVICES` is honoured.
//! - [`thermal`]: nsight-python's Thermovision guard (pause on low headroom to the slowdown limit,
//!   resume at a higher headroom, adaptive resume threshold), over injectable sensor and clock.
//! - [`sampler`]: clocks, throttle reasons, temperature, power and energy of each run, as extra
//!   columns; the `ThrottledRuns` count of the processed table.
//! - [`background`]: the thread that polls NVML during bench calls so that the run loop reads
//!   nothing per run; per-run conditions computed from its timestamped samples.
//! - [`fingerprint`]: the environment of a result (GPU, driver, CUDA, host, kprof version), as
//!   JSON and as a `<csv stem>.env.json` sidecar.
//! - [`collectors`]: user info collectors with nsight-python's scopes and name validation.
//!
//! Nothing here changes any GPU setting: every NVML call is a read.
//!
//! # How the runner uses it
//! ```ignore
//! // ProfilerConditions (runtime.rs) does this for the Profiler:
//! let bg = BackgroundSampler::start(device.clone(), Duration::from_millis(20)); // once
//! bg.set_active(true);                              // per bench call; polls every 20 ms
//! let mut guard = ThermalGuard::new(mode, settings, Some(bg.sensor(device.clone())), SystemClock::new())?;
//! for run in .. {
//!     let waited = guard.guard_before_run()?;       // latest sample's margin, no NVML read
//!     let start = Instant::now();
//!     /* the run */
//!     windows.push((start, Instant::now(), waited));
//! }
//! // at each flush, before the runs are recorded:
//! for cond in bg.conditions(&windows, None) { extras.extend(cond.to_extras()); }
//! ```

pub mod background;
pub mod collectors;
pub mod fingerprint;
pub mod nvml;
pub mod runtime;
pub mod sampler;
pub mod thermal;

pub use background::{BackgroundSampler, Sample};
pub use collectors::{
    CollectContext, CollectedValue, CollectedValues, CollectionScope, CollectorSession, CollectorSet, FnCollector,
    InfoCollector,
};
pub use fingerprint::{render, Fingerprint, FingerprintInputs};
pub use nvml::{GpuDevice, Nvml, ResolvedDevice};
pub use runtime::{Collectors, ConditionsProbe, ProfilerConditions, ThermalOptions};
pub use sampler::{ConditionsSource, RunConditions, RunSampler};
pub use thermal::{Clock, SystemClock, TemperatureSensor, ThermalGuard, ThermalMode, ThermalSettings};

/// Errors of the conditions module.
#[derive(Debug, thiserror::Error)]
pub enum ConditionsError {
    /// NVML (`libnvidia-ml.so.1`) could not be loaded or initialised. Callers report this once
    /// and record NaN condition columns; it is never fatal.
    #[error("NVML is not available ({reason}); clocks, temperature, power and energy will be NaN and the thermal guard is off")]
    NvmlUnavailable {
        /// What NVML or the loader said.
        reason: String,
    },
    /// No NVML device matches a UUID.
    #[error("no NVML device has UUID {uuid:?} ({reason})")]
    DeviceNotFound {
        /// The UUID looked for.
        uuid: String,
        /// What NVML said.
        reason: String,
    },
    /// An NVML call failed.
    #[error("NVML call {call} failed: {reason}")]
    Nvml {
        /// The call.
        call: &'static str,
        /// What NVML said.
        reason: String,
    },
    /// The GPU did not cool down to the resume threshold in time.
    #[error("the GPU did not cool down: temperature headroom {margin_c} °C stayed below the resume threshold {cont_c} °C for {waited_s:.1} s (thermal timeout {timeout_s} s, thermal mode {mode})")]
    CoolingTimeout {
        /// Headroom to the slowdown limit at the last reading, °C.
        margin_c: f64,
        /// The resume threshold when giving up, °C.
        cont_c: f64,
        /// Total time waited, s.
        waited_s: f64,
        /// The timeout per attempt, s.
        timeout_s: f64,
        /// `auto` or `manual`.
        mode: String,
    },
    /// Thermal settings that make no sense.
    #[error("invalid thermal settings: {0}")]
    InvalidThermalSettings(String),
    /// A thermal mode string other than `auto`, `manual`, `off`.
    #[error("unknown thermal mode {0:?}; expected \"auto\", \"manual\" or \"off\"")]
    UnknownThermalMode(String),
    /// A collection scope string other than `once`, `config`, `run`, `annotation`.
    #[error("unknown collection scope {0:?}; expected \"once\", \"config\", \"run\" or \"annotation\"")]
    UnknownScope(String),
    /// A collector name is used twice.
    #[error("info collector name {0:?} is used by more than one collector; collector names must be unique")]
    DuplicateCollector(String),
    /// A collector name is a column kprof or nsight-python already writes.
    #[error("info collector name {name:?} is reserved: it is {why}; choose another name")]
    ReservedCollectorName {
        /// The name.
        name: String,
        /// Which column it collides with.
        why: String,
    },
    /// A collector name equals a parameter of the benchmark.
    #[error("info collector name {0:?} collides with a parameter of the benchmark; choose another name")]
    CollectorParamCollision(String),
    /// An empty collector name.
    #[error("an info collector has an empty name")]
    EmptyCollectorName,
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// (De)serialising JSON.
    #[error("fingerprint JSON: {0}")]
    Json(#[from] serde_json::Error),
}
