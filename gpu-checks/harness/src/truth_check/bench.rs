//! The GPU work of `truth_check`: the kernels, buffers and cases every mode launches.

use std::sync::Arc;

use crate::common::{self, cublas, BoxError, Gpu, Matmul};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaFunction, CudaGraph, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

/// CUDA C of the cases' own kernels (NVRTC at start).
pub(crate) const SRC: &str = r#"
extern "C" __global__ void axpb(float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 1.0001f + 0.5f;
}
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
extern "C" __global__ void scale2(float* y, const float* x, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"#;

/// One element per thread, 256-thread blocks.
pub(crate) fn grid(n: u32) -> LaunchConfig {
    common::blocks(n)
}

/// Everything the modes launch: the kernels, their buffers, cuBLAS handles and the sgemms.
pub(crate) struct Bench {
    pub(crate) gpu: Gpu,
    pub(crate) axpb: CudaFunction,
    pub(crate) scale2: CudaFunction,
    pub(crate) spin: CudaFunction,
    pub(crate) blas: CudaBlas,
    pub(crate) small: CudaSlice<f32>,
    pub(crate) mid: CudaSlice<f32>,
    pub(crate) big_x: CudaSlice<f32>,
    pub(crate) big_y: CudaSlice<f32>,
    pub(crate) mm: Vec<Matmul>,
    /// The stream graphs are captured on (not the legacy default stream) and its cuBLAS handle,
    /// created and warmed up before any capture (cublasCreate cannot run inside one).
    pub(crate) cap: Arc<CudaStream>,
    pub(crate) cap_blas: CudaBlas,
}

pub(crate) const N_SMALL: u32 = 1 << 20; // 1M floats: ~2-3 us per kernel
pub(crate) const N_MID: u32 = 8 << 20; // 8M floats: ~20 us
pub(crate) const N_BIG: u32 = 64 << 20; // 64M floats (256 MB)

impl Bench {
    pub(crate) fn new() -> Result<Bench, BoxError> {
        let gpu = Gpu::new()?;
        let ptx = common::compile_with_nvrtc(SRC)?;
        let m = gpu.ctx.load_module(ptx)?;
        let blas = cublas(&gpu.stream)?;
        let fill = |n: u32| {
            gpu.stream
                .clone_htod(&(0..n).map(|i| (i % 97) as f32 * 0.01).collect::<Vec<_>>())
        };
        let small = fill(N_SMALL)?;
        let mid = fill(N_MID)?;
        let big_x = fill(N_BIG)?;
        let big_y = gpu.stream.alloc_zeros::<f32>(N_BIG as usize)?;
        let mut mm = Vec::new();
        for n in [1024, 2048, 4096, 8192] {
            mm.push(Matmul::new(&gpu, n)?);
        }
        let cap = gpu.stream.fork()?;
        let cap_blas = CudaBlas::new(cap.clone())?;
        mm[2].run(&cap_blas)?;
        gpu.sync()?;
        Ok(Bench {
            axpb: m.load_function("axpb")?,
            scale2: m.load_function("scale2")?,
            spin: m.load_function("spin")?,
            gpu,
            blas,
            small,
            mid,
            big_x,
            big_y,
            mm,
            cap,
            cap_blas,
        })
    }

    pub(crate) fn axpb_on(&self, s: &CudaStream, which: u32, times: usize) -> Result<(), BoxError> {
        let (buf, n) = match which {
            0 => (&self.small, N_SMALL),
            _ => (&self.mid, N_MID),
        };
        for _ in 0..times {
            let mut b = s.launch_builder(&self.axpb);
            b.arg(buf).arg(&n);
            unsafe { b.launch(grid(n)) }?;
        }
        Ok(())
    }

    pub(crate) fn scale_big(&mut self) -> Result<(), BoxError> {
        let mut b = self.gpu.stream.launch_builder(&self.scale2);
        b.arg(&mut self.big_y).arg(&self.big_x).arg(&N_BIG);
        unsafe { b.launch(grid(N_BIG)) }?;
        Ok(())
    }

    pub(crate) fn capture(&mut self, what: &str) -> Result<CudaGraph, BoxError> {
        let cap = self.cap.clone();
        cap.join(&self.gpu.stream)?;
        cap.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        match what {
            "graph60" => self.axpb_on(&cap, 0, 60)?,
            "graph600" => self.axpb_on(&cap, 0, 600)?,
            "graph2stream" => {
                let other = cap.fork()?;
                self.axpb_on(&cap, 0, 30)?;
                let mut b = other.launch_builder(&self.axpb);
                for _ in 0..30 {
                    b = other.launch_builder(&self.axpb);
                    b.arg(&self.mid).arg(&N_SMALL);
                    unsafe { b.launch(grid(N_SMALL)) }?;
                }
                drop(b);
                cap.join(&other)?;
            }
            "graph3big" => {
                self.mm[2].run(&self.cap_blas)?;
                let mut b = cap.launch_builder(&self.scale2);
                b.arg(&mut self.big_y).arg(&self.big_x).arg(&N_BIG);
                unsafe { b.launch(grid(N_BIG)) }?;
                let mut b = cap.launch_builder(&self.axpb);
                b.arg(&mut self.big_y).arg(&N_BIG);
                unsafe { b.launch(grid(N_BIG)) }?;
            }
            other => return Err(format!("no graph {other}").into()),
        }
        let g = cap.end_capture(CUgraphInstantiate_flags(0))?.ok_or("empty capture")?;
        g.upload()?;
        self.gpu.sync()?;
        Ok(g)
    }

    /// Launches one eager case on the default stream.
    pub(crate) fn eager(&mut self, case: &str) -> Result<(), BoxError> {
        let s = self.gpu.stream.clone();
        match case {
            "eager60" => self.axpb_on(&s, 0, 60),
            "k2us" => self.axpb_on(&s, 0, 1),
            "k20us" => self.axpb_on(&s, 1, 1),
            "scale64M" => self.scale_big(),
            mm if mm.starts_with("sgemm") => {
                let i = match mm {
                    "sgemm1024" => 0,
                    "sgemm2048" => 1,
                    "sgemm4096" => 2,
                    _ => 3,
                };
                self.mm[i].run(&self.blas)
            }
            other => Err(format!("no case {other}").into()),
        }
    }
}
