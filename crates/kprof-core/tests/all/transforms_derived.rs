//! Tests of `transforms::apply_derived`.

use kprof_core::transforms::{apply_derived, derive_samples, DerivedSample, DerivedValue, RunMetrics, TransformError};
use kprof_core::*;

use crate::common::device;

/// One sample of `kernel`: where it was taken (benchmark, annotation, config, run) and what
/// (metric, value, unit).
fn push(
    raw: &mut RawResults,
    (bench, ann, c, run): (&str, &str, &Config, u32),
    (metric, v, unit): (&str, f64, &str),
    kernel: &str,
) {
    raw.push(&SampleRecord {
        benchmark: bench,
        annotation: ann,
        config: c,
        run,
        metric,
        value: v,
        unit,
        kernel,
        device: &device(),
        extras: &[],
    })
    .unwrap();
}

/// Sizes of the lists of `raw` (RawResults with NaN samples never compare equal to themselves,
/// since NaN != NaN, so comparing whole result sets does not work for "unchanged").
fn shape(raw: &RawResults) -> (usize, usize, usize, usize, usize) {
    (
        raw.samples.len(),
        raw.series.len(),
        raw.configs.len(),
        raw.kernel_names.len(),
        raw.kernel_breakdown.len(),
    )
}

/// 2·n³ flops / duration in ns / 1e3 = TFLOP/s.
fn tflops(m: &RunMetrics) -> Result<Vec<DerivedValue>, String> {
    let n = m
        .config
        .get("n")
        .and_then(ParamValue::as_f64)
        .ok_or("config has no numeric n")?;
    let ns = m.get(DEFAULT_METRIC).ok_or("no duration")?;
    Ok(vec![DerivedValue::new("tflops", 2.0 * n * n * n / ns / 1e3, "TFLOP/s")])
}

fn matmul_raw() -> RawResults {
    let mut raw = RawResults::new();
    let c1 = Config::new().with("n", 1024);
    let c2 = Config::new().with("n", 2048);
    for run in 0..2 {
        push(
            &mut raw,
            ("mm", "cublas", &c1, run),
            (DEFAULT_METRIC, 1e6, "ns"),
            "gemm_a",
        );
        push(
            &mut raw,
            ("mm", "cublas", &c2, run),
            (DEFAULT_METRIC, 8e6, "ns"),
            "gemm_b",
        );
    }
    // A failed run.
    push(
        &mut raw,
        ("mm", "cublas", &c1, 2),
        (DEFAULT_METRIC, f64::NAN, "ns"),
        "gemm_a",
    );
    raw
}

#[test]
fn tflops_from_duration_and_config_n() {
    let mut raw = matmul_raw();
    let mut calls = Vec::new();
    let added = apply_derived(&mut raw, |m| {
        calls.push((m.config.to_string(), m.run));
        tflops(m)
    })
    .unwrap();
    assert_eq!(added, 5);
    // One call per (benchmark, annotation, config, run), first-appearance order; the failed run too.
    assert_eq!(
        calls,
        vec![
            ("n=1024".into(), 0),
            ("n=2048".into(), 0),
            ("n=1024".into(), 1),
            ("n=2048".into(), 1),
            ("n=1024".into(), 2)
        ]
    );
    assert_eq!(raw.samples.len(), 10);
    let s = raw
        .series
        .iter()
        .position(|s| s.key.metric == "tflops" && s.key.config == 0)
        .unwrap();
    let series = &raw.series[s];
    assert_eq!(series.unit, "TFLOP/s");
    assert_eq!(series.device, 0);
    let vals: Vec<(u32, f64, &str)> = raw
        .samples
        .iter()
        .filter(|x| x.series as usize == s)
        .map(|x| (x.run, x.value, raw.kernel_names[x.kernel as usize].as_str()))
        .collect();
    assert_eq!(vals.len(), 3);
    // 2 * 1024^3 / 1e6 / 1e3 = 2.147483648
    assert!((vals[0].1 - 2.147483648).abs() < 1e-12, "{vals:?}");
    assert_eq!(vals[0].2, "gemm_a");
    assert!(vals[2].1.is_nan(), "failed run gives NaN");
    // n = 2048: 2 * 2048^3 / 8e6 / 1e3 = 2.147483648 too.
    let s2 = raw
        .series
        .iter()
        .position(|s| s.key.metric == "tflops" && s.key.config == 1)
        .unwrap();
    let v2 = raw.samples.iter().find(|x| x.series as usize == s2).unwrap();
    assert!((v2.value - 2.147483648).abs() < 1e-12);
    assert_eq!(raw.kernel_names[v2.kernel as usize], "gemm_b");
    raw.check_unique_runs().unwrap();
}

