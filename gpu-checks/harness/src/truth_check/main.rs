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
//!   the instruction flush kernel's JIT and GPU time (`icache.rs`).
//! - `icachesize`: the instruction flush at 1024..8192 steps: JIT and GPU time, and the cold sgemm
//!   1024 after it (how many steps empty the instruction caches; `icache.rs`).
//! - `firstpass VARIANT`: the host time of a process's first Range Profiler collections by phase,
//!   with and without a priming collection (on this thread or on a helper during a warm-up load).
//! - `launchcb VARIANT`: host time per launch with a bare activity session: kprof's launch API
//!   records, none, or launch callbacks that record what those records carry (one process each;
//!   `launch_cost.rs`).
//! - `bracket VARIANT`: host time per launch without launch API records, and whether kernels
//!   and graph launches fall between the correlation ids of `cuDeviceGetCount` marks around them
//!   (`launch_cost.rs`).
//! - `launchparts`: what each part of kprof's CUPTI session adds to the host time of a launch,
//!   the states interleaved in one process (launch API records, launch order, kernel records;
//!   `launch_cost.rs`).
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
mod icache;
mod launch_cost;
mod reattach;

use std::sync::Arc;

use bench::{grid, Bench};
use common::{BoxError, Gpu, Matmul};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
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

/// The values of `metric` in `raw`, in sample order.
fn samples(raw: &kprof::core::model::RawResults, metric: &str) -> Vec<f64> {
    raw.samples
        .iter()
        .filter(|x| raw.series[x.series as usize].key.metric == metric)
        .map(|x| x.value)
        .collect()
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
            Some("mmicache") => icache::mm_icache(&mut b),
            Some("icachesize") => icache::icache_size(&mut b),
            Some("firstpass") => first_pass(&mut b, args.get(1).map(String::as_str).unwrap_or("plain")),
            Some("launchcb") => launch_cost::launch_callbacks(&mut b, args.get(1).map(String::as_str).unwrap_or("records")),
            Some("launchparts") => launch_cost::launch_parts(&mut b),
            Some("growimage") => grow_image(&mut b, args.get(1).map(String::as_str).unwrap_or("kernel")),
            Some("cuptistates") => cupti_states::cupti_states(&mut b, args.get(1).map(String::as_str).unwrap_or("none")),
            Some("reattach") => reattach::reattach(&mut b),
            Some("graphstates") => graph_states::graph_states(&mut b),
            Some("bracket") => launch_cost::bracket(&mut b, args.get(1).map(String::as_str).unwrap_or("records")),
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
