//! A hand-written CUPTI function table (libloading; no generated bindings) and the constants the
//! activity backend uses. Every number here is checked against the real CUPTI 13.0 headers by
//! `tests/cupti_headers.rs` when the headers are available.

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::EngineError;
use crate::sys::loader::{load_library, nvperf_host_beside, LibKind, LoadedLib, SearchEnv};

/// `CUptiResult`.
pub type CuptiResult = u32;
/// `CUpti_SubscriberHandle` (opaque pointer).
pub type SubscriberHandle = *mut c_void;

pub const CUPTI_SUCCESS: CuptiResult = 0;
pub const CUPTI_ERROR_INVALID_PARAMETER: CuptiResult = 1;
pub const CUPTI_ERROR_MAX_LIMIT_REACHED: CuptiResult = 12;
pub const CUPTI_ERROR_NOT_INITIALIZED: CuptiResult = 15;
pub const CUPTI_ERROR_NOT_SUPPORTED: CuptiResult = 27;
pub const CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: CuptiResult = 35;
pub const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: CuptiResult = 39;
pub const CUPTI_ERROR_UNKNOWN: CuptiResult = 999;

/// `CUpti_ActivityKind` values used.
pub const ACTIVITY_KIND_KERNEL: u32 = 3;
pub const ACTIVITY_KIND_DRIVER: u32 = 4;
pub const ACTIVITY_KIND_RUNTIME: u32 = 5;
pub const ACTIVITY_KIND_CONCURRENT_KERNEL: u32 = 10;
pub const ACTIVITY_KIND_EXTERNAL_CORRELATION: u32 = 39;
/// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`: one record per graph launch (its GPU span), and no kernel
/// records for the graph's nodes.
pub const ACTIVITY_KIND_GRAPH_TRACE: u32 = 51;

/// `CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0`.
pub const EXTERNAL_CORRELATION_KIND_CUSTOM0: u32 = 3;

