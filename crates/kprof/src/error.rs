//! The engine's error type. Every message names the problem and what to do about it.

use std::path::PathBuf;

use crate::ncu_version::NcuVersion;

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
    Counters(#[from] CountersError),

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
    Ncu(#[from] NcuError),
    /// Run conditions: thermal guard (cooling timeout, bad settings) or info collectors.
    #[error(transparent)]
    Conditions(#[from] ConditionsError),

    /// The caller cancelled the bench call (a [`Cancel`](crate::cancel::Cancel) token; Ctrl-C in
    /// Python): the runs finished before it are in the raw CSV, when one was asked for.
    #[error("the benchmark was cancelled; the runs finished before it are kept in its raw CSV (output_prefix)")]
    Cancelled,

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

/// Errors of the conditions module ([`crate::conditions`]).
#[derive(Debug, thiserror::Error)]
pub enum ConditionsError {
    /// NVML (`libnvidia-ml.so.1`) could not be loaded or initialised. Callers report this once
    /// and record NaN condition columns; it is never fatal.
    #[error("NVML is not available ({reason}); clocks, temperature, power and energy will be NaN and the thermal guard is off")]
    NvmlUnavailable {
        /// What NVML or the loader said.
        reason: String,
    },
    /// No NVML device matches a UUID.
    #[error("no NVML device has UUID {uuid:?} ({reason})")]
    DeviceNotFound {
        /// The UUID looked for.
        uuid: String,
        /// What NVML said.
        reason: String,
    },
    /// An NVML call failed.
    #[error("NVML call {call} failed: {reason}")]
    Nvml {
        /// The call.
        call: &'static str,
        /// What NVML said.
        reason: String,
    },
    /// The GPU did not cool down to the resume threshold in time.
    #[error("the GPU did not cool down: temperature headroom {margin_c} °C stayed below the resume threshold {cont_c} °C for {waited_s:.1} s (thermal timeout {timeout_s} s, thermal mode {mode})")]
    CoolingTimeout {
        /// Headroom to the slowdown limit at the last reading, °C.
        margin_c: f64,
        /// The resume threshold when giving up, °C.
        cont_c: f64,
        /// Total time waited, s.
        waited_s: f64,
        /// The timeout per attempt, s.
        timeout_s: f64,
        /// `auto` or `manual`.
        mode: String,
    },
    /// Thermal settings that make no sense.
    #[error("invalid thermal settings: {0}")]
    InvalidThermalSettings(String),
    /// A collection scope string other than `once`, `config`, `run`, `annotation`.
    #[error("unknown collection scope {0:?}; expected \"once\", \"config\", \"run\" or \"annotation\"")]
    UnknownScope(String),
    /// A collector name is used twice.
    #[error("info collector name {0:?} is used by more than one collector; collector names must be unique")]
    DuplicateCollector(String),
    /// A collector name is a column kprof or nsight-python already writes.
    #[error("info collector name {name:?} is reserved: it is {why}; choose another name")]
    ReservedCollectorName {
        /// The name.
        name: String,
        /// Which column it collides with.
        why: String,
    },
    /// A collector name equals a parameter of the benchmark.
    #[error("info collector name {0:?} collides with a parameter of the benchmark; choose another name")]
    CollectorParamCollision(String),
    /// An empty collector name.
    #[error("an info collector has an empty name")]
    EmptyCollectorName,
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// (De)serialising JSON.
    #[error("fingerprint JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Errors of the counter module ([`crate::counters`]).
#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    /// libcupti (or libnvperf_host) could not be loaded or lacks an entry point.
    #[error("cannot load CUPTI from {}: {reason}", path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No libcupti was found.
    #[error("no libcupti found: {0}")]
    NotFound(String),
    /// A CUPTI call failed.
    #[error("{call} failed: {name} ({code}){}", hint.as_ref().map(|h| format!(": {h}")).unwrap_or_default())]
    Cupti {
        /// The CUPTI function.
        call: &'static str,
        /// `CUptiResult`.
        code: u32,
        /// Its name from `cuptiGetResultString`.
        name: String,
        /// What the user can change, when known.
        hint: Option<String>,
    },
    /// The chip name is not one this CUPTI knows.
    #[error("unknown chip {chip:?}; this CUPTI supports: {}", supported.join(", "))]
    InvalidChip {
        /// The name given.
        chip: String,
        /// `cuptiProfilerHostGetSupportedChips`.
        supported: Vec<String>,
    },
    /// Metric names that are not valid for the chip.
    #[error("{}", unknown_message(.0))]
    UnknownMetrics(Vec<UnknownMetric>),
    /// Metrics that CUPTI cannot collect in one session.
    #[error("{0}")]
    IncompatibleMetrics(String),
    /// A metric name contains a NUL byte.
    #[error("metric or range name {0:?} contains a NUL byte")]
    NulInName(String),
    /// CUPTI dropped ranges: the counter-data image was too small, or more ranges were pushed than configured.
    #[error("CUPTI dropped {dropped} range(s) (the counter-data image holds {capacity}); nothing is silently lost: raise the number of ranges")]
    DroppedRanges {
        /// `numOfRangeDropped`.
        dropped: usize,
        /// `maxNumOfRanges` used.
        capacity: usize,
    },
    /// A section or set name that cannot be expanded (see `kprof_core::sections`).
    #[error(transparent)]
    Sections(#[from] kprof_core::sections::SectionError),
    /// Misuse of the collection API.
    #[error("{0}")]
    Usage(String),
    /// File I/O.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A recorded fixture could not be read.
    #[error("bad recording {}: {reason}", path.display())]
    BadRecording {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// An unknown metric name and the closest valid names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMetric {
    /// The name given.
    pub name: String,
    /// Why it is not valid (e.g. "a counter needs a rollup").
    pub reason: String,
    /// Up to 3 closest valid full names, best first.
    pub closest: Vec<String>,
}

fn unknown_message(list: &[UnknownMetric]) -> String {
    list.iter()
        .map(|u| {
            let mut s = format!("unknown metric {:?}", u.name);
            if !u.reason.is_empty() {
                s.push_str(&format!(" ({})", u.reason));
            }
            if !u.closest.is_empty() {
                s.push_str(&format!("; closest valid names: {}", u.closest.join(", ")));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Errors of the ncu backend ([`crate::ncu`]). Each message says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum NcuError {
    /// No `ncu` executable was found.
    #[error(
        "Nsight Compute (ncu) was not found; looked in: {}. Install Nsight Compute (it ships with \
         the CUDA toolkit as <cuda>/bin/ncu, or as the nsight-compute package from NVIDIA's \
         repositories), put ncu on PATH or set KPROF_NCU=/path/to/ncu or CUDA_HOME; or use the \
         CUPTI backend (backend=\"cupti\"), which needs no ncu",
        list_paths(searched)
    )]
    NotFound {
        /// Every place that was looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// `ncu --version` could not be run.
    #[error("cannot run {} --version: {source}; check that the file is an executable ncu", path.display())]
    VersionRun {
        /// The ncu that was found.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `ncu --version` printed no `Version a.b.c.d` line.
    #[error("{} --version printed no version (expected a line like \"Version 2025.3.1.0 (build 36398880)\"); it printed: {output:?}", path.display())]
    VersionUnparsed {
        /// The ncu that was run.
        path: PathBuf,
        /// What it printed (stdout and stderr).
        output: String,
    },
    /// ncu is older than kprof supports.
    #[error(
        "{} is Nsight Compute {found}, older than {min}, the oldest version kprof drives; \
         install a newer Nsight Compute (CUDA 12.1 or later ships one) and point KPROF_NCU at it, \
         or use the CUPTI backend (backend=\"cupti\")",
        path.display()
    )]
    TooOld {
        /// The ncu that was found.
        path: PathBuf,
        /// Its version.
        found: NcuVersion,
        /// The oldest supported version.
        min: NcuVersion,
    },
    /// A mode name that is not `auto`, `relaunch` or `attach`.
    #[error("{origin} is {value:?}; the ncu mode must be \"auto\", \"relaunch\" or \"attach\"")]
    ModeName {
        /// What was given.
        value: String,
        /// Where it came from (`KPROF_NCU_MODE`, `ncu_options['mode']`).
        origin: String,
    },
    /// Attach mode was asked for, but the ncu found is too old for it (or of unknown version).
    #[error(
        "ncu attach mode needs Nsight Compute >= {min} (CUDA 13.3 Update 1); found {found} at {}. \
         Ask for mode \"relaunch\" or \"auto\" (KPROF_NCU_MODE, or ncu_options={{\"mode\": ...}} \
         in Python), which runs this ncu in relaunch mode (the program is run again under ncu). \
         A newer ncu alone would not help: this kprof does not implement attach mode yet",
        path.display()
    )]
    AttachUnavailable {
        /// The ncu found.
        path: PathBuf,
        /// Its version in words (`2025.3.1.0`, or `an ncu of unknown version`).
        found: String,
        /// The oldest ncu with attach mode.
        min: NcuVersion,
    },
    /// Attach mode was asked for with an ncu that supports it, but kprof does not implement it.
    #[error(
        "ncu attach mode is not implemented in this version of kprof (ncu {found} at {} supports \
         it). Ask for mode \"relaunch\" or \"auto\" (KPROF_NCU_MODE, or ncu_options={{\"mode\": ...}} \
         in Python), which runs the program again under ncu",
        path.display()
    )]
    AttachNotImplemented {
        /// The ncu found.
        path: PathBuf,
        /// Its version.
        found: String,
    },
    /// ncu could not be started.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The executable.
        program: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// ncu reported ERR_NVGPUCTRPERM: this user may not read the GPU performance counters.
    #[error(
        "ncu may not access the GPU performance counters (ERR_NVGPUCTRPERM, see {}). Either run \
         as root (or with CAP_SYS_ADMIN in a container), or allow all users: put \
         `options nvidia NVreg_RestrictProfilingToAdminUsers=0` into a file in /etc/modprobe.d/, \
         then reload the nvidia kernel module or reboot \
         (https://developer.nvidia.com/ERR_NVGPUCTRPERM); or use the CUPTI backend \
         (backend=\"cupti\"), whose timing needs no counter access. Last lines of the log:\n{tail}",
        log.display()
    )]
    CounterPermission {
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// ncu rejected a metric name.
    #[error(
        "ncu does not know metric(s) {}; check the spelling, or list the valid names with \
         `ncu --query-metrics --chip <chip>` (`kprof doctor` names the GPU's chip). Log {}:\n{tail}",
        metrics.join(", "), log.display()
    )]
    InvalidMetric {
        /// The metric names ncu complained about (may be empty when the log does not name them).
        metrics: Vec<String>,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// ncu (or the profiled program) failed: non-zero exit or killed by a signal.
    #[error(
        "ncu exited with {status} while profiling `{command}`; last lines of its log {}:\n{tail}",
        log.display()
    )]
    Crashed {
        /// Exit status in words (`exit code 1`, `signal 11`).
        status: String,
        /// The command, for the message.
        command: String,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines (or of stderr when the log is empty).
        tail: String,
    },
    /// ncu ran but profiled no kernel (the NVTX filter matched nothing, or the child did not
    /// run the benchmark).
    #[error(
        "ncu profiled no kernels (filters: {filters}). Check that the program runs the selected \
         benchmark under ncu (KPROF_NCU_CHILD={target}), that its regions push NVTX ranges in the \
         ASCII domain \"kprof\", and that --nvtx-include matches them. Log {}:\n{tail}",
        log.display()
    )]
    NoKernels {
        /// The NVTX filters passed.
        filters: String,
        /// The benchmark the child was asked to run.
        target: String,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// The report file ncu should have written is missing.
    #[error("ncu finished but wrote no report at {}; last lines of its log {}:\n{tail}", report.display(), log.display())]
    ReportMissing {
        /// The expected report.
        report: PathBuf,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// `ncu --import ... --csv` failed.
    #[error("exporting {} to CSV with `{command}` failed ({status}):\n{tail}", report.display())]
    Export {
        /// The report.
        report: PathBuf,
        /// The command that was run.
        command: String,
        /// Exit status in words.
        status: String,
        /// Last lines of its stderr/stdout.
        tail: String,
    },
    /// The CSV export could not be parsed.
    #[error("{source_name}:{line}: {message}")]
    Csv {
        /// The file (or `<input>`).
        source_name: String,
        /// 1-based line number of the CSV record (0 when not known).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A region name cannot be used in an NVTX range name.
    #[error("region name {name:?} cannot be used with ncu: {reason}")]
    RegionName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The program cannot be relaunched (e.g. a notebook without a script).
    #[error("{0}")]
    Unsupported(String),
    /// The results violate the measurement model (a (region, config, run) twice, two units).
    #[error("ncu results: {0}")]
    Model(#[from] kprof_core::ModelError),
    /// A file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

fn list_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(nowhere)".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
