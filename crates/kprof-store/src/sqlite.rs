//! The embedded backend: one SQLite file (WAL mode, `synchronous = FULL`, 30 s busy timeout).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kprof_core::stats::{summarize, StatsOptions};
use kprof_core::{Config, DeviceInfo, ExtraColumn, ExtraValue, RawResults, Sample, SeriesKey};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::codec::{
    blob_to_f64s, blob_to_u32s, breakdown_to_json, damaged, decode_extra, encode_extra, f64s_to_blob,
    json_to_breakdown, u32s_to_blob,
};
use crate::error::{Result, StoreError};
use crate::meta::GitInfo;
use crate::schema::{self, classify, Found};
use crate::{NewRun, ResultStore, RunId, RunInfo, SeriesId, SeriesPoint};

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// A results store in one SQLite file.
///
/// Every run is inserted in one `BEGIN IMMEDIATE` transaction, so many processes may insert at
/// once (they take turns, waiting up to a busy timeout) and a process killed mid-insert leaves
/// the database as it was before that insert.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

impl SqliteStore {
    /// Opens the store at `path`, creating it when the file does not exist (or is empty), and
    /// migrating an older schema to the current one.
    ///
    /// Before anything is written the file is read through a read-only connection: a database
    /// of a newer kprof ([`StoreError::NewerSchema`]), of another program, or a file that is not
    /// an SQLite database ([`StoreError::NotAStore`]) is refused and left exactly as it was.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        schema::inspect(path)?;
        Self::open_checked(path)
    }

    /// Opens an existing store; a missing file is an error that says how to create one.
    pub fn open_existing(path: &Path) -> Result<SqliteStore> {
        if schema::inspect(path)? == Found::Fresh {
            return Err(StoreError::Invalid(format!(
                "{} is not a results store yet (missing or empty); add results first with `kprof store add RESULT --db {}`",
                path.display(),
                path.display()
            )));
        }
        Self::open_checked(path)
    }

    fn open_checked(path: &Path) -> Result<SqliteStore> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let err = |e| classify(path, "setting up the connection", e);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // Switching to WAL needs a moment without other connections' transactions; retry
        // while parallel openers hold the file (the busy handler does not always apply).
        let mut attempt = 0;
        loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) && attempt < 600 => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(err(e)),
            }
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(err)?;
        schema::migrate(&mut conn, path)?;
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The underlying connection (for checks such as `PRAGMA integrity_check`).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn sql(&self, context: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        let context = context.to_string();
        move |e| classify(&self.path, &context, e)
    }
}

fn opt_f64(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Invalid(format!("cannot encode a run to store it: {e}")))
}