/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`.
pub const ACTIVITY_FLAG_FLUSH_FORCED: u32 = 1;

/// `CUpti_CallbackData` (cupti_callbacks.h, CUDA 13.0): what a driver or runtime API callback
/// receives. Field names as in the header (their offsets are checked against it in CI).
#[allow(non_snake_case)]
#[repr(C)]
pub struct CUpti_CallbackData {
    /// `CUpti_ApiCallbackSite`: 0 at the API's entry, 1 at its exit.
    pub callbackSite: u32,
    /// The API function's name (a global constant string).
    pub functionName: *const c_char,
    /// The API function's parameters.
    pub functionParams: *const c_void,
    /// The API function's return value (valid at exit).
    pub functionReturnValue: *mut c_void,
    /// Launch callbacks: the kernel's (mangled) name; valid only during the callback.
    pub symbolName: *const c_char,
    /// The current context.
    pub context: *mut c_void,
    /// Its unique id.
    pub contextUid: u32,
    /// Per-call user data shared by the entry and exit callbacks.
    pub correlationData: *mut u64,
    /// The correlation id of the call's activity record (and of the kernel it launches).
    pub correlationId: u32,
}

/// `CUpti_ResourceData` (cupti_callbacks.h): what a resource-domain callback receives.
#[allow(non_snake_case)]
#[repr(C)]
pub struct CUpti_ResourceData {
    /// The context of the resource.
    pub context: *mut c_void,
    /// `resourceHandle` (a union; the stream for stream callbacks).
    pub resourceHandle: *mut c_void,
    /// Graph callbacks: a [`CUpti_GraphData`].
    pub resourceDescriptor: *mut c_void,
}

/// `CUpti_GraphData` (cupti_callbacks.h): the descriptor of graph resource callbacks.
#[allow(non_snake_case)]
#[repr(C)]
pub struct CUpti_GraphData {
    pub graph: *mut c_void,
    pub originalGraph: *mut c_void,
    pub node: *mut c_void,
    pub originalNode: *mut c_void,
    /// `CUgraphNodeType`.
    pub nodeType: u32,
    pub dependency: *mut c_void,
    /// The executable (`GRAPHEXEC_*` callbacks).
    pub graphExec: *mut c_void,
}

/// Driver-API callback ids (`cupti_driver_cbid.h`) of the launch calls we trace.
pub mod cbid {
    pub const CU_LAUNCH_KERNEL: u32 = 307;
    pub const CU_LAUNCH_KERNEL_PTSZ: u32 = 442;
    pub const CU_LAUNCH_COOPERATIVE_KERNEL: u32 = 477;
    pub const CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ: u32 = 478;
    pub const CU_GRAPH_LAUNCH: u32 = 514;
    pub const CU_GRAPH_LAUNCH_PTSZ: u32 = 515;
    pub const CU_LAUNCH_KERNEL_EX: u32 = 652;
    pub const CU_LAUNCH_KERNEL_EX_PTSZ: u32 = 653;

    /// Every launch CBID enabled by the activity session.
    pub const LAUNCH_CBIDS: [u32; 8] = [
        CU_LAUNCH_KERNEL,
        CU_LAUNCH_KERNEL_PTSZ,
        CU_LAUNCH_COOPERATIVE_KERNEL,
        CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
        CU_GRAPH_LAUNCH,
        CU_GRAPH_LAUNCH_PTSZ,
        CU_LAUNCH_KERNEL_EX,
        CU_LAUNCH_KERNEL_EX_PTSZ,
    ];

    /// Runtime-API launch CBIDs (`cupti_runtime_cbid.h`). cuBLAS 13 launches through
    /// `cudaLaunchKernelExC` (430) with no traced driver call, so these matter.
    pub const CUDA_LAUNCH: u32 = 13;
    pub const CUDA_LAUNCH_KERNEL: u32 = 211;
    pub const CUDA_LAUNCH_PTSZ: u32 = 213;
    pub const CUDA_LAUNCH_KERNEL_PTSZ: u32 = 214;
    pub const CUDA_LAUNCH_COOPERATIVE_KERNEL: u32 = 269;
    pub const CUDA_LAUNCH_COOPERATIVE_KERNEL_PTSZ: u32 = 270;
    pub const CUDA_LAUNCH_COOPERATIVE_KERNEL_MULTI_DEVICE: u32 = 272;
    pub const CUDA_GRAPH_LAUNCH: u32 = 311;
    pub const CUDA_GRAPH_LAUNCH_PTSZ: u32 = 312;
    pub const CUDA_LAUNCH_KERNEL_EX_C: u32 = 430;
    pub const CUDA_LAUNCH_KERNEL_EX_C_PTSZ: u32 = 431;
    pub const CUDA_LAUNCH_KERNEL_INTERNAL: u32 = 505;
    pub const CUDA_LAUNCH_KERNEL_INTERNAL_PTSZ: u32 = 506;

    /// Every runtime launch CBID the activity session records.
    pub const RUNTIME_LAUNCH_CBIDS: [u32; 13] = [
        CUDA_LAUNCH,
        CUDA_LAUNCH_KERNEL,
        CUDA_LAUNCH_PTSZ,
        CUDA_LAUNCH_KERNEL_PTSZ,
        CUDA_LAUNCH_COOPERATIVE_KERNEL,
        CUDA_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
        CUDA_LAUNCH_COOPERATIVE_KERNEL_MULTI_DEVICE,
        CUDA_GRAPH_LAUNCH,
        CUDA_GRAPH_LAUNCH_PTSZ,
        CUDA_LAUNCH_KERNEL_EX_C,
        CUDA_LAUNCH_KERNEL_EX_C_PTSZ,
        CUDA_LAUNCH_KERNEL_INTERNAL,
        CUDA_LAUNCH_KERNEL_INTERNAL_PTSZ,
    ];

    /// Whether an API record of activity kind `kind` (4 driver, 5 runtime) is a kernel launch.
    pub fn is_launch(kind: u32, cbid: u32) -> bool {
        match kind {
            super::ACTIVITY_KIND_DRIVER => LAUNCH_CBIDS.contains(&cbid),
            super::ACTIVITY_KIND_RUNTIME => RUNTIME_LAUNCH_CBIDS.contains(&cbid),
            _ => false,
        }
    }

    /// Whether an API record of activity kind `kind` is a CUDA graph launch.
    pub fn is_graph_launch(kind: u32, cbid: u32) -> bool {
        match kind {
            super::ACTIVITY_KIND_DRIVER => cbid == CU_GRAPH_LAUNCH || cbid == CU_GRAPH_LAUNCH_PTSZ,
            super::ACTIVITY_KIND_RUNTIME => cbid == CUDA_GRAPH_LAUNCH || cbid == CUDA_GRAPH_LAUNCH_PTSZ,
            _ => false,
        }
    }
}

/// `CUpti_CallbackFunc`.
pub type CallbackFunc = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
/// `CUpti_BuffersCallbackRequestFunc`.
pub type BufferRequestedFunc = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// `CUpti_BuffersCallbackCompleteFunc`.
pub type BufferCompletedFunc = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

type FnGetVersion = unsafe extern "C" fn(*mut u32) -> CuptiResult;
type FnGetResultString = unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult;
type FnSubscribe = unsafe extern "C" fn(*mut SubscriberHandle, Option<CallbackFunc>, *mut c_void) -> CuptiResult;
type FnUnsubscribe = unsafe extern "C" fn(SubscriberHandle) -> CuptiResult;
type FnRegisterCallbacks =
    unsafe extern "C" fn(Option<BufferRequestedFunc>, Option<BufferCompletedFunc>) -> CuptiResult;
type FnActivityKind = unsafe extern "C" fn(u32) -> CuptiResult;
pub type FnEnableDriverApi = unsafe extern "C" fn(u32, u8) -> CuptiResult;
type FnPushExternal = unsafe extern "C" fn(u32, u64) -> CuptiResult;
type FnPopExternal = unsafe extern "C" fn(u32, *mut u64) -> CuptiResult;
type FnFlushAll = unsafe extern "C" fn(u32) -> CuptiResult;
type FnGetNextRecord = unsafe extern "C" fn(*mut u8, usize, *mut *mut c_void) -> CuptiResult;
type FnGetNumDropped = unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult;
type FnGetTimestamp = unsafe extern "C" fn(*mut u64) -> CuptiResult;
type FnFinalize = unsafe extern "C" fn() -> CuptiResult;
/// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
pub type FnEnableCallback = unsafe extern "C" fn(u32, SubscriberHandle, u32, u32) -> CuptiResult;

/// Raw CUPTI function pointers, resolved once.
#[derive(Debug, Clone, Copy)]
#[allow(non_snake_case)]
pub struct CuptiFns {
    pub cuptiGetVersion: FnGetVersion,
    pub cuptiGetResultString: FnGetResultString,
    pub cuptiSubscribe: FnSubscribe,
    pub cuptiUnsubscribe: FnUnsubscribe,
    pub cuptiActivityRegisterCallbacks: FnRegisterCallbacks,
    pub cuptiActivityEnable: FnActivityKind,
    pub cuptiActivityDisable: FnActivityKind,
    /// Absent before CUPTI 12.5: then the whole DRIVER kind is enabled instead.
    pub cuptiActivityEnableDriverApi: Option<FnEnableDriverApi>,
    /// `cuptiActivityEnableRuntimeApi` (CUPTI >= 12.5; same signature as the driver one).
    pub cuptiActivityEnableRuntimeApi: Option<FnEnableDriverApi>,
    pub cuptiActivityPushExternalCorrelationId: FnPushExternal,
    pub cuptiActivityPopExternalCorrelationId: FnPopExternal,
    pub cuptiActivityFlushAll: FnFlushAll,
    pub cuptiActivityGetNextRecord: FnGetNextRecord,
    pub cuptiActivityGetNumDroppedRecords: FnGetNumDropped,
    pub cuptiGetTimestamp: FnGetTimestamp,
    pub cuptiFinalize: FnFinalize,
    /// `cuptiEnableCallback` (optional: only `kprof run --metrics` needs callbacks).
    pub cuptiEnableCallback: Option<FnEnableCallback>,
}

/// The names of every symbol [`CuptiFns`] resolves (required ones first).
pub const REQUIRED_SYMBOLS: [&str; 14] = [
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords",
    "cuptiGetTimestamp",
    "cuptiFinalize",
];

impl CuptiFns {
    fn resolve(lib: &LoadedLib) -> Result<Self, EngineError> {
        unsafe {
            Ok(CuptiFns {
                cuptiGetVersion: lib.sym("cuptiGetVersion")?,
                cuptiGetResultString: lib.sym("cuptiGetResultString")?,
                cuptiSubscribe: lib.sym("cuptiSubscribe")?,
                cuptiUnsubscribe: lib.sym("cuptiUnsubscribe")?,
                cuptiActivityRegisterCallbacks: lib.sym("cuptiActivityRegisterCallbacks")?,
                cuptiActivityEnable: lib.sym("cuptiActivityEnable")?,
                cuptiActivityDisable: lib.sym("cuptiActivityDisable")?,
                cuptiActivityEnableDriverApi: lib.opt_sym("cuptiActivityEnableDriverApi"),
                cuptiActivityEnableRuntimeApi: lib.opt_sym("cuptiActivityEnableRuntimeApi"),
                cuptiActivityPushExternalCorrelationId: lib.sym("cuptiActivityPushExternalCorrelationId")?,
                cuptiActivityPopExternalCorrelationId: lib.sym("cuptiActivityPopExternalCorrelationId")?,
                cuptiActivityFlushAll: lib.sym("cuptiActivityFlushAll")?,
                cuptiActivityGetNextRecord: lib.sym("cuptiActivityGetNextRecord")?,
                cuptiActivityGetNumDroppedRecords: lib.sym("cuptiActivityGetNumDroppedRecords")?,
                cuptiGetTimestamp: lib.sym("cuptiGetTimestamp")?,
                cuptiFinalize: lib.sym("cuptiFinalize")?,
                cuptiEnableCallback: lib.opt_sym("cuptiEnableCallback"),
            })
        }
    }
}

/// The loaded libcupti.
#[derive(Debug)]
pub struct Cupti {
    pub fns: CuptiFns,
    pub path: &'static Path,
    /// `libnvperf_host.so` beside libcupti, if present (for the Range Profiler, later).
    pub nvperf_host: Option<PathBuf>,
    /// cuptiGetVersion, e.g. 130001 (13.0); 0 if the call failed.
    pub api_version: u32,
}

static CUPTI: Mutex<Option<&'static Cupti>> = Mutex::new(None);

impl Cupti {
    /// Loads libcupti (once per process; see [`crate::loader`] for the search order) and
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
        c.check("cuptiGetVersion", unsafe { (fns.cuptiGetVersion)(&mut version) })?;
        c.api_version = version;
        let c: &'static Cupti = Box::leak(Box::new(c));
        *slot = Some(c);
        Ok(c)
    }

    /// The text for a CUPTI result code.
    pub fn result_string(&self, code: CuptiResult) -> String {
        let mut p: *const c_char = std::ptr::null();
        let r = unsafe { (self.fns.cuptiGetResultString)(code, &mut p) };
        if r == CUPTI_SUCCESS && !p.is_null() {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            format!("CUPTI error {code}")
        }
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
        self.check("cuptiGetTimestamp", unsafe { (self.fns.cuptiGetTimestamp)(&mut t) })?;
        Ok(t)
    }
}
