//! Hardware counters in the counter launch of `kprof run --metrics`: when the run spec has
//! `counters`, the CUPTI Range Profiler in kernel replay (AutoRange + KernelReplay: one range per
//! kernel, the program runs once), its ranges paired with the process's kernels ([`map_ranges`])
//! and turned into counter samples grouped as the timing launch groups its kernels
//! ([`build_counter_raw`]).
//!
//! The CUPTI call order (steps 1-4) and the matching: `docs/architecture.md` (`kprof run`'s
//! injection library); what users see, limits included: `docs/kprof-run.md`.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use kprof::counters::{CuptiLib, RangeProfiler, ReplayMode};
use kprof::cupti::collector::Callback;
use kprof::cupti::records::KernelRecord;
use kprof::cupti::Cupti;
use kprof::run_spec::CounterSpec;
use kprof::run_status::CounterTimes;
use kprof::sys::cupti::cbid;
use kprof_core::transforms::{record_combined, Reducer};
use kprof_core::{RawResults, SampleRecord, DEFAULT_METRIC};
use serde::Serialize;

use crate::report::{run_indices, Group, SampleContext};

/// Kernels per counter-data image before it is decoded and restarted, by default.
pub use kprof::run_spec::DEFAULT_COUNTER_RANGES as DEFAULT_CAPACITY;

/// Kernels the first counter-data image holds (at most the run spec's `ranges_per_image`); each
/// image after a full one holds twice as many as the one before, up to `ranges_per_image`. A
/// small first image keeps the start cheap for programs of few kernels: the image's size and
/// `SetConfig` grow with its ranges and the metrics' raw counters.
pub const FIRST_IMAGE_RANGES: usize = 64;

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
const DOMAIN_DRIVER: u32 = 1;
/// `CUPTI_CB_DOMAIN_RUNTIME_API`.
const DOMAIN_RUNTIME: u32 = 2;
/// `CUPTI_CB_DOMAIN_RESOURCE`.
const DOMAIN_RESOURCE: u32 = 3;
/// `CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING`.
const CBID_CONTEXT_DESTROY_STARTING: u32 = 2;
/// `CUPTI_API_ENTER`.
const API_ENTER: u32 = 0;

/// What the counter launch was asked for, from the run spec's `counters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterRequest {
    /// Counter metric names (with `gpu__time_duration.sum` when the durations come from the
    /// counters).
    pub metrics: Vec<String>,
    /// Ranges per counter-data image.
    pub capacity: usize,
}

/// A counter request the library cannot carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A replay mode other than `kernel`.
    #[error(
        "the run spec asks for {0} replay: kprof run collects counters in kernel replay only (range and application \
         replay would need one launch of the whole program per pass); use kernel"
    )]
    ReplayMode(ReplayMode),
    /// A capacity of zero.
    #[error("the run spec's ranges_per_image is 0; it must be a positive number of ranges")]
    Capacity,
}

impl CounterRequest {
    /// The request of a run spec's `counters`: the metric names trimmed, without empty names and
    /// repeats (`gpu__time_duration.sum` included when `kprof run` takes the durations from the
    /// counters); `Ok(None)` when no metric is left (or `spec` is `None`).
    pub fn from_spec(spec: Option<&CounterSpec>) -> Result<Option<Self>, RequestError> {
        let Some(spec) = spec else { return Ok(None) };
        let mut metrics: Vec<String> = Vec::new();
        for m in spec.metrics.iter().map(|m| m.trim()).filter(|m| !m.is_empty()) {
            if !metrics.iter().any(|x| x == m) {
                metrics.push(m.to_string());
            }
        }
        if metrics.is_empty() {
            return Ok(None);
        }
        if spec.replay_mode != ReplayMode::Kernel {
            return Err(RequestError::ReplayMode(spec.replay_mode));
        }
        if spec.ranges_per_image == 0 {
            return Err(RequestError::Capacity);
        }
        Ok(Some(CounterRequest {
            metrics,
            capacity: spec.ranges_per_image,
        }))
    }
}

