//! The CUPTI activity session ([`ActivitySession`], one per process at a time): subscribes, has
//! CUPTI fill recycled 8 MiB buffers (the FFI layer's [`crate::sys::cupti::activity`]), parses
//! completed buffers into typed records on whatever thread CUPTI calls back on, and drains them on
//! flush. With `KPROF_RECORD_ACTIVITY` naming a file, every raw record (and, through
//! [`ActivitySession::record_regions`], each flush's region spans) is also appended to it as JSON
//! lines ([`crate::cupti::records::DumpLine`]), so that activity recorded on a GPU machine can become
//! a test fixture.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::cupti::graph_guard;
use crate::cupti::kernel_flush::{self, FlushHook, PassLaunches};
use crate::cupti::library::Cupti;
pub use crate::cupti::records::ActivityBatch;
use crate::cupti::records::RegionSpan;
use crate::cupti::records::{parse_record, record_kind, to_hex, write_dump_line, DumpLine, Record};
use crate::error::EngineError;
pub use crate::sys::cupti::activity::BUFFER_BYTES;
use crate::sys::cupti::activity::{BufferHandlers, CompletedBuffer};
pub use crate::sys::cupti::callback::{Callback, CallbackHook};
use crate::sys::cupti::{
    cbid, ApiSwitch, SubscriberHandle, ACTIVITY_FLAG_FLUSH_FORCED, ACTIVITY_KIND_CONCURRENT_KERNEL,
    ACTIVITY_KIND_DRIVER, ACTIVITY_KIND_EXTERNAL_CORRELATION, ACTIVITY_KIND_GRAPH_TRACE, ACTIVITY_KIND_KERNEL,
    ACTIVITY_KIND_RUNTIME, API_ENTER, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RUNTIME_API, CUPTI_ERROR_MAX_LIMIT_REACHED,
    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_SUCCESS, EXTERNAL_CORRELATION_KIND_CUSTOM0,
};

/// Env var: when set to a path, every activity record is also appended there (JSON lines).
pub const ENV_RECORD_ACTIVITY: &str = "KPROF_RECORD_ACTIVITY";

/// Env var overriding how launch records are enabled: `kind`, `cbid`, `kind-minus` (default) or
/// `off`.
pub const ENV_LAUNCH_RECORDS: &str = "KPROF_CUPTI_LAUNCH_RECORDS";

pub use crate::choices::{Attribution, GraphTrace, KernelTrace, TraceOptions};

impl GraphTrace {
    /// How results say graph launches were timed (part of the fingerprint's `kernel_timing`).
    pub fn describe(self) -> &'static str {
        match self {
            GraphTrace::Graph => {
                "CUDA graphs as one span each (graph records; node records for graphs instantiated before the session)"
            }
            GraphTrace::Nodes => "CUDA graph nodes as kernels (a launch's span merged from them)",
        }
    }
}

/// `cuptiActivityEnable(kind)` (`on`) or `cuptiActivityDisable(kind)`; returns CUPTI's result.
pub(crate) fn switch_kind(c: &Cupti, kind: u32, on: bool) -> u32 {
    if on {
        c.fns.activity_enable(kind)
    } else {
        c.fns.activity_disable(kind)
    }
}

/// Which CUPTI activity kind records kernels.
///
/// Measured on the H200 (CUPTI 13.0, driver 580; the GPU checks' truth table):
/// - `KERNEL` (serial) cannot time CUDA graphs: node records come without timestamps and the
///   GRAPH_TRACE record of a launch spans about one node (1.25 us for a 60-node graph that runs
///   200 us); it also stretched the graph's own run by 9 % (CUDA events in the program: 218.7 vs
///   201.1 us). Eager kernels read about 0.5 us longer than Nsight Compute's
///   `gpu__time_duration` (1M-float kernel 4.80 vs 4.22 us).
/// - `CONCURRENT_KERNEL` times graphs (60-node graph, span merged from its nodes: 214.5 us, with
///   GRAPH_TRACE 198.4 us, vs 200.9 us by CUDA events without a profiler; see [`GraphTrace`]), but
///   CUPTI instruments every kernel: eager kernels read between the in-stream time and ncu's
///   (1M-float kernel 3.46 us: in-stream 3.31, ncu 4.22) and kernels of many short blocks pay for
///   it (`y = 2x` over 64M floats in 262,144 blocks: 217 vs 198 us).
///
/// So the default is `Concurrent` (graphs right) and the durations of eager kernels come by
/// default from a counter pass (`DurationSource::Auto`: ncu's own `gpu__time_duration`), where the
/// trace mode does not matter (measured: the same values in both modes). The enum itself and its
/// parser live in [`crate::choices`].
impl KernelTrace {
    /// How results say their kernels were timed (the fingerprint's `kernel_timing`).
    pub fn describe(self) -> &'static str {
        match self {
            KernelTrace::Serial => "CUPTI kernel records, serial (kernels not instrumented)",
            KernelTrace::Concurrent => "CUPTI concurrent kernel records (kernels instrumented)",
        }
    }

    /// The CUPTI activity kind of this mode.
    fn activity_kind(self) -> u32 {
        match self {
            KernelTrace::Concurrent => ACTIVITY_KIND_CONCURRENT_KERNEL,
            KernelTrace::Serial => ACTIVITY_KIND_KERNEL,
        }
    }
}

