//! GPU check of the counter module (run on the H200; needs a GPU, libcuda and libcupti).
//!
//! ```text
//! counters_check OUT_DIR           # collect, check, write recordings to OUT_DIR/{kernel_replay,user_replay}
//! counters_check --plain [N_SMALL] # only launch the same kernels (for ncu; no CUPTI)
//! ```
//!
//! A hand-written PTX kernel `y[i] = a * x[i]` over 64 Mi floats moves 256 MiB in and 256 MiB
//! out per launch (≫ the 50 MB L2), so `dram__bytes_read.sum` and `dram__bytes_write.sum` must
//! each be ≈ 268,435,456 bytes per launch. It collects `gpu__time_duration.sum`,
//! `dram__bytes_read.sum`, `dram__bytes_write.sum` and
//! `sm__throughput.avg.pct_of_peak_sustained_elapsed`:
//! * kernel replay: 3 launches → 3 ranges "0","1","2";
//! * user replay: range "scale_x1" (1 launch) and "scale_x3" (3 launches), closure re-run per pass;
//!
//! Then it times the per-kernel cost of a 3-metric set on small (~5-10 µs) kernels, in kernel
//! replay, in user-range replay (one range around the batch of kernels, the closure re-run once
//! per pass: how `replay_mode="range"` collects) and in application replay (one range per kernel,
//! the closure re-run once per pass; the time inside the passes, launch to synchronize, is
//! printed apart from CUPTI's own time outside them), and checks that too many kernels for the
//! counter-data image is an error.
//!
//! Per-kernel overhead, both modes: `(profiled collect wall − plain wall) / kernels`, where the
//! plain wall is one unprofiled run of the same launches (synchronized) and the profiled wall is
//! `RangeProfiler::collect` (all passes, decode and evaluation; session setup excluded and printed
//! apart). In user replay the re-runs of the workload for the extra passes count as overhead: the
//! caller wanted the launches once. The ratio to ncu uses [`NCU_REF_MS_PER_KERNEL`];
//! gpu-checks/counters-vs-ncu.sh measures ncu on the same machine and prints the real ratios.
//!
//! libcupti: `KPROF_CUPTI_PATH`, else the pip copy under /opt/torch/.venv, else the toolkit's.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kprof::counters::recorded::write_recording;
use kprof::counters::{CountersError, CuptiLib, RangeProfiler, Recording, ReplayMode, UserRanges};

#[path = "../../../crates/kprof/examples/common/mod.rs"]
mod common;

use common::RawKernel;

const PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64

.visible .entry scale(
    .param .u64 px,
    .param .u64 py,
    .param .f32 pa,
    .param .u64 pn
)
{
    .reg .pred %p;
    .reg .b32 %r<5>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<3>;

    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    ld.param.f32 %f1, [pa];
    ld.param.u64 %rd3, [pn];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.u64 %rd4, %rd4, %rd5;
    mul.wide.u32 %rd6, %r4, %r2;
LOOP:
    setp.ge.u64 %p, %rd4, %rd3;
    @%p bra DONE;
    shl.b64 %rd7, %rd4, 2;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.f32 %f2, [%rd8];
    mul.f32 %f2, %f2, %f1;
    add.u64 %rd9, %rd2, %rd7;
    st.global.f32 [%rd9], %f2;
    add.u64 %rd4, %rd4, %rd6;
    bra LOOP;
DONE:
    ret;
}
"#;

const METRICS4: [&str; 4] = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
];
const METRICS3: [&str; 3] = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
];
const N_BIG: u64 = 64 << 20; // floats: 256 MiB per buffer
const N_SMALL_DEFAULT: u64 = 1 << 20; // 4 MiB: a ~10 µs kernel
const SMALL_KERNELS: usize = 50;
/// ncu's per-kernel cost for the 3-metric set on these small kernels on the H200 (start-up
/// excluded), as measured by gpu-checks/counters-vs-ncu.sh; only for the in-process ratio lines.
const NCU_REF_MS_PER_KERNEL: f64 = 187.5;

/// The scale kernel on device 0 (kprof's driver wrapper and cudarc, see `common::RawKernel`),
/// its buffers `x` (all 1.0) and `y`, and the device's name.
struct Gpu {
    kernel: RawKernel,
    ctx: *mut c_void,
    x: u64,
    y: u64,
    name: String,
}

