//! Result files, each format with one writer and its reader: raw and processed CSV (nsight-python's
//! columns first, then kprof's: [`write_raw_csv`], [`write_processed_csv`]), kprof's versioned JSON
//! that keeps everything ([`write_results_json`]), Chrome trace-event timelines ([`trace`]), and
//! [`read_any`], which tells the formats apart for `kprof show`. Every writer that takes a path
//! writes through [`atomic::write_output`], so a sweep that dies leaves the previous complete file
//! or the new one, never a truncated one.
//!
//! The rules of the writer and of numbers, NaN and infinities in the files: `docs/offline.md`.

pub mod atomic;
mod csvutil;
mod json;
mod processed_csv;
mod raw_csv;
pub mod trace;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::model::{ModelError, ProcessedResults, RawResults};

pub use crate::columns::KPROF_EXTRA_COLUMNS;
pub use json::{
    read_results_json, write_results_json, write_results_json_to, ResultFile, RESULT_SCHEMA, SCHEMA_VERSION,
};
pub use processed_csv::{read_processed_csv, write_processed_csv, write_processed_csv_to};
pub use raw_csv::{read_raw_csv, read_raw_csv_from, write_raw_csv, write_raw_csv_to};

/// Errors of reading and writing result files. Every message names the file and, where it
/// applies, the line and column, and says how to fix the problem.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file could not be opened (missing, unreadable, or its directory does not exist).
    #[error("cannot open {}: {source}; check the path and its permissions", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Reading an opened file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing (or atomically replacing) a file failed.
    #[error("cannot write {}: {}", path.display(), write_error_text(source))]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A required column is missing from a CSV header.
    #[error("{}", missing_column_message(path, column, found))]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The required column.
        column: String,
        /// The columns the header does have.
        found: Vec<String>,
    },
    /// A cell (or a whole line) could not be parsed.
    #[error("{}:{line}: column {column:?}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number; the header is line 1.
        line: u64,
        /// The column name (empty when the problem concerns the whole line).
        column: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A parameter named in [`ReadOptions::params`] is not a column that can be a parameter.
    #[error("{}: parameter column {name:?} (from --params) is not in the file; columns that can be parameters: {}", path.display(), list(candidates))]
    UnknownParam {
        /// The file.
        path: PathBuf,
        /// The name that was asked for.
        name: String,
        /// The columns that could have been named (the file's non-reserved columns).
        candidates: Vec<String>,
    },
    /// The file is not the kind of file expected (wrong JSON schema, newer version, empty, ...),
    /// or the data to be written cannot be represented.
    #[error("{}: {message}", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The data violates the measurement model (e.g. a run recorded twice).
    #[error("{}: {source}; each (benchmark, annotation, metric, configuration, run) must occur once — remove the duplicate rows or give them distinct Run values", path.display())]
    Model {
        /// The file.
        path: PathBuf,
        /// The model's complaint.
        source: ModelError,
    },
}

/// The OS error and what to do about it (without the `(os error N)` suffix, which the
/// underlying error repeats).
fn write_error_text(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let hint = match e.kind() {
        K::NotFound => "; check that the folder exists",
        K::PermissionDenied => "; check the permissions of the file and its folder",
        K::StorageFull => "; free some space or write elsewhere",
        K::ReadOnlyFilesystem => "; the file system is read-only: write elsewhere",
        K::BrokenPipe => "; the reading end of the pipe was closed",
        _ => "",
    };
    format!("{}{hint}", os_text(e))
}

/// An I/O error's text without Rust's ` (os error N)` suffix.
pub(crate) fn os_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_string()
    } else {
        items.join(", ")
    }
}

fn missing_column_message(path: &Path, column: &str, found: &[String]) -> String {
    if found.is_empty() || (found.len() == 1 && found[0].trim().is_empty()) {
        format!(
            "{}: the file is empty or has no header row; expected a CSV whose first line names the columns (at least {column:?})",
            path.display()
        )
    } else {
        format!(
            "{}: required column {column:?} is missing; the header has: {}. Check that this is a kprof or nsight-python result CSV and that the header is spelled exactly",
            path.display(),
            list(found)
        )
    }
}

/// Options for reading raw CSV files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The exact set of parameter columns. `None`: every column kprof does not know is a
    /// parameter, except kprof's engine columns ([`KPROF_EXTRA_COLUMNS`]), which are extra
    /// columns. `Some`: exactly these are parameters (each must be a column of the file) and
    /// the remaining unknown columns become extra columns.
    pub params: Option<Vec<String>>,
    /// Benchmark name for files without a `Benchmark` column (or with empty cells in it).
    /// `None`: derived from the file name (see [`benchmark_from_path`]).
    pub benchmark: Option<String>,
}

/// The default benchmark name for a file without a `Benchmark` column: the file stem, with
/// nsight-python's `profiled_data-`/`processed_data-` prefix and `-<run id>` suffix removed
/// (`processed_data-matmul-0.csv` → `matmul`).
pub fn benchmark_from_path(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for prefix in ["profiled_data-", "processed_data-"] {
        if let Some(rest) = stem.strip_prefix(prefix) {
            if let Some((name, id)) = rest.rsplit_once('-') {
                if !name.is_empty() && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
                    return name.to_string();
                }
            }
            if !rest.is_empty() {
                return rest.to_string();
            }
        }
    }
    stem
}

/// A result file of any supported kind, as returned by [`read_any`].
#[derive(Clone, Debug, PartialEq)]
pub enum Loaded {
    /// A raw CSV (kprof or nsight-python `profiled_data`).
    Raw(RawResults),
    /// A processed CSV (kprof or nsight-python `processed_data`).
    Processed(ProcessedResults),
    /// A kprof JSON result file.
    Json(ResultFile),
}

/// Reads a result file of any kind with default [`ReadOptions`]; see [`read_any_with`].
pub fn read_any(path: &Path) -> Result<Loaded, IoError> {
    read_any_with(path, &ReadOptions::default())
}

/// Reads a result file of any kind, detected by content: JSON when the first non-blank character
/// is `{`, a processed CSV when the header has an `AvgValue` column, a raw CSV otherwise.
/// `opts` applies to raw CSVs only.
pub fn read_any_with(path: &Path, opts: &ReadOptions) -> Result<Loaded, IoError> {
    let mut file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut head = Vec::with_capacity(64 * 1024);
    (&mut file)
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let text = String::from_utf8_lossy(&head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(IoError::Schema {
            path: path.to_path_buf(),
            message: "the file is empty; expected a kprof/nsight-python result CSV or a kprof JSON result file".into(),
        });
    }
    if trimmed.starts_with('{') {
        return read_results_json(path).map(Loaded::Json);
    }
    let header = csvutil::first_record(trimmed.as_bytes());
    if header.iter().any(|c| c == "AvgValue") {
        read_processed_csv(path).map(Loaded::Processed)
    } else {
        read_raw_csv(path, opts).map(Loaded::Raw)
    }
}

/// Writes a result file through [`atomic::write_output`] (see there for the rules).
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), IoError>,
) -> Result<(), IoError> {
    atomic::write_output(path, write)
}
