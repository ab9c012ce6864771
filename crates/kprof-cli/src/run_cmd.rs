//! `kprof run [OPTIONS] -- COMMAND ARGS...`: profiles an unmodified CUDA program. The command runs
//! with `libkprof_inject.so` injected (found as [`crate::inject_lib`] says) and one [`RunSpec`] per
//! execution in `KPROF_RUN_SPEC` ([`kprof::run_spec`]); kprof then merges the process files of every
//! process and execution ([`merge`], [`join_counters`], [`crate::run_ranks`]), writes `raw.csv`,
//! `processed.csv` and `time-split.json` ([`crate::run_split`]) into `--out`, and prints the table.
//! The plan of executions is [`plan`]; `--gpus` spreads it over GPUs (`queue`, `gpus`).
//!
//! Options, durations, counters, exit codes and Ctrl-C, as users see them: `docs/kprof-run.md`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use kprof::choices::{Attribution, GraphTrace, KernelTrace};
use kprof::counters::ReplayMode;
use kprof::run_spec::{CounterSpec, GroupBy, NvtxNesting, RunSpec, DEFAULT_COUNTER_RANGES};
use kprof::runner::DurationSource;
use kprof_core::display::render_processed;
use kprof_core::durations;
use kprof_core::io::{self, ReadOptions};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::{Config, ParamValue, RawResults, DEFAULT_METRIC};

pub use crate::inject_lib::{ENV_INJECT_PATH, INJECT_LIB};
const INJECTION_VARS: [&str; 2] = ["CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"];

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupByArg {
    /// NVTX ranges; kernels outside ranges by kernel name.
    Nvtx,
    /// Every kernel by its name.
    Kernel,
    /// NVTX ranges and every kernel by its name.
    Both,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum NestingArg {
    /// A range's row holds every kernel launched while it was open, nested ranges (a library's
    /// own included) too; rows named `outer/inner`, their own time in `SelfNs`.
    Inclusive,
    /// Every kernel counts once, in the innermost range open at its launch.
    Innermost,
}

impl From<NestingArg> for NvtxNesting {
    fn from(n: NestingArg) -> NvtxNesting {
        match n {
            NestingArg::Inclusive => NvtxNesting::Inclusive,
            NestingArg::Innermost => NvtxNesting::Innermost,
        }
    }
}

impl From<GroupByArg> for GroupBy {
    fn from(g: GroupByArg) -> GroupBy {
        match g {
            GroupByArg::Nvtx => GroupBy::Nvtx,
            GroupByArg::Kernel => GroupBy::Kernel,
            GroupByArg::Both => GroupBy::Both,
        }
    }
}

/// Set in the counter launch (to the comma-separated metrics) for the profiled program, so that a
/// program that times itself can tell (kernel replay makes its own timings meaningless). The
/// injection library does not read it (it reads the run spec).
pub const ENV_COUNTER_LAUNCH_METRICS: &str = "KPROF_RUN_METRICS";

/// Overrides the kernels per counter-data image of the counter launch (default
/// [`DEFAULT_COUNTER_RANGES`]); a positive number.
pub const ENV_COUNTER_RANGES: &str = "KPROF_RUN_COUNTER_RANGES";

/// The kernels per counter-data image: `value` (of `KPROF_RUN_COUNTER_RANGES`) when set and not
/// blank, else [`DEFAULT_COUNTER_RANGES`].
pub fn counter_ranges(value: Option<&str>) -> Result<usize> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(DEFAULT_COUNTER_RANGES),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("{ENV_COUNTER_RANGES}={v:?} is not a positive number of ranges"),
        },
    }
}

/// The run spec of one execution: the options of `kprof run`, the execution's folder, and, for
/// a counter launch, the counter metrics and the kernels per counter-data image.
pub fn run_spec(args: &RunArgs, benchmark: &str, dir: &Path, counters: Option<(&[String], usize)>) -> RunSpec {
    RunSpec {
        output: Some(dir.to_path_buf()),
        benchmark: Some(benchmark.to_string()),
        group_by: args.group_by.into(),
        nvtx_nesting: args.nvtx_nesting.into(),
        nvtx_include: args.nvtx_include.clone(),
        nvtx_exclude: args.nvtx_exclude.clone(),
        verbose: args.verbose,
        counters: counters.map(|(metrics, ranges)| CounterSpec {
            metrics: metrics.to_vec(),
            replay_mode: ReplayMode::Kernel,
            ranges_per_image: ranges,
        }),
        kernel_trace: args.kernel_trace,
        graph_trace: args.graph_trace,
        attribution: args.attribution,
        trace: args.trace.is_some() && counters.is_none(),
        ..RunSpec::default()
    }
}

