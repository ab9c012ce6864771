//! Recording a counter pass's values into the raw results: per region (range replay) or per
//! kernel mapped to the regions of the run's timing pass, with NaN rows and warnings when the
//! pass gave nothing usable.

use kprof_core::model::{Config, RawResults, DEFAULT_METRIC};
use kprof_core::transforms::combine_kernels;

use super::super::run::SpanRec;
use super::super::sink::{KernelValues, SampleAt, SampleSink};
use super::super::{
    kernel_matches, record_durations, Backend, BenchOptions, Collected, DurationSource, KernelRun, SampleSource, Step,
};
use super::{kernel_order, profiled_outside, CounterPlan, CounterRun};
use crate::error::EngineError;

/// What recording a run's counter values needs: the call's counter plan, the benchmark, its
/// configuration, the step, the device, the run's regions and kernel records, and the call's
/// options.
#[derive(Clone, Copy)]
pub(in crate::runner) struct RecordedRun<'a> {
    pub(in crate::runner) plan: &'a CounterPlan,
    pub(in crate::runner) name: &'a str,
    pub(in crate::runner) config: &'a Config,
    pub(in crate::runner) step: Step,
    pub(in crate::runner) device_idx: u32,
    pub(in crate::runner) spans: &'a [SpanRec],
    pub(in crate::runner) collected: &'a Collected,
    pub(in crate::runner) opts: &'a BenchOptions,
    /// The profiler's backend (whether graph spans come from node records).
    pub(in crate::runner) backend: &'a dyn Backend,
}

impl<'a> RecordedRun<'a> {
    /// Where the run's samples of `region` belong.
    fn at<'b>(&self, region: &'b str) -> SampleAt<'b>
    where
        'a: 'b,
    {
        SampleAt::new(self.name, region, self.step, self.device_idx)
    }
}

/// The values of a kernel- or application-replay pass: per profiled kernel in launch order, the
/// value of every metric; the timing run's window on the activity clock; whether the L2 flush
/// kernels were profiled too.
struct KernelPass<'a> {
    values: &'a Vec<Vec<f64>>,
    window: &'a (u64, u64),
    flushes_profiled: &'a bool,
}

/// Records the counter samples of one run (its timing samples are already recorded).
pub(in crate::runner) fn record_counters(
    sink: &mut SampleSink<'_>,
    raw: &mut RawResults,
    run: &RecordedRun<'_>,
    counters: &CounterRun,
) -> Result<(), EngineError> {
    match counters {
        CounterRun::Failed(msg) => {
            if !run.opts.ignore_failures {
                return Err(EngineError::Benchmark {
                    benchmark: run.name.to_string(),
                    config: run.config.to_string(),
                    run: run.step.run,
                    message: msg.clone(),
                });
            }
            record_nan_all(sink, raw, run, &format!("{msg}; counters recorded as NaN"))
        }
        CounterRun::PerRegion(values) => record_per_region(sink, raw, run, values),
        CounterRun::PerKernel {
            values,
            window,
            flushes_profiled,
            ..
        } => {
            let pass = KernelPass {
                values,
                window,
                flushes_profiled,
            };
            record_per_kernel(sink, raw, run, pass)
        }
    }
}

/// Every metric of every region as NaN, with the warning `msg`. Durations that "auto" took
/// from the counters fall back to this run's kernel records when its counter pass gave
/// nothing usable (the closure launched other kernels there, or more than a counter-data
/// image holds: 100,000 kernels in one region on the H200): a duration is never NaN while
/// the records have it. Other metrics are NaN.
fn record_nan_all(
    sink: &mut SampleSink<'_>,
    raw: &mut RawResults,
    run: &RecordedRun<'_>,
    msg: &str,
) -> Result<(), EngineError> {
    let RecordedRun {
        plan,
        spans,
        collected,
        opts,
        ..
    } = *run;
    let records_instead = opts.duration == DurationSource::Auto && sink.duration_source == SampleSource::Counters;
    let mut from_records = 0;
    for s in spans {
        for (m, u) in plan.metrics.iter().zip(&plan.units) {
            if records_instead && m == DEFAULT_METRIC && !s.failed {
                let kernels = collected.by_region.get(&s.key).map(Vec::as_slice).unwrap_or(&[]);
                let pairs = record_durations(kernels, opts);
                if let Some((kname, value)) = combine_kernels(&pairs, &opts.combine) {
                    let counters = std::mem::replace(&mut sink.duration_source, SampleSource::Records);
                    let values = KernelValues {
                        value,
                        kernel: &kname,
                        breakdown: &pairs,
                    };
                    let pushed = sink.push_as(raw, run.at(&s.name), (m, u), values, None);
                    sink.duration_source = counters;
                    pushed?;
                    from_records += 1;
                    continue;
                }
            }
            sink.push_as(raw, run.at(&s.name), (m, u), KernelValues::NAN, Some(msg))?;
        }
    }
    sink.warnings.push(if from_records > 0 {
        format!("{msg}; its durations come from the kernel records instead (DurationSource records)")
    } else {
        msg.to_string()
    });
    Ok(())
}

