//! Every bad input gives a typed error whose message names the file, line and column.

use std::path::{Path, PathBuf};

use kprof_core::io::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const HEAD: &str = "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,n\n";

#[test]
fn missing_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "x.csv", "Annotation,Metric,n\na,m,1\n");
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(&e, IoError::MissingColumn { column, found, .. } if column == "Value" && found.len() == 3),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("x.csv") && msg.contains("\"Value\"") && msg.contains("Annotation, Metric, n"),
        "{msg}"
    );

    let p = write(dir.path(), "y.csv", "Annotation,Metric,AvgValue\na,m,1\n");
    let e = read_processed_csv(&p).unwrap_err();
    assert!(e.to_string().contains("\"StdDev\""), "{e}");
}

/// Infinite and negative durations are rejected as NaN-like text is not: they
/// cannot be measurements. Other metrics keep their sign.
#[test]
fn infinite_or_negative_durations_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["inf", "-5", "-inf", "Infinity"] {
        let text = format!("{HEAD}a,1.0,m,k,g,h,,,ns,1\na,{bad},m,k,g,h,,,ns,2\n");
        let p = write(dir.path(), "d.csv", &text);
        let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
        assert!(
            matches!(&e, IoError::Parse { line: 3, column, .. } if column == "Value"),
            "{bad}: {e:?}"
        );
        assert!(e.to_string().contains("finite number >= 0"), "{e}");
        let text = format!("{HEAD}a,{bad},gpu__time_duration.sum,k,g,h,,,,1\n");
        let p = write(dir.path(), "d2.csv", &text);
        assert!(
            read_raw_csv(&p, &ReadOptions::default()).is_err(),
            "{bad} without a unit"
        );
    }
    let text = format!("{HEAD}a,-5,delta,k,g,h,,,%,1\na,inf,delta,k,g,h,,,%,2\n");
    let p = write(dir.path(), "ok.csv", &text);
    assert_eq!(read_raw_csv(&p, &ReadOptions::default()).unwrap().samples.len(), 2);
}

/// A Windows-saved (CRLF) file's bad value is reported on its own line, not
/// the one above; so is a processed CSV's.
#[test]
fn crlf_files_name_the_right_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = "Annotation,Value,Metric,Unit\r\na,1,m,ns\r\na,2,m,ns\r\na,3,m,ns\r\na,4,m,ns\r\na,abc,m,ns\r\n";
    let p = write(dir.path(), "crlf.csv", text);
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(matches!(&e, IoError::Parse { line: 6, .. }), "{e}");
    // A lone CR inside a quoted cell and CRLF lines still read.
    let text = "Annotation,Value,Metric,Unit\r\n\"a\rb\",1,m,ns\r\n";
    let p = write(dir.path(), "cr.csv", text);
    let raw = read_raw_csv(&p, &ReadOptions::default()).unwrap();
    assert_eq!(raw.series[0].key.annotation, "a\rb");
    let text =
        "Annotation,Metric,AvgValue,StdDev,MinValue,MaxValue,NumRuns,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit\r\n\
                a,m,1,0,1,1,2,k,g,h,,,ns\r\na,m2,x,0,1,1,2,k,g,h,,,ns\r\n";
    let p = write(dir.path(), "p.csv", text);
    let e = read_processed_csv(&p).unwrap_err();
    assert!(matches!(&e, IoError::Parse { line: 3, .. }), "{e}");
}

#[test]
fn non_numeric_value() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{HEAD}a,1.0,m,k,g,h,,,ns,1\na,fast,m,k,g,h,,,ns,1\n");
    let p = write(dir.path(), "bad.csv", &text);
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(&e, IoError::Parse { line: 3, column, .. } if column == "Value"),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("bad.csv:3") && msg.contains("\"Value\"") && msg.contains("\"fast\""),
        "{msg}"
    );

    // nan, None and empty are failed runs, not errors.
    let text = format!("{HEAD}a,,m,k,g,h,,,ns,1\na,nan,m,k,g,h,,,ns,1\na,None,m,k,g,h,,,ns,1\n");
    let p = write(dir.path(), "ok.csv", &text);
    let raw = read_raw_csv(&p, &ReadOptions::default()).unwrap();
    assert!(raw.samples.iter().all(|s| s.value.is_nan()));
    assert_eq!(raw.series[0].key.benchmark, "ok");

    let text = format!("{HEAD}a,1,m,k,g,h,fast,,ns,1\n");
    let p = write(dir.path(), "clock.csv", &text);
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("clock.csv:2: column \"ComputeClock\""), "{e}");

    let p = write(dir.path(), "ragged.csv", &format!("{HEAD}a,1,m\n"));
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, IoError::Parse { line: 2, .. }), "{e:?}");
}

#[test]
fn unknown_param_name() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "p.csv", &format!("{HEAD}a,1,m,k,g,h,,,ns,1\n"));
    let opts = ReadOptions {
        params: Some(vec!["size".into()]),
        benchmark: None,
    };
    let e = read_raw_csv(&p, &opts).unwrap_err();
    assert!(
        matches!(&e, IoError::UnknownParam { name, candidates, .. } if name == "size" && candidates == &["n"]),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("p.csv") && msg.contains("\"size\"") && msg.contains(": n"),
        "{msg}"
    );
}

