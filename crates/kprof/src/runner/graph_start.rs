//! The GPU's start overhead of a CUDA graph launch, measured once per process on kprof's own graph
//! (a one-node graph of an empty kernel, [`LAUNCHES`] launches queued back to back behind a hold of
//! the stream: the median gap between their records, [`start_overhead_ns`]) and added to the span
//! of every graph launch timed from its graph record, as CUDA events and ncu count it. Why, and the
//! measurements: docs/architecture.md, "The GPU's start of a CUDA graph".

use crate::cupti::records::{ActivityBatch, GraphRecord};
use crate::cupti::ActivitySession;
use crate::driver::Driver;
use crate::error::EngineError;

/// Launches of kprof's own graph that the measurement queues back to back.
pub const LAUNCHES: usize = 24;

/// A gap above this is not a graph's start (the hold did not keep the launches queued, or
/// something else ran between them): the measurement gives nothing rather than a wrong value.
pub const MAX_START_OVERHEAD_NS: u64 = 20_000;

/// The median gap between consecutive launches of `own` (the records of one graph launched back
/// to back, in any order): the GPU's time from one graph's end to the next one's start. `None`
/// with fewer than half of [`LAUNCHES`] gaps or a median above [`MAX_START_OVERHEAD_NS`].
pub fn start_overhead_ns(own: &[GraphRecord]) -> Option<u64> {
    let mut spans: Vec<(u64, u64)> = own.iter().map(|g| (g.start_ns, g.end_ns)).collect();
    spans.sort_unstable();
    let mut gaps: Vec<u64> = spans
        .windows(2)
        .filter(|w| w[1].0 >= w[0].1)
        .map(|w| w[1].0 - w[0].1)
        .collect();
    if gaps.len() < LAUNCHES / 2 {
        return None;
    }
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    (median <= MAX_START_OVERHEAD_NS).then_some(median)
}

/// Takes kprof's own graph records out of `batch`: among the graph records that started at or
/// after `since_ns`, those of the one graph with exactly `launched` launches. Every other record
/// stays in `batch`; nothing is taken when no graph matches.
pub fn take_own_records(batch: &mut ActivityBatch, launched: usize, since_ns: u64) -> Vec<GraphRecord> {
    let mut counts: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for g in batch.graphs.iter().filter(|g| g.start_ns >= since_ns) {
        *counts.entry(g.graph_id).or_default() += 1;
    }
    let mut ids: Vec<u32> = counts
        .into_iter()
        .filter(|&(_, n)| n == launched)
        .map(|(id, _)| id)
        .collect();
    ids.sort_unstable();
    // Two graphs launched exactly as often in the window: which one is kprof's is unknown.
    let [own] = ids[..] else { return Vec::new() };
    let (mine, rest): (Vec<GraphRecord>, Vec<GraphRecord>) = std::mem::take(&mut batch.graphs)
        .into_iter()
        .partition(|g| g.graph_id == own && g.start_ns >= since_ns);
    batch.graphs = rest;
    mine
}

/// Measures the GPU's start overhead of a graph launch on kprof's own graph of one empty kernel
/// in the current context: [`LAUNCHES`] launches queued behind a hold of the legacy default
/// stream, then released. Their records are taken out of the flush that follows, whose other
/// records go into `batch` (call it right after flushing `batch`, outside any counter
/// collection). `Ok(None)` when the records do not give it ([`start_overhead_ns`]).
pub fn measure(
    driver: &Driver,
    session: &mut ActivitySession,
    batch: &mut ActivityBatch,
) -> Result<Option<u64>, EngineError> {
    let kernel = driver.load_kernel(&crate::sys::kernels::L2_FLUSH_READ)?;
    let graph = driver.kernel_graph(kernel, 1, 32, (0, 0))?;
    let word = driver.host_word()?;
    let since = session.timestamp_ns()?;
    driver.hold_stream(&word, 1)?;
    let queued = (0..LAUNCHES).try_for_each(|_| driver.graph_launch(&graph));
    // Released whatever happened, before waiting for it.
    word.store(1);
    driver.synchronize()?;
    queued?;
    drop(graph);
    let mut more = session.flush()?;
    let own = take_own_records(&mut more, LAUNCHES, since);
    batch.extend(more);
    Ok(start_overhead_ns(&own))
}

