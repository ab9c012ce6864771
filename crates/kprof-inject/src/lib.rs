//! `libkprof_inject.so`: profiles an unmodified CUDA program for `kprof run`. CUDA loads it through
//! `CUDA_INJECTION64_PATH` ([`InitializeInjection`], inside `cuInit`) and every NVTX copy through
//! `NVTX_INJECTION64_PATH` ([`nvtx_abi`]); at exit it writes `kprof-run-<pid>.csv` (raw samples)
//! and its status file `kprof-run-<pid>.json`. What to do comes from the run spec in
//! `KPROF_RUN_SPEC` ([`kprof::run_spec::RunSpec`]); [`counters`] is the counter launch of
//! `kprof run --metrics`.
//!
//! How the library works: `docs/architecture.md` (`kprof run`'s injection library); what users see,
//! and its limits: `docs/kprof-run.md`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use kprof::cupti::ActivitySession;
use kprof::cupti::Cupti;
use kprof::loader::SearchEnv;
use kprof::run_spec::{RunSpec, ENV_RUN_SPEC};
use kprof_core::{DeviceInfo, ExtraValue};
use serde::Serialize;

/// A message on stderr, prefixed `kprof: `, when the run spec says `verbose` (formatted only
/// then). The counter collection logs each CUPTI step with it, so a crash inside CUPTI shows the
/// last step that started.
macro_rules! log {
    ($($t:tt)*) => { if $crate::verbose() { $crate::log_lines(&format!($($t)*)); } };
}

pub mod book;
pub mod cost;
pub mod counters;
pub mod nesting;
pub mod nvtx_abi;
pub mod placement;
pub mod report;
#[cfg(test)]
mod test_support;
pub mod trace;

/// The NVTX range the self-test pushes (removed from the results).
pub const SELFTEST_RANGE: &str = "kprof_inject_selftest";

/// The run spec of this process, read once.
struct Spec {
    /// The spec; the default (nothing written) when the variable is unset or unreadable.
    spec: RunSpec,
    /// Why the spec could not be read.
    error: Option<String>,
}

static SPEC: OnceLock<Spec> = OnceLock::new();

/// The run spec (`KPROF_RUN_SPEC`). Logs nothing itself: [`log!`] reads it.
fn spec() -> &'static Spec {
    SPEC.get_or_init(|| match RunSpec::from_env() {
        Ok(spec) => Spec {
            spec: spec.unwrap_or_default(),
            error: None,
        },
        Err(e) => {
            let text = std::env::var(ENV_RUN_SPEC).unwrap_or_default();
            Spec {
                spec: RunSpec {
                    output: RunSpec::output_of_invalid(&text),
                    ..RunSpec::default()
                },
                error: Some(e.to_string()),
            }
        }
    })
}

fn verbose() -> bool {
    spec().spec.verbose
}

/// Writes a message to stderr with `kprof: ` before every line.
fn log_lines(msg: &str) {
    let text: String = msg.lines().map(|l| format!("kprof: {l}\n")).collect();
    eprint!("{text}");
}

/// Process-wide state besides the NVTX book.
#[derive(Default)]
struct Proc {
    cuda_injected: bool,
    selftest: Option<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
}

static PROC: Mutex<Option<Proc>> = Mutex::new(None);
static SESSION: Mutex<Option<ActivitySession>> = Mutex::new(None);
static CUPTI: OnceLock<Option<&'static Cupti>> = OnceLock::new();
static NVTX_INITS: AtomicU32 = AtomicU32::new(0);
static ATEXIT: AtomicBool = AtomicBool::new(false);
static CUPTI_CLOCK: AtomicBool = AtomicBool::new(false);
/// When `InitializeInjection` was called ([`kprof::run_status::unix_ns`]; 0: not yet).
static CUDA_INIT_UNIX_NS: AtomicU64 = AtomicU64::new(0);

fn with_proc<T>(f: impl FnOnce(&mut Proc) -> T) -> T {
    let mut g = PROC.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(Proc::default))
}

fn error(msg: String) {
    log!("{msg}");
    with_proc(|p| p.errors.push(msg));
}

fn warning(msg: String) {
    log!("warning: {msg}");
    with_proc(|p| p.warnings.push(msg));
}

