//! `kprof history`: per series, one line per commit (mean, its CI, median, change against the
//! previous commit), with change points marked. The method is in `kprof_store::history` and
//! `docs/store.md`: Welch's test between consecutive commits, marked when significant at
//! `--alpha` and at least `--threshold`.

use crate::compare_cmd::{fmt_num, fmt_pct};

use anyhow::{bail, Result};
use serde_json::json;

use kprof_store::history::{history, HistoryOptions, SeriesHistory};
use kprof_store::timefmt::format_utc;

use crate::compare_cmd::{lower_is_better, ChangeTestArgs, DirectionArg};
use crate::output::Format;
use crate::store_cmd::{short, Selected, StoreSelection};

/// Arguments of `kprof history`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    /// `plot`: draw the trend as an image instead of printing it.
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// The stored runs and series to read.
    #[command(flatten)]
    pub select: StoreSelection,
    /// How a change is judged and shown.
    #[command(flatten)]
    pub test: ChangeTestArgs,
}

/// `kprof history` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum HistoryAction {
    /// Draw the trend (one line per series, one point per commit, 95% CI bars) as SVG or PNG.
    Plot(crate::history_plot::HistoryPlotArgs),
}

fn nan_null(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        serde_json::Value::Null
    }
}

fn aligned(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str("  ");
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The trend tables (one per series) and the number of change points.
pub fn render(histories: &[SeriesHistory], direction: DirectionArg) -> (String, usize) {
    let mut out = String::new();
    let mut marked = 0;
    for h in histories {
        let lib = lower_is_better(&h.series.metric, &h.unit, direction);
        out.push_str(&format!(
            "{} [{}{}]\n",
            h.series.label(),
            if h.unit.is_empty() { "" } else { &h.unit },
            if lib { ", lower is better" } else { ", higher is better" }
        ));
        let mut rows = vec![[
            "Commit",
            "Branch",
            "Stored",
            "Runs",
            "N",
            "Mean",
            "CI95",
            "Median",
            "Change",
            "CI95 change",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()];
        for p in &h.points {
            let commit = match &p.commit {
                Some(c) => format!("{}{}", short(c), if p.dirty { "+" } else { "" }),
                None => format!("(run {})", p.runs[0]),
            };
            let (change, change_ci, mark) = match &p.change {
                Some(c) => {
                    let worse = if lib { c.pct > 0.0 } else { c.pct < 0.0 };
                    let mark = if c.marked {
                        marked += 1;
                        if worse {
                            "<< REGRESSION"
                        } else {
                            "<< improvement"
                        }
                    } else {
                        ""
                    };
                    (
                        fmt_pct(c.pct),
                        format!("[{}, {}]", fmt_pct(c.ci_low_pct), fmt_pct(c.ci_high_pct)),
                        mark,
                    )
                }
                None => ("-".into(), "-".into(), ""),
            };
            let stored = format_utc(p.first_unix_ms);
            rows.push(vec![
                commit,
                p.branch.clone().unwrap_or_else(|| "-".into()),
                stored[..16].replace('T', " "),
                p.runs.len().to_string(),
                p.pooled.n.to_string(),
                fmt_num(p.pooled.mean),
                if p.ci_low.is_finite() {
                    format!("[{}, {}]", fmt_num(p.ci_low), fmt_num(p.ci_high))
                } else {
                    "-".into()
                },
                fmt_num(p.median),
                change,
                change_ci,
                mark.to_string(),
            ]);
        }
        out.push_str(&aligned(&rows));
        out.push('\n');
    }
    (out, marked)
}

fn to_json(histories: &[SeriesHistory], direction: DirectionArg) -> serde_json::Value {
    let series: Vec<serde_json::Value> = histories
        .iter()
        .map(|h| {
            let lib = lower_is_better(&h.series.metric, &h.unit, direction);
            let points: Vec<serde_json::Value> = h
                .points
                .iter()
                .map(|p| {
                    json!({
                        "commit": p.commit,
                        "branch": p.branch,
                        "dirty": p.dirty,
                        "runs": p.runs,
                        "stored_at": format_utc(p.first_unix_ms),
                        "n": p.pooled.n,
                        "mean": nan_null(p.pooled.mean),
                        "std_dev": nan_null(p.pooled.std_dev),
                        "ci_low": nan_null(p.ci_low),
                        "ci_high": nan_null(p.ci_high),
                        "median": nan_null(p.median),
                        "change": p.change.map(|c| json!({
                            "pct": nan_null(c.pct),
                            "ci_low_pct": nan_null(c.ci_low_pct),
                            "ci_high_pct": nan_null(c.ci_high_pct),
                            "significant": c.significant,
                            "change_point": c.marked,
                            "regression": c.marked && if lib { c.pct > 0.0 } else { c.pct < 0.0 },
                        })),
                    })
                })
                .collect();
            json!({
                "benchmark": h.series.benchmark,
                "annotation": h.series.annotation,
                "config": h.series.config,
                "metric": h.series.metric,
                "unit": h.unit,
                "lower_is_better": lib,
                "points": points,
            })
        })
        .collect();
    json!({ "series": series })
}

/// Runs `kprof history`.
pub fn run(args: &HistoryArgs) -> Result<()> {
    if let Some(HistoryAction::Plot(plot)) = &args.action {
        return crate::history_plot::run(plot);
    }
    let threshold_pct = args.test.threshold_pct()?;
    let Selected { db, runs, points, .. } = args.select.read()?;
    if points.is_empty() {
        bail!(
            "no stored series in {} match{}{}; `kprof store export --db {}` lists what is stored",
            db.display(),
            args.select
                .series
                .as_deref()
                .map(|s| format!(" --series {s:?}"))
                .unwrap_or_default(),
            args.select
                .since
                .as_deref()
                .map(|s| format!(" --since {s:?}"))
                .unwrap_or_default(),
            db.display()
        );
    }
    let histories = history(
        &runs,
        &points,
        &HistoryOptions {
            alpha: args.test.alpha,
            threshold_pct,
        },
    );
    match args.test.output.format() {
        Format::Json => {
            let text = serde_json::to_string_pretty(&to_json(&histories, args.test.direction))?;
            return crate::output::print(&(text + "\n"));
        }
        Format::Markdown => {
            let text = crate::markdown::history(&histories, args.test.direction, threshold_pct, args.test.alpha);
            return crate::output::print(&text);
        }
        Format::Table => {}
    }
    let (text, marked) = render(&histories, args.test.direction);
    print!("{text}");
    println!(
        "{marked} change point(s) in {} series: Welch's test against the previous commit, {:.0}% CI excluding 0 and |change| >= {threshold_pct}% (`+` after a commit: dirty work tree)",
        histories.len(),
        (1.0 - args.test.alpha) * 100.0
    );
    Ok(())
}
