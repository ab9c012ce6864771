//! Attributing kernel records, and CUDA graph launches as one work item each ([`work_items`]), to
//! user regions (pure; no GPU): by external correlation, launch time or launch order, nesting
//! inclusive ([`attribute`]).
//!
//! The rules, in order, how graph launches are timed and the order kernels are listed in:
//! `docs/architecture.md` (Attributing kernels to regions); what users choose between:
//! `docs/timing.md` (Which region a kernel belongs to).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::cupti::records::{graph_item_name, ActivityBatch, KernelRecord};
use crate::error::EngineError;
use crate::sys::cupti::EXTERNAL_CORRELATION_KIND_CUSTOM0;

/// One open-then-closed region, in CUPTI timestamps (defined beside the records that carry it).
pub use crate::cupti::records::RegionSpan;

/// How a kernel was attributed (for diagnostics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Rule (A): the external id of the launching thread.
    ExternalCorrelation,
    /// Rule (B): the launch API record's CPU time inside a region's span.
    LaunchTimestamp,
    /// Rule (O): the launch's correlation id between a region's numbers.
    LaunchOrder,
}

/// How many of a region's direct kernels came through each rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViaCounts {
    /// Rule (A).
    pub external: usize,
    /// Rule (B).
    pub launch_time: usize,
    /// Rule (O).
    pub launch_order: usize,
}

/// Kernels per region, plus the ones that belong to no region.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// Region id → its kernels (including those of nested regions), in launch order.
    pub by_region: HashMap<u64, Vec<KernelRecord>>,
    /// Kernels that matched no region, in launch order.
    pub unattributed: Vec<KernelRecord>,
    /// Region id → how many of its *direct* kernels came through each rule.
    pub direct_via: HashMap<u64, ViaCounts>,
    /// Kernels attributed by launch order while regions of more than one thread were open
    /// (which thread launched them is unknown without launch API records).
    pub ambiguous: usize,
}

impl Attribution {
    /// Total GPU time of a region's kernels (0 if none).
    pub fn total_ns(&self, region: u64) -> u64 {
        self.by_region
            .get(&region)
            .map(|ks| ks.iter().map(|k| k.duration_ns()).sum())
            .unwrap_or(0)
    }
}

/// The work items of a batch: every eager kernel as it is, every CUDA graph launch as one item
/// spanning the graph (see the module docs). Node records of a launch that also has a graph
/// record are dropped (they carry no timestamps); timed node records of a launch without one are
/// merged into one item named [`graph_item_name`]; untimed node records without a graph record
/// are kept as they are (the runner warns about them).
pub fn work_items(batch: &ActivityBatch) -> Vec<KernelRecord> {
    let traced: std::collections::HashSet<u32> = batch.graphs.iter().map(|g| g.correlation_id).collect();
    let mut items: Vec<KernelRecord> = batch.graphs.iter().map(|g| g.as_work_item()).collect();
    // Timed node records by launch correlation id, merged below.
    let mut nodes: HashMap<u32, Vec<&KernelRecord>> = HashMap::new();
    for k in &batch.kernels {
        let node = k.graph_id != 0;
        let untimed = k.start_ns == 0 && k.end_ns == 0;
        if node && traced.contains(&k.correlation_id) {
            continue;
        }
        if !node || untimed {
            items.push(k.clone());
            continue;
        }
        nodes.entry(k.correlation_id).or_default().push(k);
    }
    for (_, mut launch) in nodes {
        launch.sort_by_key(|k| (k.start_ns, k.end_ns));
        // One launch runs each node once. Seen on the H200 (CUPTI 13.0, concurrent records turned
        // off for a counter pass and on again): the nodes of a later launch of the same graph
        // exec, made while the records were off, still came with this launch's correlation id.
        // Only the first run of every node belongs to this launch.
        let mut seen = std::collections::HashSet::new();
        let first: Vec<&KernelRecord> = launch
            .into_iter()
            .take_while(|k| k.graph_node_id == 0 || seen.insert(k.graph_node_id))
            .collect();
        let (Some(head), Some(end)) = (first.first(), first.iter().map(|k| k.end_ns).max()) else {
            continue;
        };
        items.push(KernelRecord {
            graph_node_id: 0,
            end_ns: end,
            name: graph_item_name(head.graph_id),
            ..(*head).clone()
        });
    }
    items
}

