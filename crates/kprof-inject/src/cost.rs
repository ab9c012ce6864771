//! Where one process's time went, for the time split of `kprof run` (`--verbose`,
//! `time-split.json`): the [`Timeline`] every status file carries (wall-clock instants, the kernel
//! records' count and GPU time, each annotation's mean record duration), which a counter launch
//! completes with its host times ([`crate::counters::CounterStatus`]). In a counter launch the
//! records' means are the kernels under kernel replay, which `kprof run` sets against the timing
//! launch's durations.

use std::collections::{HashMap, HashSet};

use kprof::cupti::records::KernelRecord;
use kprof::run_status::{RegionMean, Timeline};
use kprof_core::{RawResults, DEFAULT_METRIC};

use crate::counters::kernel_key;

/// Record counts and GPU times of `kernels` (before any deduplication):
/// `(records, distinct kernels, GPU ns of all records, GPU ns of the first record of each)`.
pub fn kernel_time(kernels: &[KernelRecord]) -> (usize, usize, u64, u64) {
    let mut seen = HashSet::new();
    let (mut all, mut first) = (0u64, 0u64);
    for k in kernels {
        all += k.duration_ns();
        if seen.insert(kernel_key(k)) {
            first += k.duration_ns();
        }
    }
    (kernels.len(), seen.len(), all, first)
}

/// Fills the kernel counts and times of `t` from the records, before any deduplication.
pub fn set_kernels(t: &mut Timeline, kernels: &[KernelRecord]) {
    let (records, distinct, all, first) = kernel_time(kernels);
    t.kernel_records = records;
    t.kernels = distinct;
    t.records_gpu_ns = all;
    t.kernels_gpu_ns = first;
}

/// The mean `gpu__time_duration.sum` of every annotation of a timing table, in the order the
/// annotations first appear.
pub fn region_means(raw: &RawResults) -> Vec<RegionMean> {
    let mut order: Vec<String> = Vec::new();
    let mut sums: HashMap<String, (usize, f64)> = HashMap::new();
    for s in &raw.samples {
        let key = &raw.series_of(s).key;
        if key.metric != DEFAULT_METRIC || !s.value.is_finite() {
            continue;
        }
        let e = sums.entry(key.annotation.clone()).or_insert_with(|| {
            order.push(key.annotation.clone());
            (0, 0.0)
        });
        e.0 += 1;
        e.1 += s.value;
    }
    order
        .into_iter()
        .map(|a| {
            let (runs, sum) = sums[&a];
            RegionMean {
                annotation: a,
                runs,
                mean_ns: sum / runs as f64,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{build_raw, Grouping, SampleContext};
    use crate::test_support::{fixture, kernel};

    #[test]
    fn kernel_time_counts_replayed_records_once_as_kernels() {
        // Kernel 2 reported three times (kernel replay), with different durations per pass.
        let ks = vec![
            kernel(1, "a", 0, 10),
            kernel(2, "b", 100, 20),
            kernel(2, "b", 200, 25),
            kernel(2, "b", 300, 30),
        ];
        assert_eq!(kernel_time(&ks), (4, 2, 85, 30));
        let mut t = Timeline::default();
        set_kernels(&mut t, &ks);
        assert_eq!(
            (t.kernel_records, t.kernels, t.records_gpu_ns, t.kernels_gpu_ns),
            (4, 2, 85, 30)
        );
        assert_eq!(kernel_time(&[]), (0, 0, 0, 0));
    }

    #[test]
    fn region_means_per_annotation_in_first_seen_order() {
        let (ranges, batch) = fixture();
        let (raw, _) = build_raw(&ranges, &batch, &Grouping::default(), &SampleContext::default());
        let means = region_means(&raw);
        let get = |a: &str| means.iter().find(|m| m.annotation == a).cloned().unwrap();
        // step: (50 + 10) and (60 + 11); step/mm: 50 and 60; the copy kernel outside: 7.
        assert_eq!((get("step").runs, get("step").mean_ns), (2, 65.5));
        assert_eq!((get("step/mm").runs, get("step/mm").mean_ns), (2, 55.0));
        assert_eq!((get("copy").runs, get("copy").mean_ns), (1, 7.0));
        assert_eq!(means.len(), 3);
        assert!(region_means(&RawResults::new()).is_empty());
    }
}
