//! NVML (`libnvidia-ml`), through `nvml-wrapper` (whose `nvml-wrapper-sys` is NVML's one function
//! table in kprof): the driver release for the loader, and a device handle that can be stored
//! ([`BoundDevice`], what `crate::conditions::nvml::GpuDevice` reads through), with the two calls
//! nvml-wrapper has no safe wrapper for.

use std::path::Path;
use std::sync::Arc;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlMarginTemperature_v1_t};

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

/// `nvmlMarginTemperature_v1_t`'s struct version: `sizeof(struct) | 1 << 24`.
const MARGIN_TEMPERATURE_V1: u32 = std::mem::size_of::<nvmlMarginTemperature_v1_t>() as u32 | (1 << 24);

#[derive(Clone, Copy)]
struct Handle(nvmlDevice_t);

// SAFETY: an nvmlDevice_t is an opaque handle that NVML allows on any thread (nvml-wrapper
// marks `Device` Send + Sync as well).
unsafe impl Send for Handle {}
// SAFETY: as for Send.
unsafe impl Sync for Handle {}

/// An NVML device kept together with the NVML instance it was looked up in (which it keeps
/// initialised): an `nvml_wrapper::Device` that can be stored, cloned and sent.
#[derive(Clone)]
pub struct BoundDevice {
    nvml: Arc<nvml_wrapper::Nvml>,
    handle: Handle,
}

impl BoundDevice {
    /// The device of `nvml` with this UUID (NVML's form).
    pub(crate) fn by_uuid(nvml: &Arc<nvml_wrapper::Nvml>, uuid: &str) -> Result<BoundDevice, NvmlError> {
        let d = nvml.device_by_uuid(uuid)?;
        Ok(Self::keep(nvml, &d))
    }

    /// The device of `nvml` with this NVML index.
    pub(crate) fn by_index(nvml: &Arc<nvml_wrapper::Nvml>, index: u32) -> Result<BoundDevice, NvmlError> {
        let d = nvml.device_by_index(index)?;
        Ok(Self::keep(nvml, &d))
    }

    fn keep(nvml: &Arc<nvml_wrapper::Nvml>, d: &nvml_wrapper::Device<'_>) -> BoundDevice {
        BoundDevice {
            nvml: nvml.clone(),
            // SAFETY: only reads the handle, which stays valid while `nvml` is initialised (this
            // value keeps it alive).
            handle: Handle(unsafe { d.handle() }),
        }
    }

    /// The device, for nvml-wrapper's calls.
    pub(crate) fn dev(&self) -> nvml_wrapper::Device<'_> {
        // SAFETY: the handle was looked up in `self.nvml` (`by_uuid`, `by_index`), which is still
        // initialised.
        unsafe { nvml_wrapper::Device::new(self.handle.0, &self.nvml) }
    }

    /// `nvmlDeviceGetCurrentClocksEventReasons` (else the older `...ThrottleReasons` symbol): the
    /// raw bitmask; `None` when the symbol is missing or the call fails.
    pub(crate) fn throttle_reasons(&self) -> Option<u64> {
        let lib = self.nvml.lib();
        let f = lib
            .nvmlDeviceGetCurrentClocksEventReasons
            .as_ref()
            .or(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref())
            .ok()?;
        let mut bits: std::os::raw::c_ulonglong = 0;
        // SAFETY: a valid device handle of this NVML and an out-pointer to a live u64.
        let rc = unsafe { f(self.handle.0, &mut bits) };
        (rc == 0).then_some(bits)
    }

    /// `nvmlDeviceGetMarginTemperature` (nvml-wrapper has no safe wrapper): the headroom to the
    /// slowdown temperature, °C; `None` when the symbol is missing or the call fails.
    pub(crate) fn margin_temperature_c(&self) -> Option<i32> {
        let f = self.nvml.lib().nvmlDeviceGetMarginTemperature.as_ref().ok()?;
        let mut info = nvmlMarginTemperature_v1_t {
            version: MARGIN_TEMPERATURE_V1,
            marginTemperature: 0,
        };
        // SAFETY: a valid device handle and a versioned struct of the right size.
        let rc = unsafe { f(self.handle.0, &mut info) };
        (rc == 0).then_some(info.marginTemperature)
    }
}
