//! `kprof._core.load_results`, `save_results_json`, `write_csv` and `write_trace`: the
//! Python package reads and writes kprof's result files through kprof-core's one reader and one
//! writer per format, the code the `kprof` command and the engine use.

use kprof_core::io::{self, ResultFile};
use kprof_core::pipeline::process;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{config_to_py, raw_results};

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
    let (raw_results, opts, _) = raw_results(raw, options)?;
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

/// `write_csv(raw: dict[str, list], options: dict, path: str, table: str)`: writes a CSV of the
/// raw columns (as `process_raw` takes them, `options["extras"]` naming the extra columns)
/// through kprof-core's one writer per table (atomic, symbolic links followed, missing folders
/// created): `table="raw"`, the raw CSV (nsight-python's columns, the extra columns, the
/// parameters, then `Benchmark,Run`); `table="processed"`, the processed table (processed as
/// `process_raw` does), the file `kprof summarize -o` writes. Bad columns raise `ValueError`, a
/// failed write `OSError`.
#[pyfunction]
fn write_csv(
    py: Python<'_>,
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
    path: std::path::PathBuf,
    table: &str,
) -> PyResult<()> {
    let (raw_results, opts, _) = raw_results(raw, options)?;
    match table {
        "raw" => py.detach(|| io::write_raw_csv(&path, &raw_results).map_err(io_err)),
        "processed" => py.detach(|| {
            let processed = process(&raw_results, &opts).map_err(|e| PyValueError::new_err(e.to_string()))?;
            io::write_processed_csv(&path, &processed).map_err(io_err)
        }),
        other => Err(PyValueError::new_err(format!(
            "write_csv: table must be 'raw' or 'processed', got {other:?}"
        ))),
    }
}

/// Registers the functions.
/// `write_trace(timeline_json: str, path: str) -> None`: a timeline (`{"kernels": [...],
/// "regions": [...], "counters": [...]}`, the fields of kprof-core's `io::trace` structs) written
/// as Chrome trace-event JSON by kprof-core's one writer of the format (atomically).
#[pyfunction]
fn write_trace(py: Python<'_>, timeline_json: &str, path: std::path::PathBuf) -> PyResult<()> {
    let timeline: io::trace::Timeline =
        serde_json::from_str(timeline_json).map_err(|e| PyValueError::new_err(format!("not a kprof timeline: {e}")))?;
    py.detach(|| io::trace::write_chrome_trace(&path, &timeline))
        .map_err(io_err)
}

/// `kprof._core.Timeline`: the engine's timeline of one benchmark call, kept in Rust (no copy of
/// every kernel into Python objects) until `ProfileResults.to_trace` writes it.
#[pyclass(name = "Timeline", module = "kprof._core", frozen)]
pub struct PyTimeline {
    inner: io::trace::Timeline,
}

impl PyTimeline {
    pub fn new(inner: io::trace::Timeline) -> Self {
        PyTimeline { inner }
    }
}

#[pymethods]
impl PyTimeline {
    /// `Timeline(timeline_json)`: from the JSON of kprof-core's `Timeline` (what the engine
    /// builds; for tests and replays).
    #[new]
    fn from_json(timeline_json: &str) -> PyResult<Self> {
        serde_json::from_str(timeline_json)
            .map(PyTimeline::new)
            .map_err(|e| PyValueError::new_err(format!("not a kprof timeline: {e}")))
    }

    /// The number of kernels.
    fn __len__(&self) -> usize {
        self.inner.kernels.len()
    }

    /// Every region as `(name, config, run, start_ns, device)`, `device` that of its first kernel
    /// (0 without one): where `kprof/timeline.py` puts the counter values.
    fn regions(&self) -> Vec<(String, String, u32, u64, u32)> {
        let mut device: std::collections::HashMap<(&str, &str, u32), u32> = std::collections::HashMap::new();
        for k in &self.inner.kernels {
            device.entry((&k.region, &k.config, k.run)).or_insert(k.device);
        }
        self.inner
            .regions
            .iter()
            .map(|r| {
                let d = device
                    .get(&(r.name.as_str(), r.config.as_str(), r.run))
                    .copied()
                    .unwrap_or(0);
                (r.name.clone(), r.config.clone(), r.run, r.start_ns, d)
            })
            .collect()
    }

    /// `write(path, counters_json)`: the timeline plus the counter points (a JSON list of
    /// `{"device", "name", "ts_ns", "value"}`) as Chrome trace-event JSON, atomically.
    fn write(&self, py: Python<'_>, path: std::path::PathBuf, counters_json: &str) -> PyResult<()> {
        let counters: Vec<io::trace::CounterPoint> = serde_json::from_str(counters_json)
            .map_err(|e| PyValueError::new_err(format!("not a list of counter points: {e}")))?;
        py.detach(|| {
            let mut t = self.inner.clone();
            t.counters.extend(counters);
            io::trace::write_chrome_trace(&path, &t)
        })
        .map_err(io_err)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTimeline>()?;
    add_functions!(m, [load_results, write_trace, save_results_json, write_csv]);
    Ok(())
}
