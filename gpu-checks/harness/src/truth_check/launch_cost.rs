//! `launchcb`, `bracket` and `launchparts`: what kprof's CUPTI session adds to the host time of a
//! launch (launch API records, launch callbacks, each part of a default session), and whether
//! correlation-id marks around launches attribute kernels to regions without launch API records.

use cudarc::driver::PushKernelArg;
use kprof::runner::ReplayMode;

use crate::bench::{grid, Bench, N_SMALL};
use crate::common::BoxError;
use crate::{emit, median, ns_per_launch_queued};

/// An activity session in the default trace options with `attribution`.
fn session_attributing(
    libs: &kprof::loader::Libraries,
    attribution: kprof::choices::Attribution,
) -> Result<kprof::cupti::ActivitySession, kprof::EngineError> {
    let mut trace = kprof::choices::TraceOptions::default();
    trace.attribution = attribution;
    kprof::cupti::ActivitySession::start_traced(libs.cupti, trace)
}

/// What the launch callback of `launchcb callbacks` keeps per launch: correlation id, thread,
/// CUPTI timestamp, the thread's external id (what kprof's launch API and external-correlation
/// records carry today).
static LAUNCH_LOG: std::sync::Mutex<Vec<(u32, u32, u64, u64)>> = std::sync::Mutex::new(Vec::new());
/// The CUPTI whose clock the launch callback reads.
static LAUNCH_CUPTI: std::sync::OnceLock<&'static kprof::cupti::Cupti> = std::sync::OnceLock::new();

