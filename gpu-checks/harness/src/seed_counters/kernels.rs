//! Kernels: the seed's CUDA C (compiled with NVRTC) and the cuBLAS fp16 matmul.

use std::ffi::c_void;

use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType_t};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};

use crate::common::{blocks, compile_with_nvrtc, BoxError, Gpu};
use crate::BLOCK_THREADS;

/// CUDA C of the seed's kernels, compiled with NVRTC (no CUDA headers: fp16 values are stored as
/// their bits, converted with inline PTX).
const SEED_KERNELS_CU: &str = r#"
// A 64-bit mixing function (splitmix64's finaliser): index and seed to well-spread bits.
__device__ unsigned long long mix64(unsigned long long z) {
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z;
}

// A deterministic, roughly standard-normal value for element i: the sum of four 16-bit uniforms
// (mean 2, variance 1/3), centred and scaled to unit variance.
__device__ float normalish(unsigned int i, unsigned int seed) {
    unsigned long long h = mix64((((unsigned long long)seed << 32) | i) + 0x9e3779b97f4a7c15ULL);
    float sum = 0.0f;
    for (int k = 0; k < 4; ++k) {
        sum += (float)((h >> (16 * k)) & 0xffffULL) * (1.0f / 65536.0f);
    }
    return (sum - 2.0f) * 1.7320508f;
}

__device__ unsigned short f32_to_f16_bits(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

extern "C" __global__ void fill_normal_f32(float* out, unsigned int n, unsigned int seed) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = normalish(i, seed);
}

extern "C" __global__ void fill_normal_f16(unsigned short* out, unsigned int n, unsigned int seed) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f32_to_f16_bits(normalish(i, seed));
}

extern "C" __global__ void scale_f32(float* y, const float* x, float a, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

extern "C" __global__ void mul_f32(float* t, const float* b, const float* c, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = b[i] * c[i];
}

extern "C" __global__ void add_f32(float* y, const float* a, const float* t, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a[i] + t[i];
}

extern "C" __global__ void addcmul_f32(float* y, const float* a, const float* b, const float* c, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a[i] + b[i] * c[i];
}

template <bool MAX> __device__ float reduce_op(float a, float b) {
    return MAX ? fmaxf(a, b) : a + b;
}

template <bool MAX> __device__ float warp_reduce(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = reduce_op<MAX>(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}

// Max or sum over the block (warp shuffles, then one value per warp through shared memory);
// every thread gets the result. scratch holds one float per warp.
template <bool MAX> __device__ float block_reduce(float v, float* scratch) {
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    v = warp_reduce<MAX>(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? scratch[lane] : (MAX ? -3.402823466e38f : 0.0f);
        w = warp_reduce<MAX>(w);
        if (lane == 0) scratch[0] = w;
    }
    __syncthreads();
    const float result = scratch[0];
    __syncthreads();  // scratch is reused by the next reduction
    return result;
}

// Numerically stable softmax of each row of a row-major rows x cols matrix: one block per row
// (row max, then the sum of exp(x - max), then exp(x - max) / sum).
extern "C" __global__ void softmax_rows_f32(float* out, const float* in, unsigned int cols) {
    __shared__ float scratch[32];
    const unsigned long long offset = (unsigned long long)blockIdx.x * cols;
    const float* row = in + offset;
    float* out_row = out + offset;
    float row_max = -3.402823466e38f;
    for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) row_max = fmaxf(row_max, row[c]);
    row_max = block_reduce<true>(row_max, scratch);
    float sum = 0.0f;
    for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - row_max);
    sum = block_reduce<false>(sum, scratch);
    const float inv_sum = 1.0f / sum;
    for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) out_row[c] = expf(row[c] - row_max) * inv_sum;
}
"#;

/// The seed's kernels, loaded into the context.
pub(crate) struct SeedKernels {
    fill_f32: CudaFunction,
    fill_f16: CudaFunction,
    scale: CudaFunction,
    pub(crate) mul: CudaFunction,
    pub(crate) add: CudaFunction,
    addcmul: CudaFunction,
    softmax: CudaFunction,
}

fn len_u32(len: usize) -> Result<u32, BoxError> {
    u32::try_from(len).map_err(|_| format!("{len} elements do not fit the kernels' 32-bit index").into())
}

impl SeedKernels {
    pub(crate) fn load(gpu: &Gpu) -> Result<SeedKernels, BoxError> {
        let module = gpu.ctx.load_module(compile_with_nvrtc(SEED_KERNELS_CU)?)?;
        Ok(SeedKernels {
            fill_f32: module.load_function("fill_normal_f32")?,
            fill_f16: module.load_function("fill_normal_f16")?,
            scale: module.load_function("scale_f32")?,
            mul: module.load_function("mul_f32")?,
            add: module.load_function("add_f32")?,
            addcmul: module.load_function("addcmul_f32")?,
            softmax: module.load_function("softmax_rows_f32")?,
        })
    }

