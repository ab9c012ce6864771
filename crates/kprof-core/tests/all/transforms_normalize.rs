//! Tests of `transforms::normalize_against`, `fieller_ci95`, `geomean` and `apply_geomean`, against
//! reference numbers computed with numpy and scipy, independently of the closed form in
//! `fieller_ci95` (how: `tests/fixtures/stats-reference-numpy-scipy/README.md`).

use kprof_core::transforms::{
    apply_geomean, fieller_ci95, geomean, normalize_against, NormalizeOptions, TransformError,
};
use kprof_core::*;

const C: [f64; 5] = [10.2, 9.8, 10.5, 10.1, 9.9];
const B: [f64; 6] = [5.1, 4.9, 5.3, 5.0, 4.8, 5.2];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

use crate::common::device;

fn push_all(raw: &mut RawResults, bench: &str, ann: &str, c: &Config, values: &[f64]) {
    for (run, &v) in values.iter().enumerate() {
        raw.push(&SampleRecord {
            benchmark: bench,
            annotation: ann,
            config: c,
            run: run as u32,
            metric: DEFAULT_METRIC,
            value: v,
            unit: "ns",
            kernel: "k",
            device: &device(),
            extras: &[],
        })
        .unwrap();
    }
}

/// [`session`] and its processed table normalised against "base" (default options).
fn normalised_session() -> (RawResults, ProcessedResults) {
    let raw = session();
    let mut p = processed_from(&raw);
    normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap();
    (raw, p)
}

fn placeholder_summary(values: &[f64]) -> Summary {
    let ok: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    Summary {
        num_runs: ok.len(),
        mean: ok.iter().sum::<f64>() / ok.len() as f64,
        outliers_mild: 1,
        outliers_severe: 2,
        bootstrap: Some(BootstrapCi {
            mean_lower: 0.0,
            mean_upper: 0.0,
            median_lower: 0.0,
            median_upper: 0.0,
        }),
        ..Summary::empty(values.len())
    }
}

/// What `stats::aggregate` would produce, with placeholder statistics (only the mean is real).
fn processed_from(raw: &RawResults) -> ProcessedResults {
    let rows = raw
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let values: Vec<f64> = raw
                .samples
                .iter()
                .filter(|x| x.series as usize == i)
                .map(|x| x.value)
                .collect();
            ProcessedRow {
                benchmark: s.key.benchmark.clone(),
                annotation: s.key.annotation.clone(),
                metric: s.key.metric.clone(),
                config: raw.config_of(s).clone(),
                summary: placeholder_summary(&values),
                kernel: "k".into(),
                device: device(),
                unit: s.unit.clone(),
                extras: vec![],
                normalized: None,
                normalization_value: None,
                geomean: f64::NAN,
            }
        })
        .collect();
    ProcessedResults {
        param_names: raw.param_names(),
        rows,
        missing_baselines: vec![],
    }
}

fn n(v: i64) -> Config {
    Config::new().with("n", v)
}

/// mm: base and fast at n=1 (the scipy data, plus a failed run of fast), fast alone at n=3;
/// other: a benchmark without the baseline annotation.
fn session() -> RawResults {
    let mut raw = RawResults::new();
    push_all(&mut raw, "mm", "base", &n(1), &B);
    let mut c = C.to_vec();
    c.push(f64::NAN);
    push_all(&mut raw, "mm", "fast", &n(1), &c);
    push_all(&mut raw, "mm", "fast", &n(3), &[7.0, 7.0]);
    push_all(&mut raw, "other", "x", &n(1), &[3.0, 4.0]);
    raw
}

#[test]
fn fieller_matches_scipy_root_finding() {
    let (lo, hi) = fieller_ci95(&C, &B);
    assert!(close(lo, 1.9144116907334372, 1e-9), "{lo}");
    assert!(close(hi, 2.0902922874910486, 1e-9), "{hi}");
}

#[test]
fn fieller_edge_cases() {
    // Fewer than two values on either side.
    assert!(fieller_ci95(&[1.0], &B).0.is_nan());
    assert!(fieller_ci95(&C, &[5.0]).1.is_nan());
    assert!(fieller_ci95(&[], &[]).0.is_nan());
    // Denominator not significantly different from zero: unbounded, NaN bounds.
    let (lo, hi) = fieller_ci95(&C, &[1.0, -1.0, 2.0, -2.0]);
    assert!(lo.is_nan() && hi.is_nan());
    let (lo, hi) = fieller_ci95(&C, &[0.1, 5.0, -3.0]);
    assert!(lo.is_nan() && hi.is_nan());
    // No spread at all: the interval is the ratio itself.
    assert_eq!(fieller_ci95(&[4.0, 4.0], &[2.0, 2.0]), (2.0, 2.0));
    // Baseline without spread: reduces to the t-interval of the current mean / b, df = n_c - 1.
    let (lo, hi) = fieller_ci95(&[1.0, 2.0, 3.0], &[2.0, 2.0]);
    // mean 2, s = 1, se = 1/sqrt(3), t(0.975, 2) = 4.302652729749464 (scipy)
    let half = 4.302652729749464 / 3f64.sqrt() / 2.0;
    assert!(close(lo, 1.0 - half, 1e-9) && close(hi, 1.0 + half, 1e-9), "{lo} {hi}");
    // Negative denominator: bounds still ordered.
    let neg: Vec<f64> = B.iter().map(|x| -x).collect();
    let (lo, hi) = fieller_ci95(&C, &neg);
    assert!(
        close(lo, -2.0902922874910486, 1e-9) && close(hi, -1.9144116907334372, 1e-9),
        "{lo} {hi}"
    );
}

