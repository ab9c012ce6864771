//! The measurement model: raw samples identified by key, and the processed table built from them.
//!
//! A raw sample is one value of one metric for one region ("annotation") in one run of one
//! configuration of one benchmark. Everything except the run index and the value is interned, so
//! millions of samples cost 24 bytes each ([`Sample`]). Runs are identified by their index, never
//! by their position in the sample list.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// The metric kprof records by default: GPU time of a region's kernels, in nanoseconds.
pub const DEFAULT_METRIC: &str = "gpu__time_duration.sum";

/// One typed value of a configuration parameter.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum ParamValue {
    /// An integer parameter (sizes, counts).
    Int(i64),
    /// A floating-point parameter.
    Float(f64),
    /// A boolean flag.
    Bool(bool),
    /// Any other value, kept as text (dtypes, layouts, names).
    Str(String),
}

impl ParamValue {
    /// Infers a typed value from CSV text: integers, then floats, then `true`/`false`
    /// (any case, as pandas writes `True`), else text.
    pub fn infer(text: &str) -> ParamValue {
        let t = text.trim();
        if let Ok(i) = t.parse::<i64>() {
            return ParamValue::Int(i);
        }
        if let Ok(f) = t.parse::<f64>() {
            return ParamValue::Float(f);
        }
        match t.to_ascii_lowercase().as_str() {
            "true" => ParamValue::Bool(true),
            "false" => ParamValue::Bool(false),
            _ => ParamValue::Str(text.to_string()),
        }
    }

    /// The value as a number, when it is one (booleans count as 0 and 1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ParamValue::Int(i) => Some(*i as f64),
            ParamValue::Float(f) => Some(*f),
            ParamValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            ParamValue::Str(_) => None,
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x:?}"),
            ParamValue::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

impl PartialEq for ParamValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ParamValue::Int(a), ParamValue::Int(b)) => a == b,
            (ParamValue::Float(a), ParamValue::Float(b)) => a.to_bits() == b.to_bits(),
            (ParamValue::Bool(a), ParamValue::Bool(b)) => a == b,
            (ParamValue::Str(a), ParamValue::Str(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for ParamValue {}

impl Hash for ParamValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            ParamValue::Int(i) => i.hash(state),
            ParamValue::Float(f) => f.to_bits().hash(state),
            ParamValue::Bool(b) => b.hash(state),
            ParamValue::Str(s) => s.hash(state),
        }
    }
}

impl From<i64> for ParamValue {
    fn from(v: i64) -> Self {
        ParamValue::Int(v)
    }
}
impl From<i32> for ParamValue {
    fn from(v: i32) -> Self {
        ParamValue::Int(v.into())
    }
}
impl From<usize> for ParamValue {
    fn from(v: usize) -> Self {
        ParamValue::Int(v as i64)
    }
}
impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        ParamValue::Float(v)
    }
}
impl From<bool> for ParamValue {
    fn from(v: bool) -> Self {
        ParamValue::Bool(v)
    }
}
impl From<&str> for ParamValue {
    fn from(v: &str) -> Self {
        ParamValue::Str(v.to_string())
    }
}
impl From<String> for ParamValue {
    fn from(v: String) -> Self {
        ParamValue::Str(v)
    }
}

/// One configuration of a benchmark: parameter names and values, in the benchmark's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config {
    /// `(name, value)` pairs in declaration order.
    pub params: Vec<(String, ParamValue)>,
}

impl Config {
    /// An empty configuration (a benchmark without parameters).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one parameter and returns the configuration (builder style).
    pub fn with(mut self, name: impl Into<String>, value: impl Into<ParamValue>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// The value of the parameter called `name`.
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Parameter names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.params.iter().map(|(n, _)| n.as_str())
    }
}

