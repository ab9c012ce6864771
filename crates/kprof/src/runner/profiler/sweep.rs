//! The state of one bench call as the profiler's loop keeps it ([`Sweep`]): the schedule, the
//! runs waiting for the next flush ([`PendingRun`]), the raw results so far, and what the call
//! decided per configuration (stopping, one pass or two).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kprof_core::model::{Config, RawResults};

use super::super::run::SpanRec;
use super::super::{counter_pass, one_pass, raw_csv_path, BenchOptions, Collected, Scheduler, Span, Step};
use super::batch_warnings::Warned;
use crate::error::EngineError;

/// A run that is synchronised but whose kernels are not flushed and attributed yet.
pub(super) struct PendingRun {
    pub(super) step: Step,
    pub(super) spans: Vec<SpanRec>,
    pub(super) failure: Option<EngineError>,
    /// Wall time of the run (cache flush, closure, synchronisation).
    pub(super) wall: Duration,
    /// The run's counter pass, when counter metrics are asked for.
    pub(super) counters: Option<counter_pass::CounterRun>,
    /// The run's window on the activity clock (a warm-up's becomes its configuration's map).
    pub(super) window: (u64, u64),
    /// The run's kernels by region when it had no timing pass (one pass: `one_pass`).
    pub(super) own_kernels: Option<Collected>,
}

/// The state of one `Profiler::bench` call.
pub(super) struct Sweep<'a> {
    pub(super) name: &'a str,
    pub(super) configs: &'a [Config],
    pub(super) opts: &'a BenchOptions,
    pub(super) out_path: Option<PathBuf>,
    pub(super) raw: RawResults,
    pub(super) device_idx: u32,
    pub(super) sched: Scheduler,
    /// Region names seen so far, in order (for NaN rows of failed runs).
    pub(super) known_regions: Vec<String>,
    /// Per config: per-run policy values, and wall time spent.
    pub(super) policy_values: Vec<Vec<f64>>,
    pub(super) spent: Vec<Duration>,
    /// Per config: whether its finished results were written to the raw CSV.
    pub(super) written: Vec<bool>,
    /// Samples in the raw CSV as last written (the file is synced to disk on every write).
    pub(super) samples_on_disk: Option<usize>,
    /// Which of the once-per-call warnings about flushed batches were given.
    pub(super) warned: Warned,
    /// Runs waiting for the next flush, in run order, and their spans as handed to the backend.
    pub(super) pending: Vec<PendingRun>,
    pub(super) wire: Vec<Span>,
    /// Per config: recorded runs among `pending`.
    pub(super) pending_recorded: Vec<u32>,
    /// When the first waiting run started.
    pub(super) batch_start: Option<Instant>,
    /// Counter metrics of this call (validated plan), if any.
    pub(super) counters: Option<counter_pass::CounterState>,
    /// [`DurationSource::Auto`] still to be decided after the warm-up runs (see
    /// `Profiler::resolve_auto`).
    pub(super) auto_pending: bool,
    /// The backend's count of graph launches timed from node records (process-wide) when the
    /// call started: this call replayed such graphs when the count grew.
    pub(super) old_graph_launches_at_start: u64,
    /// The backend's count of all graph launches when the call started.
    pub(super) graph_launches_at_start: u64,
    /// Per config: the last warm-up run's kernels by region, through which its recorded runs
    /// take one pass (`one_pass`); `None` keeps two passes.
    pub(super) kernel_maps: Vec<Option<one_pass::KernelMap>>,
    /// Per config: a counter pass did not match its map, so its runs keep two passes.
    pub(super) two_passes: Vec<bool>,
    /// Per config: the map was given up once for a recorded run's own (its first calls launched
    /// other kernels than later ones): `Waiting` until that run's records are flushed.
    pub(super) map_refresh: Vec<MapRefresh>,
}

/// Whether a configuration's map of kernels was taken again from a recorded run's records after a
/// counter pass did not match the warm-up's (`Sweep::map_refresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MapRefresh {
    /// The map is the warm-up's.
    FromWarmup,
    /// A recorded run with a timing pass gives the map at its flush.
    Waiting,
    /// The map was taken again once; another mismatch keeps two passes for good.
    Done,
}

impl<'a> Sweep<'a> {
    /// The state of a bench call about to start: no counters, durations decided, graph counts
    /// at 0 (the caller sets what differs).
    pub(super) fn new(
        name: &'a str,
        configs: &'a [Config],
        opts: &'a BenchOptions,
        raw: RawResults,
        device_idx: u32,
    ) -> Self {
        let n = configs.len();
        Sweep {
            name,
            configs,
            opts,
            out_path: opts.output_prefix.as_deref().map(|p| raw_csv_path(p, name)),
            raw,
            device_idx,
            sched: Scheduler::new(n, opts.warmup, opts.max_runs(), opts.order),
            known_regions: Vec::new(),
            policy_values: vec![Vec::new(); n],
            spent: vec![Duration::ZERO; n],
            written: vec![false; n],
            samples_on_disk: None,
            warned: Warned::default(),
            pending: Vec::new(),
            wire: Vec::new(),
            pending_recorded: vec![0; n],
            batch_start: None,
            counters: None,
            auto_pending: false,
            old_graph_launches_at_start: 0,
            graph_launches_at_start: 0,
            kernel_maps: vec![None; n],
            two_passes: vec![false; n],
            map_refresh: vec![MapRefresh::FromWarmup; n],
        }
    }
}
