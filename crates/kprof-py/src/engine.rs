//! The CUPTI engine for Python: `run_benchmark`, `enter_region` and `exit_region`.
//!
//! `run_benchmark` drives [`Profiler::bench`] with the GIL released; the benchmark closure takes
//! the GIL back to call the user's function. While that function runs, `kprof.annotate` calls
//! `enter_region`/`exit_region`, which open and close regions on the current [`Run`] (kept in a
//! thread-local for exactly that call). One profiler per process, used from the thread that
//! created it (CUPTI allows one subscriber per process).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kprof::cancel::Cancel;
use kprof::choices::Backend;
use kprof::choices::TraceOptions;
use kprof::runner::{BenchOptions, Profiler, Reducer, RegionGuard, Run, StoppingPolicy};
use kprof::sys::scoped::Lent;
use kprof_core::columns::{CONFIG_INDEX_COLUMN, RAW_COLUMNS};
use kprof_core::{Config, ExtraValue, RawResults};
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::config_from_py;

thread_local! {
    /// The process's profiler, created on the first `run_benchmark` of this thread.
    static PROFILER: RefCell<Option<Profiler>> = const { RefCell::new(None) };
    /// The run whose closure is calling into Python right now (lent for that call).
    static CURRENT_RUN: Lent<Run> = const { Lent::new() };
    /// Regions opened by `enter_region` and not closed yet, innermost last.
    static GUARDS: RefCell<Vec<(String, RegionGuard)>> = const { RefCell::new(Vec::new()) };
    /// The Python exception that stopped the benchmark, re-raised unchanged.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
    /// The running benchmark's cancellation token (Ctrl-C, or an interrupt raised by Python code
    /// the engine called).
    static CANCEL: RefCell<Option<Cancel>> = const { RefCell::new(None) };
}

/// Whether `e` must end the benchmark rather than be one failed run: an exception that is not
/// an `Exception` (KeyboardInterrupt, SystemExit, GeneratorExit).
fn is_interrupt(py: Python<'_>, e: &PyErr) -> bool {
    !e.is_instance_of::<PyException>(py)
}

/// Keeps `e` to re-raise after the benchmark (the first such exception wins) and cancels it.
fn stop_with(py: Python<'_>, e: &PyErr) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.as_ref().is_none_or(|old| !is_interrupt(py, old)) {
            *p = Some(e.clone_ref(py));
        }
    });
    CANCEL.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.cancel();
        }
    });
}

/// When `e`, raised by Python code the engine called during a benchmark, is an interrupt
/// ([`is_interrupt`]): stops the benchmark with it and returns true.
pub(crate) fn interrupt(py: Python<'_>, e: &PyErr) -> bool {
    let stop = is_interrupt(py, e);
    if stop {
        stop_with(py, e);
    }
    stop
}

/// Whether the running benchmark was cancelled.
fn cancelled() -> bool {
    CANCEL.with(|c| c.borrow().as_ref().is_some_and(Cancel::is_set))
}

/// The token of one `run_benchmark`: the engine polls it between runs and in its waits, and the
/// poll runs Python's signal handlers (Ctrl-C arrives while the engine runs without the GIL, when
/// no Python code would run them); an exception they raise stops the benchmark and is re-raised.
fn signal_token() -> Cancel {
    Cancel::with_poll(|| {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                stop_with(py, &e);
                true
            }
        })
    })
}

/// Runs `f` with this thread's profiler (None before the first `run_benchmark`).
pub(crate) fn with_profiler<R>(f: impl FnOnce(Option<&Profiler>) -> R) -> R {
    PROFILER.with(|cell| f(cell.borrow().as_ref()))
}

/// The trace options of this process's CUPTI profiler (`kprof.configure`), and whether the
/// profiler has started with them (after which they cannot change).
static TRACE: Mutex<(Option<TraceOptions>, bool)> = Mutex::new((None, false));

