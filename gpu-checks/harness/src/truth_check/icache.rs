//! `mmicache` and `icachesize`: whether ncu's cache control, which reads a cold sgemm 1024 longer,
//! also empties the instruction caches (kprof's instruction flush kernel on top of an L2 read
//! flush), and how many steps that flush kernel needs (its JIT and GPU time by size).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use kprof::core::model::Config;
use kprof::runner::{BenchOptions, CacheControl, Profiler};

use crate::bench::Bench;
use crate::common::{self, BoxError};
use crate::{emit, median, samples};

/// CUDA C of `read_flush`, which reads a buffer (every 4th word) so that the L2 holds only its
/// clean lines.
const READ_FLUSH_SRC: &str = "extern \"C\" __global__ void read_flush(const unsigned int* p, unsigned long long n, \
    unsigned int* out) {\n  unsigned int acc = 0;\n  for (unsigned long long i = (blockIdx.x * (unsigned long long)blockDim.x \
    + threadIdx.x) * 4; i < n; i += (unsigned long long)gridDim.x * blockDim.x * 4) acc ^= p[i];\n  \
    if (acc == 0x12345678u) out[0] = acc;\n}\n";

/// This program's own cold-cache pieces for the instruction-flush checks: `read_flush` over a
/// 256 MB buffer, an instruction flush kernel `(u32* sink, u64 unused)` launched as kprof launches
/// its own, and their GPU time by CUDA events.
struct FlushProbe {
    stream: Arc<CudaStream>,
    ctx: Arc<cudarc::driver::CudaContext>,
    read: CudaFunction,
    buf: CudaSlice<u32>,
    sink: CudaSlice<u32>,
    sms: u32,
}

/// 32-bit words of the probe's read-flush buffer (256 MB).
const FLUSH_WORDS: u64 = 64 << 20;

impl FlushProbe {
    fn new(b: &Bench) -> Result<FlushProbe, BoxError> {
        let m = b.gpu.ctx.load_module(common::compile_with_nvrtc(READ_FLUSH_SRC)?)?;
        let sms = b
            .gpu
            .ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
        Ok(FlushProbe {
            stream: b.gpu.stream.clone(),
            ctx: b.gpu.ctx.clone(),
            read: m.load_function("read_flush")?,
            buf: b.gpu.stream.alloc_zeros::<u32>(FLUSH_WORDS as usize)?,
            sink: b.gpu.stream.alloc_zeros::<u32>(1)?,
            sms,
        })
    }

