//! kprof's results store: every run's raw samples, processed rows, environment fingerprint, git
//! state, host, name and tags, kept across commits so that trends and regressions can be found.
//! Storage is behind the [`ResultStore`] trait; [`SqliteStore`] is the embedded backend (SQLite,
//! WAL mode, one transaction per run, a versioned schema with migrations), and [`save_raw`] stores
//! one run. The history (per-commit values, intervals, change points) is computed by [`history`].
//!
//! The schema, the safety guarantees and another backend: `docs/store.md`.

mod codec;
mod error;
pub mod history;
mod meta;
pub mod schema;
mod sqlite;
pub mod timefmt;

use std::path::Path;

use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::{ProcessedResults, RawResults};

pub use error::{Result, StoreError};
pub use meta::{git_info, hostname, now_unix_ms, parse_tag, GitInfo, RunMeta};
pub use sqlite::SqliteStore;

/// The id of a stored run (increasing in insertion order).
pub type RunId = i64;

/// One run to store: its metadata, and its raw samples and/or processed table (at least one).
#[derive(Clone, Copy, Debug)]
pub struct NewRun<'a> {
    /// Name, host, git state, tags, time, fingerprint.
    pub meta: &'a RunMeta,
    /// The raw samples, when known.
    pub raw: Option<&'a RawResults>,
    /// The processed table, when known.
    pub processed: Option<&'a ProcessedResults>,
}

/// A stored run's metadata, as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// The run's id.
    pub id: RunId,
    /// When the run was stored, milliseconds since the Unix epoch (UTC).
    pub created_unix_ms: i64,
    /// The command or benchmark name.
    pub name: String,
    /// The file the run was read from, when it came from a file.
    pub source: Option<String>,
    /// The host the results were measured on.
    pub host: Option<String>,
    /// The git state of the working directory, when it was a git repository.
    pub git: Option<GitInfo>,
    /// User tags, sorted by key.
    pub tags: Vec<(String, String)>,
    /// The kprof version that stored the run (`None` for runs stored by a schema-1 kprof).
    pub kprof_version: Option<String>,
    /// The environment fingerprint (JSON), when one was stored.
    pub environment: Option<serde_json::Value>,
}

/// Identity of a series across runs: (benchmark, annotation, configuration, metric), with the
/// configuration as its display text (`n=4096, dtype=fp16`), as `kprof compare` matches them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesId {
    /// Benchmark name.
    pub benchmark: String,
    /// Region (annotation) name.
    pub annotation: String,
    /// Configuration, as `name=value` pairs joined with `, `.
    pub config: String,
    /// Metric name.
    pub metric: String,
}

impl SeriesId {
    /// `benchmark / annotation / config / metric` (the config left out when empty), the text
    /// that `--series` filters match.
    pub fn label(&self) -> String {
        let mut parts = vec![self.benchmark.as_str(), self.annotation.as_str()];
        if !self.config.is_empty() {
            parts.push(self.config.as_str());
        }
        parts.push(self.metric.as_str());
        parts.join(" / ")
    }
}

/// One series of one stored run, summarised: from the raw samples when the run has them
/// (exactly as `kprof compare` would summarise the file), else from the processed row.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoint {
    /// The run.
    pub run_id: RunId,
    /// The series.
    pub series: SeriesId,
    /// Unit of the values (`ns`, ...).
    pub unit: String,
    /// Number of non-NaN samples.
    pub n: usize,
    /// Mean, in `unit` (NaN when undefined).
    pub mean: f64,
    /// Sample standard deviation (ddof 1), in `unit` (NaN when undefined).
    pub std_dev: f64,
    /// Median, in `unit` (NaN when undefined).
    pub median: f64,
}

/// Storage of runs. Callers (the CLI, the Python binding, [`save_raw`]) use only this trait.
pub trait ResultStore {
    /// Stores one run in one transaction: either all of it is stored or none of it.
    fn insert_run(&mut self, run: &NewRun<'_>) -> Result<RunId>;
    /// Every run's metadata, in id order, optionally only those stored at or after a time
    /// (milliseconds since the Unix epoch).
    fn runs(&self, since_unix_ms: Option<i64>) -> Result<Vec<RunInfo>>;
    /// Every series of every run (optionally only runs stored at or after a time), ordered by run id.
    fn points(&self, since_unix_ms: Option<i64>) -> Result<Vec<SeriesPoint>>;
    /// The raw samples of a run as they were stored (`None` when it has none or does not exist).
    fn raw(&self, run: RunId) -> Result<Option<RawResults>>;
    /// Human-readable location (the database path).
    fn location(&self) -> String;
}

/// Opens (or creates) the store at `path` and stores `raw` with `meta`: the raw samples and the
/// processed table computed with kprof's default statistics options. Returns the run id.
///
/// Errors: the store cannot be opened (see [`SqliteStore::open`]), the samples cannot be
/// processed, or the insert fails (then nothing of the run is stored).
///
/// ```no_run
/// # fn main() -> Result<(), kprof_store::StoreError> {
/// # let raw = kprof_core::RawResults::new();
/// use kprof_store::{save_raw, RunMeta};
/// let meta = RunMeta::new("sgemm").detect_git(std::path::Path::new(".")).with_tag("gpu", "h200");
/// let run_id = save_raw(std::path::Path::new("kprof.db"), &raw, meta)?;
/// # let _ = run_id; Ok(()) }
/// ```
pub fn save_raw(path: &Path, raw: &RawResults, meta: RunMeta) -> Result<RunId> {
    let processed = process(raw, &ProcessOptions::default())
        .map_err(|e| StoreError::Invalid(format!("cannot summarize the raw samples to store them: {e}")))?;
    let mut store = SqliteStore::open(path)?;
    store.insert_run(&NewRun {
        meta: &meta,
        raw: Some(raw),
        processed: Some(&processed),
    })
}
