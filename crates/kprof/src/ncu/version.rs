//! Finding `ncu` ([`find_ncu_in`]: `$KPROF_NCU`, `$PATH`, the CUDA toolkit, then the newest
//! `/opt/nvidia/nsight-compute/<version>/ncu`), reading its version, and choosing attach or relaunch
//! mode: [`ModeChoice::choose`] turns the user's [`NcuModeRequest`] (program option, else
//! [`MODE_ENV`], else `auto`) and the ncu version into the [`NcuMode`] used and the reason, which the
//! progress line, the results' metadata and `kprof doctor` report. `auto` always relaunches; attach
//! mode is not implemented (how it would work, and why not yet: `docs/architecture.md`).
//!
//! The search order and the modes, as users see them: `docs/configuration.md`, `docs/backends.md`.

use std::cmp::Ordering;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::NcuError;

pub use crate::ncu_version::NcuVersion;

/// The oldest ncu kprof drives: 2023.1 (CUDA 12.1). Everything kprof passes (`--nvtx-include`
/// regexes, `--cache-control`, `--clock-control`, `--print-units base`, the raw CSV page) is
/// documented there; only 2025.3.1 has been tested.
pub const MIN_VERSION: NcuVersion = NcuVersion::new(2023, 1, 0, 0);

/// From this version on ncu can attach to a running process whose profiling ranges are opened
/// through ncu's in-process injection library (what nsight-python >= 1.0 does; how, and why kprof
/// does not yet: `docs/architecture.md`, Nsight Compute's attach mode).
pub const ATTACH_MIN_VERSION: NcuVersion = NcuVersion::new(2026, 2, 1, 0);

/// The environment variable that picks the mode when the program does not
/// (`auto`, `relaunch` or `attach`; see [`NcuModeRequest`]).
pub const MODE_ENV: &str = "KPROF_NCU_MODE";

/// How the program is profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcuMode {
    /// ncu attaches to the running process (needs ncu >= 2026.2.1; not implemented, see
    /// `docs/architecture.md`).
    Attach,
    /// The program is re-run under ncu with `KPROF_NCU_CHILD` set (any supported ncu).
    Relaunch,
}

impl NcuMode {
    /// Whether ncu `v` offers attach mode (`--mode attach --process-id` and the injection
    /// library): [`ATTACH_MIN_VERSION`] or newer.
    pub fn attach_supported(v: NcuVersion) -> bool {
        v >= ATTACH_MIN_VERSION
    }

    /// `attach` or `relaunch`.
    pub fn as_str(self) -> &'static str {
        match self {
            NcuMode::Attach => "attach",
            NcuMode::Relaunch => "relaunch",
        }
    }
}

impl fmt::Display for NcuMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mode the user asked for: a program option (`NcuOptions::mode`, Python
/// `ncu_options={"mode": ...}`), else [`MODE_ENV`], else `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NcuModeRequest {
    /// Attach when the ncu found supports it and kprof implements it, relaunch otherwise.
    #[default]
    Auto,
    /// Always relaunch.
    Relaunch,
    /// Attach, or fail with a message naming the ncu found and the fallback.
    Attach,
}

impl NcuModeRequest {
    /// `auto`, `relaunch` or `attach`.
    pub fn as_str(self) -> &'static str {
        match self {
            NcuModeRequest::Auto => "auto",
            NcuModeRequest::Relaunch => "relaunch",
            NcuModeRequest::Attach => "attach",
        }
    }

    /// Parses `auto`, `relaunch` or `attach` (ASCII case-insensitive, surrounding blanks
    /// ignored); `origin` names where the text came from, for the error.
    pub fn parse(text: &str, origin: &str) -> Result<NcuModeRequest, NcuError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(NcuModeRequest::Auto),
            "relaunch" => Ok(NcuModeRequest::Relaunch),
            "attach" => Ok(NcuModeRequest::Attach),
            _ => Err(NcuError::ModeName {
                value: text.to_string(),
                origin: origin.to_string(),
            }),
        }
    }

    /// This request, or the one in `env_value` (the value of [`MODE_ENV`]) when this is
    /// `auto`: an explicit program option wins over the environment. An empty variable counts
    /// as unset.
    pub fn or_env_value(self, env_value: Option<&str>) -> Result<NcuModeRequest, NcuError> {
        match (self, env_value.filter(|v| !v.trim().is_empty())) {
            (NcuModeRequest::Auto, Some(v)) => NcuModeRequest::parse(v, MODE_ENV),
            (r, _) => Ok(r),
        }
    }

    /// [`or_env_value`](Self::or_env_value) with this process's [`MODE_ENV`].
    pub fn or_env(self) -> Result<NcuModeRequest, NcuError> {
        let v = std::env::var(MODE_ENV).ok();
        self.or_env_value(v.as_deref())
    }
}

