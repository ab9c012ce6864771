//! GPU check of durations (kernel and CUDA-graph durations in default settings). One binary, four
//! modes, each printing `TRUTH {json}` lines that `gpu-checks/gpu-check-truth.sh` gathers:
//!
//! - `events`: no profiler in the process; every case timed with CUDA events (graph replays: the
//!   events around the replay; eager kernels: the in-stream reference, a graph of many copies
//!   divided by the copies).
//! - `kprof [records|counters|auto] [kernel|application]`: every case through [`Profiler::bench`]
//!   (10 runs, median), with the duration source and replay mode given (trace modes from
//!   `KPROF_KERNEL_TRACE` / `KPROF_GRAPH_TRACE`).
//! - `ncu-target`: every eager case launched a few times inside NVTX ranges named after it, for
//!   `ncu --nvtx --metrics gpu__time_duration.sum`.
//! - `launch`: host time per `cuLaunchKernel` of a one-block kernel, the launches queued behind a
//!   spin kernel (host cost alone): without a profiler, inside benchmarks with the records and in
//!   default settings, between benchmarks and after the profiler is dropped, three rounds.
//! - `mmicache`: sgemm 1024..8192 after kprof's cold-cache flush, after this program's own L2 read
//!   flush, and after kprof's instruction-cache flush kernel then that read flush (whether ncu's
//!   cache control, which reads the matmul 1024 2 % longer, also empties the instruction caches);
//!   the instruction flush kernel's JIT and GPU time.
//! - `icachesize`: the instruction flush at 1024..8192 steps: JIT and GPU time, and the cold sgemm
//!   1024 after it (how many steps empty the instruction caches).
//! - `firstpass VARIANT`: the host time of a process's first Range Profiler collections by phase,
//!   with and without a priming collection (on this thread or on a helper during a warm-up load).
//! - `launchcb VARIANT`: host time per launch with a bare activity session: kprof's launch API
//!   records, none, or launch callbacks that record what those records carry (one process each).
//! - `bracket VARIANT`: host time per launch without launch API records, and whether kernels
//!   and graph launches fall between the correlation ids of `cuDeviceGetCount` marks around them.
//! - `launchparts`: what each part of kprof's CUPTI session adds to the host time of a launch,
//!   the states interleaved in one process (launch API records, launch order, kernel records).
//! - `growimage [kernel|app]`: whether a session's first counter-data image limits later ones.
//! - `rangeprof`: the Range Profiler alone (gpu__time_duration.sum, kernel and application
//!   replay) over 3 eager kernels, a 60-node graph and 3 eager kernels: how many ranges a graph
//!   launch gives.
//! - `graphstates`: CUDA events around graph replays in each state of kprof's CUPTI session
//!   (which part slows a graph captured from two streams; `graph_states.rs`).
//! - `cuptistates VARIANT`: the same graphs before and after one raw CUPTI call per process
//!   (which call leaves graphs slower; `cupti_states.rs`).
//! - `reattach`: what attaching CUPTI again costs after a profiler detached it (`reattach.rs`).
//!
//! Run on a GPU machine: `cargo run --release -p kprof-gpu-checks --bin truth_check -- events`.

#[path = "../../../../crates/kprof/examples/common/mod.rs"]
mod common;

mod bench;
mod cupti_states;
mod graph_states;
mod reattach;

use std::sync::Arc;

use bench::{grid, Bench, N_SMALL};
use common::{BoxError, Gpu, Matmul};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use kprof::core::model::Config;
use kprof::runner::{BenchOptions, CacheControl, DurationSource, Profiler, ReplayMode};

const GRAPHS: [&str; 3] = ["graph60", "graph2stream", "graph3big"];
const EAGER: [&str; 9] = [
    "eager60",
    "k2us",
    "k20us",
    "sgemm1024",
    "sgemm2048",
    "sgemm4096",
    "sgemm8192",
    "scale64M",
    "mixed",
];

