//! `kprof store add` and `kprof store export`, and the baseline of `kprof compare --against`
//! read from a results store (see `docs/store.md`).
//!
//! The store is `--db PATH`, else the `KPROF_STORE` environment variable, else `kprof.db` in
//! the current directory.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use kprof_store::history::{Pooled, TQuantiles};
use kprof_store::timefmt::{format_utc, parse_since};
use kprof_store::{
    git_info, now_unix_ms, parse_tag, GitInfo, NewRun, ResultStore, RunInfo, RunMeta, SeriesPoint, SqliteStore,
};

use crate::compare_cmd::{lower_is_better, DirectionArg, Key, Moments, Side};
use crate::results_input;

/// The environment variable naming the default results store.
pub const STORE_ENV: &str = "KPROF_STORE";

/// `--db`, else `$KPROF_STORE`, else `kprof.db`.
pub fn db_path(db: Option<&Path>) -> PathBuf {
    match db {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os(STORE_ENV) {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => PathBuf::from("kprof.db"),
        },
    }
}

/// Arguments of `kprof store`.
#[derive(clap::Args, Debug)]
pub struct StoreArgs {
    /// What to do with the store.
    #[command(subcommand)]
    pub action: StoreAction,
}

/// `kprof store` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum StoreAction {
    /// Store result files (raw CSV, processed CSV, kprof JSON; kprof's or nsight-python's) as runs.
    Add(AddArgs),
    /// Write every stored series (or with --raw every sample) as one table for pandas/polars.
    Export(ExportArgs),
}

/// Arguments of `kprof store add`.
#[derive(clap::Args, Debug)]
pub struct AddArgs {
    /// Result files; each becomes one run.
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// The results store (default: $KPROF_STORE, else kprof.db).
    #[arg(long, value_name = "DB")]
    pub db: Option<PathBuf>,
    /// A tag `key=value` for the runs (repeatable).
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    /// The commit the results belong to (default: `git rev-parse HEAD` of the current directory,
    /// with its branch and dirty state; none outside a git repository).
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The run's name (default: the benchmark names in the file, else the file's stem).
    #[arg(long)]
    pub name: Option<String>,
}

/// Export formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet (not built in; fails with how to convert the CSV).
    Parquet,
}

/// Arguments of `kprof store export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The stored runs and series to read.
    #[command(flatten)]
    pub select: StoreSelection,
    /// Output format (Parquet is not built into this kprof; see docs/store.md).
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// Where to write (default: standard output).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// One row per raw sample instead of one per (run, series).
    #[arg(long)]
    pub raw: bool,
}

/// Which store, runs and series a command reads: `--db`, `--since`, `--series`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StoreSelection {
    /// The results store (default: $KPROF_STORE, else kprof.db).
    #[arg(long, value_name = "DB")]
    pub db: Option<PathBuf>,
    /// Only series whose `benchmark / annotation / config / metric` contains every
    /// comma-separated term (case-insensitive), e.g. `matmul,n=4096`.
    #[arg(long, value_name = "FILTER")]
    pub series: Option<String>,
    /// Only runs stored since a date (2026-12-01), a UTC time (2026-12-01T08:30) or an age (7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
}

/// What [`StoreSelection::read`] read.
pub struct Selected {
    /// The store's path.
    pub db: PathBuf,
    /// The store, open.
    pub store: SqliteStore,
    /// The runs stored since `--since`.
    pub runs: Vec<RunInfo>,
    /// Their points of the series `--series` selects.
    pub points: Vec<SeriesPoint>,
}

impl StoreSelection {
    /// Opens the store (it must exist) and reads the selected runs and their points.
    pub fn read(&self) -> Result<Selected> {
        let db = db_path(self.db.as_deref());
        let store = SqliteStore::open_existing(&db)?;
        let since = since_ms(self.since.as_deref())?;
        let runs = store.runs(since)?;
        let mut points = store.points(since)?;
        points.retain(|p| self.wants(&p.series.label()));
        Ok(Selected {
            db,
            store,
            runs,
            points,
        })
    }

    /// Whether `--series` selects the series labelled `label`.
    pub fn wants(&self, label: &str) -> bool {
        series_matches(label, self.series.as_deref())
    }
}