impl fmt::Display for Config {
    /// `n=4096, dtype=fp16`, the label nsight-python uses on plot axes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// The device a sample was measured on: nsight-python's `GPU`, `Host`, `ComputeClock` and
/// `MemoryClock` columns. The clocks are the device's *rated* values in kHz, not measured ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// GPU name, e.g. `NVIDIA H200`.
    pub gpu: String,
    /// Host name of the machine.
    pub host: String,
    /// Rated SM clock in kHz, when known.
    pub compute_clock_khz: Option<f64>,
    /// Rated memory clock in kHz, when known.
    pub memory_clock_khz: Option<f64>,
}

impl Eq for DeviceInfo {}

impl Hash for DeviceInfo {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.gpu.hash(state);
        self.host.hash(state);
        self.compute_clock_khz.map(f64::to_bits).hash(state);
        self.memory_clock_khz.map(f64::to_bits).hash(state);
    }
}

/// Everything that identifies a measured quantity except the run: the statistics group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    /// Benchmark (function) name.
    pub benchmark: String,
    /// Region ("annotation") name.
    pub annotation: String,
    /// Index into [`RawResults::configs`].
    pub config: u32,
    /// Metric name, e.g. `gpu__time_duration.sum`.
    pub metric: String,
}

/// One series: its key plus what is constant along it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The series' identity.
    pub key: SeriesKey,
    /// Unit of the metric (`ns`, `byte`, `%`, `x` for ratios, empty when unknown).
    pub unit: String,
    /// Index into [`RawResults::devices`].
    pub device: u32,
}

/// One raw sample: the value of a series in one run. NaN marks a failed run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Index into [`RawResults::series`].
    pub series: u32,
    /// Run index within the configuration (0-based, unique per series).
    pub run: u32,
    /// The measured value; NaN for a failed run.
    pub value: f64,
    /// Index into [`RawResults::kernel_names`]: the kernel(s) behind the value, joined with `|`.
    pub kernel: u32,
}

/// The value of one free-form column (an info collector, a run condition) in one sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ExtraValue {
    /// No value.
    #[default]
    Missing,
    /// A number.
    Number(f64),
    /// Anything else.
    Text(String),
}

impl ExtraValue {
    /// Infers a number or text from CSV text; empty text is missing.
    pub fn infer(text: &str) -> ExtraValue {
        if text.is_empty() {
            ExtraValue::Missing
        } else if let Ok(x) = text.trim().parse::<f64>() {
            ExtraValue::Number(x)
        } else {
            ExtraValue::Text(text.to_string())
        }
    }
}

impl fmt::Display for ExtraValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtraValue::Missing => Ok(()),
            ExtraValue::Number(x) => write!(f, "{x}"),
            ExtraValue::Text(s) => f.write_str(s),
        }
    }
}

/// A free-form column, one value per sample (aligned with [`RawResults::samples`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtraColumn {
    /// Column name.
    pub name: String,
    /// One value per sample.
    pub values: Vec<ExtraValue>,
}

/// One kernel's value inside a region's run, kept when several kernels were combined.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelSample {
    /// Index into [`RawResults::series`].
    pub series: u32,
    /// Run index.
    pub run: u32,
    /// Position of the kernel among the region's kernels in that run (launch order).
    pub position: u32,
    /// Kernel name.
    pub kernel: String,
    /// The kernel's own value.
    pub value: f64,
}

/// A sample given by its full key, as producers (the engine, readers) hand it over.
#[derive(Clone, Debug)]
pub struct SampleRecord<'a> {
    /// Benchmark name.
    pub benchmark: &'a str,
    /// Region name.
    pub annotation: &'a str,
    /// The configuration.
    pub config: &'a Config,
    /// Run index.
    pub run: u32,
    /// Metric name.
    pub metric: &'a str,
    /// Value (NaN for a failed run).
    pub value: f64,
    /// Unit of the value.
    pub unit: &'a str,
    /// Kernel name(s), joined with `|`.
    pub kernel: &'a str,
    /// Device the sample was measured on.
    pub device: &'a DeviceInfo,
    /// Free-form columns of this sample.
    pub extras: &'a [(&'a str, ExtraValue)],
}

