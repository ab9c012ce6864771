//! The ncu backend of the run loop: [`bench_ncu`] (and [`Profiler::bench_ncu`]) profile one
//! benchmark under Nsight Compute in relaunch mode.
//!
//! **Parent** (the program as the user started it): [`bench_ncu`] finds ncu, re-runs the
//! program (by default [`std::env::current_exe`] with this process's arguments) under
//! `ncu ... -- <program> <args>` with `KPROF_NCU_CHILD=<benchmark id>`, waits, exports the report
//! to CSV (`ncu --import REP --csv --page raw --print-units base`, `LC_ALL=C`), and parses it by
//! key ([`parse_ncu_csv`](super::parse_ncu_csv)) with the configurations it knows. The
//! `.ncu-rep`, the ncu log and the CSV stay side by side under the output prefix (or the
//! temporary directory) with names from [`report_stem`](super::report_stem), so two benchmarks
//! never overwrite each other's files.
//!
//! **Child** (the same program under ncu, [`is_ncu_child`](super::is_ncu_child)):
//! [`Profiler::new`] does not start the CUPTI activity session (CUPTI must not run while ncu
//! profiles the process); it returns a profiler whose backend only pushes NVTX ranges. Every
//! [`Profiler::bench`] and every [`bench_ncu`] whose id is not `KPROF_NCU_CHILD` returns empty
//! results at once, without GPU work. The matching [`bench_ncu`] runs the usual loop (warm-ups
//! included, but only recorded runs get ranges, so ncu profiles only those), each region inside
//! an NVTX push/pop range named [`range_name`](super::range_name)`(region, 0, config, run)` in
//! the `kprof` domain, and then **exits the process** (status 0, or 1 after printing the error).
//!
//! The benchmark id is `<name>.<k>`, `k` counting the earlier [`bench_ncu`] calls with that name
//! in the process, so parent and child agree as long as the program calls its benchmarks in the
//! same order.
//!
//! The mode comes from [`NcuOptions::mode`](super::NcuOptions::mode), else `KPROF_NCU_MODE`,
//! else the ncu version ([`ModeChoice::choose`]). Attach mode (ncu >= 2026.2.1) is not
//! implemented: `auto` relaunches, an explicit `attach` is an error, and [`NcuRunInfo::mode`]
//! records the mode and the reason.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kprof_core::model::{Config, DeviceInfo, ExtraValue, RawResults};

use super::csv::ImportOptions;
use super::relaunch::{child_target, relaunch_with, report_stem, CHILD_ENV};
use super::version::{ModeChoice, NcuInstall};
use super::{range_name, NcuOptions};
use crate::attribution::{decode_region_key, encode_region_key};
use crate::driver::Driver;
use crate::error::EngineError;
use crate::loader::SearchEnv;
use crate::nvtx::{push_range_cstr, NvtxRange};
use crate::runner::{BenchOptions, CacheControl, ClockControl, Collected, Profiler, Run, Span};

/// `KPROF_NCU_CHILD_TRACE=FILE`: the child appends every NVTX range name it pushes to FILE (one
/// per line), and tolerates a CUDA driver that cannot be loaded. For checking the relaunch
/// protocol without ncu or a GPU.
pub const TRACE_ENV: &str = "KPROF_NCU_CHILD_TRACE";

/// What a [`bench_ncu`] in the parent did, beside the results.
#[derive(Clone, Debug)]
pub struct NcuRunInfo {
    /// The benchmark id passed to the child (`KPROF_NCU_CHILD`).
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

/// Profiles benchmark `name` under ncu (see the module docs). In the parent: returns the results
/// parsed from ncu's report (metric names and units as ncu reports them; samples of call 0).
/// In the child: returns empty results unless this is the selected benchmark, which runs and
/// then exits the process.
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
    *LAST_RUN.lock().unwrap_or_else(|p| p.into_inner()) = Some(NcuRunInfo {
        id,
        install: out.install,
        mode: out.mode,
        report: out.report,
        log: out.log,
        csv: out.csv,
        argv: out.argv,
        wall: out.wall,
        output_tail: out.output_tail,
    });
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
    let mut profiler = child_profiler()?;
    let child_opts = child_options(opts);
    let _armed = arm_child(&child_opts)?;
    profiler.bench(name, configs, &child_opts, f).map(|_| ())
}

// ------------------------------------------------------------------------------------------------
// The child's backend: NVTX ranges only, no CUPTI
// ------------------------------------------------------------------------------------------------

thread_local! {
    static RANGES: RefCell<Vec<Option<NvtxRange>>> = const { RefCell::new(Vec::new()) };
}

