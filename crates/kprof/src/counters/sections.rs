//! Nsight Compute's section and set names (`SpeedOfLight`, `basic`) in `metrics=`: expanded into
//! their metric names (`kprof_core::sections`) for the chip, keeping the ones its counters know.
//!
//! The doors call [`resolve`] before the metric list reaches the engine: kprof-py for `metrics=`,
//! `kprof run --metrics`, `kprof metrics --passes`/`--expand`; from Rust, put
//! [`expand_metrics`]'s names in `BenchOptions::metrics`. Metric names given as such are kept
//! as they are (a typo still fails validation with the closest names); a section's metric that
//! the chip's counters do not know (ncu computes it from SASS or the launch) is left out and
//! listed in [`Expansion::left_out`] with its reason.

use kprof_core::sections::{self, Expansion, LeftOut};

use super::host::{c_names, CuptiLib, HostObject};
use super::metrics::is_bad_name_code;
use super::CountersError;

/// Whether any name is a section or set rather than a metric.
pub fn has_sections<S: AsRef<str>>(names: &[S]) -> bool {
    names.iter().any(|n| !sections::is_metric_name(n.as_ref().trim()))
}

/// Expands section and set names for `chip` and leaves out the section metrics the chip's
/// counters do not know (asked one by one of the Profiler Host API: no GPU needed).
pub fn resolve<S: AsRef<str>>(lib: &'static CuptiLib, chip: &str, names: &[S]) -> Result<Expansion, CountersError> {
    let mut e = sections::expand_for_chip(names, chip)?;
    if e.sections.is_empty() {
        return Ok(e);
    }
    let given: Vec<&str> = names.iter().map(|n| n.as_ref().trim()).collect();
    let mut kept = Vec::with_capacity(e.metrics.len());
    for m in std::mem::take(&mut e.metrics) {
        if given.contains(&m.as_str()) || known(lib, chip, &m)? {
            kept.push(m);
        } else {
            let section = e
                .sections
                .iter()
                .find(|id| {
                    sections::table()
                        .section(id)
                        .is_some_and(|s| s.metrics.iter().any(|x| x.name == m))
                })
                .cloned()
                .unwrap_or_default();
            e.left_out.push(LeftOut {
                metric: m,
                section,
                reason: format!("not a counter of {chip}: ncu derives it from the SASS or the launch"),
            });
        }
    }
    e.metrics = kept;
    Ok(e)
}

fn known(lib: &'static CuptiLib, chip: &str, metric: &str) -> Result<bool, CountersError> {
    let mut host = HostObject::new(lib, chip, None)?;
    match host.add_metrics(&c_names(&[metric])?) {
        Ok(()) => Ok(true),
        Err(CountersError::Cupti { code, .. }) if is_bad_name_code(code) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The replay passes a metric set needs (names only; sections already expanded).
pub fn passes<S: AsRef<str>>(lib: &'static CuptiLib, chip: &str, metrics: &[S]) -> Result<usize, CountersError> {
    let mut host = HostObject::new(lib, chip, None)?;
    host.add_metrics(&c_names(metrics)?)?;
    lib.num_passes(&host.config_image()?)
}

/// The libcupti and chip to expand and check metric names with: the device's when a GPU is
/// present (the engine's libcupti), else `KPROF_CHIP`'s with the offline libcupti search
/// ([`super::locate_cupti`]). `Ok(None)` when neither is known. `KPROF_NO_DEVICE=1` skips the
/// device.
pub fn host_chip() -> Result<Option<(&'static CuptiLib, String)>, crate::error::EngineError> {
    let gpu = std::env::var_os("KPROF_NO_DEVICE").is_none() && std::path::Path::new("/dev/nvidia0").exists();
    if gpu {
        if let Some(chip) = super::device_chip() {
            return Ok(Some((super::engine_cupti()?, chip)));
        }
    }
    let Some(chip) = std::env::var("KPROF_CHIP").ok().filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    Ok(Some((CuptiLib::load(&super::locate_cupti()?)?, chip)))
}

/// [`resolve`] with [`host_chip`], for the Rust API (`BenchOptions { metrics:
/// expand_metrics(&["SpeedOfLight"])?.metrics, .. }`) and kprof-py's `metrics=`. Without
/// section names, the names as given, with no library loaded.
pub fn expand_metrics<S: AsRef<str>>(names: &[S]) -> Result<Expansion, crate::error::EngineError> {
    if !has_sections(names) {
        return Ok(sections::expand(names, 0).map_err(CountersError::from)?);
    }
    let (lib, chip) = host_chip()?.ok_or_else(|| {
        CountersError::Usage(
            "section and set names need the chip: run on the GPU machine or set KPROF_CHIP (e.g. GH100)".into(),
        )
    })?;
    Ok(resolve(lib, &chip, names)?)
}

/// The replay passes of `metrics` on this machine's chip ([`host_chip`]); `None` when no chip is
/// known. Shown before a run whose metrics came from sections.
pub fn passes_here<S: AsRef<str>>(metrics: &[S]) -> Result<Option<usize>, crate::error::EngineError> {
    match host_chip()? {
        Some((lib, chip)) => Ok(Some(passes(lib, &chip, metrics)?)),
        None => Ok(None),
    }
}
