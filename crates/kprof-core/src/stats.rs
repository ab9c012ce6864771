//! Per-series statistics: means with Student's t confidence intervals, percentiles, Tukey outliers,
//! an optional seeded bootstrap, and the aggregation of raw samples into the processed table.
//!
//! Values are in the unit of their series (usually nanoseconds); only `rsd_pct` is a percentage.
//! No function here panics, whatever its input: undefined statistics are NaN (or `None`), as each
//! function says. NaN marks a failed run and infinities are values ([`summarize`] has the rules).

use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

use crate::model::{BootstrapCi, Config, DeviceInfo, ExtraValue, ProcessedResults, ProcessedRow, RawResults, Summary};

/// Options of [`summarize`]: the stability threshold and the optional bootstrap.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsOptions {
    /// A series is stable when its relative standard deviation, in percent, is strictly below
    /// this threshold. Default `2.0` (percent).
    pub stable_rsd_pct: f64,
    /// Percentile-bootstrap intervals of the mean and median; `None` (the default) skips them.
    pub bootstrap: Option<BootstrapOptions>,
}

impl Default for StatsOptions {
    /// A 2 % RSD threshold and no bootstrap.
    fn default() -> Self {
        StatsOptions {
            stable_rsd_pct: 2.0,
            bootstrap: None,
        }
    }
}

/// Options of the seeded percentile bootstrap (95 % intervals of the mean and the median).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapOptions {
    /// Number of resamples (each the size of the series). Default `2000`; `0` gives NaN bounds.
    pub resamples: usize,
    /// Seed of the SplitMix64 generator; one seed always gives the same intervals for the same
    /// multiset of values. Default `0`.
    pub seed: u64,
}

impl Default for BootstrapOptions {
    /// 2000 resamples, seed 0.
    fn default() -> Self {
        BootstrapOptions {
            resamples: 2000,
            seed: 0,
        }
    }
}

/// Options of [`aggregate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggregateOptions {
    /// Options of the per-series statistics.
    pub stats: StatsOptions,
}

/// The `p`-quantile of Student's t distribution with `df` degrees of freedom (unit-free).
///
/// `t_quantile(0.975, n - 1)` is the factor of a two-sided 95 % confidence interval of a mean of
/// `n` samples. Returns `-inf` for `p = 0`, `+inf` for `p = 1`, and NaN when `p` is outside
/// `[0, 1]`, `df <= 0`, or either is NaN; `df = inf` gives the standard normal quantile.
///
/// Method: closed forms for `df = 1` and `df = 2`; for `df >= 10^4` the Cornish-Fisher expansion
/// around the normal quantile (terms up to `df^-4`, accurate to rounding there); otherwise a
/// safeguarded Newton iteration (bisection fallback, bounded iteration count) on statrs'
/// Student's t CDF. statrs' own `inverse_cdf` is not used: it loses accuracy above
/// `df ~ 10^5`, loops forever for some inputs (`df = 10^8`, `p = 10^-300`) and can panic.
/// Agrees with `scipy.stats.t.ppf` within `1e-9` relative on the reference set (df from 0.25 to
/// 1e8, p from 1e-10 to 1 - 1e-10). Quantiles beyond about `1e154` (only reached for `df`
/// well below 1) saturate there instead of being exact.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || !(0.0..=1.0).contains(&p) || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Work in the lower tail, where the CDF is accurate, and mirror.
    let q = if p < 0.5 { p } else { 1.0 - p };
    let lower = lower_t_quantile(q, df);
    if p < 0.5 {
        lower
    } else {
        -lower
    }
}

/// The standard normal `q`-quantile, `q` in `(0, 1)`.
fn normal_quantile(q: f64) -> f64 {
    match Normal::new(0.0, 1.0) {
        Ok(n) => n.inverse_cdf(q.clamp(0.0, 1.0)),
        Err(_) => f64::NAN,
    }
}

