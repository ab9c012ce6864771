//! `kprof_core::stats::aggregate`: grouping by series, kernel of the first run, extras.

use kprof_core::stats::{aggregate, summarize, AggregateOptions, BootstrapOptions, StatsOptions};
use kprof_core::{Config, DeviceInfo, ExtraValue, RawResults, Sample, SampleRecord, DEFAULT_METRIC};

fn device() -> DeviceInfo {
    DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "vm".into(),
        compute_clock_khz: None,
        memory_clock_khz: None,
    }
}

fn rec<'a>(
    annotation: &'a str,
    config: &'a Config,
    run: u32,
    value: f64,
    kernel: &'a str,
    device: &'a DeviceInfo,
    extras: &'a [(&'a str, ExtraValue)],
) -> SampleRecord<'a> {
    SampleRecord {
        benchmark: "mm",
        annotation,
        config,
        run,
        metric: DEFAULT_METRIC,
        value,
        unit: "ns",
        kernel,
        device,
        extras,
    }
}

fn extra<'a>(row: &'a kprof_core::ProcessedRow, name: &str) -> Option<&'a ExtraValue> {
    row.extras.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

#[test]
fn two_interleaved_series_with_runs_out_of_order() {
    let mut raw = RawResults::new();
    let c1 = Config::new().with("n", 1024).with("dtype", "fp16");
    let c2 = Config::new().with("n", 2048).with("layout", "nt");
    let d = device();
    // Series "a" (c1) and "b" (c2) interleaved, runs shuffled; kernel differs per run.
    let order = [(3u32, 13.0), (0, 10.0), (2, 12.0), (1, 11.0)];
    for (run, v) in order {
        let ka = format!("ka{run}");
        let kb = format!("kb{run}");
        raw.push(&rec("a", &c1, run, v, &ka, &d, &[])).unwrap();
        raw.push(&rec("b", &c2, run, v * 2.0, &kb, &d, &[])).unwrap();
    }
    // A failed run of "b".
    raw.push(&rec("b", &c2, 4, f64::NAN, "kb4", &d, &[])).unwrap();

    let out = aggregate(&raw, &AggregateOptions::default());
    assert_eq!(out.param_names, vec!["n", "dtype", "layout"]);
    assert!(out.missing_baselines.is_empty());
    assert_eq!(out.rows.len(), 2);
    let (a, b) = (&out.rows[0], &out.rows[1]);
    assert_eq!((a.annotation.as_str(), b.annotation.as_str()), ("a", "b"));
    assert_eq!(a.config, c1);
    assert_eq!(b.config, c2);
    assert_eq!(a.benchmark, "mm");
    assert_eq!(a.metric, DEFAULT_METRIC);
    assert_eq!(a.unit, "ns");
    assert_eq!(a.device, d);
    // Kernel of the lowest run index, not of the first sample.
    assert_eq!(a.kernel, "ka0");
    assert_eq!(b.kernel, "kb0");
    assert_eq!(
        a.summary,
        summarize(&[10.0, 11.0, 12.0, 13.0], &StatsOptions::default())
    );
    assert_eq!(
        b.summary,
        summarize(&[26.0, 20.0, f64::NAN, 24.0, 22.0], &StatsOptions::default())
    );
    assert_eq!((b.summary.num_runs, b.summary.total_runs), (4, 5));
    assert_eq!(a.summary.mean, 11.5);
    for r in &out.rows {
        assert!(r.normalized.is_none() && r.normalization_value.is_none());
        assert!(r.geomean.is_nan());
        assert!(r.extras.is_empty());
    }
}

#[test]
fn sample_order_does_not_matter() {
    let mut raw = RawResults::new();
    let c = Config::new().with("n", 1);
    let d = device();
    let values = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0];
    for (run, &v) in values.iter().enumerate() {
        raw.push(&rec("a", &c, run as u32, v, "k", &d, &[])).unwrap();
        raw.push(&rec("z", &c, run as u32, -v, "k", &d, &[])).unwrap();
    }
    let opts = AggregateOptions {
        stats: StatsOptions {
            bootstrap: Some(BootstrapOptions {
                resamples: 100,
                seed: 5,
            }),
            ..StatsOptions::default()
        },
    };
    let mut before = aggregate(&raw, &opts);
    raw.samples.reverse();
    let mut after = aggregate(&raw, &opts);
    // geomean is NaN (filled in later), and NaN != NaN.
    for r in before.rows.iter_mut().chain(after.rows.iter_mut()) {
        r.geomean = 0.0;
    }
    assert_eq!(before, after);
    // The bootstrap of each row is the one summarize gives with the same seed.
    assert_eq!(before.rows[0].summary, summarize(&values, &opts.stats));
}