/// Runs `kprof store ...`.
pub fn run(args: &StoreArgs) -> Result<()> {
    match &args.action {
        StoreAction::Add(a) => add(a),
        StoreAction::Export(e) => export(e),
    }
}

fn validate_commit(sha: &str) -> Result<String> {
    let s = sha.trim();
    if s.len() < 4 || s.len() > 64 || !s.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("--commit {sha:?} is not a commit hash (4 to 64 hexadecimal digits, as `git rev-parse HEAD` prints)");
    }
    Ok(s.to_ascii_lowercase())
}

fn add(args: &AddArgs) -> Result<()> {
    let db = db_path(args.db.as_deref());
    let mut tags = Vec::new();
    for t in &args.tags {
        tags.push(parse_tag(t)?);
    }
    let git = match &args.commit {
        Some(sha) => Some(GitInfo {
            commit: validate_commit(sha)?,
            branch: None,
            dirty: None,
        }),
        None => git_info(Path::new(".")),
    };
    // Read every file before storing anything, so a bad file stores nothing.
    let mut inputs = Vec::new();
    for path in &args.results {
        inputs.push((path, results_input::load(path)?));
    }
    let mut store = SqliteStore::open(&db)?;
    for (path, input) in inputs {
        let mut meta = RunMeta::new(args.name.clone().unwrap_or_else(|| run_name(path, &input)));
        meta.source = Some(path.display().to_string());
        meta.git = git.clone();
        meta.environment = input.environment.clone();
        meta.tags = tags.clone();
        if let Some(host) = measured_host(&input) {
            meta.host = Some(host);
        }
        let id = store
            .insert_run(&NewRun {
                meta: &meta,
                raw: input.raw.as_ref(),
                processed: Some(&input.processed),
            })
            .with_context(|| format!("cannot store {}", path.display()))?;
        let samples = input.raw.as_ref().map_or(0, |r| r.samples.len());
        eprintln!(
            "stored {} as run {id} in {} ({} series, {samples} raw samples{})",
            path.display(),
            db.display(),
            input.processed.rows.len(),
            match &meta.git {
                Some(g) => format!(", commit {}", short(&g.commit)),
                None => String::new(),
            }
        );
    }
    Ok(())
}

/// Stores one run's results in the store `db` (created when missing), as `kprof run --store`
/// does: the git state of the current directory, the host of the samples (else this machine's),
/// `name`, and `source` (the raw CSV written). Returns the run id.
pub fn store_results(
    db: &Path,
    raw: &kprof_core::RawResults,
    processed: &kprof_core::ProcessedResults,
    name: &str,
    source: &Path,
) -> Result<i64> {
    let mut meta = RunMeta::new(name).detect_git(Path::new("."));
    meta.source = Some(source.display().to_string());
    if let Some(host) = raw.devices.iter().map(|d| d.host.clone()).find(|h| !h.is_empty()) {
        meta.host = Some(host);
    }
    let mut store = SqliteStore::open(db)?;
    let id = store.insert_run(&NewRun {
        meta: &meta,
        raw: Some(raw),
        processed: Some(processed),
    })?;
    Ok(id)
}

/// The benchmark names of a result (in order of appearance), else the file's stem.
fn run_name(path: &Path, input: &results_input::ResultInput) -> String {
    let mut names: Vec<&str> = Vec::new();
    let all: Box<dyn Iterator<Item = &str>> = match &input.raw {
        Some(raw) => Box::new(raw.series.iter().map(|s| s.key.benchmark.as_str())),
        None => Box::new(input.processed.rows.iter().map(|r| r.benchmark.as_str())),
    };
    for n in all {
        if !n.is_empty() && !names.contains(&n) {
            names.push(n);
        }
    }
    if names.is_empty() {
        kprof_core::io::benchmark_from_path(path)
    } else {
        names.join(",")
    }
}

/// The host recorded in the results (nsight-python's `Host` column), when there is one.
fn measured_host(input: &results_input::ResultInput) -> Option<String> {
    let from_raw = input
        .raw
        .as_ref()
        .and_then(|r| r.devices.iter().map(|d| d.host.clone()).find(|h| !h.is_empty()));
    from_raw.or_else(|| {
        input
            .processed
            .rows
            .iter()
            .map(|r| r.device.host.clone())
            .find(|h| !h.is_empty())
    })
}

