//! Transforms between raw samples and the processed table; nothing here panics on any input, and
//! undefined statistics are NaN.
//! - [`apply_derived`]: derived metrics per (benchmark, annotation, config, run) on raw samples,
//!   before aggregation, appended as new samples ([`derive_samples`] computes them alone);
//! - [`normalize_against`]: processed rows as ratios against a baseline annotation, with the
//!   ratio's own statistics (Fieller's interval, delta-method spread);
//! - [`combine_kernels`] / [`record_combined`]: the kernels one region launched in one run folded
//!   into one value, the per-kernel breakdown kept;
//! - [`geomean`] / [`apply_geomean`]: the `Geomean` column across configurations.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::model::{
    Config, KernelSample, MissingBaseline, ModelError, ProcessedResults, ProcessedRow, RawResults, Sample,
    SampleRecord, SeriesKey, Summary,
};

/// Errors of the transforms and of [`crate::policy::StoppingPolicy::validate`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TransformError {
    /// A derived metric has the name of a metric that is already in the results.
    #[error(
        "derived metric {metric:?} (benchmark {benchmark:?}, annotation {annotation:?}) has the \
         name of a metric already in the results; give the derived metric another name"
    )]
    DerivedNameCollision {
        /// The offending metric name.
        metric: String,
        /// Benchmark of the run group that produced it.
        benchmark: String,
        /// Annotation of the run group that produced it.
        annotation: String,
    },
    /// The derivation function returned the same metric twice for one run.
    #[error(
        "derived metric {metric:?} was returned twice for benchmark {benchmark:?}, annotation \
         {annotation:?}, config {config:?}, run {run}; each derived metric must appear once per run"
    )]
    DuplicateDerived {
        /// The repeated metric name.
        metric: String,
        /// Benchmark of the run group.
        benchmark: String,
        /// Annotation of the run group.
        annotation: String,
        /// Configuration as `name=value` pairs.
        config: String,
        /// Run index.
        run: u32,
    },
    /// The derivation function failed for one run group.
    #[error(
        "deriving metrics failed for benchmark {benchmark:?}, annotation {annotation:?}, config \
         {config:?}, run {run}: {message}"
    )]
    Derive {
        /// Benchmark of the run group.
        benchmark: String,
        /// Annotation of the run group.
        annotation: String,
        /// Configuration as `name=value` pairs.
        config: String,
        /// Run index.
        run: u32,
        /// The message the derivation function returned.
        message: String,
    },
    /// The baseline annotation occurs in no benchmark.
    #[error(
        "baseline annotation {baseline:?} does not exist in any benchmark; annotations are: {}",
        list_names(.available)
    )]
    UnknownBaseline {
        /// The requested baseline.
        baseline: String,
        /// The annotations that exist, in first-appearance order.
        available: Vec<String>,
    },
    /// A processed row was already normalised.
    #[error(
        "row (benchmark {benchmark:?}, annotation {annotation:?}, metric {metric:?}) is already \
         normalised against {previous:?}; normalise the unnormalised table instead"
    )]
    AlreadyNormalized {
        /// Benchmark of the row.
        benchmark: String,
        /// Annotation of the row.
        annotation: String,
        /// Metric of the row.
        metric: String,
        /// The baseline it was normalised against before.
        previous: String,
    },
    /// A processed row has no series in the raw results it should come from.
    #[error(
        "processed row (benchmark {benchmark:?}, annotation {annotation:?}, config {config:?}, \
         metric {metric:?}) has no series in the raw results; pass the raw results the table was \
         aggregated from"
    )]
    RowNotInRaw {
        /// Benchmark of the row.
        benchmark: String,
        /// Annotation of the row.
        annotation: String,
        /// Configuration as `name=value` pairs.
        config: String,
        /// Metric of the row.
        metric: String,
    },
    /// A reducer name that is not one of the built-in reducers.
    #[error("unknown reducer {name:?}; valid reducers are: sum, mean, max, min, first, last")]
    UnknownReducer {
        /// The name given.
        name: String,
    },
    /// A region recorded no kernels in a run, so there is nothing to combine.
    #[error(
        "no kernels to combine for benchmark {benchmark:?}, annotation {annotation:?}, run {run}; \
         the region launched no kernel"
    )]
    NoKernels {
        /// Benchmark name.
        benchmark: String,
        /// Region name.
        annotation: String,
        /// Run index.
        run: u32,
    },
    /// A stopping policy whose minimum exceeds its maximum.
    #[error("stopping policy: min_runs ({min_runs}) is greater than max_runs ({max_runs})")]
    PolicyMinAboveMax {
        /// The minimum number of runs.
        min_runs: u32,
        /// The maximum number of runs.
        max_runs: u32,
    },
    /// A stopping policy that allows no run.
    #[error("stopping policy: max_runs must be at least 1, got 0")]
    PolicyNoRuns,
    /// A stopping-policy target or budget that is not a positive finite number.
    #[error("stopping policy: {name} must be a positive finite number, got {value}")]
    PolicyNonPositive {
        /// Field name, e.g. `target_rel_ci_half_width`.
        name: &'static str,
        /// The value given (for the time budget, in seconds).
        value: f64,
    },
    /// An error of the measurement model (unit mismatch).
    #[error(transparent)]
    Model(#[from] ModelError),
}

