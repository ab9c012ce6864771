//! The loaded libcupti ([`Cupti`]): the FFI layer's function table ([`crate::sys::cupti`]) with the
//! engine's errors and hints. The activity session ([`super::collector`]) calls CUPTI through it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::EngineError;
use crate::sys::cupti::{
    CuptiFns, CuptiResult, SubscriberHandle, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_ERROR_NOT_INITIALIZED,
    CUPTI_ERROR_UNKNOWN, CUPTI_SUCCESS,
};
use crate::sys::loader::{load_library, nvperf_host_beside, LibKind, SearchEnv};

/// The loaded libcupti.
#[derive(Debug)]
pub struct Cupti {
    pub(crate) fns: CuptiFns,
    pub path: &'static Path,
    /// `libnvperf_host.so` beside libcupti, if present (for the Range Profiler, later).
    pub nvperf_host: Option<PathBuf>,
    /// cuptiGetVersion, e.g. 130001 (13.0); 0 if the call failed.
    pub api_version: u32,
}

static CUPTI: Mutex<Option<&'static Cupti>> = Mutex::new(None);

impl Cupti {
    /// Loads libcupti (once per process; see [`crate::sys::loader`] for the search order) and
    /// resolves the table. Needs no GPU: nothing here initialises CUDA.
    pub fn load(env: &SearchEnv) -> Result<&'static Cupti, EngineError> {
        let mut slot = CUPTI.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = *slot {
            return Ok(c);
        }
        let lib = load_library(LibKind::Cupti, env)?;
        let fns = CuptiFns::resolve(&lib)?;
        let mut version = 0u32;
        let mut c = Cupti {
            fns,
            path: lib.path,
            nvperf_host: nvperf_host_beside(lib.path),
            api_version: 0,
        };
        c.check("cuptiGetVersion", c.fns.get_version(&mut version))?;
        c.api_version = version;
        let c: &'static Cupti = Box::leak(Box::new(c));
        *slot = Some(c);
        Ok(c)
    }

    /// `cuptiFinalize`: detaches CUPTI from the process. Call it only when no activity session
    /// and no profiler session is open ([`crate::runner`] does, when a profiler ends).
    pub fn finalize(&self) -> Result<(), EngineError> {
        self.check("cuptiFinalize", self.fns.finalize())
    }

    /// The text for a CUPTI result code.
    pub fn result_string(&self, code: CuptiResult) -> String {
        self.fns
            .get_result_string(code)
            .unwrap_or_else(|| format!("CUPTI error {code}"))
    }

    /// Turns a result into `Ok(())` or [`EngineError::CuptiCall`] (with a hint for the codes
    /// users can act on).
    pub fn check(&self, call: &'static str, code: CuptiResult) -> Result<(), EngineError> {
        if code == CUPTI_SUCCESS {
            return Ok(());
        }
        let hint = match code {
            CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => Some(
                "this user may not profile the GPU (NVreg_RestrictProfilingToAdminUsers=1); \
                 run as root or ask the admin to lift the restriction"
                    .to_string(),
            ),
            CUPTI_ERROR_NOT_INITIALIZED => Some(
                "CUPTI could not initialise: check that libcuda.so.1 (the driver) is installed \
                 and matches this libcupti's CUDA major version"
                    .to_string(),
            ),
            CUPTI_ERROR_UNKNOWN => Some(
                "CUPTI gives this when it cannot reach a working CUDA driver/GPU: check that \
                 libcuda.so.1 loads and nvidia-smi sees the GPU"
                    .to_string(),
            ),
            _ => None,
        };
        Err(EngineError::CuptiCall {
            call,
            code,
            message: self.result_string(code),
            hint,
        })
    }

    /// `cuptiGetTimestamp`, in ns (same clock as the activity records).
    pub fn timestamp_ns(&self) -> Result<u64, EngineError> {
        let mut t = 0u64;
        self.check("cuptiGetTimestamp", self.fns.get_timestamp(&mut t))?;
        Ok(t)
    }

    /// Whether this CUPTI can switch API records per callback id (`cuptiActivityEnableDriverApi`
    /// and `...RuntimeApi`, CUPTI 12.5 and newer).
    pub fn has_per_cbid_switches(&self) -> bool {
        self.fns.has_enable_driver_api()
    }

    /// Takes CUPTI's one subscriber slot without a callback, as another profiling tool would
    /// (torch.profiler, Nsight Systems), to check what kprof does then; the slot is given back
    /// when the returned value is dropped.
    pub fn take_subscriber_slot(&'static self) -> Result<SubscriberSlot, EngineError> {
        let mut sub: SubscriberHandle = std::ptr::null_mut();
        self.check("cuptiSubscribe", self.fns.subscribe_without_callback(&mut sub))?;
        Ok(SubscriberSlot {
            cupti: self,
            handle: sub as usize,
        })
    }
}

/// CUPTI's subscriber slot, held by [`Cupti::take_subscriber_slot`] (given back on drop).
#[derive(Debug)]
pub struct SubscriberSlot {
    cupti: &'static Cupti,
    handle: usize,
}

impl Drop for SubscriberSlot {
    fn drop(&mut self) {
        let _ = self.cupti.fns.unsubscribe(self.handle as SubscriberHandle);
    }
}