/// Cornish-Fisher expansion of the t quantile around the normal quantile `z` (Abramowitz &
/// Stegun 26.7.5), terms up to `df^-4`.
fn cornish_fisher(z: f64, df: f64) -> f64 {
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0;
    z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
}

/// The two-sided p-value of a t statistic with `df` degrees of freedom: `2 * cdf(-|t|)`, computed
/// on the lower tail so that small p-values keep their precision (`1 - cdf(|t|)` rounds them to
/// 0). `df = inf` uses the standard normal; `t = ±inf` gives 0; NaN inputs or `df <= 0` give NaN.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let lower = if df.is_infinite() {
        match Normal::new(0.0, 1.0) {
            Ok(n) => n.cdf(-t.abs()),
            Err(_) => return f64::NAN,
        }
    } else {
        match StudentsT::new(0.0, 1.0, df) {
            Ok(d) => d.cdf(-t.abs()),
            Err(_) => return f64::NAN,
        }
    };
    (2.0 * lower).clamp(0.0, 1.0)
}

/// The t quantile for a lower-tail probability `q` in `(0, 0.5)`; negative.
fn lower_t_quantile(q: f64, df: f64) -> f64 {
    if df == 1.0 {
        // Cauchy.
        return (std::f64::consts::PI * (q - 0.5)).tan();
    }
    if df == 2.0 {
        return (2.0 * q - 1.0) / (2.0 * q * (1.0 - q)).sqrt();
    }
    let z = normal_quantile(q);
    if df.is_infinite() {
        return z;
    }
    if df >= 1e4 {
        return cornish_fisher(z, df);
    }
    let dist = match StudentsT::new(0.0, 1.0, df) {
        Ok(d) => d,
        Err(_) => return f64::NAN,
    };
    // Solve tail(t) = q for t >= 0, tail(t) = cdf(-t) decreasing from 0.5 to 0.
    let tail = |t: f64| dist.cdf(-t);
    let mut guess = -cornish_fisher(z, df.max(1.0));
    if !guess.is_finite() || guess <= 0.0 {
        guess = 1.0;
    }
    // Bracket [a, b] with tail(a) > q >= tail(b).
    let (mut a, mut b) = (0.0f64, guess.max(1.0));
    let mut steps = 0;
    while tail(b) > q {
        a = b;
        b *= 4.0;
        steps += 1;
        if !b.is_finite() || steps > 600 {
            return f64::NEG_INFINITY;
        }
    }
    let mut t = guess.clamp(a, b);
    for _ in 0..200 {
        let f = tail(t) - q;
        if f == 0.0 {
            break;
        }
        if f > 0.0 {
            a = t;
        } else {
            b = t;
        }
        // Newton: d tail / dt = -pdf(t).
        let pdf = dist.pdf(t);
        let newton = t + f / pdf;
        let next = if newton.is_finite() && newton > a && newton < b {
            newton
        } else {
            0.5 * (a + b)
        };
        if (next - t).abs() <= 4.0 * f64::EPSILON * t.abs() || b - a <= 4.0 * f64::EPSILON * b {
            t = next;
            break;
        }
        t = next;
    }
    -t
}

/// The `q`-quantile (`q` in `[0, 1]`) of values sorted ascending, by linear interpolation
/// between closest ranks (numpy's default, `method="linear"`).
///
/// The result is in the unit of the values. Returns NaN for an empty slice or a `q` outside
/// `[0, 1]` (or NaN). Between an infinite and a finite neighbour the result is the infinite
/// one (the limit), never `inf - inf`. On unsorted input the result is some interpolation of two
/// of the values, not a quantile.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    let h = q * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let t = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    if t == 0.0 || a == b {
        return a;
    }
    if a.is_infinite() {
        return a;
    }
    if b.is_infinite() {
        return b;
    }
    // numpy's `_lerp`: interpolate from the nearer end, then keep the result inside [a, b].
    let d = b - a;
    let x = if t < 0.5 { a + d * t } else { b - d * (1.0 - t) };
    if a <= b {
        x.clamp(a, b)
    } else {
        x
    }
}

