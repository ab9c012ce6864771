//! Statistics on raw CSVs written by kprof's runner on the H200 on 2026-11-30
//! (`tests/fixtures/h200-engine-checks-raw-concurrent-trace/`, see the README there): reading,
//! `NumRuns`, mean/median, and a Student-t 95 % confidence interval checked against values computed
//! here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kprof_core::io::{read_raw_csv, ReadOptions};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::{ParamValue, RawResults};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../tests/fixtures/h200-engine-checks-raw-concurrent-trace/{name}-raw.csv"
    ))
}

fn read(name: &str) -> RawResults {
    let p = fixture(name);
    read_raw_csv(&p, &ReadOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// t quantile 0.975 for the degrees of freedom these files need (n - 1 = 4, 9, 19), from
/// standard tables (scipy.stats.t.ppf(0.975, df)).
fn t975(df: usize) -> f64 {
    match df {
        4 => 2.776_445_105_197_793,
        9 => 2.262_157_162_740_991,
        19 => 2.093_024_054_408_263,
        _ => panic!("no table value for df {df}"),
    }
}

fn n_of(c: &kprof_core::Config) -> i64 {
    match c.get("n") {
        Some(ParamValue::Int(n)) => *n,
        other => panic!("n = {other:?}"),
    }
}

#[test]
fn h200_raw_csvs_process_with_t_based_intervals() {
    // (benchmark, region, configs, runs per config, kernel names of config 0)
    let cases = [
        ("a_sgemm4096", "matmul", 1, 20),
        ("b_scale256mb", "scale", 1, 10),
        ("c_three_kernels", "three", 1, 5),
        ("d_second_thread", "threaded", 1, 5),
        ("e_graph", "graph_replay", 1, 5),
        ("g_sgemm_sweep", "matmul", 5, 10),
    ];
    for (name, region, configs, runs) in cases {
        let raw = read(name);
        assert_eq!(raw.samples.len(), configs * runs, "{name}");
        assert_eq!(raw.devices.len(), 1);
        assert_eq!(raw.devices[0].gpu, "NVIDIA H200");
        assert_eq!(raw.devices[0].compute_clock_khz, Some(1_980_000.0));
        assert_eq!(raw.devices[0].memory_clock_khz, Some(3_201_000.0));
        // The runner's constant columns are extras, not parameters: `n` is the only parameter.
        let extras: Vec<&str> = raw.extras.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            extras,
            ["DeviceOrdinal", "DriverVersion", "CudaVersion", "CuptiVersion"]
        );
        assert_eq!(raw.param_names(), ["n"], "{name}");
        let p = process(&raw, &ProcessOptions::default()).unwrap();
        assert_eq!(p.param_names, ["n"], "{name}");
        assert_eq!(p.rows.len(), configs, "{name}");
        // Values per n, in run order, computed here from the raw samples.
        let mut by_n: HashMap<i64, Vec<(u32, f64)>> = HashMap::new();
        for s in &raw.samples {
            let series = raw.series_of(s);
            by_n.entry(n_of(raw.config_of(series)))
                .or_default()
                .push((s.run, s.value));
        }
        for row in &p.rows {
            assert_eq!((row.benchmark.as_str(), row.annotation.as_str()), (name, region));
            assert_eq!(row.metric, "gpu__time_duration.sum");
            assert_eq!(row.unit, "ns");
            let mut v = by_n[&n_of(&row.config)].clone();
            v.sort_by_key(|x| x.0);
            assert_eq!(
                v.iter().map(|x| x.0).collect::<Vec<_>>(),
                (0..runs as u32).collect::<Vec<_>>()
            );
            let v: Vec<f64> = v.into_iter().map(|x| x.1).collect();
            let s = &row.summary;
            let n = v.len();
            assert_eq!((s.num_runs, s.total_runs), (n, n), "{name}: NumRuns");
            let mean = v.iter().sum::<f64>() / n as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
            let rel = |a: f64, b: f64| ((a - b) / b).abs();
            assert!(rel(s.mean, mean) < 1e-12, "{name}: mean {} vs {mean}", s.mean);
            assert!(rel(s.std_dev, sd) < 1e-9, "{name}: sd {} vs {sd}", s.std_dev);
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let median = if n % 2 == 1 {
                sorted[n / 2]
            } else {
                (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
            };
            assert_eq!(s.median, median, "{name}");
            assert_eq!((s.min, s.max), (sorted[0], sorted[n - 1]));
            // CI: mean ± t(0.975, n-1) · sd / √n — t-based, not the normal 1.96.
            let half = t975(n - 1) * sd / (n as f64).sqrt();
            assert!(
                rel(s.ci95_lower, mean - half) < 1e-9,
                "{name}: lower {} vs {}",
                s.ci95_lower,
                mean - half
            );
            assert!(
                rel(s.ci95_upper, mean + half) < 1e-9,
                "{name}: upper {} vs {}",
                s.ci95_upper,
                mean + half
            );
            let z_half = 1.959_963_984_540_054 * sd / (n as f64).sqrt();
            assert!(
                ((s.ci95_upper - s.ci95_lower) / 2.0 - z_half).abs() > 0.05 * z_half,
                "{name}: CI looks normal-based"
            );
            assert!(rel(s.rsd_pct, sd / mean * 100.0) < 1e-9);
            // The GPU was quiet: every series is stable (RSD well below 1 %, except the 13 µs
            // sgemm 512 where launch-to-launch noise is a few percent).
            assert!(s.rsd_pct < 5.0, "{name}: rsd {}", s.rsd_pct);
        }
    }
}

#[test]
fn h200_values_match_what_the_gpu_check_reported() {
    // gpu_check.rs's table on the H200: (a) kprof median 2671.09 us; (c) run 0 = 175.94 us;
    // (d) run 0 = 38.56 us; (e) run 0 = 36.86 us; (g) medians 13.5/60.9/352.3/2738.0/21650.8 us.
    let median = |name: &str| -> Vec<f64> {
        let p = process(&read(name), &ProcessOptions::default()).unwrap();
        p.rows.iter().map(|r| r.summary.median).collect()
    };
    assert_eq!(median("a_sgemm4096"), [2_671_094.0]);
    let first = |name: &str| read(name).samples[0].value;
    assert_eq!(first("c_three_kernels"), 175_936.0);
    assert_eq!(first("d_second_thread"), 38_560.0);
    assert_eq!(first("e_graph"), 36_864.0);
    let g: Vec<f64> = median("g_sgemm_sweep")
        .iter()
        .map(|m| (m / 100.0).round() / 10.0)
        .collect();
    assert_eq!(g, [13.5, 60.9, 352.3, 2738.0, 21650.8]);
    // The kernel column: one cuBLAS GEMM for (a); 1 or 2 kernels joined by `|` in the sweep.
    let raw = read("g_sgemm_sweep");
    let counts: Vec<usize> = process(&raw, &ProcessOptions::default())
        .unwrap()
        .rows
        .iter()
        .map(|r| r.kernel.split('|').count())
        .collect();
    assert_eq!(counts, [2, 1, 2, 2, 2]);
}

/// A `Warning` on one run (what the runner writes for a failed run) stays an extra column and
/// does not make that run a configuration of its own.
#[test]
fn a_warning_on_one_run_does_not_split_the_series() {
    let text = std::fs::read_to_string(fixture("c_three_kernels")).unwrap();
    let mut out = String::new();
    // A last column `Warning`, set on run 2 only.
    for (i, line) in text.lines().enumerate() {
        let extra = match i {
            0 => ",Warning",
            3 => ",run 2 failed",
            _ => ",",
        };
        out.push_str(line);
        out.push_str(extra);
        out.push('\n');
    }
    let raw = kprof_core::io::read_raw_csv_from(out.as_bytes(), &fixture("c_three_kernels"), &ReadOptions::default())
        .unwrap();
    assert_eq!(raw.param_names(), ["n"]);
    assert_eq!(raw.series.len(), 1);
    let p = process(&raw, &ProcessOptions::default()).unwrap();
    assert_eq!(p.rows.len(), 1);
    assert_eq!(p.rows[0].summary.num_runs, 5);
}
