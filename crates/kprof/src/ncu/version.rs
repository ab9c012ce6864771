//! Finding `ncu`, reading its version, and choosing attach or relaunch mode.
//!
//! Search order ([`find_ncu_in`]): `$KPROF_NCU` (an explicit path), every directory of `$PATH`,
//! `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, then
//! `/opt/nvidia/nsight-compute/<version>/ncu` (newest version first).

use std::cmp::Ordering;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::NcuError;

/// An ncu version, `year.minor.patch.build` as in `Version 2025.3.1.0 (build 36398880)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NcuVersion {
    /// Year (2025).
    pub major: u32,
    /// Release in the year (3).
    pub minor: u32,
    /// Patch (1).
    pub patch: u32,
    /// Fourth component (0).
    pub build: u32,
}

impl NcuVersion {
    /// A version from its four components.
    pub const fn new(major: u32, minor: u32, patch: u32, build: u32) -> Self {
        NcuVersion {
            major,
            minor,
            patch,
            build,
        }
    }

    /// Parses the first `Version a.b.c[.d]` in `ncu --version`'s output (a missing fourth
    /// component is 0). Also accepts a bare `a.b.c[.d]` (e.g. an install directory name).
    pub fn parse(text: &str) -> Option<NcuVersion> {
        for line in text.lines() {
            let mut words = line.split_whitespace();
            while let Some(w) = words.next() {
                if w.eq_ignore_ascii_case("version") {
                    if let Some(v) = words.clone().next().and_then(Self::parse_dotted) {
                        return Some(v);
                    }
                }
            }
        }
        Self::parse_dotted(text.trim())
    }

    fn parse_dotted(s: &str) -> Option<NcuVersion> {
        let s = s.trim_end_matches(|c: char| !c.is_ascii_digit());
        let parts: Vec<&str> = s.split('.').collect();
        if !(3..=4).contains(&parts.len()) {
            return None;
        }
        let mut n = [0u32; 4];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            n[i] = p.parse().ok()?;
        }
        Some(NcuVersion::new(n[0], n[1], n[2], n[3]))
    }
}

impl fmt::Display for NcuVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}.{}", self.major, self.minor, self.patch, self.build)
    }
}

/// The oldest ncu kprof drives: 2023.1 (CUDA 12.1). Everything kprof passes (`--nvtx-include`
/// regexes, `--cache-control`, `--clock-control`, `--print-units base`, the raw CSV page) is
/// documented there; only 2025.3.1 has been tested.
pub const MIN_VERSION: NcuVersion = NcuVersion::new(2023, 1, 0, 0);

/// From this version on ncu can attach to a running process whose profiling ranges are opened
/// through `libcuda-injection.so` (nsight-python 1.1's attach mode).
pub const ATTACH_MIN_VERSION: NcuVersion = NcuVersion::new(2026, 2, 1, 0);

/// How the program is profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcuMode {
    /// ncu attaches to the running process (ncu >= 2026.2.1).
    Attach,
    /// The program is re-run under ncu with `KPROF_NCU_CHILD` set (any supported ncu).
    Relaunch,
}

impl NcuMode {
    /// The mode for an ncu version: attach from [`ATTACH_MIN_VERSION`] on, relaunch below.
    pub fn for_version(v: NcuVersion) -> NcuMode {
        if v >= ATTACH_MIN_VERSION {
            NcuMode::Attach
        } else {
            NcuMode::Relaunch
        }
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

/// A usable ncu: where it is, its version, and the mode kprof will use with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcuInstall {
    /// The executable.
    pub path: PathBuf,
    /// Its version.
    pub version: NcuVersion,
    /// Attach (>= 2026.2.1) or relaunch.
    pub mode: NcuMode,
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
        Ok(NcuInstall {
            path,
            version,
            mode: NcuMode::for_version(version),
        })
    }

    /// `ncu 2025.3.1.0 at /usr/local/cuda/bin/ncu, relaunch mode`, for reports.
    pub fn describe(&self) -> String {
        format!("ncu {} at {}, {} mode", self.version, self.path.display(), self.mode)
    }
}