/// `configure_trace(kernel_trace: str, graph_trace: str | None, attribution: str) -> None`: the
/// trace options the CUPTI profiler of this process starts with (`kprof.configure`).
/// `RuntimeError` when the profiler already started with other values.
#[pyfunction]
#[pyo3(signature = (kernel_trace, graph_trace, attribution="order"))]
fn configure_trace(kernel_trace: &str, graph_trace: Option<&str>, attribution: &str) -> PyResult<()> {
    let bad = |e: kprof::choices::InvalidOptionValue| PyValueError::new_err(e.to_string());
    let mut t = TraceOptions::default();
    t.kernel_trace = kernel_trace.parse().map_err(bad)?;
    t.graph_trace = graph_trace.map(str::parse).transpose().map_err(bad)?;
    t.attribution = attribution.parse().map_err(bad)?;
    let mut slot = TRACE.lock().unwrap_or_else(|p| p.into_inner());
    let current = slot.0.unwrap_or_default();
    if slot.1 && current != t {
        let graph = |g: Option<kprof::choices::GraphTrace>| g.map_or("None".to_string(), |g| format!("'{g}'"));
        return Err(PyRuntimeError::new_err(format!(
            "the profiler of this process already started with kernel_trace='{}', graph_trace={}, attribution='{}'; \
             these are per-process settings: call kprof.configure(kernel_trace='{}', graph_trace={}, \
             attribution='{}') before the first benchmark",
            current.kernel_trace,
            graph(current.graph_trace),
            current.attribution,
            t.kernel_trace,
            graph(t.graph_trace),
            t.attribution,
        )));
    }
    slot.0 = Some(t);
    Ok(())
}

/// Ends this thread's profiler, if it has one and no benchmark of it is running (`true` then): its
/// activity session stops, its counters are given back and CUPTI leaves the process when it can
/// (`kprof::runner::last_cupti_detach`); the next benchmark starts a new one with the same trace
/// options.
pub(crate) fn end_profiler() -> bool {
    PROFILER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => slot.take().is_some(),
        Err(_) => false,
    })
}

/// A CUPTI profiler with the trace options of `kprof.configure` (which then cannot change).
fn traced_profiler() -> Result<Profiler, kprof::EngineError> {
    let mut slot = TRACE.lock().unwrap_or_else(|p| p.into_inner());
    let p = Profiler::with_trace(slot.0.unwrap_or_default())?;
    slot.1 = true;
    Ok(p)
}

/// An exception raised inside a user reducer (`combine_kernel_metrics`), re-raised afterwards.
static REDUCER_ERROR: Mutex<Option<PyErr>> = Mutex::new(None);

