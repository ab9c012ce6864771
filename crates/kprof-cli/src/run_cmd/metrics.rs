//! `kprof run --metrics`: the counter metrics of the counter launch, Nsight Compute's section
//! and set names expanded for the chip, and the names checked with the Profiler Host API before
//! any program runs.

use anyhow::{bail, Context, Result};
use kprof::counters::host::c_names;
use kprof::counters::{sections, CuptiLib, HostObject, MetricsCatalog};
use kprof_core::model::DEFAULT_METRIC;

/// The counter metrics of `--metrics`: trimmed, without empty names, duplicates and
/// `gpu__time_duration.sum` (the timing launch's metric).
pub fn counter_metrics(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names.iter().map(|n| n.trim()) {
        if !n.is_empty() && n != DEFAULT_METRIC && !out.iter().any(|m| m == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// `--metrics` with Nsight Compute's section and set names expanded for the chip (the device's,
/// else `KPROF_CHIP`'s), printing what is left out and the passes of the set on stderr.
pub(super) fn expand_sections(names: &[String]) -> Result<Vec<String>> {
    let names: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if !sections::has_sections(&names) {
        return Ok(names);
    }
    let Some((lib, chip)) = metrics_chip()? else {
        bail!("--metrics: section and set names need the chip: run on the GPU machine or set KPROF_CHIP")
    };
    let e = sections::resolve(lib, &chip, &names).context("--metrics")?;
    if let Some(note) = e.left_out_note() {
        eprintln!("kprof: {note}");
    }
    let passes = sections::passes(lib, &chip, &e.metrics).context("--metrics")?;
    eprintln!(
        "kprof: --metrics: {} metrics for {chip}, {passes} replay passes per kernel",
        e.metrics.len()
    );
    Ok(e.metrics)
}

/// Checks counter metric names with a chip's catalog; returns their units (ncu spelling).
/// Unknown names give one error naming the closest valid ones.
pub fn validate_metrics(catalog: &MetricsCatalog, names: &[String]) -> Result<Vec<(String, String)>> {
    let infos = catalog
        .validate(names)
        .with_context(|| format!("--metrics: not valid for {}", catalog.chip()))?;
    Ok(infos.into_iter().map(|i| (i.name, i.properties.dim_unit)).collect())
}

/// Checks counter metric names for `chip` as the counter launch will use them: added to one
/// Profiler Host API object (what decides whether CUPTI can collect them together). Only when
/// that refuses them is the chip's whole catalog read (a few times slower: every metric's
/// properties), to name the unknown names and the closest valid ones ([`validate_metrics`]).
pub fn check_metrics(lib: &'static CuptiLib, chip: &str, names: &[String]) -> Result<()> {
    let quick = || -> Result<(), kprof::counters::CountersError> {
        let mut host = HostObject::new(lib, chip, None)?;
        host.add_metrics(&c_names(names)?)
    };
    let Err(refused) = quick() else {
        return Ok(());
    };
    let catalog =
        MetricsCatalog::with_lib(lib, chip, None).with_context(|| format!("cannot read the metrics of {chip}"))?;
    validate_metrics(&catalog, names)?;
    Err(anyhow::Error::new(refused)).with_context(|| format!("--metrics: not valid for {chip}"))
}

/// The libcupti and chip to check `--metrics` with (`kprof::counters::sections::host_chip`).
pub(super) fn metrics_chip() -> Result<Option<(&'static CuptiLib, String)>> {
    sections::host_chip().context("cannot load CUPTI to check --metrics")
}
