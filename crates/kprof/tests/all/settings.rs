//! The registry of environment variables (`kprof::settings::ENV_VARS`) against the source tree
//! and `docs/configuration.md`:
//! - every `KPROF_*` name in `crates/*/src/**/*.rs`, `crates/*/build.rs`, `python/kprof/**/*.py`
//!   and `scripts/**` is registered (or listed in [`NOT_SETTINGS`] with the reason);
//! - every registered name still occurs somewhere there (no stale entries);
//! - the documentation's table has exactly one row per entry, equal to the entry.
//!
//! `crates/kprof/src/settings.rs` itself is not scanned (it names every entry).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kprof::settings::{EnvVar, ENV_VARS};

use crate::source_tree::{assert_scan_found, repo_root};

/// `KPROF_*` names in the tree that are not environment variables kprof reads, with the reason.
const NOT_SETTINGS: &[(&str, &str)] = &[
    (
        "KPROF_RAW_COLUMNS",
        "a constant of kprof-core's columns (exported to Python)",
    ),
    (
        "KPROF_PROCESSED_COLUMNS",
        "a constant of kprof-core's columns (exported to Python)",
    ),
    (
        "KPROF_EXTRA_COLUMNS",
        "a constant of kprof-core's columns (exported to Python)",
    ),
    (
        "KPROF_RESERVED_COLUMN_NAMES",
        "a constant of kprof-core's columns (exported to Python)",
    ),
    ("KPROF_VERSION", "a constant of the fingerprint (the crate version)"),
    (
        "KPROF_VERSION_FULL",
        "set by crates/kprof/build.rs for the compiler (cargo:rustc-env), not read from the user's environment",
    ),
    (
        "KPROF_EMBEDDED_INJECT_HASH",
        "set by crates/kprof-cli/build.rs for the compiler (cargo:rustc-env), not read from the user's environment",
    ),
    (
        "KPROF_SITE",
        "a shell variable of gpu-checks/gpu-wheel.sh, assigned there (an inherited value is overwritten)",
    ),
    (
        "KPROF_X",
        "a placeholder assignment in gpu-checks/gpu-check-truth.sh so that `env` has one; nothing reads it",
    ),
];

/// The file that registers the names (skipped by the scan).
const REGISTRY: &str = "crates/kprof/src/settings.rs";

/// Every file under `dir` (recursively) whose name passes `keep`, skipping `__pycache__`.
fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "__pycache__") {
                walk(&p, keep, out);
            }
        } else if keep(&p) {
            out.push(p);
        }
    }
}

/// The files scanned, relative to the repository root.
fn scanned_files(root: &Path) -> Vec<PathBuf> {
    let ext = |e: &'static str| move |p: &Path| p.extension().is_some_and(|x| x == e);
    let mut files = Vec::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    for c in &crates {
        walk(&c.join("src"), &ext("rs"), &mut files);
        if c.join("build.rs").is_file() {
            files.push(c.join("build.rs"));
        }
    }
    walk(&root.join("python/kprof"), &ext("py"), &mut files);
    walk(&root.join("scripts"), &|_| true, &mut files);
    // The GPU-check scripts (the harness's Rust binaries, like the examples, are not scanned).
    walk(
        &root.join("gpu-checks"),
        &|p: &Path| p.extension().is_none_or(|x| x != "rs"),
        &mut files,
    );
    files
        .into_iter()
        .map(|p| p.strip_prefix(root).expect("under the root").to_path_buf())
        .filter(|p| p != Path::new(REGISTRY))
        .collect()
}

/// The `KPROF_[A-Z0-9_]+` names in `text` that are not preceded by a letter, digit or `_`, nor end
/// with `_` (a prefix such as `KPROF_RUN_` is no name).
fn names_in(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("KPROF_").map(|i| i + from) {
        let mut end = i + "KPROF_".len();
        while end < bytes.len()
            && (bytes[end].is_ascii_uppercase() || bytes[end].is_ascii_digit() || bytes[end] == b'_')
        {
            end += 1;
        }
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let name = &text[i..end];
        if boundary && !name.ends_with('_') {
            out.insert(name.to_string());
        }
        from = end;
    }
    out
}

/// Every name in the scanned files, with the files it occurs in.
fn names_in_tree(root: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut found: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for rel in scanned_files(root) {
        let bytes = std::fs::read(root.join(&rel)).unwrap_or_else(|e| panic!("reading {}: {e}", rel.display()));
        for name in names_in(&String::from_utf8_lossy(&bytes)) {
            found.entry(name).or_default().push(rel.clone());
        }
    }
    found
}

