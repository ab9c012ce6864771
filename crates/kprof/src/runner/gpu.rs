//! The real backend: engine modules (driver, CUPTI activity session, attribution, NVTX) behind
//! [`Backend`], for [`Profiler::new`](super::Profiler::new).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

use kprof_core::model::{DeviceInfo, ExtraValue};

use super::gpu_rest;
use super::graph_start;
use super::l2_flush::L2Flusher;
use super::ENV_PAUSE_BETWEEN_BENCHMARKS;
use super::{host_name, Backend, BeforeEachKernel, Collected, FlushSpec, KernelRun, Span};
use crate::attribution::{attribute, encode_region_key, RegionSpan};
use crate::choices::TraceOptions;
use crate::conditions::fingerprint::format_cuda_version;
use crate::conditions::FingerprintInputs;
use crate::cupti::collector::{current_thread_id, ActivitySession};
use crate::cupti::kernel_flush::PassLaunches;
use crate::cupti::records::{ActivityBatch, KernelRecord};
use crate::error::EngineError;
use crate::loader::Libraries;
use crate::lock;
use crate::nvtx::{push_range_cstr, NvtxRange};

thread_local! {
    /// NVTX ranges opened by regions on this thread (push/pop ranges end on their thread).
    static RANGES: RefCell<Vec<NvtxRange>> = const { RefCell::new(Vec::new()) };
}

pub(super) struct GpuBackend {
    libs: &'static Libraries,
    session: Mutex<ActivitySession>,
    /// The cold-cache flusher (shared with the flush hook of counter passes).
    l2: Arc<L2Flusher>,
    inputs: FingerprintInputs,
    /// The GPU's start overhead of a graph launch (`runner/graph_start.rs`), ns: measured at the
    /// first flush that holds a graph record; `None` inside when it could not be measured.
    graph_start_ns: OnceLock<Option<u64>>,
}

/// What starting the backend yields: the backend, the device, the constant extra columns.
type Started = (GpuBackend, DeviceInfo, Vec<(String, ExtraValue)>);

impl GpuBackend {
    pub(super) fn start(trace: TraceOptions) -> Result<Started, EngineError> {
        let libs = Libraries::load()?;
        let driver = libs.cuda;
        driver.ensure_context()?;
        let ordinal = driver.current_device()?;
        let props = driver.device_info(ordinal)?;
        let mut session = ActivitySession::start_traced(libs.cupti, trace)?;
        if session.correlation_mark(|| drop(driver.device_count())) == Some(0) {
            // No callback came for the numbered call: regions cannot be numbered.
            log::warn!("kprof: CUPTI gave no correlation id to a numbered call; attributing kernels by launch records");
            session.attribute_by_records()?;
        }
        let device = DeviceInfo {
            gpu: props.name.clone(),
            host: host_name(),
            compute_clock_khz: (props.clock_khz > 0).then_some(props.clock_khz as f64),
            memory_clock_khz: (props.mem_clock_khz > 0).then_some(props.mem_clock_khz as f64),
        };
        let v = &libs.versions;
        let extras = vec![
            ("DeviceOrdinal".to_string(), ExtraValue::Number(ordinal as f64)),
            (
                "DriverVersion".to_string(),
                ExtraValue::Text(v.driver_release.clone().unwrap_or_else(|| v.driver.to_string())),
            ),
            (
                "CudaVersion".to_string(),
                ExtraValue::Text(format_cuda_version(v.driver)),
            ),
            ("CuptiVersion".to_string(), ExtraValue::Number(v.cupti_api as f64)),
        ];
        let mut inputs = crate::conditions::runtime::fingerprint_inputs(
            ordinal,
            &props,
            v.driver,
            Some(crate::conditions::fingerprint::format_cupti_version(v.cupti_api)),
        );
        inputs.kernel_timing = Some(session.describe());
        let backend = GpuBackend {
            libs,
            session: Mutex::new(session),
            l2: Arc::new(L2Flusher::new(props.l2_bytes)),
            inputs,
            graph_start_ns: OnceLock::new(),
        };
        Ok((backend, device, extras))
    }
}

impl Drop for GpuBackend {
    fn drop(&mut self) {
        self.l2.release(self.libs.cuda);
        lock(&self.session).end();
        if let Err(e) = detach_cupti(self.libs.cupti) {
            log::warn!("kprof: {e}");
        }
    }
}

/// The oldest CUPTI (its `cuptiGetVersion`) that kprof detaches from a process: 13.0, measured on
/// the H200. Older ones stay attached: their teardown crashed with CUDA graphs before CUDA 12.6
/// (PyTorch's profiler kept CUPTI attached for that reason).
const DETACH_FROM_CUPTI_API: u32 = 130_000;

