//! From NVTX range occurrences and CUPTI kernel records to raw samples (pure): [`group_kernels`]
//! decides which kernels make one run of which annotation (NVTX nesting, `--group-by`, the range
//! filters); [`build_raw`] turns the groups into timing samples and
//! [`crate::counters::build_counter_raw`] into counter samples, so both share their keys.
//!
//! The grouping rules, as users see them: `docs/kprof-run.md` (Nested NVTX ranges).

use std::collections::HashMap;

use kprof::attribution::{attribute, launched_within, RegionSpan};
use kprof::cupti::records::{ActivityBatch, KernelRecord};
use kprof_core::{Config, DeviceInfo, ExtraValue, RawResults, SampleRecord, DEFAULT_METRIC};

use crate::book::RangeOcc;

/// How kernels are grouped into annotations (the run spec's `group_by`).
pub use kprof::run_spec::GroupBy;
/// How the kernels of nested ranges count (the run spec's `nvtx_nesting`).
pub use kprof::run_spec::NvtxNesting;

/// The column of a range's own GPU time (ns): its kernels that no range opened inside it took.
pub const SELF_COLUMN: &str = kprof_core::columns::SELF_TIME_COLUMN;

/// The column of a range's GPU busy time (ns): the union of its kernels' intervals.
pub const BUSY_COLUMN: &str = kprof_core::columns::BUSY_TIME_COLUMN;

/// How one process's kernels become runs of annotations: the run spec's `group_by`,
/// `nvtx_nesting` and range filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grouping {
    pub by: GroupBy,
    pub nesting: NvtxNesting,
    pub filter: Filter,
}

/// Range filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Filter {
    /// The filter of the run spec's pattern lists (blank patterns are ignored, the others trimmed).
    pub fn new(include: &[String], exclude: &[String]) -> Filter {
        let clean = |list: &[String]| {
            list.iter()
                .map(|p| p.trim())
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        Filter {
            include: clean(include),
            exclude: clean(exclude),
        }
    }

    /// Whether one pattern matches a range.
    pub fn pattern_matches(pattern: &str, domain: &str, name: &str) -> bool {
        let full = format!("{domain}@{name}");
        match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix) || full.starts_with(prefix),
            None => pattern == name || pattern == full,
        }
    }

    /// Whether a range is kept.
    pub fn keeps(&self, domain: &str, name: &str) -> bool {
        let inc = self.include.is_empty() || self.include.iter().any(|p| Self::pattern_matches(p, domain, name));
        inc && !self.exclude.iter().any(|p| Self::pattern_matches(p, domain, name))
    }
}

/// What goes into every sample besides the measurement.
#[derive(Debug, Clone, Default)]
pub struct SampleContext {
    pub benchmark: String,
    pub device: DeviceInfo,
    pub config: Config,
    /// Constant extra columns (DriverVersion, CuptiVersion, ...).
    pub extras: Vec<(String, ExtraValue)>,
    /// The process's rank from its launcher ([`crate::placement::detect_rank`]): the `Rank`
    /// column of every sample.
    pub rank: Option<u32>,
    /// Device UUIDs by CUDA ordinal, for the `DeviceUUID` column.
    pub device_uuids: std::collections::BTreeMap<u32, String>,
}

impl SampleContext {
    /// The extra columns of one sample of `kernels`: the constant ones, then `Rank`, `Device`
    /// and `DeviceUUID` ([`crate::placement::sample_columns`]).
    pub fn sample_extras(&self, kernels: &[KernelRecord]) -> Vec<(&str, ExtraValue)> {
        let mut extras: Vec<(&str, ExtraValue)> = self.extras.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        extras.extend(crate::placement::sample_columns(self.rank, kernels, &self.device_uuids));
        extras
    }
}

/// Counts for the status file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BuildStats {
    pub ranges_total: usize,
    pub ranges_kept: usize,
    pub ranges_with_kernels: usize,
    pub kernels: usize,
    pub kernels_in_ranges: usize,
    pub kernels_outside_ranges: usize,
    /// Kernels attributed by launch order while ranges of more than one thread were open.
    pub kernels_ambiguous: usize,
    pub samples: usize,
}