pub(crate) fn kprof_exception(py: Python<'_>, class: &str, msg: String) -> PyErr {
    match py.import("kprof.exceptions").and_then(|m| m.getattr(class)) {
        Ok(cls) => PyErr::from_value(
            cls.call1((msg,))
                .unwrap_or_else(|e| e.into_value(py).into_bound(py).into_any()),
        ),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

/// `opts[key]`, when it is there and not None.
pub(crate) fn get<'py>(opts: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(opts.get_item(key)?.filter(|v| !v.is_none()))
}

/// Sets `field` to `opts[key]` through `convert` ([`extract`] or [`parse_option`]) when the key
/// is there and not None; leaves it as it is otherwise.
pub(crate) fn set_from<'py, T>(
    opts: &Bound<'py, PyDict>,
    key: &str,
    field: &mut T,
    convert: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<()> {
    if let Some(v) = get(opts, key)? {
        *field = convert(&v)?;
    }
    Ok(())
}

/// `v` as a `T` (PyO3's conversion), for [`set_from`].
pub(crate) fn extract<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(v: &Bound<'py, PyAny>) -> PyResult<T> {
    v.extract().map_err(Into::into)
}

/// Parses the string value of `replay_mode`, `cache_control` or `clock_control` with its enum's
/// `FromStr` (the one parser of each option); a bad value is a `ValueError` naming the option, the
/// value and the accepted values.
pub(crate) fn parse_option<T>(v: &Bound<'_, PyAny>) -> PyResult<T>
where
    T: std::str::FromStr<Err = kprof::choices::InvalidOptionValue>,
{
    let s: String = v.extract()?;
    s.parse()
        .map_err(|e: kprof::choices::InvalidOptionValue| PyValueError::new_err(e.to_string()))
}

pub(crate) fn reducer(value: Option<Bound<'_, PyAny>>) -> PyResult<Reducer> {
    let Some(v) = value else { return Ok(Reducer::Sum) };
    if let Ok(name) = v.extract::<String>() {
        return name
            .parse::<Reducer>()
            .map_err(|e| PyValueError::new_err(e.to_string()));
    }
    if !v.is_callable() {
        return Err(PyValueError::new_err(
            "combine_kernel_metrics must be a reducer name or a callable f(a, b)",
        ));
    }
    let f: Py<PyAny> = v.unbind();
    Ok(Reducer::Custom(Arc::new(move |a: f64, b: f64| {
        Python::attach(|py| match f.call1(py, (a, b)).and_then(|r| r.extract::<f64>(py)) {
            Ok(x) => x,
            Err(e) => {
                if let Ok(mut slot) = REDUCER_ERROR.lock() {
                    slot.get_or_insert(e);
                }
                f64::NAN
            }
        })
    })))
}

/// The options dict of the Python backend contract (`python/kprof/_backend.py`) as
/// [`BenchOptions`].
pub(crate) fn bench_options(opts: &Bound<'_, PyDict>) -> PyResult<BenchOptions> {
    let mut o = BenchOptions::default();
    set_from(opts, "runs", &mut o.runs, extract)?;
    set_from(opts, "warmup", &mut o.warmup, extract)?;
    set_from(opts, "order", &mut o.order, parse_option)?;
    set_from(opts, "metrics", &mut o.metrics, extract)?;
    set_from(opts, "replay_mode", &mut o.replay_mode, parse_option)?;
    set_from(opts, "duration_source", &mut o.duration, parse_option)?;
    set_from(opts, "ignore_kernel_list", &mut o.ignore_kernels, extract)?;
    o.combine = reducer(get(opts, "combine_kernel_metrics")?)?;
    if let Some(v) = get(opts, "output_prefix")? {
        o.output_prefix = Some(v.extract::<String>()?.into());
    }
    set_from(opts, "cache_control", &mut o.cache, parse_option)?;
    set_from(opts, "clock_control", &mut o.clock, parse_option)?;
    set_from(opts, "l2_flush", &mut o.l2_flush, parse_option)?;
    o.l2_flush_bytes = get(opts, "l2_flush_bytes")?.map(|v| v.extract()).transpose()?;
    set_from(opts, "counter_pass_records", &mut o.counter_pass_records, extract)?;
    set_from(opts, "one_pass", &mut o.one_pass, extract)?;
    let target_rsd: Option<f64> = get(opts, "target_rsd")?.map(|v| v.extract()).transpose()?;
    let target_ci: Option<f64> = get(opts, "target_ci")?.map(|v| v.extract()).transpose()?;
    let max_runs: Option<u32> = get(opts, "max_runs")?.map(|v| v.extract()).transpose()?;
    let budget: Option<f64> = get(opts, "time_budget")?.map(|v| v.extract()).transpose()?;
    if target_rsd.is_some() || target_ci.is_some() {
        o.policy = Some(StoppingPolicy {
            min_runs: o.runs.max(2),
            max_runs: max_runs.unwrap_or(o.runs.max(100)),
            target_rel_ci_half_width: target_ci.map(|pct| pct / 100.0),
            target_rsd_pct: target_rsd,
            time_budget: budget.map(Duration::from_secs_f64),
        });
    }
    crate::conditions::apply_thermal_options(opts, &mut o)?;
    o.validate().map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(o)
}

fn extra_to_py<'py>(py: Python<'py>, v: &ExtraValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        ExtraValue::Missing => py.None().into_bound(py),
        ExtraValue::Number(x) => x.into_pyobject(py)?.into_any(),
        ExtraValue::Text(s) => PyString::new(py, s).into_any(),
    })
}

