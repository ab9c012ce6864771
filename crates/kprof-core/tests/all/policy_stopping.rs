//! Tests of `policy::StoppingPolicy`.
//!
//! The reference CI half-width was computed with scipy 1.17.1:
//! `v = [100, 101, 99, 100.5, 99.5]; stats.t.ppf(0.975, 4) * v.std(ddof=1) / sqrt(5) / v.mean()`
//! = 0.009816215807387786, and the RSD `v.std(ddof=1) / v.mean() * 100` = 0.790569415042095.

use std::time::Duration;

use kprof_core::policy::{Decision, StopReason, StoppingPolicy};
use kprof_core::transforms::TransformError;

const V: [f64; 5] = [100.0, 101.0, 99.0, 100.5, 99.5];
const NAN: f64 = f64::NAN;

fn adaptive(min: u32, max: u32) -> StoppingPolicy {
    StoppingPolicy {
        min_runs: min,
        max_runs: max,
        target_rel_ci_half_width: None,
        target_rsd_pct: None,
        time_budget: None,
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn fixed_runs() {
    let p = StoppingPolicy::fixed(3);
    assert_eq!(p.validate(), Ok(()));
    assert_eq!(p.decide(&[], secs(0)), Decision::Continue);
    assert_eq!(p.decide(&[1.0, 1.0], secs(0)), Decision::Continue);
    assert_eq!(
        p.decide(&[1.0, NAN, 1.0], secs(0)),
        Decision::Stop(StopReason::FixedRuns(3))
    );
    assert_eq!(
        StopReason::FixedRuns(3).to_string(),
        "stopped after 3 runs: fixed number of runs"
    );
    assert_eq!(
        StopReason::FixedRuns(1).to_string(),
        "stopped after 1 run: fixed number of runs"
    );
}

#[test]
fn max_runs_without_targets() {
    let p = adaptive(2, 4);
    assert_eq!(p.decide(&[1.0, 2.0, 3.0], secs(0)), Decision::Continue);
    assert_eq!(
        p.decide(&[1.0, 2.0, 3.0, 4.0], secs(0)),
        Decision::Stop(StopReason::MaxRuns(4))
    );
    assert_eq!(p.decide(&[1.0; 9], secs(0)), Decision::Stop(StopReason::MaxRuns(9)));
    assert_eq!(
        StopReason::MaxRuns(4).to_string(),
        "stopped after 4 runs: reached max_runs without reaching a target"
    );
}

#[test]
fn ci_target() {
    let p = StoppingPolicy {
        target_rel_ci_half_width: Some(0.01),
        ..adaptive(3, 100)
    };
    // Below min_runs: continue even though the two values agree perfectly.
    assert_eq!(p.decide(&[100.0, 100.0], secs(0)), Decision::Continue);
    let Decision::Stop(StopReason::TargetCiReached {
        runs,
        rel_ci_half_width,
        target,
    }) = p.decide(&V, secs(0))
    else {
        panic!("should stop")
    };
    assert_eq!((runs, target), (5, 0.01));
    assert!(
        (rel_ci_half_width - 0.009816215807387786).abs() < 1e-12,
        "{rel_ci_half_width}"
    );
    // Four of them are not enough: t(0.975, 3) is larger.
    assert_eq!(p.decide(&V[..4], secs(0)), Decision::Continue);
    let r = StopReason::TargetCiReached {
        runs: 12,
        rel_ci_half_width: 0.008,
        target: 0.01,
    };
    assert_eq!(r.to_string(), "stopped after 12 runs: CI half-width 0.8% <= target 1%");
}

#[test]
fn rsd_target() {
    let p = StoppingPolicy {
        target_rsd_pct: Some(1.0),
        ..adaptive(2, 100)
    };
    let Decision::Stop(StopReason::TargetRsdReached {
        runs,
        rsd_pct,
        target_pct,
    }) = p.decide(&V, secs(0))
    else {
        panic!("should stop")
    };
    assert_eq!((runs, target_pct), (5, 1.0));
    assert!((rsd_pct - 0.790569415042095).abs() < 1e-12);
    assert_eq!(p.decide(&[100.0, 110.0], secs(0)), Decision::Continue);
    let r = StopReason::TargetRsdReached {
        runs: 5,
        rsd_pct: 0.790569415042095,
        target_pct: 1.0,
    };
    assert_eq!(r.to_string(), "stopped after 5 runs: RSD 0.791% <= target 1%");
}

#[test]
fn ci_target_is_checked_before_rsd_target() {
    let p = StoppingPolicy {
        target_rel_ci_half_width: Some(0.5),
        target_rsd_pct: Some(50.0),
        ..adaptive(2, 100)
    };
    assert!(matches!(
        p.decide(&V, secs(0)),
        Decision::Stop(StopReason::TargetCiReached { .. })
    ));
    let p = StoppingPolicy {
        target_rel_ci_half_width: Some(1e-9),
        target_rsd_pct: Some(50.0),
        ..adaptive(2, 100)
    };
    assert!(matches!(
        p.decide(&V, secs(0)),
        Decision::Stop(StopReason::TargetRsdReached { .. })
    ));
}

#[test]
fn targets_need_two_non_nan_values_and_a_nonzero_mean() {
    let p = StoppingPolicy {
        target_rel_ci_half_width: Some(0.5),
        target_rsd_pct: Some(50.0),
        ..adaptive(0, 100)
    };
    assert_eq!(p.decide(&[], secs(0)), Decision::Continue);
    assert_eq!(p.decide(&[5.0], secs(0)), Decision::Continue);
    assert_eq!(p.decide(&[5.0, NAN, NAN], secs(0)), Decision::Continue);
    // NaN values are ignored: two equal values give CI half-width 0, and 3 runs are counted.
    assert_eq!(
        p.decide(&[5.0, NAN, 5.0], secs(0)),
        Decision::Stop(StopReason::TargetCiReached {
            runs: 3,
            rel_ci_half_width: 0.0,
            target: 0.5
        })
    );
    // Zero mean: relative measures undefined, continue.
    assert_eq!(p.decide(&[0.0, 0.0, 0.0], secs(0)), Decision::Continue);
    assert_eq!(p.decide(&[-1.0, 1.0], secs(0)), Decision::Continue);
}

#[test]
fn time_budget() {
    let p = StoppingPolicy {
        time_budget: Some(secs(10)),
        ..adaptive(5, 100)
    };
    // No run yet: continue whatever the clock says.
    assert_eq!(p.decide(&[], secs(60)), Decision::Continue);
    assert_eq!(p.decide(&[1.0], secs(9)), Decision::Continue);
    // After one run the budget stops even before min_runs.
    assert_eq!(
        p.decide(&[1.0], secs(10)),
        Decision::Stop(StopReason::TimeBudget {
            runs: 1,
            elapsed: secs(10),
            budget: secs(10)
        })
    );
    // max_runs takes precedence over the budget.
    let p = StoppingPolicy {
        time_budget: Some(secs(10)),
        ..adaptive(1, 2)
    };
    assert_eq!(p.decide(&[1.0, 2.0], secs(99)), Decision::Stop(StopReason::MaxRuns(2)));
    let r = StopReason::TimeBudget {
        runs: 7,
        elapsed: Duration::from_millis(10_250),
        budget: secs(10),
    };
    assert_eq!(
        r.to_string(),
        "stopped after 7 runs: time budget spent (10.25 s elapsed, budget 10 s)"
    );
}

#[test]
fn validation_messages() {
    assert_eq!(adaptive(0, 1).validate(), Ok(()));
    let e = adaptive(0, 0).validate().unwrap_err();
    assert_eq!(e, TransformError::PolicyNoRuns);
    assert_eq!(e.to_string(), "stopping policy: max_runs must be at least 1, got 0");
    let e = adaptive(5, 3).validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        "stopping policy: min_runs (5) is greater than max_runs (3)"
    );
    let e = StoppingPolicy {
        target_rel_ci_half_width: Some(0.0),
        ..adaptive(1, 3)
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "stopping policy: target_rel_ci_half_width must be a positive finite number, got 0"
    );
    let e = StoppingPolicy {
        target_rsd_pct: Some(-2.0),
        ..adaptive(1, 3)
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "stopping policy: target_rsd_pct must be a positive finite number, got -2"
    );
    let e = StoppingPolicy {
        target_rsd_pct: Some(f64::NAN),
        ..adaptive(1, 3)
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "stopping policy: target_rsd_pct must be a positive finite number, got NaN"
    );
    let e = StoppingPolicy {
        time_budget: Some(Duration::ZERO),
        ..adaptive(1, 3)
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "stopping policy: time_budget must be a positive finite number, got 0"
    );
    let ok = StoppingPolicy {
        target_rel_ci_half_width: Some(0.01),
        target_rsd_pct: Some(2.0),
        time_budget: Some(secs(1)),
        ..adaptive(2, 3)
    };
    assert_eq!(ok.validate(), Ok(()));
}

#[test]
fn invalid_policies_do_not_panic() {
    assert_eq!(
        adaptive(0, 0).decide(&[], secs(0)),
        Decision::Stop(StopReason::FixedRuns(0))
    );
    assert_eq!(
        adaptive(5, 3).decide(&[1.0; 3], secs(0)),
        Decision::Stop(StopReason::MaxRuns(3))
    );
    let p = StoppingPolicy {
        target_rsd_pct: Some(f64::NAN),
        target_rel_ci_half_width: Some(-1.0),
        ..adaptive(0, 9)
    };
    assert_eq!(p.decide(&[1.0, 1.0, f64::INFINITY], secs(0)), Decision::Continue);
}