/// Why `--replay-mode range` is refused.
pub const RANGE_REPLAY_UNAVAILABLE: &str = "range replay is not available for `kprof run` (nor application \
     replay): every replay pass would need its own launch of the whole program, which `kprof run` does not do; use \
     `--replay-mode kernel`, or the in-process API (Python `replay_mode=\"range\"` or `\"application\"`)";

/// Parses `--replay-mode` with [`ReplayMode`]'s `FromStr` (the one parser of the option); only
/// kernel replay is available here.
pub fn parse_replay_mode(s: &str) -> Result<ReplayMode, String> {
    match s.trim().parse::<ReplayMode>() {
        Ok(ReplayMode::Kernel) => Ok(ReplayMode::Kernel),
        Ok(ReplayMode::User | ReplayMode::Application) => Err(RANGE_REPLAY_UNAVAILABLE.to_string()),
        Err(e) => Err(format!(
            "unknown replay mode {:?} for --replay-mode; use kernel (the only mode `kprof run` offers)",
            e.value
        )),
    }
}

/// Parses a choice (`--kernel-trace`, `--graph-trace`, `--durations`) with its one `FromStr`.
fn parse_choice<T: std::str::FromStr<Err = kprof::choices::InvalidOptionValue>>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|e: kprof::choices::InvalidOptionValue| e.to_string())
}

/// Which launches of the command one repetition starts, from `--metrics` and `--durations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launches {
    /// A timing launch (kernel records, no kernel replay) in the plan.
    pub timing: bool,
    /// A counter launch (the Range Profiler in kernel replay).
    pub counters: bool,
    /// The counter launch collects `gpu__time_duration.sum` (the durations of a repetition
    /// without a timing launch).
    pub counter_durations: bool,
    /// A timing launch follows a counter launch that saw kernels of CUDA graphs.
    pub timing_for_graphs: bool,
}

impl Launches {
    /// The launches for `metrics` (the counter metrics, without the durations) and `durations`.
    pub fn of(metrics: &[String], durations: DurationSource) -> Launches {
        let with_counters = !metrics.is_empty();
        match durations {
            DurationSource::Records => Launches {
                timing: true,
                counters: with_counters,
                counter_durations: false,
                timing_for_graphs: false,
            },
            DurationSource::Counters => Launches {
                timing: false,
                counters: true,
                counter_durations: true,
                timing_for_graphs: false,
            },
            DurationSource::Auto => Launches {
                timing: !with_counters,
                counters: with_counters,
                counter_durations: with_counters,
                timing_for_graphs: with_counters,
            },
        }
    }

    /// The metrics of the counter launch: `metrics`, then `gpu__time_duration.sum` when the
    /// durations come from it; empty without a counter launch.
    pub fn counter_launch_metrics(&self, metrics: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        if self.counters {
            out.extend(metrics.iter().cloned());
            if self.counter_durations {
                out.push(DEFAULT_METRIC.to_string());
            }
        }
        out
    }
}

/// Whether a counter launch's status files report CUDA graph launches (their kernels' records,
/// or graph-level records).
fn saw_graphs(statuses: &[serde_json::Value]) -> bool {
    statuses.iter().any(|s| {
        ["graph_kernels", "graph_launches"]
            .iter()
            .any(|k| s["counters"][*k].as_u64().unwrap_or(0) > 0)
    })
}

/// `raw` without its `gpu__time_duration.sum` samples (a counter launch's, when a timing launch
/// gives the durations).
fn without_durations(raw: &RawResults) -> Result<RawResults> {
    let mut out = RawResults::new();
    for (i, s) in raw.samples.iter().enumerate() {
        let series = raw.series_of(s);
        if series.key.metric != DEFAULT_METRIC {
            out.push_from(raw, i, raw.config_of(series), s.run, |_| true)?;
        }
    }
    Ok(out)
}

