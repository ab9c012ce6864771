//! `kprof compare --explain`: for each significant row (a regression or an improvement), what
//! else changed between the two sides for the same region and configuration, among what the
//! results hold: the kernels (names and count), the other metrics (bytes, instructions,
//! occupancy, throughputs, cycles and clocks; judged as compare judges any row) and the SM clock
//! the run conditions recorded (`SMClockMHz`). When nothing moved: "no cause found among the
//! counters".
//!
//! The kernels and clocks come from the result files themselves; a baseline from a results store
//! (`--against`) gives only its metrics.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use kprof_core::io::{self, Loaded};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::ExtraValue;

use crate::compare_cmd::{fmt_pct, Key, Row, Verdict};

/// The run-condition column of the SM clock, averaged per series.
const SM_CLOCK_COLUMN: &str = "SMClockMHz_Avg";

/// (benchmark, annotation, config) of a region in one configuration.
type RegionKey = (String, String, String);
/// Kernel names of a region's first run and its mean SM clock in MHz.
type RegionInfo = (Vec<String>, Option<f64>);

/// What a side's file says about each (benchmark, annotation, configuration) besides metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SideInfo {
    regions: HashMap<RegionKey, RegionInfo>,
}

impl SideInfo {
    /// Reads the kernels and SM clocks of a result file (raw, processed or JSON).
    pub fn load(path: &Path) -> Result<SideInfo> {
        let processed = match io::read_any(path)? {
            Loaded::Raw(raw) => process(&raw, &ProcessOptions::default())?,
            Loaded::Processed(p) => p,
            Loaded::Json(f) => match (f.processed, f.raw) {
                (Some(p), _) => p,
                (None, Some(raw)) => process(&raw, &ProcessOptions::default())?,
                (None, None) => return Ok(SideInfo::default()),
            },
        };
        let mut info = SideInfo::default();
        for r in &processed.rows {
            let clock = r
                .extras
                .iter()
                .find(|(n, _)| n == SM_CLOCK_COLUMN)
                .and_then(|(_, v)| match v {
                    ExtraValue::Number(x) if x.is_finite() => Some(*x),
                    _ => None,
                });
            let kernels: Vec<String> = r
                .kernel
                .split('|')
                .filter(|k| !k.is_empty())
                .map(String::from)
                .collect();
            info.regions
                .entry((r.benchmark.clone(), r.annotation.clone(), r.config.to_string()))
                .or_insert((kernels, clock));
        }
        Ok(info)
    }

    fn of(&self, key: &Key) -> Option<&RegionInfo> {
        if key.benchmark.is_empty() {
            // Benchmarks were left out of the keys (a file without a Benchmark column).
            return self
                .regions
                .iter()
                .find(|((_, a, c), _)| *a == key.annotation && *c == key.config)
                .map(|(_, v)| v);
        }
        self.regions
            .get(&(key.benchmark.clone(), key.annotation.clone(), key.config.clone()))
    }
}

/// The explanation of one significant row.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The row explained.
    pub key: Key,
    /// Its verdict and change, in words.
    pub what: String,
    /// What else changed; empty: no cause found.
    pub causes: Vec<String>,
}

fn kernel_changes(base: &[String], new: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if base.len() != new.len() {
        out.push(format!("kernels per run: {} -> {}", base.len(), new.len()));
    }
    let gone: Vec<&String> = base.iter().filter(|k| !new.contains(k)).collect();
    let came: Vec<&String> = new.iter().filter(|k| !base.contains(k)).collect();
    if !gone.is_empty() || !came.is_empty() {
        let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        out.push(format!("kernels: gone [{}], new [{}]", list(&gone), list(&came)));
    }
    out
}

fn clock_change(base: Option<f64>, new: Option<f64>, threshold_pct: f64) -> Option<String> {
    let (b, n) = (base?, new?);
    let pct = (n - b) / b * 100.0;
    (pct.abs() >= threshold_pct).then(|| format!("SM clock {b:.0} -> {n:.0} MHz ({})", fmt_pct(pct)))
}

/// What kind of counter a metric is, for the words of an explanation.
fn kind(metric: &str) -> &'static str {
    let m = metric.to_ascii_lowercase();
    if m.contains("time_duration") {
        "duration"
    } else if m.contains("bytes") || m.contains("sectors") {
        "bytes"
    } else if m.contains("inst") {
        "instructions"
    } else if m.contains("warps_active") || m.contains("occupancy") {
        "occupancy"
    } else if m.contains("per_second") || m.contains("cycles") {
        "cycles/clocks"
    } else if m.contains("pct") || m.contains("throughput") {
        "throughput"
    } else {
        "metric"
    }
}

/// Explains every regression and improvement of `rows` with the other rows of its region and
/// configuration that moved (significantly, or beyond the threshold when untested), and the
/// kernels and clocks of the sides' files when given.
pub fn explain(rows: &[Row], base: Option<&SideInfo>, new: Option<&SideInfo>, threshold_pct: f64) -> Vec<Explanation> {
    let same_region =
        |a: &Key, b: &Key| a.benchmark == b.benchmark && a.annotation == b.annotation && a.config == b.config;
    let mut out = Vec::new();
    for r in rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
    {
        let mut causes = Vec::new();
        if let (Some(b), Some(n)) = (base.and_then(|s| s.of(&r.key)), new.and_then(|s| s.of(&r.key))) {
            causes.extend(kernel_changes(&b.0, &n.0));
            causes.extend(clock_change(b.1, n.1, threshold_pct));
        }
        for o in rows
            .iter()
            .filter(|o| o.key.metric != r.key.metric && same_region(&o.key, &r.key))
        {
            let moved = match o.verdict {
                Verdict::Regression | Verdict::Improvement => true,
                Verdict::Untested => o.change_pct.abs() >= threshold_pct,
                _ => false,
            };
            if moved {
                let p = match o.p_value {
                    0.0 => ", p < 1e-300".to_string(),
                    p if p.is_finite() => format!(", p = {p:.1e}"),
                    _ => String::new(),
                };
                causes.push(format!(
                    "{} {}: {}{p}",
                    kind(&o.key.metric),
                    o.key.metric,
                    fmt_pct(o.change_pct)
                ));
            }
        }
        out.push(Explanation {
            key: r.key.clone(),
            what: format!("{} {}", r.verdict.as_str(), fmt_pct(r.change_pct)),
            causes,
        });
    }
    out
}

/// The explanations as text, one block per row.
pub fn render(expl: &[Explanation]) -> String {
    if expl.is_empty() {
        return "explain: no significant change to explain\n".into();
    }
    let mut s = String::from("explain:\n");
    for e in expl {
        let cfg = if e.key.config.is_empty() {
            String::new()
        } else {
            format!(" [{}]", e.key.config)
        };
        s.push_str(&format!("  {}{cfg} {}: {}\n", e.key.annotation, e.key.metric, e.what));
        if e.causes.is_empty() {
            s.push_str("    no cause found among the counters\n");
        }
        for c in &e.causes {
            s.push_str(&format!("    {c}\n"));
        }
    }
    s
}