fn emit(v: serde_json::Value) {
    println!("TRUTH {v}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    common::median_sorted(&v)
}

/// Median GPU time (ns) between CUDA events around `f`'s work on `s`: 3 calls to warm up, then 20
/// timed, queued back to back.
fn events_ns(
    ctx: &Arc<CudaContext>,
    s: &Arc<CudaStream>,
    f: &mut dyn FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    for _ in 0..3 {
        f()?;
    }
    s.synchronize()?;
    let mut v = Vec::new();
    for _ in 0..20 {
        let a = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let z = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        a.record(s)?;
        f()?;
        z.record(s)?;
        v.push(a.elapsed_ms(&z)? as f64 * 1e6);
    }
    Ok(median(v))
}

fn events(b: &mut Bench) -> Result<(), BoxError> {
    let ctx = b.gpu.ctx.clone();
    let time = |s: &Arc<CudaStream>, f: &mut dyn FnMut() -> Result<(), BoxError>| events_ns(&ctx, s, f);
    for g in GRAPHS {
        let graph = b.capture(g)?;
        // Graphs replay on the capture stream (non-blocking): the events go there too.
        let ns = time(&b.cap.clone(), &mut || Ok(graph.launch()?))?;
        emit(serde_json::json!({"mode": "events", "case": g, "ns": ns, "what": "events around one replay"}));
    }
    let mixed = b.capture("graph60")?;
    let cap = b.cap.clone();
    let ns = time(&cap, &mut || {
        b.axpb_on(&cap, 0, 10)?;
        mixed.launch()?;
        b.axpb_on(&cap, 0, 10)
    })?;
    emit(
        serde_json::json!({"mode": "events", "case": "mixed", "ns": ns, "what": "events around 10 eager + graph60 + 10 eager"}),
    );
    // In-stream reference of the 1M-float kernel: a graph of 600 copies, per kernel.
    let g600 = b.capture("graph600")?;
    let ns = time(&b.cap.clone(), &mut || Ok(g600.launch()?))?;
    emit(
        serde_json::json!({"mode": "events", "case": "instream_k2us", "ns": ns / 600.0, "what": "graph of 600 / 600"}),
    );
    for c in EAGER {
        if c == "mixed" {
            continue;
        }
        let s = b.gpu.stream.clone();
        let ns = time(&s, &mut || b.eager(c))?;
        emit(serde_json::json!({"mode": "events", "case": c, "ns": ns, "what": "events around eager launches"}));
    }
    Ok(())
}

fn kprof_mode(b: &mut Bench, source: &str, replay: &str) -> Result<(), BoxError> {
    let mut prof = Profiler::new()?;
    let duration = match source {
        "records" => DurationSource::Records,
        "counters" => DurationSource::Counters,
        "auto" => DurationSource::Auto,
        _ => DurationSource::default(),
    };
    let replay_mode = match replay {
        "kernel" => ReplayMode::Kernel,
        _ => ReplayMode::Application,
    };
    let mut graphs = Vec::new();
    for g in GRAPHS {
        graphs.push((g, b.capture(g)?));
    }
    let mixed_graph = b.capture("graph60")?;
    let mut cases: Vec<String> = GRAPHS.iter().map(|s| s.to_string()).collect();
    cases.extend(EAGER.iter().map(|s| s.to_string()));
    for case in cases {
        // Long kernels against ncu's default (cold cache); short kernels and graphs warm, as the
        // issue's references were taken.
        let cold = case.starts_with("sgemm") || case == "scale64M";
        let mut opts = BenchOptions::default();
        opts.runs = 10;
        opts.cache = if cold { CacheControl::All } else { CacheControl::None };
        opts.duration = duration;
        opts.replay_mode = replay_mode;
        opts.conditions = false;
        let t0 = std::time::Instant::now();
        let raw = prof.bench(&case, &[Config::new()], &opts, |_, run| {
            let _r = run.region("r")?;
            if let Some((_, g)) = graphs.iter().find(|(n, _)| *n == case) {
                g.launch()?;
            } else if case == "mixed" {
                // Eager kernels on the graph's stream, so the region is one ordered chain.
                b.axpb_on(&b.cap, 0, 10)?;
                mixed_graph.launch()?;
                b.axpb_on(&b.cap, 0, 10)?;
            } else {
                b.eager(&case)?;
            }
            Ok(())
        });
        let wall = t0.elapsed().as_secs_f64();
        match raw {
            Ok(raw) => {
                let v = samples(&raw, kprof::core::model::DEFAULT_METRIC);
                let kernel = raw.samples.first().map(|s| raw.kernel_names[s.kernel as usize].clone());
                let k = kernel.unwrap_or_default();
                emit(
                    serde_json::json!({"mode": format!("kprof-{source}-{replay}"), "case": case, "ns": median(v.clone()),
                    "values": v, "wall_s": wall, "kernel": common::short(&k, 120),
                    "trace": std::env::var("KPROF_KERNEL_TRACE").unwrap_or_default(),
                    "graph_trace": std::env::var("KPROF_GRAPH_TRACE").unwrap_or_default()}),
                );
            }
            Err(e) => emit(
                serde_json::json!({"mode": format!("kprof-{source}-{replay}"), "case": case, "error": e.to_string()}),
            ),
        }
    }
    let w: Vec<&String> = prof.warnings().iter().collect();
    emit(serde_json::json!({"mode": format!("kprof-{source}-{replay}"), "case": "_warnings", "warnings": w}));
    Ok(())
}

/// Median host time per launch (ns) of 500 one-block `axpb` launches queued behind a ~20 ms spin
/// kernel, over `loops` loops: the driver call's host cost alone, whatever the GPU's pace.
fn ns_per_launch_queued(b: &Bench, loops: usize) -> Result<f64, BoxError> {
    const N: usize = 500;
    let tiny: u32 = 256;
    let s = &b.gpu.stream;
    let mut v = Vec::new();
    for _ in 0..loops {
        s.synchronize()?;
        let cycles: i64 = 40_000_000;
        let mut l = s.launch_builder(&b.spin);
        l.arg(&cycles);
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let t0 = std::time::Instant::now();
        for _ in 0..N {
            let mut l = s.launch_builder(&b.axpb);
            l.arg(&b.small).arg(&tiny);
            unsafe { l.launch(grid(tiny)) }?;
        }
        v.push(t0.elapsed().as_nanos() as f64 / N as f64);
    }
    s.synchronize()?;
    Ok(median(v))
}

fn launch_mode(b: &mut Bench) -> Result<(), BoxError> {
    ns_per_launch_queued(b, 2)?;
    for round in 0..3 {
        let plain = ns_per_launch_queued(b, 12)?;
        let mut row = serde_json::json!({"mode": "launch", "round": round, "plain_ns": plain});
        let r = (|| -> Result<(), BoxError> {
            let mut prof = Profiler::new()?;
            for (label, source) in [("records", DurationSource::Records), ("auto", DurationSource::Auto)] {
                let mut opts = BenchOptions::default();
                opts.runs = 5;
                opts.cache = CacheControl::None;
                opts.duration = source;
                opts.conditions = false;
                let mut inside = Vec::new();
                prof.bench("launch", &[Config::new()], &opts, |_, run| {
                    let counter_pass = run.is_counter_pass();
                    let _r = run.region("r")?;
                    let ns = ns_per_launch_queued(b, 2)?;
                    if !counter_pass {
                        inside.push(ns);
                    }
                    Ok(())
                })?;
                row[format!("{label}_inside_ns")] = median(inside).into();
                row[format!("after_{label}_ns")] = ns_per_launch_queued(b, 12)?.into();
            }
            Ok(())
        })();
        if let Err(e) = r {
            row["error"] = e.to_string().into();
        }
        row["after_drop_ns"] = ns_per_launch_queued(b, 12)?.into();
        emit(row);
    }
    Ok(())
}

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

/// The values of `metric` in `raw`, in sample order.
fn samples(raw: &kprof::core::model::RawResults, metric: &str) -> Vec<f64> {
    raw.samples
        .iter()
        .filter(|x| raw.series[x.series as usize].key.metric == metric)
        .map(|x| x.value)
        .collect()
}

fn mm_icache(b: &mut Bench) -> Result<(), BoxError> {
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
fn icache_size(b: &mut Bench) -> Result<(), BoxError> {
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

fn ncu_target(b: &mut Bench) -> Result<(), BoxError> {
    let reps = |c: &str| if c == "eager60" { 3 } else { 5 };
    for c in EAGER {
        if c == "mixed" {
            continue;
        }
        for _ in 0..reps(c) {
            let _r = kprof::nvtx::push_range(c)?;
            b.eager(c)?;
            b.gpu.sync()?;
        }
    }
    Ok(())
}

fn rangeprof(b: &mut Bench) -> Result<(), BoxError> {
    use kprof::counters::{CuptiLib, RangeProfiler};
    let libs = kprof::loader::Libraries::load()?;
    let lib = CuptiLib::load(&libs.cupti_path)?;
    let ctx = libs.cuda.ensure_context()?;
    kprof::counters::range::profiler_initialize(lib)?;
    let g = b.capture("graph60")?;
    for mode in [ReplayMode::Kernel, ReplayMode::Application] {
        let metrics = vec!["gpu__time_duration.sum".to_string()];
        let mut rp = RangeProfiler::new(lib, ctx as _, 0, &metrics, mode)?;
        let s = b.gpu.stream.clone();
        let mut err = None;
        let rec = rp.collect(256, |_| {
            let r = (|| -> Result<(), BoxError> {
                b.axpb_on(&s, 0, 3)?;
                g.launch()?;
                b.axpb_on(&s, 0, 3)?;
                s.synchronize()?;
                Ok(())
            })();
            if let Err(e) = r {
                err = Some(e.to_string());
            }
        });
        match rec {
            Ok(rec) => {
                let v: Vec<f64> = rec
                    .ranges
                    .iter()
                    .map(|r| r.get("gpu__time_duration.sum").unwrap_or(f64::NAN))
                    .collect();
                emit(
                    serde_json::json!({"mode": "rangeprof", "replay": mode.cupti_name(), "ranges": rec.ranges.len(),
                    "values": v, "closure_error": err}),
                );
            }
            Err(e) => {
                emit(serde_json::json!({"mode": "rangeprof", "replay": mode.cupti_name(), "error": e.to_string()}))
            }
        }
        // The host cost of one counter pass as the run loop does it (sgemm 1024), by phase, 30 times.
        let mut sum = [0.0f64; 4];
        let t0 = std::time::Instant::now();
        for _ in 0..30 {
            let rec = rp.collect(64, |_| {
                let _ = b.mm[0].run(&b.blas);
                let _ = s.synchronize();
            })?;
            let t = rec.timings;
            for (acc, x) in sum.iter_mut().zip([t.setup_s, t.passes_s, t.decode_s, t.evaluate_s]) {
                *acc += x;
            }
        }
        emit(
            serde_json::json!({"mode": "rangeprof-cost", "replay": mode.cupti_name(), "collects": 30,
            "total_s": t0.elapsed().as_secs_f64(), "setup_s": sum[0], "passes_s": sum[1], "decode_s": sum[2],
            "evaluate_s": sum[3]}),
        );
    }
    Ok(())
}

/// An activity session in the default trace options with `attribution`.
fn session_attributing(
    libs: &kprof::loader::Libraries,
    attribution: kprof::choices::Attribution,
) -> Result<kprof::cupti::ActivitySession, kprof::EngineError> {
    let mut trace = kprof::choices::TraceOptions::default();
    trace.attribution = attribution;
    kprof::cupti::ActivitySession::start_traced(libs.cupti, trace)
}

/// What the launch callback of `launchcb callbacks` keeps per launch: correlation id, thread,
/// CUPTI timestamp, the thread's external id (what kprof's launch API and external-correlation
/// records carry today).
static LAUNCH_LOG: std::sync::Mutex<Vec<(u32, u32, u64, u64)>> = std::sync::Mutex::new(Vec::new());
/// The CUPTI whose clock the launch callback reads.
static LAUNCH_CUPTI: std::sync::OnceLock<&'static kprof::cupti::Cupti> = std::sync::OnceLock::new();

thread_local! {
    /// This thread's external id, as kprof pushes it on CUPTI's stack (one level is enough here).
    static EXTERNAL_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A launch callback that records what the launch API records give attribution.
fn record_launch(cb: &kprof::sys::cupti::callback::Callback<'_>) {
    let Some(api) = cb.api() else { return };
    if api.callbackSite != kprof::sys::cupti::API_ENTER {
        return;
    }
    let ts = LAUNCH_CUPTI.get().and_then(|c| c.timestamp_ns().ok()).unwrap_or(0);
    let ext = EXTERNAL_ID.with(|e| e.get());
    let tid = kprof::cupti::current_thread_id();
    LAUNCH_LOG.lock().unwrap().push((api.correlationId, tid, ts, ext));
}

/// A launch callback that does nothing (CUPTI's dispatch alone).
fn ignore_launch(_: &kprof::sys::cupti::callback::Callback<'_>) {}

/// `launchcb VARIANT`: host time per `cuLaunchKernel` (queued, as `launch`) with a bare CUPTI
/// activity session and an external id pushed, one process per variant: `records` (kprof's launch
/// API and external-correlation records, `attribution="records"`), `none` (run with
/// `KPROF_CUPTI_LAUNCH_RECORDS=cbid`: no API records for this context, created before the
/// session), `callbacks` (`none` plus driver and runtime launch callbacks recording what those
/// records carry) and `callbacks-empty` (the same callbacks doing nothing).
fn launch_callbacks(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::sys::cupti::{cbid, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RUNTIME_API};
    ns_per_launch_queued(b, 2)?;
    let plain = ns_per_launch_queued(b, 12)?;
    let libs = kprof::loader::Libraries::load()?;
    // Launch API records as in 2026-12-02, when they were the default (attribution "records").
    let session = session_attributing(libs, kprof::choices::Attribution::Records)?;
    let _ = LAUNCH_CUPTI.set(libs.cupti);
    if variant.starts_with("callbacks") {
        let hook = if variant == "callbacks" {
            record_launch
        } else {
            ignore_launch
        };
        kprof::cupti::collector::set_callback_hook(hook);
        for id in cbid::LAUNCH_CBIDS {
            session.enable_callback(CB_DOMAIN_DRIVER_API, id)?;
        }
        for id in cbid::RUNTIME_LAUNCH_CBIDS {
            session.enable_callback(CB_DOMAIN_RUNTIME_API, id)?;
        }
    }
    session.push_external_id(7)?;
    EXTERNAL_ID.with(|e| e.set(7));
    let inside: Vec<f64> = (0..3).map(|_| ns_per_launch_queued(b, 12)).collect::<Result<_, _>>()?;
    session.pop_external_id()?;
    EXTERNAL_ID.with(|e| e.set(0));
    let logged = LAUNCH_LOG.lock().unwrap().len();
    emit(
        serde_json::json!({"mode": "launchcb", "variant": variant, "plain_ns": plain, "inside_ns": inside,
        "added_ns": median(inside.clone()) - plain, "launch_mode": format!("{:?}", session.launch_records()),
        "callbacks_logged": logged}),
    );
    Ok(())
}

/// `firstpass VARIANT`: where the first Range Profiler collection of a process spends its host
/// time, and whether a priming collection (nothing, or one tiny kernel) made before it, or on
/// another thread while this one runs a warm-up load, takes that cost. One process per variant
/// (`plain`, `empty`, `kernel`, `thread-empty`, `thread-kernel`): a warm-up load (100 sgemm 4096),
/// the session and priming, then 4 collections of an sgemm 1024 timed by phase.
fn first_pass(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::counters::{CuptiLib, RangeProfiler};
    let libs = kprof::loader::Libraries::load()?;
    let lib = CuptiLib::load(&libs.cupti_path)?;
    let ctx = libs.cuda.ensure_context()? as usize;
    let gpu_ctx = b.gpu.ctx.clone();
    let metrics = vec!["gpu__time_duration.sum".to_string()];
    let prime_stream = b.gpu.stream.fork()?;
    let axpb = b.axpb.clone();
    let small = &b.gpu.stream.alloc_zeros::<f32>(256)?;
    let tiny = grid(256);
    let kernel_prime = variant.ends_with("kernel");
    // `cap=N`: no priming, the first collections with an image of N ranges; `prime=N` /
    // `thread-prime=N`: an empty priming collection with an image of N ranges (this thread, or a
    // helper during the warm-up load); the older variants prime with 1024.
    let number = |key: &str| variant.split(key).nth(1).and_then(|n| n.parse::<usize>().ok());
    let prime_capacity = number("prime=").unwrap_or(1024);
    let primes = !(variant == "plain" || variant.starts_with("cap="));
    let open_and_prime = || -> Result<(RangeProfiler, serde_json::Value), BoxError> {
        gpu_ctx.bind_to_thread()?;
        let t0 = std::time::Instant::now();
        kprof::counters::range::profiler_initialize(lib)?;
        // The host-side phases, timed apart (RangeProfiler::new repeats them, cheaply after this).
        let init_s = t0.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let chip = kprof::counters::range::chip_name(lib, 0)?;
        let chip_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let cpu = thread_cpu_s();
        let avail = kprof::counters::range::counter_availability(lib, ctx as _)?;
        let avail_s = t.elapsed().as_secs_f64();
        let avail_cpu_s = thread_cpu_s() - cpu;
        let t = std::time::Instant::now();
        let mut host = kprof::counters::HostObject::new(lib, &chip, Some(&avail))?;
        host.add_metrics(&kprof::counters::host::c_names(&metrics)?)?;
        let _ = host.config_image()?;
        let host_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let cpu = thread_cpu_s();
        let mode = if variant.contains("app") {
            ReplayMode::Application
        } else {
            ReplayMode::Kernel
        };
        let mut rp = RangeProfiler::new(lib, ctx as _, 0, &metrics, mode)?;
        let new_s = t.elapsed().as_secs_f64();
        let new_cpu_s = thread_cpu_s() - cpu;
        let open_s = t0.elapsed().as_secs_f64();
        let mut prime = serde_json::Value::Null;
        if primes {
            let t1 = std::time::Instant::now();
            let cpu1 = thread_cpu_s();
            let r = rp.collect(prime_capacity, |_| {
                if kernel_prime {
                    let mut l = prime_stream.launch_builder(&axpb);
                    l.arg(small).arg(&256u32);
                    let _ = unsafe { l.launch(tiny) };
                    let _ = prime_stream.synchronize();
                }
            });
            prime = match r {
                Ok(rec) => serde_json::json!({"wall_s": t1.elapsed().as_secs_f64(), "ranges": rec.ranges.len(),
                    "cpu_s": thread_cpu_s() - cpu1, "capacity": prime_capacity,
                    "start_s": rec.timings.start_s, "stop_s": rec.timings.stop_s, "passes_s": rec.timings.passes_s}),
                Err(e) => serde_json::json!({"wall_s": t1.elapsed().as_secs_f64(), "error": e.to_string()}),
            };
        }
        let setup = serde_json::json!({"open_s": open_s, "config_s": rp.config_s(), "enable_s": rp.enable_s(),
            "prime": prime, "init_s": init_s, "chip_s": chip_s, "avail_s": avail_s, "host_s": host_s, "new_s": new_s,
            "avail_cpu_s": avail_cpu_s, "new_cpu_s": new_cpu_s});
        Ok((rp, setup))
    };
    // The warm-up load: 100 sgemm 4096 and a wait, timed.
    let warm_load = |mm: &mut Matmul, blas: &CudaBlas, gpu: &Gpu| -> Result<f64, BoxError> {
        let t0 = std::time::Instant::now();
        for _ in 0..100 {
            mm.run(blas)?;
        }
        gpu.sync()?;
        Ok(t0.elapsed().as_secs_f64())
    };
    let t_all = std::time::Instant::now();
    let (mut rp, setup, load_s) = if variant.starts_with("thread") {
        let (blas, mm, gpu) = (&b.blas, &mut b.mm[2], &b.gpu);
        std::thread::scope(|scope| -> Result<_, BoxError> {
            let helper = scope.spawn(|| open_and_prime().map_err(|e| e.to_string()));
            let load_s = warm_load(mm, blas, gpu)?;
            let (rp, setup) = helper.join().map_err(|_| "helper panicked")??;
            Ok((rp, setup, load_s))
        })?
    } else {
        let load_s = warm_load(&mut b.mm[2], &b.blas, &b.gpu)?;
        let (rp, setup) = open_and_prime()?;
        (rp, setup, load_s)
    };
    let ready_s = t_all.elapsed().as_secs_f64();
    let s = b.gpu.stream.clone();
    let mut collects = Vec::new();
    // `cap=N`: the first collections with a counter-data image of N ranges (64 otherwise), then
    // one of 64 and one of 4N: whether the first Start's cost follows the image's size.
    let cap: usize = number("cap=").unwrap_or(64);
    for capacity in [cap, cap, cap, 64, 256, 1024] {
        let t0 = std::time::Instant::now();
        let cpu0 = thread_cpu_s();
        let rec = rp.collect(capacity, |_| {
            let _ = b.mm[0].run(&b.blas);
            let _ = s.synchronize();
        })?;
        let t = rec.timings;
        collects.push(serde_json::json!({"capacity": capacity, "cpu_s": thread_cpu_s() - cpu0,
            "wall_s": t0.elapsed().as_secs_f64(), "setup_s": t.setup_s, "image_s": t.image_s,
            "start_s": t.start_s, "passes_s": t.passes_s, "stop_s": t.stop_s, "decode_s": t.decode_s,
            "values": rec.ranges.iter().map(|r| r.get("gpu__time_duration.sum").unwrap_or(f64::NAN)).collect::<Vec<_>>()}));
    }
    emit(
        serde_json::json!({"mode": "firstpass", "variant": variant, "load_s": load_s, "ready_s": ready_s,
        "setup": setup, "collects": collects}),
    );
    Ok(())
}

/// `growimage [app]`: whether a Range Profiler session whose first collection had a small
/// counter-data image (17 ranges) takes later collections of more kernels into larger images,
/// and whether a new session does. One `growimage` row: per collection its image, the kernels
/// launched, the ranges returned (or the error) and the host time of its `Start`.
fn grow_image(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::counters::{CuptiLib, RangeProfiler};
    let libs = kprof::loader::Libraries::load()?;
    let lib = CuptiLib::load(&libs.cupti_path)?;
    let ctx = libs.cuda.ensure_context()?;
    let metrics = vec!["gpu__time_duration.sum".to_string()];
    let mode = if variant == "app" {
        ReplayMode::Application
    } else {
        ReplayMode::Kernel
    };
    let s = b.gpu.stream.clone();
    let small = s.alloc_zeros::<f32>(256)?;
    let mut rows = Vec::new();
    let mut rp = RangeProfiler::new(lib, ctx as _, 0, &metrics, mode)?;
    for (session, capacity, kernels) in [
        (1, 16, 1),
        (1, 64, 60),
        (1, 256, 200),
        (2, 64, 60),
        (2, 256, 200),
        (2, 16, 10),
    ] {
        if session == 2 && rows.len() == 3 {
            drop(rp);
            rp = RangeProfiler::new(lib, ctx as _, 0, &metrics, mode)?;
        }
        let r = rp.collect(capacity, |_| {
            for _ in 0..kernels {
                let mut l = s.launch_builder(&b.axpb);
                l.arg(&small).arg(&256u32);
                let _ = unsafe { l.launch(grid(256)) };
            }
            let _ = s.synchronize();
        });
        rows.push(match r {
            Ok(rec) => serde_json::json!({"session": session, "capacity": capacity, "kernels": kernels,
                "ranges": rec.ranges.len(), "start_s": rec.timings.start_s}),
            Err(e) => serde_json::json!({"session": session, "capacity": capacity, "kernels": kernels, "error": e.to_string()}),
        });
    }
    emit(serde_json::json!({"mode": "growimage", "variant": variant, "collects": rows}));
    Ok(())
}

/// CPU time of the calling thread so far, seconds (`CLOCK_THREAD_CPUTIME_ID`): whether a slow
/// CUPTI call computes or waits.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec that we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Correlation ids that `cuDeviceGetCount` callbacks saw on a thread that armed them (`bracket`).
static MARKS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

thread_local! {
    /// Whether this thread's next `cuDeviceGetCount` is a bracket mark.
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount`.
const CBID_DEVICE_GET_COUNT: u32 = 4;

/// The callback of the bracket marks: keeps the correlation id of an armed `cuDeviceGetCount`.
fn mark_hook(cb: &kprof::sys::cupti::callback::Callback<'_>) {
    if cb.domain() != kprof::sys::cupti::CB_DOMAIN_DRIVER_API || cb.cbid() != CBID_DEVICE_GET_COUNT {
        return;
    }
    let Some(api) = cb.api() else { return };
    if api.callbackSite == kprof::sys::cupti::API_ENTER && ARMED.with(|a| a.get()) {
        MARKS.lock().unwrap().push(api.correlationId);
    }
}

/// One bracket mark: the correlation id CUPTI gives an armed `cuDeviceGetCount` (0 if none came).
fn mark(libs: &kprof::loader::Libraries) -> u32 {
    ARMED.with(|a| a.set(true));
    let _ = libs.cuda.device_count();
    ARMED.with(|a| a.set(false));
    MARKS.lock().unwrap().last().copied().unwrap_or(0)
}

/// `bracket VARIANT`: can kernels be attributed to regions by correlation-id brackets instead of
/// launch API records? One process per variant: `records` (a session with
/// `attribution="records"`: launch API records) and `off` (the same run with
/// `KPROF_CUPTI_LAUNCH_RECORDS=off`: no API records), both with this program's own
/// `cuDeviceGetCount` callback taking the marks (the 2026-12-02 first device call, before kprof had
/// launch order); `order` (a session with `attribution="order"`, the engine's own marks,
/// [`ActivitySession::correlation_mark`](kprof::cupti::ActivitySession::correlation_mark)). Host
/// time per launch, then marks around 5 eager kernels, a cuBLAS sgemm (runtime launch), a 60-node
/// graph and a kernel from a second thread, and one kernel after: each kernel's and graph's
/// correlation id against the marks.
fn bracket(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::choices::Attribution;
    use kprof::sys::cupti::CB_DOMAIN_DRIVER_API;
    ns_per_launch_queued(b, 2)?;
    let plain = ns_per_launch_queued(b, 12)?;
    let libs = kprof::loader::Libraries::load()?;
    let attribution = if variant == "order" {
        Attribution::Order
    } else {
        Attribution::Records
    };
    let mut session = session_attributing(libs, attribution)?;
    if variant != "order" {
        kprof::cupti::collector::set_callback_hook(mark_hook);
        session.enable_callback(CB_DOMAIN_DRIVER_API, CBID_DEVICE_GET_COUNT)?;
    }
    let mark = |session: &kprof::cupti::ActivitySession, libs: &kprof::loader::Libraries| match variant {
        "order" => session.correlation_mark(|| drop(libs.cuda.device_count())).unwrap_or(0),
        _ => mark(libs),
    };
    let g60 = b.capture("graph60")?;
    session.push_external_id(7)?;
    let inside: Vec<f64> = (0..3).map(|_| ns_per_launch_queued(b, 12)).collect::<Result<_, _>>()?;
    b.gpu.sync()?;
    session.flush()?;
    let t_mark = std::time::Instant::now();
    let m0 = mark(&session, libs);
    let mark_ns = t_mark.elapsed().as_nanos() as u64;
    b.axpb_on(&b.gpu.stream.clone(), 0, 5)?;
    b.mm[0].run(&b.blas)?;
    g60.launch()?;
    let side = b.gpu.stream.fork()?;
    let (ctx, axpb, small) = (b.gpu.ctx.clone(), b.axpb.clone(), &b.small);
    std::thread::scope(|sc| -> Result<(), BoxError> {
        sc.spawn(|| -> Result<(), String> {
            ctx.bind_to_thread().map_err(|e| e.to_string())?;
            let mut l = side.launch_builder(&axpb);
            l.arg(small).arg(&N_SMALL);
            unsafe { l.launch(grid(N_SMALL)) }.map_err(|e| e.to_string())?;
            side.synchronize().map_err(|e| e.to_string())
        })
        .join()
        .map_err(|_| "thread panicked")??;
        Ok(())
    })?;
    let m1 = mark(&session, libs);
    b.axpb_on(&b.gpu.stream.clone(), 0, 1)?;
    let m2 = mark(&session, libs);
    b.gpu.sync()?;
    let batch = session.flush()?;
    session.pop_external_id()?;
    let place = |c: u32| {
        if m0 < c && c < m1 {
            "in"
        } else if m1 < c && c < m2 {
            "after"
        } else {
            "outside"
        }
    };
    let kernels: Vec<serde_json::Value> = batch
        .kernels
        .iter()
        .map(|k| {
            serde_json::json!({"corr": k.correlation_id, "graph": k.graph_id, "name": k.name.chars().take(40).collect::<String>(),
            "place": place(k.correlation_id)})
        })
        .collect();
    let graphs: Vec<serde_json::Value> = batch
        .graphs
        .iter()
        .map(|g| serde_json::json!({"corr": g.correlation_id, "place": place(g.correlation_id)}))
        .collect();
    let count = |p: &str| {
        batch
            .kernels
            .iter()
            .filter(|k| k.graph_id == 0 && place(k.correlation_id) == p)
            .count()
            + batch.graphs.iter().filter(|g| place(g.correlation_id) == p).count()
    };
    emit(
        serde_json::json!({"mode": "bracket", "variant": variant, "plain_ns": plain, "inside_ns": inside,
        "added_ns": median(inside.clone()) - plain, "launch_mode": format!("{:?}", session.launch_records()),
        "marks": [m0, m1, m2], "mark_call_ns": mark_ns, "eager_and_graph_items_in": count("in"),
        "items_after": count("after"), "items_outside": count("outside"), "launch_records": batch.launches.len(),
        "external_records": batch.external.len(), "kernels": kernels, "graphs": graphs}),
    );
    Ok(())
}

/// `launchparts`: what each part of kprof's CUPTI session adds to the host time of a launch, in
/// one process, the states interleaved over 10 rounds (the host's own drift, up to 2 us in a few
/// seconds, then falls on every state alike): `plain` (no session), `records` (a session with
/// `attribution="records"`: kernel, graph and launch API records, the graph guard's callbacks),
/// `order` (a session with `attribution="order"`, the default since 2026-12-02: no launch API
/// records, the numbering callback; one region number taken), `order_rangeprofiler` (that and a
/// Range Profiler session enabled, not started, as a default benchmark keeps one for its counter
/// passes), `subscribed` (the order session with the kernel records off: graph records and
/// callbacks only). Each state's median over 4 loops of 500
/// queued launches; per state the median over rounds of its difference to that round's `plain`.
/// Also the host time of one correlation mark (median of 200).
fn launch_parts(b: &mut Bench) -> Result<(), BoxError> {
    use kprof::choices::Attribution;
    let libs = kprof::loader::Libraries::load()?;
    let lib = kprof::counters::CuptiLib::load(&libs.cupti_path)?;
    kprof::counters::range::profiler_initialize(lib)?;
    let ctx = libs.cuda.ensure_context()? as usize;
    let metrics = vec!["gpu__time_duration.sum".to_string()];
    ns_per_launch_queued(b, 2)?;
    let traced = |attribution| session_attributing(libs, attribution);
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut added: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut mark_ns = Vec::new();
    for round in 0..10 {
        let plain = ns_per_launch_queued(b, 4)?;
        let mut row = serde_json::json!({"round": round, "plain": plain});
        let mut record = |st: &'static str, ns: f64, row: &mut serde_json::Value| {
            row[st] = ns.into();
            added.entry(st).or_default().push(ns - plain);
        };
        let session = traced(Attribution::Records)?;
        record("records", ns_per_launch_queued(b, 4)?, &mut row);
        row["records_attribution"] = session.attribution().as_str().into();
        session.stop()?;
        let session = traced(Attribution::Order)?;
        let mark = || session.correlation_mark(|| drop(libs.cuda.device_count())).unwrap_or(0);
        row["order_mark"] = mark().into();
        record("order", ns_per_launch_queued(b, 4)?, &mut row);
        if round == 0 {
            for _ in 0..200 {
                let t = std::time::Instant::now();
                mark();
                mark_ns.push(t.elapsed().as_nanos() as f64);
            }
        }
        {
            // The Range Profiler session a default benchmark keeps open (enabled, not started).
            let rp = kprof::counters::RangeProfiler::new(lib, ctx as _, 0, &metrics, ReplayMode::Application)?;
            record("order_rangeprofiler", ns_per_launch_queued(b, 4)?, &mut row);
            drop(rp);
        }
        session.set_kernel_records(false)?;
        record("subscribed", ns_per_launch_queued(b, 4)?, &mut row);
        session.stop()?;
        rows.push(row);
    }
    let added_median: serde_json::Map<String, serde_json::Value> = added
        .into_iter()
        .map(|(k, v)| (k.to_string(), median(v).into()))
        .collect();
    emit(
        serde_json::json!({"mode": "launchparts", "added_ns_median": added_median, "mark_ns_median": median(mark_ns),
        "rounds": rows}),
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = (|| -> Result<(), BoxError> {
        let mut b = Bench::new()?;
        match args.first().map(String::as_str) {
            Some("events") => events(&mut b),
            Some("kprof") => kprof_mode(
                &mut b,
                args.get(1).map(String::as_str).unwrap_or("auto"),
                args.get(2).map(String::as_str).unwrap_or("application"),
            ),
            Some("ncu-target") => ncu_target(&mut b),
            Some("rangeprof") => rangeprof(&mut b),
            Some("launch") => launch_mode(&mut b),
            Some("mmicache") => mm_icache(&mut b),
            Some("icachesize") => icache_size(&mut b),
            Some("firstpass") => first_pass(&mut b, args.get(1).map(String::as_str).unwrap_or("plain")),
            Some("launchcb") => launch_callbacks(&mut b, args.get(1).map(String::as_str).unwrap_or("records")),
            Some("launchparts") => launch_parts(&mut b),
            Some("growimage") => grow_image(&mut b, args.get(1).map(String::as_str).unwrap_or("kernel")),
            Some("cuptistates") => cupti_states::cupti_states(&mut b, args.get(1).map(String::as_str).unwrap_or("none")),
            Some("reattach") => reattach::reattach(&mut b),
            Some("graphstates") => graph_states::graph_states(&mut b),
            Some("bracket") => bracket(&mut b, args.get(1).map(String::as_str).unwrap_or("records")),
            _ => Err(
                "usage: truth_check events | kprof [records|counters|auto] [kernel|application] | ncu-target | rangeprof | launch | mmicache | icachesize | firstpass [plain|empty|kernel|thread-empty|thread-kernel|cap=N|prime=N|thread-prime=N] | launchcb [records|none|callbacks|callbacks-empty] | bracket [records|off] | launchparts | growimage [kernel|app] | graphstates | cuptistates [none|timestamp|subscribe|callback|graph|concurrent|driver|profiler|profiler-keep] | reattach"
                    .into(),
            ),
        }
    })();
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