fn files(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn names_in_finds_whole_names_only() {
    let got = names_in("$KPROF_STORE, std::env::var(\"KPROF_L2_FLUSH_BYTES\") NO_KPROF_X KPROF_RUN_ KPROF_ kprof_x");
    assert_eq!(
        got,
        BTreeSet::from(["KPROF_L2_FLUSH_BYTES".to_string(), "KPROF_STORE".to_string()])
    );
}

#[test]
fn registry_entries_are_well_formed() {
    let mut seen = BTreeSet::new();
    for v in ENV_VARS {
        assert!(seen.insert(v.name), "{} is registered twice", v.name);
        assert_eq!(
            names_in(v.name).into_iter().collect::<Vec<_>>(),
            [v.name],
            "not a KPROF_ name: {}",
            v.name
        );
        for (field, text) in [("default", v.default), ("meaning", v.meaning), ("read_by", v.read_by)] {
            assert!(!text.trim().is_empty(), "{}: empty {field}", v.name);
            // The fields are cells of the documentation's table.
            assert!(
                !text.contains('|') && !text.contains('\n'),
                "{}: `|` or a line break in {field}",
                v.name
            );
        }
    }
    for (name, _) in NOT_SETTINGS {
        assert!(
            !seen.contains(name),
            "{name} is both registered and listed as not a setting"
        );
    }
}

/// (a) A name read in the tree but not registered fails, naming the files that read it.
#[test]
fn every_kprof_variable_in_the_tree_is_registered() {
    let root = repo_root();
    let found = names_in_tree(&root);
    assert_scan_found(found.len(), 20, "KPROF_* names", &root);
    let registered: BTreeSet<&str> = ENV_VARS.iter().map(|v| v.name).collect();
    let excluded: BTreeSet<&str> = NOT_SETTINGS.iter().map(|(n, _)| *n).collect();
    let missing: Vec<String> = found
        .iter()
        .filter(|(n, _)| !registered.contains(n.as_str()) && !excluded.contains(n.as_str()))
        .map(|(n, f)| format!("  {n} (in {})", files(f)))
        .collect();
    assert!(
        missing.is_empty(),
        "KPROF_* names not in kprof::settings::ENV_VARS (add an entry, and a row to docs/configuration.md; or, if \
         it is no environment variable, list it in NOT_SETTINGS of this test):\n{}",
        missing.join("\n")
    );
}

/// (b) A registered name that occurs nowhere in the tree any more is stale; so is an entry of
/// [`NOT_SETTINGS`].
#[test]
fn no_registered_variable_is_stale() {
    let found = names_in_tree(&repo_root());
    let stale: Vec<&str> = ENV_VARS
        .iter()
        .map(|v| v.name)
        .chain(NOT_SETTINGS.iter().map(|(n, _)| *n))
        .filter(|n| !found.contains_key(*n))
        .collect();
    assert!(
        stale.is_empty(),
        "registered in kprof::settings::ENV_VARS (or NOT_SETTINGS of this test) but read nowhere in crates/*/src, \
         crates/*/build.rs, python/kprof or scripts/ any more; remove them (and their rows in \
         docs/configuration.md): {}",
        stale.join(", ")
    );
}

/// The documentation's row of an entry.
fn doc_row(v: &EnvVar) -> String {
    format!("| `{}` | {} | {} | {} |", v.name, v.default, v.meaning, v.read_by)
}

/// (c) `docs/configuration.md` has exactly one table row per entry, equal to the entry, and no
/// other variable rows.
#[test]
fn configuration_doc_has_one_row_per_registered_variable() {
    let path = repo_root().join("docs/configuration.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| `KPROF_")).collect();
    let mut problems = Vec::new();
    for v in ENV_VARS {
        let prefix = format!("| `{}` |", v.name);
        let mine: Vec<&&str> = rows.iter().filter(|r| r.starts_with(&prefix)).collect();
        match mine.as_slice() {
            [] => problems.push(format!("no row for {}", v.name)),
            [row] if **row == doc_row(v) => {}
            [_] => problems.push(format!("the row of {} differs from the registry", v.name)),
            _ => problems.push(format!("{} rows for {}", mine.len(), v.name)),
        }
    }
    for r in &rows {
        if !ENV_VARS.iter().any(|v| r.starts_with(&format!("| `{}` |", v.name))) {
            problems.push(format!("a row for an unregistered variable: {r}"));
        }
    }
    let table: Vec<String> = ENV_VARS.iter().map(doc_row).collect();
    assert!(
        problems.is_empty(),
        "docs/configuration.md and kprof::settings::ENV_VARS differ:\n  {}\nThe table's rows, from the \
         registry:\n{}",
        problems.join("\n  "),
        table.join("\n")
    );
}
