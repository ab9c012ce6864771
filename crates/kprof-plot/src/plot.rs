//! Metric plots: from a processed table and a [`PlotSpec`] to an SVG string or a PNG file.

use std::collections::HashMap;
use std::path::Path;

use kprof_core::{ParamValue, ProcessedResults, ProcessedRow};
use plotters::coord::Shift;
use plotters::element::ErrorBar;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::font::{ensure_font, FONT_FAMILY};
use crate::spec::{Aggregate, PlotSpec, PlotType, SeriesBy};
use crate::svg::{TaggedSvg, Tagger};
use crate::util::*;
use crate::PlotError;

/// Renders the plot as an SVG document (elements tagged with `kprof-*` classes).
///
/// Errors: an unknown metric, parameter or annotation ([`PlotError`] lists the available
/// names), contradictory options, or nothing finite to draw.
pub fn render_svg(p: &ProcessedResults, spec: &PlotSpec) -> Result<String, PlotError> {
    let m = build_model(p, spec)?;
    ensure_font()?;
    let (backend, tagger, out) = TaggedSvg::new((m.width, m.height));
    draw(backend.into_drawing_area(), &m, &tagger)?;
    Ok(out.finish())
}

/// Renders the plot as a PNG file at `path`, with the embedded font (no system font needed),
/// through kprof-core's writer ([`kprof_core::io::atomic::write_bytes`]: atomic replacement,
/// symbolic links followed, devices and `-` written in place, missing folders created).
pub fn render_png(p: &ProcessedResults, spec: &PlotSpec, path: impl AsRef<Path>) -> Result<(), PlotError> {
    let bytes = render_png_bytes(p, spec)?;
    Ok(kprof_core::io::atomic::write_bytes(path.as_ref(), &bytes)?)
}

/// Renders the plot as the bytes of a PNG file (see [`render_png`]).
pub fn render_png_bytes(p: &ProcessedResults, spec: &PlotSpec) -> Result<Vec<u8>, PlotError> {
    use image::ImageEncoder;
    let m = build_model(p, spec)?;
    ensure_font()?;
    let mut rgb = vec![0u8; m.width as usize * m.height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (m.width, m.height)).into_drawing_area();
        draw(root.clone(), &m, &Tagger::default())?;
        root.present().map_err(render_err)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, m.width, m.height, image::ColorType::Rgb8)
        .map_err(render_err)?;
    Ok(png)
}

/// Points of one (row panel, column panel, series), with the rows behind them.
type Cell<'a> = (Vec<Point>, Vec<&'a ProcessedRow>);

