//! `kprof metrics`: metric discovery without a GPU (the Profiler Host API needs only the chip name).
//!
//! ```text
//! kprof metrics [--chip GH100] [--filter dram] [--suffixes]     # list metrics, descriptions, units
//! kprof metrics [--chip GH100] --passes m1,m2,...               # print the number of replay passes
//! kprof metrics [--chip GH100] --expand SpeedOfLight,basic       # the metric names of ncu sections/sets
//! ```
//!
//! An unknown name is an error naming the closest valid ones (exit 1). Sections and sets:
//! `docs/counters.md`; where libcupti comes from: `docs/configuration.md`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use kprof::counters::{locate_cupti, sections, CuptiLib, MetricsCatalog};

/// Arguments of `kprof metrics`.
#[derive(clap::Args, Debug, Clone)]
pub struct MetricsArgs {
    /// Chip whose metrics to list: GH100 (H100/H200), GA100, AD102, GB100, ... Without it,
    /// the device's chip when a GPU is present, else KPROF_CHIP, else GH100.
    #[arg(long, value_name = "CHIP")]
    pub chip: Option<String>,
    /// Only base metrics whose name contains this text (case-insensitive).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Print the number of replay passes this metric set needs (a number only), after checking
    /// the names; ncu section and set names stand for their metrics.
    #[arg(long, value_delimiter = ',', value_name = "M1,M2")]
    pub passes: Option<Vec<String>>,
    /// Print the metric names these metrics, ncu sections and sets stand for (one a line; what
    /// is left out, and why, on stderr).
    #[arg(long, value_delimiter = ',', value_name = "NAMES", conflicts_with = "passes")]
    pub expand: Option<Vec<String>>,
    /// List every full name (base + suffix, as ncu names them) with its unit.
    #[arg(long)]
    pub suffixes: bool,
    /// libcupti to use (file or folder); overrides KPROF_CUPTI_PATH.
    #[arg(long, value_name = "PATH")]
    pub cupti: Option<PathBuf>,
}

/// `--chip`, else the device's chip when a GPU is present, else `KPROF_CHIP`, else GH100.
fn chip(args: &MetricsArgs) -> String {
    args.chip
        .clone()
        .or_else(|| {
            if gpu_present() {
                kprof::counters::device_chip()
            } else {
                None
            }
        })
        .or_else(|| std::env::var("KPROF_CHIP").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "GH100".into())
}

/// A cheap look for an NVIDIA device node before loading the driver (keeps GPU-less runs fast
/// and free of driver side effects). `KPROF_NO_DEVICE=1` forces the offline path.
fn gpu_present() -> bool {
    std::env::var_os("KPROF_NO_DEVICE").is_none() && std::path::Path::new("/dev/nvidia0").exists()
}

fn cupti_path(args: &MetricsArgs) -> Result<PathBuf> {
    match &args.cupti {
        Some(p) if p.is_dir() => {
            kprof::counters::cupti_in(p).with_context(|| format!("no libcupti.so* in {}", p.display()))
        }
        Some(p) => Ok(p.clone()),
        // On a GPU machine: the engine's libcupti (same search as the run loop).
        None if gpu_present() => match kprof::loader::Libraries::load() {
            Ok(l) => Ok(l.cupti_path.clone()),
            Err(_) => Ok(locate_cupti()?),
        },
        None => Ok(locate_cupti()?),
    }
}

/// Runs `kprof metrics`.
pub fn run(args: &MetricsArgs) -> Result<()> {
    let lib = cupti_path(args)?;
    let chip = chip(args);
    let mut out = std::io::stdout().lock();
    let result = if let Some(names) = args.passes.as_ref().or(args.expand.as_ref()) {
        let metrics = expanded(&lib, &chip, names)?;
        if args.expand.is_some() {
            metrics.iter().try_for_each(|m| writeln!(out, "{m}"))
        } else {
            let catalog =
                MetricsCatalog::open(&lib, &chip).with_context(|| format!("cannot read the metrics of {chip}"))?;
            let passes = catalog.num_passes(&metrics)?;
            writeln!(out, "{passes}")
        }
    } else {
        let catalog =
            MetricsCatalog::open(&lib, &chip).with_context(|| format!("cannot read the metrics of {chip}"))?;
        list(&catalog, args, &mut out)
    };
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

/// The names with ncu sections and sets expanded for `chip`; what is left out goes to stderr.
fn expanded(lib: &std::path::Path, chip: &str, names: &[String]) -> Result<Vec<String>> {
    let names: Vec<&str> = names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
    if !sections::has_sections(&names) {
        return Ok(names.iter().map(|s| s.to_string()).collect());
    }
    let lib = CuptiLib::load(lib)?;
    let e = sections::resolve(lib, chip, &names)?;
    if let Some(note) = e.left_out_note() {
        eprintln!("kprof: {note}");
    }
    Ok(e.metrics)
}

fn list(catalog: &MetricsCatalog, args: &MetricsArgs, out: &mut impl Write) -> std::io::Result<()> {
    let bases = catalog.filter(args.filter.as_deref());
    let mut rows: Vec<[String; 4]> = Vec::new();
    for b in &bases {
        if args.suffixes {
            for full in b.full_names() {
                let unit = catalog.properties(&full).map(|p| p.dim_unit).unwrap_or_default();
                rows.push([full, b.kind.to_string(), unit, b.description.clone()]);
            }
        } else {
            let unit = if b.hw_unit.is_empty() {
                b.dim_unit.clone()
            } else {
                format!("{} ({})", b.dim_unit, b.hw_unit)
            };
            rows.push([b.name.clone(), b.kind.to_string(), unit, b.description.clone()]);
        }
    }
    let header = [
        if args.suffixes { "metric" } else { "base metric" },
        "kind",
        "unit",
        "description",
    ]
    .map(String::from);
    let w: Vec<usize> = (0..3)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(&header).chain(&rows) {
        writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        )?;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{} base metrics{} for {} (CUPTI {} from {}).{}",
        bases.len(),
        args.filter
            .as_deref()
            .map(|f| format!(" matching {f:?}"))
            .unwrap_or_default(),
        catalog.chip(),
        catalog.lib().api_version,
        catalog.lib().path.display(),
        if args.suffixes {
            String::new()
        } else {
            " Counters need a rollup (.sum/.avg/.min/.max), ratios .ratio/.pct/.max_rate, throughputs \
             e.g. .avg.pct_of_peak_sustained_elapsed; --suffixes lists every full name."
                .to_string()
        }
    );
    Ok(())
}
