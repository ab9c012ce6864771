//! `kprof history plot`: the trend of stored results as an SVG or PNG image, one line per
//! series (annotation and configuration), one point per commit with its 95 % CI as error bars,
//! drawn by kprof-plot like `kprof plot`.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use kprof_core::{Config, DeviceInfo, ParamValue, ProcessedResults, ProcessedRow, Summary};
use kprof_plot::{render_png, render_svg, PlotSpec};
use kprof_store::history::{history, HistoryOptions, SeriesHistory};
use kprof_store::{ResultStore, SqliteStore};

use crate::store_cmd::{short, Selected, StoreSelection};

/// Arguments of `kprof history plot`.
#[derive(clap::Args, Debug)]
pub struct HistoryPlotArgs {
    /// The stored runs and series to read.
    #[command(flatten)]
    pub select: StoreSelection,
    /// The metric to draw (needed when the selected series have several).
    #[arg(long)]
    pub metric: Option<String>,
    /// The image: `.svg` or `.png`.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Title of the plot.
    #[arg(long)]
    pub title: Option<String>,
}

fn nan_summary() -> Summary {
    Summary::empty(0)
}

/// The histories as a processed table kprof-plot draws: one row per (commit, series), the
/// configuration being the commit (in commit order, so the categorical axis keeps it) and the
/// annotation the series' annotation and configuration.
pub fn trend_table(histories: &[SeriesHistory]) -> ProcessedResults {
    // Commit labels in the order of first appearance over all series.
    let label_of = |p: &kprof_store::history::CommitPoint| match &p.commit {
        Some(c) => short(c).to_string(),
        None => format!("run {}", p.runs[0]),
    };
    let mut all: Vec<(i64, String, &SeriesHistory, &kprof_store::history::CommitPoint)> = histories
        .iter()
        .flat_map(|h| h.points.iter().map(move |p| (p.runs[0], label_of(p), h, p)))
        .collect();
    let mut first_seen: HashMap<String, i64> = HashMap::new();
    for (run, label, _, _) in &all {
        let e = first_seen.entry(label.clone()).or_insert(*run);
        *e = (*e).min(*run);
    }
    // Commit-major (so the categorical axis keeps the commits' order), then series order.
    all.sort_by_key(|(_, label, _, _)| first_seen[label]);
    let mut rows = Vec::with_capacity(all.len());
    for (_, label, h, p) in all {
        let mut summary = nan_summary();
        summary.num_runs = p.pooled.n;
        summary.total_runs = p.pooled.n;
        summary.mean = p.pooled.mean;
        summary.std_dev = p.pooled.std_dev;
        summary.median = p.median;
        summary.ci95_lower = p.ci_low;
        summary.ci95_upper = p.ci_high;
        let annotation = if h.series.config.is_empty() {
            h.series.annotation.clone()
        } else {
            format!("{} {}", h.series.annotation, h.series.config)
        };
        rows.push(ProcessedRow {
            benchmark: h.series.benchmark.clone(),
            annotation,
            metric: h.series.metric.clone(),
            config: Config::new().with("commit", ParamValue::Str(label)),
            summary,
            kernel: String::new(),
            device: DeviceInfo::default(),
            unit: h.unit.clone(),
            extras: Vec::new(),
            normalized: None,
            normalization_value: None,
            geomean: f64::NAN,
        });
    }
    ProcessedResults {
        param_names: vec!["commit".into()],
        rows,
        missing_baselines: Vec::new(),
    }
}

/// Every stored series of the store `db` as a trend table ([`trend_table`]), for
/// `kprof report --db`.
pub fn store_trends(db: &std::path::Path) -> Result<ProcessedResults> {
    let store = SqliteStore::open_existing(db)?;
    let runs = store.runs(None)?;
    let points = store.points(None)?;
    Ok(trend_table(&history(&runs, &points, &HistoryOptions::default())))
}

/// Runs `kprof history plot`.
pub fn run(args: &HistoryPlotArgs) -> Result<()> {
    let Selected {
        db, runs, mut points, ..
    } = args.select.read()?;
    if let Some(m) = &args.metric {
        points.retain(|p| &p.series.metric == m);
    }
    if points.is_empty() {
        bail!(
            "no stored series in {} match the filters; `kprof history` lists them",
            db.display()
        );
    }
    let histories = history(&runs, &points, &HistoryOptions::default());
    let table = trend_table(&histories);
    let spec = PlotSpec {
        metric: args.metric.clone().unwrap_or_default(),
        title: args.title.clone(),
        ..PlotSpec::default()
    };
    if args.output.extension().is_some_and(|e| e.eq_ignore_ascii_case("png")) {
        render_png(&table, &spec, &args.output).context("cannot draw the history")?;
    } else {
        let svg = render_svg(&table, &spec).context("cannot draw the history")?;
        std::fs::write(&args.output, svg).with_context(|| format!("cannot write {}", args.output.display()))?;
    }
    eprintln!("wrote {}", args.output.display());
    Ok(())
}