/// All raw samples of a profiling session, interned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawResults {
    /// Distinct configurations.
    pub configs: Vec<Config>,
    /// Distinct devices.
    pub devices: Vec<DeviceInfo>,
    /// Distinct kernel-name strings.
    pub kernel_names: Vec<String>,
    /// Distinct series.
    pub series: Vec<Series>,
    /// The samples.
    pub samples: Vec<Sample>,
    /// Free-form columns, each with one value per sample.
    pub extras: Vec<ExtraColumn>,
    /// Per-kernel values behind combined samples.
    pub kernel_breakdown: Vec<KernelSample>,
    #[serde(skip)]
    index: Interner,
}

#[derive(Clone, Debug, Default)]
struct Interner {
    configs: HashMap<Config, u32>,
    devices: HashMap<DeviceInfo, u32>,
    kernels: HashMap<String, u32>,
    series: HashMap<SeriesKey, u32>,
}

/// The index is derived from the lists, so it never makes two result sets different.
impl PartialEq for Interner {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

fn intern<K: Hash + Eq + Clone>(map: &mut HashMap<K, u32>, list: &mut Vec<K>, key: &K) -> u32 {
    if let Some(&i) = map.get(key) {
        return i;
    }
    let i = list.len() as u32;
    list.push(key.clone());
    map.insert(key.clone(), i);
    i
}

/// A sample's series already exists with a different unit or device.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    /// Two samples of one series disagree on the unit.
    #[error("metric {metric:?} of annotation {annotation:?} has two units, {first:?} and {second:?}; one series must have one unit")]
    UnitMismatch {
        /// Annotation of the series.
        annotation: String,
        /// Metric of the series.
        metric: String,
        /// Unit seen first.
        first: String,
        /// Unit seen now.
        second: String,
    },
    /// The same (series, run) was recorded twice.
    #[error("run {run} of metric {metric:?} in annotation {annotation:?} (config {config}) was recorded twice")]
    DuplicateRun {
        /// Annotation of the series.
        annotation: String,
        /// Metric of the series.
        metric: String,
        /// The configuration, as `name=value` pairs.
        config: String,
        /// The run index.
        run: u32,
    },
}

impl RawResults {
    /// An empty result set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds the interning index after deserialising (serde skips it).
    pub fn reindex(&mut self) {
        let mut index = Interner::default();
        for (i, c) in self.configs.iter().enumerate() {
            index.configs.insert(c.clone(), i as u32);
        }
        for (i, d) in self.devices.iter().enumerate() {
            index.devices.insert(d.clone(), i as u32);
        }
        for (i, k) in self.kernel_names.iter().enumerate() {
            index.kernels.insert(k.clone(), i as u32);
        }
        for (i, s) in self.series.iter().enumerate() {
            index.series.insert(s.key.clone(), i as u32);
        }
        self.index = index;
    }

    /// Interns a configuration and returns its index.
    pub fn intern_config(&mut self, config: &Config) -> u32 {
        intern(&mut self.index.configs, &mut self.configs, config)
    }

    /// Interns a device and returns its index.
    pub fn intern_device(&mut self, device: &DeviceInfo) -> u32 {
        intern(&mut self.index.devices, &mut self.devices, device)
    }

    /// Interns a kernel-name string and returns its index.
    pub fn intern_kernel(&mut self, kernel: &str) -> u32 {
        if let Some(&i) = self.index.kernels.get(kernel) {
            return i;
        }
        let i = self.kernel_names.len() as u32;
        self.kernel_names.push(kernel.to_string());
        self.index.kernels.insert(kernel.to_string(), i);
        i
    }