fn list_names(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
    }
}

// ---------------------------------------------------------------------------------------------
// Small statistics helpers (private; the full statistics live in `stats`).
// ---------------------------------------------------------------------------------------------

/// Arithmetic mean; NaN for no values.
fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (ddof = 1); NaN for fewer than two values.
fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return f64::NAN;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (NaN when `df` is not positive).
pub(crate) fn t975(df: f64) -> f64 {
    crate::stats::t_quantile(0.975, df)
}

/// Non-NaN values of each series, indexed by series, plus the total sample count per series.
fn values_by_series(raw: &RawResults) -> (Vec<Vec<f64>>, Vec<usize>) {
    let mut values = vec![Vec::new(); raw.series.len()];
    let mut totals = vec![0usize; raw.series.len()];
    for s in &raw.samples {
        let i = s.series as usize;
        if let Some(t) = totals.get_mut(i) {
            *t += 1;
        }
        if !s.value.is_nan() {
            if let Some(v) = values.get_mut(i) {
                v.push(s.value);
            }
        }
    }
    (values, totals)
}

// ---------------------------------------------------------------------------------------------
// (a) Derived metrics
// ---------------------------------------------------------------------------------------------

/// The measured values of one run of one region, handed to a derivation function.
#[derive(Clone, Debug)]
pub struct RunMetrics<'a> {
    /// Benchmark name.
    pub benchmark: &'a str,
    /// Region ("annotation") name.
    pub annotation: &'a str,
    /// The configuration (read parameters such as `n` from it).
    pub config: &'a Config,
    /// Run index.
    pub run: u32,
    /// `(metric, value, unit)` of every sample of this run, in sample order. A failed run has
    /// NaN values.
    pub values: Vec<(&'a str, f64, &'a str)>,
    /// Index in `raw.samples` of this run's first sample (the sample a derived value takes its
    /// kernel and device from; for a table of one sample per row, its row).
    pub sample: usize,
}

impl RunMetrics<'_> {
    /// The value of `metric` in this run (the first one, should it occur twice).
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.values.iter().find(|(m, _, _)| *m == metric).map(|(_, v, _)| *v)
    }

    /// The unit of `metric` in this run.
    pub fn unit(&self, metric: &str) -> Option<&str> {
        self.values.iter().find(|(m, _, _)| *m == metric).map(|(_, _, u)| *u)
    }
}

/// One value a derivation function computes for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedValue {
    /// Name of the derived metric (must not be the name of a metric already in the results).
    pub metric: String,
    /// The value; NaN when it cannot be computed (e.g. the run failed).
    pub value: f64,
    /// Unit of the derived metric, e.g. `TFLOP/s`.
    pub unit: String,
}

impl DerivedValue {
    /// A derived value (convenience constructor).
    pub fn new(metric: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Self {
            metric: metric.into(),
            value,
            unit: unit.into(),
        }
    }
}

