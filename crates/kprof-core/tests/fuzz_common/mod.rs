//! Shared generators of the parser fuzz campaign: arbitrary bytes, and structured mutations of the
//! fixtures under `tests/fixtures` (cells replaced by tricky tokens, lines duplicated, swapped or
//! dropped, bytes inserted, flipped or cut, JSON nodes replaced). Each case runs under a time bound
//! ([`within_deadline`]); cases per test: `PROPTEST_CASES`, else [`DEFAULT_CASES`]. How to run a
//! long campaign: `CONTRIBUTING.md` (Test).

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// Cases per test when `PROPTEST_CASES` is not set.
pub const DEFAULT_CASES: u32 = 96;

/// The most one case may take (debug build, inputs of at most a few hundred kB): longer is a hang.
pub const CASE_DEADLINE: Duration = Duration::from_secs(20);

/// proptest's configuration: `PROPTEST_CASES` or [`DEFAULT_CASES`] cases.
pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config {
        cases,
        max_shrink_iters: 2048,
        // The runner is driven by hand (campaign); a failure is reported with its shrunk input.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs `f` on its own thread and waits at most [`CASE_DEADLINE`]: a panic inside is re-raised
/// with its message, a longer run is reported as a hang (the thread is left behind).
pub fn within_deadline<F: FnOnce() + Send + 'static>(what: &str, f: F) {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let start = Instant::now();
        f();
        let _ = tx.send(start.elapsed());
    });
    match rx.recv_timeout(CASE_DEADLINE) {
        Ok(_) => {
            handle.join().unwrap();
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The closure panicked: join gives the payload.
            let payload = handle.join().unwrap_err();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what}: the parser panicked: {msg}");
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no answer within {CASE_DEADLINE:?} (a hang)"),
    }
}

/// Counts the cases of one test and prints the count and duration when dropped (seen with
/// `--nocapture`), for the campaign's report.
pub struct Tally {
    name: &'static str,
    start: Instant,
    cases: std::sync::atomic::AtomicU64,
}

impl Tally {
    /// Starts counting.
    pub fn new(name: &'static str) -> Self {
        Tally {
            name,
            start: Instant::now(),
            cases: Default::default(),
        }
    }

    /// One more case; every 250 cases a progress line (a long run stopped by `timeout` still
    /// says how far it got).
    pub fn tick(&self) {
        let n = self.cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n % 250 == 0 {
            println!(
                "fuzz {}: {n} cases in {:.1} s (running)",
                self.name,
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        println!(
            "fuzz {}: {} cases in {:.1} s",
            self.name,
            self.cases.load(std::sync::atomic::Ordering::Relaxed),
            self.start.elapsed().as_secs_f64()
        );
    }
}

/// The repository's `tests/fixtures` folder.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The bytes of the fixtures at these paths (relative to `tests/fixtures`).
pub fn load(paths: &[&str]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .map(|p| std::fs::read(fixtures_dir().join(p)).unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect()
}

/// Cells that parsers find hard: missing-value spellings, non-finite and overflowing numbers,
/// quotes and separators, a BOM, bidi and wide characters, both number styles, JSON fragments,
/// column names of every format.
pub const TOKENS: &[&str] = &[
    "",
    "nan",
    "NaN",
    "None",
    "<NA>",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1e-320",
    "-0",
    "0",
    "-1",
    "1.7976931348623157e308",
    "18446744073709551616",
    "4294967296",
    "99999999999999999999999999",
    "True",
    "False",
    "\"",
    "\"\"",
    ",",
    ";",
    "\n",
    "\r\n",
    "\r",
    "\u{feff}",
    "\u{202e}",
    "\u{0}",
    "💥",
    "矩阵",
    "1,234.5",
    "1.234,5",
    "4.264.448",
    "1,980,000",
    "ID",
    "Kernel Name",
    "Annotation",
    "Value",
    "AvgValue",
    "Metric",
    "Unit",
    "Run",
    "Benchmark",
    "Normalized",
    "StableMeasurement",
    "NumRuns",
    "ns",
    "gpu__time_duration.sum",
    "==PROF== Connected",
    "kprof:matmul#c0.0.0",
    "{",
    "}",
    "[",
    "]",
    "null",
    "\"NaN\"",
    "\"inf\"",
    "[]",
    "{}",
    "0x10",
    "1e",
    ".",
    "-",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

/// One edit of an input.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Replace a cell (split on `,`) of a line with a token.
    ReplaceCell(Index, Index, usize),
    /// Insert a token at a byte position.
    InsertToken(Index, usize),
    /// Insert arbitrary bytes at a byte position.
    InsertBytes(Index, Vec<u8>),
    /// Remove up to this many bytes from a position.
    Delete(Index, usize),
    /// Flip a byte.
    Flip(Index, u8),
    /// Duplicate a line.
    DuplicateLine(Index),
    /// Remove a line.
    DropLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Cut the input at a position.
    Truncate(Index),
    /// Repeat a line many times (large inputs).
    RepeatLine(Index, usize),
}

/// Any [`Mutation`].
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let tok = 0..TOKENS.len();
    prop_oneof![
        4 => (any::<Index>(), any::<Index>(), tok.clone()).prop_map(|(l, c, t)| Mutation::ReplaceCell(l, c, t)),
        2 => (any::<Index>(), tok).prop_map(|(p, t)| Mutation::InsertToken(p, t)),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..8)).prop_map(|(p, b)| Mutation::InsertBytes(p, b)),
        1 => (any::<Index>(), 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        1 => any::<Index>().prop_map(Mutation::DuplicateLine),
        1 => any::<Index>().prop_map(Mutation::DropLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), 2usize..400).prop_map(|(l, n)| Mutation::RepeatLine(l, n)),
    ]
}

fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

/// Applies `m` to `input`.
pub fn apply(input: &mut Vec<u8>, m: &Mutation) {
    let pos = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len + 1) };
    match m {
        Mutation::ReplaceCell(l, c, t) => {
            let mut lines = split_lines(input);
            if lines.is_empty() {
                input.extend_from_slice(TOKENS[*t].as_bytes());
                return;
            }
            let li = l.index(lines.len());
            let line = &lines[li];
            let mut cells: Vec<Vec<u8>> = line.split(|&b| b == b',').map(<[u8]>::to_vec).collect();
            let ci = c.index(cells.len());
            let quoted = cells[ci].first() == Some(&b'"');
            let mut cell = TOKENS[*t].as_bytes().to_vec();
            if quoted {
                cell.insert(0, b'"');
                cell.push(b'"');
            }
            if ci + 1 == cells.len() && line.ends_with(b"\n") {
                cell.push(b'\n');
            }
            cells[ci] = cell;
            lines[li] = cells.join(&b","[..]);
            *input = lines.concat();
        }
        Mutation::InsertToken(p, t) => {
            let at = pos(p, input.len());
            input.splice(at..at, TOKENS[*t].bytes());
        }
        Mutation::InsertBytes(p, b) => {
            let at = pos(p, input.len());
            input.splice(at..at, b.iter().copied());
        }
        Mutation::Delete(p, n) => {
            let at = pos(p, input.len());
            let end = (at + n).min(input.len());
            input.drain(at..end);
        }
        Mutation::Flip(p, b) => {
            if !input.is_empty() {
                let at = p.index(input.len());
                input[at] ^= b | 1;
            }
        }
        Mutation::DuplicateLine(l) | Mutation::DropLine(l) | Mutation::RepeatLine(l, _) => {
            let mut lines = split_lines(input);
            if lines.is_empty() {
                return;
            }
            let li = l.index(lines.len());
            match m {
                Mutation::DuplicateLine(_) => {
                    let line = lines[li].clone();
                    lines.insert(li, line);
                }
                Mutation::DropLine(_) => {
                    lines.remove(li);
                }
                Mutation::RepeatLine(_, n) => {
                    let mut line = lines[li].clone();
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    for _ in 0..*n {
                        lines.insert(li, line.clone());
                    }
                }
                _ => unreachable!(),
            }
            *input = lines.concat();
        }
        Mutation::SwapLines(a, b) => {
            let mut lines = split_lines(input);
            if lines.len() >= 2 {
                let (a, b) = (a.index(lines.len()), b.index(lines.len()));
                lines.swap(a, b);
                *input = lines.concat();
            }
        }
        Mutation::Truncate(p) => {
            let at = pos(p, input.len());
            input.truncate(at);
        }
    }
}

