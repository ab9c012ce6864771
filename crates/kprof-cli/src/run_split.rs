//! The time split of `kprof run`: where its wall time went, by phase, per execution (before CUDA,
//! with CUDA, the exit handler, after the results; in a counter launch also the Range Profiler's
//! start, the replay inside the profiled launch calls split into the passes' GPU time and the rest,
//! and the image switches). [`split`] puts together the wall clock `kprof run` takes around each
//! launch and the instants and times of every process's status file ([`kprof::run_status`]);
//! [`render`] is the table of `kprof run --verbose`, and the same numbers go to `time-split.json`.
//!
//! What users read in it: `docs/kprof-run.md`; the cost model: `docs/counters.md`.

use std::collections::HashMap;

use kprof::run_status::{CounterTimes, RegionMean, Timeline};
use serde::Serialize;

/// What `kprof run` measured around one execution, with the status files it left.
#[derive(Debug, Clone)]
pub struct ExecutionTimes {
    /// E.g. `repetition 1, timing launch`.
    pub label: String,
    /// A counter launch.
    pub counters: bool,
    /// The repetition and sweep value this execution belongs to (pairs a counter launch with
    /// its timing launch).
    pub pair_key: String,
    /// Unix ns just before the launch and just after the command ended.
    pub spawn_unix_ns: u64,
    pub end_unix_ns: u64,
    /// The status files of its processes.
    pub statuses: Vec<serde_json::Value>,
}

/// How the replay inside the profiled launch calls divides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplaySplit {
    /// Launches profiled and passes of the metric set.
    pub launches: u64,
    pub passes: usize,
    /// Time inside the profiled launch calls, seconds, and per launch, milliseconds.
    pub replay_s: f64,
    pub per_launch_ms: f64,
    /// GPU time of all passes of all kernels, seconds.
    pub passes_gpu_s: f64,
    /// Whether that came from one kernel record per pass (`records`) or is the passes times the
    /// first record of each kernel (`inferred`).
    pub passes_gpu_source: &'static str,
    /// The replay minus the GPU time: CUPTI's save and restore of device memory and its work
    /// per pass (inferred), seconds, and per launch and pass, milliseconds.
    pub overhead_s: f64,
    pub overhead_per_launch_pass_ms: f64,
}

/// One region's mean duration in a counter launch's kernel records against the timing launch's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DurationCheck {
    pub annotation: String,
    /// Mean duration in the timing launch and in the counter launch's records (ns).
    pub timing_ns: f64,
    pub counter_records_ns: f64,
    /// counter / timing.
    pub ratio: f64,
}

/// The phases of one execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionSplit {
    pub label: String,
    pub counters: bool,
    pub wall_s: f64,
    /// Status files found (processes that loaded the library).
    pub processes: usize,
    /// The phases, from the execution's first CUDA process (the one whose `cuInit` came first).
    /// Before CUDA: from the launch to that `cuInit` (interpreter, imports).
    pub before_cuda_s: Option<f64>,
    /// With CUDA: from `cuInit` to the exit handler (the program's work).
    pub with_cuda_s: Option<f64>,
    /// The exit handler: synchronising, the last counter decode, flushing CUPTI, grouping, writing.
    pub exit_handler_s: Option<f64>,
    /// After the results: from the status file to the end of the launch (CUDA's teardown, other
    /// processes).
    pub after_results_s: Option<f64>,
    /// Distinct kernels, kernel records and their GPU times (seconds), over all processes.
    pub kernels: usize,
    pub kernel_records: usize,
    pub kernels_gpu_s: f64,
    pub records_gpu_s: f64,
    /// The counter collection's host times, summed over processes (counter launches).
    pub collection: Option<CounterTimes>,
    pub replay: Option<ReplaySplit>,
    /// With CUDA minus the collection's start, replay and image switches (counter launches).
    pub program_rest_s: Option<f64>,
    /// Mean record duration per region over all processes.
    pub region_means: Vec<RegionMean>,
    /// Counter launches: the regions' record durations against the paired timing launch.
    pub durations_vs_timing: Vec<DurationCheck>,
}

/// The whole split (`time-split.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeSplit {
    /// Options, the injection library, the output folder.
    pub setup_s: f64,
    /// Checking `--metrics` with the chip's metrics (0 without counter metrics).
    pub metric_check_s: f64,
    pub executions: Vec<ExecutionSplit>,
    /// Between the launches: reading each execution's files (the rest of the total).
    pub between_s: f64,
    /// Merging, writing raw.csv / processed.csv, printing the table.
    pub results_s: f64,
    pub total_s: f64,
}

