//! Distribution view: every run of each configuration as a jittered point over a box plot.

use kprof_core::RawResults;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::font::{ensure_font, FONT_FAMILY};
use crate::svg::TaggedSvg;
use crate::util::*;
use crate::PlotError;

/// Options of [`render_distribution_svg`].
#[derive(Clone, Debug, PartialEq)]
pub struct DistributionSpec {
    /// Only this configuration (an index into [`RawResults::configs`]); `None`: all of them.
    pub config: Option<u32>,
    /// Only these annotations; empty: all.
    pub annotations: Vec<String>,
    /// Title; the default is the metric (and the configuration when one is chosen).
    pub title: Option<String>,
    /// Image width in pixels; `None` sizes it from the number of boxes.
    pub width_px: Option<u32>,
    /// Image height in pixels.
    pub height_px: u32,
}

impl Default for DistributionSpec {
    fn default() -> Self {
        DistributionSpec {
            config: None,
            annotations: Vec::new(),
            title: None,
            width_px: None,
            height_px: 320,
        }
    }
}

/// Quartiles (linear interpolation, numpy's default) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Deterministic jitter in [-0.5, 0.5) for a run index (golden-ratio sequence).
fn jitter(run: u32) -> f64 {
    (run as f64 * 0.618_033_988_749_895).fract() - 0.5
}

struct BoxData {
    label: String,
    /// (run, value) of every non-NaN run.
    runs: Vec<(u32, f64)>,
    failed: usize,
    q1: f64,
    median: f64,
    q3: f64,
    whisker_lo: f64,
    whisker_hi: f64,
}

