//! The run loop and the Rust API: [`Profiler`], [`BenchOptions`], [`Run`] and [`RegionGuard`].
//!
//! A benchmark is a closure over a configuration. [`Profiler::bench`] calls it once per
//! (configuration, run), in the order chosen by [`RunOrder`], with warm-up runs first. Inside the
//! closure the user opens regions ([`Run::region`] or [`Run::annotate`]); every kernel launched
//! while a region is open is attributed to it by the engine (external correlation on the opening
//! thread, CPU launch timestamps for other threads). After every run the device is synchronised
//! (runs never overlap). Once per batch of runs ([`FlushPolicy`]: by default every 50 ms of runs,
//! at the end, and before a configuration under a [`StoppingPolicy`] gets its next run) the CUPTI
//! activity buffers are flushed, kernels are attributed to the regions of every waiting run by
//! key, ignored kernels are dropped, and each region's kernels are combined with the reducer
//! into one [`kprof_core::model::SampleRecord`] of metric `gpu__time_duration.sum` (ns).
//!
//! Nested regions are inclusive: an outer region's value includes the kernels of its inner
//! regions (the attribution rule lives in `attribution.rs`).
//!
//! The GPU-facing part is a small private `Backend` trait; the real one wraps the engine
//! modules (loader, driver, CUPTI session, attribution, NVTX) and a mock one drives the unit tests
//! on machines without a GPU.
//!
//! This file keeps the `Backend` interface and the small helpers the submodules share. The
//! [`Profiler`] schedules, the passes measure:
//! - `runner/profiler.rs`: the [`Profiler`] and its loop (bench, sweep, flush), with the call's
//!   state (`profiler/sweep.rs`), the recording of a flushed run (`profiler/record.rs`) and the
//!   once-per-call batch warnings (`profiler/batch_warnings.rs`);
//! - `runner/pass.rs`: the `MeasurementPass` trait and the context a pass gets; the timing pass
//!   (`pass/timing.rs`), the counter pass (`pass/counters.rs`), a run in one pass
//!   (`pass/one_pass.rs`);
//! - `runner/sink.rs`: the sample sink that recording pushes samples through;
//! - `runner/counter_pass.rs`: counter plans, the Range Profiler backend, recording counter
//!   values; `runner/one_pass.rs`: the map of kernels a run in one pass is mapped through;
//!   `runner/counter_cost.rs`: what counters and timing runs cost;
//! - backends: `runner/gpu.rs` (CUPTI), `runner/events.rs` with `runner/stream_hold.rs` (CUDA
//!   events), `runner/ncu_child.rs` (an ncu child), `runner/graph_start.rs` (the GPU's start of
//!   a graph);
//! - `runner/options.rs` (option types, defaults, validation), `runner/schedule.rs` (the order
//!   of runs), `runner/run.rs` (a run and its regions), `runner/l2_flush.rs` (the cold-cache
//!   flush), `runner/gpu_rest.rs` (the GPU's rest), `runner/timeline.rs` (the timeline),
//!   `runner/progress.rs` (the progress hook).
//!
//! Unit tests: `runner/tests.rs` and `runner/tests/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kprof_core::model::{Config, RawResults};

use crate::conditions::FingerprintInputs;
use crate::cupti::kernel_flush::PassLaunches;
use crate::error::EngineError;

/// The parts of the mock backends of the unit tests (`tests.rs`, `counter_pass/tests.rs`) that
/// are the same: a clock in `self.clock` (an `AtomicU64`) that ticks once per read, one thread,
/// and region keys packed as the engine packs them.
#[cfg(test)]
macro_rules! mock_clock_thread_and_keys {
    () => {
        fn timestamp_ns(&self) -> u64 {
            self.clock.fetch_add(1, Ordering::SeqCst)
        }
        fn thread_id(&self) -> u64 {
            1
        }
        fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
            Ok(call << 52 | config << 32 | run << 12 | region)
        }
    };
}

