//! The conditions of every run, read through NVML and never changing a GPU setting: [`nvml`] (the
//! benchmark's CUDA device mapped to its NVML device by UUID, so `CUDA_VISIBLE_DEVICES` is
//! honoured), [`thermal`] (nsight-python's Thermovision guard), [`sampler`] (clocks, throttle
//! reasons, temperature, power and energy of each run as columns), [`background`] (the thread that
//! polls NVML during bench calls so the run loop reads nothing per run), [`fingerprint`] (the
//! environment of a result, also as a `<csv stem>.env.json` sidecar) and [`collectors`] (user info
//! collectors with nsight-python's scopes). [`ProfilerConditions`] is what the runner drives.
//!
//! What users see: `docs/python-differences.md` (Run conditions, thermal guard, info collectors).

pub mod background;
pub mod collectors;
pub mod fingerprint;
pub mod nvml;
pub mod power;
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
