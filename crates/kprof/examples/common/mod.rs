//! Shared helpers of the kprof examples: CUDA setup through cudarc, the example kernels (NVRTC,
//! with a hand-written PTX fallback), cuBLAS sgemm, and a plain result printout.
#![allow(dead_code)]

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use kprof::core::model::RawResults;
use kprof::driver::{CuContext, DeviceProps, Driver};
use kprof::loader::SearchEnv;
use kprof::runner::{BenchOptions, CacheControl, Profiler};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// CUDA C source of the example kernels (compiled at run time with NVRTC).
pub const KERNELS_CU: &str = r#"
extern "C" __global__ void kprof_empty() {}

extern "C" __global__ void kprof_scale(float* y, const float* x, float a, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

extern "C" __global__ void kprof_add(float* y, const float* x, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] + x[i];
}
"#;

/// The start of every element-wise kernel of [`KERNELS_PTX`] (the `{` after its parameters
/// `py`, `px`, ..., `pn`): its registers, the loads of `y`, `x` and `n` (`$extra`: the loads of
/// any others), the thread's index `r5`, a branch to `$done` past `n`, and the addresses of
/// `x[i]` (`rd6`) and `y[i]` (`rd7`).
macro_rules! elementwise_ptx_start {
    ($extra:literal, $done:literal) => {
        concat!(
            "{
    .reg .pred p;
    .reg .b32 r<6>;
    .reg .f32 f<4>;
    .reg .b64 rd<8>;
    ld.param.u64 rd1, [py];
    ld.param.u64 rd2, [px];
",
            $extra,
            "    ld.param.u32 r1, [pn];
    mov.u32 r2, %ctaid.x;
    mov.u32 r3, %ntid.x;
    mov.u32 r4, %tid.x;
    mad.lo.s32 r5, r2, r3, r4;
    setp.ge.u32 p, r5, r1;
    @p bra ",
            $done,
            ";
    cvta.to.global.u64 rd3, rd1;
    cvta.to.global.u64 rd4, rd2;
    mul.wide.u32 rd5, r5, 4;
    add.s64 rd6, rd4, rd5;
    add.s64 rd7, rd3, rd5;
"
        )
    };
}

/// The same kernels in PTX, used when NVRTC is not available (the driver JIT-compiles PTX).
pub const KERNELS_PTX: &str = concat!(
    r#"
.version 7.0
.target sm_75
.address_size 64

.visible .entry kprof_empty()
{
    ret;
}

.visible .entry kprof_scale(.param .u64 py, .param .u64 px, .param .f32 pa, .param .u32 pn)
"#,
    elementwise_ptx_start!("    ld.param.f32 f1, [pa];\n", "SCALE_DONE"),
    r#"    ld.global.f32 f2, [rd6];
    mul.f32 f2, f2, f1;
    st.global.f32 [rd7], f2;
SCALE_DONE:
    ret;
}

.visible .entry kprof_add(.param .u64 py, .param .u64 px, .param .u32 pn)
"#,
    elementwise_ptx_start!("", "ADD_DONE"),
    r#"    ld.global.f32 f1, [rd6];
    ld.global.f32 f2, [rd7];
    add.f32 f3, f2, f1;
    st.global.f32 [rd7], f3;
ADD_DONE:
    ret;
}
"#
);

/// CUDA context (device 0's primary context, the one kprof uses) and its default stream.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
}

impl Gpu {
    /// Opens device 0 through cudarc. Event tracking is off: the examples synchronise
    /// explicitly, and tracking would add event records around every launch.
    pub fn new() -> Result<Gpu, BoxError> {
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("libcuda not found: is the NVIDIA driver installed?".into());
        }
        let ctx = CudaContext::new(0)?;
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream })
    }

    pub fn sync(&self) -> Result<(), BoxError> {
        self.ctx.synchronize()?;
        Ok(())
    }
}

