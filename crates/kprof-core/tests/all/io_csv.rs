//! Round trips of the raw and processed CSV formats, and reading nsight-python files.

use std::path::{Path, PathBuf};

use kprof_core::display::{render_processed, render_raw};
use kprof_core::io::*;
use kprof_core::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nsight-python-csv-handwritten")
        .join(name)
}

fn device() -> DeviceInfo {
    DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "node01".into(),
        compute_clock_khz: Some(1_980_000.0),
        memory_clock_khz: None,
    }
}

/// Raw results with int/float/str/bool params, extras, a NaN value and a `|` kernel name.
fn sample_raw() -> RawResults {
    let mut raw = RawResults::new();
    let d = device();
    let configs = [
        Config::new()
            .with("n", 1024)
            .with("alpha", 1.5)
            .with("dtype", "fp16")
            .with("tc", true),
        Config::new()
            .with("n", 2048)
            .with("alpha", 2.0)
            .with("dtype", "bf16, packed")
            .with("tc", false),
    ];
    for c in &configs {
        for ann in ["base", "impl"] {
            for run in 0..3u32 {
                let value = if ann == "impl" && run == 1 {
                    f64::NAN
                } else {
                    100.0 + run as f64 * 0.1
                };
                let extras = [
                    ("gpu_temp", ExtraValue::Number(40.5 + run as f64)),
                    ("note", ExtraValue::Text(format!("r{run}"))),
                ];
                let extras: &[(&str, ExtraValue)] = if run == 2 { &extras[..1] } else { &extras };
                raw.push(&SampleRecord {
                    benchmark: "mm",
                    annotation: ann,
                    config: c,
                    run,
                    metric: DEFAULT_METRIC,
                    value,
                    unit: "ns",
                    kernel: if ann == "impl" {
                        "gemm|epilogue"
                    } else {
                        "void k<float>(int, float*)"
                    },
                    device: &d,
                    extras,
                })
                .unwrap();
            }
        }
    }
    raw
}

/// `Debug` equality treats NaN as equal to NaN, which `PartialEq` does not.
fn same<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// [`same`] over the public fields of raw results (their `Debug` also shows the hash index).
fn same_raw(a: &RawResults, b: &RawResults) -> bool {
    same(&a.configs, &b.configs)
        && same(&a.devices, &b.devices)
        && same(&a.kernel_names, &b.kernel_names)
        && same(&a.series, &b.series)
        && same(&a.samples, &b.samples)
        && same(&a.extras, &b.extras)
        && same(&a.kernel_breakdown, &b.kernel_breakdown)
}

