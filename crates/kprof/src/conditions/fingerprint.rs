//! The environment fingerprint of a result: which GPU, driver, CUDA, host and kprof produced
//! it. Stored once per result, as JSON and as a `<csv stem>.env.json` sidecar next to the
//! result CSVs; `kprof show` prints it with [`render`].
//!
//! Every field is optional: whatever cannot be read (no NVML, no `/etc/os-release`, ...) is
//! `null`, never an error.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::nvml::{GpuDevice, Nvml};
use super::ConditionsError;

/// kprof's version (the engine crate's).
pub const KPROF_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git revision kprof was built from: `KPROF_GIT_REV` at build time (the environment
/// variable, else `git rev-parse --short HEAD`, both read by the crate's `build.rs`), else `unknown`.
pub const KPROF_GIT_REV: &str = match option_env!("KPROF_GIT_REV") {
    Some(r) => r,
    None => "unknown",
};

/// What the runner knows and NVML does not (or knows better: the CUDA device's own view).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FingerprintInputs {
    /// CUDA device ordinal of the benchmark.
    pub cuda_ordinal: Option<i32>,
    /// GPU name from the driver.
    pub gpu_name: Option<String>,
    /// UUID from the driver (`GPU-...`).
    pub uuid: Option<String>,
    /// Compute capability from the driver.
    pub compute_capability: Option<(i32, i32)>,
    /// `cuDriverGetVersion` (e.g. 13000).
    pub cuda_driver_version: Option<i32>,
    /// CUDA runtime version, when a runtime is loaded (e.g. `13.0`).
    pub cuda_runtime_version: Option<String>,
    /// CUPTI version (e.g. from [`format_cupti_version`]).
    pub cupti_version: Option<String>,
    /// The clock policy used, e.g. `none (clocks not locked)`.
    pub clock_policy: Option<String>,
    /// The thermal mode used (`auto`, `manual`, `off`).
    pub thermal_mode: Option<String>,
    /// How kernel durations were taken, e.g. `CUPTI kernel records, serial (not instrumented)`.
    pub kernel_timing: Option<String>,
    /// Rated SM clock from the driver, kHz (nsight's `ComputeClock`).
    pub rated_sm_clock_khz: Option<u32>,
    /// Rated memory clock from the driver, kHz (nsight's `MemoryClock`).
    pub rated_mem_clock_khz: Option<u32>,
    /// Streaming multiprocessors of the device, from the driver.
    pub sm_count: Option<u32>,
}

/// The environment of one result. `null` in JSON means "could not be read".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    /// GPU name, e.g. `NVIDIA H200`.
    pub gpu_name: Option<String>,
    /// GPU UUID (`GPU-...`).
    pub uuid: Option<String>,
    /// CUDA device ordinal used.
    pub cuda_ordinal: Option<i32>,
    /// NVML index of the same device (differs from the ordinal under `CUDA_VISIBLE_DEVICES`).
    pub nvml_index: Option<u32>,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: Option<String>,
    /// Driver version, e.g. `580.159.04`.
    pub driver_version: Option<String>,
    /// CUDA version the driver supports, e.g. `13.0`.
    pub cuda_driver_version: Option<String>,
    /// CUDA runtime version, when known.
    pub cuda_runtime_version: Option<String>,
    /// CUPTI version.
    pub cupti_version: Option<String>,
    /// NVML library version.
    pub nvml_version: Option<String>,
    /// ECC enabled.
    pub ecc_enabled: Option<bool>,
    /// MIG mode enabled.
    pub mig_enabled: Option<bool>,
    /// Persistence mode enabled.
    pub persistence_mode: Option<bool>,
    /// Enforced power limit, W.
    pub power_limit_w: Option<f64>,
    /// Max boost SM clock, MHz.
    pub max_sm_clock_mhz: Option<u32>,
    /// Max memory clock, MHz.
    pub max_mem_clock_mhz: Option<u32>,
    /// Rated SM clock from the driver, kHz (what nsight's `ComputeClock` column reports).
    pub rated_sm_clock_khz: Option<u32>,
    /// Rated memory clock from the driver, kHz (nsight's `MemoryClock`).
    pub rated_mem_clock_khz: Option<u32>,
    /// Streaming multiprocessors of the device (what ncu's `launch__sm_count` reports for a
    /// launch on the whole device).
    pub sm_count: Option<u32>,
    /// The clock policy used.
    pub clock_policy: Option<String>,
    /// The thermal mode used.
    pub thermal_mode: Option<String>,
    /// How kernel durations were taken (CUPTI serial or concurrent kernel records, CUDA events).
    pub kernel_timing: Option<String>,
    /// Processes on the GPU other than kprof's, when the result was taken.
    pub other_processes: Option<u32>,
    /// Host name.
    pub hostname: Option<String>,
    /// Operating system (`PRETTY_NAME` of `/etc/os-release`).
    pub os: Option<String>,
    /// Kernel (`ostype osrelease`, as `uname -sr`).
    pub kernel: Option<String>,
    /// CPU architecture.
    pub arch: Option<String>,
    /// kprof version.
    pub kprof_version: Option<String>,
    /// kprof's git revision, `unknown` when not built by the build scripts.
    pub git_revision: Option<String>,
    /// When the fingerprint was taken, seconds since the Unix epoch.
    pub collected_at_unix_s: Option<u64>,
}

