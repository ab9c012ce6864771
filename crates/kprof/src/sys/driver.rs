//! The CUDA driver API (libcuda): the types and constants kprof uses, and its function table
//! ([`DriverFns`]) with one safe method per entry point. [`crate::driver::Driver`] is the safe
//! wrapper above it (error names, hints, contexts).

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use super::kernels::{LoadedKernel, PtxKernel};
use super::loader::{LoadError, LoadedLib};

/// `CUresult`.
pub type CuResult = c_int;
/// `CUdevice`.
pub type CuDevice = c_int;
/// `CUcontext` (opaque pointer).
pub type CuContext = *mut c_void;
/// `CUdeviceptr`.
pub type CuDevicePtr = u64;
/// `CUmodule` (opaque pointer).
pub type CuModule = *mut c_void;
/// `CUfunction` (opaque pointer).
pub type CuFunction = *mut c_void;

/// `CUevent`: a handle of the driver's, which kprof never dereferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuEvent(*mut c_void);

// SAFETY: a CUevent is a process-wide driver object, usable from any thread (the driver API is
// thread-safe); kprof only hands it back to the driver.
unsafe impl Send for CuEvent {}
// SAFETY: as for Send: shared use is only passing the handle to the driver.
unsafe impl Sync for CuEvent {}

pub const CUDA_SUCCESS: CuResult = 0;
pub const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;

/// `CUdevice_attribute` values used here.
pub mod attr {
    pub const CLOCK_RATE: i32 = 13;
    pub const MULTIPROCESSOR_COUNT: i32 = 16;
    pub const MEMORY_CLOCK_RATE: i32 = 36;
    pub const L2_CACHE_SIZE: i32 = 38;
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
    pub const COMPUTE_CAPABILITY_MINOR: i32 = 76;
}

type FnInit = unsafe extern "C" fn(c_uint) -> CuResult;
type FnDriverGetVersion = unsafe extern "C" fn(*mut c_int) -> CuResult;
type FnCtxGetCurrent = unsafe extern "C" fn(*mut CuContext) -> CuResult;
type FnCtxSetCurrent = unsafe extern "C" fn(CuContext) -> CuResult;
type FnCtxGetDevice = unsafe extern "C" fn(*mut CuDevice) -> CuResult;
type FnCtxSynchronize = unsafe extern "C" fn() -> CuResult;
type FnPrimaryCtxRetain = unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult;
type FnDeviceGet = unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult;
type FnDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> CuResult;
type FnDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult;
type FnDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult;
type FnDeviceGetUuid = unsafe extern "C" fn(*mut [u8; 16], CuDevice) -> CuResult;
type FnMemAlloc = unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult;
type FnMemFree = unsafe extern "C" fn(CuDevicePtr) -> CuResult;
type FnMemsetD8 = unsafe extern "C" fn(CuDevicePtr, u8, usize) -> CuResult;
type FnGetErrorName = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;
type FnEventCreate = unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CuResult;
type FnEventRecord = unsafe extern "C" fn(*mut c_void, *mut c_void) -> CuResult;
type FnEventElapsedTime = unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> CuResult;
type FnEventDestroy = unsafe extern "C" fn(*mut c_void) -> CuResult;
type FnModuleLoadData = unsafe extern "C" fn(*mut CuModule, *const c_void) -> CuResult;
type FnMemHostAlloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CuResult;
type FnMemFreeHost = unsafe extern "C" fn(*mut c_void) -> CuResult;
type FnMemHostGetDevicePointer = unsafe extern "C" fn(*mut CuDevicePtr, *mut c_void, c_uint) -> CuResult;
type FnStreamWaitValue32 = unsafe extern "C" fn(*mut c_void, CuDevicePtr, u32, c_uint) -> CuResult;
type FnModuleGetFunction = unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult;
type FnGraphCreate = unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CuResult;
type FnGraphAddKernelNode =
    unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const *mut c_void, usize, *const KernelNodeParams) -> CuResult;