/// The file in `--out` that holds the split.
pub const TIME_SPLIT_FILE: &str = "time-split.json";

/// Writes the split as pretty JSON.
pub fn write(split: &TimeSplit, path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(split)?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

fn secs(a: u64, b: u64) -> f64 {
    b.saturating_sub(a) as f64 * 1e-9
}

/// Region means of several processes combined (weighted by runs), first-seen order.
pub fn combine_means<'a>(lists: impl IntoIterator<Item = &'a [RegionMean]>) -> Vec<RegionMean> {
    let mut out: Vec<RegionMean> = Vec::new();
    for list in lists {
        for m in list.iter().filter(|m| m.runs > 0) {
            match out.iter_mut().find(|o| o.annotation == m.annotation) {
                Some(o) => {
                    let runs = o.runs + m.runs;
                    o.mean_ns = (o.mean_ns * o.runs as f64 + m.mean_ns * m.runs as f64) / runs as f64;
                    o.runs = runs;
                }
                None => out.push(m.clone()),
            }
        }
    }
    out
}

fn add_times(sum: &mut CounterTimes, c: &CounterTimes) {
    sum.launches += c.launches;
    sum.passes = sum.passes.max(c.passes);
    sum.images_decoded += c.images_decoded;
    sum.start_s += c.start_s;
    sum.config_s += c.config_s;
    sum.load_s += c.load_s;
    sum.enable_s += c.enable_s;
    sum.first_image_s += c.first_image_s;
    sum.first_image_ranges = sum.first_image_ranges.max(c.first_image_ranges);
    sum.replay_s += c.replay_s;
    sum.replay_max_s = sum.replay_max_s.max(c.replay_max_s);
    sum.restart_s += c.restart_s;
    sum.decode_s += c.decode_s;
    sum.evaluate_s += c.evaluate_s;
}

/// The replay split of a counter launch (`None` without profiled launches).
pub fn replay_split(c: &CounterTimes, t: &Timeline) -> Option<ReplaySplit> {
    if c.launches == 0 {
        return None;
    }
    let passes = c.passes.max(1);
    let per_pass_records = t.kernels > 0 && passes > 1 && t.kernel_records >= passes * t.kernels;
    let (passes_gpu_s, passes_gpu_source) = if per_pass_records || passes == 1 {
        (t.records_gpu_ns as f64 * 1e-9, "records")
    } else {
        (passes as f64 * t.kernels_gpu_ns as f64 * 1e-9, "inferred")
    };
    let overhead_s = c.replay_s - passes_gpu_s;
    Some(ReplaySplit {
        launches: c.launches,
        passes,
        replay_s: c.replay_s,
        per_launch_ms: c.replay_s * 1e3 / c.launches as f64,
        passes_gpu_s,
        passes_gpu_source,
        overhead_s,
        overhead_per_launch_pass_ms: overhead_s * 1e3 / (c.launches as f64 * passes as f64),
    })
}