/// Runs an example's body; on an error, prints it and exits with status 1.
pub fn run_or_exit(run: impl FnOnce() -> Result<(), BoxError>) {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// What the small examples start from: kprof's profiler (made first, before any CUDA work),
/// device 0 and the example kernels loaded into it.
pub fn start() -> Result<(Profiler, Gpu, Kernels), BoxError> {
    let prof = Profiler::new()?;
    let gpu = Gpu::new()?;
    let k = Kernels::load(&gpu)?;
    Ok((prof, gpu, k))
}

/// Default options but `runs` runs and the given cache control.
pub fn bench_options(runs: u32, cache: CacheControl) -> BenchOptions {
    let mut opts = BenchOptions::default();
    opts.runs = runs;
    opts.cache = cache;
    opts
}

/// The example kernels, loaded into the context.
pub struct Kernels {
    pub empty: CudaFunction,
    pub scale: CudaFunction,
    pub add: CudaFunction,
    /// "nvrtc" or "ptx-jit".
    pub source: &'static str,
}

impl Kernels {
    /// Compiles [`KERNELS_CU`] with NVRTC, or falls back to [`KERNELS_PTX`] when NVRTC is missing
    /// or fails.
    pub fn load(gpu: &Gpu) -> Result<Kernels, BoxError> {
        let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        let (ptx, source) = match nvrtc.then(|| cudarc::nvrtc::compile_ptx(KERNELS_CU)) {
            Some(Ok(ptx)) => (ptx, "nvrtc"),
            Some(Err(e)) => {
                eprintln!("NVRTC failed ({e}); using the built-in PTX");
                (cudarc::nvrtc::Ptx::from_src(KERNELS_PTX), "ptx-jit")
            }
            None => {
                eprintln!("libnvrtc not found; using the built-in PTX (driver JIT)");
                (cudarc::nvrtc::Ptx::from_src(KERNELS_PTX), "ptx-jit")
            }
        };
        let module = gpu.ctx.load_module(ptx)?;
        Ok(Kernels {
            empty: module.load_function("kprof_empty")?,
            scale: module.load_function("kprof_scale")?,
            add: module.load_function("kprof_add")?,
            source,
        })
    }

    /// `y = a * x` over the first `n` elements.
    pub fn scale(
        &self,
        s: &CudaStream,
        y: &mut CudaSlice<f32>,
        x: &CudaSlice<f32>,
        a: f32,
        n: u32,
    ) -> Result<(), BoxError> {
        let mut b = s.launch_builder(&self.scale);
        b.arg(y).arg(x).arg(&a).arg(&n);
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// `y += x` over the first `n` elements.
    pub fn add(&self, s: &CudaStream, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, n: u32) -> Result<(), BoxError> {
        let mut b = s.launch_builder(&self.add);
        b.arg(y).arg(x).arg(&n);
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// One empty kernel (1 block of 32 threads).
    pub fn empty(&self, s: &CudaStream) -> Result<(), BoxError> {
        let mut b = s.launch_builder(&self.empty);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}

/// The example kernels' operands on `s`: `x` (all 1.0) and `y`, `z` (zeros), `n` floats each.
pub fn operands(s: &Arc<CudaStream>, n: u32) -> Result<[CudaSlice<f32>; 3], BoxError> {
    let x = s.clone_htod(&vec![1.0f32; n as usize])?;
    let y = s.alloc_zeros::<f32>(n as usize)?;
    let z = s.alloc_zeros::<f32>(n as usize)?;
    Ok([x, y, z])
}

/// One thread per element in 256-thread blocks.
pub fn blocks(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Compiles CUDA C with NVRTC, for examples that have no PTX fallback: a readable error when
/// libnvrtc is missing or the source does not compile.
pub fn compile_with_nvrtc(src: &str) -> Result<cudarc::nvrtc::Ptx, BoxError> {
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(
            "libnvrtc (NVRTC, e.g. libnvrtc.so.13) not found: put the CUDA toolkit's lib64 (or the pip \
                    nvidia/cu13/lib) on LD_LIBRARY_PATH"
                .into(),
        );
    }
    cudarc::nvrtc::compile_ptx(src).map_err(|e| {
        let detail = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => other.to_string(),
        };
        format!("NVRTC could not compile the example kernels: {detail}").into()
    })
}

/// Square fp32 matrices for C = A * B.
pub struct Matmul {
    pub n: usize,
    pub a: CudaSlice<f32>,
    pub b: CudaSlice<f32>,
    pub c: CudaSlice<f32>,
}

impl Matmul {
    pub fn new(gpu: &Gpu, n: usize) -> Result<Matmul, BoxError> {
        let host: Vec<f32> = (0..n * n).map(|i| ((i % 17) as f32 - 8.0) / 16.0).collect();
        let a = gpu.stream.clone_htod(&host)?;
        let b = gpu.stream.clone_htod(&host)?;
        let c = gpu.stream.alloc_zeros::<f32>(n * n)?;
        Ok(Matmul { n, a, b, c })
    }

    /// One cuBLAS sgemm, C = A * B.
    pub fn run(&mut self, blas: &CudaBlas) -> Result<(), BoxError> {
        let n = self.n as i32;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n,
            n,
            k: n,
            alpha: 1.0f32,
            lda: n,
            ldb: n,
            beta: 0.0f32,
            ldc: n,
        };
        unsafe { blas.gemm(cfg, &self.a, &self.b, &mut self.c) }?;
        Ok(())
    }
}

/// cuBLAS on the given stream; a readable error when libcublas is missing.
pub fn cublas(stream: &Arc<CudaStream>) -> Result<CudaBlas, BoxError> {
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(
            "libcublas not found: put the CUDA toolkit's lib64 (or the pip nvidia/cu13/lib) on \
                    LD_LIBRARY_PATH"
                .into(),
        );
    }
    Ok(CudaBlas::new(stream.clone())?)
}

/// Per-series statistics of a result set: (benchmark, annotation, config label, n, mean, median,
/// min, kernel names of the first run).
pub struct SeriesStats {
    pub annotation: String,
    pub config: String,
    pub n: usize,
    pub nan: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub kernel: String,
}

pub fn series_stats(raw: &RawResults) -> Vec<SeriesStats> {
    let mut out = Vec::new();
    for (i, s) in raw.series.iter().enumerate() {
        let samples: Vec<_> = raw.samples.iter().filter(|x| x.series as usize == i).collect();
        let mut v: Vec<f64> = samples.iter().map(|x| x.value).filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let kernel = samples
            .first()
            .map(|x| raw.kernel_names[x.kernel as usize].clone())
            .unwrap_or_default();
        out.push(SeriesStats {
            annotation: s.key.annotation.clone(),
            config: raw.configs[s.key.config as usize].to_string(),
            n: v.len(),
            nan: samples.len() - v.len(),
            mean: if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            },
            median: median_sorted(&v),
            min: v.first().copied().unwrap_or(f64::NAN),
            kernel,
        });
    }
    out
}

