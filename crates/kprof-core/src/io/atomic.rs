//! The one writer of output files that every kprof door uses (the CLI's commands, the engine's
//! result files, the Python package's `save`/`plot`/`report`), so that nothing the user owns is
//! damaged: `-` is standard output, a regular file is replaced atomically (a temporary file in the
//! same folder, synced and renamed), a symbolic link's target is written and the link kept, devices
//! and pipes are written in place, missing folders are created, and a failed write is an
//! [`IoError::Write`] naming the path ([`is_broken_pipe`] tells a closed pipe apart).
//!
//! Each rule as users see it: `docs/offline.md` (Result files).

use std::fs::{self, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::IoError;

/// The path that means standard output.
pub const STDOUT_PATH: &str = "-";

/// The most symbolic links followed before giving up (as the kernel's `ELOOP` limit).
const MAX_LINK_HOPS: usize = 40;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How an output path is written, decided by [`plan`] before any data are produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    /// Standard output (the path `-`).
    Stdout,
    /// A regular file or a new name: replaced atomically through a temporary file beside it.
    Replace(PathBuf),
    /// Something that is not a regular file (device, pipe, socket) or a file reached through
    /// `/proc/self/fd` (`/dev/stdout`): opened and written in place; `append` for a regular file
    /// behind such a link.
    Direct {
        /// The path to open.
        path: PathBuf,
        /// Open in append mode.
        append: bool,
    },
}

/// Whether `path` is `-` (standard output).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT_PATH
}

fn write_error(path: &Path, source: std::io::Error) -> IoError {
    IoError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn under_proc_fd(p: &Path) -> bool {
    p.starts_with("/proc") || p.starts_with("/dev/fd")
}

/// Decides how `path` is written: follows symbolic links (relative ones from the link's folder)
/// and looks at what they end at. Errors: a folder, a loop of links, or a path that cannot be
/// looked at.
pub fn plan(path: &Path) -> Result<OutputTarget, IoError> {
    if is_stdout(path) {
        return Ok(OutputTarget::Stdout);
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        if under_proc_fd(&p) {
            let append = fs::metadata(&p).map(|m| m.is_file()).unwrap_or(false);
            return Ok(OutputTarget::Direct { path: p, append });
        }
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OutputTarget::Replace(p)),
            Err(e) => return Err(write_error(path, e)),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let to = fs::read_link(&p).map_err(|e| write_error(path, e))?;
            p = if to.is_absolute() {
                to
            } else {
                p.parent().unwrap_or_else(|| Path::new(".")).join(to)
            };
        } else if kind.is_file() {
            return Ok(OutputTarget::Replace(p));
        } else if kind.is_dir() {
            return Err(IoError::Schema {
                path: path.to_path_buf(),
                message: "is a folder; give a file name (for example a name inside it)".into(),
            });
        } else {
            return Ok(OutputTarget::Direct { path: p, append: false });
        }
    }
    Err(IoError::Schema {
        path: path.to_path_buf(),
        message: format!("more than {MAX_LINK_HOPS} symbolic links to follow (a loop?); give the file's real path"),
    })
}

/// Writes the output at `path` with `write`, following the rules of the module documentation.
/// Errors from `write` are returned as they are; failures of opening, flushing, syncing or
/// renaming are [`IoError::Write`] naming `path`.
pub fn write_output<F>(path: &Path, write: F) -> Result<(), IoError>
where
    F: FnOnce(&mut dyn Write) -> Result<(), IoError>,
{
    match plan(path)? {
        OutputTarget::Stdout => {
            let name = Path::new("standard output");
            let mut out = std::io::stdout().lock();
            write(&mut out)?;
            out.flush().map_err(|e| write_error(name, e))
        }
        OutputTarget::Direct { path: target, append } => {
            let file = OpenOptions::new()
                .write(true)
                .append(append)
                .open(&target)
                .map_err(|e| write_error(path, e))?;
            let mut w = BufWriter::new(&file);
            write(&mut w)?;
            w.flush().map_err(|e| write_error(path, e))
        }
        OutputTarget::Replace(target) => replace(path, &target, write),
    }
}

/// Writes `bytes` at `path` with [`write_output`].
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    write_output(path, |w| w.write_all(bytes).map_err(|e| write_error(path, e)))
}

/// Whether `err` (or the I/O error inside it) is a write to a closed pipe (`EPIPE`).
pub fn is_broken_pipe(err: &IoError) -> bool {
    matches!(err, IoError::Write { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

fn replace<F>(shown: &Path, target: &Path, write: F) -> Result<(), IoError>
where
    F: FnOnce(&mut dyn Write) -> Result<(), IoError>,
{
    let werr = |e| write_error(shown, e);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        fs::create_dir_all(&dir).map_err(werr)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    let (tmp, file) = loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(werr(e)),
        }
    };
    let result = (|| {
        if let Ok(old) = fs::metadata(target) {
            // Keep the replaced file's permission bits (a group-readable result stays so).
            fs::set_permissions(&tmp, old.permissions()).map_err(werr)?;
        }
        let mut w = BufWriter::new(&file);
        write(&mut w)?;
        w.flush().map_err(werr)?;
        drop(w);
        file.sync_all().map_err(werr)?;
        fs::rename(&tmp, target).map_err(werr)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap()
    }

    #[test]
    fn replaces_regular_files_atomically_and_keeps_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        fs::write(&p, "old").unwrap();
        write_bytes(&p, b"new").unwrap();
        assert_eq!(read(&p), "new");
        let err = write_output(&p, |_| {
            Err(IoError::Schema {
                path: p.clone(),
                message: "boom".into(),
            })
        });
        assert!(err.is_err());
        assert_eq!(read(&p), "new", "a failed write keeps the old contents");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_symlinks_and_keeps_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("data").join("t.csv");
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink("data/t.csv", &link).unwrap();
        write_bytes(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(read(&target), "new");
        // A dangling link: its target is created.
        let dangling = dir.path().join("d.csv");
        std::os::unix::fs::symlink(dir.path().join("made.csv"), &dangling).unwrap();
        write_bytes(&dangling, b"x").unwrap();
        assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        assert_eq!(read(&dir.path().join("made.csv")), "x");
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes(&p, b"new").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn devices_are_written_in_place_and_a_full_device_is_an_error_naming_it() {
        write_bytes(Path::new("/dev/null"), b"x").unwrap();
        assert!(!fs::metadata("/dev/null").unwrap().is_file());
        if Path::new("/dev/full").exists() {
            let e = write_bytes(Path::new("/dev/full"), b"x").unwrap_err();
            let text = e.to_string();
            assert!(text.contains("/dev/full") && text.contains("space"), "{text}");
            assert!(!fs::metadata("/dev/full").unwrap().is_file(), "/dev/full was replaced");
        }
    }

    #[test]
    fn creates_missing_parent_folders_and_refuses_folders() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x").join("y").join("a.csv");
        write_bytes(&p, b"1").unwrap();
        assert_eq!(read(&p), "1");
        let e = write_bytes(dir.path(), b"1").unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
    }

    #[test]
    fn plans() {
        assert_eq!(plan(Path::new("-")).unwrap(), OutputTarget::Stdout);
        assert!(matches!(
            plan(Path::new("/dev/stdout")).unwrap(),
            OutputTarget::Direct { .. }
        ));
    }
}