/// Range replay: one value per region and metric, by the region's name.
fn record_per_region(
    sink: &mut SampleSink<'_>,
    raw: &mut RawResults,
    run: &RecordedRun<'_>,
    values: &[(String, Vec<f64>)],
) -> Result<(), EngineError> {
    let RecordedRun {
        plan,
        name,
        config,
        step,
        spans,
        ..
    } = *run;
    for s in spans {
        let got = values.iter().find(|(n, _)| *n == s.name);
        for (i, (m, u)) in plan.metrics.iter().zip(&plan.units).enumerate() {
            let v = got.and_then(|(_, v)| v.get(i).copied());
            let warn = (s.failed || v.is_none()).then(|| {
                format!(
                    "{name}: no counter value for region {:?} in run {} of config [{config}]; recorded as NaN",
                    s.name, step.run
                )
            });
            let v = if s.failed { None } else { v };
            let values = KernelValues {
                value: v.unwrap_or(f64::NAN),
                ..KernelValues::NAN
            };
            sink.push_as(raw, run.at(&s.name), (m, u), values, warn.as_deref())?;
        }
    }
    Ok(())
}

/// Kernel or application replay: the profiled kernels' values mapped to the regions of the
/// timing pass (by launch order), combined per region.
fn record_per_kernel(
    sink: &mut SampleSink<'_>,
    raw: &mut RawResults,
    run: &RecordedRun<'_>,
    pass: KernelPass<'_>,
) -> Result<(), EngineError> {
    let RecordedRun {
        plan,
        name,
        config,
        step,
        spans,
        collected,
        opts,
        ..
    } = *run;
    let KernelPass {
        values: per_kernel,
        window: (t0, t1),
        flushes_profiled,
    } = pass;
    // CUDA graph launches are not profiled by the Range Profiler (measured on the H200:
    // only the eager kernels around a 60-node graph gave ranges): the counter pass's
    // kernels are the eager ones; a graph launch keeps its span from the records.
    let eager: Vec<Vec<KernelRun>> = spans
        .iter()
        .map(|s| {
            collected
                .by_region
                .get(&s.key)
                .map(|ks| ks.iter().filter(|k| !k.graph).cloned().collect())
                .unwrap_or_default()
        })
        .collect();
    let graphs: Vec<Vec<&KernelRun>> = spans
        .iter()
        .map(|s| {
            collected
                .by_region
                .get(&s.key)
                .map(|ks| ks.iter().filter(|k| k.graph).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut lists: Vec<&[KernelRun]> = eager.iter().map(Vec::as_slice).collect();
    // The run's kernels outside every region (e.g. input set-up) were profiled too; the
    // L2 flush kernels of the timing pass only when the counter pass flushed the same way
    // (application replay; kernel replay flushes once, before the pass).
    let outside: Vec<KernelRun> = profiled_outside(&collected.outside, (*t0, *t1), *flushes_profiled)
        .cloned()
        .collect();
    lists.push(&outside);
    let (n, positions) = kernel_order(&lists);
    // A graph launch gives the Range Profiler no range, or (seen on the H200 with the
    // kernel records off and graph records on) one range: with one per launch, those
    // ranges are dropped by their place among the run's items in launch order.
    let graphs_outside: Vec<KernelRun> = collected
        .outside
        .iter()
        .filter(|k| k.graph && k.start_ns >= *t0 && k.start_ns <= *t1)
        .cloned()
        .collect();
    let mut union: Vec<(u64, u64, &str, bool)> = eager
        .iter()
        .flatten()
        .chain(outside.iter())
        .chain(graphs.iter().flatten().copied())
        .chain(graphs_outside.iter())
        .map(|k| (k.start_ns, k.end_ns, k.name.as_str(), k.graph))
        .collect();
    union.sort();
    union.dedup();
    let n_graphs = union.iter().filter(|u| u.3).count();
    let dropped_graph_ranges: Vec<Vec<f64>>;
    let per_kernel: &Vec<Vec<f64>> = if n_graphs > 0 && per_kernel.len() == n + n_graphs {
        dropped_graph_ranges = union
            .iter()
            .zip(per_kernel.iter())
            .filter(|(u, _)| !u.3)
            .map(|(_, v)| v.clone())
            .collect();
        &dropped_graph_ranges
    } else {
        per_kernel
    };
    if n != per_kernel.len() {
        let msg = format!(
            "{name}: {} replay profiled {} kernel(s) in the counter pass of run {} of config [{config}] but \
             the timing pass ran {n}; the closure must launch the same kernels every time it runs (it runs \
             once for timing and again for counters; code that launches other kernels in its first calls \
             only, such as torch.compile's mode=\"reduce-overhead\", which records its CUDA graph in the \
             second call, needs more warm-up runs: the warmup option), and no CUDA call in it may launch kernels of the \
             driver's own (the counters see them, the kernel records do not: e.g. \
             cuCtxResetPersistingL2Cache, or more kernels than a counter-data image holds). Counters \
             recorded as NaN",
            plan.mode.cupti_name(),
            per_kernel.len(),
            step.run
        );
        return record_nan_all(sink, raw, run, &msg);
    }
    for (((s, kernels), pos), graph_items) in spans.iter().zip(&lists).zip(&positions).zip(&graphs) {
        for (i, (m, u)) in plan.metrics.iter().zip(&plan.units).enumerate() {
            let keep = |k: &KernelRun| !opts.ignore_kernels.iter().any(|ig| kernel_matches(k, ig));
            // Kernels and graph launches in launch (start) order: a graph launch's
            // duration is its span from the records; other metrics have no value
            // for it (not profiled), so it is left out of them.
            let mut items: Vec<(u64, &str, f64)> = kernels
                .iter()
                .zip(pos)
                .filter(|(k, _)| keep(k))
                .map(|(k, &p)| {
                    (
                        k.start_ns,
                        k.name.as_str(),
                        per_kernel[p].get(i).copied().unwrap_or(f64::NAN),
                    )
                })
                .collect();
            if m == DEFAULT_METRIC {
                // A graph span merged from node records that ends after the timing pass
                // took in node records of the counter pass: seen on the H200 (CUPTI 13.0) with concurrent
                // records turned off for the counter pass and on again, node records
                // of later launches came with an earlier launch's correlation id. Such
                // a span is not the graph's: NaN, and a warning once per bench.
                let stretched =
                    run.backend.graph_spans_from_nodes() && graph_items.iter().any(|k| keep(k) && k.end_ns > *t1);
                items.extend(graph_items.iter().filter(|k| keep(k)).map(|k| {
                    let v = if stretched {
                        f64::NAN
                    } else {
                        k.end_ns.saturating_sub(k.start_ns) as f64
                    };
                    (k.start_ns, k.name.as_str(), v)
                }));
                items.sort_by_key(|(t, _, _)| *t);
                let msg = format!(
                    "{name}: a CUDA graph's node records ran past the timing pass (CUPTI mixes the node \
                     records of the counter pass into them): its span is NaN; use duration_source=\"records\" \
                     for benchmarks that replay graphs instantiated before kprof's first benchmark"
                );
                if stretched && !sink.warnings.contains(&msg) {
                    sink.warnings.push(msg);
                }
            }
            let pairs: Vec<(&str, f64)> = items.iter().map(|(_, n, v)| (*n, *v)).collect();
            // The row's DurationSource: a region of graph replays only has its
            // duration from the records, one of eager kernels and graph replays from
            // both.
            let from_graphs = m == DEFAULT_METRIC && graph_items.iter().any(|k| keep(k));
            let source = match (from_graphs, kernels.iter().any(keep)) {
                (true, false) => SampleSource::Records,
                (true, true) => SampleSource::CountersAndRecords,
                (false, _) => sink.duration_source,
            };
            let counters = std::mem::replace(&mut sink.duration_source, source);
            let pushed = match (s.failed, combine_kernels(&pairs, &opts.combine)) {
                (false, Some((kname, value))) => {
                    let values = KernelValues {
                        value,
                        kernel: &kname,
                        breakdown: &pairs,
                    };
                    sink.push_as(raw, run.at(&s.name), (m, u), values, None)
                }
                _ => sink.push_as(raw, run.at(&s.name), (m, u), KernelValues::NAN, None),
            };
            sink.duration_source = counters;
            pushed?;
        }
    }
    Ok(())
}
