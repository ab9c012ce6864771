//! The `kprof` command-line tool, as a library: the binary (`src/main.rs`) and the Python
//! package's `kprof` console command (`kprof._core.cli_main`) both call [`run`].
//!
//! Offline subcommands (no GPU needed): `summarize` turns a raw CSV (kprof's or nsight-python's)
//! into the processed table, `show` prints any result file as an aligned table, `import` reads
//! Nsight Compute reports, `plot` draws one metric as an SVG or PNG image, `report` writes a
//! self-contained HTML report. `store`, `history` and `compare --against` keep results across
//! commits in a results store (`kprof-store`, see `docs/store.md`).

#![deny(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use kprof_core::display::{render_processed, render_raw};
use kprof_core::durations;
use kprof_core::io::{self, Loaded, ReadOptions};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::stats::{BootstrapOptions, StatsOptions};

pub mod compare_cmd;
pub mod compare_explain;
pub mod doctor_cmd;
pub mod env_show;
pub mod history_cmd;
pub mod history_plot;
pub mod import_cmd;
pub mod inject_lib;
pub mod markdown;
pub mod metrics_cmd;
pub mod output;
pub mod plot_cmd;
pub mod report_cmd;
pub mod results_input;
pub mod run_cmd;
pub mod run_ranks;
pub mod run_split;
pub mod run_trace;
pub mod sol_cmd;
pub mod store_cmd;

#[derive(Parser, Debug)]
#[command(name = "kprof", version = kprof::VERSION, about = "GPU kernel profiling you can trust")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Turn a raw CSV (written by kprof or by nsight-python) into the processed table.
    Summarize(SummarizeArgs),
    /// Turn an Nsight Compute report (.ncu-rep, or its raw-page CSV export) into kprof's tables.
    Import(import_cmd::ImportArgs),
    /// Speed of light and roofline per region and configuration of a result, with a verdict.
    Sol(sol_cmd::SolArgs),
    /// List hardware metrics (ncu names) for a chip, validate names, count replay passes.
    Metrics(metrics_cmd::MetricsArgs),
    /// Plot one metric of a result file (processed CSV, raw CSV or kprof JSON) as SVG or PNG.
    Plot(plot_cmd::PlotArgs),
    /// Write a self-contained HTML report (summary table, plots, distributions, warnings).
    Report(report_cmd::ReportArgs),
    /// Profile an unmodified CUDA program (kernels grouped by the NVTX ranges it emits).
    Run(run_cmd::RunArgs),
    /// Compare two result files: change, CI, Welch's t-test; exit 1 on a significant regression.
    Compare(compare_cmd::CompareArgs),
    /// Keep results across commits in a results store (SQLite): `store add`, `store export`.
    Store(store_cmd::StoreArgs),
    /// Print the trend of stored results per commit, with change points marked.
    History(history_cmd::HistoryArgs),
    /// Check the GPU, driver, CUPTI, NVML and ncu setup and say how to fix problems (one finding
    /// per line). Exits 1 when a check fails (a `[FAIL]` line), 0 otherwise.
    Doctor(doctor_cmd::DoctorArgs),
    /// Print a result file (raw CSV, processed CSV or kprof JSON) as an aligned table.
    Show {
        /// The result file.
        file: PathBuf,
        /// Rows of a raw file to print.
        #[arg(long, default_value_t = 50)]
        max_rows: usize,
    },
}

