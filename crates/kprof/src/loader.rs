//! The engine's libraries, loaded once per process: libcuda ([`crate::driver::Driver`]), libcupti
//! ([`crate::cupti::Cupti`]) and, when present, libnvidia-ml (for the driver release).
//!
//! Where each library is searched for and how it is opened is the FFI layer's
//! ([`crate::sys::loader`], re-exported here): `KPROF_CUPTI_PATH`, `KPROF_LIBCUDA_PATH` and
//! `KPROF_NVML_PATH` first, then the places listed there.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::EngineError;
pub use crate::sys::loader::{
    load_library, mapped_libraries, nvperf_host_beside, open_plan, search, Candidate, LibKind, LoadError, LoadedLib,
    SearchEnv, SearchPlan, Source, ENV_CUPTI_PATH, ENV_LIBCUDA_PATH, ENV_NVML_PATH, ENV_PYTHON_SITE_PACKAGES,
};

/// Versions of the loaded stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    /// cuDriverGetVersion: the CUDA version the driver supports, e.g. 13000.
    pub driver: i32,
    /// cuptiGetVersion, e.g. 130001.
    pub cupti_api: u32,
    /// The driver release from NVML (e.g. "580.159.04"), when libnvidia-ml loaded.
    pub driver_release: Option<String>,
}

/// libcuda, libcupti (and libnvidia-ml when present), loaded once per process.
#[derive(Debug)]
pub struct Libraries {
    pub cuda: &'static crate::driver::Driver,
    pub cupti: &'static crate::cupti::Cupti,
    pub cuda_path: PathBuf,
    pub cupti_path: PathBuf,
    /// `libnvperf_host.so` beside libcupti, if present.
    pub nvperf_host_path: Option<PathBuf>,
    /// libnvidia-ml, if it loaded (optional: the engine runs without it).
    pub nvml_path: Option<PathBuf>,
    pub versions: Versions,
}

static LIBRARIES: Mutex<Option<&'static Libraries>> = Mutex::new(None);

impl Libraries {
    /// Loads everything from the real process environment ([`SearchEnv::from_process`]).
    pub fn load() -> Result<&'static Libraries, EngineError> {
        Self::load_with(&SearchEnv::from_process())
    }

    /// Loads everything with an explicit search environment (the Python package passes its
    /// site-packages here). The first successful call wins for the rest of the process.
    pub fn load_with(env: &SearchEnv) -> Result<&'static Libraries, EngineError> {
        let mut slot = crate::lock(&LIBRARIES);
        if let Some(l) = *slot {
            return Ok(l);
        }
        let cuda = crate::driver::Driver::load(env)?;
        let cupti = crate::cupti::Cupti::load(env)?;
        let (nvml_path, driver_release) = match load_library(LibKind::Nvml, env) {
            Ok(l) => (Some(l.path.to_path_buf()), crate::sys::nvml::driver_release(l.path)),
            Err(_) => (None, None),
        };
        let libs = Libraries {
            cuda,
            cupti,
            cuda_path: cuda.path.to_path_buf(),
            cupti_path: cupti.path.to_path_buf(),
            nvperf_host_path: cupti.nvperf_host.clone(),
            nvml_path,
            versions: Versions {
                driver: cuda.version,
                cupti_api: cupti.api_version,
                driver_release,
            },
        };
        let l: &'static Libraries = Box::leak(Box::new(libs));
        *slot = Some(l);
        Ok(l)
    }
}