pub(crate) fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// Whether a series label matches every comma-separated term of `filter` (case-insensitive).
pub fn series_matches(label: &str, filter: Option<&str>) -> bool {
    let Some(filter) = filter else { return true };
    let label = label.to_lowercase();
    filter
        .split(',')
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .all(|t| label.contains(&t))
}

/// `--since` as milliseconds since the Unix epoch.
pub fn since_ms(since: Option<&str>) -> Result<Option<i64>> {
    since
        .map(|s| parse_since(s, now_unix_ms()))
        .transpose()
        .map_err(Into::into)
}

fn tags_text(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

fn export(args: &ExportArgs) -> Result<()> {
    if args.format == ExportFormat::Parquet {
        bail!(
            "Parquet export is not built into this kprof (the parquet/arrow crates are too heavy for kprof's build); export CSV and convert it: python -c \"import pandas as pd; pd.read_csv('runs.csv').to_parquet('runs.parquet')\""
        );
    }
    let Selected {
        store, runs, points, ..
    } = args.select.read()?;
    let by_id: HashMap<i64, &RunInfo> = runs.iter().map(|r| (r.id, r)).collect();
    let mut buf: Vec<u8> = Vec::new();
    {
        let mut w = csv::Writer::from_writer(&mut buf);
        let run_cols = |r: &RunInfo| -> Vec<String> {
            vec![
                r.id.to_string(),
                format_utc(r.created_unix_ms),
                r.name.clone(),
                r.git.as_ref().map(|g| g.commit.clone()).unwrap_or_default(),
                r.git.as_ref().and_then(|g| g.branch.clone()).unwrap_or_default(),
                r.git
                    .as_ref()
                    .and_then(|g| g.dirty)
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
                r.host.clone().unwrap_or_default(),
                tags_text(&r.tags),
            ]
        };
        let head = ["RunId", "StoredAt", "Name", "Commit", "Branch", "Dirty", "Host", "Tags"];
        let key_head = ["Benchmark", "Annotation", "Config", "Metric", "Unit"];
        let key_cols = |p: &SeriesPoint| {
            vec![
                p.series.benchmark.clone(),
                p.series.annotation.clone(),
                p.series.config.clone(),
                p.series.metric.clone(),
                p.unit.clone(),
            ]
        };
        if args.raw {
            let mut header: Vec<&str> = head.iter().chain(&key_head).copied().collect();
            header.extend(["Run", "Value"]);
            w.write_record(&header)?;
            for r in &runs {
                let Some(raw) = store.raw(r.id)? else { continue };
                for s in &raw.samples {
                    let series = raw.series_of(s);
                    let p = SeriesPoint {
                        run_id: r.id,
                        series: kprof_store::SeriesId {
                            benchmark: series.key.benchmark.clone(),
                            annotation: series.key.annotation.clone(),
                            config: raw.config_of(series).to_string(),
                            metric: series.key.metric.clone(),
                        },
                        unit: series.unit.clone(),
                        n: 0,
                        mean: f64::NAN,
                        std_dev: f64::NAN,
                        median: f64::NAN,
                    };
                    if !args.select.wants(&p.series.label()) {
                        continue;
                    }
                    let mut rec = run_cols(r);
                    rec.extend(key_cols(&p));
                    rec.extend([s.run.to_string(), num(s.value)]);
                    w.write_record(&rec)?;
                }
            }
        } else {
            let mut header: Vec<&str> = head.iter().chain(&key_head).copied().collect();
            header.extend(["N", "Mean", "StdDev", "Median", "CI95Lower", "CI95Upper"]);
            w.write_record(&header)?;
            let quantiles = TQuantiles::new(0.05);
            for p in &points {
                let Some(r) = by_id.get(&p.run_id) else { continue };
                let pooled = Pooled {
                    n: p.n,
                    mean: p.mean,
                    std_dev: p.std_dev,
                };
                let half = pooled.ci_half_width_with(&quantiles);
                let mut rec = run_cols(r);
                rec.extend(key_cols(p));
                rec.extend([
                    p.n.to_string(),
                    num(p.mean),
                    num(p.std_dev),
                    num(p.median),
                    num(p.mean - half),
                    num(p.mean + half),
                ]);
                w.write_record(&rec)?;
            }
        }
        w.flush()?;
    }
    match &args.output {
        None => std::io::stdout().write_all(&buf)?,
        Some(out) => {
            write_file(out, &buf)?;
            eprintln!("wrote {}", out.display());
        }
    }
    Ok(())
}

/// Writes `bytes` to a temporary file next to `path`, then renames it over `path`.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// The baseline of `kprof compare --against WHICH RESULT`, read from the store `db`, and a
/// description of it. `new` is the side being checked (its keys pick the series for `best`).
///
/// - `last`: the most recent run sharing a series with `new`;
/// - `best`: per series, the stored run with the best mean (direction as in `kprof compare`);
/// - a commit (4+ hex digits, a prefix of a stored commit): all its runs, pooled;
/// - `key=value`: the runs with that tag, pooled; any other word: the runs having a tag with
///   that value, pooled.
pub fn against_side(db: &Path, which: &str, new: &Side, direction: DirectionArg) -> Result<(Side, String)> {
    let store = SqliteStore::open_existing(db)?;
    let runs = store.runs(None)?;
    let points = store.points(None)?;
    let key_of = |p: &SeriesPoint| Key {
        benchmark: p.series.benchmark.clone(),
        annotation: p.series.annotation.clone(),
        config: p.series.config.clone(),
        metric: p.series.metric.clone(),
    };
    let moments = |p: &SeriesPoint| Moments {
        n: p.n,
        mean: p.mean,
        sd: p.std_dev,
    };
    let new_keys: HashMap<&Key, &String> = new.iter().map(|(k, _, u)| (k, u)).collect();
    let which_t = which.trim();
    match which_t {
        "last" => {
            let last = points
                .iter()
                .filter(|p| new_keys.contains_key(&key_of(p)))
                .map(|p| p.run_id)
                .max();
            let Some(id) = last else {
                bail!(
                    "no run in {} has a series of the results being compared (benchmark, annotation, config, metric)",
                    db.display()
                );
            };
            let side = points
                .iter()
                .filter(|p| p.run_id == id)
                .map(|p| (key_of(p), moments(p), p.unit.clone()))
                .collect();
            Ok((side, describe_runs(db, &runs, &[id])))
        }
        "best" => {
            let mut best: HashMap<Key, (Moments, String, i64)> = HashMap::new();
            for p in &points {
                let key = key_of(p);
                if !new_keys.contains_key(&key) || p.n == 0 || !p.mean.is_finite() {
                    continue;
                }
                let lib = lower_is_better(&key.metric, &p.unit, direction);
                let better = |old: &Moments| if lib { p.mean < old.mean } else { p.mean > old.mean };
                match best.get(&key) {
                    Some((old, _, _)) if !better(old) => {}
                    _ => {
                        best.insert(key, (moments(p), p.unit.clone(), p.run_id));
                    }
                }
            }
            if best.is_empty() {
                bail!(
                    "no run in {} has a series of the results being compared (benchmark, annotation, config, metric)",
                    db.display()
                );
            }
            let mut ids: Vec<i64> = best.values().map(|(_, _, id)| *id).collect();
            ids.sort_unstable();
            ids.dedup();
            let side = new
                .iter()
                .filter_map(|(k, _, _)| best.get(k).map(|(m, u, _)| (k.clone(), *m, u.clone())))
                .collect();
            Ok((
                side,
                format!(
                    "the best stored value of each series ({})",
                    describe_runs(db, &runs, &ids)
                ),
            ))
        }
        _ => {
            let ids = select_runs(&runs, which_t);
            if ids.is_empty() {
                bail!("{}", no_match_message(db, &runs, which_t));
            }
            let mut order: Vec<Key> = Vec::new();
            let mut groups: HashMap<Key, (Vec<Pooled>, String)> = HashMap::new();
            for p in points.iter().filter(|p| ids.contains(&p.run_id)) {
                let key = key_of(p);
                let entry = groups.entry(key.clone()).or_insert_with(|| {
                    order.push(key);
                    (Vec::new(), p.unit.clone())
                });
                entry.0.push(Pooled {
                    n: p.n,
                    mean: p.mean,
                    std_dev: p.std_dev,
                });
            }
            let side = order
                .into_iter()
                .map(|k| {
                    let (parts, unit) = &groups[&k];
                    let p = Pooled::pool(parts);
                    let m = Moments {
                        n: p.n,
                        mean: p.mean,
                        sd: p.std_dev,
                    };
                    (k, m, unit.clone())
                })
                .collect();
            Ok((side, describe_runs(db, &runs, &ids)))
        }
    }
}

/// The runs a commit prefix or a tag selects (see [`against_side`]).
fn select_runs(runs: &[RunInfo], which: &str) -> Vec<i64> {
    let lower = which.to_ascii_lowercase();
    if which.len() >= 4 && which.chars().all(|c| c.is_ascii_hexdigit()) {
        let by_commit: Vec<i64> = runs
            .iter()
            .filter(|r| r.git.as_ref().is_some_and(|g| g.commit.starts_with(&lower)))
            .map(|r| r.id)
            .collect();
        if !by_commit.is_empty() {
            return by_commit;
        }
    }
    match which.split_once('=') {
        Some((k, v)) => runs
            .iter()
            .filter(|r| r.tags.iter().any(|(tk, tv)| tk == k.trim() && tv == v.trim()))
            .map(|r| r.id)
            .collect(),
        None => runs
            .iter()
            .filter(|r| r.tags.iter().any(|(_, tv)| tv == which))
            .map(|r| r.id)
            .collect(),
    }
}

/// The short commit of each run that has one, in the runs' order.
fn short_commits<'a>(runs: impl IntoIterator<Item = &'a RunInfo>) -> Vec<&'a str> {
    runs.into_iter()
        .filter_map(|r| r.git.as_ref())
        .map(|g| short(&g.commit))
        .collect()
}

