//! GPU check of the conditions module. Reads only; never changes any GPU setting.
//!
//! ```text
//! conditions_check OUT.json [RUNS=30] [SECONDS_PER_RUN=1.0]
//! ```
//!
//! 1. Loads NVML, maps CUDA device 0 to its NVML device by UUID (from kprof's driver wrapper),
//!    prints the environment fingerprint.
//! 2. Reads the idle clocks, temperature and power.
//! 3. Runs RUNS runs of a hand-written PTX FMA kernel of about SECONDS_PER_RUN each, with the
//!    thermal guard (auto) before each run and the run sampler around it; a thread samples the
//!    power every 10 ms during the run.
//! 4. Checks: energy per run against mean power x duration (within 10%), clocks between idle
//!    and max boost, temperature rising under load, throttle reasons readable; prints a
//!    pass/fail table, and writes every reading as a JSON fixture to OUT.json.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kprof::conditions::fingerprint::{format_cuda_version, format_cupti_version, Fingerprint, FingerprintInputs};
use kprof::conditions::nvml::{GpuDevice, Nvml};
use kprof::conditions::sampler::{pearson, throttle_reason_names, RunSampler};
use kprof::conditions::thermal::{SystemClock, ThermalGuard, ThermalMode, ThermalSettings};
use libloading::Library;

#[path = "../../../crates/kprof/examples/common/mod.rs"]
mod common;

use common::RawKernel;
use serde_json::{json, Value};

const PTX: &str = r#"
.version 7.0
.target sm_75
.address_size 64

.visible .entry spin(
    .param .u64 p_out,
    .param .u32 p_iters
)
{
    .reg .pred p;
    .reg .f32 a<8>;
    .reg .f32 b;
    .reg .u32 i, n, r_tid, r_cta, r_ntid, gid;
    .reg .u64 ptr, off;

    ld.param.u64 ptr, [p_out];
    ld.param.u32 n, [p_iters];
    cvta.to.global.u64 ptr, ptr;
    mov.u32 r_tid, %tid.x;
    mov.u32 r_cta, %ctaid.x;
    mov.u32 r_ntid, %ntid.x;
    mad.lo.u32 gid, r_cta, r_ntid, r_tid;
    cvt.rn.f32.u32 a0, gid;
    add.f32 a1, a0, 0f3F800000;
    add.f32 a2, a0, 0f40000000;
    add.f32 a3, a0, 0f40400000;
    add.f32 a4, a0, 0f40800000;
    add.f32 a5, a0, 0f40A00000;
    add.f32 a6, a0, 0f40C00000;
    add.f32 a7, a0, 0f40E00000;
    mov.f32 b, 0f3F7FFFFF;
    mov.u32 i, 0;
LOOP:
    fma.rn.f32 a0, a0, b, 0f3F800000;
    fma.rn.f32 a1, a1, b, 0f3F800000;
    fma.rn.f32 a2, a2, b, 0f3F800000;
    fma.rn.f32 a3, a3, b, 0f3F800000;
    fma.rn.f32 a4, a4, b, 0f3F800000;
    fma.rn.f32 a5, a5, b, 0f3F800000;
    fma.rn.f32 a6, a6, b, 0f3F800000;
    fma.rn.f32 a7, a7, b, 0f3F800000;
    add.u32 i, i, 1;
    setp.lt.u32 p, i, n;
    @p bra LOOP;
    add.f32 a0, a0, a1;
    add.f32 a2, a2, a3;
    add.f32 a4, a4, a5;
    add.f32 a6, a6, a7;
    add.f32 a0, a0, a2;
    add.f32 a4, a4, a6;
    add.f32 a0, a0, a4;
    mul.wide.u32 off, gid, 4;
    add.u64 ptr, ptr, off;
    st.global.f32 [ptr], a0;
    ret;
}
"#;

