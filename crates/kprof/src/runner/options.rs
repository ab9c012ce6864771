//! The options of a bench call and of the run loop: [`CacheControl`], [`ClockControl`],
//! [`RunOrder`], [`DurationSource`] (their enums in `choices`), [`BenchOptions`] (defaults and validation) and
//! [`FlushPolicy`].

use std::path::PathBuf;
use std::time::Duration;

use kprof_core::policy::StoppingPolicy;
use kprof_core::transforms::Reducer;

use super::invalid_option;
use super::l2_flush::FlushSpec;
use super::progress::ProgressHook;
use crate::choices::{L2Flush, ReplayMode};
use crate::conditions::runtime::{Collectors, ThermalOptions};
use crate::error::EngineError;
use crate::overrides::{self, Lookup, COUNTER_PASS_RECORDS_ENV, L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV, ONE_PASS_ENV};

pub use crate::choices::{CacheControl, ClockControl, DurationSource, RunOrder};

/// The `DurationSource` column's value for a region whose duration adds the counters' durations
/// of its eager kernels and the records' spans of its CUDA graph launches (the Range Profiler
/// does not profile graph launches). A region of graph launches only says `records`.
pub const COUNTERS_AND_RECORDS: &str = SampleSource::CountersAndRecords.as_str();

/// Where a duration row's value came from: the `DurationSource` column of the raw results (the
/// resolved [`DurationSource`] of a bench call, or its backend's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleSource {
    /// CUPTI's kernel or graph records.
    Records,
    /// The Range Profiler's `gpu__time_duration`.
    Counters,
    /// The counters for eager kernels, the records' spans for graph launches.
    CountersAndRecords,
    /// Two CUDA events around the region.
    CudaEvents,
}

impl SampleSource {
    /// The column's text.
    pub const fn as_str(self) -> &'static str {
        match self {
            SampleSource::Records => "records",
            SampleSource::Counters => "counters",
            SampleSource::CountersAndRecords => "counters+records",
            SampleSource::CudaEvents => "cuda-events",
        }
    }
}

