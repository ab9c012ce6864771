//! Comparison with ncu: a kprof value against ncu's, and the limits of the judged metrics.

use std::fmt;

use crate::results::LabelResults;
use crate::{DRAM_READ, DRAM_WRITE, DURATION, REGIONS, STEP6_METRICS};

fn is_percentage(metric: &str, unit: &str) -> bool {
    unit == "%" || metric.contains(".pct_")
}

/// A kprof value against ncu's: % difference for durations and bytes, point difference for
/// percentages.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Diff {
    Percent(f64),
    Points(f64),
}

impl Diff {
    fn new(metric: &str, unit: &str, kprof: f64, ncu: f64) -> Diff {
        if is_percentage(metric, unit) {
            Diff::Points(kprof - ncu)
        } else {
            Diff::Percent((kprof / ncu - 1.0) * 100.0)
        }
    }

    pub(crate) fn magnitude(self) -> f64 {
        match self {
            Diff::Percent(d) | Diff::Points(d) => d.abs(),
        }
    }

    /// `2 %` or `1 pt`, in this diff's kind.
    pub(crate) fn limit_text(self, limit: f64) -> String {
        match self {
            Diff::Percent(_) => format!("{limit} %"),
            Diff::Points(_) => format!("{limit} pt"),
        }
    }
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diff::Percent(d) => write!(f, "{d:+.2} %"),
            Diff::Points(d) => write!(f, "{d:+.2} pt"),
        }
    }
}

/// The limit a judged value must meet against ncu, for the metrics that are judged.
pub(crate) fn ncu_limit(metric: &str, unit: &str) -> Option<f64> {
    if is_percentage(metric, unit) {
        Some(1.0)
    } else if metric == DURATION {
        Some(2.0)
    } else if metric == DRAM_READ || metric == DRAM_WRITE {
        Some(0.5)
    } else {
        None
    }
}

/// One (region, metric) of a label next to ncu's.
pub(crate) struct Comparison {
    pub(crate) region: &'static str,
    pub(crate) metric: String,
    pub(crate) unit: String,
    pub(crate) kprof: f64,
    pub(crate) ncu: f64,
    pub(crate) diff: Diff,
}

pub(crate) fn compare(data: &LabelResults, ncu: &LabelResults) -> Vec<Comparison> {
    let mut out = Vec::new();
    for region in REGIONS {
        let Some(metrics) = data.regions.get(region) else {
            continue;
        };
        for metric in metric_order(metrics.keys()) {
            let runs = &metrics[&metric];
            let (kprof, ncu_mean) = (runs.mean(), ncu.mean(region, &metric));
            out.push(Comparison {
                region,
                diff: Diff::new(&metric, &runs.unit, kprof, ncu_mean),
                unit: runs.unit.clone(),
                metric,
                kprof,
                ncu: ncu_mean,
            });
        }
    }
    out
}

/// The metrics in the order of [`STEP6_METRICS`], others after them by name.
fn metric_order<'a>(metrics: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut v: Vec<String> = metrics.cloned().collect();
    v.sort_by_key(|m| {
        (
            STEP6_METRICS.iter().position(|k| k == m).unwrap_or(usize::MAX),
            m.clone(),
        )
    });
    v
}
