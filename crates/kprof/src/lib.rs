//! kprof's engine: run-time loading of CUDA/CUPTI/NVML, the CUPTI activity backend, kernel
//! attribution to regions, NVTX ranges, in-process counters, the Nsight Compute backend, and the run
//! loop with the Rust API ([`runner`]: [`runner::Profiler`], [`runner::BenchOptions`]).
//!
//! Nothing links against CUDA: every library is `dlopen`ed at run time by absolute path, and a
//! missing one is an [`EngineError`] with the places searched, never a panic. Every binding and every
//! `unsafe` is in the FFI layer [`sys`]; the modules above it ([`driver`], [`cupti`], [`counters`],
//! [`conditions`], [`nvtx`]) are safe wrappers that turn its result codes into [`EngineError`] and
//! friends. Where each module sits, and the flow of one measurement: `docs/architecture.md`.

#![deny(unsafe_code)]

pub use kprof_core as core;

/// kprof's version with the git revision it was built from, when known (`0.1.0+g1a2b3c4`, a PEP
/// 440 local version; plain `0.1.0` outside a git checkout). Set by `build.rs`; the
/// `KPROF_GIT_REV` environment variable at build time overrides git.
pub const VERSION: &str = env!("KPROF_VERSION_FULL");

pub mod attribution;
pub mod cancel;

/// Locks a mutex, taking over its data if a thread panicked while holding it (kprof's shared
/// state stays valid across such panics: callbacks never leave it half-written).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
pub mod choices;
pub mod conditions;
pub mod counters;
pub mod cupti;
pub mod driver;
pub mod error;
pub mod loader;
pub mod ncu;
pub mod ncu_version;
pub mod nvtx;
pub mod option_model;
pub mod overrides;
pub mod run_spec;
pub mod run_status;
pub mod runner;
pub mod settings;
// The FFI layer (bindings, function tables, library search): the only module allowed `unsafe`.
#[allow(unsafe_code)]
pub mod sys;

pub use attribution::{attribute, decode_region_key, encode_region_key, Attribution, RegionKey, RegionSpan};
pub use cupti::{ActivityBatch, ActivitySession, ApiRecord, ExternalCorrelationRecord, KernelRecord};
pub use driver::{DeviceProps, Driver};
pub use error::EngineError;
pub use loader::{Libraries, SearchEnv, Versions};
