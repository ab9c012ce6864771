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

#[path = "../../../../crates/kprof/examples/common/mod.rs"]
mod common;

mod bench;
mod checks;
mod cli;
mod json;
mod kernels;
mod ncu_compare;
mod printing;
mod results;
mod steps;

use bench::{bench_cupti, bench_events, bench_under_ncu, events_rows, with_l2_flush};
use checks::{Check, Status};
use cli::{Args, Mode};
use common::BoxError;
use json::results_json;
use kprof::runner::Profiler;
use printing::{print_checks, report};
use results::{Bound, LabelResults};
use steps::Workload;

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
