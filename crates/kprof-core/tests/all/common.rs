//! What the test files share: a device and the named statistics of a summary.

use kprof_core::{DeviceInfo, Summary};

/// An H200 on host `h`, without clocks.
pub fn device() -> DeviceInfo {
    DeviceInfo {
        gpu: "NVIDIA H200".into(),
        host: "h".into(),
        compute_clock_khz: None,
        memory_clock_khz: None,
    }
}

/// Every floating-point statistic of a summary, named as its field.
pub fn summary_fields(s: &Summary) -> [(&'static str, f64); 10] {
    [
        ("mean", s.mean),
        ("std_dev", s.std_dev),
        ("min", s.min),
        ("max", s.max),
        ("median", s.median),
        ("p05", s.p05),
        ("p95", s.p95),
        ("ci95_lower", s.ci95_lower),
        ("ci95_upper", s.ci95_upper),
        ("rsd_pct", s.rsd_pct),
    ]
}
