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
