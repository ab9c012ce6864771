//! `kprof run` on a program whose process file holds nested NVTX ranges as the injection library
//! writes them (rows named by path, their own time in `SelfNs`, the durations' source in
//! `DurationSource`): the table says which durations it holds and shows the self time beside the
//! inclusive one; `--json` and processed.csv carry both.

use std::path::Path;
use std::process::Output;

use crate::common::{self, fake_inject_lib, text};

/// A program (`sh` script) that writes, into the run spec's output folder, two occurrences of
/// `sort16m` (845 and 855 ns, 5 and 7 of their own) around the library's
/// `cub::DeviceRadixSort` (840 and 848 ns), timed by the records.
fn program(dir: &Path) -> std::path::PathBuf {
    let script = r#"dir=$(printf '%s' "$KPROF_RUN_SPEC" | sed -n 's/.*"output":"\([^"]*\)".*/\1/p')
{
echo "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,DurationSource,SelfNs,Benchmark,Run"
echo "sort16m,845,gpu__time_duration.sum,fill|onesweep,NVIDIA H200,vm,,,ns,records,5,app,0"
echo "sort16m/cub::DeviceRadixSort,840,gpu__time_duration.sum,onesweep,NVIDIA H200,vm,,,ns,records,840,app,0"
echo "sort16m,855,gpu__time_duration.sum,fill|onesweep,NVIDIA H200,vm,,,ns,records,7,app,1"
echo "sort16m/cub::DeviceRadixSort,848,gpu__time_duration.sum,onesweep,NVIDIA H200,vm,,,ns,records,848,app,1"
} > "$dir/kprof-run-$$.csv"
echo '{"pid": '$$', "cuda_injected": true, "warnings": [], "errors": []}' > "$dir/kprof-run-$$.json"
"#;
    let path = dir.join("program.sh");
    std::fs::write(&path, script).unwrap();
    path
}

fn kprof_run(dir: &Path, extra: &[&str]) -> (Output, String, String) {
    let lib = fake_inject_lib(dir);
    let prog = program(dir);
    let o = common::kprof()
        .env_remove("KPROF_STORE")
        .env("KPROF_NO_DEVICE", "1")
        .env("KPROF_INJECT_PATH", &lib)
        .args(["run", "--out"])
        .arg(dir.join("out"))
        .args(extra)
        .arg("--")
        .arg("sh")
        .arg(&prog)
        .output()
        .unwrap();
    let (so, se) = text(&o);
    (o, so, se)
}

#[test]
fn the_table_says_which_durations_it_holds_and_shows_the_self_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, so, se) = kprof_run(tmp.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    let mut lines = so.lines();
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("durations: CUPTI kernel records") && first.ends_with("use --durations counters"),
        "{so}"
    );
    let header = lines.next().unwrap();
    assert!(header.contains("AvgValue  SelfAvg"), "{so}");
    let row = |name: &str| {
        let line = so.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
        line.split_whitespace()
            .skip(2)
            .take(2)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("sort16m"), ["850.0", "6.000"], "{so}");
    assert_eq!(row("sort16m/cub::DeviceRadixSort"), ["844.0", "844.0"], "{so}");
    let processed = std::fs::read_to_string(tmp.path().join("out/processed.csv")).unwrap();
    let head = processed.lines().next().unwrap();
    assert!(
        head.contains("DurationSource") && head.contains("SelfNs_Avg"),
        "{processed}"
    );
}

#[test]
fn json_output_carries_the_durations_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, so, se) = kprof_run(tmp.path(), &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    let doc: serde_json::Value = serde_json::from_str(&so).unwrap();
    let line = doc["durations"].as_str().unwrap();
    assert!(line.starts_with("durations: CUPTI kernel records"), "{line}");
    assert_eq!(doc["rows"].as_array().unwrap().len(), 2, "{so}");
}