thread_local! {
    /// This thread's external id, as kprof pushes it on CUPTI's stack (one level is enough here).
    static EXTERNAL_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A launch callback that records what the launch API records give attribution.
fn record_launch(cb: &kprof::sys::cupti::callback::Callback<'_>) {
    let Some(api) = cb.api() else { return };
    if api.callbackSite != kprof::sys::cupti::API_ENTER {
        return;
    }
    let ts = LAUNCH_CUPTI.get().and_then(|c| c.timestamp_ns().ok()).unwrap_or(0);
    let ext = EXTERNAL_ID.with(|e| e.get());
    let tid = kprof::cupti::current_thread_id();
    LAUNCH_LOG.lock().unwrap().push((api.correlationId, tid, ts, ext));
}

/// A launch callback that does nothing (CUPTI's dispatch alone).
fn ignore_launch(_: &kprof::sys::cupti::callback::Callback<'_>) {}

/// `launchcb VARIANT`: host time per `cuLaunchKernel` (queued, as `launch`) with a bare CUPTI
/// activity session and an external id pushed, one process per variant: `records` (kprof's launch
/// API and external-correlation records, `attribution="records"`), `none` (run with
/// `KPROF_CUPTI_LAUNCH_RECORDS=cbid`: no API records for this context, created before the
/// session), `callbacks` (`none` plus driver and runtime launch callbacks recording what those
/// records carry) and `callbacks-empty` (the same callbacks doing nothing).
pub(crate) fn launch_callbacks(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::sys::cupti::{cbid, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RUNTIME_API};
    ns_per_launch_queued(b, 2)?;
    let plain = ns_per_launch_queued(b, 12)?;
    let libs = kprof::loader::Libraries::load()?;
    // Launch API records as in 2026-12-02, when they were the default (attribution "records").
    let session = session_attributing(libs, kprof::choices::Attribution::Records)?;
    let _ = LAUNCH_CUPTI.set(libs.cupti);
    if variant.starts_with("callbacks") {
        let hook = if variant == "callbacks" {
            record_launch
        } else {
            ignore_launch
        };
        kprof::cupti::collector::set_callback_hook(hook);
        for id in cbid::LAUNCH_CBIDS {
            session.enable_callback(CB_DOMAIN_DRIVER_API, id)?;
        }
        for id in cbid::RUNTIME_LAUNCH_CBIDS {
            session.enable_callback(CB_DOMAIN_RUNTIME_API, id)?;
        }
    }
    session.push_external_id(7)?;
    EXTERNAL_ID.with(|e| e.set(7));
    let inside: Vec<f64> = (0..3).map(|_| ns_per_launch_queued(b, 12)).collect::<Result<_, _>>()?;
    session.pop_external_id()?;
    EXTERNAL_ID.with(|e| e.set(0));
    let logged = LAUNCH_LOG.lock().unwrap().len();
    emit(
        serde_json::json!({"mode": "launchcb", "variant": variant, "plain_ns": plain, "inside_ns": inside,
        "added_ns": median(inside.clone()) - plain, "launch_mode": format!("{:?}", session.launch_records()),
        "callbacks_logged": logged}),
    );
    Ok(())
}

/// Correlation ids that `cuDeviceGetCount` callbacks saw on a thread that armed them (`bracket`).
static MARKS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

thread_local! {
    /// Whether this thread's next `cuDeviceGetCount` is a bracket mark.
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount`.
const CBID_DEVICE_GET_COUNT: u32 = 4;

/// The callback of the bracket marks: keeps the correlation id of an armed `cuDeviceGetCount`.
fn mark_hook(cb: &kprof::sys::cupti::callback::Callback<'_>) {
    if cb.domain() != kprof::sys::cupti::CB_DOMAIN_DRIVER_API || cb.cbid() != CBID_DEVICE_GET_COUNT {
        return;
    }
    let Some(api) = cb.api() else { return };
    if api.callbackSite == kprof::sys::cupti::API_ENTER && ARMED.with(|a| a.get()) {
        MARKS.lock().unwrap().push(api.correlationId);
    }
}

/// One bracket mark: the correlation id CUPTI gives an armed `cuDeviceGetCount` (0 if none came).
fn mark(libs: &kprof::loader::Libraries) -> u32 {
    ARMED.with(|a| a.set(true));
    let _ = libs.cuda.device_count();
    ARMED.with(|a| a.set(false));
    MARKS.lock().unwrap().last().copied().unwrap_or(0)
}

/// `bracket VARIANT`: can kernels be attributed to regions by correlation-id brackets instead of
/// launch API records? One process per variant: `records` (a session with
/// `attribution="records"`: launch API records) and `off` (the same run with
/// `KPROF_CUPTI_LAUNCH_RECORDS=off`: no API records), both with this program's own
/// `cuDeviceGetCount` callback taking the marks (the 2026-12-02 first device call, before kprof had
/// launch order); `order` (a session with `attribution="order"`, the engine's own marks,
/// [`ActivitySession::correlation_mark`](kprof::cupti::ActivitySession::correlation_mark)). Host
/// time per launch, then marks around 5 eager kernels, a cuBLAS sgemm (runtime launch), a 60-node
/// graph and a kernel from a second thread, and one kernel after: each kernel's and graph's
/// correlation id against the marks.
pub(crate) fn bracket(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::choices::Attribution;
    use kprof::sys::cupti::CB_DOMAIN_DRIVER_API;
    ns_per_launch_queued(b, 2)?;
    let plain = ns_per_launch_queued(b, 12)?;
    let libs = kprof::loader::Libraries::load()?;
    let attribution = if variant == "order" {
        Attribution::Order
    } else {
        Attribution::Records
    };
    let mut session = session_attributing(libs, attribution)?;
    if variant != "order" {
        kprof::cupti::collector::set_callback_hook(mark_hook);
        session.enable_callback(CB_DOMAIN_DRIVER_API, CBID_DEVICE_GET_COUNT)?;
    }
    let mark = |session: &kprof::cupti::ActivitySession, libs: &kprof::loader::Libraries| match variant {
        "order" => session.correlation_mark(|| drop(libs.cuda.device_count())).unwrap_or(0),
        _ => mark(libs),
    };
    let g60 = b.capture("graph60")?;
    session.push_external_id(7)?;
    let inside: Vec<f64> = (0..3).map(|_| ns_per_launch_queued(b, 12)).collect::<Result<_, _>>()?;
    b.gpu.sync()?;
    session.flush()?;
    let t_mark = std::time::Instant::now();
    let m0 = mark(&session, libs);
    let mark_ns = t_mark.elapsed().as_nanos() as u64;
    b.axpb_on(&b.gpu.stream.clone(), 0, 5)?;
    b.mm[0].run(&b.blas)?;
    g60.launch()?;
    let side = b.gpu.stream.fork()?;
    let (ctx, axpb, small) = (b.gpu.ctx.clone(), b.axpb.clone(), &b.small);
    std::thread::scope(|sc| -> Result<(), BoxError> {
        sc.spawn(|| -> Result<(), String> {
            ctx.bind_to_thread().map_err(|e| e.to_string())?;
            let mut l = side.launch_builder(&axpb);
            l.arg(small).arg(&N_SMALL);
            unsafe { l.launch(grid(N_SMALL)) }.map_err(|e| e.to_string())?;
            side.synchronize().map_err(|e| e.to_string())
        })
        .join()
        .map_err(|_| "thread panicked")??;
        Ok(())
    })?;
    let m1 = mark(&session, libs);
    b.axpb_on(&b.gpu.stream.clone(), 0, 1)?;
    let m2 = mark(&session, libs);
    b.gpu.sync()?;
    let batch = session.flush()?;
    session.pop_external_id()?;
    let place = |c: u32| {
        if m0 < c && c < m1 {
            "in"
        } else if m1 < c && c < m2 {
            "after"
        } else {
            "outside"
        }
    };
    let kernels: Vec<serde_json::Value> = batch
        .kernels
        .iter()
        .map(|k| {
            serde_json::json!({"corr": k.correlation_id, "graph": k.graph_id, "name": k.name.chars().take(40).collect::<String>(),
            "place": place(k.correlation_id)})
        })
        .collect();
    let graphs: Vec<serde_json::Value> = batch
        .graphs
        .iter()
        .map(|g| serde_json::json!({"corr": g.correlation_id, "place": place(g.correlation_id)}))
        .collect();
    let count = |p: &str| {
        batch
            .kernels
            .iter()
            .filter(|k| k.graph_id == 0 && place(k.correlation_id) == p)
            .count()
            + batch.graphs.iter().filter(|g| place(g.correlation_id) == p).count()
    };
    emit(
        serde_json::json!({"mode": "bracket", "variant": variant, "plain_ns": plain, "inside_ns": inside,
        "added_ns": median(inside.clone()) - plain, "launch_mode": format!("{:?}", session.launch_records()),
        "marks": [m0, m1, m2], "mark_call_ns": mark_ns, "eager_and_graph_items_in": count("in"),
        "items_after": count("after"), "items_outside": count("outside"), "launch_records": batch.launches.len(),
        "external_records": batch.external.len(), "kernels": kernels, "graphs": graphs}),
    );
    Ok(())
}

/// `launchparts`: what each part of kprof's CUPTI session adds to the host time of a launch, in
/// one process, the states interleaved over 10 rounds (the host's own drift, up to 2 us in a few
/// seconds, then falls on every state alike): `plain` (no session), `records` (a session with
/// `attribution="records"`: kernel, graph and launch API records, the graph guard's callbacks),
/// `order` (a session with `attribution="order"`, the default since 2026-12-02: no launch API
/// records, the numbering callback; one region number taken), `order_rangeprofiler` (that and a
/// Range Profiler session enabled, not started, as a default benchmark keeps one for its counter
/// passes), `subscribed` (the order session with the kernel records off: graph records and
/// callbacks only). Each state's median over 4 loops of 500
/// queued launches; per state the median over rounds of its difference to that round's `plain`.
/// Also the host time of one correlation mark (median of 200).
pub(crate) fn launch_parts(b: &mut Bench) -> Result<(), BoxError> {
    use kprof::choices::Attribution;
    let libs = kprof::loader::Libraries::load()?;
    let lib = kprof::counters::CuptiLib::load(&libs.cupti_path)?;
    kprof::counters::range::profiler_initialize(lib)?;
    let ctx = libs.cuda.ensure_context()? as usize;
    let metrics = vec!["gpu__time_duration.sum".to_string()];
    ns_per_launch_queued(b, 2)?;
    let traced = |attribution| session_attributing(libs, attribution);
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut added: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut mark_ns = Vec::new();
    for round in 0..10 {
        let plain = ns_per_launch_queued(b, 4)?;
        let mut row = serde_json::json!({"round": round, "plain": plain});
        let mut record = |st: &'static str, ns: f64, row: &mut serde_json::Value| {
            row[st] = ns.into();
            added.entry(st).or_default().push(ns - plain);
        };
        let session = traced(Attribution::Records)?;
        record("records", ns_per_launch_queued(b, 4)?, &mut row);
        row["records_attribution"] = session.attribution().as_str().into();
        session.stop()?;
        let session = traced(Attribution::Order)?;
        let mark = || session.correlation_mark(|| drop(libs.cuda.device_count())).unwrap_or(0);
        row["order_mark"] = mark().into();
        record("order", ns_per_launch_queued(b, 4)?, &mut row);
        if round == 0 {
            for _ in 0..200 {
                let t = std::time::Instant::now();
                mark();
                mark_ns.push(t.elapsed().as_nanos() as f64);
            }
        }
        {
            // The Range Profiler session a default benchmark keeps open (enabled, not started).
            let rp = kprof::counters::RangeProfiler::new(lib, ctx as _, 0, &metrics, ReplayMode::Application)?;
            record("order_rangeprofiler", ns_per_launch_queued(b, 4)?, &mut row);
            drop(rp);
        }
        session.set_kernel_records(false)?;
        record("subscribed", ns_per_launch_queued(b, 4)?, &mut row);
        session.stop()?;
        rows.push(row);
    }
    let added_median: serde_json::Map<String, serde_json::Value> = added
        .into_iter()
        .map(|(k, v)| (k.to_string(), median(v).into()))
        .collect();
    emit(
        serde_json::json!({"mode": "launchparts", "added_ns_median": added_median, "mark_ns_median": median(mark_ns),
        "rounds": rows}),
    );
    Ok(())
}
