//! Speed of light and roofline per region and configuration, from the counters of a result
//! ([`speed_of_light`]): one [`SolRow`] per (benchmark, annotation, configuration, device) with the
//! SM, memory, DRAM, L1 and L2 throughput as % of peak, the achieved FLOP/s per precision and DRAM
//! bytes/s with the device's peaks (ncu's roofline formulas, [`PRECISIONS`]), the arithmetic
//! intensity, and a [`Verdict`] with its reason in words ([`verdict`], ncu's SpeedOfLight rule).
//! Only the metrics present are used; what is missing is `None` (NaN in tables).
//!
//! The rule and the formulas, as users read them: `docs/counters.md` (Speed of light and roofline).

use std::collections::HashMap;

use crate::model::{Config, ProcessedResults};

/// Both SM and memory under this % of peak: latency-bound (ncu's `latency_bound_threshold`).
pub const LATENCY_BOUND_PCT: f64 = 60.0;
/// SM and memory within this many points: balanced (ncu's `balanced_threshold`).
pub const BALANCED_PCT: f64 = 10.0;

/// SM throughput, % of peak.
pub const SM_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
/// Memory throughput (the busiest memory unit), % of peak.
pub const MEMORY_PCT: &str = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
/// DRAM throughput, % of peak: ncu's SpeedOfLight name first, then the per-unit name.
pub const DRAM_PCT: [&str; 2] = [
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
];
/// L1/TEX throughput, % of peak (of its active cycles, as ncu's SpeedOfLight).
pub const L1_PCT: &str = "l1tex__throughput.avg.pct_of_peak_sustained_active";
/// L2 throughput, % of peak.
pub const L2_PCT: &str = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
/// Kernel duration, ns.
pub const DURATION: &str = "gpu__time_duration.sum";
/// DRAM bytes per second.
pub const DRAM_BYTES_PER_S: &str = "dram__bytes.sum.per_second";
/// DRAM bytes read and written (bytes/s from them and the duration when the rate is absent).
pub const DRAM_BYTES_RW: [&str; 2] = ["dram__bytes_read.sum", "dram__bytes_write.sum"];
/// The DRAM's peak: bytes per DRAM cycle, and DRAM cycles per second.
pub const DRAM_PEAK: (&str, &str) = ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second");

/// How one precision's FLOP/s and peak come from the counters.
#[derive(Debug, Clone, Copy)]
pub struct PrecisionDef {
    /// Its name in tables and plots.
    pub name: &'static str,
    /// Achieved operations per cycle: `(metric, FLOPs per count)` summed.
    pub work: &'static [(&'static str, f64)],
    /// Cycles per second the work metrics are multiplied by.
    pub work_clock: &'static str,
    /// Peak operations per cycle: `(metric, FLOPs per count)`.
    pub peak: (&'static str, f64),
    /// Cycles per second the peak is multiplied by.
    pub peak_clock: &'static str,
}

const SMSP_CLOCK: &str = "smsp__cycles_elapsed.avg.per_second";
const SM_CLOCK: &str = "sm__cycles_elapsed.avg.per_second";

/// The precisions, with ncu's formulas: `SpeedOfLight_RooflineChart` (fp32, fp64),
/// `SpeedOfLight_HierarchicalHalfRooflineChart` (fp16: a half2 add or multiply is 2 FLOPs, an
/// FMA 4) and the Hopper tensor roofline of `SpeedOfLight_HierarchicalTensorRooflineChart`
/// (`hgmma` on fp16 inputs, sparsity off; one count is one operation).
pub const PRECISIONS: [PrecisionDef; 4] = [
    PrecisionDef {
        name: "fp64",
        work: &[
            (
                "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
                1.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
                1.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
                2.0,
            ),
        ],
        work_clock: SMSP_CLOCK,
        peak: ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 2.0),
        peak_clock: SM_CLOCK,
    },
    PrecisionDef {
        name: "fp32",
        work: &[
            (
                "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
                1.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
                1.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
                2.0,
            ),
        ],
        work_clock: SMSP_CLOCK,
        peak: ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 2.0),
        peak_clock: SM_CLOCK,
    },
    PrecisionDef {
        name: "fp16",
        work: &[
            (
                "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed",
                2.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed",
                2.0,
            ),
            (
                "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed",
                4.0,
            ),
        ],
        work_clock: SMSP_CLOCK,
        peak: ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", 4.0),
        peak_clock: SM_CLOCK,
    },
    PrecisionDef {
        name: "tensor fp16",
        work: &[(
            "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.per_cycle_elapsed",
            1.0,
        )],
        work_clock: SM_CLOCK,
        peak: (
            "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
            1.0,
        ),
        peak_clock: SM_CLOCK,
    },
];

