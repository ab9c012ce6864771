//! Where `kprof run` and `kprof doctor` find `libkprof_inject.so`: `KPROF_INJECT_PATH`, next to the
//! kprof executable (or in `../lib`), the folders the Python package registers
//! ([`set_search_dirs`]), then the copy a release build embeds (see the crate's `build.rs`), written
//! once to the user's cache folder and checked byte for byte on every later use.
//!
//! The order and the cache folder, as users see them: `docs/install.md`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

/// Env var: an explicit path to libkprof_inject.so.
pub const ENV_INJECT_PATH: &str = "KPROF_INJECT_PATH";
/// The injection library's file name.
pub const INJECT_LIB: &str = "libkprof_inject.so";

static SEARCH_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers more folders to search (step 3 above); the Python package's `kprof` command calls
/// this with its package's `lib` folder and the environment's `bin` and `lib`.
pub fn set_search_dirs(dirs: Vec<PathBuf>) {
    *SEARCH_DIRS.lock().unwrap_or_else(|p| p.into_inner()) = dirs;
}

/// The folders registered with [`set_search_dirs`].
pub fn search_dirs() -> Vec<PathBuf> {
    SEARCH_DIRS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// An injection library carried inside the executable.
#[derive(Clone, Copy, Debug)]
pub struct Embedded {
    /// The library's bytes.
    pub bytes: &'static [u8],
    /// A short hash of the bytes (names the cache folder, so two builds never share a copy).
    pub hash: &'static str,
}

#[cfg(kprof_embed_inject)]
static EMBEDDED_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libkprof_inject.so"));

/// The copy embedded by a release build, if this build has one.
pub fn embedded() -> Option<Embedded> {
    #[cfg(kprof_embed_inject)]
    {
        Some(Embedded {
            bytes: EMBEDDED_BYTES,
            hash: env!("KPROF_EMBEDDED_INJECT_HASH"),
        })
    }
    #[cfg(not(kprof_embed_inject))]
    {
        None
    }
}

/// The cache roots tried for the embedded copy: `$XDG_CACHE_HOME`, `$HOME/.cache`, the temp folder.
pub fn cache_roots(get: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(x) = get("XDG_CACHE_HOME").filter(|x| Path::new(x).is_absolute()) {
        roots.push(PathBuf::from(x).join("kprof"));
    }
    if let Some(h) = get("HOME").filter(|h| !h.is_empty()) {
        roots.push(PathBuf::from(h).join(".cache/kprof"));
    }
    roots.push(std::env::temp_dir().join(format!("kprof-{}", kprof::sys::os::real_uid())));
    roots
}

/// Writes `lib` to `<root>/<version>-<hash>/libkprof_inject.so` unless an identical file is
/// already there; returns its path. The file appears whole or not at all (written beside, then
/// renamed), so concurrent `kprof run`s never load a partial copy.
pub fn extract(lib: &Embedded, root: &Path, version: &str) -> Result<PathBuf> {
    let dir = root.join(format!("{version}-{}", lib.hash));
    let path = dir.join(INJECT_LIB);
    if std::fs::read(&path).is_ok_and(|b| b == lib.bytes) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{INJECT_LIB}.{}.{nanos}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(lib.bytes)?;
        f.sync_all()?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        bail!("cannot write {}: {e}", path.display());
    }
    Ok(path)
}

