//! Edge cases of `kprof_core::stats`: empty, single, constant, zero-mean, NaN and infinite input.

use kprof_core::stats::{percentile_sorted, summarize, summarize_sorted, t_quantile, BootstrapOptions, StatsOptions};

fn opts() -> StatsOptions {
    StatsOptions::default()
}

fn boot(resamples: usize, seed: u64) -> StatsOptions {
    StatsOptions {
        bootstrap: Some(BootstrapOptions { resamples, seed }),
        ..StatsOptions::default()
    }
}

#[test]
fn defaults() {
    let o = StatsOptions::default();
    assert_eq!(o.stable_rsd_pct, 2.0);
    assert!(o.bootstrap.is_none());
    let b = BootstrapOptions::default();
    assert_eq!((b.resamples, b.seed), (2000, 0));
}

#[test]
fn empty_input() {
    let s = summarize(&[], &opts());
    assert_eq!((s.num_runs, s.total_runs), (0, 0));
    for x in [
        s.mean,
        s.std_dev,
        s.min,
        s.max,
        s.median,
        s.p05,
        s.p95,
        s.ci95_lower,
        s.ci95_upper,
        s.rsd_pct,
    ] {
        assert!(x.is_nan());
    }
    assert_eq!(s.stable, None);
    assert_eq!((s.outliers_mild, s.outliers_severe), (0, 0));
    assert!(s.bootstrap.is_none());
    // With a bootstrap asked for, the intervals exist but are NaN.
    let b = summarize(&[], &boot(100, 1)).bootstrap.unwrap();
    assert!(b.mean_lower.is_nan() && b.median_upper.is_nan());
}

#[test]
fn all_nan_input() {
    let s = summarize(&[f64::NAN, f64::NAN, f64::NAN], &opts());
    assert_eq!((s.num_runs, s.total_runs), (0, 3));
    assert!(s.mean.is_nan() && s.median.is_nan());
    assert_eq!(s.stable, None);
}

#[test]
fn single_value() {
    let s = summarize(&[42.5], &boot(100, 9));
    assert_eq!((s.num_runs, s.total_runs), (1, 1));
    for x in [s.mean, s.min, s.max, s.median, s.p05, s.p95] {
        assert_eq!(x, 42.5);
    }
    assert!(s.std_dev.is_nan() && s.ci95_lower.is_nan() && s.ci95_upper.is_nan() && s.rsd_pct.is_nan());
    assert_eq!(s.stable, None);
    assert_eq!((s.outliers_mild, s.outliers_severe), (0, 0));
    let b = s.bootstrap.unwrap();
    assert_eq!(
        (b.mean_lower, b.mean_upper, b.median_lower, b.median_upper),
        (42.5, 42.5, 42.5, 42.5)
    );
}

#[test]
fn constant_values() {
    let s = summarize(&[0.1; 7], &opts());
    assert_eq!(s.mean, 0.1);
    assert_eq!(s.std_dev, 0.0);
    assert_eq!((s.ci95_lower, s.ci95_upper), (0.1, 0.1));
    assert_eq!(s.rsd_pct, 0.0);
    assert_eq!(s.stable, Some(true));
    assert_eq!((s.outliers_mild, s.outliers_severe), (0, 0));
}

#[test]
fn zero_mean() {
    let s = summarize(&[-1.0, 1.0, -2.0, 2.0], &opts());
    assert_eq!(s.mean, 0.0);
    assert!(s.std_dev > 0.0);
    assert!(s.rsd_pct.is_nan());
    assert_eq!(s.stable, None);
    // All zeros: sd 0 but RSD still undefined (0 / 0).
    let z = summarize(&[0.0, 0.0, 0.0], &opts());
    assert_eq!((z.mean, z.std_dev), (0.0, 0.0));
    assert!(z.rsd_pct.is_nan());
    assert_eq!(z.stable, None);
}

