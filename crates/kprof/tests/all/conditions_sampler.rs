//! Per-run conditions against a fake source, NVML missing, throttled-run counts.

use std::time::Duration;

use kprof::conditions::nvml::{normalize_uuid, uuid_from_bytes, GpuDevice, Nvml};
use kprof::conditions::sampler::*;
use kprof::conditions::thermal::{SystemClock, ThermalGuard, ThermalMode, ThermalSettings};
use kprof::conditions::ConditionsError;
use kprof::core::{
    Config, DeviceInfo, ExtraValue, ProcessedResults, ProcessedRow, RawResults, SampleRecord, Summary, DEFAULT_METRIC,
};

#[derive(Clone)]
struct Fake {
    sm: Vec<f64>,
    reasons: Vec<u64>,
    energy: Vec<u64>,
    i_sm: usize,
    i_r: usize,
    i_e: usize,
}

fn next<T: Copy>(v: &[T], i: &mut usize) -> Option<T> {
    let x = v.get(*i).or(v.last()).copied();
    *i += 1;
    x
}

impl ConditionsSource for Fake {
    fn sm_clock_mhz(&mut self) -> Option<f64> {
        next(&self.sm, &mut self.i_sm)
    }
    fn mem_clock_mhz(&mut self) -> Option<f64> {
        Some(3201.0)
    }
    fn max_sm_clock_mhz(&mut self) -> Option<f64> {
        Some(1980.0)
    }
    fn throttle_reasons(&mut self) -> Option<u64> {
        next(&self.reasons, &mut self.i_r)
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(55.0)
    }
    fn power_mw(&mut self) -> Option<f64> {
        Some(450_000.0)
    }
    fn total_energy_mj(&mut self) -> Option<u64> {
        next(&self.energy, &mut self.i_e)
    }
    fn power_limit_mw(&mut self) -> Option<f64> {
        Some(700_000.0)
    }
}

#[test]
fn a_boxed_source_reads_what_the_boxed_one_reads() {
    // The profiler's NVML source is boxed (`BoxSource`): the background sampler reads the power
    // limit for its power windows through the box.
    let mut direct = fake(&[1500.0], &[4], &[10]);
    let mut boxed: kprof::conditions::runtime::BoxSource = Box::new(direct.clone());
    assert_eq!(boxed.power_limit_mw(), Some(700_000.0));
    assert_eq!(boxed.sm_clock_mhz(), direct.sm_clock_mhz());
    assert_eq!(boxed.throttle_reasons(), direct.throttle_reasons());
    assert_eq!(boxed.total_energy_mj(), direct.total_energy_mj());
    assert_eq!(boxed.margin_c(), direct.margin_c());
}

fn fake(sm: &[f64], reasons: &[u64], energy: &[u64]) -> Fake {
    Fake {
        sm: sm.to_vec(),
        reasons: reasons.to_vec(),
        energy: energy.to_vec(),
        i_sm: 0,
        i_r: 0,
        i_e: 0,
    }
}

fn run(s: &mut RunSampler<Fake>) -> RunConditions {
    s.begin_run();
    s.end_run(Duration::from_millis(1500))
}

