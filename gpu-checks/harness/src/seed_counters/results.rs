//! Results: what a label measured, per region and metric, and what limits a region.

use std::collections::BTreeMap;
use std::fmt;

use kprof::core::model::RawResults;

use crate::{DRAM_READ, DRAM_WRITE, DURATION};

/// One metric of one region over the recorded runs (NaN: a failed run).
#[derive(Clone, Debug, Default)]
pub(crate) struct MetricRuns {
    pub(crate) unit: String,
    /// By run index.
    pub(crate) values: Vec<f64>,
}

impl MetricRuns {
    /// Mean of the finite values; NaN when there is none.
    pub(crate) fn mean(&self) -> f64 {
        let finite: Vec<f64> = self.values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.is_empty() {
            f64::NAN
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        }
    }

    pub(crate) fn nan_count(&self) -> usize {
        self.values.iter().filter(|v| !v.is_finite()).count()
    }
}

/// What one label (mode and flush method) measured.
#[derive(Debug, Default)]
pub(crate) struct LabelResults {
    /// Region → metric → values.
    pub(crate) regions: BTreeMap<String, BTreeMap<String, MetricRuns>>,
    /// Region → kernel names of its first recorded run.
    pub(crate) kernels: BTreeMap<String, Vec<String>>,
}

impl LabelResults {
    /// Adds every series of `raw` (one benchmark's results).
    pub(crate) fn add(&mut self, raw: &RawResults) {
        for (index, series) in raw.series.iter().enumerate() {
            let mut samples: Vec<_> = raw.samples.iter().filter(|s| s.series as usize == index).collect();
            samples.sort_by_key(|s| s.run);
            let region = &series.key.annotation;
            if series.key.metric == DURATION {
                if let Some(first) = samples.first() {
                    let names = &raw.kernel_names[first.kernel as usize];
                    let names = names.split('|').filter(|n| !n.is_empty()).map(String::from).collect();
                    self.kernels.insert(region.clone(), names);
                }
            }
            self.regions.entry(region.clone()).or_default().insert(
                series.key.metric.clone(),
                MetricRuns {
                    unit: series.unit.clone(),
                    values: samples.iter().map(|s| s.value).collect(),
                },
            );
        }
    }

    fn metric(&self, region: &str, metric: &str) -> Option<&MetricRuns> {
        self.regions.get(region)?.get(metric)
    }

    /// Mean over runs; NaN when the metric is missing.
    pub(crate) fn mean(&self, region: &str, metric: &str) -> f64 {
        self.metric(region, metric).map_or(f64::NAN, MetricRuns::mean)
    }

    /// Kernels of the region's first run (0 when unknown).
    pub(crate) fn kernel_count(&self, region: &str) -> usize {
        self.kernels.get(region).map_or(0, Vec::len)
    }

    pub(crate) fn total_bytes(&self, region: &str) -> f64 {
        self.mean(region, DRAM_READ) + self.mean(region, DRAM_WRITE)
    }
}

/// What limits a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    Compute,
    Memory,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        })
    }
}

/// Compute when SM % exceeds DRAM %, as in the seed; `None` when either is NaN.
pub(crate) fn classify(sm_pct: f64, dram_pct: f64) -> Option<Bound> {
    if sm_pct.is_nan() || dram_pct.is_nan() {
        None
    } else if sm_pct > dram_pct {
        Some(Bound::Compute)
    } else {
        Some(Bound::Memory)
    }
}