/// The profiled ranges and the process's kernels do not pair up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// Different counts: the i-th range cannot be the i-th kernel.
    #[error(
        "the counter launch recorded {kernels} kernel(s) but CUPTI profiled {ranges} range(s); the i-th range \
         cannot be matched to the i-th kernel, so no counter value is written{}",
        if kernels > ranges { " (kernels on another context, or launched before profiling started, are not profiled)" } else { "" }
    )]
    CountMismatch {
        /// Distinct kernels in the activity records.
        kernels: usize,
        /// Ranges the Range Profiler returned.
        ranges: usize,
    },
}

/// The key of one kernel execution: (correlation id, graph node id).
pub type KernelKey = (u32, u64);

/// The key of a kernel record.
pub fn kernel_key(k: &KernelRecord) -> KernelKey {
    (k.correlation_id, k.graph_node_id)
}

/// The distinct kernels (by [`kernel_key`]) in launch order: correlation id, then GPU start.
pub fn launch_order(kernels: &[KernelRecord]) -> Vec<&KernelRecord> {
    let mut v: Vec<&KernelRecord> = kernels.iter().collect();
    v.sort_by_key(|k| (k.correlation_id, k.start_ns, k.graph_node_id));
    let mut seen = std::collections::HashSet::new();
    v.retain(|k| seen.insert(kernel_key(k)));
    v
}

/// Pairs the i-th range (values per metric, in profiling order) with the i-th kernel in launch
/// order ([`launch_order`]). Both counts must be equal.
pub fn map_ranges(kernels: &[KernelRecord], ranges: &[Vec<f64>]) -> Result<HashMap<KernelKey, Vec<f64>>, MapError> {
    let order = launch_order(kernels);
    if order.len() != ranges.len() {
        return Err(MapError::CountMismatch {
            kernels: order.len(),
            ranges: ranges.len(),
        });
    }
    Ok(order.into_iter().map(kernel_key).zip(ranges.iter().cloned()).collect())
}

/// Whether per-kernel values of a metric add up to the region's value (`.sum` rollups: counts,
/// bytes, time). Other metrics (averages, ratios, percentages, rates) do not.
pub fn is_additive(metric: &str) -> bool {
    metric.ends_with(".sum")
}

/// One counter metric to write: name and unit (ncu's base spelling).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricUnit {
    /// The ncu metric name.
    pub name: String,
    /// Its unit (`byte`, `ns`, `%`, ...; "" when unknown).
    pub unit: String,
}

/// The `i`-th counter value of kernel `k` (NaN when the kernel has none).
fn counter_value(values: &HashMap<KernelKey, Vec<f64>>, k: &KernelRecord, i: usize) -> f64 {
    values
        .get(&kernel_key(k))
        .and_then(|v| v.get(i))
        .copied()
        .unwrap_or(f64::NAN)
}

/// The counter samples of one process: per group (a run of an annotation, as in the timing
/// samples) and metric, the kernels' values combined, with the per-kernel values in
/// [`RawResults::kernel_breakdown`] when there are several. `.sum` metrics are summed; other
/// metrics over several kernels are averaged (unweighted), with one warning per such metric.
/// A kernel without a value (missing from `values`) makes its group's value NaN.
pub fn build_counter_raw(
    groups: &[Group],
    values: &HashMap<KernelKey, Vec<f64>>,
    metrics: &[MetricUnit],
    ctx: &SampleContext,
) -> (RawResults, Vec<String>) {
    let mut raw = RawResults::new();
    let mut warnings = Vec::new();
    for (i, m) in metrics.iter().enumerate() {
        let additive = is_additive(&m.name);
        let mut averaged = false;
        for (g, run) in groups.iter().zip(run_indices(groups)) {
            let pairs: Vec<(&str, f64)> = g
                .kernels
                .iter()
                .map(|k| (k.name.as_str(), counter_value(values, k, i)))
                .collect();
            let reducer = if additive || pairs.len() < 2 {
                Reducer::Sum
            } else {
                averaged = true;
                Reducer::Mean
            };
            let mut extras = ctx.sample_extras(&g.kernels);
            if m.name == DEFAULT_METRIC {
                // The durations of a counter launch that collects them (docs/timing.md).
                extras.push(("DurationSource", kprof_core::ExtraValue::Text("counters".into())));
                // A range's own time (nested ranges' kernels left out), as the timing samples give it.
                if let Some(own) = &g.own {
                    let own_ns = own.iter().map(|k| counter_value(values, k, i)).sum();
                    extras.push((crate::report::SELF_COLUMN, kprof_core::ExtraValue::Number(own_ns)));
                }
            }
            let rec = SampleRecord {
                benchmark: &ctx.benchmark,
                annotation: &g.annotation,
                config: &ctx.config,
                run,
                metric: &m.name,
                value: f64::NAN,
                unit: &m.unit,
                kernel: "",
                device: &ctx.device,
                extras: &extras,
            };
            // One unit per metric and groups are never empty: cannot fail.
            let _ = record_combined(&mut raw, &rec, &pairs, &reducer);
        }
        if averaged {
            warnings.push(format!(
                "{} is not a .sum metric: regions with several kernels get the unweighted mean of their kernels",
                m.name
            ));
        }
    }
    (raw, warnings)
}

