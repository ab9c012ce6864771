//! The FFI layer: the bindings of every library kprof loads at run time (the CUDA driver, CUPTI,
//! libnvperf_host, NVTX, NVML, libc), one function table per library resolved once, the search for
//! those libraries ([`loader`]), kprof's own PTX kernels ([`kernels`]), and the only code of the
//! engine allowed to use `unsafe` (the crate root denies `unsafe_code` everywhere else;
//! `tests/all/house.rs` checks it, and that every `unsafe` block here has a `// SAFETY:` comment).
//! Nothing here knows the engine's error types: calls return the library's result code or a
//! [`loader::LoadError`], and the safe wrappers above turn them into `EngineError` or
//! `CountersError`. What each module binds, and the rules of the layer: `docs/architecture.md` (The
//! FFI layer).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod cupti;
pub mod driver;
pub mod kernels;
pub mod loader;
pub mod nvml;
pub mod nvtx;
pub mod os;
pub mod scoped;