/// Options of one [`Profiler::bench`](super::Profiler::bench) call.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BenchOptions {
    /// Recorded runs per configuration (default 10). With a [`StoppingPolicy`] its `max_runs`
    /// applies instead.
    pub runs: u32,
    /// Warm-up runs per configuration, not recorded (default 1).
    pub warmup: u32,
    /// L2 state at the start of each run (default cold, [`CacheControl::All`]).
    pub cache: CacheControl,
    /// With a cold cache, how the L2 is emptied (default [`L2Flush::Read`]; see
    /// `runner/l2_flush.rs`). `KPROF_L2_FLUSH`, when set, overrides it.
    pub l2_flush: L2Flush,
    /// The flush buffer's size in bytes, rounded up to a MiB; at least the L2, else the bench
    /// call fails at its first flush (default `None`: twice the L2, 256 MiB when the device does
    /// not report its L2). `KPROF_L2_FLUSH_BYTES`, when set, overrides it.
    pub l2_flush_bytes: Option<u64>,
    /// Keep CUPTI's kernel activity records on during counter passes (default false: they cost
    /// each kernel about 0.9 us as the counters see it; see `runner/counter_pass.rs`).
    /// `KPROF_COUNTER_PASS_RECORDS` (`on`/`off`), when set, overrides it.
    pub counter_pass_records: bool,
    /// Recorded runs of eager kernels take one pass where one is enough (default true): with
    /// durations from the counters, a cold cache and application replay, a configuration whose
    /// warm-up launched no CUDA graph runs its closure once per recorded run, under the counters,
    /// its kernels mapped to regions through the warm-up's records (`runner/one_pass.rs`). False
    /// gives every recorded run its timing pass too. `KPROF_ONE_PASS` (`on`/`off`), when set,
    /// overrides it.
    pub one_pass: bool,
    /// Clock control (only [`ClockControl::None`] in this backend).
    pub clock: ClockControl,
    /// Order of (configuration, run) pairs (default [`RunOrder::Interleaved`]).
    pub order: RunOrder,
    /// Adaptive stopping, per configuration. The policy decides after each recorded run, before
    /// the configuration's next run; the loop flushes the activity buffers for it then, so in
    /// interleaved order it decides (and flushes) once per round.
    pub policy: Option<StoppingPolicy>,
    /// Kernels to drop before combining, by exact name (mangled or demangled).
    pub ignore_kernels: Vec<String>,
    /// How a region's kernels are combined (default [`Reducer::Sum`]).
    pub combine: Reducer,
    /// An error returned by the closure gives NaN samples for that run and the sweep goes on.
    pub ignore_failures: bool,
    /// Write the raw CSV `<prefix><benchmark>-raw.csv` after every finished configuration (at
    /// the activity flush that records its last run, see [`FlushPolicy`]), at the end, and
    /// before an error is returned. A prefix that is a directory or ends in `/` puts the file
    /// inside it.
    pub output_prefix: Option<PathBuf>,
    /// Metrics to record: `gpu__time_duration.sum` (always recorded) and any hardware counter
    /// metrics (ncu names, collected in a counter pass of every recorded run; see
    /// `runner/counter_pass.rs`).
    pub metrics: Vec<String>,
    /// How counter metrics are collected: [`ReplayMode::Application`] (default: one value per
    /// kernel, the closure re-run once per pass with the L2 flushed as in the timing pass, so every
    /// pass starts from the cache state a plain run gives it, as Nsight Compute's application
    /// replay does; measured on the H200 within 0.3 point of ncu on the seed's DRAM throughput),
    /// [`ReplayMode::Kernel`] (one value per kernel, combined per region, the closure run once and
    /// each kernel replayed by CUPTI, which cannot flush the L2 between its passes: DRAM rates of
    /// data larger than the L2 read about 2 points above ncu) or
    /// [`ReplayMode::User`] (one range per region, the closure re-run once per pass; rates cover
    /// the range's whole elapsed time). See `runner/counter_pass.rs`.
    pub replay_mode: ReplayMode,
    /// Where the durations of `gpu__time_duration.sum` come from (default
    /// [`DurationSource::Auto`]; see `docs/timing.md`).
    pub duration: DurationSource,
    /// Thermal guard before every run (default: auto, as nsight-python).
    pub thermal: ThermalOptions,
    /// Sample NVML conditions (clocks, temperature, power, energy, throttling) around every run
    /// as extra columns (default true; NaN without NVML).
    pub conditions: bool,
    /// User info collectors (values become extra columns).
    pub collectors: Collectors,
    /// Called after every recorded run with the runs done and the total the stopping policy now
    /// expects (see [`Progress`](super::Progress)); `None`: no progress reports.
    pub progress: Option<ProgressHook>,
    /// Stops the bench call when set or when its poll says so (checked between runs, between a
    /// run's passes and in slices of the GPU's rests and the thermal guard's waits): it returns
    /// [`EngineError::Cancelled`] with the finished runs kept (see [`crate::cancel`]). `None`:
    /// runs to the end.
    pub cancel: Option<crate::cancel::Cancel>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            runs: 10,
            warmup: 1,
            cache: CacheControl::All,
            l2_flush: L2Flush::Read,
            l2_flush_bytes: None,
            counter_pass_records: false,
            one_pass: true,
            clock: ClockControl::None,
            order: RunOrder::Interleaved,
            policy: None,
            ignore_kernels: Vec::new(),
            combine: Reducer::Sum,
            ignore_failures: false,
            output_prefix: None,
            metrics: Vec::new(),
            replay_mode: ReplayMode::Application,
            duration: DurationSource::Auto,
            thermal: ThermalOptions::default(),
            conditions: true,
            collectors: Collectors::default(),
            progress: None,
            cancel: None,
        }
    }
}

