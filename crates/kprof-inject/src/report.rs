//! From NVTX range occurrences and CUPTI kernel records to raw samples (pure).
//!
//! [`group_kernels`] decides which kernels make one run of which annotation; [`build_raw`] turns
//! the groups into timing samples, [`crate::counters::build_counter_raw`] into counter samples
//! (the counter launch of `kprof run --metrics`), so both tiers share their keys.
//!
//! - Every kept range occurrence is one run of the region named by the range (annotation = the
//!   range's message; the domain is not part of the name). Its value is the summed GPU time
//!   (`gpu__time_duration.sum`, ns) of the kernels launched inside it, found by
//!   [`kprof::attribution::attribute`] from the CPU launch timestamps (nested ranges are
//!   inclusive). Occurrences without kernels give no sample.
//! - Kernels outside every kept range are grouped by kernel name: each launch is one run of an
//!   annotation named after the kernel.
//! - `--group-by kernel` ignores ranges and groups every kernel by name; `both` gives the ranges
//!   and every kernel by name.
//! - Filters (`--nvtx-include`/`--nvtx-exclude`): a pattern matches a range when it equals its
//!   name or `domain@name`, or, ending in `*`, is a prefix of either. With include patterns only
//!   matching ranges are kept; exclude patterns then drop ranges. A dropped range's kernels go to
//!   the nearest kept enclosing range, or count as outside ranges.

use std::collections::HashMap;

use kprof::attribution::{attribute, RegionSpan};
use kprof::cupti::records::{ActivityBatch, KernelRecord};
use kprof_core::{Config, DeviceInfo, ExtraValue, RawResults, SampleRecord, DEFAULT_METRIC};

use crate::book::RangeOcc;

/// How kernels are grouped into annotations (the run spec's `group_by`).
pub use kprof::run_spec::GroupBy;

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
    /// The annotation (range name or kernel name).
    pub annotation: String,
    /// Its kernels, in the order the attribution gives (launch order within a range).
    pub kernels: Vec<KernelRecord>,
}

