//! Where the counter work of this process spent host time: the cost of durations from the
//! counters ("auto") and of counter metrics, by phase, and the parts of every timing run (the
//! cache flush, the run conditions, the closure, the synchronisation, the records' flushes), for
//! the benchmarks that compare kprof's cost with its peers (`benches/`) and for the note of a
//! device check. Read with [`counter_cost`]; nothing here changes what is measured.

use std::sync::Mutex;
use std::time::Instant;

/// Host time of the counter work of this process so far, by phase (seconds, summed over every
/// benchmark since the process started).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CounterCost {
    /// Validating metric sets on the host (`plan`), CUPTI's profiler initialisation and the chip
    /// name included the first time.
    pub plan_s: f64,
    /// Part of `plan_s`: building the chip's metrics catalog with the host API (the rest is
    /// CUPTI's profiler initialisation, the chip name and checking the names).
    pub plan_catalog_s: f64,
    /// Range Profiler sessions opened.
    pub sessions: u64,
    /// Opening them: the configuration (host object, config image, pass count).
    pub session_config_s: f64,
    /// Opening them: the rest (profiler initialisation, counter availability,
    /// `cuptiRangeProfilerEnable`).
    pub session_enable_s: f64,
    /// Collections (one per counter pass of a recorded run, more after an image overflow).
    pub collections: u64,
    /// Their counter-data images and `cuptiRangeProfilerSetConfig`.
    pub collect_setup_s: f64,
    /// Their passes: `Start`, the benchmark closure, `Stop`.
    pub collect_passes_s: f64,
    /// Part of `collect_passes_s`: the `cuptiRangeProfilerStart` calls.
    pub collect_start_s: f64,
    /// Part of `collect_passes_s`: the `cuptiRangeProfilerStop` calls.
    pub collect_stop_s: f64,
    /// `cuptiRangeProfilerDecodeData`.
    pub collect_decode_s: f64,
    /// Evaluating the ranges' metrics with the host API.
    pub collect_evaluate_s: f64,
    /// Counter passes of recorded runs, and their wall time in the run loop (the L2 flush, the
    /// collection, the kernel records switched off and on around it).
    pub counter_runs: u64,
    /// Wall time of those counter passes.
    pub counter_run_s: f64,
    /// Part of it spent synchronising and switching the kernel records off and on.
    pub records_switch_s: f64,
    /// Re-runs of the closure after a counter pass with a warm cache.
    pub rewarm_s: f64,
    /// Idle GPU time the run loop waited after long GPU work, every pass included, not only
    /// the counters' (`runner/gpu_rest.rs`: the power cap).
    pub gpu_rest_s: f64,
    /// Timing runs (warm-ups included; not the counter passes of one-pass runs).
    pub timing_runs: u64,
    /// Their cold-cache flushes before the closure (`cache_control="all"`).
    pub run_l2_flush_s: f64,
    /// Their run conditions: the thermal guard, NVML's readings before and after, the check of
    /// the power and thermal limits.
    pub run_conditions_s: f64,
    /// The closure itself (the user's work, kprof's region calls and launch callbacks in it).
    pub run_closure_s: f64,
    /// The synchronisation after the closure.
    pub run_sync_s: f64,
    /// Flushes of the activity records (one per batch of runs) and their time.
    pub records_flushes: u64,
    /// Their time: CUPTI's flush and the records' attribution to regions.
    pub records_flush_s: f64,
}

impl CounterCost {
    /// Every field as `(name, value)`, in declaration order (counts as floats): what the Python
    /// door returns as a dict.
    pub fn fields(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("plan_s", self.plan_s),
            ("plan_catalog_s", self.plan_catalog_s),
            ("sessions", self.sessions as f64),
            ("session_config_s", self.session_config_s),
            ("session_enable_s", self.session_enable_s),
            ("collections", self.collections as f64),
            ("collect_setup_s", self.collect_setup_s),
            ("collect_passes_s", self.collect_passes_s),
            ("collect_start_s", self.collect_start_s),
            ("collect_stop_s", self.collect_stop_s),
            ("collect_decode_s", self.collect_decode_s),
            ("collect_evaluate_s", self.collect_evaluate_s),
            ("counter_runs", self.counter_runs as f64),
            ("counter_run_s", self.counter_run_s),
            ("records_switch_s", self.records_switch_s),
            ("rewarm_s", self.rewarm_s),
            ("gpu_rest_s", self.gpu_rest_s),
            ("timing_runs", self.timing_runs as f64),
            ("run_l2_flush_s", self.run_l2_flush_s),
            ("run_conditions_s", self.run_conditions_s),
            ("run_closure_s", self.run_closure_s),
            ("run_sync_s", self.run_sync_s),
            ("records_flushes", self.records_flushes as f64),
            ("records_flush_s", self.records_flush_s),
        ]
    }
}

static COST: Mutex<CounterCost> = Mutex::new(CounterCost {
    plan_s: 0.0,
    plan_catalog_s: 0.0,
    sessions: 0,
    session_config_s: 0.0,
    session_enable_s: 0.0,
    collections: 0,
    collect_setup_s: 0.0,
    collect_passes_s: 0.0,
    collect_start_s: 0.0,
    collect_stop_s: 0.0,
    collect_decode_s: 0.0,
    collect_evaluate_s: 0.0,
    counter_runs: 0,
    counter_run_s: 0.0,
    records_switch_s: 0.0,
    rewarm_s: 0.0,
    gpu_rest_s: 0.0,
    timing_runs: 0,
    run_l2_flush_s: 0.0,
    run_conditions_s: 0.0,
    run_closure_s: 0.0,
    run_sync_s: 0.0,
    records_flushes: 0,
    records_flush_s: 0.0,
});

/// The counter work of this process so far (a copy).
pub fn counter_cost() -> CounterCost {
    CounterCost {
        gpu_rest_s: super::gpu_rest::rested_s(),
        ..*COST.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Adds to the process's counter cost.
pub(super) fn add(f: impl FnOnce(&mut CounterCost)) {
    f(&mut COST.lock().unwrap_or_else(|p| p.into_inner()));
}

/// Seconds since `t0`.
pub(super) fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_every_field_once() {
        let c = CounterCost {
            sessions: 2,
            collections: 3,
            counter_runs: 4,
            rewarm_s: 0.5,
            ..Default::default()
        };
        let f = c.fields();
        let mut names: Vec<&str> = f.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), f.len());
        // Every field of the struct is listed: 24 today (a new field must be added to fields()).
        assert_eq!(f.len(), 24);
        let get = |k: &str| f.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!(
            (
                get("sessions"),
                get("collections"),
                get("counter_runs"),
                get("rewarm_s")
            ),
            (2.0, 3.0, 4.0, 0.5)
        );
    }
}