/// One plotted point of a series.
#[derive(Clone, Debug)]
pub(crate) struct Point {
    pub x: f64,
    pub mean: f64,
    /// CI95 bounds, when drawn.
    pub ci: Option<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
enum XKind {
    Log2,
    Linear,
    Categorical(Vec<String>),
}

struct PanelSeries {
    series: usize,
    points: Vec<Point>,
    agg: Option<f64>,
}

struct Panel {
    title: String,
    series: Vec<PanelSeries>,
}

/// Everything needed to draw, computed and validated before any drawing starts.
pub(crate) struct Model {
    width: u32,
    height: u32,
    title: String,
    subtitle: String,
    xlabel: String,
    ylabel: String,
    xkind: XKind,
    x_range: (f64, f64),
    x_data_max: f64,
    y_range: (f64, f64),
    slot: f64,
    agg: Option<(Aggregate, f64)>,
    nrows: usize,
    ncols: usize,
    panels: Vec<Panel>,
    series: Vec<String>,
    normalized: bool,
    plot_type: PlotType,
    annotate: bool,
    has_panels: bool,
}

fn distinct<T: PartialEq + Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Picks the metric: the named one, or the only one.
pub(crate) fn resolve_metric(p: &ProcessedResults, metric: &str) -> Result<String, PlotError> {
    let available = distinct(p.rows.iter().map(|r| r.metric.clone()));
    if metric.is_empty() {
        return match available.len() {
            0 => Err(PlotError::NoData("the processed results have no rows".into())),
            1 => Ok(available[0].clone()),
            _ => Err(PlotError::AmbiguousMetric { available }),
        };
    }
    if available.iter().any(|m| m == metric) {
        Ok(metric.to_string())
    } else {
        Err(PlotError::UnknownMetric {
            metric: metric.to_string(),
            available,
        })
    }
}

fn is_pow2(v: f64) -> bool {
    v > 0.0 && v.fract() == 0.0 && v <= 9.0e15 && (v as u64).is_power_of_two()
}

fn numeric(v: &ParamValue) -> Option<f64> {
    match v {
        ParamValue::Int(i) => Some(*i as f64),
        ParamValue::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    }
}

pub(crate) fn build_model(p: &ProcessedResults, spec: &PlotSpec) -> Result<Model, PlotError> {
    let metric = resolve_metric(p, &spec.metric)?;
    let rows: Vec<&ProcessedRow> = p.rows.iter().filter(|r| r.metric == metric).collect();

    let mut params = p.param_names.clone();
    for r in &rows {
        for n in r.config.names() {
            if !params.iter().any(|m| m == n) {
                params.push(n.to_string());
            }
        }
    }
    let check = |name: &String, role: &'static str| -> Result<(), PlotError> {
        if params.contains(name) {
            Ok(())
        } else {
            Err(PlotError::UnknownParameter {
                name: name.clone(),
                role,
                available: params.clone(),
            })
        }
    };
    if let Some(x) = &spec.x {
        check(x, "x")?;
    }
    for n in &spec.row_panels {
        check(n, "row_panels")?;
    }
    for n in &spec.col_panels {
        check(n, "col_panels")?;
    }
    let (variant_fields, variant_anns) = match &spec.series_by {
        SeriesBy::Annotation => (Vec::new(), Vec::new()),
        SeriesBy::Variant { fields, annotations } => (fields.clone(), annotations.clone()),
    };
    for n in &variant_fields {
        check(n, "variant fields")?;
    }
    let annotations = distinct(rows.iter().map(|r| r.annotation.clone()));
    for a in &variant_anns {
        if !annotations.contains(a) {
            return Err(PlotError::UnknownAnnotation {
                name: a.clone(),
                available: annotations.clone(),
            });
        }
    }
    let mut used: Vec<&String> = spec
        .row_panels
        .iter()
        .chain(&spec.col_panels)
        .chain(&variant_fields)
        .collect();
    if let Some(x) = &spec.x {
        used.push(x);
    }
    for (i, n) in used.iter().enumerate() {
        if used[..i].contains(n) {
            return Err(PlotError::InvalidSpec(format!(
                "parameter {n:?} is used twice among x, row_panels, col_panels and variant fields"
            )));
        }
    }
    let free: Vec<String> = params.iter().filter(|n| !used.contains(n)).cloned().collect();

    // Facet keys, sorted by value.
    let mut rkeys = distinct(rows.iter().map(|r| values_of(&r.config, &spec.row_panels)));
    rkeys.sort_by(|a, b| cmp_tuples(a, b));
    let mut ckeys = distinct(rows.iter().map(|r| values_of(&r.config, &spec.col_panels)));
    ckeys.sort_by(|a, b| cmp_tuples(a, b));
    if rkeys.is_empty() {
        rkeys.push(Vec::new());
    }
    if ckeys.is_empty() {
        ckeys.push(Vec::new());
    }

    // Series labels, in first-appearance order.
    let benchmarks = distinct(rows.iter().map(|r| r.benchmark.clone()));
    let series_label = |r: &ProcessedRow| -> String {
        let mut s = if benchmarks.len() > 1 {
            format!("{}/{}", r.benchmark, r.annotation)
        } else {
            r.annotation.clone()
        };
        let mut parts = Vec::new();
        if !variant_fields.is_empty() && (variant_anns.is_empty() || variant_anns.contains(&r.annotation)) {
            parts.push(label(&variant_fields, &values_of(&r.config, &variant_fields)));
        }
        if spec.x.is_some() && !free.is_empty() {
            parts.push(label(&free, &values_of(&r.config, &free)));
        }
        if !parts.is_empty() {
            s.push(' ');
            s.push_str(&parts.join(", "));
        }
        s
    };
    let series: Vec<String> = distinct(rows.iter().map(|r| series_label(r)));