/// The counter part of the status file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CounterStatus {
    /// Metric names and units.
    pub metrics: Vec<MetricUnit>,
    /// `kernel`.
    pub replay_mode: &'static str,
    /// Chip of the profiled device.
    pub chip: Option<String>,
    /// Ranges per counter-data image, at most (the first image holds
    /// [`FIRST_IMAGE_RANGES`], each later one twice as many as the one before).
    pub capacity: usize,
    /// Kernels of CUDA graph launches among the profiled kernels: their durations from the
    /// counters are the nodes' own, not the graph's span, so `kprof run` times such a program in
    /// a timing launch as well.
    pub graph_kernels: usize,
    /// CUDA graph launches the activity records of the counter launch saw (graph-level records:
    /// their kernels have no records of their own), profiled or not: `kprof run` then times the
    /// program in a timing launch as well.
    pub graph_launches: usize,
    /// Launches on other contexts (not profiled).
    pub other_context_launches: u64,
    /// Launch calls made while no context was current (not profiled).
    pub launches_without_context: u64,
    /// Launch calls made while a stream capture was in progress (recorded into a graph, not
    /// run: not profiled, and the Range Profiler is neither started nor switched then, which
    /// would invalidate the capture).
    pub captured_launches: u64,
    /// CUDA graph launches made before the Range Profiler started (not profiled): it starts at
    /// the first kernel launch instead, since starting it inside a graph launch crashed the
    /// program on the H200 (CUPTI 13.0, segmentation fault in the counter launch of a program
    /// whose first launch was a 60-node graph).
    pub graph_launches_before_start: u64,
    /// Ranges returned by CUPTI.
    pub ranges: usize,
    /// Kernels matched to a range.
    pub kernels_matched: usize,
    /// Counter samples written.
    pub samples: usize,
    /// Launches profiled, passes, images and where the host time went (flattened: these are
    /// fields of this object in the status file).
    #[serde(flatten)]
    pub times: CounterTimes,
}

/// The Range Profiler of the profiled context (only used under the `LIVE` mutex).
struct Profiler(RangeProfiler);

/// The running collection.
#[derive(Default)]
struct Live {
    request: Option<CounterRequest>,
    cupti: Option<&'static Cupti>,
    profiler: Option<Profiler>,
    lib: Option<&'static CuptiLib>,
    ctx: usize,
    in_image: usize,
    /// Kernels the running counter-data image holds.
    image_capacity: usize,
    /// A CUDA graph was launched (images hold `ranges_per_image` kernels from then on).
    saw_graph: bool,
    ranges: Vec<Vec<f64>>,
    status: CounterStatus,
    finished: bool,
    error: Option<String>,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

/// Stream captures in progress in the process (begun, not yet ended). CUPTI calls of the Range
/// Profiler made during one invalidate it (with `cudaStreamCaptureModeGlobal` the program's
/// `cudaStreamEndCapture` then fails and its graph never runs: seen on the H200 with the 60-node
/// graph program under `kprof run --metrics`, whose first launch was a captured one).
static CAPTURES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Nesting depth of launch calls on this thread (runtime call → driver call).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether the outermost launch call of this thread was counted.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// Set while this thread is inside the hook (CUPTI calls made from it never re-enter).
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    /// Nesting depth of stream-capture calls on this thread (runtime call → driver call).
    static CAPTURE_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// When the outermost launch call of this thread, profiled, left the hook at its entry.
    static LAUNCH_T0: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
}