/// Attributes every work item of `batch` ([`work_items`]: kernels, and CUDA graph launches as a
/// whole) to `regions` by the rules in the module documentation.
pub fn attribute(batch: &ActivityBatch, regions: &[RegionSpan]) -> Attribution {
    let items = work_items(batch);
    let mut ext_of_corr: HashMap<u32, u64> = HashMap::new();
    for e in &batch.external {
        if e.external_kind == EXTERNAL_CORRELATION_KIND_CUSTOM0 {
            ext_of_corr.insert(e.correlation_id, e.external_id);
        }
    }
    let mut launch_start: HashMap<u32, u64> = HashMap::new();
    for a in &batch.launches {
        launch_start
            .entry(a.correlation_id)
            .and_modify(|t| *t = (*t).min(a.start_ns))
            .or_insert(a.start_ns);
    }
    let parent_of: HashMap<u64, Option<u64>> = regions.iter().map(|r| (r.id, r.parent)).collect();

    // Sort kernels into launch order once: by the launch's CPU time where the batch has launch
    // records, else by correlation id (CUPTI numbers launches in the order they are made).
    let by_order = batch.launches.is_empty();
    let mut order: Vec<(u64, u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let t = if by_order {
                k.correlation_id as u64
            } else {
                launch_start.get(&k.correlation_id).copied().unwrap_or(k.start_ns)
            };
            (t, k.start_ns, i)
        })
        .collect();
    order.sort();

    let mut out = Attribution::default();
    for (launch_t, _, i) in order {
        let k = &items[i];
        let (region, via) = if let Some(&id) = ext_of_corr.get(&k.correlation_id) {
            (Some(id), Via::ExternalCorrelation)
        } else if launch_start.contains_key(&k.correlation_id) {
            (innermost_containing(regions, launch_t), Via::LaunchTimestamp)
        } else {
            let (region, ambiguous) = innermost_by_order(regions, k.correlation_id);
            out.ambiguous += ambiguous as usize;
            (region, Via::LaunchOrder)
        };
        let Some(region) = region else {
            out.unattributed.push(k.clone());
            continue;
        };
        let counts = out.direct_via.entry(region).or_default();
        match via {
            Via::ExternalCorrelation => counts.external += 1,
            Via::LaunchTimestamp => counts.launch_time += 1,
            Via::LaunchOrder => counts.launch_order += 1,
        }
        // The region itself and every ancestor (guarding against a malformed parent cycle).
        let mut cur = Some(region);
        let mut hops = 0;
        while let Some(id) = cur {
            out.by_region.entry(id).or_default().push(k.clone());
            cur = parent_of.get(&id).copied().flatten();
            hops += 1;
            if hops > regions.len() + 1 {
                break;
            }
        }
    }
    out
}

