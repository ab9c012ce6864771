//! The seed tutorial's steps 6 and 7 (hardware counters) through kprof's Rust API, measured three
//! ways, with a comparison and a check table (run on a GPU machine; needs libcuda, libcupti,
//! libcublas, libnvrtc, and ncu for the ncu mode).
//!
//! ```text
//! seed_counters OUT_DIR [--modes kernel,application,range,ncu] [--flush read,write,...]
//! ```
//!
//! Build on the dev machine with `scripts/build-carry.sh`, then on the GPU machine run
//! `.carry/bin/seed_counters OUT`.
//!
//! * Step 6, "what limits each region" (benchmark `step6`, 3 runs): an fp16 matmul 4096 (cuBLAS
//!   `cublasGemmEx`, fp32 accumulate, like torch's half `a @ a`), `y = 2 * x` over 64 Mi floats
//!   and a row softmax over 8192 x 1024 floats, each in its own region; metrics
//!   `gpu__time_duration.sum`, SM and DRAM throughput (% of peak) and DRAM bytes read and written.
//!   A region is limited by compute when its SM % exceeds its DRAM %, else by memory.
//! * Step 7, "fusion" (benchmark `step7`, 5 runs): `a + b * c` over 32 Mi floats as two kernels
//!   (`t = b * c`, then `y = a + t`; summed per region) and as one fused `addcmul` kernel; metrics
//!   duration and DRAM bytes read and written.
//!
//! The inputs are refilled outside every region at the start of each run (seeded by the run
//! index, so the closure repeats exactly when the engine re-runs it). Every mode runs both steps
//! with a cold L2 (`CacheControl::All`) and no thermal guard:
//! * `kernel`: in-process CUPTI Range Profiler, kernel replay (`ReplayMode::Kernel`);
//! * `application`: in-process, application replay (`ReplayMode::Application`: one range per
//!   kernel, the closure re-run once per pass with the L2 flushed as in the timing run), with the
//!   durations from the counters (`DurationSource::Counters`, as ncu measures them; the other
//!   modes time with CUPTI's kernel records);
//! * `range`: in-process, user-range replay (`ReplayMode::User`, the closure re-run once per pass);
//! * `ncu`: the ncu backend (`Profiler::bench_ncu`): this binary is relaunched under
//!   `ncu --cache-control all`, where only the selected benchmark runs, once with ncu's kernel
//!   replay (label `ncu`) and once with its application replay (`ncu/application`: the binary
//!   re-run once per pass). Without ncu the mode is skipped with a note.
//! * before all of them, the CUDA-events backend times every region without CUPTI (label
//!   `events`, INFO rows only).
//!
//! Each kprof label is compared with ncu's like-for-like replay: kernel replay with `ncu`,
//! application and range replay (which re-run the closure) with `ncu/application`.
//!
//! The CUPTI modes run once per `--flush` method (default `read`) with `KPROF_L2_FLUSH` set to it;
//! their labels are `<mode>/<method>` (`kernel/read`, `range/write`, ...); the ncu mode is `ncu`.
//! Each bench call writes its raw CSV under OUT_DIR (`OUT_DIR/<mode>-<method>-step6-raw.csv`,
//! ncu's report as `OUT_DIR/ncu-...ncu-rep`), and `OUT_DIR/seed-counters.json` holds everything:
//!
//! ```text
//! {"labels":  {label: {region: {metric: {"mean": x, "values": [per run], "unit": "...", "nan": k}}}},
//!  "checks":  [[status, name, detail], ...],
//!  "device":  "NVIDIA H200 ...",
//!  "ncu":     "ncu 2025.3.1.0 in relaunch mode (...); reports: ..." or null,
//!  "kernels": {label: {region: [kernel names of the first run]}}}
//! ```
//!
//! Judged checks (PASS/FAIL; exit 1 when one fails): per label, the step 6 classification
//! (matmul compute-bound, `x * 2` memory-bound, the softmax as ncu classifies it) and step 7's
//! unfused region moving more DRAM bytes than the fused one; and `application/read` against
//! `ncu/application` on one-kernel regions: durations within 2 %, DRAM bytes read and written
//! within 0.5 %, percentages within 1 point.
//! Application replay is the in-process twin of `ncu --cache-control all`: one range per kernel,
//! the closure re-run per pass with the L2 flushed before every pass and region. Everything else
//! against ncu is INFO with the numbers:
//! * kernel replay, because CUPTI 13.0's kernel replay cannot flush the L2 between its own passes:
//!   passes after the first see what the previous pass left in the L2;
//! * range replay, whose rates are over the user range's whole elapsed time;
//! * other flush methods (`write` leaves the L2 full of dirty lines on purpose);
//! * regions of several kernels (the unfused `a + b * c`): ncu flushes the L2 before each kernel,
//!   kprof only before the region, so the second kernel may find the first one's output in the L2.
//!
//! Exit status: 0 when every judged check passes, 1 when one fails, 2 on an error (printed; also
//! on a machine without a GPU).

mod common;

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{blocks, compile_with_nvrtc, cublas, BoxError, Gpu};
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType_t};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use kprof::conditions::ThermalOptions;
use kprof::core::model::RawResults;
use kprof::ncu::{NcuError, NcuOptions};
use kprof::runner::{BenchOptions, DurationSource, Profiler, ReplayMode, Run};
use kprof::EngineError;
use serde_json::{json, Map, Value};

