//! `kprof compare BASE NEW`: did anything get slower? Series of the two sides are matched on
//! (benchmark, annotation, configuration, metric) and judged by their change, its Welch interval
//! and Welch's t-test against a noise threshold, with a verdict and a direction per series; exit 1
//! on a significant regression. With `--db ... --against last|best|<commit>|<tag>` the baseline
//! comes from a results store (`store_cmd::against_side`).
//!
//! The rule, the verdicts and the exit codes: `docs/ci.md` (How `kprof compare` decides).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use crate::output;
use kprof_core::io::{self, Loaded};

/// Arguments of `kprof compare`.
/// How `kprof compare` and `kprof history` judge a change (Welch's t-test and a noise
/// threshold) and show it.
#[derive(clap::Args, Debug, Clone)]
pub struct ChangeTestArgs {
    /// Noise threshold: smaller changes are `same` (not change points, in `kprof history`)
    /// whatever the test says (`2%` or `2`).
    #[arg(long, default_value = "2%")]
    pub threshold: String,
    /// Significance level of Welch's t-test (and 1 - confidence of the intervals).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Which way is better for every metric (`auto`: from the metric's name and unit).
    #[arg(long, value_enum, default_value = "auto")]
    pub direction: DirectionArg,
    /// `--format table|json|markdown`, `--json`.
    #[command(flatten)]
    pub output: output::FormatArgs,
}

impl ChangeTestArgs {
    /// The noise threshold in percent, once it and `--alpha` are checked.
    pub fn threshold_pct(&self) -> Result<f64> {
        let pct = parse_threshold(&self.threshold)?;
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            bail!("--alpha must be between 0 and 1 (got {})", self.alpha);
        }
        Ok(pct)
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The baseline results (raw CSV, processed CSV or kprof JSON); with `--against`, the new
    /// results (RESULT).
    pub base: PathBuf,
    /// The new results (not with `--against`).
    #[arg(required_unless_present = "against")]
    pub new: Option<PathBuf>,
    /// Take the baseline from a results store: `last`, `best`, a commit or a tag (`key=value`).
    #[arg(long, value_name = "WHICH")]
    pub against: Option<String>,
    /// The results store of `--against` (default: $KPROF_STORE, else kprof.db).
    #[arg(long, value_name = "DB", requires = "against")]
    pub db: Option<PathBuf>,
    /// How a change is judged and shown.
    #[command(flatten)]
    pub test: ChangeTestArgs,
    /// Also write the comparison as CSV here.
    #[arg(long, value_name = "OUT")]
    pub csv: Option<PathBuf>,
    /// For each significant row, what else changed between the sides (kernels, other counters,
    /// SM clock); see `compare_explain`. Printed after the table (on stderr with --json).
    #[arg(long)]
    pub explain: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectionArg {
    Auto,
    LowerIsBetter,
    HigherIsBetter,
}

/// n, mean and standard deviation of one series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moments {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
}

impl Moments {
    pub fn of(values: &[f64]) -> Moments {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let n = v.len();
        let mean = if n == 0 {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / n as f64
        };
        let sd = if n < 2 {
            f64::NAN
        } else {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        };
        Moments { n, mean, sd }
    }
}

/// Identity of a series across files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Key {
    pub benchmark: String,
    pub annotation: String,
    pub config: String,
    pub metric: String,
}

/// One side's series: key → (moments, unit), in first-appearance order.
pub type Side = Vec<(Key, Moments, String)>;