#[test]
fn readings_energy_and_columns() {
    let mut s = RunSampler::new(Some(fake(&[345.0, 1980.0], &[0x1, 0x0], &[1_000_000, 1_450_000])));
    assert!(s.is_active());
    assert_eq!(s.max_sm_clock_mhz(), 1980.0);
    let c = run(&mut s);
    assert_eq!(c.sm_clock_mhz_before, 345.0);
    assert_eq!(c.sm_clock_mhz_after, 1980.0);
    assert_eq!(c.energy_mj, 450_000.0);
    assert_eq!(c.throttle_reasons_before, Some(0x1));
    assert_eq!(c.throttle_reasons, Some(0));
    assert_eq!(c.throttled, Some(false), "idle before the run is not throttling");
    assert_eq!(c.thermal_wait_s, 1.5);
    assert!(c.wall_s >= 0.0);
    let extras = c.to_extras();
    let names: Vec<&str> = extras.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, CONDITION_COLUMNS);
    let get = |n: &str| extras.iter().find(|(m, _)| *m == n).unwrap().1.clone();
    assert_eq!(get("SMClockMHz"), ExtraValue::Number(1980.0));
    assert_eq!(get("MemClockMHz"), ExtraValue::Number(3201.0));
    assert_eq!(get("TemperatureC"), ExtraValue::Number(55.0));
    assert_eq!(get("PowerW"), ExtraValue::Number(450.0));
    assert_eq!(get("EnergyMilliJ"), ExtraValue::Number(450_000.0));
    assert_eq!(get("ThrottleReasons"), ExtraValue::Text("0x0".into()));
    assert_eq!(get("Throttled"), ExtraValue::Number(0.0));
    assert_eq!(get("ThermalWaitS"), ExtraValue::Number(1.5));
}

#[test]
fn low_clock_or_thermal_power_reason_flags_the_run() {
    // 1700 MHz < 0.9 * 1980 = 1782.
    let c = run(&mut RunSampler::new(Some(fake(&[1980.0, 1700.0], &[0], &[0]))));
    assert_eq!(c.throttled, Some(true));
    // 1782 is not below 90%.
    let c = run(&mut RunSampler::new(Some(fake(&[1782.0], &[0], &[0]))));
    assert_eq!(c.throttled, Some(false));
    for bit in [0x4, 0x8, 0x20, 0x40, 0x80] {
        let c = run(&mut RunSampler::new(Some(fake(&[1980.0], &[0, bit], &[0]))));
        assert_eq!(c.throttled, Some(true), "bit {bit:#x} after the run");
        let c = run(&mut RunSampler::new(Some(fake(&[1980.0], &[bit, 0], &[0]))));
        assert_eq!(c.throttled, Some(true), "bit {bit:#x} before the run");
    }
    for bit in [0x1, 0x2, 0x10, 0x100] {
        let c = run(&mut RunSampler::new(Some(fake(&[1980.0], &[bit], &[0]))));
        assert_eq!(c.throttled, Some(false), "bit {bit:#x} is not thermal/power");
    }
    assert_eq!(THERMAL_OR_POWER, 0xEC);
}

#[test]
fn energy_counter_going_backwards_is_nan() {
    let c = run(&mut RunSampler::new(Some(fake(&[1980.0], &[0], &[500, 400]))));
    assert!(c.energy_mj.is_nan());
    // end_run without begin_run: no before values.
    let mut s = RunSampler::new(Some(fake(&[1980.0], &[0], &[1])));
    let c = s.end_run(Duration::ZERO);
    assert!(c.energy_mj.is_nan() && c.sm_clock_mhz_before.is_nan());
    assert_eq!(c.throttled, Some(false));
}

#[test]
fn reason_names() {
    assert_eq!(throttle_reason_names(0), vec!["None"]);
    assert_eq!(throttle_reason_names(0x1), vec!["GpuIdle"]);
    assert_eq!(
        throttle_reason_names(0x4 | 0x40),
        vec!["SwPowerCap", "HwThermalSlowdown"]
    );
    assert_eq!(throttle_reason_names(0x200 | 0x8), vec!["HwSlowdown", "0x200"]);
}

