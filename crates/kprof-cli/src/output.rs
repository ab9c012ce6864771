//! What the commands print and how they end: text to standard output without panicking on a
//! closed pipe, files through kprof-core's one writer ([`kprof_core::io::atomic`]), and the
//! error line (each cause once, no repeated OS error text).

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use kprof_core::io::{atomic, IoError};

/// How a command prints its result.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text tables.
    Table,
    /// JSON.
    Json,
    /// A Markdown summary (a pull-request comment, `$GITHUB_STEP_SUMMARY`): worst first.
    Markdown,
}

/// `--format` and its shorthand `--json`, for the commands that print a judgement of changes
/// (`kprof compare`, `kprof history`).
#[derive(clap::Args, Debug, Clone)]
pub struct FormatArgs {
    /// How to print: `table`, `json`, or `markdown` (a CI summary, worst first).
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Print JSON (the same as `--format json`).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

impl FormatArgs {
    /// The format asked for, `--json` included.
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}

/// Prints `text` to standard output. A failed write is an error naming standard output (a closed
/// pipe included: [`fail`] ends such a command quietly).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| IoError::Write {
            path: "standard output".into(),
            source,
        })?;
    Ok(())
}

/// Writes `bytes` at `path` (`-`: standard output) with kprof-core's writer: atomic replacement
/// of regular files, through symbolic links, in place for devices and pipes, parent folders
/// created.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(atomic::write_bytes(path, bytes)?)
}

/// Says on stderr what was written, unless it went to standard output.
pub fn wrote(path: &Path, what: &str) {
    if !atomic::is_stdout(path) {
        eprintln!("wrote {}{what}", path.display());
    }
}

/// Whether the error (or one of its causes) is a write to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.downcast_ref::<IoError>().is_some_and(atomic::is_broken_pipe)
    })
}

/// The error and its causes on one line, `: `-separated, leaving out a cause whose text (without
/// Rust's ` (os error N)`) the line already holds.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        let core = match part.rfind(" (os error ") {
            Some(i) if part.ends_with(')') => &part[..i],
            _ => part.as_str(),
        };
        if text.contains(core) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// The exit code of a command that failed with `err`, after saying why on stderr: a closed pipe
/// on standard output ends the command quietly with 0 (as `ls | head` does), anything else is
/// one `kprof: error: ...` line and `code`.
pub fn fail(err: &anyhow::Error, code: i32) -> i32 {
    if is_broken_pipe(err) {
        return 0;
    }
    eprintln!("kprof: error: {}", error_text(err));
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_not_repeated() {
        let io = std::io::Error::from_raw_os_error(21);
        let e = anyhow::Error::new(IoError::Write {
            path: "x".into(),
            source: io,
        });
        let text = error_text(&e);
        assert_eq!(text.matches("Is a directory").count(), 1, "{text}");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }

    #[test]
    fn broken_pipes_are_recognised_through_contexts() {
        let e = anyhow::Error::new(IoError::Write {
            path: "standard output".into(),
            source: std::io::ErrorKind::BrokenPipe.into(),
        })
        .context("cannot show");
        assert!(is_broken_pipe(&e));
        assert!(!is_broken_pipe(&anyhow::anyhow!("x")));
    }
}