    // The x axis.
    let xvals: Vec<Option<ParamValue>> = rows
        .iter()
        .map(|r| match &spec.x {
            Some(x) => r.config.get(x).cloned(),
            None => Some(ParamValue::Str(label(&free, &values_of(&r.config, &free)))),
        })
        .collect();
    let all_numeric = spec.x.is_some() && xvals.iter().all(|v| v.as_ref().and_then(numeric).is_some());
    let xkind = if all_numeric && spec.plot_type == PlotType::Line {
        if xvals.iter().all(|v| v.as_ref().and_then(numeric).is_some_and(is_pow2)) {
            XKind::Log2
        } else {
            XKind::Linear
        }
    } else {
        let mut cats = distinct(xvals.iter().map(|v| v.clone().unwrap_or(ParamValue::Str("-".into()))));
        if spec.x.is_some() {
            cats.sort_by(cmp_values);
        }
        XKind::Categorical(
            cats.iter()
                .map(|c| match numeric(c) {
                    Some(f) => fmt_num(f),
                    None if c.to_string().is_empty() => "(all)".into(),
                    None => c.to_string(),
                })
                .collect(),
        )
    };
    let xpos = |v: &Option<ParamValue>| -> f64 {
        let v = v.clone().unwrap_or(ParamValue::Str("-".into()));
        match &xkind {
            XKind::Log2 => numeric(&v).map(f64::log2).unwrap_or(f64::NAN),
            XKind::Linear => numeric(&v).unwrap_or(f64::NAN),
            XKind::Categorical(labels) => {
                let text = match numeric(&v) {
                    Some(f) => fmt_num(f),
                    None if v.to_string().is_empty() => "(all)".into(),
                    None => v.to_string(),
                };
                labels
                    .iter()
                    .position(|l| *l == text)
                    .map(|i| i as f64)
                    .unwrap_or(f64::NAN)
            }
        }
    };

    // Points per panel and series.
    let mut cells: HashMap<(usize, usize, usize), Cell<'_>> = HashMap::new();
    let mut any_finite = false;
    for (r, xv) in rows.iter().zip(&xvals) {
        let ri = rkeys
            .iter()
            .position(|k| *k == values_of(&r.config, &spec.row_panels))
            .unwrap_or(0);
        let ci = ckeys
            .iter()
            .position(|k| *k == values_of(&r.config, &spec.col_panels))
            .unwrap_or(0);
        let si = series.iter().position(|s| *s == series_label(r)).unwrap_or(0);
        let s = &r.summary;
        let cell = cells.entry((ri, ci, si)).or_default();
        cell.1.push(r);
        if !s.mean.is_finite() {
            continue;
        }
        let x = xpos(xv);
        if !x.is_finite() {
            continue;
        }
        any_finite = true;
        let ci95 = (spec.error_bars && s.num_runs >= 2 && s.ci95_lower.is_finite() && s.ci95_upper.is_finite())
            .then_some((s.ci95_lower, s.ci95_upper));
        cell.0.push(Point {
            x,
            mean: s.mean,
            ci: ci95,
        });
    }
    if !any_finite {
        return Err(PlotError::NoData(format!(
            "metric {metric:?} has no finite mean value to plot"
        )));
    }

    // The x extent and the aggregate slot.
    let xs: Vec<f64> = cells.values().flat_map(|c| c.0.iter().map(|p| p.x)).collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    let slot = match &xkind {
        XKind::Linear => {
            let mut u = distinct(xs.iter().map(|x| x.to_bits()))
                .into_iter()
                .map(f64::from_bits)
                .collect::<Vec<_>>();
            u.sort_by(|a, b| a.total_cmp(b));
            let gaps = u.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
            if gaps.is_finite() && gaps > 0.0 {
                gaps
            } else if xmax != 0.0 {
                xmax.abs() * 0.2
            } else {
                1.0
            }
        }
        _ => 1.0,
    };
    let (xmin, xmax) = match &xkind {
        XKind::Categorical(l) => (0.0, (l.len().max(1) - 1) as f64),
        _ => (xmin, xmax),
    };
    let agg = spec.aggregate.map(|a| (a, xmax + slot));
    let wide = spec.plot_type == PlotType::Bar || matches!(xkind, XKind::Categorical(_)) || agg.is_some();
    let pad = if wide { 0.5 } else { 0.3 } * slot;
    let x_range = (xmin - pad, agg.map(|(_, x)| x).unwrap_or(xmax) + pad);