/// Every work item of `batch` ([`work_items`]) launched while each region of `regions` was
/// open, nested regions or not: the **inclusive** kernels of each region, by the predicates of
/// [`attribute`] without its "innermost" choice. An item with a launch record belongs to every
/// region whose span holds the launch's CPU time (rule B); one without, to every region whose
/// numbers enclose its correlation id (rule O); one with an external id, to that region and its
/// ancestors by `parent` (rule A). Whatever `parent` says, a region whose span holds a launch
/// gets it, so ranges that overlap without nesting (start/end ranges, ranges of other domains or
/// threads) each get their own. Region id → items in launch order; regions without one are left
/// out. Sorting and binary search: O((items + regions) log items + output).
pub fn launched_within(batch: &ActivityBatch, regions: &[RegionSpan]) -> HashMap<u64, Vec<KernelRecord>> {
    let items = work_items(batch);
    let external: HashMap<u32, u64> = batch
        .external
        .iter()
        .filter(|e| e.external_kind == EXTERNAL_CORRELATION_KIND_CUSTOM0)
        .map(|e| (e.correlation_id, e.external_id))
        .collect();
    let mut launch_start: HashMap<u32, u64> = HashMap::new();
    for a in &batch.launches {
        let t = launch_start.entry(a.correlation_id).or_insert(a.start_ns);
        *t = (*t).min(a.start_ns);
    }
    let parent_of: HashMap<u64, Option<u64>> = regions.iter().map(|r| (r.id, r.parent)).collect();
    // (position, GPU start, item) of the items placed by launch time and by launch order.
    let (mut by_time, mut by_order) = (Vec::new(), Vec::new());
    let mut out: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, k) in items.iter().enumerate() {
        if let Some(&id) = external.get(&k.correlation_id) {
            let mut cur = Some(id);
            for _ in 0..=regions.len() {
                let Some(r) = cur else { break };
                out.entry(r).or_default().push(i);
                cur = parent_of.get(&r).copied().flatten();
            }
        } else if let Some(&t) = launch_start.get(&k.correlation_id) {
            by_time.push((t, k.start_ns, i));
        } else {
            by_order.push((k.correlation_id as u64, k.start_ns, i));
        }
    }
    by_time.sort_unstable();
    by_order.sort_unstable();
    let between = |list: &[(u64, u64, usize)], lo: u64, hi: u64| {
        let a = list.partition_point(|e| e.0 < lo);
        let b = list.partition_point(|e| e.0 <= hi);
        list[a..b.max(a)].iter().map(|e| e.2).collect::<Vec<_>>()
    };
    for r in regions {
        let mut mine = between(&by_time, r.start_ns, r.end_ns);
        // Rule (O): strictly between the two numbers; no end number encloses nothing.
        if r.end_correlation_id != 0 && r.start_correlation_id < r.end_correlation_id {
            let (lo, hi) = (r.start_correlation_id as u64 + 1, r.end_correlation_id as u64 - 1);
            mine.extend(between(&by_order, lo, hi));
        }
        if !mine.is_empty() {
            out.entry(r.id).or_default().extend(mine);
        }
    }
    // Launch order: by the launch's CPU time where the batch has launch records, else by
    // correlation id, then GPU start (as `attribute` lists them).
    let key = |i: usize| {
        let k = &items[i];
        let t = if batch.launches.is_empty() {
            k.correlation_id as u64
        } else {
            launch_start.get(&k.correlation_id).copied().unwrap_or(k.start_ns)
        };
        (t, k.start_ns, i)
    };
    out.into_iter()
        .map(|(id, mut v)| {
            v.sort_unstable_by_key(|&i| key(i));
            v.dedup();
            (id, v.into_iter().map(|i| items[i].clone()).collect())
        })
        .collect()
}

/// A region's opening number ([`RegionSpan::start_correlation_id`]) from the mark taken when it
/// opened: 0 where nothing numbers launches (no session yet, or `attribution="records"`: the
/// region's end is then 0 too unless a session started meanwhile, and every launch before its end
/// counts); `u32::MAX` where the numbered call got no id (0 would take every earlier launch).
pub fn opening_number(mark: Option<u32>) -> u32 {
    match mark {
        None => 0,
        Some(0) => u32::MAX,
        Some(id) => id,
    }
}

/// Rule (O): the innermost region (opened last) whose correlation numbers enclose `corr`, and
/// whether regions of more than one thread enclose it. Regions without an end number (0: not
/// taken) enclose nothing; a start number of 0 encloses everything before the end.
fn innermost_by_order(regions: &[RegionSpan], corr: u32) -> (Option<u64>, bool) {
    let mut open = regions
        .iter()
        .filter(|r| r.end_correlation_id != 0 && r.start_correlation_id < corr && corr < r.end_correlation_id);
    let Some(first) = open.next() else {
        return (None, false);
    };
    let mut best = first;
    let mut threads_differ = false;
    for r in open {
        threads_differ |= r.thread_id != first.thread_id;
        if (r.start_correlation_id, r.id) > (best.start_correlation_id, best.id) {
            best = r;
        }
    }
    (Some(best.id), threads_differ)
}

