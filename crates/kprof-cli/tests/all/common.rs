//! What the test files share: the fixtures' paths, the CLI run in this process or as the built
//! binary (without the machine's injection settings), its output as text, and the unpacked CUPTI
//! wheel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `tests/fixtures/<rel>` of the repository.
pub fn fixture_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

/// [`fixture_path`] as a command-line argument.
pub fn fixture(rel: &str) -> String {
    fixture_path(rel).display().to_string()
}

/// `kprof ARGS` through the library entry point, in this process: the exit code.
pub fn run(args: &[&str]) -> i32 {
    kprof_cli::run(std::iter::once("kprof").chain(args.iter().copied()))
}

/// The built `kprof` binary, without the injection variables a profiler on this machine may
/// have set.
pub fn kprof() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kprof"));
    c.env_remove("CUDA_INJECTION64_PATH")
        .env_remove("NVTX_INJECTION64_PATH")
        .env_remove("KPROF_INJECT_PATH");
    c
}

/// An empty file named like the injection library in `dir` (`kprof run` only checks that it
/// exists): its path.
pub fn fake_inject_lib(dir: &Path) -> PathBuf {
    let lib = dir.join("libkprof_inject.so");
    std::fs::write(&lib, b"").unwrap();
    lib
}

/// A command's standard output and standard error, as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The folder of the unpacked `nvidia-cuda-cupti` wheel: `KPROF_CUPTI_WHEEL_DIR` (set by
/// scripts/test.sh), else `target/cupti-wheel/unpacked` (made by scripts/setup-dev.sh), else
/// `/tmp/cupti-wheel/unpacked`; `None`, with a printed reason to skip, when none holds libcupti.
pub fn cupti_wheel_dir() -> Option<PathBuf> {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut c: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("KPROF_CUPTI_WHEEL_DIR").filter(|v| !v.is_empty()) {
        c.push(v.into());
    }
    c.push(ws.join("target/cupti-wheel/unpacked"));
    c.push("/tmp/cupti-wheel/unpacked".into());
    let found = c.into_iter().find(|d| kprof::counters::cupti_in(d).is_some());
    if found.is_none() {
        eprintln!(
            "SKIPPED: no unpacked nvidia-cuda-cupti wheel (set KPROF_CUPTI_WHEEL_DIR or run scripts/setup-dev.sh)"
        );
    }
    found
}