#[test]
fn duplicate_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = "Annotation,Value,Metric,n,Run\na,1,m,1,0\na,2,m,1,0\n";
    let p = write(dir.path(), "dup.csv", text);
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, IoError::Model { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("dup.csv") && msg.contains("run 0") && msg.contains("recorded twice"),
        "{msg}"
    );

    let p = write(
        dir.path(),
        "units.csv",
        "Annotation,Value,Metric,Unit\na,1,m,ns\na,2,m,us\n",
    );
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("units.csv:3: column \"Unit\""), "{e}");
}

#[test]
fn wrong_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "w.json",
        r#"{"schema": "something-else", "schema_version": 1}"#,
    );
    let e = read_results_json(&p).unwrap_err();
    assert!(matches!(e, IoError::Schema { .. }), "{e:?}");
    assert!(
        e.to_string().contains("w.json") && e.to_string().contains("something-else"),
        "{e}"
    );

    let p = write(dir.path(), "arr.json", "[1, 2]");
    let e = read_results_json(&p).unwrap_err();
    assert!(e.to_string().contains("not a kprof JSON result file"), "{e}");

    let p = write(
        dir.path(),
        "broken.json",
        r#"{"schema": "kprof-results", "schema_version": 1, "kprof_version": "0.1.0", "raw": {"configs": 3}}"#,
    );
    let e = read_results_json(&p).unwrap_err();
    assert!(matches!(e, IoError::Parse { line: 1, .. }), "{e:?}");

    let bad_index = r#"{"schema":"kprof-results","schema_version":1,"kprof_version":"0.1.0","raw":{"configs":[],"devices":[],
"kernel_names":[],"series":[],"samples":[{"series":5,"run":0,"value":1.0,"kernel":0}],"extras":[],"kernel_breakdown":[]},
"processed":null,"environment":null}"#;
    let p = write(dir.path(), "idx.json", bad_index);
    let e = read_results_json(&p).unwrap_err();
    assert!(e.to_string().contains("raw.samples[0]"), "{e}");
}

#[test]
fn newer_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "new.json",
        r#"{"schema": "kprof-results", "schema_version": 99, "kprof_version": "9.0.0", "raw": "future"}"#,
    );
    let e = read_results_json(&p).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("new.json") && msg.contains("99") && msg.contains("upgrade kprof"),
        "{msg}"
    );
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "empty.csv", "");
    let e = read_raw_csv(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(&e, IoError::MissingColumn { found, .. } if found.is_empty()),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("empty.csv") && e.to_string().contains("empty"),
        "{e}"
    );
    let e = read_processed_csv(&p).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let e = read_any(&p).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let j = write(dir.path(), "empty.json", "\n");
    let e = read_results_json(&j).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");

    // A header without rows is an empty result, not an error.
    let p = write(dir.path(), "header.csv", HEAD);
    assert!(read_raw_csv(&p, &ReadOptions::default()).unwrap().samples.is_empty());
}

#[test]
fn file_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nope.csv");
    for e in [
        read_raw_csv(&p, &ReadOptions::default()).unwrap_err(),
        read_processed_csv(&p).unwrap_err(),
        read_results_json(&p).unwrap_err(),
        read_any(&p).unwrap_err(),
    ] {
        assert!(matches!(e, IoError::Open { .. }), "{e:?}");
        assert!(e.to_string().contains("nope.csv"), "{e}");
    }
    // Missing folders are created; a folder cannot be made inside a file.
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let e = write_raw_csv(&file.join("x.csv"), &kprof_core::RawResults::new()).unwrap_err();
    assert!(matches!(e, IoError::Write { .. }), "{e:?}");
    assert!(
        e.to_string().contains("file/x.csv") && !e.to_string().contains("os error"),
        "{e}"
    );
    write_raw_csv(&dir.path().join("no/such/dir/x.csv"), &kprof_core::RawResults::new()).unwrap();
}

#[test]
fn parameter_named_like_a_reserved_column_is_rejected_on_write() {
    let mut raw = kprof_core::RawResults::new();
    let c = kprof_core::Config::new().with("Value", 1);
    raw.push(&kprof_core::SampleRecord {
        benchmark: "b",
        annotation: "a",
        config: &c,
        run: 0,
        metric: "m",
        value: 1.0,
        unit: "",
        kernel: "",
        device: &Default::default(),
        extras: &[],
    })
    .unwrap();
    let e = write_raw_csv_to(Vec::new(), &raw).unwrap_err();
    assert!(e.to_string().contains("\"Value\""), "{e}");
}

#[test]
fn garbage_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in [
        "\u{feff}",
        "\"unterminated",
        "a,b\n\"x",
        "{",
        "{\"schema\":1}",
        "\0\0\0",
        "Annotation,Value,Metric,Run\na,1,m,-1\n",
    ]
    .iter()
    .enumerate()
    {
        let p = write(dir.path(), &format!("g{i}.csv"), text);
        let _ = read_any(&p);
        let _ = read_raw_csv(&p, &ReadOptions::default());
        let _ = read_processed_csv(&p);
        let _ = read_results_json(&p);
    }
}
