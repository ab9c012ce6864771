//! The roofline chart: each region and configuration a point (arithmetic intensity, achieved
//! FLOP/s) per precision measured, a sweep's configurations joined as a path, under the device's
//! roofs (peak FLOP/s of each precision, DRAM peak bandwidth), as ncu's roofline sections draw
//! them. Values come from [`kprof_core::sol`].

use kprof_core::display::fmt_si;
use kprof_core::sol::{summary_cells, SolRow, PRECISIONS, SUMMARY_COLUMNS, SUMMARY_NUMERIC_COLUMNS};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::font::{ensure_font, FONT_FAMILY};
use crate::svg::{TaggedSvg, Tagger};
use crate::util::*;
use crate::PlotError;

/// Options of [`render_roofline_svg`].
#[derive(Clone, Debug, PartialEq)]
pub struct RooflineSpec {
    /// Title (default `Roofline`).
    pub title: Option<String>,
    /// Image width in pixels.
    pub width_px: u32,
    /// Image height in pixels.
    pub height_px: u32,
    /// Write each point's configuration next to it (paths of up to 12 points).
    pub label_points: bool,
}

impl Default for RooflineSpec {
    fn default() -> Self {
        RooflineSpec {
            title: None,
            width_px: 760,
            height_px: 480,
            label_points: true,
        }
    }
}

/// One path: a region's points of one precision, in the table's (sweep) order.
struct Path {
    label: String,
    points: Vec<(f64, f64, String)>,
}

/// A precision's roof: its peak FLOP/s and the DRAM's peak bytes/s.
struct Roof {
    name: &'static str,
    peak: f64,
    bandwidth: f64,
}

fn paths(rows: &[SolRow]) -> Vec<Path> {
    let benchmarks = rows
        .iter()
        .map(|r| r.benchmark.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut out: Vec<Path> = Vec::new();
    for r in rows {
        for p in &r.precisions {
            let (Some(flops), Some(ai)) = (p.flops_per_s, p.intensity) else {
                continue;
            };
            if !(flops > 0.0 && ai > 0.0) {
                continue;
            }
            let region = if benchmarks > 1 {
                format!("{}/{}", r.benchmark, r.annotation)
            } else {
                r.annotation.clone()
            };
            let label = format!("{region} ({})", p.name);
            let point = (ai, flops, r.config.to_string());
            match out.iter_mut().find(|x| x.label == label) {
                Some(path) => path.points.push(point),
                None => out.push(Path {
                    label,
                    points: vec![point],
                }),
            }
        }
    }
    out
}

fn roofs(rows: &[SolRow], paths: &[Path]) -> Vec<Roof> {
    let max = |v: &mut dyn Iterator<Item = f64>| {
        v.filter(|x| x.is_finite() && *x > 0.0)
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
    };
    let Some(bandwidth) = max(&mut rows.iter().filter_map(|r| r.peak_dram_bytes_per_s)) else {
        return Vec::new();
    };
    PRECISIONS
        .iter()
        .enumerate()
        .filter(|(_, d)| paths.iter().any(|p| p.label.ends_with(&format!("({})", d.name))))
        .filter_map(|(i, d)| {
            let peak = max(&mut rows.iter().filter_map(|r| r.precisions[i].peak_flops_per_s))?;
            Some(Roof {
                name: d.name,
                peak,
                bandwidth,
            })
        })
        .collect()
}

/// What the chart draws: paths, roofs and the axes' ranges.
struct Model {
    paths: Vec<Path>,
    roofs: Vec<Roof>,
    x: (f64, f64),
    y: (f64, f64),
    title: String,
    label_points: bool,
    size: (u32, u32),
}

fn model(rows: &[SolRow], spec: &RooflineSpec) -> Result<Model, PlotError> {
    let paths = paths(rows);
    if paths.is_empty() {
        return Err(PlotError::NoData(
            "no region has both FLOP/s and DRAM bytes/s: profile with the roofline metrics \
             (metrics=[\"SpeedOfLight\", \"SpeedOfLight_RooflineChart\"])"
                .into(),
        ));
    }
    let (w, h) = (spec.width_px, spec.height_px);
    if !(200..=MAX_SIDE).contains(&w) || !(150..=MAX_SIDE).contains(&h) {
        return Err(PlotError::InvalidSpec(format!(
            "image size {w}x{h} px is outside 200x150 ..= {MAX_SIDE}x{MAX_SIDE}"
        )));
    }
    let roofs = roofs(rows, &paths);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64);
    for &(x, y, _) in paths.iter().flat_map(|p| p.points.iter()) {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    for r in &roofs {
        x1 = x1.max(r.peak / r.bandwidth);
        y1 = y1.max(r.peak);
    }
    Ok(Model {
        paths,
        roofs,
        x: (x0 / 4.0, x1 * 4.0),
        y: (y0 / 4.0, y1 * 2.0),
        title: spec.title.clone().unwrap_or_else(|| "Roofline".into()),
        label_points: spec.label_points,
        size: (w, h),
    })
}

/// Renders the roofline of speed-of-light rows as SVG. Points need a precision's FLOP/s and the
/// DRAM bytes/s (the roofline metrics, `kprof_core::sol::roofline_metrics`); roofs need the peak
/// metrics. Classes: `kprof-roof` (roof lines), `kprof-series` (paths), `kprof-marker`.
pub fn render_roofline_svg(rows: &[SolRow], spec: &RooflineSpec) -> Result<String, PlotError> {
    let m = model(rows, spec)?;
    ensure_font()?;
    let (backend, tag, out) = TaggedSvg::new(m.size);
    draw(backend.into_drawing_area(), &m, &tag)?;
    Ok(out.finish())
}

/// The roofline as the bytes of a PNG file (see [`render_roofline_svg`]).
pub fn render_roofline_png_bytes(rows: &[SolRow], spec: &RooflineSpec) -> Result<Vec<u8>, PlotError> {
    use image::ImageEncoder;
    let m = model(rows, spec)?;
    ensure_font()?;
    let (w, h) = m.size;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(root.clone(), &m, &Tagger::default())?;
        root.present().map_err(render_err)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(render_err)?;
    Ok(png)
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, m: &Model, tag: &Tagger) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(render_err)?;
    let ((x0, x1), (y0, y1)) = (m.x, m.y);
    tag.set("kprof-title");
    let mut chart = ChartBuilder::on(&root)
        .caption(m.title.clone(), (FONT_FAMILY, 14))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(render_err)?;
    tag.set("kprof-mesh");
    chart
        .configure_mesh()
        .x_desc("Arithmetic intensity (FLOP/byte of DRAM)")
        .y_desc("Performance (FLOP/s)")
        .x_label_formatter(&|v| fmt_num(*v))
        .y_label_formatter(&|v| fmt_si(*v))
        .label_style((FONT_FAMILY, 11))
        .axis_desc_style((FONT_FAMILY, 12))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(render_err)?;
    let grey = RGBColor(90, 90, 90);
    for r in &m.roofs {
        tag.set("kprof-roof");
        let ridge = r.peak / r.bandwidth;
        let line = vec![(x0, r.bandwidth * x0), (ridge, r.peak), (x1, r.peak)];
        chart
            .draw_series(LineSeries::new(line, grey.stroke_width(2)))
            .map_err(render_err)?
            .label(format!(
                "{} peak {}FLOP/s, DRAM {}B/s",
                r.name,
                fmt_si(r.peak),
                fmt_si(r.bandwidth)
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], grey.stroke_width(2)));
    }
    for (i, p) in m.paths.iter().enumerate() {
        let (color, mk) = series_style(i);
        tag.set("kprof-series");
        let line: Vec<(f64, f64)> = p.points.iter().map(|&(x, y, _)| (x, y)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(1)))
            .map_err(render_err)?
            .label(p.label.clone())
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
        tag.set("kprof-marker");
        for &at in &line {
            chart
                .plotting_area()
                .draw(&marker::<DB, (f64, f64)>(mk, at, 4, color))
                .map_err(render_err)?;
        }
        if m.label_points && p.points.len() <= 12 {
            tag.set("kprof-point-label");
            let style = TextStyle::from((FONT_FAMILY, 10).into_font()).color(&color);
            for (x, y, cfg) in p.points.iter().filter(|pt| !pt.2.is_empty()) {
                chart
                    .draw_series(std::iter::once(Text::new(cfg.clone(), (*x * 1.08, *y), style.clone())))
                    .map_err(render_err)?;
            }
        }
    }
    tag.set("kprof-legend");
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT_FAMILY, 11))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()
        .map_err(render_err)?;
    tag.clear();
    Ok(())
}

