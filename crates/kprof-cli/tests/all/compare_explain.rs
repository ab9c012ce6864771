//! `kprof compare --explain` (crates/kprof-cli/src/compare_explain.rs) on two made-up raw CSVs:
//! one region slower with more DRAM bytes, a second kernel and a lower SM clock, one slower with
//! nothing else moved.

use std::path::Path;

use crate::common;

const HEADER: &str = "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,SMClockMHz,Benchmark,Run";

/// Rows of one side: (annotation, duration ns, DRAM bytes, kernels, SM clock MHz), 6 runs each
/// with a small deterministic spread.
fn write_side(path: &Path, regions: &[(&str, f64, f64, &str, f64)]) {
    let mut s = String::from(HEADER);
    s.push('\n');
    for (ann, ns, bytes, kernels, mhz) in regions {
        for run in 0..6 {
            let wiggle = 1.0 + (run as f64 - 2.5) * 0.002;
            for (metric, v, unit) in [
                ("gpu__time_duration.sum", ns * wiggle, "ns"),
                ("dram__bytes_read.sum", *bytes, "byte"),
            ] {
                s.push_str(&format!(
                    "{ann},{v},{metric},{kernels},NVIDIA H200,h,1980000.0,3201000.0,{unit},{mhz},b,{run}\n"
                ));
            }
        }
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn explain_names_what_moved_and_says_when_nothing_did() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.csv"), dir.path().join("new.csv"));
    write_side(
        &base,
        &[
            ("gemm", 1000.0, 5.0e6, "k1", 1980.0),
            ("scale", 500.0, 1.0e6, "s1", 1980.0),
        ],
    );
    write_side(
        &new,
        &[
            ("gemm", 1300.0, 7.5e6, "k1|k2", 1700.0),
            ("scale", 600.0, 1.0e6, "s1", 1980.0),
        ],
    );
    let o = common::kprof()
        .args(["compare", "--explain"])
        .arg(&base)
        .arg(&new)
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "two regressions: {out}{err}");
    let block = out.split("explain:\n").nth(1).unwrap_or_else(|| panic!("{out}"));
    let gemm: String = block
        .lines()
        .skip_while(|l| !l.contains("gemm") || !l.contains("gpu__time_duration"))
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(gemm.contains("REGRESSION +30"), "{gemm}");
    assert!(gemm.contains("kernels per run: 1 -> 2"), "{gemm}");
    assert!(gemm.contains("new [k2]"), "{gemm}");
    assert!(gemm.contains("SM clock 1980 -> 1700 MHz"), "{gemm}");
    assert!(
        gemm.contains("bytes dram__bytes_read.sum: +50.00%, p < 1e-300"),
        "{gemm}"
    );
    let scale: Vec<&str> = block.lines().skip_while(|l| !l.contains("scale")).take(2).collect();
    assert!(scale[0].contains("REGRESSION +20"), "{block}");
    assert_eq!(scale[1].trim(), "no cause found among the counters", "{block}");
    // Without --explain the output has no explanation.
    let o = common::kprof().arg("compare").arg(&base).arg(&new).output().unwrap();
    assert!(!common::text(&o).0.contains("explain:"));
}
