//! `kprof run [OPTIONS] -- COMMAND ARGS...`: profiles an unmodified CUDA program.
//!
//! The command runs with `CUDA_INJECTION64_PATH` and `NVTX_INJECTION64_PATH` set to
//! `libkprof_inject.so` (next to the kprof executable, or `KPROF_INJECT_PATH`), so every process
//! it starts that initialises CUDA records its kernels and NVTX ranges and writes
//! `kprof-run-<pid>.csv` at exit (see the `kprof-inject` crate). kprof then merges the files of
//! every process and every repetition, writes `raw.csv` and `processed.csv` into `--out`, and
//! prints the processed table.
//!
//! - Each NVTX range occurrence is one run of the region named by the range; kernels outside
//!   ranges are grouped by kernel name (`--group-by kernel|both` changes this).
//! - `--repeat N` runs the command N times; the runs of repetition k follow those of k-1.
//! - `--env-sweep VAR=v1,v2` runs the command once per value (times `--repeat`) with `VAR` set;
//!   `VAR` becomes a configuration parameter.
//! - Exit code: the command's (the last non-zero one over the repetitions; 128 + signal when it
//!   was killed); if it succeeded but kprof could not write its results, 1; 2 when kprof could
//!   not start it (no injection library, already running under ncu/nsys, bad options).
//!   Results are written even when the command fails.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use kprof_core::display::render_processed;
use kprof_core::io::{self, ReadOptions};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::{Config, ExtraValue, ParamValue, RawResults, SampleRecord};

/// Env var: an explicit path to libkprof_inject.so.
pub const ENV_INJECT_PATH: &str = "KPROF_INJECT_PATH";
/// The injection library's file name.
pub const INJECT_LIB: &str = "libkprof_inject.so";
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

impl GroupByArg {
    fn as_str(self) -> &'static str {
        match self {
            GroupByArg::Nvtx => "nvtx",
            GroupByArg::Kernel => "kernel",
            GroupByArg::Both => "both",
        }
    }
}

/// Arguments of `kprof run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Directory for raw.csv, processed.csv and the per-process files (procs/).
    #[arg(long, default_value = "kprof-run")]
    pub out: PathBuf,
    /// Run the command this many times.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Run once per value with the environment variable set: `VAR=v1,v2,...`.
    #[arg(long, value_name = "VAR=v1,v2")]
    pub env_sweep: Option<String>,
    /// Keep only NVTX ranges matching this (name, `domain@name`, or a prefix ending in `*`); repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub nvtx_include: Vec<String>,
    /// Drop NVTX ranges matching this; repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub nvtx_exclude: Vec<String>,
    /// How kernels become annotations.
    #[arg(long, value_enum, default_value = "nvtx")]
    pub group_by: GroupByArg,
    /// Benchmark name (default: the command's name, or the script's for `python script.py`).
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Do not print the table.
    #[arg(long)]
    pub quiet: bool,
    /// Print the processed table as JSON instead.
    #[arg(long)]
    pub json: bool,
    /// Let the injection library report on stderr (KPROF_RUN_VERBOSE=1).
    #[arg(long)]
    pub verbose: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Parses `VAR=v1,v2`.
pub fn parse_env_sweep(s: &str) -> Result<(String, Vec<String>)> {
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
/// `../lib` of its directory).
pub fn find_inject_lib(explicit: Option<PathBuf>, exe: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
        bail!("{ENV_INJECT_PATH}={} is not a file", p.display());
    }
    let mut tried = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        for p in [dir.join(INJECT_LIB), dir.join("../lib").join(INJECT_LIB)] {
            if p.is_file() {
                return Ok(std::fs::canonicalize(&p).unwrap_or(p));
            }
            tried.push(p.display().to_string());
        }
    }
    bail!(
        "cannot find {INJECT_LIB} (tried: {}); build it with `cargo build --release -p kprof-inject` \
         and put it next to the kprof executable, or set {ENV_INJECT_PATH}",
        if tried.is_empty() {
            "nothing: the kprof executable's path is unknown".into()
        } else {
            tried.join(", ")
        }
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

/// The default benchmark name: the script's stem for `python[3] [-u] script.py`, else the
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
    if name.starts_with("python") {
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
    /// Per-process files of this execution, relative to `--out`.
    pub dir: PathBuf,
}

/// Every execution, sweep values outermost.
pub fn plan(sweep: Option<&(String, Vec<String>)>, repeat: u32) -> Vec<Invocation> {
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
            out.push(Invocation {
                sweep: s.clone(),
                repeat: k,
                dir,
            });
        }
    }
    out
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
            let extras: Vec<(&str, ExtraValue)> = raw
                .extras
                .iter()
                .map(|c| (c.name.as_str(), c.values[i].clone()))
                .collect();
            out.push(&SampleRecord {
                benchmark: &series.key.benchmark,
                annotation: &series.key.annotation,
                config: &config,
                run,
                metric: &series.key.metric,
                value: s.value,
                unit: &series.unit,
                kernel: &raw.kernel_names[s.kernel as usize],
                device: &raw.devices[series.device as usize],
                extras: &extras,
            })?;
        }
        for (k, m) in max_run {
            next_run.insert(k, m + 1);
        }
    }
    Ok(out)
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

