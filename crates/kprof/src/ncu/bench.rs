//! The ncu backend of the run loop: [`bench_ncu`] (and [`Profiler::bench_ncu`]) profile one
//! benchmark under Nsight Compute in relaunch mode: the parent re-runs the program under ncu and
//! reads its report, the child runs only the selected benchmark inside kprof's NVTX ranges
//! ([`bench_ncu`] has the protocol). The child's backend and its arming ([`arm_child`],
//! [`ChildArmed`], [`TRACE_ENV`], re-exported here) live in `runner/ncu_child.rs`, so that the
//! runner does not import this module. What users see: `docs/backends.md`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use kprof_core::model::{Config, RawResults};

use super::csv::ImportOptions;
use super::relaunch::{child_target, relaunch_with, report_stem, CHILD_ENV};
use super::version::{ModeChoice, NcuInstall};
use super::NcuOptions;
use crate::error::EngineError;
pub use crate::runner::ncu_child::{arm_child, ChildArmed, TRACE_ENV};
use crate::runner::{BenchOptions, CacheControl, ClockControl, Profiler, Run};

/// What one run under ncu did, beside the results: of a [`relaunch_with`] (in its
/// [`RunOutput`](super::RunOutput)), and of the last [`bench_ncu`] in the parent ([`last_run`]).
#[derive(Clone, Debug)]
pub struct NcuRunInfo {
    /// The benchmark id passed to the child (`KPROF_NCU_CHILD`; empty when none was).
    pub id: String,
    /// The ncu that ran, with its version.
    pub install: NcuInstall,
    /// The mode used (always relaunch today: attach is not implemented) and why.
    pub mode: ModeChoice,
    /// The `.ncu-rep` report (kept).
    pub report: PathBuf,
    /// ncu's log.
    pub log: PathBuf,
    /// The exported CSV.
    pub csv: PathBuf,
    /// The ncu arguments (after the executable).
    pub argv: Vec<OsString>,
    /// Wall time of the profiled child run (without the export).
    pub wall: Duration,
    /// The last lines of the child's output.
    pub output_tail: String,
}

static LAST_RUN: Mutex<Option<NcuRunInfo>> = Mutex::new(None);
static CALLS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

