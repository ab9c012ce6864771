//! Throughput and memory of `kprof_core::stats::aggregate` on 10,000,000 synthetic samples
//! (2,500 configs x 2 annotations x 2 metrics = 10,000 series, 1,000 runs each, pushed
//! run by run within a config as the engine does; 0.1 % failed runs).
//!
//! Plain `harness = false` bench: `cargo bench -p kprof-core --bench aggregate`. One thread.
//! Prints samples/s (best of 3) and the peak resident set (VmHWM) against the raw data size.
//! The last line, `RESULT ...`, is read by benches/run_aggregate_bench.sh.

use std::time::Instant;

use kprof_core::stats::{aggregate, AggregateOptions};
use kprof_core::{Config, DeviceInfo, RawResults, Sample, SeriesKey, DEFAULT_METRIC};

const CONFIGS: u32 = 2_500;
const ANNOTATIONS: [&str; 2] = ["baseline", "fused"];
const METRICS: [&str; 2] = [DEFAULT_METRIC, "dram__bytes.sum"];
const RUNS: u32 = 1_000;

/// A `/proc/self/status` field in KiB (0 where unavailable).
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// SplitMix64 for deterministic synthetic values.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn build() -> RawResults {
    let mut raw = RawResults::new();
    let total = (CONFIGS as usize) * ANNOTATIONS.len() * METRICS.len() * RUNS as usize;
    raw.samples.reserve_exact(total);
    let device = raw.intern_device(&DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "bench".into(),
        compute_clock_khz: Some(1_980_000.0),
        memory_clock_khz: Some(3_201_000.0),
    });
    let kernel = raw.intern_kernel("gemm_kernel");
    let mut rng = 42u64;
    for c in 0..CONFIGS {
        let config = raw.intern_config(&Config::new().with("n", i64::from(c) * 64).with("dtype", "fp16"));
        let mut ids = Vec::new();
        for a in ANNOTATIONS {
            for m in METRICS {
                let key = SeriesKey {
                    benchmark: "gemm".into(),
                    annotation: a.into(),
                    config,
                    metric: m.into(),
                };
                ids.push(
                    raw.intern_series(key, if m == DEFAULT_METRIC { "ns" } else { "byte" }, device)
                        .unwrap(),
                );
            }
        }
        for run in 0..RUNS {
            for &series in &ids {
                let r = next(&mut rng);
                let value = if r % 1000 == 0 {
                    f64::NAN
                } else {
                    1000.0 + f64::from(c) + ((r >> 11) as f64 / (1u64 << 53) as f64) * 50.0
                };
                raw.push_sample(
                    Sample {
                        series,
                        run,
                        value,
                        kernel,
                    },
                    &[],
                );
            }
        }
    }
    raw
}

fn main() {
    let t0 = Instant::now();
    let raw = build();
    let n = raw.samples.len();
    let raw_bytes = raw.samples.capacity() * std::mem::size_of::<Sample>()
        + raw.series.len() * (std::mem::size_of::<kprof_core::Series>() + 48)
        + raw.configs.len() * (std::mem::size_of::<Config>() + 96);
    println!(
        "built {n} samples in {} series in {:.2?}",
        raw.series.len(),
        t0.elapsed()
    );
    let rss_before = status_kib("VmRSS:");
    let hwm_before = status_kib("VmHWM:");

    let opts = AggregateOptions::default();
    let mut best = f64::INFINITY;
    let mut rows = 0;
    for i in 0..3 {
        let t = Instant::now();
        let out = aggregate(&raw, &opts);
        let secs = t.elapsed().as_secs_f64();
        rows = out.rows.len();
        std::hint::black_box(&out);
        drop(out);
        println!(
            "run {i}: aggregate {n} samples -> {rows} rows in {secs:.3} s ({:.2} M samples/s)",
            n as f64 / secs / 1e6
        );
        best = best.min(secs);
    }
    let hwm_after = status_kib("VmHWM:");
    let mib = |kib: u64| kib as f64 / 1024.0;
    let raw_mib = raw_bytes as f64 / (1024.0 * 1024.0);
    let rate = n as f64 / best;
    println!("best: {:.2} M samples/s ({rows} rows)", rate / 1e6);
    println!("raw data (estimated): {raw_mib:.1} MiB");
    println!(
        "RSS before aggregate: {:.1} MiB, peak (VmHWM) before: {:.1} MiB, peak after: {:.1} MiB",
        mib(rss_before),
        mib(hwm_before),
        mib(hwm_after)
    );
    println!(
        "peak RSS / raw data = {:.2}; aggregate's own peak ~= {:.1} MiB ({:.2} x raw)",
        mib(hwm_after) / raw_mib,
        mib(hwm_after.saturating_sub(rss_before)),
        mib(hwm_after.saturating_sub(rss_before)) / raw_mib
    );
    println!(
        "RESULT samples={n} samples_per_s={rate:.0} raw_mib={raw_mib:.1} peak_mib={:.1} peak_ratio={:.3}",
        mib(hwm_after),
        mib(hwm_after) / raw_mib
    );
}