/// Runs `kprof run`; returns the exit code (see the module docs).
pub fn run(args: &RunArgs) -> i32 {
    let setup = || -> Result<(PathBuf, Option<(String, Vec<String>)>)> {
        if args.repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        let sweep = args.env_sweep.as_deref().map(parse_env_sweep).transpose()?;
        let lib = find_inject_lib(
            std::env::var_os(ENV_INJECT_PATH).map(PathBuf::from),
            std::env::current_exe().ok(),
        )?;
        check_foreign_injection(|v| std::env::var(v).ok(), &lib)?;
        std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
        Ok((lib, sweep))
    };
    let (lib, sweep) = match setup() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("kprof: error: {e:#}");
            return 2;
        }
    };
    let benchmark = args.benchmark.clone().unwrap_or_else(|| benchmark_name(&args.command));
    let invocations = plan(sweep.as_ref(), args.repeat);
    let mut program_code = 0;
    let mut parts: Vec<(Option<(String, String)>, RawResults)> = Vec::new();
    let mut statuses = Vec::new();
    for inv in &invocations {
        let dir = args.out.join(&inv.dir);
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("kprof: error: cannot create {}: {e}", dir.display());
            return 2;
        }
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let mut cmd = Command::new(&args.command[0]);
        cmd.args(&args.command[1..])
            .env("CUDA_INJECTION64_PATH", &lib)
            .env("NVTX_INJECTION64_PATH", &lib)
            .env("KPROF_RUN_OUTPUT", &dir)
            .env("KPROF_RUN_BENCHMARK", &benchmark)
            .env("KPROF_RUN_GROUP_BY", args.group_by.as_str())
            .env("KPROF_RUN_NVTX_INCLUDE", args.nvtx_include.join("\n"))
            .env("KPROF_RUN_NVTX_EXCLUDE", args.nvtx_exclude.join("\n"));
        if args.verbose {
            cmd.env("KPROF_RUN_VERBOSE", "1");
        }
        if let Some((var, val)) = &inv.sweep {
            cmd.env(var, val);
        }
        match cmd.status() {
            Ok(st) => {
                let code = exit_code(st);
                if code != 0 {
                    eprintln!(
                        "kprof: the command exited with {code}{}",
                        if invocations.len() > 1 {
                            format!(" (repetition {})", inv.repeat)
                        } else {
                            String::new()
                        }
                    );
                    program_code = code;
                }
            }
            Err(e) => {
                eprintln!("kprof: error: cannot start {}: {e}", args.command[0].to_string_lossy());
                return if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
            }
        }
        match collect(&dir) {
            Ok(c) => {
                parts.extend(c.raws.into_iter().map(|r| (inv.sweep.clone(), r)));
                statuses.extend(c.statuses);
            }
            Err(e) => eprintln!("kprof: error: {e:#}"),
        }
    }
    let results = finish(args, &parts, &statuses);
    match results {
        Ok(()) => program_code,
        Err(e) => {
            eprintln!("kprof: error: {e:#}");
            if program_code != 0 {
                program_code
            } else {
                1
            }
        }
    }
}