const USAGE: &str = "usage: seed_counters OUT_DIR [--modes kernel,application,range,ncu] [--flush read,write,...]";

const DURATION: &str = "gpu__time_duration.sum";
const SM_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const DRAM_PCT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const DRAM_READ: &str = "dram__bytes_read.sum";
const DRAM_WRITE: &str = "dram__bytes_write.sum";
/// Step 6: the seed's BOUND_METRICS plus the DRAM bytes.
const STEP6_METRICS: [&str; 5] = [DURATION, SM_PCT, DRAM_PCT, DRAM_READ, DRAM_WRITE];
/// Step 7: the seed's BYTES.
const STEP7_METRICS: [&str; 3] = [DURATION, DRAM_READ, DRAM_WRITE];

const MATMUL: &str = "fp16 matmul 4096";
const SCALE: &str = "x * 2 (256 MB)";
const SOFTMAX: &str = "softmax 8192x1024";
const UNFUSED: &str = "a + b * c (unfused)";
const FUSED: &str = "addcmul (fused)";
/// Step 6's regions whose limit the seed states (the softmax here is not torch's).
const STEP6_EXPECTED: [(&str, Bound); 2] = [(MATMUL, Bound::Compute), (SCALE, Bound::Memory)];
/// Every region, in the order they are printed.
const REGIONS: [&str; 5] = [MATMUL, SCALE, SOFTMAX, UNFUSED, FUSED];

const MATMUL_N: usize = 4096;
const SCALE_LEN: usize = 64 << 20;
const SOFTMAX_ROWS: usize = 8192;
const SOFTMAX_COLS: usize = 1024;
const FUSION_LEN: usize = 32 << 20;
const BLOCK_THREADS: u32 = 256;

/// The label every other label is compared with.
const NCU_LABEL: &str = "ncu";
/// The label of ncu's application replay (the binary re-run once per pass).
const NCU_APP_LABEL: &str = "ncu/application";
/// The label of the CUDA-events timing (no CUPTI) and its metric.
const EVENTS_LABEL: &str = "events";
const EVENTS_METRIC: &str = "cuda_event_elapsed.sum";
/// The only label whose comparison with ncu is judged.
const JUDGED_LABEL: &str = "application/read";
const JSON_FILE: &str = "seed-counters.json";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match run(&args) {
        Ok(Outcome::Passed) => 0,
        Ok(Outcome::Failed) => 1,
        Err(e) => {
            eprintln!("seed_counters: error: {e}");
            2
        }
    };
    std::process::exit(code);
}

enum Outcome {
    Passed,
    Failed,
}

fn run(args: &[String]) -> Result<Outcome, BoxError> {
    let Some(args) = Args::parse(args)? else {
        println!("{USAGE}");
        return Ok(Outcome::Passed);
    };
    std::fs::create_dir_all(&args.out_dir).map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    // The timing without CUPTI first (CUDA events around each region, same L2 flush): one
    // profiler per process, and this one must not see CUPTI's activity tracing.
    let mut work = Workload::new()?;
    let events = if kprof::ncu::is_ncu_child() {
        None
    } else {
        Some(bench_events(&mut work, &args.out_dir)?)
    };
    let mut prof = Profiler::new().map_err(|e| format!("cannot start kprof's profiler: {e}"))?;
    let device = prof.device().gpu.clone();
    println!("device: {device}");

    let mut labels: Vec<(String, LabelResults)> = Vec::new();
    // In an ncu child only the ncu mode's bench calls matter (the others return empty results).
    if !kprof::ncu::is_ncu_child() {
        let cupti_modes: Vec<Mode> = args.modes.iter().copied().filter(|m| *m != Mode::Ncu).collect();
        for method in &args.flush_methods {
            with_l2_flush(method, || -> Result<(), BoxError> {
                for &mode in &cupti_modes {
                    labels.push(bench_cupti(&mut prof, &mut work, mode, method, &args.out_dir)?);
                }
                Ok(())
            })?;
        }
    }
    let mut ncu_summary = None;
    let mut ncu_failure = None;
    if args.modes.contains(&Mode::Ncu) {
        // ncu's kernel replay and its application replay (the like-for-like reference of kprof's
        // application and range replay). An ncu failure keeps what CUPTI measured: it becomes a
        // failed check, the JSON is written.
        for (label, replay) in [
            (NCU_LABEL, kprof::ncu::ReplayMode::Kernel),
            (NCU_APP_LABEL, kprof::ncu::ReplayMode::Application),
        ] {
            match bench_under_ncu(&mut prof, &mut work, &args.out_dir, label, replay) {
                Ok(Some((results, summary))) => {
                    labels.push((label.to_string(), results));
                    ncu_summary = Some(summary);
                }
                Ok(None) => break,
                Err(e) => {
                    println!("error: {e}");
                    ncu_failure = Some(Check::new(Status::Fail, label, e.to_string()));
                }
            }
        }
    }

    let mut checks = report(&labels);
    checks.extend(ncu_failure);
    if let Some(events) = events {
        let rows = events_rows(&events, &labels);
        print_checks(&rows);
        checks.extend(rows);
        labels.push((EVENTS_LABEL.to_string(), events));
    }
    let json = results_json(&labels, &checks, &device, ncu_summary.as_deref());
    let json_path = args.out_dir.join(JSON_FILE);
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)?)
        .map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    println!("\nresults: {}", json_path.display());
    Ok(if checks.iter().any(|c| c.status == Status::Fail) {
        Outcome::Failed
    } else {
        Outcome::Passed
    })
}