/// Finds libkprof_inject.so (see the module docs). `explicit` is `KPROF_INJECT_PATH`, `exe` the
/// kprof executable, `dirs` the registered folders, `embedded` the built-in copy and
/// `cache_roots` where to write it.
pub fn find(
    explicit: Option<PathBuf>,
    exe: Option<PathBuf>,
    dirs: &[PathBuf],
    embedded: Option<Embedded>,
    cache_roots: &[PathBuf],
) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
        bail!("{ENV_INJECT_PATH}={} is not a file", p.display());
    }
    let mut tried = Vec::new();
    let mut candidates = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        candidates.push(dir.join(INJECT_LIB));
        candidates.push(dir.join("../lib").join(INJECT_LIB));
    }
    candidates.extend(dirs.iter().map(|d| d.join(INJECT_LIB)));
    for p in candidates {
        if p.is_file() {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
        tried.push(p.display().to_string());
    }
    if let Some(lib) = embedded {
        for root in cache_roots {
            match extract(&lib, root, kprof::VERSION) {
                Ok(p) => return Ok(p),
                Err(e) => tried.push(format!("the built-in copy: {e:#}")),
            }
        }
    }
    bail!(
        "cannot find {INJECT_LIB} (tried: {}); fix: `pip install` kprof's wheel (it ships the library), or \
         `cargo install --path crates/kprof-cli` (a release build carries it), or `cargo build --release -p \
         kprof-inject` and put target/release/{INJECT_LIB} next to the kprof executable, or set {ENV_INJECT_PATH}",
        if tried.is_empty() {
            "nothing: the kprof executable's path is unknown".into()
        } else {
            tried.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAKE: Embedded = Embedded {
        bytes: b"\x7fELF fake library",
        hash: "0123abcd",
    };

    #[test]
    fn the_embedded_copy_is_written_once_atomically_and_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let p = extract(&FAKE, dir.path(), "1.2.3").unwrap();
        assert_eq!(p, dir.path().join("1.2.3-0123abcd").join(INJECT_LIB));
        assert_eq!(std::fs::read(&p).unwrap(), FAKE.bytes);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o755);
        // Nothing else is left in the folder (no temporary file).
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
        // A later use keeps an identical file (same inode) ...
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = ino(&p);
        assert_eq!(extract(&FAKE, dir.path(), "1.2.3").unwrap(), p);
        assert_eq!(ino(&p), before);
        // ... and replaces a damaged one.
        std::fs::write(&p, b"truncated").unwrap();
        assert_eq!(extract(&FAKE, dir.path(), "1.2.3").unwrap(), p);
        assert_eq!(std::fs::read(&p).unwrap(), FAKE.bytes);
    }

    #[test]
    fn an_unwritable_cache_falls_through_to_the_next_root() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, b"a file, not a folder").unwrap();
        let good = dir.path().join("good");
        let p = find(None, None, &[], Some(FAKE), &[blocked.clone(), good.clone()]).unwrap();
        assert!(p.starts_with(&good), "{}", p.display());
        let e = find(None, None, &[], Some(FAKE), &[blocked]).unwrap_err().to_string();
        assert!(
            e.contains("the built-in copy: cannot create") && e.contains(ENV_INJECT_PATH),
            "{e}"
        );
    }

    #[test]
    fn search_order_explicit_then_exe_then_registered_dirs_then_embedded() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, pkg, env_lib, cache) = (
            dir.path().join("bin"),
            dir.path().join("site/kprof/lib"),
            dir.path().join("venv/lib"),
            dir.path().join("cache"),
        );
        for d in [&bin, &pkg, &env_lib] {
            std::fs::create_dir_all(d).unwrap();
        }
        let exe = Some(bin.join("kprof"));
        let dirs = vec![pkg.clone(), env_lib.clone()];
        let roots = vec![cache.clone()];
        let found = |explicit: Option<PathBuf>| find(explicit, exe.clone(), &dirs, Some(FAKE), &roots);
        // Nothing on disk: the embedded copy.
        assert!(found(None).unwrap().starts_with(&cache));
        std::fs::write(env_lib.join(INJECT_LIB), b"").unwrap();
        assert_eq!(found(None).unwrap(), env_lib.join(INJECT_LIB).canonicalize().unwrap());
        std::fs::write(pkg.join(INJECT_LIB), b"").unwrap();
        assert_eq!(found(None).unwrap(), pkg.join(INJECT_LIB).canonicalize().unwrap());
        std::fs::write(bin.join(INJECT_LIB), b"").unwrap();
        assert_eq!(found(None).unwrap(), bin.join(INJECT_LIB).canonicalize().unwrap());
        let other = dir.path().join("other.so");
        std::fs::write(&other, b"").unwrap();
        assert_eq!(found(Some(other.clone())).unwrap(), other.canonicalize().unwrap());
        let e = found(Some(dir.path().join("nope.so"))).unwrap_err().to_string();
        assert!(e.contains("KPROF_INJECT_PATH") && e.contains("nope.so"), "{e}");
    }

    #[test]
    fn not_found_names_every_place_and_the_fixes() {
        let dir = tempfile::tempdir().unwrap();
        let e = find(
            None,
            Some(dir.path().join("kprof")),
            &[dir.path().join("pkg")],
            None,
            &[],
        )
        .unwrap_err()
        .to_string();
        for want in [
            INJECT_LIB,
            "pkg/libkprof_inject.so",
            "pip install",
            "cargo install",
            ENV_INJECT_PATH,
        ] {
            assert!(e.contains(want), "{want} missing from: {e}");
        }
    }

    #[test]
    fn cache_roots_follow_xdg_then_home_then_temp() {
        let env = |x: Option<&'static str>, h: Option<&'static str>| {
            move |v: &str| match v {
                "XDG_CACHE_HOME" => x.map(String::from),
                "HOME" => h.map(String::from),
                _ => None,
            }
        };
        let r = cache_roots(env(Some("/x/cache"), Some("/home/u")));
        assert_eq!(
            r[..2],
            [PathBuf::from("/x/cache/kprof"), PathBuf::from("/home/u/.cache/kprof")]
        );
        // A relative XDG_CACHE_HOME is ignored (the XDG spec says so).
        let r = cache_roots(env(Some("rel"), None));
        assert_eq!(r.len(), 1);
        assert!(r[0].starts_with(std::env::temp_dir()));
    }
}