#[test]
fn extras_numeric_and_text() {
    let mut raw = RawResults::new();
    let c = Config::new();
    let d = device();
    let rows: [(u32, f64, &str); 3] = [(2, 50.0, "b"), (0, 40.0, "a"), (1, 45.0, "c")];
    for (run, temp, text) in rows {
        let ex = [
            ("temp", ExtraValue::Number(temp)),
            ("note", ExtraValue::Text(text.into())),
        ];
        raw.push(&rec("s", &c, run, 1.0 + run as f64, "k", &d, &ex)).unwrap();
    }
    // A second series where "temp" is missing in one run and text in another (mixed), and
    // "note" is missing everywhere but one run.
    let ex = [("temp", ExtraValue::Missing), ("note", ExtraValue::Missing)];
    raw.push(&rec("t", &c, 0, 1.0, "k", &d, &ex)).unwrap();
    let ex = [
        ("temp", ExtraValue::Text("hot".into())),
        ("note", ExtraValue::Text("x".into())),
    ];
    raw.push(&rec("t", &c, 2, 1.0, "k", &d, &ex)).unwrap();
    let ex = [("temp", ExtraValue::Number(7.0)), ("note", ExtraValue::Missing)];
    raw.push(&rec("t", &c, 1, 1.0, "k", &d, &ex)).unwrap();
    // A third series with only missing values and one numeric value.
    let ex = [("temp", ExtraValue::Number(f64::NAN))];
    raw.push(&rec("u", &c, 0, 1.0, "k", &d, &ex)).unwrap();
    let ex = [("temp", ExtraValue::Number(3.0))];
    raw.push(&rec("u", &c, 1, 1.0, "k", &d, &ex)).unwrap();

    let out = aggregate(&raw, &AggregateOptions::default());
    let s = &out.rows[0];
    let names: Vec<&str> = s.extras.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["temp_Avg", "temp_Std", "temp_Min", "temp_Max", "note"]);
    assert_eq!(extra(s, "temp_Avg"), Some(&ExtraValue::Number(45.0)));
    assert_eq!(extra(s, "temp_Std"), Some(&ExtraValue::Number(5.0)));
    assert_eq!(extra(s, "temp_Min"), Some(&ExtraValue::Number(40.0)));
    assert_eq!(extra(s, "temp_Max"), Some(&ExtraValue::Number(50.0)));
    // Text: the value of the lowest run.
    assert_eq!(extra(s, "note"), Some(&ExtraValue::Text("a".into())));

    let t = &out.rows[1];
    let names: Vec<&str> = t.extras.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["temp", "note"]);
    // Mixed number/text: the first non-missing value by run (run 1's 7.0).
    assert_eq!(extra(t, "temp"), Some(&ExtraValue::Number(7.0)));
    assert_eq!(extra(t, "note"), Some(&ExtraValue::Text("x".into())));

    let u = &out.rows[2];
    // NaN counts as missing; one number: Std is NaN (ddof 1).
    assert_eq!(extra(u, "temp_Avg"), Some(&ExtraValue::Number(3.0)));
    assert!(matches!(extra(u, "temp_Std"), Some(ExtraValue::Number(x)) if x.is_nan()));
    // "note" never appears for u: padded Missing, so one column with Missing.
    assert_eq!(extra(u, "note"), Some(&ExtraValue::Missing));
}

/// A column holding one number throughout (CudaVersion, DeviceOrdinal) stays
/// one column; a column whose numbers vary anywhere gets X_Avg/Std/Min/Max in every row.
#[test]
fn constant_info_columns_stay_single_columns() {
    let mut raw = RawResults::new();
    let c = Config::new();
    let d = device();
    for (annotation, run, temp) in [("a", 0, 40.0), ("a", 1, 40.0), ("b", 0, 40.0), ("b", 1, 41.0)] {
        let ex = [
            ("CudaVersion", ExtraValue::Number(13.0)),
            ("DeviceOrdinal", ExtraValue::Number(0.0)),
            ("temp", ExtraValue::Number(temp)),
        ];
        raw.push(&rec(annotation, &c, run, 1.0, "k", &d, &ex)).unwrap();
    }
    let out = aggregate(&raw, &AggregateOptions::default());
    for row in &out.rows {
        let names: Vec<&str> = row.extras.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "CudaVersion",
                "DeviceOrdinal",
                "temp_Avg",
                "temp_Std",
                "temp_Min",
                "temp_Max"
            ]
        );
        assert_eq!(extra(row, "CudaVersion"), Some(&ExtraValue::Number(13.0)));
        assert_eq!(extra(row, "DeviceOrdinal"), Some(&ExtraValue::Number(0.0)));
    }
}

#[test]
fn empty_and_inconsistent_input_does_not_panic() {
    let out = aggregate(&RawResults::new(), &AggregateOptions::default());
    assert!(out.rows.is_empty() && out.param_names.is_empty());

    // A series without samples, and samples with out-of-range indices.
    let mut raw = RawResults::new();
    let c = Config::new();
    let d = device();
    raw.push(&rec("a", &c, 0, 1.0, "k", &d, &[])).unwrap();
    raw.samples.clear();
    raw.extras.clear();
    raw.push_sample(
        Sample {
            series: 99,
            run: 0,
            value: 1.0,
            kernel: 0,
        },
        &[],
    );
    raw.push_sample(
        Sample {
            series: 0,
            run: 0,
            value: 2.0,
            kernel: 42,
        },
        &[("x", ExtraValue::Number(1.0))],
    );
    raw.extras[0].values.pop(); // a column shorter than the samples
    raw.series[0].device = 7;
    raw.series[0].key.config = 9;
    let out = aggregate(&raw, &AggregateOptions::default());
    assert_eq!(out.rows.len(), 1);
    let r = &out.rows[0];
    assert_eq!(r.summary.num_runs, 1);
    assert_eq!(r.kernel, "");
    assert_eq!(r.device, DeviceInfo::default());
    assert_eq!(r.config, Config::new());
    assert_eq!(extra(r, "x"), Some(&ExtraValue::Missing));
}
