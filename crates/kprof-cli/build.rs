//! Carries `libkprof_inject.so` inside a release `kprof` executable, so that `cargo install --path
//! crates/kprof-cli` alone gives a working `kprof run` (cargo installs executables only). The
//! executable writes the library out on first use (`src/inject_lib.rs`).
//!
//! When the profile is `release` (or `KPROF_EMBED_INJECT=1`), this script builds the
//! `kprof-inject` crate of the same source tree with the same cargo (`cargo build --release -p
//! kprof-inject`, its own target folder under `OUT_DIR`), copies the library to
//! `OUT_DIR/libkprof_inject.so` and sets the `kprof_embed_inject` cfg and
//! `KPROF_EMBEDDED_INJECT_HASH`. `KPROF_EMBED_INJECT=0` turns it off (the Python wheel ships the
//! library as a file instead); debug builds (`cargo test`) skip it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kprof_embed_inject)");
    println!("cargo:rerun-if-env-changed=KPROF_EMBED_INJECT");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let crates = manifest.parent().unwrap().to_path_buf();
    let inject_manifest = crates.join("kprof-inject/Cargo.toml");
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let wanted = match std::env::var("KPROF_EMBED_INJECT").ok().as_deref() {
        Some("0") => false,
        Some("1") => true,
        _ => profile == "release",
    };
    if !wanted || !inject_manifest.is_file() {
        return;
    }
    for p in [
        crates.join("kprof-inject/src"),
        crates.join("kprof-inject/Cargo.toml"),
        crates.join("kprof/src"),
        crates.join("kprof/build.rs"),
        crates.join("kprof/Cargo.toml"),
        crates.join("kprof-core/src"),
        crates.join("kprof-core/Cargo.toml"),
        crates.join("../Cargo.lock"),
    ] {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = std::env::var("TARGET").unwrap();
    let target_dir = out.join("inject-build");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "-p",
            "kprof-inject",
            "--target",
            &target,
            "--manifest-path",
        ])
        .arg(&inject_manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols")
        .status();
    let lib: PathBuf = target_dir.join(&target).join("release/libkprof_inject.so");
    match status {
        Ok(s) if s.success() && lib.is_file() => {}
        other => panic!(
            "building libkprof_inject.so to carry inside kprof failed ({other:?}); see the cargo output above. \
             To build kprof without it, set KPROF_EMBED_INJECT=0 (then put libkprof_inject.so next to kprof or \
             set KPROF_INJECT_PATH)"
        ),
    }
    let bytes = std::fs::read(&lib).unwrap();
    let dest: &Path = &out.join("libkprof_inject.so");
    std::fs::write(dest, &bytes).unwrap();
    println!("cargo:rustc-cfg=kprof_embed_inject");
    println!("cargo:rustc-env=KPROF_EMBEDDED_INJECT_HASH={:016x}", fnv1a(&bytes));
}
