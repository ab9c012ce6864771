//! The processing pipeline: raw samples to the processed table.
//!
//! `aggregate` (statistics per series), then optional normalisation against a baseline
//! annotation, then the geometric mean per (benchmark, annotation, metric) — the order
//! nsight-python uses, so `Geomean` is computed on normalised values when normalising.

use crate::model::{ProcessedResults, RawResults};
use crate::stats::{aggregate, AggregateOptions, StatsOptions};
use crate::transforms::{apply_geomean, normalize_against, NormalizeOptions, TransformError};

/// Options of [`process`].
#[derive(Clone, Debug, Default)]
pub struct ProcessOptions {
    /// Statistics options (stability threshold, bootstrap).
    pub stats: StatsOptions,
    /// Baseline annotation to normalise against, if any.
    pub normalize_against: Option<String>,
}

/// Turns raw samples into the processed table.
pub fn process(raw: &RawResults, opts: &ProcessOptions) -> Result<ProcessedResults, TransformError> {
    let mut processed = aggregate(
        raw,
        &AggregateOptions {
            stats: opts.stats.clone(),
        },
    );
    if let Some(baseline) = &opts.normalize_against {
        let norm = NormalizeOptions {
            stable_rsd_pct: opts.stats.stable_rsd_pct,
        };
        normalize_against(raw, &mut processed, baseline, &norm)?;
    }
    apply_geomean(&mut processed);
    Ok(processed)
}