/// The OS thread id of the caller.
pub fn thread_id() -> u32 {
    kprof::cupti::collector::current_thread_id()
}

/// CUPTI, loaded once (kprof's search order; `KPROF_CUPTI_PATH` wins).
fn cupti() -> Option<&'static Cupti> {
    *CUPTI.get_or_init(|| match Cupti::load(&SearchEnv::from_process()) {
        Ok(c) => {
            log!("CUPTI {} from {}", c.api_version, c.path.display());
            Some(c)
        }
        Err(e) => {
            error(format!("cannot load CUPTI: {e}"));
            None
        }
    })
}

/// Timestamps of NVTX ranges: `cuptiGetTimestamp` (the clock of the activity records) when CUPTI
/// is loaded, else CLOCK_REALTIME (then no kernel can be attributed anyway).
pub fn now_ns() -> u64 {
    if let Some(Some(c)) = CUPTI.get() {
        if let Ok(t) = c.timestamp_ns() {
            CUPTI_CLOCK.store(true, Ordering::Relaxed);
            return t;
        }
    }
    kprof::sys::os::realtime_ns()
}

/// The driver, for the numbered call of [`correlation_mark`] (loaded once; `None` if it cannot be).
static DRIVER: OnceLock<Option<&'static kprof::driver::Driver>> = OnceLock::new();

/// Set while [`InitializeInjection`] runs (inside the program's `cuInit`): no driver call may be
/// made then (a `cuDeviceGetCount` from the self-test's NVTX range broke the program's CUDA on the
/// H200: it exited with 1 before its first kernel).
static IN_CUDA_INIT: AtomicBool = AtomicBool::new(false);

/// CUPTI's correlation id of a `cuDeviceGetCount` made now ([`ActivitySession::correlation_mark`]):
/// `None` without a session that attributes by launch order (none yet, inside `cuInit`, or
/// `attribution="records"`), `Some(0)` when the call got no id. A call that worked without an id
/// means CUPTI does not call back: the session then switches to launch records, with a warning.
fn correlation_mark() -> Option<u32> {
    if IN_CUDA_INIT.load(Ordering::SeqCst) {
        return None;
    }
    let mut guard = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    let session = guard.as_mut()?;
    let mut called = false;
    let id = session.correlation_mark(|| {
        // Loaded on the first numbered call (never with attribution="records").
        let driver = DRIVER.get_or_init(|| kprof::driver::Driver::load(&SearchEnv::from_process()).ok());
        called = driver.is_some_and(|d| d.device_count().is_ok());
    })?;
    // A call that failed (made where CUDA forbids calls, as in a stream's host function) leaves
    // this range unnumbered.
    if id == 0 && called {
        let switched = session.attribute_by_records();
        drop(guard);
        let how = match switched {
            Ok(()) => "attributing kernels by launch records from now on".to_string(),
            Err(e) => format!("and launch records could not be enabled: {e}"),
        };
        warning(format!(
            "CUPTI gave no correlation id to the numbered call of an NVTX range; {how}"
        ));
    }
    Some(id)
}

/// The stamp of a range that opens now: the time, then the launch-order number (0 before the
/// session: every launch until the range closes counts; `u32::MAX` when the numbered call got no
/// id: none does).
pub fn stamp_open() -> book::Stamp {
    let ns = now_ns();
    let correlation_id = kprof::attribution::opening_number(correlation_mark());
    book::Stamp { ns, correlation_id }
}

/// The stamp of a range that closes now: the launch-order number (0: none), then the time.
pub fn stamp_close() -> book::Stamp {
    let correlation_id = correlation_mark().unwrap_or(0);
    book::Stamp {
        ns: now_ns(),
        correlation_id,
    }
}

extern "C" fn at_exit_handler() {
    log!("exit handler: writing results");
    let _ = catch_unwind(AssertUnwindSafe(write_results));
    log!("exit handler: done");
}

fn register_atexit() {
    if !ATEXIT.swap(true, Ordering::SeqCst) {
        kprof::sys::os::at_exit(at_exit_handler);
    }
}

