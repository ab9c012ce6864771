//! kprof's section table against the record of Nsight Compute's section files
//! (`tests/fixtures/ncu-sections/sections.json`, written by `gpu-checks/ncu_sections.py`), and
//! the expansion of section and set names.

use std::path::Path;

use kprof_core::sections::{self, compute_capability, expand, expand_for_chip, SectionError};
use serde_json::Value;

fn record() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ncu-sections/sections.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The strings of a JSON array of strings.
fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

fn arch_of(v: &Value) -> Vec<(u32, u32)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let lo = r[0].as_u64().unwrap() as u32;
            let hi = r[1].as_u64().unwrap() as u32;
            (lo, if hi >= 999 { u32::MAX } else { hi })
        })
        .collect()
}

/// Every section of the table names exactly the record's metrics, filters and sets, in order.
#[test]
fn table_matches_the_record_of_ncu_section_files() {
    let rec = record();
    let table = sections::table();
    let recorded = rec["sections"].as_array().unwrap();
    assert_eq!(table.sections.len(), recorded.len());
    for r in recorded {
        let id = r["identifier"].as_str().unwrap();
        let s = table.section(id).unwrap_or_else(|| panic!("table lacks section {id}"));
        let names: Vec<&str> = s.metrics.iter().map(|m| m.name.as_str()).collect();
        let want: Vec<&str> = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, want, "metrics of {id}");
        for (m, w) in s.metrics.iter().zip(r["metrics"].as_array().unwrap()) {
            assert_eq!(m.arch, arch_of(&w["arch"]), "filter of {} in {id}", m.name);
        }
        assert_eq!(s.sets, strings(&r["sets"]), "sets of {id}");
        assert_eq!(s.breakdowns, strings(&r["breakdowns"]), "breakdowns of {id}");
    }
    for (set, members) in &table.sets {
        assert_eq!(members, &strings(&rec["sets"][set]), "members of set {set}");
    }
}

/// The record's metrics of a section for one compute capability, counters only.
fn recorded_counters(id: &str, cc: u32) -> Vec<String> {
    let rec = record();
    let s = rec["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["identifier"] == id)
        .unwrap()
        .clone();
    s["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            let a = arch_of(&m["arch"]);
            a.is_empty() || a.iter().any(|&(lo, hi)| lo <= cc && cc <= hi)
        })
        .map(|m| m["name"].as_str().unwrap().to_string())
        .filter(|n| !n.starts_with("launch__") && !n.starts_with("device__") && n.contains('.'))
        .collect()
}

#[test]
fn speed_of_light_expands_to_the_recorded_metrics_on_gh100() {
    let e = expand_for_chip(&["SpeedOfLight"], "GH100").unwrap();
    assert_eq!(e.metrics, recorded_counters("SpeedOfLight", 90));
    assert!(e
        .metrics
        .contains(&"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed".to_string()));
    assert_eq!(e.sections, ["SpeedOfLight"]);
    let left: Vec<&str> = e.left_out.iter().map(|l| l.metric.as_str()).collect();
    assert_eq!(left, ["launch__waves_per_multiprocessor"]);
}

#[test]
fn arch_filters_pick_the_chip_s_metrics() {
    for id in [
        "ComputeWorkloadAnalysis",
        "MemoryWorkloadAnalysis",
        "Occupancy",
        "LaunchStats",
    ] {
        for cc in [75, 80, 86, 89, 90, 100, 120] {
            assert_eq!(
                expand(&[id], cc).unwrap().metrics,
                recorded_counters(id, cc),
                "{id} at {cc}"
            );
        }
    }
    let hopper = expand(&["ComputeWorkloadAnalysis"], 90).unwrap().metrics;
    let ada = expand(&["ComputeWorkloadAnalysis"], 89).unwrap().metrics;
    let gmma = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed".to_string();
    assert!(hopper.contains(&gmma) && !ada.contains(&gmma));
}

#[test]
fn basic_set_is_its_four_sections_and_metrics_keep_their_place() {
    let e = expand(&["dram__bytes_read.sum", "basic", "sm__cycles_active.avg"], 90).unwrap();
    assert_eq!(
        e.sections,
        ["LaunchStats", "Occupancy", "SpeedOfLight", "WorkloadDistribution"]
    );
    assert_eq!(e.metrics[0], "dram__bytes_read.sum");
    let mut seen = std::collections::HashSet::new();
    assert!(
        e.metrics.iter().all(|m| seen.insert(m)),
        "no name twice: {:?}",
        e.metrics
    );
    let mut want = vec!["dram__bytes_read.sum".to_string()];
    for id in &e.sections {
        for m in recorded_counters(id, 90) {
            if !want.contains(&m) {
                want.push(m);
            }
        }
    }
    assert_eq!(e.metrics, want);
    let note = e.left_out_note().unwrap();
    assert!(
        note.contains("launch__grid_size") && note.contains("launch attribute"),
        "{note}"
    );
}

#[test]
fn unknown_names_and_chips_are_errors() {
    match expand(&["SpeedOfLite"], 90) {
        Err(SectionError::Unknown { name, sections, sets }) => {
            assert_eq!(name, "SpeedOfLite");
            assert!(sections.contains("SpeedOfLight") && sets.contains("basic"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        expand_for_chip(&["SpeedOfLight"], "XX900"),
        Err(SectionError::UnknownChip(_))
    ));
    // Metric names alone need no chip.
    assert_eq!(expand_for_chip(&["a__b.sum"], "XX900").unwrap().metrics, ["a__b.sum"]);
    assert_eq!(compute_capability("GH100"), Some(90));
    assert_eq!(compute_capability("GA102"), Some(86));
    assert_eq!(compute_capability("GA10B"), Some(87));
}

#[test]
fn a_malformed_table_is_an_error_with_its_line() {
    let bad = "set basic = Missing\n[A] basic\nx__y.sum 9x\n";
    match sections::parse_table(bad) {
        Err(SectionError::Table { line, .. }) => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
    let t = sections::parse_table("set s = A\n[A] s\nx__y.sum 80-90 100+\n").unwrap();
    assert_eq!(t.sections[0].metrics[0].arch, [(80, 90), (100, u32::MAX)]);
    assert!(t.sections[0].metrics[0].admits(85) && !t.sections[0].metrics[0].admits(95));
}
