//! `kprof._core`: the compiled part of kprof's Python package.
//!
//! The Python package (`python/kprof`) holds the decorator API; this module holds what must be
//! Rust: conversions between Python values and kprof-core's model, and (wired by the engine
//! merge) the run loop, `process_raw` and the CLI.
//!
//! What is here today:
//! - `__version__`;
//! - `param_value(obj)` and `convert_config(pairs)`: Python scalar → [`ParamValue`] rules;
//! - `cli_main(argv)`: a placeholder (only `--version` does anything);
//! - `process_raw(raw, options)`: a placeholder raising `NotImplementedError`, with the contract
//!   the Python side is written against (see its doc string and `python/kprof/results.py`).
//!
//! The Rust helpers [`param_value_from_py`], [`param_value_to_py`], [`config_from_py`] and
//! [`config_to_py`] are public so the engine bindings can reuse them.

use kprof_core::{Config, ParamValue};
use pyo3::exceptions::{PyNotImplementedError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The package version (the workspace version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Converts one Python value to a [`ParamValue`].
///
/// Rules, in order:
/// - `bool` (and `numpy.bool_`) → `Bool`;
/// - `int` (and numpy integers) → `Int`; an int that does not fit in i64 → `Str(str(obj))`;
/// - `float` (and numpy floating scalars) → `Float`;
/// - `str` → `Str`;
/// - anything else (a `torch.dtype`, a tuple, a tensor, ...) → `Str(str(obj))`. The Python side
///   keeps the original object and maps the text back when it builds tables.
pub fn param_value_from_py(obj: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(ParamValue::Bool(obj.is_truthy()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i64>() {
            Ok(i) => ParamValue::Int(i),
            Err(_) => ParamValue::Str(obj.str()?.to_string()),
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(ParamValue::Float(obj.extract::<f64>()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(ParamValue::Str(obj.extract::<String>()?));
    }
    if let Some(v) = numpy_scalar(obj)? {
        return Ok(v);
    }
    Ok(ParamValue::Str(obj.str()?.to_string()))
}

/// numpy scalars (`np.int32(4)`, `np.float32(0.5)`, `np.bool_(True)`), recognised without
/// importing numpy: the type lives in module `numpy` and has a `dtype.kind`.
fn numpy_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<ParamValue>> {
    let ty = obj.get_type();
    let module = match ty.getattr("__module__") {
        Ok(m) => m.extract::<String>().unwrap_or_default(),
        Err(_) => return Ok(None),
    };
    if module != "numpy" {
        return Ok(None);
    }
    let kind = match obj.getattr("dtype").and_then(|d| d.getattr("kind")) {
        Ok(k) => k.extract::<String>().unwrap_or_default(),
        Err(_) => return Ok(None),
    };
    if obj.getattr("ndim").and_then(|n| n.extract::<i64>()).unwrap_or(-1) != 0 {
        return Ok(None);
    }
    Ok(match kind.as_str() {
        "b" => Some(ParamValue::Bool(obj.is_truthy()?)),
        "i" | "u" => match obj.call_method0("__index__")?.extract::<i64>() {
            Ok(i) => Some(ParamValue::Int(i)),
            Err(_) => Some(ParamValue::Str(obj.str()?.to_string())),
        },
        "f" => Some(ParamValue::Float(obj.call_method0("__float__")?.extract::<f64>()?)),
        _ => None,
    })
}

/// Converts a [`ParamValue`] to the matching Python scalar.
pub fn param_value_to_py<'py>(py: Python<'py>, value: &ParamValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        ParamValue::Int(i) => i.into_pyobject(py)?.into_any(),
        ParamValue::Float(f) => f.into_pyobject(py)?.into_any(),
        ParamValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        ParamValue::Str(s) => PyString::new(py, s).into_any(),
    })
}

/// Builds a [`Config`] from an iterable of `(name, value)` pairs, the form the Python wrapper
/// hands to the backend.
pub fn config_from_py(pairs: &Bound<'_, PyAny>) -> PyResult<Config> {
    let mut config = Config::new();
    for item in pairs.try_iter()? {
        let item = item?;
        let pair = item.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!(
                "a config must be a sequence of (name, value) tuples, got an item of type {}",
                item.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if pair.len() != 2 {
            return Err(PyTypeError::new_err(format!(
                "a config item must be a (name, value) pair, got a tuple of length {}",
                pair.len()
            )));
        }
        let name: String = pair.get_item(0)?.extract()?;
        let value = param_value_from_py(&pair.get_item(1)?)?;
        config.params.push((name, value));
    }
    Ok(config)
}

/// A [`Config`] as a Python list of `(name, value)` tuples.
pub fn config_to_py<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (name, value) in &config.params {
        let tuple = PyTuple::new(py, [PyString::new(py, name).into_any(), param_value_to_py(py, value)?])?;
        list.append(tuple)?;
    }
    Ok(list)
}

fn kind_name(value: &ParamValue) -> &'static str {
    match value {
        ParamValue::Int(_) => "int",
        ParamValue::Float(_) => "float",
        ParamValue::Bool(_) => "bool",
        ParamValue::Str(_) => "str",
    }
}

/// `param_value(obj) -> tuple[str, int | float | bool | str]`: the kind (`"int"`, `"float"`,
/// `"bool"`, `"str"`) and the value kprof's core stores for one configuration value.
#[pyfunction]
fn param_value<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    let v = param_value_from_py(obj)?;
    Ok((kind_name(&v), param_value_to_py(py, &v)?))
}

/// `convert_config(pairs) -> list[tuple[str, int | float | bool | str]]`: a config as the core
/// stores it (round trip through [`Config`]).
#[pyfunction]
fn convert_config<'py>(py: Python<'py>, pairs: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let config = config_from_py(pairs)?;
    config_to_py(py, &config)
}

/// `cli_main(argv: list[str]) -> int`: the `kprof` console command.
///
/// PLACEHOLDER until the CLI library is wired in: prints `kprof <version>` for `--version`/`-V`
/// and returns 0 for everything else.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    if argv.iter().skip(1).any(|a| a == "--version" || a == "-V") {
        // Through Python's print so it shows in notebooks and under redirected sys.stdout.
        let builtins = py.import("builtins")?;
        builtins.getattr("print")?.call1((format!("kprof {VERSION}"),))?;
    }
    Ok(0)
}

/// `process_raw(raw: dict[str, list], options: dict) -> dict[str, list]`: raw columns to processed
/// columns. Not wired yet: raises `NotImplementedError` (the Python side turns that into
/// `kprof.NotAvailableYetError`). The contract is documented in `python/kprof/results.py`.
#[pyfunction]
fn process_raw(_raw: &Bound<'_, PyAny>, _options: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    Err(PyNotImplementedError::new_err(
        "kprof._core.process_raw is not wired to kprof-core's statistics yet",
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    m.add_function(wrap_pyfunction!(param_value, m)?)?;
    m.add_function(wrap_pyfunction!(convert_config, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(process_raw, m)?)?;
    Ok(())
}