/// `derive_samples` returns what `apply_derived` appends, each value with its run's first sample,
/// and leaves the results as they are.
#[test]
fn derive_samples_names_the_run_of_each_value() {
    let raw = matmul_raw();
    let before = shape(&raw);
    let mut firsts = Vec::new();
    let derived = derive_samples(&raw, |m| {
        firsts.push(m.sample);
        Ok(vec![
            DerivedValue::new("a", m.run as f64, "x"),
            DerivedValue::new("b", m.sample as f64, ""),
        ])
    })
    .unwrap();
    assert_eq!(firsts, [0, 1, 2, 3, 4]);
    assert_eq!(shape(&raw), before);
    let got: Vec<(usize, &str, f64)> = derived
        .iter()
        .map(|DerivedSample { sample, derived }| (*sample, derived.metric.as_str(), derived.value))
        .collect();
    assert_eq!(
        got,
        [
            (0, "a", 0.0),
            (0, "b", 0.0),
            (1, "a", 0.0),
            (1, "b", 1.0),
            (2, "a", 1.0),
            (2, "b", 2.0),
            (3, "a", 1.0),
            (3, "b", 3.0),
            (4, "a", 2.0),
            (4, "b", 4.0)
        ]
    );
    let mut applied = raw.clone();
    assert_eq!(
        apply_derived(&mut applied, |m| Ok(vec![DerivedValue::new("a", m.run as f64, "x")])).unwrap(),
        5
    );
    let appended: Vec<(u32, u32, f64)> = applied.samples[10 - 5..]
        .iter()
        .map(|s| (s.run, s.kernel, s.value))
        .collect();
    let sources: Vec<(u32, u32, f64)> = (0..5)
        .map(|i| (raw.samples[i].run, raw.samples[i].kernel, raw.samples[i].run as f64))
        .collect();
    assert_eq!(appended, sources);
}

#[test]
fn run_metrics_get_and_unit() {
    let c = Config::new();
    let m = RunMetrics {
        benchmark: "b",
        annotation: "a",
        config: &c,
        run: 0,
        values: vec![("x", 1.0, "ns"), ("y", 2.0, "byte"), ("x", 3.0, "ns")],
        sample: 0,
    };
    assert_eq!(m.get("x"), Some(1.0));
    assert_eq!(m.get("y"), Some(2.0));
    assert_eq!(m.get("z"), None);
    assert_eq!(m.unit("y"), Some("byte"));
    assert_eq!(m.unit("z"), None);
}

#[test]
fn groups_see_all_metrics_of_their_run() {
    let mut raw = RawResults::new();
    let c = Config::new();
    push(&mut raw, ("b", "a", &c, 0), ("bytes", 1000.0, "byte"), "k");
    push(&mut raw, ("b", "a", &c, 0), ("ns", 10.0, "ns"), "k");
    push(&mut raw, ("b", "other", &c, 0), ("ns", 20.0, "ns"), "k2");
    let added = apply_derived(&mut raw, |m| {
        let (Some(bytes), Some(ns)) = (m.get("bytes"), m.get("ns")) else {
            return Ok(vec![]);
        };
        Ok(vec![DerivedValue::new("bandwidth", bytes / ns, "GB/s")])
    })
    .unwrap();
    assert_eq!(added, 1);
    let last = raw.samples.last().unwrap();
    assert_eq!(last.value, 100.0);
    assert_eq!(raw.series[last.series as usize].key.annotation, "a");
}

#[test]
fn empty_results_call_nothing() {
    let mut raw = RawResults::new();
    let added = apply_derived(&mut raw, |_| -> Result<Vec<DerivedValue>, String> {
        panic!("not called")
    })
    .unwrap();
    assert_eq!(added, 0);
}

#[test]
fn name_of_measured_metric_is_an_error() {
    let mut raw = matmul_raw();
    let before = shape(&raw);
    let err = apply_derived(&mut raw, |_| Ok(vec![DerivedValue::new(DEFAULT_METRIC, 1.0, "ns")])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "derived metric \"gpu__time_duration.sum\" (benchmark \"mm\", annotation \"cublas\") has the name of a \
         metric already in the results; give the derived metric another name"
    );
    assert_eq!(shape(&raw), before, "nothing appended on error");
    // Applying the same derivation twice is caught the same way.
    apply_derived(&mut raw, tflops).unwrap();
    let err = apply_derived(&mut raw, tflops).unwrap_err();
    assert!(matches!(err, TransformError::DerivedNameCollision { ref metric, .. } if metric == "tflops"));
}

#[test]
fn error_from_f_names_the_group() {
    let mut raw = matmul_raw();
    let before = shape(&raw);
    let err = apply_derived(
        &mut raw,
        |m| {
            if m.run == 1 {
                Err("boom".to_string())
            } else {
                tflops(m)
            }
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "deriving metrics failed for benchmark \"mm\", annotation \"cublas\", config \"n=1024\", run 1: boom"
    );
    assert_eq!(shape(&raw), before, "nothing appended on error");
    // A config without n.
    let mut raw2 = RawResults::new();
    push(
        &mut raw2,
        ("b", "a", &Config::new().with("m", 3), 0),
        ("ns", 1.0, "ns"),
        "k",
    );
    let err = apply_derived(&mut raw2, tflops).unwrap_err();
    assert_eq!(
        err.to_string(),
        "deriving metrics failed for benchmark \"b\", annotation \"a\", config \"m=3\", run 0: config has no numeric n"
    );
}

#[test]
fn duplicate_derived_name_in_one_run_is_an_error() {
    let mut raw = matmul_raw();
    let err = apply_derived(&mut raw, |_| {
        Ok(vec![DerivedValue::new("d", 1.0, "x"), DerivedValue::new("d", 2.0, "x")])
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "derived metric \"d\" was returned twice for benchmark \"mm\", annotation \"cublas\", config \"n=1024\", \
         run 0; each derived metric must appear once per run"
    );
}

#[test]
fn two_units_for_one_derived_metric_is_an_error() {
    let mut raw = matmul_raw();
    let before = shape(&raw);
    let err = apply_derived(&mut raw, |m| {
        let unit = if m.run == 0 { "TFLOP/s" } else { "GFLOP/s" };
        Ok(vec![DerivedValue::new("flops", 1.0, unit)])
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "metric \"flops\" of annotation \"cublas\" has two units, \"TFLOP/s\" and \"GFLOP/s\"; one series must have one unit"
    );
    assert_eq!(shape(&raw), before);
}