type FnGraphInstantiateWithFlags = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, u64) -> CuResult;
type FnGraphLaunch = unsafe extern "C" fn(*mut c_void, *mut c_void) -> CuResult;
type FnGraphDestroy = unsafe extern "C" fn(*mut c_void) -> CuResult;
#[allow(clippy::type_complexity)]
type FnLaunchKernel = unsafe extern "C" fn(
    CuFunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

/// libcuda's function table, resolved once (`DriverFns::resolve`). Each entry point is called
/// through the safe method of the same name in snake case.
#[derive(Debug, Clone, Copy)]
#[allow(non_snake_case)]
pub struct DriverFns {
    cuInit: FnInit,
    cuDriverGetVersion: FnDriverGetVersion,
    cuCtxGetCurrent: FnCtxGetCurrent,
    cuCtxSetCurrent: FnCtxSetCurrent,
    cuCtxGetDevice: FnCtxGetDevice,
    cuCtxSynchronize: FnCtxSynchronize,
    cuDevicePrimaryCtxRetain: FnPrimaryCtxRetain,
    cuDeviceGet: FnDeviceGet,
    cuDeviceGetCount: FnDeviceGetCount,
    cuDeviceGetName: FnDeviceGetName,
    cuDeviceGetAttribute: FnDeviceGetAttribute,
    cuDeviceGetUuid: FnDeviceGetUuid,
    cuMemAlloc: FnMemAlloc,
    cuMemFree: FnMemFree,
    cuMemsetD8: FnMemsetD8,
    cuGetErrorName: FnGetErrorName,
    cuEventCreate: FnEventCreate,
    cuEventRecord: FnEventRecord,
    cuEventElapsedTime: FnEventElapsedTime,
    cuEventDestroy: FnEventDestroy,
    cuModuleLoadData: FnModuleLoadData,
    cuModuleGetFunction: FnModuleGetFunction,
    cuLaunchKernel: FnLaunchKernel,
    /// The entry points of [`HostWord`] and [`DriverFns::stream_wait_geq`]; `None` when this
    /// libcuda lacks one (the CUDA-events backend then times regions without holding the stream).
    host_word_fns: Option<HostWordFns>,
    /// The entry points of [`KernelGraph`]; `None` when this libcuda lacks one.
    graph_fns: Option<GraphFns>,
}

/// `cuGraphCreate`, `cuGraphAddKernelNode_v2` (or the first form), `cuGraphInstantiateWithFlags`,
/// `cuGraphLaunch`, `cuGraphExecDestroy` and `cuGraphDestroy`.
#[derive(Debug, Clone, Copy)]
#[allow(non_snake_case)]
struct GraphFns {
    cuGraphCreate: FnGraphCreate,
    cuGraphAddKernelNode: FnGraphAddKernelNode,
    cuGraphInstantiateWithFlags: FnGraphInstantiateWithFlags,
    cuGraphLaunch: FnGraphLaunch,
    cuGraphExecDestroy: FnGraphDestroy,
    cuGraphDestroy: FnGraphDestroy,
}

/// `CUDA_KERNEL_NODE_PARAMS_v2` of `cuda.h` (CUDA 12 and later). Its fields up to `extra` are
/// the first form's, which `cuGraphAddKernelNode` of CUDA 11 reads; `kern` and `ctx` stay null
/// (the node runs `func` in the current context).
/// Public for the check of its layout against `cuda.h` (`tests/all/driver_headers.rs`).
#[repr(C)]
#[derive(Debug)]
pub struct KernelNodeParams {
    /// `func`.
    pub func: CuFunction,
    /// `gridDimX`, `gridDimY`, `gridDimZ`.
    pub grid_dim: [c_uint; 3],
    /// `blockDimX`, `blockDimY`, `blockDimZ`.
    pub block_dim: [c_uint; 3],
    /// `sharedMemBytes`.
    pub shared_mem_bytes: c_uint,
    /// `kernelParams`.
    pub kernel_params: *mut *mut c_void,
    /// `extra`.
    pub extra: *mut *mut c_void,
    /// `kern` (`CUkernel`).
    pub kern: *mut c_void,
    /// `ctx`.
    pub ctx: CuContext,
}

/// kprof's own CUDA graph of one kernel node (`DriverFns::kernel_graph`), instantiated:
/// launched by `DriverFns::graph_launch`; the graph and its executable are destroyed when
/// dropped (after the caller has synchronized).
#[derive(Debug)]
pub struct KernelGraph {
    graph: *mut c_void,
    exec: *mut c_void,
    fns: GraphFns,
}

// SAFETY: the graph and its executable are driver objects usable from any thread; kprof only
// hands them back to the driver.
unsafe impl Send for KernelGraph {}
// SAFETY: as for Send.
unsafe impl Sync for KernelGraph {}

impl Drop for KernelGraph {
    fn drop(&mut self) {
        // SAFETY: handles the driver gave out, each destroyed once, here (null ones skipped).
        unsafe {
            if !self.exec.is_null() {
                let _ = (self.fns.cuGraphExecDestroy)(self.exec);
            }
            if !self.graph.is_null() {
                let _ = (self.fns.cuGraphDestroy)(self.graph);
            }
        }
    }
}

/// `cuMemHostAlloc`, `cuMemFreeHost`, `cuMemHostGetDevicePointer_v2` and `cuStreamWaitValue32_v2`.
#[derive(Debug, Clone, Copy)]
#[allow(non_snake_case)]
struct HostWordFns {
    cuMemHostAlloc: FnMemHostAlloc,
    cuMemFreeHost: FnMemFreeHost,
    cuMemHostGetDevicePointer: FnMemHostGetDevicePointer,
    cuStreamWaitValue32: FnStreamWaitValue32,
}

/// `CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP`.
const MEMHOSTALLOC_PORTABLE_DEVICEMAP: c_uint = 0x01 | 0x02;
/// `CU_STREAM_WAIT_VALUE_GEQ`: the wait ends once `(int32_t)(*addr - value) >= 0`.
const STREAM_WAIT_VALUE_GEQ: c_uint = 0x0;

/// One 32-bit word of pinned host memory that the GPU reads (`cuMemHostAlloc`, mapped), for a
/// stream to wait on (`DriverFns::stream_wait_geq`) until the host stores a value. Freed when
/// dropped (`cuMemFreeHost`).
#[derive(Debug)]
pub struct HostWord {
    host: *mut c_void,
    /// The word's address on the device.
    device: CuDevicePtr,
    free: FnMemFreeHost,
}

// SAFETY: the word is pinned host memory of the driver's, valid until `drop`; it is only written
// through an atomic operation (`store`), which any thread may do.
unsafe impl Send for HostWord {}
// SAFETY: as for Send.
unsafe impl Sync for HostWord {}

impl HostWord {
    fn atomic(&self) -> &AtomicU32 {
        // SAFETY: `host` is a live, page-aligned allocation of at least 4 bytes (cuMemHostAlloc)
        // until `drop`, and is accessed only as this atomic (AtomicU32 has u32's layout).
        unsafe { AtomicU32::from_ptr(self.host.cast()) }
    }
    /// Stores `value` (the GPU sees it once the store leaves the CPU's write buffers).
    pub fn store(&self, value: u32) {
        self.atomic().store(value, Ordering::Release)
    }
}

impl Drop for HostWord {
    fn drop(&mut self) {
        // SAFETY: `host` came from cuMemHostAlloc and is freed once, here.
        let _ = unsafe { (self.free)(self.host) };
    }
}

// The calls below pass the driver only values, handles it gave out (contexts, events, modules,
// functions: it checks them) and pointers to Rust memory that lives across the call with the
// size the driver writes. Device pointers (`CuDevicePtr`) are device memory: a wrong one is a
// CUDA error or a GPU fault, never a write to host memory.
impl DriverFns {
    /// Resolves every entry point from a loaded libcuda (the `_v2` variants where the API has them).
    pub(crate) fn resolve(lib: &LoadedLib) -> Result<Self, LoadError> {
        // SAFETY: each type above is the entry point's prototype in CUDA 13's `cuda.h` (the `_v2`
        // names where `cuda.h` maps the plain name to them).
        unsafe {
            Ok(DriverFns {
                cuInit: lib.sym("cuInit")?,
                cuDriverGetVersion: lib.sym("cuDriverGetVersion")?,
                cuCtxGetCurrent: lib.sym("cuCtxGetCurrent")?,
                cuCtxSetCurrent: lib.sym("cuCtxSetCurrent")?,
                cuCtxGetDevice: lib.sym("cuCtxGetDevice")?,
                cuCtxSynchronize: lib.sym("cuCtxSynchronize")?,
                cuDevicePrimaryCtxRetain: lib.sym("cuDevicePrimaryCtxRetain")?,
                cuDeviceGet: lib.sym("cuDeviceGet")?,
                cuDeviceGetCount: lib.sym("cuDeviceGetCount")?,
                cuDeviceGetName: lib.sym("cuDeviceGetName")?,
                cuDeviceGetAttribute: lib.sym("cuDeviceGetAttribute")?,
                cuDeviceGetUuid: match lib.opt_sym("cuDeviceGetUuid_v2") {
                    Some(f) => f,
                    None => lib.sym("cuDeviceGetUuid")?,
                },
                cuMemAlloc: lib.sym("cuMemAlloc_v2")?,
                cuMemFree: lib.sym("cuMemFree_v2")?,
                cuMemsetD8: lib.sym("cuMemsetD8_v2")?,
                cuGetErrorName: lib.sym("cuGetErrorName")?,
                cuEventCreate: lib.sym("cuEventCreate")?,
                cuEventRecord: lib.sym("cuEventRecord")?,
                cuEventElapsedTime: lib.sym("cuEventElapsedTime")?,
                cuEventDestroy: lib.sym("cuEventDestroy_v2")?,
                cuModuleLoadData: lib.sym("cuModuleLoadData")?,
                cuModuleGetFunction: lib.sym("cuModuleGetFunction")?,
                cuLaunchKernel: lib.sym("cuLaunchKernel")?,
                host_word_fns: (|| {
                    Some(HostWordFns {
                        cuMemHostAlloc: lib.opt_sym("cuMemHostAlloc")?,
                        cuMemFreeHost: lib.opt_sym("cuMemFreeHost")?,
                        cuMemHostGetDevicePointer: lib.opt_sym("cuMemHostGetDevicePointer_v2")?,
                        cuStreamWaitValue32: lib
                            .opt_sym("cuStreamWaitValue32_v2")
                            .or_else(|| lib.opt_sym("cuStreamWaitValue32"))?,
                    })
                })(),
                graph_fns: (|| {
                    Some(GraphFns {
                        cuGraphCreate: lib.opt_sym("cuGraphCreate")?,
                        cuGraphAddKernelNode: lib
                            .opt_sym("cuGraphAddKernelNode_v2")
                            .or_else(|| lib.opt_sym("cuGraphAddKernelNode"))?,
                        cuGraphInstantiateWithFlags: lib.opt_sym("cuGraphInstantiateWithFlags")?,
                        cuGraphLaunch: lib.opt_sym("cuGraphLaunch")?,
                        cuGraphExecDestroy: lib.opt_sym("cuGraphExecDestroy")?,
                        cuGraphDestroy: lib.opt_sym("cuGraphDestroy")?,
                    })
                })(),
            })
        }
    }

    /// `cuInit(flags)`.
    pub(crate) fn init(&self, flags: u32) -> CuResult {
        // SAFETY: takes a value.
        unsafe { (self.cuInit)(flags) }
    }

    /// `cuDriverGetVersion`.
    pub(crate) fn driver_get_version(&self, version: &mut c_int) -> CuResult {
        // SAFETY: writes one int into `version`.
        unsafe { (self.cuDriverGetVersion)(version) }
    }

    /// `cuCtxGetCurrent`.
    pub(crate) fn ctx_get_current(&self, ctx: &mut CuContext) -> CuResult {
        // SAFETY: writes one handle into `ctx`.
        unsafe { (self.cuCtxGetCurrent)(ctx) }
    }

    /// `cuCtxSetCurrent`.
    pub(crate) fn ctx_set_current(&self, ctx: CuContext) -> CuResult {
        // SAFETY: takes a context handle, which the driver checks.
        unsafe { (self.cuCtxSetCurrent)(ctx) }
    }

    /// `cuCtxGetDevice`.
    pub(crate) fn ctx_get_device(&self, dev: &mut CuDevice) -> CuResult {
        // SAFETY: writes one int into `dev`.
        unsafe { (self.cuCtxGetDevice)(dev) }
    }

    /// `cuCtxSynchronize`.
    pub(crate) fn ctx_synchronize(&self) -> CuResult {
        // SAFETY: takes nothing.
        unsafe { (self.cuCtxSynchronize)() }
    }

    /// `cuDevicePrimaryCtxRetain`.
    pub(crate) fn device_primary_ctx_retain(&self, ctx: &mut CuContext, dev: CuDevice) -> CuResult {
        // SAFETY: writes one handle into `ctx`; the device ordinal is checked by the driver.
        unsafe { (self.cuDevicePrimaryCtxRetain)(ctx, dev) }
    }

    /// `cuDeviceGet`.
    pub(crate) fn device_get(&self, dev: &mut CuDevice, ordinal: c_int) -> CuResult {
        // SAFETY: writes one int into `dev`.
        unsafe { (self.cuDeviceGet)(dev, ordinal) }
    }

    /// `cuDeviceGetCount`.
    pub(crate) fn device_get_count(&self, count: &mut c_int) -> CuResult {
        // SAFETY: writes one int into `count`.
        unsafe { (self.cuDeviceGetCount)(count) }
    }

    /// `cuDeviceGetName` into `name` (NUL-terminated; read it with [`c_chars_to_string`]).
    pub(crate) fn device_get_name(&self, name: &mut [c_char], dev: CuDevice) -> CuResult {
        let len = c_int::try_from(name.len()).unwrap_or(c_int::MAX);
        // SAFETY: the driver writes at most `len` bytes, and `len` is at most the slice's length.
        unsafe { (self.cuDeviceGetName)(name.as_mut_ptr(), len, dev) }
    }

    /// `cuDeviceGetAttribute`.
    pub(crate) fn device_get_attribute(&self, value: &mut c_int, attribute: c_int, dev: CuDevice) -> CuResult {
        // SAFETY: writes one int into `value`.
        unsafe { (self.cuDeviceGetAttribute)(value, attribute, dev) }
    }

    /// `cuDeviceGetUuid_v2` (`cuDeviceGetUuid` on drivers without it).
    pub(crate) fn device_get_uuid(&self, uuid: &mut [u8; 16], dev: CuDevice) -> CuResult {
        // SAFETY: writes the 16 bytes of a CUuuid into `uuid`.
        unsafe { (self.cuDeviceGetUuid)(uuid, dev) }
    }

    /// `cuMemAlloc_v2`.
    pub(crate) fn mem_alloc(&self, ptr: &mut CuDevicePtr, bytes: usize) -> CuResult {
        // SAFETY: writes one device pointer into `ptr`.
        unsafe { (self.cuMemAlloc)(ptr, bytes) }
    }

    /// `cuMemFree_v2`.
    pub(crate) fn mem_free(&self, ptr: CuDevicePtr) -> CuResult {
        // SAFETY: device memory only (see the impl's comment).
        unsafe { (self.cuMemFree)(ptr) }
    }

    /// `cuMemsetD8_v2`.
    pub(crate) fn memset_d8(&self, ptr: CuDevicePtr, value: u8, bytes: usize) -> CuResult {
        // SAFETY: device memory only (see the impl's comment).
        unsafe { (self.cuMemsetD8)(ptr, value, bytes) }
    }

    /// `cuGetErrorName`: the name of a result code (`None` for a code the driver does not know).
    pub(crate) fn get_error_name(&self, code: CuResult) -> Option<String> {
        // SAFETY: writes one pointer, on success to a NUL-terminated string of the driver's, valid
        // for the process.
        unsafe { crate::sys::out_string(CUDA_SUCCESS, |p| (self.cuGetErrorName)(code, p)) }
    }

    /// `cuEventCreate`: the new event, or the driver's code.
    pub(crate) fn event_create(&self, flags: u32) -> Result<CuEvent, CuResult> {
        let mut e: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one handle into `e`.
        let r = unsafe { (self.cuEventCreate)(&mut e, flags) };
        if r == CUDA_SUCCESS {
            Ok(CuEvent(e))
        } else {
            Err(r)
        }
    }

    /// `cuEventRecord` on the legacy default stream.
    pub(crate) fn event_record(&self, event: CuEvent) -> CuResult {
        // SAFETY: an event handle of the driver's and the null (legacy default) stream.
        unsafe { (self.cuEventRecord)(event.0, std::ptr::null_mut()) }
    }

    /// `cuEventElapsedTime`.
    pub(crate) fn event_elapsed_time(&self, ms: &mut f32, start: CuEvent, end: CuEvent) -> CuResult {
        // SAFETY: writes one float into `ms`; the events are the driver's handles.
        unsafe { (self.cuEventElapsedTime)(ms, start.0, end.0) }
    }

    /// `cuEventDestroy_v2`.
    pub(crate) fn event_destroy(&self, event: CuEvent) -> CuResult {
        // SAFETY: an event handle of the driver's.
        unsafe { (self.cuEventDestroy)(event.0) }
    }

    /// A new [`HostWord`] holding 0; on failure the call that failed and its code
    /// (`CUDA_ERROR_NOT_SUPPORTED`, 801, where this libcuda lacks the entry points).
    pub(crate) fn host_word(&self) -> Result<HostWord, (&'static str, CuResult)> {
        let fns = self.host_word_fns.ok_or(("cuStreamWaitValue32_v2", 801))?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer into `host`; asks for 4 bytes of pinned, mapped memory.
        let r = unsafe { (fns.cuMemHostAlloc)(&mut host, 4, MEMHOSTALLOC_PORTABLE_DEVICEMAP) };
        if r != CUDA_SUCCESS || host.is_null() {
            return Err(("cuMemHostAlloc", r));
        }
        let mut word = HostWord {
            host,
            device: 0,
            free: fns.cuMemFreeHost,
        };
        word.store(0);
        let mut device: CuDevicePtr = 0;
        // SAFETY: writes one device pointer into `device`; `host` is the driver's allocation.
        let r = unsafe { (fns.cuMemHostGetDevicePointer)(&mut device, word.host, 0) };
        if r != CUDA_SUCCESS {
            return Err(("cuMemHostGetDevicePointer_v2", r));
        }
        word.device = device;
        Ok(word)
    }

    /// `cuStreamWaitValue32_v2` on the legacy default stream with `CU_STREAM_WAIT_VALUE_GEQ`: the
    /// stream's later work waits until `word` holds `value` or more (in wrapping order).
    pub(crate) fn stream_wait_geq(&self, word: &HostWord, value: u32) -> CuResult {
        let Some(fns) = self.host_word_fns else { return 801 };
        // SAFETY: the null (legacy default) stream and the device address of a live mapped
        // allocation of the driver's (`word` outlives the call; the wait reads it later, and the
        // backend that owns `word` synchronizes before dropping it).
        unsafe { (fns.cuStreamWaitValue32)(std::ptr::null_mut(), word.device, value, STREAM_WAIT_VALUE_GEQ) }
    }

    /// Loads one of kprof's PTX kernels into the current context (`cuModuleLoadData`, the driver
    /// JIT-compiles it; the module stays loaded for the process) and looks its entry up
    /// (`cuModuleGetFunction`). On failure: the call that failed and its code.
    pub(crate) fn load_kernel(&self, kernel: &'static PtxKernel) -> Result<LoadedKernel, (&'static str, CuResult)> {
        let mut module: CuModule = std::ptr::null_mut();
        // SAFETY: writes one handle into `module`; the image is a NUL-terminated PTX text that
        // lives for the process.
        let r = unsafe { (self.cuModuleLoadData)(&mut module, kernel.image.as_ptr().cast()) };
        if r != CUDA_SUCCESS {
            return Err(("cuModuleLoadData", r));
        }
        let mut func: CuFunction = std::ptr::null_mut();
        // SAFETY: writes one handle into `func`; `module` is the driver's, the name a C string.
        let r = unsafe { (self.cuModuleGetFunction)(&mut func, module, kernel.entry.as_ptr()) };
        if r != CUDA_SUCCESS {
            return Err(("cuModuleGetFunction", r));
        }
        Ok(LoadedKernel { func })
    }

    /// `cuLaunchKernel` of a kernel from [`DriverFns::load_kernel`] on the legacy default stream
    /// with a 1-D grid, with its two parameters `(u64 device pointer, u64 count)`.
    pub(crate) fn launch_kernel(&self, kernel: LoadedKernel, blocks: u32, threads: u32, args: (u64, u64)) -> CuResult {
        let (mut a, mut b) = args;
        let mut params = [
            (&mut a as *mut u64).cast::<c_void>(),
            (&mut b as *mut u64).cast::<c_void>(),
        ];
        // SAFETY: every `PtxKernel` takes exactly two u64 parameters (see `kernels`), and `params`
        // points at two live u64 values until the call returns; the function handle comes from
        // `load_kernel` (the driver checks it belongs to the current context).
        unsafe {
            (self.cuLaunchKernel)(
                kernel.func,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    }

    /// A [`KernelGraph`] of one node that runs `kernel` (from [`DriverFns::load_kernel`]) with a
    /// 1-D grid and its two parameters, instantiated; on failure the call that failed and its
    /// code (801, `CUDA_ERROR_NOT_SUPPORTED`, where this libcuda lacks the graph entry points).
    pub(crate) fn kernel_graph(
        &self,
        kernel: LoadedKernel,
        blocks: u32,
        threads: u32,
        args: (u64, u64),
    ) -> Result<KernelGraph, (&'static str, CuResult)> {
        let fns = self.graph_fns.ok_or(("cuGraphCreate", 801))?;
        let mut g = KernelGraph {
            graph: std::ptr::null_mut(),
            exec: std::ptr::null_mut(),
            fns,
        };
        // SAFETY: writes one handle into `g.graph`.
        let r = unsafe { (fns.cuGraphCreate)(&mut g.graph, 0) };
        if r != CUDA_SUCCESS {
            return Err(("cuGraphCreate", r));
        }
        let (mut a, mut b) = args;
        let mut params = [
            (&mut a as *mut u64).cast::<c_void>(),
            (&mut b as *mut u64).cast::<c_void>(),
        ];
        let node = KernelNodeParams {
            func: kernel.func,
            grid_dim: [blocks, 1, 1],
            block_dim: [threads, 1, 1],
            shared_mem_bytes: 0,
            kernel_params: params.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one node handle; `node` is a `CUDA_KERNEL_NODE_PARAMS_v2` whose
        // parameter array points at two live u64 values (every `PtxKernel` takes two), which the
        // driver copies before returning; no dependencies.
        let r = unsafe { (fns.cuGraphAddKernelNode)(&mut handle, g.graph, std::ptr::null(), 0, &node) };
        if r != CUDA_SUCCESS {
            return Err(("cuGraphAddKernelNode_v2", r));
        }
        // SAFETY: writes one handle into `g.exec`; `g.graph` is the driver's.
        let r = unsafe { (fns.cuGraphInstantiateWithFlags)(&mut g.exec, g.graph, 0) };
        if r != CUDA_SUCCESS {
            return Err(("cuGraphInstantiateWithFlags", r));
        }
        Ok(g)
    }

    /// `cuGraphLaunch` of a [`KernelGraph`] on the legacy default stream.
    pub(crate) fn graph_launch(&self, graph: &KernelGraph) -> CuResult {
        // SAFETY: an executable graph of the driver's, alive while `graph` is, and the null
        // (legacy default) stream.
        unsafe { (graph.fns.cuGraphLaunch)(graph.exec, std::ptr::null_mut()) }
    }
}

/// The text of a NUL-terminated C string in a buffer the driver filled (all of it when it holds
/// no NUL).
pub(crate) fn c_chars_to_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
