//! The Python package's info collectors through the engine's (`kprof::conditions::collectors`):
//! `check_collector_names` and `parse_collection_scope` (the engine's checks and parser, errors as
//! `ValueError`), `RESERVED_COLLECTOR_NAMES`, and `CollectorSession`, one profiled call's collectors
//! at work, whose values are the Python objects the callbacks return. Python keeps the collector
//! objects (`kprof.InfoCollector`) and calls the session's methods around every call of the backend
//! loop and on every `kprof.annotate` enter; each is described where it is defined below.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use kprof::conditions::collectors::{
    reserved_names, validate_names, CollectContext, CollectedValue, CollectionScope, CollectorSession as Session,
    CollectorSet, InfoCollector,
};
use kprof::conditions::ConditionsError;
use kprof_core::Config;
use pyo3::exceptions::{PyRuntimeError, PyRuntimeWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

/// A value a Python collector returned (`None` when it failed).
struct PyValue(Option<Py<PyAny>>);

impl Clone for PyValue {
    fn clone(&self) -> Self {
        Python::attach(|py| PyValue(self.0.as_ref().map(|o| o.clone_ref(py))))
    }
}

impl CollectedValue for PyValue {
    fn missing() -> Self {
        PyValue(None)
    }
}

/// One `kprof.InfoCollector`, called as `collector.collect(*args)` with nsight-python's
/// arguments: none (once), the configuration's values (config, run), the annotation's name then
/// the configuration's values (annotation).
struct PyCollector {
    name: String,
    scope: CollectionScope,
    collector: Py<PyAny>,
    /// The configurations as the user gave them, by index.
    configs: Arc<Vec<Py<PyTuple>>>,
}

impl InfoCollector<PyValue> for PyCollector {
    fn name(&self) -> &str {
        &self.name
    }

    fn scope(&self) -> CollectionScope {
        self.scope
    }

    fn collect(&mut self, ctx: &CollectContext<'_>) -> Result<PyValue, String> {
        Python::attach(|py| {
            let mut args: Vec<Bound<'_, PyAny>> = Vec::new();
            if let Some(a) = ctx.annotation {
                args.push(PyString::new(py, a).into_any());
            }
            if let Some(config) = ctx.config_index.and_then(|i| self.configs.get(i)) {
                args.extend(config.bind(py).iter());
            }
            let called = PyTuple::new(py, args).and_then(|args| self.collector.bind(py).call_method1("collect", args));
            match called {
                Ok(v) => Ok(PyValue(Some(v.unbind()))),
                Err(e) => {
                    // Ctrl-C (or SystemExit) inside a collector stops the benchmark.
                    crate::engine::interrupt(py, &e);
                    let kind = e
                        .get_type(py)
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "Exception".into());
                    Err(format!("raised {kind}: {}", e.value(py)))
                }
            }
        })
    }
}

fn conditions_err(e: ConditionsError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `check_collector_names(names: list[str], params: list[str])`: raises `ValueError` (the
/// engine's message) for an empty, duplicate or reserved name, one that is a parameter, or one
/// that is another collector's aggregate column (`x` and `x_Avg`).
#[pyfunction]
fn check_collector_names(names: Vec<String>, params: Vec<String>) -> PyResult<()> {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    validate_names(&names, &params).map_err(conditions_err)
}

/// `parse_collection_scope(text: str) -> str`: `once`, `config`, `run` or `annotation` (case and
/// blanks ignored); `ValueError` for anything else.
#[pyfunction]
fn parse_collection_scope(text: &str) -> PyResult<&'static str> {
    text.parse::<CollectionScope>()
        .map(CollectionScope::as_str)
        .map_err(conditions_err)
}

/// What a session knows besides the engine's session: the configurations, the warm-ups, the
/// calls per configuration and the measured run in progress.
struct State {
    session: Session<PyValue>,
    configs: Vec<Config>,
    warmup: u32,
    calls: Vec<u32>,
    current: Option<(usize, u32)>,
}

/// `CollectorSession(collectors: list[tuple[str, str, InfoCollector]], configs: list[tuple],
/// warmup: int)`: the collectors `(name, scope, collector)` of one profiled call. Creating it
/// calls the once-collectors. A failed collector gives None and one `RuntimeWarning` per (scope,
/// name).
#[pyclass(module = "kprof._core", frozen)]
pub struct CollectorSession {
    state: Mutex<State>,
    /// The thread inside a collector call of this session (0: none): an annotation entered by a
    /// collector itself is not collected (the session is busy).
    busy: AtomicU64,
}

/// The collectors' warnings as `RuntimeWarning`s.
fn warn(py: Python<'_>, warnings: Vec<String>) -> PyResult<()> {
    for w in warnings {
        let msg = std::ffi::CString::new(format!("kprof: {w}")).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &msg, 1)?;
    }
    Ok(())
}

