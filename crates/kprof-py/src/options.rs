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
    add_functions!(m, [option_model]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use kprof::option_model::{lookup, OPTIONS};

    /// The keys `bench_options` and the thermal options read from the options dict
    /// (`set_from(opts, "runs", ..)`, `get(opts, "target_rsd")`, `get(options, "backend")`).
    fn keys_read() -> Vec<String> {
        let src = [include_str!("engine.rs"), include_str!("conditions.rs")].concat();
        let mut keys = Vec::new();
        for prefix in ["get(opts, \"", "get(options, \"", "set_from(opts, \""] {
            for (i, _) in src.match_indices(prefix) {
                let rest = &src[i + prefix.len()..];
                let key = &rest[..rest.find('"').unwrap_or(0)];
                if !key.is_empty() && !keys.iter().any(|k| k == key) {
                    keys.push(key.to_string());
                }
            }
        }
        keys
    }

    #[test]
    fn the_engine_reads_the_options_a_rust_field_takes_and_no_other() {
        let keys = keys_read();
        assert!(keys.len() > 20, "{keys:?}");
        for k in &keys {
            let o = lookup(k).unwrap_or_else(|| panic!("the engine reads {k:?}, an option the model lacks"));
            assert!(o.python, "{k}: not a keyword of the decorator");
        }
        // Python runs its info collectors itself; the trace settings come through `configure`.
        for o in OPTIONS
            .iter()
            .filter(|o| o.python && o.rust.is_some() && o.name != "info_collectors")
        {
            assert!(
                keys.iter().any(|k| k == o.name),
                "the engine does not read {:?} (BenchOptions::{})",
                o.name,
                o.rust.unwrap()
            );
        }
    }
}