/// One derived value of [`derive_samples`], before it is appended.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedSample {
    /// Index in `raw.samples` of the first sample of the run it was derived from
    /// ([`RunMetrics::sample`]): the new sample has that sample's benchmark, annotation,
    /// configuration, run, device and kernel.
    pub sample: usize,
    /// The derived metric, value and unit.
    pub derived: DerivedValue,
}

/// Computes derived metrics per run, before aggregation, and appends them as raw samples
/// ([`derive_samples`], then one new sample each).
///
/// Each returned value becomes a new sample of series (benchmark, annotation, config, derived
/// metric) with the device of the group's first series and the kernel of the group's first
/// sample. Returns the number of samples added; on error `raw` is unchanged.
pub fn apply_derived<F>(raw: &mut RawResults, f: F) -> Result<usize, TransformError>
where
    F: FnMut(&RunMetrics) -> Result<Vec<DerivedValue>, String>,
{
    let derived = derive_samples(raw, f)?;
    let added = derived.len();
    for DerivedSample { sample, derived: d } in derived {
        let first = raw.samples[sample];
        let series = &raw.series[first.series as usize];
        let key = SeriesKey {
            metric: d.metric,
            ..series.key.clone()
        };
        let device = series.device;
        // Cannot fail: the derived names are new and their units were checked.
        let series = raw.intern_series(key, &d.unit, device)?;
        raw.push_sample(
            Sample {
                series,
                run: first.run,
                value: d.value,
                kernel: first.kernel,
            },
            &[],
        );
    }
    Ok(added)
}

