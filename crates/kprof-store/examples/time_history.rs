//! Times the parts of `kprof history` on a store: `time_history DB` (for benches/store_bench.py).

use std::path::Path;
use std::time::Instant;

use kprof_store::history::{history, HistoryOptions};
use kprof_store::{ResultStore, SqliteStore};

fn main() {
    let db = std::env::args().nth(1).expect("usage: time_history DB");
    let t = Instant::now();
    let store = SqliteStore::open_existing(Path::new(&db)).expect("a store");
    let open = t.elapsed();
    let runs = store.runs(None).expect("runs");
    let after_runs = t.elapsed();
    let points = store.points(None).expect("points");
    let after_points = t.elapsed();
    let h = history(&runs, &points, &HistoryOptions::default());
    let after_history = t.elapsed();
    eprintln!(
        "open {:.3} s, runs {:.3} s ({}), points {:.3} s ({}), history {:.3} s ({} series)",
        open.as_secs_f64(),
        (after_runs - open).as_secs_f64(),
        runs.len(),
        (after_points - after_runs).as_secs_f64(),
        points.len(),
        (after_history - after_points).as_secs_f64(),
        h.len()
    );
}
