//! `kprof run`, `kprof compare` and `kprof doctor` through the binary (no GPU needed).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kprof_core::io::{self, ReadOptions};

use crate::common::{self, kprof, text};

fn fixture(name: &str) -> PathBuf {
    common::fixture_path(&format!("h200-engine-checks-raw-concurrent-trace/{name}"))
}

/// `kprof compare OPTIONS BASE NEW`.
fn compare(options: &[&str], base: &Path, new: &Path) -> Output {
    kprof()
        .arg("compare")
        .args(options)
        .arg(base)
        .arg(new)
        .output()
        .unwrap()
}

/// A copy of a raw fixture with every value multiplied by `factor`.
fn scaled(src: &Path, factor: f64, dir: &Path) -> PathBuf {
    let mut raw = io::read_raw_csv(src, &ReadOptions::default()).unwrap();
    for s in &mut raw.samples {
        s.value *= factor;
    }
    let out = dir.join(format!("scaled-{}", src.file_name().unwrap().to_string_lossy()));
    io::write_raw_csv(&out, &raw).unwrap();
    out
}

/// `kprof compare base new`, which must exit 0 with every series `same`: its standard output and
/// error.
fn compare_same(base: &Path, new: &Path) -> (String, String) {
    let o = compare(&[], base, new);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{}: {out}{err}", new.display());
    assert!(
        out.lines().skip(1).all(|l| l.ends_with("same")),
        "{}: {out}",
        new.display()
    );
    (out, err)
}

#[test]
fn compare_h200_fixtures_with_themselves_is_no_change() {
    for name in [
        "a_sgemm4096-raw.csv",
        "b_scale256mb-raw.csv",
        "c_three_kernels-raw.csv",
        "g_sgemm_sweep-raw.csv",
    ] {
        let f = fixture(name);
        let (out, _) = compare_same(&f, &f);
        assert!(!out.contains("REGRESSION"), "{out}");
    }
}

#[test]
fn compare_h200_fixture_scaled_by_1_1_is_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a_sgemm4096-raw.csv", "g_sgemm_sweep-raw.csv"] {
        let base = fixture(name);
        let slow = scaled(&base, 1.1, dir.path());
        let o = compare(&[], &base, &slow);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {out}{err}");
        assert!(out.contains("REGRESSION") && out.contains("+10.00%"), "{out}");
        assert!(err.contains("significant regression"), "{err}");
        // Faster is an improvement, exit 0.
        let fast_dir = dir.path().join("fast");
        std::fs::create_dir_all(&fast_dir).unwrap();
        let fast2 = scaled(&base, 0.9, &fast_dir);
        let o = compare(&[], &base, &fast2);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        assert!(text(&o).0.contains("improvement"));
    }
}