/// Upper bound (exclusive) of the driver CBIDs switched off in [`LaunchRecords::KindMinusOthers`]
/// (CUPTI 13.0 has 807; later versions add a few).
const DRIVER_CBID_LIMIT: u32 = 1024;

/// How the API records of kernel launches (driver and runtime) are enabled.
///
/// Seen on the H200 (CUPTI 13.0, driver 580):
/// - enabling only the launch CBIDs with `cuptiActivityEnableDriverApi` gives **no** API records
///   for a context that already existed when the session started (it works when the session
///   starts first); enabling the whole kind and then switching every other CBID off works in
///   both orders;
/// - cuBLAS 13 launches through the runtime's `cudaLaunchKernelExC` with no traced driver call:
///   only a RUNTIME record carries the kernel's correlation id.
///
/// So the default enables the DRIVER and RUNTIME kinds and switches off every non-launch CBID
/// of both ([`LaunchRecords::KindMinusOthers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchRecords {
    /// The DRIVER and RUNTIME kinds, then every non-launch CBID of both switched off (the
    /// default when CUPTI >= 12.5 has the per-CBID calls).
    KindMinusOthers,
    /// Only the launch CBIDs of both kinds (`KPROF_CUPTI_LAUNCH_RECORDS=cbid`; sees only contexts
    /// created after the session started).
    PerCbid,
    /// Every driver and runtime call (`KPROF_CUPTI_LAUNCH_RECORDS=kind`, and the fallback before
    /// CUPTI 12.5).
    WholeDriverKind,
    /// No API records at all (`KPROF_CUPTI_LAUNCH_RECORDS=off`).
    Off,
}

// CUPTI's buffer callbacks carry no user data, so the session's state is process-global and only
// one session may be active at a time (CUPTI 13.0 allows one subscriber per process anyway). The
// callbacks run on whatever thread CUPTI calls back on: they never unwind into CUPTI
// (`catch_unwind`), never call back into CUDA and never take a lock that the flushing thread holds
// while it calls into CUPTI.
struct Global {
    batch: ActivityBatch,
    /// Records lost inside our callback (iteration errors, allocation failures).
    lost_in_callback: u64,
    /// Dropped-record counts reported by CUPTI in the completion callback.
    dropped_reported: u64,
    dump: Option<BufWriter<File>>,
    dump_path: Option<PathBuf>,
    dump_failed: Option<String>,
    /// Flush index the records being received belong to (process-wide, monotonic).
    flush_index: u64,
}

static STATE: Mutex<Global> = Mutex::new(Global {
    batch: ActivityBatch {
        kernels: Vec::new(),
        launches: Vec::new(),
        external: Vec::new(),
        graphs: Vec::new(),
    },
    lost_in_callback: 0,
    dropped_reported: 0,
    dump: None,
    dump_path: None,
    dump_failed: None,
    flush_index: 0,
});
static ACTIVE: AtomicBool = AtomicBool::new(false);

use crate::lock;

/// Installs the process's callback hook (once; a second call returns `false` and changes
/// nothing). Only callbacks enabled with [`ActivitySession::enable_callback`] arrive. The hook
/// runs on the thread that made the CUDA call, after the graph guard; a panic in it is caught and
/// ignored.
pub fn set_callback_hook(hook: CallbackHook) -> bool {
    crate::sys::cupti::callback::set_hook(hook)
}

/// What the session does with CUPTI's buffers.
const BUFFER_HANDLERS: BufferHandlers = BufferHandlers {
    completed: process_buffer,
    allocation_failed: buffer_allocation_failed,
};

/// No buffer could be allocated for CUPTI: its records are lost (reported at the next flush).
fn buffer_allocation_failed() {
    lock(&STATE).lost_in_callback += 1;
}

/// A raw record kept for the activity dump: (kind, bytes, kernel name).
type DumpedRecord = (u32, Vec<u8>, Option<String>);