    /// Fills `out` with roughly standard-normal values derived from `seed`.
    pub(crate) fn fill_f32(&self, s: &CudaStream, out: &mut CudaSlice<f32>, seed: u32) -> Result<(), BoxError> {
        let n = len_u32(out.len())?;
        let mut b = s.launch_builder(&self.fill_f32);
        b.arg(out).arg(&n).arg(&seed);
        // SAFETY: the arguments match fill_normal_f32's signature; the grid covers n elements.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// Fills `out` (fp16 bits) with roughly standard-normal values derived from `seed`.
    pub(crate) fn fill_f16(&self, s: &CudaStream, out: &mut CudaSlice<u16>, seed: u32) -> Result<(), BoxError> {
        let n = len_u32(out.len())?;
        let mut b = s.launch_builder(&self.fill_f16);
        b.arg(out).arg(&n).arg(&seed);
        // SAFETY: the arguments match fill_normal_f16's signature.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// `y = a * x`.
    pub(crate) fn scale(
        &self,
        s: &CudaStream,
        y: &mut CudaSlice<f32>,
        x: &CudaSlice<f32>,
        a: f32,
    ) -> Result<(), BoxError> {
        let n = len_u32(x.len().min(y.len()))?;
        let mut b = s.launch_builder(&self.scale);
        b.arg(y).arg(x).arg(&a).arg(&n);
        // SAFETY: the arguments match scale_f32's signature; both buffers hold n elements.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// `out[i] = f(x[i], y[i])` for the kernels `f(out, x, y, n)` (`mul_f32`, `add_f32`).
    pub(crate) fn binary(
        f: &CudaFunction,
        s: &CudaStream,
        out: &mut CudaSlice<f32>,
        x: &CudaSlice<f32>,
        y: &CudaSlice<f32>,
    ) -> Result<(), BoxError> {
        let n = len_u32(out.len().min(x.len()).min(y.len()))?;
        let mut l = s.launch_builder(f);
        l.arg(out).arg(x).arg(y).arg(&n);
        // SAFETY: the arguments match the (float*, const float*, const float*, unsigned int)
        // signature of mul_f32 and add_f32; all buffers hold n elements.
        unsafe { l.launch(blocks(n)) }?;
        Ok(())
    }

    /// `y = a + b * c` in one kernel.
    pub(crate) fn addcmul(
        &self,
        s: &CudaStream,
        y: &mut CudaSlice<f32>,
        [a, b, c]: [&CudaSlice<f32>; 3],
    ) -> Result<(), BoxError> {
        let n = len_u32(y.len().min(a.len()).min(b.len()).min(c.len()))?;
        let mut l = s.launch_builder(&self.addcmul);
        l.arg(y).arg(a).arg(b).arg(c).arg(&n);
        // SAFETY: the arguments match addcmul_f32's signature; all buffers hold n elements.
        unsafe { l.launch(blocks(n)) }?;
        Ok(())
    }

    /// Row softmax of a row-major `rows x cols` matrix, one block per row.
    pub(crate) fn softmax(
        &self,
        s: &CudaStream,
        out: &mut CudaSlice<f32>,
        input: &CudaSlice<f32>,
        cols: usize,
    ) -> Result<(), BoxError> {
        let rows = len_u32(input.len().min(out.len()) / cols)?;
        let cols = len_u32(cols)?;
        let mut l = s.launch_builder(&self.softmax);
        l.arg(out).arg(input).arg(&cols);
        let cfg = LaunchConfig {
            grid_dim: (rows, 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match softmax_rows_f32's signature; rows * cols elements each.
        unsafe { l.launch(cfg) }?;
        Ok(())
    }
}

/// `c = a · a` for a square `n x n` fp16 matrix with fp32 accumulation (cuBLAS `cublasGemmEx`,
/// as torch's `a @ a` on half tensors). Column-major or row-major makes no difference to the
/// work done.
pub(crate) fn gemm_f16_square(
    blas: &CudaBlas,
    stream: &CudaStream,
    a: &CudaSlice<u16>,
    c: &mut CudaSlice<u16>,
    n: usize,
) -> Result<(), BoxError> {
    if a.len() < n * n || c.len() < n * n {
        return Err(format!("gemm_f16_square: buffers smaller than {n} x {n}").into());
    }
    let n = i32::try_from(n)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (a_ptr, _a_read) = a.device_ptr(stream);
    let (c_ptr, _c_write) = c.device_ptr_mut(stream);
    let op = cublasOperation_t::CUBLAS_OP_N;
    let f16 = cudaDataType_t::CUDA_R_16F;
    // SAFETY: a and c hold n * n fp16 values on the handle's stream; alpha and beta are f32 host
    // values, as CUBLAS_COMPUTE_32F requires.
    unsafe {
        cudarc::cublas::result::gemm_ex(
            *blas.handle(),
            op,
            op,
            n,
            n,
            n,
            (&alpha as *const f32).cast::<c_void>(),
            a_ptr as *const c_void,
            f16,
            n,
            a_ptr as *const c_void,
            f16,
            n,
            (&beta as *const f32).cast::<c_void>(),
            c_ptr as *mut c_void,
            f16,
            n,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )?;
    }
    Ok(())
}