/// `CUDA_INJECTION64_PATH` entry point, called by the CUDA driver inside `cuInit`.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> i32 {
    let _ = CUDA_INIT_UNIX_NS.compare_exchange(0, kprof::run_status::unix_ns(), Ordering::SeqCst, Ordering::SeqCst);
    IN_CUDA_INIT.store(true, Ordering::SeqCst);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_proc(|p| p.cuda_injected = true);
        register_atexit();
        let Some(c) = cupti() else { return };
        match ActivitySession::start_traced(c, spec().spec.trace_options()) {
            Ok(s) => {
                log!("CUPTI activity collection started");
                match counters::CounterRequest::from_spec(spec().spec.counters.as_ref()) {
                    Ok(None) => {}
                    Ok(Some(req)) => {
                        let names = req.metrics.join(",");
                        match counters::install(&s, c, req) {
                            Ok(()) => log!("counter collection armed (kernel replay): {names}"),
                            Err(e) => error(e),
                        }
                    }
                    Err(e) => error(e.to_string()),
                }
                *SESSION.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
            }
            Err(e) => error(format!("cannot start CUPTI activity collection: {e}")),
        }
        selftest();
    }));
    IN_CUDA_INIT.store(false, Ordering::SeqCst);
    1
}

/// Pushes and pops one range through kprof's own NVTX copy: it reaches this library only if
/// `NVTX_INJECTION64_PATH` names it and the handshake works.
fn selftest() {
    let before = NVTX_INITS.load(Ordering::SeqCst);
    let r = kprof::nvtx::push_range(SELFTEST_RANGE);
    drop(r);
    let seen = book::with(|b| b.remove_named(SELFTEST_RANGE));
    let msg = if seen > 0 {
        "ok: an NVTX range reached the injection library".to_string()
    } else {
        let path = std::env::var("NVTX_INJECTION64_PATH").unwrap_or_default();
        let m = format!(
            "no NVTX range arrived from the self-test (NVTX_INJECTION64_PATH={path:?}, NVTX copies \
             attached before: {before}); the program's NVTX ranges will not be seen, only kernels"
        );
        warning(m.clone());
        m
    };
    with_proc(|p| p.selftest = Some(msg));
}

/// What the `NVTX_INJECTION64_PATH` entry point ([`nvtx_abi::InitializeInjectionNvtx2`]) does
/// around the handshake with one NVTX copy (`attach`): loads CUPTI first, so that every range has
/// CUPTI timestamps, then counts and logs the copy; returns the entry point's result.
fn on_nvtx_copy(attach: impl FnOnce() -> Result<usize, String>) -> i32 {
    let _ = cupti();
    match attach() {
        Ok(n) => {
            let k = NVTX_INITS.fetch_add(1, Ordering::SeqCst) + 1;
            log!("NVTX copy #{k} attached ({n} callbacks)");
            register_atexit();
            1
        }
        Err(e) => {
            error(format!("NVTX handshake failed: {e}"));
            0
        }
    }
}

/// Where one process writes: `<dir>/kprof-run-<pid>.csv` and `.json` when `base` is a
/// directory (or ends with `/`), else `<stem>-<pid>.csv` / `<stem>-<pid>.json` beside `base`.
pub fn output_paths(base: &Path, is_dir: bool, pid: u32) -> (PathBuf, PathBuf) {
    if is_dir || base.as_os_str().to_string_lossy().ends_with('/') {
        return (
            base.join(format!("kprof-run-{pid}.csv")),
            base.join(format!("kprof-run-{pid}.json")),
        );
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kprof-run".into());
    let dir = base.parent().unwrap_or(Path::new(""));
    (
        dir.join(format!("{stem}-{pid}.csv")),
        dir.join(format!("{stem}-{pid}.json")),
    )
}

/// Per-range-name counts for the status file.
#[derive(Debug, Serialize)]
struct RangeCount {
    domain: String,
    name: String,
    count: usize,
}

/// The status file of one process (`kprof-run-<pid>.json`).
#[derive(Debug, Serialize)]
struct Status {
    pid: u32,
    benchmark: String,
    cmdline: Vec<String>,
    cuda_injected: bool,
    cupti_path: Option<String>,
    cupti_version: Option<u32>,
    timestamps: &'static str,
    nvtx_copies_attached: u32,
    nvtx_selftest: Option<String>,
    nvtx_calls: u64,
    ranges: Vec<RangeCount>,
    anomalies: book::Anomalies,
    stats: report::BuildStats,
    device: Option<DeviceInfo>,
    /// The rank the launcher gave this process ([`placement`]), if any.
    rank: Option<placement::Rank>,
    /// The devices the process's kernels ran on.
    devices: Vec<placement::DeviceSeen>,
    /// The counter collection (`kprof run --metrics`), when this was a counter launch.
    counters: Option<counters::CounterStatus>,
    /// Where this process's time went, for `kprof run`'s time split.
    timeline: kprof::run_status::Timeline,
    raw_csv: Option<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
}

fn process_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "program".into())
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_default()
}