/// The `Kernel` column of a sample: distinct kernel names in launch order, joined with `|`,
/// at most 8 (then `|...(+N more)`).
pub fn kernel_label(kernels: &[KernelRecord]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for k in kernels {
        if !names.contains(&k.name.as_str()) {
            names.push(&k.name);
        }
    }
    const MAX: usize = 8;
    if names.len() > MAX {
        let more = names.len() - MAX;
        format!("{}|...(+{more} more)", names[..MAX].join("|"))
    } else {
        names.join("|")
    }
}

/// The kernels of one run of one annotation: a kept NVTX range occurrence, or one kernel
/// grouped by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The annotation (range path or name, or kernel name).
    pub annotation: String,
    /// Its kernels, in the order the attribution gives (launch order within a range).
    pub kernels: Vec<KernelRecord>,
    /// A range's own kernels, not a nested range's: their GPU time is its [`SELF_COLUMN`];
    /// `None` for a kernel grouped by name and with [`NvtxNesting::Innermost`] (every group
    /// holds its own kernels only).
    pub own: Option<Vec<KernelRecord>>,
    /// For a range: how long at least one of its kernels ran on the GPU, the union of their
    /// intervals ([`BUSY_COLUMN`]; kernels that overlap, on two streams, count once).
    pub busy_ns: Option<u64>,
}