fn with_live<T>(f: impl FnOnce(&mut Live) -> T) -> Option<T> {
    let mut g = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    g.as_mut().map(f)
}

/// Whether a counter collection was installed in this process.
pub fn active() -> bool {
    with_live(|_| ()).is_some()
}

/// Sets the callback hook and enables the callbacks the collection needs on the activity
/// session's subscriber (step 1 of the call order in `docs/architecture.md`). A failure is also
/// kept as the collection's error, so the process writes no counter value.
pub fn install(
    session: &kprof::cupti::ActivitySession,
    cupti: &'static Cupti,
    request: CounterRequest,
) -> Result<(), String> {
    let r = install_inner(session, cupti, request);
    if let Err(e) = &r {
        with_live(|l| fail(l, e.clone()));
    }
    r
}

fn install_inner(
    session: &kprof::cupti::ActivitySession,
    cupti: &'static Cupti,
    request: CounterRequest,
) -> Result<(), String> {
    *LIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Live {
        status: CounterStatus {
            replay_mode: ReplayMode::Kernel.as_str(),
            capacity: request.capacity,
            metrics: request
                .metrics
                .iter()
                .map(|m| MetricUnit {
                    name: m.clone(),
                    unit: String::new(),
                })
                .collect(),
            ..Default::default()
        },
        request: Some(request),
        cupti: Some(cupti),
        ..Default::default()
    });
    if !kprof::cupti::collector::set_callback_hook(hook) {
        return Err("the CUPTI callback hook was already set".into());
    }
    let mut enable = vec![(DOMAIN_RESOURCE, CBID_CONTEXT_DESTROY_STARTING)];
    enable.extend(cbid::LAUNCH_CBIDS.iter().map(|&c| (DOMAIN_DRIVER, c)));
    enable.extend(cbid::RUNTIME_LAUNCH_CBIDS.iter().map(|&c| (DOMAIN_RUNTIME, c)));
    for ids in [&cbid::BEGIN_CAPTURE_CBIDS[..], &cbid::END_CAPTURE_CBIDS[..]] {
        enable.extend(ids.iter().map(|&c| (DOMAIN_DRIVER, c)));
    }
    for ids in [
        &cbid::RUNTIME_BEGIN_CAPTURE_CBIDS[..],
        &cbid::RUNTIME_END_CAPTURE_CBIDS[..],
    ] {
        enable.extend(ids.iter().map(|&c| (DOMAIN_RUNTIME, c)));
    }
    for (domain, id) in enable {
        // Launch ids this CUPTI does not know fail harmlessly; the resource callback must work.
        if let Err(e) = session.enable_callback(domain, id) {
            if domain == DOMAIN_RESOURCE || id == cbid::CU_LAUNCH_KERNEL {
                return Err(format!("cannot enable CUPTI callbacks for the counter collection: {e}"));
            }
        }
    }
    Ok(())
}

