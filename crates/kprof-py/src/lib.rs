//! `kprof._core`: the compiled part of kprof's Python package (`python/kprof` holds the decorator
//! API; the stub `python/kprof/_core.pyi` lists every function). What must be Rust:
//! - here: `__version__`, `param_value` and `convert_config` (Python scalars → [`ParamValue`], with
//!   the public helpers [`param_value_from_py`], [`param_value_to_py`], [`config_from_py`] and
//!   [`config_to_py`] that the engine bindings reuse), `cli_main` (the `kprof` CLI) and
//!   `process_raw` (raw columns → processed columns);
//! - `engine`: the CUPTI engine (`run_benchmark`, `enter_region`, `exit_region`); `collectors`: the
//!   info collectors; `derived`: derived metrics; `store`: one run into a results store; `plot`:
//!   plots and the HTML report; `insight`: ncu sections in `metrics=`, the speed of light and the
//!   roofline; `columns`: the result tables' column names.

#![deny(unsafe_code)]

use std::collections::HashMap;

use kprof_core::columns::{NORMALIZATION_VALUE_COLUMN, PROCESSED_COLUMNS, PROCESSED_KEY_COLUMNS, RAW_COLUMNS};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::stats::StatsOptions;
use kprof_core::{Config, DeviceInfo, ParamValue, ProcessedResults, RawResults, SampleRecord};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Adds each `#[pyfunction]` listed to the module `$m` (in a function returning `PyResult`).
macro_rules! add_functions {
    ($m:expr, [$($f:path),+ $(,)?]) => {
        $($m.add_function(wrap_pyfunction!($f, $m)?)?;)+
    };
}

mod collectors;
mod columns;
mod conditions;
mod derived;
mod engine;
mod insight;
mod ncu;
mod options;
mod plot;
mod results_io;
mod store;

/// The package version: the workspace version with the git revision it was built from
/// ([`kprof::VERSION`], e.g. `0.1.0+g1a2b3c4`).
pub const VERSION: &str = kprof::VERSION;

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

/// `durations_line(sources) -> str | None`: the line before a table whose duration rows came
/// from `sources` (their `DurationSource` values): which definition of a kernel's duration they
/// used and how to choose the other (`kprof_core::durations`, the Python door's wording);
/// `None` without sources.
#[pyfunction]
fn durations_line(sources: Vec<String>) -> Option<String> {
    kprof_core::durations::line(&sources, kprof_core::durations::Door::Api)
}