mod counter_cost;
mod counter_pass;
mod events;
mod gpu;
pub(crate) mod gpu_rest;
pub mod graph_start;
mod l2_flush;
pub(crate) mod ncu_child;
mod one_pass;
mod options;
mod pass;
mod profiler;
mod progress;
mod run;
mod schedule;
mod sink;
mod stream_hold;
mod timeline;

pub use crate::counters::ReplayMode;
pub use crate::overrides::{L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV};
pub use counter_cost::{counter_cost, CounterCost};
pub use counter_pass::{is_counter_metric, pause_counters, release_counters, CounterPlan};
pub use gpu::last_cupti_detach;
pub use kprof_core::policy::{Decision, StopReason, StoppingPolicy};
pub use kprof_core::transforms::Reducer;
pub(crate) use l2_flush::FlushSpec;

/// What a counter pass in application replay does before each kernel it launches
/// ([`Backend::before_each_kernel`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BeforeEachKernel {
    /// Empty the caches as the spec says (a cold cache: Nsight Compute's `--cache-control all`
    /// flushes before every kernel it profiles). The flush ends with a synchronization, after
    /// which the GPU rests if it earned it.
    Flush(FlushSpec),
    /// Wait for the previous kernel, then rest the GPU if it earned it; nothing is flushed (a
    /// warm cache in a run long enough to reach the power cap back to back: Nsight Compute idles
    /// between the kernels it profiles).
    Rest,
}
pub use options::{
    BenchOptions, CacheControl, ClockControl, DurationSource, FlushPolicy, RunOrder, SampleSource, COUNTERS_AND_RECORDS,
};
pub use profiler::Profiler;
pub use progress::{Progress, ProgressHook};
pub use run::{RegionGuard, Run};
pub(crate) use schedule::{Scheduler, Step};

/// The metric of [`Profiler::with_cuda_events`]: GPU time between two CUDA events around a
/// region, in ns, the stream held while the host queues the region (so the host's launch gaps do
/// not count). It includes the GPU's own gaps between the region's kernels, so it is the
/// region's in-stream time, not the sum of kernel durations that `gpu__time_duration.sum` is.
pub const CUDA_EVENTS_METRIC: &str = "cuda_event_elapsed.sum";

/// The unit of [`DEFAULT_METRIC`](kprof_core::model::DEFAULT_METRIC).
pub const DEFAULT_UNIT: &str = "ns";

/// Env var: `1` stops CUPTI's kernel and launch records between benchmarks (launches outside a
/// benchmark then cost what they cost without kprof); opt-in until checked on a GPU.
pub const ENV_PAUSE_BETWEEN_BENCHMARKS: &str = "KPROF_PAUSE_BETWEEN_BENCHMARKS";

// ------------------------------------------------------------------------------------------------
// Combining, stopping, CSV (small private functions; MERGE: replace with kprof-core's)
// ------------------------------------------------------------------------------------------------

/// Whether a kernel matches an entry of [`BenchOptions::ignore_kernels`]: the exact (mangled)
/// name, the demangled name when known, or any spelling [`kprof_core::kernels::matches`] accepts
/// (demangled with or without parameters, bare function name).
fn kernel_matches(k: &KernelRun, ignore: &str) -> bool {
    k.demangled.as_deref() == Some(ignore) || kprof_core::kernels::matches(&k.name, ignore)
}

/// The `(kernel name, duration in ns)` of a region's kernels from the records, without the
/// kernels [`BenchOptions::ignore_kernels`] names, in launch order.
fn record_durations<'a>(kernels: &'a [KernelRun], opts: &BenchOptions) -> Vec<(&'a str, f64)> {
    kernels
        .iter()
        .filter(|k| !opts.ignore_kernels.iter().any(|ig| kernel_matches(k, ig)))
        .map(|k| (k.name.as_str(), k.end_ns.saturating_sub(k.start_ns) as f64))
        .collect()
}

