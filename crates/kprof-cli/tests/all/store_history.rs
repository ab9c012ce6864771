//! `kprof store`, `kprof history` and `kprof compare --against` through the binary, on a
//! history built from the recorded H200 sgemm sweep.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kprof_core::io::{self, ReadOptions};

use crate::common;

fn kprof() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kprof"));
    c.env_remove("KPROF_STORE");
    c
}

fn fixture() -> PathBuf {
    common::fixture_path("h200-python-tutorial-steps/sgemm-raw.csv")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `kprof ARGS OUT --db DB`, a command that writes OUT from the store and must succeed: OUT's text.
fn written_from_store(args: &[&str], out: &Path, db: &Path) -> String {
    let o = kprof().args(args).arg(out).arg("--db").arg(db).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(out).unwrap()
}

/// A seeded standard normal (xorshift64* and Box-Muller), so the test data are the same on
/// every machine.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A copy of the recorded samples, each multiplied by `scale * (1 + 0.2 % noise)`.
fn noisy_copy(dir: &Path, name: &str, scale: f64, noise: &mut Noise) -> PathBuf {
    let mut raw = io::read_raw_csv(&fixture(), &ReadOptions::default()).unwrap();
    for s in &mut raw.samples {
        s.value *= scale * (1.0 + 0.002 * noise.normal());
    }
    let out = dir.join(format!("{name}.csv"));
    io::write_raw_csv(&out, &raw).unwrap();
    out
}

const COMMITS: [&str; 6] = [
    "1111111111aaaaaaaaaa1111111111aaaaaaaaaa",
    "2222222222bbbbbbbbbb2222222222bbbbbbbbbb",
    "3333333333cccccccccc3333333333cccccccccc",
    "4444444444dddddddddd4444444444dddddddddd",
    "5555555555eeeeeeeeee5555555555eeeeeeeeee",
    "6666666666ffffffffff6666666666ffffffffff",
];
/// The commit whose samples are all 5 % slower.
const SLOW: usize = 3;

/// Stores one noisy copy per commit (the `SLOW` one scaled by 1.05); returns the files.
fn build_history(dir: &Path, db: &Path) -> Vec<PathBuf> {
    let mut noise = Noise(0x6b70_7266_2026_1202);
    let mut files = Vec::new();
    for (i, commit) in COMMITS.iter().enumerate() {
        let scale = if i == SLOW { 1.05 } else { 1.0 };
        let f = noisy_copy(dir, &format!("c{i}"), scale, &mut noise);
        let o = kprof()
            .args(["store", "add"])
            .arg(&f)
            .arg("--db")
            .arg(db)
            .args(["--commit", commit, "--tag", &format!("step={i}")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("as run {}", i + 1)), "{}", text(&o));
        files.push(f);
    }
    files
}

#[test]
fn history_marks_the_injected_slowdown_and_the_gate_catches_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    let files = build_history(dir.path(), &db);

    // The trend table: the slowed commit is a regression in every series, the next one (back
    // to normal) an improvement, and nothing else is marked.
    let o = kprof().arg("history").arg("--db").arg(&db).output().unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let short = |i: usize| &COMMITS[i][..10];
    let lines_of = |i: usize| {
        out.lines()
            .filter(|l| l.trim_start().starts_with(short(i)))
            .collect::<Vec<_>>()
    };
    assert_eq!(lines_of(SLOW).len(), 5, "{out}");
    assert!(lines_of(SLOW).iter().all(|l| l.ends_with("<< REGRESSION")), "{out}");
    assert!(
        lines_of(SLOW + 1).iter().all(|l| l.ends_with("<< improvement")),
        "{out}"
    );
    for i in [0, 1, 2, 5] {
        assert!(lines_of(i).iter().all(|l| !l.contains("<<")), "commit {i}:\n{out}");
    }
    assert!(out.contains("10 change point(s) in 5 series"), "{out}");

    // The same from the JSON, with the change's size.
    let o = kprof().args(["history", "--json", "--db"]).arg(&db).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for s in v["series"].as_array().unwrap() {
        let points = s["points"].as_array().unwrap();
        assert_eq!(points.len(), COMMITS.len());
        for (i, p) in points.iter().enumerate() {
            let marked = p["change"]["change_point"].as_bool().unwrap_or(false);
            assert_eq!(marked, i == SLOW || i == SLOW + 1, "{s}");
        }
        let pct = points[SLOW]["change"]["pct"].as_f64().unwrap();
        assert!((pct - 5.0).abs() < 1.0, "{pct}");
        assert_eq!(points[SLOW]["change"]["regression"], true);
    }

    // The CI gate: the slowed commit's results against the best stored values fail (exit 1),
    // a noise-only commit's pass (exit 0).
    let gate = |file: &Path, against: &str| {
        let o = kprof()
            .args(["compare", "--db"])
            .arg(&db)
            .args(["--against", against])
            .arg(file)
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    let (code, out) = gate(&files[SLOW], "best");
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(out.matches("REGRESSION").count(), 5, "{out}");
    let (code, out) = gate(&files[2], "best");
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("REGRESSION"), "{out}");
    // A fresh noise-only measurement, not stored, passes too.
    let fresh = noisy_copy(dir.path(), "fresh", 1.0, &mut Noise(7));
    assert_eq!(gate(&fresh, "best").0, Some(0));
    // Against a commit (prefix), a tag, and the last run.
    assert_eq!(gate(&files[SLOW], &COMMITS[1][..8]).0, Some(1));
    assert_eq!(gate(&files[SLOW], "step=0").0, Some(1));
    assert_eq!(gate(&fresh, "last").0, Some(0));
    assert_eq!(gate(&files[SLOW], "last").0, Some(1));
    // The trend as an image: one point per commit on a categorical axis, in commit order.
    let svg = dir.path().join("trend.svg");
    let body = written_from_store(&["history", "plot", "--series", "n=4096", "-o"], &svg, &db);
    assert!(body.starts_with("<svg") || body.contains("<svg"), "not an SVG");
    let at: Vec<usize> = (0..COMMITS.len())
        .map(|i| body.find(short(i)).expect("commit label"))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "commit labels out of order: {at:?}");
    // The HTML report's trends section.
    let html = dir.path().join("report.html");
    let page = written_from_store(&["report", "-o"], &html, &db);
    assert!(page.contains("trends across commits"), "no trends section");
    assert!(page.contains("<svg") && page.contains(short(SLOW)), "no trend plot");
    let (code, out) = gate(&fresh, "deadbeef");
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("matches no run") && out.contains("step=3"), "{out}");
}

