//! A run's metadata: name, time, host, git state of the working directory, tags, fingerprint.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Result, StoreError};

/// The git state of a working directory when a run was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitInfo {
    /// The full commit hash of `HEAD` (or the one given with `--commit`).
    pub commit: String,
    /// The branch checked out (`None` on a detached `HEAD` or when not known).
    pub branch: Option<String>,
    /// Whether tracked files had uncommitted changes (`None` when not known, e.g. `--commit`).
    pub dirty: Option<bool>,
}

/// Everything stored about a run besides its results.
#[derive(Clone, Debug, PartialEq)]
pub struct RunMeta {
    /// The command or benchmark name.
    pub name: String,
    /// The file the results were read from, when any.
    pub source: Option<String>,
    /// The host the results were measured on.
    pub host: Option<String>,
    /// The git state, when the working directory is a git repository.
    pub git: Option<GitInfo>,
    /// The environment fingerprint (a kprof `.env.json` sidecar or a JSON file's `environment`).
    pub environment: Option<serde_json::Value>,
    /// User tags (`key=value`); keys are unique.
    pub tags: Vec<(String, String)>,
    /// When the run was stored, milliseconds since the Unix epoch (UTC).
    pub created_unix_ms: i64,
}

impl RunMeta {
    /// A run called `name`, stored now, on this machine's host name, without git state or tags.
    pub fn new(name: impl Into<String>) -> RunMeta {
        RunMeta {
            name: name.into(),
            source: None,
            host: hostname(),
            git: None,
            environment: None,
            tags: Vec::new(),
            created_unix_ms: now_unix_ms(),
        }
    }

    /// Records the git state of `dir` (see [`git_info`]); no change when it is not in a repository.
    pub fn detect_git(mut self, dir: &Path) -> RunMeta {
        self.git = git_info(dir);
        self
    }

    /// Adds (or replaces) a tag.
    pub fn with_tag(mut self, key: impl Into<String>, value: impl Into<String>) -> RunMeta {
        let key = key.into();
        let value = value.into();
        match self.tags.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.tags.push((key, value)),
        }
        self
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// This machine's host name (Linux: `/proc/sys/kernel/hostname`, else the `hostname` command).
pub fn hostname() -> Option<String> {
    let from_proc = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let name = from_proc.or_else(|| run_quietly(Path::new("."), "hostname", &[]))?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The git state of `dir`: `git rev-parse HEAD`, the branch (`git symbolic-ref --short HEAD`),
/// and whether `git status --porcelain --untracked-files=no` lists anything. `None` when `dir`
/// is not inside a git work tree, has no commit yet, or `git` is not installed.
pub fn git_info(dir: &Path) -> Option<GitInfo> {
    let commit = run_quietly(dir, "git", &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    let commit = commit.trim().to_string();
    if commit.is_empty() {
        return None;
    }
    let branch = run_quietly(dir, "git", &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty());
    let dirty =
        run_quietly(dir, "git", &["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.trim().is_empty());
    Some(GitInfo { commit, branch, dirty })
}

/// Runs a command in `dir`; its stdout when it exits with 0, else `None`.
fn run_quietly(dir: &Path, program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

/// Parses a `key=value` tag. The key must be non-empty and may not contain `=`; the value may
/// be empty.
pub fn parse_tag(text: &str) -> Result<(String, String)> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(StoreError::Invalid(format!(
            "tag {text:?} is not key=value; write it like --tag gpu=h200"
        ))),
    }
}