impl Gpu {
    fn new() -> Result<Self, String> {
        let kernel = RawKernel::load(common::driver()?, PTX, "scale")?;
        let x = kernel.alloc((N_BIG * 4) as usize)?;
        let y = kernel.alloc((N_BIG * 4) as usize)?;
        // SAFETY: `x` holds N_BIG 4-byte words of this context.
        unsafe { cudarc::driver::sys::cuMemsetD32_v2(x, 1.0f32.to_bits(), N_BIG as usize) }
            .result()
            .map_err(|e| format!("cuMemsetD32: {e}"))?;
        kernel.sync()?;
        Ok(Gpu {
            ctx: kernel.ctx,
            name: kernel.device.name.clone(),
            kernel,
            x,
            y,
        })
    }

    /// `y = 2 * x` over the first `n` floats: 132 SMs x 8 blocks of 256 threads, grid-stride.
    fn scale(&self, n: u64) -> Result<(), String> {
        let (mut px, mut py, mut a, mut pn) = (self.x, self.y, 2.0f32, n);
        let mut params: [*mut c_void; 4] = [
            &mut px as *mut _ as *mut c_void,
            &mut py as *mut _ as *mut c_void,
            &mut a as *mut _ as *mut c_void,
            &mut pn as *mut _ as *mut c_void,
        ];
        let blocks = n.div_ceil(256).min(132 * 8) as u32;
        // SAFETY: `scale(.u64 x, .u64 y, .f32 a, .u64 n)`, given as such.
        unsafe { self.kernel.launch(blocks, 256, &mut params) }
    }

    /// `k` launches of `scale(n)` inside a collection, whose closure cannot return an error: the
    /// first failure is kept in `first_err`.
    fn scale_times(&self, n: u64, k: usize, first_err: &mut Option<String>) {
        for _ in 0..k {
            if let Err(e) = self.scale(n) {
                first_err.get_or_insert(e);
            }
        }
    }

    fn sync(&self) -> Result<(), String> {
        self.kernel.sync()
    }

    /// The wall time of SMALL_KERNELS plain launches of `scale(n)`, from a synchronised start to
    /// their end.
    fn plain_batch(&self, n: u64) -> Result<Duration, String> {
        self.sync()?;
        let t = Instant::now();
        for _ in 0..SMALL_KERNELS {
            self.scale(n)?;
        }
        self.sync()?;
        Ok(t.elapsed())
    }
}