/// `cudaRuntimeGetVersion` and `cuptiGetVersion`, when their libraries can be found (read only).
fn optional_versions() -> (Option<String>, Option<String>) {
    let dirs = [
        "",
        "/usr/local/cuda/lib64/",
        "/usr/local/cuda/targets/x86_64-linux/lib/",
        "/usr/local/cuda/extras/CUPTI/lib64/",
    ];
    let mut runtime = None;
    let mut cupti = None;
    for d in dirs {
        if runtime.is_none() {
            // SAFETY: plain library load; cudaRuntimeGetVersion only writes an int.
            if let Ok(lib) = unsafe { Library::new(format!("{d}libcudart.so.13")) } {
                if let Ok(f) =
                    unsafe { lib.get::<unsafe extern "C" fn(*mut c_int) -> c_int>(b"cudaRuntimeGetVersion\0") }
                {
                    let mut v = 0;
                    if unsafe { f(&mut v) } == 0 {
                        runtime = Some(format!("{} ({d}libcudart.so.13)", format_cuda_version(v)));
                    }
                }
                std::mem::forget(lib);
            }
        }
        if cupti.is_none() {
            // SAFETY: cuptiGetVersion only writes a u32 and does not initialise CUPTI.
            if let Ok(lib) = unsafe { Library::new(format!("{d}libcupti.so.13")) } {
                if let Ok(f) = unsafe { lib.get::<unsafe extern "C" fn(*mut u32) -> c_int>(b"cuptiGetVersion\0") } {
                    let mut v = 0;
                    if unsafe { f(&mut v) } == 0 {
                        cupti = Some(format_cupti_version(v));
                    }
                }
                std::mem::forget(lib);
            }
        }
    }
    (runtime, cupti)
}

/// The FMA kernel and where it writes.
struct Gpu {
    kernel: RawKernel,
    out: u64,
    grid: u32,
    block: u32,
}

impl Gpu {
    /// One run of `iters` FMA iterations per thread, waited for: its wall time.
    fn launch(&self, iters: u32) -> Result<Duration, String> {
        let mut out = self.out;
        let mut n = iters;
        let mut params = [&mut out as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
        let t0 = Instant::now();
        // SAFETY: `spin(.u64 out, .u32 n)` takes a pointer and a count, as given.
        unsafe { self.kernel.launch(self.grid, self.block, &mut params) }?;
        self.kernel.sync()?;
        Ok(t0.elapsed())
    }
}

struct Check {
    name: &'static str,
    pass: bool,
    detail: String,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn main() {
    match run() {
        Ok(all_pass) => std::process::exit(if all_pass { 0 } else { 1 }),
        Err(e) => {
            eprintln!("conditions_check: {e}");
            std::process::exit(2);
        }
    }
}

fn run() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    let out_path = args
        .get(1)
        .ok_or("usage: conditions_check OUT.json [RUNS=30] [SECONDS_PER_RUN=1.0]")?
        .clone();
    let runs: usize = args
        .get(2)
        .map(|s| s.parse().map_err(|e| format!("RUNS: {e}")))
        .transpose()?
        .unwrap_or(30);
    let seconds: f64 = args
        .get(3)
        .map(|s| s.parse().map_err(|e| format!("SECONDS: {e}")))
        .transpose()?
        .unwrap_or(1.0);
    let mut checks: Vec<Check> = Vec::new();

    // --- NVML and the device mapping -------------------------------------------------------
    let nvml = Nvml::load().map_err(|e| e.to_string())?;
    checks.push(Check {
        name: "nvml loads",
        pass: true,
        detail: nvml.driver_version().unwrap_or_default(),
    });

    let driver = common::driver()?;
    let props = driver.device_info(0).map_err(|e| e.to_string())?;
    let cuda_uuid = props.uuid.clone();
    let cuda_name = props.name.clone();

    let resolved = nvml.resolve_device(Some(&cuda_uuid));
    if let Some(w) = &resolved.warning {
        println!("warning: {w}");
    }
    let device: GpuDevice = resolved.device.ok_or("no NVML device")?;
    checks.push(Check {
        name: "CUDA device 0 maps to NVML by UUID",
        pass: resolved.warning.is_none() && device.uuid() == cuda_uuid,
        detail: format!("CUDA {cuda_uuid} -> NVML index {:?} {}", device.index(), device.uuid()),
    });

