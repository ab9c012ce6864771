//! Raw CSV: one row per sample, nsight-python's `profiled_data` columns first.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use super::csvutil::{
    cell, check_unique_columns, config_of, csv_error, fmt_num, fmt_opt, is_missing, line_of, parse_num, write_error,
    Header,
};
use super::{benchmark_from_path, write_atomically, IoError, ReadOptions};
use crate::columns::{KPROF_EXTRA_COLUMNS, KPROF_RAW_COLUMNS, NSIGHT_RAW_COLUMNS};
use crate::model::{DeviceInfo, ExtraValue, ParamValue, RawResults, Sample, SeriesKey};

/// Formats a parameter value for a CSV cell: [`ParamValue`]'s `Display` (booleans as
/// `True`/`False`, as pandas writes them), except that floats keep a decimal point (`2.0`, not
/// `2`) so that they are read back as floats.
pub(crate) fn fmt_param(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => format!("{x:?}"),
        other => other.to_string(),
    }
}

/// Formats an extra value for a CSV cell (`Missing` is empty; numbers keep their exact value).
pub(crate) fn fmt_extra(v: &ExtraValue) -> String {
    match v {
        ExtraValue::Missing => String::new(),
        ExtraValue::Number(x) => format!("{x:?}"),
        ExtraValue::Text(s) => s.clone(),
    }
}

/// Writes `raw` as a raw CSV at `path`, atomically (temporary file in the same directory, then
/// rename), so it can be rewritten after every configuration without risking the old contents.
///
/// Columns: `Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit`, the extra
/// columns, the parameter columns ([`RawResults::param_names`] order), then `Benchmark,Run`.
/// NaN values and unknown clocks are empty cells; a parameter a configuration lacks is an empty
/// cell. [`RawResults::kernel_breakdown`] is not part of the CSV (use the JSON file to keep it).
pub fn write_raw_csv(path: &Path, raw: &RawResults) -> Result<(), IoError> {
    write_atomically(path, |w| write_raw(path, w, raw))
}

/// Writes `raw` as a raw CSV to any writer (same format as [`write_raw_csv`]). Errors name the
/// file as `<output>`.
pub fn write_raw_csv_to<W: Write>(writer: W, raw: &RawResults) -> Result<(), IoError> {
    write_raw(Path::new("<output>"), writer, raw)
}

/// Whether a metric holds durations: a time unit (`ns`, `us`, `usecond`, `ms`, `s`, ...) or a
/// `duration` metric name (`gpu__time_duration.sum`). Its values must be finite and >= 0.
pub(crate) fn is_duration(metric: &str, unit: &str) -> bool {
    let unit = unit.trim().to_ascii_lowercase();
    matches!(
        unit.as_str(),
        "ns" | "nsecond"
            | "nanosecond"
            | "us"
            | "usecond"
            | "microsecond"
            | "ms"
            | "msecond"
            | "millisecond"
            | "s"
            | "second"
    ) || metric.to_ascii_lowercase().contains("duration")
}

fn inconsistent(path: &Path, what: &str) -> IoError {
    IoError::Schema {
        path: path.to_path_buf(),
        message: format!("cannot write inconsistent results: {what} (an index points past the end of its list)"),
    }
}

/// Entry `i` of `list` (the index `what` holds), or the inconsistency error of writing `path`.
fn entry<'a, T>(path: &Path, list: &'a [T], i: u32, what: &str) -> Result<&'a T, IoError> {
    list.get(i as usize).ok_or_else(|| inconsistent(path, what))
}

