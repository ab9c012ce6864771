//! `store_raw`: stores a ProfileResults' raw columns as one run of a results store
//! (`ProfileResults.save_to_store` and `@kprof.analyze.kernel(store=...)`).

use std::path::PathBuf;

use kprof_core::pipeline::process;
use kprof_store::{git_info, GitInfo, NewRun, ResultStore, RunMeta, SqliteStore};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::raw_results;

/// Stores the raw columns (the same `raw` and `options` as `process_raw`) and their processed
/// table in the store `db` (created when missing) as one run called `name`, with `tags`, the
/// git state of the current directory (or `commit` when given) and the fingerprint
/// `environment` (JSON text). Returns the run id.
///
/// Raises `ValueError` for bad columns, tags or commit, and `RuntimeError` when the store
/// cannot be opened or written (a newer kprof's store, a file that is not a store, ...).
#[pyfunction]
#[pyo3(signature = (raw, options, db, name, tags, commit=None, environment=None))]
pub fn store_raw(
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
    db: PathBuf,
    name: String,
    tags: Vec<(String, String)>,
    commit: Option<String>,
    environment: Option<String>,
) -> PyResult<i64> {
    let py = raw.py();
    let (raw_results, opts, _) = raw_results(raw, options)?;
    let mut meta = RunMeta::new(name);
    for (k, v) in tags {
        if k.trim().is_empty() || k.contains('=') {
            return Err(PyValueError::new_err(format!(
                "tag key {k:?} must be non-empty and without '='; write tags={{\"gpu\": \"h200\"}}"
            )));
        }
        meta = meta.with_tag(k.trim(), v);
    }
    meta.git = match commit {
        Some(c) => {
            let c = c.trim().to_ascii_lowercase();
            if c.len() < 4 || c.len() > 64 || !c.chars().all(|x| x.is_ascii_hexdigit()) {
                return Err(PyValueError::new_err(format!(
                    "commit {c:?} is not a commit hash (4 to 64 hexadecimal digits)"
                )));
            }
            Some(GitInfo {
                commit: c,
                branch: None,
                dirty: None,
            })
        }
        None => git_info(std::path::Path::new(".")),
    };
    if let Some(host) = raw_results
        .devices
        .iter()
        .map(|d| d.host.clone())
        .find(|h| !h.is_empty())
    {
        meta.host = Some(host);
    }
    meta.environment = match environment {
        Some(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| PyValueError::new_err(format!("environment is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    py.detach(|| {
        let processed = process(&raw_results, &opts).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut store = SqliteStore::open(&db).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        store
            .insert_run(&NewRun {
                meta: &meta,
                raw: Some(&raw_results),
                processed: Some(&processed),
            })
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    })
}