fn innermost_containing(regions: &[RegionSpan], t: u64) -> Option<u64> {
    regions
        .iter()
        .filter(|r| r.start_ns <= t && t <= r.end_ns)
        .max_by_key(|r| (r.start_ns, r.id))
        .map(|r| r.id)
}

/// Bit widths of the packed region key: benchmark call index 12, config 20, run 20, region 12 (= 64).
pub const KEY_BITS: [(&str, u32); 4] = [("call", 12), ("config", 20), ("run", 20), ("region", 12)];

/// The fields of a region key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionKey {
    pub call: u32,
    pub config: u32,
    pub run: u32,
    pub region: u32,
}

/// Packs (call, config, run, region) into one external-correlation id:
/// `call << 52 | config << 32 | run << 12 | region`. Errors name the field that overflowed.
pub fn encode_region_key(call: u32, config: u32, run: u32, region: u32) -> Result<u64, EngineError> {
    let vals = [call, config, run, region];
    let mut key = 0u64;
    for ((field, bits), v) in KEY_BITS.iter().zip(vals) {
        if (v as u64) >> bits != 0 {
            return Err(EngineError::KeyOverflow {
                field,
                value: v as u64,
                bits: *bits,
            });
        }
        key = (key << bits) | v as u64;
    }
    Ok(key)
}

