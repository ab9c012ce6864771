//! Section and set names resolved for GH100 with CUPTI's host library (no GPU): the expansion
//! keeps the metrics the chip's counters know and says why it leaves out the others.

use kprof::counters::sections::{passes, resolve};
use kprof::counters::{CountersError, CuptiLib, MetricsCatalog};

use crate::counters_host::cupti;

fn lib() -> Option<&'static CuptiLib> {
    Some(CuptiLib::load(&cupti()?).expect("load libcupti"))
}

#[test]
fn speed_of_light_on_gh100_is_all_counters_but_the_waves() {
    let Some(lib) = lib() else { return };
    let e = resolve(lib, "GH100", &["SpeedOfLight"]).unwrap();
    let left: Vec<&str> = e.left_out.iter().map(|l| l.metric.as_str()).collect();
    assert_eq!(left, ["launch__waves_per_multiprocessor"]);
    assert!(e
        .metrics
        .iter()
        .any(|m| m == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"));
    // Every kept name is a valid GH100 metric, and they can be collected together.
    let cat = MetricsCatalog::with_lib(lib, "GH100", None).unwrap();
    assert_eq!(cat.validate(&e.metrics).unwrap().len(), e.metrics.len());
    let p = passes(lib, "GH100", &e.metrics).unwrap();
    assert_eq!(p, cat.num_passes(&e.metrics).unwrap());
    assert!(p > 1, "SpeedOfLight needs several passes, got {p}");
}

#[test]
fn sections_left_out_are_not_counters_of_the_chip() {
    let Some(lib) = lib() else { return };
    let names = [
        "basic",
        "MemoryWorkloadAnalysis",
        "ComputeWorkloadAnalysis",
        "SpeedOfLight_RooflineChart",
    ];
    let e = resolve(lib, "GH100", &names).unwrap();
    let cat = MetricsCatalog::with_lib(lib, "GH100", None).unwrap();
    for l in &e.left_out {
        assert!(cat.validate(&[&l.metric]).is_err(), "{} left out but valid", l.metric);
        assert!(!l.reason.is_empty() && !l.section.is_empty(), "{l:?}");
    }
    for m in &e.metrics {
        assert!(cat.validate(&[m]).is_ok(), "{m} kept but not a GH100 metric");
    }
    assert!(e
        .metrics
        .iter()
        .any(|m| m == "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed"));
    assert!(e
        .left_out
        .iter()
        .any(|l| l.metric == "launch__occupancy_limit_registers"));
}

#[test]
fn a_metric_typo_next_to_a_section_is_kept_for_validation() {
    let Some(lib) = lib() else { return };
    let e = resolve(lib, "GH100", &["SpeedOfLight", "dram__bytes_red.sum"]).unwrap();
    assert!(e.metrics.iter().any(|m| m == "dram__bytes_red.sum"));
    assert!(matches!(
        resolve(lib, "GH100", &["Speed0fLight"]),
        Err(CountersError::Sections(_))
    ));
}