/// Every metric the speed of light and the roofline read, in order, without duplicates (what
/// to put in `metrics=` for a full [`SolRow`]; the tensor metrics are Hopper's).
pub fn roofline_metrics() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = vec![SM_PCT, MEMORY_PCT, DRAM_PCT[0], L1_PCT, L2_PCT, DURATION];
    out.extend([DRAM_BYTES_PER_S, DRAM_PEAK.0, DRAM_PEAK.1]);
    for p in &PRECISIONS {
        out.extend(p.work.iter().map(|w| w.0));
        out.extend([p.work_clock, p.peak.0, p.peak_clock]);
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|m| seen.insert(*m));
    out
}

/// What limits a region in a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The SM is busier than memory, at >= 60 % of its peak.
    ComputeBound,
    /// Memory is busier than the SM, at >= 60 % of its peak.
    MemoryBound,
    /// Both within 10 points, one at >= 60 %.
    Balanced,
    /// Both under 60 % of peak.
    LatencyBound,
    /// The counters needed are not in the result.
    Unknown,
}

impl Verdict {
    /// The name in tables (`compute-bound`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::ComputeBound => "compute-bound",
            Verdict::MemoryBound => "memory-bound",
            Verdict::Balanced => "balanced",
            Verdict::LatencyBound => "latency-bound",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Achieved and peak FLOP/s of one precision.
#[derive(Debug, Clone, PartialEq)]
pub struct PrecisionSol {
    /// [`PrecisionDef::name`].
    pub name: &'static str,
    /// Achieved FLOP/s (`None` without its work metrics).
    pub flops_per_s: Option<f64>,
    /// The device's peak FLOP/s (`None` without its peak metrics).
    pub peak_flops_per_s: Option<f64>,
    /// FLOP per DRAM byte.
    pub intensity: Option<f64>,
}

/// Speed of light of one region in one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SolRow {
    /// Benchmark name.
    pub benchmark: String,
    /// Region.
    pub annotation: String,
    /// Configuration.
    pub config: Config,
    /// GPU name.
    pub gpu: String,
    /// Duration, ns (mean).
    pub duration_ns: Option<f64>,
    /// SM throughput, % of peak.
    pub sm_pct: Option<f64>,
    /// Memory throughput, % of peak ([`MEMORY_PCT`], else the busiest unit measured).
    pub memory_pct: Option<f64>,
    /// DRAM throughput, % of peak.
    pub dram_pct: Option<f64>,
    /// L1/TEX throughput, % of peak.
    pub l1_pct: Option<f64>,
    /// L2 throughput, % of peak.
    pub l2_pct: Option<f64>,
    /// DRAM bytes/s.
    pub dram_bytes_per_s: Option<f64>,
    /// The DRAM's peak bytes/s.
    pub peak_dram_bytes_per_s: Option<f64>,
    /// Per precision, in [`PRECISIONS`] order.
    pub precisions: Vec<PrecisionSol>,
    /// What limits it.
    pub verdict: Verdict,
    /// Why, in words.
    pub reason: String,
}

impl SolRow {
    /// Total achieved FLOP/s over the precisions measured (`None` when none is).
    pub fn flops_per_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.precisions.iter().filter_map(|p| p.flops_per_s).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// FLOP per DRAM byte over every precision.
    pub fn intensity(&self) -> Option<f64> {
        ratio(self.flops_per_s(), self.dram_bytes_per_s)
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

type Means = HashMap<String, f64>;

fn get(m: &Means, name: &str) -> Option<f64> {
    m.get(name).copied().filter(|v| v.is_finite())
}

/// Speed of light of every (benchmark, annotation, configuration, device) with counters, in the
/// table's order. Normalised rows (ratios) are skipped.
pub fn speed_of_light(p: &ProcessedResults) -> Vec<SolRow> {
    let mut keys: Vec<(String, String, Config, String)> = Vec::new();
    let mut means: Vec<Means> = Vec::new();
    for r in p.rows.iter().filter(|r| r.normalized.is_none()) {
        let key = (
            r.benchmark.clone(),
            r.annotation.clone(),
            r.config.clone(),
            r.device.gpu.clone(),
        );
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                means.push(Means::new());
                keys.len() - 1
            }
        };
        means[i].insert(r.metric.clone(), r.summary.mean);
    }
    keys.into_iter()
        .zip(means)
        .map(|((benchmark, annotation, config, gpu), m)| row(benchmark, annotation, config, gpu, &m))
        .collect()
}