impl BenchOptions {
    /// Checks the options for this backend. Errors name the option and what to do instead.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.clock == ClockControl::Base {
            return Err(EngineError::Unsupported(
                "clock control `base` (locking the GPU clocks to their base values) is not \
                 available in the CUPTI activity backend: it needs the ncu backend (Nsight \
                 Compute's --clock-control base). Use ClockControl::None here, or profile with \
                 the ncu backend"
                    .to_string(),
            ));
        }
        if self.duration == DurationSource::Counters && self.replay_mode == ReplayMode::User {
            return Err(invalid_option(
                "duration source \"counters\" needs kernel or application replay: in range replay the counter \
                 gpu__time_duration.sum of a range runs from its push to its pop, idle time and launch latency \
                 included, not the kernels' durations; use replay_mode \"kernel\" or \"application\", or \
                 duration_source \"auto\" or \"records\" (kernel records) with range replay",
            ));
        }
        // Counter metric names are checked on the host by Profiler::bench (they need the chip).
        for (i, m) in self.metrics.iter().enumerate() {
            if m.trim().is_empty() {
                return Err(invalid_option("metrics: empty metric name"));
            }
            if self.metrics[..i].contains(m) {
                return Err(invalid_option(&format!("metrics lists {m:?} twice")));
            }
        }
        match &self.policy {
            None => {
                if self.runs == 0 {
                    return Err(invalid_option("runs must be at least 1"));
                }
            }
            Some(p) => p.validate().map_err(|e| invalid_option(&format!("policy: {e}")))?,
        }
        self.thermal.validate()?;
        Ok(())
    }

    /// The duration source before the counters are tried: [`DurationSource::Auto`] is the
    /// records in range replay (a range's counter `gpu__time_duration` includes its idle time),
    /// else the field as given.
    pub(crate) fn duration_before_counters(&self) -> DurationSource {
        match (self.duration, self.replay_mode) {
            (DurationSource::Auto, ReplayMode::User) => DurationSource::Records,
            (d, _) => d,
        }
    }

    /// These options with the environment's overrides applied (`KPROF_L2_FLUSH`,
    /// `KPROF_L2_FLUSH_BYTES`, `KPROF_COUNTER_PASS_RECORDS`; see [`crate::overrides`]): a variable
    /// set to a non-empty value wins over its field; an invalid value is an error naming it.
    /// [`Profiler::bench`](super::Profiler::bench) calls this once per bench call.
    pub fn with_env_overrides(&self) -> Result<BenchOptions, EngineError> {
        self.with_overrides_from(&overrides::process_env)
    }

    pub(crate) fn with_overrides_from(&self, env: Lookup<'_>) -> Result<BenchOptions, EngineError> {
        let mut o = self.clone();
        if let Some(m) = overrides::choice(env, L2_FLUSH_ENV)? {
            o.l2_flush = m;
        }
        if let Some(b) = overrides::bytes(env, L2_FLUSH_BYTES_ENV)? {
            o.l2_flush_bytes = Some(b);
        }
        if let Some(on) = overrides::switch(env, COUNTER_PASS_RECORDS_ENV, "counter_pass_records")? {
            o.counter_pass_records = on;
        }
        if let Some(on) = overrides::switch(env, ONE_PASS_ENV, "one_pass")? {
            o.one_pass = on;
        }
        super::gpu_rest::power::check_env(env)?;
        Ok(o)
    }

    /// How the cold-cache flush of these options empties the L2.
    pub(crate) fn flush_spec(&self) -> FlushSpec {
        FlushSpec {
            method: self.l2_flush,
            bytes: self.l2_flush_bytes,
        }
    }

    /// The most recorded runs any configuration can get.
    pub fn max_runs(&self) -> u32 {
        match &self.policy {
            Some(p) => p.max_runs,
            None => self.runs,
        }
    }
}

/// When the run loop flushes the CUPTI activity buffers and attributes the kernels of the runs
/// done since the last flush.
///
/// A forced CUPTI flush costs about a millisecond, so the loop does not flush after every run:
/// runs are synchronised one by one (they never overlap) and their region spans kept; kernels are
/// attributed by key afterwards (the external-correlation id encodes call, config, run and
/// region; kernels launched from other threads fall inside the recorded spans of their run), so
/// one flush serves many runs. Activity buffers that fill up between flushes are handed back by
/// CUPTI at any time and gathered until the next flush; nothing is lost in between.
///
/// The loop flushes when `max_runs` runs (warm-ups included) are waiting, when the first waiting
/// run started `max_time` ago or more, when a closure error ends the sweep, at the end of the
/// sweep, and, with a [`StoppingPolicy`], before a configuration with a waiting recorded run gets
/// its next run (so the policy decides exactly as with a flush after every run). The raw CSV of
/// [`BenchOptions::output_prefix`] is written at the flush that records a configuration's last
/// run. `max_runs: 1` flushes after every run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushPolicy {
    /// Flush once this many runs are waiting (default 256; 0 counts as 1).
    pub max_runs: u32,
    /// Flush once the oldest waiting run started this long ago (default 50 ms).
    pub max_time: Duration,
}

