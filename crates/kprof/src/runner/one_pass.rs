//! One pass where one is enough: a recorded run of eager kernels gets its durations from the
//! counter pass alone, its values mapped to regions through the kernels of its configuration's
//! last warm-up run ([`KernelMap`]: the closure launches the same kernels every run). Graphs or
//! annotation-scope collectors keep two passes; a pass that profiles other kernels than the map
//! holds is taken again with a timing pass, whose records become the map (a second mismatch keeps
//! two passes). The pass runs in `pass/one_pass.rs`; the profiler decides which runs take it.

use std::collections::HashMap;

use kprof_core::model::RawResults;

use super::counter_pass;
use super::run::SpanRec;
use super::{Collected, KernelRun};

/// The kernels of one warm-up run, by region, as the activity records attributed them: what a
/// counter pass of the same configuration is mapped through.
#[derive(Clone, Debug)]
pub(super) struct KernelMap {
    /// Each region of the run in opening order: its name and its kernels.
    regions: Vec<(String, Vec<KernelRun>)>,
    /// The run's kernels outside every region (input set-up, flush kernels: the counter pass's
    /// mapping drops the latter).
    outside: Vec<KernelRun>,
    /// The warm-up run's window on the activity clock.
    window: (u64, u64),
}

impl KernelMap {
    /// The map of a warm-up run: `None` when it launched CUDA graphs (timed from their records,
    /// so its configuration keeps its timing pass) or no region.
    pub(super) fn of_warmup(spans: &[SpanRec], collected: &Collected, window: (u64, u64)) -> Option<KernelMap> {
        if spans.is_empty() || spans.iter().any(|s| s.failed) {
            return None;
        }
        let regions: Vec<(String, Vec<KernelRun>)> = spans
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    collected.by_region.get(&s.key).cloned().unwrap_or_default(),
                )
            })
            .collect();
        let outside: Vec<KernelRun> = collected
            .outside
            .iter()
            .filter(|k| k.start_ns >= window.0 && k.start_ns <= window.1)
            .cloned()
            .collect();
        let graphs = regions
            .iter()
            .flat_map(|(_, ks)| ks)
            .chain(&outside)
            .any(|k| k.graph || k.is_untimed());
        (!graphs).then_some(KernelMap {
            regions,
            outside,
            window,
        })
    }

    /// The kernels of a counter pass's regions, keyed as the pass keyed them: the map's regions
    /// matched by name and occurrence. `None` when the pass opened other regions.
    pub(super) fn collected_for(&self, spans: &[SpanRec]) -> Option<Collected> {
        if spans.len() != self.regions.len() {
            return None;
        }
        let mut by_region = HashMap::new();
        for (s, (name, kernels)) in spans.iter().zip(&self.regions) {
            if s.name != *name {
                return None;
            }
            by_region.insert(s.key, kernels.clone());
        }
        Some(Collected {
            by_region,
            outside: self.outside.clone(),
            ..Collected::default()
        })
    }

    /// The map's window, which the counter values are mapped in.
    pub(super) fn window(&self) -> (u64, u64) {
        self.window
    }

    /// Regions of the run.
    pub(super) fn regions(&self) -> usize {
        self.regions.len()
    }

    /// The map's regions as spans keyed by their position (for a failed pass's NaN rows).
    pub(super) fn spans(&self) -> Vec<SpanRec> {
        self.regions
            .iter()
            .enumerate()
            .map(|(i, (name, _))| SpanRec {
                name: name.clone(),
                key: i as u64,
                parent: None,
                thread_id: 0,
                start_ns: 0,
                end_ns: None,
                start_correlation_id: 0,
                end_correlation_id: 0,
                failed: false,
            })
            .collect()
    }
}

