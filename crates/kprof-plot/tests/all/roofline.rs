//! The roofline chart and the report's speed-of-light section (crates/kprof-plot/src/roofline.rs).

use crate::common::*;

use kprof_core::sol::{self, speed_of_light, PRECISIONS};
use kprof_core::{Config, ProcessedResults};
use kprof_plot::*;

const CLOCK: f64 = 1.98e9;

/// An fp32 sweep (n = 256..2048) of two regions: FLOP/s and DRAM bytes/s grow with n.
fn sweep() -> ProcessedResults {
    let fp32 = &PRECISIONS[1];
    let mut rows = Vec::new();
    for (k, ann) in ["sgemm", "sgemm_tiled"].iter().enumerate() {
        for (i, n) in [256i64, 512, 1024, 2048].iter().enumerate() {
            let c = Config::new().with("n", *n);
            let ffma_per_cycle = 1000.0 * (i + 1) as f64 * (k + 1) as f64;
            let mut put = |m: &str, v: f64| rows.push(row(ann, m, "", c.clone(), &[v, v, v]));
            put(fp32.work[2].0, ffma_per_cycle);
            put(fp32.work_clock, CLOCK);
            put(fp32.peak.0, 16896.0);
            put(fp32.peak_clock, CLOCK);
            put(sol::DRAM_BYTES_PER_S, 1.0e12 / (i + 1) as f64);
            put(sol::DRAM_PEAK.0, 1500.0);
            put(sol::DRAM_PEAK.1, 3.2e9);
            put(sol::SM_PCT, 30.0 + 15.0 * i as f64);
            put(sol::DRAM_PCT[0], 50.0 - 10.0 * i as f64);
        }
    }
    ProcessedResults {
        param_names: vec!["n".into()],
        rows,
        missing_baselines: vec![],
    }
}

fn input<'a>(title: &'a str, p: &'a ProcessedResults) -> ReportInput<'a> {
    ReportInput {
        title,
        raw: None,
        processed: p,
        environment: None,
    }
}

fn count(svg: &str, class: &str) -> usize {
    svg.matches(&format!("class=\"{class}")).count()
}

#[test]
fn one_roof_per_precision_and_a_path_per_region() {
    let rows = speed_of_light(&sweep());
    assert_eq!(rows.len(), 8);
    let svg = render_roofline_svg(&rows, &RooflineSpec::default()).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(count(&svg, "kprof-roof"), 1, "fp32 only");
    assert_eq!(count(&svg, "kprof-series"), 2, "one path per region");
    for n in [256, 512, 1024, 2048] {
        assert_eq!(
            svg.matches(&format!(">n={n}</text>")).count(),
            2,
            "n={n} labelled on both paths"
        );
    }
    // The roof's legend names the peak: 2 FLOP x 16896 x 1.98 GHz = 66.9 TFLOP/s.
    let peak = 2.0 * 16896.0 * CLOCK;
    assert!((rows[0].precisions[1].peak_flops_per_s.unwrap() - peak).abs() < 1.0);
    assert!(svg.contains("fp32 peak"), "roof in the legend");
    assert!(svg.contains(">sgemm (fp32)</text>") && svg.contains(">sgemm_tiled (fp32)</text>"));
}

#[test]
fn without_flop_counters_there_is_no_roofline() {
    let mut p = sweep();
    p.rows.retain(|r| !r.metric.contains("ffma"));
    let rows = speed_of_light(&p);
    match render_roofline_svg(&rows, &RooflineSpec::default()) {
        Err(PlotError::NoData(msg)) => assert!(msg.contains("SpeedOfLight_RooflineChart"), "{msg}"),
        other => panic!("{:?}", other.map(|s| s.len())),
    }
}

#[test]
fn report_has_a_speed_of_light_section_only_with_its_counters() {
    let p = sweep();
    let html = render_report(&[input("sweep", &p)], &ReportOptions::default()).unwrap();
    assert!(html.contains("<h3>Speed of light</h3>"));
    assert!(html.contains("<figure class=\"plot roofline\">"));
    // n = 256: SM 30 %, DRAM 50 %: latency-bound; n = 2048: SM 75 %, DRAM 20 %: compute-bound.
    assert_eq!(html.matches("<tr class=\"verdict-latency-bound\">").count(), 4);
    assert_eq!(html.matches("<tr class=\"verdict-compute-bound\">").count(), 4);
    let (_, plain) = sgemm_sweep();
    let html = render_report(&[input("sgemm", &plain)], &ReportOptions::default()).unwrap();
    assert!(!html.contains("Speed of light"));
}

#[test]
fn png_of_the_roofline_has_the_asked_size() {
    let rows = speed_of_light(&sweep());
    let spec = RooflineSpec {
        width_px: 640,
        height_px: 400,
        ..RooflineSpec::default()
    };
    let png = render_roofline_png_bytes(&rows, &spec).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (640, 400), "IHDR width and height");
}
