//! CUPTI (libcupti): result codes, activity kinds, the layout of the activity records kprof
//! reads, the callback data, callback ids, and the one function table ([`CuptiFns`]) through
//! which every CUPTI call of the engine goes: the activity API, callbacks, and (with
//! libnvperf_host) the Profiler Host and Range Profiler APIs. Every number here is checked against
//! the real CUPTI 13.0 headers by `tests/all/cupti_headers.rs` and `tests/all/counters_host.rs`
//! when the headers are available.
//!
//! - [`activity`]: the buffers CUPTI fills with activity records, and the records in them;
//! - [`callback`]: the subscriber's callback function and the data CUPTI passes it;
//! - [`profiler`]: the parameter structs of the Profiler Host and Range Profiler APIs.

use std::ffi::{c_char, c_void};

pub mod activity;
pub mod callback;
pub mod profiler;
mod table;

pub(crate) use table::{ApiSwitch, ObjectPtr};
pub use table::{CuptiFns, REQUIRED_SYMBOLS};

/// `CUptiResult`.
pub type CuptiResult = u32;
/// `CUpti_SubscriberHandle` (opaque pointer).
pub type SubscriberHandle = *mut c_void;

pub const CUPTI_SUCCESS: CuptiResult = 0;
pub const CUPTI_ERROR_INVALID_PARAMETER: CuptiResult = 1;
pub const CUPTI_ERROR_MAX_LIMIT_REACHED: CuptiResult = 12;
pub const CUPTI_ERROR_NOT_INITIALIZED: CuptiResult = 15;
pub const CUPTI_ERROR_INVALID_METRIC_NAME: CuptiResult = 17;
pub const CUPTI_ERROR_HARDWARE_BUSY: CuptiResult = 26;
pub const CUPTI_ERROR_NOT_SUPPORTED: CuptiResult = 27;
pub const CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: CuptiResult = 35;
pub const CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED: CuptiResult = 36;
pub const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: CuptiResult = 39;
pub const CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES: CuptiResult = 40;
pub const CUPTI_ERROR_INVALID_CHIP_NAME: CuptiResult = 46;
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

    /// `cuDeviceGetCount`: the call whose callback gives kprof a correlation id when a region
    /// opens or closes (`attribution="order"`); rare in programs, cheap, needs no context.
    pub const CU_DEVICE_GET_COUNT: u32 = 4;

    /// Stream capture (`cuStreamBeginCapture*`, `cuStreamEndCapture*`): launches between them are
    /// recorded into a graph, not run.
    pub const CU_STREAM_BEGIN_CAPTURE: u32 = 495;
    pub const CU_STREAM_BEGIN_CAPTURE_PTSZ: u32 = 496;
    pub const CU_STREAM_END_CAPTURE: u32 = 497;
    pub const CU_STREAM_END_CAPTURE_PTSZ: u32 = 498;
    pub const CU_STREAM_BEGIN_CAPTURE_V2: u32 = 539;
    pub const CU_STREAM_BEGIN_CAPTURE_V2_PTSZ: u32 = 540;
    pub const CU_STREAM_BEGIN_CAPTURE_TO_GRAPH: u32 = 720;
    pub const CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ: u32 = 721;
    /// The runtime's (`cupti_runtime_cbid.h`).
    pub const CUDA_STREAM_BEGIN_CAPTURE: u32 = 315;
    pub const CUDA_STREAM_BEGIN_CAPTURE_PTSZ: u32 = 316;
    pub const CUDA_STREAM_END_CAPTURE: u32 = 319;
    pub const CUDA_STREAM_END_CAPTURE_PTSZ: u32 = 320;
    pub const CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH: u32 = 452;
    pub const CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ: u32 = 453;

    /// Driver-API calls that begin a stream capture.
    pub const BEGIN_CAPTURE_CBIDS: [u32; 6] = [
        CU_STREAM_BEGIN_CAPTURE,
        CU_STREAM_BEGIN_CAPTURE_PTSZ,
        CU_STREAM_BEGIN_CAPTURE_V2,
        CU_STREAM_BEGIN_CAPTURE_V2_PTSZ,
        CU_STREAM_BEGIN_CAPTURE_TO_GRAPH,
        CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
    ];
    /// Driver-API calls that end one.
    pub const END_CAPTURE_CBIDS: [u32; 2] = [CU_STREAM_END_CAPTURE, CU_STREAM_END_CAPTURE_PTSZ];
    /// Runtime-API calls that begin a stream capture.
    pub const RUNTIME_BEGIN_CAPTURE_CBIDS: [u32; 4] = [
        CUDA_STREAM_BEGIN_CAPTURE,
        CUDA_STREAM_BEGIN_CAPTURE_PTSZ,
        CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH,
        CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
    ];
    /// Runtime-API calls that end one.
    pub const RUNTIME_END_CAPTURE_CBIDS: [u32; 2] = [CUDA_STREAM_END_CAPTURE, CUDA_STREAM_END_CAPTURE_PTSZ];

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

    /// The API activity kind whose CBIDs a callback domain uses: driver-API callbacks (domain 1)
    /// number calls as driver records (4), runtime-API callbacks (2) as runtime records (5); 0 for
    /// other domains. With it the launch tests below serve callbacks too.
    pub fn api_kind_of_domain(domain: u32) -> u32 {
        match domain {
            super::CB_DOMAIN_DRIVER_API => super::ACTIVITY_KIND_DRIVER,
            super::CB_DOMAIN_RUNTIME_API => super::ACTIVITY_KIND_RUNTIME,
            _ => 0,
        }
    }

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

