//! Benchmarking: each mode's bench calls (CUDA events, in-process CUPTI, under ncu).

use std::path::{Path, PathBuf};
use std::time::Instant;

use kprof::conditions::ThermalOptions;
use kprof::ncu::{NcuError, NcuOptions};
use kprof::runner::{BenchOptions, DurationSource, Profiler, ReplayMode};
use kprof::EngineError;

use crate::checks::{is_ncu, Check, Status};
use crate::cli::Mode;
use crate::common::BoxError;
use crate::results::LabelResults;
use crate::steps::{Step, Workload};
use crate::{DURATION, EVENTS_LABEL, EVENTS_METRIC, REGIONS};

/// Runs `f` with `KPROF_L2_FLUSH=method`, then restores the variable.
pub(crate) fn with_l2_flush<T>(method: &str, f: impl FnOnce() -> T) -> T {
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
pub(crate) fn bench_cupti(
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
pub(crate) fn bench_events(work: &mut Workload, out_dir: &Path) -> Result<LabelResults, BoxError> {
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
pub(crate) fn events_rows(events: &LabelResults, labels: &[(String, LabelResults)]) -> Vec<Check> {
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
pub(crate) fn bench_under_ncu(
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
