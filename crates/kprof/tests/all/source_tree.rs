//! The repository's source tree for the tests that read it as text (house rules, messages):
//! its root, and its `.rs` files.

use std::fs;
use std::path::{Path, PathBuf};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Fails unless a scan of the tree at `root` found more than `at_least` items (`found` of them,
/// described by `what`, e.g. "source files under crates/*/src"): a guard against scanning nothing.
pub fn assert_scan_found(found: usize, at_least: usize, what: &str, root: &Path) {
    assert!(
        found > at_least,
        "the scan found only {found} {what} in {}: is the tree there?",
        root.display()
    );
}

/// Every `.rs` file under `dir`, recursively, sorted.
pub fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    rs_files_but(dir, &|_| false, out);
}

/// [`rs_files`] without the files and folders (and what they hold) that `skip` names.
pub fn rs_files_but(dir: &Path, skip: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if skip(&p) {
            continue;
        }
        if p.is_dir() {
            rs_files_but(&p, skip, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}
