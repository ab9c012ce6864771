//! SVG structure: series, error bars, facets, axis labels, log2 axis, many series, bad input.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use kprof_core::{Config, MissingBaseline, ProcessedResults, DEFAULT_METRIC};
use kprof_plot::*;

/// Distinct `kprof-series-N` numbers on elements whose class starts with `prefix`.
fn series_ids(svg: &str, prefix: &str) -> BTreeSet<usize> {
    let pat = format!("class=\"{prefix} kprof-series-");
    svg.match_indices(&pat)
        .map(|(i, _)| {
            let rest = &svg[i + pat.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

fn count(svg: &str, class: &str) -> usize {
    svg.matches(&format!("class=\"{class}")).count()
}

#[test]
fn one_series_per_annotation_with_legend() {
    let p = simple(3, &[1, 2, 4, 8], 5);
    let svg = render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(series_ids(&svg, "kprof-series"), (0..3).collect());
    assert_eq!(count(&svg, "kprof-series "), 3, "one polyline per series");
    assert_eq!(count(&svg, "kprof-legend-entry"), 3);
    for name in ["kernel0", "kernel1", "kernel2"] {
        assert!(svg.contains(&format!(">{name}</text>")), "{name} in legend");
    }
}

#[test]
fn error_bars_only_with_two_or_more_runs() {
    let with = render_svg(&simple(2, &[1, 2, 4], 3), &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    // plotters' ErrorBar draws a stem, two caps and a ring at the mean: 2 series x 3 points x 4.
    assert_eq!(count(&with, "kprof-errorbar"), 24);

    let single = render_svg(&simple(2, &[1, 2, 4], 1), &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    assert_eq!(count(&single, "kprof-errorbar"), 0, "n = 1 has no CI");

    let mut off = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    off.error_bars = false;
    assert_eq!(
        count(&render_svg(&simple(2, &[1, 2, 4], 3), &off).unwrap(), "kprof-errorbar"),
        0
    );

    // NaN bounds draw nothing even with n >= 2.
    let mut p = simple(1, &[1, 2], 3);
    p.rows[0].summary.ci95_lower = f64::NAN;
    assert_eq!(
        count(
            &render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap(),
            "kprof-errorbar"
        ),
        4
    );
}

fn grid_data() -> ProcessedResults {
    let mut rows = Vec::new();
    for dtype in ["fp32", "fp16", "bf16"] {
        for layout in ["nn", "tn"] {
            for n in [256i64, 512, 1024] {
                let cfg = Config::new().with("n", n).with("dtype", dtype).with("layout", layout);
                rows.push(row(
                    "gemm",
                    DEFAULT_METRIC,
                    "ns",
                    cfg,
                    &[100.0 + n as f64, 101.0 + n as f64, 99.0 + n as f64],
                ));
            }
        }
    }
    ProcessedResults {
        param_names: vec!["n".into(), "dtype".into(), "layout".into()],
        rows,
        missing_baselines: vec![],
    }
}

#[test]
fn facet_grid_rows_by_cols() {
    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.row_panels = vec!["dtype".into()];
    spec.col_panels = vec!["layout".into()];
    let svg = render_svg(&grid_data(), &spec).unwrap();
    assert_eq!(count(&svg, "kprof-panel\""), 6, "3 dtypes x 2 layouts");
    assert!(svg.contains(">dtype=fp32 | layout=nn</text>"));
    assert!(svg.contains(">dtype=bf16 | layout=tn</text>"));
    assert_eq!(count(&svg, "kprof-series "), 6, "one line per panel");

    spec.row_panels.clear();
    let svg = render_svg(&grid_data(), &spec).unwrap();
    assert_eq!(count(&svg, "kprof-panel\""), 2);
    // dtype is then free: it splits the series.
    assert_eq!(series_ids(&svg, "kprof-series").len(), 3);
}

#[test]
fn axis_labels_carry_units_and_log2_is_automatic() {
    let p = simple(1, &[512, 1024, 2048, 4096], 3);
    let svg = render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    // 512e3 .. 4.1e6 ns: shown in ms.
    assert!(svg.contains(">gpu__time_duration.sum (ms)</text>"), "{svg}");
    assert!(svg.contains(">n (log2 scale)</text>"));
    for tick in ["512", "1024", "2048", "4096"] {
        assert!(svg.contains(&format!(">{tick}</text>")), "tick {tick}");
    }

    let small = simple(1, &[1, 2, 3], 2); // 1000..3000 ns: not powers of two, stays ns
    let svg = render_svg(&small, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    assert!(svg.contains(">gpu__time_duration.sum (ns)</text>"));
    assert!(svg.contains(">n</text>"));
    assert!(!svg.contains("log2"));

    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.ylabel = Some("kernel time".into());
    spec.title = Some("My sweep".into());
    let svg = render_svg(&small, &spec).unwrap();
    assert!(svg.contains(">kernel time (ns)</text>"));
    assert!(svg.contains(">My sweep</text>"));
    assert!(svg.contains("NVIDIA H200"), "GPU name in the subtitle");
}

#[test]
fn normalised_rows_get_ratio_label_and_reference_line() {
    let mut p = simple(2, &[1, 2, 4], 3);
    for r in &mut p.rows {
        r.normalized = Some("kernel0".into());
        r.unit = "x".into();
        r.summary.mean /= 1000.0;
        r.summary.ci95_lower /= 1000.0;
        r.summary.ci95_upper /= 1000.0;
    }
    let svg = render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    assert!(svg.contains(">gpu__time_duration.sum relative to kernel0 (x)</text>"));
    assert!(count(&svg, "kprof-ref-line") > 0);
    assert_eq!(
        count(
            &render_svg(&simple(1, &[1, 2], 2), &PlotSpec::new("").with_x("n")).unwrap(),
            "kprof-ref-line"
        ),
        0
    );
}

#[test]
fn more_than_fourteen_series_stay_distinct() {
    let p = simple(20, &[1, 2, 4], 2);
    let svg = render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("n")).unwrap();
    assert_eq!(series_ids(&svg, "kprof-series"), (0..20).collect(), "no series dropped");
    assert_eq!(count(&svg, "kprof-legend-entry"), 20);
    // Each series' (line colour, marker shape) pair is unique: the shape is the marker's
    // elements with coordinates taken relative to the marker's first point.
    let mut styles = BTreeSet::new();
    for i in 0..20 {
        let line = svg
            .lines()
            .find(|l| l.contains(&format!("class=\"kprof-series kprof-series-{i}\"")))
            .unwrap();
        let stroke = line[line.find("stroke=\"").unwrap() + 8..][..7].to_string();
        styles.insert((stroke, marker_shape(&svg, i)));
    }
    assert_eq!(styles.len(), 20, "{styles:?}");
}

/// The first marker of series `i` as element names and relative coordinates.
fn marker_shape(svg: &str, i: usize) -> String {
    let class = format!("class=\"kprof-marker kprof-series-{i}\"");
    let els: Vec<&str> = svg.lines().filter(|l| l.contains(&class)).collect();
    // Markers of the first point come first; a marker has at most 2 elements.
    let nums = |l: &str| -> Vec<i64> {
        let mut out = Vec::new();
        for attr in [
            "points=\"",
            "cx=\"",
            "cy=\"",
            "r=\"",
            "x=\"",
            "y=\"",
            "width=\"",
            "height=\"",
        ] {
            if let Some(p) = l.find(&format!(" {attr}")) {
                let v = &l[p + attr.len() + 1..];
                let v = &v[..v.find('"').unwrap()];
                out.extend(v.split([' ', ',']).filter_map(|t| t.parse::<i64>().ok()));
            }
        }
        out
    };
    let first = nums(els[0]);
    let origin = (first[0], first[1]);
    let mut sig = String::new();
    for l in els.iter().take(2) {
        let name = &l[1..l.find(' ').unwrap()];
        let n = nums(l);
        let rel: Vec<i64> = n
            .iter()
            .enumerate()
            .map(|(k, v)| if k % 2 == 0 { v - origin.0 } else { v - origin.1 })
            .collect();
        sig.push_str(&format!("{name}{rel:?};"));
    }
    sig
}

#[test]
fn bars_aggregate_and_point_labels() {
    let p = simple(2, &[1, 2, 4], 3);
    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.plot_type = PlotType::Bar;
    spec.aggregate = Some(Aggregate::Avg);
    spec.annotate_points = true;
    let svg = render_svg(&p, &spec).unwrap();
    assert_eq!(count(&svg, "kprof-bar "), 6);
    assert_eq!(count(&svg, "kprof-agg "), 2);
    assert!(svg.contains(">Avg</text>"));
    assert_eq!(count(&svg, "kprof-point-label"), 8, "6 bars + 2 aggregates");
    let means: Vec<f64> = p
        .rows
        .iter()
        .filter(|r| r.annotation == "kernel0")
        .map(|r| r.summary.mean)
        .collect();
    let avg = means.iter().sum::<f64>() / 3.0;
    assert!(svg.contains(&format!(">{avg:.0}</text>")), "avg {avg}");

    spec.aggregate = Some(Aggregate::Geomean);
    spec.plot_type = PlotType::Line;
    let svg = render_svg(&p, &spec).unwrap();
    assert!(svg.contains(">Geomean</text>"));
    let geo = (means.iter().map(|m| m.ln()).sum::<f64>() / 3.0).exp();
    assert!(svg.contains(&format!(">{geo:.0}</text>")), "geomean {geo}");
}

#[test]
fn categorical_axis_uses_config_labels() {
    let svg = render_svg(&grid_data(), &PlotSpec::new(DEFAULT_METRIC)).unwrap();
    assert!(svg.contains(">configuration (n, dtype, layout)</text>"));
    assert!(svg.contains(">n=256, dtype=fp32, layout=nn</text>"));
}

#[test]
fn variant_series() {
    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.col_panels = vec!["layout".into()];
    spec.series_by = SeriesBy::Variant {
        fields: vec!["dtype".into()],
        annotations: vec!["gemm".into()],
    };
    let svg = render_svg(&grid_data(), &spec).unwrap();
    assert!(svg.contains(">gemm dtype=fp16</text>"));
    assert_eq!(count(&svg, "kprof-legend-entry"), 3);
}

#[test]
fn bad_input_lists_available_names() {
    let p = grid_data();
    let e = render_svg(&p, &PlotSpec::new("dram__bytes")).unwrap_err();
    assert!(matches!(e, PlotError::UnknownMetric { .. }));
    assert!(
        e.to_string().contains("available metrics: gpu__time_duration.sum"),
        "{e}"
    );

    let e = render_svg(&p, &PlotSpec::new(DEFAULT_METRIC).with_x("size")).unwrap_err();
    assert!(e.to_string().contains("available parameters: n, dtype, layout"), "{e}");

    let mut spec = PlotSpec::new(DEFAULT_METRIC);
    spec.row_panels = vec!["dtyp".into()];
    let e = render_svg(&p, &spec).unwrap_err();
    assert!(
        e.to_string().contains("\"dtyp\" (used as row_panels)") && e.to_string().contains("n, dtype, layout"),
        "{e}"
    );

    let mut spec = PlotSpec::new(DEFAULT_METRIC).with_x("n");
    spec.col_panels = vec!["n".into()];
    assert!(matches!(render_svg(&p, &spec), Err(PlotError::InvalidSpec(_))));

    spec.col_panels.clear();
    spec.series_by = SeriesBy::Variant {
        fields: vec![],
        annotations: vec!["gem".into()],
    };
    let e = render_svg(&p, &spec).unwrap_err();
    assert!(e.to_string().contains("available annotations: gemm"), "{e}");

    let mut two = p.clone();
    let mut r = two.rows[0].clone();
    r.metric = "other".into();
    two.rows.push(r);
    let e = render_svg(&two, &PlotSpec::new("")).unwrap_err();
    assert!(e.to_string().contains("gpu__time_duration.sum, other"), "{e}");

    let mut nan = simple(1, &[1, 2], 1);
    for r in &mut nan.rows {
        r.summary.mean = f64::NAN;
    }
    assert!(matches!(
        render_svg(&nan, &PlotSpec::new("")),
        Err(PlotError::NoData(_))
    ));
    assert!(render_svg(&ProcessedResults::default(), &PlotSpec::new("")).is_err());

    let mut tiny = PlotSpec::new("");
    tiny.width_px = Some(0);
    assert!(matches!(
        render_svg(&simple(1, &[1], 1), &tiny),
        Err(PlotError::InvalidSpec(_))
    ));
    tiny.width_px = Some(1_000_000);
    assert!(matches!(
        render_svg(&simple(1, &[1], 1), &tiny),
        Err(PlotError::InvalidSpec(_))
    ));
    let _ = MissingBaseline {
        benchmark: String::new(),
        annotation: String::new(),
        metric: String::new(),
        config: Config::new(),
    };
}