/// Writes `bytes` at `path` through kprof-core's one writer ([`kprof_core::io::atomic`]): atomic
/// replacement of regular files, symbolic links followed, devices and pipes written in place,
/// `-` for standard output, missing parent folders created. Failures raise `OSError` naming the
/// path.
pub(crate) fn write_file(path: &str, bytes: &[u8]) -> PyResult<()> {
    kprof_core::io::atomic::write_bytes(std::path::Path::new(path), bytes)
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// `parse_choice(option, value) -> str`: the canonical value of an option with choices
/// (`kprof::choices::CHOICE_OPTIONS`: `replay_mode`, `cache_control`, `order`, `backend`, ...),
/// parsed by the engine's one parser of each (aliases such as `"user"` for `"range"` become the
/// canonical name); `ValueError` with the engine's message
/// (`replay_mode must be one of 'kernel', 'range', 'application'; got 'app'`).
#[pyfunction]
fn parse_choice(option: &str, value: &str) -> PyResult<String> {
    match kprof::choices::parse_choice(option, value) {
        Some(parsed) => parsed
            .map(str::to_string)
            .map_err(|e| PyValueError::new_err(e.to_string())),
        None => Err(PyValueError::new_err(format!(
            "parse_choice: {option:?} is not an option with choices"
        ))),
    }
}

/// `release_counters() -> str | None`: ends this process's Range Profiler session, if one is open
/// (it stays open between benchmarks), so that other processes can read the GPU's counters
/// (scale-out workers, Nsight Compute); called on the thread that ran the benchmarks, it also
/// ends that thread's profiler, which detaches CUPTI from the process when it can. Returns what
/// ending the profiler did with CUPTI (`"detached"`, or why it stayed attached: `"graphs"`,
/// `"in-use"`, `"older-cupti"`; see the Rust `last_cupti_detach`), `None` when no profiler ended.
#[pyfunction]
fn release_counters(py: Python<'_>) -> Option<&'static str> {
    py.detach(|| {
        let ended = engine::end_profiler();
        kprof::runner::release_counters();
        if ended {
            kprof::runner::last_cupti_detach()
        } else {
            None
        }
    })
}

/// `pause_counters() -> None`: disables this process's Range Profiler session between
/// benchmarks, keeping its configuration (the next benchmark with counters enables it again).
#[pyfunction]
fn pause_counters(py: Python<'_>) {
    py.detach(kprof::runner::pause_counters)
}

/// `write_file(path: str, data: bytes) -> None`: writes `data` at `path` with the writer every
/// kprof command uses (see the Rust `write_file`); `OSError` naming the path on failure.
#[pyfunction(name = "write_file")]
fn py_write_file(py: Python<'_>, path: std::path::PathBuf, data: &[u8]) -> PyResult<()> {
    let path = path.to_string_lossy().into_owned();
    py.detach(|| write_file(&path, data))
}

/// `cli_main(argv: list[str], inject_dirs: list[str] = []) -> int`: the `kprof` console command
/// (the same CLI as the Rust binary; `argv[0]` is the program name). `inject_dirs` are more
/// folders where `kprof run` and `kprof doctor` look for libkprof_inject.so (the package's `lib`,
/// the environment's `bin` and `lib`: see `kprof.cli`). Returns the exit code.
#[pyfunction]
#[pyo3(signature = (argv, inject_dirs = Vec::new()))]
fn cli_main(py: Python<'_>, argv: Vec<String>, inject_dirs: Vec<String>) -> i32 {
    kprof_cli::inject_lib::set_search_dirs(inject_dirs.into_iter().map(Into::into).collect());
    py.detach(|| kprof_cli::run(argv))
}

fn column<'py>(raw: &Bound<'py, PyDict>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    raw.get_item(name)?
        .ok_or_else(|| PyValueError::new_err(format!("the raw table has no column {name:?}")))
}

fn opt_f64(v: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if v.is_none() {
        return Ok(None);
    }
    let x: f64 = v.extract()?;
    Ok(if x.is_nan() { None } else { Some(x) })
}

fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_none() {
        return Ok(String::new());
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(s);
    }
    // pandas writes a missing unit as NaN.
    match v.extract::<f64>() {
        Ok(x) if x.is_nan() => Ok(String::new()),
        _ => Ok(v.str()?.to_string()),
    }
}

