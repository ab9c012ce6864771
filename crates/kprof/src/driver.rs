//! The CUDA driver, safely: [`Driver`] wraps the function table of the FFI layer
//! ([`crate::sys::driver`], resolved once from a libcuda loaded at run time by
//! [`crate::sys::loader`]) with the engine's errors, error names and hints.

use std::ffi::c_char;
use std::path::Path;
use std::sync::Mutex;

use crate::error::EngineError;
use crate::sys::driver::{attr, c_chars_to_string, DriverFns, KernelGraph};
pub use crate::sys::driver::{
    CuContext, CuDevice, CuDevicePtr, CuEvent, CuResult, HostWord, CUDA_ERROR_INVALID_CONTEXT, CUDA_SUCCESS,
};
use crate::sys::kernels::{LoadedKernel, PtxKernel};
use crate::sys::loader::{load_library, LibKind, SearchEnv};

/// Properties of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProps {
    pub ordinal: i32,
    pub name: String,
    pub l2_bytes: u64,
    pub clock_khz: u32,
    pub mem_clock_khz: u32,
    /// Streaming multiprocessors (ncu's `launch__sm_count` for a launch on the whole device).
    pub sm_count: u32,
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

/// The loaded CUDA driver: safe wrappers over the FFI layer's [`DriverFns`].
#[derive(Debug)]
pub struct Driver {
    pub(crate) fns: DriverFns,
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
        d.check("cuDriverGetVersion", fns.driver_get_version(&mut version))?;
        d.version = version;
        d.check_hint(
            "cuInit",
            fns.init(0),
            "no usable NVIDIA GPU: check nvidia-smi, CUDA_VISIBLE_DEVICES and that the driver \
             supports this GPU",
        )?;
        let d: &'static Driver = Box::leak(Box::new(d));
        *slot = Some(d);
        Ok(d)
    }

    /// The CUDA error name for a result code, e.g. "CUDA_ERROR_NO_DEVICE".
    pub fn error_name(&self, code: CuResult) -> String {
        self.fns
            .get_error_name(code)
            .unwrap_or_else(|| format!("CUDA error {code}"))
    }

    /// Turns a `CUresult` into `Ok(())` or [`EngineError::DriverCall`].
    pub fn check(&self, call: &'static str, code: CuResult) -> Result<(), EngineError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    /// [`EngineError::DriverCall`] for a failed call.
    fn error(&self, call: &'static str, code: CuResult) -> EngineError {
        EngineError::DriverCall {
            call,
            code,
            name: self.error_name(code),
            hint: None,
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
        self.check("cuCtxGetCurrent", self.fns.ctx_get_current(&mut ctx))?;
        Ok((!ctx.is_null()).then_some(ctx))
    }

    /// Makes sure a context is current on this thread: keeps the user's, or retains device 0's
    /// primary context (the one the CUDA runtime and PyTorch use) and makes it current.
    pub fn ensure_context(&self) -> Result<CuContext, EngineError> {
        if let Some(ctx) = self.current_context()? {
            return Ok(ctx);
        }
        let mut dev: CuDevice = 0;
        self.check("cuDeviceGet", self.fns.device_get(&mut dev, 0))?;
        let mut ctx: CuContext = std::ptr::null_mut();
        self.check(
            "cuDevicePrimaryCtxRetain",
            self.fns.device_primary_ctx_retain(&mut ctx, dev),
        )?;
        self.check("cuCtxSetCurrent", self.fns.ctx_set_current(ctx))?;
        Ok(ctx)
    }

    /// The device ordinal of the current context.
    pub fn current_device(&self) -> Result<i32, EngineError> {
        let mut dev: CuDevice = 0;
        self.check("cuCtxGetDevice", self.fns.ctx_get_device(&mut dev))?;
        Ok(dev)
    }

    /// Number of visible devices.
    pub fn device_count(&self) -> Result<i32, EngineError> {
        let mut n = 0;
        self.check("cuDeviceGetCount", self.fns.device_get_count(&mut n))?;
        Ok(n)
    }

    /// `cuCtxSynchronize` on the current context.
    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.check("cuCtxSynchronize", self.fns.ctx_synchronize())
    }

    /// Allocates device memory in the current context.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, EngineError> {
        let mut ptr: CuDevicePtr = 0;
        self.check("cuMemAlloc_v2", self.fns.mem_alloc(&mut ptr, bytes))?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    /// Creates a CUDA event (default flags: it records timing).
    pub fn event_create(&self) -> Result<CuEvent, EngineError> {
        self.fns
            .event_create(0)
            .map_err(|code| self.error("cuEventCreate", code))
    }

    /// Records `event` on the legacy default stream, which orders it after the work already
    /// queued on every blocking stream of the context.
    pub fn event_record(&self, event: CuEvent) -> Result<(), EngineError> {
        self.check("cuEventRecord", self.fns.event_record(event))
    }

    /// Milliseconds between two recorded, completed events.
    pub fn event_elapsed_ms(&self, start: CuEvent, end: CuEvent) -> Result<f32, EngineError> {
        let mut ms = 0f32;
        self.check("cuEventElapsedTime", self.fns.event_elapsed_time(&mut ms, start, end))?;
        Ok(ms)
    }

    /// Destroys an event.
    pub fn event_destroy(&self, event: CuEvent) -> Result<(), EngineError> {
        self.check("cuEventDestroy_v2", self.fns.event_destroy(event))
    }

    /// A word of pinned host memory the GPU can wait on ([`Driver::hold_stream`]), holding 0.
    pub fn host_word(&self) -> Result<HostWord, EngineError> {
        self.fns.host_word().map_err(|(call, code)| self.error(call, code))
    }

    /// Makes the legacy default stream's later work wait until `word` holds `value` or more
    /// (in wrapping order): the host releases it with [`HostWord::store`].
    pub fn hold_stream(&self, word: &HostWord, value: u32) -> Result<(), EngineError> {
        self.check("cuStreamWaitValue32_v2", self.fns.stream_wait_geq(word, value))
    }

    /// Sets every byte of the buffer (asynchronously w.r.t. the host on the legacy stream).
    pub fn memset(&self, buf: DeviceBuffer, value: u8) -> Result<(), EngineError> {
        self.check("cuMemsetD8_v2", self.fns.memset_d8(buf.ptr, value, buf.bytes))
    }

    /// Loads one of kprof's PTX kernels ([`crate::sys::kernels`]) into the current context (the
    /// driver JIT-compiles it for the device). The module stays loaded for the process.
    pub(crate) fn load_kernel(&self, kernel: &'static PtxKernel) -> Result<LoadedKernel, EngineError> {
        self.fns
            .load_kernel(kernel)
            .map_err(|(call, code)| self.error(call, code))
    }

    /// Launches a kernel from [`Driver::load_kernel`] on the legacy default stream with a 1-D
    /// grid and its two parameters `(u64 device pointer, u64 count)`.
    pub(crate) fn launch_kernel(
        &self,
        kernel: LoadedKernel,
        blocks: u32,
        threads: u32,
        args: (u64, u64),
    ) -> Result<(), EngineError> {
        self.check("cuLaunchKernel", self.fns.launch_kernel(kernel, blocks, threads, args))
    }

    /// kprof's own CUDA graph of one node running `kernel` (from [`Driver::load_kernel`]) with a
    /// 1-D grid and its two parameters, instantiated in the current context.
    pub(crate) fn kernel_graph(
        &self,
        kernel: LoadedKernel,
        blocks: u32,
        threads: u32,
        args: (u64, u64),
    ) -> Result<KernelGraph, EngineError> {
        self.fns
            .kernel_graph(kernel, blocks, threads, args)
            .map_err(|(call, code)| self.error(call, code))
    }

    /// Launches a [`KernelGraph`] on the legacy default stream.
    pub(crate) fn graph_launch(&self, graph: &KernelGraph) -> Result<(), EngineError> {
        self.check("cuGraphLaunch", self.fns.graph_launch(graph))
    }

    /// Frees a buffer from [`Driver::alloc`].
    pub fn free(&self, buf: DeviceBuffer) -> Result<(), EngineError> {
        self.check("cuMemFree_v2", self.fns.mem_free(buf.ptr))
    }

    /// Name, L2 size, clocks, SM count, compute capability and UUID of device `ordinal`.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceProps, EngineError> {
        let f = &self.fns;
        let mut dev: CuDevice = 0;
        self.check("cuDeviceGet", f.device_get(&mut dev, ordinal))?;
        let mut name = [0 as c_char; 256];
        self.check("cuDeviceGetName", f.device_get_name(&mut name, dev))?;
        let name = c_chars_to_string(&name);
        let get = |a: i32| -> Result<i32, EngineError> {
            let mut v = 0;
            self.check("cuDeviceGetAttribute", f.device_get_attribute(&mut v, a, dev))?;
            Ok(v)
        };
        let mut uuid = [0u8; 16];
        self.check("cuDeviceGetUuid", f.device_get_uuid(&mut uuid, dev))?;
        Ok(DeviceProps {
            ordinal,
            name,
            l2_bytes: get(attr::L2_CACHE_SIZE)?.max(0) as u64,
            clock_khz: get(attr::CLOCK_RATE)?.max(0) as u32,
            mem_clock_khz: get(attr::MEMORY_CLOCK_RATE)?.max(0) as u32,
            sm_count: get(attr::MULTIPROCESSOR_COUNT)?.max(0) as u32,
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
