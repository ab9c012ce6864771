//! `graphstates`: which part of kprof's CUPTI session slows a CUDA graph captured from two
//! streams (the failing graph rows of the verdict table: +8 % in Rust, +19 % in torch against CUDA events in a
//! process without a profiler, while a one-stream graph of 60 nodes holds within 3 %).
//!
//! One process; the graph of two streams (30 + 30 one-element-per-thread kernels over 1M floats)
//! and the one-stream graph of 60, each instantiated before any CUPTI call (`pre`) and again
//! inside every state (`in`), timed by CUDA events around one replay (median of 20 after 3) in
//! each state, rounds interleaved:
//!
//! - `plain`: no CUPTI session (round 0: before any CUPTI call; later rounds: after the states
//!   below were torn down, the profiler initialised);
//! - `activity`: kprof's activity session as a default benchmark's timing pass has it
//!   (concurrent kernel records, graph records, launch order); `activity_graph_only`: that with
//!   the kernel records off; `activity_nodes`: graph trace `nodes`;
//! - `rangeprof_app` / `rangeprof_kernel`: a Range Profiler session (gpu__time_duration.sum)
//!   enabled, not started, as a default benchmark keeps one open between its counter passes;
//! - `activity_rangeprof`: both, the state of a default benchmark's timing pass.
//!
//! Per state and graph: the events' median and, where the state records them, the median span
//! of CUPTI's graph records (start of the first node to end of the last) for the same launches.

use kprof::choices::{GraphTrace, TraceOptions};
use kprof::cupti::ActivitySession;
use kprof::runner::ReplayMode;

use crate::bench::Bench;
use crate::common::BoxError;
use crate::{emit, median};

use cudarc::driver::CudaGraph;

const GRAPHS: [&str; 2] = ["graph2stream", "graph60"];

/// Median GPU time (ns) of one replay of `g` by CUDA events on the capture stream (20 after 3).
pub(crate) fn replay_ns(b: &Bench, g: &CudaGraph) -> Result<f64, BoxError> {
    crate::events_ns(&b.gpu.ctx, &b.cap, &mut || Ok(g.launch()?))
}

/// Both graphs, instantiated now (before any CUPTI call, where the callers use them).
pub(crate) fn capture_graphs(b: &mut Bench) -> Result<Vec<(&'static str, CudaGraph)>, BoxError> {
    GRAPHS.iter().map(|n| Ok((*n, b.capture(n)?))).collect()
}

/// The graphs of every state: instantiated before any CUPTI call, then inside the state
/// (`{name}_pre`, `{name}_in`: the events' medians, ns); with a session, the spans of its
/// graph records of the same launches.
pub(crate) fn measure_state(
    b: &mut Bench,
    pre: &[(&str, CudaGraph)],
    session: Option<&mut ActivitySession>,
) -> Result<serde_json::Value, BoxError> {
    let mut row = serde_json::Map::new();
    let mut spans = serde_json::Map::new();
    let mut session = session;
    for (name, g) in pre {
        let key = format!("{name}_pre");
        row.insert(key.clone(), replay_ns(b, g)?.into());
        if let Some(s) = session.as_deref_mut() {
            spans.insert(key, graph_span_ns(s)?.into());
        }
    }
    for name in GRAPHS {
        let g = b.capture(name)?;
        let key = format!("{name}_in");
        row.insert(key.clone(), replay_ns(b, &g)?.into());
        if let Some(s) = session.as_deref_mut() {
            spans.insert(key, graph_span_ns(s)?.into());
        }
    }
    if !spans.is_empty() {
        row.insert("graph_record_ns".into(), spans.into());
    }
    Ok(row.into())
}

/// The median span of the graph records flushed since the last call (NaN without any).
fn graph_span_ns(s: &mut ActivitySession) -> Result<f64, BoxError> {
    let batch = s.flush()?;
    let v: Vec<f64> = batch
        .graphs
        .iter()
        .map(|g| g.end_ns.saturating_sub(g.start_ns) as f64)
        .collect();
    Ok(if v.is_empty() { f64::NAN } else { median(v) })
}

/// See the module's doc.
pub fn graph_states(b: &mut Bench) -> Result<(), BoxError> {
    let libs = kprof::loader::Libraries::load()?;
    let pre = capture_graphs(b)?;
    let mut rounds = Vec::new();
    let mut by_state: std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<f64>>> =
        Default::default();
    for round in 0..3 {
        let mut row = serde_json::Map::new();
        row.insert("round".into(), round.into());
        row.insert("plain".into(), measure_state(b, &pre, None)?);
        let trace = |graph_trace| {
            let mut t = TraceOptions::default();
            t.graph_trace = graph_trace;
            t
        };
        {
            let mut s = ActivitySession::start_traced(libs.cupti, trace(None))?;
            row.insert("activity".into(), measure_state(b, &pre, Some(&mut s))?);
            s.set_kernel_records(false)?;
            row.insert("activity_graph_only".into(), measure_state(b, &pre, Some(&mut s))?);
            s.stop()?;
        }
        {
            let mut s = ActivitySession::start_traced(libs.cupti, trace(Some(GraphTrace::Nodes)))?;
            row.insert("activity_nodes".into(), measure_state(b, &pre, Some(&mut s))?);
            s.stop()?;
        }
        let lib = kprof::counters::CuptiLib::load(&libs.cupti_path)?;
        let ctx = libs.cuda.ensure_context()?;
        let metrics = ["gpu__time_duration.sum"];
        for (key, mode) in [
            ("rangeprof_app", ReplayMode::Application),
            ("rangeprof_kernel", ReplayMode::Kernel),
        ] {
            let rp = kprof::counters::RangeProfiler::new(lib, ctx as _, 0, &metrics, mode)?;
            row.insert(key.into(), measure_state(b, &pre, None)?);
            drop(rp);
        }
        {
            let rp = kprof::counters::RangeProfiler::new(lib, ctx as _, 0, &metrics, ReplayMode::Application)?;
            let mut s = ActivitySession::start_traced(libs.cupti, trace(None))?;
            row.insert("activity_rangeprof".into(), measure_state(b, &pre, Some(&mut s))?);
            s.stop()?;
            drop(rp);
        }
        for (state, v) in &row {
            if let serde_json::Value::Object(m) = v {
                for (case, ns) in m {
                    if let Some(x) = ns.as_f64() {
                        by_state
                            .entry(state.clone())
                            .or_default()
                            .entry(case.clone())
                            .or_default()
                            .push(x);
                    }
                }
            }
        }
        rounds.push(serde_json::Value::Object(row));
    }
    let medians: serde_json::Map<String, serde_json::Value> = by_state
        .into_iter()
        .map(|(state, cases)| {
            let m: serde_json::Map<String, serde_json::Value> =
                cases.into_iter().map(|(c, v)| (c, median(v).into())).collect();
            (state, m.into())
        })
        .collect();
    emit(serde_json::json!({"mode": "graphstates", "medians": medians, "rounds": rounds}));
    Ok(())
}