#[test]
fn ratio_rows_get_their_own_statistics() {
    let (raw, p) = normalised_session();
    let fast = p.rows.iter().find(|r| r.annotation == "fast").unwrap();
    let s = &fast.summary;
    assert_eq!(fast.unit, "x");
    assert_eq!(fast.normalized.as_deref(), Some("base"));
    assert!(close(fast.normalization_value.unwrap(), 5.05, 1e-12));
    assert!(close(s.mean, 2.0, 1e-12));
    assert!(close(s.std_dev, 0.091818004905898, 1e-9), "{}", s.std_dev);
    assert!(close(s.ci95_lower, 1.9144116907334372, 1e-9));
    assert!(close(s.ci95_upper, 2.0902922874910486, 1e-9));
    assert!(close(s.min, 1.9405940594059408, 1e-12));
    assert!(close(s.max, 2.0792079207920793, 1e-12));
    assert!(close(s.median, 2.0, 1e-12));
    assert!(close(s.p05, 1.9445544554455447, 1e-12));
    assert!(close(s.p95, 2.0673267326732674, 1e-12));
    assert!(close(s.rsd_pct, 4.5909002452949, 1e-9));
    assert_eq!(s.stable, Some(false));
    assert_eq!(
        (s.num_runs, s.total_runs),
        (5, 6),
        "NaN run ignored, still counted in total"
    );
    assert_eq!((s.outliers_mild, s.outliers_severe), (1, 2), "outlier counts kept");
    assert_eq!(s.bootstrap, None);
    // A looser stability threshold.
    let mut p = processed_from(&raw);
    normalize_against(&raw, &mut p, "base", &NormalizeOptions { stable_rsd_pct: 5.0 }).unwrap();
    assert_eq!(
        p.rows.iter().find(|r| r.annotation == "fast").unwrap().summary.stable,
        Some(true)
    );
}

#[test]
fn baseline_rows_are_one_with_their_own_spread() {
    let (_, p) = normalised_session();
    let base = p.rows.iter().find(|r| r.annotation == "base").unwrap();
    let s = &base.summary;
    assert_eq!(s.mean, 1.0);
    assert_eq!(base.unit, "x");
    assert_eq!(base.normalized.as_deref(), Some("base"));
    assert!(close(base.normalization_value.unwrap(), 5.05, 1e-12));
    assert!(close(s.std_dev, 0.03704611274033605, 1e-12));
    assert!(close(s.rsd_pct, 3.704611274033605, 1e-10));
    assert!(close(s.ci95_lower, 0.9611224889706866, 1e-9));
    assert!(close(s.ci95_upper, 1.0388775110293134, 1e-9));
    assert!(close(s.min, 0.9504950495049505, 1e-12));
    assert!(close(s.max, 1.0495049504950495, 1e-12));
    assert!(close(s.median, 1.0, 1e-12));
    assert!(close(s.p05, 0.9554455445544555, 1e-12));
    assert!(close(s.p95, 1.0445544554455446, 1e-12));
    assert_eq!(s.num_runs, 6);
}

#[test]
fn missing_baseline_config_is_reported_not_dropped() {
    let raw = session();
    let mut p = processed_from(&raw);
    assert_eq!(p.rows.len(), 4);
    normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap();
    assert_eq!(p.rows.len(), 3);
    assert_eq!(
        p.missing_baselines,
        vec![MissingBaseline {
            benchmark: "mm".into(),
            annotation: "fast".into(),
            metric: DEFAULT_METRIC.into(),
            config: n(3),
        }]
    );
    // The benchmark without the baseline annotation is left as it was.
    let other = p.rows.iter().find(|r| r.benchmark == "other").unwrap();
    assert_eq!(other.unit, "ns");
    assert_eq!(other.normalized, None);
    assert_eq!(other.summary.mean, 3.5);
}

#[test]
fn unknown_baseline_lists_annotations() {
    let raw = session();
    let mut p = processed_from(&raw);
    let rows_before = p.rows.len();
    let err = normalize_against(&raw, &mut p, "nope", &NormalizeOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "baseline annotation \"nope\" does not exist in any benchmark; annotations are: \"base\", \"fast\", \"x\""
    );
    assert_eq!(p.rows.len(), rows_before);
    let err = normalize_against(&RawResults::new(), &mut p, "b", &NormalizeOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "baseline annotation \"b\" does not exist in any benchmark; annotations are: (none)"
    );
}