    // --- fingerprint -----------------------------------------------------------------------
    let (runtime, cupti) = optional_versions();
    let inputs = FingerprintInputs {
        cuda_ordinal: Some(0),
        gpu_name: Some(cuda_name.clone()),
        uuid: Some(cuda_uuid.clone()),
        compute_capability: Some(props.cc),
        cuda_driver_version: Some(driver.version),
        cuda_runtime_version: runtime,
        cupti_version: cupti,
        clock_policy: Some("none (clocks not locked; kprof never changes GPU settings)".into()),
        thermal_mode: Some("auto".into()),
        kernel_timing: Some("none (this program times no kernels)".into()),
        rated_sm_clock_khz: Some(props.clock_khz),
        rated_mem_clock_khz: Some(props.mem_clock_khz),
        sm_count: Some(props.sm_count),
    };
    let fp = Fingerprint::collect(&inputs, Some(&nvml), Some(&device));
    println!("{}", fp.to_json());
    println!("{}", kprof::conditions::render(&fp));
    checks.push(Check {
        name: "fingerprint: H200, driver 580.x, CUDA 13.0",
        pass: fp.gpu_name.as_deref().is_some_and(|n| n.contains("H200"))
            && fp.driver_version.as_deref().is_some_and(|v| v.starts_with("580."))
            && fp.cuda_driver_version.as_deref() == Some("13.0"),
        detail: format!(
            "{:?} / {:?} / {:?}",
            fp.gpu_name, fp.driver_version, fp.cuda_driver_version
        ),
    });
    checks.push(Check {
        name: "fingerprint: CUPTI 13.0 found",
        pass: fp.cupti_version.as_deref().is_some_and(|v| v.starts_with("13.0")),
        detail: format!("{:?}; runtime {:?}", fp.cupti_version, fp.cuda_runtime_version),
    });
    let gpu_fields = [
        ("compute_capability", fp.compute_capability.is_some()),
        ("ecc", fp.ecc_enabled.is_some()),
        ("mig", fp.mig_enabled.is_some()),
        ("persistence", fp.persistence_mode.is_some()),
        ("power_limit", fp.power_limit_w.is_some()),
        ("max_sm_clock", fp.max_sm_clock_mhz.is_some()),
        ("other_processes", fp.other_processes.is_some()),
        ("hostname", fp.hostname.is_some()),
        ("os", fp.os.is_some()),
    ];
    let missing: Vec<&str> = gpu_fields.iter().filter(|(_, ok)| !ok).map(|(n, _)| *n).collect();
    checks.push(Check {
        name: "fingerprint: NVML/host fields present",
        pass: missing.is_empty(),
        detail: format!("missing: {missing:?}"),
    });

    // --- idle readings ---------------------------------------------------------------------
    std::thread::sleep(Duration::from_secs(2));
    let idle = json!({
        "sm_clock_mhz": device.sm_clock_mhz(),
        "mem_clock_mhz": device.mem_clock_mhz(),
        "max_sm_clock_mhz": device.max_sm_clock_mhz(),
        "max_mem_clock_mhz": device.max_mem_clock_mhz(),
        "temperature_c": device.temperature_c(),
        "margin_c": device.margin_temperature_c(),
        "power_mw": device.power_mw(),
        "power_instant_mw": device.power_instant_mw(),
        "energy_mj": device.total_energy_mj(),
        "throttle_reasons": device.throttle_reasons(),
    });
    println!("idle: {idle}");
    let idle_sm = device.sm_clock_mhz().map(f64::from).unwrap_or(f64::NAN);
    let idle_temp = device.temperature_c().map(f64::from).unwrap_or(f64::NAN);
    let max_sm = device.max_sm_clock_mhz().map(f64::from).unwrap_or(f64::NAN);
    let max_mem = device.max_mem_clock_mhz().map(f64::from).unwrap_or(f64::NAN);
    let power_limit_mw = device.power_limit_mw().map(f64::from).unwrap_or(f64::NAN);

    // --- kernel ----------------------------------------------------------------------------
    let kernel = RawKernel::load(driver, PTX, "spin")?;
    let block = 256u32;
    let grid = kernel.sms * 16;
    let out = kernel.alloc((grid * block) as usize * 4)?;
    let gpu = Gpu {
        kernel,
        out,
        grid,
        block,
    };

    // Calibrate the iteration count for `seconds` per run.
    gpu.launch(1000)?;
    let probe_iters = 200_000u32;
    let t = gpu.launch(probe_iters)?.as_secs_f64();
    let iters = ((probe_iters as f64 * seconds / t).round() as u64).clamp(1, u32::MAX as u64) as u32;
    println!(
        "calibration: {probe_iters} iterations took {:.1} ms; {iters} iterations per run",
        t * 1e3
    );
    gpu.launch(iters)?; // warm-up run at full length

