//! The adaptive stopping rule the run loop consults after each run of a configuration (pure logic,
//! no clock): [`StoppingPolicy::decide`] takes the values so far and the time spent and says
//! whether to stop, and why ([`StopReason`]). The rules are on [`StoppingPolicy::decide`]; the
//! options that set them (`runs`, `max_runs`, `target_rsd`, `target_ci`, `time_budget`):
//! `docs/quickstart.md`.

use std::fmt;
use std::time::Duration;

use crate::transforms::{t975, TransformError};

/// When to stop repeating runs of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct StoppingPolicy {
    /// Never stop (except on the time budget) before this many runs.
    pub min_runs: u32,
    /// Always stop at this many runs.
    pub max_runs: u32,
    /// Stop once the 95% CI half-width of the mean, relative to the mean, is at most this
    /// fraction (e.g. `0.01` = ±1% of the mean).
    pub target_rel_ci_half_width: Option<f64>,
    /// Stop once the relative standard deviation, in percent, is at most this.
    pub target_rsd_pct: Option<f64>,
    /// Stop once this much wall-clock time was spent (after at least one run).
    pub time_budget: Option<Duration>,
}

/// What the run loop should do after a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Do another run.
    Continue,
    /// Stop, for this reason.
    Stop(StopReason),
}

/// Why the run loop stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// The fixed number of runs (`min_runs == max_runs`) is done.
    FixedRuns(u32),
    /// `max_runs` runs are done without reaching a target.
    MaxRuns(u32),
    /// The relative CI half-width reached its target.
    TargetCiReached {
        /// Runs done (failed ones included).
        runs: u32,
        /// Relative 95% CI half-width of the mean, as a fraction of the mean.
        rel_ci_half_width: f64,
        /// The target, as a fraction of the mean.
        target: f64,
    },
    /// The relative standard deviation reached its target.
    TargetRsdReached {
        /// Runs done (failed ones included).
        runs: u32,
        /// Relative standard deviation in percent.
        rsd_pct: f64,
        /// The target in percent.
        target_pct: f64,
    },
    /// The wall-clock budget is spent.
    TimeBudget {
        /// Runs done (failed ones included).
        runs: u32,
        /// Time spent.
        elapsed: Duration,
        /// The budget.
        budget: Duration,
    },
}

/// `n run` / `n runs`.
fn runs_text(n: u32) -> String {
    if n == 1 {
        "1 run".to_string()
    } else {
        format!("{n} runs")
    }
}

/// A number with at most 3 decimals, trailing zeros removed (`0.8`, `1`, `0.125`).
fn short(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

impl fmt::Display for StopReason {
    /// A human sentence, e.g. `stopped after 12 runs: CI half-width 0.8% <= target 1%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::FixedRuns(n) => {
                write!(f, "stopped after {}: fixed number of runs", runs_text(*n))
            }
            StopReason::MaxRuns(n) => write!(
                f,
                "stopped after {}: reached max_runs without reaching a target",
                runs_text(*n)
            ),
            StopReason::TargetCiReached {
                runs,
                rel_ci_half_width,
                target,
            } => write!(
                f,
                "stopped after {}: CI half-width {}% <= target {}%",
                runs_text(*runs),
                short(rel_ci_half_width * 100.0),
                short(target * 100.0)
            ),
            StopReason::TargetRsdReached {
                runs,
                rsd_pct,
                target_pct,
            } => write!(
                f,
                "stopped after {}: RSD {}% <= target {}%",
                runs_text(*runs),
                short(*rsd_pct),
                short(*target_pct)
            ),
            StopReason::TimeBudget { runs, elapsed, budget } => write!(
                f,
                "stopped after {}: time budget spent ({} s elapsed, budget {} s)",
                runs_text(*runs),
                short(elapsed.as_secs_f64()),
                short(budget.as_secs_f64())
            ),
        }
    }
}

impl StoppingPolicy {
    /// Exactly `runs` runs: `min_runs = max_runs = runs`, no targets, no budget.
    pub fn fixed(runs: u32) -> Self {
        Self {
            min_runs: runs,
            max_runs: runs,
            target_rel_ci_half_width: None,
            target_rsd_pct: None,
            time_budget: None,
        }
    }