#[test]
fn compare_processed_tables_uses_their_moments_and_writes_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let base_raw = fixture("a_sgemm4096-raw.csv");
    let slow_raw = scaled(&base_raw, 1.1, dir.path());
    let base_p = dir.path().join("base-processed.csv");
    let slow_p = dir.path().join("slow-processed.csv");
    for (i, o) in [(&base_raw, &base_p), (&slow_raw, &slow_p)] {
        let s = kprof().arg("summarize").arg(i).arg("-o").arg(o).output().unwrap();
        assert!(s.status.success(), "{:?}", text(&s));
    }
    let csv = dir.path().join("cmp.csv");
    let o = compare(&["--json", "--csv", csv.to_str().unwrap()], &base_p, &slow_p);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(v[0]["verdict"], "regression");
    assert!(v[0]["p_value"].as_f64().unwrap() < 1e-6);
    assert!(
        std::fs::read_to_string(&csv).unwrap().contains(",regression")
            || std::fs::read_to_string(&csv).unwrap().contains("REGRESSION")
    );
    // A 20% threshold turns it into "same".
    let o = compare(&["--threshold", "20%"], &base_p, &slow_p);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn compare_bad_input_exits_2() {
    let o = compare(&[], Path::new("/nonexistent/a.csv"), Path::new("/nonexistent/b.csv"));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("kprof: error:"));
    let f = fixture("a_sgemm4096-raw.csv");
    let o = compare(&["--threshold", "x"], &f, &f);
    assert_eq!(o.status.code(), Some(2));
    // No series in common.
    let o = compare(&[], &f, &fixture("b_scale256mb-raw.csv"));
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    // Usage error (clap).
    let o = kprof().args(["compare", "only-one"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn doctor_diagnoses_a_gpu_less_machine_and_exits_1_on_a_failed_check() {
    let o = kprof().arg("doctor").output().unwrap();
    let (out, err) = text(&o);
    // A failed check is a non-zero exit; one finding per line.
    let failed = out.lines().any(|l| l.starts_with("[FAIL]"));
    assert_eq!(o.status.code(), Some(i32::from(failed)), "{out}{err}");
    for line in out.lines() {
        let tagged = ["[ ok ]", "[warn]", "[FAIL]", "[info]"]
            .iter()
            .any(|t| line.starts_with(t));
        assert!(
            tagged || line.starts_with("       fix: ") || line.ends_with("warning(s)"),
            "a finding spans lines: {line:?}\n{out}"
        );
    }
    for item in [
        "CUDA driver",
        "CUPTI",
        "NVML",
        "Nsight Compute",
        "counter permission",
        "other CUPTI users",
        "kprof run",
    ] {
        assert!(out.contains(item), "{item} missing:\n{out}");
    }
    let has_libcuda = [
        "/usr/lib/libcuda.so.1",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists());
    if !has_libcuda {
        assert!(out.contains("[FAIL] CUDA driver: libcuda is missing"), "{out}");
        assert!(out.contains("fix: install the NVIDIA driver"), "{out}");
    }
}

/// `kprof` with no `KPROF_*` variable of this process (scripts/test.sh exports some).
fn kprof_without_settings() -> Command {
    let mut c = kprof();
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("KPROF_") {
            c.env_remove(k);
        }
    }
    c
}

#[test]
fn doctor_lists_the_kprof_settings_of_its_environment() {
    let line = "[info] settings from the environment: ";
    let o = kprof_without_settings().arg("doctor").output().unwrap();
    let (out, err) = text(&o);
    assert!(out.lines().any(|l| l == format!("{line}none set")), "{out}{err}");

    let flush = kprof::settings::lookup("KPROF_L2_FLUSH").unwrap();
    let o = kprof_without_settings()
        .arg("doctor")
        .env("KPROF_L2_FLUSH", "write")
        .env("KPROF_L2_FLUSHH", "read")
        .output()
        .unwrap();
    let (out, err) = text(&o);
    let settings: Vec<&str> = out.lines().filter(|l| l.starts_with(line)).collect();
    assert_eq!(
        settings,
        [
            format!("{line}KPROF_L2_FLUSH=write: {}", flush.meaning),
            format!("{line}KPROF_L2_FLUSHH=read: not one of kprof's settings (a misspelling? docs/configuration.md lists them)"),
        ],
        "{out}{err}"
    );
    // Listed before the checks; informational only (the exit code is the checks').
    assert!(out.starts_with(line), "{out}");
    let failed = out.lines().any(|l| l.starts_with("[FAIL]"));
    assert_eq!(o.status.code(), Some(i32::from(failed)), "{out}{err}");
}

#[test]
fn run_passes_the_exit_code_through_and_explains_missing_results() {
    let dir = tempfile::tempdir().unwrap();
    let fake_lib = common::fake_inject_lib(dir.path());
    let out = dir.path().join("out");
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--out"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "echo \"$CUDA_INJECTION64_PATH\"; echo \"$KPROF_RUN_SPEC\"; exit 3",
        ])
        .output()
        .unwrap();
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{so}{se}");
    let lib = std::fs::canonicalize(&fake_lib).unwrap();
    let (injected, spec) = so.trim_end().split_once('\n').unwrap();
    assert_eq!(injected, lib.display().to_string());
    // The benchmark name defaults to the command's name.
    let spec = kprof::run_spec::RunSpec::from_json(spec).unwrap();
    assert_eq!(spec.benchmark.as_deref(), Some("sh"));
    assert!(spec.output.unwrap().ends_with("procs/rep0"));
    assert!(
        se.contains("exited with 3") && se.contains("no process of the command initialised CUDA"),
        "{se}"
    );
    // Success of the command but no results: 1.
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    // Repeat and env sweep run the command once per (value, repetition), with the variable set.
    let log = dir.path().join("log");
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--repeat", "2", "--env-sweep", "N=1,2", "--out"])
        .arg(&out)
        .arg("--")
        .args(["sh", "-c"])
        .arg(format!("echo $N >> {}", log.display()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n1\n2\n2\n");
    // One progress line per execution on stderr.
    let err = text(&o).1;
    for (i, what) in [
        "repetition 1, N=1",
        "repetition 2, N=1",
        "repetition 1, N=2",
        "repetition 2, N=2",
    ]
    .iter()
    .enumerate()
    {
        let line = format!("kprof run: execution {}/4 ({what})", i + 1);
        assert!(err.contains(&line), "{line} missing:\n{err}");
    }
}

#[test]
fn run_refuses_without_library_or_under_another_profiler() {
    let dir = tempfile::tempdir().unwrap();
    let o = kprof()
        .env("KPROF_INJECT_PATH", dir.path().join("missing.so"))
        .args(["run", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("KPROF_INJECT_PATH"));
    let fake_lib = common::fake_inject_lib(dir.path());
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .env(
            "CUDA_INJECTION64_PATH",
            "/opt/nvidia/nsight-compute/lib/libInterceptor.so",
        )
        .args(["run", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("another profiler"), "{:?}", text(&o));
    // Bad options.
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--env-sweep", "N", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = kprof()
        .args(["run", "--group-by", "stream", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Two nsight-python raw CSVs (no Benchmark column) under different file names
/// match by annotation, configuration and metric.
#[test]
fn compare_nsight_files_with_different_names() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nsight-python-csv-handwritten/profiled_data-matmul-0.csv");
    let header = std::fs::read_to_string(&src).unwrap();
    assert!(!header.lines().next().unwrap().contains("Benchmark"));
    let base = dir.path().join("profiled_data-matmul-0.csv");
    let new = dir.path().join("profiled_data-matmul_v2-3.csv");
    std::fs::copy(&src, &base).unwrap();
    std::fs::copy(&src, &new).unwrap();
    let (_, err) = compare_same(&base, &new);
    assert!(!err.contains("no series in common"), "{err}");
}

#[test]
fn run_after_ctrl_c_starts_no_further_execution_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let fake_lib = common::fake_inject_lib(dir.path());
    let out = dir.path().join("out");
    let log = dir.path().join("log");
    // The program sends SIGINT to kprof (its parent) and goes on: kprof waits for it to end, then
    // writes what ran instead of starting the second and third repetitions.
    let o = kprof()
        .env("KPROF_INJECT_PATH", &fake_lib)
        .args(["run", "--repeat", "3", "--out"])
        .arg(&out)
        .arg("--")
        .args(["sh", "-c"])
        .arg(format!("kill -INT $PPID; sleep 0.2; echo ran >> {}", log.display()))
        .output()
        .unwrap();
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{so}{se}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran\n", "{se}");
    assert!(se.contains("interrupted (Ctrl-C) after 1 of 3 execution(s)"), "{se}");
    assert!(out.join("time-split.json").exists(), "{se}");
}