/// The CUPTI callback hook (runs on the thread of the CUDA call).
fn hook(callback: &Callback<'_>) {
    if !callback.has_data() || IN_HOOK.with(Cell::get) {
        return;
    }
    /// Clears `IN_HOOK` however the hook ends (a panic is caught by the collector's callback).
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            IN_HOOK.with(|h| h.set(false));
        }
    }
    IN_HOOK.with(|h| h.set(true));
    let _leave = Leave;
    let id = callback.cbid();
    let capture = capture_call(callback.domain(), id);
    match callback.domain() {
        DOMAIN_RESOURCE if id == CBID_CONTEXT_DESTROY_STARTING => {
            // CUpti_ResourceData: the context.
            let ctx = callback.resource().map_or(0, |r| r.context as usize);
            log!("counters: context {ctx:#x} is being destroyed");
            with_live(|l| {
                if l.profiler.is_some() && l.ctx == ctx {
                    finish_live(l);
                }
            });
        }
        DOMAIN_DRIVER | DOMAIN_RUNTIME if capture.is_some() => {
            let Some(cb) = callback.api() else { return };
            let begin = capture == Some(Capture::Begin);
            if cb.callbackSite == API_ENTER {
                CAPTURE_DEPTH.with(|d| d.set(d.get() + 1));
                return;
            }
            let depth = CAPTURE_DEPTH.with(|d| {
                d.set(d.get().saturating_sub(1));
                d.get()
            });
            if depth == 0 {
                on_capture_call(begin, callback.api_result());
            }
        }
        DOMAIN_DRIVER | DOMAIN_RUNTIME if is_launch(callback.domain(), id) => {
            // CUpti_CallbackData, valid during the callback.
            let Some(cb) = callback.api() else { return };
            let ctx = cb.context as usize;
            if cb.callbackSite == API_ENTER {
                let depth = DEPTH.with(|d| {
                    d.set(d.get() + 1);
                    d.get()
                });
                if depth == 1 {
                    COUNTED.with(|c| c.set(false));
                    LAUNCH_T0.with(|t| t.set(None));
                }
                if ctx != 0 && !COUNTED.with(Cell::get) {
                    COUNTED.with(|c| c.set(true));
                    let graph = is_graph_launch(callback.domain(), id);
                    if with_live(|l| on_launch(l, ctx, graph)) == Some(true) {
                        LAUNCH_T0.with(|t| t.set(Some(std::time::Instant::now())));
                    }
                }
            } else {
                let depth = DEPTH.with(|d| {
                    d.set(d.get().saturating_sub(1));
                    d.get()
                });
                if depth == 0 {
                    if !COUNTED.with(Cell::get) {
                        with_live(|l| l.status.launches_without_context += 1);
                    } else if let Some(t0) = LAUNCH_T0.with(|t| t.take()) {
                        let s = t0.elapsed().as_secs_f64();
                        with_live(|l| {
                            l.status.times.replay_s += s;
                            l.status.times.replay_max_s = l.status.times.replay_max_s.max(s);
                        });
                    }
                }
            }
        }
        _ => {}
    }
}

fn fail(l: &mut Live, msg: String) {
    if l.error.is_none() {
        l.error = Some(msg);
    }
}

/// Adds the ranges and host times of one decoded image.
fn take_image(l: &mut Live, ranges: Vec<kprof::counters::RangeResult>, t: &kprof::counters::CollectTimings) {
    l.ranges.extend(
        ranges
            .into_iter()
            .map(|x| x.values.into_iter().map(|(_, v)| v).collect()),
    );
    l.status.times.images_decoded += 1;
    l.status.times.decode_s += t.decode_s;
    l.status.times.evaluate_s += t.evaluate_s;
}

/// The capacity of the next counter-data image when the running one must be switched before a
/// launch, else `None`. `in_image` launches fill the running image of `capacity` kernels; `full`
/// is the run spec's `ranges_per_image`. A full image is followed by one of twice the capacity (at
/// most `full`). Once CUDA graphs are launched (`saw_graph`), images hold `full` kernels: a graph
/// launch counts as one launch but fills one range per kernel node, so a non-empty image smaller
/// than `full` is switched at once (an empty one takes the graph first: switching it would decode
/// nothing).
pub fn next_image(in_image: usize, capacity: usize, full: usize, saw_graph: bool) -> Option<usize> {
    if saw_graph && capacity < full && in_image > 0 {
        Some(full)
    } else if in_image >= capacity {
        Some(if saw_graph { full } else { (capacity * 2).min(full) })
    } else {
        None
    }
}