#[test]
fn nvml_missing_is_a_clear_error_not_a_panic() {
    // A path that does not exist always fails to load.
    let err = Nvml::load_from("/nonexistent/libnvidia-ml.so.1").unwrap_err();
    assert!(matches!(err, ConditionsError::NvmlUnavailable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("NVML is not available") && msg.contains("NaN"), "{msg}");
    // The default search: on a machine without a driver this is the same error; with a
    // driver it loads. Either way it returns.
    match Nvml::load() {
        Ok(n) => {
            let _ = n.driver_version();
        }
        Err(e) => assert!(matches!(e, ConditionsError::NvmlUnavailable { .. }), "{e:?}"),
    }
}

#[test]
fn without_nvml_columns_are_nan_and_guard_is_off() {
    let mut s: RunSampler<GpuDevice> = RunSampler::new(None);
    assert!(!s.is_active());
    s.begin_run();
    let c = s.end_run(Duration::ZERO);
    assert_eq!(c.throttled, None);
    for (name, v) in c.to_extras() {
        match (name, v) {
            ("ThrottleReasons", v) => assert_eq!(v, ExtraValue::Missing),
            ("ThermalWaitS", v) => assert_eq!(v, ExtraValue::Number(0.0)),
            (n, ExtraValue::Number(x)) => assert!(x.is_nan(), "{n} = {x}"),
            (n, v) => panic!("{n}: {v:?}"),
        }
    }
    let mut g: ThermalGuard<GpuDevice, SystemClock> =
        ThermalGuard::new(ThermalMode::Auto, ThermalSettings::default(), None, SystemClock::new()).unwrap();
    assert!(!g.is_active());
    assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
}

#[test]
fn uuid_forms() {
    let canon = "GPU-1a2b3c4d-0000-1111-2222-333344445555";
    assert_eq!(normalize_uuid(canon), canon);
    assert_eq!(normalize_uuid("gpu-1A2B3C4D-0000-1111-2222-333344445555"), canon);
    assert_eq!(normalize_uuid("1a2b3c4d-0000-1111-2222-333344445555"), canon);
    assert_eq!(normalize_uuid(" 1a2b3c4d000011112222333344445555 "), canon);
    assert_eq!(normalize_uuid("MIG-abc"), "MIG-abc");
    assert_eq!(normalize_uuid("not-a-uuid"), "not-a-uuid");
    let bytes = [
        0x1a, 0x2b, 0x3c, 0x4d, 0, 0, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55,
    ];
    assert_eq!(uuid_from_bytes(&bytes), canon);
}

fn raw_with_throttled() -> RawResults {
    let mut raw = RawResults::new();
    let d = DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "vm".into(),
        ..Default::default()
    };
    let configs = [Config::new().with("n", 1024), Config::new().with("n", 4096)];
    // config 0: runs throttled 0,1,1; config 1: unknown, unknown, 0.
    let flags = [[Some(0.0), Some(1.0), Some(1.0)], [None, None, Some(0.0)]];
    let clocks = [[1980.0, 1700.0, 1600.0], [1980.0, 1980.0, 1980.0]];
    for (ci, c) in configs.iter().enumerate() {
        for run in 0..3u32 {
            let t = flags[ci][run as usize]
                .map(ExtraValue::Number)
                .unwrap_or(ExtraValue::Number(f64::NAN));
            let extras = [
                ("Throttled", t),
                ("SMClockMHz", ExtraValue::Number(clocks[ci][run as usize])),
            ];
            // Time inversely proportional to the clock for config 0.
            let value = 1.0e6 * 1980.0 / clocks[ci][run as usize] + run as f64;
            raw.push(&SampleRecord {
                benchmark: "mm",
                annotation: "a",
                config: c,
                run,
                metric: DEFAULT_METRIC,
                value,
                unit: "ns",
                kernel: "k",
                device: &d,
                extras: &extras,
            })
            .unwrap();
        }
    }
    raw
}