/// Reads the series of a result file.
pub fn load_side(path: &Path) -> Result<Side> {
    let loaded = io::read_any(path)?;
    let (raw, processed) = match loaded {
        Loaded::Raw(r) => (Some(r), None),
        Loaded::Processed(p) => (None, Some(p)),
        Loaded::Json(f) => (f.raw, f.processed),
    };
    let mut out: Side = Vec::new();
    if let Some(raw) = raw.filter(|r| !r.samples.is_empty()) {
        let mut values: HashMap<u32, Vec<f64>> = HashMap::new();
        let mut order: Vec<u32> = Vec::new();
        for s in &raw.samples {
            values
                .entry(s.series)
                .or_insert_with(|| {
                    order.push(s.series);
                    Vec::new()
                })
                .push(s.value);
        }
        for sid in order {
            let series = &raw.series[sid as usize];
            let key = Key {
                benchmark: series.key.benchmark.clone(),
                annotation: series.key.annotation.clone(),
                config: raw.config_of(series).to_string(),
                metric: series.key.metric.clone(),
            };
            out.push((key, Moments::of(&values[&sid]), series.unit.clone()));
        }
    } else if let Some(p) = processed {
        for row in &p.rows {
            let key = Key {
                benchmark: row.benchmark.clone(),
                annotation: row.annotation.clone(),
                config: row.config.to_string(),
                metric: row.metric.clone(),
            };
            let m = Moments {
                n: row.summary.num_runs,
                mean: row.summary.mean,
                sd: row.summary.std_dev,
            };
            out.push((key, m, row.unit.clone()));
        }
    } else {
        bail!("{} holds no results", path.display());
    }
    Ok(out)
}

/// Whether a result file names its benchmark: a kprof JSON file always does, a CSV when its
/// header has a `Benchmark` column. Without one the reader takes the benchmark from the file
/// name, which two files of the same results need not share (nsight-python's
/// `profiled_data-<function>-<n>.csv`).
pub fn names_its_benchmark(path: &Path) -> bool {
    let Ok(text) = std::fs::read(path) else {
        return true;
    };
    let head = &text[..text.len().min(64 * 1024)];
    let head = String::from_utf8_lossy(head);
    let trimmed = head.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        return true;
    }
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(trimmed.as_bytes());
    let mut rec = csv::StringRecord::new();
    matches!(rdr.read_record(&mut rec), Ok(true)) && rec.iter().any(|c| c.trim() == "Benchmark")
}

/// Leaves the benchmark out of every key (series then match by annotation, configuration and
/// metric).
fn forget_benchmarks(side: &mut Side) {
    for (key, _, _) in side.iter_mut() {
        key.benchmark.clear();
    }
}

/// Whether lower values are better for a metric (the `auto` rules: `docs/ci.md`).
pub fn lower_is_better(metric: &str, unit: &str, forced: DirectionArg) -> bool {
    match forced {
        DirectionArg::LowerIsBetter => true,
        DirectionArg::HigherIsBetter => false,
        DirectionArg::Auto => {
            let m = metric.to_ascii_lowercase();
            let u = unit.to_ascii_lowercase();
            let rate = ["per_second", "throughput", "flop/s", "/s"]
                .iter()
                .any(|w| m.contains(w))
                || u.ends_with("/s");
            !rate
        }
    }
}

/// Welch's t-test of `new` against `base`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Welch {
    pub diff: f64,
    pub se: f64,
    pub df: f64,
    pub t: f64,
    pub p: f64,
    /// Half-width of the (1 - alpha) interval of `diff`.
    pub half_width: f64,
}

/// Welch's t-test; `None` when a side has fewer than 2 runs. Zero variance on both sides gives
/// p = 1 for equal means and p = 0 otherwise (a difference with no noise at all).
pub fn welch(base: &Moments, new: &Moments, alpha: f64) -> Option<Welch> {
    if base.n < 2 || new.n < 2 || !base.sd.is_finite() || !new.sd.is_finite() {
        return None;
    }
    let diff = new.mean - base.mean;
    let (v1, v2) = (base.sd.powi(2) / base.n as f64, new.sd.powi(2) / new.n as f64);
    let se = (v1 + v2).sqrt();
    if se == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            diff,
            se,
            df: f64::INFINITY,
            t: if diff == 0.0 { 0.0 } else { f64::INFINITY },
            p,
            half_width: 0.0,
        });
    }
    let df = (v1 + v2).powi(2) / (v1.powi(2) / (base.n as f64 - 1.0) + v2.powi(2) / (new.n as f64 - 1.0));
    let t = diff / se;
    // kprof-core's t functions: the p-value on the lower tail (small p keep their precision) and
    // the one t-quantile implementation the confidence intervals use.
    let p = kprof_core::stats::t_two_sided_p(t, df);
    let q = kprof_core::stats::t_quantile(1.0 - alpha / 2.0, df);
    if !(p.is_finite() && q.is_finite()) {
        return None;
    }
    Some(Welch {
        diff,
        se,
        df,
        t,
        p,
        half_width: q * se,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Same,
    Regression,
    Improvement,
    NotSignificant,
    Untested,
    OnlyInBase,
    OnlyInNew,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::NotSignificant => "not-significant",
            Verdict::Untested => "untested",
            Verdict::OnlyInBase => "only-in-base",
            Verdict::OnlyInNew => "only-in-new",
        }
    }
}

