//! Records the git revision kprof is built from, for `kprof --version`, `kprof.__version__` and
//! the environment fingerprint:
//! - `KPROF_GIT_REV`: the `KPROF_GIT_REV` environment variable when set, else `git rev-parse
//!   --short HEAD` when the source is a git checkout and git is installed; unset otherwise;
//! - `KPROF_VERSION_FULL`: the crate version, with `+g<rev>` (a PEP 440 local version) when the
//!   revision is known.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=KPROF_GIT_REV");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let explicit = std::env::var("KPROF_GIT_REV").ok().filter(|r| !r.is_empty());
    let rev = explicit.or_else(|| {
        let rev = git(&["rev-parse", "--short", "HEAD"])?;
        // Rebuild when HEAD moves: HEAD itself, the branch it points to, packed refs.
        let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch.push(r);
        }
        for w in watch {
            if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
                if Path::new(&p).exists() {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
        }
        Some(rev)
    });
    match rev {
        Some(rev) => {
            let rev: String = rev.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            println!("cargo:rustc-env=KPROF_GIT_REV={rev}");
            println!("cargo:rustc-env=KPROF_VERSION_FULL={version}+g{rev}");
        }
        None => println!("cargo:rustc-env=KPROF_VERSION_FULL={version}"),
    }
}