// ------------------------------------------------------------------------------------------------
// Command line
// ------------------------------------------------------------------------------------------------

/// How a label's counters are collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// In-process, CUPTI kernel replay.
    Kernel,
    /// In-process, CUPTI application replay (per kernel, the closure re-run per pass).
    Application,
    /// In-process, CUPTI user-range replay.
    Range,
    /// Under Nsight Compute.
    Ncu,
}

impl Mode {
    fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "kernel" => Ok(Mode::Kernel),
            "application" => Ok(Mode::Application),
            "range" => Ok(Mode::Range),
            "ncu" => Ok(Mode::Ncu),
            other => Err(format!(
                "unknown mode {other:?} (kernel, application, range or ncu)\n{USAGE}"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Kernel => "kernel",
            Mode::Application => "application",
            Mode::Range => "range",
            Mode::Ncu => "ncu",
        }
    }
}

struct Args {
    out_dir: PathBuf,
    modes: Vec<Mode>,
    /// `KPROF_L2_FLUSH` values for the CUPTI modes, passed through unchecked (the engine checks).
    flush_methods: Vec<String>,
}

impl Args {
    /// The parsed arguments, or `None` for `--help`.
    fn parse(args: &[String]) -> Result<Option<Args>, String> {
        let mut out_dir = None;
        let mut modes = vec![Mode::Kernel, Mode::Application, Mode::Range, Mode::Ncu];
        let mut flush_methods = vec!["read".to_string()];
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
            };
            match flag {
                "-h" | "--help" => return Ok(None),
                "--modes" => {
                    modes = list_value(flag, &value()?)?
                        .iter()
                        .map(|m| Mode::parse(m))
                        .collect::<Result<_, _>>()?
                }
                "--flush" => flush_methods = list_value(flag, &value()?)?,
                f if f.starts_with('-') => return Err(format!("unknown option {f}\n{USAGE}")),
                _ if out_dir.is_none() => out_dir = Some(PathBuf::from(arg)),
                _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
            }
        }
        let out_dir = out_dir.ok_or_else(|| format!("OUT_DIR is missing\n{USAGE}"))?;
        Ok(Some(Args {
            out_dir,
            modes,
            flush_methods,
        }))
    }
}

/// A comma-separated option value: its items, without repeats, in order; none is an error.
fn list_value(flag: &str, value: &str) -> Result<Vec<String>, String> {
    let mut items: Vec<String> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        if !items.iter().any(|i| i == item) {
            items.push(item.to_string());
        }
    }
    if items.is_empty() {
        return Err(format!("{flag} needs at least one value\n{USAGE}"));
    }
    Ok(items)
}

// ------------------------------------------------------------------------------------------------
// Kernels
// ------------------------------------------------------------------------------------------------

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
struct SeedKernels {
    fill_f32: CudaFunction,
    fill_f16: CudaFunction,
    scale: CudaFunction,
    mul: CudaFunction,
    add: CudaFunction,
    addcmul: CudaFunction,
    softmax: CudaFunction,
}

fn len_u32(len: usize) -> Result<u32, BoxError> {
    u32::try_from(len).map_err(|_| format!("{len} elements do not fit the kernels' 32-bit index").into())
}

