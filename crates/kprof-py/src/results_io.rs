//! `kprof._core.load_results` and `kprof._core.save_results_json`: the Python package reads and
//! writes kprof's result files through kprof-core, the code the `kprof` command uses.

use kprof_core::io::{self, ResultFile};
use kprof_core::pipeline::process;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{conditions, config_to_py, process_options, raw_from_columns};

/// What `load_results` returns: the raw table, the configurations, the parameter names and the
/// baseline of a normalised JSON file.
type Loaded<'py> = (Bound<'py, PyDict>, Bound<'py, PyList>, Vec<String>, Option<String>);

fn io_err(e: io::IoError) -> PyErr {
    match e {
        io::IoError::Open { .. } | io::IoError::Read { .. } | io::IoError::Write { .. } => {
            PyOSError::new_err(e.to_string())
        }
        e => PyValueError::new_err(e.to_string()),
    }
}

/// `load_results(path: str) -> (dict[str, list], list[list[tuple[str, Any]]], list[str], str | None)`:
/// the raw table of a kprof/nsight-python raw CSV or a kprof JSON file (the backend contract's
/// columns, `_config` indexing the configurations), the configurations as `(name, value)`
/// pairs, the parameter names, and the baseline a JSON file's processed table was normalised
/// against. A processed CSV (no raw samples) raises `ValueError` naming what to load instead.
#[pyfunction]
fn load_results<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Loaded<'py>> {
    let loaded = py.detach(|| io::read_any(&path)).map_err(io_err)?;
    let (raw, normalized) = match loaded {
        io::Loaded::Raw(raw) => (raw, None),
        io::Loaded::Json(ResultFile {
            raw: Some(raw),
            processed,
            ..
        }) => {
            let baseline = processed.and_then(|p| p.rows.iter().find_map(|r| r.normalized.clone()));
            (raw, baseline)
        }
        io::Loaded::Json(_) => {
            return Err(PyValueError::new_err(format!(
                "{}: this kprof JSON file holds no raw samples; kprof.load needs them (save with \
                 ProfileResults.save(\"x.json\") or `kprof summarize RAW.csv -o x.json`)",
                path.display()
            )))
        }
        io::Loaded::Processed(_) => {
            return Err(PyValueError::new_err(format!(
                "{} is a processed table (one row per series, no raw samples); kprof.load needs the raw \
                 samples: load the raw CSV (profiled_data-*.csv, *-raw.csv) or a kprof JSON file",
                path.display()
            )))
        }
    };
    let table = crate::engine::raw_table(py, &raw, &raw.configs)?;
    let configs = PyList::empty(py);
    for c in &raw.configs {
        configs.append(config_to_py(py, c)?)?;
    }
    Ok((table, configs, raw.param_names(), normalized))
}

/// `save_results_json(raw: dict[str, list], options: dict, path: str, environment: str | None)`:
/// processes the raw columns (as `process_raw`) and writes kprof's JSON result file (raw and
/// processed tables, and `environment`, a JSON text such as the fingerprint) through kprof-core's
/// writer (atomic, symbolic links followed, missing folders created).
#[pyfunction]
#[pyo3(signature = (raw, options, path, environment=None))]
fn save_results_json(
    py: Python<'_>,
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
    path: std::path::PathBuf,
    environment: Option<String>,
) -> PyResult<()> {
    let (params, opts) = process_options(options)?;
    let mut raw_results = raw_from_columns(raw, &params)?;
    conditions::attach(raw, &conditions::extra_names(options)?, &mut raw_results)?;
    let environment = environment
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("environment is not JSON: {e}")))?;
    py.detach(|| {
        let processed = process(&raw_results, &opts).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let file = ResultFile::new(Some(raw_results), Some(processed), environment);
        io::write_results_json(&path, &file).map_err(io_err)
    })
}

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load_results, m)?)?;
    m.add_function(wrap_pyfunction!(save_results_json, m)?)?;
    Ok(())
}
