//! Command line: the modes and the parsed arguments.

use std::path::PathBuf;

use crate::USAGE;

/// How a label's counters are collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// In-process, CUPTI kernel replay.
    Kernel,
    /// In-process, CUPTI application replay (per kernel, the closure re-run per pass).
    Application,
    /// In-process, CUPTI user-range replay.
    Range,
    /// Under Nsight Compute.
    Ncu,
}

impl Mode {
    fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "kernel" => Ok(Mode::Kernel),
            "application" => Ok(Mode::Application),
            "range" => Ok(Mode::Range),
            "ncu" => Ok(Mode::Ncu),
            other => Err(format!(
                "unknown mode {other:?} (kernel, application, range or ncu)\n{USAGE}"
            )),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Kernel => "kernel",
            Mode::Application => "application",
            Mode::Range => "range",
            Mode::Ncu => "ncu",
        }
    }
}

pub(crate) struct Args {
    pub(crate) out_dir: PathBuf,
    pub(crate) modes: Vec<Mode>,
    /// `KPROF_L2_FLUSH` values for the CUPTI modes, passed through unchecked (the engine checks).
    pub(crate) flush_methods: Vec<String>,
}

impl Args {
    /// The parsed arguments, or `None` for `--help`.
    pub(crate) fn parse(args: &[String]) -> Result<Option<Args>, String> {
        let mut out_dir = None;
        let mut modes = vec![Mode::Kernel, Mode::Application, Mode::Range, Mode::Ncu];
        let mut flush_methods = vec!["read".to_string()];
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
            };
            match flag {
                "-h" | "--help" => return Ok(None),
                "--modes" => {
                    modes = list_value(flag, &value()?)?
                        .iter()
                        .map(|m| Mode::parse(m))
                        .collect::<Result<_, _>>()?
                }
                "--flush" => flush_methods = list_value(flag, &value()?)?,
                f if f.starts_with('-') => return Err(format!("unknown option {f}\n{USAGE}")),
                _ if out_dir.is_none() => out_dir = Some(PathBuf::from(arg)),
                _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
            }
        }
        let out_dir = out_dir.ok_or_else(|| format!("OUT_DIR is missing\n{USAGE}"))?;
        Ok(Some(Args {
            out_dir,
            modes,
            flush_methods,
        }))
    }
}

/// A comma-separated option value: its items, without repeats, in order; none is an error.
fn list_value(flag: &str, value: &str) -> Result<Vec<String>, String> {
    let mut items: Vec<String> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        if !items.iter().any(|i| i == item) {
            items.push(item.to_string());
        }
    }
    if items.is_empty() {
        return Err(format!("{flag} needs at least one value\n{USAGE}"));
    }
    Ok(items)
}
