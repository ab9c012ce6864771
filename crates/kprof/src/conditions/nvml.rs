//! NVML, loaded at run time through `nvml-wrapper` (which dlopens `libnvidia-ml.so.1`); the
//! calls nvml-wrapper does not wrap safely go through the FFI layer ([`crate::sys::nvml`]).
//!
//! A missing library or driver is an ordinary error value ([`ConditionsError::NvmlUnavailable`]):
//! callers print it once and record NaN condition columns. Every call here is a read; nothing
//! changes clocks, power limits or any other setting.
//!
//! The benchmark's CUDA device is mapped to its NVML device **by UUID** (the driver's
//! `cuDeviceGetUuid_v2`), because CUDA ordinals and NVML indices differ when
//! `CUDA_VISIBLE_DEVICES` is set.

use std::ffi::OsStr;
use std::sync::Arc;

use nvml_wrapper::enum_wrappers::device::{Clock as NvClock, TemperatureSensor as NvSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::structs::device::FieldId;

use super::thermal::TemperatureSensor;
use super::ConditionsError;
use crate::sys::nvml::BoundDevice;

/// NVML field id of the instantaneous power draw (mW), `NVML_FI_DEV_POWER_INSTANT`.
const FI_DEV_POWER_INSTANT: u32 = 186;

/// A loaded and initialised NVML. Cheap to clone (shared).
#[derive(Clone)]
pub struct Nvml {
    inner: Arc<nvml_wrapper::Nvml>,
}

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvml").finish_non_exhaustive()
    }
}

fn unavailable(e: nvml_wrapper::error::NvmlError) -> ConditionsError {
    ConditionsError::NvmlUnavailable { reason: e.to_string() }
}

impl Nvml {
    /// Loads `libnvidia-ml.so.1` (the file `KPROF_NVML_PATH` names when it is set, else from the
    /// loader path) and calls `nvmlInit_v2`.
    ///
    /// Without a driver this returns [`ConditionsError::NvmlUnavailable`]; it never panics.
    pub fn load() -> Result<Nvml, ConditionsError> {
        // KPROF_NVML_PATH (a file, or the folder holding libnvidia-ml.so.1) is exclusive when set,
        // as for the loader and `kprof doctor`.
        if let Some(path) = std::env::var_os(crate::sys::loader::ENV_NVML_PATH).filter(|p| !p.is_empty()) {
            let path = std::path::PathBuf::from(path);
            let file = if path.is_dir() {
                path.join("libnvidia-ml.so.1")
            } else {
                path
            };
            return Nvml::load_from(&file).map_err(|e| match e {
                ConditionsError::NvmlUnavailable { reason } => ConditionsError::NvmlUnavailable {
                    reason: format!(
                        "{} (from {}): {reason}; fix or unset {}",
                        file.display(),
                        crate::sys::loader::ENV_NVML_PATH,
                        crate::sys::loader::ENV_NVML_PATH
                    ),
                },
                e => e,
            });
        }
        let inner = std::panic::catch_unwind(nvml_wrapper::Nvml::init)
            .map_err(|_| ConditionsError::NvmlUnavailable {
                reason: "nvml-wrapper panicked while loading".into(),
            })?
            .map_err(unavailable)?;
        Ok(Nvml { inner: Arc::new(inner) })
    }

    /// Like [`Nvml::load`], from an explicit library path.
    pub fn load_from(path: impl AsRef<OsStr>) -> Result<Nvml, ConditionsError> {
        let path = path.as_ref();
        let inner = std::panic::catch_unwind(|| nvml_wrapper::Nvml::builder().lib_path(path).init())
            .map_err(|_| ConditionsError::NvmlUnavailable {
                reason: "nvml-wrapper panicked while loading".into(),
            })?
            .map_err(unavailable)?;
        Ok(Nvml { inner: Arc::new(inner) })
    }

    /// The wrapped `nvml-wrapper` handle, for calls this module does not cover.
    pub fn raw(&self) -> &nvml_wrapper::Nvml {
        &self.inner
    }

    /// Driver version, e.g. `580.159.04`.
    pub fn driver_version(&self) -> Option<String> {
        self.inner.sys_driver_version().ok()
    }

    /// NVML library version.
    pub fn nvml_version(&self) -> Option<String> {
        self.inner.sys_nvml_version().ok()
    }

    /// CUDA driver API version as an integer (`13000` for 13.0).
    pub fn cuda_driver_version(&self) -> Option<i32> {
        self.inner.sys_cuda_driver_version().ok()
    }

    /// Number of NVML devices (all GPUs of the machine, whatever `CUDA_VISIBLE_DEVICES` says).
    pub fn device_count(&self) -> Option<u32> {
        self.inner.device_count().ok()
    }

