//! Processed CSV: one row per series, nsight-python's `processed_data` columns first.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

use super::csvutil::{
    cell, check_unique_columns, config_of, csv_error, fmt_num, fmt_opt, is_missing, line_of, parse_num, write_error,
    Header,
};
use super::raw_csv::{fmt_extra, fmt_param};
use super::{benchmark_from_path, write_atomically, IoError};
use crate::columns::{
    BOOTSTRAP_COLUMNS, KPROF_PROCESSED_COLUMNS, NORMALIZATION_VALUE_COLUMN, PROCESSED_COLUMNS, PROCESSED_KEY_COLUMNS,
    PROCESSED_NORMALIZATION_COLUMNS, PROCESSED_QUALITY_COLUMNS, PROCESSED_STAT_COLUMNS,
};
use crate::model::{BootstrapCi, DeviceInfo, ExtraValue, ProcessedResults, ProcessedRow, Summary};

fn is_known(name: &str) -> bool {
    PROCESSED_COLUMNS.contains(&name) || BOOTSTRAP_COLUMNS.contains(&name)
}

fn fmt_bool(b: Option<bool>) -> String {
    match b {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => String::new(),
    }
}

/// Writes `p` as a processed CSV at `path`, atomically (temporary file, then rename).
///
/// Columns: `Annotation,Metric,<params>,AvgValue,StdDev,MinValue,MaxValue,NumRuns,Kernel,GPU,Host,
/// ComputeClock,MemoryClock,Unit,<extras>,CI95_Lower,CI95_Upper,RelativeStdDevPct,
/// StableMeasurement,Normalized,[NormalizationValue],Geomean,Benchmark,Median,P05,P95,TotalRuns,
/// OutliersMild,OutliersSevere,[BootstrapMean_Lower,BootstrapMean_Upper,BootstrapMedian_Lower,
/// BootstrapMedian_Upper]`. `NormalizationValue` is written only when some row is normalised, the
/// bootstrap columns only when some row has them. NaN is an empty cell, `StableMeasurement` is
/// `True`/`False`/empty and `Normalized` is `False` or the baseline's name, as nsight-python
/// writes them. [`ProcessedResults::missing_baselines`] is not part of the CSV (use JSON).
pub fn write_processed_csv(path: &Path, p: &ProcessedResults) -> Result<(), IoError> {
    write_atomically(path, |w| write_processed(path, w, p))
}

/// Writes `p` as a processed CSV to any writer (same format as [`write_processed_csv`]).
pub fn write_processed_csv_to<W: Write>(writer: W, p: &ProcessedResults) -> Result<(), IoError> {
    write_processed(Path::new("<output>"), writer, p)
}