    let mut panels = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for (ri, rk) in rkeys.iter().enumerate() {
        for (ci, ck) in ckeys.iter().enumerate() {
            let mut title = Vec::new();
            if !spec.row_panels.is_empty() {
                title.push(label(&spec.row_panels, rk));
            }
            if !spec.col_panels.is_empty() {
                title.push(label(&spec.col_panels, ck));
            }
            let mut ps = Vec::new();
            for si in 0..series.len() {
                let Some((points, srows)) = cells.get(&(ri, ci, si)) else {
                    continue;
                };
                let mut points = points.clone();
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
                let agg_value = spec.aggregate.and_then(|a| {
                    let means: Vec<f64> = points.iter().map(|p| p.mean).collect();
                    if means.is_empty() {
                        return None;
                    }
                    let v = match a {
                        Aggregate::Avg => means.iter().sum::<f64>() / means.len() as f64,
                        Aggregate::Geomean => {
                            // The Geomean column is over all configs of (benchmark, annotation,
                            // metric); use it only when this series shows all of them.
                            let whole = srows.first().is_some_and(|f| {
                                rows.iter()
                                    .filter(|r| r.benchmark == f.benchmark && r.annotation == f.annotation)
                                    .count()
                                    == srows.len()
                            });
                            let col = if whole { srows[0].geomean } else { f64::NAN };
                            if col.is_finite() && col > 0.0 {
                                col
                            } else {
                                let pos: Vec<f64> = means.iter().copied().filter(|m| *m > 0.0).collect();
                                if pos.is_empty() {
                                    f64::NAN
                                } else {
                                    (pos.iter().map(|m| m.ln()).sum::<f64>() / pos.len() as f64).exp()
                                }
                            }
                        }
                    };
                    v.is_finite().then_some(v)
                });
                for pt in &points {
                    ys.push(pt.mean);
                    if let Some((lo, hi)) = pt.ci {
                        ys.push(lo);
                        ys.push(hi);
                    }
                }
                ys.extend(agg_value);
                ps.push(PanelSeries {
                    series: si,
                    points,
                    agg: agg_value,
                });
            }
            panels.push(Panel {
                title: title.join(" | "),
                series: ps,
            });
        }
    }

