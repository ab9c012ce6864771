//! NVTX v3: kprof's own NVTX copy ([`copy`]) and the hand-written declarations it needs to be
//! attached by a tool (ncu, nsys, kprof's injection library): the types and constants below.
//!
//! Written from reading NVIDIA's NVTX v3 headers (`nvtxDetail/nvtxTypes.h`, `nvtxImpl.h`,
//! `nvtxInit.h`, `nvToolsExt.h`), nothing copied. `tests/all/nvtx_headers.rs` compiles a C
//! program against the real headers (the `nvidia-nvtx==13.0.85` wheel from PyPI) and checks
//! every value and layout here.

use std::ffi::{c_char, c_void};

pub mod copy;

/// `NVTX_VERSION`: the API version of this NVTX copy, also the version of the event attributes.
pub const NVTX_VERSION: u32 = 3;

/// `NVTX_ETID_CALLBACKS`: the export table id of [`ExportTableCallbacks`].
pub const ETID_CALLBACKS: u32 = 1;
/// `NVTX_ETID_VERSIONINFO`: the export table id of [`ExportTableVersionInfo`].
pub const ETID_VERSIONINFO: u32 = 3;

/// `NVTX_CB_MODULE_CORE`.
pub const MODULE_CORE: i32 = 1;
/// `NVTX_CB_MODULE_CUDA`.
pub const MODULE_CUDA: i32 = 2;
/// `NVTX_CB_MODULE_OPENCL`.
pub const MODULE_OPENCL: i32 = 3;
/// `NVTX_CB_MODULE_CUDART`.
pub const MODULE_CUDART: i32 = 4;
/// `NVTX_CB_MODULE_CORE2`.
pub const MODULE_CORE2: i32 = 5;
/// `NVTX_CB_MODULE_SYNC`.
pub const MODULE_SYNC: i32 = 6;
/// `NVTX_CB_MODULE_SIZE`: one past the last module id.
pub const MODULE_SIZE: usize = 7;

/// `NVTX_CBID_<MODULE>_SIZE` for each module: the number of callback ids, the invalid id 0
/// included. A tool may write any slot below it.
pub const CBID_SIZES: [(i32, usize); 6] = [
    (MODULE_CORE, 16),
    (MODULE_CUDA, 9),
    (MODULE_OPENCL, 15),
    (MODULE_CUDART, 7),
    (MODULE_CORE2, 16),
    (MODULE_SYNC, 7),
];
/// The largest value in [`CBID_SIZES`].
pub const MAX_CBID_SIZE: usize = 16;

/// `NVTX_CBID_CORE2_DomainRangePushEx`: `int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)`.
pub const CBID_CORE2_DOMAIN_RANGE_PUSH_EX: usize = 4;
/// `NVTX_CBID_CORE2_DomainRangePop`: `int (*)(nvtxDomainHandle_t)`.
pub const CBID_CORE2_DOMAIN_RANGE_POP: usize = 5;
/// `NVTX_CBID_CORE2_DomainCreateA`: `nvtxDomainHandle_t (*)(const char*)`.
pub const CBID_CORE2_DOMAIN_CREATE_A: usize = 12;

/// `NVTX_MESSAGE_TYPE_ASCII`.
pub const MESSAGE_TYPE_ASCII: i32 = 1;

/// `const void* (*NvtxGetExportTableFunc_t)(uint32_t exportTableId)`.
pub type GetExportTableFn = unsafe extern "C" fn(u32) -> *const c_void;
/// `int (*NvtxInitializeInjectionNvtxFunc_t)(NvtxGetExportTableFunc_t)`: a tool's entry point
/// (`InitializeInjectionNvtx2`); 0 means failure.
pub type InitializeInjectionFn = unsafe extern "C" fn(GetExportTableFn) -> i32;
/// `int (*GetModuleFunctionTable)(NvtxCallbackModule, NvtxFunctionTable*, unsigned int*)`.
pub type GetModuleFunctionTableFn = unsafe extern "C" fn(i32, *mut *mut *mut *const c_void, *mut u32) -> i32;
/// The `DomainCreateA` slot's function.
pub type DomainCreateAFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
/// The `DomainRangePushEx` slot's function.
pub type DomainRangePushExFn = unsafe extern "C" fn(*mut c_void, *const EventAttributes) -> i32;
/// The `DomainRangePop` slot's function.
pub type DomainRangePopFn = unsafe extern "C" fn(*mut c_void) -> i32;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub struct ExportTableCallbacks {
    /// `sizeof(NvtxExportTableCallbacks)`.
    pub struct_size: usize,
    /// Hands a tool the table of a module's function-pointer slots.
    pub get_module_function_table: Option<GetModuleFunctionTableFn>,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
pub struct ExportTableVersionInfo {
    /// `sizeof(NvtxExportTableVersionInfo)`.
    pub struct_size: usize,
    /// The NVTX API version of this copy ([`NVTX_VERSION`]).
    pub version: u32,
    /// Reserved (alignment).
    pub reserved0: u32,
    /// Called by tools with their own version; ignored.
    pub set_injection_nvtx_version: Option<unsafe extern "C" fn(u32)>,
}

/// `nvtxEventAttributes_t` (version 3 of the API, the v2 structure): only the message is used
/// by kprof; the other fields stay zero.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EventAttributes {
    /// `NVTX_VERSION`.
    pub version: u16,
    /// `sizeof(nvtxEventAttributes_t)`.
    pub size: u16,
    /// Category (0: none).
    pub category: u32,
    /// Colour type (0: unknown).
    pub color_type: i32,
    /// Colour.
    pub color: u32,
    /// Payload type (0: unknown).
    pub payload_type: i32,
    /// Reserved.
    pub reserved0: i32,
    /// The payload union (8 bytes).
    pub payload: u64,
    /// [`MESSAGE_TYPE_ASCII`] for kprof's names.
    pub message_type: i32,
    /// The message union: here a NUL-terminated ASCII string.
    pub message: *const c_char,
}

impl EventAttributes {
    /// Attributes carrying only an ASCII message.
    pub fn ascii(message: *const c_char) -> Self {
        EventAttributes {
            version: NVTX_VERSION as u16,
            size: std::mem::size_of::<EventAttributes>() as u16,
            category: 0,
            color_type: 0,
            color: 0,
            payload_type: 0,
            reserved0: 0,
            payload: 0,
            message_type: MESSAGE_TYPE_ASCII,
            message,
        }
    }
}
