//! Hand-built test data: results and summaries (kprof-core's statistics) for the plots.
#![allow(dead_code)]

use kprof_core::*;

/// A summary of `values` (NaN = failed run): kprof-core's, with its default options.
pub fn summary(values: &[f64]) -> Summary {
    kprof_core::stats::summarize(values, &kprof_core::stats::StatsOptions::default())
}

pub fn h200() -> DeviceInfo {
    DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "synthetic".into(),
        compute_clock_khz: Some(1_980_000.0),
        memory_clock_khz: Some(3_201_000.0),
    }
}

/// Deterministic noise in [-1, 1].
pub fn noise(seed: u64) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x632B_E59B_D9B4_E019);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    (x % 20_001) as f64 / 10_000.0 - 1.0
}

/// A processed row with the given runs.
pub fn row(annotation: &str, metric: &str, unit: &str, config: Config, runs: &[f64]) -> ProcessedRow {
    let s = summary(runs);
    ProcessedRow {
        benchmark: "bench".into(),
        annotation: annotation.into(),
        metric: metric.into(),
        config,
        geomean: f64::NAN,
        summary: s,
        kernel: format!("{annotation}_kernel"),
        device: h200(),
        unit: unit.into(),
        extras: Vec::new(),
        normalized: None,
        normalization_value: None,
    }
}

/// `series` annotations × x in `xs`, each with `runs` runs of `base * x * (1 + i/10)`.
pub fn simple(series: usize, xs: &[i64], runs: usize) -> ProcessedResults {
    let mut rows = Vec::new();
    for s in 0..series {
        for &x in xs {
            let mean = 1000.0 * x as f64 * (1.0 + s as f64 / 10.0);
            let v: Vec<f64> = (0..runs)
                .map(|r| mean * (1.0 + 0.02 * noise((s * 1000 + r) as u64 ^ x as u64)))
                .collect();
            rows.push(row(
                &format!("kernel{s}"),
                DEFAULT_METRIC,
                "ns",
                Config::new().with("n", x),
                &v,
            ));
        }
    }
    ProcessedResults {
        param_names: vec!["n".into()],
        rows,
        missing_baselines: Vec::new(),
    }
}

/// Synthetic H200 sgemm sweep: dtype fp32/fp16 × n = 512..8192, annotation "gemm", 10 runs, with a
/// few warnings planted (one unstable config, one throttled run). Returns raw and processed.
pub fn sgemm_sweep() -> (RawResults, ProcessedResults) {
    let dev = h200();
    let mut raw = RawResults::new();
    let ns = [512i64, 1024, 2048, 4096, 8192];
    let runs = 10u32;
    let metrics: [(&str, &str); 2] = [
        (DEFAULT_METRIC, "ns"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ];
    for dtype in ["fp32", "fp16"] {
        for &n in &ns {
            let cfg = Config::new().with("n", n).with("dtype", dtype);
            let flops = 2.0 * (n as f64).powi(3);
            // ~50 TFLOP/s fp32, ~600 TFLOP/s fp16 at large n, worse at small n (launch bound).
            let peak = if dtype == "fp32" { 50e12 } else { 600e12 };
            let eff = (n as f64 / 8192.0).powf(0.6).max(0.04);
            let t_ns = (flops / (peak * eff) * 1e9).max(4000.0);
            let sm_pct = 100.0 * eff.min(0.92) * if dtype == "fp16" { 0.8 } else { 1.0 };
            for run in 0..runs {
                let seed = (n as u64) * 31 + run as u64 + if dtype == "fp16" { 7 } else { 0 };
                let mut jitter = 0.01 * noise(seed);
                if n == 512 && dtype == "fp16" {
                    jitter = 0.08 * noise(seed); // planted: unstable
                }
                if n == 4096 && dtype == "fp32" && run == 7 {
                    jitter = 0.12; // planted: an outlier run, marked throttled
                }
                let throttled = if n == 4096 && dtype == "fp32" && run == 7 {
                    1.0
                } else {
                    0.0
                };
                let extras = [("Throttled", ExtraValue::Number(throttled))];
                for (metric, unit) in metrics {
                    let value = if unit == "ns" {
                        t_ns * (1.0 + jitter)
                    } else {
                        sm_pct * (1.0 - jitter / 2.0)
                    };
                    raw.push(&SampleRecord {
                        benchmark: "sgemm",
                        annotation: "gemm",
                        config: &cfg,
                        run,
                        metric,
                        value,
                        unit,
                        kernel: if dtype == "fp32" {
                            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n"
                        } else {
                            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n"
                        },
                        device: &dev,
                        extras: &extras,
                    })
                    .expect("consistent synthetic data");
                }
            }
        }
    }
    let processed = process(&raw);
    (raw, processed)
}

/// Builds the processed table from raw samples (a stand-in for kprof-core's pipeline).
pub fn process(raw: &RawResults) -> ProcessedResults {
    let mut rows = Vec::new();
    for (si, series) in raw.series.iter().enumerate() {
        let idx: Vec<usize> = (0..raw.samples.len())
            .filter(|&i| raw.samples[i].series as usize == si)
            .collect();
        let values: Vec<f64> = idx.iter().map(|&i| raw.samples[i].value).collect();
        let mut r = row(
            &series.key.annotation,
            &series.key.metric,
            &series.unit,
            raw.config_of(series).clone(),
            &values,
        );
        r.benchmark = series.key.benchmark.clone();
        r.device = raw.devices[series.device as usize].clone();
        r.kernel = raw.kernel_names[raw.samples[idx[0]].kernel as usize].clone();
        if let Some(col) = raw.extras.iter().find(|c| c.name == "Throttled") {
            let throttled: f64 = idx
                .iter()
                .filter_map(|&i| match col.values[i] {
                    ExtraValue::Number(x) => Some(x),
                    _ => None,
                })
                .sum();
            r.extras.push(("ThrottledRuns".into(), ExtraValue::Number(throttled)));
        }
        rows.push(r);
    }
    // Geomean per (annotation, metric, dtype) over n — here per (annotation, metric) as in kprof.
    let keys: Vec<(String, String)> = rows.iter().map(|r| (r.annotation.clone(), r.metric.clone())).collect();
    for i in 0..rows.len() {
        let same: Vec<f64> = rows
            .iter()
            .zip(&keys)
            .filter(|(_, k)| **k == keys[i])
            .map(|(r, _)| r.summary.mean)
            .collect();
        rows[i].geomean = (same.iter().map(|m| m.ln()).sum::<f64>() / same.len() as f64).exp();
    }
    ProcessedResults {
        param_names: raw.param_names(),
        rows,
        missing_baselines: Vec::new(),
    }
}

/// An environment fingerprint shaped like kprof's.
pub fn environment() -> serde_json::Value {
    serde_json::json!({
        "gpu": {"name": "NVIDIA H200", "sm_clock_mhz_rated": 1980, "memory_clock_mhz_rated": 3201, "persistence_mode": true},
        "driver": "580.95.05",
        "cuda_runtime": "13.0",
        "host": {"name": "synthetic", "cpu": "synthetic CPU", "kernel": "6.8.0"},
        "kprof": {"version": "0.1.0", "synthetic": true}
    })
}