#[test]
fn normalising_twice_is_an_error() {
    let (raw, mut p) = normalised_session();
    let err = normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "row (benchmark \"mm\", annotation \"base\", metric \"gpu__time_duration.sum\") is already normalised \
         against \"base\"; normalise the unnormalised table instead"
    );
}

#[test]
fn row_not_in_raw_is_an_error() {
    let raw = session();
    let mut p = processed_from(&raw);
    p.rows[1].config = n(99);
    let err = normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "processed row (benchmark \"mm\", annotation \"fast\", config \"n=99\", metric \"gpu__time_duration.sum\") \
         has no series in the raw results; pass the raw results the table was aggregated from"
    );
    assert!(matches!(err, TransformError::RowNotInRaw { .. }));
    assert_eq!(p.rows[0].unit, "ns", "nothing changed on error");
    let mut p = processed_from(&raw);
    p.rows[1].annotation = "ghost".into();
    assert!(matches!(
        normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()),
        Err(TransformError::RowNotInRaw { .. })
    ));
}

#[test]
fn degenerate_series_give_nan_not_panics() {
    let mut raw = RawResults::new();
    push_all(&mut raw, "b", "base", &n(1), &[f64::NAN, f64::NAN]);
    push_all(&mut raw, "b", "cur", &n(1), &[1.0]);
    push_all(&mut raw, "b", "base", &n(2), &[0.0, 0.0]);
    push_all(&mut raw, "b", "cur", &n(2), &[1.0, 2.0]);
    let mut p = processed_from(&raw);
    normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap();
    assert_eq!(p.rows.len(), 4);
    let base1 = &p.rows[0].summary;
    assert!(base1.mean.is_nan() && base1.std_dev.is_nan() && base1.stable.is_none());
    let cur1 = &p.rows[1].summary;
    assert!(cur1.mean.is_nan() && cur1.ci95_lower.is_nan());
    assert!(p.rows[2].summary.mean.is_nan(), "baseline with mean 0 is not 1");
    let cur2 = &p.rows[3].summary;
    assert!(cur2.mean.is_infinite() && cur2.ci95_lower.is_nan() && cur2.stable.is_none());
}

#[test]
fn geomean_cases() {
    assert!(close(geomean([1.0, 2.0, 4.0, 8.0]), 2.82842712474619, 1e-12));
    assert!(close(geomean([0.5, 2.0, 3.0]), 1.4422495703074085, 1e-12));
    assert!(
        close(geomean([0.5, f64::NAN, 2.0, 3.0]), 1.4422495703074085, 1e-12),
        "NaN ignored"
    );
    assert_eq!(geomean([3.0]), 3.0);
    assert_eq!(geomean([2.0, 0.0, 5.0]), 0.0);
    assert!(geomean([2.0, -1.0, 5.0]).is_nan());
    assert!(geomean([0.0, -1.0]).is_nan(), "negative wins over zero");
    assert!(geomean([]).is_nan());
    assert!(geomean([f64::NAN, f64::NAN]).is_nan());
    assert_eq!(geomean([f64::INFINITY, 1.0]), f64::INFINITY);
}

#[test]
fn apply_geomean_groups_across_configs() {
    let mut raw = RawResults::new();
    push_all(&mut raw, "mm", "base", &n(1), &[1.0, 1.0]);
    push_all(&mut raw, "mm", "base", &n(2), &[4.0, 4.0]);
    push_all(&mut raw, "mm", "fast", &n(1), &[0.5, 0.5]);
    push_all(&mut raw, "mm", "fast", &n(2), &[1.0, 1.0]);
    push_all(&mut raw, "mm2", "base", &n(1), &[9.0, 9.0]);
    let mut p = processed_from(&raw);
    apply_geomean(&mut p);
    let g: Vec<f64> = p.rows.iter().map(|r| r.geomean).collect();
    let want = [2.0, 2.0, (0.5f64).sqrt(), (0.5f64).sqrt(), 9.0];
    assert!(g.iter().zip(want).all(|(a, b)| close(*a, b, 1e-12)), "{g:?}");
    // After normalisation the geomean is of ratios: fast/base = 0.5 and 0.25.
    let mut p = processed_from(&raw);
    normalize_against(&raw, &mut p, "base", &NormalizeOptions::default()).unwrap();
    apply_geomean(&mut p);
    assert_eq!(p.rows[0].geomean, 1.0);
    assert!(close(p.rows[2].geomean, (0.125f64).sqrt(), 1e-12));
    // Empty table: nothing to do.
    let mut empty = ProcessedResults::default();
    apply_geomean(&mut empty);
    assert!(empty.rows.is_empty());
}
