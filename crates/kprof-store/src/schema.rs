//! The SQLite schema: the first version's DDL (kept verbatim as the starting point of every
//! migration), the migrations after it, and the checks made before a file is ever written.
//!
//! The schema version is SQLite's `PRAGMA user_version`; `PRAGMA application_id` is
//! [`APPLICATION_ID`], so that kprof never migrates a database that belongs to another program.
//!
//! | version | change |
//! |---|---|
//! | 1 | `runs`, `tags`, `raw_series`, `raw_extras`, `processed` |
//! | 2 | `runs.kprof_version`; indexes on `runs(git_commit)` and on the series keys |

use rusqlite::{Connection, OpenFlags};

use std::path::Path;

use crate::error::{Result, StoreError};

/// `PRAGMA application_id` of a kprof store: the ASCII bytes `kprf`.
pub const APPLICATION_ID: i64 = 0x6B70_7266;

/// The schema version this kprof writes, and the newest it opens.
pub const SCHEMA_VERSION: i64 = 2;

/// The DDL of schema version 1, exactly as kprof 0.1's first store wrote it. New databases are
/// created from it and then migrated; tests build a version-1 database from it.
pub const V1_DDL: &str = r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    created_unix_ms INTEGER NOT NULL,
    name TEXT NOT NULL,
    source TEXT,
    host TEXT,
    git_commit TEXT,
    git_branch TEXT,
    git_dirty INTEGER,
    environment TEXT,
    param_names TEXT NOT NULL DEFAULT '[]',
    devices TEXT NOT NULL DEFAULT '[]',
    kernel_names TEXT NOT NULL DEFAULT '[]',
    extra_names TEXT NOT NULL DEFAULT '[]',
    kernel_breakdown TEXT
);
CREATE TABLE tags (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE raw_series (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    benchmark TEXT NOT NULL,
    annotation TEXT NOT NULL,
    config TEXT NOT NULL,
    config_json TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    device INTEGER NOT NULL,
    n INTEGER NOT NULL,
    total INTEGER NOT NULL,
    mean REAL,
    std_dev REAL,
    median REAL,
    ci95_lower REAL,
    ci95_upper REAL,
    runs BLOB NOT NULL,
    vals BLOB NOT NULL,
    kernels BLOB NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE raw_extras (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    series_idx INTEGER NOT NULL,
    column_idx INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    numbers BLOB,
    json TEXT,
    PRIMARY KEY (run_id, series_idx, column_idx)
);
CREATE TABLE processed (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    benchmark TEXT NOT NULL,
    annotation TEXT NOT NULL,
    config TEXT NOT NULL,
    config_json TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    kernel TEXT NOT NULL,
    device_json TEXT NOT NULL,
    n INTEGER NOT NULL,
    total INTEGER NOT NULL,
    mean REAL,
    std_dev REAL,
    min REAL,
    max REAL,
    median REAL,
    p05 REAL,
    p95 REAL,
    ci95_lower REAL,
    ci95_upper REAL,
    rsd_pct REAL,
    stable INTEGER,
    outliers_mild INTEGER NOT NULL,
    outliers_severe INTEGER NOT NULL,
    normalized TEXT,
    normalization_value REAL,
    geomean REAL,
    extras_json TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (run_id, idx)
);
"#;

/// Migration from version `i + 1` to `i + 2` is `MIGRATIONS[i]`.
const MIGRATIONS: &[&str] = &[
    // 1 -> 2: the kprof version of each run (NULL for runs stored by a version-1 kprof), and
    // indexes for the history and the CI gate.
    r#"
ALTER TABLE runs ADD COLUMN kprof_version TEXT;
CREATE INDEX runs_by_commit ON runs(git_commit);
CREATE INDEX raw_series_by_key ON raw_series(benchmark, annotation, metric);
CREATE INDEX processed_by_key ON processed(benchmark, annotation, metric);
"#,
];

/// What a read-only look at an existing file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No file, an empty file, or an SQLite database without any table: a new store.
    Fresh,
    /// A kprof store of this schema version or an older one.
    Store,
}

/// Looks at `path` without writing anything (a read-only connection), and refuses files that
/// are not kprof stores or that are newer than this kprof.
pub(crate) fn inspect(path: &Path) -> Result<Found> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Fresh),
        Err(e) => {
            return Err(StoreError::Invalid(format!(
                "cannot read the results store {}: {e}; check the path and its permissions",
                path.display()
            )))
        }
        Ok(m) if m.is_dir() => {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
                message: "is a directory; give the path of a database file (for example kprof.db)".into(),
            })
        }
        Ok(m) if m.len() == 0 => return Ok(Found::Fresh),
        Ok(_) => {}
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| classify(path, "opening", e))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| classify(path, "opening", e))?;
    // One read transaction, so the three values come from one snapshot: read one by one, a
    // store created by another process in between looked like "a database of another program"
    // (no application id yet, tables already there; seen with eight processes creating one store).
    let read = |conn: &Connection| -> rusqlite::Result<(i64, i64, i64)> {
        let tx = conn.unchecked_transaction()?;
        let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        let app: i64 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        tx.commit()?;
        Ok((app, version, tables))
    };
    let (app, version, tables) = read(&conn).map_err(|e| classify(path, "reading the schema version", e))?;
    if app != APPLICATION_ID {
        if app == 0 && version == 0 && tables == 0 {
            return Ok(Found::Fresh);
        }
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            message: "is an SQLite database of another program, not a kprof results store; give another path (for example kprof.db)".into(),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(Found::Store)
}

/// Turns SQLite's "not a database" and "corrupt" errors into a [`StoreError::NotAStore`] that
/// says what to do, and any other error into [`StoreError::Sql`].
pub(crate) fn classify(path: &Path, context: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotAStore {
            path: path.to_path_buf(),
            message: "is not an SQLite database (a different kind of file, or its header is damaged); give the path of a kprof results store, or move this file aside to start a new one".into(),
        },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::NotAStore {
            path: path.to_path_buf(),
            message: format!(
                "the database is damaged ({e}); restore it from a backup, or move it aside to start a new one (`sqlite3 FILE .recover` may save its contents)"
            ),
        },
        _ => StoreError::Sql {
            path: path.to_path_buf(),
            context: context.to_string(),
            source: e,
        },
    }
}

/// Creates version 1 in an empty database (application id, DDL, `user_version = 1`), inside the
/// caller's transaction.
pub fn create_v1(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(V1_DDL)?;
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;"
    ))
}

/// Brings the database to [`SCHEMA_VERSION`] inside one `BEGIN IMMEDIATE` transaction, so that
/// many processes opening a new store at once create it exactly once. Fails with
/// [`StoreError::NewerSchema`] when another kprof made it newer meanwhile (nothing is changed).
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let err = |e| classify(path, "creating or migrating the schema", e);
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(err)?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if version == 0 {
        create_v1(&tx).map_err(err)?;
    }
    let from = version.max(1);
    for (i, sql) in MIGRATIONS.iter().enumerate().skip((from - 1) as usize) {
        tx.execute_batch(sql).map_err(err)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", i as i64 + 2))
            .map_err(err)?;
    }
    tx.commit().map_err(err)
}
