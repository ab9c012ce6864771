//! `reattach`: what attaching CUPTI again costs after kprof detached it (2026-12-02): three
//! cycles of a `Profiler` created, one default benchmark (durations from the counters) of a
//! 1M-float kernel, the profiler dropped (CUPTI detached). Per cycle the host time of
//! `Profiler::new`, of the benchmark (and its counter cost by phase), of the drop, and what the
//! drop did with CUPTI; then the two-stream graph (instantiated before any CUPTI call) by CUDA
//! events with CUPTI detached, against before. What a pass that times graphs with CUPTI detached
//! would pay per detach.

use std::time::Instant;

use kprof::core::model::Config;
use kprof::runner::{BenchOptions, Profiler};

use crate::bench::Bench;
use crate::common::BoxError;
use crate::emit;
use crate::graph_states::replay_ns;

/// See the module's doc.
pub fn reattach(b: &mut Bench) -> Result<(), BoxError> {
    let g2 = b.capture("graph2stream")?;
    let before_ns = replay_ns(b, &g2)?;
    let mut cycles = Vec::new();
    for cycle in 0..3 {
        let t = Instant::now();
        let mut p = Profiler::new()?;
        let new_s = t.elapsed().as_secs_f64();
        let mut opts = BenchOptions::default();
        opts.runs = 5;
        let t = Instant::now();
        let raw = p.bench("k2us", &[Config::new()], &opts, |_, run| {
            let _r = run.region("r")?;
            b.eager("k2us")?;
            Ok(())
        })?;
        let bench_s = t.elapsed().as_secs_f64();
        let cost = kprof::runner::counter_cost();
        let t = Instant::now();
        drop(p);
        let drop_s = t.elapsed().as_secs_f64();
        let detached_ns = replay_ns(b, &g2)?;
        cycles.push(
            serde_json::json!({"cycle": cycle, "new_s": new_s, "bench_s": bench_s, "drop_s": drop_s,
            "values_ns": crate::samples(&raw, kprof::core::model::DEFAULT_METRIC),
            "counter_cost": {"plan_s": cost.plan_s, "sessions": cost.sessions,
                "session_enable_s": cost.session_enable_s, "collections": cost.collections,
                "collect_start_s": cost.collect_start_s, "collect_passes_s": cost.collect_passes_s},
            "cupti": kprof::runner::last_cupti_detach(), "graph2stream_detached_ns": detached_ns}),
        );
    }
    emit(serde_json::json!({"mode": "reattach", "graph2stream_before_ns": before_ns, "cycles": cycles}));
    Ok(())
}
