//! Fuzz campaign, CSV family: kprof's raw and processed CSVs and
//! nsight-python's `profiled_data`/`processed_data` CSVs, through `read_raw_csv`,
//! `read_processed_csv` and `read_any`, and on what they accept the pipeline, the terminal tables
//! and a write/read round trip. No input may panic or hang; errors are fine.
//!
//! Short run: part of `cargo test`. Long run (see `fuzz_common` for the counts it prints):
//! `PROPTEST_CASES=200000 nice -n 19 cargo test --release -p kprof-core --test fuzz_csv -- --nocapture`

mod fuzz_common;

use std::path::Path;

use fuzz_common::*;
use kprof_core::display::{render_processed, render_raw};
use kprof_core::io::{
    read_any, read_processed_csv, read_raw_csv, read_raw_csv_from, write_processed_csv_to, write_raw_csv_to, Loaded,
    ReadOptions,
};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::stats::{BootstrapOptions, StatsOptions};
use kprof_core::{ProcessedResults, RawResults};
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    "nsight-python-csv-handwritten/profiled_data-matmul-0.csv",
    "nsight-python-csv-handwritten/processed_data-matmul-0.csv",
    "nsight-python-csv-handwritten/collectors.csv",
    "h200-python-tutorial-steps/step2.csv",
    "h200-python-tutorial-steps/step3.csv",
    "h200-python-tutorial-steps/step5-normalized.csv",
    "h200-python-tutorial-steps/step6.csv",
    "h200-python-tutorial-steps/step7.csv",
    "h200-engine-checks-raw-concurrent-trace/a_sgemm4096-raw.csv",
    "h200-engine-checks-raw-concurrent-trace/c_three_kernels-raw.csv",
    "h200-engine-checks-raw-concurrent-trace/e_graph-raw.csv",
];

/// What a result may be used for after it is read: every step must hold without panicking.
fn exercise_raw(raw: &RawResults) {
    let _ = render_raw(raw, 50);
    let mut buf = Vec::new();
    if write_raw_csv_to(&mut buf, raw).is_ok() {
        let _ = read_raw_csv_from(buf.as_slice(), Path::new("roundtrip.csv"), &ReadOptions::default());
    }
    let first = raw.series.first().map(|s| s.key.annotation.clone());
    for (normalize_against, bootstrap) in [(None, None), (first, Some(50))] {
        let opts = ProcessOptions {
            stats: StatsOptions {
                bootstrap: bootstrap.map(|resamples| BootstrapOptions { resamples, seed: 1 }),
                ..StatsOptions::default()
            },
            normalize_against,
        };
        if let Ok(p) = process(raw, &opts) {
            exercise_processed(&p);
        }
    }
}

fn exercise_processed(p: &ProcessedResults) {
    let _ = render_processed(p);
    let mut buf = Vec::new();
    let _ = write_processed_csv_to(&mut buf, p);
}

fn check(bytes: Vec<u8>) {
    within_deadline("csv readers", move || {
        let input = put("csv", &bytes);
        let path = &input.0;
        if let Ok(raw) = read_raw_csv(path, &ReadOptions::default()) {
            exercise_raw(&raw);
        }
        let params = ReadOptions {
            params: Some(vec!["n".into()]),
            benchmark: Some("b".into()),
        };
        let _ = read_raw_csv(path, &params);
        if let Ok(p) = read_processed_csv(path) {
            exercise_processed(&p);
        }
        match read_any(path) {
            Ok(Loaded::Raw(raw)) => exercise_raw(&raw),
            Ok(Loaded::Processed(p)) => exercise_processed(&p),
            _ => {}
        }
    });
}

#[test]
fn mutated_fixtures() {
    campaign("csv/mutated-fixtures", mutated(load(SEEDS), 6), check);
}

#[test]
fn arbitrary_bytes() {
    campaign("csv/arbitrary-bytes", bytes(1024), check);
}

#[test]
fn arbitrary_rows_after_a_real_header() {
    let seeds = load(SEEDS);
    let strategy = (bytes(512), 0..seeds.len()).prop_map(move |(tail, i)| {
        let text = &seeds[i];
        let header_end = text.iter().position(|&b| b == b'\n').map_or(text.len(), |i| i + 1);
        let mut input = text[..header_end].to_vec();
        input.extend(tail);
        input
    });
    campaign("csv/header-then-bytes", strategy, check);
}