impl SeedKernels {
    fn load(gpu: &Gpu) -> Result<SeedKernels, BoxError> {
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
    fn fill_f32(&self, s: &CudaStream, out: &mut CudaSlice<f32>, seed: u32) -> Result<(), BoxError> {
        let n = len_u32(out.len())?;
        let mut b = s.launch_builder(&self.fill_f32);
        b.arg(out).arg(&n).arg(&seed);
        // SAFETY: the arguments match fill_normal_f32's signature; the grid covers n elements.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// Fills `out` (fp16 bits) with roughly standard-normal values derived from `seed`.
    fn fill_f16(&self, s: &CudaStream, out: &mut CudaSlice<u16>, seed: u32) -> Result<(), BoxError> {
        let n = len_u32(out.len())?;
        let mut b = s.launch_builder(&self.fill_f16);
        b.arg(out).arg(&n).arg(&seed);
        // SAFETY: the arguments match fill_normal_f16's signature.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// `y = a * x`.
    fn scale(&self, s: &CudaStream, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, a: f32) -> Result<(), BoxError> {
        let n = len_u32(x.len().min(y.len()))?;
        let mut b = s.launch_builder(&self.scale);
        b.arg(y).arg(x).arg(&a).arg(&n);
        // SAFETY: the arguments match scale_f32's signature; both buffers hold n elements.
        unsafe { b.launch(blocks(n)) }?;
        Ok(())
    }

    /// `out[i] = f(x[i], y[i])` for the kernels `f(out, x, y, n)` (`mul_f32`, `add_f32`).
    fn binary(
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
    fn addcmul(&self, s: &CudaStream, y: &mut CudaSlice<f32>, [a, b, c]: [&CudaSlice<f32>; 3]) -> Result<(), BoxError> {
        let n = len_u32(y.len().min(a.len()).min(b.len()).min(c.len()))?;
        let mut l = s.launch_builder(&self.addcmul);
        l.arg(y).arg(a).arg(b).arg(c).arg(&n);
        // SAFETY: the arguments match addcmul_f32's signature; all buffers hold n elements.
        unsafe { l.launch(blocks(n)) }?;
        Ok(())
    }

    /// Row softmax of a row-major `rows x cols` matrix, one block per row.
    fn softmax(
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
fn gemm_f16_square(
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

// ------------------------------------------------------------------------------------------------
// The two steps
// ------------------------------------------------------------------------------------------------

/// The seed's step 6 (`what_limits`) or step 7 (`fusion`).
#[derive(Clone, Copy, Debug)]
enum Step {
    Bound,
    Fusion,
}

impl Step {
    const ALL: [Step; 2] = [Step::Bound, Step::Fusion];

    /// The benchmark name.
    fn name(self) -> &'static str {
        match self {
            Step::Bound => "step6",
            Step::Fusion => "step7",
        }
    }

    fn metrics(self) -> Vec<String> {
        let m: &[&str] = match self {
            Step::Bound => &STEP6_METRICS,
            Step::Fusion => &STEP7_METRICS,
        };
        m.iter().map(|s| s.to_string()).collect()
    }

    fn runs(self) -> u32 {
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
struct Workload {
    gpu: Gpu,
    kernels: SeedKernels,
    blas: CudaBlas,
    bound: BoundBuffers,
    fusion: FusionBuffers,
}

impl Workload {
    fn new() -> Result<Workload, BoxError> {
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
    fn run(&mut self, step: Step, run: &mut Run) -> Result<(), BoxError> {
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

// ------------------------------------------------------------------------------------------------
// Benchmarking
// ------------------------------------------------------------------------------------------------

/// Runs `f` with `KPROF_L2_FLUSH=method`, then restores the variable.
fn with_l2_flush<T>(method: &str, f: impl FnOnce() -> T) -> T {
    let previous = std::env::var_os(kprof::runner::L2_FLUSH_ENV);
    std::env::set_var(kprof::runner::L2_FLUSH_ENV, method);
    let out = f();
    match previous {
        Some(v) => std::env::set_var(kprof::runner::L2_FLUSH_ENV, v),
        None => std::env::remove_var(kprof::runner::L2_FLUSH_ENV),
    }
    out
}

/// `OUT_DIR/<label with - for />-`: where a label's files go.
fn output_prefix(out_dir: &Path, label: &str) -> PathBuf {
    out_dir.join(format!("{}-", label.replace('/', "-")))
}

fn bench_options(step: Step, prefix: PathBuf, replay_mode: ReplayMode) -> BenchOptions {
    let mut o = BenchOptions::default();
    o.runs = step.runs();
    o.metrics = step.metrics();
    o.replay_mode = replay_mode;
    // Application replay, the judged twin of ncu's, takes ncu's duration: the counter.
    o.duration = if replay_mode == ReplayMode::Application {
        DurationSource::Counters
    } else {
        DurationSource::Records
    };
    o.thermal = ThermalOptions::off();
    o.output_prefix = Some(prefix);
    o
}

/// Both steps in-process with CUPTI, in `mode`'s replay, under the current `KPROF_L2_FLUSH`.
fn bench_cupti(
    prof: &mut Profiler,
    work: &mut Workload,
    mode: Mode,
    method: &str,
    out_dir: &Path,
) -> Result<(String, LabelResults), BoxError> {
    let label = format!("{}/{method}", mode.name());
    let replay = match mode {
        Mode::Application => ReplayMode::Application,
        Mode::Range => ReplayMode::User,
        _ => ReplayMode::Kernel,
    };
    let mut results = LabelResults::default();
    for step in Step::ALL {
        let opts = bench_options(step, output_prefix(out_dir, &label), replay);
        let started = Instant::now();
        let warnings_before = prof.warnings().len();
        let raw = prof
            .bench(step.name(), &[], &opts, |_, run| work.run(step, run))
            .map_err(|e| format!("{label} {}: {e}", step.name()))?;
        println!("{label} {}: {:.1} s", step.name(), started.elapsed().as_secs_f64());
        print_warnings(&prof.warnings()[warnings_before..]);
        results.add(&raw);
    }
    Ok((label, results))
}

/// Both steps' timing with the CUDA-events backend (no CUPTI; the same cold L2 flush), before
/// the CUPTI profiler exists.
fn bench_events(work: &mut Workload, out_dir: &Path) -> Result<LabelResults, BoxError> {
    let mut prof = Profiler::with_cuda_events().map_err(|e| format!("cannot start the CUDA-events profiler: {e}"))?;
    let mut results = LabelResults::default();
    for step in Step::ALL {
        let mut opts = bench_options(step, output_prefix(out_dir, EVENTS_LABEL), ReplayMode::Kernel);
        opts.metrics = Vec::new();
        let raw = prof
            .bench(step.name(), &[], &opts, |_, run| work.run(step, run))
            .map_err(|e| format!("{EVENTS_LABEL} {}: {e}", step.name()))?;
        results.add(&raw);
    }
    Ok(results)
}

/// INFO rows: each region's CUDA-event time (no CUPTI) next to the kernel time of every other
/// label, so a difference between kprof and ncu can be placed (the events include launch gaps
/// between a region's kernels and a floor of a few microseconds).
fn events_rows(events: &LabelResults, labels: &[(String, LabelResults)]) -> Vec<Check> {
    let mut rows = Vec::new();
    for region in REGIONS {
        let ev = events.mean(region, EVENTS_METRIC);
        let parts: Vec<String> = labels
            .iter()
            .filter(|(l, _)| is_ncu(l) || l.starts_with("kernel/"))
            .map(|(l, d)| {
                let t = d.mean(region, DURATION);
                format!("{l} {:.2} us ({:+.2} %)", t / 1e3, (t / ev - 1.0) * 100.0)
            })
            .collect();
        rows.push(Check::new(
            Status::Info,
            format!("{EVENTS_LABEL}: {region}"),
            format!("CUDA events {:.2} us; {}", ev / 1e3, parts.join(", ")),
        ));
    }
    rows
}

/// Both steps under ncu; `None` (with a note) when ncu is not found. Returns the results and a
/// summary of the ncu runs (mode, reports).
fn bench_under_ncu(
    prof: &mut Profiler,
    work: &mut Workload,
    out_dir: &Path,
    label: &str,
    replay: kprof::ncu::ReplayMode,
) -> Result<Option<(LabelResults, String)>, BoxError> {
    let mut results = LabelResults::default();
    let mut mode_summary = String::new();
    let mut reports = Vec::new();
    for step in Step::ALL {
        let opts = bench_options(
            step,
            output_prefix(out_dir, &label.replace('/', "-")),
            ReplayMode::Kernel,
        );
        let mut ncu = NcuOptions::default();
        ncu.metrics = step.metrics();
        ncu.replay_mode = replay;
        ncu.cache_control = kprof::ncu::CacheControl::All;
        ncu.clock_control = kprof::ncu::ClockControl::None;
        let started = Instant::now();
        let raw = match prof.bench_ncu(step.name(), &[], &opts, &ncu, |_, run| work.run(step, run)) {
            Ok(raw) => raw,
            Err(EngineError::Ncu(e @ NcuError::NotFound { .. })) => {
                println!("note: skipping the ncu mode: {e}");
                return Ok(None);
            }
            Err(e) => return Err(format!("{label} {}: {e}", step.name()).into()),
        };
        println!("{label} {}: {:.1} s", step.name(), started.elapsed().as_secs_f64());
        if let Some(info) = kprof::ncu::last_run() {
            println!("  {} (report {})", info.summary(), info.report.display());
            mode_summary = info.summary();
            reports.push(format!("{} {}", step.name(), info.report.display()));
        }
        results.add(&raw);
    }
    Ok(Some((
        results,
        format!("{mode_summary}; reports: {}", reports.join(", ")),
    )))
}

fn print_warnings(warnings: &[String]) {
    for w in warnings {
        println!("  kprof: {w}");
    }
}

// ------------------------------------------------------------------------------------------------
// Results
// ------------------------------------------------------------------------------------------------

/// One metric of one region over the recorded runs (NaN: a failed run).
#[derive(Clone, Debug, Default)]
struct MetricRuns {
    unit: String,
    /// By run index.
    values: Vec<f64>,
}

impl MetricRuns {
    /// Mean of the finite values; NaN when there is none.
    fn mean(&self) -> f64 {
        let finite: Vec<f64> = self.values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.is_empty() {
            f64::NAN
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        }
    }

    fn nan_count(&self) -> usize {
        self.values.iter().filter(|v| !v.is_finite()).count()
    }
}

/// What one label (mode and flush method) measured.
#[derive(Debug, Default)]
struct LabelResults {
    /// Region → metric → values.
    regions: BTreeMap<String, BTreeMap<String, MetricRuns>>,
    /// Region → kernel names of its first recorded run.
    kernels: BTreeMap<String, Vec<String>>,
}

impl LabelResults {
    /// Adds every series of `raw` (one benchmark's results).
    fn add(&mut self, raw: &RawResults) {
        for (index, series) in raw.series.iter().enumerate() {
            let mut samples: Vec<_> = raw.samples.iter().filter(|s| s.series as usize == index).collect();
            samples.sort_by_key(|s| s.run);
            let region = &series.key.annotation;
            if series.key.metric == DURATION {
                if let Some(first) = samples.first() {
                    let names = &raw.kernel_names[first.kernel as usize];
                    let names = names.split('|').filter(|n| !n.is_empty()).map(String::from).collect();
                    self.kernels.insert(region.clone(), names);
                }
            }
            self.regions.entry(region.clone()).or_default().insert(
                series.key.metric.clone(),
                MetricRuns {
                    unit: series.unit.clone(),
                    values: samples.iter().map(|s| s.value).collect(),
                },
            );
        }
    }

    fn metric(&self, region: &str, metric: &str) -> Option<&MetricRuns> {
        self.regions.get(region)?.get(metric)
    }

    /// Mean over runs; NaN when the metric is missing.
    fn mean(&self, region: &str, metric: &str) -> f64 {
        self.metric(region, metric).map_or(f64::NAN, MetricRuns::mean)
    }

    /// Kernels of the region's first run (0 when unknown).
    fn kernel_count(&self, region: &str) -> usize {
        self.kernels.get(region).map_or(0, Vec::len)
    }

    fn total_bytes(&self, region: &str) -> f64 {
        self.mean(region, DRAM_READ) + self.mean(region, DRAM_WRITE)
    }
}

/// What limits a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Compute,
    Memory,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        })
    }
}

/// Compute when SM % exceeds DRAM %, as in the seed; `None` when either is NaN.
fn classify(sm_pct: f64, dram_pct: f64) -> Option<Bound> {
    if sm_pct.is_nan() || dram_pct.is_nan() {
        None
    } else if sm_pct > dram_pct {
        Some(Bound::Compute)
    } else {
        Some(Bound::Memory)
    }
}

// ------------------------------------------------------------------------------------------------
// Comparison with ncu
// ------------------------------------------------------------------------------------------------

fn is_percentage(metric: &str, unit: &str) -> bool {
    unit == "%" || metric.contains(".pct_")
}

/// A kprof value against ncu's: % difference for durations and bytes, point difference for
/// percentages.
#[derive(Clone, Copy, Debug)]
enum Diff {
    Percent(f64),
    Points(f64),
}

impl Diff {
    fn new(metric: &str, unit: &str, kprof: f64, ncu: f64) -> Diff {
        if is_percentage(metric, unit) {
            Diff::Points(kprof - ncu)
        } else {
            Diff::Percent((kprof / ncu - 1.0) * 100.0)
        }
    }

    fn magnitude(self) -> f64 {
        match self {
            Diff::Percent(d) | Diff::Points(d) => d.abs(),
        }
    }

    /// `2 %` or `1 pt`, in this diff's kind.
    fn limit_text(self, limit: f64) -> String {
        match self {
            Diff::Percent(_) => format!("{limit} %"),
            Diff::Points(_) => format!("{limit} pt"),
        }
    }
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diff::Percent(d) => write!(f, "{d:+.2} %"),
            Diff::Points(d) => write!(f, "{d:+.2} pt"),
        }
    }
}

/// The limit a judged value must meet against ncu, for the metrics that are judged.
fn ncu_limit(metric: &str, unit: &str) -> Option<f64> {
    if is_percentage(metric, unit) {
        Some(1.0)
    } else if metric == DURATION {
        Some(2.0)
    } else if metric == DRAM_READ || metric == DRAM_WRITE {
        Some(0.5)
    } else {
        None
    }
}

/// One (region, metric) of a label next to ncu's.
struct Comparison {
    region: &'static str,
    metric: String,
    unit: String,
    kprof: f64,
    ncu: f64,
    diff: Diff,
}

fn compare(data: &LabelResults, ncu: &LabelResults) -> Vec<Comparison> {
    let mut out = Vec::new();
    for region in REGIONS {
        let Some(metrics) = data.regions.get(region) else {
            continue;
        };
        for metric in metric_order(metrics.keys()) {
            let runs = &metrics[&metric];
            let (kprof, ncu_mean) = (runs.mean(), ncu.mean(region, &metric));
            out.push(Comparison {
                region,
                diff: Diff::new(&metric, &runs.unit, kprof, ncu_mean),
                unit: runs.unit.clone(),
                metric,
                kprof,
                ncu: ncu_mean,
            });
        }
    }
    out
}

/// The metrics in the order of [`STEP6_METRICS`], others after them by name.
fn metric_order<'a>(metrics: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut v: Vec<String> = metrics.cloned().collect();
    v.sort_by_key(|m| {
        (
            STEP6_METRICS.iter().position(|k| k == m).unwrap_or(usize::MAX),
            m.clone(),
        )
    });
    v
}

// ------------------------------------------------------------------------------------------------
// Checks
// ------------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Pass,
    Fail,
    Info,
}

impl Status {
    fn judged(ok: bool) -> Status {
        if ok {
            Status::Pass
        } else {
            Status::Fail
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Info => "INFO",
        }
    }
}

struct Check {
    status: Status,
    name: String,
    detail: String,
}

impl Check {
    fn new(status: Status, name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            status,
            name: name.into(),
            detail: detail.into(),
        }
    }
}

/// Step 6: each region limited by what the seed expects.
fn check_step6(label: &str, data: &LabelResults, ncu: Option<&LabelResults>) -> Vec<Check> {
    let mut rows: Vec<Check> = STEP6_EXPECTED
        .iter()
        .map(|&(region, expected)| {
            let (sm, dram) = (data.mean(region, SM_PCT), data.mean(region, DRAM_PCT));
            let got = classify(sm, dram);
            let got_text = got.map_or("unknown".to_string(), |b| b.to_string());
            Check::new(
                Status::judged(got == Some(expected)),
                format!("{label} step6 {region}"),
                format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); expected {expected}"),
            )
        })
        .collect();
    // This softmax is not torch's: what limits it is whatever ncu says limits it.
    let (sm, dram) = (data.mean(SOFTMAX, SM_PCT), data.mean(SOFTMAX, DRAM_PCT));
    let got = classify(sm, dram);
    let got_text = got.map_or("unknown".to_string(), |b| b.to_string());
    let expected = ncu.and_then(|n| classify(n.mean(SOFTMAX, SM_PCT), n.mean(SOFTMAX, DRAM_PCT)));
    rows.push(match expected {
        Some(e) => Check::new(
            Status::judged(got == Some(e)),
            format!("{label} step6 {SOFTMAX}"),
            format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); ncu says {e}"),
        ),
        None => Check::new(
            Status::Info,
            format!("{label} step6 {SOFTMAX}"),
            format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); no ncu classification to compare"),
        ),
    });
    rows
}