/// Statistics of one series: `values` are its runs, in any order, in the series' unit; NaN
/// marks a failed run.
///
/// `num_runs` counts the non-NaN values, `total_runs` all of them. Mean, standard deviation
/// (ddof = 1), min, max, median and the 5th/95th percentiles (linear interpolation) are taken
/// over the non-NaN values. The 95 % confidence interval of the mean is
/// `mean ± t(0.975, n-1) · sd / √n` (Student's t, not 1.96). `rsd_pct = sd / |mean| · 100`
/// (NaN when the mean is 0); `stable = Some(rsd_pct < opts.stable_rsd_pct)` when the RSD is
/// finite, else `None`. Outliers use Tukey's fences on the quartiles (linear interpolation):
/// mild are strictly outside `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]` but inside `[Q1 - 3 IQR, Q3 + 3 IQR]`,
/// severe strictly outside the latter.
///
/// Edge cases: no values gives NaN everywhere, zero counts and `stable = None`; one value gives
/// mean = min = max = median = the value and NaN deviation, interval and RSD; equal values give a
/// standard deviation of exactly 0, an interval collapsed onto the mean and RSD 0.
/// NaN marks a failed run: it is ignored by every statistic and only counted in
/// [`Summary::total_runs`]. Infinities are values: they sort below/above every finite value and
/// take part in every statistic, so a series holding `+inf` has mean `+inf`, and its standard
/// deviation, confidence interval and RSD are NaN (`inf - inf` is undefined); order statistics
/// (min, max, median, percentiles) stay meaningful.
pub fn summarize(values: &[f64], opts: &StatsOptions) -> Summary {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_unstable_by(f64::total_cmp);
    summarize_sorted(&sorted, values.len(), opts)
}

/// [`summarize`] for values already freed of NaN and sorted ascending (by [`f64::total_cmp`]),
/// with `total_runs` the number of runs including the failed (NaN) ones that were removed.
///
/// This is what [`aggregate`] calls on each series; it allocates nothing unless a bootstrap is
/// asked for. `total_runs` below `sorted.len()` is raised to it. On input that is not sorted or
/// holds NaN the result is defined (no panic) but meaningless.
pub fn summarize_sorted(sorted: &[f64], total_runs: usize, opts: &StatsOptions) -> Summary {
    summarize_with_t(sorted, total_runs, opts, t975(sorted.len()))
}

/// `t(0.975, n - 1)`, NaN for fewer than two values.
fn t975(n: usize) -> f64 {
    if n > 1 {
        t_quantile(0.975, (n - 1) as f64)
    } else {
        f64::NAN
    }
}

/// [`summarize_sorted`] with the t factor of the interval given (`t975(sorted.len())`), so that
/// [`aggregate`] computes it once per distinct run count.
fn summarize_with_t(sorted: &[f64], total_runs: usize, opts: &StatsOptions, t975: f64) -> Summary {
    let n = sorted.len();
    let total_runs = total_runs.max(n);
    let bootstrap = opts.bootstrap.as_ref().map(|b| bootstrap_ci(sorted, b));
    if n == 0 {
        return Summary {
            bootstrap,
            ..Summary::empty(total_runs)
        };
    }
    let min = sorted[0];
    let max = sorted[n - 1];
    let (mean, std_dev) = if min == max {
        // All equal (this also covers n = 1): exact, free of rounding. Equal infinities
        // have an undefined deviation, like any infinite series.
        (min, if n > 1 && min.is_finite() { 0.0 } else { f64::NAN })
    } else {
        let mean = sorted.iter().sum::<f64>() / n as f64;
        // Rounding must not push the mean outside the data; an infinite or NaN mean stays as is.
        let mean = if mean.is_finite() { mean.clamp(min, max) } else { mean };
        let ss: f64 = sorted.iter().map(|&x| (x - mean) * (x - mean)).sum();
        (mean, (ss / (n - 1) as f64).sqrt())
    };
    let (ci95_lower, ci95_upper) = if n > 1 {
        let half = t975 * std_dev / (n as f64).sqrt();
        (mean - half, mean + half)
    } else {
        (f64::NAN, f64::NAN)
    };
    let rsd_pct = if mean == 0.0 {
        f64::NAN
    } else {
        std_dev / mean.abs() * 100.0
    };
    let stable = stable_verdict(rsd_pct, opts.stable_rsd_pct);
    let (outliers_mild, outliers_severe) = tukey_outliers(sorted);
    Summary {
        num_runs: n,
        total_runs,
        mean,
        std_dev,
        min,
        max,
        median: percentile_sorted(sorted, 0.5),
        p05: percentile_sorted(sorted, 0.05),
        p95: percentile_sorted(sorted, 0.95),
        ci95_lower,
        ci95_upper,
        rsd_pct,
        stable,
        outliers_mild,
        outliers_severe,
        bootstrap,
    }
}

