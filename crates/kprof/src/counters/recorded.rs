//! Recorded collections as files ([`write_recording`], which gives the folder's format, and
//! [`read_recording`]), and their offline re-evaluation with the host API, no GPU
//! ([`evaluate_recorded`]). The GPU check (`gpu-checks/harness/src/counters_check.rs`) writes them
//! under `tests/fixtures/h200-cupti-counter-images/`, and CI checks that the re-evaluated values are
//! bit-for-bit the recorded ones.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::host::{c_names, CuptiLib, HostObject};
use super::range::{evaluate_counter_data, RangeResult, Recording, ReplayMode};
use super::CountersError;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CountersError + '_ {
    move |source| CountersError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> CountersError {
    CountersError::BadRecording {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Writes `rec` into folder `dir` (created if needed), one recording per folder:
/// * `meta.txt` — `key=value` lines: `chip`, `api_version`, `mode` (`kernel`/`user`), `passes`,
///   `closure_runs`, `metrics` (comma-separated, in order);
/// * `config.bin`, `counter_data.bin`, `counter_availability.bin` — the raw images;
/// * `values.tsv` — `range_index`, `range_name`, `metric`, `value` (shortest round-trip decimal),
///   `bits` (the f64's bit pattern in hex): the values evaluated on the recording machine.
pub fn write_recording(dir: &Path, rec: &Recording) -> Result<(), CountersError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut meta = String::new();
    let _ = writeln!(meta, "chip={}", rec.chip);
    let _ = writeln!(meta, "api_version={}", rec.api_version);
    let _ = writeln!(meta, "mode={}", rec.mode.cupti_name());
    let _ = writeln!(meta, "passes={}", rec.passes);
    let _ = writeln!(meta, "closure_runs={}", rec.closure_runs);
    let _ = writeln!(meta, "metrics={}", rec.metrics.join(","));
    let mut tsv = String::from("range_index\trange_name\tmetric\tvalue\tbits\n");
    for (i, r) in rec.ranges.iter().enumerate() {
        for (m, v) in &r.values {
            let _ = writeln!(tsv, "{i}\t{}\t{m}\t{v:?}\t{:#018x}", r.name, v.to_bits());
        }
    }
    for (name, bytes) in [
        ("meta.txt", meta.as_bytes()),
        ("values.tsv", tsv.as_bytes()),
        ("config.bin", &rec.config_image[..]),
        ("counter_data.bin", &rec.counter_data[..]),
        ("counter_availability.bin", &rec.counter_availability[..]),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(io_err(&p))?;
    }
    Ok(())
}

/// Reads a recording written by [`write_recording`].
pub fn read_recording(dir: &Path) -> Result<Recording, CountersError> {
    let read = |name: &str| -> Result<Vec<u8>, CountersError> {
        let p = dir.join(name);
        std::fs::read(&p).map_err(io_err(&p))
    };
    let meta_path = dir.join("meta.txt");
    let meta = String::from_utf8(read("meta.txt")?).map_err(|_| bad(&meta_path, "not UTF-8"))?;
    let get = |key: &str| -> Result<String, CountersError> {
        meta.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(|s| s.trim().to_string())
            .ok_or_else(|| bad(&meta_path, format!("missing {key}")))
    };
    let num = |key: &str| -> Result<u64, CountersError> {
        get(key)?
            .parse()
            .map_err(|_| bad(&meta_path, format!("{key} is not a number")))
    };
    let mode: ReplayMode = get("mode")?
        .parse()
        .map_err(|_| bad(&meta_path, "mode must be kernel or user"))?;
    let metrics: Vec<String> = get("metrics")?
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let tsv_path = dir.join("values.tsv");
    let tsv = String::from_utf8(read("values.tsv")?).map_err(|_| bad(&tsv_path, "not UTF-8"))?;
    let mut ranges: Vec<RangeResult> = Vec::new();
    for (ln, line) in tsv.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 5 {
            return Err(bad(
                &tsv_path,
                format!("line {}: expected 5 tab-separated fields", ln + 1),
            ));
        }
        let idx: usize = f[0]
            .parse()
            .map_err(|_| bad(&tsv_path, format!("line {}: bad range_index", ln + 1)))?;
        let bits = u64::from_str_radix(f[4].trim_start_matches("0x"), 16)
            .map_err(|_| bad(&tsv_path, format!("line {}: bad bits", ln + 1)))?;
        while ranges.len() <= idx {
            ranges.push(RangeResult {
                name: String::new(),
                values: Vec::new(),
            });
        }
        ranges[idx].name = f[1].to_string();
        ranges[idx].values.push((f[2].to_string(), f64::from_bits(bits)));
    }
    Ok(Recording {
        chip: get("chip")?,
        api_version: num("api_version")? as u32,
        mode,
        metrics,
        passes: num("passes")? as usize,
        closure_runs: num("closure_runs")? as usize,
        config_image: read("config.bin")?,
        counter_availability: read("counter_availability.bin")?,
        counter_data: read("counter_data.bin")?,
        ranges,
        timings: Default::default(),
    })
}

