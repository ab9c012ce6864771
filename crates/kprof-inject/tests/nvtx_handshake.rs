//! The real NVTX v3 handshake without a GPU, with `NVTX_INJECTION64_PATH` = libkprof_inject.so;
//! the library's status file must list every range:
//! - a small C program built with gcc against NVIDIA's NVTX v3 headers (the `nvidia-nvtx` wheel,
//!   see the kprof crate's `tests/common`; skipped when gcc or the headers are missing);
//! - kprof's own NVTX copy (`kprof::nvtx`, hand-written bindings), from a child of this test.

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof::run_spec::{RunSpec, ENV_RUN_SPEC};

#[path = "../../kprof/tests/common/mod.rs"]
mod common;

fn inject_lib() -> PathBuf {
    // target/<profile>/deps/<test>: `cargo test` rebuilds deps/libkprof_inject.so but copies it
    // up to target/<profile>/ only on `cargo build`.
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let fresh = deps.join("libkprof_inject.so");
    if fresh.is_file() {
        return fresh;
    }
    deps.parent().unwrap().join("libkprof_inject.so")
}

/// The run spec `kprof run` would pass: write into `out`.
fn spec(out: &Path, verbose: bool) -> String {
    RunSpec {
        output: Some(out.to_path_buf()),
        verbose,
        ..RunSpec::default()
    }
    .to_json()
    .unwrap()
}

#[test]
fn nvtx_program_ranges_reach_the_injection_library() {
    let inc = match common::nvtx_include() {
        Ok(d) => d,
        Err(why) => return common::skip("nvtx_program_ranges_reach_the_injection_library", &why),
    };
    let lib = inject_lib();
    assert!(
        lib.is_file(),
        "{} missing (cargo builds the cdylib with the tests)",
        lib.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("nvtx_program");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/nvtx_program.c");
    let gcc = Command::new("gcc")
        .arg("-O1")
        .arg("-I")
        .arg(&inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-ldl")
        .output();
    let Ok(gcc) = gcc else {
        eprintln!("skipped: gcc not available");
        return;
    };
    assert!(gcc.status.success(), "gcc: {}", String::from_utf8_lossy(&gcc.stderr));
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let run = Command::new(&exe)
        .env("NVTX_INJECTION64_PATH", &lib)
        .env(ENV_RUN_SPEC, spec(&out, true))
        .env("KPROF_CUPTI_PATH", dir.path().join("no-cupti-here"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "stderr: {stderr}");
    // Nothing but the program's own output on stdout; diagnostics on stderr, prefixed.
    assert_eq!(stdout, "program done\n");
    assert!(stderr.lines().all(|l| l.starts_with("kprof: ")), "{stderr}");
    let status_path = out.join(format!("kprof-run-{}.json", run_pid(&out)));
    let status: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status_path).unwrap()).unwrap();
    assert_eq!(status["nvtx_copies_attached"], 1, "{status:#}");
    assert_eq!(status["cuda_injected"], false);
    let count = |domain: &str, name: &str| {
        status["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["domain"] == domain && r["name"] == name)
            .map(|r| r["count"].as_u64().unwrap())
            .unwrap_or(0)
    };
    assert_eq!(count("", "outer"), 3, "{status:#}");
    assert_eq!(count("app", "registered"), 3, "{status:#}");
    assert_eq!(count("", "ascii_ex"), 1);
    assert_eq!(count("", "process_range"), 1);
    assert_eq!(count("", "wide"), 1);
    assert_eq!(status["anomalies"]["left_open"], 1);
    assert_eq!(status["anomalies"]["unmatched_pops"], 0);
    // No CUPTI here: the error says so, and no raw CSV is written (no kernels).
    assert!(status["errors"][0].as_str().unwrap().contains("CUPTI"), "{status:#}");
    assert!(status["raw_csv"].is_null());
}

/// Set in the child of [`kprof_engine_ranges_reach_the_injection_library`].
const CHILD_ENV: &str = "KPROF_TEST_NVTX_CHILD";

/// The child's half: pushes ranges through kprof's NVTX copy (a no-op test in a normal run).
#[test]
fn engine_ranges_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    for _ in 0..3 {
        let outer = kprof::nvtx::push_range("x * 2 (outer)").unwrap();
        let inner = kprof::nvtx::push_range("inner").unwrap();
        drop(inner);
        drop(outer);
    }
    let how = kprof::nvtx::injection();
    assert!(
        matches!(how, kprof::nvtx::Injection::Attached { path: Some(_) }),
        "{how:?}"
    );
}

/// A temporary folder with an empty `out/` in it.
fn out_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    (dir, out)
}

/// Runs [`engine_ranges_child`] in a child with the injection library and the run spec `spec`
/// (no CUPTI there: `dir` holds none).
fn engine_child(dir: &Path, spec: String) -> std::process::Output {
    let lib = inject_lib();
    assert!(lib.is_file(), "{} missing", lib.display());
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "engine_ranges_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("NVTX_INJECTION64_PATH", &lib)
        .env(ENV_RUN_SPEC, spec)
        .env("KPROF_CUPTI_PATH", dir.join("no-cupti-here"))
        .output()
        .unwrap()
}

#[test]
fn kprof_engine_ranges_reach_the_injection_library() {
    let (dir, out) = out_dir();
    let run = engine_child(dir.path(), spec(&out, false));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
    let status_path = out.join(format!("kprof-run-{}.json", run_pid(&out)));
    let status: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status_path).unwrap()).unwrap();
    assert_eq!(status["nvtx_copies_attached"], 1, "{status:#}");
    let count = |name: &str| {
        status["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["domain"] == "kprof" && r["name"] == name)
            .map(|r| r["count"].as_u64().unwrap())
            .unwrap_or(0)
    };
    // Names reach the tool percent-encoded (kprof::nvtx::encode_range_name), in the kprof domain.
    assert_eq!(count("x%20%2A%202%20(outer)"), 3, "{status:#}");
    assert_eq!(count("inner"), 3, "{status:#}");
    assert_eq!(status["anomalies"]["left_open"], 0);
    assert_eq!(status["anomalies"]["unmatched_pops"], 0);
}

/// A run spec of another version: the status file (written where its `output` says) names the
/// mismatch, and no sample is written; without an `output` the error goes to stderr.
#[test]
fn a_run_spec_of_another_version_is_a_clear_error() {
    let (dir, out) = out_dir();
    let run = |spec: String| engine_child(dir.path(), spec);
    let future = format!(
        "{{\"version\":99,\"output\":{:?},\"shiny\":true}}",
        out.display().to_string()
    );
    let o = run(future);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status_path = out.join(format!("kprof-run-{}.json", run_pid(&out)));
    let status: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status_path).unwrap()).unwrap();
    let errors: Vec<&str> = status["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("KPROF_RUN_SPEC is version 99") && e.contains("reads version 1")),
        "{status:#}"
    );
    assert!(status["raw_csv"].is_null());
    // No output named: the error is on stderr.
    let o = run("not json".into());
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("kprof: error: KPROF_RUN_SPEC is not a JSON object"),
        "{stderr}"
    );
}

/// The pid in the only status file in `dir`.
fn run_pid(dir: &Path) -> String {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0]
        .strip_prefix("kprof-run-")
        .and_then(|n| n.strip_suffix(".json"))
        .unwrap()
        .to_string()
}