/// Renders the runs of `metric` as one box per (configuration, annotation): quartile box, median
/// line, whiskers at the furthest runs within Tukey's 1.5 IQR fences, every run as a point with
/// deterministic horizontal jitter (class `kprof-run`), runs outside the fences drawn as red
/// diamonds (class `kprof-outlier`). Failed (NaN) runs are counted in the box label.
pub fn render_distribution_svg(raw: &RawResults, metric: &str, spec: &DistributionSpec) -> Result<String, PlotError> {
    let mut metrics: Vec<String> = Vec::new();
    for s in &raw.series {
        if !metrics.contains(&s.key.metric) {
            metrics.push(s.key.metric.clone());
        }
    }
    if !metrics.iter().any(|m| m == metric) {
        return Err(PlotError::UnknownMetric {
            metric: metric.to_string(),
            available: metrics,
        });
    }
    if let Some(c) = spec.config {
        if c as usize >= raw.configs.len() {
            return Err(PlotError::InvalidSpec(format!(
                "configuration index {c} is out of range; the results have {} configurations",
                raw.configs.len()
            )));
        }
    }
    let mut annotations: Vec<String> = Vec::new();
    for s in raw.series.iter().filter(|s| s.key.metric == metric) {
        if !annotations.contains(&s.key.annotation) {
            annotations.push(s.key.annotation.clone());
        }
    }
    for a in &spec.annotations {
        if !annotations.contains(a) {
            return Err(PlotError::UnknownAnnotation {
                name: a.clone(),
                available: annotations.clone(),
            });
        }
    }

    // Series of this metric, grouped per box in (config, annotation) order.
    let mut chosen: Vec<usize> = raw
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.key.metric == metric)
        .filter(|(_, s)| spec.config.is_none_or(|c| s.key.config == c))
        .filter(|(_, s)| spec.annotations.is_empty() || spec.annotations.contains(&s.key.annotation))
        .map(|(i, _)| i)
        .collect();
    chosen.sort_by_key(|&i| {
        let s = &raw.series[i];
        (
            s.key.config,
            annotations.iter().position(|a| *a == s.key.annotation).unwrap_or(0),
        )
    });
    let benchmarks = {
        let mut b: Vec<&str> = Vec::new();
        for &i in &chosen {
            if !b.contains(&raw.series[i].key.benchmark.as_str()) {
                b.push(&raw.series[i].key.benchmark);
            }
        }
        b.len()
    };
    let mut unit = String::new();
    let mut boxes = Vec::new();
    for &si in &chosen {
        let s = &raw.series[si];
        if unit.is_empty() {
            unit = s.unit.clone();
        }
        let mut runs: Vec<(u32, f64)> = Vec::new();
        let mut failed = 0;
        for smp in raw.samples.iter().filter(|x| x.series as usize == si) {
            if smp.value.is_nan() {
                failed += 1;
            } else {
                runs.push((smp.run, smp.value));
            }
        }
        let mut label = if benchmarks > 1 {
            format!("{}/{}", s.key.benchmark, s.key.annotation)
        } else {
            s.key.annotation.clone()
        };
        if spec.config.is_none() {
            let cfg = raw
                .configs
                .get(s.key.config as usize)
                .map(|c| c.to_string())
                .unwrap_or_default();
            if !cfg.is_empty() {
                label = if annotations.len() > 1 {
                    format!("{label} | {cfg}")
                } else {
                    cfg
                };
            }
        }
        if failed > 0 {
            label.push_str(&format!(" ({failed} failed)"));
        }
        if runs.is_empty() {
            boxes.push(BoxData {
                label,
                runs,
                failed,
                q1: f64::NAN,
                median: f64::NAN,
                q3: f64::NAN,
                whisker_lo: f64::NAN,
                whisker_hi: f64::NAN,
            });
            continue;
        }
        let mut v: Vec<f64> = runs.iter().map(|r| r.1).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let (q1, median, q3) = (quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75));
        let iqr = q3 - q1;
        let (flo, fhi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside: Vec<f64> = v.iter().copied().filter(|x| *x >= flo && *x <= fhi).collect();
        let whisker_lo = inside.first().copied().unwrap_or(q1);
        let whisker_hi = inside.last().copied().unwrap_or(q3);
        boxes.push(BoxData {
            label,
            runs,
            failed,
            q1,
            median,
            q3,
            whisker_lo,
            whisker_hi,
        });
    }
    if boxes.iter().all(|b| b.runs.is_empty()) {
        return Err(PlotError::NoData(format!(
            "metric {metric:?} has no finite run value in the chosen configurations"
        )));
    }

    // Scale large ns values as the metric plots do.
    let all: Vec<f64> = boxes.iter().flat_map(|b| b.runs.iter().map(|r| r.1)).collect();
    let maxabs = all.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let f = match unit.as_str() {
        "ns" if maxabs >= 1e6 => {
            unit = "ms".into();
            1e-6
        }
        "ns" if maxabs >= 1e4 => {
            unit = "µs".into();
            1e-3
        }
        _ => 1.0,
    };
    for b in boxes.iter_mut() {
        for r in b.runs.iter_mut() {
            r.1 *= f;
        }
        for x in [
            &mut b.q1,
            &mut b.median,
            &mut b.q3,
            &mut b.whisker_lo,
            &mut b.whisker_hi,
        ] {
            *x *= f;
        }
    }
    let (lo, hi) = boxes
        .iter()
        .flat_map(|b| b.runs.iter().map(|r| r.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let span = if hi > lo {
        hi - lo
    } else if hi != 0.0 {
        hi.abs() * 0.1
    } else {
        1.0
    };
    let (y0, y1) = (lo - 0.12 * span, hi + 0.12 * span);

    let n = boxes.len();
    let width = spec.width_px.unwrap_or_else(|| (140 + 90 * n as u32).clamp(360, 4000));
    let height = spec.height_px;
    if !(200..=MAX_SIDE).contains(&width) || !(150..=MAX_SIDE).contains(&height) {
        return Err(PlotError::InvalidSpec(format!(
            "image size {width}x{height} px is outside 200x150 ..= {MAX_SIDE}x{MAX_SIDE}"
        )));
    }
    let title = spec.title.clone().unwrap_or_else(|| match spec.config {
        Some(c) => format!("{metric} | {}", raw.configs[c as usize]),
        None => metric.to_string(),
    });
    let ylabel = if unit.is_empty() {
        metric.to_string()
    } else {
        format!("{metric} ({unit})")
    };

    ensure_font()?;
    let (backend, tag, out) = TaggedSvg::new((width, height));
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(render_err)?;
    let slot_px = (width.saturating_sub(100)) as f64 / n as f64;
    let longest = boxes.iter().map(|b| b.label.chars().count()).max().unwrap_or(1) as f64 * 6.5;
    let rotate = longest > slot_px * 0.95;
    let x_area = if rotate {
        (longest as u32 + 24).min(height / 2)
    } else {
        30
    };
    tag.set("kprof-title");
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT_FAMILY, 14))
        .margin(8)
        .x_label_area_size(x_area)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
        .map_err(render_err)?;
    let labels: Vec<String> = boxes.iter().map(|b| b.label.clone()).collect();
    let fmt_x = |v: &f64| {
        let i = v.round();
        if rotate || (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= labels.len() {
            String::new()
        } else {
            labels[i as usize].clone()
        }
    };
    let fmt_y = |v: &f64| fmt_num(*v);
    tag.set("kprof-mesh");
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 2)
        .y_labels(6)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&fmt_y)
        .y_desc(ylabel)
        .label_style((FONT_FAMILY, 11))
        .axis_desc_style((FONT_FAMILY, 12))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(render_err)?;
    if rotate {
        let style = TextStyle::from((FONT_FAMILY, 11).into_font())
            .transform(FontTransform::Rotate90)
            .pos(Pos::new(HPos::Left, VPos::Center));
        tag.set("kprof-x-label");
        for (i, l) in labels.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64, y0));
            root.draw(&Text::new(l.clone(), (px, py + 8), style.clone()))
                .map_err(render_err)?;
        }
    }

    let half = 0.22;
    for (i, b) in boxes.iter().enumerate() {
        if b.runs.is_empty() {
            continue;
        }
        let x = i as f64;
        let (color, _) = series_style(0);
        tag.set("kprof-box");
        let area = chart.plotting_area();
        area.draw(&Rectangle::new(
            [(x - half, b.q1), (x + half, b.q3)],
            color.mix(0.15).filled(),
        ))
        .map_err(render_err)?;
        area.draw(&Rectangle::new(
            [(x - half, b.q1), (x + half, b.q3)],
            color.stroke_width(1),
        ))
        .map_err(render_err)?;
        tag.set("kprof-median");
        area.draw(&PathElement::new(
            vec![(x - half, b.median), (x + half, b.median)],
            color.stroke_width(2),
        ))
        .map_err(render_err)?;
        tag.set("kprof-whisker");
        for (from, to) in [(b.q1, b.whisker_lo), (b.q3, b.whisker_hi)] {
            area.draw(&PathElement::new(vec![(x, from), (x, to)], BLACK.stroke_width(1)))
                .map_err(render_err)?;
            area.draw(&PathElement::new(
                vec![(x - half / 2.0, to), (x + half / 2.0, to)],
                BLACK.stroke_width(1),
            ))
            .map_err(render_err)?;
        }
        for &(run, v) in &b.runs {
            let at = (x + jitter(run) * 0.6, v);
            if v < b.whisker_lo || v > b.whisker_hi {
                tag.set("kprof-outlier");
                area.draw(&marker::<_, (f64, f64)>(Marker::Diamond, at, 4, RGBColor(214, 39, 40)))
                    .map_err(render_err)?;
            } else {
                tag.set("kprof-run");
                area.draw(&Circle::new(at, 2, RGBColor(40, 40, 40).mix(0.55).filled()))
                    .map_err(render_err)?;
            }
        }
        let _ = b.failed;
    }
    tag.clear();
    drop(chart);
    drop(root);
    Ok(out.finish())
}
