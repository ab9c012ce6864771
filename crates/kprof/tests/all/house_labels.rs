//! No history labels in the repository: the docs, comments, tests and fixture names say what a
//! measurement is (the card, the reference, the number), not which work period or GPU run made it
//! ("session 24", "s24-call6", "call 9", "issue 17", "issue #35"). The history of measurements
//! lives in `CHANGELOG.md`, by date and GPU, the one file this test does not read.
//! Plain file reading, no GPU.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::source_tree::repo_root;

/// Tracked files (path prefixes) allowed to carry labels: none. Do not add to it: say what the
/// label stood for instead (the date and the card go to `CHANGELOG.md`).
const LABELS_ALLOWED: &[&str] = &[];

/// Files the test never reads: the dated history itself, and this file (its examples).
const HISTORY: &[&str] = &["CHANGELOG.md", "crates/kprof/tests/all/house_labels.rs"];

const WORDS: &[&str] = &["session", "call", "issue"];

/// The history labels in `text`: a word of `WORDS` (any case, not the tail of a longer word),
/// an optional plural `s`, an optional separator (` `, `_`, `-`), an optional `#`, then digits,
/// unless a `(` follows (a function named so, PyO3's `call1(...)`, is code, not a label).
/// This covers `session 24`, `sessions 12`, `call9`, `s24-call6`, `issue 17`, `issue #35` and
/// file names such as `test_truth_session14.py`.
fn labels(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let lb = lower.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lb.len() {
        let starts_word = i == 0 || !b[i - 1].is_ascii_alphabetic();
        let word = if starts_word {
            WORDS.iter().find(|w| lb[i..].starts_with(w.as_bytes()))
        } else {
            None
        };
        let Some(word) = word else {
            i += 1;
            continue;
        };
        let mut j = i + word.len();
        if lb.get(j) == Some(&b's') {
            j += 1;
        }
        if matches!(lb.get(j), Some(b' ' | b'_' | b'-')) {
            j += 1;
        }
        if lb.get(j) == Some(&b'#') {
            j += 1;
        }
        if lb.get(j).is_some_and(|c| c.is_ascii_digit()) {
            while lb.get(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
            }
            if lb.get(j) != Some(&b'(') {
                found.push(String::from_utf8_lossy(&b[i..j]).into_owned());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

/// A label split across two lines: `line` ends with a word of `WORDS` (with its optional `s`) and
/// `next`, past its indentation and comment or list markers, starts with an optional `#` and a digit.
fn label_across(line: &str, next: &str) -> Option<String> {
    let end = line.trim_end();
    let lower = end.to_ascii_lowercase();
    let word = WORDS.iter().find_map(|w| {
        [format!("{w}s"), (*w).to_string()].into_iter().find(|form| {
            lower.ends_with(form.as_str())
                && !lower[..lower.len() - form.len()]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphabetic())
        })
    })?;
    let rest = next.trim_start_matches(|c: char| c.is_whitespace() || "#/!*->\"".contains(c));
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then(|| format!("{} {digits}", &end[end.len() - word.len()..]))
}

/// The tracked files (`git ls-files`); without git (a copy of the tree), every file but build
/// outputs, virtual environments and hidden folders.
fn tracked_files(root: &Path) -> Vec<String> {
    if let Ok(out) = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output()
    {
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout)
                .split('\0')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
    }
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "__pycache__" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(r) = p.strip_prefix(root) {
                out.push(r.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn no_history_labels_in_the_repository() {
    let root = repo_root();
    let mut problems = Vec::new();
    for file in tracked_files(&root) {
        if HISTORY.contains(&file.as_str()) || LABELS_ALLOWED.iter().any(|p| file.starts_with(p)) {
            continue;
        }
        let in_name = labels(&file);
        if !in_name.is_empty() {
            problems.push(format!("{file}: in its name: {}", in_name.join(", ")));
        }
        // Binary files (images, fonts) are not read; a missing one (deleted, not yet staged) neither.
        let Ok(bytes) = fs::read(root.join(&file)) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let mut found = labels(line);
            found.extend(lines.get(n + 1).and_then(|next| label_across(line, next)));
            if !found.is_empty() {
                problems.push(format!("{file}:{}: {}", n + 1, found.join(", ")));
            }
        }
    }
    let files: std::collections::BTreeSet<&str> = problems.iter().map(|p| p.split(':').next().unwrap_or("")).collect();
    assert!(
        problems.is_empty(),
        "{} history labels in {} files (work periods, GPU runs, issue numbers): say what the \
         measurement is instead (the card, the reference, the number); its date and GPU go to \
         CHANGELOG.md:\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
}

#[test]
fn the_label_pattern() {
    let hits = |s: &str| labels(s);
    assert_eq!(hits("session 24's engine"), ["session 24"]);
    assert_eq!(hits("Sessions 12-13"), ["Sessions 12"]);
    assert_eq!(hits("s24-call6-graph.log and call9..12"), ["call6", "call9"]);
    assert_eq!(hits("test_h200_truth_session14.py"), ["session14"]);
    assert_eq!(hits("issue 17, nsight-python issue #35"), ["issue 17", "issue #35"]);
    assert_eq!(hits("calls 3-5"), ["calls 3"]);
    assert!(hits("the first call of the day, recall 5, callbacks 2, session_id, one call").is_empty());
    assert!(hits("NVTX copy #1, color #222, f.call1((a,))").is_empty());
    assert_eq!(
        label_across("measured in session", "// 16's engine"),
        Some("session 16".to_string())
    );
    assert_eq!(label_across("bench calls", "  1-6 = a"), Some("calls 1".to_string()));
    assert_eq!(label_across("one call", "took 2 ms"), None);
    assert_eq!(label_across("a recall", "5 times"), None);
}