    /// The NVML device with this UUID. Accepts `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`,
    /// the same without the `GPU-` prefix, 32 bare hex digits, and `MIG-...` UUIDs (see
    /// [`normalize_uuid`]).
    pub fn device_by_uuid(&self, uuid: &str) -> Result<GpuDevice, ConditionsError> {
        let norm = normalize_uuid(uuid);
        match BoundDevice::by_uuid(&self.inner, norm.as_str()) {
            Ok(d) => Ok(GpuDevice::wrap(self, d)),
            Err(e) => Err(ConditionsError::DeviceNotFound {
                uuid: norm,
                reason: e.to_string(),
            }),
        }
    }

    /// The NVML device with this NVML index.
    pub fn device_by_index(&self, index: u32) -> Result<GpuDevice, ConditionsError> {
        match BoundDevice::by_index(&self.inner, index) {
            Ok(d) => Ok(GpuDevice::wrap(self, d)),
            Err(e) => Err(ConditionsError::Nvml {
                call: "nvmlDeviceGetHandleByIndex",
                reason: e.to_string(),
            }),
        }
    }

    /// The device to monitor, with nsight-python's fallback rules (§5.1):
    ///
    /// 1. the NVML device with the benchmark device's UUID;
    /// 2. if that fails (or no UUID is known), NVML device 0.
    ///
    /// nsight-python warns about the fallback only when a device was requested explicitly.
    /// kprof always warns when a UUID was given and not found, because a guard that watches the
    /// wrong GPU can hang a sweep (a known nsight-python problem); with no UUID it warns only when the
    /// machine has more than one GPU. `device` is `None` only when NVML has no device at all.
    pub fn resolve_device(&self, uuid: Option<&str>) -> ResolvedDevice {
        let mut warning = None;
        if let Some(u) = uuid {
            match self.device_by_uuid(u) {
                Ok(d) => {
                    return ResolvedDevice {
                        device: Some(d),
                        warning: None,
                    }
                }
                Err(e) => warning = Some(format!("{e}; monitoring NVML device 0 instead")),
            }
        }
        match self.device_by_index(0) {
            Ok(d) => {
                if uuid.is_some() {
                    if let Some(w) = &mut warning {
                        w.push_str(&format!(" ({}, {})", d.name().unwrap_or_default(), d.uuid()));
                    }
                } else if self.device_count().unwrap_or(0) > 1 {
                    warning = Some(format!(
                        "the benchmark device's UUID is not known; monitoring NVML device 0 ({}, {}) of {}",
                        d.name().unwrap_or_default(),
                        d.uuid(),
                        self.device_count().unwrap_or(0)
                    ));
                }
                ResolvedDevice {
                    device: Some(d),
                    warning,
                }
            }
            Err(e) => ResolvedDevice {
                device: None,
                warning: Some(format!(
                    "{}no NVML device to monitor ({e}); condition columns will be NaN and the thermal guard is off",
                    warning.map(|w| format!("{w}; ")).unwrap_or_default()
                )),
            },
        }
    }
}

/// The result of [`Nvml::resolve_device`].
#[derive(Debug, Clone)]
pub struct ResolvedDevice {
    /// The device to monitor, if any.
    pub device: Option<GpuDevice>,
    /// A warning to print once (fallback used, or nothing found).
    pub warning: Option<String>,
}

/// Brings a CUDA or NVML UUID to NVML's form `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`
/// (lower-case hex). `MIG-` UUIDs are kept as they are; 32 bare hex digits get the dashes and
/// the `GPU-` prefix; a dashed UUID without prefix gets the prefix. Anything else is returned
/// trimmed, unchanged.
pub fn normalize_uuid(uuid: &str) -> String {
    let u = uuid.trim();
    if u.len() >= 4 && u[..4].eq_ignore_ascii_case("MIG-") {
        return u.to_string();
    }
    let body = if u.len() >= 4 && u[..4].eq_ignore_ascii_case("GPU-") {
        &u[4..]
    } else {
        u
    };
    let hex: String = body.chars().filter(|c| *c != '-').collect();
    if hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        let h = hex.to_ascii_lowercase();
        return format!(
            "GPU-{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        );
    }
    u.to_string()
}

/// Formats the 16 raw bytes of `CUuuid` as NVML does.
pub fn uuid_from_bytes(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    normalize_uuid(&hex)
}

/// One NVML device, kept together with the NVML instance that owns it. Cheap to clone.
///
/// Every getter is a read that returns `None` when NVML says no (not supported, no
/// permission, ...), never an error that stops a run.
#[derive(Clone)]
pub struct GpuDevice {
    nvml: Nvml,
    device: BoundDevice,
    uuid: String,
    index: Option<u32>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("uuid", &self.uuid)
            .field("index", &self.index)
            .finish()
    }
}

impl GpuDevice {
    fn wrap(nvml: &Nvml, device: BoundDevice) -> GpuDevice {
        let d = device.dev();
        let (uuid, index) = (d.uuid().unwrap_or_default(), d.index().ok());
        GpuDevice {
            nvml: nvml.clone(),
            device,
            uuid,
            index,
        }
    }