/// The phases of one execution from its launch instants and status files.
pub fn execution_split(e: &ExecutionTimes) -> ExecutionSplit {
    let timelines: Vec<Timeline> = e
        .statuses
        .iter()
        .map(|s| serde_json::from_value(s["timeline"].clone()).unwrap_or_default())
        .collect();
    let first = timelines
        .iter()
        .filter(|t| t.cuda_init_unix_ns.is_some())
        .min_by_key(|t| t.cuda_init_unix_ns);
    let mut total = Timeline::default();
    for t in &timelines {
        total.kernels += t.kernels;
        total.kernel_records += t.kernel_records;
        total.kernels_gpu_ns += t.kernels_gpu_ns;
        total.records_gpu_ns += t.records_gpu_ns;
    }
    let mut collection: Option<CounterTimes> = None;
    for s in &e.statuses {
        if s["counters"].is_object() {
            let c: CounterTimes = serde_json::from_value(s["counters"].clone()).unwrap_or_default();
            add_times(collection.get_or_insert_with(Default::default), &c);
        }
    }
    let with_cuda_s = first.and_then(|t| Some(secs(t.cuda_init_unix_ns?, t.exit_handler_unix_ns?)));
    let replay = collection.as_ref().and_then(|c| replay_split(c, &total));
    let program_rest_s = match (&collection, with_cuda_s) {
        (Some(c), Some(w)) => Some(w - c.start_s - c.replay_s - c.restart_s),
        _ => None,
    };
    ExecutionSplit {
        label: e.label.clone(),
        counters: e.counters,
        wall_s: secs(e.spawn_unix_ns, e.end_unix_ns),
        processes: e.statuses.len(),
        before_cuda_s: first.and_then(|t| Some(secs(e.spawn_unix_ns, t.cuda_init_unix_ns?))),
        with_cuda_s,
        exit_handler_s: first.and_then(|t| Some(secs(t.exit_handler_unix_ns?, t.results_unix_ns?))),
        after_results_s: first.and_then(|t| Some(secs(t.results_unix_ns?, e.end_unix_ns))),
        kernels: total.kernels,
        kernel_records: total.kernel_records,
        kernels_gpu_s: total.kernels_gpu_ns as f64 * 1e-9,
        records_gpu_s: total.records_gpu_ns as f64 * 1e-9,
        collection,
        replay,
        program_rest_s,
        region_means: combine_means(timelines.iter().map(|t| t.region_means.as_slice())),
        durations_vs_timing: Vec::new(),
    }
}

/// The regions of a counter launch whose mean record duration can be set against the timing
/// launch's, in the counter launch's order.
pub fn durations_vs_timing(timing: &[RegionMean], counter: &[RegionMean]) -> Vec<DurationCheck> {
    counter
        .iter()
        .filter_map(|c| {
            let t = timing
                .iter()
                .find(|t| t.annotation == c.annotation && t.mean_ns > 0.0)?;
            Some(DurationCheck {
                annotation: c.annotation.clone(),
                timing_ns: t.mean_ns,
                counter_records_ns: c.mean_ns,
                ratio: c.mean_ns / t.mean_ns,
            })
        })
        .collect()
}

/// The whole split: every execution's phases, each counter launch set against the timing
/// launch of the same repetition and sweep value.
pub fn split(
    setup_s: f64,
    metric_check_s: f64,
    executions: &[ExecutionTimes],
    results_s: f64,
    total_s: f64,
) -> TimeSplit {
    let mut out: Vec<ExecutionSplit> = executions.iter().map(execution_split).collect();
    let timing: HashMap<&str, usize> = executions
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.counters)
        .map(|(i, e)| (e.pair_key.as_str(), i))
        .collect();
    for (i, e) in executions.iter().enumerate().filter(|(_, e)| e.counters) {
        if let Some(&t) = timing.get(e.pair_key.as_str()) {
            out[i].durations_vs_timing = durations_vs_timing(&out[t].region_means, &out[i].region_means);
        }
    }
    let walls: f64 = out.iter().map(|e| e.wall_s).sum();
    TimeSplit {
        setup_s,
        metric_check_s,
        between_s: (total_s - setup_s - metric_check_s - walls - results_s).max(0.0),
        executions: out,
        results_s,
        total_s,
    }
}

/// One row of the table: indentation level, label, seconds (`None`: not measured), a note;
/// a row of level `NOTE` is a line of text.
struct Row(usize, String, Option<f64>, String);

/// The level of a text line in [`rows`].
const NOTE: usize = usize::MAX;

