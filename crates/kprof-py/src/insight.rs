//! `kprof._core.expand_metrics`, `speed_of_light` and `render_roofline`: Nsight Compute's
//! section and set names in `metrics=` (`kprof::counters::sections`), the speed of light per
//! region and configuration (`kprof_core::sol`) and the roofline chart (kprof-plot), for
//! `ProfileResults.speed_of_light()` and `plot_roofline()`.

use kprof_core::sol::{self, Cell};
use kprof_plot::{render_roofline_png_bytes, render_roofline_svg, RooflineSpec};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};

use crate::engine::kprof_exception;
use crate::plot::processed_from;

/// `expand_metrics(names: list[str]) -> tuple[list[str], str | None, int | None]`: the metric
/// names with ncu section and set names (`SpeedOfLight`, `basic`) replaced by theirs for the
/// device's chip (else `KPROF_CHIP`'s), a note of the section metrics left out (launch
/// attributes, names the chip's counters lack) or None, and the replay passes of the expanded
/// set (None without sections). Names without sections come back as given, with no GPU work.
/// Unknown section names and a missing chip raise `kprof.ConfigError`.
#[pyfunction]
fn expand_metrics(py: Python<'_>, names: Vec<String>) -> PyResult<(Vec<String>, Option<String>, Option<usize>)> {
    use kprof::counters::sections;
    let config_error = |e: kprof::EngineError| kprof_exception(py, "ConfigError", format!("metrics: {e}"));
    let e = py.detach(|| sections::expand_metrics(&names)).map_err(config_error)?;
    let passes = if e.sections.is_empty() {
        None
    } else {
        py.detach(|| sections::passes_here(&e.metrics)).map_err(config_error)?
    };
    let note = e.left_out_note();
    Ok((e.metrics, note, passes))
}

/// `speed_of_light(raw: dict[str, list], options: dict) -> dict[str, list]`: the columns of
/// `kprof_core::sol::columns` (numbers as float, NaN when not measured), one row per region,
/// configuration and device of the results `raw` + `options` (as for `process_raw`).
#[pyfunction]
fn speed_of_light<'py>(
    py: Python<'py>,
    raw: &Bound<'py, PyDict>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let (_, processed) = processed_from(py, raw, options)?;
    let rows = sol::speed_of_light(&processed);
    let names = sol::columns();
    let mut cols: Vec<Vec<Bound<'py, PyAny>>> = vec![Vec::with_capacity(rows.len()); names.len()];
    for r in &rows {
        for (col, cell) in cols.iter_mut().zip(sol::cells(r)) {
            col.push(match cell {
                Cell::Num(v) => PyFloat::new(py, v).into_any(),
                Cell::Text(t) => PyString::new(py, &t).into_any(),
            });
        }
    }
    let out = PyDict::new(py);
    for (name, values) in names.iter().zip(cols) {
        out.set_item(name, PyList::new(py, values)?)?;
    }
    Ok(out)
}

/// `render_roofline(raw, options, title=None, path=None) -> str`: the roofline SVG of the
/// results `raw` + `options`; written to `path` when given (a PNG when it ends in `.png`). `ValueError` when no region has
/// FLOP/s and DRAM bytes/s (it names the metrics to profile with).
#[pyfunction]
#[pyo3(signature = (raw, options, title=None, path=None))]
fn render_roofline(
    py: Python<'_>,
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
    title: Option<String>,
    path: Option<String>,
) -> PyResult<String> {
    let (_, processed) = processed_from(py, raw, options)?;
    let spec = RooflineSpec {
        title,
        ..RooflineSpec::default()
    };
    let rows = sol::speed_of_light(&processed);
    let svg = py
        .detach(|| render_roofline_svg(&rows, &spec))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    match path {
        Some(path) if path.to_ascii_lowercase().ends_with(".png") => {
            let png = py
                .detach(|| render_roofline_png_bytes(&rows, &spec))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            crate::write_file(&path, &png)?;
        }
        Some(path) => crate::write_file(&path, svg.as_bytes())?,
        None => {}
    }
    Ok(svg)
}

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [expand_metrics, speed_of_light, render_roofline]);
    Ok(())
}
