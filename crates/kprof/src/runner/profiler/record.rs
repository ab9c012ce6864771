//! Recording a flushed run into the raw results: its samples (or NaN rows and warnings), its
//! counter values (`counter_pass`), and the stopping policy's and progress hook's view of it.

use std::time::Duration;

use kprof_core::io::trace::Timeline;
use kprof_core::policy::Decision;
use kprof_core::transforms::combine_kernels;

use super::super::counter_pass::{record_counters, RecordedRun};
use super::super::run::SpanRec;
use super::super::sink::{KernelValues, SampleAt, SampleSink};
use super::super::CUDA_EVENTS_METRIC;
use super::super::{one_pass, progress, timeline};
use super::super::{record_durations, Backend, Collected, Progress, SampleSource, Step};
use super::may_take_one_pass;
use super::sweep::{MapRefresh, PendingRun, Sweep};
use crate::error::EngineError;

/// What recording a flushed run uses of the profiler: the sample sink, the timeline of the bench
/// call, and the backend.
pub(super) struct Recorder<'a> {
    pub(super) sink: SampleSink<'a>,
    pub(super) timeline: &'a mut Timeline,
    pub(super) backend: &'a dyn Backend,
}

impl Recorder<'_> {
    /// Records one run's samples (or NaN rows and warnings) from a flushed batch, and lets the
    /// stopping policy decide. A closure failure without `ignore_failures` is returned.
    pub(super) fn record_run(
        &mut self,
        sw: &mut Sweep<'_>,
        run: PendingRun,
        collected: &Collected,
        flush_share: Duration,
        one_pass: bool,
    ) -> Result<(), EngineError> {
        sw.spent[run.step.config] += run.wall + flush_share;
        if run.step.warmup {
            return self.record_warmup(sw, run, collected);
        }
        let PendingRun {
            step,
            spans,
            failure,
            counters,
            window,
            ..
        } = run;
        let (name, opts) = (sw.name, sw.opts);
        let config = &sw.configs[step.config];
        if !one_pass && failure.is_none() && sw.map_refresh[step.config] == MapRefresh::Waiting {
            // The map taken again from this run's timing pass (`Profiler::one_pass_step`).
            sw.kernel_maps[step.config] = one_pass::KernelMap::of_warmup(&spans, collected, window);
            sw.map_refresh[step.config] = MapRefresh::Done;
        }
        for s in &spans {
            if !sw.known_regions.contains(&s.name) {
                sw.known_regions.push(s.name.clone());
            }
        }
        if self.sink.metric != CUDA_EVENTS_METRIC {
            // A run in one pass has no kernel records: its regions only (its configuration's
            // warm-up run, whose records the map holds, is in the timeline with its kernels).
            let records = if one_pass { &Collected::default() } else { collected };
            timeline::append(self.timeline, &config.to_string(), step.run, &spans, records);
        }
        if let Some(e) = failure {
            if !opts.ignore_failures {
                return Err(e);
            }
            let msg = format!(
                "{name}: run {} of config [{config}] failed, recorded as NaN: {e}",
                step.run
            );
            for region in &sw.known_regions {
                let at = SampleAt::new(name, region, step, sw.device_idx);
                self.sink.push(&mut sw.raw, at, KernelValues::NAN, Some(&msg))?;
            }
            self.sink.warnings.push(msg);
            sw.policy_values[step.config].push(f64::NAN);
        } else {
            let (mut total, mut any) = self.record_regions(sw, step, &spans, collected)?;
            let raw = &mut sw.raw;
            let samples_before = raw.samples.len();
            if let (Some(c), Some(st)) = (&counters, &sw.counters) {
                let run = RecordedRun {
                    plan: &st.plan,
                    name,
                    config,
                    step,
                    device_idx: sw.device_idx,
                    spans: &spans,
                    collected,
                    opts,
                    backend: self.backend,
                };
                record_counters(&mut self.sink, raw, &run, c)?;
            }
            if one_pass {
                // The map's kernels are the warm-up's: the policy sees this run's counters.
                (total, any) = one_pass::durations_total(raw, samples_before);
            }
            sw.policy_values[step.config].push(if any { total } else { f64::NAN });
        }
        policy_and_progress(sw, step);
        Ok(())
    }

    /// A warm-up run: its kernels become its configuration's map for runs in one pass, and a
    /// failure is returned, or a warning with `ignore_failures`.
    fn record_warmup(&mut self, sw: &mut Sweep<'_>, run: PendingRun, collected: &Collected) -> Result<(), EngineError> {
        let PendingRun {
            step,
            spans,
            failure,
            window,
            ..
        } = run;
        let (name, opts) = (sw.name, sw.opts);
        let config = &sw.configs[step.config];
        // The last warm-up's kernels are what its configuration's runs in one pass map to.
        sw.kernel_maps[step.config] = match &failure {
            None => one_pass::KernelMap::of_warmup(&spans, collected, window),
            Some(_) => None,
        };
        if self.sink.metric != CUDA_EVENTS_METRIC
            && may_take_one_pass(self.sink.duration_source, opts)
            && sw.kernel_maps[step.config].is_some()
        {
            let label = format!("{config} (warm-up)");
            timeline::append(self.timeline, &label, step.run, &spans, collected);
        }
        if let Some(e) = failure {
            if !opts.ignore_failures {
                return Err(e);
            }
            self.sink.warnings.push(format!(
                "{name}: warm-up run {} of config [{config}] failed: {e}",
                step.run
            ));
        }
        Ok(())
    }

    /// The duration samples of a successful run's regions from the kernel records (NaN rows and
    /// warnings for regions without a value); returns the total and whether any region had one.
    fn record_regions(
        &mut self,
        sw: &mut Sweep<'_>,
        step: Step,
        spans: &[SpanRec],
        collected: &Collected,
    ) -> Result<(f64, bool), EngineError> {
        let (name, opts) = (sw.name, sw.opts);
        let config = &sw.configs[step.config];
        let raw = &mut sw.raw;
        let mut total = 0.0;
        let mut any = false;
        // With durations from the counters, the counter pass records `gpu__time_duration.sum`
        // (NaN for the regions below too); the records still feed the stopping policy.
        let from_records = self.sink.duration_source != SampleSource::Counters;
        for s in spans {
            // Why the region has no value in this run (it is then recorded as NaN).
            let nan_reason = if s.failed {
                Some(format!(
                    "{name}: region {:?} failed in run {} of config [{config}] (failure ignored); recorded as NaN",
                    s.name, step.run
                ))
            } else {
                let kernels = collected.by_region.get(&s.key).map(Vec::as_slice).unwrap_or(&[]);
                let pairs = record_durations(kernels, opts);
                match combine_kernels(&pairs, &opts.combine) {
                    Some((kname, value)) => {
                        total += value;
                        any = true;
                        if from_records {
                            let at = SampleAt::new(name, &s.name, step, sw.device_idx);
                            let values = KernelValues {
                                value,
                                kernel: &kname,
                                breakdown: &pairs,
                            };
                            self.sink.push(raw, at, values, None)?;
                        }
                        None
                    }
                    None => {
                        let what = if kernels.is_empty() {
                            "launched no kernel"
                        } else {
                            "launched only ignored kernels"
                        };
                        Some(format!(
                            "{name}: region {:?} {what} in run {} of config [{config}]; recorded as NaN",
                            s.name, step.run
                        ))
                    }
                }
            };
            if let Some(msg) = nan_reason {
                if from_records {
                    let at = SampleAt::new(name, &s.name, step, sw.device_idx);
                    self.sink.push(raw, at, KernelValues::NAN, Some(&msg))?;
                }
                self.sink.warnings.push(msg);
            }
        }
        Ok((total, any))
    }
}

/// Lets the stopping policy decide on the run's configuration, and tells the progress hook.
fn policy_and_progress(sw: &mut Sweep<'_>, step: Step) {
    let opts = sw.opts;
    if let Some(p) = &opts.policy {
        if matches!(
            p.decide(&sw.policy_values[step.config], sw.spent[step.config]),
            Decision::Stop(_)
        ) {
            sw.sched.stop(step.config);
        }
    }
    if let Some(hook) = &opts.progress {
        let done: Vec<usize> = sw.policy_values.iter().map(Vec::len).collect();
        hook.call(&Progress {
            config: step.config,
            run: step.run,
            done_runs: done.iter().map(|&d| d as u64).sum(),
            total_runs: progress::expected_total(&done, |c| sw.sched.is_stopped(c), opts.max_runs()),
        });
    }
}
