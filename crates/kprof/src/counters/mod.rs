//! Hardware counters in-process through the CUPTI Range Profiler and Profiler Host API (CUDA 12.6
//! Update 2+; written against CUDA 13.0 / CUPTI API 130001): [`metrics::MetricsCatalog`] (discovery,
//! validation, compatibility and pass counts without a GPU: the host API needs only the chip name,
//! `"GH100"` for H100/H200), [`range::RangeProfiler`] (collection on the GPU), [`sections`] (ncu's
//! section and set names into metric names) and [`recorded`] (images stored as files, re-evaluated
//! offline). The run loop gets libcupti from the engine's loader ([`engine_cupti`], so the activity
//! session and the Range Profiler share one copy); [`locate_cupti`] (with `KPROF_CUPTI_WHEEL_DIR`)
//! is for the offline `kprof metrics` on a GPU-less machine and for tests. Users' guide:
//! `docs/counters.md`.

pub mod host;
pub mod metrics;
pub mod range;
pub mod recorded;
pub mod sections;
pub mod units;

/// The parameter structs of the Profiler Host and Range Profiler APIs (the FFI layer's).
pub(crate) use crate::sys::cupti::profiler as structs;

use std::path::PathBuf;

pub use host::{CuptiLib, HostObject, MetricKind, MetricProperties};
pub use metrics::{MetricInfo, MetricScope, MetricsCatalog};
pub use range::{CollectTimings, RangeProfiler, RangeResult, Recording, ReplayMode, UserRanges};
pub use units::ncu_unit;

/// Errors of the counter module and its unknown-metric detail (defined with the engine's error
/// types, which wrap them).
pub use crate::error::{CountersError, UnknownMetric};

pub use crate::sys::loader::cupti_in;

/// Finds a libcupti for the counter module without loading the engine's libraries (the search is
/// the FFI layer's `sys::loader::locate_cupti`):
/// 1. `KPROF_CUPTI_PATH` (a file, or a folder holding `libcupti.so*`);
/// 2. `KPROF_CUPTI_WHEEL_DIR` (an unpacked `nvidia-cuda-cupti` wheel; CI uses
///    `target/cupti-wheel/unpacked` made by `scripts/setup-dev.sh`);
/// 3. `$CUDA_HOME/{extras/CUPTI/lib64,targets/x86_64-linux/lib}` and the same under `/usr/local/cuda`.
///
/// Offline use only (`kprof metrics` without a GPU, tests); the run loop uses [`engine_cupti`].
pub fn locate_cupti() -> Result<PathBuf, CountersError> {
    crate::sys::loader::locate_cupti().map_err(CountersError::NotFound)
}

/// The libcupti the engine loaded ([`crate::loader::Libraries::load`]), opened for the counter
/// entry points (the same file, so one CUPTI copy per process), with `libnvperf_host.so` from its
/// folder.
pub fn engine_cupti() -> Result<&'static CuptiLib, crate::error::EngineError> {
    let libs = crate::loader::Libraries::load()?;
    Ok(CuptiLib::load(&libs.cupti_path)?)
}

/// The chip name of the current device (e.g. `GH100`), through the engine's libraries; `None`
/// when there is no usable GPU (no driver, no device, no context).
///
/// The current context's device, else device 0 (the one a new context would use). No context
/// is created for it unless CUPTI refuses without one: `cuptiDeviceGetChipName` takes a device
/// index (CUPTI's samples ask for the chip before creating a context), and a context would stay
/// in this process (`kprof run` checks `--metrics` this way and then runs the program twice).
pub fn device_chip() -> Option<String> {
    let libs = crate::loader::Libraries::load().ok()?;
    let lib = CuptiLib::load(&libs.cupti_path).ok()?;
    let ordinal = match libs.cuda.current_context() {
        Ok(Some(_)) => libs.cuda.current_device().ok()?,
        _ => 0,
    };
    let ask = |ordinal: i32| {
        range::profiler_initialize(lib)
            .and_then(|()| range::chip_name(lib, ordinal as usize))
            .ok()
    };
    ask(ordinal).or_else(|| {
        libs.cuda.ensure_context().ok()?;
        ask(libs.cuda.current_device().ok()?)
    })
}
