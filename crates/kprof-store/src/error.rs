//! The store's errors: each message names the database and says how to fix the problem.

use std::path::PathBuf;

/// Errors of opening, reading and writing a results store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database was written by a newer kprof whose schema this kprof does not know. The file
    /// is left exactly as it was.
    #[error(
        "{}: this results store has schema version {found}, written by a newer kprof; this kprof ({}) reads versions up to {supported}. Upgrade kprof to use it; the file was not changed",
        path.display(),
        env!("CARGO_PKG_VERSION")
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The schema version found in the file.
        found: i64,
        /// The newest schema version this kprof knows.
        supported: i64,
    },
    /// The file is an SQLite database of another program, or not a database at all (corrupt,
    /// truncated, or some other kind of file).
    #[error("{}: {message}", path.display())]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The database could not be opened (missing directory, permissions, locked for too long).
    #[error("cannot open the results store {}: {source}; check that the directory exists and is writable", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A query or an insert failed.
    #[error("results store {}: {context} failed: {source}", path.display())]
    Sql {
        /// The file.
        path: PathBuf,
        /// What was being done (`inserting a run`, `reading the history`, ...).
        context: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The data to store or the data read back are not valid (a damaged row, a bad tag, ...).
    #[error("{0}")]
    Invalid(String),
}

/// Results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
