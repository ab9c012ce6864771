//! `kprof report RESULTS... -o report.html [--title T] [--x PARAM] [--type line|bar] [--db kprof.db]`:
//! one self-contained HTML report (inline SVG, CSS and JS; no network) over raw or processed CSVs
//! and kprof JSON files, with run distributions when raw samples are given, the `<stem>.env.json`
//! fingerprint beside a CSV, and, with `--db`, a trends section per commit.
//!
//! What it shows: `docs/offline.md`; the trends: `docs/store.md`.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::output;
use kprof_plot::{render_report, PlotType, ReportInput, ReportOptions};

use crate::plot_cmd::PlotTypeArg;
use crate::results_input::{self, ResultInput};

/// Arguments of `kprof report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Result files: raw CSV, processed CSV or kprof JSON.
    #[arg(required_unless_present = "db", value_name = "RESULTS")]
    pub inputs: Vec<PathBuf>,
    /// Add the trends across commits of this results store (see docs/store.md).
    #[arg(long, value_name = "DB")]
    pub db: Option<PathBuf>,
    /// The HTML file to write.
    #[arg(short, long, default_value = "report.html", value_name = "FILE")]
    pub output: PathBuf,
    /// Page title.
    #[arg(long, value_name = "T", default_value = "kprof report")]
    pub title: String,
    /// x-axis parameter of the plots (default: the first numeric parameter that varies).
    #[arg(long, value_name = "PARAM")]
    pub x: Option<String>,
    /// Line plots or grouped bars.
    #[arg(long = "type", value_enum, default_value = "line")]
    pub plot_type: PlotTypeArg,
    /// Leave out the per-configuration distributions.
    #[arg(long)]
    pub no_distributions: bool,
}

/// Runs `kprof report`: reads every input, renders the report, writes it.
pub fn run(args: &ReportArgs) -> Result<()> {
    let loaded: Vec<(String, ResultInput)> = args
        .inputs
        .iter()
        .map(|p| Ok((p.display().to_string(), results_input::load(p)?)))
        .collect::<Result<_>>()?;
    let trends = match &args.db {
        Some(db) => Some((
            format!("trends across commits ({})", db.display()),
            crate::history_plot::store_trends(db)?,
        )),
        None => None,
    };
    let mut inputs: Vec<ReportInput<'_>> = loaded
        .iter()
        .map(|(title, r)| ReportInput {
            title,
            raw: r.raw.as_ref(),
            processed: &r.processed,
            environment: r.environment.as_ref(),
        })
        .collect();
    if let Some((title, table)) = &trends {
        inputs.push(ReportInput {
            title,
            raw: None,
            processed: table,
            environment: None,
        });
    }
    let opts = ReportOptions {
        title: args.title.clone(),
        x: args.x.clone(),
        plot_type: match args.plot_type {
            PlotTypeArg::Line => PlotType::Line,
            PlotTypeArg::Bar => PlotType::Bar,
        },
        distributions: !args.no_distributions,
        ..ReportOptions::default()
    };
    let html = render_report(&inputs, &opts).context("cannot render the report")?;
    output::write_file(&args.output, html.as_bytes())?;
    output::wrote(&args.output, &format!(" ({} result set(s))", inputs.len()));
    Ok(())
}
