//! Checks: the PASS / FAIL / INFO rows, per step and against ncu.

use crate::ncu_compare::{compare, ncu_limit};
use crate::printing::{format_value, short_metric};
use crate::results::{classify, LabelResults};
use crate::{DRAM_PCT, FUSED, JUDGED_LABEL, NCU_APP_LABEL, NCU_LABEL, SM_PCT, SOFTMAX, STEP6_EXPECTED, UNFUSED};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Pass,
    Fail,
    Info,
}

impl Status {
    fn judged(ok: bool) -> Status {
        if ok {
            Status::Pass
        } else {
            Status::Fail
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Info => "INFO",
        }
    }
}

pub(crate) struct Check {
    pub(crate) status: Status,
    pub(crate) name: String,
    pub(crate) detail: String,
}

impl Check {
    pub(crate) fn new(status: Status, name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            status,
            name: name.into(),
            detail: detail.into(),
        }
    }
}

/// Step 6: each region limited by what the seed expects.
fn check_step6(label: &str, data: &LabelResults, ncu: Option<&LabelResults>) -> Vec<Check> {
    let mut rows: Vec<Check> = STEP6_EXPECTED
        .iter()
        .map(|&(region, expected)| {
            let (sm, dram) = (data.mean(region, SM_PCT), data.mean(region, DRAM_PCT));
            let got = classify(sm, dram);
            let got_text = got.map_or("unknown".to_string(), |b| b.to_string());
            Check::new(
                Status::judged(got == Some(expected)),
                format!("{label} step6 {region}"),
                format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); expected {expected}"),
            )
        })
        .collect();
    // This softmax is not torch's: what limits it is whatever ncu says limits it.
    let (sm, dram) = (data.mean(SOFTMAX, SM_PCT), data.mean(SOFTMAX, DRAM_PCT));
    let got = classify(sm, dram);
    let got_text = got.map_or("unknown".to_string(), |b| b.to_string());
    let expected = ncu.and_then(|n| classify(n.mean(SOFTMAX, SM_PCT), n.mean(SOFTMAX, DRAM_PCT)));
    rows.push(match expected {
        Some(e) => Check::new(
            Status::judged(got == Some(e)),
            format!("{label} step6 {SOFTMAX}"),
            format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); ncu says {e}"),
        ),
        None => Check::new(
            Status::Info,
            format!("{label} step6 {SOFTMAX}"),
            format!("limited by {got_text} (SM {sm:.1} %, DRAM {dram:.1} %); no ncu classification to compare"),
        ),
    });
    rows
}

/// Step 7: the unfused region moves more DRAM bytes than the fused one.
fn check_step7(label: &str, data: &LabelResults) -> Check {
    let (unfused, fused) = (data.total_bytes(UNFUSED), data.total_bytes(FUSED));
    Check::new(
        Status::judged(unfused > fused),
        format!("{label} step7 fusion"),
        format!(
            "unfused {:.1} MB vs fused {:.1} MB read + written ({:.2}x)",
            unfused / 1e6,
            fused / 1e6,
            unfused / fused
        ),
    )
}

/// One row per (region, metric) of `label` against ncu; judged only for [`JUDGED_LABEL`] on
/// one-kernel regions.
fn check_vs_ncu(label: &str, data: &LabelResults, ref_label: &str, ncu: &LabelResults) -> Vec<Check> {
    compare(data, ncu)
        .into_iter()
        .map(|c| {
            let kernels = data.kernel_count(c.region).max(ncu.kernel_count(c.region));
            let limit = ncu_limit(&c.metric, &c.unit).filter(|_| label == JUDGED_LABEL);
            let mut detail = format!(
                "kprof {} vs {ref_label} {}: {}",
                format_value(c.kprof, &c.unit),
                format_value(c.ncu, &c.unit),
                c.diff
            );
            let status = match limit {
                Some(limit) if kernels <= 1 => {
                    detail.push_str(&format!(" (limit {})", c.diff.limit_text(limit)));
                    Status::judged(c.diff.magnitude() <= limit)
                }
                Some(_) => {
                    detail.push_str(&format!(
                        "; not judged: {kernels} kernels, ncu flushes the L2 before each, kprof only before the region"
                    ));
                    Status::Info
                }
                None => Status::Info,
            };
            Check::new(
                status,
                format!("{label} vs {ref_label}: {} {}", c.region, short_metric(&c.metric)),
                detail,
            )
        })
        .collect()
}

/// INFO rows for series with failed (NaN) runs.
fn nan_rows(label: &str, data: &LabelResults) -> Vec<Check> {
    let mut rows = Vec::new();
    for (region, metrics) in &data.regions {
        for (metric, runs) in metrics {
            let nan = runs.nan_count();
            if nan > 0 {
                rows.push(Check::new(
                    Status::Info,
                    format!("{label} NaN: {region} {}", short_metric(metric)),
                    format!("{nan} of {} runs NaN (left out of the mean)", runs.values.len()),
                ));
            }
        }
    }
    rows
}

/// Whether `label` is one of ncu's.
pub(crate) fn is_ncu(label: &str) -> bool {
    label == NCU_LABEL || label == NCU_APP_LABEL
}

/// The ncu results a kprof label is compared with: ncu's kernel replay for kernel replay, ncu's
/// application replay (when it ran) for application and range replay, which re-run the closure.
pub(crate) fn reference_for<'a>(
    label: &str,
    labels: &'a [(String, LabelResults)],
) -> Option<(&'a str, &'a LabelResults)> {
    let find = |name: &str| labels.iter().find(|(l, _)| l == name).map(|(l, d)| (l.as_str(), d));
    if label.starts_with("kernel/") {
        find(NCU_LABEL)
    } else {
        find(NCU_APP_LABEL).or_else(|| find(NCU_LABEL))
    }
}

pub(crate) fn all_checks(labels: &[(String, LabelResults)]) -> Vec<Check> {
    let ncu = labels.iter().find(|(l, _)| l == NCU_LABEL).map(|(_, d)| d);
    let mut checks = Vec::new();
    for (label, data) in labels {
        checks.extend(check_step6(label, data, ncu));
        checks.push(check_step7(label, data));
        checks.extend(nan_rows(label, data));
    }
    match ncu {
        Some(_) => {
            for (label, data) in labels.iter().filter(|(l, _)| !is_ncu(l)) {
                if let Some((ref_label, reference)) = reference_for(label, labels) {
                    checks.extend(check_vs_ncu(label, data, ref_label, reference));
                }
            }
            if !labels.iter().any(|(l, _)| l == JUDGED_LABEL) {
                checks.push(Check::new(
                    Status::Info,
                    format!("{JUDGED_LABEL} vs ncu"),
                    format!("{JUDGED_LABEL} was not run: nothing judged against ncu"),
                ));
            }
        }
        None => checks.push(Check::new(
            Status::Info,
            "vs ncu",
            "no ncu results (mode not asked for, or ncu not found): nothing compared with ncu",
        )),
    }
    checks
}
