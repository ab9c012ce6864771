//! The JSON result file: everything kprof knows, versioned, with exact non-finite numbers.
//!
//! JSON has no NaN or infinity and `serde_json` writes them as `null`, which cannot be read back
//! into an `f64`. The file therefore goes through private mirror types in which every `f64` is
//! written as a JSON number when finite and as the string `"NaN"`, `"inf"` or `"-inf"` otherwise
//! (reading also accepts `null` as NaN). Extra values, which are untagged, are written as `null`
//! (missing), a number, a string (text), or `{"number": "NaN"}` for a non-finite number, so that
//! text such as `"NaN"` stays text. Apart from that the layout is the model's own serde layout.

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::{write_atomically, IoError};
use crate::model::{
    BootstrapCi, Config, DeviceInfo, ExtraColumn, ExtraValue, KernelSample, MissingBaseline, ParamValue,
    ProcessedResults, ProcessedRow, RawResults, Sample, Series, Summary,
};

/// The `schema` field of every kprof JSON result file.
pub const RESULT_SCHEMA: &str = "kprof-results";

/// The JSON result-file layout version this kprof writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// A kprof JSON result file.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultFile {
    /// Always [`RESULT_SCHEMA`] (`"kprof-results"`).
    pub schema: String,
    /// Layout version, [`SCHEMA_VERSION`] when written by this kprof.
    pub schema_version: u32,
    /// Version of the kprof that wrote the file.
    pub kprof_version: String,
    /// Raw samples, when saved.
    pub raw: Option<RawResults>,
    /// The processed table, when saved.
    pub processed: Option<ProcessedResults>,
    /// Free-form description of the environment (GPU, driver, clocks, command line, ...).
    pub environment: Option<serde_json::Value>,
}

impl ResultFile {
    /// A result file of the current schema and this kprof's version.
    pub fn new(
        raw: Option<RawResults>,
        processed: Option<ProcessedResults>,
        environment: Option<serde_json::Value>,
    ) -> Self {
        ResultFile {
            schema: RESULT_SCHEMA.to_string(),
            schema_version: SCHEMA_VERSION,
            kprof_version: env!("CARGO_PKG_VERSION").to_string(),
            raw,
            processed,
            environment,
        }
    }
}

/// An `f64` that survives JSON: non-finite values are strings.
#[derive(Clone, Copy, Debug)]
struct J(f64);

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        if x.is_finite() {
            s.serialize_f64(x)
        } else if x.is_nan() {
            s.serialize_str("NaN")
        } else if x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }
}

struct JVisitor;

impl Visitor<'_> for JVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, or \"NaN\", \"inf\" or \"-inf\"")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_unit<E: de::Error>(self) -> Result<f64, E> {
        Ok(f64::NAN)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        nonfinite(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

fn nonfinite(v: &str) -> Option<f64> {
    match v {
        "NaN" | "nan" => Some(f64::NAN),
        "inf" | "Infinity" | "+inf" => Some(f64::INFINITY),
        "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        d.deserialize_any(JVisitor).map(J)
    }
}

/// An extra value: `null`, a number, a string, or `{"number": "NaN"}`.
#[derive(Clone, Debug)]
struct ExtraJ(ExtraValue);

impl Serialize for ExtraJ {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            ExtraValue::Missing => s.serialize_unit(),
            ExtraValue::Number(x) if x.is_finite() => s.serialize_f64(*x),
            ExtraValue::Number(x) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("number", &J(*x))?;
                m.end()
            }
            ExtraValue::Text(t) => s.serialize_str(t),
        }
    }
}

struct ExtraVisitor;