/// Adds the start overhead to every graph record of `batch`: each launch's span starts
/// `overhead_ns` earlier.
pub fn include_start(batch: &mut ActivityBatch, overhead_ns: u64) {
    for g in &mut batch.graphs {
        g.start_ns = g.start_ns.saturating_sub(overhead_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(graph_id: u32, start_ns: u64, end_ns: u64) -> GraphRecord {
        GraphRecord {
            start_ns,
            end_ns,
            device_id: 0,
            stream_id: 7,
            correlation_id: 0,
            graph_id,
        }
    }

    /// `n` launches of 2.5 µs each, `gap` apart, from `t0`.
    fn back_to_back(graph_id: u32, t0: u64, n: usize, gap: u64) -> Vec<GraphRecord> {
        (0..n as u64)
            .map(|i| {
                let s = t0 + i * (2_500 + gap);
                rec(graph_id, s, s + 2_500)
            })
            .collect()
    }

    #[test]
    fn the_overhead_is_the_median_gap_between_back_to_back_launches() {
        let mut own = back_to_back(9, 1_000_000, LAUNCHES, 1_900);
        // One launch that waited (an interrupt on the host side of the hold) moves nothing.
        own[5].start_ns += 40_000;
        own[5].end_ns += 40_000;
        own.reverse();
        assert_eq!(start_overhead_ns(&own), Some(1_900));
    }

    #[test]
    fn too_few_launches_or_gaps_too_long_give_nothing() {
        assert_eq!(start_overhead_ns(&back_to_back(9, 0, 6, 1_900)), None);
        assert_eq!(start_overhead_ns(&back_to_back(9, 0, LAUNCHES, 35_000)), None);
        assert_eq!(start_overhead_ns(&[]), None);
    }

    #[test]
    fn own_records_are_the_graph_launched_that_often_after_the_mark() {
        let mut batch = ActivityBatch::default();
        // The user's graph: once before the mark, once after it (it stays).
        batch.graphs.push(rec(3, 10, 200));
        batch.graphs.extend(back_to_back(4, 1_000, LAUNCHES, 1_900));
        batch.graphs.push(rec(3, 500_000, 500_400));
        let own = take_own_records(&mut batch, LAUNCHES, 1_000);
        assert_eq!(own.len(), LAUNCHES);
        assert!(own.iter().all(|g| g.graph_id == 4));
        assert_eq!(batch.graphs, vec![rec(3, 10, 200), rec(3, 500_000, 500_400)]);
    }

    #[test]
    fn nothing_is_taken_when_no_graph_or_two_match() {
        let mut batch = ActivityBatch::default();
        batch.graphs.extend(back_to_back(4, 1_000, LAUNCHES - 1, 1_900));
        assert!(take_own_records(&mut batch, LAUNCHES, 0).is_empty());
        assert_eq!(batch.graphs.len(), LAUNCHES - 1);
        let mut batch = ActivityBatch::default();
        batch.graphs.extend(back_to_back(4, 1_000, LAUNCHES, 1_900));
        batch.graphs.extend(back_to_back(5, 1_000, LAUNCHES, 1_900));
        assert!(take_own_records(&mut batch, LAUNCHES, 0).is_empty());
        assert_eq!(batch.graphs.len(), 2 * LAUNCHES);
    }

    #[test]
    fn the_start_is_added_to_every_graph_span() {
        let mut batch = ActivityBatch::default();
        batch.graphs.push(rec(3, 10_000, 30_000));
        batch.graphs.push(rec(3, 1_000, 2_000));
        include_start(&mut batch, 1_900);
        let spans: Vec<u64> = batch.graphs.iter().map(|g| g.end_ns - g.start_ns).collect();
        assert_eq!(spans, vec![21_900, 2_000]);
    }
}