impl ResultStore for SqliteStore {
    fn insert_run(&mut self, run: &NewRun<'_>) -> Result<RunId> {
        if run.raw.is_none() && run.processed.is_none() {
            return Err(StoreError::Invalid(
                "a run to store needs raw samples or a processed table; this one has neither".into(),
            ));
        }
        let path = self.path.clone();
        let err = |e| classify(&path, "inserting a run", e);
        let meta = run.meta;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        let empty = RawResults::new();
        let raw = run.raw.unwrap_or(&empty);
        let param_names = match run.processed {
            Some(p) => p.param_names.clone(),
            None => raw.param_names(),
        };
        let extra_names: Vec<&str> = raw.extras.iter().map(|c| c.name.as_str()).collect();
        tx.execute(
            "INSERT INTO runs (created_unix_ms, name, source, host, git_commit, git_branch, git_dirty, environment,
                param_names, devices, kernel_names, extra_names, kernel_breakdown, kprof_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                meta.created_unix_ms,
                meta.name,
                meta.source,
                meta.host,
                meta.git.as_ref().map(|g| &g.commit),
                meta.git.as_ref().and_then(|g| g.branch.as_ref()),
                meta.git.as_ref().and_then(|g| g.dirty),
                meta.environment.as_ref().map(|e| e.to_string()),
                to_json(&param_names)?,
                to_json(&raw.devices)?,
                to_json(&raw.kernel_names)?,
                to_json(&extra_names)?,
                (!raw.kernel_breakdown.is_empty()).then(|| breakdown_to_json(&raw.kernel_breakdown)),
                env!("CARGO_PKG_VERSION"),
            ],
        )
        .map_err(err)?;
        let run_id = tx.last_insert_rowid();
        {
            let mut tag = tx
                .prepare("INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)")
                .map_err(err)?;
            for (k, v) in &meta.tags {
                tag.execute(params![run_id, k, v]).map_err(err)?;
            }
        }
        if let Some(raw) = run.raw {
            insert_raw(&tx, run_id, raw).map_err(|e| match e {
                InsertError::Sql(e) => err(e),
                InsertError::Store(e) => e,
            })?;
        }
        if let Some(p) = run.processed {
            insert_processed(&tx, run_id, p).map_err(|e| match e {
                InsertError::Sql(e) => err(e),
                InsertError::Store(e) => e,
            })?;
        }
        tx.commit().map_err(err)?;
        Ok(run_id)
    }

    fn runs(&self, since_unix_ms: Option<i64>) -> Result<Vec<RunInfo>> {
        let err = self.sql("reading the runs");
        let mut tags: HashMap<RunId, Vec<(String, String)>> = HashMap::new();
        let mut stmt = self
            .conn
            .prepare("SELECT run_id, key, value FROM tags ORDER BY run_id, key")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })
            .map_err(&err)?;
        for row in rows {
            let (id, k, v) = row.map_err(&err)?;
            tags.entry(id).or_default().push((k, v));
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, created_unix_ms, name, source, host, git_commit, git_branch, git_dirty, kprof_version, environment
                 FROM runs WHERE created_unix_ms >= ?1 ORDER BY id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([since_unix_ms.unwrap_or(i64::MIN)], |r| {
                let commit: Option<String> = r.get(5)?;
                let env: Option<String> = r.get(9)?;
                Ok(RunInfo {
                    id: r.get(0)?,
                    created_unix_ms: r.get(1)?,
                    name: r.get(2)?,
                    source: r.get(3)?,
                    host: r.get(4)?,
                    git: commit.map(|commit| GitInfo {
                        commit,
                        branch: r.get(6).ok().flatten(),
                        dirty: r.get(7).ok().flatten(),
                    }),
                    tags: Vec::new(),
                    kprof_version: r.get(8)?,
                    environment: env.and_then(|e| serde_json::from_str(&e).ok()),
                })
            })
            .map_err(&err)?;
        let mut out = Vec::new();
        for row in rows {
            let mut info = row.map_err(&err)?;
            info.tags = tags.remove(&info.id).unwrap_or_default();
            out.push(info);
        }
        Ok(out)
    }

    fn points(&self, since_unix_ms: Option<i64>) -> Result<Vec<SeriesPoint>> {
        let err = self.sql("reading the series of the runs");
        // Raw series, then the processed rows of the runs without raw samples; both scanned in
        // table order (no sort in SQL), then put in run order here (stable, so each run's series
        // stay in their stored order).
        let since = since_unix_ms.unwrap_or(i64::MIN);
        let filter = if since_unix_ms.is_some() {
            " WHERE run_id IN (SELECT id FROM runs WHERE created_unix_ms >= ?1)"
        } else {
            " WHERE ?1 IS NOT NULL"
        };
        let cols = "run_id, benchmark, annotation, config, metric, unit, n, mean, std_dev, median";
        let mut out: Vec<SeriesPoint> = Vec::new();
        for sql in [
            format!("SELECT {cols} FROM raw_series{filter}"),
            format!(
                "SELECT {cols} FROM processed p{filter} AND NOT EXISTS (SELECT 1 FROM raw_series s WHERE s.run_id = p.run_id)"
            ),
        ] {
            let mut stmt = self.conn.prepare(&sql).map_err(&err)?;
            let mut rows = stmt.query([since]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                let f = |i: usize| -> rusqlite::Result<f64> { Ok(r.get::<_, Option<f64>>(i)?.unwrap_or(f64::NAN)) };
                let text = |i: usize| -> rusqlite::Result<&str> {
                    r.get_ref(i)?.as_str().map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
                };
                let series = SeriesId {
                    benchmark: text(1).map_err(&err)?.to_string(),
                    annotation: text(2).map_err(&err)?.to_string(),
                    config: text(3).map_err(&err)?.to_string(),
                    metric: text(4).map_err(&err)?.to_string(),
                };
                out.push(SeriesPoint {
                    run_id: r.get(0).map_err(&err)?,
                    series,
                    unit: text(5).map_err(&err)?.to_string(),
                    n: r.get::<_, i64>(6).map_err(&err)?.max(0) as usize,
                    mean: f(7).map_err(&err)?,
                    std_dev: f(8).map_err(&err)?,
                    median: f(9).map_err(&err)?,
                });
            }
        }
        out.sort_by_key(|p| p.run_id);
        Ok(out)
    }

    fn raw(&self, run: RunId) -> Result<Option<RawResults>> {
        read_raw(&self.conn, run).map_err(|e| match e {
            InsertError::Sql(e) => classify(&self.path, "reading raw samples", e),
            InsertError::Store(e) => e,
        })
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

/// An SQLite error (to be given the database path) or a finished store error.
enum InsertError {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for InsertError {
    fn from(e: rusqlite::Error) -> Self {
        InsertError::Sql(e)
    }
}

impl From<StoreError> for InsertError {
    fn from(e: StoreError) -> Self {
        InsertError::Store(e)
    }
}

fn insert_raw(tx: &Connection, run_id: RunId, raw: &RawResults) -> std::result::Result<(), InsertError> {
    // Sample positions per series, in sample order.
    let mut by_series: Vec<Vec<usize>> = vec![Vec::new(); raw.series.len()];
    for (i, s) in raw.samples.iter().enumerate() {
        let list = by_series
            .get_mut(s.series as usize)
            .ok_or_else(|| StoreError::Invalid("a raw sample refers to a series that does not exist".into()))?;
        list.push(i);
    }
    let mut series_stmt = tx.prepare(
        "INSERT INTO raw_series (run_id, idx, benchmark, annotation, config, config_json, metric, unit, device,
            n, total, mean, std_dev, median, ci95_lower, ci95_upper, runs, vals, kernels)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
    )?;
    let mut extra_stmt = tx.prepare(
        "INSERT INTO raw_extras (run_id, series_idx, column_idx, kind, numbers, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let stats = StatsOptions::default();
    let mut config_json: HashMap<u32, (String, String)> = HashMap::new();
    for (idx, (series, positions)) in raw.series.iter().zip(&by_series).enumerate() {
        let (config_text, cjson) = match config_json.get(&series.key.config) {
            Some(c) => c.clone(),
            None => {
                let config = raw.configs.get(series.key.config as usize).ok_or_else(|| {
                    StoreError::Invalid("a series refers to a configuration that does not exist".into())
                })?;
                let c = (config.to_string(), to_json(config)?);
                config_json.insert(series.key.config, c.clone());
                c
            }
        };
        let values: Vec<f64> = positions.iter().map(|&i| raw.samples[i].value).collect();
        let summary = summarize(&values, &stats);
        series_stmt.execute(params![
            run_id,
            idx as i64,
            series.key.benchmark,
            series.key.annotation,
            config_text,
            cjson,
            series.key.metric,
            series.unit,
            series.device,
            summary.num_runs as i64,
            summary.total_runs as i64,
            opt_f64(summary.mean),
            opt_f64(summary.std_dev),
            opt_f64(summary.median),
            opt_f64(summary.ci95_lower),
            opt_f64(summary.ci95_upper),
            u32s_to_blob(positions.iter().map(|&i| raw.samples[i].run), positions.len()),
            f64s_to_blob(values.iter().copied(), values.len()),
            u32s_to_blob(positions.iter().map(|&i| raw.samples[i].kernel), positions.len()),
        ])?;
        for (col_idx, col) in raw.extras.iter().enumerate() {
            let values: Vec<&ExtraValue> = positions
                .iter()
                .map(|&i| col.values.get(i).unwrap_or(&ExtraValue::Missing))
                .collect();
            if let Some((kind, blob, text)) = encode_extra(&values) {
                extra_stmt.execute(params![run_id, idx as i64, col_idx as i64, kind, blob, text])?;
            }
        }
    }
    Ok(())
}

fn insert_processed(
    tx: &Connection,
    run_id: RunId,
    p: &kprof_core::ProcessedResults,
) -> std::result::Result<(), InsertError> {
    let mut stmt = tx.prepare(
        "INSERT INTO processed (run_id, idx, benchmark, annotation, config, config_json, metric, unit, kernel, device_json,
            n, total, mean, std_dev, min, max, median, p05, p95, ci95_lower, ci95_upper, rsd_pct, stable,
            outliers_mild, outliers_severe, normalized, normalization_value, geomean, extras_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
            ?23, ?24, ?25, ?26, ?27, ?28, ?29)",
    )?;
    for (idx, row) in p.rows.iter().enumerate() {
        let s = &row.summary;
        let extras: Vec<serde_json::Value> = row
            .extras
            .iter()
            .map(|(k, v)| serde_json::json!([k, v.to_string()]))
            .collect();
        stmt.execute(rusqlite::params_from_iter([
            &run_id as &dyn rusqlite::ToSql,
            &(idx as i64),
            &row.benchmark,
            &row.annotation,
            &row.config.to_string(),
            &to_json(&row.config)?,
            &row.metric,
            &row.unit,
            &row.kernel,
            &to_json(&row.device)?,
            &(s.num_runs as i64),
            &(s.total_runs as i64),
            &opt_f64(s.mean),
            &opt_f64(s.std_dev),
            &opt_f64(s.min),
            &opt_f64(s.max),
            &opt_f64(s.median),
            &opt_f64(s.p05),
            &opt_f64(s.p95),
            &opt_f64(s.ci95_lower),
            &opt_f64(s.ci95_upper),
            &opt_f64(s.rsd_pct),
            &s.stable,
            &(s.outliers_mild as i64),
            &(s.outliers_severe as i64),
            &row.normalized,
            &row.normalization_value.and_then(opt_f64),
            &opt_f64(row.geomean),
            &serde_json::Value::Array(extras).to_string(),
        ]))?;
    }
    Ok(())
}

fn read_raw(conn: &Connection, run: RunId) -> std::result::Result<Option<RawResults>, InsertError> {
    let head: Option<(String, String, String, Option<String>)> = conn
        .query_row(
            "SELECT devices, kernel_names, extra_names, kernel_breakdown FROM runs WHERE id = ?1",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let Some((devices, kernels, extra_names, breakdown)) = head else {
        return Ok(None);
    };
    let parse = |text: &str, what: &str| -> std::result::Result<serde_json::Value, InsertError> {
        serde_json::from_str(text).map_err(|_| InsertError::Store(damaged(what)))
    };
    let devices: Vec<DeviceInfo> = serde_json::from_value(parse(&devices, "device list")?)
        .map_err(|_| InsertError::Store(damaged("device list")))?;
    let kernel_names: Vec<String> = serde_json::from_value(parse(&kernels, "kernel names")?)
        .map_err(|_| InsertError::Store(damaged("kernel names")))?;
    let extra_names: Vec<String> = serde_json::from_value(parse(&extra_names, "extra column names")?)
        .map_err(|_| InsertError::Store(damaged("extra column names")))?;
    let mut stmt = conn.prepare(
        "SELECT idx, benchmark, annotation, config_json, metric, unit, device, runs, vals, kernels
           FROM raw_series WHERE run_id = ?1 ORDER BY idx",
    )?;
    let mut rows = stmt.query([run])?;
    let mut raw = RawResults::new();
    for d in &devices {
        raw.intern_device(d);
    }
    for k in &kernel_names {
        raw.intern_kernel(k);
    }
    let mut extras: Vec<ExtraColumn> = extra_names
        .iter()
        .map(|name| ExtraColumn {
            name: name.clone(),
            values: Vec::new(),
        })
        .collect();
    let mut extra_stmt = conn.prepare(
        "SELECT column_idx, kind, numbers, json FROM raw_extras WHERE run_id = ?1 AND series_idx = ?2 ORDER BY column_idx",
    )?;
    let mut any = false;
    while let Some(r) = rows.next()? {
        any = true;
        let idx: i64 = r.get(0)?;
        let config: Config = serde_json::from_value(parse(&r.get::<_, String>(3)?, "configuration")?)
            .map_err(|_| InsertError::Store(damaged("configuration")))?;
        let config = raw.intern_config(&config);
        let device: u32 = r.get(6)?;
        if device as usize >= devices.len() && !devices.is_empty() {
            return Err(InsertError::Store(damaged("device index")));
        }
        let key = SeriesKey {
            benchmark: r.get(1)?,
            annotation: r.get(2)?,
            config,
            metric: r.get(4)?,
        };
        let unit: String = r.get(5)?;
        let series = raw
            .intern_series(key, &unit, device)
            .map_err(|_| InsertError::Store(damaged("series")))?;
        let runs = blob_to_u32s(&r.get::<_, Vec<u8>>(7)?)?;
        let vals = blob_to_f64s(&r.get::<_, Vec<u8>>(8)?)?;
        let kernels = blob_to_u32s(&r.get::<_, Vec<u8>>(9)?)?;
        if runs.len() != vals.len() || kernels.len() != vals.len() {
            return Err(InsertError::Store(damaged("blob lengths differ")));
        }
        if kernels.iter().any(|&k| k as usize >= kernel_names.len()) {
            return Err(InsertError::Store(damaged("kernel index")));
        }
        for ((&run, &value), &kernel) in runs.iter().zip(&vals).zip(&kernels) {
            raw.push_sample(
                Sample {
                    series,
                    run,
                    value,
                    kernel,
                },
                &[],
            );
        }
        let n = vals.len();
        let mut filled = vec![false; extras.len()];
        let mut erows = extra_stmt.query(params![run, idx])?;
        while let Some(e) = erows.next()? {
            let col: usize = e.get::<_, i64>(0)? as usize;
            let numbers: Option<Vec<u8>> = e.get(2)?;
            let text: Option<String> = e.get(3)?;
            let values = decode_extra(e.get(1)?, numbers.as_deref(), text.as_deref(), n)?;
            let column = extras
                .get_mut(col)
                .ok_or_else(|| InsertError::Store(damaged("extra column index")))?;
            column.values.extend(values);
            filled[col] = true;
        }
        for (column, done) in extras.iter_mut().zip(filled) {
            if !done {
                column.values.extend(std::iter::repeat_n(ExtraValue::Missing, n));
            }
        }
    }
    if !any {
        return Ok(None);
    }
    raw.extras = extras;
    if let Some(text) = breakdown {
        raw.kernel_breakdown = json_to_breakdown(&text)?;
    }
    Ok(Some(raw))
}