/// `p.collect(max_ranges, workload)` for a workload that launches kernels and keeps the first
/// launch failure in the slot it is given: the recording, or that failure.
fn collect_launches(
    p: &mut RangeProfiler,
    max_ranges: usize,
    mut workload: impl FnMut(&mut UserRanges<'_>, &mut Option<String>),
) -> Result<Recording, String> {
    let mut failed = None;
    let rec = p
        .collect(max_ranges, |r| workload(r, &mut failed))
        .map_err(|e| e.to_string())?;
    failed.map_or(Ok(rec), Err)
}

fn find_cupti() -> Result<PathBuf, String> {
    // The engine's loader first (same libcupti as the activity session and the run loop).
    if let Ok(l) = kprof::loader::Libraries::load() {
        return Ok(l.cupti_path.clone());
    }
    if let Ok(p) = kprof::counters::locate_cupti() {
        if std::env::var_os("KPROF_CUPTI_PATH").is_some() {
            return Ok(p);
        }
    }
    for p in [
        "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13",
        "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
    ] {
        if Path::new(p).exists() {
            return Ok(p.into());
        }
    }
    kprof::counters::locate_cupti().map_err(|e| e.to_string())
}

fn print_table(title: &str, rec: &Recording, report: &mut String) {
    let mut s = format!(
        "\n== {title}: chip {}, {} passes, closure ran {}x, {} ranges\n",
        rec.chip,
        rec.passes,
        rec.closure_runs,
        rec.ranges.len()
    );
    s.push_str(&format!("{:<10}", "range"));
    for m in &rec.metrics {
        s.push_str(&format!(" {:>52}", m));
    }
    s.push('\n');
    for r in &rec.ranges {
        s.push_str(&format!("{:<10}", r.name));
        for (_, v) in &r.values {
            s.push_str(&format!(" {:>52.3}", v));
        }
        s.push('\n');
    }
    print!("{s}");
    report.push_str(&s);
}

/// Checks dram bytes of a range against `launches` launches of the big kernel (4 bytes x N each way).
fn check_bytes(rec: &Recording, range: &str, launches: u64, failures: &mut Vec<String>, report: &mut String) {
    let Some(r) = rec.ranges.iter().find(|r| r.name == range) else {
        failures.push(format!("range {range:?} missing"));
        return;
    };
    let expect = (launches * N_BIG * 4) as f64;
    for m in ["dram__bytes_read.sum", "dram__bytes_write.sum"] {
        let v = r.get(m).unwrap_or(f64::NAN);
        let rel = (v - expect) / expect * 100.0;
        let line = format!("{:?} {m}: {v:.0} vs {expect:.0} moved ({rel:+.3} %)\n", range);
        print!("{line}");
        report.push_str(&line);
        if rel.is_nan() || rel.abs() >= 3.0 {
            failures.push(format!("range {range:?}: {m} off by {rel:.2} %"));
        }
    }
}

fn run(out: &Path) -> Result<Vec<String>, String> {
    let gpu = Gpu::new()?;
    let cupti_path = find_cupti()?;
    let lib = CuptiLib::load(&cupti_path).map_err(|e| e.to_string())?;
    let mut report = format!(
        "device {} | libcupti {} (API {}) | nvperf_host {:?}\n",
        gpu.name,
        lib.path.display(),
        lib.api_version,
        lib.nvperf_host
    );
    print!("{report}");
    let mut failures = Vec::new();
    gpu.scale(N_BIG)?; // warm-up (JIT, first touch)
    gpu.sync()?;

    // Kernel replay: 3 launches, 3 ranges.
    let t = Instant::now();
    let mut kp = match RangeProfiler::new(lib, gpu.ctx, 0, &METRICS4, ReplayMode::Kernel) {
        Ok(p) => p,
        Err(e) => return Err(format!("cannot start the Range Profiler: {e}")),
    };
    let setup_kernel = t.elapsed();
    let t = Instant::now();
    let rec = collect_launches(&mut kp, 3, |_, failed| gpu.scale_times(N_BIG, 3, failed))?;
    let collect_kernel = t.elapsed();
    print_table(
        "kernel replay (AutoRange + KernelReplay), 3 launches of scale(64 Mi floats)",
        &rec,
        &mut report,
    );
    for r in ["0", "1", "2"] {
        check_bytes(&rec, r, 1, &mut failures, &mut report);
    }
    if rec.closure_runs != 1 {
        failures.push(format!("kernel replay ran the closure {} times", rec.closure_runs));
    }
    write_recording(&out.join("kernel_replay"), &rec).map_err(|e| e.to_string())?;
    drop(kp);

    // User replay: two named ranges, the closure re-runs once per pass.
    let mut up = RangeProfiler::new(lib, gpu.ctx, 0, &METRICS4, ReplayMode::User).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let rec = collect_launches(&mut up, 2, |r, failed| {
        let _ = r.range("scale_x1", || gpu.scale_times(N_BIG, 1, failed));
        let _ = r.range("scale_x3", || gpu.scale_times(N_BIG, 3, failed));
    })?;
    let collect_user = t.elapsed();
    print_table(
        "user replay (UserRange + UserReplay), ranges scale_x1 (1 launch) and scale_x3 (3 launches)",
        &rec,
        &mut report,
    );
    check_bytes(&rec, "scale_x1", 1, &mut failures, &mut report);
    check_bytes(&rec, "scale_x3", 3, &mut failures, &mut report);
    if rec.closure_runs != rec.passes {
        failures.push(format!(
            "user replay ran the closure {} times for {} passes",
            rec.closure_runs, rec.passes
        ));
    }
    write_recording(&out.join("user_replay"), &rec).map_err(|e| e.to_string())?;
    drop(up);

    // Cost of a 3-metric set per kernel (kernel replay), small kernels.
    let n_small = N_SMALL_DEFAULT;
    for _ in 0..5 {
        gpu.scale(n_small)?;
    }
    let plain = gpu.plain_batch(n_small)?;
    let t = Instant::now();
    let mut p3 = RangeProfiler::new(lib, gpu.ctx, 0, &METRICS3, ReplayMode::Kernel).map_err(|e| e.to_string())?;
    let setup3 = t.elapsed();
    let t = Instant::now();
    let rec3 = p3
        .collect(SMALL_KERNELS, |_| {
            for _ in 0..SMALL_KERNELS {
                let _ = gpu.scale(n_small);
            }
        })
        .map_err(|e| e.to_string())?;
    let prof = t.elapsed();
    let mean_dur: f64 = rec3
        .ranges
        .iter()
        .filter_map(|r| r.get("gpu__time_duration.sum"))
        .sum::<f64>()
        / rec3.ranges.len().max(1) as f64;
    let per_kernel_ms = (prof.as_secs_f64() - plain.as_secs_f64()) / SMALL_KERNELS as f64 * 1e3;
    let s = format!(
        "\n== cost, 3-metric set ({} passes), {SMALL_KERNELS} kernels of {} floats (gpu__time_duration mean {:.0} ns), kernel replay\n\
         plain launches: {:.3} ms total | profiled collect: {:.3} ms total | setup (RangeProfiler::new): {:.3} ms\n\
         per-kernel profiling overhead: {:.3} ms (ncu on the H200: ~93 ms per kernel with one metric, plus ~2.3 s start-up)\n\
         (4-metric sessions: setup {:.3} ms, kernel-replay collect of 3 big kernels {:.3} ms, user-replay collect {:.3} ms)\n",
        rec3.passes,
        n_small,
        mean_dur,
        plain.as_secs_f64() * 1e3,
        prof.as_secs_f64() * 1e3,
        setup3.as_secs_f64() * 1e3,
        per_kernel_ms,
        setup_kernel.as_secs_f64() * 1e3,
        collect_kernel.as_secs_f64() * 1e3,
        collect_user.as_secs_f64() * 1e3,
    );
    print!("{s}");
    report.push_str(&s);
    if rec3.ranges.len() != SMALL_KERNELS {
        failures.push(format!("{} ranges for {SMALL_KERNELS} kernels", rec3.ranges.len()));
    }

    // Too many kernels for the image: must be an error, never a silent drop.
    let r = p3.collect(2, |_| {
        for _ in 0..4 {
            let _ = gpu.scale(n_small);
        }
    });
    let line = match &r {
        Err(CountersError::DroppedRanges { dropped, capacity }) => {
            format!("\ndropped ranges are an error: OK ({dropped} dropped, capacity {capacity})\n")
        }
        Err(e) => format!("\ndropped ranges: other error: {e}\n"),
        Ok(rec) => {
            failures.push(format!(
                "4 kernels into a 2-range image gave no error ({} ranges)",
                rec.ranges.len()
            ));
            format!("\ndropped ranges: NO ERROR ({} ranges returned)\n", rec.ranges.len())
        }
    };
    print!("{line}");
    report.push_str(&line);
    drop(p3); // one Range Profiler session per context at a time

    // Same cost in user-range replay: one range around the batch, the closure re-run per pass.
    let t = Instant::now();
    let mut pu = RangeProfiler::new(lib, gpu.ctx, 0, &METRICS3, ReplayMode::User).map_err(|e| e.to_string())?;
    let setup_u = t.elapsed();
    let plain_u = gpu.plain_batch(n_small)?;
    let t = Instant::now();
    let recu = pu
        .collect(1, |r| {
            let _ = r.range("batch", || {
                for _ in 0..SMALL_KERNELS {
                    let _ = gpu.scale(n_small);
                }
            });
        })
        .map_err(|e| e.to_string())?;
    let prof_u = t.elapsed();
    let per_kernel_user_ms = (prof_u.as_secs_f64() - plain_u.as_secs_f64()) / SMALL_KERNELS as f64 * 1e3;
    let batch_ns = recu
        .ranges
        .first()
        .and_then(|r| r.get("gpu__time_duration.sum"))
        .unwrap_or(f64::NAN);
    let ratio = |ms: f64| {
        if ms > 0.0 {
            NCU_REF_MS_PER_KERNEL / ms
        } else {
            f64::INFINITY
        }
    };
    let s = format!(
        "\n== cost, 3-metric set ({} passes), the same {SMALL_KERNELS} kernels in ONE range, user-range replay (closure ran {}x)\n\
         plain launches: {:.3} ms total | profiled collect: {:.3} ms total | setup: {:.3} ms | range gpu__time_duration {:.0} ns\n\
         user-replay per-kernel profiling overhead: {:.3} ms = (collect wall - plain wall) / {SMALL_KERNELS} kernels\n\
         per-kernel overhead vs ncu ({NCU_REF_MS_PER_KERNEL} ms/kernel, H200 reference): kernel replay {:.3} ms -> {:.1}x cheaper | user-range replay {:.3} ms -> {:.1}x cheaper\n",
        recu.passes,
        recu.closure_runs,
        plain_u.as_secs_f64() * 1e3,
        prof_u.as_secs_f64() * 1e3,
        setup_u.as_secs_f64() * 1e3,
        batch_ns,
        per_kernel_user_ms,
        per_kernel_ms,
        ratio(per_kernel_ms),
        per_kernel_user_ms,
        ratio(per_kernel_user_ms),
    );
    print!("{s}");
    report.push_str(&s);
    if recu.ranges.len() != 1 || recu.closure_runs != recu.passes {
        failures.push(format!(
            "user-range cost run: {} ranges (want 1), closure ran {}x for {} passes",
            recu.ranges.len(),
            recu.closure_runs,
            recu.passes
        ));
    }
    drop(pu);

    // Same cost in application replay: one range per kernel, the closure re-run per pass. The
    // passes' own time (launches to synchronize, AutoRange's per-kernel work included) is
    // measured apart from the rest of collect (start, stop, decode, evaluation).
    let t = Instant::now();
    let mut pa = RangeProfiler::new(lib, gpu.ctx, 0, &METRICS3, ReplayMode::Application).map_err(|e| e.to_string())?;
    let setup_a = t.elapsed();
    let mut in_passes = Duration::ZERO;
    let t = Instant::now();
    let reca = pa
        .collect(SMALL_KERNELS, |_| {
            let t = Instant::now();
            for _ in 0..SMALL_KERNELS {
                let _ = gpu.scale(n_small);
            }
            let _ = gpu.sync();
            in_passes += t.elapsed();
        })
        .map_err(|e| e.to_string())?;
    let prof_a = t.elapsed();
    let per_kernel_app_ms = (prof_a.as_secs_f64() - plain_u.as_secs_f64()) / SMALL_KERNELS as f64 * 1e3;
    let passes_ms = in_passes.as_secs_f64() * 1e3;
    let s = format!(
        "\n== cost, 3-metric set ({} passes), the same {SMALL_KERNELS} kernels, application replay (one range per kernel, closure ran {}x)\n\
         profiled collect: {:.3} ms total = inside the passes {:.3} ms ({:.3} ms per kernel per pass) + CUPTI outside them \
         {:.3} ms ({:.3} ms per pass) | setup: {:.3} ms\n\
         application-replay per-kernel profiling overhead: {:.3} ms -> {:.1}x cheaper than ncu\n",
        reca.passes,
        reca.closure_runs,
        prof_a.as_secs_f64() * 1e3,
        passes_ms,
        passes_ms / (SMALL_KERNELS * reca.closure_runs.max(1)) as f64,
        prof_a.as_secs_f64() * 1e3 - passes_ms,
        (prof_a.as_secs_f64() * 1e3 - passes_ms) / reca.closure_runs.max(1) as f64,
        setup_a.as_secs_f64() * 1e3,
        per_kernel_app_ms,
        ratio(per_kernel_app_ms),
    );
    print!("{s}");
    report.push_str(&s);
    if reca.ranges.len() != SMALL_KERNELS || reca.closure_runs != reca.passes {
        failures.push(format!(
            "application-replay cost run: {} ranges (want {SMALL_KERNELS}), closure ran {}x for {} passes",
            reca.ranges.len(),
            reca.closure_runs,
            reca.passes
        ));
    }
    drop(pa);
    std::fs::write(out.join("summary.txt"), &report).map_err(|e| e.to_string())?;
    Ok(failures)
}

fn plain(args: &[String]) -> Result<(), String> {
    let n_small: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(N_SMALL_DEFAULT);
    let gpu = Gpu::new()?;
    let t = Instant::now();
    gpu.scale(N_BIG)?; // warm-up
    for _ in 0..3 {
        gpu.scale(N_BIG)?; // as in kernel replay
    }
    for _ in 0..4 {
        gpu.scale(N_BIG)?; // as the user-replay ranges (1 + 3)
    }
    for _ in 0..SMALL_KERNELS {
        gpu.scale(n_small)?;
    }
    gpu.sync()?;
    println!(
        "plain: {} kernels ({} of 64 Mi floats, {SMALL_KERNELS} of {n_small}) in {:.3} ms",
        8 + SMALL_KERNELS,
        8,
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--plain") {
        if let Err(e) = plain(&args) {
            eprintln!("counters_check --plain: {e}");
            std::process::exit(2);
        }
        return;
    }
    let out = PathBuf::from(args.get(1).cloned().unwrap_or_else(|| "counters-out".into()));
    match run(&out) {
        Ok(f) if f.is_empty() => println!("\nALL CHECKS PASSED; recordings in {}", out.display()),
        Ok(f) => {
            println!("\nFAILED CHECKS:\n  {}", f.join("\n  "));
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("counters_check: {e}");
            std::process::exit(2);
        }
    }
}
