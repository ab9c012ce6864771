//! Fuzz campaign, ncu and environment families: Nsight Compute CSV exports
//! through `parse_ncu_csv` (every number style, every reducer) and the `.env.json` fingerprint
//! sidecar through `Fingerprint::from_json`/`read_sidecar` and `render`. Seeds are the fixtures
//! under `tests/fixtures/ncu-csv-exports` and a fingerprint made here; no input may panic or hang.
//!
//! Long runs:
//! `PROPTEST_CASES=100000 nice -n 19 cargo test --release -p kprof --test fuzz_ncu_env ncu -- --nocapture`
//! `PROPTEST_CASES=400000 nice -n 19 cargo test --release -p kprof --test fuzz_ncu_env env -- --nocapture`

#[path = "../../kprof-core/tests/fuzz_common/mod.rs"]
mod fuzz_common;

use fuzz_common::*;
use kprof::conditions::fingerprint::{render, Fingerprint};
use kprof::ncu::{parse_ncu_csv, ImportOptions, NumberStyle};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::transforms::Reducer;
use proptest::prelude::*;

const NCU_SEEDS: &[&str] = &[
    "ncu-csv-exports/kprof-keyed.csv",
    "ncu-csv-exports/kprof-keyed-european.csv",
    "ncu-csv-exports/plain-ncu.csv",
    "ncu-csv-exports/h200-kprof-cache-all-narrowed.csv",
];

fn check_ncu(bytes: Vec<u8>) {
    within_deadline("ncu csv", move || {
        let text = String::from_utf8_lossy(&bytes);
        for (style, reducer) in [
            (NumberStyle::Auto, Reducer::Sum),
            (NumberStyle::C, Reducer::Max),
            (NumberStyle::European, Reducer::First),
        ] {
            let mut opts = ImportOptions::default();
            opts.benchmark = "fuzz".into();
            opts.number_style = style;
            opts.reducer = reducer;
            if let Ok(raw) = parse_ncu_csv(&text, &opts) {
                let _ = process(&raw, &ProcessOptions::default());
                let _ = kprof_core::display::render_raw(&raw, 20);
            }
        }
    });
}

#[test]
fn ncu_mutated_fixtures() {
    campaign("ncu/mutated-fixtures", mutated(load(NCU_SEEDS), 6), check_ncu);
}

#[test]
fn ncu_arbitrary_rows_after_a_real_header() {
    let seeds = load(NCU_SEEDS);
    let strategy = (bytes(768), 0..seeds.len()).prop_map(move |(tail, i)| {
        // Keep everything up to the units row (the first three CSV lines of the export).
        let text = &seeds[i];
        let mut end = 0;
        let mut records = 0;
        for (k, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
            end += line.len();
            if line.first() == Some(&b'"') {
                records += 1;
            }
            if records == 2 || k > 8 {
                break;
            }
        }
        let mut input = text[..end].to_vec();
        input.extend(tail);
        input
    });
    campaign("ncu/header-then-bytes", strategy, check_ncu);
}

#[test]
fn ncu_arbitrary_bytes() {
    campaign("ncu/arbitrary-bytes", bytes(1024), check_ncu);
}

fn env_seed() -> serde_json::Value {
    serde_json::json!({
        "gpu_name": "NVIDIA H200",
        "uuid": "GPU-0000",
        "cuda_ordinal": 0,
        "nvml_index": 0,
        "compute_capability": "9.0",
        "driver_version": "580.65.06",
        "cuda_driver_version": "13.0",
        "cuda_runtime_version": "13.0",
        "cupti_version": "26",
        "ecc_enabled": true,
        "sm_clock_khz": 1980000,
        "kprof_version": "0.1.0",
        "host": {"name": "vm", "os": "Linux"},
        "ncu": {"version": "2025.3.1.0", "mode": "relaunch", "files": ["a", "b"]}
    })
}

fn check_env(bytes: Vec<u8>) {
    within_deadline("env.json", move || {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(fp) = Fingerprint::from_json(&text) {
            let _ = render(&fp);
            let _ = fp.to_json();
        }
        let csv = put("csv", b"Annotation\n");
        let side = csv.0.with_extension("env.json");
        std::fs::write(&side, &bytes).unwrap();
        if let Ok(fp) = Fingerprint::read_sidecar(&csv.0) {
            let _ = render(&fp);
        }
        let _ = std::fs::remove_file(side);
    });
}

#[test]
fn env_mutated_json_nodes() {
    let mut seeds = vec![env_seed()];
    let real: serde_json::Value =
        serde_json::from_slice(&load(&["ncu-csv-exports/h200-python-backend-ncu/ncu-backend-summary.json"]).remove(0))
            .unwrap();
    seeds.push(real);
    campaign("env/mutated-nodes", mutated_json(seeds, 6), check_env);
}

#[test]
fn env_mutated_text_and_bytes() {
    let seed = serde_json::to_vec_pretty(&env_seed()).unwrap();
    campaign(
        "env/mutated-text",
        prop_oneof![mutated(vec![seed], 5), bytes(512)],
        check_env,
    );
}