impl Default for FlushPolicy {
    fn default() -> Self {
        FlushPolicy {
            max_runs: 256,
            max_time: Duration::from_millis(50),
        }
    }
}

impl FlushPolicy {
    /// Flush after every run (what the loop did before batching; for comparisons).
    pub fn every_run() -> Self {
        FlushPolicy {
            max_runs: 1,
            max_time: Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurement_options_default_as_before_and_a_set_variable_overrides_the_field() {
        let d = BenchOptions::default();
        assert_eq!(
            (d.l2_flush, d.l2_flush_bytes, d.counter_pass_records),
            (L2Flush::Read, None, false)
        );
        let opts = BenchOptions {
            l2_flush: L2Flush::Discard,
            l2_flush_bytes: Some(1 << 30),
            counter_pass_records: true,
            ..BenchOptions::default()
        };
        // Unset or empty variables: the fields.
        let none = |_: &str| None;
        let got = opts.with_overrides_from(&none).unwrap();
        assert_eq!(
            (got.l2_flush, got.l2_flush_bytes, got.counter_pass_records),
            (L2Flush::Discard, Some(1 << 30), true)
        );
        let empty = |_: &str| Some(" ".to_string());
        assert_eq!(opts.with_overrides_from(&empty).unwrap().l2_flush, L2Flush::Discard);
        // Set variables win over the fields.
        let env = |k: &str| match k {
            "KPROF_L2_FLUSH" => Some("write".to_string()),
            "KPROF_L2_FLUSH_BYTES" => Some("268435456".to_string()),
            "KPROF_COUNTER_PASS_RECORDS" => Some("off".to_string()),
            _ => None,
        };
        let got = opts.with_overrides_from(&env).unwrap();
        assert_eq!(
            (got.l2_flush, got.l2_flush_bytes, got.counter_pass_records),
            (L2Flush::Write, Some(256 << 20), false)
        );
        assert_eq!(
            got.flush_spec(),
            FlushSpec {
                method: L2Flush::Write,
                bytes: Some(256 << 20)
            }
        );
        // A bad value is an error naming the variable and the accepted values.
        let bad = |k: &str| (k == "KPROF_L2_FLUSH").then(|| "memset".to_string());
        let msg = opts.with_overrides_from(&bad).unwrap_err().to_string();
        assert!(
            msg.contains("KPROF_L2_FLUSH=\"memset\"") && msg.contains("'read', 'discard', 'write'"),
            "{msg}"
        );
        let bad = |k: &str| (k == "KPROF_COUNTER_PASS_RECORDS").then(|| "yes".to_string());
        let msg = opts.with_overrides_from(&bad).unwrap_err().to_string();
        assert!(
            msg.contains("KPROF_COUNTER_PASS_RECORDS=\"yes\"") && msg.contains("'on', 'off'"),
            "{msg}"
        );
    }

    #[test]
    fn one_pass_is_on_by_default_and_its_variable_wins() {
        assert!(BenchOptions::default().one_pass);
        let opts = BenchOptions::default();
        let off = |k: &str| (k == "KPROF_ONE_PASS").then(|| "off".to_string());
        assert!(!opts.with_overrides_from(&off).unwrap().one_pass);
        let bad = |k: &str| (k == "KPROF_ONE_PASS").then(|| "twice".to_string());
        let msg = opts.with_overrides_from(&bad).unwrap_err().to_string();
        assert!(
            msg.contains("KPROF_ONE_PASS=\"twice\"") && msg.contains("'on', 'off'"),
            "{msg}"
        );
    }
}
