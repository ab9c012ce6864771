//! `kprof._core.render_plot` and `kprof._core.render_report`: kprof-plot's renderer for the
//! Python package, so Python, the CLI and the Rust API draw the same images.
//!
//! Both take the raw columns and options of `process_raw` and re-run kprof-core's pipeline, so
//! the plots see the Rust [`ProcessedResults`] (with every statistic) rather than a round trip
//! through Python values.

use std::path::Path;

use kprof_core::pipeline::process;
use kprof_core::{ProcessedResults, RawResults};
use kprof_plot::{
    render_png, render_report as plot_report, render_svg, Aggregate, PlotError, PlotSpec, PlotType, ReportInput,
    ReportOptions, SeriesBy,
};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{process_options, raw_from_columns};

fn plot_err(e: PlotError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn opt_item<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(d.get_item(key)?.filter(|v| !v.is_none()))
}

fn opt_string(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<String>> {
    opt_item(d, key)?
        .map(|v| v.extract::<String>())
        .transpose()
        .map_err(|_| PyValueError::new_err(format!("plot option {key:?} must be a string or None")))
}

fn string_list(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<String>> {
    match opt_item(d, key)? {
        None => Ok(Vec::new()),
        Some(v) => v
            .extract::<Vec<String>>()
            .map_err(|_| PyValueError::new_err(format!("plot option {key:?} must be a list of strings"))),
    }
}

fn flag(d: &Bound<'_, PyDict>, key: &str, default: bool) -> PyResult<bool> {
    match opt_item(d, key)? {
        None => Ok(default),
        Some(v) => v.is_truthy(),
    }
}

fn pixels(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<u32>> {
    opt_item(d, key)?
        .map(|v| v.extract::<u32>())
        .transpose()
        .map_err(|_| PyValueError::new_err(format!("plot option {key:?} must be a positive number of pixels")))
}

fn plot_type(name: Option<String>) -> PyResult<PlotType> {
    match name.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("line") => Ok(PlotType::Line),
        Some("bar") => Ok(PlotType::Bar),
        Some(other) => Err(PyValueError::new_err(format!(
            "plot_type must be 'line' or 'bar', got {other:?}"
        ))),
    }
}

/// A [`PlotSpec`] from the Python spec dict. Keys (all optional): `metric`, `x`, `plot_type`
/// (`"line"`/`"bar"`), `error_bars` (default true), `row_panels`, `col_panels`, `aggregate`
/// (`"avg"`/`"geomean"`), `annotate_points`, `title`, `ylabel`, `variant_fields`,
/// `variant_annotations`, `width`, `height` (pixels).
fn spec_from_dict(d: &Bound<'_, PyDict>) -> PyResult<PlotSpec> {
    let variant_fields = string_list(d, "variant_fields")?;
    let variant_annotations = string_list(d, "variant_annotations")?;
    let aggregate = match opt_string(d, "aggregate")?.map(|s| s.to_ascii_lowercase()).as_deref() {
        None => None,
        Some("avg") => Some(Aggregate::Avg),
        Some("geomean") => Some(Aggregate::Geomean),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "show_aggregate must be 'avg' or 'geomean', got {other:?}"
            )))
        }
    };
    Ok(PlotSpec {
        metric: opt_string(d, "metric")?.unwrap_or_default(),
        x: opt_string(d, "x")?,
        series_by: if variant_fields.is_empty() {
            if !variant_annotations.is_empty() {
                return Err(PyValueError::new_err("variant_annotations needs variant_fields"));
            }
            SeriesBy::Annotation
        } else {
            SeriesBy::Variant {
                fields: variant_fields,
                annotations: variant_annotations,
            }
        },
        plot_type: plot_type(opt_string(d, "plot_type")?)?,
        error_bars: flag(d, "error_bars", true)?,
        row_panels: string_list(d, "row_panels")?,
        col_panels: string_list(d, "col_panels")?,
        aggregate,
        annotate_points: flag(d, "annotate_points", false)?,
        title: opt_string(d, "title")?,
        ylabel: opt_string(d, "ylabel")?,
        width_px: pixels(d, "width")?,
        height_px: pixels(d, "height")?,
    })
}

/// Raw columns + process options → the raw samples and the processed table.
pub(crate) fn processed_from(
    py: Python<'_>,
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
) -> PyResult<(RawResults, ProcessedResults)> {
    let (params, opts) = process_options(options)?;
    let raw_results = raw_from_columns(raw, &params)?;
    let processed = py
        .detach(|| process(&raw_results, &opts))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((raw_results, processed))
}