/// Groups the kernels of one process into runs of annotations (see the module docs), in the
/// order samples are written: kept ranges with kernels by start, then kernels by name by GPU
/// start. The timing samples ([`build_raw`]) and the counter samples
/// ([`crate::counters::build_counter_raw`]) both come from these groups, so the n-th run of an
/// annotation is the same region occurrence in both.
pub fn group_kernels(
    ranges: &[RangeOcc],
    batch: &ActivityBatch,
    group_by: GroupBy,
    filter: &Filter,
) -> (Vec<Group>, BuildStats) {
    let mut groups = Vec::new();
    let mut stats = BuildStats {
        ranges_total: ranges.len(),
        kernels: batch.kernels.len(),
        ..Default::default()
    };
    let use_ranges = matches!(group_by, GroupBy::Nvtx | GroupBy::Both);
    let mut outside: Vec<KernelRecord> = batch.kernels.clone();
    if use_ranges {
        let kept: Vec<&RangeOcc> = ranges.iter().filter(|r| filter.keeps(&r.domain, &r.name)).collect();
        stats.ranges_kept = kept.len();
        let kept_ids: std::collections::HashSet<u64> = kept.iter().map(|r| r.id).collect();
        let parent_of: HashMap<u64, Option<u64>> = ranges.iter().map(|r| (r.id, r.parent)).collect();
        let nearest_kept_parent = |mut p: Option<u64>| {
            let mut hops = 0;
            while let Some(id) = p {
                if kept_ids.contains(&id) || hops > ranges.len() {
                    return Some(id).filter(|id| kept_ids.contains(id));
                }
                p = parent_of.get(&id).copied().flatten();
                hops += 1;
            }
            None
        };
        let spans: Vec<RegionSpan> = kept
            .iter()
            .map(|r| RegionSpan {
                id: r.id,
                parent: nearest_kept_parent(r.parent),
                thread_id: r.thread,
                start_ns: r.start_ns,
                end_ns: r.end_ns,
                start_correlation_id: r.start_correlation_id,
                end_correlation_id: r.end_correlation_id,
            })
            .collect();
        let att = attribute(batch, &spans);
        stats.kernels_outside_ranges = att.unattributed.len();
        stats.kernels_ambiguous = att.ambiguous;
        stats.kernels_in_ranges = batch.kernels.len() - att.unattributed.len();
        for r in &kept {
            if let Some(ks) = att.by_region.get(&r.id).filter(|ks| !ks.is_empty()) {
                stats.ranges_with_kernels += 1;
                groups.push(Group {
                    annotation: r.name.clone(),
                    kernels: ks.clone(),
                });
            }
        }
        outside = att.unattributed;
    } else {
        stats.kernels_outside_ranges = batch.kernels.len();
    }
    // Kernels by name: the ones outside ranges (nvtx), or all of them (kernel, both).
    let by_name: &[KernelRecord] = match group_by {
        GroupBy::Nvtx => &outside,
        GroupBy::Kernel | GroupBy::Both => &batch.kernels,
    };
    let mut ordered: Vec<&KernelRecord> = by_name.iter().collect();
    ordered.sort_by_key(|k| (k.start_ns, k.correlation_id));
    for k in ordered {
        groups.push(Group {
            annotation: k.name.clone(),
            kernels: vec![k.clone()],
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
/// of each group's kernels, ns).
pub fn build_raw(
    ranges: &[RangeOcc],
    batch: &ActivityBatch,
    group_by: GroupBy,
    filter: &Filter,
    ctx: &SampleContext,
) -> (RawResults, BuildStats) {
    let (groups, mut stats) = group_kernels(ranges, batch, group_by, filter);
    let mut raw = RawResults::new();
    for (g, run) in groups.iter().zip(run_indices(&groups)) {
        let value: u64 = g.kernels.iter().map(KernelRecord::duration_ns).sum();
        let mangled = kernel_label(&g.kernels);
        // The Kernel column shows demangled names (as ncu does); the mangled label is kept.
        let label = kprof_core::kernels::demangle_label(&mangled).into_owned();
        let mut extras = ctx.sample_extras(&g.kernels);
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

    #[test]
    fn numbered_ranges_take_kernels_by_launch_order_and_count_overlaps_of_two_threads() {
        // Thread 1's "a" is numbered (10, 40), thread 2's "b" (20, 50): kernel 30 was launched while
        // both were open (it goes to "b", opened last, and counts as ambiguous); no launch records.
        let numbered = |id, thread, name: &str, start, end| RangeOcc {
            thread,
            start_correlation_id: start,
            end_correlation_id: end,
            ..range(id, None, name, 0, 0)
        };
        let ranges = [numbered(1, 1, "a", 10, 40), numbered(2, 2, "b", 20, 50)];
        let batch = ActivityBatch {
            kernels: vec![
                kernel(15, "k1", 100, 5),
                kernel(30, "k2", 200, 5),
                kernel(45, "k3", 300, 5),
            ],
            ..Default::default()
        };
        let (groups, stats) = group_kernels(&ranges, &batch, GroupBy::Nvtx, &Filter::default());
        let names: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (
                    g.annotation.as_str(),
                    g.kernels.iter().map(|k| k.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(names, [("a", vec!["k1"]), ("b", vec!["k2", "k3"])]);
        assert_eq!((stats.kernels_in_ranges, stats.kernels_ambiguous), (3, 1));
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
        let (raw, st) = build_raw(&ranges, &batch, GroupBy::Nvtx, &Filter::default(), &ctx);
        assert_eq!(values(&raw, "step"), [60.0, 71.0]);
        assert_eq!(values(&raw, "mm"), [50.0, 60.0]);
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
        let (raw, _) = build_raw(
            &ranges,
            &batch,
            GroupBy::Nvtx,
            &Filter::default(),
            &SampleContext::default(),
        );
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
        build_raw(ranges, batch, GroupBy::Nvtx, &Filter::default(), ctx).0
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
        let (raw, _) = build_raw(&ranges, &batch, GroupBy::Nvtx, &f, &ctx);
        assert!(values(&raw, "step").is_empty());
        assert_eq!(values(&raw, "mm"), [50.0, 60.0]);
        // relu was only inside "step": now outside every kept range.
        assert_eq!(values(&raw, "relu"), [10.0, 11.0]);

        let f = Filter::new(&["m*".into(), " ".into()], &[]);
        assert_eq!(f.include, ["m*"]);
        let (raw, _) = build_raw(&ranges, &batch, GroupBy::Nvtx, &f, &ctx);
        assert_eq!(values(&raw, "mm"), [50.0, 60.0]);
        assert!(values(&raw, "step").is_empty());

        let (raw, st) = build_raw(&ranges, &batch, GroupBy::Kernel, &Filter::default(), &ctx);
        assert_eq!(values(&raw, "gemm"), [50.0, 60.0]);
        assert!(values(&raw, "step").is_empty());
        assert_eq!(st.kernels_outside_ranges, 5);

        let (raw, _) = build_raw(&ranges, &batch, GroupBy::Both, &Filter::default(), &ctx);
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