/// One compared series.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub key: Key,
    pub unit: String,
    pub base: Option<Moments>,
    pub new: Option<Moments>,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub p_value: f64,
    pub lower_is_better: bool,
    pub verdict: Verdict,
}

/// Options of [`compare`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub threshold_pct: f64,
    pub alpha: f64,
    pub direction: DirectionArg,
}

/// Compares two sides (pure).
pub fn compare(base: &Side, new: &Side, o: &Options) -> Vec<Row> {
    let new_map: HashMap<&Key, (&Moments, &String)> = new.iter().map(|(k, m, u)| (k, (m, u))).collect();
    let base_keys: std::collections::HashSet<&Key> = base.iter().map(|(k, _, _)| k).collect();
    let mut rows = Vec::new();
    for (key, bm, unit) in base {
        let lib = lower_is_better(&key.metric, unit, o.direction);
        let Some((nm, _)) = new_map.get(key) else {
            rows.push(Row {
                key: key.clone(),
                unit: unit.clone(),
                base: Some(*bm),
                new: None,
                change_pct: f64::NAN,
                ci_low_pct: f64::NAN,
                ci_high_pct: f64::NAN,
                p_value: f64::NAN,
                lower_is_better: lib,
                verdict: Verdict::OnlyInBase,
            });
            continue;
        };
        let change = (nm.mean - bm.mean) / bm.mean * 100.0;
        let w = welch(bm, nm, o.alpha);
        let (lo, hi, p) = match &w {
            Some(w) => (
                (w.diff - w.half_width) / bm.mean * 100.0,
                (w.diff + w.half_width) / bm.mean * 100.0,
                w.p,
            ),
            None => (f64::NAN, f64::NAN, f64::NAN),
        };
        let worse = if lib { change > 0.0 } else { change < 0.0 };
        let verdict = if change.is_finite() && change.abs() < o.threshold_pct {
            Verdict::Same
        } else if w.is_none() {
            Verdict::Untested
        } else if p < o.alpha {
            if worse {
                Verdict::Regression
            } else {
                Verdict::Improvement
            }
        } else {
            Verdict::NotSignificant
        };
        rows.push(Row {
            key: key.clone(),
            unit: unit.clone(),
            base: Some(*bm),
            new: Some(**nm),
            change_pct: change,
            ci_low_pct: lo,
            ci_high_pct: hi,
            p_value: p,
            lower_is_better: lib,
            verdict,
        });
    }
    for (key, nm, unit) in new {
        if !base_keys.contains(key) {
            rows.push(Row {
                key: key.clone(),
                unit: unit.clone(),
                base: None,
                new: Some(*nm),
                change_pct: f64::NAN,
                ci_low_pct: f64::NAN,
                ci_high_pct: f64::NAN,
                p_value: f64::NAN,
                lower_is_better: lower_is_better(&key.metric, unit, o.direction),
                verdict: Verdict::OnlyInNew,
            });
        }
    }
    rows
}

/// Parses `2%`, `2` or `0.5 %` as a percentage.
pub fn parse_threshold(s: &str) -> Result<f64> {
    let t = s.trim().trim_end_matches('%').trim();
    let v: f64 = t
        .parse()
        .map_err(|_| anyhow!("--threshold must be a percentage like 2% (got {s:?})"))?;
    if !(v.is_finite() && v >= 0.0) {
        bail!("--threshold must be a non-negative percentage (got {s:?})");
    }
    Ok(v)
}

/// A number for a table: significant digits, `-` when not finite.
pub(crate) fn fmt_num(x: f64) -> String {
    if x.is_finite() {
        kprof_core::display::fmt_sig(x)
    } else {
        "-".into()
    }
}

/// A signed percentage for a table (`+1.23%`), `-` when not finite.
pub(crate) fn fmt_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.2}%")
    } else {
        "-".into()
    }
}