/// The recording folders under `root` (those holding a `meta.txt`), sorted.
pub fn recorded_cases(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("meta.txt").is_file())
        .collect();
    v.sort();
    v
}

/// A recording and its offline re-evaluation.
#[derive(Debug, Clone)]
pub struct RecordedCheck {
    /// What was recorded on the GPU machine.
    pub recording: Recording,
    /// The same counter-data image evaluated here.
    pub reevaluated: Vec<RangeResult>,
    /// Passes the recorded config image needs, computed here.
    pub passes: usize,
}

impl RecordedCheck {
    /// Differences between recorded and re-evaluated values, as readable lines (empty = identical).
    pub fn mismatches(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.recording.ranges.len() != self.reevaluated.len() {
            out.push(format!(
                "{} ranges recorded, {} re-evaluated",
                self.recording.ranges.len(),
                self.reevaluated.len()
            ));
        }
        if self.passes != self.recording.passes {
            out.push(format!(
                "passes: recorded {}, computed {}",
                self.recording.passes, self.passes
            ));
        }
        for (a, b) in self.recording.ranges.iter().zip(&self.reevaluated) {
            if a.name != b.name {
                out.push(format!("range name {:?} vs {:?}", a.name, b.name));
            }
            for ((ma, va), (mb, vb)) in a.values.iter().zip(&b.values) {
                if ma != mb || va.to_bits() != vb.to_bits() {
                    out.push(format!(
                        "range {:?} {ma}: recorded {va:?}, re-evaluated {mb} = {vb:?}",
                        a.name
                    ));
                }
            }
        }
        out
    }
}

/// Re-evaluates the recording in `dir` with the host API of `lib` (no GPU needed).
pub fn evaluate_recorded_with(lib: &'static CuptiLib, dir: &Path) -> Result<RecordedCheck, CountersError> {
    let recording = read_recording(dir)?;
    let avail = (!recording.counter_availability.is_empty()).then_some(&recording.counter_availability[..]);
    let mut host = HostObject::new(lib, &recording.chip, avail)?;
    host.add_metrics(&c_names(&recording.metrics)?)?;
    let reevaluated = evaluate_counter_data(&host, &recording.counter_data, &recording.metrics)?;
    let passes = lib.num_passes(&recording.config_image)?;
    Ok(RecordedCheck {
        recording,
        reevaluated,
        passes,
    })
}

/// [`evaluate_recorded_with`] loading libcupti from `cupti_path`.
pub fn evaluate_recorded(cupti_path: &Path, dir: &Path) -> Result<RecordedCheck, CountersError> {
    evaluate_recorded_with(CuptiLib::load(cupti_path)?, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recording {
            chip: "GH100".into(),
            api_version: 130001,
            mode: ReplayMode::User,
            metrics: vec!["a.sum".into(), "b.avg.pct_of_peak_sustained_elapsed".into()],
            passes: 8,
            closure_runs: 8,
            config_image: vec![1, 2, 3],
            counter_availability: vec![4],
            counter_data: vec![5, 6],
            ranges: vec![
                RangeResult {
                    name: "regionA".into(),
                    values: vec![
                        ("a.sum".into(), 0.1 + 0.2),
                        ("b.avg.pct_of_peak_sustained_elapsed".into(), 36.5),
                    ],
                },
                RangeResult {
                    name: "regionB".into(),
                    values: vec![
                        ("a.sum".into(), 1e300),
                        ("b.avg.pct_of_peak_sustained_elapsed".into(), -0.0),
                    ],
                },
            ],
            timings: Default::default(),
        };
        write_recording(dir.path(), &rec).unwrap();
        let back = read_recording(dir.path()).unwrap();
        assert_eq!(back.ranges, rec.ranges);
        assert_eq!(back.ranges[1].values[1].1.to_bits(), (-0.0f64).to_bits());
        assert_eq!(back.metrics, rec.metrics);
        assert_eq!(
            (back.chip.as_str(), back.api_version, back.mode, back.passes),
            ("GH100", 130001, ReplayMode::User, 8)
        );
        assert_eq!(back.counter_data, vec![5, 6]);
        assert_eq!(
            recorded_cases(dir.path().parent().unwrap())
                .iter()
                .filter(|p| *p == dir.path())
                .count(),
            1
        );
    }
}
