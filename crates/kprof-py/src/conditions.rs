//! Extra columns (run conditions, info-collector values) through `process_raw`, and the
//! environment fingerprint for Python (`_core.fingerprint_json`).
//!
//! `process_raw(raw, {"extras": [names], ...})` reads those raw columns as per-sample extras;
//! kprof-core's aggregate turns numeric ones into `X_Avg`, `X_Std`, `X_Min`, `X_Max` (others keep
//! the value of the lowest run) and counts `ThrottledRuns` from `Throttled`; the processed
//! columns are appended after the standard ones.

use kprof_core::model::ExtraColumn;
use kprof_core::{ExtraValue, ProcessedResults, RawResults};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

/// The `extras` option of `process_raw`: names of raw columns to carry as extras.
pub fn extra_names(options: &Bound<'_, PyDict>) -> PyResult<Vec<String>> {
    match options.get_item("extras")? {
        Some(v) if !v.is_none() => v.extract(),
        _ => Ok(Vec::new()),
    }
}

/// A Python value as an extra value: None / NaN missing, bool 1/0, numbers, anything else text.
pub fn extra_from_py(v: &Bound<'_, PyAny>) -> ExtraValue {
    if v.is_none() {
        return ExtraValue::Missing;
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return ExtraValue::Number(if b.is_true() { 1.0 } else { 0.0 });
    }
    if let Ok(s) = v.cast::<PyString>() {
        return ExtraValue::Text(s.to_string());
    }
    if let Ok(x) = v.extract::<f64>() {
        return if x.is_nan() {
            ExtraValue::Missing
        } else {
            ExtraValue::Number(x)
        };
    }
    match v.str() {
        Ok(s) => ExtraValue::Text(s.to_string()),
        Err(_) => ExtraValue::Missing,
    }
}

/// Adds the raw columns `names` to `out` as extras (one value per sample, in row order, as
/// `raw_from_columns` pushes one sample per row).
pub fn attach(raw: &Bound<'_, PyDict>, names: &[String], out: &mut RawResults) -> PyResult<()> {
    for name in names {
        let col = raw
            .get_item(name)?
            .ok_or_else(|| PyValueError::new_err(format!("the raw table has no extra column {name:?}")))?;
        let values: Vec<ExtraValue> = col
            .try_iter()?
            .map(|v| v.map(|v| extra_from_py(&v)))
            .collect::<PyResult<_>>()?;
        if values.len() != out.samples.len() {
            return Err(PyValueError::new_err(format!(
                "extra column {name:?} has {} values but the table has {} rows",
                values.len(),
                out.samples.len()
            )));
        }
        out.extras.retain(|c| &c.name != name);
        out.extras.push(ExtraColumn {
            name: name.clone(),
            values,
        });
    }
    Ok(())
}

fn to_py<'py>(py: Python<'py>, v: Option<&ExtraValue>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Some(ExtraValue::Number(x)) if !x.is_nan() => x.into_pyobject(py)?.into_any(),
        Some(ExtraValue::Text(s)) => PyString::new(py, s).into_any(),
        _ => py.None().into_bound(py),
    })
}

/// Appends the rows' aggregated extras to the processed columns `out`, in first-seen order.
pub fn append_processed(py: Python<'_>, out: &Bound<'_, PyDict>, p: &ProcessedResults) -> PyResult<()> {
    let mut names: Vec<&str> = Vec::new();
    for r in &p.rows {
        for (n, _) in &r.extras {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    for name in names {
        let values = p
            .rows
            .iter()
            .map(|r| to_py(py, r.extras.iter().find(|(n, _)| n == name).map(|(_, v)| v)))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item(name, PyList::new(py, values)?)?;
    }
    Ok(())
}

/// `fingerprint_json() -> str | None`: the environment fingerprint of this process's profiler
/// (collected at its first benchmark), as JSON; None before any benchmark.
#[pyfunction]
fn fingerprint_json() -> Option<String> {
    crate::engine::with_profiler(|p| p.and_then(|p| p.fingerprint()).map(|f| f.to_json()))
}

/// Adds `fingerprint_json` to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [fingerprint_json]);
    Ok(())
}

/// The thermal keys of the backend options dict (`thermal_mode`, `thermal_wait`,
/// `thermal_cont`, `thermal_timeout`) into `o.thermal`; None keeps nsight's defaults.
pub fn apply_thermal_options(opts: &Bound<'_, PyDict>, o: &mut kprof::runner::BenchOptions) -> PyResult<()> {
    use crate::engine::{extract, get, parse_option, set_from};
    set_from(opts, "thermal_mode", &mut o.thermal.mode, parse_option)?;
    set_from(opts, "thermal_wait", &mut o.thermal.wait_c, extract)?;
    set_from(opts, "thermal_cont", &mut o.thermal.cont_c, extract)?;
    if let Some(v) = get(opts, "thermal_timeout")? {
        let s: f64 = v.extract()?;
        if !(s.is_finite() && s > 0.0) {
            return Err(PyValueError::new_err(format!(
                "thermal_timeout must be a positive number of seconds, got {s}"
            )));
        }
        o.thermal.timeout = std::time::Duration::from_secs_f64(s);
    }
    Ok(())
}

/// `thermal_device` must be the CUDA device the profiler runs on (its ordinal); the guard
/// watches that device (mapped to NVML by UUID). Another ordinal is an error, not a silent
/// guard on the wrong GPU.
pub fn check_thermal_device(wanted: Option<i64>, profiler: &kprof::runner::Profiler) -> Result<(), String> {
    let Some(wanted) = wanted else { return Ok(()) };
    let current = profiler
        .extras()
        .iter()
        .find(|(n, _)| n == "DeviceOrdinal")
        .and_then(|(_, v)| match v {
            ExtraValue::Number(x) => Some(*x as i64),
            _ => None,
        });
    match current {
        Some(c) if c != wanted => Err(format!(
            "thermal_device={wanted} is not the CUDA device this process profiles (device {c}, the current device when \
             kprof started); kprof's thermal guard watches the benchmark's own device. Leave thermal_device=None, or \
             make device {wanted} current (torch.cuda.set_device({wanted}) or CUDA_VISIBLE_DEVICES) before the first benchmark"
        )),
        _ => Ok(()),
    }
}