/// The raw CSV path for a benchmark under an output prefix.
pub fn raw_csv_path(prefix: &Path, benchmark: &str) -> PathBuf {
    let s = prefix.to_string_lossy();
    let file = format!("{benchmark}-raw.csv");
    if prefix.is_dir() || s.ends_with('/') || s.is_empty() {
        prefix.join(file)
    } else {
        PathBuf::from(format!("{s}{file}"))
    }
}

/// Writes the raw results atomically (a sweep that dies later keeps what it measured).
fn write_raw(path: &Path, raw: &RawResults) -> Result<(), EngineError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
    }
    kprof_core::io::write_raw_csv(path, raw).map_err(EngineError::Results)
}

fn invalid_option(msg: &str) -> EngineError {
    EngineError::InvalidOption(msg.to_string())
}

fn closure_error(benchmark: &str, config: &Config, run: u32, e: &(dyn std::error::Error + Send + Sync)) -> EngineError {
    EngineError::Benchmark {
        benchmark: benchmark.to_string(),
        config: config.to_string(),
        run,
        message: e.to_string(),
    }
}

fn model_error(e: kprof_core::model::ModelError) -> EngineError {
    EngineError::Model(e)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

// ------------------------------------------------------------------------------------------------
// Backend: what the run loop needs from the GPU side
// ------------------------------------------------------------------------------------------------

/// One kernel attributed to a region.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KernelRun {
    pub name: String,
    /// A whole CUDA graph launch (its GPU span), not one kernel: the Range Profiler does not
    /// profile graph launches, so counter passes skip these.
    pub graph: bool,
    /// Demangled name, when the backend has one.
    pub demangled: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The CUDA device and stream it ran on (0 where the backend does not say).
    pub device: u32,
    pub stream: u32,
}

impl KernelRun {
    /// A kernel record without timestamps (a CUDA-graph node under serial kernel tracing).
    pub fn is_untimed(&self) -> bool {
        self.start_ns == 0 && self.end_ns == 0
    }
}

/// One region instance of one run, as handed to attribution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    pub key: u64,
    pub parent: Option<u64>,
    pub thread_id: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// [`Backend::correlation_mark`] when the region opened and closed
    /// ([`crate::attribution::RegionSpan::start_correlation_id`] says what 0 means).
    pub start_correlation_id: u32,
    pub end_correlation_id: u32,
}

/// Kernels of one run, by region key.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub by_region: HashMap<u64, Vec<KernelRun>>,
    pub unattributed: usize,
    /// The unattributed kernels themselves (kernel replay orders a run's kernels with them).
    pub outside: Vec<KernelRun>,
    /// Graph launches so far (this session) of executables instantiated before it: timed from
    /// their node records, not graph records (see [`crate::cupti::graph_guard`]).
    pub graph_launches_from_nodes: u64,
    /// Kernels attributed by launch order while regions of several threads were open
    /// ([`crate::attribution::Attribution::ambiguous`]).
    pub ambiguous: usize,
    /// Benchmark calls in which the CUDA-events backend stopped holding the stream
    /// ([`stream_hold`]): the watchdog released two of their regions' holds in a row (the regions
    /// wait for the GPU inside, or queue work for longer than [`stream_hold::HOLD_TIMEOUT`]).
    pub hold_dropped: usize,
}