#[test]
fn stability_threshold() {
    // mean 100, sd 1 => RSD 1 %.
    let v = [99.0, 100.0, 101.0];
    assert_eq!(summarize(&v, &opts()).stable, Some(true));
    let strict = StatsOptions {
        stable_rsd_pct: 0.5,
        ..StatsOptions::default()
    };
    assert_eq!(summarize(&v, &strict).stable, Some(false));
    // Strictly below: RSD equal to the threshold is not stable.
    let exact = StatsOptions {
        stable_rsd_pct: 1.0,
        ..StatsOptions::default()
    };
    assert_eq!(summarize(&v, &exact).stable, Some(false));
}

#[test]
fn t_not_z_for_small_n() {
    // n = 2: t(0.975, 1) = 12.706..., so the half-width is 12.7 * sd / sqrt(2), not 1.96 * ...
    let s = summarize(&[10.0, 12.0], &opts());
    let half = s.ci95_upper - s.mean;
    let expected = 12.706204736174694 * s.std_dev / 2f64.sqrt();
    assert!((half - expected).abs() < 1e-9 * expected, "{half} vs {expected}");
}

#[test]
fn nans_are_ignored() {
    let a = summarize(&[3.0, 1.0, 2.0], &opts());
    let b = summarize(&[f64::NAN, 3.0, f64::NAN, 1.0, 2.0, f64::NAN], &opts());
    assert_eq!((b.num_runs, b.total_runs), (3, 6));
    assert_eq!(a.mean, b.mean);
    assert_eq!(a.std_dev, b.std_dev);
    assert_eq!(a.median, b.median);
}

#[test]
fn infinities_are_values() {
    let s = summarize(&[1.0, 2.0, f64::INFINITY], &opts());
    assert_eq!(s.num_runs, 3);
    assert_eq!(s.mean, f64::INFINITY);
    assert!(s.std_dev.is_nan() && s.ci95_lower.is_nan() && s.ci95_upper.is_nan() && s.rsd_pct.is_nan());
    assert_eq!(s.stable, None);
    assert_eq!((s.min, s.median, s.max), (1.0, 2.0, f64::INFINITY));
    assert_eq!(s.p95, f64::INFINITY);

    let s = summarize(&[f64::NEG_INFINITY, 5.0, 6.0, 7.0], &opts());
    assert_eq!(s.mean, f64::NEG_INFINITY);
    assert_eq!(s.min, f64::NEG_INFINITY);
    assert_eq!(s.p05, f64::NEG_INFINITY);
    assert_eq!(s.median, 5.5);

    // Both infinities: the mean is undefined.
    let s = summarize(&[f64::NEG_INFINITY, 1.0, f64::INFINITY], &boot(50, 2));
    assert!(s.mean.is_nan());
    assert_eq!(s.median, 1.0);
    assert_eq!(s.stable, None);

    // All infinite and equal: like constant values, but the mean is infinite.
    let s = summarize(&[f64::INFINITY; 3], &opts());
    assert_eq!((s.mean, s.median), (f64::INFINITY, f64::INFINITY));
    assert!(s.std_dev.is_nan() && s.rsd_pct.is_nan());
    assert_eq!(s.stable, None);
}

#[test]
fn huge_values_do_not_panic() {
    let s = summarize(&[f64::MAX, f64::MAX, -f64::MAX, f64::MIN_POSITIVE], &boot(20, 0));
    assert_eq!(s.num_runs, 4);
    assert_eq!(s.max, f64::MAX);
}

#[test]
fn percentile_linear_interpolation() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile_sorted(&v, 0.0), 1.0);
    assert_eq!(percentile_sorted(&v, 1.0), 4.0);
    assert_eq!(percentile_sorted(&v, 0.5), 2.5);
    assert!((percentile_sorted(&v, 0.05) - 1.15).abs() < 1e-12);
    assert!((percentile_sorted(&v, 0.95) - 3.85).abs() < 1e-12);
    assert!(percentile_sorted(&[], 0.5).is_nan());
    assert!(percentile_sorted(&v, -0.1).is_nan());
    assert!(percentile_sorted(&v, 1.1).is_nan());
    assert!(percentile_sorted(&v, f64::NAN).is_nan());
    assert_eq!(percentile_sorted(&[7.0], 0.3), 7.0);
}