    /// Checks the policy: `max_runs >= 1`, `min_runs <= max_runs`, targets positive and finite,
    /// time budget non-zero.
    pub fn validate(&self) -> Result<(), TransformError> {
        if self.max_runs == 0 {
            return Err(TransformError::PolicyNoRuns);
        }
        if self.min_runs > self.max_runs {
            return Err(TransformError::PolicyMinAboveMax {
                min_runs: self.min_runs,
                max_runs: self.max_runs,
            });
        }
        let positive = |name: &'static str, v: Option<f64>| match v {
            Some(x) if !(x.is_finite() && x > 0.0) => Err(TransformError::PolicyNonPositive { name, value: x }),
            _ => Ok(()),
        };
        positive("target_rel_ci_half_width", self.target_rel_ci_half_width)?;
        positive("target_rsd_pct", self.target_rsd_pct)?;
        positive("time_budget", self.time_budget.map(|d| d.as_secs_f64()))?;
        Ok(())
    }

    /// Decides, after a run, whether to continue; `values` are all values so far (NaN for
    /// failed runs), `elapsed` the wall-clock time spent. Never panics, also for a policy that
    /// [`StoppingPolicy::validate`] rejects. The rules, checked in this order:
    ///
    /// 1. **Maximum**: once `values.len() >= max_runs` (failed runs count as runs), stop:
    ///    [`StopReason::FixedRuns`] when `min_runs == max_runs`, else [`StopReason::MaxRuns`].
    /// 2. **Time budget**: once `elapsed >= time_budget` *and at least one run is done*, stop with
    ///    [`StopReason::TimeBudget`], even before `min_runs`: the budget is a hard wall-clock
    ///    limit, and a result with fewer runs (its run count is reported) is preferable to
    ///    overrunning it. With zero runs done the loop always continues, so there is something to
    ///    report.
    /// 3. **Minimum**: before `min_runs` runs, continue.
    /// 4. **Precision targets** (need at least 2 non-NaN values; NaN values are ignored): stop when
    ///    the relative half-width of the 95% t-interval of the mean, `t_{0.975, k-1} · s / sqrt(k)
    ///    / |mean|`, is at most `target_rel_ci_half_width` ([`StopReason::TargetCiReached`]), or
    ///    when the relative standard deviation `s / |mean| · 100` is at most `target_rsd_pct`
    ///    ([`StopReason::TargetRsdReached`]). When both are set, whichever is reached first stops
    ///    (the CI target is checked first). A zero mean makes both undefined: continue.
    /// 5. Otherwise continue.
    pub fn decide(&self, values: &[f64], elapsed: Duration) -> Decision {
        let runs = u32::try_from(values.len()).unwrap_or(u32::MAX);
        if runs >= self.max_runs {
            return Decision::Stop(if self.min_runs == self.max_runs {
                StopReason::FixedRuns(runs)
            } else {
                StopReason::MaxRuns(runs)
            });
        }
        if let Some(budget) = self.time_budget {
            if runs >= 1 && elapsed >= budget {
                return Decision::Stop(StopReason::TimeBudget { runs, elapsed, budget });
            }
        }
        if runs < self.min_runs {
            return Decision::Continue;
        }
        let ok: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        if ok.len() < 2 {
            return Decision::Continue;
        }
        let k = ok.len() as f64;
        let m = ok.iter().sum::<f64>() / k;
        let sd = (ok.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (k - 1.0)).sqrt();
        if let Some(target) = self.target_rel_ci_half_width {
            let rel = t975(k - 1.0) * sd / k.sqrt() / m.abs();
            if rel.is_finite() && rel <= target {
                return Decision::Stop(StopReason::TargetCiReached {
                    runs,
                    rel_ci_half_width: rel,
                    target,
                });
            }
        }
        if let Some(target_pct) = self.target_rsd_pct {
            let rsd = sd / m.abs() * 100.0;
            if rsd.is_finite() && rsd <= target_pct {
                return Decision::Stop(StopReason::TargetRsdReached {
                    runs,
                    rsd_pct: rsd,
                    target_pct,
                });
            }
        }
        Decision::Continue
    }
}