/// A file `name` in a new temporary folder that `write` writes: the folder (kept until dropped),
/// the file's path and its text.
fn written(name: &str, write: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    write(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    (dir, path, text)
}

#[test]
fn raw_csv_round_trip() {
    let raw = sample_raw();
    let (dir, path, text) = written("raw.csv", |path| write_raw_csv(path, &raw).unwrap());
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,gpu_temp,note,n,alpha,dtype,tc,Benchmark,Run"
    );
    let second = text.lines().nth(1).unwrap();
    assert_eq!(
        second,
        "base,100.0,gpu__time_duration.sum,\"void k<float>(int, float*)\",NVIDIA H200,node01,1980000.0,,ns,40.5,r0,1024,1.5,fp16,True,mm,0"
    );
    assert!(
        text.contains("impl,,gpu__time_duration.sum,gemm|epilogue"),
        "NaN is an empty cell:\n{text}"
    );

    let params = ReadOptions {
        params: Some(vec!["n".into(), "alpha".into(), "dtype".into(), "tc".into()]),
        benchmark: None,
    };
    let back = read_raw_csv(&path, &params).unwrap();
    assert!(same_raw(&back, &raw), "{back:#?}\nvs\n{raw:#?}");
    assert_eq!(back.configs[1].get("alpha"), Some(&ParamValue::Float(2.0)));
    assert_eq!(back.configs[0].get("tc"), Some(&ParamValue::Bool(true)));
    assert!(back.samples[4].value.is_nan());

    // Without --params the extra columns become parameters.
    let loose = read_raw_csv(&path, &ReadOptions::default()).unwrap();
    assert_eq!(
        loose.param_names(),
        vec!["gpu_temp", "note", "n", "alpha", "dtype", "tc"]
    );
    assert!(loose.extras.is_empty());

    // write_raw_csv_to writes the same bytes.
    let mut buf = Vec::new();
    write_raw_csv_to(&mut buf, &raw).unwrap();
    assert_eq!(String::from_utf8(buf).unwrap(), text);

    // Rewriting replaces the file atomically and leaves no temporary files behind.
    write_raw_csv(&path, &raw).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn reads_nsight_profiled_data() {
    let raw = read_raw_csv(&fixture("profiled_data-matmul-0.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(raw.samples.len(), 12);
    assert_eq!(raw.series.len(), 4);
    assert_eq!(raw.param_names(), vec!["n", "dtype"]);
    assert_eq!(raw.configs[0], Config::new().with("n", 1024).with("dtype", "fp32"));
    assert_eq!(
        raw.series[0].key.benchmark, "matmul",
        "benchmark from the nsight file name"
    );
    assert_eq!(raw.series[0].unit, "ns");
    assert_eq!(
        raw.devices,
        vec![DeviceInfo {
            gpu: "NVIDIA H200".into(),
            host: "node01".into(),
            compute_clock_khz: Some(1_980_000.0),
            memory_clock_khz: Some(3_201_000.0)
        }]
    );
    // Runs are numbered by occurrence within each series.
    let runs: Vec<u32> = raw.samples.iter().map(|s| s.run).collect();
    assert_eq!(runs, vec![0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    assert!(raw.samples[10].value.is_nan());
    assert_eq!(
        raw.kernel_names[raw.samples[0].kernel as usize],
        "void gemm<float>(int, float const*, float*)"
    );
    assert_eq!(raw.kernel_names[raw.samples[3].kernel as usize], "tiled_gemm|epilogue");

    let named = read_raw_csv(
        &fixture("profiled_data-matmul-0.csv"),
        &ReadOptions {
            params: None,
            benchmark: Some("gemm".into()),
        },
    )
    .unwrap();
    assert_eq!(named.series[0].key.benchmark, "gemm");

    let out = render_raw(&raw, 5);
    assert!(out.contains("failed") || out.contains("... 7 more rows"), "{out}");
    assert!(out.contains("... 7 more rows (12 samples in all)"), "{out}");
}

#[test]
fn reads_nsight_processed_data() {
    let p = read_processed_csv(&fixture("processed_data-matmul-0.csv")).unwrap();
    assert_eq!(p.param_names, vec!["n", "dtype"]);
    assert_eq!(p.rows.len(), 4);
    let r = &p.rows[3];
    assert_eq!(r.benchmark, "matmul");
    assert_eq!(r.annotation, "impl");
    assert_eq!(r.config, Config::new().with("n", 2048).with("dtype", "fp32"));
    assert_eq!(r.summary.mean, 252.0);
    assert_eq!(r.summary.num_runs, 2);
    assert_eq!(r.summary.total_runs, 2, "without TotalRuns it equals NumRuns");
    assert_eq!(r.summary.ci95_lower, 248.08);
    assert_eq!(r.summary.stable, Some(true));
    assert!(r.summary.median.is_nan());
    assert_eq!(r.normalized, None);
    assert_eq!(r.geomean, 195.0692184841063);
    assert_eq!(r.kernel, "tiled_gemm|epilogue");
    assert_eq!(r.unit, "ns");
    assert!(r.extras.is_empty());
    assert_eq!(p.rows[0].kernel, "void gemm<float>(int, float const*, float*)");
    let table = render_processed(&p);
    assert!(table.contains("252.0"), "{table}");
}

#[test]
fn unknown_columns_with_params_become_extras() {
    let opts = ReadOptions {
        params: Some(vec!["n".into(), "dtype".into()]),
        benchmark: None,
    };
    let raw = read_raw_csv(&fixture("collectors.csv"), &opts).unwrap();
    assert_eq!(raw.param_names(), vec!["n", "dtype"]);
    assert_eq!(raw.configs.len(), 1);
    let names: Vec<&str> = raw.extras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["gpu_temp", "driver"]);
    assert_eq!(
        raw.extras[0].values,
        vec![ExtraValue::Number(41.5), ExtraValue::Number(42.0), ExtraValue::Missing]
    );
    assert_eq!(raw.extras[1].values[0], ExtraValue::Number(575.57));
    assert_eq!(raw.series[0].key.benchmark, "collectors");

    // Without --params the collector columns are (wrongly, but predictably) parameters.
    let loose = read_raw_csv(&fixture("collectors.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(loose.param_names(), vec!["gpu_temp", "driver", "n", "dtype"]);
}

fn summary(mean: f64, n: usize) -> Summary {
    Summary {
        num_runs: n,
        total_runs: n + 1,
        mean,
        std_dev: 1.25,
        min: mean - 1.0,
        max: mean + 1.0,
        median: mean,
        p05: mean - 0.9,
        p95: mean + 0.9,
        ci95_lower: mean - 0.5,
        ci95_upper: mean + 0.5,
        rsd_pct: 1.25 / mean * 100.0,
        stable: Some(true),
        outliers_mild: 1,
        outliers_severe: 0,
        bootstrap: None,
    }
}

fn sample_processed() -> ProcessedResults {
    let row = |ann: &str, n: i64, mean: f64| ProcessedRow {
        benchmark: "mm".into(),
        annotation: ann.into(),
        metric: DEFAULT_METRIC.into(),
        config: Config::new()
            .with("n", n)
            .with("scale", 0.5)
            .with("dtype", "fp16")
            .with("tc", true),
        summary: summary(mean, 5),
        kernel: "gemm|epilogue".into(),
        device: device(),
        unit: "ns".into(),
        extras: vec![
            ("gpu_temp_Avg".into(), ExtraValue::Number(41.25)),
            ("driver".into(), ExtraValue::Text("r575".into())),
        ],
        normalized: None,
        normalization_value: None,
        geomean: 141.42,
    };
    let mut rows = vec![
        row("base", 1024, 100.0),
        row("impl", 1024, 1.5),
        row("base", 2048, 200.0),
    ];
    rows[1].normalized = Some("base".into());
    rows[1].normalization_value = Some(100.0);
    rows[1].unit = "x".into();
    rows[2].summary.stable = None;
    rows[2].summary.std_dev = f64::NAN;
    rows[2].summary.rsd_pct = f64::NAN;
    rows[2].extras[1].1 = ExtraValue::Text("a, \"quoted\" value".into());
    rows[0].summary.bootstrap = Some(BootstrapCi {
        mean_lower: 99.5,
        mean_upper: 100.5,
        median_lower: 99.0,
        median_upper: 101.0,
    });
    ProcessedResults {
        param_names: vec!["n".into(), "scale".into(), "dtype".into(), "tc".into()],
        rows,
        missing_baselines: vec![],
    }
}

#[test]
fn processed_csv_round_trip() {
    let p = sample_processed();
    let (_dir, path, text) = written("processed.csv", |path| write_processed_csv(path, &p).unwrap());
    assert_eq!(
        text.lines().next().unwrap(),
        "Annotation,Metric,n,scale,dtype,tc,AvgValue,StdDev,MinValue,MaxValue,NumRuns,Kernel,GPU,Host,ComputeClock,\
MemoryClock,Unit,gpu_temp_Avg,driver,CI95_Lower,CI95_Upper,RelativeStdDevPct,StableMeasurement,Normalized,\
NormalizationValue,Geomean,Benchmark,Median,P05,P95,TotalRuns,OutliersMild,OutliersSevere,BootstrapMean_Lower,\
BootstrapMean_Upper,BootstrapMedian_Lower,BootstrapMedian_Upper"
    );
    assert!(
        text.lines().nth(1).unwrap().contains(",True,False,,141.42,mm,"),
        "{text}"
    );
    assert!(
        text.lines().nth(2).unwrap().contains(",True,base,100.0,141.42,mm,"),
        "{text}"
    );
    let back = read_processed_csv(&path).unwrap();
    assert!(same(&back, &p), "{back:#?}\nvs\n{p:#?}");

    let mut buf = Vec::new();
    write_processed_csv_to(&mut buf, &p).unwrap();
    assert_eq!(String::from_utf8(buf).unwrap(), text);

    // Without normalised rows and bootstrap, the optional columns are left out.
    let mut plain = p.clone();
    plain.rows.remove(1);
    plain.rows[0].summary.bootstrap = None;
    let mut buf = Vec::new();
    write_processed_csv_to(&mut buf, &plain).unwrap();
    let header = String::from_utf8(buf).unwrap().lines().next().unwrap().to_string();
    assert!(
        !header.contains("NormalizationValue") && !header.contains("Bootstrap"),
        "{header}"
    );
    assert!(header.ends_with("Normalized,Geomean,Benchmark,Median,P05,P95,TotalRuns,OutliersMild,OutliersSevere"));
}

#[test]
fn read_any_detects_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let raw_path = dir.path().join("a.csv");
    let processed_path = dir.path().join("b.csv");
    let json_path = dir.path().join("c.json");
    write_raw_csv(&raw_path, &sample_raw()).unwrap();
    write_processed_csv(&processed_path, &sample_processed()).unwrap();
    write_results_json(&json_path, &ResultFile::new(Some(sample_raw()), None, None)).unwrap();
    assert!(matches!(read_any(&raw_path).unwrap(), Loaded::Raw(_)));
    assert!(matches!(read_any(&processed_path).unwrap(), Loaded::Processed(_)));
    assert!(matches!(read_any(&json_path).unwrap(), Loaded::Json(_)));
    assert!(matches!(
        read_any(&fixture("processed_data-matmul-0.csv")).unwrap(),
        Loaded::Processed(_)
    ));
    assert!(matches!(
        read_any(&fixture("profiled_data-matmul-0.csv")).unwrap(),
        Loaded::Raw(_)
    ));
}

#[test]
fn render_processed_shows_baselines_and_missing_ones() {
    let mut p = sample_processed();
    p.rows[0].benchmark = "other".into();
    p.missing_baselines.push(MissingBaseline {
        benchmark: "mm".into(),
        annotation: "impl".into(),
        metric: DEFAULT_METRIC.into(),
        config: Config::new().with("n", 4096),
    });
    let out = render_processed(&p);
    assert!(out.is_ascii(), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("Benchmark  Annotation"), "{out}");
    assert!(lines[0].contains("Baseline"), "{out}");
    assert!(out.contains("Missing baselines (1)"), "{out}");
    assert!(out.contains("mm / impl / gpu__time_duration.sum [n=4096]"), "{out}");
    assert!(out.contains("5/6"), "NumRuns shows failures: {out}");
    // The statistics of normalised rows are on the ratio scale, and the
    // footnote says so.
    assert!(out.contains("on the ratio scale"), "{out}");
    assert!(!out.contains("keep the original unit"), "{out}");
    // Every table line has the same column start for AvgValue.
    let col = lines[0].find("AvgValue").unwrap();
    assert!(lines[1].len() >= col);
}

#[test]
fn engine_extra_columns_are_not_parameters() {
    let text = "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,DeviceOrdinal,DriverVersion,n,Benchmark,Run\n\
                matmul,13728.0,gpu__time_duration.sum,k,NVIDIA H200,vm,1980000.0,3201000.0,ns,0.0,580.159.04,512,sgemm,0\n";
    let raw = kprof_core::io::read_raw_csv_from(
        text.as_bytes(),
        std::path::Path::new("sgemm-raw.csv"),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(raw.param_names(), vec!["n"]);
    let extras: Vec<&str> = raw.extras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(extras, vec!["DeviceOrdinal", "DriverVersion"]);
}

/// `kprof run`'s self time of nested NVTX ranges: read back as an extra column (not a parameter,
/// which would split a range's runs), and shown as `SelfAvg` beside the inclusive `AvgValue`.
#[test]
fn self_time_is_an_extra_column_shown_beside_the_inclusive_value() {
    let text = "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,SelfNs,Benchmark,Run\n\
                sort16m,845.0,gpu__time_duration.sum,k,H200,vm,,,ns,5.0,prog,0\n\
                sort16m,855.0,gpu__time_duration.sum,k,H200,vm,,,ns,7.0,prog,1\n\
                sort16m/cub::DeviceRadixSort,840.0,gpu__time_duration.sum,k,H200,vm,,,ns,840.0,prog,0\n\
                copy,3.0,gpu__time_duration.sum,k,H200,vm,,,ns,,prog,0\n";
    let raw = read_raw_csv_from(text.as_bytes(), Path::new("raw.csv"), &Default::default()).unwrap();
    assert!(raw.param_names().is_empty());
    let p = kprof_core::pipeline::process(&raw, &Default::default()).unwrap();
    let out = render_processed(&p);
    let header = out.lines().next().unwrap();
    assert!(header.contains("AvgValue  SelfAvg"), "{out}");
    let cells = |name: &str| {
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
        line.split_whitespace()
            .skip(2)
            .take(2)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(cells("sort16m"), ["850.0", "6.000"], "{out}");
    assert_eq!(cells("sort16m/cub::DeviceRadixSort"), ["840.0", "840.0"], "{out}");
    assert_eq!(cells("copy"), ["3.000", "-"], "{out}");
    // Without the column, no SelfAvg.
    assert!(!render_processed(&sample_processed()).contains("SelfAvg"));
}