/// What the last [`bench_ncu`] of this process (in the parent) did.
pub fn last_run() -> Option<NcuRunInfo> {
    LAST_RUN.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The next benchmark id for `name`: `<name>.<k>`.
pub fn next_benchmark_id(name: &str) -> String {
    let mut calls = CALLS.lock().unwrap_or_else(|p| p.into_inner());
    let k = calls
        .get_or_insert_with(HashMap::new)
        .entry(name.to_string())
        .or_insert(0);
    let id = format!("{name}.{k}");
    *k += 1;
    id
}

/// Where the program is relaunched from and where its files go.
#[derive(Clone, Debug, Default)]
pub struct Relaunch {
    /// The program and its arguments; `None`: [`std::env::current_exe`] and this process's
    /// arguments.
    pub program: Option<(OsString, Vec<OsString>)>,
    /// Extra environment variables for the child.
    pub env: Vec<(OsString, OsString)>,
    /// The module or source path the report name is derived from (default: the program path).
    pub module: Option<String>,
    /// The ncu executable; `None`: found by [`NcuInstall::detect`] (`KPROF_NCU`, `PATH`, ...).
    pub ncu: Option<PathBuf>,
}

/// The effective ncu options for a benchmark: the [`BenchOptions`] cache and clock control win
/// when set away from their defaults, the metrics of `opts` are used when given.
pub fn effective_options(opts: &BenchOptions, ncu: &NcuOptions) -> NcuOptions {
    let mut n = ncu.clone();
    if opts.cache == CacheControl::None {
        n.cache_control = super::CacheControl::None;
    }
    if opts.clock == ClockControl::Base {
        n.clock_control = super::ClockControl::Base;
    }
    if !opts.metrics.is_empty() {
        n.metrics = opts.metrics.clone();
    }
    n
}

/// Checks the options that cannot be honoured under ncu.
fn check_options(opts: &BenchOptions) -> Result<(), EngineError> {
    if opts.policy.is_some() {
        return Err(EngineError::Unsupported(
            "adaptive stopping (a StoppingPolicy) needs the values while the loop runs; under ncu \
             they are known only after the child has finished. Give a fixed number of runs with \
             the ncu backend"
                .into(),
        ));
    }
    if !opts.ignore_kernels.is_empty() {
        return Err(EngineError::Unsupported(
            "ignore_kernels is not supported by the ncu backend yet; narrow the NVTX regions \
             instead, or use the CUPTI backend"
                .into(),
        ));
    }
    if opts.runs == 0 {
        return Err(EngineError::InvalidOption("runs must be at least 1".into()));
    }
    Ok(())
}

/// The report path for a benchmark: `<prefix><stem>.ncu-rep` (a prefix that is a directory or
/// ends in `/` puts it inside), else `<tmp>/kprof-ncu/<stem>.ncu-rep`.
pub fn report_path(prefix: Option<&Path>, module: &str, name: &str, k: u32) -> PathBuf {
    let stem = report_stem(module, name, k);
    match prefix {
        Some(p) => {
            let s = p.as_os_str().to_string_lossy();
            if p.is_dir() || s.ends_with('/') {
                p.join(format!("{stem}.ncu-rep"))
            } else {
                PathBuf::from(format!("{s}{stem}.ncu-rep"))
            }
        }
        None => std::env::temp_dir().join("kprof-ncu").join(format!("{stem}.ncu-rep")),
    }
}

/// Profiles benchmark `name` under ncu in relaunch mode. In the parent: returns the results
/// parsed from ncu's report (metric names and units as ncu reports them; samples of the first
/// benchmark call). In the child: returns empty results unless this is the selected benchmark,
/// which runs and then exits the process.
///
/// **Parent** (the program as the user started it): finds ncu, re-runs the program (by default
/// [`std::env::current_exe`] with this process's arguments) under `ncu ... -- <program> <args>`
/// with `KPROF_NCU_CHILD=<benchmark id>`, waits, exports the report to CSV
/// (`ncu --import REP --csv --page raw --print-units base`, `LC_ALL=C`), and parses it by key
/// ([`parse_ncu_csv`](super::parse_ncu_csv)) with the configurations it knows. The `.ncu-rep`,
/// the ncu log and the CSV stay side by side under the output prefix (or the temporary
/// directory) with names from [`report_stem`], so two benchmarks never
/// overwrite each other's files.
///
/// **Child** (the same program under ncu, [`is_ncu_child`](super::is_ncu_child)):
/// [`Profiler::new`] does not start the CUPTI activity session (CUPTI must not run while ncu
/// profiles the process); its backend only pushes NVTX ranges. Every [`Profiler::bench`] and
/// every `bench_ncu` whose id is not `KPROF_NCU_CHILD` returns empty results at once, without
/// GPU work. The matching `bench_ncu` runs the usual loop (warm-ups included, but only recorded
/// runs get ranges, so ncu profiles only those), each region inside an NVTX push/pop range named
/// [`range_name`](super::range_name)`(region, 0, config, run)` in the `kprof` domain, and then
/// **exits the process** (status 0, or 1 after printing the error).
///
/// The benchmark id is `<name>.<k>`, `k` counting the earlier `bench_ncu` calls with that name
/// in the process, so parent and child agree as long as the program calls its benchmarks in the
/// same order. The mode comes from [`NcuOptions::mode`](super::NcuOptions::mode), else
/// `KPROF_NCU_MODE`, else the ncu version ([`ModeChoice::choose`]); [`NcuRunInfo::mode`] records
/// the mode and the reason.
pub fn bench_ncu<F>(
    name: &str,
    configs: &[Config],
    opts: &BenchOptions,
    ncu: &NcuOptions,
    relaunch: &Relaunch,
    f: F,
) -> Result<RawResults, EngineError>
where
    F: FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
{
    check_options(opts)?;
    let id = next_benchmark_id(name);
    if let Some(target) = child_target() {
        if target != id {
            return Ok(RawResults::new());
        }
        let code = match run_child(name, configs, opts, f) {
            Ok(()) => 0,
            Err(e) => {
                // stderr: the ncu child's last words before it exits; the parent shows them from
                // the child's output (`output_tail`), the only channel back.
                eprintln!("kprof: the ncu child of benchmark {id:?} failed: {e}");
                1
            }
        };
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        std::process::exit(code);
    }
    let k: u32 = id.rsplit_once('.').and_then(|(_, k)| k.parse().ok()).unwrap_or(0);
    let install = match &relaunch.ncu {
        Some(p) => NcuInstall::at(p.clone())?,
        None => NcuInstall::detect()?,
    };
    let (program, args) = match &relaunch.program {
        Some((p, a)) => (p.clone(), a.clone()),
        None => {
            let exe =
                std::env::current_exe().map_err(|e| EngineError::io("finding this program to run it under ncu", e))?;
            (exe.into_os_string(), std::env::args_os().skip(1).collect())
        }
    };
    let module = relaunch
        .module
        .clone()
        .unwrap_or_else(|| program.to_string_lossy().into_owned());
    let mut n = effective_options(opts, ncu);
    n.report_path = Some(report_path(opts.output_prefix.as_deref(), &module, name, k));
    n.log_file = None;
    n.force_overwrite = true;
    let mut env = relaunch.env.clone();
    env.push((CHILD_ENV.into(), id.clone().into()));
    let import = ImportOptions {
        benchmark: name.to_string(),
        call_names: vec![name.to_string()],
        configs: if configs.is_empty() {
            vec![Config::new()]
        } else {
            configs.to_vec()
        },
        metrics: (!n.metrics.is_empty()).then(|| n.metrics.clone()),
        reducer: opts.combine.clone(),
        ..ImportOptions::default()
    };
    let out = relaunch_with(&install, &n, &program, &args, &env, &import)?;
    let raw = out.raw;
    if let Some(prefix) = &opts.output_prefix {
        let path = crate::runner::raw_csv_path(prefix, name);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
        }
        kprof_core::io::write_raw_csv(&path, &raw).map_err(EngineError::Results)?;
    }
    debug_assert_eq!(out.info.id, id, "the child's id is the one passed in its environment");
    *LAST_RUN.lock().unwrap_or_else(|p| p.into_inner()) = Some(out.info);
    Ok(raw)
}