/// Whether a row whose RSD is `rsd_pct` counts as stable (its RSD below `threshold_pct`);
/// `None` when the RSD is not finite (a zero mean, fewer than two runs).
pub(crate) fn stable_verdict(rsd_pct: f64, threshold_pct: f64) -> Option<bool> {
    rsd_pct.is_finite().then_some(rsd_pct < threshold_pct)
}

/// Counts (mild, severe) outliers of sorted values by binary search on Tukey's fences.
fn tukey_outliers(sorted: &[f64]) -> (usize, usize) {
    let q1 = percentile_sorted(sorted, 0.25);
    let q3 = percentile_sorted(sorted, 0.75);
    let iqr = q3 - q1;
    if !iqr.is_finite() {
        return (0, 0);
    }
    let (inner_lo, inner_hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let (outer_lo, outer_hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    // Number of values strictly below a bound / at most a bound.
    let below = |b: f64| sorted.partition_point(|&x| x < b);
    let at_most = |b: f64| sorted.partition_point(|&x| x <= b);
    let n = sorted.len();
    let severe = below(outer_lo) + (n - at_most(outer_hi));
    let beyond_inner = below(inner_lo) + (n - at_most(inner_hi));
    (beyond_inner.saturating_sub(severe), severe)
}

/// SplitMix64 (Steele, Lea & Flood 2014; the seeding generator of xoshiro): a 64-bit state
/// advanced by the golden-ratio constant and passed through a bijective mixer. Small,
/// fast, statistically sound for resampling, and reproducible across platforms.
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 uniformly distributed bits.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index in `0..n` (`n > 0`) by Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, negligible for any sample count.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Percentile bootstrap (2.5 % and 97.5 % quantiles of the resampled statistics) of the mean and
/// the median of sorted values. Each resample draws `n` indices with replacement into a count
/// per sorted position, so the median is found by walking the counts (no sort per resample),
/// and the result depends only on the multiset of values and the seed.
fn bootstrap_ci(sorted: &[f64], opts: &BootstrapOptions) -> BootstrapCi {
    let n = sorted.len();
    let nan = BootstrapCi {
        mean_lower: f64::NAN,
        mean_upper: f64::NAN,
        median_lower: f64::NAN,
        median_upper: f64::NAN,
    };
    if n == 0 || opts.resamples == 0 {
        return nan;
    }
    let mut rng = SplitMix64::new(opts.seed);
    let mut counts = vec![0u32; n];
    let mut means = Vec::with_capacity(opts.resamples);
    let mut medians = Vec::with_capacity(opts.resamples);
    // Ranks (0-based) of the median in a sorted resample of size n.
    let (r1, r2) = ((n - 1) / 2, n / 2);
    for _ in 0..opts.resamples {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n {
            counts[rng.below(n)] += 1;
        }
        let mut sum = 0.0;
        let (mut m1, mut m2) = (f64::NAN, f64::NAN);
        let mut seen = 0usize;
        for (&x, &c) in sorted.iter().zip(&counts) {
            if c == 0 {
                continue;
            }
            sum += x * f64::from(c);
            let next = seen + c as usize;
            if seen <= r1 && r1 < next {
                m1 = x;
            }
            if seen <= r2 && r2 < next {
                m2 = x;
            }
            seen = next;
        }
        means.push(sum / n as f64);
        medians.push(if m1 == m2 { m1 } else { 0.5 * (m1 + m2) });
    }
    means.sort_unstable_by(f64::total_cmp);
    medians.sort_unstable_by(f64::total_cmp);
    BootstrapCi {
        mean_lower: percentile_sorted(&means, 0.025),
        mean_upper: percentile_sorted(&means, 0.975),
        median_lower: percentile_sorted(&medians, 0.025),
        median_upper: percentile_sorted(&medians, 0.975),
    }
}

/// Aggregates raw samples into the processed table: one [`ProcessedRow`] per series of `raw`,
/// in series order (first appearance), with [`summarize`]'s statistics over the series' runs.
///
/// Samples are grouped by [`Sample::series`](crate::model::Sample); their order in
/// `raw.samples` does not matter. Each row gets the series' benchmark, annotation, metric,
/// configuration, unit and device, and the kernel name of the sample with the lowest run index.
/// Every column of `raw.extras` is aggregated per series: when its non-missing values (NaN
/// numbers count as missing) are all numbers and there is at least one, four columns `X_Avg`,
/// `X_Std` (ddof = 1), `X_Min`, `X_Max`, unless the column holds one number throughout the whole
/// table and is not a measured run condition ([`crate::columns::CONDITION_COLUMNS`]): an info
/// column such as `CudaVersion` or `DeviceOrdinal` is then, as text is, one column
/// `X` holding the non-missing value of the lowest run index ([`ExtraValue::Missing`] when there is none), as nsight-python's
/// collector aggregation does. `normalized` and `normalization_value` are `None`, `geomean` is
/// NaN (filled in by the transforms), `missing_baselines` is empty. Every row's bootstrap, when
/// asked for, uses the same seed.
///
/// Cost: two passes over the samples (a counting sort by series into one contiguous buffer of
/// the non-NaN values, 8 bytes per sample), one in-place sort per series, and per-series
/// statistics from the sorted slice; nothing is allocated per sample. Samples whose series,
/// configuration, device or kernel index is out of range are skipped or get empty metadata
/// rather than panicking.
pub fn aggregate(raw: &RawResults, opts: &AggregateOptions) -> ProcessedResults {
    let ns = raw.series.len();
    // Pass 1: per series, non-NaN and NaN counts and the kernel of the lowest run.
    let mut offsets = vec![0usize; ns + 1];
    let mut nan_runs = vec![0usize; ns];
    let mut first: Vec<Option<(u32, u32)>> = vec![None; ns];
    for s in &raw.samples {
        let i = s.series as usize;
        if i >= ns {
            continue;
        }
        if s.value.is_nan() {
            nan_runs[i] += 1;
        } else {
            offsets[i + 1] += 1;
        }
        match first[i] {
            Some((run, _)) if run <= s.run => {}
            _ => first[i] = Some((s.run, s.kernel)),
        }
    }
    for i in 0..ns {
        offsets[i + 1] += offsets[i];
    }
    // Pass 2: scatter the non-NaN values into one buffer, series after series.
    let mut values = vec![0.0f64; offsets[ns]];
    let mut cursor = offsets[..ns].to_vec();
    for s in &raw.samples {
        let i = s.series as usize;
        if i < ns && !s.value.is_nan() {
            values[cursor[i]] = s.value;
            cursor[i] += 1;
        }
    }
    drop(cursor);

    let mut extras = if raw.extras.is_empty() {
        Vec::new()
    } else {
        aggregate_extras(raw)
    };

    let mut rows = Vec::with_capacity(ns);
    // Series usually share their run count: compute the t factor once per count.
    let mut t_cache: (usize, f64) = (0, f64::NAN);
    for (i, series) in raw.series.iter().enumerate() {
        let group = &mut values[offsets[i]..offsets[i + 1]];
        group.sort_unstable_by(f64::total_cmp);
        if t_cache.0 != group.len() {
            t_cache = (group.len(), t975(group.len()));
        }
        let summary = summarize_with_t(group, group.len() + nan_runs[i], &opts.stats, t_cache.1);
        let kernel = first[i]
            .and_then(|(_, k)| raw.kernel_names.get(k as usize))
            .cloned()
            .unwrap_or_default();
        rows.push(ProcessedRow {
            benchmark: series.key.benchmark.clone(),
            annotation: series.key.annotation.clone(),
            metric: series.key.metric.clone(),
            config: raw
                .configs
                .get(series.key.config as usize)
                .cloned()
                .unwrap_or_else(Config::new),
            summary,
            kernel,
            device: raw
                .devices
                .get(series.device as usize)
                .cloned()
                .unwrap_or_else(DeviceInfo::default),
            unit: series.unit.clone(),
            extras: extras.get_mut(i).map(std::mem::take).unwrap_or_default(),
            normalized: None,
            normalization_value: None,
            geomean: f64::NAN,
        });
    }
    ProcessedResults {
        param_names: raw.param_names(),
        rows,
        missing_baselines: Vec::new(),
    }
}

/// Per-series accumulator of one extra column.
#[derive(Clone, Default)]
struct ExtraAcc {
    numbers: usize,
    texts: usize,
    sum: f64,
    min: f64,
    max: f64,
    sq_dev: f64,
    /// (run, sample index) of the non-missing value with the lowest run.
    first: Option<(u32, usize)>,
}

/// Aggregated extra columns, one list of `(name, value)` per series.
fn aggregate_extras(raw: &RawResults) -> Vec<Vec<(String, ExtraValue)>> {
    let ns = raw.series.len();
    let mut out: Vec<Vec<(String, ExtraValue)>> = vec![Vec::new(); ns];
    let mut accs = vec![ExtraAcc::default(); ns];
    for col in &raw.extras {
        // One number throughout the table: an info column, kept as a single column. Run
        // conditions are measurements and keep their four columns even when they did not vary.
        let constant = !crate::columns::CONDITION_COLUMNS.contains(&col.name.as_str()) && {
            let mut numbers = col.values.iter().filter_map(|v| match v {
                ExtraValue::Number(x) if !x.is_nan() => Some(Some(*x)),
                ExtraValue::Text(_) => Some(None),
                _ => None,
            });
            match numbers.next() {
                Some(Some(first)) => numbers.all(|x| x == Some(first)),
                _ => false,
            }
        };
        accs.iter_mut().for_each(|a| {
            *a = ExtraAcc {
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                ..ExtraAcc::default()
            }
        });
        let present = |v: Option<&ExtraValue>| match v {
            Some(ExtraValue::Number(x)) if !x.is_nan() => true,
            Some(ExtraValue::Text(_)) => true,
            _ => false,
        };
        for (j, s) in raw.samples.iter().enumerate() {
            let Some(a) = accs.get_mut(s.series as usize) else {
                continue;
            };
            let v = col.values.get(j);
            if !present(v) {
                continue;
            }
            match v {
                Some(ExtraValue::Number(x)) => {
                    a.numbers += 1;
                    a.sum += x;
                    a.min = a.min.min(*x);
                    a.max = a.max.max(*x);
                }
                _ => a.texts += 1,
            }
            match a.first {
                Some((run, _)) if run <= s.run => {}
                _ => a.first = Some((s.run, j)),
            }
        }
        // Second pass for the standard deviation (two-pass, like pandas).
        for (j, s) in raw.samples.iter().enumerate() {
            let Some(a) = accs.get_mut(s.series as usize) else {
                continue;
            };
            if let Some(ExtraValue::Number(x)) = col.values.get(j) {
                if !x.is_nan() && a.texts == 0 {
                    let d = x - a.sum / a.numbers as f64;
                    a.sq_dev += d * d;
                }
            }
        }
        for (a, row) in accs.iter().zip(out.iter_mut()) {
            let name = &col.name;
            if a.numbers > 0 && a.texts == 0 && !constant {
                let n = a.numbers as f64;
                let std = if a.numbers > 1 {
                    (a.sq_dev / (n - 1.0)).sqrt()
                } else {
                    f64::NAN
                };
                row.push((format!("{name}_Avg"), ExtraValue::Number(a.sum / n)));
                row.push((format!("{name}_Std"), ExtraValue::Number(std)));
                row.push((format!("{name}_Min"), ExtraValue::Number(a.min)));
                row.push((format!("{name}_Max"), ExtraValue::Number(a.max)));
            } else {
                let v = a
                    .first
                    .and_then(|(_, j)| col.values.get(j))
                    .cloned()
                    .unwrap_or_default();
                row.push((name.clone(), v));
            }
        }
        if col.name == THROTTLED_COLUMN {
            push_throttled_runs(raw, col, &mut out);
        }
    }
    out
}

pub use crate::columns::{THROTTLED_COLUMN, THROTTLED_RUNS_COLUMN};

/// Adds `ThrottledRuns` to every series: how many of its runs have a `Throttled` value of 1
/// (or `true`), NaN when no run of the series has a known value.
fn push_throttled_runs(raw: &RawResults, col: &crate::model::ExtraColumn, out: &mut [Vec<(String, ExtraValue)>]) {
    let mut counts: Vec<Option<u32>> = vec![None; out.len()];
    for (j, s) in raw.samples.iter().enumerate() {
        let Some(slot) = counts.get_mut(s.series as usize) else {
            continue;
        };
        let flag = match col.values.get(j) {
            Some(ExtraValue::Number(x)) if !x.is_nan() => Some(*x > 0.5),
            Some(ExtraValue::Text(t)) => match t.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" => Some(true),
                "0" | "false" | "no" => Some(false),
                _ => None,
            },
            _ => None,
        };
        if let Some(f) = flag {
            *slot.get_or_insert(0) += u32::from(f);
        }
    }
    for (row, c) in out.iter_mut().zip(counts) {
        row.push((
            THROTTLED_RUNS_COLUMN.to_string(),
            ExtraValue::Number(c.map(f64::from).unwrap_or(f64::NAN)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sided_p_inverts_the_quantile_down_to_tiny_p() {
        for df in [1.5, 3.0, 10.0, 58.0, 1e3] {
            for p in [0.5, 0.05, 1e-6, 1e-20, 1e-60] {
                let t = -t_quantile(p / 2.0, df);
                let back = t_two_sided_p(t, df);
                assert!((back / p - 1.0).abs() < 1e-6, "df {df} p {p}: {back}");
            }
        }
        assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
        assert_eq!(t_two_sided_p(f64::INFINITY, 5.0), 0.0);
        assert!(t_two_sided_p(1.0, 0.0).is_nan());
        assert!((t_two_sided_p(1.959963984540054, f64::INFINITY) - 0.05).abs() < 1e-9);
    }

    #[test]
    fn splitmix_is_reproducible() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        // Reference value of SplitMix64 seeded with 0 (first output).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut r = SplitMix64::new(7);
        assert!((0..1000).all(|_| r.below(3) < 3));
    }

    #[test]
    fn tukey_counts() {
        // Q1 = 2, Q3 = 4, IQR = 2: inner fences [-1, 7], outer [-4, 10].
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(tukey_outliers(&v), (0, 0));
        let v = [-5.0, 2.0, 2.0, 3.0, 4.0, 4.0, 8.0];
        let s = summarize(&v, &StatsOptions::default());
        assert_eq!((s.outliers_mild, s.outliers_severe), (1, 1));
    }
}
