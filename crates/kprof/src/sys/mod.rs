//! The FFI layer: the bindings of every library kprof loads at run time (the CUDA driver, CUPTI,
//! libnvperf_host, NVTX, NVML, libc), the search for those libraries, and the only code of the
//! engine allowed to use `unsafe`. The crate root denies `unsafe_code` everywhere else;
//! `tests/all/house.rs` checks that `unsafe` appears nowhere else in the source tree and that every
//! `unsafe` block here has a `// SAFETY:` comment above it.
//!
//! | module | what it binds |
//! |---|---|
//! | [`loader`] | the search for libcuda, libcupti and libnvidia-ml, and opening them (`dlopen`) |
//! | [`driver`] | the CUDA driver API: types, constants and the function table [`driver::DriverFns`] |
//! | [`kernels`] | kprof's own PTX kernels (the L2 flush), the only kernels the engine launches |
//! | [`cupti`] | CUPTI and libnvperf_host: result codes, activity kinds and record layouts, callback ids and data, the Profiler Host and Range Profiler structs, the function table [`cupti::CuptiFns`], the activity buffers and the subscriber's callback |
//! | [`nvtx`] | NVTX v3: kprof's own NVTX copy (the export tables a tool fills) and its declarations |
//! | [`nvml`] | NVML through `nvml-wrapper` |
//! | [`os`] | the few libc calls the engine makes (thread and user ids, the clock, `atexit`) |
//! | [`scoped`] | lending a `&mut` down the call stack across a callback (not FFI, the same kind of code) |
//!
//! Rules of this layer:
//! - one function table per library, resolved once; its entry points are private fields, each
//!   called through a safe method that says why the call is sound;
//! - handles a library gives out (contexts, events, modules, subscriber and profiler objects) go
//!   back to it as they came, and the library checks them; memory a library reads or writes is
//!   passed in as a Rust reference, slice or `CStr`, never as a raw pointer from above (one
//!   exception, documented where it is: the counter-data image that CUPTI's Range Profiler keeps
//!   writing into after `cuptiRangeProfilerSetConfig` returns, until the data is decoded);
//! - nothing here knows the engine's error types (this module sits below every other one): calls
//!   return the library's result code or a [`loader::LoadError`], and the safe wrappers above
//!   (`Driver`, `Cupti`, `CuptiLib`, `Nvml`, ...) turn them into `EngineError` or `CountersError`.

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

use std::ffi::{c_char, CStr};

/// The string an entry point returns through a `const char**` parameter: `call` is given the
/// pointer to fill and returns the result code; `None` unless that is `ok` and the pointer is not
/// null.
///
/// # Safety
/// When `call` returns `ok`, the pointer it filled is null or a NUL-terminated string that lives
/// for the process.
pub(crate) unsafe fn out_string<R: PartialEq>(ok: R, call: impl FnOnce(&mut *const c_char) -> R) -> Option<String> {
    let mut p: *const c_char = std::ptr::null();
    if call(&mut p) == ok && !p.is_null() {
        // SAFETY: per the caller.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    } else {
        None
    }
}