    /// Finds or creates the series for a key, checking that its unit stays the same.
    pub fn intern_series(&mut self, key: SeriesKey, unit: &str, device: u32) -> Result<u32, ModelError> {
        if let Some(&i) = self.index.series.get(&key) {
            let s = &self.series[i as usize];
            if s.unit != unit {
                return Err(ModelError::UnitMismatch {
                    annotation: key.annotation,
                    metric: key.metric,
                    first: s.unit.clone(),
                    second: unit.to_string(),
                });
            }
            return Ok(i);
        }
        let i = self.series.len() as u32;
        self.index.series.insert(key.clone(), i);
        self.series.push(Series {
            key,
            unit: unit.to_string(),
            device,
        });
        Ok(i)
    }

    /// Appends one sample given by its full key. Extra columns are created on first use and
    /// padded with [`ExtraValue::Missing`] for samples that do not have them.
    ///
    /// Duplicate (series, run) pairs are not checked here (that would cost a hash per sample);
    /// call [`RawResults::check_unique_runs`] once after loading.
    pub fn push(&mut self, rec: &SampleRecord<'_>) -> Result<(), ModelError> {
        let config = self.intern_config(rec.config);
        let device = self.intern_device(rec.device);
        let key = SeriesKey {
            benchmark: rec.benchmark.to_string(),
            annotation: rec.annotation.to_string(),
            config,
            metric: rec.metric.to_string(),
        };
        let series = self.intern_series(key, rec.unit, device)?;
        let kernel = self.intern_kernel(rec.kernel);
        self.push_sample(
            Sample {
                series,
                run: rec.run,
                value: rec.value,
                kernel,
            },
            rec.extras,
        );
        Ok(())
    }

    /// Appends a sample whose indices are already interned, with its extra columns.
    pub fn push_sample(&mut self, sample: Sample, extras: &[(&str, ExtraValue)]) {
        let n = self.samples.len();
        self.samples.push(sample);
        for (name, value) in extras {
            let col = match self.extras.iter().position(|c| c.name == *name) {
                Some(i) => i,
                None => {
                    self.extras.push(ExtraColumn {
                        name: name.to_string(),
                        values: vec![ExtraValue::Missing; n],
                    });
                    self.extras.len() - 1
                }
            };
            self.extras[col].values.push(value.clone());
        }
        for col in &mut self.extras {
            if col.values.len() < n + 1 {
                col.values.push(ExtraValue::Missing);
            }
        }
    }

    /// Checks that no (series, run) pair occurs twice.
    pub fn check_unique_runs(&self) -> Result<(), ModelError> {
        let mut seen = std::collections::HashSet::with_capacity(self.samples.len());
        for s in &self.samples {
            if !seen.insert((s.series, s.run)) {
                let key = &self.series[s.series as usize].key;
                return Err(ModelError::DuplicateRun {
                    annotation: key.annotation.clone(),
                    metric: key.metric.clone(),
                    config: self.configs[key.config as usize].to_string(),
                    run: s.run,
                });
            }
        }
        Ok(())
    }

    /// Parameter names over all configurations, in order of first appearance.
    pub fn param_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for c in &self.configs {
            for n in c.names() {
                if !names.iter().any(|m| m == n) {
                    names.push(n.to_string());
                }
            }
        }
        names
    }

    /// The series of a sample.
    pub fn series_of(&self, sample: &Sample) -> &Series {
        &self.series[sample.series as usize]
    }

    /// The configuration of a series.
    pub fn config_of(&self, series: &Series) -> &Config {
        &self.configs[series.key.config as usize]
    }

    /// Appends sample `i` of `other` (re-interning its keys) under the configuration `config` and
    /// run `run`, with the extra columns whose names `keep` accepts.
    pub fn push_from(
        &mut self,
        other: &RawResults,
        i: usize,
        config: &Config,
        run: u32,
        keep: impl Fn(&str) -> bool,
    ) -> Result<(), ModelError> {
        let s = &other.samples[i];
        let series = other.series_of(s);
        let extras: Vec<(&str, ExtraValue)> = other
            .extras
            .iter()
            .filter(|c| keep(&c.name))
            .map(|c| (c.name.as_str(), c.values[i].clone()))
            .collect();
        self.push(&SampleRecord {
            benchmark: &series.key.benchmark,
            annotation: &series.key.annotation,
            config,
            run,
            metric: &series.key.metric,
            value: s.value,
            unit: &series.unit,
            kernel: &other.kernel_names[s.kernel as usize],
            device: &other.devices[series.device as usize],
            extras: &extras,
        })
    }

    /// Appends every sample of `other` (re-interning its keys).
    pub fn extend_from(&mut self, other: &RawResults) -> Result<(), ModelError> {
        for (i, s) in other.samples.iter().enumerate() {
            self.push_from(other, i, other.config_of(other.series_of(s)), s.run, |_| true)?;
        }
        for k in &other.kernel_breakdown {
            let key = &other.series[k.series as usize];
            let config = self.intern_config(other.config_of(key));
            let device = self.intern_device(&other.devices[key.device as usize]);
            let series = self.intern_series(
                SeriesKey {
                    config,
                    ..key.key.clone()
                },
                &key.unit,
                device,
            )?;
            self.kernel_breakdown.push(KernelSample { series, ..k.clone() });
        }
        Ok(())
    }
}

