//! JSON result file round trip, including NaN and infinities.

use kprof_core::io::*;
use kprof_core::*;

/// `Debug` equality treats NaN as equal to NaN, which `PartialEq` does not.
fn same<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// [`same`] over everything but the raw results' hash index (whose `Debug` order varies).
fn same_file(a: &ResultFile, b: &ResultFile) -> bool {
    let raw = |f: &ResultFile| {
        f.raw.as_ref().map(|r| {
            format!(
                "{:?}",
                (
                    &r.configs,
                    &r.devices,
                    &r.kernel_names,
                    &r.series,
                    &r.samples,
                    &r.extras,
                    &r.kernel_breakdown
                )
            )
        })
    };
    raw(a) == raw(b)
        && same(&a.processed, &b.processed)
        && (&a.schema, a.schema_version, &a.kprof_version, &a.environment)
            == (&b.schema, b.schema_version, &b.kprof_version, &b.environment)
}

fn raw_with_nan() -> RawResults {
    let mut raw = RawResults::new();
    let d = DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "h".into(),
        compute_clock_khz: None,
        memory_clock_khz: Some(3.2e6),
    };
    let c = Config::new()
        .with("n", 8)
        .with("eps", f64::NAN)
        .with("dtype", "NaN")
        .with("fast", false);
    for (run, value) in [1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
        .into_iter()
        .enumerate()
    {
        let extras = [
            ("temp", ExtraValue::Number(if run == 1 { f64::NAN } else { 40.0 })),
            ("label", ExtraValue::Text("NaN".into())),
            ("gone", ExtraValue::Missing),
        ];
        raw.push(&SampleRecord {
            benchmark: "b",
            annotation: "a",
            config: &c,
            run: run as u32,
            metric: DEFAULT_METRIC,
            value,
            unit: "ns",
            kernel: "k1|k2",
            device: &d,
            extras: &extras,
        })
        .unwrap();
    }
    raw.kernel_breakdown.push(KernelSample {
        series: 0,
        run: 1,
        position: 0,
        kernel: "k1".into(),
        value: f64::NAN,
    });
    raw
}

fn processed_with_nan() -> ProcessedResults {
    ProcessedResults {
        param_names: vec!["n".into()],
        rows: vec![ProcessedRow {
            benchmark: "b".into(),
            annotation: "a".into(),
            metric: DEFAULT_METRIC.into(),
            config: Config::new().with("n", 8),
            summary: Summary {
                num_runs: 1,
                total_runs: 4,
                mean: 1.0,
                std_dev: f64::NAN,
                min: 1.0,
                max: 1.0,
                median: 1.0,
                p05: 1.0,
                p95: 1.0,
                ci95_lower: f64::NAN,
                ci95_upper: f64::INFINITY,
                rsd_pct: f64::NAN,
                stable: None,
                outliers_mild: 0,
                outliers_severe: 0,
                bootstrap: Some(BootstrapCi {
                    mean_lower: f64::NAN,
                    mean_upper: 2.0,
                    median_lower: 0.5,
                    median_upper: f64::NEG_INFINITY,
                }),
            },
            kernel: "k1|k2".into(),
            device: DeviceInfo::default(),
            unit: "x".into(),
            extras: vec![("temp_Avg".into(), ExtraValue::Number(f64::NAN))],
            normalized: Some("base".into()),
            normalization_value: Some(f64::NAN),
            geomean: f64::NAN,
        }],
        missing_baselines: vec![MissingBaseline {
            benchmark: "b".into(),
            annotation: "c".into(),
            metric: "m".into(),
            config: Config::new().with("x", f64::INFINITY),
        }],
    }
}

#[test]
fn json_round_trip_with_nan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let file = ResultFile::new(
        Some(raw_with_nan()),
        Some(processed_with_nan()),
        Some(serde_json::json!({"driver": "575.57", "note": "NaN"})),
    );
    assert_eq!(file.schema, "kprof-results");
    assert_eq!(file.schema_version, SCHEMA_VERSION);
    write_results_json(&path, &file).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"NaN\"") && text.contains("\"-inf\"") && !text.contains("null,\"kernel\""),
        "{text}"
    );
    let back = read_results_json(&path).unwrap();
    assert!(same_file(&back, &file), "{back:#?}\nvs\n{file:#?}");
    let raw = back.raw.unwrap();
    assert!(raw.samples[1].value.is_nan());
    assert_eq!(raw.samples[2].value, f64::INFINITY);
    assert_eq!(raw.samples[3].value, f64::NEG_INFINITY);
    assert!(matches!(raw.extras[0].values[1], ExtraValue::Number(x) if x.is_nan()));
    assert_eq!(
        raw.extras[1].values[0],
        ExtraValue::Text("NaN".into()),
        "text stays text"
    );
    assert!(matches!(raw.configs[0].get("eps"), Some(ParamValue::Float(x)) if x.is_nan()));
    assert_eq!(raw.configs[0].get("dtype"), Some(&ParamValue::Str("NaN".into())));

    // The index is rebuilt: pushing an existing key reuses its series.
    let mut raw = raw;
    let c = raw.configs[0].clone();
    let d = raw.devices[0].clone();
    raw.push(&SampleRecord {
        benchmark: "b",
        annotation: "a",
        config: &c,
        run: 9,
        metric: DEFAULT_METRIC,
        value: 2.0,
        unit: "ns",
        kernel: "k1|k2",
        device: &d,
        extras: &[],
    })
    .unwrap();
    assert_eq!(raw.series.len(), 1);
    assert_eq!(raw.configs.len(), 1);

    let mut buf = Vec::new();
    write_results_json_to(&mut buf, &file).unwrap();
    assert_eq!(String::from_utf8(buf).unwrap(), text);
}

#[test]
fn json_without_raw_or_processed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.json");
    let file = ResultFile::new(None, None, None);
    write_results_json(&path, &file).unwrap();
    assert_eq!(read_results_json(&path).unwrap(), file);
}
