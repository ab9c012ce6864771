//! Trends across commits (pure): per series, one value per commit with its confidence interval
//! ([`history`]), runs grouped and pooled by commit, and the change points between consecutive
//! commits by Welch's t-test and the threshold of `kprof compare`. Quantiles are memoised
//! ([`TQuantiles`]).
//!
//! The grouping and the change-point method, as users read them: `docs/store.md` (`kprof history`).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use kprof_core::stats::t_quantile;

use crate::{RunId, RunInfo, SeriesId, SeriesPoint};

/// n, mean and standard deviation of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pooled {
    /// Number of samples.
    pub n: usize,
    /// Mean, in the series' unit.
    pub mean: f64,
    /// Sample standard deviation (ddof 1), in the series' unit; NaN for fewer than 2 samples.
    pub std_dev: f64,
}

impl Pooled {
    /// The n, mean and standard deviation of all the samples of `parts` together (exact).
    /// Parts with no samples or a NaN mean are skipped.
    pub fn pool(parts: &[Pooled]) -> Pooled {
        let parts: Vec<&Pooled> = parts.iter().filter(|p| p.n > 0 && !p.mean.is_nan()).collect();
        let n: usize = parts.iter().map(|p| p.n).sum();
        if n == 0 {
            return Pooled {
                n: 0,
                mean: f64::NAN,
                std_dev: f64::NAN,
            };
        }
        if parts.len() == 1 {
            return *parts[0];
        }
        let mean = parts.iter().map(|p| p.n as f64 * p.mean).sum::<f64>() / n as f64;
        let ss: f64 = parts
            .iter()
            .map(|p| {
                let within = if p.n > 1 {
                    (p.n - 1) as f64 * p.std_dev.powi(2)
                } else {
                    0.0
                };
                within + p.n as f64 * (p.mean - mean).powi(2)
            })
            .sum();
        let std_dev = if n > 1 { (ss / (n - 1) as f64).sqrt() } else { f64::NAN };
        Pooled { n, mean, std_dev }
    }

    /// Half-width of the `(1 - alpha)` Student-t interval of the mean (NaN below 2 samples).
    pub fn ci_half_width(&self, alpha: f64) -> f64 {
        self.ci_half_width_with(&TQuantiles::new(alpha))
    }

    /// [`Pooled::ci_half_width`] with memoised quantiles (`q`'s alpha).
    pub fn ci_half_width_with(&self, q: &TQuantiles) -> f64 {
        if self.n < 2 {
            return f64::NAN;
        }
        q.at((self.n - 1) as f64) * self.std_dev / (self.n as f64).sqrt()
    }
}

/// Memoised two-sided t quantiles `t(1 - alpha/2, df)` of `kprof_core::stats::t_quantile`: exact
/// for integer degrees of freedom (the intervals of the means) and for fewer than 2; for the Welch
/// test's fractional degrees of freedom, linearly interpolated in `1/df` between exact values on
/// a grid of step 1/4096 (relative error below 1e-5, checked in the tests), so that a history of
/// 10,000 commits does not solve 10,000 quantile equations.
#[derive(Debug)]
pub struct TQuantiles {
    p: f64,
    exact: RefCell<HashMap<u64, f64>>,
    grid: RefCell<HashMap<u32, f64>>,
}

/// Grid steps per unit of `1/df`.
const GRID: f64 = 4096.0;

impl TQuantiles {
    /// Quantiles of the two-sided `(1 - alpha)` interval.
    pub fn new(alpha: f64) -> TQuantiles {
        TQuantiles {
            p: 1.0 - alpha / 2.0,
            exact: RefCell::new(HashMap::new()),
            grid: RefCell::new(HashMap::new()),
        }
    }

    fn exact(&self, df: f64) -> f64 {
        *self
            .exact
            .borrow_mut()
            .entry(df.to_bits())
            .or_insert_with(|| t_quantile(self.p, df))
    }

    fn grid_point(&self, k: u32) -> f64 {
        if k == 0 {
            return self.exact(f64::INFINITY);
        }
        *self
            .grid
            .borrow_mut()
            .entry(k)
            .or_insert_with(|| t_quantile(self.p, GRID / f64::from(k)))
    }

    /// `t(1 - alpha/2, df)`: exact for integer `df` and `df < 2`, else interpolated (see
    /// [`TQuantiles`]).
    pub fn at(&self, df: f64) -> f64 {
        if df.is_nan() || df <= 0.0 {
            return f64::NAN;
        }
        if df < 2.0 || df.fract() == 0.0 {
            return self.exact(df);
        }
        let u = GRID / df;
        let k = u.floor();
        let w = u - k;
        let k = k as u32;
        self.grid_point(k) * (1.0 - w) + self.grid_point(k + 1) * w
    }
}

