//! A hand-written function table for the few CUDA driver calls the engine needs, resolved once
//! from a libcuda loaded at run time (see [`crate::loader`]), with safe wrappers.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::Path;
use std::sync::Mutex;

use crate::error::EngineError;
use crate::sys::loader::{load_library, LibKind, LoadedLib, SearchEnv};

/// `CUresult`.
pub type CuResult = c_int;
/// `CUdevice`.
pub type CuDevice = c_int;
/// `CUcontext` (opaque pointer).
pub type CuContext = *mut c_void;
/// `CUdeviceptr`.
pub type CuDevicePtr = u64;

pub const CUDA_SUCCESS: CuResult = 0;
pub const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;

/// `CUdevice_attribute` values used here.
pub mod attr {
    pub const CLOCK_RATE: i32 = 13;
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
type FnEventCreate = unsafe extern "C" fn(*mut CuEvent, c_uint) -> CuResult;
type FnEventRecord = unsafe extern "C" fn(CuEvent, *mut std::ffi::c_void) -> CuResult;
type FnEventElapsedTime = unsafe extern "C" fn(*mut f32, CuEvent, CuEvent) -> CuResult;
type FnEventDestroy = unsafe extern "C" fn(CuEvent) -> CuResult;
type FnModuleLoadData = unsafe extern "C" fn(*mut CuModule, *const c_void) -> CuResult;
type FnModuleGetFunction = unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult;
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

/// `CUmodule` (opaque pointer).
pub type CuModule = *mut c_void;
/// `CUfunction` (opaque pointer).
pub type CuFunction = *mut c_void;

/// `CUevent`.
pub type CuEvent = *mut std::ffi::c_void;

/// Raw function pointers, resolved once.
#[derive(Debug, Clone, Copy)]
#[allow(non_snake_case)]
pub struct DriverFns {
    pub cuInit: FnInit,
    pub cuDriverGetVersion: FnDriverGetVersion,
    pub cuCtxGetCurrent: FnCtxGetCurrent,
    pub cuCtxSetCurrent: FnCtxSetCurrent,
    pub cuCtxGetDevice: FnCtxGetDevice,
    pub cuCtxSynchronize: FnCtxSynchronize,
    pub cuDevicePrimaryCtxRetain: FnPrimaryCtxRetain,
    pub cuDeviceGet: FnDeviceGet,
    pub cuDeviceGetCount: FnDeviceGetCount,
    pub cuDeviceGetName: FnDeviceGetName,
    pub cuDeviceGetAttribute: FnDeviceGetAttribute,
    pub cuDeviceGetUuid: FnDeviceGetUuid,
    pub cuMemAlloc: FnMemAlloc,
    pub cuMemFree: FnMemFree,
    pub cuMemsetD8: FnMemsetD8,
    pub cuGetErrorName: FnGetErrorName,
    pub cuEventCreate: FnEventCreate,
    pub cuEventRecord: FnEventRecord,
    pub cuEventElapsedTime: FnEventElapsedTime,
    pub cuEventDestroy: FnEventDestroy,
    pub cuModuleLoadData: FnModuleLoadData,
    pub cuModuleGetFunction: FnModuleGetFunction,
    pub cuLaunchKernel: FnLaunchKernel,
}

impl DriverFns {
    fn resolve(lib: &LoadedLib) -> Result<Self, EngineError> {
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
            })
        }
    }
}

/// Properties of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProps {
    pub ordinal: i32,
    pub name: String,
    pub l2_bytes: u64,
    pub clock_khz: u32,
    pub mem_clock_khz: u32,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// 16 raw bytes, formatted like nvidia-smi: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
    pub uuid: String,
}

/// A device allocation made through [`Driver::alloc`]; free it with [`Driver::free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceBuffer {
    pub ptr: CuDevicePtr,
    pub bytes: usize,
}

/// The loaded CUDA driver: safe wrappers over [`DriverFns`].
#[derive(Debug)]
pub struct Driver {
    pub fns: DriverFns,
    pub path: &'static Path,
    /// cuDriverGetVersion, e.g. 13000 for CUDA 13.0.
    pub version: i32,
}

static DRIVER: Mutex<Option<&'static Driver>> = Mutex::new(None);

