//! The engine's error type. Every message names the problem and what to do about it.

use std::path::PathBuf;

/// Errors from loading the GPU libraries, driving CUDA/CUPTI and attributing kernels.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A shared library could not be found or opened at any of the places searched, or lacks a
    /// function the engine needs (usually: too old). Its message lists every place tried and the fix.
    #[error(transparent)]
    Load(#[from] crate::sys::loader::LoadError),

    /// A CUDA driver API call returned an error.
    #[error("CUDA driver call {call} failed with {name} ({code}){}", hint_suffix(hint))]
    DriverCall {
        call: &'static str,
        code: i32,
        /// The CUDA error name from cuGetErrorName, e.g. "CUDA_ERROR_NO_DEVICE".
        name: String,
        hint: Option<String>,
    },

    /// A CUPTI call returned an error.
    #[error("CUPTI call {call} failed with code {code}: {message}{}", hint_suffix(hint))]
    CuptiCall {
        call: &'static str,
        code: u32,
        /// The text from cuptiGetResultString.
        message: String,
        hint: Option<String>,
    },

    /// Another CUPTI client already holds the (single) subscriber slot.
    #[error(
        "CUPTI is already in use in this process ({call} returned {message}): CUPTI {version} \
         allows one subscriber per process. It is usually held by torch.profiler (Kineto), \
         Nsight Systems (nsys), Nsight Compute (ncu), cuda-gdb / compute-sanitizer, or another \
         kprof session that is still open. Stop that tool or session, or use the CUDA-events \
         fallback (Rust: Profiler::with_cuda_events(); Python: backend=\"cuda-events\"), which \
         does not need CUPTI but gives one event-to-event duration per region instead of \
         per-kernel records"
    )]
    SubscriberTaken {
        call: &'static str,
        message: String,
        /// cuptiGetVersion's value, e.g. 130001.
        version: u32,
    },

    /// CUPTI dropped activity records: the durations of these runs are incomplete.
    #[error(
        "CUPTI dropped {count} activity record(s); the kernel durations of the runs since the last \
         flush are incomplete. Launch fewer kernels per run, or flush more often (flush() after \
         every run; in the run loop a smaller FlushPolicy, FlushPolicy::every_run() at most) \
         (buffers are {buffer_mib} MiB each)"
    )]
    DroppedRecords { count: u64, buffer_mib: usize },

    /// The activity session is already started (one per process).
    #[error(
        "a kprof activity session is already active in this process; stop (drop) it before \
         starting another"
    )]
    SessionActive,

    /// Regions used the wrong way (duplicate name, wrong nesting order, ...).
    #[error("region misuse: {0}")]
    RegionMisuse(String),

    /// A field of the packed region key is too large.
    #[error(
        "region key field `{field}` = {value} does not fit in {bits} bits (maximum {}); \
         reduce the number of {field}s in one benchmark",
        (1u64 << bits) - 1
    )]
    KeyOverflow { field: &'static str, value: u64, bits: u32 },

    /// A benchmark option is invalid.
    #[error("invalid benchmark option: {0}")]
    InvalidOption(String),

    /// The benchmark closure returned an error.
    #[error("benchmark {benchmark:?} failed in run {run} of config [{config}]: {message} (set BenchOptions::ignore_failures to record NaN for failed runs and go on)")]
    Benchmark {
        /// Benchmark name.
        benchmark: String,
        /// The configuration, as `name=value` pairs.
        config: String,
        /// Run index.
        run: u32,
        /// The closure's error.
        message: String,
    },

    /// The samples contradict each other (e.g. one series with two units).
    #[error("inconsistent results: {0}")]
    Model(#[from] kprof_core::model::ModelError),

    /// Writing a result file failed.
    #[error(transparent)]
    Results(#[from] kprof_core::io::IoError),

    /// Hardware counters (CUPTI Range Profiler / Profiler Host API): unknown or incompatible
    /// metric names, dropped ranges, counter permission, ...
    #[error(transparent)]
    Counters(#[from] crate::counters::CountersError),

    /// A feature this backend does not offer (e.g. clock control).
    #[error("{0}")]
    Unsupported(String),

    /// Reading or writing a file (e.g. the KPROF_RECORD_ACTIVITY fixture dump).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// The Nsight Compute backend failed (ncu missing or too old, counter permission, crash).
    #[error(transparent)]
    Ncu(#[from] crate::ncu::NcuError),
    /// Run conditions: thermal guard (cooling timeout, bad settings) or info collectors.
    #[error(transparent)]
    Conditions(#[from] crate::conditions::ConditionsError),

    /// A recorded activity fixture could not be parsed.
    #[error("bad activity fixture {path}, line {line}: {message}")]
    Fixture {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

fn hint_suffix(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!("; {h}"),
        None => String::new(),
    }
}

impl EngineError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<crate::overrides::InvalidOverride> for EngineError {
    fn from(e: crate::overrides::InvalidOverride) -> Self {
        EngineError::InvalidOption(e.to_string())
    }
}