/// Step 7: the unfused region moves more DRAM bytes than the fused one.
fn check_step7(label: &str, data: &LabelResults) -> Check {
    let (unfused, fused) = (data.total_bytes(UNFUSED), data.total_bytes(FUSED));
    Check::new(
        Status::judged(unfused > fused),
        format!("{label} step7 fusion"),
        format!(
            "unfused {:.1} MB vs fused {:.1} MB read + written ({:.2}x)",
            unfused / 1e6,
            fused / 1e6,
            unfused / fused
        ),
    )
}

/// One row per (region, metric) of `label` against ncu; judged only for [`JUDGED_LABEL`] on
/// one-kernel regions.
fn check_vs_ncu(label: &str, data: &LabelResults, ref_label: &str, ncu: &LabelResults) -> Vec<Check> {
    compare(data, ncu)
        .into_iter()
        .map(|c| {
            let kernels = data.kernel_count(c.region).max(ncu.kernel_count(c.region));
            let limit = ncu_limit(&c.metric, &c.unit).filter(|_| label == JUDGED_LABEL);
            let mut detail = format!(
                "kprof {} vs {ref_label} {}: {}",
                format_value(c.kprof, &c.unit),
                format_value(c.ncu, &c.unit),
                c.diff
            );
            let status = match limit {
                Some(limit) if kernels <= 1 => {
                    detail.push_str(&format!(" (limit {})", c.diff.limit_text(limit)));
                    Status::judged(c.diff.magnitude() <= limit)
                }
                Some(_) => {
                    detail.push_str(&format!(
                        "; not judged: {kernels} kernels, ncu flushes the L2 before each, kprof only before the region"
                    ));
                    Status::Info
                }
                None => Status::Info,
            };
            Check::new(
                status,
                format!("{label} vs {ref_label}: {} {}", c.region, short_metric(&c.metric)),
                detail,
            )
        })
        .collect()
}