/// Arguments of `kprof run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Directory for raw.csv, processed.csv and the per-process files (procs/).
    #[arg(long, default_value = "kprof-run")]
    pub out: PathBuf,
    /// Also store the results as one run of a results store (`--store` alone: $KPROF_STORE,
    /// else kprof.db); see docs/store.md.
    #[arg(long, value_name = "DB")]
    #[allow(clippy::option_option)]
    pub store: Option<Option<PathBuf>>,
    /// Run the command this many times.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Run once per value with the environment variable set: `VAR=v1,v2,...`.
    #[arg(long, value_name = "VAR=v1,v2")]
    pub env_sweep: Option<String>,
    /// Run the executions on these GPUs in parallel, one worker per GPU taking them from one
    /// queue, each with CUDA_VISIBLE_DEVICES set to its GPU: `all`, or ordinals such as `0,2`.
    #[arg(long, value_name = "all|0,2")]
    pub gpus: Option<String>,
    /// Keep only NVTX ranges matching this (name, `domain@name`, or a prefix ending in `*`); repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub nvtx_include: Vec<String>,
    /// Drop NVTX ranges matching this; repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub nvtx_exclude: Vec<String>,
    /// How kernels become annotations.
    #[arg(long, value_enum, default_value = "nvtx")]
    pub group_by: GroupByArg,
    /// How the kernels of nested NVTX ranges count: inclusive (every kernel launched while a
    /// range was open, rows named by their path `outer/inner`) or innermost (each kernel once).
    #[arg(long, value_enum, default_value = "inclusive")]
    pub nvtx_nesting: NestingArg,
    /// Benchmark name (default: the command's name, or the script's for `python script.py`).
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Do not print the table.
    #[arg(long)]
    pub quiet: bool,
    /// Print the processed table as JSON instead.
    #[arg(long)]
    pub json: bool,
    /// Let the injection library report on stderr (the run spec's `verbose`).
    #[arg(long)]
    pub verbose: bool,
    /// Also write the timing launches' timeline here as Chrome trace-event JSON (Perfetto,
    /// chrome://tracing): kernels on their GPU and stream, NVTX ranges on their thread.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Hardware counter metrics (ncu names) to collect in a counter launch of every repetition;
    /// ncu section and set names (SpeedOfLight, basic, ...) stand for their metrics.
    #[arg(long, value_delimiter = ',', value_name = "M1,M2")]
    pub metrics: Vec<String>,
    /// Where durations come from: auto (the counter launch's gpu__time_duration.sum with
    /// --metrics, plus a timing launch when the program runs CUDA graphs; else the kernel records
    /// of one timing launch), counters (always the counters: a counter launch), records (always
    /// the kernel records of a timing launch, besides any counter launch).
    #[arg(long, value_name = "SOURCE", default_value = "auto", value_parser = parse_choice::<DurationSource>)]
    pub durations: DurationSource,
    /// How counter passes are replayed: kernel (the only mode `kprof run` offers).
    #[arg(long, value_name = "MODE", default_value = "kernel", value_parser = parse_replay_mode)]
    pub replay_mode: ReplayMode,
    /// How CUPTI records the command's kernels: concurrent (default) or serial (the run spec's
    /// `kernel_trace`; KPROF_KERNEL_TRACE, when set, overrides it).
    #[arg(long, value_name = "MODE", default_value = "concurrent", value_parser = parse_choice::<KernelTrace>)]
    pub kernel_trace: KernelTrace,
    /// How CUDA graph launches are timed: graph (default with concurrent kernel records) or nodes
    /// (the run spec's `graph_trace`; KPROF_GRAPH_TRACE, when set, overrides it).
    #[arg(long, value_name = "MODE", value_parser = parse_choice::<GraphTrace>)]
    pub graph_trace: Option<GraphTrace>,
    /// How kernels are attributed to NVTX ranges: order (default: the innermost range open when
    /// the kernel was launched, on any thread; no launch API records) or records (launch API
    /// records: exact per thread, 0.2-0.5 us more per launch). The run spec's `attribution`;
    /// KPROF_ATTRIBUTION, when set, overrides it.
    #[arg(long, value_name = "MODE", default_value = "order", value_parser = parse_choice::<Attribution>)]
    pub attribution: Attribution,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// An `--env-sweep VAR=v1,v2`: the variable and its values.
