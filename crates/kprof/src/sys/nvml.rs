//! NVML (`libnvidia-ml`), through `nvml-wrapper` (whose `nvml-wrapper-sys` is NVML's one function
//! table in kprof).

use std::path::Path;

/// The driver release (e.g. `580.159.04`) from the libnvidia-ml at `path`: `nvmlInit_v2` and
/// `nvmlSystemGetDriverVersion`; `None` on any failure. NVML stays initialised for the rest of the
/// process (no `nvmlShutdown`).
pub fn driver_release(path: &Path) -> Option<String> {
    let nvml = std::panic::catch_unwind(|| nvml_wrapper::Nvml::builder().lib_path(path.as_os_str()).init())
        .ok()?
        .ok()?;
    let release = nvml.sys_driver_version().ok();
    // Dropping it would call nvmlShutdown.
    std::mem::forget(nvml);
    release
}