fn write_processed<W: Write>(path: &Path, writer: W, p: &ProcessedResults) -> Result<(), IoError> {
    let mut params: Vec<String> = p.param_names.clone();
    for row in &p.rows {
        for n in row.config.names() {
            if !params.iter().any(|m| m == n) {
                params.push(n.to_string());
            }
        }
    }
    let mut extras: Vec<String> = Vec::new();
    for row in &p.rows {
        for (n, _) in &row.extras {
            if !extras.contains(n) {
                extras.push(n.clone());
            }
        }
    }
    let normalised = p
        .rows
        .iter()
        .any(|r| r.normalized.is_some() || r.normalization_value.is_some());
    let bootstrap = p.rows.iter().any(|r| r.summary.bootstrap.is_some());

    let names = |cols: &[&str]| cols.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut header: Vec<String> = names(&PROCESSED_KEY_COLUMNS);
    header.extend(params.iter().cloned());
    header.extend(names(&PROCESSED_STAT_COLUMNS));
    header.extend(extras.iter().cloned());
    header.extend(names(&PROCESSED_QUALITY_COLUMNS));
    header.extend(
        PROCESSED_NORMALIZATION_COLUMNS
            .iter()
            .filter(|c| normalised || **c != NORMALIZATION_VALUE_COLUMN)
            .map(|s| s.to_string()),
    );
    header.extend(names(&KPROF_PROCESSED_COLUMNS));
    if bootstrap {
        header.extend(names(&BOOTSTRAP_COLUMNS));
    }
    check_unique_columns(path, &header)?;

    let mut wtr = csv::Writer::from_writer(writer);
    wtr.write_record(&header).map_err(|e| write_error(path, e))?;
    let mut out: Vec<String> = Vec::with_capacity(header.len());
    for r in &p.rows {
        let s = &r.summary;
        out.clear();
        out.push(r.annotation.clone());
        out.push(r.metric.clone());
        for n in &params {
            out.push(r.config.get(n).map(fmt_param).unwrap_or_default());
        }
        out.extend([
            fmt_num(s.mean),
            fmt_num(s.std_dev),
            fmt_num(s.min),
            fmt_num(s.max),
            s.num_runs.to_string(),
        ]);
        out.extend([r.kernel.clone(), r.device.gpu.clone(), r.device.host.clone()]);
        out.extend([
            fmt_opt(r.device.compute_clock_khz),
            fmt_opt(r.device.memory_clock_khz),
            r.unit.clone(),
        ]);
        for n in &extras {
            out.push(
                r.extras
                    .iter()
                    .find(|(m, _)| m == n)
                    .map(|(_, v)| fmt_extra(v))
                    .unwrap_or_default(),
            );
        }
        out.extend([
            fmt_num(s.ci95_lower),
            fmt_num(s.ci95_upper),
            fmt_num(s.rsd_pct),
            fmt_bool(s.stable),
        ]);
        out.push(r.normalized.clone().unwrap_or_else(|| "False".into()));
        if normalised {
            out.push(fmt_opt(r.normalization_value));
        }
        out.push(fmt_num(r.geomean));
        out.extend([r.benchmark.clone(), fmt_num(s.median), fmt_num(s.p05), fmt_num(s.p95)]);
        out.extend([
            s.total_runs.to_string(),
            s.outliers_mild.to_string(),
            s.outliers_severe.to_string(),
        ]);
        if bootstrap {
            match &s.bootstrap {
                Some(b) => out.extend([b.mean_lower, b.mean_upper, b.median_lower, b.median_upper].map(fmt_num)),
                None => out.extend([String::new(), String::new(), String::new(), String::new()]),
            }
        }
        wtr.write_record(&out).map_err(|e| write_error(path, e))?;
    }
    wtr.flush().map_err(|source| IoError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a processed CSV written by kprof ([`write_processed_csv`]) or by nsight-python
/// (`processed_data`).
///
/// - Required: `Annotation`, `Metric`, `AvgValue`, `StdDev`, `MinValue`, `MaxValue`, `NumRuns`.
/// - Parameters are the columns between `Metric` and `AvgValue` (nsight-python's layout); types
///   are inferred per cell and an empty cell means the configuration lacks that parameter.
/// - Every other column kprof does not know is an extra column (in nsight-python files these are
///   the collector columns between `Unit` and `CI95_Lower`, and unhashable parameters, which
///   pandas moves there).
/// - kprof's own columns are optional: without them `Median`, `P05`, `P95` (and any absent
///   statistic) are NaN, `TotalRuns` equals `NumRuns`, outlier counts are 0, and the benchmark is
///   the `Benchmark` cell or else [`benchmark_from_path`].
/// - `missing_baselines` is empty (the CSV does not record it).
pub fn read_processed_csv(path: &Path) -> Result<ProcessedResults, IoError> {
    let file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut rdr = csv::ReaderBuilder::new().from_reader(super::csvutil::CrlfToLf::new(BufReader::new(file)));
    let header = Header::read(path, &mut rdr)?;
    let ann = header.require(path, "Annotation")?;
    let met = header.require(path, "Metric")?;
    let avg = header.require(path, "AvgValue")?;
    let std = header.require(path, "StdDev")?;
    let min = header.require(path, "MinValue")?;
    let max = header.require(path, "MaxValue")?;
    let num = header.require(path, "NumRuns")?;
    if met > avg {
        return Err(IoError::Schema {
            path: path.to_path_buf(),
            message: "column Metric comes after AvgValue; the parameter columns must lie between Metric and AvgValue, as nsight-python and kprof write them".into(),
        });
    }
    let params: Vec<(String, usize)> = (met + 1..avg).map(|i| (header.names[i].clone(), i)).collect();
    if let Some((n, _)) = params.iter().find(|(n, _)| is_known(n)) {
        return Err(IoError::Schema {
            path: path.to_path_buf(),
            message: format!("column {n:?} lies between Metric and AvgValue, where only parameter columns belong; restore nsight-python's column order"),
        });
    }
    let extras: Vec<(String, usize)> = header
        .names
        .iter()
        .enumerate()
        .filter(|(i, n)| !(met + 1..avg).contains(i) && !is_known(n))
        .map(|(i, n)| (n.clone(), i))
        .collect();
    let f = |name: &str| header.find(name);
    let (kernel, gpu, host, cc, mc, unit) = (
        f("Kernel"),
        f("GPU"),
        f("Host"),
        f("ComputeClock"),
        f("MemoryClock"),
        f("Unit"),
    );
    let (ci_lo, ci_hi, rsd, stable) = (
        f("CI95_Lower"),
        f("CI95_Upper"),
        f("RelativeStdDevPct"),
        f("StableMeasurement"),
    );
    let (normalized, norm_value, geomean) = (f("Normalized"), f("NormalizationValue"), f("Geomean"));
    let (bench, median, p05, p95) = (f("Benchmark"), f("Median"), f("P05"), f("P95"));
    let (total, mild, severe) = (f("TotalRuns"), f("OutliersMild"), f("OutliersSevere"));
    let boot: Vec<Option<usize>> = BOOTSTRAP_COLUMNS.iter().map(|c| f(c)).collect();
    let default_benchmark = benchmark_from_path(path);

    let mut result = ProcessedResults {
        param_names: params.iter().map(|(n, _)| n.clone()).collect(),
        ..Default::default()
    };
    let mut rec = csv::StringRecord::new();
    while rdr.read_record(&mut rec).map_err(|e| csv_error(path, e))? {
        let line = line_of(&rec);
        let err = |col: usize, message: String| IoError::Parse {
            path: path.to_path_buf(),
            line,
            column: header.names[col].clone(),
            message,
        };
        let number = |col: Option<usize>| -> Result<f64, IoError> {
            let Some(i) = col else { return Ok(f64::NAN) };
            let text = cell(&rec, Some(i));
            parse_num(text).ok_or_else(|| {
                err(
                    i,
                    format!("{text:?} is not a number; write a number or leave the cell empty"),
                )
            })
        };
        let opt_number = |col: Option<usize>| -> Result<Option<f64>, IoError> {
            match col {
                Some(i) if !is_missing(cell(&rec, Some(i))) => number(col).map(Some),
                _ => Ok(None),
            }
        };
        let count = |col: Option<usize>, default: usize| -> Result<usize, IoError> {
            let Some(i) = col else { return Ok(default) };
            let text = cell(&rec, Some(i)).trim();
            if text.is_empty() {
                return Ok(default);
            }
            text.parse::<usize>()
                .ok()
                .or_else(|| {
                    let x = text.parse::<f64>().ok()?;
                    (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as usize)
                })
                .ok_or_else(|| err(i, format!("{text:?} is not a count; write a non-negative integer")))
        };
        let stable_value = match stable {
            None => None,
            Some(i) => {
                let text = cell(&rec, Some(i)).trim();
                if is_missing(text) {
                    None
                } else if text.eq_ignore_ascii_case("true") {
                    Some(true)
                } else if text.eq_ignore_ascii_case("false") {
                    Some(false)
                } else {
                    return Err(err(i, format!("{text:?} is not True, False or empty")));
                }
            }
        };
        let num_runs = count(Some(num), 0)?;
        let bootstrap = if boot.iter().all(Option::is_some) && boot.iter().any(|c| !is_missing(cell(&rec, *c))) {
            Some(BootstrapCi {
                mean_lower: number(boot[0])?,
                mean_upper: number(boot[1])?,
                median_lower: number(boot[2])?,
                median_upper: number(boot[3])?,
            })
        } else {
            None
        };
        let summary = Summary {
            num_runs,
            total_runs: count(total, num_runs)?,
            mean: number(Some(avg))?,
            std_dev: number(Some(std))?,
            min: number(Some(min))?,
            max: number(Some(max))?,
            median: number(median)?,
            p05: number(p05)?,
            p95: number(p95)?,
            ci95_lower: number(ci_lo)?,
            ci95_upper: number(ci_hi)?,
            rsd_pct: number(rsd)?,
            stable: stable_value,
            outliers_mild: count(mild, 0)?,
            outliers_severe: count(severe, 0)?,
            bootstrap,
        };
        let normalized_value = match cell(&rec, normalized).trim() {
            t if is_missing(t) || t.eq_ignore_ascii_case("false") => None,
            _ => Some(cell(&rec, normalized).to_string()),
        };
        let benchmark = match cell(&rec, bench) {
            "" => default_benchmark.clone(),
            b => b.to_string(),
        };
        let row = ProcessedRow {
            benchmark,
            annotation: cell(&rec, Some(ann)).to_string(),
            metric: cell(&rec, Some(met)).to_string(),
            config: config_of(&rec, &params),
            summary,
            kernel: cell(&rec, kernel).to_string(),
            device: DeviceInfo {
                gpu: cell(&rec, gpu).to_string(),
                host: cell(&rec, host).to_string(),
                compute_clock_khz: opt_number(cc)?,
                memory_clock_khz: opt_number(mc)?,
            },
            unit: cell(&rec, unit).to_string(),
            extras: extras
                .iter()
                .map(|(n, i)| (n.clone(), ExtraValue::infer(cell(&rec, Some(*i)))))
                .collect(),
            normalized: normalized_value,
            normalization_value: opt_number(norm_value)?,
            geomean: number(geomean)?,
        };
        result.rows.push(row);
    }
    Ok(result)
}