impl<'de> Visitor<'de> for ExtraVisitor {
    type Value = ExtraValue;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null, a number, a string or {\"number\": \"NaN\"}")
    }
    fn visit_unit<E: de::Error>(self) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Missing)
    }
    fn visit_none<E: de::Error>(self) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Missing)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Number(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Number(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ExtraValue, E> {
        Ok(ExtraValue::Text(v.to_string()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtraValue, A::Error> {
        let mut value = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "number" {
                value = Some(map.next_value::<J>()?.0);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        value
            .map(ExtraValue::Number)
            .ok_or_else(|| de::Error::missing_field("number"))
    }
}

impl<'de> Deserialize<'de> for ExtraJ {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ExtraJ, D::Error> {
        d.deserialize_any(ExtraVisitor).map(ExtraJ)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
enum ParamJ {
    Int(i64),
    Float(J),
    Bool(bool),
    Str(String),
}

#[derive(Serialize, Deserialize)]
struct ConfigJ {
    params: Vec<(String, ParamJ)>,
}

impl From<&Config> for ConfigJ {
    fn from(c: &Config) -> Self {
        let params = c
            .params
            .iter()
            .map(|(n, v)| {
                let v = match v {
                    ParamValue::Int(i) => ParamJ::Int(*i),
                    ParamValue::Float(x) => ParamJ::Float(J(*x)),
                    ParamValue::Bool(b) => ParamJ::Bool(*b),
                    ParamValue::Str(s) => ParamJ::Str(s.clone()),
                };
                (n.clone(), v)
            })
            .collect();
        ConfigJ { params }
    }
}

impl From<ConfigJ> for Config {
    fn from(c: ConfigJ) -> Self {
        let params = c
            .params
            .into_iter()
            .map(|(n, v)| {
                let v = match v {
                    ParamJ::Int(i) => ParamValue::Int(i),
                    ParamJ::Float(x) => ParamValue::Float(x.0),
                    ParamJ::Bool(b) => ParamValue::Bool(b),
                    ParamJ::Str(s) => ParamValue::Str(s),
                };
                (n, v)
            })
            .collect();
        Config { params }
    }
}

#[derive(Serialize, Deserialize)]
struct DeviceJ {
    gpu: String,
    host: String,
    compute_clock_khz: Option<J>,
    memory_clock_khz: Option<J>,
}

impl From<&DeviceInfo> for DeviceJ {
    fn from(d: &DeviceInfo) -> Self {
        let DeviceInfo {
            gpu,
            host,
            compute_clock_khz,
            memory_clock_khz,
        } = d;
        DeviceJ {
            gpu: gpu.clone(),
            host: host.clone(),
            compute_clock_khz: compute_clock_khz.map(J),
            memory_clock_khz: memory_clock_khz.map(J),
        }
    }
}

impl From<DeviceJ> for DeviceInfo {
    fn from(d: DeviceJ) -> Self {
        DeviceInfo {
            gpu: d.gpu,
            host: d.host,
            compute_clock_khz: d.compute_clock_khz.map(|x| x.0),
            memory_clock_khz: d.memory_clock_khz.map(|x| x.0),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct SampleJ {
    series: u32,
    run: u32,
    value: J,
    kernel: u32,
}

#[derive(Serialize, Deserialize)]
struct ExtraColumnJ {
    name: String,
    values: Vec<ExtraJ>,
}

#[derive(Serialize, Deserialize)]
struct KernelSampleJ {
    series: u32,
    run: u32,
    position: u32,
    kernel: String,
    value: J,
}

#[derive(Serialize, Deserialize)]
struct RawJ {
    configs: Vec<ConfigJ>,
    devices: Vec<DeviceJ>,
    kernel_names: Vec<String>,
    series: Vec<Series>,
    samples: Vec<SampleJ>,
    extras: Vec<ExtraColumnJ>,
    kernel_breakdown: Vec<KernelSampleJ>,
}

impl From<&RawResults> for RawJ {
    fn from(r: &RawResults) -> Self {
        RawJ {
            configs: r.configs.iter().map(ConfigJ::from).collect(),
            devices: r.devices.iter().map(DeviceJ::from).collect(),
            kernel_names: r.kernel_names.clone(),
            series: r.series.clone(),
            samples: r
                .samples
                .iter()
                .map(
                    |&Sample {
                         series,
                         run,
                         value,
                         kernel,
                     }| SampleJ {
                        series,
                        run,
                        value: J(value),
                        kernel,
                    },
                )
                .collect(),
            extras: r
                .extras
                .iter()
                .map(|c| ExtraColumnJ {
                    name: c.name.clone(),
                    values: c.values.iter().cloned().map(ExtraJ).collect(),
                })
                .collect(),
            kernel_breakdown: r
                .kernel_breakdown
                .iter()
                .map(|k| KernelSampleJ {
                    series: k.series,
                    run: k.run,
                    position: k.position,
                    kernel: k.kernel.clone(),
                    value: J(k.value),
                })
                .collect(),
        }
    }
}

impl RawJ {
    /// Converts to the model, checking that every index points into its list.
    fn into_model(self) -> Result<RawResults, String> {
        let mut r = RawResults::new();
        r.configs = self.configs.into_iter().map(Config::from).collect();
        r.devices = self.devices.into_iter().map(DeviceInfo::from).collect();
        r.kernel_names = self.kernel_names;
        r.series = self.series;
        r.samples = self
            .samples
            .into_iter()
            .map(|s| Sample {
                series: s.series,
                run: s.run,
                value: s.value.0,
                kernel: s.kernel,
            })
            .collect();
        r.extras = self
            .extras
            .into_iter()
            .map(|c| ExtraColumn {
                name: c.name,
                values: c.values.into_iter().map(|v| v.0).collect(),
            })
            .collect();
        r.kernel_breakdown = self
            .kernel_breakdown
            .into_iter()
            .map(|k| KernelSample {
                series: k.series,
                run: k.run,
                position: k.position,
                kernel: k.kernel,
                value: k.value.0,
            })
            .collect();
        for (i, s) in r.series.iter().enumerate() {
            if s.key.config as usize >= r.configs.len() || s.device as usize >= r.devices.len() {
                return Err(format!(
                    "raw.series[{i}] refers to a configuration or device that does not exist"
                ));
            }
        }
        for (i, s) in r.samples.iter().enumerate() {
            if s.series as usize >= r.series.len() || s.kernel as usize >= r.kernel_names.len() {
                return Err(format!(
                    "raw.samples[{i}] refers to a series or kernel name that does not exist"
                ));
            }
        }
        for c in &r.extras {
            if c.values.len() != r.samples.len() {
                return Err(format!(
                    "raw extra column {:?} has {} values for {} samples",
                    c.name,
                    c.values.len(),
                    r.samples.len()
                ));
            }
        }
        for (i, k) in r.kernel_breakdown.iter().enumerate() {
            if k.series as usize >= r.series.len() {
                return Err(format!(
                    "raw.kernel_breakdown[{i}] refers to a series that does not exist"
                ));
            }
        }
        r.reindex();
        Ok(r)
    }
}

#[derive(Serialize, Deserialize)]
struct BootstrapJ {
    mean_lower: J,
    mean_upper: J,
    median_lower: J,
    median_upper: J,
}

#[derive(Serialize, Deserialize)]
struct SummaryJ {
    num_runs: usize,
    total_runs: usize,
    mean: J,
    std_dev: J,
    min: J,
    max: J,
    median: J,
    p05: J,
    p95: J,
    ci95_lower: J,
    ci95_upper: J,
    rsd_pct: J,
    stable: Option<bool>,
    outliers_mild: usize,
    outliers_severe: usize,
    bootstrap: Option<BootstrapJ>,
}

impl From<&Summary> for SummaryJ {
    fn from(s: &Summary) -> Self {
        let Summary {
            num_runs,
            total_runs,
            mean,
            std_dev,
            min,
            max,
            median,
            p05,
            p95,
            ci95_lower,
            ci95_upper,
            rsd_pct,
            stable,
            outliers_mild,
            outliers_severe,
            bootstrap,
        } = s;
        SummaryJ {
            num_runs: *num_runs,
            total_runs: *total_runs,
            mean: J(*mean),
            std_dev: J(*std_dev),
            min: J(*min),
            max: J(*max),
            median: J(*median),
            p05: J(*p05),
            p95: J(*p95),
            ci95_lower: J(*ci95_lower),
            ci95_upper: J(*ci95_upper),
            rsd_pct: J(*rsd_pct),
            stable: *stable,
            outliers_mild: *outliers_mild,
            outliers_severe: *outliers_severe,
            bootstrap: bootstrap.as_ref().map(|b| BootstrapJ {
                mean_lower: J(b.mean_lower),
                mean_upper: J(b.mean_upper),
                median_lower: J(b.median_lower),
                median_upper: J(b.median_upper),
            }),
        }
    }
}

impl From<SummaryJ> for Summary {
    fn from(s: SummaryJ) -> Self {
        Summary {
            num_runs: s.num_runs,
            total_runs: s.total_runs,
            mean: s.mean.0,
            std_dev: s.std_dev.0,
            min: s.min.0,
            max: s.max.0,
            median: s.median.0,
            p05: s.p05.0,
            p95: s.p95.0,
            ci95_lower: s.ci95_lower.0,
            ci95_upper: s.ci95_upper.0,
            rsd_pct: s.rsd_pct.0,
            stable: s.stable,
            outliers_mild: s.outliers_mild,
            outliers_severe: s.outliers_severe,
            bootstrap: s.bootstrap.map(|b| BootstrapCi {
                mean_lower: b.mean_lower.0,
                mean_upper: b.mean_upper.0,
                median_lower: b.median_lower.0,
                median_upper: b.median_upper.0,
            }),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct RowJ {
    benchmark: String,
    annotation: String,
    metric: String,
    config: ConfigJ,
    summary: SummaryJ,
    kernel: String,
    device: DeviceJ,
    unit: String,
    extras: Vec<(String, ExtraJ)>,
    normalized: Option<String>,
    normalization_value: Option<J>,
    geomean: J,
}

impl From<&ProcessedRow> for RowJ {
    fn from(r: &ProcessedRow) -> Self {
        let ProcessedRow {
            benchmark,
            annotation,
            metric,
            config,
            summary,
            kernel,
            device,
            unit,
            extras,
            normalized,
            normalization_value,
            geomean,
        } = r;
        RowJ {
            benchmark: benchmark.clone(),
            annotation: annotation.clone(),
            metric: metric.clone(),
            config: config.into(),
            summary: summary.into(),
            kernel: kernel.clone(),
            device: device.into(),
            unit: unit.clone(),
            extras: extras.iter().map(|(n, v)| (n.clone(), ExtraJ(v.clone()))).collect(),
            normalized: normalized.clone(),
            normalization_value: normalization_value.map(J),
            geomean: J(*geomean),
        }
    }
}

impl From<RowJ> for ProcessedRow {
    fn from(r: RowJ) -> Self {
        ProcessedRow {
            benchmark: r.benchmark,
            annotation: r.annotation,
            metric: r.metric,
            config: r.config.into(),
            summary: r.summary.into(),
            kernel: r.kernel,
            device: r.device.into(),
            unit: r.unit,
            extras: r.extras.into_iter().map(|(n, v)| (n, v.0)).collect(),
            normalized: r.normalized,
            normalization_value: r.normalization_value.map(|x| x.0),
            geomean: r.geomean.0,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct MissingBaselineJ {
    benchmark: String,
    annotation: String,
    metric: String,
    config: ConfigJ,
}

#[derive(Serialize, Deserialize)]
struct ProcessedJ {
    param_names: Vec<String>,
    rows: Vec<RowJ>,
    missing_baselines: Vec<MissingBaselineJ>,
}

impl From<&ProcessedResults> for ProcessedJ {
    fn from(p: &ProcessedResults) -> Self {
        ProcessedJ {
            param_names: p.param_names.clone(),
            rows: p.rows.iter().map(RowJ::from).collect(),
            missing_baselines: p
                .missing_baselines
                .iter()
                .map(|m| MissingBaselineJ {
                    benchmark: m.benchmark.clone(),
                    annotation: m.annotation.clone(),
                    metric: m.metric.clone(),
                    config: (&m.config).into(),
                })
                .collect(),
        }
    }
}

impl From<ProcessedJ> for ProcessedResults {
    fn from(p: ProcessedJ) -> Self {
        ProcessedResults {
            param_names: p.param_names,
            rows: p.rows.into_iter().map(ProcessedRow::from).collect(),
            missing_baselines: p
                .missing_baselines
                .into_iter()
                .map(|m| MissingBaseline {
                    benchmark: m.benchmark,
                    annotation: m.annotation,
                    metric: m.metric,
                    config: m.config.into(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct FileJ {
    schema: String,
    schema_version: u32,
    kprof_version: String,
    raw: Option<RawJ>,
    processed: Option<ProcessedJ>,
    environment: Option<serde_json::Value>,
}

/// Only the identification fields, read first so that a newer layout is reported as such.
#[derive(Deserialize)]
struct HeaderJ {
    schema: Option<String>,
    schema_version: Option<u32>,
    kprof_version: Option<String>,
}

/// Writes `file` as JSON at `path`, atomically (temporary file, then rename). Non-finite numbers
/// are written as `"NaN"`, `"inf"`, `"-inf"` (see the module documentation).
pub fn write_results_json(path: &Path, file: &ResultFile) -> Result<(), IoError> {
    write_atomically(path, |w| write_json(path, w, file))
}

/// Writes `file` as JSON to any writer (same format as [`write_results_json`]).
pub fn write_results_json_to<W: Write>(writer: W, file: &ResultFile) -> Result<(), IoError> {
    write_json(Path::new("<output>"), writer, file)
}

fn write_json<W: Write>(path: &Path, mut writer: W, file: &ResultFile) -> Result<(), IoError> {
    let dto = FileJ {
        schema: file.schema.clone(),
        schema_version: file.schema_version,
        kprof_version: file.kprof_version.clone(),
        raw: file.raw.as_ref().map(RawJ::from),
        processed: file.processed.as_ref().map(ProcessedJ::from),
        environment: file.environment.clone(),
    };
    let werr = |source| IoError::Write {
        path: path.to_path_buf(),
        source,
    };
    serde_json::to_writer(&mut writer, &dto).map_err(|e| werr(std::io::Error::other(e)))?;
    writer.write_all(b"\n").map_err(werr)?;
    writer.flush().map_err(werr)
}

/// Reads a kprof JSON result file. The `schema` must be [`RESULT_SCHEMA`] and the
/// `schema_version` at most [`SCHEMA_VERSION`] (a newer file asks to upgrade kprof). Indices in
/// the raw results are checked and the interning index is rebuilt ([`RawResults::reindex`]).
pub fn read_results_json(path: &Path) -> Result<ResultFile, IoError> {
    let bytes = fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => IoError::Open {
            path: path.to_path_buf(),
            source,
        },
        _ => IoError::Read {
            path: path.to_path_buf(),
            source,
        },
    })?;
    let schema_err = |message: String| IoError::Schema {
        path: path.to_path_buf(),
        message,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(schema_err(
            "the file is empty; expected a kprof JSON result file".into(),
        ));
    }
    let header: HeaderJ = serde_json::from_slice(&bytes).map_err(|e| {
        schema_err(format!(
            "not a kprof JSON result file (line {}, column {}: {e}); expected an object with \"schema\": \"{RESULT_SCHEMA}\"",
            e.line(),
            e.column()
        ))
    })?;
    match header.schema.as_deref() {
        Some(RESULT_SCHEMA) => {}
        Some(other) => {
            return Err(schema_err(format!(
                "schema is {other:?}, not {RESULT_SCHEMA:?}; this is not a kprof result file"
            )))
        }
        None => {
            return Err(schema_err(format!(
                "no \"schema\" field; this is not a kprof result file (expected \"schema\": \"{RESULT_SCHEMA}\")"
            )))
        }
    }
    let version = header
        .schema_version
        .ok_or_else(|| schema_err("no \"schema_version\" field; the file is damaged or not written by kprof".into()))?;
    if version > SCHEMA_VERSION {
        return Err(schema_err(format!(
            "written with result schema version {version} (by kprof {}), but this kprof ({}) reads versions up to {SCHEMA_VERSION}; upgrade kprof to read it",
            header.kprof_version.as_deref().unwrap_or("unknown"),
            env!("CARGO_PKG_VERSION")
        )));
    }
    if version == 0 {
        return Err(schema_err(
            "schema_version 0 does not exist; the file is damaged".into(),
        ));
    }
    let dto: FileJ = serde_json::from_slice(&bytes).map_err(|e| IoError::Parse {
        path: path.to_path_buf(),
        line: e.line() as u64,
        column: format!("character {}", e.column()),
        message: format!("{e}; the file does not match kprof's result schema version {version}"),
    })?;
    let raw = match dto.raw {
        Some(r) => Some(
            r.into_model()
                .map_err(|m| schema_err(format!("{m}; the file is damaged")))?,
        ),
        None => None,
    };
    if let Some(r) = &raw {
        r.check_unique_runs().map_err(|source| IoError::Model {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(ResultFile {
        schema: dto.schema,
        schema_version: dto.schema_version,
        kprof_version: dto.kprof_version,
        raw,
        processed: dto.processed.map(ProcessedResults::from),
        environment: dto.environment,
    })
}