/// Statistics of one series over its runs. Undefined values are NaN (or `None`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of non-NaN samples (`NumRuns`).
    pub num_runs: usize,
    /// Number of samples including failed (NaN) runs.
    pub total_runs: usize,
    /// Arithmetic mean (`AvgValue`).
    pub mean: f64,
    /// Sample standard deviation, ddof = 1 (`StdDev`).
    pub std_dev: f64,
    /// Minimum (`MinValue`).
    pub min: f64,
    /// Maximum (`MaxValue`).
    pub max: f64,
    /// Median.
    pub median: f64,
    /// 5th percentile (linear interpolation, as numpy's default).
    pub p05: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Lower end of the 95% confidence interval of the mean, Student's t with n-1 df.
    pub ci95_lower: f64,
    /// Upper end of that interval.
    pub ci95_upper: f64,
    /// `std_dev / |mean| * 100` (`RelativeStdDevPct`).
    pub rsd_pct: f64,
    /// RSD below the stability threshold; `None` when RSD is undefined.
    pub stable: Option<bool>,
    /// Samples outside Tukey's inner fences (1.5 IQR) but inside the outer ones.
    pub outliers_mild: usize,
    /// Samples outside Tukey's outer fences (3 IQR).
    pub outliers_severe: usize,
    /// Seeded bootstrap intervals, when asked for.
    pub bootstrap: Option<BootstrapCi>,
}

impl Summary {
    /// The statistics of a series without a valid sample: every value NaN, no runs counted but
    /// `total_runs` (its failed runs).
    pub fn empty(total_runs: usize) -> Summary {
        Summary {
            num_runs: 0,
            total_runs,
            mean: f64::NAN,
            std_dev: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            median: f64::NAN,
            p05: f64::NAN,
            p95: f64::NAN,
            ci95_lower: f64::NAN,
            ci95_upper: f64::NAN,
            rsd_pct: f64::NAN,
            stable: None,
            outliers_mild: 0,
            outliers_severe: 0,
            bootstrap: None,
        }
    }
}

/// Percentile-bootstrap 95% intervals for the mean and the median.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapCi {
    /// Lower end for the mean.
    pub mean_lower: f64,
    /// Upper end for the mean.
    pub mean_upper: f64,
    /// Lower end for the median.
    pub median_lower: f64,
    /// Upper end for the median.
    pub median_upper: f64,
}