fn opt_to_py(py: Python<'_>, x: Option<f64>) -> PyResult<Bound<'_, PyAny>> {
    Ok(match x {
        Some(v) => v.into_pyobject(py)?.into_any(),
        None => py.None().into_bound(py),
    })
}

/// The raw table of the backend contract: one row per sample, with `_config` indexing `configs`.
pub(crate) fn raw_table<'py>(py: Python<'py>, raw: &RawResults, configs: &[Config]) -> PyResult<Bound<'py, PyDict>> {
    let config_index: Vec<usize> = raw
        .configs
        .iter()
        .map(|c| configs.iter().position(|d| d == c).unwrap_or(0))
        .collect();
    let names: Vec<&str> = RAW_COLUMNS.into_iter().chain([CONFIG_INDEX_COLUMN]).collect();
    let mut cols: Vec<Vec<Bound<'py, PyAny>>> =
        vec![Vec::with_capacity(raw.samples.len()); names.len() + raw.extras.len()];
    for (i, s) in raw.samples.iter().enumerate() {
        let series = raw.series_of(s);
        let dev = &raw.devices[series.device as usize];
        let row = [
            PyString::new(py, &series.key.annotation).into_any(),
            s.value.into_pyobject(py)?.into_any(),
            PyString::new(py, &series.key.metric).into_any(),
            PyString::new(py, &raw.kernel_names[s.kernel as usize]).into_any(),
            PyString::new(py, &dev.gpu).into_any(),
            PyString::new(py, &dev.host).into_any(),
            opt_to_py(py, dev.compute_clock_khz)?,
            opt_to_py(py, dev.memory_clock_khz)?,
            PyString::new(py, &series.unit).into_any(),
            PyString::new(py, &series.key.benchmark).into_any(),
            s.run.into_pyobject(py)?.into_any(),
            config_index[series.key.config as usize].into_pyobject(py)?.into_any(),
        ];
        debug_assert_eq!(row.len(), names.len(), "one value per raw column");
        for (c, v) in cols.iter_mut().zip(row) {
            c.push(v);
        }
        for (j, extra) in raw.extras.iter().enumerate() {
            cols[names.len() + j].push(extra_to_py(py, &extra.values[i])?);
        }
    }
    let out = PyDict::new(py);
    let all_names = names
        .iter()
        .map(|n| n.to_string())
        .chain(raw.extras.iter().map(|e| e.name.clone()));
    for (name, values) in all_names.zip(cols) {
        out.set_item(name, PyList::new(py, values)?)?;
    }
    Ok(out)
}

