//! Many writers at once and writers killed mid-insert.
//!
//! The child processes are this test binary itself, run with `KPROF_STORE_TEST_CHILD` set so
//! that only `child_process` does anything (it returns at once in a normal test run).

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use kprof_core::{Config, DeviceInfo, RawResults, SampleRecord};
use kprof_store::{NewRun, ResultStore, RunMeta, SqliteStore};

const CHILD_ENV: &str = "KPROF_STORE_TEST_CHILD";

/// `series` series of `runs` samples each, tagged with the writer and its insert number.
fn raw_of(series: u32, runs: u32, base: f64) -> RawResults {
    let mut raw = RawResults::new();
    let dev = DeviceInfo::default();
    for s in 0..series {
        let config = Config::new().with("n", s as i64);
        for run in 0..runs {
            raw.push(&SampleRecord {
                benchmark: "bench",
                annotation: "a",
                config: &config,
                run,
                metric: "gpu__time_duration.sum",
                value: base + run as f64,
                unit: "ns",
                kernel: "k",
                device: &dev,
                extras: &[],
            })
            .unwrap();
        }
    }
    raw
}

fn child(db: &Path, mode: &str, writer: usize, count: usize) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["child_process", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}:{}:{writer}:{count}", db.display()))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    cmd
}

/// The child's work: `insert:DB:W:N` stores N small runs tagged writer=W, seq=i; `big:DB:W:N`
/// stores N large runs (slow inserts), printing `committed <id> <seq>` after each commit.
#[test]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let parts: Vec<&str> = spec.rsplitn(3, ':').collect();
    let (count, writer, rest) = (parts[0], parts[1], parts[2]);
    let (mode, db) = rest.split_once(':').unwrap();
    let count: usize = count.parse().unwrap();
    let mut store = SqliteStore::open(Path::new(db)).unwrap();
    let (series, runs) = if mode == "big" { (50, 4000) } else { (2, 5) };
    let raw = raw_of(series, runs, writer.len() as f64);
    for seq in 0..count {
        let meta = RunMeta::new("safety")
            .with_tag("writer", writer)
            .with_tag("seq", seq.to_string());
        println!("begin {seq}");
        let id = store
            .insert_run(&NewRun {
                meta: &meta,
                raw: Some(&raw),
                processed: None,
            })
            .unwrap();
        println!("committed {id} {seq}");
    }
}

fn integrity(db: &Path) -> String {
    let store = SqliteStore::open_existing(db).unwrap();
    store
        .connection()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn eight_processes_insert_200_runs_each_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    const WRITERS: usize = 8;
    const INSERTS: usize = 200;
    // Every child creates the store itself (no process opens it first), so the creation and
    // migration race too.
    let children: Vec<_> = (0..WRITERS)
        .map(|w| child(&db, "insert", w, INSERTS).stdout(Stdio::null()).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer failed");
    }
    assert_eq!(integrity(&db), "ok");
    let store = SqliteStore::open_existing(&db).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), WRITERS * INSERTS);
    let seen: HashSet<(String, String)> = runs
        .iter()
        .map(|r| {
            let tag = |k: &str| r.tags.iter().find(|(key, _)| key == k).unwrap().1.clone();
            (tag("writer"), tag("seq"))
        })
        .collect();
    for w in 0..WRITERS {
        for i in 0..INSERTS {
            assert!(
                seen.contains(&(w.to_string(), i.to_string())),
                "writer {w} insert {i} is missing"
            );
        }
    }
    // Each run is complete: 2 series of 5 samples.
    assert_eq!(store.points(None).unwrap().len(), WRITERS * INSERTS * 2);
    for r in runs.iter().step_by(97) {
        assert_eq!(store.raw(r.id).unwrap().unwrap().samples.len(), 10);
    }
}

#[test]
fn a_writer_killed_mid_insert_leaves_a_consistent_database_with_every_committed_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    let mut committed: Vec<i64> = Vec::new();
    let mut killed_inside = 0;
    for round in 0..4 {
        let mut c = child(&db, "big", round, 1000).stdout(Stdio::piped()).spawn().unwrap();
        // libtest prints its own lines too; keep the child's.
        let mut lines = BufReader::new(c.stdout.take().unwrap())
            .lines()
            .map(|l| l.unwrap())
            .filter(|l| l.starts_with("committed ") || l.starts_with("begin "));
        // Let a few inserts commit, then kill the writer a little after it began the next one
        // (an insert of 200,000 samples takes far longer than the delay).
        let mut begun = 0;
        loop {
            let line = lines.next().expect("the writer stopped early");
            if let Some(rest) = line.strip_prefix("committed ") {
                committed.push(rest.split(' ').next().unwrap().parse().unwrap());
            } else {
                begun += 1;
                if begun == 3 + round {
                    break;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2 + 5 * round as u64));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        let rest: Vec<String> = lines.collect();
        if !rest.iter().any(|l| l.starts_with("committed ")) {
            killed_inside += 1;
        }
        for line in rest.iter().filter_map(|l| l.strip_prefix("committed ")) {
            committed.push(line.split(' ').next().unwrap().parse().unwrap());
        }
        assert_eq!(integrity(&db), "ok", "round {round}");
    }
    assert!(
        killed_inside > 0,
        "no writer was killed inside an insert; the test proved nothing"
    );
    let store = SqliteStore::open_existing(&db).unwrap();
    let ids: HashSet<i64> = store.runs(None).unwrap().iter().map(|r| r.id).collect();
    for id in &committed {
        assert!(ids.contains(id), "committed run {id} is missing");
    }
    // No partial run: every stored run has all 50 series of 4000 samples.
    let points = store.points(None).unwrap();
    for id in &ids {
        let series = points.iter().filter(|p| p.run_id == *id).count();
        assert_eq!(series, 50, "run {id} is partial");
        assert!(points.iter().filter(|p| p.run_id == *id).all(|p| p.n == 4000));
    }
}