/// A number for the calling thread (never 0).
fn thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static KEY: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
    KEY.with(|k| *k)
}

impl CollectorSession {
    /// Runs `f` on the state, then reports the collectors' new warnings. `None` when a collector
    /// of this session, on this thread, is what called (the state is in use).
    fn with_state<T>(&self, py: Python<'_>, f: impl FnOnce(&mut State) -> T) -> PyResult<Option<T>> {
        let me = thread_key();
        if self.busy.load(Ordering::Acquire) == me {
            return Ok(None);
        }
        let mut state = self.lock(py);
        self.busy.store(me, Ordering::Release);
        let out = f(&mut state);
        self.busy.store(0, Ordering::Release);
        let warnings = state.session.take_warnings();
        drop(state);
        warn(py, warnings)?;
        Ok(Some(out))
    }

    /// The state; another thread holding it gets the GIL back while this one waits.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        loop {
            match self.state.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(std::thread::yield_now),
            }
        }
    }
}

#[pymethods]
impl CollectorSession {
    #[new]
    fn new(
        py: Python<'_>,
        collectors: Vec<(String, String, Py<PyAny>)>,
        configs: Vec<Py<PyTuple>>,
        warmup: u32,
    ) -> PyResult<Self> {
        let n = configs.len();
        let configs = Arc::new(configs);
        let mut boxed: Vec<Box<dyn InfoCollector<PyValue>>> = Vec::new();
        for (name, scope, collector) in collectors {
            boxed.push(Box::new(PyCollector {
                name,
                scope: scope.parse().map_err(conditions_err)?,
                collector,
                configs: Arc::clone(&configs),
            }));
        }
        let mut session = Session::start(CollectorSet::new(boxed, &[]).map_err(conditions_err)?);
        warn(py, session.take_warnings())?;
        Ok(CollectorSession {
            state: Mutex::new(State {
                session,
                // The collectors get the user's configuration objects (by index), not these.
                configs: vec![Config::new(); n],
                warmup,
                calls: vec![0; n],
                current: None,
            }),
            busy: AtomicU64::new(0),
        })
    }

    /// Before a call of the backend loop for configuration `config_index`: its config collectors
    /// at its first call; after the warm-ups, the run collectors of the measured run it starts.
    fn before_call(&self, py: Python<'_>, config_index: usize) -> PyResult<()> {
        self.with_state(py, |s| {
            let (Some(calls), Some(config)) = (s.calls.get_mut(config_index), s.configs.get(config_index)) else {
                return;
            };
            let k = *calls;
            *calls += 1;
            let warmup = k < s.warmup;
            let run = k.saturating_sub(s.warmup);
            s.current = (!warmup).then_some((config_index, run));
            s.session.before_run(config_index, config, run, warmup);
        })?;
        Ok(())
    }

    /// After a call of the backend loop.
    fn after_call(&self, py: Python<'_>) -> PyResult<()> {
        self.with_state(py, |s| s.current = None)?;
        Ok(())
    }

    /// On a `kprof.annotate` enter: the annotation collectors, during a measured run.
    fn on_annotation(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.with_state(py, |s| {
            if let Some((config_index, run)) = s.current {
                let config = s.configs[config_index].clone();
                s.session.enter_annotation(name, config_index, &config, run);
            }
        })?;
        Ok(())
    }

    /// `column(name, config_index, runs, annotations) -> list`: the collector's value for each
    /// row (its configuration index, run and annotation), None where none applies.
    fn column(
        &self,
        py: Python<'_>,
        name: &str,
        config_index: Vec<u32>,
        runs: Vec<u32>,
        annotations: Vec<String>,
    ) -> PyResult<Vec<Option<Py<PyAny>>>> {
        if config_index.len() != runs.len() || runs.len() != annotations.len() {
            return Err(PyValueError::new_err(
                "column: config_index, runs and annotations differ in length",
            ));
        }
        let values = self.with_state(py, |s| {
            let v = s.session.values();
            config_index
                .iter()
                .zip(&runs)
                .zip(&annotations)
                .map(|((&c, &r), a)| v.get(name, c, r, a).and_then(|x| x.0.as_ref().map(|o| o.clone_ref(py))))
                .collect::<Vec<_>>()
        })?;
        values.ok_or_else(|| PyRuntimeError::new_err("column: the collector session is busy"))
    }
}

/// Adds the functions, the class and `RESERVED_COLLECTOR_NAMES` to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [check_collector_names, parse_collection_scope]);
    m.add_class::<CollectorSession>()?;
    m.add("RESERVED_COLLECTOR_NAMES", PyTuple::new(m.py(), reserved_names())?)?;
    Ok(())
}