/// Builds [`RawResults`] from the raw columns the Python side holds (see `process_raw`).
fn raw_from_columns(raw: &Bound<'_, PyDict>, params: &[String]) -> PyResult<RawResults> {
    let cols = |name: &str| -> PyResult<Vec<Bound<'_, PyAny>>> {
        column(raw, name)?.try_iter()?.collect::<PyResult<Vec<_>>>()
    };
    let annotation = cols("Annotation")?;
    let n = annotation.len();
    let mut by_name: HashMap<&str, Vec<Bound<'_, PyAny>>> = HashMap::new();
    for name in RAW_COLUMNS.into_iter().filter(|c| *c != "Annotation") {
        let c = cols(name)?;
        if c.len() != n {
            return Err(PyValueError::new_err(format!(
                "column {name:?} has {} values but Annotation has {n}",
                c.len()
            )));
        }
        by_name.insert(name, c);
    }
    let mut param_cols = Vec::with_capacity(params.len());
    for p in params {
        let c = cols(p)?;
        if c.len() != n {
            return Err(PyValueError::new_err(format!(
                "parameter column {p:?} has {} values but Annotation has {n}",
                c.len()
            )));
        }
        param_cols.push(c);
    }
    let mut out = RawResults::new();
    for i in 0..n {
        let mut config = Config::new();
        for (p, c) in params.iter().zip(&param_cols) {
            config.params.push((p.clone(), param_value_from_py(&c[i])?));
        }
        let device = DeviceInfo {
            gpu: text(&by_name["GPU"][i])?,
            host: text(&by_name["Host"][i])?,
            compute_clock_khz: opt_f64(&by_name["ComputeClock"][i])?,
            memory_clock_khz: opt_f64(&by_name["MemoryClock"][i])?,
        };
        let value = opt_f64(&by_name["Value"][i])?.unwrap_or(f64::NAN);
        let run: u32 = by_name["Run"][i].extract()?;
        out.push(&SampleRecord {
            benchmark: &text(&by_name["Benchmark"][i])?,
            annotation: &text(&annotation[i])?,
            config: &config,
            run,
            metric: &text(&by_name["Metric"][i])?,
            value,
            unit: &text(&by_name["Unit"][i])?,
            kernel: &text(&by_name["Kernel"][i])?,
            device: &device,
            extras: &[],
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    out.check_unique_runs()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(out)
}

fn nan_to_none(py: Python<'_>, x: f64) -> PyResult<Bound<'_, PyAny>> {
    Ok(if x.is_nan() {
        py.None().into_bound(py)
    } else {
        x.into_pyobject(py)?.into_any()
    })
}

/// The parameter names and [`ProcessOptions`] of a `process_raw` options dict
/// (`params`, `normalize_against`, `stable_rsd_pct`; all optional).
fn process_options(options: &Bound<'_, PyDict>) -> PyResult<(Vec<String>, ProcessOptions)> {
    let get = |k: &str| options.get_item(k);
    let params: Vec<String> = match get("params")? {
        Some(v) if !v.is_none() => v.extract()?,
        _ => Vec::new(),
    };
    let normalize_against: Option<String> = match get("normalize_against")? {
        Some(v) if !v.is_none() => Some(v.extract()?),
        _ => None,
    };
    let stable_rsd_pct: f64 = match get("stable_rsd_pct")? {
        Some(v) if !v.is_none() => v.extract()?,
        _ => 2.0,
    };
    let opts = ProcessOptions {
        stats: StatsOptions {
            stable_rsd_pct,
            ..StatsOptions::default()
        },
        normalize_against,
    };
    Ok((params, opts))
}

/// The raw columns and options of `process_raw` (see `python/kprof/results.py`) as
/// [`RawResults`], the extra columns attached, with the processing options and the parameter
/// names.
pub(crate) fn raw_results(
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
) -> PyResult<(RawResults, ProcessOptions, Vec<String>)> {
    let (params, opts) = process_options(options)?;
    let mut raw_results = raw_from_columns(raw, &params)?;
    conditions::attach(raw, &conditions::extra_names(options)?, &mut raw_results)?;
    Ok((raw_results, opts, params))
}

/// `process_raw(raw: dict[str, list], options: dict) -> dict[str, list]`: raw columns to processed
/// columns through kprof-core's pipeline (the statistics `kprof summarize` computes). The contract
/// is documented in `python/kprof/results.py`. Bad input raises `ValueError`; configurations
/// dropped from normalisation for lack of a baseline raise a `UserWarning` naming them.
#[pyfunction]
fn process_raw<'py>(
    py: Python<'py>,
    raw: &Bound<'py, PyDict>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let (raw_results, opts, params) = raw_results(raw, options)?;
    let processed = py
        .detach(|| process(&raw_results, &opts))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    for m in &processed.missing_baselines {
        let msg = format!(
            "annotation {:?} (metric {:?}, config [{}]) has no baseline row to normalise against; it is left out of the processed table",
            m.annotation, m.metric, m.config
        );
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &std::ffi::CString::new(msg).unwrap_or_default(),
            1,
        )?;
    }
    let out = processed_to_columns(py, &processed, &params)?;
    conditions::append_processed(py, &out, &processed)?;
    Ok(out)
}

fn processed_to_columns<'py>(py: Python<'py>, p: &ProcessedResults, params: &[String]) -> PyResult<Bound<'py, PyDict>> {
    let normalised = p.rows.iter().any(|r| r.normalized.is_some());
    let mut names: Vec<String> = PROCESSED_KEY_COLUMNS.iter().map(|s| s.to_string()).collect();
    names.extend(params.iter().cloned());
    names.extend(
        PROCESSED_COLUMNS[PROCESSED_KEY_COLUMNS.len()..]
            .iter()
            .filter(|c| normalised || **c != NORMALIZATION_VALUE_COLUMN)
            .map(|s| s.to_string()),
    );
    let mut cols: Vec<Vec<Bound<'py, PyAny>>> = vec![Vec::with_capacity(p.rows.len()); names.len()];
    for r in &p.rows {
        let s = &r.summary;
        let mut i = 0;
        let mut put = |v: Bound<'py, PyAny>| {
            cols[i].push(v);
            i += 1;
        };
        put(PyString::new(py, &r.annotation).into_any());
        put(PyString::new(py, &r.metric).into_any());
        for name in params {
            put(match r.config.get(name) {
                Some(v) => param_value_to_py(py, v)?,
                None => py.None().into_bound(py),
            });
        }
        put(nan_to_none(py, s.mean)?);
        put(nan_to_none(py, s.std_dev)?);
        put(nan_to_none(py, s.min)?);
        put(nan_to_none(py, s.max)?);
        put(s.num_runs.into_pyobject(py)?.into_any());
        put(PyString::new(py, &r.kernel).into_any());
        put(PyString::new(py, &r.device.gpu).into_any());
        put(PyString::new(py, &r.device.host).into_any());
        put(nan_to_none(py, r.device.compute_clock_khz.unwrap_or(f64::NAN))?);
        put(nan_to_none(py, r.device.memory_clock_khz.unwrap_or(f64::NAN))?);
        put(PyString::new(py, &r.unit).into_any());
        put(nan_to_none(py, s.ci95_lower)?);
        put(nan_to_none(py, s.ci95_upper)?);
        put(nan_to_none(py, s.rsd_pct)?);
        put(match s.stable {
            Some(b) => PyBool::new(py, b).to_owned().into_any(),
            None => py.None().into_bound(py),
        });
        put(match &r.normalized {
            Some(b) => PyString::new(py, b).into_any(),
            None => PyBool::new(py, false).to_owned().into_any(),
        });
        if normalised {
            put(nan_to_none(py, r.normalization_value.unwrap_or(f64::NAN))?);
        }
        put(nan_to_none(py, r.geomean)?);
        put(PyString::new(py, &r.benchmark).into_any());
        put(nan_to_none(py, s.median)?);
        put(nan_to_none(py, s.p05)?);
        put(nan_to_none(py, s.p95)?);
        put(s.total_runs.into_pyobject(py)?.into_any());
        put(s.outliers_mild.into_pyobject(py)?.into_any());
        put(s.outliers_severe.into_pyobject(py)?.into_any());
        debug_assert_eq!(i, names.len(), "one value per processed column");
    }
    let out = PyDict::new(py);
    for (name, values) in names.iter().zip(cols) {
        out.set_item(name, PyList::new(py, values)?)?;
    }
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    add_functions!(
        m,
        [
            param_value,
            convert_config,
            durations_line,
            cli_main,
            py_write_file,
            release_counters,
            pause_counters,
            parse_choice,
            process_raw,
            store::store_raw
        ]
    );
    columns::register(m)?;
    engine::register(m)?;
    ncu::register(m)?;
    options::register(m)?;
    conditions::register(m)?;
    collectors::register(m)?;
    derived::register(m)?;
    plot::register(m)?;
    insight::register(m)?;
    results_io::register(m)?;
    Ok(())
}