/// The GPU side of the run loop. Implementations use interior mutability; region enter/exit are
/// called on the thread that opens the region.
pub(crate) trait Backend: Send + Sync {
    /// A timestamp on the clock of the activity records.
    fn timestamp_ns(&self) -> u64;
    /// The launch-order number of this instant (CUPTI's correlation id of a call made now;
    /// [`crate::attribution`] rule (O)): `None` for backends that attribute otherwise, `Some(0)`
    /// when the numbered call got no id.
    fn correlation_mark(&self) -> Option<u32> {
        None
    }
    /// The calling thread's id as the activity records report it.
    fn thread_id(&self) -> u64;
    /// Packs (call, config, run, region) into the 64-bit external correlation id.
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError>;
    /// Opens a region on the calling thread: NVTX push and external-id push.
    fn enter(&self, key: u64, name: &str) -> Result<(), EngineError>;
    /// Closes the innermost region on the calling thread.
    fn exit(&self) -> Result<(), EngineError>;
    /// Waits for all work on the device.
    fn synchronize(&self) -> Result<(), EngineError>;
    /// Evicts the L2 as `spec` says (goes through a buffer of at least twice its size, see
    /// [`l2_flush`]) and waits for it.
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError>;
    /// Turns the activity records of kernels off (`false`) or back on: counter passes run with
    /// them off (see [`counter_pass`]). Backends without such records do nothing.
    fn kernel_records(&self, _on: bool) -> Result<(), EngineError> {
        Ok(())
    }
    /// Whether [`Backend::before_each_kernel`] works here (else counter passes flush before
    /// every region instead, and rest only between passes).
    fn can_act_before_each_kernel(&self) -> bool {
        false
    }
    /// Starts doing `what` before every kernel launched: an L2 flush (counter passes with a cold
    /// cache, as Nsight Compute flushes before every kernel: [`crate::cupti::kernel_flush`]) or
    /// a wait for the previous kernel; either way the GPU then rests if its work earned it
    /// ([`gpu_rest`]).
    fn before_each_kernel(&self, _what: BeforeEachKernel) -> Result<(), EngineError> {
        Err(EngineError::Unsupported(
            "this backend cannot act before every kernel".to_string(),
        ))
    }
    /// Stops [`Backend::before_each_kernel`]: the launches since the start, in order.
    fn stop_before_each_kernel(&self) -> PassLaunches {
        PassLaunches::default()
    }
    /// Stops (`true`) or restarts tracing kernels between benchmarks; backends that trace
    /// nothing outside a benchmark do nothing. The CUPTI backend does it when
    /// [`ENV_PAUSE_BETWEEN_BENCHMARKS`] is `1`.
    fn set_idle(&self, _idle: bool) -> Result<(), EngineError> {
        Ok(())
    }
    /// Graph launches so far whose spans were merged from node records because their graph was
    /// instantiated before the session (0 for backends without such records).
    fn graph_launches_from_nodes(&self) -> u64 {
        0
    }
    /// Whether graph launches get their spans merged from node records (graph trace `nodes`,
    /// or graphs instantiated before the session), which a counter pass can corrupt (see
    /// [`counter_pass`]).
    fn graph_spans_from_nodes(&self) -> bool {
        false
    }
    /// CUDA graph launches this backend has seen in the process so far (0 for backends that do
    /// not see them): the run loop sizes a counter pass by the graph launches of its timing pass
    /// ([`counter_pass`]).
    fn graph_launches_seen(&self) -> u64 {
        0
    }
    /// Launches so far of CUDA graphs instantiated during the session but before the latest
    /// Range Profiler session was enabled (0 for backends without one): such graphs run faster
    /// than without a profiler, and a benchmark that replayed them says so.
    fn graph_launches_instantiated_before_counters(&self) -> u64 {
        0
    }
    /// How many kernels started inside `window` (the backend's clock, ns) of the runs not yet
    /// collected; `None` where the backend cannot tell before [`Backend::collect`].
    fn kernels_started_in(&self, _window: (u64, u64)) -> Option<usize> {
        None
    }
    /// The GPU's start overhead of a graph launch added to every span from a graph record, ns
    /// (`runner/graph_start.rs`): `None` before a graph record was seen, `Some(None)` when it
    /// could not be measured.
    fn graph_start_ns(&self) -> Option<Option<u64>> {
        None
    }
    /// Flushes the activity buffers (after [`Backend::synchronize`]) and attributes the kernels
    /// to the given spans: those of every run since the last flush (keys tell runs apart).
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError>;
    /// Hardware counters (CUPTI Range Profiler), when this backend has them.
    fn counters(&self) -> Option<&dyn counter_pass::CounterBackend> {
        None
    }
    /// What the backend knows about its device for the environment fingerprint.
    fn fingerprint_inputs(&self) -> FingerprintInputs {
        FingerprintInputs::default()
    }
}

#[cfg(test)]
mod tests;
