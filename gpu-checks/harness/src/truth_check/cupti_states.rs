//! `cuptistates VARIANT`: which single CUPTI call leaves a process's CUDA graphs slower. On
//! 2026-12-02 `graphstates` found a graph captured from two streams at 172.5 µs by CUDA events before
//! any CUPTI session and 193-199 µs afterwards in every state, the sessions stopped included
//! (one-stream graph of 60: 201.9 -> 213-224 µs).
//!
//! One process per variant, CUPTI called directly (dlopen, no kprof session: the probe makes the
//! calls one at a time, which the engine's crate-private FFI table does not offer): the graphs are
//! timed (as in `graphstates`, `measure_state`: instantiated at the start, `pre`, and anew, `in`)
//! before anything (`before`), twice more without any CUPTI call (`control`: the drift of a
//! process without a profiler), after the variant's call (`during`), after its undo (`undone`)
//! and after `cuptiFinalize` (`finalized`). Variants: `none` (no call), `timestamp`
//! (`cuptiGetTimestamp`), `subscribe` (`cuptiSubscribe` with no domain enabled), `callback`
//! (that and the driver callback of `cuGraphLaunch`), `graph` (activity kind GRAPH_TRACE),
//! `concurrent` (CONCURRENT_KERNEL), `driver` (DRIVER API records), `profiler` (kprof's
//! [`Profiler`] after one default benchmark of the two-stream graph, then dropped: whether kprof
//! detaches CUPTI when a profiler ends), `profiler-keep` (the same with the benchmark's graph,
//! instantiated during the session, kept alive: kprof must leave CUPTI attached, and the forced
//! `cuptiFinalize` after it shows why, the kept graph replayed last).

use std::ffi::c_void;

use kprof::core::model::Config;
use kprof::runner::{BenchOptions, Profiler};

use crate::bench::Bench;
use crate::common::BoxError;
use crate::emit;
use crate::graph_states::{capture_graphs, measure_state, replay_ns};

type Subscriber = *mut c_void;
type BufferRequested = extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type BufferCompleted = extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

const BUFFER_BYTES: usize = 8 << 20;

extern "C" fn buffer_requested(buf: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).expect("layout");
    // SAFETY: CUPTI passes valid out-pointers; the buffer is freed in buffer_completed.
    unsafe {
        *buf = std::alloc::alloc(layout);
        *size = BUFFER_BYTES;
        *max_records = 0;
    }
}

extern "C" fn buffer_completed(_ctx: *mut c_void, _stream: u32, buf: *mut u8, _size: usize, _valid: usize) {
    if !buf.is_null() {
        let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).expect("layout");
        // SAFETY: allocated by buffer_requested with this layout.
        unsafe { std::alloc::dealloc(buf, layout) };
    }
}

extern "C" fn ignore_callback(_u: *mut c_void, _d: u32, _cbid: u32, _data: *const c_void) {}

/// The CUPTI calls of the variants, resolved from the libcupti kprof found.
struct Raw {
    _lib: libloading::Library,
    timestamp: unsafe extern "C" fn(*mut u64) -> u32,
    subscribe: unsafe extern "C" fn(*mut Subscriber, *const c_void, *mut c_void) -> u32,
    unsubscribe: unsafe extern "C" fn(Subscriber) -> u32,
    enable_callback: unsafe extern "C" fn(u32, Subscriber, u32, u32) -> u32,
    register: unsafe extern "C" fn(BufferRequested, BufferCompleted) -> u32,
    enable: unsafe extern "C" fn(u32) -> u32,
    disable: unsafe extern "C" fn(u32) -> u32,
    flush_all: unsafe extern "C" fn(u32) -> u32,
    finalize: unsafe extern "C" fn() -> u32,
}

impl Raw {
    fn load(path: &std::path::Path) -> Result<Raw, BoxError> {
        // SAFETY: libcupti's documented C entry points with their C signatures.
        unsafe {
            let lib = libloading::Library::new(path)?;
            macro_rules! sym {
                ($n:literal) => {
                    *lib.get($n)?
                };
            }
            Ok(Raw {
                timestamp: sym!(b"cuptiGetTimestamp\0"),
                subscribe: sym!(b"cuptiSubscribe\0"),
                unsubscribe: sym!(b"cuptiUnsubscribe\0"),
                enable_callback: sym!(b"cuptiEnableCallback\0"),
                register: sym!(b"cuptiActivityRegisterCallbacks\0"),
                enable: sym!(b"cuptiActivityEnable\0"),
                disable: sym!(b"cuptiActivityDisable\0"),
                flush_all: sym!(b"cuptiActivityFlushAll\0"),
                finalize: sym!(b"cuptiFinalize\0"),
                _lib: lib,
            })
        }
    }
}

fn check(call: &str, code: u32) -> Result<(), BoxError> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("{call} returned CUPTI error {code}").into())
    }
}