/// Prints the processes' warnings and errors, writes raw.csv / processed.csv and the table.
fn finish(
    args: &RunArgs,
    parts: &[(Option<(String, String)>, RawResults)],
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
    let cuda_procs = statuses.iter().filter(|s| s["cuda_injected"] == true).count();
    let merged = merge(parts)?;
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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&processed)?);
    } else if !args.quiet {
        print!("{}", render_processed(&processed));
    }
    eprintln!(
        "kprof: wrote {} and {} ({} samples from {} process file(s))",
        raw_path.display(),
        processed_path.display(),
        merged.samples.len(),
        parts.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kprof_core::{DeviceInfo, DEFAULT_METRIC};

    #[test]
    fn env_sweep_parsing() {
        assert_eq!(
            parse_env_sweep("N=1,2,4").unwrap(),
            ("N".into(), vec!["1".into(), "2".into(), "4".into()])
        );
        assert!(parse_env_sweep("N").is_err());
        assert!(parse_env_sweep("=1").is_err());
        assert!(parse_env_sweep("A-B=1").is_err());
        assert!(parse_env_sweep("N=").is_err());
    }

    #[test]
    fn benchmark_names() {
        let v = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(benchmark_name(&v(&["./bin/sgemm", "4096"])), "sgemm");
        assert_eq!(
            benchmark_name(&v(&["/opt/torch/.venv/bin/python3", "-u", "train.py"])),
            "train"
        );
        assert_eq!(benchmark_name(&v(&["python", "-c", "pass"])), "python");
    }

    #[test]
    fn foreign_injection_is_refused() {
        let ours = Path::new("/x/libkprof_inject.so");
        assert!(check_foreign_injection(|_| None, ours).is_ok());
        assert!(check_foreign_injection(
            |v| (v == "CUDA_INJECTION64_PATH").then(|| ours.display().to_string()),
            ours
        )
        .is_ok());
        let e = check_foreign_injection(
            |v| (v == "NVTX_INJECTION64_PATH").then(|| "/opt/ncu/libInterceptor.so".into()),
            ours,
        )
        .unwrap_err();
        assert!(e.to_string().contains("ncu"), "{e}");
    }

    #[test]
    fn plan_orders_sweep_then_repeat() {
        let p = plan(Some(&("N".into(), vec!["1".into(), "2".into()])), 2);
        assert_eq!(p.len(), 4);
        assert_eq!(p[1].sweep, Some(("N".into(), "1".into())));
        assert_eq!(p[1].repeat, 1);
        assert_eq!(p[2].dir, PathBuf::from("procs/sweep1-rep0"));
        assert_eq!(plan(None, 1)[0].dir, PathBuf::from("procs/rep0"));
    }

    fn part(values: &[f64]) -> RawResults {
        let mut r = RawResults::new();
        let d = DeviceInfo::default();
        for (run, v) in values.iter().enumerate() {
            r.push(&SampleRecord {
                benchmark: "b",
                annotation: "mm",
                config: &Config::new(),
                run: run as u32,
                metric: DEFAULT_METRIC,
                value: *v,
                unit: "ns",
                kernel: "k",
                device: &d,
                extras: &[],
            })
            .unwrap();
        }
        r
    }

    #[test]
    fn merge_offsets_runs_and_adds_sweep_params() {
        let parts = vec![(None, part(&[1.0, 2.0])), (None, part(&[3.0]))];
        let m = merge(&parts).unwrap();
        assert_eq!(m.samples.iter().map(|s| s.run).collect::<Vec<_>>(), [0, 1, 2]);
        m.check_unique_runs().unwrap();
        let sweep = vec![
            (Some(("N".to_string(), "1".to_string())), part(&[1.0])),
            (Some(("N".to_string(), "2".to_string())), part(&[2.0])),
            (Some(("N".to_string(), "1".to_string())), part(&[1.5])),
        ];
        let m = merge(&sweep).unwrap();
        assert_eq!(m.configs.len(), 2);
        assert_eq!(m.configs[0].get("N"), Some(&ParamValue::Int(1)));
        assert_eq!(m.samples.iter().map(|s| s.run).collect::<Vec<_>>(), [0, 0, 1]);
        m.check_unique_runs().unwrap();
    }

    #[test]
    fn missing_library_message() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_inject_lib(None, Some(dir.path().join("kprof")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("libkprof_inject.so") && e.contains("KPROF_INJECT_PATH"),
            "{e}"
        );
        std::fs::write(dir.path().join(INJECT_LIB), b"").unwrap();
        assert!(find_inject_lib(None, Some(dir.path().join("kprof"))).is_ok());
        assert!(find_inject_lib(Some(dir.path().join("nope.so")), None).is_err());
    }
}