/// INFO rows for series with failed (NaN) runs.
fn nan_rows(label: &str, data: &LabelResults) -> Vec<Check> {
    let mut rows = Vec::new();
    for (region, metrics) in &data.regions {
        for (metric, runs) in metrics {
            let nan = runs.nan_count();
            if nan > 0 {
                rows.push(Check::new(
                    Status::Info,
                    format!("{label} NaN: {region} {}", short_metric(metric)),
                    format!("{nan} of {} runs NaN (left out of the mean)", runs.values.len()),
                ));
            }
        }
    }
    rows
}

/// Whether `label` is one of ncu's.
fn is_ncu(label: &str) -> bool {
    label == NCU_LABEL || label == NCU_APP_LABEL
}

/// The ncu results a kprof label is compared with: ncu's kernel replay for kernel replay, ncu's
/// application replay (when it ran) for application and range replay, which re-run the closure.
fn reference_for<'a>(label: &str, labels: &'a [(String, LabelResults)]) -> Option<(&'a str, &'a LabelResults)> {
    let find = |name: &str| labels.iter().find(|(l, _)| l == name).map(|(l, d)| (l.as_str(), d));
    if label.starts_with("kernel/") {
        find(NCU_LABEL)
    } else {
        find(NCU_APP_LABEL).or_else(|| find(NCU_LABEL))
    }
}