/// See the module's doc.
pub fn cupti_states(b: &mut Bench, variant: &str) -> Result<(), BoxError> {
    use kprof::sys::cupti::{
        self as k, cbid::CU_GRAPH_LAUNCH as CBID_CU_GRAPH_LAUNCH, CB_DOMAIN_DRIVER_API as DRIVER_DOMAIN,
    };
    let kind = match variant {
        "graph" => Some(k::ACTIVITY_KIND_GRAPH_TRACE),
        "concurrent" => Some(k::ACTIVITY_KIND_CONCURRENT_KERNEL),
        "driver" => Some(k::ACTIVITY_KIND_DRIVER),
        "none" | "timestamp" | "subscribe" | "callback" | "profiler" | "profiler-keep" => None,
        other => return Err(format!("no cuptistates variant {other}").into()),
    };
    let libs = kprof::loader::Libraries::load()?;
    let raw = Raw::load(&libs.cupti_path)?;
    let pre = capture_graphs(b)?;
    let measure = |b: &mut Bench| measure_state(b, &pre, None);
    let mut out = serde_json::Map::new();
    out.insert("before".into(), measure(b)?);
    out.insert("control1".into(), measure(b)?);
    out.insert("control2".into(), measure(b)?);
    let mut subscriber: Subscriber = std::ptr::null_mut();
    let mut profiler = None;
    let mut kept = None;
    if variant.starts_with("profiler") {
        let mut p = Profiler::new()?;
        let g = b.capture("graph2stream")?;
        let mut opts = BenchOptions::default();
        opts.runs = 5;
        let raw = p.bench("graph2stream", &[Config::new()], &opts, |_, run| {
            let _r = run.region("r")?;
            g.launch()?;
            Ok(())
        })?;
        let v = crate::samples(&raw, kprof::core::model::DEFAULT_METRIC);
        out.insert("profiler_ns".into(), v.into());
        profiler = Some(p);
        if variant == "profiler-keep" {
            kept = Some(g);
        }
    }
    // SAFETY: each call is libcupti's, with arguments of its C signature; the subscriber is
    // this function's and is released below.
    unsafe {
        match variant {
            "timestamp" => {
                let mut t = 0u64;
                check("cuptiGetTimestamp", (raw.timestamp)(&mut t))?;
            }
            "subscribe" | "callback" => {
                check(
                    "cuptiSubscribe",
                    (raw.subscribe)(&mut subscriber, ignore_callback as *const c_void, std::ptr::null_mut()),
                )?;
                if variant == "callback" {
                    check(
                        "cuptiEnableCallback",
                        (raw.enable_callback)(1, subscriber, DRIVER_DOMAIN, CBID_CU_GRAPH_LAUNCH),
                    )?;
                }
            }
            _ => {}
        }
        if let Some(k) = kind {
            check(
                "cuptiActivityRegisterCallbacks",
                (raw.register)(buffer_requested, buffer_completed),
            )?;
            check("cuptiActivityEnable", (raw.enable)(k))?;
        }
    }
    eprintln!("cuptistates {variant}: measuring during");
    out.insert("during".into(), measure(b)?);
    // SAFETY: as above.
    unsafe {
        if let Some(k) = kind {
            check("cuptiActivityDisable", (raw.disable)(k))?;
            check("cuptiActivityFlushAll", (raw.flush_all)(1))?;
        }
        if !subscriber.is_null() {
            if variant == "callback" {
                check(
                    "cuptiEnableCallback",
                    (raw.enable_callback)(0, subscriber, DRIVER_DOMAIN, CBID_CU_GRAPH_LAUNCH),
                )?;
            }
            check("cuptiUnsubscribe", (raw.unsubscribe)(subscriber))?;
        }
    }
    if let Some(p) = profiler.take() {
        drop(p);
    }
    eprintln!("cuptistates {variant}: measuring undone");
    out.insert("undone".into(), measure(b)?);
    out.insert(
        "graph_execs_under_cupti".into(),
        kprof::cupti::graph_guard::graph_execs_under_cupti().into(),
    );
    let finalize = if variant == "none" || variant == "profiler" {
        0
    } else {
        // SAFETY: no subscriber or activity kind is left on.
        unsafe { (raw.finalize)() }
    };
    eprintln!("cuptistates {variant}: measuring finalized");
    out.insert("finalized".into(), measure(b)?);
    out.insert("finalize_code".into(), finalize.into());
    out.insert("variant".into(), variant.into());
    out.insert("mode".into(), "cuptistates".into());
    if let Some(g) = kept {
        // Printed first: the replay below may fail the process.
        println!("TRUTH {}", serde_json::Value::Object(out.clone()));
        eprintln!("cuptistates {variant}: replaying the kept graph");
        let kept_ns = replay_ns(b, &g).map_err(|e| e.to_string());
        out.insert("kept_after_finalize".into(), format!("{kept_ns:?}").into());
    }
    emit(serde_json::Value::Object(out));
    Ok(())
}