fn write_raw<W: Write>(path: &Path, writer: W, raw: &RawResults) -> Result<(), IoError> {
    let params = raw.param_names();
    let mut header: Vec<String> = NSIGHT_RAW_COLUMNS.iter().map(|s| s.to_string()).collect();
    header.extend(raw.extras.iter().map(|c| c.name.clone()));
    header.extend(params.iter().cloned());
    header.extend(KPROF_RAW_COLUMNS.iter().map(|s| s.to_string()));
    check_unique_columns(path, &header)?;
    for c in &raw.extras {
        if c.values.len() != raw.samples.len() {
            return Err(inconsistent(
                path,
                &format!(
                    "extra column {:?} has {} values for {} samples",
                    c.name,
                    c.values.len(),
                    raw.samples.len()
                ),
            ));
        }
    }

    let mut wtr = csv::Writer::from_writer(writer);
    wtr.write_record(&header).map_err(|e| write_error(path, e))?;
    let mut row: Vec<String> = Vec::with_capacity(header.len());
    for (i, s) in raw.samples.iter().enumerate() {
        let series = entry(path, &raw.series, s.series, "sample series")?;
        let config = entry(path, &raw.configs, series.key.config, "series config")?;
        let device = entry(path, &raw.devices, series.device, "series device")?;
        let kernel = entry(path, &raw.kernel_names, s.kernel, "sample kernel")?;
        row.clear();
        row.push(series.key.annotation.clone());
        row.push(fmt_num(s.value));
        row.push(series.key.metric.clone());
        row.push(kernel.clone());
        row.push(device.gpu.clone());
        row.push(device.host.clone());
        row.push(fmt_opt(device.compute_clock_khz));
        row.push(fmt_opt(device.memory_clock_khz));
        row.push(series.unit.clone());
        for c in &raw.extras {
            row.push(fmt_extra(&c.values[i]));
        }
        for p in &params {
            row.push(config.get(p).map(fmt_param).unwrap_or_default());
        }
        row.push(series.key.benchmark.clone());
        row.push(s.run.to_string());
        wtr.write_record(&row).map_err(|e| write_error(path, e))?;
    }
    wtr.flush().map_err(|source| IoError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a raw CSV written by kprof ([`write_raw_csv`]) or by nsight-python (`profiled_data`).
///
/// - `Annotation`, `Value` and `Metric` are required; `Kernel`, `GPU`, `Host`, `ComputeClock`,
///   `MemoryClock`, `Unit`, `Benchmark` and `Run` are optional (empty when absent).
/// - Every other column is a configuration parameter, except kprof's engine columns
///   ([`KPROF_EXTRA_COLUMNS`], extra columns), unless [`ReadOptions::params`] is given:
///   then exactly those columns are parameters and the remaining unknown columns are extra
///   columns ([`ExtraValue::infer`]). Parameter types are inferred per cell
///   ([`ParamValue::infer`]); an empty parameter cell means the configuration lacks that
///   parameter. Parameter order is the column order (or the order of `opts.params`).
/// - An empty, `nan`, `None`, `NA` or `<NA>` value is NaN (a failed run); any other value that is
///   not a number is an error naming the line and column.
/// - Without a `Run` column (nsight-python files) the run index of a row is the number of earlier
///   rows with the same (benchmark, annotation, metric, configuration), i.e. runs are numbered
///   0, 1, 2, ... in file order within each series.
/// - Without a `Benchmark` column (or for empty cells in it) the benchmark is
///   `opts.benchmark`, else [`benchmark_from_path`].
/// - A (series, run) pair that occurs twice is an error, as is a metric with two units.
pub fn read_raw_csv(path: &Path, opts: &ReadOptions) -> Result<RawResults, IoError> {
    let file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    read_raw_csv_from(BufReader::new(file), path, opts)
}

/// Reads a raw CSV from any reader, as [`read_raw_csv`] does; `path` is used in error messages
/// and for the default benchmark name.
pub fn read_raw_csv_from<R: Read>(reader: R, path: &Path, opts: &ReadOptions) -> Result<RawResults, IoError> {
    let mut rdr = csv::ReaderBuilder::new().from_reader(super::csvutil::CrlfToLf::new(reader));
    let header = Header::read(path, &mut rdr)?;
    let ann = header.require(path, "Annotation")?;
    let val = header.require(path, "Value")?;
    let met = header.require(path, "Metric")?;
    let kernel_col = header.find("Kernel");
    let gpu_col = header.find("GPU");
    let host_col = header.find("Host");
    let cc_col = header.find("ComputeClock");
    let mc_col = header.find("MemoryClock");
    let unit_col = header.find("Unit");
    let bench_col = header.find("Benchmark");
    let run_col = header.find("Run");

    let unknown: Vec<(String, usize)> = header
        .names
        .iter()
        .enumerate()
        .filter(|(_, n)| !NSIGHT_RAW_COLUMNS.contains(&n.as_str()) && !KPROF_RAW_COLUMNS.contains(&n.as_str()))
        .map(|(i, n)| (n.clone(), i))
        .collect();
    type Columns = Vec<(String, usize)>;
    let (params, extras): (Columns, Columns) = match &opts.params {
        None => unknown
            .into_iter()
            .partition(|(n, _)| !KPROF_EXTRA_COLUMNS.contains(&n.as_str())),
        Some(names) => {
            let mut params: Vec<(String, usize)> = Vec::new();
            for name in names {
                if params.iter().any(|(n, _)| n == name) {
                    continue;
                }
                match unknown.iter().find(|(n, _)| n == name) {
                    Some(p) => params.push(p.clone()),
                    None => {
                        return Err(IoError::UnknownParam {
                            path: path.to_path_buf(),
                            name: name.clone(),
                            candidates: unknown.iter().map(|(n, _)| n.clone()).collect(),
                        })
                    }
                }
            }
            let extras = unknown.into_iter().filter(|(n, _)| !names.contains(n)).collect();
            (params, extras)
        }
    };
    let default_benchmark = opts.benchmark.clone().unwrap_or_else(|| benchmark_from_path(path));

    let mut raw = RawResults::new();
    let mut next_run: Vec<u32> = Vec::new();
    let mut rec = csv::StringRecord::new();
    let mut extra_values: Vec<(&str, ExtraValue)> = Vec::with_capacity(extras.len());
    while rdr.read_record(&mut rec).map_err(|e| csv_error(path, e))? {
        let line = line_of(&rec);
        let parse_err = |column: &str, message: String| IoError::Parse {
            path: path.to_path_buf(),
            line,
            column: column.to_string(),
            message,
        };
        let value_text = cell(&rec, Some(val));
        let value = parse_num(value_text).ok_or_else(|| {
            parse_err(
                "Value",
                format!("{value_text:?} is not a number; write a number, or leave the cell empty for a failed run"),
            )
        })?;
        let clock = |col: Option<usize>, name: &str| -> Result<Option<f64>, IoError> {
            let text = cell(&rec, col);
            if is_missing(text) {
                return Ok(None);
            }
            text.trim().parse::<f64>().map(Some).map_err(|_| {
                parse_err(
                    name,
                    format!("{text:?} is not a clock rate in kHz; write a number or leave the cell empty"),
                )
            })
        };
        let device = DeviceInfo {
            gpu: cell(&rec, gpu_col).to_string(),
            host: cell(&rec, host_col).to_string(),
            compute_clock_khz: clock(cc_col, "ComputeClock")?,
            memory_clock_khz: clock(mc_col, "MemoryClock")?,
        };
        let config = config_of(&rec, &params);
        let benchmark = match cell(&rec, bench_col) {
            "" => default_benchmark.as_str(),
            b => b,
        };
        let config_id = raw.intern_config(&config);
        let device_id = raw.intern_device(&device);
        let key = SeriesKey {
            benchmark: benchmark.to_string(),
            annotation: cell(&rec, Some(ann)).to_string(),
            config: config_id,
            metric: cell(&rec, Some(met)).to_string(),
        };
        let series = raw
            .intern_series(key, cell(&rec, unit_col), device_id)
            .map_err(|e| parse_err("Unit", format!("{e}; fix the unit or use a different metric name")))?;
        let run = match run_col {
            Some(i) => {
                let text = cell(&rec, Some(i)).trim();
                let parsed = text.parse::<u32>().ok().or_else(|| {
                    let x = text.parse::<f64>().ok()?;
                    (x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64).then_some(x as u32)
                });
                parsed.ok_or_else(|| {
                    parse_err(
                        "Run",
                        format!("{text:?} is not a run index; write a non-negative integer"),
                    )
                })?
            }
            None => {
                let s = series as usize;
                if next_run.len() <= s {
                    next_run.resize(s + 1, 0);
                }
                let r = next_run[s];
                next_run[s] = r.saturating_add(1);
                r
            }
        };
        if is_duration(cell(&rec, Some(met)), cell(&rec, unit_col)) && (value.is_infinite() || value < 0.0) {
            return Err(parse_err(
                "Value",
                format!(
                    "{:?} is not a duration: a duration is a finite number >= 0; leave the cell empty for a failed run",
                    value_text.trim()
                ),
            ));
        }
        let kernel = raw.intern_kernel(cell(&rec, kernel_col));
        extra_values.clear();
        for (name, i) in &extras {
            extra_values.push((name.as_str(), ExtraValue::infer(cell(&rec, Some(*i)))));
        }
        raw.push_sample(
            Sample {
                series,
                run,
                value,
                kernel,
            },
            &extra_values,
        );
    }
    raw.check_unique_runs().map_err(|source| IoError::Model {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(raw)
}