/// A kernel or graph launch: the session's other driver callbacks (`cuDeviceGetCount`, which
/// numbers NVTX ranges with `attribution="order"`; graph-guard callbacks) are not launches (on the
/// H200 the counter launch crashed, exit 139, when they were taken for launches).
fn is_launch(domain: u32, id: u32) -> bool {
    cbid::is_launch(cbid::api_kind_of_domain(domain), id)
}

/// Whether a launch callback is a CUDA graph launch (driver or runtime API).
fn is_graph_launch(domain: u32, id: u32) -> bool {
    cbid::is_graph_launch(cbid::api_kind_of_domain(domain), id)
}

/// A stream-capture call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    Begin,
    End,
}

/// Whether a callback is a call that begins or ends a stream capture (driver or runtime API).
fn capture_call(domain: u32, id: u32) -> Option<Capture> {
    let (begin, end): (&[u32], &[u32]) = match domain {
        DOMAIN_DRIVER => (&cbid::BEGIN_CAPTURE_CBIDS, &cbid::END_CAPTURE_CBIDS),
        DOMAIN_RUNTIME => (&cbid::RUNTIME_BEGIN_CAPTURE_CBIDS, &cbid::RUNTIME_END_CAPTURE_CBIDS),
        _ => return None,
    };
    if begin.contains(&id) {
        Some(Capture::Begin)
    } else if end.contains(&id) {
        Some(Capture::End)
    } else {
        None
    }
}