fn cmdline() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Device information and constant extra columns, from the driver (at exit CUDA is initialised).
fn device_context() -> (DeviceInfo, Vec<(String, ExtraValue)>) {
    let mut device = DeviceInfo {
        host: host_name(),
        ..Default::default()
    };
    let mut extras = Vec::new();
    if let Ok(d) = kprof::Driver::load(&SearchEnv::from_process()) {
        if let Err(e) = d.synchronize() {
            log!("device synchronize at exit: {e}");
        }
        let ordinal = d.current_device().unwrap_or(0);
        if let Ok(p) = d.device_info(ordinal) {
            device.gpu = p.name;
            device.compute_clock_khz = (p.clock_khz > 0).then_some(p.clock_khz as f64);
            device.memory_clock_khz = (p.mem_clock_khz > 0).then_some(p.mem_clock_khz as f64);
        }
        extras.push(("DeviceOrdinal".into(), ExtraValue::Number(ordinal as f64)));
        extras.push((
            "CudaVersion".into(),
            ExtraValue::Text(format!("{}.{}", d.version / 1000, (d.version % 1000) / 10)),
        ));
    }
    if let Some(Some(c)) = CUPTI.get() {
        extras.push(("CuptiVersion".into(), ExtraValue::Number(c.api_version as f64)));
    }
    (device, extras)
}