fn precision(def: &PrecisionDef, m: &Means, dram_bytes_per_s: Option<f64>) -> PrecisionSol {
    let terms: Vec<f64> = def.work.iter().filter_map(|(n, f)| get(m, n).map(|v| v * f)).collect();
    let flops_per_s = (!terms.is_empty())
        .then(|| terms.iter().sum::<f64>())
        .and_then(|per_cycle| get(m, def.work_clock).map(|hz| per_cycle * hz));
    let peak_flops_per_s = get(m, def.peak.0)
        .zip(get(m, def.peak_clock))
        .map(|(v, hz)| v * def.peak.1 * hz);
    PrecisionSol {
        name: def.name,
        flops_per_s,
        peak_flops_per_s,
        intensity: ratio(flops_per_s, dram_bytes_per_s),
    }
}

fn row(benchmark: String, annotation: String, config: Config, gpu: String, m: &Means) -> SolRow {
    let duration_ns = get(m, DURATION);
    let dram_bytes_per_s = get(m, DRAM_BYTES_PER_S).or_else(|| {
        let rw: Vec<f64> = DRAM_BYTES_RW.iter().filter_map(|n| get(m, n)).collect();
        (rw.len() == DRAM_BYTES_RW.len())
            .then(|| rw.iter().sum::<f64>())
            .and_then(|bytes| duration_ns.filter(|d| *d > 0.0).map(|d| bytes / (d * 1e-9)))
    });
    let mut r = SolRow {
        benchmark,
        annotation,
        config,
        gpu,
        duration_ns,
        sm_pct: get(m, SM_PCT),
        memory_pct: None,
        dram_pct: DRAM_PCT.iter().find_map(|n| get(m, n)),
        l1_pct: get(m, L1_PCT),
        l2_pct: get(m, L2_PCT),
        dram_bytes_per_s,
        peak_dram_bytes_per_s: get(m, DRAM_PEAK.0).zip(get(m, DRAM_PEAK.1)).map(|(b, hz)| b * hz),
        precisions: PRECISIONS.iter().map(|d| precision(d, m, dram_bytes_per_s)).collect(),
        verdict: Verdict::Unknown,
        reason: String::new(),
    };
    let units = [("DRAM", r.dram_pct), ("L2", r.l2_pct), ("L1", r.l1_pct)];
    let busiest = units
        .iter()
        .filter_map(|(u, v)| v.map(|v| (*u, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    r.memory_pct = get(m, MEMORY_PCT).or(busiest.map(|b| b.1));
    (r.verdict, r.reason) = verdict(r.sm_pct, r.memory_pct, busiest);
    r
}

/// The verdict and its reason from SM % and memory % of peak, by ncu's SpeedOfLight rule: both
/// under [`LATENCY_BOUND_PCT`]: latency-bound; else within [`BALANCED_PCT`] points of each other:
/// balanced; else the busier one (memory naming its busiest unit among DRAM, L2 and L1).
pub fn verdict(sm: Option<f64>, memory: Option<f64>, busiest: Option<(&str, f64)>) -> (Verdict, String) {
    let (Some(sm), Some(mem)) = (sm, memory) else {
        return (
            Verdict::Unknown,
            format!("needs {SM_PCT} and a memory throughput (metrics=[\"SpeedOfLight\"])"),
        );
    };
    let unit = busiest
        .map(|(u, v)| format!(", {u} {v:.1} % the busiest memory unit"))
        .unwrap_or_default();
    if sm < LATENCY_BOUND_PCT && mem < LATENCY_BOUND_PCT {
        let lead = if mem > sm { "memory" } else { "SM" };
        let why = format!(
            "SM {sm:.1} % and memory {mem:.1} % of peak{unit}, both under {LATENCY_BOUND_PCT:.0} %: neither is \
             busy, the work waits on latency ({lead} the busier; too few warps or bytes in flight, dependent \
             instructions, synchronisation)"
        );
        return (Verdict::LatencyBound, why);
    }
    if (sm - mem).abs() < BALANCED_PCT {
        let why =
            format!("SM {sm:.1} % and memory {mem:.1} % of peak{unit}, within {BALANCED_PCT:.0} points: both busy");
        return (Verdict::Balanced, why);
    }
    if sm > mem {
        let why = format!(
            "SM {sm:.1} % of peak, at least {LATENCY_BOUND_PCT:.0} % and {:.1} points above memory ({mem:.1} %)",
            sm - mem
        );
        (Verdict::ComputeBound, why)
    } else {
        let why = format!(
            "memory {mem:.1} % of peak{unit}, at least {LATENCY_BOUND_PCT:.0} % and {:.1} points above SM ({sm:.1} %)",
            mem - sm
        );
        (Verdict::MemoryBound, why)
    }
}

/// One cell of the speed-of-light table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number (NaN when not measured).
    Num(f64),
    /// Text.
    Text(String),
}

/// The columns of the full speed-of-light table (what `results.speed_of_light()` and
/// `kprof sol --json` give): the key, the throughputs, then per precision its FLOP/s, peak and
/// intensity, then the totals and the verdict.
pub fn columns() -> Vec<String> {
    let mut c: Vec<String> = [
        "Benchmark",
        "Annotation",
        "Config",
        "GPU",
        "Duration_ns",
        "SM_Pct",
        "Memory_Pct",
        "DRAM_Pct",
        "L1_Pct",
        "L2_Pct",
        "DRAM_BytesPerS",
        "DRAM_PeakBytesPerS",
    ]
    .map(String::from)
    .to_vec();
    for p in &PRECISIONS {
        let n = p.name.replace(' ', "_");
        c.extend([
            format!("FLOPsPerS_{n}"),
            format!("PeakFLOPsPerS_{n}"),
            format!("Intensity_{n}"),
        ]);
    }
    c.extend(["FLOPsPerS", "Intensity", "Verdict", "Reason"].map(String::from));
    c
}

/// One row's cells in [`columns`] order.
pub fn cells(r: &SolRow) -> Vec<Cell> {
    let n = |v: Option<f64>| Cell::Num(v.unwrap_or(f64::NAN));
    let mut c = vec![
        Cell::Text(r.benchmark.clone()),
        Cell::Text(r.annotation.clone()),
        Cell::Text(r.config.to_string()),
        Cell::Text(r.gpu.clone()),
        n(r.duration_ns),
        n(r.sm_pct),
        n(r.memory_pct),
        n(r.dram_pct),
        n(r.l1_pct),
        n(r.l2_pct),
        n(r.dram_bytes_per_s),
        n(r.peak_dram_bytes_per_s),
    ];
    for p in &r.precisions {
        c.extend([n(p.flops_per_s), n(p.peak_flops_per_s), n(p.intensity)]);
    }
    c.extend([
        n(r.flops_per_s()),
        n(r.intensity()),
        Cell::Text(r.verdict.to_string()),
        Cell::Text(r.reason.clone()),
    ]);
    c
}

/// The columns of the summary table (the terminal's `kprof sol`, the HTML report's speed-of-light
/// table); [`summary_cells`] gives a row's, those in [`SUMMARY_NUMERIC_COLUMNS`] numbers.
pub const SUMMARY_COLUMNS: [&str; 11] = [
    "Annotation",
    "Config",
    "SM %",
    "Memory %",
    "DRAM %",
    "L1 %",
    "L2 %",
    "FLOP/s",
    "DRAM B/s",
    "FLOP/B",
    "Verdict",
];

/// The indices of [`SUMMARY_COLUMNS`] that hold numbers (right-aligned).
pub const SUMMARY_NUMERIC_COLUMNS: std::ops::Range<usize> = 2..10;

/// A row's cells under [`SUMMARY_COLUMNS`]: the percentages and the intensity through `num`,
/// FLOP/s and bytes/s with SI prefixes, the annotation, configuration and verdict as text.
pub fn summary_cells(r: &SolRow, num: impl Fn(Option<f64>) -> String) -> [String; 11] {
    use crate::display::fmt_si;
    [
        r.annotation.clone(),
        r.config.to_string(),
        num(r.sm_pct),
        num(r.memory_pct),
        num(r.dram_pct),
        num(r.l1_pct),
        num(r.l2_pct),
        fmt_si(r.flops_per_s().unwrap_or(f64::NAN)),
        fmt_si(r.dram_bytes_per_s.unwrap_or(f64::NAN)),
        num(r.intensity()),
        r.verdict.to_string(),
    ]
}

/// The terminal table: one line per row with the throughputs, FLOP/s, bytes/s, intensity and
/// verdict, then each row's reason.
pub fn render(rows: &[SolRow]) -> String {
    use crate::display::{fmt_sig, render_table};
    let header = SUMMARY_COLUMNS.map(String::from);
    let right: Vec<bool> = (0..header.len())
        .map(|i| SUMMARY_NUMERIC_COLUMNS.contains(&i))
        .collect();
    let num = |v: Option<f64>| fmt_sig(v.unwrap_or(f64::NAN));
    let lines: Vec<Vec<String>> = rows.iter().map(|r| summary_cells(r, num).to_vec()).collect();
    let mut out = render_table(&header, &right, &lines);
    out.push('\n');
    for r in rows {
        let cfg = if r.config.params.is_empty() {
            String::new()
        } else {
            format!(" [{}]", r.config)
        };
        out.push_str(&format!("{}{cfg}: {} — {}\n", r.annotation, r.verdict, r.reason));
    }
    out
}