impl Driver {
    /// Loads libcuda (once per process), resolves the table and calls `cuInit(0)`.
    pub fn load(env: &SearchEnv) -> Result<&'static Driver, EngineError> {
        let mut slot = crate::lock(&DRIVER);
        if let Some(d) = *slot {
            return Ok(d);
        }
        let lib = load_library(LibKind::Cuda, env)?;
        let fns = DriverFns::resolve(&lib)?;
        let mut version = 0;
        let mut d = Driver {
            fns,
            path: lib.path,
            version: 0,
        };
        d.check("cuDriverGetVersion", unsafe { (fns.cuDriverGetVersion)(&mut version) })?;
        d.version = version;
        d.check_hint(
            "cuInit",
            unsafe { (fns.cuInit)(0) },
            "no usable NVIDIA GPU: check nvidia-smi, CUDA_VISIBLE_DEVICES and that the driver \
             supports this GPU",
        )?;
        let d: &'static Driver = Box::leak(Box::new(d));
        *slot = Some(d);
        Ok(d)
    }

    /// The CUDA error name for a result code, e.g. "CUDA_ERROR_NO_DEVICE".
    pub fn error_name(&self, code: CuResult) -> String {
        let mut p: *const c_char = std::ptr::null();
        let r = unsafe { (self.fns.cuGetErrorName)(code, &mut p) };
        if r == CUDA_SUCCESS && !p.is_null() {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            format!("CUDA error {code}")
        }
    }

    /// Turns a `CUresult` into `Ok(())` or [`EngineError::DriverCall`].
    pub fn check(&self, call: &'static str, code: CuResult) -> Result<(), EngineError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(EngineError::DriverCall {
                call,
                code,
                name: self.error_name(code),
                hint: None,
            })
        }
    }

    fn check_hint(&self, call: &'static str, code: CuResult, hint: &str) -> Result<(), EngineError> {
        self.check(call, code).map_err(|e| match e {
            EngineError::DriverCall { call, code, name, .. } => EngineError::DriverCall {
                call,
                code,
                name,
                hint: Some(hint.to_string()),
            },
            other => other,
        })
    }

    /// The current context, if any.
    pub fn current_context(&self) -> Result<Option<CuContext>, EngineError> {
        let mut ctx: CuContext = std::ptr::null_mut();
        self.check("cuCtxGetCurrent", unsafe { (self.fns.cuCtxGetCurrent)(&mut ctx) })?;
        Ok((!ctx.is_null()).then_some(ctx))
    }

    /// Makes sure a context is current on this thread: keeps the user's, or retains device 0's
    /// primary context (the one the CUDA runtime and PyTorch use) and makes it current.
    pub fn ensure_context(&self) -> Result<CuContext, EngineError> {
        if let Some(ctx) = self.current_context()? {
            return Ok(ctx);
        }
        let mut dev: CuDevice = 0;
        self.check("cuDeviceGet", unsafe { (self.fns.cuDeviceGet)(&mut dev, 0) })?;
        let mut ctx: CuContext = std::ptr::null_mut();
        self.check("cuDevicePrimaryCtxRetain", unsafe {
            (self.fns.cuDevicePrimaryCtxRetain)(&mut ctx, dev)
        })?;
        self.check("cuCtxSetCurrent", unsafe { (self.fns.cuCtxSetCurrent)(ctx) })?;
        Ok(ctx)
    }

    /// The device ordinal of the current context.
    pub fn current_device(&self) -> Result<i32, EngineError> {
        let mut dev: CuDevice = 0;
        self.check("cuCtxGetDevice", unsafe { (self.fns.cuCtxGetDevice)(&mut dev) })?;
        Ok(dev)
    }

    /// Number of visible devices.
    pub fn device_count(&self) -> Result<i32, EngineError> {
        let mut n = 0;
        self.check("cuDeviceGetCount", unsafe { (self.fns.cuDeviceGetCount)(&mut n) })?;
        Ok(n)
    }

    /// `cuCtxSynchronize` on the current context.
    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.check("cuCtxSynchronize", unsafe { (self.fns.cuCtxSynchronize)() })
    }

    /// Allocates device memory in the current context.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, EngineError> {
        let mut ptr: CuDevicePtr = 0;
        self.check("cuMemAlloc_v2", unsafe { (self.fns.cuMemAlloc)(&mut ptr, bytes) })?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    /// Creates a CUDA event (default flags: it records timing).
    pub fn event_create(&self) -> Result<CuEvent, EngineError> {
        let mut e: CuEvent = std::ptr::null_mut();
        self.check("cuEventCreate", unsafe { (self.fns.cuEventCreate)(&mut e, 0) })?;
        Ok(e)
    }

    /// Records `event` on the legacy default stream, which orders it after the work already
    /// queued on every blocking stream of the context.
    // `CuEvent` is an opaque driver handle: kprof never dereferences it, the driver checks it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn event_record(&self, event: CuEvent) -> Result<(), EngineError> {
        self.check("cuEventRecord", unsafe {
            (self.fns.cuEventRecord)(event, std::ptr::null_mut())
        })
    }

    /// Milliseconds between two recorded, completed events.
    // `CuEvent` is an opaque driver handle: kprof never dereferences it, the driver checks it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn event_elapsed_ms(&self, start: CuEvent, end: CuEvent) -> Result<f32, EngineError> {
        let mut ms = 0f32;
        self.check("cuEventElapsedTime", unsafe {
            (self.fns.cuEventElapsedTime)(&mut ms, start, end)
        })?;
        Ok(ms)
    }

    /// Destroys an event.
    // `CuEvent` is an opaque driver handle: kprof never dereferences it, the driver checks it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn event_destroy(&self, event: CuEvent) -> Result<(), EngineError> {
        self.check("cuEventDestroy_v2", unsafe { (self.fns.cuEventDestroy)(event) })
    }

    /// Sets every byte of the buffer (asynchronously w.r.t. the host on the legacy stream).
    pub fn memset(&self, buf: DeviceBuffer, value: u8) -> Result<(), EngineError> {
        self.check("cuMemsetD8_v2", unsafe {
            (self.fns.cuMemsetD8)(buf.ptr, value, buf.bytes)
        })
    }

    /// Loads a PTX (or cubin) image into the current context (the driver JIT-compiles PTX for
    /// the device) and returns its function `name`. The module stays loaded for the process.
    pub fn load_function(&self, image: &CStr, name: &CStr) -> Result<CuFunction, EngineError> {
        let mut module: CuModule = std::ptr::null_mut();
        self.check("cuModuleLoadData", unsafe {
            (self.fns.cuModuleLoadData)(&mut module, image.as_ptr().cast())
        })?;
        let mut func: CuFunction = std::ptr::null_mut();
        self.check("cuModuleGetFunction", unsafe {
            (self.fns.cuModuleGetFunction)(&mut func, module, name.as_ptr())
        })?;
        Ok(func)
    }

    /// Launches `func` on the legacy default stream with a 1-D grid; `params` points at each
    /// kernel argument in order, as `cuLaunchKernel` wants.
    ///
    /// # Safety
    /// `func` must come from [`Driver::load_function`] in the current context, and `params` must
    /// point at live values whose number and types match the kernel's parameters.
    pub unsafe fn launch_1d(
        &self,
        func: CuFunction,
        blocks: u32,
        threads: u32,
        params: &mut [*mut c_void],
    ) -> Result<(), EngineError> {
        self.check("cuLaunchKernel", unsafe {
            (self.fns.cuLaunchKernel)(
                func,
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
        })
    }

    /// Frees a buffer from [`Driver::alloc`].
    pub fn free(&self, buf: DeviceBuffer) -> Result<(), EngineError> {
        self.check("cuMemFree_v2", unsafe { (self.fns.cuMemFree)(buf.ptr) })
    }

    /// Name, L2 size, clocks, compute capability and UUID of device `ordinal`.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceProps, EngineError> {
        let f = &self.fns;
        let mut dev: CuDevice = 0;
        self.check("cuDeviceGet", unsafe { (f.cuDeviceGet)(&mut dev, ordinal) })?;
        let mut name = [0 as c_char; 256];
        self.check("cuDeviceGetName", unsafe {
            (f.cuDeviceGetName)(name.as_mut_ptr(), name.len() as c_int, dev)
        })?;
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let get = |a: i32| -> Result<i32, EngineError> {
            let mut v = 0;
            self.check("cuDeviceGetAttribute", unsafe {
                (f.cuDeviceGetAttribute)(&mut v, a, dev)
            })?;
            Ok(v)
        };
        let mut uuid = [0u8; 16];
        self.check("cuDeviceGetUuid", unsafe { (f.cuDeviceGetUuid)(&mut uuid, dev) })?;
        Ok(DeviceProps {
            ordinal,
            name,
            l2_bytes: get(attr::L2_CACHE_SIZE)?.max(0) as u64,
            clock_khz: get(attr::CLOCK_RATE)?.max(0) as u32,
            mem_clock_khz: get(attr::MEMORY_CLOCK_RATE)?.max(0) as u32,
            cc: (
                get(attr::COMPUTE_CAPABILITY_MAJOR)?,
                get(attr::COMPUTE_CAPABILITY_MINOR)?,
            ),
            uuid: format_uuid(&uuid),
        })
    }
}

/// Formats 16 UUID bytes the way nvidia-smi does.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_format() {
        let b: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(format_uuid(&b), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
    }
}