fn row(raw: &RawResults, config: usize) -> ProcessedRow {
    let nan = f64::NAN;
    ProcessedRow {
        benchmark: "mm".into(),
        annotation: "a".into(),
        metric: DEFAULT_METRIC.into(),
        config: raw.configs[config].clone(),
        summary: Summary {
            num_runs: 3,
            total_runs: 3,
            mean: nan,
            std_dev: nan,
            min: nan,
            max: nan,
            median: nan,
            p05: nan,
            p95: nan,
            ci95_lower: nan,
            ci95_upper: nan,
            rsd_pct: nan,
            stable: None,
            outliers_mild: 0,
            outliers_severe: 0,
            bootstrap: None,
        },
        kernel: "k".into(),
        device: raw.devices[0].clone(),
        unit: "ns".into(),
        extras: vec![("Throttled_Avg".into(), ExtraValue::Number(0.5))],
        normalized: None,
        normalization_value: None,
        geomean: nan,
    }
}

#[test]
fn throttled_runs_per_series_and_in_the_processed_table() {
    let raw = raw_with_throttled();
    assert_eq!(throttled_runs(&raw), vec![Some(2), Some(0)]);
    let mut processed = ProcessedResults {
        param_names: vec!["n".into()],
        rows: vec![row(&raw, 0), row(&raw, 1)],
        ..Default::default()
    };
    let mut other = row(&raw, 0);
    other.annotation = "derived".into();
    processed.rows.push(other);
    add_throttled_runs(&mut processed, &raw);
    add_throttled_runs(&mut processed, &raw); // idempotent
    let tr = |r: &ProcessedRow| {
        r.extras
            .iter()
            .filter(|(n, _)| n == THROTTLED_RUNS_COLUMN)
            .map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(tr(&processed.rows[0]), vec![ExtraValue::Number(2.0)]);
    assert_eq!(tr(&processed.rows[1]), vec![ExtraValue::Number(0.0)]);
    match &tr(&processed.rows[2])[..] {
        [ExtraValue::Number(x)] => assert!(x.is_nan()),
        v => panic!("{v:?}"),
    }
    assert_eq!(processed.rows[0].extras[0].0, "Throttled_Avg", "other extras are kept");
    // No Throttled column: nothing added.
    let mut plain = RawResults::new();
    plain.series = raw.series.clone();
    let mut p2 = ProcessedResults {
        rows: vec![row(&raw, 0)],
        ..Default::default()
    };
    add_throttled_runs(&mut p2, &plain);
    assert!(tr(&p2.rows[0]).is_empty());
    assert_eq!(throttled_runs(&plain), vec![None, None]);
}

#[test]
fn time_clock_correlation() {
    let raw = raw_with_throttled();
    let r = clock_correlation(&raw);
    assert!(r[0].unwrap() < -0.99, "{r:?}");
    assert_eq!(r[1], None, "constant clock has no correlation");
    assert_eq!(pearson(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]), Some(1.0));
    assert_eq!(pearson(&[(1.0, 2.0), (2.0, 4.0)]), None);
}

/// Every condition column the run loop writes reads back from a raw CSV as an extra column, not
/// as a configuration parameter (the reader's list, `KPROF_EXTRA_COLUMNS`, is built from
/// `CONDITION_COLUMNS` in kprof-core).
#[test]
fn condition_columns_read_back_from_a_raw_csv_as_extra_columns() {
    let cols = kprof::core::columns::NSIGHT_RAW_COLUMNS
        .iter()
        .chain(&CONDITION_COLUMNS)
        .chain(&["n"])
        .chain(&kprof::core::columns::KPROF_RAW_COLUMNS);
    let header: Vec<&str> = cols.copied().collect();
    let text = format!(
        "{}\na,1.0,m,k,G,h,,,ns,1500,2600,60,300,5,0x0,0,0,4,b,0\na,1.1,m,k,G,h,,,ns,1400,2600,61,310,6,0x4,1,0,4,b,1\n",
        header.join(",")
    );
    let raw = kprof::core::io::read_raw_csv_from(
        text.as_bytes(),
        std::path::Path::new("x.csv"),
        &kprof::core::io::ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(raw.param_names(), ["n"]);
    assert_eq!(raw.series.len(), 1, "a per-run condition split the series");
    let extra_names: Vec<&str> = raw.extras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(extra_names, CONDITION_COLUMNS);
}