pub type EnvSweep = (String, Vec<String>);

/// Parses `VAR=v1,v2`.
pub fn parse_env_sweep(s: &str) -> Result<EnvSweep> {
    let Some((var, values)) = s.split_once('=') else {
        bail!("--env-sweep must look like VAR=v1,v2 (got {s:?})");
    };
    let var = var.trim();
    if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("--env-sweep: {var:?} is not an environment variable name");
    }
    let values: Vec<String> = values.split(',').map(|v| v.to_string()).collect();
    if values.iter().all(|v| v.is_empty()) {
        bail!("--env-sweep {var}= needs at least one value");
    }
    Ok((var.to_string(), values))
}

/// Finds libkprof_inject.so: `KPROF_INJECT_PATH`, else next to the kprof executable (or in
/// `../lib` of its directory), else the folders the Python package registered, else the copy
/// built into a release executable (see [`crate::inject_lib`]).
pub fn find_inject_lib(explicit: Option<PathBuf>, exe: Option<PathBuf>) -> Result<PathBuf> {
    crate::inject_lib::find(
        explicit,
        exe,
        &crate::inject_lib::search_dirs(),
        crate::inject_lib::embedded(),
        &crate::inject_lib::cache_roots(|v| std::env::var(v).ok()),
    )
}

/// Refuses to run when another tool (ncu, nsys) already injects itself.
pub fn check_foreign_injection(get: impl Fn(&str) -> Option<String>, ours: &Path) -> Result<()> {
    for var in INJECTION_VARS {
        if let Some(v) = get(var).filter(|v| !v.is_empty()) {
            if Path::new(&v) != ours {
                bail!(
                    "{var} is already set ({v}): another profiler (Nsight Compute or Nsight Systems) is \
                     injecting itself into this process tree; kprof run cannot run under it. Run \
                     `kprof run` outside ncu/nsys, or unset {var}"
                );
            }
        }
    }
    Ok(())
}

/// The default benchmark name: the script's stem for `python[3] [-u] script.py` (also
/// `python -m torch.distributed.run ... script.py`) and `torchrun ... script.py`, else the
/// command's file name.
pub fn benchmark_name(command: &[OsString]) -> String {
    let base = |p: &OsString| {
        Path::new(p)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let Some(first) = command.first() else {
        return "program".into();
    };
    let name = base(first);
    if name.starts_with("python") || name == "torchrun" {
        if let Some(script) = command[1..].iter().find(|a| a.to_string_lossy().ends_with(".py")) {
            return base(script);
        }
    }
    name
}

/// One execution of the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub sweep: Option<(String, String)>,
    pub repeat: u32,
    /// The counter launch of this repetition (`--metrics`), after its timing launch.
    pub counters: bool,
    /// Per-process files of this execution, relative to `--out`.
    pub dir: PathBuf,
}

/// The line `kprof run` prints before each of several executions (`--repeat`, `--env-sweep`,
/// `--metrics`): `kprof run: execution 2/6 (repetition 2/3, N=1024, counters)`, then `, GPU 1`
/// with `--gpus`.
pub fn progress_line(index: usize, total: usize, inv: &Invocation, gpu: Option<&gpus::Gpu>) -> String {
    let mut what = vec![format!("repetition {}", inv.repeat + 1)];
    if let Some((name, value)) = &inv.sweep {
        what.push(format!("{name}={value}"));
    }
    if inv.counters {
        what.push("counters".into());
    }
    if let Some(g) = gpu {
        what.push(format!("GPU {}", g.visible));
    }
    format!("kprof run: execution {}/{total} ({})", index + 1, what.join(", "))
}