fn no_match_message(db: &Path, runs: &[RunInfo], which: &str) -> String {
    let mut commits = short_commits(runs);
    commits.dedup();
    let mut tags: Vec<String> = runs
        .iter()
        .flat_map(|r| r.tags.iter().map(|(k, v)| format!("{k}={v}")))
        .collect();
    tags.sort();
    tags.dedup();
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "(none)".to_string()
        } else if v.len() > 10 {
            format!("{}, ... ({} in all)", v[v.len() - 10..].join(", "), v.len())
        } else {
            v.join(", ")
        }
    };
    format!(
        "--against {which:?} matches no run in {}: give last, best, a stored commit (4+ hex digits of it) or a tag (key=value or a value). Stored commits: {}; tags: {}",
        db.display(),
        list(commits.iter().map(|c| c.to_string()).collect()),
        list(tags)
    )
}

fn describe_runs(db: &Path, runs: &[RunInfo], ids: &[i64]) -> String {
    let chosen: Vec<&RunInfo> = runs.iter().filter(|r| ids.contains(&r.id)).collect();
    let mut commits = short_commits(chosen.iter().copied());
    commits.sort_unstable();
    commits.dedup();
    let runs_text = if chosen.len() == 1 {
        format!("run {}", chosen[0].id)
    } else {
        format!("{} runs", chosen.len())
    };
    let commit_text = match commits.len() {
        0 => String::new(),
        1 => format!(", commit {}", commits[0]),
        n => format!(", {n} commits"),
    };
    format!("{runs_text}{commit_text} in {}", db.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_results_keeps_the_samples_and_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let csv =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv");
        let input = results_input::load(&csv).unwrap();
        let raw = input.raw.unwrap();
        let db = dir.path().join("run.db");
        let id = store_results(&db, &raw, &input.processed, "sgemm-run", &csv).unwrap();
        let store = SqliteStore::open_existing(&db).unwrap();
        let runs = store.runs(None).unwrap();
        assert_eq!((runs[0].id, runs[0].name.as_str()), (id, "sgemm-run"));
        assert_eq!(runs[0].host.as_deref(), Some("vm"));
        assert_eq!(store.raw(id).unwrap().unwrap().samples.len(), raw.samples.len());
    }

    #[test]
    fn db_path_and_filters() {
        assert_eq!(db_path(Some(Path::new("x.db"))), PathBuf::from("x.db"));
        assert!(series_matches("sgemm / matmul / n=4096 / t", Some("MATMUL, n=4096")));
        assert!(!series_matches("sgemm / matmul / n=512 / t", Some("n=4096")));
        assert!(series_matches("anything", None));
        assert!(validate_commit("ABCDEF1").is_ok());
        assert!(validate_commit("xyz").is_err());
    }
}