/// Detaches CUPTI from the process (`cuptiFinalize`) once nothing of kprof's uses it: no activity
/// session, CUPTI's profiler deinitialized, and no CUDA graph executable instantiated while CUPTI
/// was attached (one would fail when launched afterwards: [`graph_guard`]). While any CUPTI
/// subscriber is attached (even one with nothing enabled, and after it unsubscribed) the driver
/// runs CUDA graphs slower: on the H200 a graph captured from two streams took 172 µs by CUDA
/// events before and 191-200 µs after, a one-stream graph of 60 kernels 201 vs 213-226 µs, until
/// `cuptiFinalize` (`truth_check cuptistates`). So when a profiler ends, the user's
/// later GPU work runs as without a profiler. `Ok(false)`: left attached (in use, graphs
/// instantiated under it, or an older CUPTI).
///
/// [`graph_guard`]: crate::cupti::graph_guard
pub(crate) fn detach_cupti(cupti: &crate::cupti::Cupti) -> Result<bool, EngineError> {
    use crate::cupti::graph_guard;
    let decision = detach_decision(
        cupti.api_version,
        graph_guard::graph_execs_under_cupti(),
        crate::cupti::collector::session_running() || crate::counters::range::profiler_initialized(),
    );
    *lock(&LAST_DETACH) = Some(decision.as_str());
    match decision {
        Detach::Now => {
            cupti.finalize()?;
            Ok(true)
        }
        Detach::InUse => {
            // CUPTI stays attached, and graph executables instantiated from now on go unseen.
            graph_guard::note_unseen_graph_execs();
            Ok(false)
        }
        Detach::OlderCupti | Detach::Graphs => Ok(false),
    }
}

/// What the last profiler to end did with CUPTI ([`last_cupti_detach`]).
static LAST_DETACH: Mutex<Option<&'static str>> = Mutex::new(None);

/// What the last profiler of this process to end did with CUPTI: `"detached"` (`cuptiFinalize`:
/// later GPU work runs as without a profiler), or why it left CUPTI attached: `"graphs"` (CUDA
/// graph executables instantiated during its sessions may still be alive, and one would fail
/// after `cuptiFinalize`), `"in-use"` (another session, or CUPTI's profiler, still open),
/// `"older-cupti"` (before 13.0); `None` before any profiler ended.
pub fn last_cupti_detach() -> Option<&'static str> {
    *lock(&LAST_DETACH)
}

/// What [`detach_cupti`] does.
#[derive(Debug, PartialEq, Eq)]
enum Detach {
    /// `cuptiFinalize` now.
    Now,
    /// Not now: a session or CUPTI's profiler is still in use.
    InUse,
    /// Kept attached for the whole process: a CUPTI older than [`DETACH_FROM_CUPTI_API`].
    OlderCupti,
    /// Kept attached: graph executables instantiated under CUPTI may be alive (until the guard of
    /// a later session sees them destroyed).
    Graphs,
}

impl Detach {
    /// The name [`last_cupti_detach`] gives it.
    fn as_str(&self) -> &'static str {
        match self {
            Detach::Now => "detached",
            Detach::InUse => "in-use",
            Detach::OlderCupti => "older-cupti",
            Detach::Graphs => "graphs",
        }
    }
}

fn detach_decision(cupti_api_version: u32, graph_execs_under_cupti: bool, in_use: bool) -> Detach {
    if cupti_api_version < DETACH_FROM_CUPTI_API {
        Detach::OlderCupti
    } else if graph_execs_under_cupti {
        Detach::Graphs
    } else if in_use {
        Detach::InUse
    } else {
        Detach::Now
    }
}

/// The engine's view of a run's spans.
pub(super) fn region_spans(spans: &[Span]) -> Vec<RegionSpan> {
    spans
        .iter()
        .map(|s| RegionSpan {
            id: s.key,
            parent: s.parent,
            thread_id: s.thread_id as u32,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            start_correlation_id: s.start_correlation_id,
            end_correlation_id: s.end_correlation_id,
        })
        .collect()
}

/// The run loop's view of a kernel record (not demangled yet).
fn kernel_run(k: KernelRecord) -> KernelRun {
    KernelRun {
        device: k.device_id,
        stream: k.stream_id,
        graph: k.graph_id != 0,
        start_ns: k.start_ns,
        end_ns: k.end_ns,
        demangled: None,
        name: k.name,
    }
}

/// Attributes one flushed batch to the run's regions (pure; tested on recorded fixtures).
pub(super) fn collect_batch(batch: &ActivityBatch, regions: &[RegionSpan]) -> Collected {
    let att = attribute(batch, regions);
    let by_region = att
        .by_region
        .into_iter()
        .map(|(id, ks)| (id, ks.into_iter().map(kernel_run).collect()))
        .collect();
    let outside = att.unattributed.iter().cloned().map(kernel_run).collect();
    Collected {
        by_region,
        unattributed: att.unattributed.len(),
        outside,
        graph_launches_from_nodes: 0,
        ambiguous: att.ambiguous,
        hold_dropped: 0,
    }
}

