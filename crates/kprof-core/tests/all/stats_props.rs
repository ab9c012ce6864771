//! Property tests of `kprof_core::stats::summarize`.

use kprof_core::stats::{summarize, BootstrapOptions, StatsOptions};
use kprof_core::Summary;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    }
}

/// Positive timings-like values, 1..60 of them.
fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1e-3f64..1e6, 1..60)
}

fn rel_eq(a: f64, b: f64, tol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// Every floating-point field of a summary, named.
fn fields(s: &Summary) -> Vec<(&'static str, f64)> {
    let mut f = crate::common::summary_fields(s).to_vec();
    f.push(("n", s.num_runs as f64));
    f
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn ci_contains_the_mean(v in values()) {
        let s = summarize(&v, &StatsOptions::default());
        if v.len() > 1 {
            prop_assert!(s.ci95_lower <= s.mean && s.mean <= s.ci95_upper, "{s:?}");
        } else {
            prop_assert!(s.ci95_lower.is_nan() && s.ci95_upper.is_nan());
        }
    }

    #[test]
    fn order_statistics_are_ordered(v in values()) {
        let s = summarize(&v, &StatsOptions::default());
        prop_assert!(s.min <= s.p05 && s.p05 <= s.median && s.median <= s.p95 && s.p95 <= s.max, "{s:?}");
        prop_assert!(s.min <= s.mean && s.mean <= s.max, "{s:?}");
    }

    #[test]
    fn permutation_invariance(v in values(), seed in any::<u64>()) {
        let opts = StatsOptions {
            bootstrap: Some(BootstrapOptions { resamples: 50, seed: 1 }),
            ..StatsOptions::default()
        };
        let mut w = v.clone();
        // Fisher-Yates driven by a simple LCG from the seed.
        let mut state = seed;
        for i in (1..w.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let j = ((state >> 33) as usize) % (i + 1);
            w.swap(i, j);
        }
        let a = summarize(&v, &opts);
        let b = summarize(&w, &opts);
        for ((name, x), (_, y)) in fields(&a).into_iter().zip(fields(&b)) {
            prop_assert!(rel_eq(x, y, 1e-12), "{name}: {x} vs {y}");
        }
        prop_assert_eq!(a.outliers_mild, b.outliers_mild);
        prop_assert_eq!(a.outliers_severe, b.outliers_severe);
        // The bootstrap works on the sorted values, so it is permutation invariant too.
        prop_assert_eq!(a.bootstrap, b.bootstrap);
    }

    #[test]
    fn scaling_equivariance(v in values(), c in 1e-3f64..1e3) {
        let a = summarize(&v, &StatsOptions::default());
        let w: Vec<f64> = v.iter().map(|x| x * c).collect();
        let b = summarize(&w, &StatsOptions::default());
        for ((name, x), (_, y)) in fields(&a).into_iter().zip(fields(&b)) {
            let want = if name == "rsd_pct" || name == "n" { x } else { x * c };
            // Spread statistics are differences of large numbers: allow for cancellation.
            let tol = if matches!(name, "std_dev" | "rsd_pct") { 1e-6 } else { 1e-9 };
            if name == "std_dev" || name == "rsd_pct" {
                // A spread of zero (or nearly) only has an absolute error bound.
                prop_assert!(
                    rel_eq(y, want, tol) || (y - want).abs() <= 1e-9 * a.max * c.max(1.0),
                    "{name}: {y} vs {want}"
                );
            } else {
                prop_assert!(rel_eq(y, want, tol), "{name}: {y} vs {want}");
            }
        }
        prop_assert_eq!(a.outliers_mild + a.outliers_severe, b.outliers_mild + b.outliers_severe);
    }

    #[test]
    fn nan_changes_only_total_runs(v in values(), at in any::<prop::sample::Index>(), k in 1usize..4) {
        let a = summarize(&v, &StatsOptions::default());
        let mut w = v.clone();
        for i in 0..k {
            let pos = (at.index(w.len() + 1) + i) % (w.len() + 1);
            w.insert(pos, f64::NAN);
        }
        let b = summarize(&w, &StatsOptions::default());
        prop_assert_eq!(b.total_runs, a.total_runs + k);
        prop_assert_eq!(b.num_runs, a.num_runs);
        for ((name, x), (_, y)) in fields(&a).into_iter().zip(fields(&b)) {
            prop_assert!(x.to_bits() == y.to_bits(), "{name}: {x} vs {y}");
        }
        prop_assert_eq!((a.outliers_mild, a.outliers_severe), (b.outliers_mild, b.outliers_severe));
        prop_assert_eq!(a.stable, b.stable);
    }

    #[test]
    fn never_panics_on_any_floats(v in prop::collection::vec(any::<f64>(), 0..20)) {
        let opts = StatsOptions { bootstrap: Some(BootstrapOptions { resamples: 20, seed: 3 }), ..StatsOptions::default() };
        let s = summarize(&v, &opts);
        prop_assert_eq!(s.total_runs, v.len());
        prop_assert_eq!(s.num_runs, v.iter().filter(|x| !x.is_nan()).count());
    }
}