pub(crate) struct ChildBackend {
    driver: Option<&'static Driver>,
    epoch: Instant,
    armed: AtomicBool,
    /// Key run indices from here on are warm-up runs (no range).
    warmup_from: AtomicU64,
    trace: Option<Mutex<std::fs::File>>,
}

static CHILD: OnceLock<Arc<ChildBackend>> = OnceLock::new();

fn child_backend() -> Result<Arc<ChildBackend>, EngineError> {
    if let Some(b) = CHILD.get() {
        return Ok(Arc::clone(b));
    }
    let trace_path = std::env::var_os(TRACE_ENV).filter(|v| !v.is_empty());
    let driver = match Driver::load(&SearchEnv::from_process()) {
        Ok(d) => {
            d.ensure_context()?;
            Some(d)
        }
        Err(_) if trace_path.is_some() => None,
        Err(e) => return Err(e),
    };
    let trace = match trace_path {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| EngineError::io(format!("opening {}", PathBuf::from(&p).display()), e))?,
        )),
        None => None,
    };
    let b = Arc::new(ChildBackend {
        driver,
        epoch: Instant::now(),
        armed: AtomicBool::new(false),
        warmup_from: AtomicU64::new(u64::MAX),
        trace,
    });
    Ok(Arc::clone(CHILD.get_or_init(|| b)))
}

/// The profiler of an ncu child ([`Profiler::new`] returns it when `KPROF_NCU_CHILD` is set):
/// NVTX ranges only, no CUPTI.
pub(crate) fn child_profiler() -> Result<Profiler, EngineError> {
    let backend = child_backend()?;
    let mut device = DeviceInfo::default();
    let mut extras = Vec::new();
    if let Some(d) = backend.driver {
        let ordinal = d.current_device()?;
        let props = d.device_info(ordinal)?;
        device.gpu = props.name;
        extras.push(("DeviceOrdinal".to_string(), ExtraValue::Number(ordinal as f64)));
    }
    Ok(Profiler::from_parts(backend, device, extras))
}

/// Whether a bench call in this process must return at once: an ncu child whose selected
/// benchmark is not running now.
pub(crate) fn skip_in_child() -> bool {
    child_target().is_some() && !CHILD.get().is_some_and(|b| b.armed.load(Ordering::SeqCst))
}

/// While alive, the child's bench calls run (the selected benchmark). Dropping it disarms.
#[must_use]
pub struct ChildArmed(());

impl Drop for ChildArmed {
    fn drop(&mut self) {
        if let Some(b) = CHILD.get() {
            b.armed.store(false, Ordering::SeqCst);
            b.warmup_from.store(u64::MAX, Ordering::SeqCst);
        }
    }
}

/// Lets the next bench call of this child run with `opts` (for bindings that run the selected
/// benchmark through [`Profiler::bench`], e.g. Python). Errors outside an ncu child.
pub fn arm_child(opts: &BenchOptions) -> Result<ChildArmed, EngineError> {
    if child_target().is_none() {
        return Err(EngineError::Unsupported(format!(
            "arm_child is for a program running under ncu with {CHILD_ENV} set"
        )));
    }
    let b = child_backend()?;
    b.warmup_from.store(opts.max_runs() as u64, Ordering::SeqCst);
    b.armed.store(true, Ordering::SeqCst);
    Ok(ChildArmed(()))
}

impl crate::runner::Backend for ChildBackend {
    fn timestamp_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    fn thread_id(&self) -> u64 {
        0
    }
    fn encode_key(&self, _call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        // One benchmark call per child: every range carries call 0, which the parent maps back.
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        encode_region_key(0, c(config), c(run), c(region))
    }
    fn enter(&self, key: u64, name: &str) -> Result<(), EngineError> {
        let k = decode_region_key(key);
        let range = if (k.run as u64) < self.warmup_from.load(Ordering::SeqCst) {
            let full = range_name(name, 0, k.config, k.run);
            if let Some(t) = &self.trace {
                let mut f = t.lock().unwrap_or_else(|p| p.into_inner());
                writeln!(f, "{full}").map_err(|e| EngineError::io("writing the ncu child trace", e))?;
            }
            let c = CString::new(full).map_err(|_| EngineError::RegionMisuse(format!("{name:?} contains NUL")))?;
            Some(push_range_cstr(c))
        } else {
            None
        };
        RANGES.with(|r| r.borrow_mut().push(range));
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        RANGES.with(|r| drop(r.borrow_mut().pop()));
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        match self.driver {
            Some(d) => {
                d.ensure_context()?;
                d.synchronize()
            }
            None => Ok(()),
        }
    }
    fn flush_l2(&self) -> Result<(), EngineError> {
        Ok(())
    }
    fn collect(&self, _spans: &[Span]) -> Result<Collected, EngineError> {
        Ok(Collected::default())
    }
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
