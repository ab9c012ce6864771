//! Tests of `transforms::Reducer`, `combine_kernels` and `record_combined`.

use std::sync::Arc;

use kprof_core::transforms::{combine_kernels, record_combined, Reducer, TransformError};
use kprof_core::*;

const K: [(&str, f64); 3] = [("gemm", 3.0), ("bias", 1.0), ("relu", 2.0)];

#[test]
fn each_builtin_reducer() {
    let name = "gemm|bias|relu".to_string();
    assert_eq!(combine_kernels(&K, &Reducer::Sum), Some((name.clone(), 6.0)));
    assert_eq!(combine_kernels(&K, &Reducer::Mean), Some((name.clone(), 2.0)));
    assert_eq!(combine_kernels(&K, &Reducer::Max), Some((name.clone(), 3.0)));
    assert_eq!(combine_kernels(&K, &Reducer::Min), Some((name.clone(), 1.0)));
    assert_eq!(combine_kernels(&K, &Reducer::First), Some((name.clone(), 3.0)));
    assert_eq!(combine_kernels(&K, &Reducer::Last), Some((name, 2.0)));
}

#[test]
fn custom_reducer_is_a_left_fold() {
    // functools.reduce(lambda a, b: a - b, [3, 1, 2]) == (3 - 1) - 2 == 0
    let sub = Reducer::Custom(Arc::new(|a, b| a - b));
    assert_eq!(combine_kernels(&K, &sub).unwrap().1, 0.0);
    // (3 * 10 + 1) * 10 + 2 = 312: order matters, launch order is kept.
    let digits = Reducer::Custom(Arc::new(|a, b| a * 10.0 + b));
    assert_eq!(combine_kernels(&K, &digits).unwrap().1, 312.0);
    // One value: returned as is, f not called.
    let never = Reducer::Custom(Arc::new(|_, _| panic!("not called")));
    assert_eq!(combine_kernels(&[("k", 5.0)], &never), Some(("k".to_string(), 5.0)));
    assert_eq!(format!("{sub:?}"), "Custom(<fn>)");
}

/// Every reducer but `Custom`.
fn builtin_reducers() -> [Reducer; 6] {
    [
        Reducer::Sum,
        Reducer::Mean,
        Reducer::Max,
        Reducer::Min,
        Reducer::First,
        Reducer::Last,
    ]
}

#[test]
fn single_and_empty() {
    for r in builtin_reducers() {
        assert_eq!(
            combine_kernels(&[("k", 4.0)], &r),
            Some(("k".to_string(), 4.0)),
            "{r:?}"
        );
        assert_eq!(combine_kernels(&[], &r), None, "{r:?}");
    }
    assert_eq!(combine_kernels(&[], &Reducer::Custom(Arc::new(|a, b| a + b))), None);
}

#[test]
fn nan_propagates_for_every_reducer() {
    let k = [("a", 1.0), ("b", f64::NAN), ("c", 3.0)];
    let custom = Reducer::Custom(Arc::new(f64::max));
    for r in builtin_reducers().into_iter().chain([custom]) {
        let (names, v) = combine_kernels(&k, &r).unwrap();
        assert_eq!(names, "a|b|c");
        assert!(v.is_nan(), "{r:?} gave {v}");
    }
}

#[test]
fn parse_reducer_names() {
    for (s, want) in [
        ("sum", "Sum"),
        ("mean", "Mean"),
        ("max", "Max"),
        ("min", "Min"),
        ("first", "First"),
        ("last", "Last"),
    ] {
        assert_eq!(format!("{:?}", s.parse::<Reducer>().unwrap()), want);
    }
    assert_eq!(format!("{:?}", " SUM ".parse::<Reducer>().unwrap()), "Sum");
    let err = "median".parse::<Reducer>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown reducer \"median\"; valid reducers are: sum, mean, max, min, first, last"
    );
    assert_eq!(err, TransformError::UnknownReducer { name: "median".into() });
    assert!("".parse::<Reducer>().is_err());
}

fn rec<'a>(config: &'a Config, device: &'a DeviceInfo, run: u32) -> SampleRecord<'a> {
    SampleRecord {
        benchmark: "mlp",
        annotation: "layer",
        config,
        run,
        metric: DEFAULT_METRIC,
        value: -1.0,
        unit: "ns",
        kernel: "ignored",
        device,
        extras: &[],
    }
}

#[test]
fn record_combined_keeps_the_breakdown() {
    let c = Config::new().with("n", 8);
    let d = DeviceInfo::default();
    let mut raw = RawResults::new();
    record_combined(&mut raw, &rec(&c, &d, 0), &K, &Reducer::Sum).unwrap();
    record_combined(&mut raw, &rec(&c, &d, 1), &[("gemm", 4.0)], &Reducer::Sum).unwrap();
    assert_eq!(raw.samples.len(), 2);
    assert_eq!(raw.samples[0].value, 6.0);
    assert_eq!(raw.kernel_names[raw.samples[0].kernel as usize], "gemm|bias|relu");
    assert_eq!(raw.samples[1].value, 4.0);
    assert_eq!(raw.kernel_names[raw.samples[1].kernel as usize], "gemm");
    // Breakdown only for the run with several kernels, in launch order.
    let b: Vec<(u32, u32, &str, f64)> = raw
        .kernel_breakdown
        .iter()
        .map(|k| (k.run, k.position, k.kernel.as_str(), k.value))
        .collect();
    assert_eq!(b, vec![(0, 0, "gemm", 3.0), (0, 1, "bias", 1.0), (0, 2, "relu", 2.0)]);
    assert!(raw.kernel_breakdown.iter().all(|k| k.series == raw.samples[0].series));
    assert_eq!(raw.series[0].key.annotation, "layer");
}

#[test]
fn record_combined_errors() {
    let c = Config::new();
    let d = DeviceInfo::default();
    let mut raw = RawResults::new();
    let err = record_combined(&mut raw, &rec(&c, &d, 3), &[], &Reducer::Sum).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no kernels to combine for benchmark \"mlp\", annotation \"layer\", run 3; the region launched no kernel"
    );
    assert!(raw.samples.is_empty());
    record_combined(&mut raw, &rec(&c, &d, 0), &K, &Reducer::Max).unwrap();
    let mut other_unit = rec(&c, &d, 1);
    other_unit.unit = "us";
    let err = record_combined(&mut raw, &other_unit, &K, &Reducer::Max).unwrap_err();
    assert!(matches!(err, TransformError::Model(ModelError::UnitMismatch { .. })));
    assert_eq!(
        err.to_string(),
        "metric \"gpu__time_duration.sum\" of annotation \"layer\" has two units, \"ns\" and \"us\"; one series must have one unit"
    );
    assert_eq!(raw.kernel_breakdown.len(), 3, "no breakdown for the failed record");
}