#[test]
fn the_kprof_store_variable_sets_the_default_database_and_filters_apply() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("env.db");
    let f = fixture();
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["store", "add", "--tag", "gpu=h200"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(db.exists());
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["history", "--series", "MATMUL,n=4096", "--since", "1d"])
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("n=4096") && !out.contains("n=512 "), "{out}");
    assert!(out.contains("1 series"), "{out}");
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["history", "--since", "2999-01-01"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("no stored series"), "{}", text(&o));

    // Export: one row per series, or per sample; Parquet says what to do instead.
    let csv = dir.path().join("runs.csv");
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["store", "export", "-o"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let body = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(body.lines().count(), 1 + 5, "{body}");
    assert!(body.lines().nth(1).unwrap().contains("gpu=h200"), "{body}");
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["store", "export", "--raw", "--series", "n=512"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1 + 10);
    let o = kprof()
        .env("KPROF_STORE", &db)
        .args(["store", "export", "--format", "parquet"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("to_parquet"), "{}", text(&o));
}

#[test]
fn every_result_format_kprof_reads_can_be_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    // kprof JSON (raw + processed), written by `kprof summarize`.
    let json = dir.path().join("sgemm.json");
    let o = kprof()
        .arg("summarize")
        .arg(fixture())
        .arg("-o")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // nsight-python's processed table (recorded on the H200 through kprof's Python package).
    let processed = fixture().with_file_name("step5-tflops.csv");
    let o = kprof()
        .args(["store", "add"])
        .arg(&json)
        .arg(&processed)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("as run 1") && out.contains("50 raw samples"), "{out}");
    assert!(out.contains("as run 2") && out.contains("0 raw samples"), "{out}");
    let o = kprof().args(["store", "export", "--db"]).arg(&db).output().unwrap();
    let body = String::from_utf8_lossy(&o.stdout).into_owned();
    let rows: Vec<&str> = body.lines().skip(1).collect();
    assert_eq!(rows.iter().filter(|r| r.starts_with("1,")).count(), 5, "{body}");
    let processed_rows = io::read_processed_csv(&processed).unwrap().rows.len();
    assert_eq!(
        rows.iter().filter(|r| r.starts_with("2,")).count(),
        processed_rows,
        "{body}"
    );
    // The processed-only run is a baseline like any other.
    let o = kprof()
        .args(["compare", "--against", "last", "--db"])
        .arg(&db)
        .arg(&processed)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("same"), "{}", text(&o));
}

#[test]
fn bad_input_to_the_store_commands_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kprof.db");
    // A bad tag, a bad commit, a bad file: nothing is stored.
    for args in [vec!["--tag", "novalue"], vec!["--commit", "not-a-sha"]] {
        let o = kprof()
            .args(["store", "add"])
            .arg(fixture())
            .arg("--db")
            .arg(&db)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    }
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "x,y\n1,2\n").unwrap();
    let o = kprof()
        .args(["store", "add"])
        .arg(fixture())
        .arg(&bad)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!db.exists(), "a failed add created the store");
    // History of a store that does not exist says how to make one.
    let o = kprof().arg("history").arg("--db").arg(&db).output().unwrap();
    assert!(text(&o).contains("kprof store add"), "{}", text(&o));
    // --against with two files is a usage error.
    let o = kprof()
        .args(["compare", "--against", "best"])
        .arg(fixture())
        .arg(fixture())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A store of a newer kprof is refused and left as it was.
    let newer = dir.path().join("newer.db");
    {
        let conn = rusqlite_free_newer_db(&newer);
        assert!(conn);
    }
    let before = std::fs::read(&newer).unwrap();
    let o = kprof()
        .args(["store", "add"])
        .arg(fixture())
        .arg("--db")
        .arg(&newer)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("newer kprof"), "{}", text(&o));
    assert_eq!(std::fs::read(&newer).unwrap(), before);
}

/// Makes a store, then raises its schema version in the SQLite header (`user_version` is the
/// 4-byte big-endian integer at offset 60), as a future kprof would have written it.
fn rusqlite_free_newer_db(path: &Path) -> bool {
    let o = kprof()
        .args(["store", "add"])
        .arg(fixture())
        .arg("--db")
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // Fold the WAL into the file (export opens and closes it; the last connection checkpoints).
    let _ = kprof().args(["store", "export", "--db"]).arg(path).output().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(path, &bytes).unwrap();
    for ext in ["-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(ext);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    true
}