/// Computes derived metrics per run, before aggregation, without changing `raw`: the values
/// [`apply_derived`] appends, in that order (the Python package appends them to its own table).
///
/// Samples are grouped by (benchmark, annotation, config, run); `f` is called once per group,
/// in the order in which groups first appear in `raw.samples`, also for failed runs (their
/// values are NaN, so `f` will typically return NaN).
///
/// Errors, all detected before anything is returned:
/// - [`TransformError::DerivedNameCollision`]: a derived name equals a metric that is already
///   in `raw` (this also catches applying the same derivation twice);
/// - [`TransformError::DuplicateDerived`]: `f` returned one name twice for one run;
/// - [`TransformError::Derive`]: `f` returned `Err(message)`;
/// - [`TransformError::Model`]: one derived metric got two different units.
pub fn derive_samples<F>(raw: &RawResults, mut f: F) -> Result<Vec<DerivedSample>, TransformError>
where
    F: FnMut(&RunMetrics) -> Result<Vec<DerivedValue>, String>,
{
    struct Group {
        first_sample: usize,
        samples: Vec<usize>,
    }
    let existing: HashSet<&str> = raw.series.iter().map(|s| s.key.metric.as_str()).collect();
    let mut order: Vec<Group> = Vec::new();
    let mut index: HashMap<(&str, &str, u32, u32), usize> = HashMap::new();
    for (i, s) in raw.samples.iter().enumerate() {
        let Some(series) = raw.series.get(s.series as usize) else {
            continue;
        };
        let k = (
            series.key.benchmark.as_str(),
            series.key.annotation.as_str(),
            series.key.config,
            s.run,
        );
        let g = *index.entry(k).or_insert_with(|| {
            order.push(Group {
                first_sample: i,
                samples: Vec::new(),
            });
            order.len() - 1
        });
        order[g].samples.push(i);
    }

    let empty = Config::new();
    let mut out: Vec<DerivedSample> = Vec::new();
    let mut units: HashMap<SeriesKey, String> = HashMap::new();
    for g in &order {
        let sample = &raw.samples[g.first_sample];
        let first = &raw.series[sample.series as usize];
        let config = raw.configs.get(first.key.config as usize).unwrap_or(&empty);
        let values = g
            .samples
            .iter()
            .map(|&i| {
                let s = &raw.samples[i];
                let series = &raw.series[s.series as usize];
                (series.key.metric.as_str(), s.value, series.unit.as_str())
            })
            .collect();
        let rm = RunMetrics {
            benchmark: &first.key.benchmark,
            annotation: &first.key.annotation,
            config,
            run: sample.run,
            values,
            sample: g.first_sample,
        };
        let derived = f(&rm).map_err(|message| TransformError::Derive {
            benchmark: first.key.benchmark.clone(),
            annotation: first.key.annotation.clone(),
            config: config.to_string(),
            run: sample.run,
            message,
        })?;
        let mut seen: HashSet<&str> = HashSet::new();
        for d in &derived {
            if existing.contains(d.metric.as_str()) {
                return Err(TransformError::DerivedNameCollision {
                    metric: d.metric.clone(),
                    benchmark: first.key.benchmark.clone(),
                    annotation: first.key.annotation.clone(),
                });
            }
            if !seen.insert(d.metric.as_str()) {
                return Err(TransformError::DuplicateDerived {
                    metric: d.metric.clone(),
                    benchmark: first.key.benchmark.clone(),
                    annotation: first.key.annotation.clone(),
                    config: config.to_string(),
                    run: sample.run,
                });
            }
            let key = SeriesKey {
                metric: d.metric.clone(),
                ..first.key.clone()
            };
            match units.get(&key) {
                Some(u) if *u != d.unit => {
                    return Err(ModelError::UnitMismatch {
                        annotation: key.annotation,
                        metric: key.metric,
                        first: u.clone(),
                        second: d.unit.clone(),
                    }
                    .into());
                }
                Some(_) => {}
                None => {
                    units.insert(key, d.unit.clone());
                }
            }
        }
        out.extend(derived.into_iter().map(|d| DerivedSample {
            sample: g.first_sample,
            derived: d,
        }));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// (b) Normalisation
// ---------------------------------------------------------------------------------------------

/// Options of [`normalize_against`].
#[derive(Clone, Debug, PartialEq)]
pub struct NormalizeOptions {
    /// A ratio row is `stable` when its relative standard deviation, in percent, is below this.
    pub stable_rsd_pct: f64,
}

impl Default for NormalizeOptions {
    /// `stable_rsd_pct = 2.0`, the threshold used for unnormalised rows.
    fn default() -> Self {
        Self { stable_rsd_pct: 2.0 }
    }
}

/// Fieller's 95% confidence interval for the ratio `mean(c) / mean(b)` of the means of two
/// independent samples, with Welch–Satterthwaite degrees of freedom.
///
/// With `a = mean(c)`, `b = mean(b)`, `R = a / b`, squared standard errors
/// `v_a = s_c² / n_c` and `v_b = s_b² / n_b`:
///
/// ```text
/// df = (v_a + R² v_b)² / (v_a² / (n_c - 1) + R⁴ v_b² / (n_b - 1))   (Welch–Satterthwaite for a - R b)
/// t  = t_{0.975, df}
/// g  = t² v_b / b²
/// bounds = ( R ± (t / |b|) · sqrt(v_a + R² v_b - g v_a) ) / (1 - g)
/// ```
///
/// When `g >= 1` the denominator's mean is not significantly different from zero and the
/// confidence set is unbounded (the whole line or the complement of an interval): both bounds
/// are NaN. Both are NaN too when either sample has fewer than two values. When both samples
/// have zero spread the interval is `[R, R]`.
pub fn fieller_ci95(current: &[f64], baseline: &[f64]) -> (f64, f64) {
    let (nc, nb) = (current.len(), baseline.len());
    if nc < 2 || nb < 2 {
        return (f64::NAN, f64::NAN);
    }
    let (a, b) = (mean(current), mean(baseline));
    let r = a / b;
    let va = std_dev(current).powi(2) / nc as f64;
    let vb = std_dev(baseline).powi(2) / nb as f64;
    if !r.is_finite() || !va.is_finite() || !vb.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let var = va + r * r * vb;
    if var == 0.0 {
        return (r, r);
    }
    let df = var * var / (va * va / (nc - 1) as f64 + r.powi(4) * vb * vb / (nb - 1) as f64);
    let t = t975(df);
    let g = t * t * vb / (b * b);
    if g.is_nan() || g >= 1.0 {
        return (f64::NAN, f64::NAN);
    }
    let half = t / b.abs() * (var - g * va).max(0.0).sqrt();
    ((r - half) / (1.0 - g), (r + half) / (1.0 - g))
}

/// Normalises processed rows against the baseline annotation `baseline`, in place.
///
/// For every row whose benchmark has the baseline annotation (in `raw`), the baseline series
/// with the same (benchmark, config, metric) is looked up in `raw`, and the row becomes a ratio
/// row (`unit = "x"`, `normalized = Some(baseline)`, `normalization_value = Some(mean of the
/// baseline in its original unit)`), with statistics of the ratio computed from the non-NaN raw
/// values of both series (`c` = current, `b` = baseline):
///
/// - `mean` (`AvgValue`) = `R = mean(c) / mean(b)`, nsight-python's definition;
/// - `std_dev` = delta-method standard deviation on the per-run ratio scale,
///   `|R| · sqrt((s_c / mean(c))² + (s_b / mean(b))²)`, computed in the equivalent form
///   `sqrt((s_c / mean(b))² + (R · s_b / mean(b))²)`, which stays defined when `mean(c) = 0`;
/// - `ci95_lower` / `ci95_upper` = Fieller's interval, see [`fieller_ci95`] (NaN bounds when
///   the baseline mean is not significantly different from zero, i.e. the interval is unbounded);
/// - `min`, `max`, `median`, `p05`, `p95` = the current series' order statistics divided by
///   `mean(b)` (swapped appropriately when `mean(b) < 0`);
/// - `rsd_pct = std_dev / |R| · 100`, `stable = rsd_pct < opts.stable_rsd_pct` (`None` when the
///   RSD is undefined);
/// - `num_runs` / `total_runs` stay the current series' counts; outlier counts are kept (dividing
///   by a constant does not change Tukey's classification); `bootstrap` is cleared, since a
///   bootstrap of the current series alone would ignore the baseline's uncertainty.
///
/// Baseline rows themselves become exactly `1.0` (NaN when the baseline mean is zero or
/// undefined), with the baseline's *own* relative spread: `std_dev = s_b / |mean(b)|`, the
/// t-interval of its mean and its order statistics divided by `mean(b)`. The baseline is the
/// reference, so its ratio to itself has no ratio uncertainty; applying the two-sample formulas
/// to a series and itself would be wrong (the two are perfectly correlated).
///
/// Rows whose configuration has no baseline series for their metric are removed from `rows`
/// and each is listed in `processed.missing_baselines`. Rows of benchmarks without the baseline
/// annotation are left unchanged. Geomeans are not touched: call [`apply_geomean`] afterwards.
///
/// Errors (nothing is changed on error): [`TransformError::UnknownBaseline`] when no benchmark
/// has the annotation `baseline`, [`TransformError::AlreadyNormalized`] for a row normalised
/// before, [`TransformError::RowNotInRaw`] for a row whose series is not in `raw`.
pub fn normalize_against(
    raw: &RawResults,
    processed: &mut ProcessedResults,
    baseline: &str,
    opts: &NormalizeOptions,
) -> Result<(), TransformError> {
    let benchmarks_with_baseline: HashSet<&str> = raw
        .series
        .iter()
        .filter(|s| s.key.annotation == baseline)
        .map(|s| s.key.benchmark.as_str())
        .collect();
    if benchmarks_with_baseline.is_empty() {
        let mut available: Vec<String> = Vec::new();
        for s in &raw.series {
            if !available.contains(&s.key.annotation) {
                available.push(s.key.annotation.clone());
            }
        }
        return Err(TransformError::UnknownBaseline {
            baseline: baseline.to_string(),
            available,
        });
    }

    let series_index: HashMap<&SeriesKey, usize> = raw.series.iter().enumerate().map(|(i, s)| (&s.key, i)).collect();
    let config_index: HashMap<&Config, u32> = raw.configs.iter().enumerate().map(|(i, c)| (c, i as u32)).collect();
    let (values, totals) = values_by_series(raw);

    let mut new_rows: Vec<ProcessedRow> = Vec::with_capacity(processed.rows.len());
    let mut missing: Vec<MissingBaseline> = Vec::new();
    for row in &processed.rows {
        if !benchmarks_with_baseline.contains(row.benchmark.as_str()) {
            new_rows.push(row.clone());
            continue;
        }
        if let Some(previous) = &row.normalized {
            return Err(TransformError::AlreadyNormalized {
                benchmark: row.benchmark.clone(),
                annotation: row.annotation.clone(),
                metric: row.metric.clone(),
                previous: previous.clone(),
            });
        }
        let not_in_raw = || TransformError::RowNotInRaw {
            benchmark: row.benchmark.clone(),
            annotation: row.annotation.clone(),
            config: row.config.to_string(),
            metric: row.metric.clone(),
        };
        let config = *config_index.get(&row.config).ok_or_else(not_in_raw)?;
        let key = SeriesKey {
            benchmark: row.benchmark.clone(),
            annotation: row.annotation.clone(),
            config,
            metric: row.metric.clone(),
        };
        let current = *series_index.get(&key).ok_or_else(not_in_raw)?;
        let base_key = SeriesKey {
            annotation: baseline.to_string(),
            ..key
        };
        let Some(&base) = series_index.get(&base_key) else {
            missing.push(MissingBaseline {
                benchmark: row.benchmark.clone(),
                annotation: row.annotation.clone(),
                metric: row.metric.clone(),
                config: row.config.clone(),
            });
            continue;
        };
        let c = &values[current];
        let b = &values[base];
        let summary = if current == base {
            baseline_summary(&row.summary, b, totals[base], opts)
        } else {
            ratio_summary(&row.summary, c, b, totals[current], opts)
        };
        new_rows.push(ProcessedRow {
            summary,
            unit: "x".to_string(),
            normalized: Some(baseline.to_string()),
            normalization_value: Some(mean(b)),
            ..row.clone()
        });
    }
    processed.rows = new_rows;
    processed.missing_baselines.extend(missing);
    Ok(())
}

/// Order statistics of `xs` divided by `divisor`: (min, max, median, p05, p95).
fn scaled_order_stats(xs: &[f64], divisor: f64) -> (f64, f64, f64, f64, f64) {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| crate::stats::percentile_sorted(&sorted, p) / divisor;
    let (lo, hi, p05, p95) = (q(0.0), q(1.0), q(0.05), q(0.95));
    let med = q(0.5);
    if divisor < 0.0 {
        (hi, lo, med, p95, p05)
    } else {
        (lo, hi, med, p05, p95)
    }
}

fn rsd_and_stable(sd: f64, m: f64, opts: &NormalizeOptions) -> (f64, Option<bool>) {
    let rsd = sd / m.abs() * 100.0;
    (rsd, crate::stats::stable_verdict(rsd, opts.stable_rsd_pct))
}

fn ratio_summary(old: &Summary, c: &[f64], b: &[f64], total: usize, opts: &NormalizeOptions) -> Summary {
    let (mc, mb) = (mean(c), mean(b));
    let r = mc / mb;
    let (sc, sb) = (std_dev(c), std_dev(b));
    let sd = ((sc / mb).powi(2) + (r * sb / mb).powi(2)).sqrt();
    normalised_summary(old, c, mb, total, (r, sd), fieller_ci95(c, b), opts)
}

fn baseline_summary(old: &Summary, b: &[f64], total: usize, opts: &NormalizeOptions) -> Summary {
    let mb = mean(b);
    let one = if mb.is_finite() && mb != 0.0 { 1.0 } else { f64::NAN };
    let sd = std_dev(b) / mb.abs();
    let half = t975((b.len() as f64) - 1.0) * sd / (b.len() as f64).sqrt();
    normalised_summary(old, b, mb, total, (one, sd), (one - half, one + half), opts)
}

/// The statistics of a normalised row: `values` (of `total` runs) divided by `scale`, with the
/// given mean, standard deviation and CI; the outliers are `old`'s (dividing does not change
/// them).
fn normalised_summary(
    old: &Summary,
    values: &[f64],
    scale: f64,
    total: usize,
    (mean, std_dev): (f64, f64),
    (ci95_lower, ci95_upper): (f64, f64),
    opts: &NormalizeOptions,
) -> Summary {
    let (min, max, median, p05, p95) = scaled_order_stats(values, scale);
    let (rsd_pct, stable) = rsd_and_stable(std_dev, mean, opts);
    Summary {
        num_runs: values.len(),
        total_runs: total,
        mean,
        std_dev,
        min,
        max,
        median,
        p05,
        p95,
        ci95_lower,
        ci95_upper,
        rsd_pct,
        stable,
        outliers_mild: old.outliers_mild,
        outliers_severe: old.outliers_severe,
        bootstrap: None,
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Combining kernels
// ---------------------------------------------------------------------------------------------

/// How the values of the kernels one region launched in one run are combined into one value.
#[derive(Clone)]
pub enum Reducer {
    /// Sum of the values (total time of the region's kernels).
    Sum,
    /// Arithmetic mean (sum / count).
    Mean,
    /// Largest value.
    Max,
    /// Smallest value.
    Min,
    /// Value of the first kernel launched.
    First,
    /// Value of the last kernel launched.
    Last,
    /// A left fold with a user function, like Python's `functools.reduce(f, values)`:
    /// `f(f(f(v0, v1), v2), ...)`; a single value is returned as is.
    Custom(Arc<dyn Fn(f64, f64) -> f64 + Send + Sync>),
}

impl fmt::Debug for Reducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reducer::Sum => f.write_str("Sum"),
            Reducer::Mean => f.write_str("Mean"),
            Reducer::Max => f.write_str("Max"),
            Reducer::Min => f.write_str("Min"),
            Reducer::First => f.write_str("First"),
            Reducer::Last => f.write_str("Last"),
            Reducer::Custom(_) => f.write_str("Custom(<fn>)"),
        }
    }
}

impl FromStr for Reducer {
    type Err = TransformError;

    /// Parses `sum`, `mean`, `max`, `min`, `first` or `last` (ASCII case and surrounding
    /// whitespace ignored); anything else is [`TransformError::UnknownReducer`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sum" => Ok(Reducer::Sum),
            "mean" => Ok(Reducer::Mean),
            "max" => Ok(Reducer::Max),
            "min" => Ok(Reducer::Min),
            "first" => Ok(Reducer::First),
            "last" => Ok(Reducer::Last),
            _ => Err(TransformError::UnknownReducer { name: s.to_string() }),
        }
    }
}