impl fmt::Display for NcuModeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mode chosen for one ncu run, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeChoice {
    /// The mode used.
    pub mode: NcuMode,
    /// What was asked for.
    pub requested: NcuModeRequest,
    /// Why this mode, in words, e.g. `attach needs ncu >= 2026.2.1.0; found 2025.3.1.0`.
    pub reason: String,
}

impl ModeChoice {
    /// Chooses the mode for `requested` with the ncu at `path` of version `version` (`None`:
    /// unknown). `auto` always gives relaunch today, with the reason; `attach` is an error
    /// ([`NcuError::AttachUnavailable`] on an older or unknown ncu,
    /// [`NcuError::AttachNotImplemented`] on a new enough one).
    pub fn choose(requested: NcuModeRequest, version: Option<NcuVersion>, path: &Path) -> Result<ModeChoice, NcuError> {
        let supported = version.is_some_and(NcuMode::attach_supported);
        let found = match version {
            Some(v) => v.to_string(),
            None => "an ncu of unknown version".to_string(),
        };
        let reason = match requested {
            NcuModeRequest::Relaunch => format!("relaunch requested ({MODE_ENV} or the mode option)"),
            NcuModeRequest::Auto if supported => {
                format!("ncu {found} could attach, but kprof does not implement attach mode yet")
            }
            NcuModeRequest::Auto => format!("attach needs ncu >= {ATTACH_MIN_VERSION}; found {found}"),
            NcuModeRequest::Attach if supported => {
                return Err(NcuError::AttachNotImplemented {
                    path: path.to_path_buf(),
                    found,
                })
            }
            NcuModeRequest::Attach => {
                return Err(NcuError::AttachUnavailable {
                    path: path.to_path_buf(),
                    found,
                    min: ATTACH_MIN_VERSION,
                })
            }
        };
        Ok(ModeChoice {
            mode: NcuMode::Relaunch,
            requested,
            reason,
        })
    }

    /// `ncu 2025.3.1.0 in relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)`:
    /// the line progress output and reports print.
    pub fn summary(&self, version: NcuVersion) -> String {
        format!("ncu {version} in {} mode ({})", self.mode, self.reason)
    }
}

/// Where to look for ncu: the environment and the file system root (tests use a temporary
/// directory as root).
#[derive(Clone, Debug, Default)]
pub struct NcuSearch {
    /// `KPROF_NCU`.
    pub kprof_ncu: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
    /// `CUDA_HOME`.
    pub cuda_home: Option<OsString>,
    /// `CUDA_PATH`.
    pub cuda_path: Option<OsString>,
    /// Prefix of the fixed locations (`/usr/local/cuda/bin`, `/opt/nvidia/nsight-compute`);
    /// `/` for the real system.
    pub root: PathBuf,
}

impl NcuSearch {
    /// The search of this process: its environment and `/`.
    pub fn from_env() -> Self {
        NcuSearch {
            kprof_ncu: std::env::var_os("KPROF_NCU").filter(|v| !v.is_empty()),
            path: std::env::var_os("PATH"),
            cuda_home: std::env::var_os("CUDA_HOME").filter(|v| !v.is_empty()),
            cuda_path: std::env::var_os("CUDA_PATH").filter(|v| !v.is_empty()),
            root: PathBuf::from("/"),
        }
    }