fn write_results() {
    let mut timeline = kprof::run_status::Timeline {
        exit_handler_unix_ns: Some(kprof::run_status::unix_ns()),
        cuda_init_unix_ns: Some(CUDA_INIT_UNIX_NS.load(Ordering::SeqCst)).filter(|&t| t > 0),
        ..Default::default()
    };
    let pid = std::process::id();
    let cuda = with_proc(|p| p.cuda_injected);
    // The counter collection first: its last decode synchronizes the profiled context.
    let outcome = counters::take_outcome();
    let timing_launch = outcome.is_none();
    log!("exit handler: reading the device");
    let (device, extras) = if cuda {
        device_context()
    } else {
        (DeviceInfo::default(), Vec::new())
    };
    log!("exit handler: flushing CUPTI activity");
    let mut batch = {
        let mut s = SESSION.lock().unwrap_or_else(|p| p.into_inner());
        match s.as_mut().map(|s| s.flush()) {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                error(format!("CUPTI flush at exit: {e}"));
                Default::default()
            }
            None => Default::default(),
        }
    };
    if cuda && outcome.is_none() && !batch.graphs.is_empty() {
        timeline.graph_start_ns = include_graph_start(&mut batch);
    }
    log!("exit handler: grouping kernels");
    let (ranges, anomalies, calls) = book::with(|b| {
        let r = b.take_closed();
        (r, b.anomalies.clone(), b.calls)
    });
    if anomalies.left_open > 0 {
        warning(format!(
            "{} NVTX range(s) were still open at exit and are ignored",
            anomalies.left_open
        ));
    }
    let Spec {
        spec,
        error: spec_error,
    } = spec();
    let grouping = report::Grouping {
        by: spec.group_by,
        nesting: spec.nvtx_nesting,
        filter: report::Filter::new(&spec.nvtx_include, &spec.nvtx_exclude),
    };
    let benchmark = spec
        .benchmark
        .clone()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(process_name);
    let rank = placement::detect_rank(|v| std::env::var(v).ok());
    let devices = if cuda {
        placement::device_uuids(&batch.kernels)
    } else {
        Vec::new()
    };
    let mut extras = extras;
    if cuda && outcome.is_none() {
        // Where the durations come from (docs/timing.md), on duration samples only, as the engine
        // writes it: a timing launch's are the kernel records' (a counter launch marks its
        // gpu__time_duration.sum samples itself, `counters::build_counter_raw`).
        extras.push(("DurationSource".into(), ExtraValue::Text("records".into())));
    }
    let ctx = report::SampleContext {
        benchmark: benchmark.clone(),
        device: device.clone(),
        config: Default::default(),
        extras,
        rank: rank.as_ref().map(|r| r.rank),
        device_uuids: placement::uuid_map(&devices),
    };
    cost::set_kernels(&mut timeline, &batch.kernels);
    let (raw, stats, counter_status) = match outcome {
        None => {
            let (raw, stats) = report::build_raw(&ranges, &batch, &grouping, &ctx);
            timeline.region_means = cost::region_means(&raw);
            (raw, stats, None)
        }
        Some(o) => {
            let (raw, stats, status) = counter_samples(o, &ranges, &mut batch, &grouping, &ctx);
            // What the kernel records of this counter launch say the regions took.
            let (durations, _) = report::build_raw(&ranges, &batch, &grouping, &ctx);
            timeline.region_means = cost::region_means(&durations);
            (raw, stats, Some(status))
        }
    };
    if stats.kernels_ambiguous > 0 {
        warning(format!(
            "{} kernel(s) were launched while NVTX ranges of more than one thread were open; attributed by launch \
             order, each went to the range opened last, whichever thread launched it: run with --attribution records \
             to attribute each thread's launches to its own ranges",
            stats.kernels_ambiguous
        ));
    }
    if cuda && NVTX_INITS.load(Ordering::SeqCst) <= 1 && ranges.is_empty() && stats.kernels > 0 {
        log!("no NVTX ranges from the program: kernels are grouped by name");
    }
    let mut counts: Vec<RangeCount> = Vec::new();
    for r in &ranges {
        match counts.iter_mut().find(|c| c.domain == r.domain && c.name == r.name) {
            Some(c) => c.count += 1,
            None => counts.push(RangeCount {
                domain: r.domain.clone(),
                name: r.name.clone(),
                count: 1,
            }),
        }
    }
    log!(
        "{} kernel(s), {} NVTX range occurrence(s), {} sample(s)",
        stats.kernels,
        ranges.len(),
        stats.samples
    );
    if let Some(e) = spec_error {
        // Without a spec this library can read, what to measure is unknown: no samples.
        error(e.clone());
    }
    let Some(base) = spec.output.clone().filter(|b| !b.as_os_str().is_empty()) else {
        match spec_error {
            // Nowhere to write the status file: the error goes to stderr, whatever `verbose` says.
            Some(e) => log_lines(&format!("error: {e}")),
            None => log!("the run spec names no output: nothing written"),
        }
        return;
    };
    let (csv, json) = output_paths(&base, base.is_dir(), pid);
    let mut raw_csv = None;
    if !raw.samples.is_empty() && spec_error.is_none() {
        match kprof_core::io::write_raw_csv(&csv, &raw) {
            Ok(()) => raw_csv = Some(csv.display().to_string()),
            Err(e) => error(format!("cannot write {}: {e}", csv.display())),
        }
    }
    if spec.trace && timing_launch && cuda {
        let path = trace::timeline_path(&json);
        if let Err(e) = trace::write_timeline(&path, &ranges, &batch.kernels) {
            error(format!("cannot write {}: {e}", path.display()));
        }
    }
    let (selftest, warnings, errors) = with_proc(|p| (p.selftest.clone(), p.warnings.clone(), p.errors.clone()));
    timeline.results_unix_ns = Some(kprof::run_status::unix_ns());
    let cupti = CUPTI.get().copied().flatten();
    let status = Status {
        pid,
        benchmark,
        cmdline: cmdline(),
        cuda_injected: cuda,
        cupti_path: cupti.map(|c| c.path.display().to_string()),
        cupti_version: cupti.map(|c| c.api_version),
        timestamps: if CUPTI_CLOCK.load(Ordering::Relaxed) {
            "cupti"
        } else {
            "realtime"
        },
        nvtx_copies_attached: NVTX_INITS.load(Ordering::SeqCst),
        nvtx_selftest: selftest,
        nvtx_calls: calls,
        ranges: counts,
        anomalies,
        stats,
        device: cuda.then_some(device),
        rank,
        devices,
        counters: counter_status,
        timeline,
        raw_csv,
        warnings,
        errors,
    };
    match serde_json::to_string_pretty(&status) {
        Ok(text) => {
            if let Err(e) = std::fs::write(&json, text) {
                log!("cannot write {}: {e}", json.display());
            }
        }
        Err(e) => log!("cannot serialise the status: {e}"),
    }
}

