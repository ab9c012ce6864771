//! The store on one process: round trips, schema migration, refusal of newer and foreign files.

use std::path::{Path, PathBuf};

use kprof_core::{Config, DeviceInfo, ExtraValue, KernelSample, RawResults, SampleRecord};
use kprof_store::schema::{create_v1, APPLICATION_ID, SCHEMA_VERSION};
use kprof_store::{save_raw, NewRun, ResultStore, RunMeta, SqliteStore, StoreError};
use rusqlite::Connection;

fn sample_raw(series: u32, runs: u32, scale: f64) -> RawResults {
    let mut raw = RawResults::new();
    let dev = DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "vm".into(),
        compute_clock_khz: Some(1_980_000.0),
        memory_clock_khz: None,
    };
    for s in 0..series {
        let config = Config::new().with("n", 512 * (s as i64 + 1)).with("dtype", "fp32");
        for run in 0..runs {
            let extras = [
                ("DriverVersion", ExtraValue::Text("580.159.04".into())),
                ("PowerW", ExtraValue::Number(100.0 + run as f64)),
                (
                    "Mixed",
                    if run % 3 == 0 {
                        ExtraValue::Missing
                    } else {
                        ExtraValue::Text(format!("t{run}"))
                    },
                ),
            ];
            raw.push(&SampleRecord {
                benchmark: "sgemm",
                annotation: "matmul",
                config: &config,
                run,
                metric: "gpu__time_duration.sum",
                value: if run == 3 {
                    f64::NAN
                } else {
                    scale * (1000.0 + s as f64 * 10.0 + run as f64)
                },
                unit: "ns",
                kernel: if run % 2 == 0 { "k_a" } else { "k_a|k_b" },
                device: &dev,
                extras: &extras,
            })
            .unwrap();
        }
    }
    raw.kernel_breakdown.push(KernelSample {
        series: 0,
        run: 1,
        position: 1,
        kernel: "k_b".into(),
        value: f64::NAN,
    });
    raw
}

/// Same samples, compared value by value (bits, so NaN equals NaN) in series order.
fn assert_same_raw(a: &RawResults, b: &RawResults) {
    assert_eq!(a.series, b.series);
    assert_eq!(a.configs, b.configs);
    assert_eq!(a.devices, b.devices);
    assert_eq!(a.kernel_names, b.kernel_names);
    let key = |r: &RawResults| {
        let mut v: Vec<(u32, u32, u64, u32)> = r
            .samples
            .iter()
            .map(|s| (s.series, s.run, s.value.to_bits(), s.kernel))
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(a), key(b));
    assert_eq!(a.extras.len(), b.extras.len());
    for (ca, cb) in a.extras.iter().zip(&b.extras) {
        assert_eq!(ca.name, cb.name);
        // Both sides hold the samples in series order here (sample_raw pushes series by series).
        assert_eq!(ca.values, cb.values, "column {}", ca.name);
    }
    assert_eq!(a.kernel_breakdown.len(), b.kernel_breakdown.len());
    assert!(b.kernel_breakdown[0].value.is_nan());
}

#[test]
fn raw_samples_and_metadata_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    let raw = sample_raw(3, 10, 1.0);
    let meta = RunMeta::new("sgemm")
        .with_tag("gpu", "h200")
        .with_tag("ci", "nightly")
        .with_tag("gpu", "H200");
    let id = save_raw(&db, &raw, meta).unwrap();
    let store = SqliteStore::open_existing(&db).unwrap();
    let back = store.raw(id).unwrap().expect("raw samples stored");
    assert_same_raw(&raw, &back);
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].name, "sgemm");
    assert_eq!(
        runs[0].tags,
        vec![("ci".to_string(), "nightly".to_string()), ("gpu".into(), "H200".into())]
    );
    assert_eq!(runs[0].kprof_version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    let points = store.points(None).unwrap();
    assert_eq!(points.len(), 3);
    // One NaN run of ten: nine samples, mean of 1000..1009 without 1003.
    assert_eq!(points[0].n, 9);
    let want = (0..10).filter(|r| *r != 3).map(|r| 1000.0 + r as f64).sum::<f64>() / 9.0;
    assert!((points[0].mean - want).abs() < 1e-9);
    assert_eq!(points[1].series.config, "n=1024, dtype=fp32");
    let journal: String = store
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
}

#[test]
fn a_processed_only_run_gives_points_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    let raw = sample_raw(2, 5, 1.0);
    let processed = kprof_core::pipeline::process(&raw, &Default::default()).unwrap();
    let mut store = SqliteStore::open(&db).unwrap();
    let meta = RunMeta::new("from-processed");
    let id = store
        .insert_run(&NewRun {
            meta: &meta,
            raw: None,
            processed: Some(&processed),
        })
        .unwrap();
    assert!(store.raw(id).unwrap().is_none());
    let points = store.points(None).unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0].n, processed.rows[0].summary.num_runs);
    assert_eq!(points[0].mean, processed.rows[0].summary.mean);
    let err = store
        .insert_run(&NewRun {
            meta: &meta,
            raw: None,
            processed: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains("neither"), "{err}");
}