    let normalized = rows.iter().any(|r| r.normalized.is_some());
    let mut unit = rows
        .iter()
        .map(|r| r.unit.clone())
        .find(|u| !u.is_empty())
        .unwrap_or_default();
    // Times in ns are shown in us or ms when they are large, so tick labels stay short.
    let maxabs = ys.iter().filter(|v| v.is_finite()).fold(0.0f64, |a, v| a.max(v.abs()));
    let scale = match unit.as_str() {
        "ns" if !normalized && maxabs >= 1e6 => Some((1e-6, "ms")),
        "ns" if !normalized && maxabs >= 1e4 => Some((1e-3, "µs")),
        _ => None,
    };
    if let Some((f, u)) = scale {
        unit = u.to_string();
        for v in ys.iter_mut() {
            *v *= f;
        }
        for panel in panels.iter_mut() {
            for ps in panel.series.iter_mut() {
                ps.agg = ps.agg.map(|v| v * f);
                for pt in ps.points.iter_mut() {
                    pt.mean *= f;
                    pt.ci = pt.ci.map(|(lo, hi)| (lo * f, hi * f));
                }
            }
        }
    }
    if normalized {
        ys.push(1.0);
    }
    let (lo, hi) = ys
        .iter()
        .filter(|v| v.is_finite())
        .fold((0.0f64, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    let hi = if hi > 0.0 { hi * 1.1 } else { 1.0 };
    let lo = if lo < 0.0 { lo * 1.1 } else { 0.0 };

    // Labels.
    let base = spec.ylabel.clone().unwrap_or_else(|| metric.clone());
    let ylabel = if normalized {
        let baseline = distinct(rows.iter().filter_map(|r| r.normalized.clone())).join(", ");
        format!("{base} relative to {baseline} (x)")
    } else if unit.is_empty() {
        base
    } else {
        format!("{base} ({unit})")
    };
    let xlabel = match (&spec.x, &xkind) {
        (Some(x), XKind::Log2) => format!("{x} (log2 scale)"),
        (Some(x), _) => x.clone(),
        (None, _) if free.is_empty() => "configuration".into(),
        (None, _) => format!("configuration ({})", free.join(", ")),
    };
    let gpus = distinct(rows.iter().map(|r| r.device.gpu.clone()).filter(|g| !g.is_empty()));
    let hosts = distinct(rows.iter().map(|r| r.device.host.clone()).filter(|g| !g.is_empty()));
    let max_runs = rows.iter().map(|r| r.summary.num_runs).max().unwrap_or(0);
    let mut subtitle = Vec::new();
    if !gpus.is_empty() {
        let mut g = gpus.join(", ");
        if !hosts.is_empty() {
            g.push_str(&format!(" on {}", hosts.join(", ")));
        }
        subtitle.push(g);
    }
    subtitle.push(format!("mean of up to {max_runs} runs"));
    if spec.error_bars {
        subtitle.push("error bars: 95% CI of the mean (n >= 2)".into());
    }

    let nrows = rkeys.len();
    let ncols = ckeys.len();
    let legend_w = legend_width(&series, 10_000);
    let width = spec
        .width_px
        .unwrap_or_else(|| (70 + 380 * ncols as u32 + legend_w).clamp(720, MAX_SIDE));
    let height = spec
        .height_px
        .unwrap_or_else(|| (TITLE_H + 300 * nrows as u32 + 20).clamp(440, MAX_SIDE));
    if width < 200 || height < 150 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(PlotError::InvalidSpec(format!(
            "image size {width}x{height} px is outside 200x150 ..= {MAX_SIDE}x{MAX_SIDE}"
        )));
    }

    Ok(Model {
        width,
        height,
        title: spec.title.clone().unwrap_or_else(|| metric.clone()),
        subtitle: subtitle.join(" · "),
        xlabel,
        ylabel,
        xkind,
        x_range,
        x_data_max: xmax,
        y_range: (lo, hi),
        slot,
        agg,
        nrows,
        ncols,
        panels,
        series,
        normalized,
        plot_type: spec.plot_type,
        annotate: spec.annotate_points,
        has_panels: !spec.row_panels.is_empty() || !spec.col_panels.is_empty(),
    })
}

const TITLE_H: u32 = 56;
const LEGEND_ROW_H: u32 = 18;

/// Width of the legend strip: one column of entries per `per_col` series.
fn legend_width(series: &[String], per_col: usize) -> u32 {
    let chars = series.iter().map(|s| s.chars().count()).max().unwrap_or(6) as u32;
    let col = (chars * 7 + 48).clamp(120, 360);
    let cols = series.len().div_ceil(per_col.max(1)).max(1) as u32;
    col * cols
}

type Res = Result<(), PlotError>;

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, m: &Model, tag: &Tagger) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(render_err)?;
    let (w, h) = root.dim_in_pixel();
    let (title_area, rest) = root.split_vertically(TITLE_H);
    tag.set("kprof-title");
    title_area
        .draw(&Text::new(
            m.title.clone(),
            (12, 8),
            (FONT_FAMILY, 20).into_font().style(FontStyle::Bold),
        ))
        .map_err(render_err)?;
    tag.set("kprof-subtitle");
    title_area
        .draw(&Text::new(
            m.subtitle.clone(),
            (12, 34),
            (FONT_FAMILY, 13).into_font().color(&RGBColor(90, 90, 90)),
        ))
        .map_err(render_err)?;
    tag.clear();

    let per_col = ((h.saturating_sub(TITLE_H + 30)) / LEGEND_ROW_H).max(1) as usize;
    let legend_w = legend_width(&m.series, per_col).min(w / 2);
    let (grid, legend) = rest.split_horizontally(w - legend_w);
    draw_legend(&legend, &m.series, per_col, tag)?;

    let areas = grid.split_evenly((m.nrows, m.ncols));
    for (panel, area) in m.panels.iter().zip(areas.iter()) {
        draw_panel(area, m, panel, tag)?;
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[String],
    per_col: usize,
    tag: &Tagger,
) -> Res
where
    DB::ErrorType: 'static,
{
    let chars = series.iter().map(|s| s.chars().count()).max().unwrap_or(6) as i32;
    let col_w = (chars * 7 + 48).clamp(120, 360);
    for (i, name) in series.iter().enumerate() {
        let (color, mk) = series_style(i);
        let x0 = 8 + (i / per_col) as i32 * col_w;
        let y = 16 + (i % per_col) as i32 * LEGEND_ROW_H as i32;
        tag.set(&format!("kprof-legend-marker kprof-series-{i}"));
        area.draw(&PathElement::new(vec![(x0, y), (x0 + 26, y)], color.stroke_width(2)))
            .map_err(render_err)?;
        area.draw(&marker::<DB, (i32, i32)>(mk, (x0 + 13, y), 4, color))
            .map_err(render_err)?;
        tag.set("kprof-legend-entry");
        let style = (FONT_FAMILY, 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(name.clone(), (x0 + 32, y), style))
            .map_err(render_err)?;
    }
    tag.clear();
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, m: &Model, panel: &Panel, tag: &Tagger) -> Res
where
    DB::ErrorType: 'static,
{
    let (pw, _) = area.dim_in_pixel();
    let (x0, x1) = m.x_range;
    let (y0, y1) = m.y_range;

    // Category labels that do not fit are turned on their side.
    let mut x_label_area = 44u32;
    let mut rotate = false;
    if let XKind::Categorical(labels) = &m.xkind {
        let n = labels.len() + usize::from(m.agg.is_some());
        let slot_px = pw.saturating_sub(90) as f64 / n.max(1) as f64;
        let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) as f64 * 6.5;
        if longest > slot_px * 0.95 {
            rotate = true;
            x_label_area = (longest as u32 + 34).min(200);
        }
    }

    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .margin_right(16)
        .x_label_area_size(x_label_area)
        .y_label_area_size(72);
    if m.has_panels {
        tag.set("kprof-panel-title");
        builder.caption(panel.title.clone(), (FONT_FAMILY, 14));
    }
    let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1).map_err(render_err)?;
    tag.set("kprof-panel");
    chart
        .plotting_area()
        .fill(&RGBColor(253, 253, 253))
        .map_err(render_err)?;
    tag.clear();

    let formatter = |v: &f64| -> String {
        let near = |a: f64, b: f64| (a - b).abs() < m.slot * 1e-6;
        if rotate {
            return String::new();
        }
        if let Some((a, pos)) = m.agg {
            if near(*v, pos) {
                return match a {
                    Aggregate::Avg => "Avg".into(),
                    Aggregate::Geomean => "Geomean".into(),
                };
            }
        }
        if *v > m.x_data_max + m.slot * 0.35 {
            return String::new();
        }
        match &m.xkind {
            XKind::Log2 if near(*v, v.round()) => fmt_num(2f64.powf(v.round())),
            XKind::Log2 => String::new(),
            XKind::Linear => fmt_num(*v),
            XKind::Categorical(labels) => {
                let i = v.round();
                if near(*v, i) && i >= 0.0 && (i as usize) < labels.len() {
                    labels[i as usize].clone()
                } else {
                    String::new()
                }
            }
        }
    };
    let n_ticks = match &m.xkind {
        XKind::Linear => 8,
        _ => ((x1 - x0) / m.slot).ceil() as usize + 2,
    };
    let y_fmt = |v: &f64| fmt_num(*v);
    tag.set("kprof-mesh");
    chart
        .configure_mesh()
        .x_desc(m.xlabel.clone())
        .y_desc(m.ylabel.clone())
        .x_labels(n_ticks)
        .y_labels(8)
        .x_label_formatter(&formatter)
        .y_label_formatter(&y_fmt)
        .x_label_style((FONT_FAMILY, 11))
        .y_label_style((FONT_FAMILY, 11))
        .axis_desc_style((FONT_FAMILY, 13))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(render_err)?;

    if rotate {
        // plotters centres axis labels on the tick, also when rotated; draw them ourselves so
        // that each starts just below its tick and runs downwards.
        let mut labels: Vec<(f64, String)> = match &m.xkind {
            XKind::Categorical(l) => l.iter().enumerate().map(|(i, t)| (i as f64, t.clone())).collect(),
            _ => Vec::new(),
        };
        if let Some((a, pos)) = m.agg {
            labels.push((
                pos,
                if a == Aggregate::Avg {
                    "Avg".into()
                } else {
                    "Geomean".into()
                },
            ));
        }
        let style = TextStyle::from((FONT_FAMILY, 11).into_font())
            .transform(FontTransform::Rotate90)
            .pos(Pos::new(HPos::Left, VPos::Center));
        tag.set("kprof-x-label");
        for (x, text) in labels {
            let (px, py) = chart.backend_coord(&(x, y0));
            let (ax, ay) = area.get_base_pixel();
            area.draw(&Text::new(text, (px - ax, py - ay + 8), style.clone()))
                .map_err(render_err)?;
        }
    }
    if m.normalized && y0 <= 1.0 && y1 >= 1.0 {
        tag.set("kprof-ref-line");
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, 1.0), (x1, 1.0)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(render_err)?;
    }
    if let Some((_, pos)) = m.agg {
        let sep = pos - m.slot / 2.0;
        tag.set("kprof-agg-sep");
        chart
            .draw_series(DashedLineSeries::new(
                vec![(sep, y0), (sep, y1)],
                5,
                5,
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(render_err)?;
    }

    let s_total = m.series.len().max(1) as f64;
    let group = 0.8 * m.slot;
    let bar_center = |x: f64, si: usize| x - group / 2.0 + (si as f64 + 0.5) * group / s_total;
    let bar_half = group / s_total / 2.0 * 0.92;
    let base = 0f64.clamp(y0, y1);
    let label_style = (FONT_FAMILY, 10)
        .into_font()
        .color(&RGBColor(40, 40, 40))
        .pos(Pos::new(HPos::Center, VPos::Bottom));

    for ps in &panel.series {
        let si = ps.series;
        let (color, mk) = series_style(si);
        let at = |x: f64| {
            if m.plot_type == PlotType::Bar {
                bar_center(x, si)
            } else {
                x
            }
        };
        match m.plot_type {
            PlotType::Line => {
                tag.set(&format!("kprof-series kprof-series-{si}"));
                chart
                    .draw_series(LineSeries::new(
                        ps.points.iter().map(|p| (p.x, p.mean)),
                        color.stroke_width(2),
                    ))
                    .map_err(render_err)?;
                tag.set(&format!("kprof-marker kprof-series-{si}"));
                for p in &ps.points {
                    chart
                        .plotting_area()
                        .draw(&marker::<DB, (f64, f64)>(mk, (p.x, p.mean), 4, color))
                        .map_err(render_err)?;
                }
            }
            PlotType::Bar => {
                tag.set(&format!("kprof-bar kprof-series-{si}"));
                chart
                    .draw_series(ps.points.iter().map(|p| {
                        let c = at(p.x);
                        Rectangle::new([(c - bar_half, base), (c + bar_half, p.mean)], color.filled())
                    }))
                    .map_err(render_err)?;
            }
        }
        tag.set(&format!("kprof-errorbar kprof-series-{si}"));
        chart
            .draw_series(ps.points.iter().filter_map(|p| {
                p.ci.map(|(lo, hi)| ErrorBar::new_vertical(at(p.x), lo, p.mean, hi, BLACK.mix(0.75).stroke_width(1), 7))
            }))
            .map_err(render_err)?;
        if let (Some((_, pos)), Some(v)) = (m.agg, ps.agg) {
            let c = bar_center(pos, si);
            tag.set(&format!("kprof-agg kprof-series-{si}"));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(c - bar_half, base), (c + bar_half, v)],
                    color.mix(0.85).filled(),
                )))
                .map_err(render_err)?;
            if m.annotate {
                tag.set("kprof-point-label");
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((c, v)) + Text::new(fmt_num(v), (0, -4), label_style.clone()),
                    ))
                    .map_err(render_err)?;
            }
        }
        if m.annotate {
            tag.set("kprof-point-label");
            chart
                .draw_series(ps.points.iter().map(|p| {
                    let top = p.ci.map(|(_, hi)| hi).unwrap_or(p.mean).max(p.mean);
                    EmptyElement::at((at(p.x), top)) + Text::new(fmt_num(p.mean), (0, -6), label_style.clone())
                }))
                .map_err(render_err)?;
        }
    }
    tag.clear();
    Ok(())
}
