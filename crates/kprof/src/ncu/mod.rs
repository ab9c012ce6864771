//! The Nsight Compute (`ncu`) backend; every failure is an [`NcuError`] that says what happened and
//! what to do.
//! - [`range_name`] / [`parse_range_name`]: `region#c<call>.<config>.<run>`, the NVTX push/pop range
//!   name the engine uses under ncu, and its inverse.
//! - [`argv`]: [`NcuOptions`] → the argument list of `ncu ... -- <program> <args>`.
//! - [`version`]: [`find_ncu`], [`NcuVersion`], [`NcuInstall`], the mode ([`ModeChoice`]).
//! - [`csv`]: [`parse_ncu_csv`], ncu's raw-page CSV export into [`RawResults`](kprof_core::RawResults).
//! - [`relaunch`]: the `KPROF_NCU_CHILD` protocol and [`relaunch_under_ncu`].
//! - [`bench`](mod@bench): the backend of the run loop, [`bench_ncu`] / `Profiler::bench_ncu`.

pub mod argv;
pub mod bench;
pub mod csv;
pub mod relaunch;
pub mod version;

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

/// Errors of the ncu backend (defined with the engine's error types, which wrap them).
pub use crate::error::NcuError;

impl NcuError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NcuError::Io {
            context: context.into(),
            source,
        }
    }
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