    /// Every candidate path, in search order.
    pub fn candidates(&self) -> Vec<PathBuf> {
        let mut c = Vec::new();
        if let Some(p) = &self.kprof_ncu {
            c.push(PathBuf::from(p));
        }
        if let Some(path) = &self.path {
            for dir in std::env::split_paths(path) {
                if !dir.as_os_str().is_empty() {
                    c.push(dir.join("ncu"));
                }
            }
        }
        for home in [&self.cuda_home, &self.cuda_path].into_iter().flatten() {
            c.push(Path::new(home).join("bin").join("ncu"));
        }
        c.push(self.root.join("usr/local/cuda/bin/ncu"));
        let opt = self.root.join("opt/nvidia/nsight-compute");
        let mut versions: Vec<(Option<NcuVersion>, PathBuf)> = std::fs::read_dir(&opt)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        (NcuVersion::parse_dotted(&name), e.path().join("ncu"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Newest first; directories that are not versions last, by name.
        versions.sort_by(|a, b| match (&a.0, &b.0) {
            (Some(x), Some(y)) => y.cmp(x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.1.cmp(&b.1),
        });
        if versions.is_empty() {
            c.push(opt.join("<version>/ncu"));
        } else {
            c.extend(versions.into_iter().map(|(_, p)| p));
        }
        let mut seen = std::collections::HashSet::new();
        c.retain(|p| seen.insert(p.clone()));
        c
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The first executable ncu of [`NcuSearch::candidates`]; [`NcuError::NotFound`] lists them all.
pub fn find_ncu_in(search: &NcuSearch) -> Result<PathBuf, NcuError> {
    let candidates = search.candidates();
    candidates
        .iter()
        .find(|p| is_executable(p))
        .cloned()
        .ok_or(NcuError::NotFound { searched: candidates })
}

/// [`find_ncu_in`] with this process's environment.
pub fn find_ncu() -> Result<PathBuf, NcuError> {
    find_ncu_in(&NcuSearch::from_env())
}

/// A usable ncu: where it is and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcuInstall {
    /// The executable.
    pub path: PathBuf,
    /// Its version.
    pub version: NcuVersion,
}

impl NcuInstall {
    /// Finds ncu in this process's environment and checks its version.
    pub fn detect() -> Result<NcuInstall, NcuError> {
        Self::detect_in(&NcuSearch::from_env())
    }

    /// Finds ncu with `search`, runs `ncu --version` and checks it against [`MIN_VERSION`].
    pub fn detect_in(search: &NcuSearch) -> Result<NcuInstall, NcuError> {
        let path = find_ncu_in(search)?;
        Self::at(path)
    }

    /// Runs `<path> --version` and checks the version.
    pub fn at(path: PathBuf) -> Result<NcuInstall, NcuError> {
        let out = Command::new(&path)
            .arg("--version")
            .env("LC_ALL", "C")
            .output()
            .map_err(|source| NcuError::VersionRun {
                path: path.clone(),
                source,
            })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Self::from_version_output(path, &text)
    }

    /// Checks the output of `ncu --version` (split out for tests).
    pub fn from_version_output(path: PathBuf, output: &str) -> Result<NcuInstall, NcuError> {
        let version = NcuVersion::parse(output).ok_or_else(|| NcuError::VersionUnparsed {
            path: path.clone(),
            output: output.trim().to_string(),
        })?;
        if version < MIN_VERSION {
            return Err(NcuError::TooOld {
                path,
                found: version,
                min: MIN_VERSION,
            });
        }
        Ok(NcuInstall { path, version })
    }

    /// The mode for `requested` with this ncu ([`ModeChoice::choose`]).
    pub fn choose_mode(&self, requested: NcuModeRequest) -> Result<ModeChoice, NcuError> {
        ModeChoice::choose(requested, Some(self.version), &self.path)
    }

    /// `ncu 2025.3.1.0 at /usr/local/cuda/bin/ncu, relaunch mode (attach needs ncu >=
    /// 2026.2.1.0; found 2025.3.1.0)`, for reports: the mode `requested` would give, or the
    /// error's first line when it cannot be used.
    pub fn describe(&self, requested: NcuModeRequest) -> String {
        match self.choose_mode(requested) {
            Ok(c) => format!(
                "ncu {} at {}, {} mode ({})",
                self.version,
                self.path.display(),
                c.mode,
                c.reason
            ),
            Err(e) => format!(
                "ncu {} at {}, mode {requested}: {}",
                self.version,
                self.path.display(),
                e.to_string().lines().next().unwrap_or_default()
            ),
        }
    }
}