/// Inverse of [`encode_region_key`].
pub fn decode_region_key(key: u64) -> RegionKey {
    let region = (key & 0xfff) as u32;
    let run = ((key >> 12) & 0xf_ffff) as u32;
    let config = ((key >> 32) & 0xf_ffff) as u32;
    let call = (key >> 52) as u32;
    RegionKey {
        call,
        config,
        run,
        region,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cupti::records::{ApiRecord, ExternalCorrelationRecord};

    fn k(corr: u32, start: u64, dur: u64, name: &str) -> KernelRecord {
        KernelRecord {
            start_ns: start,
            end_ns: start + dur,
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            correlation_id: corr,
            grid_id: corr as i64,
            graph_id: 0,
            graph_node_id: 0,
            name: name.into(),
        }
    }
    fn launch(corr: u32, t: u64, tid: u32, cbid: u32) -> ApiRecord {
        ApiRecord {
            kind: crate::sys::cupti::ACTIVITY_KIND_DRIVER,
            cbid,
            start_ns: t,
            end_ns: t + 3,
            process_id: 1,
            thread_id: tid,
            correlation_id: corr,
        }
    }
    fn ext(corr: u32, id: u64) -> ExternalCorrelationRecord {
        ExternalCorrelationRecord {
            external_kind: EXTERNAL_CORRELATION_KIND_CUSTOM0,
            external_id: id,
            correlation_id: corr,
        }
    }
    fn span(id: u64, parent: Option<u64>, s: u64, e: u64) -> RegionSpan {
        RegionSpan {
            id,
            parent,
            thread_id: 100,
            start_ns: s,
            end_ns: e,
            start_correlation_id: 0,
            end_correlation_id: 0,
        }
    }
    /// A region numbered `(start, end)` in launch order, opened by thread `tid`.
    fn numbered(id: u64, parent: Option<u64>, tid: u32, start: u32, end: u32) -> RegionSpan {
        RegionSpan {
            start_correlation_id: start,
            end_correlation_id: end,
            thread_id: tid,
            ..span(id, parent, 0, 0)
        }
    }
    fn via(external: usize, launch_time: usize) -> ViaCounts {
        ViaCounts {
            external,
            launch_time,
            launch_order: 0,
        }
    }
    fn names(v: &[KernelRecord]) -> Vec<&str> {
        v.iter().map(|k| k.name.as_str()).collect()
    }

    #[test]
    fn without_launch_records_kernels_follow_the_launch_order_numbers_of_the_regions() {
        // Regions numbered as kprof numbers them: outer (10, 40) with inner (20, 30) on one
        // thread. Kernels 15 and 35 belong to the outer region, 25 to the inner (and so also to
        // the outer), 45 to none; the GPU order (start times) is not the launch order.
        let batch = ActivityBatch {
            kernels: vec![
                k(35, 1000, 10, "d"),
                k(25, 2000, 10, "c"),
                k(15, 3000, 10, "a"),
                k(45, 500, 10, "late"),
            ],
            ..Default::default()
        };
        let regions = [numbered(1, None, 100, 10, 40), numbered(2, Some(1), 100, 20, 30)];
        let a = attribute(&batch, &regions);
        assert_eq!(names(&a.by_region[&1]), ["a", "c", "d"]);
        assert_eq!(names(&a.by_region[&2]), ["c"]);
        assert_eq!(names(&a.unattributed), ["late"]);
        assert_eq!(a.direct_via[&1].launch_order, 2);
        assert_eq!(a.direct_via[&2].launch_order, 1);
        assert_eq!(a.ambiguous, 0);
        // A region without an end number encloses nothing; a start number of 0 encloses all
        // launches before its end.
        let a = attribute(&batch, &[numbered(1, None, 100, 10, 0), numbered(2, None, 100, 0, 30)]);
        assert_eq!(names(&a.by_region[&2]), ["a", "c"]);
        assert!(!a.by_region.contains_key(&1));
        // A start that got no id (u32::MAX) encloses nothing either.
        let a = attribute(&batch, &[numbered(1, None, 100, u32::MAX, 40)]);
        assert!(a.by_region.is_empty() && a.unattributed.len() == 4);
    }

    #[test]
    fn launched_within_counts_every_open_region_whatever_the_nesting_records_say() {
        // A user range (1, numbered 10..40) and a library's range of another domain opened inside
        // it (2, 20..30, no parent: another push/pop stack). `attribute` gives kernel 25 to the
        // library's range only; `launched_within` gives it to both.
        let batch = ActivityBatch {
            kernels: vec![
                k(15, 0, 10, "a"),
                k(25, 10, 100, "sort"),
                k(35, 200, 10, "b"),
                k(45, 300, 1, "x"),
            ],
            ..Default::default()
        };
        let regions = [numbered(1, None, 100, 10, 40), numbered(2, None, 100, 20, 30)];
        let inner = attribute(&batch, &regions);
        assert_eq!(names(&inner.by_region[&1]), ["a", "b"]);
        let all = launched_within(&batch, &regions);
        assert_eq!(names(&all[&1]), ["a", "sort", "b"]);
        assert_eq!(names(&all[&2]), ["sort"]);
        assert!(!all.values().flatten().any(|k| k.name == "x"));
        // Two ranges that overlap without nesting (start/end ranges): each gets its launches.
        let all = launched_within(&batch, &[numbered(1, None, 1, 10, 30), numbered(2, None, 2, 20, 40)]);
        assert_eq!(names(&all[&1]), ["a", "sort"]);
        assert_eq!(names(&all[&2]), ["sort", "b"]);
        // No end number, or a start that got no id: nothing.
        let all = launched_within(
            &batch,
            &[numbered(1, None, 1, 10, 0), numbered(2, None, 1, u32::MAX, 40)],
        );
        assert!(all.is_empty());
    }

    #[test]
    fn launched_within_by_launch_time_and_external_id() {
        // Launch records: CPU times 5 (ext id of region 2), 12 and 60; region 1 spans 0..100,
        // region 2 (child of 1) 10..50.
        let batch = ActivityBatch {
            kernels: vec![k(1, 1000, 10, "ext"), k(2, 1010, 10, "t12"), k(3, 1020, 10, "t60")],
            launches: vec![launch(1, 5, 100, 307), launch(2, 12, 200, 307), launch(3, 60, 200, 307)],
            external: vec![ext(1, 2)],
            ..Default::default()
        };
        let all = launched_within(&batch, &[span(1, None, 0, 100), span(2, Some(1), 10, 50)]);
        assert_eq!(names(&all[&1]), ["ext", "t12", "t60"]);
        assert_eq!(names(&all[&2]), ["ext", "t12"]);
        // The innermost attribution's kernels of a region are always among its inclusive ones.
        let inner = attribute(&batch, &[span(1, None, 0, 100), span(2, None, 10, 50)]);
        for (id, ks) in &inner.by_region {
            assert!(ks.iter().all(|k| all[id].contains(k)), "region {id}");
        }
    }

    #[test]
    fn launch_order_counts_kernels_launched_while_regions_of_two_threads_were_open() {
        // Thread 100's region (10, 40) and thread 200's (20, 50) overlap in 20..40: kernel 30 goes
        // to the region opened last (thread 200's) and is counted as ambiguous; 15 and 45 are not.
        let batch = ActivityBatch {
            kernels: vec![k(15, 0, 1, "a"), k(30, 10, 1, "b"), k(45, 20, 1, "c")],
            ..Default::default()
        };
        let a = attribute(
            &batch,
            &[numbered(1, None, 100, 10, 40), numbered(2, None, 200, 20, 50)],
        );
        assert_eq!(names(&a.by_region[&1]), ["a"]);
        assert_eq!(names(&a.by_region[&2]), ["b", "c"]);
        assert_eq!(a.ambiguous, 1);
    }

    #[test]
    fn launch_records_keep_rules_a_and_b_even_when_regions_are_numbered() {
        let batch = ActivityBatch {
            kernels: vec![k(1, 1000, 10, "a"), k(2, 1020, 10, "b")],
            launches: vec![launch(1, 10, 100, 307), launch(2, 500, 100, 307)],
            external: vec![ext(1, 7)],
            ..Default::default()
        };
        let a = attribute(&batch, &[numbered(7, None, 100, 5, 9)]);
        // Kernel 1 by its external id; kernel 2 was launched at t=500, outside the span (0, 0).
        assert_eq!(names(&a.by_region[&7]), ["a"]);
        assert_eq!(a.direct_via[&7], via(1, 0));
    }

    #[test]
    fn external_correlation_is_exact_even_outside_the_span() {
        // Kernel launched by the region's thread: ext corr decides, even if the recorded span were
        // slightly off (the timestamps are taken around push/pop).
        let batch = ActivityBatch {
            kernels: vec![k(1, 1000, 10, "a"), k(2, 1020, 10, "b")],
            launches: vec![launch(1, 10, 100, 307), launch(2, 500, 100, 307)],
            external: vec![ext(1, 7), ext(2, 7)],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(7, None, 5, 20)]);
        assert_eq!(names(&a.by_region[&7]), ["a", "b"]);
        assert_eq!(a.direct_via[&7], via(2, 0));
        assert!(a.unattributed.is_empty());
        assert_eq!(a.total_ns(7), 20);
    }

    #[test]
    fn other_thread_by_launch_timestamp() {
        // Corr 2 was launched on a worker thread (no ext record) inside the region's span.
        let batch = ActivityBatch {
            kernels: vec![k(1, 1000, 10, "fwd"), k(2, 1100, 30, "bwd")],
            launches: vec![launch(1, 10, 100, 307), launch(2, 15, 200, 307)],
            external: vec![ext(1, 7)],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(7, None, 5, 20)]);
        assert_eq!(names(&a.by_region[&7]), ["fwd", "bwd"]);
        assert_eq!(a.direct_via[&7], via(1, 1));
        assert_eq!(a.total_ns(7), 40);
    }

    #[test]
    fn nested_regions_are_inclusive_and_innermost_wins() {
        // outer [0,100] contains inner [10,50]; launch at 20 (other thread) → inner (and outer).
        let batch = ActivityBatch {
            kernels: vec![
                k(1, 1000, 10, "outer_only"),
                k(2, 1010, 10, "inner_ext"),
                k(3, 1020, 10, "inner_ts"),
                k(4, 1030, 10, "after_inner"),
            ],
            launches: vec![
                launch(1, 5, 100, 307),
                launch(2, 12, 100, 307),
                launch(3, 20, 200, 307),
                launch(4, 60, 200, 307),
            ],
            external: vec![ext(1, 1), ext(2, 2)],
            ..Default::default()
        };
        let regions = [span(1, None, 0, 100), span(2, Some(1), 10, 50)];
        let a = attribute(&batch, &regions);
        assert_eq!(names(&a.by_region[&2]), ["inner_ext", "inner_ts"]);
        assert_eq!(
            names(&a.by_region[&1]),
            ["outer_only", "inner_ext", "inner_ts", "after_inner"]
        );
        assert_eq!(a.direct_via[&1], via(1, 1));
        assert_eq!(a.direct_via[&2], via(1, 1));
    }

    #[test]
    fn graph_launch_kernels_follow_the_launch() {
        let mut g1 = k(9, 2000, 5, "node_a");
        let mut g2 = k(9, 2010, 5, "node_b");
        let mut g3 = k(9, 2005, 5, "node_c");
        for (i, g) in [&mut g1, &mut g2, &mut g3].into_iter().enumerate() {
            g.graph_id = 4;
            g.graph_node_id = i as u64 + 1;
        }
        // Concurrent records: the launch's nodes become one item spanning the graph (2000..2015),
        // not the sum of the nodes (15 ns either way here; see the gap test below).
        let batch = ActivityBatch {
            kernels: vec![g2.clone(), g1.clone(), g3.clone()],
            launches: vec![launch(9, 30, 200, 514)],
            ..Default::default()
        };
        // Launched from another thread: timestamp rule; and from the region thread: ext rule.
        let a = attribute(&batch, &[span(3, None, 25, 40)]);
        assert_eq!(names(&a.by_region[&3]), ["cuda-graph:4"]);
        assert_eq!((a.by_region[&3][0].start_ns, a.by_region[&3][0].end_ns), (2000, 2015));
        let batch = ActivityBatch {
            external: vec![ext(9, 3)],
            launches: vec![launch(9, 999, 100, 515)],
            ..batch
        };
        let a = attribute(&batch, &[span(3, None, 25, 40)]);
        assert_eq!(a.by_region[&3].len(), 1);
        assert_eq!(a.direct_via[&3], via(1, 0));
        assert!(cbid_is_graph(514) && cbid_is_graph(515) && !cbid_is_graph(307));
    }

    #[test]
    fn a_graph_is_its_span_with_gaps_never_one_node_or_the_node_sum() {
        // Two nodes with a 100 ns gap between them: the graph took 120 ns on the GPU.
        let mut n1 = k(9, 1000, 10, "node_a");
        let mut n2 = k(9, 1110, 10, "node_b");
        n1.graph_id = 2;
        n2.graph_id = 2;
        let eager = k(8, 900, 50, "eager");
        let batch = ActivityBatch {
            kernels: vec![eager, n1, n2],
            launches: vec![launch(8, 10, 20, 307), launch(9, 30, 40, 514)],
            external: vec![ext(8, 3), ext(9, 3)],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(3, None, 5, 100)]);
        assert_eq!(names(&a.by_region[&3]), ["eager", "cuda-graph:2"]);
        assert_eq!(a.total_ns(3), 50 + 120);
    }

    #[test]
    fn a_later_launch_with_a_stale_correlation_id_does_not_stretch_the_span() {
        // Nodes 1 and 2 of launch 9 at 1000..1120; the same two nodes again 3 ms later, carrying
        // the same correlation id (a launch made while the records were off): the span is the
        // first launch's.
        let node = |start: u64, id: u64| {
            let mut n = k(9, start, 10, "node");
            n.graph_id = 2;
            n.graph_node_id = id;
            n
        };
        let batch = ActivityBatch {
            kernels: vec![node(1000, 1), node(1110, 2), node(3_001_000, 1), node(3_001_110, 2)],
            launches: vec![launch(9, 30, 40, 514)],
            external: vec![ext(9, 3)],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(3, None, 5, 100)]);
        assert_eq!(names(&a.by_region[&3]), ["cuda-graph:2"]);
        assert_eq!(a.total_ns(3), 120);
    }

    #[test]
    fn graph_trace_records_replace_untimed_node_records() {
        use crate::cupti::records::GraphRecord;
        // Serial kernel tracing with graph trace: one GRAPH_TRACE record per launch; any node
        // record of that launch (untimed) is dropped. Eager kernels stay as they are.
        let mut untimed = k(9, 0, 0, "node");
        untimed.end_ns = 0;
        untimed.graph_id = 5;
        let graph = GraphRecord {
            start_ns: 2000,
            end_ns: 130_000,
            device_id: 0,
            stream_id: 7,
            correlation_id: 9,
            graph_id: 5,
        };
        let batch = ActivityBatch {
            kernels: vec![untimed, k(8, 1000, 400, "eager")],
            launches: vec![launch(8, 10, 20, 307), launch(9, 30, 40, 514)],
            external: vec![ext(8, 3), ext(9, 3)],
            graphs: vec![graph],
        };
        let a = attribute(&batch, &[span(3, None, 5, 100)]);
        assert_eq!(names(&a.by_region[&3]), ["eager", "cuda-graph:5"]);
        assert_eq!(a.total_ns(3), 400 + 128_000);
        // Untimed node records without a graph record stay (the runner warns about them).
        let batch = ActivityBatch {
            graphs: vec![],
            ..batch
        };
        let a = attribute(&batch, &[span(3, None, 5, 100)]);
        assert_eq!(names(&a.by_region[&3]), ["eager", "node"]);
    }

    fn cbid_is_graph(c: u32) -> bool {
        crate::sys::cupti::cbid::is_graph_launch(crate::sys::cupti::ACTIVITY_KIND_DRIVER, c)
    }

    #[test]
    fn unattributed_kernels() {
        let batch = ActivityBatch {
            kernels: vec![
                k(1, 1000, 10, "before"),
                k(2, 1010, 10, "no_launch_record"),
                k(3, 1020, 10, "inside"),
            ],
            launches: vec![launch(1, 1, 100, 307), launch(3, 20, 100, 307)],
            external: vec![ExternalCorrelationRecord {
                external_kind: 4, // CUSTOM1: someone else's id, ignored
                external_id: 5,
                correlation_id: 1,
            }],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(5, None, 10, 30)]);
        assert_eq!(names(&a.by_region[&5]), ["inside"]);
        assert_eq!(names(&a.unattributed), ["before", "no_launch_record"]);
    }

    #[test]
    fn different_kernel_counts_per_run_are_fine() {
        // Two runs of the same region key family; run 1 launches 2 kernels, run 2 launches 1.
        let r1 = encode_region_key(0, 3, 1, 0).unwrap();
        let r2 = encode_region_key(0, 3, 2, 0).unwrap();
        let batch = ActivityBatch {
            kernels: vec![k(1, 100, 5, "a"), k(2, 110, 5, "b"), k(3, 200, 7, "c")],
            launches: vec![launch(1, 1, 1, 307), launch(2, 2, 1, 307), launch(3, 50, 1, 307)],
            external: vec![ext(1, r1), ext(2, r1), ext(3, r2)],
            ..Default::default()
        };
        let a = attribute(&batch, &[span(r1, None, 0, 10), span(r2, None, 40, 60)]);
        assert_eq!(a.total_ns(r1), 10);
        assert_eq!(a.total_ns(r2), 7);
    }

    #[test]
    fn region_key_round_trip_and_overflow() {
        let key = encode_region_key(4095, 1_048_575, 1_048_575, 4095).unwrap();
        assert_eq!(key, u64::MAX);
        assert_eq!(
            decode_region_key(key),
            RegionKey {
                call: 4095,
                config: 1_048_575,
                run: 1_048_575,
                region: 4095
            }
        );
        let key = encode_region_key(1, 2, 3, 4).unwrap();
        assert_eq!(key, (1 << 52) | (2 << 32) | (3 << 12) | 4);
        assert_eq!(
            decode_region_key(key),
            RegionKey {
                call: 1,
                config: 2,
                run: 3,
                region: 4
            }
        );
        for (args, field) in [
            ((4096, 0, 0, 0), "call"),
            ((0, 1 << 20, 0, 0), "config"),
            ((0, 0, 1 << 20, 0), "run"),
            ((0, 0, 0, 4096), "region"),
        ] {
            let e = encode_region_key(args.0, args.1, args.2, args.3).unwrap_err();
            match &e {
                EngineError::KeyOverflow { field: f, .. } => assert_eq!(*f, field),
                other => panic!("{other:?}"),
            }
            assert!(e.to_string().contains(&format!("`{field}`")), "{e}");
        }
    }
}