/// The comparison as an aligned table.
pub fn render(rows: &[Row]) -> String {
    let mut table: Vec<Vec<String>> = vec![[
        "Benchmark",
        "Annotation",
        "Config",
        "Metric",
        "Base",
        "New",
        "Change",
        "CI95",
        "p",
        "Verdict",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for r in rows {
        table.push(vec![
            r.key.benchmark.clone(),
            r.key.annotation.clone(),
            r.key.config.clone(),
            r.key.metric.clone(),
            r.base.map(|m| fmt_num(m.mean)).unwrap_or("-".into()),
            r.new.map(|m| fmt_num(m.mean)).unwrap_or("-".into()),
            fmt_pct(r.change_pct),
            if r.ci_low_pct.is_finite() {
                format!("[{}, {}]", fmt_pct(r.ci_low_pct), fmt_pct(r.ci_high_pct))
            } else {
                "-".into()
            },
            if r.p_value.is_finite() {
                format!("{:.3}", r.p_value)
            } else {
                "-".into()
            },
            r.verdict.as_str().to_string(),
        ]);
    }
    // Numbers (Base, New, Change, CI95, p) right-aligned; names left-aligned.
    let right = [false, false, false, false, true, true, true, true, true, false];
    let header = table.remove(0);
    // The compare table has no rule under its header (scripts read its lines after the first).
    let text = kprof_core::display::render_table(&header, &right, &table);
    let mut lines = text.lines();
    let mut out: String = lines.next().map(|h| format!("{h}\n")).unwrap_or_default();
    for line in lines.skip(1) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "Benchmark",
        "Annotation",
        "Config",
        "Metric",
        "Unit",
        "BaseN",
        "BaseMean",
        "BaseStdDev",
        "NewN",
        "NewMean",
        "NewStdDev",
        "ChangePct",
        "CiLowPct",
        "CiHighPct",
        "PValue",
        "LowerIsBetter",
        "Verdict",
    ])?;
    let f = |x: f64| if x.is_finite() { format!("{x}") } else { String::new() };
    for r in rows {
        let (bn, bm, bs) = r
            .base
            .map(|m| (m.n.to_string(), f(m.mean), f(m.sd)))
            .unwrap_or_default();
        let (nn, nm, ns) = r.new.map(|m| (m.n.to_string(), f(m.mean), f(m.sd))).unwrap_or_default();
        w.write_record([
            r.key.benchmark.clone(),
            r.key.annotation.clone(),
            r.key.config.clone(),
            r.key.metric.clone(),
            r.unit.clone(),
            bn,
            bm,
            bs,
            nn,
            nm,
            ns,
            f(r.change_pct),
            f(r.ci_low_pct),
            f(r.ci_high_pct),
            f(r.p_value),
            r.lower_is_better.to_string(),
            r.verdict.as_str().to_string(),
        ])?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot build the CSV: {}", e.error()))?;
    output::write_file(path, &bytes)
}

fn run_inner(args: &CompareArgs) -> Result<i32> {
    let threshold_pct = args.test.threshold_pct()?;
    let (mut base, mut new, base_label, new_label) = match (&args.against, &args.new) {
        (Some(which), None) => {
            let new = load_side(&args.base).with_context(|| format!("cannot read RESULT {}", args.base.display()))?;
            let db = crate::store_cmd::db_path(args.db.as_deref());
            let (base, label) = crate::store_cmd::against_side(&db, which, &new, args.test.direction)?;
            eprintln!("kprof: baseline: {label}");
            (base, new, label, args.base.display().to_string())
        }
        (Some(_), Some(new)) => bail!(
            "with --against give one RESULT file (the baseline comes from the store), not two; drop {} or --against",
            new.display()
        ),
        (None, Some(new_path)) => {
            let base = load_side(&args.base).with_context(|| format!("cannot read BASE {}", args.base.display()))?;
            let new = load_side(new_path).with_context(|| format!("cannot read NEW {}", new_path.display()))?;
            (
                base,
                new,
                args.base.display().to_string(),
                new_path.display().to_string(),
            )
        }
        (None, None) => bail!("give two result files (BASE NEW), or one with --against"),
    };
    // A file without a Benchmark column got its benchmark from its file name: match by
    // annotation, configuration and metric instead.
    let unnamed = |p: &std::path::Path| !names_its_benchmark(p);
    if unnamed(&args.base) || args.new.as_deref().is_some_and(unnamed) {
        forget_benchmarks(&mut base);
        forget_benchmarks(&mut new);
    }
    let rows = compare(
        &base,
        &new,
        &Options {
            threshold_pct,
            alpha: args.test.alpha,
            direction: args.test.direction,
        },
    );
    if !rows.iter().any(|r| r.base.is_some() && r.new.is_some()) {
        bail!("{base_label} and {new_label} have no series in common (benchmark, annotation, config, metric)");
    }
    if let Some(p) = &args.csv {
        write_csv(p, &rows)?;
    }
    let text = match args.test.output.format() {
        output::Format::Json => serde_json::to_string_pretty(&rows)? + "\n",
        output::Format::Markdown => crate::markdown::compare(
            &rows,
            &crate::markdown::CompareContext {
                base: &base_label,
                new: &new_label,
                threshold_pct,
                alpha: args.test.alpha,
            },
        ),
        output::Format::Table => render(&rows),
    };
    output::print(&text)?;
    if args.explain {
        let info = |p: &std::path::Path| crate::compare_explain::SideInfo::load(p).ok();
        let base_info = if args.against.is_some() { None } else { info(&args.base) };
        let new_info = info(args.new.as_deref().unwrap_or(&args.base));
        let text = crate::compare_explain::render(&crate::compare_explain::explain(
            &rows,
            base_info.as_ref(),
            new_info.as_ref(),
            threshold_pct,
        ));
        if args.test.output.format() == output::Format::Json {
            eprint!("{text}");
        } else {
            output::print(&text)?;
        }
    }
    let regressions = rows.iter().filter(|r| r.verdict == Verdict::Regression).count();
    if regressions > 0 {
        eprintln!(
            "kprof: {regressions} significant regression(s) beyond {threshold_pct}% (alpha {})",
            args.test.alpha
        );
        Ok(1)
    } else {
        Ok(0)
    }
}

/// Runs `kprof compare`; returns the exit code (0 ok, 1 regression, 2 bad input).
pub fn run(args: &CompareArgs) -> i32 {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => output::fail(&e, 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(a: &str) -> Key {
        Key {
            benchmark: "b".into(),
            annotation: a.into(),
            config: String::new(),
            metric: "gpu__time_duration.sum".into(),
        }
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        // base: 10, 12, 14 (mean 12, sd 2); new: 13, 15, 17, 19 (mean 16, sd 2.582)
        let b = Moments::of(&[10.0, 12.0, 14.0]);
        let n = Moments::of(&[13.0, 15.0, 17.0, 19.0]);
        let w = welch(&b, &n, 0.05).unwrap();
        assert!((w.diff - 4.0).abs() < 1e-12);
        let se = (4.0f64 / 3.0 + 6.666_666_666_666_667 / 4.0).sqrt();
        assert!((w.se - se).abs() < 1e-9);
        // scipy.stats.ttest_ind([10,12,14], [13,15,17,19], equal_var=False):
        // statistic=-2.3094010767585034, pvalue=0.06938833728481685, df=4.959183673469389
        assert!((w.t - 2.3094010767585034).abs() < 1e-9, "{w:?}");
        assert!((w.df - 4.959183673469389).abs() < 1e-9, "{w:?}");
        assert!((w.p - 0.06938833728481685).abs() < 1e-6, "{w:?}");
        assert!(welch(&Moments::of(&[1.0]), &n, 0.05).is_none());
    }

    /// Numbers are right-aligned (their last digits line up).
    #[test]
    fn numbers_are_right_aligned() {
        let o = Options {
            threshold_pct: 2.0,
            alpha: 0.05,
            direction: DirectionArg::Auto,
        };
        let m = |mean: f64| Moments { n: 5, mean, sd: 1.0 };
        let base: Side = vec![(key("a"), m(5.0), "ns".into()), (key("bb"), m(16717.0), "ns".into())];
        let new: Side = vec![(key("a"), m(5.5), "ns".into()), (key("bb"), m(16000.0), "ns".into())];
        let out = render(&compare(&base, &new, &o));
        let lines: Vec<&str> = out.lines().collect();
        let end = |line: &str, cell: &str| line.find(cell).map(|i| i + cell.len()).unwrap();
        assert_eq!(end(lines[1], " 5.000"), end(lines[2], "16,717"), "{out}");
        assert_eq!(end(lines[0], "Base"), end(lines[2], "16,717"), "{out}");
    }

    /// A very significant difference keeps a p-value > 0 (`1 - cdf(|t|)`
    /// rounded it to 0), and the interval uses kprof-core's t quantile.
    #[test]
    fn small_p_values_keep_their_precision() {
        let b = Moments {
            n: 30,
            mean: 100.0,
            sd: 1.0,
        };
        let n = Moments {
            n: 30,
            mean: 110.0,
            sd: 1.0,
        };
        let w = welch(&b, &n, 0.05).unwrap();
        assert!(w.p > 0.0 && w.p < 1e-30, "{w:?}");
        let q = kprof_core::stats::t_quantile(0.975, w.df);
        assert!((w.half_width - q * w.se).abs() <= 1e-12 * w.half_width, "{w:?}");
    }

    #[test]
    fn verdicts_threshold_and_direction() {
        let o = Options {
            threshold_pct: 2.0,
            alpha: 0.05,
            direction: DirectionArg::Auto,
        };
        let base: Side = vec![
            (
                key("slower"),
                Moments {
                    n: 10,
                    mean: 100.0,
                    sd: 1.0,
                },
                "ns".into(),
            ),
            (
                key("tiny"),
                Moments {
                    n: 10,
                    mean: 100.0,
                    sd: 0.01,
                },
                "ns".into(),
            ),
            (
                key("noisy"),
                Moments {
                    n: 3,
                    mean: 100.0,
                    sd: 30.0,
                },
                "ns".into(),
            ),
            (
                key("faster"),
                Moments {
                    n: 10,
                    mean: 100.0,
                    sd: 1.0,
                },
                "ns".into(),
            ),
            (
                key("gone"),
                Moments {
                    n: 10,
                    mean: 1.0,
                    sd: 0.1,
                },
                "ns".into(),
            ),
        ];
        let mut new = base.clone();
        new[0].1.mean = 110.0;
        new[1].1.mean = 101.0; // 1% < threshold, though significant
        new[2].1.mean = 130.0;
        new[3].1.mean = 90.0;
        new.remove(4);
        new.push((
            key("added"),
            Moments {
                n: 1,
                mean: 1.0,
                sd: f64::NAN,
            },
            "ns".into(),
        ));
        let rows = compare(&base, &new, &o);
        let v: Vec<Verdict> = rows.iter().map(|r| r.verdict).collect();
        assert_eq!(
            v,
            [
                Verdict::Regression,
                Verdict::Same,
                Verdict::NotSignificant,
                Verdict::Improvement,
                Verdict::OnlyInBase,
                Verdict::OnlyInNew
            ]
        );
        assert!((rows[0].change_pct - 10.0).abs() < 1e-9);
        assert!(rows[0].ci_low_pct < 10.0 && rows[0].ci_high_pct > 10.0);
        // Throughput: higher is better, so +10% is an improvement.
        let mut tb = base[..1].to_vec();
        tb[0].0.metric = "dram__throughput.avg.pct_of_peak_sustained_elapsed".into();
        let mut tn = tb.clone();
        tn[0].1.mean = 110.0;
        assert_eq!(compare(&tb, &tn, &o)[0].verdict, Verdict::Improvement);
        let forced = Options {
            direction: DirectionArg::LowerIsBetter,
            ..o
        };
        assert_eq!(compare(&tb, &tn, &forced)[0].verdict, Verdict::Regression);
    }

    #[test]
    fn directions_and_thresholds_parse() {
        assert!(lower_is_better("gpu__time_duration.sum", "ns", DirectionArg::Auto));
        assert!(lower_is_better("dram__bytes_read.sum", "byte", DirectionArg::Auto));
        assert!(!lower_is_better("bytes_per_second", "", DirectionArg::Auto));
        assert!(!lower_is_better("bw", "GB/s", DirectionArg::Auto));
        assert!(!lower_is_better("TFLOP/s", "", DirectionArg::Auto));
        assert_eq!(parse_threshold("2%").unwrap(), 2.0);
        assert_eq!(parse_threshold(" 0.5 ").unwrap(), 0.5);
        assert!(parse_threshold("abc").is_err());
        assert!(parse_threshold("-1").is_err());
    }
}
