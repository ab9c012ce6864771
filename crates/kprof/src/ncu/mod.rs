//! The Nsight Compute (`ncu`) backend: NVTX range names that carry kprof's region keys, the ncu
//! command line, finding ncu and its version, reading ncu's CSV export into
//! [`RawResults`](kprof_core::RawResults), and relaunching a program under ncu.
//!
//! - [`range_name`] / [`parse_range_name`]: `region#c<call>.<config>.<run>`, the NVTX push/pop
//!   range name the engine uses under ncu, and its inverse.
//! - [`argv`]: [`NcuOptions`] → the argument list of `ncu ... -- <program> <args>`.
//! - [`version`]: [`find_ncu`], [`NcuVersion`], [`NcuInstall`], the mode
//!   ([`NcuModeRequest`] → [`ModeChoice`]: relaunch; attach is documented there, not implemented).
//! - [`csv`]: [`parse_ncu_csv`] for `ncu --import REP --csv --page raw --print-units base`.
//! - [`relaunch`]: the `KPROF_NCU_CHILD` protocol and [`relaunch_under_ncu`].
//! - [`bench`]: the backend of the run loop, [`bench_ncu`] / `Profiler::bench_ncu`.
//!
//! Every failure is an [`NcuError`] whose message says what happened and what to do.

pub mod argv;
pub mod bench;
pub mod csv;
pub mod relaunch;
pub mod version;

use std::path::PathBuf;

pub use self::argv::{CacheControl, ClockControl, NcuOptions, ReplayMode, TargetProcesses, DEFAULT_NVTX_INCLUDE};
pub use self::bench::{arm_child, bench_ncu, last_run, NcuRunInfo, Relaunch};
pub use self::csv::{
    export_args, export_csv, parse_ncu_csv, parse_ncu_csv_file, parse_push_pop_cell, parse_start_end_cell,
    ImportOptions, NumberStyle, NvtxRange,
};
pub use self::relaunch::{
    child_target, is_ncu_child, relaunch_under_ncu, relaunch_with, report_stem, RunOutput, CHILD_ENV,
};
pub use self::version::{
    find_ncu, find_ncu_in, ModeChoice, NcuInstall, NcuMode, NcuModeRequest, NcuSearch, NcuVersion, ATTACH_MIN_VERSION,
    MIN_VERSION, MODE_ENV,
};

/// kprof's NVTX domain (ASCII). Ranges in it are kprof's own regions.
pub const DOMAIN: &str = "kprof";

pub use crate::nvtx::RESERVED_CHARS;

pub use crate::nvtx::range_name;

/// A kprof range name taken apart: the inverse of [`range_name`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RangeKey {
    /// Region name.
    pub region: String,
    /// Index of the benchmark call in the process.
    pub call: u32,
    /// Configuration index.
    pub config: u32,
    /// Run index within the configuration.
    pub run: u32,
}