/// The GPU time (ns) during which at least one of `kernels` ran: the union of their intervals.
pub fn busy_ns(kernels: &[KernelRecord]) -> u64 {
    let mut spans: Vec<(u64, u64)> = kernels.iter().map(|k| (k.start_ns, k.end_ns.max(k.start_ns))).collect();
    spans.sort_unstable();
    let (mut total, mut open): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in spans {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                total += oe - os;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + open.map_or(0, |(s, e)| e - s)
}

/// The summed GPU time of some kernels (ns).
fn total_ns(kernels: &[KernelRecord]) -> u64 {
    kernels.iter().map(KernelRecord::duration_ns).sum()
}

/// The attribution spans of the kept ranges, without parents: [`attribute`] then gives each
/// kernel to its innermost kept range only.
fn spans_of(kept: &[&RangeOcc]) -> Vec<RegionSpan> {
    kept.iter()
        .map(|r| RegionSpan {
            id: r.id,
            parent: None,
            thread_id: r.thread,
            start_ns: r.start_ns,
            end_ns: r.end_ns,
            start_correlation_id: r.start_correlation_id,
            end_correlation_id: r.end_correlation_id,
        })
        .collect()
}

/// The groups of the kept ranges (by start) and the kernels outside all of them.
fn range_groups(
    kept: &[&RangeOcc],
    batch: &ActivityBatch,
    nesting: NvtxNesting,
    stats: &mut BuildStats,
) -> (Vec<Group>, Vec<KernelRecord>) {
    let spans = spans_of(kept);
    let innermost = attribute(batch, &spans);
    stats.kernels_outside_ranges = innermost.unattributed.len();
    stats.kernels_ambiguous = innermost.ambiguous;
    stats.kernels_in_ranges = batch.kernels.len() - innermost.unattributed.len();
    let inclusive = match nesting {
        NvtxNesting::Inclusive => Some((launched_within(batch, &spans), crate::nesting::tree(kept))),
        NvtxNesting::Innermost => None,
    };
    let mut groups = Vec::new();
    for r in kept {
        let own = innermost.by_region.get(&r.id).map(Vec::as_slice).unwrap_or_default();
        let (annotation, kernels, own) = match &inclusive {
            None => (r.name.clone(), own.to_vec(), None),
            Some((within, tree)) => (
                tree.get(&r.id).map_or_else(|| r.name.clone(), |p| p.path.clone()),
                within.get(&r.id).cloned().unwrap_or_default(),
                Some(own.to_vec()),
            ),
        };
        if kernels.is_empty() {
            continue;
        }
        stats.ranges_with_kernels += 1;
        groups.push(Group {
            annotation,
            busy_ns: Some(busy_ns(&kernels)),
            kernels,
            own,
        });
    }
    (groups, innermost.unattributed)
}

/// Groups the kernels of one process into runs of annotations (the rules: `docs/kprof-run.md`),
/// in the order samples are written: kept ranges with kernels by start, then kernels by name by
/// GPU start. The timing samples ([`build_raw`]) and the counter samples
/// ([`crate::counters::build_counter_raw`]) both come from these groups, so the n-th run of an
/// annotation is the same region occurrence in both.
pub fn group_kernels(ranges: &[RangeOcc], batch: &ActivityBatch, grouping: &Grouping) -> (Vec<Group>, BuildStats) {
    let mut groups = Vec::new();
    let mut stats = BuildStats {
        ranges_total: ranges.len(),
        kernels: batch.kernels.len(),
        kernels_outside_ranges: batch.kernels.len(),
        ..Default::default()
    };
    let mut outside: Vec<KernelRecord> = batch.kernels.clone();
    if matches!(grouping.by, GroupBy::Nvtx | GroupBy::Both) {
        let filter = &grouping.filter;
        let kept: Vec<&RangeOcc> = ranges.iter().filter(|r| filter.keeps(&r.domain, &r.name)).collect();
        stats.ranges_kept = kept.len();
        let (in_ranges, rest) = range_groups(&kept, batch, grouping.nesting, &mut stats);
        groups = in_ranges;
        outside = rest;
    }
    // Kernels by name: the ones outside ranges (nvtx), or all of them (kernel, both).
    let by_name: &[KernelRecord] = match grouping.by {
        GroupBy::Nvtx => &outside,
        GroupBy::Kernel | GroupBy::Both => &batch.kernels,
    };
    let mut ordered: Vec<&KernelRecord> = by_name.iter().collect();
    ordered.sort_by_key(|k| (k.start_ns, k.correlation_id));
    for k in ordered {
        groups.push(Group {
            annotation: k.name.clone(),
            kernels: vec![k.clone()],
            own: None,
            busy_ns: None,
        });
    }
    (groups, stats)
}

/// Run indices of `groups`: the n-th group of an annotation is its run n.
pub fn run_indices(groups: &[Group]) -> Vec<u32> {
    let mut runs: HashMap<&str, u32> = HashMap::new();
    groups
        .iter()
        .map(|g| {
            let r = runs.entry(g.annotation.as_str()).or_insert(0);
            *r += 1;
            *r - 1
        })
        .collect()
}

/// Builds the raw samples of one process (timing: `gpu__time_duration.sum`, the summed GPU time
/// of each group's kernels, ns, with a range's own time in [`SELF_COLUMN`] when inclusive and
/// its GPU busy time in [`BUSY_COLUMN`]).
pub fn build_raw(
    ranges: &[RangeOcc],
    batch: &ActivityBatch,
    grouping: &Grouping,
    ctx: &SampleContext,
) -> (RawResults, BuildStats) {
    let (groups, mut stats) = group_kernels(ranges, batch, grouping);
    let mut raw = RawResults::new();
    for (g, run) in groups.iter().zip(run_indices(&groups)) {
        let value = total_ns(&g.kernels);
        let mangled = kernel_label(&g.kernels);
        // The Kernel column shows demangled names (as ncu does); the mangled label is kept.
        let label = kprof_core::kernels::demangle_label(&mangled).into_owned();
        let mut extras = ctx.sample_extras(&g.kernels);
        if let Some(own) = &g.own {
            extras.push((SELF_COLUMN, ExtraValue::Number(total_ns(own) as f64)));
        }
        if let Some(busy) = g.busy_ns {
            extras.push((BUSY_COLUMN, ExtraValue::Number(busy as f64)));
        }
        if label != mangled {
            extras.push((
                kprof_core::kernels::MANGLED_KERNEL_COLUMN,
                ExtraValue::Text(mangled.clone()),
            ));
        }
        // One unit for every sample: cannot fail.
        let _ = raw.push(&SampleRecord {
            benchmark: &ctx.benchmark,
            annotation: &g.annotation,
            config: &ctx.config,
            run,
            metric: DEFAULT_METRIC,
            value: value as f64,
            unit: "ns",
            kernel: &label,
            device: &ctx.device,
            extras: &extras,
        });
    }
    stats.samples = raw.samples.len();
    (raw, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{fixture, kernel, range};

    /// A range numbered `(start, end)` in launch order, opened by `thread` at `t0` and closed at
    /// `t1` (CPU times).
    fn numbered(id: u64, thread: u32, name: &str, (start, end): (u32, u32), (t0, t1): (u64, u64)) -> RangeOcc {
        RangeOcc {
            thread,
            start_correlation_id: start,
            end_correlation_id: end,
            ..range(id, None, name, t0, t1)
        }
    }

    /// The groups as (annotation, kernel names).
    fn named(groups: &[Group]) -> Vec<(&str, Vec<&str>)> {
        groups
            .iter()
            .map(|g| {
                (
                    g.annotation.as_str(),
                    g.kernels.iter().map(|k| k.name.as_str()).collect(),
                )
            })
            .collect()
    }

    fn innermost() -> Grouping {
        Grouping {
            nesting: NvtxNesting::Innermost,
            ..Default::default()
        }
    }

    fn by_nvtx(filter: Filter) -> Grouping {
        Grouping {
            filter,
            ..Default::default()
        }
    }

    #[test]
    fn numbered_ranges_take_kernels_by_launch_order_and_count_overlaps_of_two_threads() {
        // Thread 1's "a" is numbered (10, 40), thread 2's "b" (20, 50), and they overlap in time
        // without nesting: kernel 30 was launched while both were open (innermost, it goes to "b",
        // opened last, and counts as ambiguous; inclusive, to both); no launch records.
        let ranges = [
            numbered(1, 1, "a", (10, 40), (1, 4)),
            numbered(2, 2, "b", (20, 50), (2, 5)),
        ];
        let batch = ActivityBatch {
            kernels: vec![
                kernel(15, "k1", 100, 5),
                kernel(30, "k2", 200, 5),
                kernel(45, "k3", 300, 5),
            ],
            ..Default::default()
        };
        let (groups, stats) = group_kernels(&ranges, &batch, &innermost());
        assert_eq!(named(&groups), [("a", vec!["k1"]), ("b", vec!["k2", "k3"])]);
        assert_eq!((stats.kernels_in_ranges, stats.kernels_ambiguous), (3, 1));
        let (groups, stats) = group_kernels(&ranges, &batch, &Grouping::default());
        assert_eq!(named(&groups), [("a", vec!["k1", "k2"]), ("b", vec!["k2", "k3"])]);
        assert_eq!((stats.kernels_in_ranges, stats.kernels_ambiguous), (3, 1));
    }

    /// A user's range around a library call that opens its own range in its own domain (CUB's
    /// `cub::DeviceRadixSort` inside `sort16m`, numbered by launch order as `kprof run` numbers
    /// ranges by default), then a cuDNN-like start/end range and a range of the user's own two
    /// levels deep inside `step`. Each outer row must hold every kernel launched inside it.
    fn library_ranges() -> (Vec<RangeOcc>, ActivityBatch) {
        let mut cub = numbered(2, 1, "cub::DeviceRadixSort", (12, 18), (110, 190));
        cub.domain = "CCCL".into();
        let mut cudnn = numbered(5, 1, "cudnnConvolutionForward", (32, 38), (310, 390));
        cudnn.domain = "cuDNN".into();
        cudnn.push_pop = false;
        let ranges = vec![
            numbered(1, 1, "sort16m", (10, 20), (100, 200)),
            cub,
            numbered(3, 1, "step", (21, 60), (210, 600)),
            numbered(4, 1, "conv", (30, 40), (300, 400)),
            cudnn,
            numbered(6, 1, "block", (41, 50), (410, 500)),
            numbered(7, 1, "inner", (43, 48), (430, 480)),
        ];
        let k = |corr: u32, name: &str, dur: u64| kernel(corr, name, corr as u64 * 1000, dur);
        let batch = ActivityBatch {
            kernels: vec![
                k(11, "fill", 5),
                k(14, "onesweep", 400),
                k(16, "onesweep", 440),
                k(22, "relu", 7),
                k(35, "implicit_gemm", 900),
                k(42, "add", 3),
                k(45, "mul", 20),
                k(70, "outside", 1),
            ],
            ..Default::default()
        };
        (ranges, batch)
    }

    fn sample_of(raw: &RawResults, annotation: &str) -> (f64, ExtraValue) {
        let (i, s) = raw
            .samples
            .iter()
            .enumerate()
            .find(|(_, s)| raw.series_of(s).key.annotation == annotation)
            .unwrap_or_else(|| panic!("no sample of {annotation:?}"));
        let own = raw
            .extras
            .iter()
            .find(|c| c.name == SELF_COLUMN)
            .map(|c| c.values[i].clone());
        (s.value, own.unwrap_or_default())
    }

    #[test]
    fn an_outer_range_holds_the_kernels_of_the_ranges_opened_inside_it() {
        let (ranges, batch) = library_ranges();
        let (raw, stats) = build_raw(&ranges, &batch, &Grouping::default(), &SampleContext::default());
        let n = ExtraValue::Number;
        assert_eq!(sample_of(&raw, "sort16m"), (845.0, n(5.0)));
        assert_eq!(sample_of(&raw, "sort16m/cub::DeviceRadixSort"), (840.0, n(840.0)));
        assert_eq!(sample_of(&raw, "step"), (930.0, n(7.0)));
        assert_eq!(sample_of(&raw, "step/conv"), (900.0, n(0.0)));
        assert_eq!(sample_of(&raw, "step/conv/cudnnConvolutionForward"), (900.0, n(900.0)));
        assert_eq!(sample_of(&raw, "step/block"), (23.0, n(3.0)));
        assert_eq!(sample_of(&raw, "step/block/inner"), (20.0, n(20.0)));
        // A kernel outside every range is its own row, without a self time.
        assert_eq!(sample_of(&raw, "outside"), (1.0, ExtraValue::Missing));
        assert_eq!((stats.kernels_in_ranges, stats.kernels_outside_ranges), (7, 1));
        raw.check_unique_runs().unwrap();
    }

    #[test]
    fn a_range_of_kernels_on_two_streams_sums_them_and_gives_their_union_as_busy_time() {
        // Two GEMMs overlapping on two streams (1000..4000 and 2000..5000), then a copy after a
        // gap (6000..6500): summed 6500 ns, busy 4500 ns.
        let ranges = [numbered(1, 1, "two_streams", (10, 20), (0, 100))];
        let mut second = kernel(12, "gemm", 2000, 3000);
        second.stream_id = 8;
        let batch = ActivityBatch {
            kernels: vec![kernel(11, "gemm", 1000, 3000), second, kernel(13, "copy", 6000, 500)],
            ..Default::default()
        };
        for grouping in [Grouping::default(), innermost()] {
            let (raw, _) = build_raw(&ranges, &batch, &grouping, &SampleContext::default());
            assert_eq!(sample_of(&raw, "two_streams").0, 6500.0);
            let busy = raw.extras.iter().find(|c| c.name == BUSY_COLUMN).unwrap();
            assert_eq!(busy.values, [ExtraValue::Number(4500.0)]);
        }
        // Contained and touching intervals merge; nothing is 0.
        let ks = [
            kernel(1, "a", 0, 100),
            kernel(2, "b", 10, 20),
            kernel(3, "c", 100, 50),
            kernel(4, "d", 300, 0),
        ];
        assert_eq!(busy_ns(&ks), 150);
        assert_eq!(busy_ns(&[]), 0);
    }

    #[test]
    fn innermost_nesting_counts_every_kernel_once_under_the_range_name() {
        let (ranges, batch) = library_ranges();
        let (raw, _) = build_raw(&ranges, &batch, &innermost(), &SampleContext::default());
        assert_eq!(sample_of(&raw, "sort16m"), (5.0, ExtraValue::Missing));
        assert_eq!(sample_of(&raw, "cub::DeviceRadixSort").0, 840.0);
        assert_eq!(sample_of(&raw, "step").0, 7.0);
        assert_eq!(sample_of(&raw, "cudnnConvolutionForward").0, 900.0);
        assert!(raw.samples.iter().all(|s| raw.series_of(s).key.annotation != "conv"));
        assert!(raw.extras.iter().all(|c| c.name != SELF_COLUMN));
        let total: f64 = raw.samples.iter().map(|s| s.value).sum();
        assert_eq!(total, 5.0 + 840.0 + 7.0 + 900.0 + 23.0 + 1.0);
    }

    #[test]
    fn a_filtered_range_leaves_the_tree_and_its_kernels_stay_in_the_kept_ranges() {
        let (ranges, batch) = library_ranges();
        let grouping = by_nvtx(Filter::new(&[], &["CCCL@*".into(), "conv".into()]));
        let (raw, _) = build_raw(&ranges, &batch, &grouping, &SampleContext::default());
        assert_eq!(sample_of(&raw, "sort16m"), (845.0, ExtraValue::Number(845.0)));
        assert_eq!(sample_of(&raw, "step/cudnnConvolutionForward").0, 900.0);
        assert!(raw
            .samples
            .iter()
            .all(|s| !raw.series_of(s).key.annotation.contains("conv/")));
    }

    fn values(raw: &RawResults, annotation: &str) -> Vec<f64> {
        raw.samples
            .iter()
            .filter(|s| raw.series_of(s).key.annotation == annotation)
            .map(|s| s.value)
            .collect()
    }

    #[test]
    fn ranges_are_runs_and_outside_kernels_group_by_name() {
        let (ranges, batch) = fixture();
        let ctx = SampleContext {
            benchmark: "prog".into(),
            ..Default::default()
        };
        let (raw, st) = build_raw(&ranges, &batch, &Grouping::default(), &ctx);
        assert_eq!(values(&raw, "step"), [60.0, 71.0]);
        assert_eq!(values(&raw, "step/mm"), [50.0, 60.0]);
        assert_eq!(values(&raw, "copy"), [7.0]);
        assert!(values(&raw, "gemm").is_empty());
        let runs: Vec<u32> = raw
            .samples
            .iter()
            .filter(|s| raw.series_of(s).key.annotation == "step")
            .map(|s| s.run)
            .collect();
        assert_eq!(runs, [0, 1]);
        assert_eq!(st.kernels_in_ranges, 4);
        assert_eq!(st.kernels_outside_ranges, 1);
        assert_eq!(st.ranges_with_kernels, 4);
        raw.check_unique_runs().unwrap();
        let k = &raw.kernel_names[raw.samples[0].kernel as usize];
        assert_eq!(k, "gemm|relu");
    }

    /// The Kernel column is demangled, the mangled label kept beside it.
    #[test]
    fn kernel_names_are_demangled_and_the_mangled_label_kept() {
        let (ranges, mut batch) = fixture();
        batch.kernels[0].name = "_Z5scalePfPKffi".into();
        let (raw, _) = build_raw(&ranges, &batch, &Grouping::default(), &SampleContext::default());
        let k = &raw.kernel_names[raw.samples[0].kernel as usize];
        assert_eq!(k, "scale(float*, float const*, float, int)|relu");
        let col = raw
            .extras
            .iter()
            .find(|c| c.name == kprof_core::kernels::MANGLED_KERNEL_COLUMN)
            .unwrap();
        assert_eq!(col.values[0], ExtraValue::Text("_Z5scalePfPKffi|relu".into()));
    }

    /// The samples of the NVTX grouping without filters.
    fn nvtx_raw(ranges: &[RangeOcc], batch: &ActivityBatch, ctx: &SampleContext) -> RawResults {
        build_raw(ranges, batch, &Grouping::default(), ctx).0
    }

    fn column<'a>(raw: &'a RawResults, name: &str) -> &'a [ExtraValue] {
        &raw.extras.iter().find(|c| c.name == name).unwrap().values
    }

    /// Every sample carries the process's rank and its kernels' device.
    #[test]
    fn samples_carry_rank_and_device() {
        let (ranges, mut batch) = fixture();
        for k in &mut batch.kernels {
            k.device_id = 1;
        }
        let ctx = SampleContext {
            rank: Some(3),
            device_uuids: [(1, "GPU-abc".to_string())].into(),
            ..Default::default()
        };
        let raw = nvtx_raw(&ranges, &batch, &ctx);
        let n = raw.samples.len();
        assert_eq!(column(&raw, "Rank"), vec![ExtraValue::Number(3.0); n]);
        assert_eq!(column(&raw, "Device"), vec![ExtraValue::Number(1.0); n]);
        assert_eq!(column(&raw, "DeviceUUID"), vec![ExtraValue::Text("GPU-abc".into()); n]);
        // Without a rank: no Rank column; the device is always there.
        let raw = nvtx_raw(&ranges, &batch, &SampleContext::default());
        assert!(raw.extras.iter().all(|c| c.name != "Rank"));
        assert_eq!(column(&raw, "Device"), vec![ExtraValue::Number(1.0); n]);
    }

    /// NCCL's kernels keep their names: plain ones as they are, mangled ones (NCCL >= 2.19
    /// passes its arguments as a struct) demangled to the same name with its argument type.
    #[test]
    fn nccl_kernel_names_are_kept() {
        let (ranges, mut batch) = fixture();
        // The kernel outside every range ("copy") becomes an NCCL collective.
        let i = batch.kernels.iter().position(|k| k.name == "copy").unwrap();
        for (name, shown) in [
            (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            ),
            (
                "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
            ),
        ] {
            batch.kernels[i].name = name.into();
            let raw = nvtx_raw(&ranges, &batch, &SampleContext::default());
            let s = raw
                .samples
                .iter()
                .find(|s| raw.kernel_names[s.kernel as usize] == shown)
                .unwrap_or_else(|| panic!("no sample of {shown:?}: {:?}", raw.kernel_names));
            // Outside ranges a kernel is its own annotation, under the name CUPTI gave.
            assert_eq!(raw.series_of(s).key.annotation, name);
            assert_eq!(s.value, 7.0);
        }
        // Inside a range the collective counts toward the range, like any kernel.
        for k in batch.kernels.iter_mut().filter(|k| k.name == "relu") {
            k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL".into();
        }
        let raw = nvtx_raw(&ranges, &batch, &SampleContext::default());
        assert_eq!(values(&raw, "step"), [60.0, 71.0]);
        let s = raw
            .samples
            .iter()
            .find(|s| raw.series_of(s).key.annotation == "step")
            .unwrap();
        assert_eq!(
            raw.kernel_names[s.kernel as usize],
            "gemm|ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
    }

    #[test]
    fn filters_and_group_modes() {
        let (ranges, batch) = fixture();
        let ctx = SampleContext::default();
        let f = Filter::new(&[], &["step".into()]);
        let (raw, _) = build_raw(&ranges, &batch, &by_nvtx(f.clone()), &ctx);
        assert!(values(&raw, "step").is_empty());
        assert_eq!(values(&raw, "mm"), [50.0, 60.0]);
        // relu was only inside "step": now outside every kept range.
        assert_eq!(values(&raw, "relu"), [10.0, 11.0]);

        let f = Filter::new(&["m*".into(), " ".into()], &[]);
        assert_eq!(f.include, ["m*"]);
        let (raw, _) = build_raw(&ranges, &batch, &by_nvtx(f.clone()), &ctx);
        assert_eq!(values(&raw, "mm"), [50.0, 60.0]);
        assert!(values(&raw, "step").is_empty());

        let (raw, st) = build_raw(
            &ranges,
            &batch,
            &Grouping {
                by: GroupBy::Kernel,
                ..Default::default()
            },
            &ctx,
        );
        assert_eq!(values(&raw, "gemm"), [50.0, 60.0]);
        assert!(values(&raw, "step").is_empty());
        assert_eq!(st.kernels_outside_ranges, 5);

        let (raw, _) = build_raw(
            &ranges,
            &batch,
            &Grouping {
                by: GroupBy::Both,
                ..Default::default()
            },
            &ctx,
        );
        assert_eq!(values(&raw, "step"), [60.0, 71.0]);
        assert_eq!(values(&raw, "gemm"), [50.0, 60.0]);
        assert_eq!(values(&raw, "copy"), [7.0]);
    }

    #[test]
    fn pattern_syntax() {
        assert!(Filter::pattern_matches("mm", "", "mm"));
        assert!(Filter::pattern_matches("app@mm", "app", "mm"));
        assert!(!Filter::pattern_matches("app@mm", "other", "mm"));
        assert!(Filter::pattern_matches("app@*", "app", "x"));
        assert!(!Filter::pattern_matches("m", "", "mm"));
    }

    #[test]
    fn long_kernel_lists_are_capped() {
        let ks: Vec<_> = (0..10).map(|i| kernel(i, &format!("k{i}"), 0, 1)).collect();
        let l = kernel_label(&ks);
        assert!(l.ends_with("|...(+2 more)"), "{l}");
    }
}