/// The sum of the durations among `raw`'s samples from `from` on (one run's, as the counters
/// recorded them), and whether any was a number: what a stopping policy sees of a run in one
/// pass.
pub(super) fn durations_total(raw: &RawResults, from: usize) -> (f64, bool) {
    let values: Vec<f64> = raw.samples[from..]
        .iter()
        .filter(|s| raw.series[s.series as usize].key.metric == kprof_core::model::DEFAULT_METRIC)
        .map(|s| s.value)
        .filter(|v| !v.is_nan())
        .collect();
    (values.iter().sum(), !values.is_empty())
}

/// How many values a counter pass mapped through `collected` must have: the distinct eager
/// kernels of its regions and of the run outside them (flush kernels only when the pass
/// profiled them), as the counter pass's recording counts them.
pub(super) fn mapped_kernels(collected: &Collected, window: (u64, u64), flushes_profiled: bool) -> usize {
    let eager: Vec<KernelRun> = collected
        .by_region
        .values()
        .flatten()
        .filter(|k| !k.graph)
        .cloned()
        .collect();
    let outside: Vec<KernelRun> = counter_pass::profiled_outside(&collected.outside, window, flushes_profiled)
        .cloned()
        .collect();
    counter_pass::kernel_order(&[&eager, &outside]).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str, start_ns: u64) -> KernelRun {
        KernelRun {
            name: name.to_string(),
            graph: false,
            demangled: None,
            start_ns,
            end_ns: start_ns + 10,
            device: 0,
            stream: 0,
        }
    }

    fn span(name: &str, key: u64) -> SpanRec {
        SpanRec {
            name: name.to_string(),
            key,
            parent: None,
            thread_id: 1,
            start_ns: 0,
            end_ns: Some(1),
            start_correlation_id: 0,
            end_correlation_id: 0,
            failed: false,
        }
    }

    fn warmup() -> (Vec<SpanRec>, Collected) {
        let spans = vec![span("mul", 7), span("add", 8)];
        let mut collected = Collected::default();
        collected.by_region.insert(7, vec![kernel("mul_k", 100)]);
        collected
            .by_region
            .insert(8, vec![kernel("add_k", 200), kernel("add_k2", 300)]);
        collected.outside = vec![kernel("randn", 50), kernel("randn", 5_000)];
        (spans, collected)
    }

    #[test]
    fn a_pass_is_mapped_through_the_warmup_by_region_name() {
        let (spans, collected) = warmup();
        let map = KernelMap::of_warmup(&spans, &collected, (0, 1_000)).expect("eager kernels only");
        let got = map
            .collected_for(&[span("mul", 70), span("add", 80)])
            .expect("same regions");
        assert_eq!(got.by_region[&70][0].name, "mul_k");
        assert_eq!(got.by_region[&80].len(), 2);
        // The kernel outside the warm-up's window is not the run's.
        assert_eq!(got.outside.len(), 1);
        assert_eq!(mapped_kernels(&got, map.window(), false), 4);
    }

    #[test]
    fn other_regions_or_graphs_keep_two_passes() {
        let (spans, mut collected) = warmup();
        let map = KernelMap::of_warmup(&spans, &collected, (0, 1_000)).unwrap();
        assert!(map.collected_for(&[span("add", 1), span("mul", 2)]).is_none());
        assert!(map.collected_for(&[span("mul", 1)]).is_none());
        collected.by_region.get_mut(&8).unwrap()[0].graph = true;
        assert!(KernelMap::of_warmup(&spans, &collected, (0, 1_000)).is_none());
        assert!(KernelMap::of_warmup(&[], &Collected::default(), (0, 1)).is_none());
    }

    #[test]
    fn flush_kernels_count_only_when_the_pass_profiled_them() {
        let (spans, mut collected) = warmup();
        collected
            .outside
            .push(kernel(super::super::l2_flush::L2_FLUSH_KERNEL, 60));
        let map = KernelMap::of_warmup(&spans, &collected, (0, 1_000)).unwrap();
        let got = map.collected_for(&[span("mul", 1), span("add", 2)]).unwrap();
        assert_eq!(mapped_kernels(&got, map.window(), false), 4);
        assert_eq!(mapped_kernels(&got, map.window(), true), 5);
    }
}