/// Combines the `(kernel name, value)` pairs of one region in one run, in launch order.
///
/// Returns the kernel names joined with `|` and the reduced value, or `None` for an empty
/// slice. NaN propagates for every reducer, `Custom` included: if any kernel's value is NaN
/// the combined value is NaN (a region with a failed kernel is a failed run).
pub fn combine_kernels(kernels: &[(&str, f64)], reducer: &Reducer) -> Option<(String, f64)> {
    let (&(_, first), rest) = kernels.split_first()?;
    let names = kernels.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("|");
    if kernels.iter().any(|(_, v)| v.is_nan()) {
        return Some((names, f64::NAN));
    }
    let values = kernels.iter().map(|(_, v)| *v);
    let value = match reducer {
        Reducer::Sum => values.sum(),
        Reducer::Mean => values.sum::<f64>() / kernels.len() as f64,
        Reducer::Max => values.fold(f64::NEG_INFINITY, f64::max),
        Reducer::Min => values.fold(f64::INFINITY, f64::min),
        Reducer::First => first,
        Reducer::Last => kernels.last().map_or(first, |(_, v)| *v),
        Reducer::Custom(f) => rest.iter().fold(first, |acc, (_, v)| f(acc, *v)),
    };
    Some((names, value))
}

/// Records one region's run whose kernels were combined with `reducer`.
///
/// Pushes one sample built from `rec` with its `value` and `kernel` replaced by the combined
/// value and the joined kernel names; when there is more than one kernel, also pushes each
/// kernel's own value to `raw.kernel_breakdown` (`position` = launch order, 0-based), so the
/// breakdown stays available. Errors: [`TransformError::NoKernels`] for an empty slice (nothing
/// is pushed), [`TransformError::Model`] when the series already has another unit.
pub fn record_combined(
    raw: &mut RawResults,
    rec: &SampleRecord<'_>,
    kernels: &[(&str, f64)],
    reducer: &Reducer,
) -> Result<(), TransformError> {
    let Some((names, value)) = combine_kernels(kernels, reducer) else {
        return Err(TransformError::NoKernels {
            benchmark: rec.benchmark.to_string(),
            annotation: rec.annotation.to_string(),
            run: rec.run,
        });
    };
    raw.push(&SampleRecord {
        value,
        kernel: &names,
        ..rec.clone()
    })?;
    if kernels.len() > 1 {
        let Some(series) = raw.samples.last().map(|s| s.series) else {
            return Ok(());
        };
        for (position, (kernel, value)) in kernels.iter().enumerate() {
            raw.kernel_breakdown.push(KernelSample {
                series,
                run: rec.run,
                position: position as u32,
                kernel: kernel.to_string(),
                value: *value,
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// (d) Geomean
// ---------------------------------------------------------------------------------------------

/// Geometric mean `exp(mean(ln x))` over the non-NaN values.
///
/// Any negative value gives NaN (checked first); otherwise any zero gives 0; no non-NaN value
/// gives NaN. A single value is returned exactly; an infinite value gives infinity.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum_ln = 0.0;
    let mut n = 0usize;
    let mut zero = false;
    let mut only = f64::NAN;
    for x in values {
        if x.is_nan() {
            continue;
        }
        if x < 0.0 {
            return f64::NAN;
        }
        if x == 0.0 {
            zero = true;
        } else {
            sum_ln += x.ln();
        }
        n += 1;
        only = x;
    }
    if n == 0 {
        f64::NAN
    } else if n == 1 {
        // Exactly the value, without the rounding of exp(ln x).
        only
    } else if zero {
        0.0
    } else {
        (sum_ln / n as f64).exp()
    }
}

/// Sets `row.geomean` of every row to the geometric mean of `summary.mean` over all rows with
/// the same (benchmark, annotation, metric), i.e. across configurations. Call it after
/// [`normalize_against`], as nsight-python does, so that geomeans of ratio rows are of ratios.
pub fn apply_geomean(processed: &mut ProcessedResults) {
    let mut groups: HashMap<(&str, &str, &str), Vec<f64>> = HashMap::new();
    for row in &processed.rows {
        groups
            .entry((&row.benchmark, &row.annotation, &row.metric))
            .or_default()
            .push(row.summary.mean);
    }
    let gm: HashMap<(String, String, String), f64> = groups
        .into_iter()
        .map(|((b, a, m), v)| ((b.to_string(), a.to_string(), m.to_string()), geomean(v)))
        .collect();
    for row in &mut processed.rows {
        let key = (row.benchmark.clone(), row.annotation.clone(), row.metric.clone());
        row.geomean = gm.get(&key).copied().unwrap_or(f64::NAN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t975_matches_scipy_and_handles_edges() {
        // scipy.stats.t.ppf(0.975, df) for df = 1, 4, 9, 30.
        for (df, want) in [
            (1.0, 12.706204736174694),
            (4.0, 2.7764451051977934),
            (9.0, 2.262157162798205),
            (30.0, 2.0422724563012378),
        ] {
            assert!((t975(df) - want).abs() < 1e-9 * want, "df {df}: {}", t975(df));
        }
        // Large df (Cornish-Fisher branch), scipy.stats.t.ppf(0.975, df).
        for (df, want) in [
            (999.0, 1.9623414611334493),
            (1000.0, 1.9623390808264083),
            (1e5, 1.9599877075346095),
            (1e7, 1.959964221767205),
        ] {
            assert!((t975(df) - want).abs() < 1e-11, "df {df}: {}", t975(df));
        }
        assert!((t975(1e300) - 1.959963984540054).abs() < 1e-12);
        assert!(t975(0.0).is_nan());
        assert!(t975(-1.0).is_nan());
        assert!(t975(f64::NAN).is_nan());
    }
}
