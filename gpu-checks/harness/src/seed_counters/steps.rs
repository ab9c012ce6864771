//! The two steps: step 6 and step 7, their buffers, and the workload the benchmark closures run.

use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use kprof::runner::Run;

use crate::common::{cublas, BoxError, Gpu};
use crate::kernels::{gemm_f16_square, SeedKernels};
use crate::{
    FUSED, FUSION_LEN, MATMUL, MATMUL_N, SCALE, SCALE_LEN, SOFTMAX, SOFTMAX_COLS, SOFTMAX_ROWS, STEP6_METRICS,
    STEP7_METRICS, UNFUSED,
};

/// The seed's step 6 (`what_limits`) or step 7 (`fusion`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    Bound,
    Fusion,
}

impl Step {
    pub(crate) const ALL: [Step; 2] = [Step::Bound, Step::Fusion];

    /// The benchmark name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Step::Bound => "step6",
            Step::Fusion => "step7",
        }
    }

    pub(crate) fn metrics(self) -> Vec<String> {
        let m: &[&str] = match self {
            Step::Bound => &STEP6_METRICS,
            Step::Fusion => &STEP7_METRICS,
        };
        m.iter().map(|s| s.to_string()).collect()
    }

    pub(crate) fn runs(self) -> u32 {
        match self {
            Step::Bound => 3,
            Step::Fusion => 5,
        }
    }
}

/// Step 6's buffers: fp16 matrices for the matmul, 64 Mi floats for `x * 2`, 8192 x 1024 floats
/// for the softmax.
struct BoundBuffers {
    a_f16: CudaSlice<u16>,
    c_f16: CudaSlice<u16>,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    scores: CudaSlice<f32>,
    probs: CudaSlice<f32>,
}

/// Step 7's buffers: a, b, c, the unfused intermediate t and the output y, 32 Mi floats each.
struct FusionBuffers {
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
    t: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// Everything the benchmark closures need, allocated once.
pub(crate) struct Workload {
    gpu: Gpu,
    kernels: SeedKernels,
    blas: CudaBlas,
    bound: BoundBuffers,
    fusion: FusionBuffers,
}

impl Workload {
    pub(crate) fn new() -> Result<Workload, BoxError> {
        let gpu = Gpu::new()?;
        let kernels = SeedKernels::load(&gpu)?;
        let blas = cublas(&gpu.stream)?;
        let s = &gpu.stream;
        let bound = BoundBuffers {
            a_f16: s.alloc_zeros(MATMUL_N * MATMUL_N)?,
            c_f16: s.alloc_zeros(MATMUL_N * MATMUL_N)?,
            x: s.alloc_zeros(SCALE_LEN)?,
            y: s.alloc_zeros(SCALE_LEN)?,
            scores: s.alloc_zeros(SOFTMAX_ROWS * SOFTMAX_COLS)?,
            probs: s.alloc_zeros(SOFTMAX_ROWS * SOFTMAX_COLS)?,
        };
        let fusion = FusionBuffers {
            a: s.alloc_zeros(FUSION_LEN)?,
            b: s.alloc_zeros(FUSION_LEN)?,
            c: s.alloc_zeros(FUSION_LEN)?,
            t: s.alloc_zeros(FUSION_LEN)?,
            y: s.alloc_zeros(FUSION_LEN)?,
        };
        gpu.sync()?;
        Ok(Workload {
            gpu,
            kernels,
            blas,
            bound,
            fusion,
        })
    }

    /// One run of `step`: new inputs (seeded by the run index), then the step's regions.
    pub(crate) fn run(&mut self, step: Step, run: &mut Run) -> Result<(), BoxError> {
        let seed = run.index().wrapping_mul(16);
        match step {
            Step::Bound => self.run_bound(run, seed),
            Step::Fusion => self.run_fusion(run, seed),
        }
    }

    fn run_bound(&mut self, run: &mut Run, seed: u32) -> Result<(), BoxError> {
        let (k, s, buf) = (&self.kernels, &self.gpu.stream, &mut self.bound);
        k.fill_f16(s, &mut buf.a_f16, seed + 1)?;
        k.fill_f32(s, &mut buf.x, seed + 2)?;
        k.fill_f32(s, &mut buf.scores, seed + 3)?;
        {
            let _region = run.region(MATMUL)?;
            gemm_f16_square(&self.blas, s, &buf.a_f16, &mut buf.c_f16, MATMUL_N)?;
        }
        {
            let _region = run.region(SCALE)?;
            k.scale(s, &mut buf.y, &buf.x, 2.0)?;
        }
        let _region = run.region(SOFTMAX)?;
        k.softmax(s, &mut buf.probs, &buf.scores, SOFTMAX_COLS)
    }

    fn run_fusion(&mut self, run: &mut Run, seed: u32) -> Result<(), BoxError> {
        let (k, s, buf) = (&self.kernels, &self.gpu.stream, &mut self.fusion);
        k.fill_f32(s, &mut buf.a, seed + 4)?;
        k.fill_f32(s, &mut buf.b, seed + 5)?;
        k.fill_f32(s, &mut buf.c, seed + 6)?;
        {
            let _region = run.region(UNFUSED)?;
            SeedKernels::binary(&k.mul, s, &mut buf.t, &buf.b, &buf.c)?; // t = b * c
            SeedKernels::binary(&k.add, s, &mut buf.y, &buf.a, &buf.t)?; // y = a + t
        }
        let _region = run.region(FUSED)?;
        k.addcmul(s, &mut buf.y, [&buf.a, &buf.b, &buf.c])
    }
}