pub fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

/// Shortens long (mangled cuBLAS) kernel names for printing.
pub fn short(name: &str, max: usize) -> String {
    if name.len() <= max {
        name.to_string()
    } else {
        format!("{}...", &name[..max.saturating_sub(3)])
    }
}

/// Prints one line per series: annotation, config, runs, mean/median/min in us, kernels.
pub fn print_results(title: &str, raw: &RawResults) {
    println!("== {title}");
    println!(
        "{:<14} {:<22} {:>4} {:>12} {:>12} {:>12}  kernels",
        "annotation", "config", "runs", "mean us", "median us", "min us"
    );
    for s in series_stats(raw) {
        println!(
            "{:<14} {:<22} {:>4} {:>12.3} {:>12.3} {:>12.3}  {}{}",
            s.annotation,
            s.config,
            s.n,
            s.mean / 1e3,
            s.median / 1e3,
            s.min / 1e3,
            short(&s.kernel, 60),
            if s.nan > 0 {
                format!("  ({} NaN)", s.nan)
            } else {
                String::new()
            }
        );
    }
}

/// kprof's CUDA driver wrapper ([`Driver`]): libcuda loaded the way kprof finds it, `cuInit`
/// done. Creates no context.
pub fn driver() -> Result<&'static Driver, String> {
    Driver::load(&SearchEnv::from_process()).map_err(|e| e.to_string())
}

/// A kernel of hand-written PTX on device 0, for the GPU checks that launch their own kernels:
/// kprof's driver wrapper makes device 0's primary context current (the context kprof
/// profiles), describes the device and allocates; cudarc's driver calls load the module and
/// launch.
pub struct RawKernel {
    pub driver: &'static Driver,
    /// Device 0's primary context, current on the thread that loaded the kernel.
    pub ctx: CuContext,
    pub device: DeviceProps,
    /// Device 0's streaming multiprocessors.
    pub sms: u32,
    func: sys::CUfunction,
}

impl RawKernel {
    /// Makes device 0's primary context current and loads the entry `entry` of `ptx` into it
    /// (the driver JIT-compiles it; a failed compilation's error carries the JIT log).
    pub fn load(driver: &'static Driver, ptx: &str, entry: &str) -> Result<RawKernel, String> {
        let ctx = driver.ensure_context().map_err(|e| e.to_string())?;
        let device = driver.device_info(0).map_err(|e| e.to_string())?;
        let dev = result::device::get(0).map_err(|e| format!("cuDeviceGet: {e}"))?;
        let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        // SAFETY: `dev` is device 0 from cuDeviceGet.
        let sms =
            unsafe { result::device::get_attribute(dev, attr) }.map_err(|e| format!("cuDeviceGetAttribute: {e}"))?;
        let image = CString::new(ptx).map_err(|_| "the PTX holds a NUL")?;
        let mut log = vec![0u8; 8192];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX image, and the JIT log's buffer and size, alive for the call.
        let rc = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if let Err(e) = rc.result() {
            let text = String::from_utf8_lossy(&log).trim_end_matches('\0').to_string();
            return Err(format!("cuModuleLoadDataEx: {e}; JIT log: {text}"));
        }
        let name = CString::new(entry).map_err(|_| "the entry's name holds a NUL")?;
        // SAFETY: `module` was just loaded.
        let func = unsafe { result::module::get_function(module, name) }
            .map_err(|e| format!("cuModuleGetFunction({entry}): {e}"))?;
        Ok(RawKernel {
            driver,
            ctx,
            device,
            sms: sms.max(1) as u32,
            func,
        })
    }

    /// Launches the kernel on `grid` blocks of `block` threads, on the legacy default stream.
    ///
    /// # Safety
    /// `params` holds one pointer per parameter of the entry, to a value of its type that lives
    /// until the launch returns.
    pub unsafe fn launch(&self, grid: u32, block: u32, params: &mut [*mut c_void]) -> Result<(), String> {
        result::launch_kernel(self.func, (grid, 1, 1), (block, 1, 1), 0, std::ptr::null_mut(), params)
            .map_err(|e| format!("cuLaunchKernel: {e}"))
    }

    /// Waits for the context's work.
    pub fn sync(&self) -> Result<(), String> {
        self.driver.synchronize().map_err(|e| e.to_string())
    }

    /// `bytes` of device memory in the context (never freed: the checks are short processes).
    pub fn alloc(&self, bytes: usize) -> Result<u64, String> {
        Ok(self.driver.alloc(bytes).map_err(|e| e.to_string())?.ptr)
    }
}