/// Every execution, sweep values outermost; each repetition's timing launch (when
/// `launches.timing`) is followed by its counter launch (when `launches.counters`; files in
/// `<rep>-counters`). A timing launch that a counter launch's CUDA graphs call for is added while
/// running ([`Invocation::timing_after`]).
pub fn plan(sweep: Option<&(String, Vec<String>)>, repeat: u32, launches: Launches) -> Vec<Invocation> {
    let values: Vec<Option<(String, String)>> = match sweep {
        None => vec![None],
        Some((var, vals)) => vals.iter().map(|v| Some((var.clone(), v.clone()))).collect(),
    };
    let mut out = Vec::new();
    for (i, s) in values.into_iter().enumerate() {
        for k in 0..repeat {
            let dir = PathBuf::from("procs").join(match &s {
                Some(_) => format!("sweep{i}-rep{k}"),
                None => format!("rep{k}"),
            });
            let timing = Invocation {
                sweep: s.clone(),
                repeat: k,
                counters: false,
                dir,
            };
            if launches.counters {
                let counters = Invocation {
                    counters: true,
                    dir: counter_dir(&timing.dir),
                    ..timing.clone()
                };
                if launches.timing {
                    out.push(timing);
                }
                out.push(counters);
            } else {
                out.push(timing);
            }
        }
    }
    out
}

/// The folder of a repetition's counter launch: its timing launch's with `-counters`.
fn counter_dir(timing_dir: &Path) -> PathBuf {
    let mut name = timing_dir.as_os_str().to_os_string();
    name.push("-counters");
    PathBuf::from(name)
}

impl Invocation {
    /// The timing launch of a counter launch's repetition (its folder without `-counters`).
    pub fn timing_after(&self) -> Invocation {
        let dir = self.dir.to_string_lossy();
        Invocation {
            counters: false,
            dir: PathBuf::from(dir.strip_suffix("-counters").unwrap_or(&dir).to_string()),
            ..self.clone()
        }
    }
}

/// Merges per-process raw results: every part adds the sweep parameter to the configuration and
/// shifts its runs after the ones already merged for the same series.
pub fn merge(parts: &[(Option<(String, String)>, RawResults)]) -> Result<RawResults> {
    let mut out = RawResults::new();
    let mut next_run: std::collections::HashMap<(String, String, Config, String), u32> = Default::default();
    for (sweep, raw) in parts {
        let mut max_run: std::collections::HashMap<(String, String, Config, String), u32> = Default::default();
        for (i, s) in raw.samples.iter().enumerate() {
            let series = raw.series_of(s);
            let mut config = raw.config_of(series).clone();
            if let Some((var, val)) = sweep {
                config.params.push((var.clone(), ParamValue::infer(val)));
            }
            let k = (
                series.key.benchmark.clone(),
                series.key.annotation.clone(),
                config.clone(),
                series.key.metric.clone(),
            );
            let offset = next_run.get(&k).copied().unwrap_or(0);
            let run = offset + s.run;
            let e = max_run.entry(k).or_insert(run);
            *e = (*e).max(run);
            out.push_from(raw, i, &config, run, |_| true)?;
        }
        for (k, m) in max_run {
            next_run.insert(k, m + 1);
        }
    }
    Ok(out)
}

/// Joins the counter launches' samples to the timing launches' (each already merged with
/// [`merge`]): both are keyed by (benchmark, region, configuration, run), the run being the
/// region occurrence's index over the repetitions, so one table holds both tiers. Returns
/// warnings for regions whose occurrences differ between the two launches (a program that does
/// not repeat its work); their counter runs then do not describe the same occurrences.
pub fn join_counters(timing: &RawResults, counters: &RawResults) -> Result<(RawResults, Vec<String>)> {
    let mut out = timing.clone();
    out.extend_from(counters)?;
    type Key = (String, String, Config);
    let runs_of = |raw: &RawResults, timing_metric: bool| {
        let mut m: std::collections::HashMap<Key, std::collections::HashSet<u32>> = Default::default();
        for s in &raw.samples {
            let series = raw.series_of(s);
            if (series.key.metric == DEFAULT_METRIC) != timing_metric {
                continue;
            }
            let k = (
                series.key.benchmark.clone(),
                series.key.annotation.clone(),
                raw.config_of(series).clone(),
            );
            m.entry(k).or_default().insert(s.run);
        }
        m
    };
    let t = runs_of(timing, true);
    let c = runs_of(counters, false);
    let sorted = |m: &std::collections::HashMap<Key, std::collections::HashSet<u32>>| {
        let mut v: Vec<(Key, usize)> = m.iter().map(|(k, r)| (k.clone(), r.len())).collect();
        v.sort_by(|a, b| (&a.0 .0, &a.0 .1, a.0 .2.to_string()).cmp(&(&b.0 .0, &b.0 .1, b.0 .2.to_string())));
        v
    };
    let mut warnings = Vec::new();
    for (k, cr) in &sorted(&c) {
        let tr = t.get(k).map(|r| r.len()).unwrap_or(0);
        if tr != *cr {
            warnings.push(format!(
                "region {:?}{}: the counter launches saw {} occurrence(s), the timing launches {tr}; the program did \
                 not repeat the same work, so its counter runs may not match its timing runs",
                k.1,
                if k.2.params.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", k.2)
                },
                cr
            ));
        }
    }
    for (k, tr) in &sorted(&t) {
        if !c.contains_key(k) && !counters.samples.is_empty() {
            warnings.push(format!(
                "region {:?}: {} timing occurrence(s) but no counter value (the counter launch did not see it)",
                k.1, tr
            ));
        }
    }
    Ok((out, warnings))
}