#[derive(clap::Args, Debug)]
struct SummarizeArgs {
    /// Raw CSV: one row per (annotation, config, run, metric).
    raw: PathBuf,
    /// Where to write the processed table: `.csv`, or `.json` for kprof's JSON (raw + processed);
    /// `-` for standard output (CSV). Without it the table is printed. Missing folders are created.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Baseline annotation: every other annotation becomes a ratio to it, with its own CI.
    #[arg(long, value_name = "NAME")]
    normalize_against: Option<String>,
    /// A series is stable when its relative standard deviation is below this percentage.
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    stable_rsd: f64,
    /// The columns that are configuration parameters (others unknown to kprof become extra
    /// columns). By default every unknown column is a parameter.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    params: Option<Vec<String>>,
    /// Also compute seeded percentile-bootstrap CIs of the mean and median with this many resamples.
    #[arg(long, value_name = "N")]
    bootstrap: Option<usize>,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn summarize(args: &SummarizeArgs) -> Result<()> {
    if !(args.stable_rsd.is_finite() && args.stable_rsd > 0.0) {
        bail!("--stable-rsd must be a positive percentage, got {}", args.stable_rsd);
    }
    if args.bootstrap == Some(0) {
        bail!("--bootstrap needs at least 1 resample (2000 is a good choice)");
    }
    let raw = io::read_raw_csv(
        &args.raw,
        &ReadOptions {
            params: args.params.clone(),
            benchmark: None,
        },
    )?;
    let opts = ProcessOptions {
        stats: StatsOptions {
            stable_rsd_pct: args.stable_rsd,
            bootstrap: args.bootstrap.map(|resamples| BootstrapOptions {
                resamples,
                seed: args.seed,
            }),
        },
        normalize_against: args.normalize_against.clone(),
    };
    let processed = process(&raw, &opts).with_context(|| format!("cannot summarize {}", args.raw.display()))?;
    match &args.output {
        None => output::print(&(durations_head(&durations::sources(&raw)) + &render_processed(&processed)))?,
        Some(out) if has_extension(out, "json") => {
            io::write_results_json(out, &io::ResultFile::new(Some(raw), Some(processed), None))?;
            output::wrote(out, "");
        }
        Some(out) => {
            io::write_processed_csv(out, &processed)?;
            output::wrote(out, &format!(" ({} rows)", processed.rows.len()));
        }
    }
    Ok(())
}

/// The line that says which definition a table's durations used (`kprof_core::durations`),
/// with its newline; empty when the file does not say.
fn durations_head(sources: &[String]) -> String {
    durations::line(sources, durations::Door::Any)
        .map(|l| l + "\n")
        .unwrap_or_default()
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn show(file: &Path, max_rows: usize) -> Result<()> {
    let loaded = io::read_any(file)?;
    let json_env = match &loaded {
        Loaded::Json(result) => result.environment.as_ref(),
        _ => None,
    };
    let mut text = env_show::environment_text(file, json_env)
        .map(|t| t + "\n")
        .unwrap_or_default();
    let raw_text = |r: &kprof_core::RawResults| durations_head(&durations::sources(r)) + &render_raw(r, max_rows);
    let processed_text =
        |p: &kprof_core::ProcessedResults| durations_head(&durations::processed_sources(p)) + &render_processed(p);
    match loaded {
        Loaded::Raw(raw) => text += &raw_text(&raw),
        Loaded::Processed(processed) => text += &processed_text(&processed),
        Loaded::Json(result) => match (&result.processed, &result.raw) {
            (Some(p), _) => text += &processed_text(p),
            (None, Some(r)) => text += &raw_text(r),
            (None, None) => text += &format!("{} holds no results\n", file.display()),
        },
    }
    output::print(&text)
}

/// Runs the CLI on `args` (the program name first) and returns the process exit code: 0 on
/// success, 1 with one `kprof: error: ...` line on stderr for bad input, 2 for bad arguments
/// (clap's usage message), 0 for `--help`/`--version`. A closed pipe on standard output
/// (`kprof show X | head -2`) ends the command quietly with 0.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    // These set their own exit codes (run: the program's; compare: 0/1/2; doctor: 0/1).
    match &cli.command {
        Command::Run(args) => return run_cmd::run(args),
        Command::Compare(args) => return compare_cmd::run(args),
        Command::Doctor(args) => return doctor_cmd::run(args),
        _ => {}
    }
    let result = match &cli.command {
        Command::Summarize(args) => summarize(args),
        Command::Show { file, max_rows } => show(file, *max_rows),
        Command::Import(args) => import_cmd::run(args.clone()),
        Command::Metrics(args) => metrics_cmd::run(args),
        Command::Sol(args) => sol_cmd::run(args),
        Command::Plot(args) => plot_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Store(args) => store_cmd::run(args),
        Command::History(args) => history_cmd::run(args),
        Command::Run(_) | Command::Compare(_) | Command::Doctor(_) => unreachable!(),
    };
    match result {
        Ok(()) => 0,
        Err(err) => output::fail(&err, 1),
    }
}