/// `run_benchmark(name, func, configs, options, progress) -> dict[str, list]`: the CUPTI
/// backend of `python/kprof/_backend.py` (see the contract there).
#[pyfunction]
fn run_benchmark<'py>(
    py: Python<'py>,
    name: String,
    func: Py<PyAny>,
    configs: &Bound<'py, PyList>,
    options: &Bound<'py, PyDict>,
    progress: Py<PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let configs: Vec<Config> = configs.iter().map(|c| config_from_py(&c)).collect::<PyResult<_>>()?;
    let backend: Backend = get(options, "backend")?
        .map(|v| parse_option(&v))
        .transpose()?
        .unwrap_or_default();
    // backend="ncu" here is the ncu child running its selected benchmark (crate::ncu).
    let ncu = backend == Backend::Ncu;
    let mut opts = if ncu {
        crate::ncu::child_bench_options(options)?
    } else {
        bench_options(options)?
    };
    // The progress bar's total follows the stopping policy (the engine's progress hook); the
    // bar itself advances from the closure below.
    let reporter = progress.clone_ref(py);
    opts.progress = Some(kprof::runner::ProgressHook::new(move |p| {
        Python::attach(|py| {
            // A failing progress bar does not stop the benchmark; Ctrl-C handled in it does.
            if let Err(e) = reporter.call_method1(py, "set_total", (p.total_runs,)) {
                interrupt(py, &e);
            }
        });
    }));
    // Python runs signal handlers on its main thread only: elsewhere the token has no poll.
    let threading = py.import("threading")?;
    let on_main = threading
        .call_method0("current_thread")?
        .is(&threading.call_method0("main_thread")?);
    let token = if on_main { signal_token() } else { Cancel::new() };
    opts.cancel = Some(token.clone());
    CANCEL.with(|c| *c.borrow_mut() = Some(token));
    let events = backend == Backend::CudaEvents;
    let metric = if events {
        kprof::runner::CUDA_EVENTS_METRIC
    } else {
        kprof_core::DEFAULT_METRIC
    };
    PENDING.with(|p| p.borrow_mut().take());
    if let Ok(mut slot) = REDUCER_ERROR.lock() {
        slot.take();
    }
    let thermal_device: Option<i64> = get(options, "thermal_device")?.map(|v| v.extract()).transpose()?;
    let outcome = py.detach(|| {
        PROFILER.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                let created = if events {
                    Profiler::with_cuda_events()
                } else {
                    traced_profiler()
                };
                *slot = Some(created.map_err(|e| ("engine", e.to_string()))?);
            }
            let profiler = slot.as_mut().expect("profiler was just created");
            if profiler.metric() != metric {
                return Err((
                    "engine",
                    format!(
                        "this process already profiles with the {} backend; one backend per process (restart \
                         Python to switch between backend='cupti' and backend='cuda-events')",
                        if events { "cupti" } else { "cuda-events" }
                    ),
                ));
            }
            let _armed = if ncu {
                Some(kprof::ncu::arm_child(&opts).map_err(|e| ("engine", e.to_string()))?)
            } else {
                None
            };
            crate::conditions::check_thermal_device(thermal_device, profiler).map_err(|m| ("engine", m))?;
            let before = profiler.warnings().len();
            let result = profiler.bench(&name, &configs, &opts, |config, run| {
                if cancelled() {
                    // The rest of a cancelled run (a counter pass's remaining passes) is skipped.
                    return Err("the benchmark was cancelled".into());
                }
                let index = configs.iter().position(|c| c == config).unwrap_or(0);
                // Progress counts recorded runs once: not warm-ups, not the counter passes of runs
                // that had a timing pass.
                let measured = run.ends_recorded_run();
                let called = CURRENT_RUN.with(|slot| {
                    slot.lend(run, || {
                        Python::attach(|py| -> PyResult<()> {
                            func.call1(py, (index,))?;
                            if measured {
                                progress.call_method1(py, "advance", (index,))?;
                            }
                            Ok(())
                        })
                    })
                });
                GUARDS.with(|g| g.borrow_mut().clear());
                called.map_err(|e| {
                    let msg = Python::attach(|py| {
                        let text = e.to_string();
                        // An interrupt stops the sweep (kept, re-raised); another exception is
                        // this run's failure, re-raised unless the engine goes on.
                        if !interrupt(py, &e) && !cancelled() {
                            PENDING.with(|p| *p.borrow_mut() = Some(e.clone_ref(py)));
                        }
                        text
                    });
                    msg.into()
                })
            });
            let warnings = profiler.warnings()[before..].to_vec();
            let timeline = profiler.take_timeline();
            result
                .map(|raw| (raw, warnings, timeline))
                .map_err(|e| ("run", e.to_string()))
        })
    });
    CANCEL.with(|c| c.borrow_mut().take());
    if let Some(e) = PENDING.with(|p| p.borrow_mut().take()) {
        return Err(e);
    }
    if let Some(e) = REDUCER_ERROR.lock().ok().and_then(|mut s| s.take()) {
        return Err(e);
    }
    let (raw, warnings, timeline) = match outcome {
        Ok(v) => v,
        Err((stage, msg)) => {
            let class = if stage == "engine" {
                "BackendError"
            } else {
                "ProfilerError"
            };
            return Err(kprof_exception(py, class, msg));
        }
    };
    if !warnings.is_empty() && !ncu {
        // One RuntimeWarning, attributed to the user's call of the benchmark (kprof/_warn.py).
        py.import("kprof._warn")?.call_method1("engine_warnings", (warnings,))?;
    }
    let table = raw_table(py, &raw, &configs)?;
    // The recorded runs' kernels and regions, for ProfileResults.to_trace (kprof/timeline.py).
    let empty = timeline.kernels.is_empty() && timeline.regions.is_empty();
    if !ncu && !empty {
        table.set_item("_timeline", Py::new(py, crate::results_io::PyTimeline::new(timeline))?)?;
    }
    Ok(table)
}