/// What the per-process files of one execution hold.
struct Collected {
    raws: Vec<RawResults>,
    statuses: Vec<serde_json::Value>,
}

fn collect(dir: &Path) -> Result<Collected> {
    let mut c = Collected {
        raws: Vec::new(),
        statuses: Vec::new(),
    };
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(c) };
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    for f in files {
        match f.extension().and_then(|e| e.to_str()) {
            Some("csv") => {
                let raw = io::read_raw_csv(
                    &f,
                    &ReadOptions {
                        params: Some(Vec::new()),
                        benchmark: None,
                    },
                )
                .with_context(|| format!("cannot read {}", f.display()))?;
                c.raws.push(raw);
            }
            Some("json") => {
                if let Ok(v) = std::fs::read_to_string(&f)
                    .map_err(anyhow::Error::from)
                    .and_then(|t| Ok(serde_json::from_str(&t)?))
                {
                    c.statuses.push(v);
                }
            }
            _ => {}
        }
    }
    Ok(c)
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Runs `kprof run`; returns the exit code (which one: `docs/kprof-run.md`).
pub fn run(args: &RunArgs) -> i32 {
    let t_run = std::time::Instant::now();
    let mut metric_check_s = 0.0;
    let metrics = match expand_sections(&args.metrics) {
        Ok(m) => m,
        Err(e) => return crate::output::fail(&e, 2),
    };
    let launches = Launches::of(&counter_metrics(&metrics), args.durations);
    // The metrics of the counter launch (empty without one).
    let counters = launches.counter_launch_metrics(&counter_metrics(&metrics));
    type Setup = (PathBuf, Option<EnvSweep>, Option<Vec<gpus::Gpu>>, usize);
    let mut setup = || -> Result<Setup> {
        if args.repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        let sweep = args.env_sweep.as_deref().map(parse_env_sweep).transpose()?;
        let gpus = args.gpus.as_deref().map(the_gpus).transpose()?;
        let lib = find_inject_lib(
            std::env::var_os(ENV_INJECT_PATH).map(PathBuf::from),
            std::env::current_exe().ok(),
        )?;
        check_foreign_injection(|v| std::env::var(v).ok(), &lib)?;
        let mut ranges = DEFAULT_COUNTER_RANGES;
        if !counters.is_empty() {
            ranges = counter_ranges(std::env::var(ENV_COUNTER_RANGES).ok().as_deref())?;
            let t_check = std::time::Instant::now();
            let chip = metrics_chip();
            metric_check_s = t_check.elapsed().as_secs_f64();
            match chip? {
                Some((lib, chip)) => {
                    let t_check = std::time::Instant::now();
                    let checked = check_metrics(lib, &chip, &counters);
                    metric_check_s += t_check.elapsed().as_secs_f64();
                    checked?;
                }
                None if args.verbose => eprintln!(
                    "kprof: --metrics not checked here (no GPU and no KPROF_CHIP); the counter launch checks them"
                ),
                None => {}
            }
        }
        std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
        Ok((lib, sweep, gpus, ranges))
    };
    let (lib, sweep, gpus, ranges) = match setup() {
        Ok(x) => x,
        Err(e) => return crate::output::fail(&e, 2),
    };
    let setup_s = t_run.elapsed().as_secs_f64() - metric_check_s;
    let benchmark = args.benchmark.clone().unwrap_or_else(|| benchmark_name(&args.command));
    let workers: Vec<Option<gpus::Gpu>> = match gpus {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    let ctx = execution::Context {
        args,
        lib: &lib,
        benchmark: &benchmark,
        counters: &counters,
        ranges,
        launches,
    };
    // Ctrl-C reaches the program (its whole process group gets it) and stops every worker after
    // its running execution, so that the results of what ran are still merged and written.
    let sigint = kprof::sys::os::SigintCaught::install();
    let units = queue::units(plan(sweep.as_ref(), args.repeat, launches));
    let ran = queue::run_queue(units, &workers, &|| sigint.seen(), &|s| execution::execute(&ctx, s));
    if let Some(code) = ran.fatal {
        return code;
    }
    // A second Ctrl-C while the results are written ends kprof as usual.
    let interrupted = sigint.seen();
    drop(sigint);
    if interrupted && ran.outcomes.len() < ran.total {
        eprintln!(
            "kprof run: interrupted (Ctrl-C) after {} of {} execution(s): writing the results of those that ran",
            ran.outcomes.len(),
            ran.total
        );
    }
    let Gathered {
        mut program_code,
        parts,
        counter_parts,
        statuses,
        times,
    } = gather(ran.outcomes);
    if interrupted && program_code == 0 {
        program_code = 128 + 2; // as a shell reports a command ended by SIGINT
    }
    let t_results = std::time::Instant::now();
    let results = finish(args, !counters.is_empty(), &parts, &counter_parts, &statuses);
    let split = crate::run_split::split(
        setup_s,
        metric_check_s,
        &times,
        t_results.elapsed().as_secs_f64(),
        t_run.elapsed().as_secs_f64(),
    );
    if args.verbose {
        eprint!("{}", crate::run_split::render(&split));
    }
    if let Err(e) = crate::run_split::write(&split, &args.out.join(crate::run_split::TIME_SPLIT_FILE)) {
        eprintln!("kprof: warning: {}", crate::output::error_text(&e));
    }
    match results {
        Ok(()) => program_code,
        Err(e) if crate::output::is_broken_pipe(&e) => program_code,
        Err(e) => {
            eprintln!("kprof: error: {}", crate::output::error_text(&e));
            if program_code != 0 {
                program_code
            } else {
                1
            }
        }
    }
}

/// The executions' outcomes as the merge takes them.
struct Gathered {
    /// The last non-zero exit code of the command, in plan order (0: none).
    program_code: i32,
    /// The timing and the counter launches' process files, with their sweep values.
    parts: Vec<crate::run_ranks::Part>,
    counter_parts: Vec<crate::run_ranks::Part>,
    statuses: Vec<serde_json::Value>,
    times: Vec<crate::run_split::ExecutionTimes>,
}

/// Gathers the outcomes (in plan order).
fn gather(outcomes: Vec<execution::Executed>) -> Gathered {
    let mut g = Gathered {
        program_code: 0,
        parts: Vec::new(),
        counter_parts: Vec::new(),
        statuses: Vec::new(),
        times: Vec::new(),
    };
    for done in outcomes {
        if done.code != 0 {
            g.program_code = done.code;
        }
        let dest = if done.inv.counters {
            &mut g.counter_parts
        } else {
            &mut g.parts
        };
        dest.extend(done.raws.into_iter().map(|r| (done.inv.sweep.clone(), r)));
        g.statuses.extend(done.times.statuses.iter().cloned());
        g.times.push(done.times);
    }
    g
}

/// Prints the processes' warnings and errors, writes raw.csv / processed.csv and the table
/// (`with_counters`: the plan had counter launches).
fn finish(
    args: &RunArgs,
    with_counters: bool,
    parts: &[(Option<(String, String)>, RawResults)],
    counter_parts: &[(Option<(String, String)>, RawResults)],
    statuses: &[serde_json::Value],
) -> Result<()> {
    for s in statuses {
        let pid = s["pid"].as_u64().unwrap_or(0);
        for (kind, list) in [("error", &s["errors"]), ("warning", &s["warnings"])] {
            for m in list.as_array().into_iter().flatten().filter_map(|m| m.as_str()) {
                let first = m.lines().next().unwrap_or("");
                eprintln!("kprof: {kind} (pid {pid}): {first}");
            }
        }
    }
    for line in crate::run_ranks::rank_lines(statuses) {
        eprintln!("{line}");
    }
    let cuda_procs = statuses.iter().filter(|s| s["cuda_injected"] == true).count();
    // Rank and Device become keys of a multi-process or multi-GPU run (see run_ranks).
    let mut plan = crate::run_ranks::KeyPlan::of(parts.iter().chain(counter_parts).map(|(_, r)| r));
    // With --gpus the table always says where each sample ran.
    plan.device |= args.gpus.is_some();
    let timing = merge(&crate::run_ranks::promote_parts(parts, plan)?)?;
    let counter_raw = merge(&crate::run_ranks::promote_parts(counter_parts, plan)?)?;
    let no_counter_value = counter_raw.samples.is_empty();
    // The durations: a timing launch's when there is one, else the counter launch's.
    let (merged, join_warnings) = if parts.is_empty() {
        (counter_raw, Vec::new())
    } else {
        join_counters(&timing, &without_durations(&counter_raw)?)?
    };
    for w in &join_warnings {
        eprintln!("kprof: warning: {w}");
    }
    if merged.samples.is_empty() {
        if cuda_procs == 0 {
            bail!(
                "no process of the command initialised CUDA with kprof's injection library \
                 (nothing under {}): the program used no GPU, or CUDA_INJECTION64_PATH was not honoured",
                args.out.join("procs").display()
            );
        }
        bail!(
            "{cuda_procs} CUDA process(es) ran but no kernel was recorded (see the errors above and {}/procs/*/*.json)",
            args.out.display()
        );
    }
    let raw_path = args.out.join("raw.csv");
    io::write_raw_csv(&raw_path, &merged)?;
    let processed = process(&merged, &ProcessOptions::default()).context("cannot summarize the samples")?;
    let processed_path = args.out.join("processed.csv");
    io::write_processed_csv(&processed_path, &processed)?;
    // Which definition the durations used, and how to choose the other (docs/kprof-run.md).
    let durations = durations::line(&durations::sources(&merged), durations::Door::Run);
    if args.json {
        let mut doc = serde_json::to_value(&processed)?;
        if let (Some(map), Some(line)) = (doc.as_object_mut(), &durations) {
            map.insert("durations".into(), serde_json::Value::String(line.clone()));
        }
        crate::output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else if !args.quiet {
        let head = durations.map(|l| l + "\n").unwrap_or_default();
        crate::output::print(&(head + &render_processed(&processed)))?;
    }
    eprintln!(
        "kprof: wrote {} and {} ({} samples from {} process file(s))",
        raw_path.display(),
        processed_path.display(),
        merged.samples.len(),
        parts.len() + counter_parts.len()
    );
    if let Some(file) = &args.trace {
        let n = crate::run_trace::write(&args.out.join("procs"), file)?;
        eprintln!("kprof: wrote {} ({n} kernels)", file.display());
    }
    if with_counters && no_counter_value {
        bail!(
            "--metrics: the counter launch(es) recorded no counter value (see the errors above and \
             {}/procs/*-counters/*.json); raw.csv holds the timing samples only",
            args.out.display()
        );
    }
    if let Some(db) = &args.store {
        let db = crate::store_cmd::db_path(db.as_deref());
        let name = args.benchmark.clone().unwrap_or_else(|| benchmark_name(&args.command));
        let id = crate::store_cmd::store_results(&db, &merged, &processed, &name, &raw_path)
            .with_context(|| format!("cannot store the results in {}", db.display()))?;
        eprintln!("kprof: stored run {id} in {}", db.display());
    }
    Ok(())
}

/// Parses `--gpus` against the GPUs of this machine (see [`gpus`]).
fn the_gpus(spec: &str) -> Result<Vec<gpus::Gpu>> {
    let cuda_visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let visible = gpus::visible_devices(cuda_visible.as_deref(), Path::new(gpus::NVIDIA_GPUS_DIR));
    gpus::parse_gpus(spec, &visible, cuda_visible.as_deref())
}

mod execution;
mod gpus;
mod metrics;
mod queue;
pub use metrics::{check_metrics, counter_metrics, validate_metrics};
use metrics::{expand_sections, metrics_chip};

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
