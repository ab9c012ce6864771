//! The ncu backend for Python (`python/kprof/_ncu.py` drives it).
//!
//! - Parent: `ncu_relaunch(...)` re-runs the script under ncu with `KPROF_NCU_CHILD=<id>`, exports
//!   the report and returns the raw table of the backend contract plus a dict describing the run
//!   (mode with the requested one, the reason and a summary line, report, log, CSV, ncu version,
//!   argv, wall time).
//! - Child: `run_benchmark(..., options={"backend": "ncu", ...})` (engine.rs) runs the selected
//!   benchmark through the NVTX-only profiler with [`child_bench_options`]; Python then exits.

use kprof::ncu::bench::{child_options, report_path};
use kprof::ncu::{relaunch_with, ImportOptions, NcuInstall, NcuModeRequest, NcuOptions, CHILD_ENV};
use kprof::runner::BenchOptions;
use kprof_core::Config;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::config_from_py;
use crate::engine::{bench_options, extract, get, kprof_exception, parse_option, raw_table, reducer, set_from};

/// The loop options of the ncu child: the contract's options without what ncu does itself
/// (cache and clock control, metrics) and without adaptive stopping.
pub(crate) fn child_bench_options(options: &Bound<'_, PyDict>) -> PyResult<BenchOptions> {
    let d = options.copy()?;
    d.set_item("cache_control", "none")?;
    d.set_item("clock_control", "none")?;
    for k in [
        "metrics",
        "target_rsd",
        "target_ci",
        "max_runs",
        "time_budget",
        "output_prefix",
        "ignore_kernel_list",
    ] {
        d.del_item(k).ok();
    }
    Ok(child_options(&bench_options(&d)?))
}

/// The contract's options (`cache_control`, `clock_control`, `replay_mode`, `metrics` and the
/// `ncu_options` dict: `set`, `sections`, `target_processes`, `launch_skip`, `launch_count`,
/// `extra_args`, `mode`) as [`NcuOptions`].
pub(crate) fn ncu_options(options: &Bound<'_, PyDict>) -> PyResult<NcuOptions> {
    let mut n = NcuOptions::default();
    set_from(options, "cache_control", &mut n.cache_control, parse_option)?;
    set_from(options, "clock_control", &mut n.clock_control, parse_option)?;
    set_from(options, "replay_mode", &mut n.replay_mode, parse_option)?;
    if let Some(m) = get(options, "metrics")? {
        let m: Vec<String> = m.extract()?;
        if !m.is_empty() {
            n.metrics = m;
        }
    }
    if let Some(extra) = get(options, "ncu_options")? {
        let d = extra
            .cast::<PyDict>()
            .map_err(|_| PyValueError::new_err("ncu_options must be a dict"))?;
        n.set = get(d, "set")?.map(|v| v.extract()).transpose()?;
        set_from(d, "sections", &mut n.sections, extract)?;
        set_from(d, "target_processes", &mut n.target_processes, parse_option)?;
        n.launch_skip = get(d, "launch_skip")?.map(|v| v.extract()).transpose()?;
        n.launch_count = get(d, "launch_count")?.map(|v| v.extract()).transpose()?;
        if let Some(v) = get(d, "mode")? {
            let m: String = v.extract()?;
            n.mode =
                NcuModeRequest::parse(&m, "ncu_options['mode']").map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        if let Some(v) = get(d, "extra_args")? {
            let a: Vec<String> = v.extract()?;
            n.extra_args = a.into_iter().map(Into::into).collect();
        }
    }
    Ok(n)
}

/// `ncu_argv(options, program, args) -> list[str]`: the ncu arguments kprof would use (tests).
#[pyfunction]
fn ncu_argv(options: &Bound<'_, PyDict>, program: String, args: Vec<String>) -> PyResult<Vec<String>> {
    let n = ncu_options(options)?;
    Ok(n.argv(&program, &args)
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect())
}

/// The script that `ncu_relaunch` runs again under ncu, and where its report goes (a dict with
/// these keys; `report_prefix` and `env` may be None).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Relaunch {
    /// The Python interpreter and the script's arguments.
    program: String,
    args: Vec<String>,
    /// `KPROF_NCU_CHILD` of the child: which decorated call it runs.
    child_id: String,
    /// The report's name: the script and the call's qualified name, and the call's index.
    module: String,
    call_index: u32,
    report_prefix: Option<String>,
    /// Extra environment of the child.
    env: Option<Vec<(String, String)>>,
}

/// `ncu_relaunch(name, configs, options, launch) -> (raw_table, info)`: the parent side of
/// relaunch mode (`launch`: the keys of [`Relaunch`]).
#[pyfunction]
fn ncu_relaunch<'py>(
    py: Python<'py>,
    name: String,
    configs: &Bound<'py, PyList>,
    options: &Bound<'py, PyDict>,
    launch: Relaunch,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let Relaunch {
        program,
        args,
        child_id,
        module,
        call_index,
        report_prefix,
        env,
    } = launch;
    let configs: Vec<Config> = configs.iter().map(|c| config_from_py(&c)).collect::<PyResult<_>>()?;
    let mut n = ncu_options(options)?;
    n.report_path = Some(report_path(
        report_prefix.as_deref().map(std::path::Path::new),
        &module,
        &name,
        call_index,
    ));
    let mut import = ImportOptions::default();
    import.benchmark = name.clone();
    import.call_names = vec![name.clone()];
    import.configs = configs.clone();
    import.metrics = Some(n.metrics.clone());
    import.reducer = reducer(get(options, "combine_kernel_metrics")?)?;
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = env
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    env.push((CHILD_ENV.into(), child_id.into()));
    let out = py
        .detach(|| -> Result<_, kprof::ncu::NcuError> {
            let install = NcuInstall::detect()?;
            relaunch_with(&install, &n, &program, &args, &env, &import)
        })
        .map_err(|e| kprof_exception(py, "BackendError", e.to_string()))?;
    let table = raw_table(py, &out.raw, &configs)?;
    let run = out.info;
    let info = PyDict::new(py);
    info.set_item("id", run.id)?;
    info.set_item("mode", run.mode.mode.as_str())?;
    info.set_item("mode_requested", run.mode.requested.as_str())?;
    info.set_item("mode_reason", run.mode.reason.as_str())?;
    info.set_item("summary", run.mode.summary(run.install.version))?;
    info.set_item("ncu", run.install.path.display().to_string())?;
    info.set_item("version", run.install.version.to_string())?;
    info.set_item("report", run.report.display().to_string())?;
    info.set_item("log", run.log.display().to_string())?;
    info.set_item("csv", run.csv.display().to_string())?;
    info.set_item(
        "argv",
        run.argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
    )?;
    info.set_item("wall_s", run.wall.as_secs_f64())?;
    info.set_item("output_tail", run.output_tail)?;
    Ok((table, info))
}

/// Adds the ncu functions to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [ncu_relaunch, ncu_argv]);
    Ok(())
}