/// The report's speed-of-light section for one result: the table of throughputs and verdicts
/// and the roofline, when the result holds their counters (nothing otherwise).
pub(crate) fn report_section(p: &kprof_core::ProcessedResults, out: &mut String) {
    use std::fmt::Write as _;
    let rows = kprof_core::sol::speed_of_light(p);
    let judged = rows.iter().any(|r| r.verdict != kprof_core::sol::Verdict::Unknown);
    let svg = render_roofline_svg(&rows, &RooflineSpec::default());
    if !judged && svg.is_err() {
        return;
    }
    out.push_str(
        "<h3>Speed of light</h3>\n<p class=\"meta\">% of each unit's peak; verdict by ncu's rule: \
                  both SM and memory under 60 % latency-bound, within 10 points balanced, else the busier one.</p>\n",
    );
    out.push_str("<div class=\"table-wrap\"><table class=\"kprof-sol sortable\"><thead><tr>");
    let text_class = |i: usize| {
        if SUMMARY_NUMERIC_COLUMNS.contains(&i) {
            ""
        } else {
            " class=\"t\""
        }
    };
    for (i, h) in SUMMARY_COLUMNS.iter().chain(&["Reason"]).enumerate() {
        let _ = write!(out, "<th{}>{h}</th>", text_class(i));
    }
    out.push_str("</tr></thead><tbody>\n");
    let num = |v: Option<f64>| v.map_or("-".to_string(), fmt_num);
    for r in &rows {
        let _ = write!(out, "<tr class=\"verdict-{}\">", r.verdict);
        for (i, cell) in summary_cells(r, num).iter().chain([&r.reason]).enumerate() {
            let _ = write!(out, "<td{}>{}</td>", text_class(i), html_escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    match svg {
        Ok(svg) => {
            let _ = write!(out, "<figure class=\"plot roofline\">\n{svg}</figure>\n");
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "<p class=\"meta roofline-none\">No roofline: {}</p>",
                html_escape(&e.to_string())
            );
        }
    }
}
