//! The line every table of durations starts with: which definition of a kernel's duration its
//! `gpu__time_duration.sum` rows used (from their `DurationSource` column, see `docs/timing.md`)
//! and how to choose the other one, in the words of the door that printed it.
//!
//! The two doors differ by default: the Python decorator's `duration_source="auto"` takes Nsight
//! Compute's `gpu__time_duration` from the counters, `kprof run` takes the CUPTI kernel records
//! of one launch of the program unless `--metrics` or `--durations counters` gives it a counter
//! launch. Both sum their kernels per region: kernels that overlap (two streams) each count in
//! full, so a region's value can exceed its span on the GPU.

use crate::model::{ExtraValue, ProcessedResults, RawResults, DEFAULT_METRIC};

/// The column saying where each duration sample came from.
pub const DURATION_SOURCE_COLUMN: &str = "DurationSource";

/// Which door prints the table (how the other definition is chosen differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `kprof run` (`--durations`).
    Run,
    /// The Python decorator and the Rust API (`duration_source=`).
    Api,
    /// A results file read back (`kprof summarize`, `kprof show`): either door.
    Any,
}

/// Adds `value` to `out` when it is a source not there yet.
fn add(out: &mut Vec<String>, value: Option<&ExtraValue>) {
    if let Some(ExtraValue::Text(t)) = value {
        if !t.is_empty() && !out.contains(t) {
            out.push(t.clone());
        }
    }
}

/// The distinct `DurationSource` values of the duration samples of `raw`, in first-seen order;
/// samples without one (files of older versions, of nsight-python) add nothing.
pub fn sources(raw: &RawResults) -> Vec<String> {
    let column = raw.extras.iter().find(|c| c.name == DURATION_SOURCE_COLUMN);
    let mut out: Vec<String> = Vec::new();
    for (i, s) in raw.samples.iter().enumerate() {
        if raw.series_of(s).key.metric == DEFAULT_METRIC {
            add(&mut out, column.and_then(|c| c.values.get(i)));
        }
    }
    out
}

/// [`sources`] of a processed table (each row's `DurationSource`).
pub fn processed_sources(p: &ProcessedResults) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in p.rows.iter().filter(|r| r.metric == DEFAULT_METRIC) {
        add(
            &mut out,
            r.extras
                .iter()
                .find(|(n, _)| n == DURATION_SOURCE_COLUMN)
                .map(|(_, v)| v),
        );
    }
    out
}

/// What one source means.
fn definition(source: &str) -> &'static str {
    match source {
        "records" => "CUPTI kernel records (start to end of each kernel on the GPU; a CUDA graph launch: its span)",
        "counters" => "Nsight Compute's gpu__time_duration of each kernel (CUPTI Range Profiler, kernel replay)",
        "counters+records" => {
            "Nsight Compute's gpu__time_duration of each eager kernel, the CUPTI records' span of each CUDA graph launch"
        }
        "cuda-events" => "CUDA events around each region (its in-stream GPU time)",
        _ => "a source this version does not know",
    }
}

/// How to get the other definition from `door`, when `sources` are what was used.
fn other_choice(sources: &[String], door: Door) -> &'static str {
    let records = sources.iter().all(|s| s == "records");
    match (door, records) {
        (Door::Run, true) => "for Nsight Compute's gpu__time_duration (the decorator's default) use --durations counters",
        (Door::Run, false) => "for the kernel records of one launch without kernel replay use --durations records",
        (Door::Api, true) => {
            "for Nsight Compute's gpu__time_duration (the default, `kprof run --durations counters`) use duration_source=\"auto\""
        }
        (Door::Api, false) => {
            "for the CUPTI kernel records (`kprof run`'s default) use duration_source=\"records\""
        }
        (Door::Any, _) => {
            "`kprof run --durations records|counters` or the decorator's duration_source=\"records\"|\"auto\" chooses"
        }
    }
}

/// The line before a table whose duration rows came from `sources` ([`sources`]); `None` when
/// the table has no duration rows.
pub fn line(sources: &[String], door: Door) -> Option<String> {
    if sources.is_empty() {
        return None;
    }
    let what: Vec<String> = sources.iter().map(|s| format!("{} [{s}]", definition(s))).collect();
    Some(format!(
        "durations: {}, summed per region (overlapping kernels each count in full); {}",
        what.join("; "),
        other_choice(sources, door)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Config, DeviceInfo, SampleRecord};

    fn raw(rows: &[(&str, &str, Option<&str>)]) -> RawResults {
        let mut raw = RawResults::new();
        for (run, (metric, unit, source)) in rows.iter().enumerate() {
            let extras: Vec<(&str, ExtraValue)> = source
                .iter()
                .map(|s| (DURATION_SOURCE_COLUMN, ExtraValue::Text(s.to_string())))
                .collect();
            raw.push(&SampleRecord {
                benchmark: "b",
                annotation: "a",
                config: &Config::new(),
                run: run as u32,
                metric,
                value: 1.0,
                unit,
                kernel: "k",
                device: &DeviceInfo::default(),
                extras: &extras,
            })
            .unwrap();
        }
        raw
    }

    #[test]
    fn the_line_names_the_definition_and_the_other_choice_of_each_door() {
        let records = sources(&raw(&[
            (DEFAULT_METRIC, "ns", Some("records")),
            ("dram__bytes_read.sum", "byte", None),
        ]));
        assert_eq!(records, ["records"]);
        let l = line(&records, Door::Run).unwrap();
        assert!(l.starts_with("durations: CUPTI kernel records (start to end"), "{l}");
        assert!(
            l.contains("summed per region") && l.ends_with("use --durations counters"),
            "{l}"
        );
        let l = line(&records, Door::Api).unwrap();
        assert!(l.ends_with("use duration_source=\"auto\""), "{l}");
        let counters = sources(&raw(&[(DEFAULT_METRIC, "ns", Some("counters"))]));
        let l = line(&counters, Door::Run).unwrap();
        assert!(
            l.contains("Nsight Compute's gpu__time_duration") && l.ends_with("--durations records"),
            "{l}"
        );
        assert!(line(&counters, Door::Api)
            .unwrap()
            .ends_with("duration_source=\"records\""));
        // Both sources in one table, a sample without one, and no duration rows at all.
        let mixed = sources(&raw(&[
            (DEFAULT_METRIC, "ns", Some("counters")),
            (DEFAULT_METRIC, "ns", Some("records")),
        ]));
        assert_eq!(mixed, ["counters", "records"]);
        assert!(line(&mixed, Door::Run)
            .unwrap()
            .contains("[counters]; CUPTI kernel records"));
        assert!(sources(&raw(&[(DEFAULT_METRIC, "ns", None)])).is_empty());
        assert_eq!(line(&[], Door::Run), None);
        // A file read back: either door's choice, and the processed table's rows say it too.
        let l = line(&mixed, Door::Any).unwrap();
        assert!(l.ends_with("`kprof run --durations records|counters` or the decorator's duration_source=\"records\"|\"auto\" chooses"), "{l}");
        let p =
            crate::pipeline::process(&raw(&[(DEFAULT_METRIC, "ns", Some("records"))]), &Default::default()).unwrap();
        assert_eq!(processed_sources(&p), ["records"]);
        assert_eq!(line(&sources(&raw(&[("m.sum", "byte", None)])), Door::Run), None);
    }
}
