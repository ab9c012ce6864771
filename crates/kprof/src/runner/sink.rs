//! The sample sink: where a recorded run's samples go ([`SampleSink::push_as`]) with the columns
//! every sample of the profiler carries (device, versions, run conditions, `DurationSource`),
//! and the warnings recording gives. The profiler's recording (`profiler/record.rs`) and the
//! counter pass's (`counter_pass/record.rs`) share it.

use kprof_core::kernels::MANGLED_KERNEL_COLUMN;
use kprof_core::model::{ExtraValue, KernelSample, RawResults, Sample, SeriesKey, DEFAULT_METRIC};

use super::{model_error, SampleSource, Step, CUDA_EVENTS_METRIC, DEFAULT_UNIT};
use crate::conditions::runtime::ProfilerConditions;
use crate::error::EngineError;

/// Where a sample belongs: the benchmark, the region, the step (configuration and run) and the
/// device.
#[derive(Clone, Copy)]
pub(super) struct SampleAt<'a> {
    pub(super) benchmark: &'a str,
    pub(super) region: &'a str,
    pub(super) step: Step,
    pub(super) device_idx: u32,
}

impl<'a> SampleAt<'a> {
    pub(super) fn new(benchmark: &'a str, region: &'a str, step: Step, device_idx: u32) -> Self {
        SampleAt {
            benchmark,
            region,
            step,
            device_idx,
        }
    }
}

/// A sample's value, the kernel it is shown with, and the per-kernel values it combines.
#[derive(Clone, Copy)]
pub(super) struct KernelValues<'a> {
    pub(super) value: f64,
    pub(super) kernel: &'a str,
    pub(super) breakdown: &'a [(&'a str, f64)],
}

impl KernelValues<'_> {
    /// No value: NaN, no kernel, no breakdown.
    pub(super) const NAN: KernelValues<'static> = KernelValues {
        value: f64::NAN,
        kernel: "",
        breakdown: &[],
    };
}

/// What recording samples uses of the profiler: its metric, its constant extra columns, the run
/// conditions, the bench call's duration source, and its warnings.
pub(super) struct SampleSink<'a> {
    /// The metric of the profiler's durations (`gpu__time_duration.sum` or
    /// [`CUDA_EVENTS_METRIC`]).
    pub(super) metric: &'static str,
    pub(super) extras: &'a [(String, ExtraValue)],
    pub(super) conditions: &'a ProfilerConditions,
    /// The `DurationSource` column of the durations pushed.
    pub(super) duration_source: SampleSource,
    pub(super) warnings: &'a mut Vec<String>,
}

impl SampleSink<'_> {
    /// Pushes one sample of the profiler's metric (and its kernel breakdown) to `raw`.
    pub(super) fn push(
        &self,
        raw: &mut RawResults,
        at: SampleAt<'_>,
        values: KernelValues<'_>,
        warning: Option<&str>,
    ) -> Result<(), EngineError> {
        self.push_as(raw, at, (self.metric, DEFAULT_UNIT), values, warning)
    }

    /// [`SampleSink::push`] for any metric and unit (counter metrics).
    pub(super) fn push_as(
        &self,
        raw: &mut RawResults,
        at: SampleAt<'_>,
        (metric, unit): (&str, &str),
        values: KernelValues<'_>,
        warning: Option<&str>,
    ) -> Result<(), EngineError> {
        let SampleAt {
            benchmark,
            region,
            step,
            device_idx,
        } = at;
        let KernelValues {
            value,
            kernel,
            breakdown,
        } = values;
        let key = SeriesKey {
            benchmark: benchmark.to_string(),
            annotation: region.to_string(),
            config: step.config as u32,
            metric: metric.to_string(),
        };
        let series = raw.intern_series(key, unit, device_idx).map_err(model_error)?;
        // The Kernel column shows demangled names (as ncu does); the mangled label is kept.
        let shown = kprof_core::kernels::demangle_label(kernel);
        let kernel_idx = raw.intern_kernel(&shown);
        let mut extras: Vec<(&str, ExtraValue)> = self.extras.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        if shown != kernel {
            extras.push((MANGLED_KERNEL_COLUMN, ExtraValue::Text(kernel.to_string())));
        }
        let run_extras = self.conditions.extras_for(step.config, step.run, region);
        extras.extend(run_extras.iter().map(|(n, v)| (n.as_str(), v.clone())));
        if metric == DEFAULT_METRIC || metric == CUDA_EVENTS_METRIC {
            extras.push((
                "DurationSource",
                ExtraValue::Text(self.duration_source.as_str().to_string()),
            ));
        }
        if let Some(w) = warning {
            extras.push(("Warning", ExtraValue::Text(w.to_string())));
        }
        raw.push_sample(
            Sample {
                series,
                run: step.run,
                value,
                kernel: kernel_idx,
            },
            &extras,
        );
        for (position, (kname, v)) in breakdown.iter().enumerate() {
            raw.kernel_breakdown.push(KernelSample {
                series,
                run: step.run,
                position: position as u32,
                kernel: kname.to_string(),
                value: *v,
            });
        }
        Ok(())
    }
}