/// `13000` → `13.0`, `12040` → `12.4`.
pub fn format_cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// CUPTI's API version as a release: `130001` → `13.0 (API 130001)`; older small API numbers
/// stay `API 24`.
pub fn format_cupti_version(api: u32) -> String {
    if api >= 10_000 {
        format!("{}.{} (API {api})", api / 10_000, (api / 100) % 100)
    } else {
        format!("API {api}")
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The host name (`/proc/sys/kernel/hostname`, `/etc/hostname`, `$HOSTNAME`).
pub fn hostname() -> Option<String> {
    read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| read_trimmed("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
}

/// `PRETTY_NAME` (else `NAME VERSION`) from an os-release text.
pub fn parse_os_release(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').trim_matches('\'').to_string())
        })
    };
    get("PRETTY_NAME")
        .filter(|s| !s.is_empty())
        .or_else(|| get("NAME").map(|n| format!("{n} {}", get("VERSION").unwrap_or_default()).trim().to_string()))
}

fn os_name() -> Option<String> {
    ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| parse_os_release(&t))
}

fn kernel() -> Option<String> {
    match (
        read_trimmed("/proc/sys/kernel/ostype"),
        read_trimmed("/proc/sys/kernel/osrelease"),
    ) {
        (Some(t), Some(r)) => Some(format!("{t} {r}")),
        (None, Some(r)) => Some(r),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

impl Fingerprint {
    /// Collects the fingerprint from what the runner knows, NVML (when loaded) and the host.
    /// The driver's values (`inputs`) win over NVML's for name, UUID, compute capability and
    /// CUDA driver version.
    pub fn collect(inputs: &FingerprintInputs, nvml: Option<&Nvml>, device: Option<&GpuDevice>) -> Fingerprint {
        let dev = device;
        Fingerprint {
            gpu_name: inputs.gpu_name.clone().or_else(|| dev.and_then(GpuDevice::name)),
            uuid: inputs.uuid.clone().or_else(|| dev.map(|d| d.uuid().to_string())),
            cuda_ordinal: inputs.cuda_ordinal,
            nvml_index: dev.and_then(GpuDevice::index),
            compute_capability: inputs
                .compute_capability
                .or_else(|| dev.and_then(GpuDevice::compute_capability))
                .map(|(a, b)| format!("{a}.{b}")),
            driver_version: nvml.and_then(Nvml::driver_version),
            cuda_driver_version: inputs
                .cuda_driver_version
                .or_else(|| nvml.and_then(Nvml::cuda_driver_version))
                .map(format_cuda_version),
            cuda_runtime_version: inputs.cuda_runtime_version.clone(),
            cupti_version: inputs.cupti_version.clone(),
            nvml_version: nvml.and_then(Nvml::nvml_version),
            ecc_enabled: dev.and_then(GpuDevice::ecc_enabled),
            mig_enabled: dev.and_then(GpuDevice::mig_enabled),
            persistence_mode: dev.and_then(GpuDevice::persistence_mode),
            power_limit_w: dev.and_then(GpuDevice::power_limit_mw).map(|mw| mw as f64 / 1000.0),
            max_sm_clock_mhz: dev.and_then(GpuDevice::max_sm_clock_mhz),
            max_mem_clock_mhz: dev.and_then(GpuDevice::max_mem_clock_mhz),
            rated_sm_clock_khz: inputs.rated_sm_clock_khz,
            rated_mem_clock_khz: inputs.rated_mem_clock_khz,
            sm_count: inputs.sm_count,
            clock_policy: inputs.clock_policy.clone(),
            thermal_mode: inputs.thermal_mode.clone(),
            kernel_timing: inputs.kernel_timing.clone(),
            other_processes: dev.and_then(GpuDevice::other_process_count),
            ..Fingerprint::host_only()
        }
    }

    /// Only what the host and the build tell: host name, OS, kernel, architecture, kprof
    /// version, git revision, time. Every GPU field is `null`.
    pub fn host_only() -> Fingerprint {
        Fingerprint {
            hostname: hostname(),
            os: os_name(),
            kernel: kernel(),
            arch: Some(std::env::consts::ARCH.to_string()),
            kprof_version: Some(KPROF_VERSION.to_string()),
            git_revision: Some(KPROF_GIT_REV.to_string()),
            collected_at_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs()),
            ..Fingerprint::default()
        }
    }

    /// Pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Fingerprint always serialises")
    }

    /// Parses JSON written by [`Fingerprint::to_json`]; unknown fields are ignored and missing
    /// ones are `null`, so older and newer files read.
    pub fn from_json(text: &str) -> Result<Fingerprint, ConditionsError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Writes the sidecar of a result CSV (see [`sidecar_path`]) and returns its path.
    pub fn write_sidecar(&self, csv_path: &Path) -> Result<PathBuf, ConditionsError> {
        let path = sidecar_path(csv_path);
        let mut text = self.to_json();
        text.push('\n');
        std::fs::write(&path, text).map_err(|source| ConditionsError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(path)
    }

    /// Reads the sidecar of a result CSV.
    pub fn read_sidecar(csv_path: &Path) -> Result<Fingerprint, ConditionsError> {
        let path = sidecar_path(csv_path);
        let text = std::fs::read_to_string(&path).map_err(|source| ConditionsError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Fingerprint::from_json(&text)
    }

    /// `(label, value)` pairs in display order; `None` values show as `unknown`.
    pub fn fields(&self) -> Vec<(&'static str, Option<String>)> {
        let yes_no = |b: Option<bool>| b.map(|b| if b { "enabled" } else { "disabled" }.to_string());
        let s = |v: &Option<String>| v.clone();
        vec![
            ("GPU", s(&self.gpu_name)),
            ("UUID", s(&self.uuid)),
            ("CUDA ordinal", self.cuda_ordinal.map(|v| v.to_string())),
            ("NVML index", self.nvml_index.map(|v| v.to_string())),
            ("Compute capability", s(&self.compute_capability)),
            ("Driver", s(&self.driver_version)),
            ("CUDA (driver)", s(&self.cuda_driver_version)),
            ("CUDA runtime", s(&self.cuda_runtime_version)),
            ("CUPTI", s(&self.cupti_version)),
            ("NVML", s(&self.nvml_version)),
            ("ECC", yes_no(self.ecc_enabled)),
            ("MIG", yes_no(self.mig_enabled)),
            ("Persistence mode", yes_no(self.persistence_mode)),
            ("Power limit", self.power_limit_w.map(|w| format!("{w:.0} W"))),
            ("Max SM clock", self.max_sm_clock_mhz.map(|v| format!("{v} MHz"))),
            ("Max memory clock", self.max_mem_clock_mhz.map(|v| format!("{v} MHz"))),
            ("Rated SM clock", self.rated_sm_clock_khz.map(|v| format!("{v} kHz"))),
            (
                "Rated memory clock",
                self.rated_mem_clock_khz.map(|v| format!("{v} kHz")),
            ),
            ("SMs", self.sm_count.map(|v| v.to_string())),
            ("Clock policy", s(&self.clock_policy)),
            ("Thermal mode", s(&self.thermal_mode)),
            ("Kernel timing", s(&self.kernel_timing)),
            ("Other GPU processes", self.other_processes.map(|v| v.to_string())),
            ("Host", s(&self.hostname)),
            ("OS", s(&self.os)),
            ("Kernel", s(&self.kernel)),
            ("Arch", s(&self.arch)),
            ("kprof", s(&self.kprof_version)),
            ("kprof git revision", s(&self.git_revision)),
            ("Collected at (Unix s)", self.collected_at_unix_s.map(|v| v.to_string())),
        ]
    }
}

/// The sidecar of a result CSV: `<dir>/<stem>.env.json` (`processed_data-mm-1.csv` →
/// `processed_data-mm-1.env.json`).
pub fn sidecar_path(csv_path: &Path) -> PathBuf {
    let stem = csv_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    csv_path.with_file_name(format!("{stem}.env.json"))
}

/// The fingerprint as aligned `label: value` lines for `kprof show`; unknown values read
/// `unknown`.
pub fn render(fp: &Fingerprint) -> String {
    let fields = fp.fields();
    let width = fields.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
    let mut out = String::from("Environment\n");
    for (label, value) in fields {
        let pad = width - label.chars().count();
        out.push_str(&format!(
            "  {label}{}  {}\n",
            " ".repeat(pad),
            value.as_deref().unwrap_or("unknown")
        ));
    }
    out
}
