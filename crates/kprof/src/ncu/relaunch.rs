//! Relaunch mode: the program runs again under ncu, and only the selected benchmark runs in that
//! child. The parent calls [`relaunch_under_ncu`] with the program and its arguments (a Python
//! script's `sys.executable` + `sys.argv`, a Rust binary's `current_exe()` + args, or the command the
//! CLI wraps) and `KPROF_NCU_CHILD=<benchmark-id>`; in the child [`is_ncu_child`] is true and
//! [`child_target`] names the benchmark, which runs its configurations inside NVTX ranges named by
//! [`range_name`](super::range_name) in the `kprof` domain before the child exits (every other
//! benchmark does nothing there); the parent then checks, exports and parses the report
//! ([`relaunch_with`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use kprof_core::RawResults;

use super::bench::NcuRunInfo;
use super::csv::{export_csv, parse_ncu_csv, ImportOptions};
use super::version::NcuInstall;
use super::{tail_lines, NcuError, NcuOptions};

// The child-side protocol (the variable and its readers) lives with the child backend in the runner.
pub use crate::runner::ncu_child::{child_target, is_ncu_child, CHILD_ENV};

/// What a relaunch produced: the results and what ran ([`NcuRunInfo`]).
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The results, attributed by key.
    pub raw: RawResults,
    /// The ncu run: its id, the ncu and mode used, its files, arguments and wall time.
    pub info: NcuRunInfo,
}

/// A file stem for a benchmark's report, log and CSV that never collides between benchmarks:
/// `<module>.<function>-<call>-<hash>`, where the module and function are reduced to
/// `[A-Za-z0-9_.-]` (for readability) and the hash is a 64-bit FNV-1a of the exact module path
/// and function name (for uniqueness: `a/b.py` and `a_b.py` still differ).
pub fn report_stem(module_path: &str, function: &str, call_index: u32) -> String {
    fn clean(s: &str, max: usize) -> String {
        let c: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let c = c.trim_matches('_').to_string();
        let c = if c.is_empty() { "_".to_string() } else { c };
        c.chars().take(max).collect()
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in module_path.bytes().chain([0u8]).chain(function.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let module = Path::new(module_path).with_extension("").to_string_lossy().into_owned();
    format!(
        "{}.{}-{}-{:016x}",
        clean(&module, 60),
        clean(function, 60),
        call_index,
        h
    )
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn default_report() -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("kprof-ncu-{}-{n}.ncu-rep", std::process::id()))
}

fn with_suffix(report: &Path, ext: &str) -> PathBuf {
    let s = report.as_os_str().to_string_lossy();
    let base = s.strip_suffix(".ncu-rep").unwrap_or(&s);
    PathBuf::from(format!("{base}.{ext}"))
}

/// Finds ncu ([`NcuInstall::detect`]) and runs [`relaunch_with`]. The benchmark name of the
/// results is the `KPROF_NCU_CHILD` value in `env` (else `ncu`), and the metrics read back are
/// `options.metrics` (all numeric metrics when empty).
pub fn relaunch_under_ncu<P, I, A>(
    options: &NcuOptions,
    program: P,
    args: I,
    env: &[(OsString, OsString)],
) -> Result<RunOutput, NcuError>
where
    P: AsRef<OsStr>,
    I: IntoIterator<Item = A>,
    A: AsRef<OsStr>,
{
    let install = NcuInstall::detect()?;
    let benchmark = env
        .iter()
        .find(|(k, _)| k == CHILD_ENV)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ncu".into());
    let import = ImportOptions {
        benchmark,
        metrics: (!options.metrics.is_empty()).then(|| options.metrics.clone()),
        ..ImportOptions::default()
    };
    relaunch_with(&install, options, program, args, env, &import)
}

/// Runs `program args` under the given ncu with `options` and `env` added to the environment,
/// checks the outcome (ncu's exit status and log: counter permission, unknown metric, crash,
/// nothing profiled), exports the report (`ncu --import REP --csv --page raw --print-units base`
/// under `LC_ALL=C`) and parses it with `import`, keeping the `.ncu-rep`, the log and the CSV
/// side by side.
///
/// The mode is chosen first from `options.mode` and `KPROF_NCU_MODE`
/// ([`NcuInstall::choose_mode`]): asking for attach is an error before anything runs.
///
/// Without `options.report_path` the report goes to the temporary directory; without
/// `options.log_file` the log is the report path with `.log` instead of `.ncu-rep`. The CSV is
/// written next to the report (`.csv`).
pub fn relaunch_with<P, I, A>(
    install: &NcuInstall,
    options: &NcuOptions,
    program: P,
    args: I,
    env: &[(OsString, OsString)],
    import: &ImportOptions,
) -> Result<RunOutput, NcuError>
where
    P: AsRef<OsStr>,
    I: IntoIterator<Item = A>,
    A: AsRef<OsStr>,
{
    let mode = install.choose_mode(options.mode.or_env()?)?;
    // ncu cannot profile while this process keeps CUPTI's profiler initialized.
    crate::runner::release_counters();
    let mut options = options.clone();
    let report = options.report_path.clone().unwrap_or_else(default_report);
    let report = if report.extension().is_some_and(|e| e == "ncu-rep") {
        report
    } else {
        with_suffix(&report, "ncu-rep")
    };
    options.report_path = Some(report.clone());
    let log = options.log_file.clone().unwrap_or_else(|| with_suffix(&report, "log"));
    options.log_file = Some(log.clone());
    let csv_path = with_suffix(&report, "csv");
    if let Some(dir) = report.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| NcuError::io(format!("cannot create {}", dir.display()), e))?;
    }
    // A stale log or report from an earlier run must not be mistaken for this run's.
    let _ = std::fs::remove_file(&log);
    if options.force_overwrite {
        let _ = std::fs::remove_file(&report);
    }

    let program = program.as_ref().to_os_string();
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_os_string()).collect();
    let argv = options.argv(&program, &args);
    let target = env
        .iter()
        .find(|(k, _)| k == CHILD_ENV)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    let command = std::iter::once(program.clone())
        .chain(args.iter().cloned())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");

    let start = Instant::now();
    let out = Command::new(&install.path)
        .args(&argv)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|source| NcuError::Spawn {
            program: install.path.clone(),
            source,
        })?;
    let wall = start.elapsed();
    let child_out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    check_outcome(&CheckInput {
        status: out.status,
        log_text: &log_text,
        child_output: &child_out,
        log: &log,
        report: &report,
        command: &command,
        filters: options.filters_label(),
        target: &target,
    })?;

    let csv_text = export_csv(&install.path, &report)?;
    std::fs::write(&csv_path, &csv_text)
        .map_err(|e| NcuError::io(format!("cannot write {}", csv_path.display()), e))?;
    let import = ImportOptions {
        source_name: csv_path.display().to_string(),
        ..import.clone()
    };
    let raw = parse_ncu_csv(&csv_text, &import)?;
    Ok(RunOutput {
        raw,
        info: NcuRunInfo {
            id: target,
            install: install.clone(),
            mode,
            report,
            log,
            csv: csv_path,
            argv,
            wall,
            output_tail: tail_lines(&child_out, 20),
        },
    })
}

