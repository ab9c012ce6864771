//! `kprof import FILE [-o PROCESSED.csv] [--raw RAW.csv]`: an Nsight Compute report (`.ncu-rep`,
//! exported through the installed ncu) or a CSV already exported with
//! `ncu --import REP --csv --page raw --print-units base` → kprof's raw and processed tables.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use kprof::ncu::{export_csv, parse_ncu_csv, ImportOptions, NcuInstall, NumberStyle};
use kprof_core::io::{atomic, write_processed_csv_to, write_raw_csv_to};

use crate::output;
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::transforms::Reducer;
use kprof_core::RawResults;

/// Arguments of `kprof import`.
#[derive(clap::Args, Debug, Clone)]
pub struct ImportArgs {
    /// An Nsight Compute report (`.ncu-rep`, needs ncu) or its raw-page CSV export
    /// (`ncu --import REP --csv --page raw --print-units base`, no ncu needed).
    pub file: PathBuf,
    /// Where to write the processed table (default: FILE's stem + `-processed.csv` beside FILE);
    /// `-` for standard output. Missing folders are created.
    #[arg(short, long, value_name = "PROCESSED.csv")]
    pub output: Option<PathBuf>,
    /// Where to write the raw table (default: beside the processed table, its stem with `-raw`
    /// for `-processed`, or + `-raw.csv`; not written when the processed table goes to `-`).
    #[arg(long, value_name = "RAW.csv")]
    pub raw: Option<PathBuf>,
    /// Benchmark name of the results (default: FILE's stem).
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Only these metric columns (default: every numeric metric except device attributes).
    #[arg(long, value_delimiter = ',', value_name = "M1,M2")]
    pub metrics: Option<Vec<String>>,
    /// How the kernels of one region in one run are combined: sum, mean, max, min, first, last.
    #[arg(long, default_value = "sum")]
    pub combine: String,
    /// Number format of the CSV: auto, c (4,264,448.5) or european (4.264.448,5).
    #[arg(long, default_value = "auto")]
    pub numbers: String,
    /// Also keep the exported CSV of a `.ncu-rep` here (default: not kept).
    #[arg(long, value_name = "EXPORT.csv")]
    pub keep_csv: Option<PathBuf>,
}

fn sibling(file: &Path, suffix: &str) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ncu".into());
    file.with_file_name(format!("{stem}{suffix}"))
}

/// The default raw table's path: beside the processed table (`x-processed.csv` → `x-raw.csv`,
/// `x.csv` → `x-raw.csv`), never beside the input when `-o` names another place.
fn raw_beside(output: &Path) -> PathBuf {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ncu".into());
    let base = stem.strip_suffix("-processed").unwrap_or(&stem);
    output.with_file_name(format!("{base}-raw.csv"))
}

/// Turns raw samples into the processed table (kprof-core's pipeline: statistics, geomean).
fn processed(raw: &RawResults) -> Result<kprof_core::ProcessedResults> {
    Ok(process(raw, &ProcessOptions::default())?)
}