#[test]
fn t_quantile_edges() {
    assert!((t_quantile(0.975, 1.0) - 12.706204736174694).abs() < 1e-9);
    assert!((t_quantile(0.975, f64::INFINITY) - 1.959963984540054).abs() < 1e-12);
    assert_eq!(t_quantile(0.5, 3.0), 0.0);
    assert_eq!(t_quantile(0.0, 3.0), f64::NEG_INFINITY);
    assert_eq!(t_quantile(1.0, 3.0), f64::INFINITY);
    assert!((t_quantile(0.025, 4.0) + t_quantile(0.975, 4.0)).abs() < 1e-12);
    for (p, df) in [
        (-0.1, 3.0),
        (1.5, 3.0),
        (0.9, 0.0),
        (0.9, -1.0),
        (f64::NAN, 3.0),
        (0.9, f64::NAN),
    ] {
        assert!(t_quantile(p, df).is_nan(), "t_quantile({p}, {df})");
    }
    // Very large df approaches the normal quantile.
    assert!((t_quantile(0.975, 1e9) - 1.959963984540054).abs() < 1e-6);
    // Inputs on which statrs' own inverse CDF loops forever or panics: finite and fast here.
    for (p, df) in [
        (1e-300, 3.0),
        (0.975, 1e8),
        (5e-324, 100.0),
        (0.975, 1e-10),
        (1e-20, 0.5),
    ] {
        let t = t_quantile(p, df);
        assert!(!t.is_nan(), "t_quantile({p}, {df}) = {t}");
        assert_eq!(t > 0.0, p > 0.5);
    }
}

#[test]
fn tukey_fences() {
    // Q1 = 2, Q3 = 4, IQR = 2: inner fences [-1, 7], outer [-4, 10].
    let v = [-5.0, 2.0, 2.0, 3.0, 4.0, 4.0, 8.0, 9.5, 2.0, 4.0, 3.0];
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(percentile_sorted(&sorted, 0.25), 2.0);
    assert_eq!(percentile_sorted(&sorted, 0.75), 4.0);
    let s = summarize(&v, &opts());
    assert_eq!((s.outliers_mild, s.outliers_severe), (2, 1));
    // Values exactly on a fence are not outliers.
    let s = summarize(&[-1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 7.0], &opts());
    assert_eq!((s.outliers_mild, s.outliers_severe), (0, 0));
}

#[test]
fn bootstrap_is_seeded_and_sane() {
    let v: Vec<f64> = (0..50).map(|i| 100.0 + ((i * 37) % 11) as f64).collect();
    let a = summarize(&v, &boot(500, 7)).bootstrap.unwrap();
    let b = summarize(&v, &boot(500, 7)).bootstrap.unwrap();
    let c = summarize(&v, &boot(500, 8)).bootstrap.unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let s = summarize(&v, &opts());
    assert!(a.mean_lower < s.mean && s.mean < a.mean_upper, "{a:?} {}", s.mean);
    assert!(
        a.median_lower <= s.median && s.median <= a.median_upper,
        "{a:?} {}",
        s.median
    );
    assert!(a.mean_lower >= s.min && a.mean_upper <= s.max);
    // No resamples: NaN bounds.
    let z = summarize(&v, &boot(0, 7)).bootstrap.unwrap();
    assert!(z.mean_lower.is_nan());
}

#[test]
fn summarize_sorted_matches_summarize() {
    let v = [5.0, f64::NAN, 1.0, 3.0, 2.0];
    let a = summarize(&v, &opts());
    let b = summarize_sorted(&[1.0, 2.0, 3.0, 5.0], 5, &opts());
    assert_eq!(a, b);
    // A total below the number of values is raised; unsorted input does not panic.
    assert_eq!(summarize_sorted(&[1.0, 2.0], 0, &opts()).total_runs, 2);
    let _ = summarize_sorted(&[3.0, f64::NAN, 1.0], 3, &boot(10, 1));
}
