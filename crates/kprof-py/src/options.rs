//! `option_model()`: the engine's one model of a benchmark's options (`kprof::option_model`) for
//! the Python package (`python/kprof/_options.py` checks the decorator's choices from it).

use kprof::option_model::{OptionSpec, OPTIONS};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn spec_to_py<'py>(py: Python<'py>, o: &OptionSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", o.name)?;
    d.set_item("type", o.ty.name())?;
    d.set_item("choices", PyList::new(py, o.ty.choices())?)?;
    d.set_item("optional", o.optional)?;
    d.set_item("default", o.default)?;
    d.set_item("doc", o.doc)?;
    d.set_item("python", o.python)?;
    d.set_item("python_only", o.python_only())?;
    d.set_item("configure", o.configure)?;
    d.set_item("rust", o.rust)?;
    d.set_item("cli", o.cli.map(|c| c.flag))?;
    d.set_item("cli_choices", o.cli.and_then(|c| c.choices).map(|c| c.to_vec()))?;
    d.set_item("env", o.env)?;
    Ok(d)
}

/// `option_model() -> list[OptionSpec]`: every option of a benchmark, in the decorator's order
/// (see `kprof::option_model::OPTIONS` for the keys' meaning).
#[pyfunction]
fn option_model(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let specs = OPTIONS
        .iter()
        .map(|o| spec_to_py(py, o))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, specs)
}

/// Adds `option_model` to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(option_model, m)?)?;
    Ok(())
}