/// A database `name` in a new temporary folder, created with schema 1: the folder, its path and
/// a connection to it.
fn v1_database(name: &str) -> (tempfile::TempDir, PathBuf, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(name);
    let conn = Connection::open(&db).unwrap();
    create_v1(&conn).unwrap();
    (dir, db, conn)
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// Opening `path` as a store fails with an error that says `why`, and leaves the file as it was.
fn refused_unchanged(path: &Path, why: &str) {
    let before = file_bytes(path);
    let err = SqliteStore::open(path).unwrap_err();
    assert!(err.to_string().contains(why), "{err}");
    assert_eq!(file_bytes(path), before);
}

#[test]
fn a_version_1_database_is_migrated_and_keeps_its_runs() {
    let (_dir, db, conn) = v1_database("old.db");
    {
        // As the schema-1 kprof wrote it, with one run holding one raw series.
        conn.execute(
            "INSERT INTO runs (id, created_unix_ms, name, host, git_commit, git_branch, git_dirty, devices, kernel_names)
             VALUES (1, 1700000000000, 'old-bench', 'vm', 'abc123', 'main', 0, '[]', '[\"k\"]')",
            [],
        )
        .unwrap();
        let vals: Vec<u8> = [1.0f64, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let idx: Vec<u8> = [0u32, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let kern: Vec<u8> = [0u32, 0, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        conn.execute(
            "INSERT INTO raw_series (run_id, idx, benchmark, annotation, config, config_json, metric, unit, device,
                n, total, mean, std_dev, median, ci95_lower, ci95_upper, runs, vals, kernels)
             VALUES (1, 0, 'b', 'a', '', '{\"params\":[]}', 'm', 'ns', 0, 3, 3, 2.0, 1.0, 2.0, 0.0, 4.0, ?1, ?2, ?3)",
            rusqlite::params![idx, vals, kern],
        )
        .unwrap();
        let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, 1);
        drop(conn);
    }
    let mut store = SqliteStore::open(&db).unwrap();
    let v: i64 = store
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kprof_version, None);
    assert_eq!(runs[0].git.as_ref().unwrap().commit, "abc123");
    assert_eq!(runs[0].git.as_ref().unwrap().dirty, Some(false));
    let raw = store.raw(1).unwrap().unwrap();
    assert_eq!(
        raw.samples.iter().map(|s| s.value).collect::<Vec<_>>(),
        vec![1.0, 2.0, 3.0]
    );
    // The migrated store takes new runs.
    let meta = RunMeta::new("new-bench");
    let id = store
        .insert_run(&NewRun {
            meta: &meta,
            raw: Some(&sample_raw(1, 4, 1.0)),
            processed: None,
        })
        .unwrap();
    assert_eq!(id, 2);
    assert_eq!(store.points(None).unwrap().len(), 2);
}

#[test]
fn a_newer_database_is_refused_and_left_byte_for_byte_unchanged() {
    let (dir, db, conn) = v1_database("future.db");
    {
        conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 7))
            .unwrap();
        drop(conn);
    }
    let before = file_bytes(&db);
    for attempt in 0..2 {
        let err = if attempt == 0 {
            SqliteStore::open(&db).unwrap_err()
        } else {
            save_raw(&db, &sample_raw(1, 3, 1.0), RunMeta::new("x")).unwrap_err()
        };
        assert!(matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 7));
        let msg = err.to_string();
        assert!(msg.contains("newer kprof") && msg.contains("Upgrade kprof"), "{msg}");
        assert!(msg.contains("was not changed"), "{msg}");
    }
    assert_eq!(file_bytes(&db), before, "the refused database was modified");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(leftovers, vec!["future.db".to_string()]);
}

#[test]
fn corrupt_foreign_and_directory_paths_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database, just some text that is long enough to have a header....",
    )
    .unwrap();
    refused_unchanged(&junk, "not an SQLite database");

    let foreign = dir.path().join("other.db");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    refused_unchanged(&foreign, "another program");

    // A real store whose pages were overwritten in the middle.
    let db = dir.path().join("damaged.db");
    save_raw(&db, &sample_raw(20, 50, 1.0), RunMeta::new("x")).unwrap();
    {
        // Fold the WAL into the main file so the damage below hits the data.
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
            .unwrap();
    }
    let mut bytes = file_bytes(&db);
    let len = bytes.len();
    for b in &mut bytes[4096..len] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let err = SqliteStore::open(&db)
        .and_then(|s| s.points(None).map(|_| ()))
        .unwrap_err();
    assert!(err.to_string().contains("damaged"), "{err}");

    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    let err = SqliteStore::open_existing(&dir.path().join("missing.db")).unwrap_err();
    assert!(err.to_string().contains("kprof store add"), "{err}");
}

#[test]
fn application_id_marks_new_stores() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    let store = SqliteStore::open(&db).unwrap();
    let app: i64 = store
        .connection()
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, APPLICATION_ID);
}