/// Runs `kprof import`.
pub fn run(args: ImportArgs) -> Result<()> {
    let file = &args.file;
    if file.is_dir() {
        bail!(
            "{} is a folder; give a .ncu-rep report or its CSV export (a file inside it)",
            file.display()
        );
    }
    if !file.exists() {
        bail!(
            "{}: no such file; give a .ncu-rep report or its CSV export",
            file.display()
        );
    }
    let is_report = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ncu-rep") || e.eq_ignore_ascii_case("ncu-repz"));
    let text = if is_report {
        let ncu = NcuInstall::detect().with_context(|| {
            format!(
                "reading {} needs ncu; on a machine without it, export there with \
                 `LC_ALL=C ncu --import {} --csv --page raw --print-units base > report.csv` and import the CSV",
                file.display(),
                file.display()
            )
        })?;
        eprintln!(
            "kprof import: exporting {} with ncu {} at {}",
            file.display(),
            ncu.version,
            ncu.path.display()
        );
        let csv = export_csv(&ncu.path, file)?;
        if let Some(keep) = &args.keep_csv {
            output::write_file(keep, csv.as_bytes())?;
        }
        csv
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let reducer: Reducer = args.combine.parse()?;
    let number_style = match args.numbers.to_ascii_lowercase().as_str() {
        "auto" => NumberStyle::Auto,
        "c" => NumberStyle::C,
        "european" | "eu" => NumberStyle::European,
        other => bail!("--numbers {other:?}: use auto, c or european"),
    };
    let benchmark = args.benchmark.clone().unwrap_or_else(|| {
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ncu".into())
    });
    let mut opts = ImportOptions::default();
    opts.benchmark = benchmark;
    opts.metrics = args.metrics.clone();
    opts.reducer = reducer;
    opts.number_style = number_style;
    opts.source_name = file.display().to_string();
    let raw = parse_ncu_csv(&text, &opts)?;
    if raw.samples.is_empty() {
        bail!("{}: the report has no profiled kernels", file.display());
    }
    let out_path = args.output.clone().unwrap_or_else(|| sibling(file, "-processed.csv"));
    let raw_path = match (&args.raw, atomic::is_stdout(&out_path)) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(raw_beside(&out_path)),
    };
    // Everything is computed and every destination checked before the first byte is written, and
    // a failed second write removes the first file when this run created it: a failed import
    // leaves no partial files.
    let p = processed(&raw)?;
    let mut processed_bytes = Vec::new();
    write_processed_csv_to(&mut processed_bytes, &p)?;
    atomic::plan(&out_path)?;
    if let Some(raw_path) = &raw_path {
        atomic::plan(raw_path)?;
        let mut raw_bytes = Vec::new();
        write_raw_csv_to(&mut raw_bytes, &raw)?;
        let created = !raw_path.exists();
        output::write_file(raw_path, &raw_bytes)?;
        if let Err(e) = output::write_file(&out_path, &processed_bytes) {
            if created && !atomic::is_stdout(raw_path) {
                let _ = std::fs::remove_file(raw_path);
            }
            return Err(e);
        }
    } else {
        output::write_file(&out_path, &processed_bytes)?;
    }
    let regions: std::collections::BTreeSet<&str> = raw.series.iter().map(|s| s.key.annotation.as_str()).collect();
    eprintln!(
        "kprof import: {} samples, {} series, {} region(s); raw → {}, processed → {}",
        raw.samples.len(),
        raw.series.len(),
        regions.len(),
        raw_path
            .as_deref()
            .map_or("(not written)".into(), |p| p.display().to_string()),
        out_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/ncu-csv-exports")
            .join(name)
    }

    fn args(file: PathBuf, dir: &Path) -> ImportArgs {
        ImportArgs {
            file,
            output: Some(dir.join("p.csv")),
            raw: Some(dir.join("r.csv")),
            benchmark: None,
            metrics: None,
            combine: "sum".into(),
            numbers: "auto".into(),
            keep_csv: None,
        }
    }

    #[test]
    fn import_csv_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        run(args(fixture("kprof-keyed.csv"), dir.path())).unwrap();
        let raw = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
        let processed = std::fs::read_to_string(dir.path().join("p.csv")).unwrap();
        assert!(
            raw.lines()
                .next()
                .unwrap()
                .starts_with("Annotation,Value,Metric,Kernel,GPU"),
            "{raw}"
        );
        assert!(
            raw.contains("2670688") && raw.contains("NVIDIA H200") && raw.contains("kprof-keyed"),
            "{raw}"
        );
        assert!(
            processed.contains("AvgValue") && processed.contains("matmul"),
            "{processed}"
        );
        // Read back through kprof-core: the same samples.
        let back = kprof_core::io::read_raw_csv(&dir.path().join("r.csv"), &Default::default()).unwrap();
        assert_eq!(back.samples.len(), 36);
    }

    #[test]
    fn import_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(args(dir.path().join("nope.csv"), dir.path())).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        let mut a = args(fixture("plain-ncu.csv"), dir.path());
        a.combine = "median".into();
        assert!(run(a).is_err());
        let mut a = args(fixture("plain-ncu.csv"), dir.path());
        a.numbers = "roman".into();
        assert!(run(a).unwrap_err().to_string().contains("auto, c or european"));
    }
}