fn write_text(path: &str, text: &str) -> PyResult<()> {
    crate::write_file(path, text.as_bytes())
}

/// `render_plot(raw: dict[str, list], options: dict, spec: dict, path: str | None) -> str`: the
/// SVG text of the plot of the results `raw` + `options` (as for `process_raw`) described by
/// `spec` (keys: see the Python `ProfileResults.plot`). With `path`, also writes the image:
/// a PNG when `path` ends in `.png`, else the SVG. Bad names raise `ValueError` listing the
/// available ones; a file that cannot be written raises `OSError`.
#[pyfunction]
#[pyo3(signature = (raw, options, spec, path=None))]
fn render_plot(
    py: Python<'_>,
    raw: &Bound<'_, PyDict>,
    options: &Bound<'_, PyDict>,
    spec: &Bound<'_, PyDict>,
    path: Option<String>,
) -> PyResult<String> {
    let spec = spec_from_dict(spec)?;
    let (_, processed) = processed_from(py, raw, options)?;
    let svg = py.detach(|| render_svg(&processed, &spec)).map_err(plot_err)?;
    if let Some(path) = path {
        if Path::new(&path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
        {
            py.detach(|| render_png(&processed, &spec, &path))
                .map_err(|e| match e {
                    PlotError::Render(msg) => PyOSError::new_err(format!("cannot write {path}: {msg}")),
                    PlotError::Write(e) => PyOSError::new_err(e.to_string()),
                    e => plot_err(e),
                })?;
        } else {
            write_text(&path, &svg)?;
        }
    }
    Ok(svg)
}

/// `render_report(inputs: list[dict], options: dict, path: str | None) -> str`: the
/// self-contained HTML report. Each input is `{"title": str, "raw": raw columns, "options":
/// process options, "environment": JSON text | None, "distributions": bool}`; `options` has
/// `title` and `x` (both optional). Writes the page to `path` when given; returns its text.
#[pyfunction]
#[pyo3(signature = (inputs, options, path=None))]
fn render_report(
    py: Python<'_>,
    inputs: &Bound<'_, PyList>,
    options: &Bound<'_, PyDict>,
    path: Option<String>,
) -> PyResult<String> {
    let mut sets: Vec<(String, Option<RawResults>, ProcessedResults, Option<serde_json::Value>)> = Vec::new();
    for (i, item) in inputs.iter().enumerate() {
        let d = item
            .cast::<PyDict>()
            .map_err(|_| PyValueError::new_err(format!("report input {i} must be a dict")))?;
        let raw = opt_item(d, "raw")?
            .ok_or_else(|| PyValueError::new_err(format!("report input {i} has no \"raw\" columns")))?;
        let raw = raw
            .cast::<PyDict>()
            .map_err(|_| PyValueError::new_err(format!("report input {i}: \"raw\" must be a dict of columns")))?;
        let empty = PyDict::new(py);
        let opts = match opt_item(d, "options")? {
            Some(o) => o
                .cast_into::<PyDict>()
                .map_err(|_| PyValueError::new_err(format!("report input {i}: \"options\" must be a dict")))?,
            None => empty,
        };
        let (raw_results, processed) = processed_from(py, raw, &opts)?;
        let environment = match opt_string(d, "environment")? {
            None => None,
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                PyValueError::new_err(format!("report input {i}: the environment is not valid JSON: {e}"))
            })?),
        };
        let title = opt_string(d, "title")?.unwrap_or_else(|| format!("result {}", i + 1));
        let raw_kept = flag(d, "distributions", true)?.then_some(raw_results);
        sets.push((title, raw_kept, processed, environment));
    }
    let report_inputs: Vec<ReportInput<'_>> = sets
        .iter()
        .map(|(title, raw, processed, env)| ReportInput {
            title,
            raw: raw.as_ref(),
            processed,
            environment: env.as_ref(),
        })
        .collect();
    let opts = ReportOptions {
        title: opt_string(options, "title")?.unwrap_or_else(|| ReportOptions::default().title),
        x: opt_string(options, "x")?,
        plot_type: plot_type(opt_string(options, "plot_type")?)?,
        ..ReportOptions::default()
    };
    let html = py.detach(|| plot_report(&report_inputs, &opts)).map_err(plot_err)?;
    if let Some(path) = path {
        write_text(&path, &html)?;
    }
    Ok(html)
}

/// Adds `render_plot` and `render_report` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, [render_plot, render_report]);
    Ok(())
}