impl NcuRunInfo {
    /// `ncu 2025.3.1.0 in relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)`.
    pub fn summary(&self) -> String {
        self.mode.summary(self.install.version)
    }
}

impl Profiler {
    /// [`bench_ncu`] with the program relaunched as it was started ([`Relaunch::default`]).
    /// The profiler itself is not used in the parent (ncu profiles the child); in the child it
    /// is the NVTX-only profiler that [`Profiler::new`] returns there.
    pub fn bench_ncu<F>(
        &mut self,
        name: &str,
        configs: &[Config],
        opts: &BenchOptions,
        ncu: &NcuOptions,
        f: F,
    ) -> Result<RawResults, EngineError>
    where
        F: FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
    {
        bench_ncu(name, configs, opts, ncu, &Relaunch::default(), f)
    }
}

/// The loop options in the child: no L2 flush by kprof (ncu's `--cache-control` does it), no
/// clock or metric options (ncu's), no files (the parent writes them).
pub fn child_options(opts: &BenchOptions) -> BenchOptions {
    BenchOptions {
        cache: CacheControl::None,
        clock: ClockControl::None,
        metrics: Vec::new(),
        policy: None,
        output_prefix: None,
        ignore_kernels: Vec::new(),
        ..opts.clone()
    }
}

fn run_child<F>(name: &str, configs: &[Config], opts: &BenchOptions, f: F) -> Result<(), EngineError>
where
    F: FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
{
    let mut profiler = Profiler::for_ncu_child()?;
    let child_opts = child_options(opts);
    let _armed = arm_child(&child_opts)?;
    profiler.bench(name, configs, &child_opts, f).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_per_name() {
        assert_eq!(next_benchmark_id("unit_ids_a"), "unit_ids_a.0");
        assert_eq!(next_benchmark_id("unit_ids_b"), "unit_ids_b.0");
        assert_eq!(next_benchmark_id("unit_ids_a"), "unit_ids_a.1");
    }

    #[test]
    fn bench_options_map_onto_ncu_options() {
        let ncu = NcuOptions::default();
        let n = effective_options(&BenchOptions::default(), &ncu);
        assert_eq!(n, ncu);
        let o = BenchOptions {
            cache: CacheControl::None,
            clock: ClockControl::Base,
            metrics: vec!["dram__bytes_read.sum".into()],
            ..BenchOptions::default()
        };
        let n = effective_options(&o, &ncu);
        assert_eq!(n.cache_control, super::super::CacheControl::None);
        assert_eq!(n.clock_control, super::super::ClockControl::Base);
        assert_eq!(n.metrics, vec!["dram__bytes_read.sum".to_string()]);
        let c = child_options(&o);
        assert_eq!(
            (c.cache, c.clock, c.metrics.len()),
            (CacheControl::None, ClockControl::None, 0)
        );
        c.validate().unwrap();
    }

    #[test]
    fn unsupported_options_are_named() {
        let o = BenchOptions {
            ignore_kernels: vec!["k".into()],
            ..BenchOptions::default()
        };
        assert!(check_options(&o).unwrap_err().to_string().contains("ignore_kernels"));
    }

    #[test]
    fn report_paths_follow_the_prefix() {
        let p = report_path(Some(Path::new("/x/run-")), "bench.py", "f", 0);
        assert!(p.to_string_lossy().starts_with("/x/run-bench.f-0-"), "{}", p.display());
        let p = report_path(Some(Path::new("/x/")), "bench.py", "f", 1);
        assert!(p.to_string_lossy().starts_with("/x/bench.f-1-"), "{}", p.display());
        assert!(p.to_string_lossy().ends_with(".ncu-rep"));
        assert_ne!(report_path(None, "a/b.py", "f", 0), report_path(None, "a_b.py", "f", 0));
    }
}