fn rows(s: &TimeSplit) -> Vec<Row> {
    let mut r = vec![Row(
        0,
        "setup (options, injection library, output folder)".into(),
        Some(s.setup_s),
        String::new(),
    )];
    if s.metric_check_s > 0.0 {
        r.push(Row(
            0,
            "metric check (the chip's metrics)".into(),
            Some(s.metric_check_s),
            String::new(),
        ));
    }
    let n = s.executions.len();
    for (i, e) in s.executions.iter().enumerate() {
        let procs = if e.processes == 1 {
            String::new()
        } else {
            format!("{} processes; phases of the first CUDA process", e.processes)
        };
        r.push(Row(
            0,
            format!("execution {}/{n}: {}", i + 1, e.label),
            Some(e.wall_s),
            procs,
        ));
        r.push(Row(
            1,
            "before CUDA (start-up until cuInit)".into(),
            e.before_cuda_s,
            String::new(),
        ));
        r.push(Row(
            1,
            "with CUDA (cuInit until the exit handler)".into(),
            e.with_cuda_s,
            String::new(),
        ));
        let gpu_note = if e.kernel_records > e.kernels {
            format!("{} kernels, {} records", e.kernels, e.kernel_records)
        } else {
            format!("{} kernels", e.kernels)
        };
        if let (Some(c), Some(rep)) = (&e.collection, &e.replay) {
            r.push(Row(
                2,
                format!("profiler start (CUPTI, config image of {} passes)", rep.passes),
                Some(c.start_s),
                String::new(),
            ));
            r.push(Row(
                3,
                "of which loading libcupti and the driver".into(),
                Some(c.load_s),
                String::new(),
            ));
            r.push(Row(
                3,
                "of which profiler initialisation and enabling".into(),
                Some(c.enable_s),
                String::new(),
            ));
            r.push(Row(
                3,
                "of which configuration (host API: metrics, config image)".into(),
                Some(c.config_s),
                String::new(),
            ));
            r.push(Row(
                3,
                "of which the first counter-data image, SetConfig, Start".into(),
                Some(c.first_image_s),
                format!("{} kernels", c.first_image_ranges),
            ));
            r.push(Row(
                2,
                format!("replay: {} profiled launch calls", rep.launches),
                Some(rep.replay_s),
                format!("{:.1} ms per launch", rep.per_launch_ms),
            ));
            r.push(Row(
                3,
                format!("GPU time of the passes ({})", rep.passes_gpu_source),
                Some(rep.passes_gpu_s),
                gpu_note.clone(),
            ));
            r.push(Row(
                3,
                "rest: save/restore + CUPTI per pass (inferred)".into(),
                Some(rep.overhead_s),
                format!("{:.2} ms per launch and pass", rep.overhead_per_launch_pass_ms),
            ));
            if c.restart_s > 0.0 {
                r.push(Row(
                    2,
                    "counter-data image switches".into(),
                    Some(c.restart_s),
                    String::new(),
                ));
            }
            r.push(Row(
                2,
                "the program outside the launch calls".into(),
                e.program_rest_s,
                String::new(),
            ));
        } else {
            r.push(Row(
                2,
                "kernels on the GPU (records)".into(),
                Some(e.kernels_gpu_s),
                gpu_note,
            ));
        }
        r.push(Row(
            1,
            "exit handler (sync, flush, grouping, writing)".into(),
            e.exit_handler_s,
            String::new(),
        ));
        if let Some(c) = &e.collection {
            r.push(Row(
                2,
                format!("decode, all {} image(s)", c.images_decoded),
                Some(c.decode_s),
                String::new(),
            ));
            r.push(Row(2, "evaluate, all images".into(), Some(c.evaluate_s), String::new()));
        }
        r.push(Row(
            1,
            "after the results (teardown)".into(),
            e.after_results_s,
            String::new(),
        ));
        if !e.durations_vs_timing.is_empty() {
            let list: Vec<String> = e
                .durations_vs_timing
                .iter()
                .take(6)
                .map(|d| format!("{} x{:.3}", d.annotation, d.ratio))
                .collect();
            let more = e.durations_vs_timing.len().saturating_sub(6);
            r.push(Row(
                NOTE,
                format!(
                    "    kernel records here / timing launch, mean per region: {}{}",
                    list.join(", "),
                    if more > 0 { format!(" (+{more})") } else { String::new() }
                ),
                None,
                String::new(),
            ));
        }
    }
    r.push(Row(
        0,
        "between the launches (reading their files)".into(),
        Some(s.between_s),
        String::new(),
    ));
    r.push(Row(
        0,
        "results (merge, write, table)".into(),
        Some(s.results_s),
        String::new(),
    ));
    r.push(Row(0, "total".into(), Some(s.total_s), String::new()));
    r
}