    /// Loads an instruction flush kernel from `ptx` (entry `entry`) and the seconds its JIT took.
    fn load_code(&self, ptx: String, entry: &str) -> Result<(CudaFunction, f64), BoxError> {
        let t0 = std::time::Instant::now();
        let f = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))?
            .load_function(entry)?;
        Ok((f, t0.elapsed().as_secs_f64()))
    }

    /// The L2 read flush.
    fn read_flush(&mut self) -> Result<(), BoxError> {
        let mut l = self.stream.launch_builder(&self.read);
        l.arg(&self.buf).arg(&FLUSH_WORDS).arg(&mut self.sink);
        let cfg = LaunchConfig {
            grid_dim: (8 * self.sms, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { l.launch(cfg) }?;
        Ok(())
    }

    /// `code` on 1024 blocks of 128 threads, as kprof's cold flush launches its own.
    fn code_flush(&mut self, code: &CudaFunction) -> Result<(), BoxError> {
        let unused = 0u64;
        let mut l = self.stream.launch_builder(code);
        l.arg(&mut self.sink).arg(&unused);
        let cfg = LaunchConfig {
            grid_dim: (1024, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { l.launch(cfg) }?;
        Ok(())
    }

    /// Median GPU time of `code` by CUDA events over `launches` launches, the first two left out.
    fn code_flush_ns(&mut self, code: &CudaFunction, launches: usize) -> Result<f64, BoxError> {
        let mut ns = Vec::new();
        for _ in 0..launches {
            let timed = || self.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
            let (e0, e1) = (timed()?, timed()?);
            e0.record(&self.stream)?;
            self.code_flush(code)?;
            e1.record(&self.stream)?;
            ns.push(e0.elapsed_ms(&e1)? as f64 * 1e6);
        }
        Ok(median(ns[2..].to_vec()))
    }
}

/// Options of the instruction-flush checks' benchmarks: 10 runs, `cache`, the duration and the
/// DRAM bytes read.
fn flush_check_options(cache: CacheControl) -> BenchOptions {
    let mut opts = BenchOptions::default();
    opts.runs = 10;
    opts.cache = cache;
    opts.conditions = false;
    opts.metrics = vec![
        kprof::core::model::DEFAULT_METRIC.to_string(),
        "dram__bytes_read.sum".to_string(),
    ];
    opts
}

pub(crate) fn mm_icache(b: &mut Bench) -> Result<(), BoxError> {
    let mut probe = FlushProbe::new(b)?;
    // kprof's own instruction flush kernel: its JIT time and its GPU time.
    let code = kprof::sys::kernels::instruction_flush();
    let (icache, jit_s) = probe.load_code(code.image().to_string(), code.name())?;
    let gpu_ns = probe.code_flush_ns(&icache, 12)?;
    emit(serde_json::json!({"mode": "mmicache", "case": "_instruction_flush", "jit_s": jit_s, "gpu_ns": gpu_ns}));
    let mut prof = Profiler::new()?;
    for (i, n) in [(0usize, 1024), (1, 2048), (2, 4096), (3, 8192)] {
        for variant in ["kprof-all", "read", "icache+read"] {
            let cache = if variant == "kprof-all" {
                CacheControl::All
            } else {
                CacheControl::None
            };
            let opts = flush_check_options(cache);
            let raw = prof.bench(&format!("mm{n}-{variant}"), &[Config::new()], &opts, |_, run| {
                if variant == "icache+read" {
                    probe.code_flush(&icache)?;
                }
                if variant != "kprof-all" {
                    probe.read_flush()?;
                }
                let _r = run.region("r")?;
                b.mm[i].run(&b.blas)?;
                Ok(())
            })?;
            let d = samples(&raw, kprof::core::model::DEFAULT_METRIC);
            emit(
                serde_json::json!({"mode": "mmicache", "case": format!("sgemm{n}"), "variant": variant,
                "ns": median(d.clone()), "values": d, "dram_read": median(samples(&raw, "dram__bytes_read.sum"))}),
            );
        }
    }
    Ok(())
}

/// How many steps the instruction flush needs: for each size, its JIT time (run with
/// `CUDA_CACHE_DISABLE=1` for the uncached time), its GPU time, and a cold sgemm 1024 after it and
/// an L2 read flush (duration and DRAM bytes read, against the read flush alone).
pub(crate) fn icache_size(b: &mut Bench) -> Result<(), BoxError> {
    let mut probe = FlushProbe::new(b)?;
    let mut prof = Profiler::new()?;
    for steps in [0usize, 1024, 2048, 4096, 8192] {
        let mut icache = None;
        let mut row = serde_json::json!({"mode": "icachesize", "steps": steps});
        if steps > 0 {
            // Another entry name: kprof keeps its own flush kernels out of a run's kernels.
            let ptx = kprof::sys::kernels::instruction_flush_ptx(steps)
                .replace("kprof_l2_flush_instructions", "probe_icache");
            let (f, jit_s) = probe.load_code(ptx, "probe_icache")?;
            row["jit_s"] = jit_s.into();
            row["gpu_ns"] = probe.code_flush_ns(&f, 8)?.into();
            icache = Some(f);
        }
        let opts = flush_check_options(CacheControl::None);
        let raw = prof.bench(&format!("icache{steps}"), &[Config::new()], &opts, |_, run| {
            if let Some(f) = &icache {
                probe.code_flush(f)?;
            }
            probe.read_flush()?;
            let _r = run.region("r")?;
            b.mm[0].run(&b.blas)?;
            Ok(())
        })?;
        row["sgemm1024_ns"] = median(samples(&raw, kprof::core::model::DEFAULT_METRIC)).into();
        row["dram_read"] = median(samples(&raw, "dram__bytes_read.sum")).into();
        emit(row);
    }
    Ok(())
}
