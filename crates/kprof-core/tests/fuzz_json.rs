//! Fuzz campaign, kprof JSON family: `read_results_json` and `read_any` on
//! kprof result files with nodes replaced or removed, on arbitrary bytes, and on the pipeline's
//! own output cut short; what they accept is rendered and written back. No panic, no hang.
//!
//! Long run: `PROPTEST_CASES=200000 nice -n 19 cargo test --release -p kprof-core --test fuzz_json -- --nocapture`

mod fuzz_common;

use std::path::Path;

use fuzz_common::*;
use kprof_core::display::{render_processed, render_raw};
use kprof_core::io::{read_any, read_raw_csv, read_results_json, write_results_json_to, ReadOptions, ResultFile};
use kprof_core::pipeline::{process, ProcessOptions};
use proptest::prelude::*;

/// kprof JSON result files made from the CSV fixtures (raw + processed, one normalised, one with
/// an environment), as bytes.
fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (name, normalize) in [
        ("nsight-python-csv-handwritten/profiled_data-matmul-0.csv", None),
        ("nsight-python-csv-handwritten/profiled_data-matmul-0.csv", Some("base")),
        ("h200-engine-checks-raw-concurrent-trace/c_three_kernels-raw.csv", None),
        ("nsight-python-csv-handwritten/collectors.csv", None),
    ] {
        let raw = read_raw_csv(&fixtures_dir().join(name), &ReadOptions::default()).unwrap();
        let p = process(
            &raw,
            &ProcessOptions {
                normalize_against: normalize.map(String::from),
                ..ProcessOptions::default()
            },
        )
        .unwrap();
        let env = serde_json::json!({"gpu_name": "NVIDIA H200", "driver_version": "580.1", "sm_clock_khz": 1980000});
        let mut buf = Vec::new();
        write_results_json_to(&mut buf, &ResultFile::new(Some(raw), Some(p), Some(env))).unwrap();
        out.push(buf);
    }
    out
}

fn check(bytes: Vec<u8>) {
    within_deadline("json readers", move || {
        let input = put("json", &bytes);
        if let Ok(file) = read_results_json(&input.0) {
            if let Some(raw) = &file.raw {
                let _ = render_raw(raw, 50);
                if let Ok(p) = process(raw, &ProcessOptions::default()) {
                    let _ = render_processed(&p);
                }
            }
            if let Some(p) = &file.processed {
                let _ = render_processed(p);
            }
            let mut buf = Vec::new();
            let _ = write_results_json_to(&mut buf, &file);
        }
        let _ = read_any(&input.0);
        let _ = read_any(Path::new(&input.0));
    });
}

#[test]
fn mutated_json_nodes() {
    let values: Vec<serde_json::Value> = seeds().iter().map(|b| serde_json::from_slice(b).unwrap()).collect();
    campaign("json/mutated-nodes", mutated_json(values, 6), check);
}

#[test]
fn mutated_json_text() {
    campaign("json/mutated-text", mutated(seeds(), 5), check);
}

#[test]
fn arbitrary_bytes_starting_with_a_brace() {
    campaign(
        "json/arbitrary-bytes",
        bytes(1024).prop_map(|mut b| {
            b.insert(0, b'{');
            b
        }),
        check,
    );
}