fn all_checks(labels: &[(String, LabelResults)]) -> Vec<Check> {
    let ncu = labels.iter().find(|(l, _)| l == NCU_LABEL).map(|(_, d)| d);
    let mut checks = Vec::new();
    for (label, data) in labels {
        checks.extend(check_step6(label, data, ncu));
        checks.push(check_step7(label, data));
        checks.extend(nan_rows(label, data));
    }
    match ncu {
        Some(_) => {
            for (label, data) in labels.iter().filter(|(l, _)| !is_ncu(l)) {
                if let Some((ref_label, reference)) = reference_for(label, labels) {
                    checks.extend(check_vs_ncu(label, data, ref_label, reference));
                }
            }
            if !labels.iter().any(|(l, _)| l == JUDGED_LABEL) {
                checks.push(Check::new(
                    Status::Info,
                    format!("{JUDGED_LABEL} vs ncu"),
                    format!("{JUDGED_LABEL} was not run: nothing judged against ncu"),
                ));
            }
        }
        None => checks.push(Check::new(
            Status::Info,
            "vs ncu",
            "no ncu results (mode not asked for, or ncu not found): nothing compared with ncu",
        )),
    }
    checks
}

// ------------------------------------------------------------------------------------------------
// Printing
// ------------------------------------------------------------------------------------------------