/// A seed (an index into `seeds`) with 1..`max` mutations applied.
pub fn mutated(seeds: Vec<Vec<u8>>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    (0..n, proptest::collection::vec(mutation(), 1..max)).prop_map(move |(i, ms)| {
        let mut input = seeds[i].clone();
        for m in &ms {
            apply(&mut input, m);
        }
        input
    })
}

/// One of the bytes `special` (each as likely as a digit, and as all lowercase letters together),
/// a digit or a lowercase letter.
pub fn special_or_alphanumeric(special: &'static [u8]) -> impl Strategy<Value = u8> + Clone {
    prop_oneof![
        special.len() as u32 => proptest::sample::select(special),
        1 => b'0'..=b'9',
        1 => b'a'..=b'z',
    ]
}

/// Arbitrary bytes, mostly printable CSV-ish characters, of up to `max` bytes.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..max),
        proptest::collection::vec(special_or_alphanumeric(b",\"\n\r{}:"), 0..max),
    ]
}

/// A JSON value that replaces a node of a JSON seed.
fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|x| json!(x)),
        any::<u64>().prop_map(|x| json!(x)),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| json!(x)),
        (0..TOKENS.len()).prop_map(|t| Value::String(TOKENS[t].to_string())),
        Just(json!([])),
        Just(json!({})),
        Just(json!([1, "a", null])),
        Just(json!({"schema": "kprof.results", "schema_version": 1})),
    ]
}

/// Replaces the node reached by `path` (indices into arrays/objects, stopping at a leaf or after
/// the path) with `leaf`; `drop` removes it from its parent instead.
pub fn replace_json_node(v: &mut serde_json::Value, path: &[Index], leaf: serde_json::Value, drop: bool) {
    use serde_json::Value;
    let Some((i, rest)) = path.split_first() else {
        *v = leaf;
        return;
    };
    match v {
        Value::Array(a) if !a.is_empty() => {
            let k = i.index(a.len());
            if rest.is_empty() && drop {
                a.remove(k);
            } else {
                replace_json_node(&mut a[k], rest, leaf, drop);
            }
        }
        Value::Object(o) if !o.is_empty() => {
            let key = o.keys().nth(i.index(o.len())).cloned().unwrap();
            if rest.is_empty() && drop {
                o.remove(&key);
            } else if let Some(child) = o.get_mut(&key) {
                replace_json_node(child, rest, leaf, drop);
            }
        }
        _ => *v = leaf,
    }
}

/// A JSON seed with 1..`max` nodes replaced or removed, serialised (pretty or compact).
pub fn mutated_json(seeds: Vec<serde_json::Value>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    let edit = (
        proptest::collection::vec(any::<Index>(), 1..8),
        json_leaf(),
        proptest::bool::weighted(0.2),
    );
    (0..n, proptest::collection::vec(edit, 1..max), any::<bool>()).prop_map(move |(i, edits, pretty)| {
        let mut v = seeds[i].clone();
        for (path, leaf, drop) in edits {
            replace_json_node(&mut v, &path, leaf, drop);
        }
        if pretty {
            serde_json::to_vec_pretty(&v).unwrap()
        } else {
            serde_json::to_vec(&v).unwrap()
        }
    })
}

/// Writes `bytes` to a new file in a temporary folder shared by the test binary (the readers
/// that take a path read it back), named after `ext`; the file is removed when the returned
/// guard is dropped.
pub fn put(ext: &str, bytes: &[u8]) -> TempInput {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir.path().join(format!("case-{n}.{ext}"));
    std::fs::write(&p, bytes).unwrap();
    TempInput(p)
}

/// A fuzz input on disk, removed on drop.
pub struct TempInput(pub PathBuf);

impl Drop for TempInput {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `check` on `cases` inputs of `strategy` (proptest's runner: a failing input is shrunk and
/// reported), then prints `fuzz NAME: N cases in S s`.
pub fn campaign<S: Strategy>(name: &'static str, strategy: S, check: impl Fn(S::Value))
where
    S::Value: Clone + std::fmt::Debug,
{
    let tally = Tally::new(name);
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let result = runner.run(&strategy, |v| {
        tally.tick();
        check(v);
        Ok(())
    });
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}