/// One row of the processed table: a series with its statistics and metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessedRow {
    /// Benchmark name.
    pub benchmark: String,
    /// Region name.
    pub annotation: String,
    /// Metric name.
    pub metric: String,
    /// The configuration.
    pub config: Config,
    /// Statistics over the runs (of the ratio, when normalised).
    pub summary: Summary,
    /// Kernel name(s) of the first run (nsight keeps the first of the group).
    pub kernel: String,
    /// Device metadata.
    pub device: DeviceInfo,
    /// Unit (`x` when normalised).
    pub unit: String,
    /// Aggregated free-form columns (`X_Avg`, `X_Std`, `X_Min`, `X_Max` for numbers, first value otherwise).
    pub extras: Vec<(String, ExtraValue)>,
    /// Baseline annotation when normalised (`Normalized`).
    pub normalized: Option<String>,
    /// The baseline's mean in the original unit (`NormalizationValue`).
    pub normalization_value: Option<f64>,
    /// Geometric mean of `AvgValue` over the configs of this (annotation, metric) (`Geomean`).
    pub geomean: f64,
}

/// A configuration whose baseline annotation is missing, reported instead of silently dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissingBaseline {
    /// Benchmark name.
    pub benchmark: String,
    /// Annotation that could not be normalised.
    pub annotation: String,
    /// Metric name.
    pub metric: String,
    /// The configuration.
    pub config: Config,
}

/// The processed table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessedResults {
    /// Parameter names, in order (the table's parameter columns).
    pub param_names: Vec<String>,
    /// One row per (benchmark, annotation, config, metric), in first-appearance order.
    pub rows: Vec<ProcessedRow>,
    /// Configurations dropped from normalisation for lack of a baseline.
    pub missing_baselines: Vec<MissingBaseline>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> DeviceInfo {
        DeviceInfo {
            gpu: "NVIDIA H200".into(),
            host: "vm".into(),
            compute_clock_khz: Some(1_980_000.0),
            memory_clock_khz: None,
        }
    }

    #[test]
    fn infer_param_types() {
        assert_eq!(ParamValue::infer("4096"), ParamValue::Int(4096));
        assert_eq!(ParamValue::infer("1.5"), ParamValue::Float(1.5));
        assert_eq!(ParamValue::infer("True"), ParamValue::Bool(true));
        assert_eq!(ParamValue::infer("fp16"), ParamValue::Str("fp16".into()));
    }

    #[test]
    fn push_interns_keys_and_pads_extras() {
        let mut raw = RawResults::new();
        let c = Config::new().with("n", 1024).with("dtype", "fp16");
        let d = device();
        for run in 0..3 {
            let extras = if run == 1 {
                vec![("temp", ExtraValue::Number(40.0))]
            } else {
                vec![]
            };
            raw.push(&SampleRecord {
                benchmark: "mm",
                annotation: "a",
                config: &c,
                run,
                metric: DEFAULT_METRIC,
                value: 1.0 + run as f64,
                unit: "ns",
                kernel: "k",
                device: &d,
                extras: &extras,
            })
            .unwrap();
        }
        assert_eq!(raw.series.len(), 1);
        assert_eq!(raw.configs.len(), 1);
        assert_eq!(raw.samples.len(), 3);
        assert_eq!(
            raw.extras[0].values,
            vec![ExtraValue::Missing, ExtraValue::Number(40.0), ExtraValue::Missing]
        );
        assert_eq!(raw.param_names(), vec!["n", "dtype"]);
        assert_eq!(c.to_string(), "n=1024, dtype=fp16");
        raw.check_unique_runs().unwrap();
    }

    #[test]
    fn unit_mismatch_and_duplicate_runs_are_errors() {
        let mut raw = RawResults::new();
        let c = Config::new();
        let d = device();
        let mut rec = SampleRecord {
            benchmark: "b",
            annotation: "a",
            config: &c,
            run: 0,
            metric: "m",
            value: 1.0,
            unit: "ns",
            kernel: "k",
            device: &d,
            extras: &[],
        };
        raw.push(&rec).unwrap();
        raw.push(&rec).unwrap();
        assert!(matches!(
            raw.check_unique_runs(),
            Err(ModelError::DuplicateRun { run: 0, .. })
        ));
        rec.unit = "us";
        rec.run = 1;
        let err = raw.push(&rec).unwrap_err();
        assert!(err.to_string().contains("two units"), "{err}");
    }
}
