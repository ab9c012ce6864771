//! Re-checks the NVML readings recorded on the H200 by `gpu-checks/harness/src/conditions_check.rs`
//! (`tests/fixtures/h200-nvml-run-conditions/h200-conditions.json`, see the README there) without a GPU: the
//! energy/power relation, the fingerprint, the throttle flags, and that kprof's own types read
//! what kprof wrote on the GPU machine.

use std::path::Path;

use kprof::conditions::sampler::{throttle_reason_names, CONDITION_COLUMNS};
use kprof::conditions::{Fingerprint, RunConditions};
use kprof::core::ExtraValue;
use serde_json::Value;

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/h200-nvml-run-conditions/h200-conditions.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn runs(d: &Value) -> Vec<(Value, RunConditions)> {
    d["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let c: RunConditions =
                serde_json::from_value(r["conditions"].clone()).unwrap_or_else(|e| panic!("run {}: {e}", r["run"]));
            (r.clone(), c)
        })
        .collect()
}

#[test]
fn energy_is_mean_power_times_duration() {
    let d = fixture();
    let runs = runs(&d);
    assert_eq!(runs.len(), 30);
    assert_eq!(f(&d["seconds_per_run"]), 1.0);
    let mut within = 0;
    for (r, c) in &runs {
        // The program's formula: energy counter difference / (mean of the instant power samples
        // taken every 10 ms during the run x the sampler's wall time); mW x s = mJ.
        let samples = r["power_instant_samples"].as_u64().unwrap();
        assert!((90..=110).contains(&samples), "run {}: {samples}", r["run"]);
        let expected_mj = f(&r["mean_power_instant_mw"]) * c.wall_s;
        let ratio = c.energy_mj / expected_mj;
        assert!((ratio - f(&r["energy_ratio"])).abs() < 1e-12, "run {}", r["run"]);
        let ratio_avg = c.energy_mj / (f(&r["mean_power_avg_mw"]) * c.wall_s);
        assert!(
            (ratio_avg - f(&r["energy_ratio_vs_avg_power"])).abs() < 1e-12,
            "run {}",
            r["run"]
        );
        if (0.9..=1.1).contains(&ratio) {
            within += 1;
        }
        // About 1 s of kernel per run; the sampler's wall time brackets it.
        let kernel_s = f(&r["kernel_s"]);
        assert!((0.95..1.05).contains(&kernel_s), "run {}: {kernel_s}", r["run"]);
        assert!(c.wall_s >= kernel_s && c.wall_s < kernel_s + 0.05, "run {}", r["run"]);
        // ~310 W under this FMA load, far from the 700 W limit.
        assert!((250_000.0..400_000.0).contains(&c.power_mw), "run {}", r["run"]);
        assert!((250_000.0..400_000.0).contains(&c.energy_mj), "run {}", r["run"]);
    }
    assert!(within * 10 >= runs.len() * 9, "{within}/{} within 10 %", runs.len());
    // What the H200 showed: all 30 within 10 % (ratios 0.986..1.092).
    assert_eq!(within, 30);
}

#[test]
fn fingerprint_is_the_h200_with_driver_580_cuda_13_cupti_13() {
    let d = fixture();
    let fp = Fingerprint::from_json(&d["fingerprint"].to_string()).unwrap();
    assert_eq!(fp.gpu_name.as_deref(), Some("NVIDIA H200"));
    assert!(fp.driver_version.as_deref().unwrap().starts_with("580."), "{fp:?}");
    assert_eq!(fp.driver_version.as_deref(), Some("580.159.04"));
    assert_eq!(fp.cuda_driver_version.as_deref(), Some("13.0"));
    assert!(fp.cupti_version.as_deref().unwrap().starts_with("13.0"), "{fp:?}");
    assert!(fp.cupti_version.as_deref().unwrap().contains("130001"));
    assert_eq!(fp.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(fp.max_sm_clock_mhz, Some(1980));
    assert_eq!(fp.max_mem_clock_mhz, Some(3201));
    assert_eq!(fp.rated_sm_clock_khz, Some(1_980_000));
    assert_eq!(fp.power_limit_w, Some(700.0));
    assert_eq!(fp.mig_enabled, Some(false));
    assert_eq!((fp.cuda_ordinal, fp.nvml_index), (Some(0), Some(0)));
    assert!(fp.uuid.as_deref().unwrap().starts_with("GPU-"));
    // Every field was read on the GPU machine (the program's "fields present" check), except
    // "Kernel timing" and "SMs", added after this recording (absent fields read back as null).
    let missing: Vec<&str> = fp
        .fields()
        .into_iter()
        .filter(|(n, v)| v.is_none() && !["Kernel timing", "SMs"].contains(n))
        .map(|(n, _)| n)
        .collect();
    assert!(missing.is_empty(), "missing: {missing:?}");
    // The JSON round-trips through kprof's own writer.
    assert_eq!(Fingerprint::from_json(&fp.to_json()).unwrap(), fp);
}

#[test]
fn throttle_flags_and_extras_reproduce() {
    let d = fixture();
    let max = f(&d["fingerprint"]["max_sm_clock_mhz"]);
    for (r, c) in runs(&d) {
        // Nothing throttled on the H200 that day: reasons 0 before and after, clock at max.
        assert_eq!(c.throttle_reasons, Some(0));
        assert_eq!(c.throttle_reasons_before, Some(0));
        assert_eq!(c.throttled, Some(false));
        assert_eq!((c.sm_clock_mhz_before, c.sm_clock_mhz_after), (max, max));
        assert_eq!(c.max_sm_clock_mhz, max);
        assert_eq!(c.mem_clock_mhz, 3201.0);
        assert!((30.0..90.0).contains(&c.temperature_c));
        assert_eq!(c.thermal_wait_s, 0.0);
        // classify() decides the same from the recorded readings.
        let mut again = c.clone();
        again.throttled = None;
        again.classify();
        assert_eq!(again.throttled, c.throttled, "run {}", r["run"]);
        let names: Vec<String> = serde_json::from_value(r["throttle_reason_names"].clone()).unwrap();
        assert_eq!(names, c.throttle_reason_names());
        assert_eq!(names, ["None"]);
        // The extra columns written on the GPU machine are what to_extras() gives here.
        let recorded: Vec<(String, String)> = serde_json::from_value(r["extras"].clone()).unwrap();
        let now = c.to_extras();
        assert_eq!(
            recorded.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            CONDITION_COLUMNS
        );
        for ((name, text), (n2, v)) in recorded.iter().zip(&now) {
            assert_eq!(name, n2);
            match v {
                ExtraValue::Number(x) => {
                    assert_eq!(text.parse::<f64>().unwrap(), *x, "run {} {name}", r["run"])
                }
                ExtraValue::Text(t) => assert_eq!(text, t),
                ExtraValue::Missing => panic!("{name} missing"),
            }
        }
        // The same struct serialises back to the recorded JSON.
        assert_eq!(serde_json::to_value(&c).unwrap(), r["conditions"]);
    }
    // Idle: the GPU_IDLE reason (0x1) and a low clock; not counted as throttling by kprof.
    let idle = &d["idle"];
    assert_eq!(idle["throttle_reasons"], 1);
    assert_eq!(throttle_reason_names(1), ["GpuIdle"]);
    assert!(f(&idle["sm_clock_mhz"]) < 0.5 * max);
    assert!(d["thermal_waits"].as_array().unwrap().is_empty());
}

#[test]
fn the_programs_own_checks_passed() {
    let d = fixture();
    let checks = d["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 12);
    for c in checks {
        assert_eq!(c["pass"], true, "{c}");
    }
}