/// At the exit of the outermost begin- or end-capture call of a thread (`result`: its return
/// value): a capture that began counts until an end call (which ends capture mode whether or
/// not the graph is valid).
fn on_capture_call(begin: bool, result: Option<i32>) {
    if begin {
        if result == Some(0) {
            CAPTURES.fetch_add(1, Ordering::SeqCst);
        }
    } else {
        let _ = CAPTURES.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// Steps 2 and 3 of the call order (`docs/architecture.md`), at the entry of one launch on `ctx`
/// (`graph`: a CUDA graph launch). Returns whether the launch is profiled (counted in the image).
fn on_launch(l: &mut Live, ctx: usize, graph: bool) -> bool {
    if l.error.is_some() || l.finished {
        return false;
    }
    if CAPTURES.load(Ordering::SeqCst) > 0 {
        l.status.captured_launches += 1;
        return false;
    }
    if graph && l.profiler.is_none() {
        l.status.graph_launches_before_start += 1;
        return false;
    }
    l.saw_graph |= graph;
    if l.profiler.is_none() {
        let t0 = std::time::Instant::now();
        let started = start_profiler(l, ctx);
        l.status.times.start_s += t0.elapsed().as_secs_f64();
        if let Err(e) = started {
            fail(l, e);
            return false;
        }
    }
    if l.ctx != ctx {
        l.status.other_context_launches += 1;
        return false;
    }
    if let Some(capacity) = next_image(l.in_image, l.image_capacity, l.status.capacity, l.saw_graph) {
        let Some(Profiler(rp)) = l.profiler.as_mut() else {
            return false;
        };
        log!(
            "counters: switching the counter-data image ({} launches in it); decoding and restarting",
            l.in_image
        );
        let t0 = std::time::Instant::now();
        let stopped = rp.stop_streaming();
        let restarted = stopped.and_then(|(r, t)| rp.start_streaming(capacity).map(|()| (r, t)));
        match restarted {
            Ok((r, t)) => {
                l.status.times.restart_s += t0.elapsed().as_secs_f64();
                take_image(l, r, &t);
                l.in_image = 0;
                l.image_capacity = capacity;
            }
            Err(e) => {
                fail(
                    l,
                    format!("counter collection: decoding a full counter-data image failed: {e}"),
                );
                return false;
            }
        }
    }
    l.in_image += 1;
    l.status.times.launches += 1;
    true
}

fn start_profiler(l: &mut Live, ctx: usize) -> Result<(), String> {
    let (Some(cupti), Some(req)) = (l.cupti, l.request.as_ref()) else {
        return Err("counter collection: not installed".into());
    };
    log!("counters: starting the Range Profiler at the first launch on context {ctx:#x}");
    let t_load = std::time::Instant::now();
    let lib = CuptiLib::load(cupti.path).map_err(|e| format!("counter collection: {e}"))?;
    let driver = kprof::Driver::load(&kprof::loader::SearchEnv::from_process())
        .map_err(|e| format!("counter collection: cannot load the CUDA driver: {e}"))?;
    let ordinal = driver
        .current_device()
        .map_err(|e| format!("counter collection: no current device at the first launch: {e}"))?;
    l.status.times.load_s = t_load.elapsed().as_secs_f64();
    let mut rp = RangeProfiler::new(lib, ctx as _, ordinal as usize, &req.metrics, ReplayMode::Kernel)
        .map_err(|e| format!("cannot start the CUPTI Range Profiler: {e}"))?;
    log!("counters: Range Profiler enabled; starting collection");
    // The first launch is a kernel launch (graph launches before it are not profiled).
    let first = FIRST_IMAGE_RANGES.min(req.capacity);
    rp.start_streaming(first)
        .map_err(|e| format!("cannot start the CUPTI Range Profiler: {e}"))?;
    log!("counters: collecting");
    l.image_capacity = first;
    l.status.chip = Some(rp.chip().to_string());
    l.status.times.passes = rp.passes();
    l.status.times.config_s = rp.config_s();
    l.status.times.enable_s = rp.enable_s();
    l.status.times.first_image_s = rp.stream_setup_s().unwrap_or(0.0);
    l.status.times.first_image_ranges = first;
    // Units now, from the session's own host object: building a second metric catalog in the
    // exit handler crashed the process on the H200 (CUPTI 13.0).
    match rp.metric_units() {
        Ok(units) => {
            for (m, u) in l.status.metrics.iter_mut().zip(units) {
                // The durations keep the timing tier's unit (the host API says "nsecond").
                m.unit = if m.name == DEFAULT_METRIC { "ns".into() } else { u };
            }
        }
        Err(e) => log!("counters: no metric units: {e}"),
    }
    l.lib = Some(lib);
    l.ctx = ctx;
    l.profiler = Some(Profiler(rp));
    Ok(())
}

/// Step 4: the last image, then the profiler is disabled (idempotent).
fn finish_live(l: &mut Live) {
    if l.finished {
        return;
    }
    l.finished = true;
    if let Some(Profiler(mut rp)) = l.profiler.take() {
        if rp.is_streaming() {
            log!(
                "counters: stopping and decoding ({} launches in this image)",
                l.in_image
            );
            match rp.stop_streaming() {
                Ok((r, t)) => take_image(l, r, &t),
                Err(e) => fail(
                    l,
                    format!("counter collection: decoding the counter data at exit failed: {e}"),
                ),
            }
        }
        log!("counters: decoded; disabling the Range Profiler");
        drop(rp);
        log!("counters: disabled");
    }
}

/// What the collection gave, taken at exit.
pub struct Outcome {
    /// Values per range (one per metric, in the request's order), in profiling order.
    pub ranges: Vec<Vec<f64>>,
    /// Metric names and units.
    pub metrics: Vec<MetricUnit>,
    /// The status so far (the caller fills the matching counts).
    pub status: CounterStatus,
    /// The first error (the collection stopped there).
    pub error: Option<String>,
}

/// Finishes the collection (if the program's context is still alive) and takes its results;
/// `None` when no collection was installed.
pub fn take_outcome() -> Option<Outcome> {
    // CUPTI calls below must not re-enter the hook on this thread (it would wait for LIVE).
    let was_in_hook = IN_HOOK.with(|h| h.replace(true));
    let out = with_live(|l| {
        finish_live(l);
        l.status.ranges = l.ranges.len();
        Outcome {
            ranges: std::mem::take(&mut l.ranges),
            metrics: l.status.metrics.clone(),
            status: l.status.clone(),
            error: l.error.clone(),
        }
    });
    IN_HOOK.with(|h| h.set(was_in_hook));
    out
}

#[cfg(test)]
mod tests;
