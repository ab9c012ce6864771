//! ncu's command line, built as a list of arguments (never a shell string): [`NcuOptions`] and
//! [`NcuOptions::argv`], which returns the arguments that follow the `ncu` executable.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use super::version::NcuModeRequest;

/// The filter that selects every push/pop range in kprof's domain (gpu-stack.md §4.3: `regex:`
/// applies to the range name, `Domain@Range/` selects push/pop ranges, the trailing `/` is
/// required).
pub const DEFAULT_NVTX_INCLUDE: &str = "regex:kprof@.+/";

// `--replay-mode`, `--cache-control` and `--clock-control` take the options' own enums (one per
// option, parsed only by their `FromStr`): their `as_str` is ncu's spelling.
pub use crate::choices::ReplayMode;
pub use crate::runner::{CacheControl, ClockControl};

/// `--target-processes` (its names are ncu's spelling).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TargetProcesses {
    /// Profile the program and every process it starts. ncu's default.
    #[default]
    All,
    /// Profile only the program itself (Python workers are then not profiled).
    ApplicationOnly,
}

crate::choices::choice_names!(TargetProcesses, "ncu_options['target_processes']", {
    All => "all",
    ApplicationOnly => "application-only",
});

/// Everything kprof passes to ncu.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NcuOptions {
    /// `--metrics m1,m2,...` (empty: not passed; ncu then collects `--set`/`--section`, or its
    /// `basic` set).
    pub metrics: Vec<String>,
    /// `--set NAME` (e.g. `full`).
    pub set: Option<String>,
    /// `--section NAME`, once per entry.
    pub sections: Vec<String>,
    /// `--replay-mode`.
    pub replay_mode: ReplayMode,
    /// `--cache-control` (always passed).
    pub cache_control: CacheControl,
    /// `--clock-control` (always passed; default `none`).
    pub clock_control: ClockControl,
    /// `--target-processes` (always passed).
    pub target_processes: TargetProcesses,
    /// `--launch-skip N`.
    pub launch_skip: Option<u64>,
    /// `--launch-count N`.
    pub launch_count: Option<u64>,
    /// `--nvtx-include F`, once per entry (several filters are OR-ed by ncu). `--nvtx` is always
    /// passed, so the export has the NVTX columns even with no filter.
    pub nvtx_include: Vec<String>,
    /// Raw arguments appended after kprof's own (before `-o` and the program).
    pub extra_args: Vec<OsString>,
    /// `--log-file F`.
    pub log_file: Option<PathBuf>,
    /// `-o F` (the `.ncu-rep` report).
    pub report_path: Option<PathBuf>,
    /// `-f` (overwrite an existing report).
    pub force_overwrite: bool,
    /// Relaunch or attach (not an ncu argument): `auto` defers to `KPROF_NCU_MODE`, then to the
    /// ncu version ([`ModeChoice::choose`](super::ModeChoice::choose)).
    pub mode: NcuModeRequest,
}

impl Default for NcuOptions {
    fn default() -> Self {
        NcuOptions {
            metrics: vec![kprof_core::DEFAULT_METRIC.to_string()],
            set: None,
            sections: Vec::new(),
            replay_mode: ReplayMode::Kernel,
            cache_control: CacheControl::All,
            clock_control: ClockControl::None,
            target_processes: TargetProcesses::All,
            launch_skip: None,
            launch_count: None,
            nvtx_include: vec![DEFAULT_NVTX_INCLUDE.to_string()],
            extra_args: Vec::new(),
            log_file: None,
            report_path: None,
            force_overwrite: true,
            mode: NcuModeRequest::Auto,
        }
    }
}

impl NcuOptions {
    /// The ncu arguments (without the `ncu` executable itself) for profiling
    /// `program args...`: pass them to `Command::new(ncu).args(..)`.
    ///
    /// ```text
    /// [--log-file LOG] --cache-control all|none --clock-control base|none --replay-mode MODE
    /// --target-processes all|application-only --nvtx [--nvtx-include F]... [--metrics m1,m2]
    /// [--set S] [--section S]... [--launch-skip N] [--launch-count N] [EXTRA...]
    /// [-f] [-o REPORT] -- PROGRAM ARGS...
    /// ```
    pub fn argv<P, I, A>(&self, program: P, args: I) -> Vec<OsString>
    where
        P: AsRef<OsStr>,
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        let mut v: Vec<OsString> = Vec::new();
        let mut push = |s: &str| v.push(OsString::from(s));
        if let Some(log) = &self.log_file {
            push("--log-file");
            v.push(log.clone().into_os_string());
        }
        let mut push = |s: &str| v.push(OsString::from(s));
        // Always passed: their defaults differ between ncu versions (2025.3.1 locks clocks to base
        // by default, the 2026.1 docs say boost).
        push("--cache-control");
        push(self.cache_control.as_str());
        push("--clock-control");
        push(self.clock_control.as_str());
        push("--replay-mode");
        push(self.replay_mode.as_str());
        push("--target-processes");
        push(self.target_processes.as_str());
        push("--nvtx");
        for f in &self.nvtx_include {
            push("--nvtx-include");
            push(f);
        }
        if !self.metrics.is_empty() {
            push("--metrics");
            push(&self.metrics.join(","));
        }
        if let Some(set) = &self.set {
            push("--set");
            push(set);
        }
        for s in &self.sections {
            push("--section");
            push(s);
        }
        if let Some(n) = self.launch_skip {
            push("--launch-skip");
            push(&n.to_string());
        }
        if let Some(n) = self.launch_count {
            push("--launch-count");
            push(&n.to_string());
        }
        v.extend(self.extra_args.iter().cloned());
        if self.force_overwrite {
            v.push("-f".into());
        }
        if let Some(rep) = &self.report_path {
            v.push("-o".into());
            v.push(rep.clone().into_os_string());
        }
        v.push("--".into());
        v.push(program.as_ref().to_os_string());
        v.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        v
    }

    /// The NVTX filters for messages, `a, b` or `(none)`.
    pub fn filters_label(&self) -> String {
        if self.nvtx_include.is_empty() {
            "(none)".into()
        } else {
            self.nvtx_include.join(", ")
        }
    }
}