/// The GPU's start of a CUDA graph launch (`kprof::runner::graph_start`), measured on kprof's
/// own graph in the program's context at exit and added to the span of every graph record of
/// `batch`, as the in-process doors do; `None`, with a warning, when it cannot be measured.
fn include_graph_start(batch: &mut kprof::cupti::records::ActivityBatch) -> Option<u64> {
    use kprof::runner::graph_start;
    let left_out = "the GPU's start of a CUDA graph launch (a few microseconds per launch) is left out of the \
                    graph spans";
    let driver = match kprof::Driver::load(&SearchEnv::from_process()) {
        Ok(d) => d,
        Err(e) => {
            warning(format!("{left_out}: {e}"));
            return None;
        }
    };
    if !matches!(driver.current_context(), Ok(Some(_))) {
        warning(format!("{left_out}: no CUDA context was current in the exit handler"));
        return None;
    }
    let mut s = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    let session = s.as_mut()?;
    match graph_start::measure(driver, session, batch) {
        Ok(Some(ns)) => {
            graph_start::include_start(batch, ns);
            log!("graph spans include the GPU's start of a graph: {ns} ns, measured on kprof's own graph");
            Some(ns)
        }
        Ok(None) => {
            warning(format!("{left_out}: kprof's own graph launches did not give it"));
            None
        }
        Err(e) => {
            warning(format!("{left_out}: {e}"));
            None
        }
    }
}

/// The samples of a counter launch: the kernels grouped as in the timing launch, one counter
/// sample per group and metric; errors go to the status file.
fn counter_samples(
    o: counters::Outcome,
    ranges: &[book::RangeOcc],
    batch: &mut kprof::cupti::records::ActivityBatch,
    grouping: &report::Grouping,
    ctx: &report::SampleContext,
) -> (kprof_core::RawResults, report::BuildStats, counters::CounterStatus) {
    let mut status = o.status;
    if let Some(e) = &o.error {
        // An install failure is already in the errors.
        if !with_proc(|p| p.errors.contains(e)) {
            error(e.clone());
        }
    }
    // Kernel replay may report a kernel more than once.
    let mut seen = std::collections::HashSet::new();
    batch.kernels.retain(|k| seen.insert(counters::kernel_key(k)));
    status.graph_kernels = batch.kernels.iter().filter(|k| k.graph_id != 0).count();
    status.graph_launches = batch.graphs.len();
    let (groups, mut stats) = report::group_kernels(ranges, batch, grouping);
    if o.error.is_some() {
        return (Default::default(), stats, status);
    }
    if !o.ranges.is_empty() && o.metrics.iter().any(|m| m.unit.is_empty()) {
        warning("the units of the counter metrics could not be read from the host API".into());
    }
    match counters::map_ranges(&batch.kernels, &o.ranges) {
        Ok(map) => {
            status.kernels_matched = map.len();
            let (raw, warnings) = counters::build_counter_raw(&groups, &map, &o.metrics, ctx);
            for w in warnings {
                warning(w);
            }
            stats.samples = raw.samples.len();
            status.samples = raw.samples.len();
            (raw, stats, status)
        }
        Err(e) => {
            error(e.to_string());
            (Default::default(), stats, status)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_paths_per_pid() {
        let (c, j) = output_paths(Path::new("/tmp/x"), true, 42);
        assert_eq!(c, Path::new("/tmp/x/kprof-run-42.csv"));
        assert_eq!(j, Path::new("/tmp/x/kprof-run-42.json"));
        let (c, j) = output_paths(Path::new("/tmp/out.csv"), false, 7);
        assert_eq!(c, Path::new("/tmp/out-7.csv"));
        assert_eq!(j, Path::new("/tmp/out-7.json"));
    }
}