    // --- runs ------------------------------------------------------------------------------
    let mut settings = ThermalSettings::default();
    settings.timeout = Duration::from_secs(60);
    let mut guard = ThermalGuard::new(ThermalMode::Auto, settings, Some(device.clone()), SystemClock::new())
        .map_err(|e| e.to_string())?;
    let mut sampler = RunSampler::new(Some(device.clone()));
    let mut rows: Vec<Value> = Vec::new();
    let (mut durations, mut clocks, mut temps, mut ratios, mut ratios_avg) = (vec![], vec![], vec![], vec![], vec![]);
    let mut overhead_us: Vec<f64> = Vec::new();
    let mut all_ok_reasons = true;
    let mut throttled_runs = 0;
    println!(
        "{:>3} {:>8} {:>8} {:>8} {:>7} {:>6} {:>8} {:>10} {:>8} {:>7} {:>7}  reasons",
        "run", "dur_s", "sm_pre", "sm_post", "mem", "temp", "power_W", "energy_J", "P*t_J", "ratio", "wait_s"
    );
    for r in 0..runs {
        let waited = guard.guard_before_run().map_err(|e| e.to_string())?;
        for w in guard.take_warnings() {
            println!("warning: {w}");
        }
        // Power sampler thread: instant power (and the 1 s average) every 10 ms.
        let stop = Arc::new(AtomicBool::new(false));
        let poller = {
            let stop = stop.clone();
            let d = device.clone();
            std::thread::spawn(move || {
                let mut inst = Vec::new();
                let mut avg = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    if let Some(p) = d.power_instant_mw() {
                        inst.push(p);
                    }
                    if let Some(p) = d.power_mw() {
                        avg.push(p as f64);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                (inst, avg)
            })
        };
        let tb = Instant::now();
        sampler.begin_run();
        let begin_us = tb.elapsed().as_secs_f64() * 1e6;
        let t0 = Instant::now();
        let kernel = gpu.launch(iters)?;
        let te = Instant::now();
        let cond = sampler.end_run(waited);
        let end_us = te.elapsed().as_secs_f64() * 1e6;
        overhead_us.push(begin_us + end_us);
        let wall = t0.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let (inst, avg) = poller.join().map_err(|_| "power thread panicked")?;
        let p_inst = mean(&inst);
        let p_avg = mean(&avg);
        let p = if inst.is_empty() { p_avg } else { p_inst };
        let dur = cond.wall_s;
        let expected_mj = p * dur; // mW * s = mJ
        let ratio = cond.energy_mj / expected_mj;
        ratios.push(ratio);
        ratios_avg.push(cond.energy_mj / (p_avg * dur));
        durations.push(kernel.as_secs_f64());
        clocks.push(cond.sm_clock_mhz_after);
        temps.push(cond.temperature_c);
        all_ok_reasons &= cond.throttle_reasons.is_some();
        if cond.throttled == Some(true) {
            throttled_runs += 1;
        }
        println!(
            "{r:>3} {:>8.3} {:>8.0} {:>8.0} {:>7.0} {:>6.0} {:>8.1} {:>10.1} {:>8.1} {:>7.3} {:>7.1}  {:?}",
            kernel.as_secs_f64(),
            cond.sm_clock_mhz_before,
            cond.sm_clock_mhz_after,
            cond.mem_clock_mhz,
            cond.temperature_c,
            cond.power_mw / 1e3,
            cond.energy_mj / 1e3,
            expected_mj / 1e3,
            ratio,
            cond.thermal_wait_s,
            cond.throttle_reason_names()
        );
        rows.push(json!({
            "run": r,
            "kernel_s": kernel.as_secs_f64(),
            "host_wall_s": wall,
            "conditions": cond,
            "throttle_reason_names": cond.throttle_reason_names(),
            "extras": cond.to_extras().iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>(),
            "power_instant_samples": inst.len(),
            "power_avg_samples": avg.len(),
            "mean_power_instant_mw": p_inst,
            "mean_power_avg_mw": p_avg,
            "energy_ratio": ratio,
            "energy_ratio_vs_avg_power": cond.energy_mj / (p_avg * dur),
            "margin_c_after": device.margin_temperature_c(),
            "sampler_overhead_us": begin_us + end_us,
        }));
    }

    // --- checks ----------------------------------------------------------------------------
    let within = ratios.iter().filter(|r| (*r - 1.0).abs() <= 0.10).count();
    let long_enough = durations.iter().all(|d| *d >= 0.95 * seconds);
    checks.push(Check {
        name: "energy = mean power x duration within 10% (>= 90% of runs)",
        pass: within * 10 >= runs * 9 && long_enough,
        detail: format!(
            "{within}/{runs} within; median ratio {:.3} (vs 1 s avg power {:.3}); kernel {:.3}-{:.3} s",
            median(&ratios),
            median(&ratios_avg),
            durations.iter().copied().fold(f64::INFINITY, f64::min),
            durations.iter().copied().fold(0.0, f64::max)
        ),
    });
    let clocks_ok = clocks
        .iter()
        .all(|c| c.is_finite() && *c >= idle_sm.min(300.0) && *c <= max_sm + 1.0);
    checks.push(Check {
        name: "SM clock between idle and max boost",
        pass: clocks_ok && median(&clocks) > idle_sm,
        detail: format!(
            "idle {idle_sm} MHz, runs {:.0}-{:.0} (median {:.0}), max {max_sm}",
            clocks.iter().copied().fold(f64::INFINITY, f64::min),
            clocks.iter().copied().fold(0.0, f64::max),
            median(&clocks)
        ),
    });
    let last = &temps[temps.len().saturating_sub(5)..];
    let rise = mean(last) - idle_temp;
    checks.push(Check {
        name: "temperature rises under load",
        pass: rise >= 2.0,
        detail: format!(
            "idle {idle_temp} °C -> last runs {:.1} °C (+{rise:.1}); first run {:.0}",
            mean(last),
            temps[0]
        ),
    });
    checks.push(Check {
        name: "throttle reasons readable every run",
        pass: all_ok_reasons,
        detail: format!("{throttled_runs}/{runs} runs flagged throttled"),
    });
    // One reading of every run's conditions (the runs that have it).
    let reading = |name: &str| -> Vec<f64> { rows.iter().filter_map(|r| r["conditions"][name].as_f64()).collect() };
    let mems = reading("mem_clock_mhz");
    checks.push(Check {
        name: "memory clock readable and <= max",
        pass: mems.len() == runs && mems.iter().all(|m| *m > 0.0 && *m <= max_mem + 1.0),
        detail: format!("{:?} MHz (max {max_mem})", mems.first()),
    });
    let powers = reading("power_mw");
    checks.push(Check {
        name: "power readable and <= 1.1 x power limit",
        pass: powers.len() == runs && powers.iter().all(|p| *p > 0.0 && *p <= 1.1 * power_limit_mw),
        detail: format!(
            "median {:.0} W, limit {:.0} W",
            median(&powers) / 1e3,
            power_limit_mw / 1e3
        ),
    });
    checks.push(Check {
        name: "thermal guard active (margin temperature readable)",
        pass: guard.is_active(),
        detail: format!(
            "margin now {:?} °C, cont {} °C, waited {:.1} s in {} pauses",
            device.margin_temperature_c(),
            guard.cont_c(),
            guard.total_wait().as_secs_f64(),
            guard.waits().len()
        ),
    });
    let pairs: Vec<(f64, f64)> = durations.iter().copied().zip(clocks.iter().copied()).collect();
    let r = pearson(&pairs);
    println!("correlation of kernel time with SM clock over {runs} runs: {r:?}");
    println!(
        "idle throttle reasons: {:?}",
        device.throttle_reasons().map(throttle_reason_names)
    );
    println!(
        "NVML reads around a run (begin_run + end_run): median {:.0} us, max {:.0} us",
        median(&overhead_us),
        overhead_us.iter().copied().fold(0.0, f64::max)
    );

    println!("\n{:<62} {:<5} detail", "check", "");
    let mut all = true;
    for c in &checks {
        all &= c.pass;
        println!(
            "{:<62} {:<5} {}",
            c.name,
            if c.pass { "PASS" } else { "FAIL" },
            c.detail
        );
    }
    let fixture = json!({
        "fingerprint": fp,
        "idle": idle,
        "iterations_per_run": iters,
        "seconds_per_run": seconds,
        "runs": rows,
        "time_clock_correlation": r,
        "sampler_overhead_us_median": median(&overhead_us),
        "thermal_waits": guard.waits(),
        "checks": checks.iter().map(|c| json!({"name": c.name, "pass": c.pass, "detail": c.detail})).collect::<Vec<_>>(),
    });
    std::fs::write(&out_path, serde_json::to_string_pretty(&fixture).unwrap())
        .map_err(|e| format!("{out_path}: {e}"))?;
    println!("\nwrote {out_path}; overall {}", if all { "PASS" } else { "FAIL" });
    Ok(all)
}