    fn dev(&self) -> nvml_wrapper::Device<'_> {
        self.device.dev()
    }

    /// The NVML instance.
    pub fn nvml(&self) -> &Nvml {
        &self.nvml
    }

    /// NVML's UUID of the device (`GPU-...`).
    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    /// NVML index (differs from the CUDA ordinal under `CUDA_VISIBLE_DEVICES`).
    pub fn index(&self) -> Option<u32> {
        self.index
    }

    /// Product name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Option<String> {
        self.dev().name().ok()
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> Option<(i32, i32)> {
        self.dev().cuda_compute_capability().ok().map(|c| (c.major, c.minor))
    }

    /// Current SM clock, MHz.
    pub fn sm_clock_mhz(&self) -> Option<u32> {
        self.dev().clock_info(NvClock::SM).ok()
    }

    /// Current memory clock, MHz.
    pub fn mem_clock_mhz(&self) -> Option<u32> {
        self.dev().clock_info(NvClock::Memory).ok()
    }

    /// Maximum SM clock (the max boost clock), MHz. 1980 on the H200.
    pub fn max_sm_clock_mhz(&self) -> Option<u32> {
        self.dev().max_clock_info(NvClock::SM).ok()
    }

    /// Maximum memory clock, MHz.
    pub fn max_mem_clock_mhz(&self) -> Option<u32> {
        self.dev().max_clock_info(NvClock::Memory).ok()
    }

    /// Current clock-event ("throttle") reasons, the raw NVML bitmask including bits this
    /// crate has no name for. Uses `nvmlDeviceGetCurrentClocksEventReasons` (the current name),
    /// else the older `...ThrottleReasons` symbol.
    pub fn throttle_reasons(&self) -> Option<u64> {
        self.device.throttle_reasons()
    }

    /// GPU temperature, °C.
    pub fn temperature_c(&self) -> Option<u32> {
        self.dev().temperature(NvSensor::Gpu).ok()
    }

    /// Headroom to the slowdown temperature ("T.Limit"), °C: `nvmlDeviceGetMarginTemperature`,
    /// the value nsight-python's Thermovision watches. nvml-wrapper has no safe wrapper, so this
    /// is the raw call; `None` when the symbol is missing or the call fails.
    pub fn margin_temperature_c(&self) -> Option<i32> {
        self.device.margin_temperature_c()
    }

    /// Power draw, mW (`nvmlDeviceGetPowerUsage`; on Ampere and newer, except GA100, NVML
    /// documents this as the average over the last second).
    pub fn power_mw(&self) -> Option<u32> {
        self.dev().power_usage().ok()
    }

    /// Instantaneous power draw, mW (field `NVML_FI_DEV_POWER_INSTANT`), where supported.
    pub fn power_instant_mw(&self) -> Option<f64> {
        let v = self.dev().field_values_for(&[FieldId(FI_DEV_POWER_INSTANT)]).ok()?;
        let s = v.into_iter().next()?.ok()?;
        match s.value.ok()? {
            SampleValue::F64(x) => Some(x),
            SampleValue::U32(x) => Some(x as f64),
            SampleValue::U64(x) => Some(x as f64),
            SampleValue::I64(x) => Some(x as f64),
        }
    }

    /// Total energy used since the driver was loaded, mJ (Volta and newer).
    pub fn total_energy_mj(&self) -> Option<u64> {
        self.dev().total_energy_consumption().ok()
    }

    /// Enforced power limit, mW.
    pub fn power_limit_mw(&self) -> Option<u32> {
        self.dev().enforced_power_limit().ok()
    }

    /// ECC currently enabled.
    pub fn ecc_enabled(&self) -> Option<bool> {
        self.dev().is_ecc_enabled().ok().map(|s| s.currently_enabled)
    }

    /// MIG mode currently enabled.
    pub fn mig_enabled(&self) -> Option<bool> {
        self.dev().mig_mode().ok().map(|m| m.current != 0)
    }

    /// Persistence mode enabled.
    pub fn persistence_mode(&self) -> Option<bool> {
        self.dev().is_in_persistent_mode().ok()
    }

    /// Process ids of compute and graphics processes on the device.
    pub fn process_ids(&self) -> Option<Vec<u32>> {
        let d = self.dev();
        let mut pids: Vec<u32> = d.running_compute_processes().ok()?.into_iter().map(|p| p.pid).collect();
        if let Ok(g) = d.running_graphics_processes() {
            pids.extend(g.into_iter().map(|p| p.pid));
        }
        pids.sort_unstable();
        pids.dedup();
        Some(pids)
    }

    /// Number of processes on the device other than this one.
    pub fn other_process_count(&self) -> Option<u32> {
        let me = std::process::id();
        self.process_ids()
            .map(|p| p.iter().filter(|&&pid| pid != me).count() as u32)
    }
}

/// The device as the thermal guard's sensor.
impl TemperatureSensor for GpuDevice {
    fn margin_c(&mut self) -> Option<f64> {
        self.margin_temperature_c().map(f64::from)
    }
    fn temperature_c(&mut self) -> Option<f64> {
        GpuDevice::temperature_c(self).map(f64::from)
    }
}
