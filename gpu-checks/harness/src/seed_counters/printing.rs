//! Printing: the tables of each label, the comparisons with ncu and the check table.

use crate::checks::{all_checks, is_ncu, reference_for, Check, Status};
use crate::ncu_compare::compare;
use crate::results::{classify, LabelResults};
use crate::{DRAM_PCT, DRAM_READ, DRAM_WRITE, DURATION, FUSED, SM_PCT, STEP6_EXPECTED, UNFUSED};

pub(crate) fn short_metric(metric: &str) -> &str {
    match metric {
        DURATION => "duration",
        SM_PCT => "SM %",
        DRAM_PCT => "DRAM %",
        DRAM_READ => "DRAM read",
        DRAM_WRITE => "DRAM write",
        other => other,
    }
}

/// A value in a readable unit: ns as µs, bytes as MB (10^6), percentages as they are; `n/a` for
/// NaN (a missing metric or only failed runs).
pub(crate) fn format_value(value: f64, unit: &str) -> String {
    if value.is_nan() {
        return "n/a".to_string();
    }
    match unit {
        "ns" => format!("{:.2} us", value / 1e3),
        "byte" => format!("{:.2} MB", value / 1e6),
        "%" => format!("{value:.2} %"),
        other => format!("{value:.4} {other}"),
    }
}

fn print_step6(label: &str, data: &LabelResults) {
    println!("\n== {label}: step 6, what limits each region (mean over runs)");
    println!(
        "{:<20} {:>10} {:>8} {:>8}  limited by",
        "region", "ms", "SM %", "DRAM %"
    );
    for (region, _) in STEP6_EXPECTED {
        let (sm, dram) = (data.mean(region, SM_PCT), data.mean(region, DRAM_PCT));
        let bound = classify(sm, dram).map_or("?".to_string(), |b| b.to_string());
        let ms = data.mean(region, DURATION) / 1e6;
        println!("{region:<20} {ms:>10.4} {sm:>8.1} {dram:>8.1}  {bound}");
    }
}

fn print_step7(label: &str, data: &LabelResults) {
    println!("\n== {label}: step 7, fusion (mean over runs, MB = 10^6 bytes)");
    println!(
        "{:<20} {:>10} {:>11} {:>10}",
        "region", "MB read", "MB written", "MB total"
    );
    for region in [UNFUSED, FUSED] {
        let (read, written) = (data.mean(region, DRAM_READ) / 1e6, data.mean(region, DRAM_WRITE) / 1e6);
        println!("{region:<20} {read:>10.1} {written:>11.1} {:>10.1}", read + written);
    }
    println!(
        "unfused / fused total bytes: {:.2}x",
        data.total_bytes(UNFUSED) / data.total_bytes(FUSED)
    );
}

fn print_comparison(label: &str, data: &LabelResults, ref_label: &str, ncu: &LabelResults) {
    println!("\n== {label} vs {ref_label} (durations and bytes: % difference; percentages: point difference)");
    println!(
        "{:<20} {:<11} {:>14} {:>14} {:>10}",
        "region", "metric", "kprof", "ncu", "diff"
    );
    for c in compare(data, ncu) {
        println!(
            "{:<20} {:<11} {:>14} {:>14} {:>10}",
            c.region,
            short_metric(&c.metric),
            format_value(c.kprof, &c.unit),
            format_value(c.ncu, &c.unit),
            c.diff.to_string()
        );
    }
}

pub(crate) fn print_checks(checks: &[Check]) {
    println!("\n== checks");
    for c in checks {
        println!("{:<4}  {:<52}  {}", c.status.as_str(), c.name, c.detail);
    }
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    println!(
        "checks: {} PASS, {} FAIL, {} INFO",
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Info)
    );
}

/// Prints every table and the checks; returns the checks.
pub(crate) fn report(labels: &[(String, LabelResults)]) -> Vec<Check> {
    for (label, data) in labels {
        print_step6(label, data);
        print_step7(label, data);
    }
    for (label, data) in labels.iter().filter(|(l, _)| !is_ncu(l)) {
        if let Some((ref_label, reference)) = reference_for(label, labels) {
            print_comparison(label, data, ref_label, reference);
        }
    }
    let checks = all_checks(labels);
    print_checks(&checks);
    checks
}