fn short_metric(metric: &str) -> &str {
    match metric {
        DURATION => "duration",
        SM_PCT => "SM %",
        DRAM_PCT => "DRAM %",
        DRAM_READ => "DRAM read",
        DRAM_WRITE => "DRAM write",
        other => other,
    }
}

/// A value in a readable unit: ns as µs, bytes as MB (10^6), percentages as they are; `n/a` for
/// NaN (a missing metric or only failed runs).
fn format_value(value: f64, unit: &str) -> String {
    if value.is_nan() {
        return "n/a".to_string();
    }
    match unit {
        "ns" => format!("{:.2} us", value / 1e3),
        "byte" => format!("{:.2} MB", value / 1e6),
        "%" => format!("{value:.2} %"),
        other => format!("{value:.4} {other}"),
    }
}

fn print_step6(label: &str, data: &LabelResults) {
    println!("\n== {label}: step 6, what limits each region (mean over runs)");
    println!(
        "{:<20} {:>10} {:>8} {:>8}  limited by",
        "region", "ms", "SM %", "DRAM %"
    );
    for (region, _) in STEP6_EXPECTED {
        let (sm, dram) = (data.mean(region, SM_PCT), data.mean(region, DRAM_PCT));
        let bound = classify(sm, dram).map_or("?".to_string(), |b| b.to_string());
        let ms = data.mean(region, DURATION) / 1e6;
        println!("{region:<20} {ms:>10.4} {sm:>8.1} {dram:>8.1}  {bound}");
    }
}

fn print_step7(label: &str, data: &LabelResults) {
    println!("\n== {label}: step 7, fusion (mean over runs, MB = 10^6 bytes)");
    println!(
        "{:<20} {:>10} {:>11} {:>10}",
        "region", "MB read", "MB written", "MB total"
    );
    for region in [UNFUSED, FUSED] {
        let (read, written) = (data.mean(region, DRAM_READ) / 1e6, data.mean(region, DRAM_WRITE) / 1e6);
        println!("{region:<20} {read:>10.1} {written:>11.1} {:>10.1}", read + written);
    }
    println!(
        "unfused / fused total bytes: {:.2}x",
        data.total_bytes(UNFUSED) / data.total_bytes(FUSED)
    );
}

fn print_comparison(label: &str, data: &LabelResults, ref_label: &str, ncu: &LabelResults) {
    println!("\n== {label} vs {ref_label} (durations and bytes: % difference; percentages: point difference)");
    println!(
        "{:<20} {:<11} {:>14} {:>14} {:>10}",
        "region", "metric", "kprof", "ncu", "diff"
    );
    for c in compare(data, ncu) {
        println!(
            "{:<20} {:<11} {:>14} {:>14} {:>10}",
            c.region,
            short_metric(&c.metric),
            format_value(c.kprof, &c.unit),
            format_value(c.ncu, &c.unit),
            c.diff.to_string()
        );
    }
}

fn print_checks(checks: &[Check]) {
    println!("\n== checks");
    for c in checks {
        println!("{:<4}  {:<52}  {}", c.status.as_str(), c.name, c.detail);
    }
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    println!(
        "checks: {} PASS, {} FAIL, {} INFO",
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Info)
    );
}

/// Prints every table and the checks; returns the checks.
fn report(labels: &[(String, LabelResults)]) -> Vec<Check> {
    for (label, data) in labels {
        print_step6(label, data);
        print_step7(label, data);
    }
    for (label, data) in labels.iter().filter(|(l, _)| !is_ncu(l)) {
        if let Some((ref_label, reference)) = reference_for(label, labels) {
            print_comparison(label, data, ref_label, reference);
        }
    }
    let checks = all_checks(labels);
    print_checks(&checks);
    checks
}

// ------------------------------------------------------------------------------------------------
// JSON
// ------------------------------------------------------------------------------------------------

fn results_json(labels: &[(String, LabelResults)], checks: &[Check], device: &str, ncu: Option<&str>) -> Value {
    let mut values = Map::new();
    let mut kernels = Map::new();
    for (label, data) in labels {
        let regions: Map<String, Value> = data
            .regions
            .iter()
            .map(|(region, metrics)| {
                let metrics: Map<String, Value> = metrics
                    .iter()
                    .map(|(metric, runs)| {
                        let entry = json!({
                            "mean": runs.mean(),
                            "values": runs.values,
                            "unit": runs.unit,
                            "nan": runs.nan_count(),
                        });
                        (metric.clone(), entry)
                    })
                    .collect();
                (region.clone(), Value::Object(metrics))
            })
            .collect();
        values.insert(label.clone(), Value::Object(regions));
        kernels.insert(label.clone(), json!(data.kernels));
    }
    let checks: Vec<Value> = checks
        .iter()
        .map(|c| json!([c.status.as_str(), c.name, c.detail]))
        .collect();
    json!({
        "labels": values,
        "checks": checks,
        "device": device,
        "ncu": ncu,
        "kernels": kernels,
    })
}