impl Backend for GpuBackend {
    fn timestamp_ns(&self) -> u64 {
        self.libs.cupti.timestamp_ns().unwrap_or(0)
    }
    fn thread_id(&self) -> u64 {
        current_thread_id() as u64
    }
    fn correlation_mark(&self) -> Option<u32> {
        let cuda = self.libs.cuda;
        lock(&self.session).correlation_mark(|| drop(cuda.device_count()))
    }
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        encode_region_key(c(call), c(config), c(run), c(region))
    }
    fn enter(&self, key: u64, name: &str) -> Result<(), EngineError> {
        let cname = crate::nvtx::validate_region_name(name)?;
        lock(&self.session).push_external_id(key)?;
        RANGES.with(|r| r.borrow_mut().push(push_range_cstr(cname)));
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        RANGES.with(|r| drop(r.borrow_mut().pop()));
        lock(&self.session).pop_external_id().map(|_| ())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        self.libs.cuda.ensure_context()?;
        self.libs.cuda.synchronize()
    }
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError> {
        self.l2.flush(self.libs.cuda, spec).map(drop)
    }
    fn can_act_before_each_kernel(&self) -> bool {
        self.libs.cupti.fns.enable_callback().is_some()
    }
    fn before_each_kernel(&self, what: BeforeEachKernel) -> Result<(), EngineError> {
        let (l2, driver) = (Arc::clone(&self.l2), self.libs.cuda);
        lock(&self.session).flush_before_kernels(Box::new(move || {
            // The flush ends with a synchronization, as does the wait: the previous kernel has
            // finished, and after long work the GPU rests before the next (`gpu_rest`).
            let kernels = match what {
                BeforeEachKernel::Flush(spec) => l2.flush(driver, spec)?,
                BeforeEachKernel::Rest => {
                    driver.synchronize()?;
                    0
                }
            };
            gpu_rest::after_synchronize();
            gpu_rest::before_gpu_work();
            Ok(kernels)
        }))
    }
    fn stop_before_each_kernel(&self) -> PassLaunches {
        lock(&self.session).stop_flushing_before_kernels()
    }
    fn set_idle(&self, idle: bool) -> Result<(), EngineError> {
        crate::cupti::graph_guard::set_between_benchmarks(idle);
        // Opt-in until checked on a GPU: switching the records off and on between benchmarks
        // is what the counter pass does to kernel records (checked), but not yet to launch
        // records nor around graphs instantiated before the session.
        if std::env::var(ENV_PAUSE_BETWEEN_BENCHMARKS).as_deref() == Ok("1") {
            lock(&self.session).set_paused(idle)
        } else {
            Ok(())
        }
    }
    fn kernel_records(&self, on: bool) -> Result<(), EngineError> {
        lock(&self.session).set_kernel_records(on)
    }
    fn graph_launches_from_nodes(&self) -> u64 {
        lock(&self.session).graph_launches_from_nodes()
    }
    fn graph_spans_from_nodes(&self) -> bool {
        let session = lock(&self.session);
        session.graph_trace() == crate::cupti::GraphTrace::Nodes || session.graph_launches_from_nodes() > 0
    }
    fn graph_launches_instantiated_before_counters(&self) -> u64 {
        crate::cupti::graph_guard::launches_instantiated_before_counters()
    }
    fn kernels_started_in(&self, window: (u64, u64)) -> Option<usize> {
        lock(&self.session).kernels_started_in(window).ok()
    }
    fn graph_launches_seen(&self) -> u64 {
        crate::cupti::graph_guard::graph_launches_seen()
    }
    fn graph_start_ns(&self) -> Option<Option<u64>> {
        self.graph_start_ns.get().copied()
    }
    fn collect(&self, spans: &[Span]) -> Result<Collected, EngineError> {
        let mut session = lock(&self.session);
        let mut batch = session.flush()?;
        if !batch.graphs.is_empty() {
            let start = *self.graph_start_ns.get_or_init(|| {
                graph_start::measure(self.libs.cuda, &mut session, &mut batch).unwrap_or_else(|e| {
                    log::warn!("kprof: the GPU's start of a CUDA graph launch could not be measured: {e}");
                    None
                })
            });
            if let Some(ns) = start {
                graph_start::include_start(&mut batch, ns);
            }
        }
        let regions = region_spans(spans);
        session.record_regions(&regions)?;
        let from_nodes = session.graph_launches_from_nodes();
        drop(session);
        Ok(Collected {
            graph_launches_from_nodes: from_nodes,
            ..collect_batch(&batch, &regions)
        })
    }
    fn counters(&self) -> Option<&dyn super::counter_pass::CounterBackend> {
        Some(super::counter_pass::gpu_counters(self.libs))
    }
    fn fingerprint_inputs(&self) -> FingerprintInputs {
        self.inputs.clone()
    }
}

#[cfg(test)]
mod detach_tests {
    use super::{detach_decision, Detach};

    #[test]
    fn cupti_is_detached_only_when_free_and_no_graph_was_instantiated_under_it() {
        assert_eq!(detach_decision(130_001, false, false), Detach::Now);
        assert_eq!(detach_decision(130_001, false, true), Detach::InUse);
        assert_eq!(detach_decision(130_001, true, false), Detach::Graphs);
        assert_eq!(detach_decision(130_001, true, true), Detach::Graphs);
        // CUPTI 12.x reports small API versions (e.g. 24): never detached.
        assert_eq!(detach_decision(24, false, false), Detach::OlderCupti);
        assert_eq!(detach_decision(24, true, false), Detach::OlderCupti);
    }
}
