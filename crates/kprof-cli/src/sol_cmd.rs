//! `kprof sol RESULT [--json]`: speed of light and roofline per region and configuration of any
//! result file (raw or processed CSV, kprof JSON), from the counters it holds, with a verdict
//! (compute-bound, memory-bound, balanced, latency-bound) and its reason; `--json` prints every
//! column. The rule is `kprof_core::sol`'s (`docs/counters.md`, Speed of light and roofline).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use kprof_core::sol::{self, Cell};

use crate::results_input;

/// Arguments of `kprof sol`.
#[derive(clap::Args, Debug, Clone)]
pub struct SolArgs {
    /// A result file: raw or processed CSV, or kprof JSON.
    pub result: PathBuf,
    /// One JSON object per row, every column, instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kprof sol`.
pub fn run(args: &SolArgs) -> Result<()> {
    let input = results_input::load(&args.result)?;
    let rows = sol::speed_of_light(&input.processed);
    if rows.is_empty() {
        bail!(
            "{} has no rows to judge (normalised tables hold ratios)",
            args.result.display()
        );
    }
    if rows
        .iter()
        .all(|r| r.verdict == sol::Verdict::Unknown && r.flops_per_s().is_none())
    {
        eprintln!(
            "kprof sol: {} holds no speed-of-light counters: profile with metrics=[\"SpeedOfLight\"] \
             (kprof run --metrics SpeedOfLight)",
            args.result.display()
        );
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let cols = sol::columns();
        rows.iter().try_for_each(|r| {
            let obj: serde_json::Map<String, serde_json::Value> = cols
                .iter()
                .cloned()
                .zip(sol::cells(r).into_iter().map(|c| match c {
                    Cell::Num(v) => serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into),
                    Cell::Text(t) => t.into(),
                }))
                .collect();
            writeln!(out, "{}", serde_json::Value::Object(obj))
        })
    } else {
        write!(out, "{}", sol::render(&rows))
    };
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