/// Parses `region#c<call>.<config>.<run>`; `None` when `name` is not such a name (then it is a
/// plain range, not one of kprof's keyed ones).
pub fn parse_range_name(name: &str) -> Option<RangeKey> {
    let (region, key) = name.rsplit_once("#c")?;
    if region.is_empty() {
        return None;
    }
    let mut parts = key.split('.');
    let mut num = || -> Option<u32> {
        let p = parts.next()?;
        // Digits only: no sign, no spaces; u32::from_str would accept a leading '+'.
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    let (call, config, run) = (num()?, num()?, num()?);
    if parts.next().is_some() {
        return None;
    }
    Some(RangeKey {
        region: crate::nvtx::decode_range_name(region),
        call,
        config,
        run,
    })
}

/// Checks that a region name can be used in [`range_name`]: non-empty printable ASCII without
/// any of [`RESERVED_CHARS`]. Returns the offending character in the error.
pub fn check_region_name(region: &str) -> Result<(), NcuError> {
    if region.is_empty() {
        return Err(NcuError::RegionName {
            name: region.into(),
            reason: "it is empty".into(),
        });
    }
    Ok(())
}

/// Errors of the ncu backend. Each message says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum NcuError {
    /// No `ncu` executable was found.
    #[error(
        "Nsight Compute (ncu) was not found; looked in: {}. Install Nsight Compute (it ships with \
         the CUDA toolkit as <cuda>/bin/ncu, or as the nsight-compute package from NVIDIA's \
         repositories), put ncu on PATH or set KPROF_NCU=/path/to/ncu or CUDA_HOME; or use the \
         CUPTI backend (backend=\"cupti\"), which needs no ncu",
        list_paths(searched)
    )]
    NotFound {
        /// Every place that was looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// `ncu --version` could not be run.
    #[error("cannot run {} --version: {source}; check that the file is an executable ncu", path.display())]
    VersionRun {
        /// The ncu that was found.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `ncu --version` printed no `Version a.b.c.d` line.
    #[error("{} --version printed no version (expected a line like \"Version 2025.3.1.0 (build 36398880)\"); it printed: {output:?}", path.display())]
    VersionUnparsed {
        /// The ncu that was run.
        path: PathBuf,
        /// What it printed (stdout and stderr).
        output: String,
    },
    /// ncu is older than kprof supports.
    #[error(
        "{} is Nsight Compute {found}, older than {min}, the oldest version kprof drives; \
         install a newer Nsight Compute (CUDA 12.1 or later ships one) and point KPROF_NCU at it, \
         or use the CUPTI backend (backend=\"cupti\")",
        path.display()
    )]
    TooOld {
        /// The ncu that was found.
        path: PathBuf,
        /// Its version.
        found: NcuVersion,
        /// The oldest supported version.
        min: NcuVersion,
    },
    /// A mode name that is not `auto`, `relaunch` or `attach`.
    #[error("{origin} is {value:?}; the ncu mode must be \"auto\", \"relaunch\" or \"attach\"")]
    ModeName {
        /// What was given.
        value: String,
        /// Where it came from (`KPROF_NCU_MODE`, `ncu_options['mode']`).
        origin: String,
    },
    /// Attach mode was asked for, but the ncu found is too old for it (or of unknown version).
    #[error(
        "ncu attach mode needs Nsight Compute >= {min} (CUDA 13.3 Update 1); found {found} at {}. \
         Ask for mode \"relaunch\" or \"auto\" (KPROF_NCU_MODE, or ncu_options={{\"mode\": ...}} \
         in Python), which runs this ncu in relaunch mode (the program is run again under ncu). \
         A newer ncu alone would not help: this kprof does not implement attach mode yet",
        path.display()
    )]
    AttachUnavailable {
        /// The ncu found.
        path: PathBuf,
        /// Its version in words (`2025.3.1.0`, or `an ncu of unknown version`).
        found: String,
        /// The oldest ncu with attach mode.
        min: NcuVersion,
    },
    /// Attach mode was asked for with an ncu that supports it, but kprof does not implement it.
    #[error(
        "ncu attach mode is not implemented in this version of kprof (ncu {found} at {} supports \
         it). Ask for mode \"relaunch\" or \"auto\" (KPROF_NCU_MODE, or ncu_options={{\"mode\": ...}} \
         in Python), which runs the program again under ncu",
        path.display()
    )]
    AttachNotImplemented {
        /// The ncu found.
        path: PathBuf,
        /// Its version.
        found: String,
    },
    /// ncu could not be started.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The executable.
        program: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// ncu reported ERR_NVGPUCTRPERM: this user may not read the GPU performance counters.
    #[error(
        "ncu may not access the GPU performance counters (ERR_NVGPUCTRPERM, see {}). Either run \
         as root (or with CAP_SYS_ADMIN in a container), or allow all users: put \
         `options nvidia NVreg_RestrictProfilingToAdminUsers=0` into a file in /etc/modprobe.d/, \
         then reload the nvidia kernel module or reboot \
         (https://developer.nvidia.com/ERR_NVGPUCTRPERM); or use the CUPTI backend \
         (backend=\"cupti\"), whose timing needs no counter access. Last lines of the log:\n{tail}",
        log.display()
    )]
    CounterPermission {
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// ncu rejected a metric name.
    #[error(
        "ncu does not know metric(s) {}; check the spelling, or list the valid names with \
         `ncu --query-metrics --chip <chip>` (gh100 on H100/H200). Log {}:\n{tail}",
        metrics.join(", "), log.display()
    )]
    InvalidMetric {
        /// The metric names ncu complained about (may be empty when the log does not name them).
        metrics: Vec<String>,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// ncu (or the profiled program) failed: non-zero exit or killed by a signal.
    #[error(
        "ncu exited with {status} while profiling `{command}`; last lines of its log {}:\n{tail}",
        log.display()
    )]
    Crashed {
        /// Exit status in words (`exit code 1`, `signal 11`).
        status: String,
        /// The command, for the message.
        command: String,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines (or of stderr when the log is empty).
        tail: String,
    },
    /// ncu ran but profiled no kernel (the NVTX filter matched nothing, or the child did not
    /// run the benchmark).
    #[error(
        "ncu profiled no kernels (filters: {filters}). Check that the program runs the selected \
         benchmark under ncu (KPROF_NCU_CHILD={target}), that its regions push NVTX ranges in the \
         ASCII domain \"kprof\", and that --nvtx-include matches them. Log {}:\n{tail}",
        log.display()
    )]
    NoKernels {
        /// The NVTX filters passed.
        filters: String,
        /// The benchmark the child was asked to run.
        target: String,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// The report file ncu should have written is missing.
    #[error("ncu finished but wrote no report at {}; last lines of its log {}:\n{tail}", report.display(), log.display())]
    ReportMissing {
        /// The expected report.
        report: PathBuf,
        /// The ncu log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// `ncu --import ... --csv` failed.
    #[error("exporting {} to CSV with `{command}` failed ({status}):\n{tail}", report.display())]
    Export {
        /// The report.
        report: PathBuf,
        /// The command that was run.
        command: String,
        /// Exit status in words.
        status: String,
        /// Last lines of its stderr/stdout.
        tail: String,
    },
    /// The CSV export could not be parsed.
    #[error("{source_name}:{line}: {message}")]
    Csv {
        /// The file (or `<input>`).
        source_name: String,
        /// 1-based line number of the CSV record (0 when not known).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A region name cannot be used in an NVTX range name.
    #[error("region name {name:?} cannot be used with ncu: {reason}")]
    RegionName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The program cannot be relaunched (e.g. a notebook without a script).
    #[error("{0}")]
    Unsupported(String),
    /// The results violate the measurement model (a (region, config, run) twice, two units).
    #[error("ncu results: {0}")]
    Model(#[from] kprof_core::ModelError),
    /// A file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl NcuError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NcuError::Io {
            context: context.into(),
            source,
        }
    }
}

fn list_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(nowhere)".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The last `n` non-empty lines of `text`, joined with newlines.
pub(crate) fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_names_round_trip() {
        let n = range_name("matmul", 0, 2, 7);
        assert_eq!(n, "matmul#c0.2.7");
        assert_eq!(
            parse_range_name(&n),
            Some(RangeKey {
                region: "matmul".into(),
                call: 0,
                config: 2,
                run: 7
            })
        );
        let n = range_name("a#c1.2.3", 4095, 1_048_575, 1_048_575);
        let k = parse_range_name(&n).unwrap();
        assert_eq!(
            (k.region.as_str(), k.call, k.config, k.run),
            ("a#c1.2.3", 4095, 1_048_575, 1_048_575)
        );
        for bad in [
            "matmul",
            "#c0.1.2",
            "m#c0.1",
            "m#c0.1.2.3",
            "m#c0.+1.2",
            "m#c0. 1.2",
            "m#c0.1.x",
            "m#c0..2",
        ] {
            assert_eq!(parse_range_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn range_names_avoid_ncu_special_characters() {
        let n = range_name("copy_kernel-2", 12, 345, 6789);
        assert!(
            n.chars()
                .all(|c| c.is_ascii_graphic() && (c == '#' || !RESERVED_CHARS.contains(&c))),
            "{n}"
        );
        check_region_name("copy_kernel-2").unwrap();
        assert!(check_region_name("").is_err());
        // Any other name works: special characters are percent-encoded and decoded back.
        let n = range_name("x * 2 (256 MB)", 0, 1, 2);
        assert!(
            n.chars()
                .all(|c| c.is_ascii_graphic() && (c == '%' || c == '#' || !RESERVED_CHARS.contains(&c))),
            "{n}"
        );
        assert_eq!(parse_range_name(&n).unwrap().region, "x * 2 (256 MB)");
    }
}