/// Parses the records of one completed buffer and appends them to the global batch.
fn process_buffer(buf: &CompletedBuffer<'_>) {
    let (records, lost) = buf.records();
    let mut parsed: Vec<(Option<Record>, Option<DumpedRecord>)> = Vec::new();
    let dumping = lock(&STATE).dump.is_some();
    for rec in records {
        let bytes = rec.bytes();
        let kind = record_kind(bytes).unwrap_or(0);
        // Kernel records only (KERNEL, CONCURRENT_KERNEL); read while the buffer lives.
        let name = rec.kernel_name();
        let dump = dumping.then(|| (kind, bytes.to_vec(), name.clone()));
        // Only launch API records matter (whole kinds are on when per-CBID enabling is
        // unavailable); everything else stays out of the batch but goes into the dump.
        let rec = parse_record(bytes, name).filter(|r| match r {
            Record::Api(a) => cbid::is_launch(a.kind, a.cbid),
            _ => true,
        });
        if rec.is_some() || dump.is_some() {
            parsed.push((rec, dump));
        }
    }
    let dropped = buf.dropped();

    let mut st = lock(&STATE);
    st.lost_in_callback += lost;
    st.dropped_reported += dropped as u64;
    let flush = st.flush_index;
    for (r, d) in parsed {
        if let Some((kind, bytes, name)) = d {
            let line = DumpLine::Record {
                flush,
                kind,
                hex: to_hex(&bytes),
                name,
            };
            let res = match st.dump.as_mut() {
                Some(w) => write_dump_line(w, &line),
                None => Ok(()),
            };
            if let Err(e) = res {
                st.dump_failed.get_or_insert_with(|| e.to_string());
            }
        }
        if let Some(r) = r {
            st.batch.push(r);
        }
    }
}

