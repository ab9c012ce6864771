//! Files and streams, through the binary: what the user owns is never damaged (symbolic
//! links keep being links, devices stay devices), `-o -` is standard output, failed writes name
//! the path and exit non-zero, a closed pipe ends a command quietly, a failed import leaves no
//! partial files, and missing folders are created (the rule the Python package shares).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{fixture, text};

fn raw() -> String {
    fixture("nsight-python-csv-handwritten/profiled_data-matmul-0.csv")
}

fn ncu() -> String {
    fixture("ncu-csv-exports/kprof-keyed.csv")
}

fn kprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kprof")).args(args).output().unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every command that writes a file, with `OUT` standing for the output path.
fn writers() -> Vec<Vec<String>> {
    let r = raw();
    [
        vec!["summarize", &r, "-o", "OUT"],
        vec!["plot", &r, "-o", "OUT"],
        vec!["report", &r, "-o", "OUT"],
        vec!["compare", &r, &r, "--csv", "OUT"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect()
}

fn with_out(args: &[String], out: &str) -> Vec<String> {
    args.iter()
        .map(|a| if a == "OUT" { out.to_string() } else { a.clone() })
        .collect()
}

fn run_with(args: &[String]) -> Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    kprof(&refs)
}

#[cfg(unix)]
#[test]
fn every_writer_writes_through_a_symlink_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in writers().into_iter().enumerate() {
        let target = dir.path().join(format!("target-{i}"));
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join(format!("link-{i}"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let o = run_with(&with_out(&args, link.to_str().unwrap()));
        assert!(o.status.success(), "{args:?}: {:?}", text(&o));
        assert!(
            std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
            "{args:?} replaced the link"
        );
        let written = std::fs::read(&target).unwrap();
        assert!(written.len() > 3, "{args:?} left the target untouched");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn devices_are_written_in_place_and_a_full_device_is_an_error_naming_it() {
    for args in writers() {
        let o = run_with(&with_out(&args, "/dev/null"));
        assert!(o.status.success(), "{args:?}: {:?}", text(&o));
        assert!(
            !std::fs::metadata("/dev/null").unwrap().is_file(),
            "{args:?} replaced /dev/null"
        );
        if Path::new("/dev/full").exists() {
            let o = run_with(&with_out(&args, "/dev/full"));
            let (_, err) = text(&o);
            assert_ne!(o.status.code(), Some(0), "{args:?}: a full device is a failure: {err}");
            assert!(
                err.contains("/dev/full") && err.contains("No space left"),
                "{args:?}: {err}"
            );
            assert_eq!(
                err.matches("No space left").count(),
                1,
                "{args:?}: repeated OS error: {err}"
            );
            assert!(
                !std::fs::metadata("/dev/full").unwrap().is_file(),
                "{args:?} replaced /dev/full"
            );
        }
    }
}

#[test]
fn dash_is_standard_output() {
    let o = kprof(&["summarize", &raw(), "-o", "-"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with("Annotation,Metric,"), "{out}");
    let o = kprof(&["plot", &raw(), "-o", "-"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("<svg"), "{:?}", text(&o));
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kprof"))
        .args(["import", &ncu(), "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with("Annotation,Metric,"), "{out}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn writing_into_a_folder_is_refused_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    for args in writers() {
        let o = run_with(&with_out(&args, dir.path().to_str().unwrap()));
        let (_, err) = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(err.contains("is a folder"), "{args:?}: {err}");
        assert!(names(dir.path()).is_empty(), "{args:?} left {:?}", names(dir.path()));
    }
}

#[test]
fn missing_folders_are_created() {
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in writers().into_iter().enumerate() {
        let out = dir.path().join(format!("new-{i}")).join("deeper").join("out");
        let o = run_with(&with_out(&args, out.to_str().unwrap()));
        assert!(o.status.success(), "{args:?}: {:?}", text(&o));
        assert!(out.is_file(), "{args:?}");
    }
}

#[cfg(unix)]
#[test]
fn show_into_a_closed_pipe_ends_quietly() {
    // `kprof show X | head -c 10`: the reader goes away before the table (far more than a pipe
    // holds) is written.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.csv");
    let mut csv = String::from("Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,n\n");
    for i in 0..20_000 {
        csv.push_str(&format!(
            "a,{i}.5,gpu__time_duration.sum,kernel_{i},NVIDIA H200,node,1980000,3201000,ns,{i}\n"
        ));
    }
    std::fs::write(&big, csv).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kprof"))
        .args(["show", big.to_str().unwrap(), "--max-rows", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn show_into_a_full_device_is_an_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_kprof"))
        .args(["show", &raw()])
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("standard output") && err.contains("No space left") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn import_writes_the_raw_table_beside_the_output_not_the_input() {
    let input_dir = tempfile::tempdir().unwrap();
    let input = input_dir.path().join("rep.csv");
    std::fs::copy(ncu(), &input).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("x-processed.csv");
    let o = kprof(&["import", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(names(input_dir.path()), vec!["rep.csv"]);
    assert_eq!(names(out_dir.path()), vec!["x-processed.csv", "x-raw.csv"]);
}

#[test]
fn a_failed_import_leaves_no_partial_files() {
    let dir = tempfile::tempdir().unwrap();
    let raw_out = dir.path().join("partial-raw.csv");
    let folder = dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let o = kprof(&[
        "import",
        &ncu(),
        "--raw",
        raw_out.to_str().unwrap(),
        "-o",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert_eq!(names(dir.path()), vec!["a-folder"]);
    // The second write fails after the first succeeded (a full device): the first is removed.
    if Path::new("/dev/full").exists() {
        let o = kprof(&["import", &ncu(), "--raw", raw_out.to_str().unwrap(), "-o", "/dev/full"]);
        assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
        assert_eq!(names(dir.path()), vec!["a-folder"]);
    }
}

#[test]
fn import_of_a_folder_says_it_is_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let o = kprof(&["import", dir.path().to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("is a folder") && !err.contains("no such file"), "{err}");
}