/// Welch's comparison of `new` against `base`: the change in percent of `base`'s mean, its
/// `(1 - alpha)` interval, and whether the interval excludes 0. `None` with fewer than 2 samples
/// on a side.
pub fn welch_change(base: &Pooled, new: &Pooled, alpha: f64) -> Option<Change> {
    welch_change_with(base, new, &TQuantiles::new(alpha))
}

/// [`welch_change`] with memoised quantiles (`q`'s alpha).
pub fn welch_change_with(base: &Pooled, new: &Pooled, q: &TQuantiles) -> Option<Change> {
    if base.n < 2 || new.n < 2 || !base.std_dev.is_finite() || !new.std_dev.is_finite() {
        return None;
    }
    let diff = new.mean - base.mean;
    let (v1, v2) = (base.std_dev.powi(2) / base.n as f64, new.std_dev.powi(2) / new.n as f64);
    let se = (v1 + v2).sqrt();
    let half = if se == 0.0 {
        0.0
    } else {
        let df = (v1 + v2).powi(2) / (v1.powi(2) / (base.n as f64 - 1.0) + v2.powi(2) / (new.n as f64 - 1.0));
        q.at(df) * se
    };
    let pct = |x: f64| x / base.mean * 100.0;
    Some(Change {
        pct: pct(diff),
        ci_low_pct: pct(diff - half),
        ci_high_pct: pct(diff + half),
        significant: diff.abs() > half,
        marked: false,
    })
}

/// The change of a commit's value against the previous commit's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// `(mean - previous mean) / previous mean`, in percent.
    pub pct: f64,
    /// Lower end of the change's `(1 - alpha)` interval, in percent.
    pub ci_low_pct: f64,
    /// Upper end, in percent.
    pub ci_high_pct: f64,
    /// The interval excludes 0.
    pub significant: bool,
    /// A change point: significant and at least the threshold.
    pub marked: bool,
}

/// One commit (or one run without a commit) of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct CommitPoint {
    /// The commit hash, `None` for a run stored outside a git repository.
    pub commit: Option<String>,
    /// The branch of the commit's first run.
    pub branch: Option<String>,
    /// Whether any run of the commit was stored from a dirty work tree.
    pub dirty: bool,
    /// The commit's runs, in id order.
    pub runs: Vec<RunId>,
    /// When its first run was stored (ms since the Unix epoch).
    pub first_unix_ms: i64,
    /// The pooled samples.
    pub pooled: Pooled,
    /// The median of the runs' medians, in the series' unit.
    pub median: f64,
    /// Lower end of the `(1 - alpha)` interval of the mean.
    pub ci_low: f64,
    /// Upper end of that interval.
    pub ci_high: f64,
    /// Against the previous commit (`None` for the first, or when untestable).
    pub change: Option<Change>,
}

/// The history of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesHistory {
    /// The series.
    pub series: SeriesId,
    /// Its unit.
    pub unit: String,
    /// One point per commit, oldest first.
    pub points: Vec<CommitPoint>,
}

/// Options of [`history`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistoryOptions {
    /// Significance level of the change test and `1 -` the confidence of the intervals.
    pub alpha: f64,
    /// Minimal change, in percent, for a change point.
    pub threshold_pct: f64,
}

impl Default for HistoryOptions {
    /// alpha 0.05, threshold 2 %.
    fn default() -> Self {
        HistoryOptions {
            alpha: 0.05,
            threshold_pct: 2.0,
        }
    }
}

/// The points of one series in one commit (or one commit-less run).
type Group<'a> = Vec<&'a SeriesPoint>;

/// A series' unit, its groups in first-seen order, and each group key's index.
type SeriesGroups<'a> = (&'a str, Vec<Group<'a>>, HashMap<GroupKey<'a>, usize>);

/// What runs are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum GroupKey<'a> {
    Commit(&'a str),
    Run(RunId),
}