thread_local! {
    /// A correlation mark in progress on this thread ([`ActivitySession::correlation_mark`]):
    /// `Some(0)` while waiting for the numbered call's callback, then `Some(id)`.
    static MARK: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// The engine's callback hook: the graph guard, the flush before every kernel of a counter pass,
/// then the correlation mark of a numbered call.
fn on_callback(cb: &Callback<'_>) {
    graph_guard::on_callback(cb);
    kernel_flush::on_callback(cb);
    if cb.domain() != CB_DOMAIN_DRIVER_API || cb.cbid() != cbid::CU_DEVICE_GET_COUNT {
        return;
    }
    let Some(api) = cb.api() else { return };
    if api.callbackSite == API_ENTER {
        let _ = MARK.try_with(|m| {
            if m.get() == Some(0) {
                m.set(Some(api.correlationId));
            }
        });
    }
}

/// The OS thread id (gettid) of the calling thread, as CUPTI and region spans use it.
pub fn current_thread_id() -> u32 {
    crate::sys::os::thread_id()
}

/// An active CUPTI activity collection (one per process at a time).
#[derive(Debug)]
pub struct ActivitySession {
    cupti: &'static Cupti,
    subscriber: usize,
    launch_mode: LaunchRecords,
    /// How kernels are attributed to regions (after fallbacks: what this session does).
    attribution: Attribution,
    kernel_trace: KernelTrace,
    /// How graph launches are timed (after fallbacks: what this session does).
    graph_trace: GraphTrace,
    /// Whether the driver callbacks of graph launches stay on for the whole session (the graph
    /// guard's, or only to count the launches: [`graph_guard::graph_launches_seen`]).
    graph_launch_callbacks: bool,
    stopped: bool,
    /// Record kinds off between benchmarks ([`ActivitySession::set_paused`]).
    paused: bool,
    last_flush: Option<u64>,
}

impl ActivitySession {
    /// Subscribes to CUPTI, registers the buffer callbacks and enables concurrent-kernel,
    /// external-correlation and launch (driver API, incl. graph launch) records, with the default
    /// [`TraceOptions`] (under the `KPROF_KERNEL_TRACE` and `KPROF_GRAPH_TRACE` overrides).
    /// `cupti` is the engine's copy ([`crate::loader::Libraries`]'s `cupti`).
    pub fn start(cupti: &'static Cupti) -> Result<Self, EngineError> {
        Self::start_traced(cupti, TraceOptions::default())
    }

    /// As [`ActivitySession::start`], tracing kernels and CUDA graphs as `trace` says;
    /// `KPROF_KERNEL_TRACE` and `KPROF_GRAPH_TRACE`, when set, override it
    /// ([`crate::overrides::trace_options`]). A bad override value is an error.
    pub fn start_traced(cupti: &'static Cupti, trace: TraceOptions) -> Result<Self, EngineError> {
        let trace = crate::overrides::trace_options(trace)?;
        if ACTIVE
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(EngineError::SessionActive);
        }
        let mut s = ActivitySession {
            cupti,
            subscriber: 0,
            launch_mode: LaunchRecords::WholeDriverKind,
            attribution: Attribution::Records,
            kernel_trace: KernelTrace::Concurrent,
            graph_trace: GraphTrace::Nodes,
            graph_launch_callbacks: false,
            stopped: false,
            paused: false,
            last_flush: None,
        };
        match s.start_inner(trace) {
            Ok(()) => Ok(s),
            Err(e) => {
                s.stop_leaving_cupti_attached();
                Err(e)
            }
        }
    }

    fn start_inner(&mut self, options: TraceOptions) -> Result<(), EngineError> {
        let c = self.cupti;
        {
            let mut st = lock(&STATE);
            st.batch = ActivityBatch::default();
            st.lost_in_callback = 0;
            st.dropped_reported = 0;
            st.dump_failed = None;
            st.dump = None;
            st.dump_path = None;
            if let Some(p) = std::env::var_os(ENV_RECORD_ACTIVITY).filter(|p| !p.is_empty()) {
                let path = PathBuf::from(p);
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| EngineError::io(format!("opening {ENV_RECORD_ACTIVITY}={}", path.display()), e))?;
                let mut w = BufWriter::new(f);
                write_dump_line(
                    &mut w,
                    &DumpLine::Meta {
                        cupti_version: c.api_version,
                        cupti_path: c.path.display().to_string(),
                        note: String::new(),
                    },
                )
                .map_err(|e| EngineError::io(format!("writing {}", path.display()), e))?;
                st.dump = Some(w);
                st.dump_path = Some(path);
            }
        }
        crate::sys::cupti::callback::set_engine_hook(on_callback);
        let mut sub: SubscriberHandle = std::ptr::null_mut();
        let r = c.fns.subscribe(&mut sub);
        if r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_MAX_LIMIT_REACHED {
            return Err(EngineError::SubscriberTaken {
                call: "cuptiSubscribe",
                message: c.result_string(r),
                version: c.api_version,
            });
        }
        c.check("cuptiSubscribe", r)?;
        self.subscriber = sub as usize;
        c.check(
            "cuptiActivityRegisterCallbacks",
            c.fns.activity_register_callbacks(BUFFER_HANDLERS),
        )?;
        self.kernel_trace = options.kernel_trace;
        self.set_kernel_records(true)?;
        if options.graph_trace() == GraphTrace::Graph {
            // A CUPTI that cannot trace graphs as a whole (CUPTI_ERROR_NOT_COMPATIBLE, or older
            // than 11.7), or cannot guard them (no cuptiEnableCallback, or a callback that does not
            // enable), leaves node records:
            // graph spans are then merged from timed nodes (concurrent records) or stay untimed
            // with a warning (serial records).
            if c.fns.enable_callback().is_some() && switch_kind(c, ACTIVITY_KIND_GRAPH_TRACE, true) == CUPTI_SUCCESS {
                if self.arm_graph_guard().is_ok() {
                    self.graph_trace = GraphTrace::Graph;
                } else {
                    // Unguarded graph records could crash on older graphs: node records.
                    switch_kind(c, ACTIVITY_KIND_GRAPH_TRACE, false);
                }
            }
        }
        if self.graph_trace != GraphTrace::Graph {
            // No guard: graph executables instantiated from now on go unseen.
            graph_guard::note_unseen_graph_execs();
            // Graph launches are still counted, to size counter passes (graph_guard).
            if let Some(enable) = c.fns.enable_callback() {
                let sub = self.subscriber as SubscriberHandle;
                self.graph_launch_callbacks = graph_guard::GRAPH_LAUNCH_CBIDS
                    .iter()
                    .all(|&id| enable.call(1, sub, graph_guard::CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS);
            }
        } else {
            self.graph_launch_callbacks = true;
        }
        c.check(
            "cuptiActivityEnable(EXTERNAL_CORRELATION)",
            switch_kind(c, ACTIVITY_KIND_EXTERNAL_CORRELATION, true),
        )?;
        // Launch order needs the callback that numbers region boundaries; without it, records.
        self.attribution = options.attribution;
        if self.attribution == Attribution::Order
            && self
                .enable_callback(CB_DOMAIN_DRIVER_API, cbid::CU_DEVICE_GET_COUNT)
                .is_err()
        {
            log::warn!("kprof: CUPTI cannot call back on cuDeviceGetCount; attributing kernels by launch records");
            self.attribution = Attribution::Records;
        }
        self.launch_mode = match self.attribution {
            Attribution::Order => LaunchRecords::Off,
            Attribution::Records => self.launch_records_asked(),
        };
        self.enable_launch_records(self.per_cbid())
    }

    /// How launch records are enabled with `attribution="records"` ([`ENV_LAUNCH_RECORDS`], else
    /// the default for this CUPTI).
    fn launch_records_asked(&self) -> LaunchRecords {
        match (std::env::var(ENV_LAUNCH_RECORDS).as_deref(), self.per_cbid()) {
            (Ok("off"), _) => LaunchRecords::Off,
            (Ok("kind"), _) | (_, None) => LaunchRecords::WholeDriverKind,
            (Ok("cbid"), Some(_)) => LaunchRecords::PerCbid,
            (_, Some(_)) => LaunchRecords::KindMinusOthers,
        }
    }

    /// CUPTI's correlation id of a call made now: `numbered_call` must call `cuDeviceGetCount`
    /// once on this thread (the runner passes the driver's). Launches made before it have lower
    /// ids, launches after it higher ones, on every thread. `None` when this session does not
    /// number regions (`attribution="records"`, or stopped, and `numbered_call` is not called);
    /// `Some(0)` when CUPTI gave the call no id.
    pub fn correlation_mark(&self, numbered_call: impl FnOnce()) -> Option<u32> {
        if self.attribution != Attribution::Order || self.stopped {
            return None;
        }
        MARK.with(|m| m.set(Some(0)));
        numbered_call();
        Some(MARK.with(|m| m.take()).unwrap_or(0))
    }

    /// Switches this session to `attribution="records"` (launch API records on): for when
    /// [`ActivitySession::correlation_mark`] gives no id.
    pub fn attribute_by_records(&mut self) -> Result<(), EngineError> {
        if self.attribution == Attribution::Records {
            return Ok(());
        }
        self.attribution = Attribution::Records;
        self.launch_mode = self.launch_records_asked();
        if self.paused {
            return Ok(());
        }
        self.enable_launch_records(self.per_cbid())
    }

    /// How this session attributes kernels to regions.
    pub fn attribution(&self) -> Attribution {
        self.attribution
    }

    /// Turns the API records of launches on, as [`LaunchRecords`] says.
    fn enable_launch_records(&self, per_cbid: Option<(ApiSwitch, ApiSwitch)>) -> Result<(), EngineError> {
        let c = self.cupti;
        let enable_kinds = || -> Result<(), EngineError> {
            c.check(
                "cuptiActivityEnable(DRIVER)",
                switch_kind(c, ACTIVITY_KIND_DRIVER, true),
            )?;
            c.check(
                "cuptiActivityEnable(RUNTIME)",
                switch_kind(c, ACTIVITY_KIND_RUNTIME, true),
            )
        };
        match (self.launch_mode, per_cbid) {
            (LaunchRecords::Off, _) => {}
            (LaunchRecords::PerCbid, Some((driver, runtime))) => {
                for id in cbid::LAUNCH_CBIDS {
                    c.check("cuptiActivityEnableDriverApi", driver.set(id, 1))?;
                }
                for id in cbid::RUNTIME_LAUNCH_CBIDS {
                    c.check("cuptiActivityEnableRuntimeApi", runtime.set(id, 1))?;
                }
            }
            (LaunchRecords::KindMinusOthers, Some((driver, runtime))) => {
                enable_kinds()?;
                for id in 1..DRIVER_CBID_LIMIT {
                    // Ids this CUPTI does not know fail harmlessly.
                    if !cbid::LAUNCH_CBIDS.contains(&id) {
                        let _ = driver.set(id, 0);
                    }
                    if !cbid::RUNTIME_LAUNCH_CBIDS.contains(&id) {
                        let _ = runtime.set(id, 0);
                    }
                }
            }
            _ => enable_kinds()?,
        }
        Ok(())
    }

    /// The per-CBID switches of this CUPTI (12.5 and newer), if any.
    fn per_cbid(&self) -> Option<(ApiSwitch, ApiSwitch)> {
        self.cupti.fns.api_switches()
    }

    /// Turns the kernel and launch records off (`true`) or back on: a profiler between two
    /// benchmarks does not trace kernels, so the program's launches outside benchmarks cost what
    /// they cost without kprof. The caller flushes before pausing (records of kernels that ran
    /// stay in CUPTI's buffers). Graph records and the callbacks (graph guard) stay on.
    pub fn set_paused(&mut self, paused: bool) -> Result<(), EngineError> {
        if paused == self.paused || self.stopped {
            return Ok(());
        }
        // Graph trace stays on (graph launches are few; executables instantiated meanwhile are
        // then instantiated with it on, as during a benchmark).
        if paused {
            self.disable_kernel_and_launch_records();
        } else {
            self.set_kernel_records(true)?;
            self.enable_launch_records(self.per_cbid())?;
        }
        self.paused = paused;
        Ok(())
    }

    /// Turns the API records of launches on or off alone (kernel and graph records stay as they
    /// are): for measuring what they cost (`truth_check launchparts`).
    pub fn set_launch_records(&self, on: bool) -> Result<(), EngineError> {
        if on {
            return self.enable_launch_records(self.per_cbid());
        }
        let c = self.cupti;
        match (self.launch_mode, self.per_cbid()) {
            (LaunchRecords::PerCbid, Some((d, r))) => {
                for id in cbid::LAUNCH_CBIDS {
                    let _ = d.set(id, 0);
                }
                for id in cbid::RUNTIME_LAUNCH_CBIDS {
                    let _ = r.set(id, 0);
                }
            }
            _ => {
                switch_kind(c, ACTIVITY_KIND_DRIVER, false);
                switch_kind(c, ACTIVITY_KIND_RUNTIME, false);
            }
        }
        Ok(())
    }

    /// Whether the session is paused ([`ActivitySession::set_paused`]).
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Turns the kernel, graph and launch record kinds off.
    fn disable_records(&self) {
        if self.graph_trace == GraphTrace::Graph {
            switch_kind(self.cupti, ACTIVITY_KIND_GRAPH_TRACE, false);
        }
        self.disable_kernel_and_launch_records();
    }

    /// Turns the kernel and launch record kinds off.
    fn disable_kernel_and_launch_records(&self) {
        switch_kind(self.cupti, self.kernel_trace.activity_kind(), false);
        let _ = self.set_launch_records(false);
    }

    /// Guards graph launches ([`graph_guard`]): the resource callback of executable creation and
    /// the driver callbacks of graph launches.
    fn arm_graph_guard(&mut self) -> Result<(), EngineError> {
        let c = self.cupti;
        let Some(enable) = c.fns.enable_callback() else {
            return Ok(());
        };
        graph_guard::arm(c);
        let sub = self.subscriber as SubscriberHandle;
        let mut r = enable.call(
            1,
            sub,
            graph_guard::CB_DOMAIN_RESOURCE,
            graph_guard::CBID_RESOURCE_GRAPHEXEC_CREATED,
        );
        if r == CUPTI_SUCCESS {
            r = enable.call(
                1,
                sub,
                graph_guard::CB_DOMAIN_RESOURCE,
                graph_guard::CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
            );
        }
        for id in graph_guard::GRAPH_LAUNCH_CBIDS {
            if r == CUPTI_SUCCESS {
                r = enable.call(1, sub, graph_guard::CB_DOMAIN_DRIVER_API, id);
            }
        }
        if r != CUPTI_SUCCESS {
            graph_guard::disarm();
            return c.check("cuptiEnableCallback(graph launches)", r);
        }
        Ok(())
    }

    /// Runs `flush` before every kernel launched from now on (an L2 flush, or a
    /// wait for the previous kernel and the GPU's rest: `runner::BeforeEachKernel`), until
    /// [`ActivitySession::stop_flushing_before_kernels`] ([`kernel_flush`]): enables the launch and
    /// stream-capture callbacks of the driver and runtime APIs. Fails when this CUPTI has no
    /// `cuptiEnableCallback` or takes none of the kernel launch callbacks.
    pub fn flush_before_kernels(&mut self, flush: FlushHook) -> Result<(), EngineError> {
        let c = self.cupti;
        let Some(enable) = c.fns.enable_callback() else {
            return Err(EngineError::Unsupported(format!(
                "{} has no cuptiEnableCallback",
                c.path.display()
            )));
        };
        kernel_flush::arm(flush);
        let sub = self.subscriber as SubscriberHandle;
        let mut first_error = None;
        for (domain, id) in self.flush_callbacks() {
            let r = enable.call(1, sub, domain, id);
            if r != CUPTI_SUCCESS && kernel_flush::DRIVER_KERNEL_LAUNCHES.contains(&id) {
                first_error.get_or_insert(r);
            }
        }
        if let Some(r) = first_error {
            let _ = self.stop_flushing_before_kernels();
            return c.check("cuptiEnableCallback(kernel launches)", r);
        }
        Ok(())
    }

    /// Stops [`ActivitySession::flush_before_kernels`]: the launches of the pass in order, and
    /// the first flush that failed.
    pub fn stop_flushing_before_kernels(&mut self) -> PassLaunches {
        if let Some(enable) = self.cupti.fns.enable_callback() {
            let sub = self.subscriber as SubscriberHandle;
            for (domain, id) in self.flush_callbacks() {
                let _ = enable.call(0, sub, domain, id);
            }
        }
        kernel_flush::disarm()
    }

    /// The callbacks [`ActivitySession::flush_before_kernels`] enables (the graph launches only
    /// when the graph guard has not enabled them already: it keeps them).
    fn flush_callbacks(&self) -> Vec<(u32, u32)> {
        let driver = kernel_flush::DRIVER_KERNEL_LAUNCHES
            .iter()
            .chain(&cbid::BEGIN_CAPTURE_CBIDS)
            .chain(&cbid::END_CAPTURE_CBIDS)
            .chain(if self.graph_launch_callbacks {
                &[][..]
            } else {
                &graph_guard::GRAPH_LAUNCH_CBIDS[..]
            });
        let runtime = kernel_flush::RUNTIME_KERNEL_LAUNCHES
            .iter()
            .chain(&kernel_flush::RUNTIME_GRAPH_LAUNCHES)
            .chain(&cbid::RUNTIME_BEGIN_CAPTURE_CBIDS)
            .chain(&cbid::RUNTIME_END_CAPTURE_CBIDS);
        driver
            .map(|&id| (CB_DOMAIN_DRIVER_API, id))
            .chain(runtime.map(|&id| (CB_DOMAIN_RUNTIME_API, id)))
            .collect()
    }

    /// `cuptiEnableCallback(1, subscriber, domain, cbid)`: delivers that callback to the hook of
    /// [`set_callback_hook`]. Fails when this CUPTI lacks `cuptiEnableCallback`.
    pub fn enable_callback(&self, domain: u32, cbid: u32) -> Result<(), EngineError> {
        let c = self.cupti;
        let Some(f) = c.fns.enable_callback() else {
            return Err(EngineError::Unsupported(format!(
                "{} has no cuptiEnableCallback",
                c.path.display()
            )));
        };
        c.check(
            "cuptiEnableCallback",
            f.call(1, self.subscriber as SubscriberHandle, domain, cbid),
        )
    }

    /// Turns the kernel records of this session off or back on (`cuptiActivityDisable` /
    /// `cuptiActivityEnable` of its kernel kind). Records of kernels that already ran stay in
    /// CUPTI's buffers for the next [`ActivitySession::flush`].
    pub fn set_kernel_records(&self, on: bool) -> Result<(), EngineError> {
        // Graph trace stays on: toggling it around graph launches is not needed (counter passes
        // push no external id, so their graph records stay unattributed).
        let c = self.cupti;
        let call = if on {
            "cuptiActivityEnable(kernels)"
        } else {
            "cuptiActivityDisable(kernels)"
        };
        c.check(call, switch_kind(c, self.kernel_trace.activity_kind(), on))
    }

    /// How many graph launches of executables instantiated before this session came as node
    /// records (graph trace switched off for them; see [`graph_guard`]).
    pub fn graph_launches_from_nodes(&self) -> u64 {
        if self.graph_trace == GraphTrace::Graph {
            graph_guard::old_launches()
        } else {
            0
        }
    }

    /// The loaded CUPTI this session uses.
    pub fn cupti(&self) -> &'static Cupti {
        self.cupti
    }

    /// How this session records kernels.
    pub fn kernel_trace(&self) -> KernelTrace {
        self.kernel_trace
    }

    /// How this session times graph launches.
    pub fn graph_trace(&self) -> GraphTrace {
        self.graph_trace
    }

    /// How this session times kernels and graphs, for the results' fingerprint.
    pub fn describe(&self) -> String {
        let attribution = match self.attribution {
            Attribution::Order => "kernels to regions by launch order",
            Attribution::Records => "kernels to regions by launch records",
        };
        format!(
            "{}; {}; {attribution}",
            self.kernel_trace.describe(),
            self.graph_trace.describe()
        )
    }

    /// How launch (driver API) records were enabled.
    pub fn launch_records(&self) -> LaunchRecords {
        self.launch_mode
    }

    /// `cuptiGetTimestamp` (ns; the clock of the activity records).
    pub fn timestamp_ns(&self) -> Result<u64, EngineError> {
        self.cupti.timestamp_ns()
    }

    /// Pushes an external correlation id (kind CUSTOM0) on this thread's CUPTI stack.
    pub fn push_external_id(&self, id: u64) -> Result<(), EngineError> {
        let c = self.cupti;
        c.check(
            "cuptiActivityPushExternalCorrelationId",
            c.fns
                .activity_push_external_correlation_id(EXTERNAL_CORRELATION_KIND_CUSTOM0, id),
        )
    }

    /// Pops this thread's top external correlation id (kind CUSTOM0) and returns it.
    pub fn pop_external_id(&self) -> Result<u64, EngineError> {
        let c = self.cupti;
        let mut id = 0u64;
        c.check(
            "cuptiActivityPopExternalCorrelationId",
            c.fns
                .activity_pop_external_correlation_id(EXTERNAL_CORRELATION_KIND_CUSTOM0, &mut id),
        )?;
        Ok(id)
    }

    /// Kernel records whose kernels started inside `window` (activity clock, ns) among those
    /// gathered since the last [`ActivitySession::flush`], after forcing CUPTI to hand back every
    /// buffer (the records stay for that flush). The run loop sizes a counter pass with it when
    /// its timing pass launched CUDA graphs (`runner::counter_pass::pass_capacity`).
    pub fn kernels_started_in(&self, window: (u64, u64)) -> Result<usize, EngineError> {
        let c = self.cupti;
        c.check(
            "cuptiActivityFlushAll",
            c.fns.activity_flush_all(ACTIVITY_FLAG_FLUSH_FORCED),
        )?;
        let st = lock(&STATE);
        Ok(st
            .batch
            .kernels
            .iter()
            .filter(|k| (window.0..=window.1).contains(&k.start_ns))
            .count())
    }

    /// Forces CUPTI to hand back every buffer and returns the records gathered since the last
    /// flush. The caller must have synchronised the device first (kernel records complete only
    /// when the kernel ends). Any dropped record fails the flush with
    /// [`EngineError::DroppedRecords`].
    pub fn flush(&mut self) -> Result<ActivityBatch, EngineError> {
        let c = self.cupti;
        // Graph trace back on where launches of older executables left it off (graph_guard).
        graph_guard::restore_graph_trace();
        // No lock held here: CUPTI may call buffer_completed on this very thread.
        c.check(
            "cuptiActivityFlushAll",
            c.fns.activity_flush_all(ACTIVITY_FLAG_FLUSH_FORCED),
        )?;
        let mut dropped = 0usize;
        c.check(
            "cuptiActivityGetNumDroppedRecords",
            c.fns.activity_get_num_dropped_records(&mut dropped),
        )?;
        let mut st = lock(&STATE);
        let batch = std::mem::take(&mut st.batch);
        let lost = std::mem::take(&mut st.lost_in_callback) + std::mem::take(&mut st.dropped_reported) + dropped as u64;
        self.last_flush = Some(st.flush_index);
        st.flush_index += 1;
        if let Some(w) = st.dump.as_mut() {
            if let Err(e) = w.flush() {
                st.dump_failed.get_or_insert_with(|| e.to_string());
            }
        }
        if let Some(msg) = st.dump_failed.take() {
            let path = st.dump_path.clone().unwrap_or_default();
            return Err(EngineError::io(
                format!("writing {ENV_RECORD_ACTIVITY}={}", path.display()),
                std::io::Error::other(msg),
            ));
        }
        drop(st);
        if lost > 0 {
            return Err(EngineError::DroppedRecords {
                count: lost,
                buffer_mib: BUFFER_BYTES >> 20,
            });
        }
        Ok(batch)
    }

    /// Writes the region spans that belong to the batch returned by the last [`flush`] into the
    /// `KPROF_RECORD_ACTIVITY` file (no-op when not recording).
    ///
    /// [`flush`]: ActivitySession::flush
    pub fn record_regions(&self, regions: &[RegionSpan]) -> Result<(), EngineError> {
        let mut st = lock(&STATE);
        let flush = self.last_flush.unwrap_or(st.flush_index);
        let path = st.dump_path.clone().unwrap_or_default();
        if let Some(w) = st.dump.as_mut() {
            for span in regions {
                write_dump_line(w, &DumpLine::Region { flush, span: *span })
                    .map_err(|e| EngineError::io(format!("writing {}", path.display()), e))?;
            }
            w.flush()
                .map_err(|e| EngineError::io(format!("writing {}", path.display()), e))?;
        }
        Ok(())
    }

    /// The file records are dumped to, if `KPROF_RECORD_ACTIVITY` was set at start.
    pub fn dump_path(&self) -> Option<PathBuf> {
        lock(&STATE).dump_path.clone()
    }

    /// As [`ActivitySession::stop`], for a session its owner keeps and is about to detach CUPTI
    /// from (a no-op when it already stopped): nothing is recorded after it.
    pub fn end(&mut self) {
        self.stop_inner();
    }

    /// Disables the record kinds and unsubscribes. Records not yet flushed are discarded. CUPTI
    /// stays attached to the process (graph executables instantiated from now on go unseen:
    /// kprof will not detach it later, see [`graph_guard`]).
    pub fn stop(mut self) -> Result<(), EngineError> {
        self.stop_leaving_cupti_attached();
        Ok(())
    }

    fn stop_leaving_cupti_attached(&mut self) {
        if !self.stopped {
            self.stop_inner();
            graph_guard::note_unseen_graph_execs();
        }
    }

    fn stop_inner(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let c = self.cupti;
        if self.subscriber != 0 {
            let _ = c.fns.activity_flush_all(ACTIVITY_FLAG_FLUSH_FORCED);
            self.disable_records();
            graph_guard::disarm();
            switch_kind(c, ACTIVITY_KIND_EXTERNAL_CORRELATION, false);
            let _ = c.fns.unsubscribe(self.subscriber as SubscriberHandle);
            self.subscriber = 0;
        }
        {
            let mut st = lock(&STATE);
            st.batch = ActivityBatch::default();
            if let Some(mut w) = st.dump.take() {
                let _ = w.flush();
            }
        }
        ACTIVE.store(false, Ordering::SeqCst);
    }
}

impl Drop for ActivitySession {
    fn drop(&mut self) {
        self.stop_leaving_cupti_attached();
    }
}

/// Whether an activity session of kprof's is running in this process.
pub fn session_running() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Whether a dump path is configured in the environment (for the runner's messages).
pub fn record_activity_path() -> Option<PathBuf> {
    std::env::var_os(ENV_RECORD_ACTIVITY)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_trace_enables_its_activity_kind() {
        assert_eq!(KernelTrace::Serial.activity_kind(), ACTIVITY_KIND_KERNEL);
        assert_eq!(KernelTrace::Concurrent.activity_kind(), ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
}
