//! PNG output (embedded font, compared with a stored image), distributions and the HTML report.

use crate::common;

use common::*;
use kprof_core::{Config, MissingBaseline, DEFAULT_METRIC};
use kprof_plot::*;

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn reference_spec() -> PlotSpec {
    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.aggregate = Some(Aggregate::Geomean);
    spec.annotate_points = true;
    spec.width_px = Some(720);
    spec.height_px = Some(440);
    spec
}

/// Renders the reference plot to PNG and compares it with `tests/fixtures/sgemm-reference.png`
/// (mean absolute difference per channel below 2 of 255, so anti-aliasing or font-hinting
/// changes in plotters pass and a changed layout fails). `KPROF_BLESS=1` rewrites the reference.
#[test]
fn png_renders_with_embedded_font_and_matches_reference() {
    let (_, p) = sgemm_sweep();
    let dir = std::env::temp_dir().join(format!("kprof-plot-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("plot.png");
    render_png(&p, &reference_spec(), &out).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (720, 440));

    // Text was drawn: the title area (top 50 px) has dark pixels. Without a font nothing would be.
    let dark = (0..720)
        .flat_map(|x| (0..50).map(move |y| (x, y)))
        .filter(|&(x, y)| img.get_pixel(x, y)[0] < 100)
        .count();
    assert!(dark > 200, "title text drawn ({dark} dark pixels)");

    let reference = fixture("sgemm-reference.png");
    if std::env::var_os("KPROF_BLESS").is_some() {
        std::fs::copy(&out, &reference).unwrap();
    }
    let want = image::open(&reference)
        .expect("reference PNG (run with KPROF_BLESS=1 to create)")
        .to_rgb8();
    assert_eq!(want.dimensions(), img.dimensions());
    let diff: u64 = img
        .as_raw()
        .iter()
        .zip(want.as_raw())
        .map(|(a, b)| a.abs_diff(*b) as u64)
        .sum();
    let mean = diff as f64 / img.as_raw().len() as f64;
    assert!(
        mean < 2.0,
        "mean absolute pixel difference {mean:.3} (of 255) against the reference"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn png_errors_are_errors() {
    let (_, p) = sgemm_sweep();
    // A folder cannot be made inside a device: a write error that names the file, no debug text.
    let e = render_png(&p, &reference_spec(), "/dev/null/x.png").unwrap_err();
    assert!(matches!(e, PlotError::Write(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("/dev/null/x.png") && !text.contains("Os {"), "{text}");
    assert!(render_png(&p, &PlotSpec::new("nope"), "/tmp/never.png").is_err());
}

#[test]
fn distribution_marks_outliers() {
    let (raw, _) = sgemm_sweep();
    // Config 3 is n=4096 fp32 (fp32 configs come first), with one planted slow run.
    let cfg = raw
        .configs
        .iter()
        .position(|c| c.to_string() == "n=4096, dtype=fp32")
        .unwrap() as u32;
    let spec = DistributionSpec {
        config: Some(cfg),
        ..Default::default()
    };
    let svg = render_distribution_svg(&raw, DEFAULT_METRIC, &spec).unwrap();
    assert_eq!(svg.matches("class=\"kprof-box\"").count(), 2, "filled box + outline");
    assert_eq!(svg.matches("class=\"kprof-median\"").count(), 1);
    assert_eq!(svg.matches("class=\"kprof-outlier\"").count(), 1);
    assert_eq!(svg.matches("class=\"kprof-run\"").count(), 9);
    assert!(svg.contains("n=4096, dtype=fp32"));

    // Jitter is deterministic.
    assert_eq!(svg, render_distribution_svg(&raw, DEFAULT_METRIC, &spec).unwrap());

    // All configs: one box per config.
    let all = render_distribution_svg(&raw, DEFAULT_METRIC, &DistributionSpec::default()).unwrap();
    assert_eq!(all.matches("class=\"kprof-median\"").count(), 10);

    let e = render_distribution_svg(&raw, "nope", &spec).unwrap_err();
    assert!(
        e.to_string()
            .contains("available metrics: gpu__time_duration.sum, sm__throughput"),
        "{e}"
    );
    let bad = DistributionSpec {
        config: Some(999),
        ..Default::default()
    };
    assert!(matches!(
        render_distribution_svg(&raw, DEFAULT_METRIC, &bad),
        Err(PlotError::InvalidSpec(_))
    ));
    let bad = DistributionSpec {
        annotations: vec!["x".into()],
        ..Default::default()
    };
    assert!(render_distribution_svg(&raw, DEFAULT_METRIC, &bad)
        .unwrap_err()
        .to_string()
        .contains("available annotations: gemm"));
}

fn report() -> String {
    let (raw, mut p) = sgemm_sweep();
    // A fast kernel under the timer floor, and a dropped baseline.
    p.rows.push(row(
        "memset",
        DEFAULT_METRIC,
        "ns",
        Config::new().with("n", 512i64).with("dtype", "fp32"),
        &[150.0, 160.0, 155.0],
    ));
    p.missing_baselines.push(MissingBaseline {
        benchmark: "sgemm".into(),
        annotation: "gemm".into(),
        metric: DEFAULT_METRIC.into(),
        config: Config::new().with("n", 16384i64).with("dtype", "fp8"),
    });
    let env = environment();
    render_report(
        &[ReportInput {
            title: "sgemm",
            raw: Some(&raw),
            processed: &p,
            environment: Some(&env),
        }],
        &ReportOptions::default(),
    )
    .unwrap()
}

#[test]
fn report_is_self_contained_with_table_plots_and_warnings() {
    let html = report();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<table class=\"kprof-summary sortable\">"));
    assert!(html.contains("<script>") && html.contains("addEventListener('click'"));
    // One plot per metric, one distribution per (metric, config).
    assert_eq!(html.matches("<figure class=\"plot\"").count(), 2);
    assert_eq!(html.matches("<figure class=\"distribution\"").count(), 20);
    assert_eq!(html.matches("<svg").count(), 22);
    // No network references: the only "http" is the SVG namespace.
    let http: Vec<&str> = html.match_indices("http").map(|(i, _)| &html[i..i + 26]).collect();
    assert!(http.iter().all(|h| *h == "http://www.w3.org/2000/svg"), "{http:?}");
    assert!(!html.contains("<script src") && !html.contains("<link") && !html.contains("@import"));
    // Warnings.
    assert!(html.contains("sgemm/gemm · gpu__time_duration.sum · n=512, dtype=fp16: relative std dev"));
    assert_eq!(
        html.matches("class=\"warn-unstable\"").count(),
        3,
        "n=512 fp16 (both metrics) and the throttled config"
    );
    assert!(html.matches("class=\"warn-throttled\"").count() >= 1);
    assert!(html.contains("class=\"warn-floor\""), "memset at 155 ns < 320 ns");
    assert!(html.contains("class=\"warn-baseline\"") && html.contains("n=16384, dtype=fp8"));
    // Environment.
    assert!(html.contains("<td>gpu.name</td><td>NVIDIA H200</td>"));
    assert!(html.contains("<td>driver</td><td>580.95.05</td>"));
}

/// The default report options but the timer floor, in ns.
fn with_timer_floor(ns: f64) -> ReportOptions {
    ReportOptions {
        timer_floor_ns: ns,
        ..Default::default()
    }
}

#[test]
fn report_floor_is_a_parameter_and_bad_x_is_an_error() {
    let (_, p) = sgemm_sweep();
    let input = [ReportInput {
        title: "t",
        raw: None,
        processed: &p,
        environment: None,
    }];
    let html = render_report(&input, &with_timer_floor(1e6)).unwrap();
    assert!(html.contains("class=\"warn-floor\""));
    assert!(
        !html.contains("<figure class=\"distribution\""),
        "no raw, no distributions"
    );
    let e = render_report(
        &input,
        &ReportOptions {
            x: Some("size".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("available parameters: n, dtype"), "{e}");
    let html = render_report(&input, &with_timer_floor(0.0)).unwrap();
    assert!(!html.contains("class=\"warn-floor\""));
}

/// Writes the example report where the chromium check script can find it.
#[test]
fn report_written_for_browser_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/kprof-plot");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report-test.html"), report()).unwrap();
}
