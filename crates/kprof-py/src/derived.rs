//! `kprof._core.derive_rows`: the decorator's `derive_metric` through kprof-core's derived
//! metrics ([`kprof_core::transforms::derive_samples`], the code behind the Rust API's
//! `apply_derived`): the runs are grouped, the callable called once per run, and the derived
//! values checked (a name of a measured metric, a name twice in one run, two units for one
//! derived metric) there; the Python side only adapts nsight-python's calling convention and
//! appends the rows to its table.

use kprof_core::columns::CONFIG_INDEX_COLUMN;
use kprof_core::transforms::{derive_samples, DerivedSample, DerivedValue};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::engine::kprof_exception;
use crate::raw_from_columns;

/// One derived row: the row it derives from, the metric, the value and the unit (None: none).
type DerivedRow = (usize, String, f64, Option<String>);

/// `derive_rows(table: dict[str, list], metrics: list[str], derive) -> list[tuple[int, str, float, str | None]]`.
///
/// `table` holds the raw columns of the backend contract (`RAW_COLUMNS`, and `_config`, the
/// configuration index of each row, by which runs are told apart). Rows are grouped by
/// (benchmark, annotation, `_config`, run), in first-appearance order; `derive(row, values)` is
/// called once per group with the group's first row and the group's values of `metrics` (NaN
/// when missing or failed), and returns `(name, value, unit or None)` tuples. Returns every
/// derived value with the row it derives from, in order. An exception raised by `derive`
/// propagates as it is; derived values kprof-core refuses raise `kprof.ConfigError`.
#[pyfunction]
fn derive_rows(
    py: Python<'_>,
    table: &Bound<'_, PyDict>,
    metrics: Vec<String>,
    derive: &Bound<'_, PyAny>,
) -> PyResult<Vec<DerivedRow>> {
    let raw = raw_from_columns(table, &[CONFIG_INDEX_COLUMN.to_string()])?;
    let mut raised: Option<PyErr> = None;
    let derived = derive_samples(&raw, |run| {
        let values: Vec<f64> = metrics.iter().map(|m| run.get(m).unwrap_or(f64::NAN)).collect();
        let items = derive
            .call1((run.sample, values))
            .and_then(|out| out.extract::<Vec<(String, f64, Option<String>)>>());
        match items {
            Ok(items) => Ok(items
                .into_iter()
                .map(|(name, value, unit)| DerivedValue::new(name, value, unit.unwrap_or_default()))
                .collect()),
            Err(e) => {
                let message = e.to_string();
                raised = Some(e);
                Err(message)
            }
        }
    });
    match (derived, raised) {
        (Ok(rows), _) => Ok(rows
            .into_iter()
            .map(|DerivedSample { sample, derived: d }| {
                (sample, d.metric, d.value, Some(d.unit).filter(|u| !u.is_empty()))
            })
            .collect()),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(kprof_exception(py, "ConfigError", format!("derive_metric: {e}"))),
    }
}

/// Adds `derive_rows` to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [derive_rows]);
    Ok(())
}