/// `enter_region(name)`: opens a region on the run being measured; does nothing outside a
/// measured call (annotated code then runs normally).
#[pyfunction]
fn enter_region(py: Python<'_>, name: &str) -> PyResult<()> {
    let Some(guard) = CURRENT_RUN.with(|slot| slot.with(|run| run.region(name))) else {
        return Ok(());
    };
    let guard = guard.map_err(|e| kprof_exception(py, "AnnotationError", e.to_string()))?;
    GUARDS.with(|g| g.borrow_mut().push((name.to_string(), guard)));
    Ok(())
}

/// `in_counter_pass()`: whether the decorated function is being called for a counter pass of the
/// run being measured (with counter metrics or durations from the counters, every recorded run
/// calls it again after its timing pass); False outside a measured call.
#[pyfunction]
fn in_counter_pass() -> bool {
    CURRENT_RUN
        .with(|slot| slot.with(|run| run.is_counter_pass()))
        .unwrap_or(false)
}

/// `exit_region(name, failed)`: closes the innermost region, which must be `name`; `failed`
/// records NaN for it in this run (an ignored failure).
#[pyfunction]
fn exit_region(py: Python<'_>, name: &str, failed: bool) -> PyResult<()> {
    GUARDS.with(|g| {
        let mut guards = g.borrow_mut();
        match guards.last() {
            None => Ok(()),
            Some((open, _)) if open == name => {
                if let Some((_, guard)) = guards.pop() {
                    if failed {
                        guard.mark_failed();
                    }
                }
                Ok(())
            }
            Some((open, _)) => Err(kprof_exception(
                py,
                "AnnotationError",
                format!("annotation {name:?} was closed while {open:?} was still open inside it"),
            )),
        }
    })
}

/// `engine_available() -> tuple[bool, str]`: whether the CUDA driver and CUPTI load here, and
/// why not (without starting a profiler).
#[pyfunction]
fn engine_available(py: Python<'_>) -> (bool, String) {
    py.detach(|| match kprof::loader::Libraries::load() {
        Ok(l) => (
            true,
            format!(
                "libcuda {} / libcupti {}",
                l.cuda_path.display(),
                l.cupti_path.display()
            ),
        ),
        Err(e) => (false, e.to_string()),
    })
}

/// `check_bench_options(options) -> None`: builds and validates the engine's options from the
/// dict `run_benchmark` takes (ValueError naming the problem), without running anything: the
/// decorator calls it when it is applied.
#[pyfunction]
fn check_bench_options(options: &Bound<'_, PyDict>) -> PyResult<()> {
    bench_options(options).map(|_| ())
}

/// `counter_cost() -> dict[str, float]`: the host time this process's counter work took so far,
/// by phase (`kprof::runner::CounterCost`; counts as floats), for cost benchmarks.
#[pyfunction]
fn counter_cost<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in kprof::runner::counter_cost().fields() {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// Adds the engine functions to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        [
            run_benchmark,
            enter_region,
            exit_region,
            in_counter_pass,
            counter_cost,
            check_bench_options,
            engine_available,
            configure_trace
        ]
    );
    Ok(())
}
