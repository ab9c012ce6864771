//! The conditions of every run: thermal guard, measured clocks and throttling, energy, the
//! environment fingerprint, and user info collectors.
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

/// Errors of the conditions module (defined with the engine's error types, which wrap them).
pub use crate::error::ConditionsError;