/// What [`check_outcome`] looks at.
pub(crate) struct CheckInput<'a> {
    pub status: std::process::ExitStatus,
    pub log_text: &'a str,
    pub child_output: &'a str,
    pub log: &'a Path,
    pub report: &'a Path,
    pub command: &'a str,
    pub filters: String,
    pub target: &'a str,
}

/// Turns ncu's exit status and log into the first matching error: counter permission, unknown
/// metric, crash (non-zero exit or signal), nothing profiled, report missing.
pub(crate) fn check_outcome(c: &CheckInput<'_>) -> Result<(), NcuError> {
    let all = format!("{}\n{}", c.log_text, c.child_output);
    let tail = || {
        let t = tail_lines(c.log_text, 20);
        if t.is_empty() {
            tail_lines(c.child_output, 20)
        } else {
            t
        }
    };
    if all.contains("ERR_NVGPUCTRPERM") {
        return Err(NcuError::CounterPermission {
            log: c.log.to_path_buf(),
            tail: tail(),
        });
    }
    let bad_metrics: Vec<String> = all
        .lines()
        .filter_map(|l| l.split_once("Failed to find metric").map(|(_, rest)| rest))
        .map(|rest| {
            rest.trim()
                .trim_matches(|ch: char| ch == '"' || ch == '\'' || ch == '.' || ch == ':')
                .trim()
                .to_string()
        })
        .collect();
    if !bad_metrics.is_empty() {
        let mut metrics: Vec<String> = bad_metrics.into_iter().filter(|m| !m.is_empty()).collect();
        metrics.dedup();
        return Err(NcuError::InvalidMetric {
            metrics,
            log: c.log.to_path_buf(),
            tail: tail(),
        });
    }
    if !c.status.success() {
        let status = match c.status.code() {
            Some(code) => format!("exit code {code}"),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    format!("signal {}", c.status.signal().unwrap_or(0))
                }
                #[cfg(not(unix))]
                {
                    "an abnormal termination".to_string()
                }
            }
        };
        return Err(NcuError::Crashed {
            status,
            command: c.command.to_string(),
            log: c.log.to_path_buf(),
            tail: tail(),
        });
    }
    if all.contains("No kernels were profiled") {
        return Err(NcuError::NoKernels {
            filters: c.filters.clone(),
            target: c.target.to_string(),
            log: c.log.to_path_buf(),
            tail: tail(),
        });
    }
    if !c.report.is_file() {
        return Err(NcuError::ReportMissing {
            report: c.report.to_path_buf(),
            log: c.log.to_path_buf(),
            tail: tail(),
        });
    }
    Ok(())
}