/// The table `kprof run --verbose` prints: one line per phase, seconds and share of the total.
pub fn render(s: &TimeSplit) -> String {
    let rows = rows(s);
    let label_w = rows
        .iter()
        .filter(|r| r.0 != NOTE)
        .map(|r| 2 * r.0 + r.1.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("kprof: time split (wall clock)\n");
    for Row(level, label, secs, note) in rows {
        if level == NOTE {
            out.push_str(&format!("  {label}\n"));
            continue;
        }
        let name = format!("{}{}", "  ".repeat(level), label);
        let line = match secs {
            Some(v) => {
                let share = if s.total_s > 0.0 && level == 0 {
                    format!("{:5.1} %", 100.0 * v / s.total_s)
                } else {
                    "       ".into()
                };
                format!("  {name:<label_w$}  {v:9.3} s  {share}  {note}")
            }
            None => format!("  {name:<label_w$}          - s           {note}"),
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const S: u64 = 1_000_000_000;
    const T0: u64 = 1_700_000_000 * S;

    fn timing_status() -> serde_json::Value {
        json!({
            "pid": 1,
            "counters": null,
            "timeline": {
                "cuda_init_unix_ns": T0 + 2 * S,
                "exit_handler_unix_ns": T0 + 5 * S,
                "results_unix_ns": T0 + 5 * S + S / 10,
                "kernel_records": 66,
                "kernels": 66,
                "records_gpu_ns": 100_000_000u64,
                "kernels_gpu_ns": 100_000_000u64,
                "region_means": [
                    {"annotation": "gemm", "runs": 30, "mean_ns": 2_000_000.0},
                    {"annotation": "scale", "runs": 30, "mean_ns": 200_000.0}
                ]
            }
        })
    }

    /// A counter launch of 66 launches x 8 passes: start 0.5 s, replay 11.6 s.
    fn counter_status(records_per_kernel: usize) -> serde_json::Value {
        json!({
            "pid": 2,
            "counters": {
                "metrics": [], "replay_mode": "kernel", "chip": "GH100", "capacity": 4096,
                "launches": 66, "passes": 8, "images_decoded": 1,
                "start_s": 0.5, "config_s": 0.125, "load_s": 0.0625, "enable_s": 0.1875, "first_image_s": 0.125,
                "first_image_ranges": 64, "replay_s": 11.6, "replay_max_s": 0.3, "restart_s": 0.0,
                "decode_s": 0.02, "evaluate_s": 0.01
            },
            "timeline": {
                "cuda_init_unix_ns": T0 + 20 * S,
                "exit_handler_unix_ns": T0 + 35 * S,
                "results_unix_ns": T0 + 35 * S + S / 5,
                "kernel_records": 66 * records_per_kernel,
                "kernels": 66,
                "records_gpu_ns": 100_000_000u64 * records_per_kernel as u64,
                "kernels_gpu_ns": 100_000_000u64,
                "region_means": [
                    {"annotation": "scale", "runs": 30, "mean_ns": 210_000.0},
                    {"annotation": "gemm", "runs": 30, "mean_ns": 2_000_000.0}
                ]
            }
        })
    }

    fn executions(records_per_kernel: usize) -> Vec<ExecutionTimes> {
        vec![
            ExecutionTimes {
                label: "repetition 1, timing launch".into(),
                counters: false,
                pair_key: "0".into(),
                spawn_unix_ns: T0,
                end_unix_ns: T0 + 5 * S + S / 2,
                statuses: vec![timing_status()],
            },
            ExecutionTimes {
                label: "repetition 1, counter launch".into(),
                counters: true,
                pair_key: "0".into(),
                spawn_unix_ns: T0 + 18 * S,
                end_unix_ns: T0 + 36 * S,
                statuses: vec![counter_status(records_per_kernel)],
            },
        ]
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn phases_of_a_timing_and_a_counter_launch() {
        let s = split(0.01, 0.4, &executions(1), 0.05, 36.5);
        let t = &s.executions[0];
        assert!(close(t.wall_s, 5.5) && close(t.before_cuda_s.unwrap(), 2.0) && close(t.with_cuda_s.unwrap(), 3.0));
        assert!(close(t.exit_handler_s.unwrap(), 0.1) && close(t.after_results_s.unwrap(), 0.4));
        assert!(t.collection.is_none() && t.replay.is_none() && t.durations_vs_timing.is_empty());
        assert!(close(t.kernels_gpu_s, 0.1));
        let c = &s.executions[1];
        assert!(close(c.wall_s, 18.0) && close(c.before_cuda_s.unwrap(), 2.0) && close(c.with_cuda_s.unwrap(), 15.0));
        // One record per kernel: the 8 passes' GPU time is inferred from the first records.
        let r = c.replay.as_ref().unwrap();
        assert_eq!((r.launches, r.passes, r.passes_gpu_source), (66, 8, "inferred"));
        assert!(close(r.passes_gpu_s, 0.8) && close(r.overhead_s, 10.8));
        assert!(close(r.per_launch_ms, 11600.0 / 66.0));
        assert!(close(r.overhead_per_launch_pass_ms, 10800.0 / 528.0));
        // 15 s with CUDA - 0.5 start - 11.6 replay.
        assert!(close(c.program_rest_s.unwrap(), 2.9));
        // The counter launch's records against the timing launch, in the counter launch's order.
        let d: Vec<(&str, f64)> = c
            .durations_vs_timing
            .iter()
            .map(|d| (d.annotation.as_str(), d.ratio))
            .collect();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, "scale");
        assert!(close(d[0].1, 1.05) && close(d[1].1, 1.0));
    }

    #[test]
    fn one_record_per_pass_gives_the_gpu_time_of_the_passes() {
        let s = split(0.0, 0.0, &executions(8), 0.0, 36.0);
        let r = s.executions[1].replay.clone().unwrap();
        assert_eq!(r.passes_gpu_source, "records");
        assert!(close(r.passes_gpu_s, 0.8));
        assert_eq!(s.executions[1].kernel_records, 528);
    }

    #[test]
    fn an_older_library_leaves_the_phases_unknown() {
        let e = ExecutionTimes {
            label: "repetition 1, timing launch".into(),
            counters: false,
            pair_key: "0".into(),
            spawn_unix_ns: T0,
            end_unix_ns: T0 + S,
            statuses: vec![json!({"pid": 3})],
        };
        let s = execution_split(&e);
        assert!(close(s.wall_s, 1.0));
        assert_eq!((s.before_cuda_s, s.with_cuda_s, s.exit_handler_s), (None, None, None));
        assert_eq!(s.processes, 1);
        let text = render(&split(0.0, 0.0, &[e], 0.0, 1.0));
        let before = text.lines().find(|l| l.contains("before CUDA")).unwrap();
        assert!(before.ends_with(" - s"), "{text}");
    }

    #[test]
    fn means_of_several_processes_are_weighted_by_runs() {
        let a = vec![RegionMean {
            annotation: "mm".into(),
            runs: 1,
            mean_ns: 10.0,
        }];
        let b = vec![
            RegionMean {
                annotation: "mm".into(),
                runs: 3,
                mean_ns: 20.0,
            },
            RegionMean {
                annotation: "x".into(),
                runs: 0,
                mean_ns: 5.0,
            },
        ];
        let m = combine_means([a.as_slice(), b.as_slice()]);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].runs, m[0].mean_ns), (4, 17.5));
    }

    #[test]
    fn the_table_names_every_phase_with_its_seconds() {
        let s = split(0.01, 0.4, &executions(1), 0.05, 36.5);
        let text = render(&s);
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
                .to_string()
        };
        // The line holding the first text holds the second.
        for (needle, want) in [
            ("metric check", "0.400 s"),
            ("execution 1/2: repetition 1, timing launch", "5.500 s   15.1 %"),
            ("execution 2/2: repetition 1, counter launch", "18.000 s   49.3 %"),
            ("config image of 8 passes", "0.500 s"),
            ("of which configuration", "0.125 s"),
            ("of which loading", "0.062 s"),
            ("of which profiler initialisation", "0.188 s"),
            ("of which the first counter-data image", "0.125 s"),
            ("of which the first counter-data image", "64 kernels"),
            ("replay: 66 profiled launch calls", "11.600 s"),
            ("replay:", "175.8 ms per launch"),
            ("GPU time of the passes (inferred)", "0.800 s"),
            ("GPU time", "66 kernels"),
            ("save/restore", "10.800 s"),
            ("save/restore", "20.45 ms per launch and pass"),
            ("outside the launch calls", "2.900 s"),
            ("kernels on the GPU (records)", "0.100 s"),
            ("timing launch, mean per region", "scale x1.050, gemm x1.000"),
            ("total", "36.500 s  100.0 %"),
            // 36.5 - 0.01 - 0.4 - 5.5 - 18 - 0.05
            ("between the launches", "12.540 s"),
        ] {
            assert!(line(needle).contains(want), "{needle}: {want}\n{text}");
        }
        assert!(text.starts_with("kprof: time split (wall clock)\n"));
        // The JSON file carries the same numbers.
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["executions"][1]["replay"]["passes"], 8);
        assert_eq!(j["executions"][1]["collection"]["start_s"], 0.5);
        assert_eq!(j["executions"][1]["collection"]["first_image_ranges"], 64);
    }
}