/// `CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API`.
pub const CB_DOMAIN_DRIVER_API: u32 = 1;
/// `CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API`.
pub const CB_DOMAIN_RUNTIME_API: u32 = 2;
/// `CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE`.
pub const CB_DOMAIN_RESOURCE: u32 = 3;
/// `CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED`.
pub const CBID_RESOURCE_GRAPHEXEC_CREATED: u32 = 18;
/// `CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING`.
pub const CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: u32 = 19;
/// `CUpti_ApiCallbackSite::CUPTI_API_ENTER`: the call's entry.
pub const API_ENTER: u32 = 0;
/// `CUpti_ApiCallbackSite::CUPTI_API_EXIT`: the call's exit.
pub const API_EXIT: u32 = 1;

/// Byte offsets of the stable record prefixes: the kernel record's are identical in
/// `CUpti_ActivityKernel9` (CUDA 12.x, 208 bytes) through `Kernel13` (13.4, 248 bytes; `Kernel10`
/// is 216 bytes on CUDA 13.0), its name a `const char*` that the FFI layer resolves while the
/// buffer lives; the API records (driver 4, runtime 5) are 40 bytes, the external correlation
/// record (39) 24 bytes and the graph trace record (51, `GraphTrace2`) 56 bytes.
pub mod offsets {
    pub const KIND: usize = 0;
    pub const KERNEL_START: usize = 16;
    pub const KERNEL_END: usize = 24;
    pub const KERNEL_DEVICE_ID: usize = 40;
    pub const KERNEL_CONTEXT_ID: usize = 44;
    pub const KERNEL_STREAM_ID: usize = 48;
    pub const KERNEL_CORRELATION_ID: usize = 92;
    pub const KERNEL_GRID_ID: usize = 96;
    pub const KERNEL_NAME: usize = 104;
    pub const KERNEL_GRAPH_NODE_ID: usize = 144;
    pub const KERNEL_GRAPH_ID: usize = 156;
    /// Bytes a kernel record must have for the stable prefix.
    pub const KERNEL_MIN_LEN: usize = 160;

    pub const API_CBID: usize = 4;
    pub const API_START: usize = 8;
    pub const API_END: usize = 16;
    pub const API_PROCESS_ID: usize = 24;
    pub const API_THREAD_ID: usize = 28;
    pub const API_CORRELATION_ID: usize = 32;
    pub const API_MIN_LEN: usize = 36;

    pub const EXT_KIND: usize = 4;
    pub const EXT_ID: usize = 8;
    pub const EXT_CORRELATION_ID: usize = 16;
    pub const EXT_MIN_LEN: usize = 20;

    pub const GRAPH_CORRELATION_ID: usize = 4;
    pub const GRAPH_START: usize = 8;
    pub const GRAPH_END: usize = 16;
    pub const GRAPH_DEVICE_ID: usize = 24;
    pub const GRAPH_ID: usize = 28;
    pub const GRAPH_STREAM_ID: usize = 36;
    pub const GRAPH_MIN_LEN: usize = 40;
}
