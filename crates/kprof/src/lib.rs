//! kprof's engine: run-time loading of CUDA/CUPTI/NVML, the CUPTI activity backend, kernel
//! attribution to regions, NVTX ranges, and the run loop ([`runner`]).
//!
//! Nothing links against CUDA: every library is `dlopen`ed at run time by absolute path, and a
//! missing library is an [`EngineError`] with the list of places searched, never a panic.
//!
//! Every binding of those libraries, their search and loading, and every `unsafe` of the engine
//! are in one module, the FFI layer [`sys`]; the crate denies `unsafe_code` everywhere else, and
//! the modules above it ([`driver`], [`cupti`], [`counters`], [`conditions`], [`nvtx`]) are safe
//! wrappers that turn its result codes into [`EngineError`] and friends.
//!
//! # Where things are
//!
//! | module | what it holds |
//! |---|---|
//! | [`runner`] | the Rust API ([`runner::Profiler`], [`runner::BenchOptions`], [`runner::Run`]) and the run loop, in rooms (`runner/`) |
//! | [`choices`] | the options' choices, one enum and one parser each (`replay_mode`, `cache_control`, `clock_control`) |
//! | [`cupti`] | CUPTI activity records: the loaded libcupti ([`cupti::Cupti`]), the session ([`ActivitySession`]), record parsing, the graph guard |
//! | [`attribution`] | kernels and graph launches to regions, by external correlation id or launch time |
//! | [`counters`] | hardware counters in-process (CUPTI Range Profiler, Profiler Host API) |
//! | [`ncu`] | the Nsight Compute backend (relaunch under ncu, its exports) |
//! | [`conditions`] | run conditions through NVML, the thermal guard, the environment fingerprint |
//! | [`loader`], [`driver`] | the engine's libraries loaded once ([`Libraries`]); the CUDA driver ([`Driver`]) |
//! | [`nvtx`] | kprof's NVTX v3 ranges (names, push/pop) |
//! | [`sys`] | the FFI layer: bindings and function tables of libcuda, libcupti (with libnvperf_host), NVTX, NVML and libc, the library search and `dlopen`, kprof's PTX kernels; the only module with `unsafe` |
//! | [`settings`] | every `KPROF_*` environment variable, in one table (`docs/configuration.md`) |
//! | [`run_spec`] | what `kprof run` passes to its injection library (`KPROF_RUN_SPEC`, one JSON document) |
//! | [`error`] | [`EngineError`] and the error types it wraps ([`counters::CountersError`], [`ncu::NcuError`], [`conditions::ConditionsError`]) |
//! | [`ncu_version`] | an Nsight Compute version number ([`ncu_version::NcuVersion`]) |
//!
//! The signatures are in the rustdoc of each module (`cargo doc -p kprof --open`); the flow of one
//! measurement is in `docs/architecture.md`.

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