/// Builds the history of every series in `points` (the method: `docs/store.md`). `runs` gives each
/// run's commit; points of runs missing from `runs` are ignored. Series come out sorted.
pub fn history(runs: &[RunInfo], points: &[SeriesPoint], opts: &HistoryOptions) -> Vec<SeriesHistory> {
    let run_of: HashMap<RunId, &RunInfo> = runs.iter().map(|r| (r.id, r)).collect();
    // Group key of a run: its commit, or the run itself when it has none.
    fn group_of(run: &RunInfo) -> GroupKey<'_> {
        match &run.git {
            Some(g) => GroupKey::Commit(g.commit.as_str()),
            None => GroupKey::Run(run.id),
        }
    }
    // series -> (unit, groups in first-seen order, group key -> index).
    let mut by_series: BTreeMap<&SeriesId, SeriesGroups> = BTreeMap::new();
    for p in points {
        let Some(run) = run_of.get(&p.run_id) else { continue };
        let group = group_of(run);
        let entry = by_series
            .entry(&p.series)
            .or_insert_with(|| (p.unit.as_str(), Vec::new(), HashMap::new()));
        match entry.2.get(&group) {
            Some(&i) => entry.1[i].push(p),
            None => {
                entry.2.insert(group, entry.1.len());
                entry.1.push(vec![p]);
            }
        }
    }
    let quantiles = TQuantiles::new(opts.alpha);
    let mut out = Vec::new();
    for (series, (unit, groups, _)) in by_series {
        let mut groups = groups;
        groups.sort_by_key(|list| list.iter().map(|p| p.run_id).min().unwrap_or(0));
        let mut commit_points: Vec<CommitPoint> = Vec::with_capacity(groups.len());
        for list in groups {
            let first = run_of[&list[0].run_id];
            let parts: Vec<Pooled> = list
                .iter()
                .map(|p| Pooled {
                    n: p.n,
                    mean: p.mean,
                    std_dev: p.std_dev,
                })
                .collect();
            let pooled = Pooled::pool(&parts);
            let mut medians: Vec<f64> = list.iter().map(|p| p.median).filter(|m| !m.is_nan()).collect();
            medians.sort_by(f64::total_cmp);
            let median = match medians.len() {
                0 => f64::NAN,
                k if k % 2 == 1 => medians[k / 2],
                k => (medians[k / 2 - 1] + medians[k / 2]) / 2.0,
            };
            let half = pooled.ci_half_width_with(&quantiles);
            let change = commit_points.last().and_then(|prev| {
                welch_change_with(&prev.pooled, &pooled, &quantiles).map(|mut c| {
                    c.marked = c.significant && c.pct.abs() >= opts.threshold_pct;
                    c
                })
            });
            commit_points.push(CommitPoint {
                commit: first.git.as_ref().map(|g| g.commit.clone()),
                branch: first.git.as_ref().and_then(|g| g.branch.clone()),
                dirty: list
                    .iter()
                    .any(|p| run_of[&p.run_id].git.as_ref().and_then(|g| g.dirty).unwrap_or(false)),
                runs: list.iter().map(|p| p.run_id).collect(),
                first_unix_ms: first.created_unix_ms,
                pooled,
                median,
                ci_low: pooled.mean - half,
                ci_high: pooled.mean + half,
                change,
            });
        }
        out.push(SeriesHistory {
            series: series.clone(),
            unit: unit.to_string(),
            points: commit_points,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(v: &[f64]) -> Pooled {
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        Pooled { n, mean, std_dev: sd }
    }

    #[test]
    fn pooling_equals_the_concatenated_samples() {
        let a = [1.0, 2.0, 4.0];
        let b = [10.0, 11.0];
        let c = [5.0];
        let all: Vec<f64> = a.iter().chain(&b).chain(&c).copied().collect();
        let p = Pooled::pool(&[
            moments(&a),
            moments(&b),
            Pooled {
                n: 1,
                mean: 5.0,
                std_dev: f64::NAN,
            },
        ]);
        let want = moments(&all);
        assert_eq!(p.n, want.n);
        assert!((p.mean - want.mean).abs() < 1e-12);
        assert!((p.std_dev - want.std_dev).abs() < 1e-12, "{p:?} {want:?}");
    }

    #[test]
    fn memoised_quantiles_match_the_exact_ones() {
        for alpha in [0.05, 0.01, 0.1] {
            let q = TQuantiles::new(alpha);
            let mut df = 0.3;
            while df < 1e6 {
                let exact = t_quantile(1.0 - alpha / 2.0, df);
                let got = q.at(df);
                assert!(((got - exact) / exact).abs() < 1e-5, "df {df}: {got} vs {exact}");
                df *= 1.0137;
            }
            assert_eq!(q.at(9.0), t_quantile(1.0 - alpha / 2.0, 9.0));
            assert!(q.at(0.0).is_nan());
        }
    }

    #[test]
    fn welch_interval_matches_a_hand_computation() {
        // base 10, 12, 14; new 13, 15, 17, 19: scipy's Welch p = 0.0694 > 0.05, so the 95 %
        // interval of the difference (4) contains 0 but the 90 % one does not (p < 0.10).
        let b = moments(&[10.0, 12.0, 14.0]);
        let n = moments(&[13.0, 15.0, 17.0, 19.0]);
        let c = welch_change(&b, &n, 0.05).unwrap();
        assert!((c.pct - 100.0 / 3.0).abs() < 1e-9);
        assert!(!c.significant && c.ci_low_pct < 0.0);
        assert!(welch_change(&b, &n, 0.10).unwrap().significant);
        assert!(welch_change(
            &Pooled {
                n: 1,
                mean: 1.0,
                std_dev: f64::NAN
            },
            &n,
            0.05
        )
        .is_none());
    }
}
