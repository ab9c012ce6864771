//! Finding and loading libcuda, libcupti (with `libnvperf_host.so` beside it) and libnvidia-ml at
//! run time, by absolute path, once per process: the one place kprof searches for a library. The
//! search itself ([`search`], which gives the order) is a pure function over a [`SearchEnv`]
//! (environment variables, the text of `/proc/self/maps`, extra site-packages directories and a
//! filesystem root prefix), so that it can be tested against fake directory trees;
//! [`load_library`] tries a [`SearchPlan`]'s candidates in order and reports every path tried.
//! The variables, as users set them: `docs/configuration.md`.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, OsStr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Env var: a libcupti file or the directory that holds it.
pub const ENV_CUPTI_PATH: &str = "KPROF_CUPTI_PATH";
/// Env var: `:`-separated Python site-packages directories (set by kprof's Python package).
pub const ENV_PYTHON_SITE_PACKAGES: &str = "KPROF_PYTHON_SITE_PACKAGES";
/// Env var: a libcuda file or the directory that holds it.
pub const ENV_LIBCUDA_PATH: &str = "KPROF_LIBCUDA_PATH";
/// Env var: a libnvidia-ml file or the directory that holds it.
pub const ENV_NVML_PATH: &str = "KPROF_NVML_PATH";

const CUPTI_NAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];
const CUDA_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];
const NVML_NAMES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// Which library to search for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LibKind {
    Cuda,
    Cupti,
    Nvml,
}

impl LibKind {
    /// Short name used in messages ("libcupti").
    pub fn name(self) -> &'static str {
        match self {
            LibKind::Cuda => "libcuda",
            LibKind::Cupti => "libcupti",
            LibKind::Nvml => "libnvidia-ml",
        }
    }
    fn bare_names(self) -> &'static [&'static str] {
        match self {
            LibKind::Cuda => &CUDA_NAMES,
            LibKind::Cupti => &CUPTI_NAMES,
            LibKind::Nvml => &NVML_NAMES,
        }
    }
    fn env_var(self) -> &'static str {
        match self {
            LibKind::Cuda => ENV_LIBCUDA_PATH,
            LibKind::Cupti => ENV_CUPTI_PATH,
            LibKind::Nvml => ENV_NVML_PATH,
        }
    }
    fn file_prefix(self) -> &'static str {
        match self {
            LibKind::Cuda => "libcuda.so",
            LibKind::Cupti => "libcupti.so",
            LibKind::Nvml => "libnvidia-ml.so",
        }
    }
    /// What to tell the user when nothing is found.
    pub fn hint(self) -> String {
        match self {
            LibKind::Cuda => format!(
                "install the NVIDIA driver (libcuda.so.1 ships with it, not with the toolkit) and \
                 make sure it is on the loader path, or set {ENV_LIBCUDA_PATH} to the file; \
                 this machine may have no NVIDIA GPU"
            ),
            LibKind::Cupti => format!(
                "set {ENV_CUPTI_PATH} to libcupti.so.13 (or the directory holding it), set \
                 CUDA_HOME to a CUDA toolkit, or `pip install nvidia-cuda-cupti` (CUDA 13) / \
                 `nvidia-cuda-cupti-cu12` (CUDA 12) into the active Python environment"
            ),
            LibKind::Nvml => format!("libnvidia-ml.so.1 ships with the NVIDIA driver; set {ENV_NVML_PATH} to override"),
        }
    }
}

/// Everything the search looks at, so that it can be faked in tests.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SearchEnv {
    /// Environment variables (only the ones named in this module are read).
    pub vars: HashMap<String, String>,
    /// The text of `/proc/self/maps`, if readable.
    pub proc_maps: Option<String>,
    /// Extra Python site-packages directories (e.g. `site.getsitepackages()` from the Python side).
    pub site_packages: Vec<PathBuf>,
    /// Prefix for the fixed system locations (`/usr/local/cuda`); `/` in real use.
    pub root: PathBuf,
}

impl SearchEnv {
    /// The real process environment: env vars, `/proc/self/maps`, root `/`.
    pub fn from_process() -> Self {
        let mut vars = HashMap::new();
        for key in [
            ENV_CUPTI_PATH,
            ENV_PYTHON_SITE_PACKAGES,
            ENV_LIBCUDA_PATH,
            ENV_NVML_PATH,
            "CUDA_HOME",
            "CUDA_PATH",
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
        ] {
            if let Some(v) = std::env::var_os(key) {
                vars.insert(key.to_string(), v.to_string_lossy().into_owned());
            }
        }
        SearchEnv {
            vars,
            proc_maps: std::fs::read_to_string("/proc/self/maps").ok(),
            site_packages: Vec::new(),
            root: PathBuf::from("/"),
        }
    }

    fn var(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(|s| s.as_str()).filter(|s| !s.is_empty())
    }

    fn rooted(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }
}

/// One thing to try to `dlopen`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// An absolute path that exists.
    Path(PathBuf),
    /// A bare soname for the dynamic loader's default search.
    BareName(String),
}

/// Where a candidate came from (for messages and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    EnvVar,
    ProcessMaps,
    CudaHome,
    CudaPath,
    UsrLocalCuda,
    SitePackages,
    LoaderDefault,
    /// A path the caller gave (`open_cupti_global`, the counter module's own load).
    Caller,
}

/// The ordered result of a search: candidates to try, and every location looked at that held
/// nothing (with the reason after " -- ").
#[derive(Debug, Clone, Default)]
pub struct SearchPlan {
    pub candidates: Vec<(Candidate, Source)>,
    pub tried: Vec<PathBuf>,
}

/// The library files to look for in one directory, best first: the known sonames, then any
/// other `prefix*` file in name order.
fn lib_files_in_dir(dir: &Path, kind: LibKind) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in kind.bare_names() {
        let p = dir.join(name);
        if p.is_file() {
            out.push(p);
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut extra: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(OsStr::to_str)
                        .is_some_and(|n| n.starts_with(kind.file_prefix()))
                    && !out.contains(p)
            })
            .collect();
        extra.sort();
        out.extend(extra);
    }
    out
}

fn push_dir(plan: &mut SearchPlan, dir: &Path, kind: LibKind, source: Source) {
    let files = lib_files_in_dir(dir, kind);
    if files.is_empty() {
        let why = if dir.is_dir() {
            format!("no {}* there", kind.file_prefix())
        } else {
            "no such directory".to_string()
        };
        plan.tried.push(PathBuf::from(format!("{} -- {why}", dir.display())));
    }
    for f in files {
        plan.candidates.push((Candidate::Path(f), source));
    }
}

/// Parses `/proc/self/maps` text for mapped files whose name starts with `prefix`
/// (e.g. "libcupti.so"), in order of first appearance, without duplicates.
pub fn mapped_libraries(maps: &str, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode [path]; the path may contain spaces.
        let mut rest = line;
        let mut ok = true;
        for _ in 0..5 {
            rest = rest.trim_start();
            match rest.find(char::is_whitespace) {
                Some(i) => rest = &rest[i..],
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        let path = rest.trim();
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        if !path.starts_with('/') {
            continue;
        }
        let p = PathBuf::from(path);
        let is_lib = p
            .file_name()
            .and_then(OsStr::to_str)
            .is_some_and(|n| n.starts_with(prefix));
        if is_lib && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The `lib/python3*/site-packages` folders of a Python environment (a venv or conda prefix),
/// sorted.
fn environment_site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Builds the ordered candidate list for `kind` (pure apart from reading the directories named).
///
/// libcupti, first hit wins:
/// 1. `KPROF_CUPTI_PATH`: a libcupti file, or a directory holding `libcupti.so*`. When set it is
///    the only place searched (an explicit choice must not silently fall back).
/// 2. A libcupti already mapped into this process (`/proc/self/maps`): PyTorch maps its pip copy
///    as soon as it initialises CUDA, and two CUPTIs in one process is a bug.
/// 3. `$CUDA_HOME`, `$CUDA_PATH`, then `<root>/usr/local/cuda`: `targets/*/lib`,
///    `extras/CUPTI/lib64`.
/// 4. Python site-packages (`KPROF_PYTHON_SITE_PACKAGES`, `:`-separated, then
///    [`SearchEnv::site_packages`], then the active environment's `lib/python3*/site-packages`
///    under `$VIRTUAL_ENV` and `$CONDA_PREFIX`, so the `kprof` command finds the wheel the Python
///    package finds): `nvidia/cu13/lib`, `nvidia/cuda_cupti/lib`.
/// 5. The dynamic loader's default search with bare names: `libcupti.so.13`, `.so.12`, `.so`.
///
/// libcuda: `KPROF_LIBCUDA_PATH` (file or directory, exclusive when set), else bare
/// `libcuda.so.1`, `libcuda.so`. libnvidia-ml: `KPROF_NVML_PATH` (exclusive when set), else bare
/// `libnvidia-ml.so.1`, `libnvidia-ml.so`.
pub fn search(kind: LibKind, env: &SearchEnv) -> SearchPlan {
    let mut plan = SearchPlan::default();

    // 1. explicit env var: exclusive.
    if let Some(v) = env.var(kind.env_var()) {
        let p = PathBuf::from(v);
        if p.is_file() {
            plan.candidates.push((Candidate::Path(p), Source::EnvVar));
        } else if p.is_dir() {
            push_dir(&mut plan, &p, kind, Source::EnvVar);
        } else {
            plan.tried.push(PathBuf::from(format!(
                "{} (from {}) -- no such file or directory",
                p.display(),
                kind.env_var()
            )));
        }
        return plan;
    }

    if kind == LibKind::Cupti {
        // 2. already mapped into this process.
        if let Some(maps) = &env.proc_maps {
            for p in mapped_libraries(maps, kind.file_prefix()) {
                plan.candidates.push((Candidate::Path(p), Source::ProcessMaps));
            }
            if !plan.candidates.is_empty() {
                // Never load a second copy next to one already mapped.
                return plan;
            }
            plan.tried
                .push(PathBuf::from("/proc/self/maps -- no libcupti mapped in this process"));
        }

        // 3. toolkit locations.
        let mut homes: Vec<(PathBuf, Source)> = Vec::new();
        if let Some(h) = env.var("CUDA_HOME") {
            homes.push((PathBuf::from(h), Source::CudaHome));
        }
        if let Some(h) = env.var("CUDA_PATH") {
            homes.push((PathBuf::from(h), Source::CudaPath));
        }
        homes.push((env.rooted("/usr/local/cuda"), Source::UsrLocalCuda));
        let mut seen: Vec<PathBuf> = Vec::new();
        for (home, source) in homes {
            if seen.contains(&home) {
                continue;
            }
            seen.push(home.clone());
            let targets = home.join("targets");
            let mut target_libs: Vec<PathBuf> = std::fs::read_dir(&targets)
                .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path().join("lib")).collect())
                .unwrap_or_default();
            target_libs.sort();
            if target_libs.is_empty() {
                plan.tried.push(PathBuf::from(format!(
                    "{}/*/lib -- no targets directory",
                    targets.display()
                )));
            }
            for dir in target_libs {
                push_dir(&mut plan, &dir, kind, source);
            }
            push_dir(&mut plan, &home.join("extras/CUPTI/lib64"), kind, source);
        }

        // 4. Python site-packages.
        let mut sites: Vec<PathBuf> = Vec::new();
        if let Some(v) = env.var(ENV_PYTHON_SITE_PACKAGES) {
            sites.extend(v.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
        }
        sites.extend(env.site_packages.iter().cloned());
        for prefix in ["VIRTUAL_ENV", "CONDA_PREFIX"].iter().filter_map(|v| env.var(v)) {
            sites.extend(environment_site_packages(Path::new(prefix)));
        }
        let mut seen_sites: Vec<PathBuf> = Vec::new();
        for site in sites {
            if seen_sites.contains(&site) {
                continue;
            }
            seen_sites.push(site.clone());
            push_dir(&mut plan, &site.join("nvidia/cu13/lib"), kind, Source::SitePackages);
            push_dir(
                &mut plan,
                &site.join("nvidia/cuda_cupti/lib"),
                kind,
                Source::SitePackages,
            );
        }
    }

    // 5. loader default.
    for name in kind.bare_names() {
        plan.candidates
            .push((Candidate::BareName(name.to_string()), Source::LoaderDefault));
    }
    plan
}

/// A library could not be found or opened, or lacks a function kprof needs. The engine's
/// [`EngineError::Load`](crate::EngineError::Load) carries it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A shared library could not be found or opened at any of the places searched.
    #[error(
        "{library} could not be loaded; tried {} location(s):\n{}\nfix: {hint}",
        tried.len(),
        format_tried(tried)
    )]
    LibraryNotFound {
        /// Short library name, e.g. "libcupti".
        library: String,
        /// Every path or bare name tried, in order, with the reason it failed after " -- ".
        tried: Vec<PathBuf>,
        /// What the user can do (install the driver, set KPROF_CUPTI_PATH, ...).
        hint: String,
    },

    /// The library loaded but lacks a function the engine needs (usually: too old).
    #[error(
        "symbol {symbol} is missing from {library} ({path}); this library is probably too old \
         for kprof: {hint}"
    )]
    SymbolMissing {
        library: String,
        symbol: String,
        path: PathBuf,
        hint: String,
    },
}

fn format_tried(tried: &[PathBuf]) -> String {
    if tried.is_empty() {
        return "  (nothing)".to_string();
    }
    tried
        .iter()
        .map(|p| format!("  - {}", p.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A library opened by [`load_library`]; the handle is leaked so that it lives for the process.
#[derive(Debug, Clone, Copy)]
pub struct LoadedLib {
    pub kind: LibKind,
    /// The handle (symbols are resolved only inside this FFI layer).
    pub(crate) lib: &'static libloading::Library,
    /// The absolute path of the file actually mapped (resolved with dladdr for bare names).
    pub path: &'static Path,
    pub source: Source,
}

impl LoadedLib {
    /// Resolves a required symbol to a function pointer of type `T`.
    ///
    /// # Safety
    /// `T` must be the exact `unsafe extern "C" fn` type of the symbol.
    pub(crate) unsafe fn sym<T: Copy>(&self, name: &str) -> Result<T, LoadError> {
        // SAFETY: the caller's promise about `T` is the one `opt_sym` needs.
        unsafe { self.opt_sym(name) }.ok_or_else(|| LoadError::SymbolMissing {
            library: self.kind.name().to_string(),
            symbol: name.to_string(),
            path: self.path.to_path_buf(),
            hint: self.kind.hint(),
        })
    }

    /// Resolves an optional symbol.
    ///
    /// # Safety
    /// As [`LoadedLib::sym`].
    pub(crate) unsafe fn opt_sym<T: Copy>(&self, name: &str) -> Option<T> {
        // SAFETY: the caller's promise about `T` is the one `sym_or_reason` needs.
        unsafe { self.sym_or_reason(name) }.ok()
    }

    /// Resolves a symbol, or says why not (the loader's message).
    ///
    /// # Safety
    /// As [`LoadedLib::sym`].
    pub(crate) unsafe fn sym_or_reason<T: Copy>(&self, name: &str) -> Result<T, String> {
        let mut bytes = name.as_bytes().to_vec();
        bytes.push(0);
        // SAFETY: the caller vouches that `T` is the symbol's type; the handle lives for the
        // process (leaked), so the pointer never dangles.
        unsafe { self.lib.get::<T>(&bytes) }
            .map(|s| *s)
            .map_err(|e| e.to_string())
    }
}

/// Tries the plan's candidates in order; the first that opens wins. On failure the error lists
/// every location looked at and every open error.
pub fn open_plan(kind: LibKind, plan: &SearchPlan) -> Result<LoadedLib, LoadError> {
    let mut tried = plan.tried.clone();
    for (cand, source) in &plan.candidates {
        let (label, res) = match cand {
            // SAFETY: opening a library runs its initialisers; these are NVIDIA's libraries (or the
            // file the user named), which kprof is meant to load.
            Candidate::Path(p) => (p.display().to_string(), unsafe { libloading::Library::new(p) }),
            Candidate::BareName(n) => (
                format!("{n} (loader default search)"),
                // SAFETY: as above.
                unsafe { libloading::Library::new(n) },
            ),
        };
        match res {
            Ok(lib) => {
                let lib: &'static libloading::Library = Box::leak(Box::new(lib));
                let path = match cand {
                    Candidate::Path(p) => p.clone(),
                    Candidate::BareName(n) => resolve_path(lib, kind).unwrap_or_else(|| n.into()),
                };
                return Ok(LoadedLib {
                    kind,
                    lib,
                    path: Box::leak(path.into_boxed_path()),
                    source: *source,
                });
            }
            Err(e) => tried.push(PathBuf::from(format!("{label} -- {e}"))),
        }
    }
    Err(LoadError::LibraryNotFound {
        library: kind.name().to_string(),
        tried,
        hint: kind.hint(),
    })
}

/// Finds the file a library handle was loaded from, through dladdr on a known symbol.
fn resolve_path(lib: &libloading::Library, kind: LibKind) -> Option<PathBuf> {
    let sym: &[u8] = match kind {
        LibKind::Cuda => b"cuInit\0",
        LibKind::Cupti => b"cuptiGetVersion\0",
        LibKind::Nvml => b"nvmlInit_v2\0",
    };
    // SAFETY: the symbol is only used as an address (never called or read); `Dl_info` is plain
    // data that dladdr fills, and `dli_fname` is a NUL-terminated string of the loader's that
    // lives as long as the (leaked) library.
    unsafe {
        let s = lib.get::<*mut c_void>(sym).ok()?;
        let addr: *mut c_void = *s;
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
        let p = PathBuf::from(name);
        Some(std::fs::canonicalize(&p).unwrap_or(p))
    }
}

static LOADED: Mutex<Vec<LoadedLib>> = Mutex::new(Vec::new());

/// Loads `kind` once per process: the first successful load is cached and returned to every later
/// caller (whatever `env` they pass). Failures are not cached, so a fixed environment can retry.
pub fn load_library(kind: LibKind, env: &SearchEnv) -> Result<LoadedLib, LoadError> {
    let mut loaded = crate::lock(&LOADED);
    if let Some(l) = loaded.iter().find(|l| l.kind == kind) {
        return Ok(*l);
    }
    let plan = search(kind, env);
    let lib = open_plan(kind, &plan)?;
    loaded.push(lib);
    Ok(lib)
}

/// `libnvperf_host.so` beside the chosen libcupti, if present (used later by the Range Profiler).
pub fn nvperf_host_beside(cupti: &Path) -> Option<PathBuf> {
    let p = cupti.parent()?.join("libnvperf_host.so");
    p.is_file().then_some(p)
}

/// Opens the libcupti at `path` (absolute) for the counter APIs: first `libnvperf_host.so` from
/// the same folder, when there, then libcupti, both `RTLD_NOW | RTLD_GLOBAL`. libcupti `dlopen`s
/// `libnvperf_host.so` by bare name, so unless that folder is on the loader path
/// `cuptiProfilerHostInitialize` fails with `CUPTI_ERROR_NOT_INITIALIZED`; with the copy already
/// loaded, glibc matches the bare name against its SONAME. Neither library is ever closed.
///
/// Returns the library and the `libnvperf_host.so` loaded, or the file that failed and why.
pub(crate) fn open_cupti_global(path: &Path) -> Result<(LoadedLib, Option<PathBuf>), (PathBuf, String)> {
    fn dlopen_global(path: &Path) -> Result<libloading::Library, libloading::Error> {
        // SAFETY: opening a library runs its initialisers; these are NVIDIA's libcupti and
        // libnvperf_host, which kprof is meant to load.
        unsafe {
            libloading::os::unix::Library::open(
                Some(path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
            .map(Into::into)
        }
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    let nvperf = dir.join("libnvperf_host.so");
    let nvperf_host = if nvperf.exists() {
        let l = dlopen_global(&nvperf).map_err(|e| (nvperf.clone(), e.to_string()))?;
        std::mem::forget(l);
        Some(nvperf)
    } else {
        None
    };
    let lib = dlopen_global(path).map_err(|e| (path.to_path_buf(), e.to_string()))?;
    let lib = LoadedLib {
        kind: LibKind::Cupti,
        lib: Box::leak(Box::new(lib)),
        path: Box::leak(path.to_path_buf().into_boxed_path()),
        source: Source::Caller,
    };
    Ok((lib, nvperf_host))
}

// ---- The counter module's own lookup (offline `kprof metrics`, tests) ----

/// Where the library-locating functions look, for error messages.
const LIB_NAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so", "libcupti.so.12"];

fn lib_in_dir(dir: &Path) -> Option<PathBuf> {
    LIB_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// The libcupti in a folder, or in the pip layouts below it (`nvidia/cu13/lib`, `nvidia/cuda_cupti/lib`).
pub fn cupti_in(dir: &Path) -> Option<PathBuf> {
    [
        dir.to_path_buf(),
        dir.join("nvidia/cu13/lib"),
        dir.join("nvidia/cuda_cupti/lib"),
        dir.join("lib"),
    ]
    .iter()
    .find_map(|d| lib_in_dir(d))
}

/// Finds a libcupti for the counter module (`crate::counters::locate_cupti`), without the
/// engine's search ([`search`]):
/// 1. `KPROF_CUPTI_PATH` (a file, or a folder holding `libcupti.so*`);
/// 2. `KPROF_CUPTI_WHEEL_DIR` (an unpacked `nvidia-cuda-cupti` wheel; CI uses
///    `target/cupti-wheel/unpacked` made by `scripts/setup-dev.sh`);
/// 3. `$CUDA_HOME/{extras/CUPTI/lib64,targets/x86_64-linux/lib}` and the same under `/usr/local/cuda`.
///
/// Offline use only (`kprof metrics` without a GPU, tests); the run loop uses the engine's
/// libcupti. The error says where it looked and what to set.
pub(crate) fn locate_cupti() -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    if let Some(v) = std::env::var_os("KPROF_CUPTI_PATH").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        if p.is_file() {
            return Ok(p);
        }
        if let Some(found) = p.is_dir().then(|| cupti_in(&p)).flatten() {
            return Ok(found);
        }
        return Err(format!(
            "KPROF_CUPTI_PATH={} is neither libcupti nor a folder holding it",
            p.display()
        ));
    }
    if let Some(v) = std::env::var_os("KPROF_CUPTI_WHEEL_DIR").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        if let Some(found) = cupti_in(&p) {
            return Ok(found);
        }
        tried.push(format!("KPROF_CUPTI_WHEEL_DIR={}", p.display()));
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(h) = std::env::var_os("CUDA_HOME").filter(|v| !v.is_empty()) {
        roots.push(PathBuf::from(h));
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    for root in roots {
        for sub in ["extras/CUPTI/lib64", "targets/x86_64-linux/lib", "lib64"] {
            let d = root.join(sub);
            if let Some(found) = lib_in_dir(&d) {
                return Ok(found);
            }
            tried.push(d.display().to_string());
        }
    }
    Err(format!(
        "set KPROF_CUPTI_PATH to libcupti.so.13 (or its folder), or KPROF_CUPTI_WHEEL_DIR to an unpacked \
         nvidia-cuda-cupti wheel (`python3 -m pip download --no-deps nvidia-cuda-cupti==13.0.85`); tried: {}",
        tried.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b"not really a library").unwrap();
    }

    fn env_in(root: &Path) -> SearchEnv {
        SearchEnv {
            vars: HashMap::new(),
            proc_maps: Some(String::new()),
            site_packages: Vec::new(),
            root: root.to_path_buf(),
        }
    }

    fn paths(plan: &SearchPlan) -> Vec<(PathBuf, Source)> {
        plan.candidates
            .iter()
            .filter_map(|(c, s)| match c {
                Candidate::Path(p) => Some((p.clone(), *s)),
                Candidate::BareName(_) => None,
            })
            .collect()
    }

    fn bare(plan: &SearchPlan) -> Vec<String> {
        plan.candidates
            .iter()
            .filter_map(|(c, _)| match c {
                Candidate::BareName(n) => Some(n.clone()),
                Candidate::Path(_) => None,
            })
            .collect()
    }

    #[test]
    fn env_var_file_is_exclusive() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("custom/libcupti.so.13");
        touch(&f);
        touch(&t.path().join("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"));
        let mut env = env_in(t.path());
        env.vars.insert(ENV_CUPTI_PATH.into(), f.display().to_string());
        env.proc_maps = Some(format!(
            "7f00-7f01 r-xp 00000000 08:01 42 {}/other/libcupti.so.12\n",
            t.path().display()
        ));
        let plan = search(LibKind::Cupti, &env);
        assert_eq!(paths(&plan), vec![(f, Source::EnvVar)]);
        assert!(bare(&plan).is_empty(), "explicit path must not fall back");
    }

    #[test]
    fn env_var_directory_prefers_versioned_names() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("cupti");
        touch(&d.join("libcupti.so"));
        touch(&d.join("libcupti.so.2025.3.1"));
        touch(&d.join("libcupti.so.13"));
        touch(&d.join("libnvperf_host.so"));
        let mut env = env_in(t.path());
        env.vars.insert(ENV_CUPTI_PATH.into(), d.display().to_string());
        let plan = search(LibKind::Cupti, &env);
        let got: Vec<PathBuf> = paths(&plan).into_iter().map(|p| p.0).collect();
        assert_eq!(
            got,
            vec![
                d.join("libcupti.so.13"),
                d.join("libcupti.so"),
                d.join("libcupti.so.2025.3.1")
            ]
        );
        assert_eq!(nvperf_host_beside(&got[0]), Some(d.join("libnvperf_host.so")));
    }

    #[test]
    fn env_var_pointing_nowhere_is_reported() {
        let t = tempfile::tempdir().unwrap();
        let mut env = env_in(t.path());
        let missing = t.path().join("nope");
        env.vars.insert(ENV_CUPTI_PATH.into(), missing.display().to_string());
        let plan = search(LibKind::Cupti, &env);
        assert!(plan.candidates.is_empty());
        let err = open_plan(LibKind::Cupti, &plan).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
        assert!(err.contains(ENV_CUPTI_PATH), "{err}");

        // An empty directory: the directory is listed as tried.
        let empty = t.path().join("empty");
        fs::create_dir_all(&empty).unwrap();
        env.vars.insert(ENV_CUPTI_PATH.into(), empty.display().to_string());
        let plan = search(LibKind::Cupti, &env);
        let err = open_plan(LibKind::Cupti, &plan).unwrap_err().to_string();
        assert!(err.contains("empty -- no libcupti.so* there"), "{err}");
    }

    #[test]
    fn mapped_copy_wins_over_toolkit() {
        let t = tempfile::tempdir().unwrap();
        touch(&t.path().join("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"));
        let mapped = t.path().join("site/nvidia/cu13/lib/libcupti.so.13");
        touch(&mapped);
        let mut env = env_in(t.path());
        env.proc_maps = Some(format!(
            "55d0-55d1 r--p 00000000 08:01 1 /usr/bin/python3.12\n\
             7f00-7f01 r--p 00000000 08:01 42 {m}\n\
             7f01-7f02 r-xp 00001000 08:01 42 {m}\n\
             7f03-7f04 rw-p 00000000 00:00 0 \n\
             7ffd-7ffe rw-p 00000000 00:00 0 [stack]\n",
            m = mapped.display()
        ));
        let plan = search(LibKind::Cupti, &env);
        assert_eq!(paths(&plan), vec![(mapped, Source::ProcessMaps)]);
        assert!(bare(&plan).is_empty(), "never load a second copy");
    }

    #[test]
    fn maps_parser_handles_spaces_and_deleted() {
        let maps = "7f00-7f01 r-xp 00000000 08:01 42 /opt/my dir/libcupti.so.12 (deleted)\n\
                    7f00-7f01 r-xp 00000000 08:01 42 /usr/lib/libcuda.so.1\n\
                    garbage\n";
        assert_eq!(
            mapped_libraries(maps, "libcupti.so"),
            vec![PathBuf::from("/opt/my dir/libcupti.so.12")]
        );
        assert_eq!(
            mapped_libraries(maps, "libcuda.so"),
            vec![PathBuf::from("/usr/lib/libcuda.so.1")]
        );
    }

    #[test]
    fn full_order_and_tried_list() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let home = r.join("cuda-home");
        let cpath = r.join("cuda-path");
        touch(&home.join("targets/x86_64-linux/lib/libcupti.so.13"));
        touch(&cpath.join("extras/CUPTI/lib64/libcupti.so.12"));
        touch(&r.join("usr/local/cuda/targets/sbsa-linux/lib/libcupti.so.13"));
        touch(&r.join("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"));
        let site1 = r.join("venv/site-packages");
        let site2 = r.join("other/site-packages");
        touch(&site1.join("nvidia/cu13/lib/libcupti.so.13"));
        touch(&site2.join("nvidia/cuda_cupti/lib/libcupti.so.12"));
        let mut env = env_in(r);
        env.vars.insert("CUDA_HOME".into(), home.display().to_string());
        env.vars.insert("CUDA_PATH".into(), cpath.display().to_string());
        env.vars
            .insert(ENV_PYTHON_SITE_PACKAGES.into(), site1.display().to_string());
        env.site_packages.push(site2.clone());
        let plan = search(LibKind::Cupti, &env);
        assert_eq!(
            paths(&plan),
            vec![
                (home.join("targets/x86_64-linux/lib/libcupti.so.13"), Source::CudaHome),
                (cpath.join("extras/CUPTI/lib64/libcupti.so.12"), Source::CudaPath),
                (
                    r.join("usr/local/cuda/targets/sbsa-linux/lib/libcupti.so.13"),
                    Source::UsrLocalCuda
                ),
                (
                    r.join("usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"),
                    Source::UsrLocalCuda
                ),
                (site1.join("nvidia/cu13/lib/libcupti.so.13"), Source::SitePackages),
                (site2.join("nvidia/cuda_cupti/lib/libcupti.so.12"), Source::SitePackages),
            ]
        );
        assert_eq!(bare(&plan), vec!["libcupti.so.13", "libcupti.so.12", "libcupti.so"]);
        let tried: Vec<String> = plan.tried.iter().map(|p| p.display().to_string()).collect();
        assert!(tried[0].starts_with("/proc/self/maps"), "{tried:?}");
        assert!(
            tried
                .iter()
                .any(|t| t.contains("cuda-home/extras/CUPTI/lib64 -- no such directory")),
            "{tried:?}"
        );
        assert!(
            tried
                .iter()
                .any(|t| t.contains("cuda-path/targets/*/lib -- no targets directory")),
            "{tried:?}"
        );
        assert!(
            tried
                .iter()
                .any(|t| t.contains("venv/site-packages/nvidia/cuda_cupti/lib")),
            "{tried:?}"
        );
    }

    /// The `kprof` command (no Python around it) finds the CUPTI wheel of the
    /// active virtual or conda environment.
    #[test]
    fn the_active_environments_site_packages_are_searched() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let venv = r.join("venv");
        let conda = r.join("conda");
        touch(&venv.join("lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13"));
        touch(&conda.join("lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12"));
        let mut env = env_in(r);
        env.vars.insert("VIRTUAL_ENV".into(), venv.display().to_string());
        env.vars.insert("CONDA_PREFIX".into(), conda.display().to_string());
        let plan = search(LibKind::Cupti, &env);
        assert_eq!(
            paths(&plan),
            vec![
                (
                    venv.join("lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13"),
                    Source::SitePackages
                ),
                (
                    conda.join("lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12"),
                    Source::SitePackages
                ),
            ]
        );
    }

    #[test]
    fn nothing_found_lists_every_path_tried() {
        let t = tempfile::tempdir().unwrap();
        let mut env = env_in(t.path());
        env.vars
            .insert("CUDA_HOME".into(), t.path().join("no-cuda").display().to_string());
        let mut plan = search(LibKind::Cupti, &env);
        // Replace the bare names by ones that cannot exist, so the test is independent of the
        // machine's loader path.
        for (c, _) in plan.candidates.iter_mut() {
            if let Candidate::BareName(n) = c {
                *n = format!("{n}.kprof-test-missing");
            }
        }
        let err = open_plan(LibKind::Cupti, &plan).unwrap_err();
        match &err {
            LoadError::LibraryNotFound { library, tried, .. } => {
                assert_eq!(library, "libcupti");
                let n_dirs = plan.tried.len();
                assert_eq!(tried.len(), n_dirs + 3, "{tried:?}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains("no-cuda/extras/CUPTI/lib64"), "{msg}");
        assert!(
            msg.contains("libcupti.so.13.kprof-test-missing (loader default search)"),
            "{msg}"
        );
        assert!(msg.contains("KPROF_CUPTI_PATH"), "{msg}");
        assert!(msg.contains("pip install nvidia-cuda-cupti"), "{msg}");
    }

    #[test]
    fn a_file_that_is_not_a_library_is_skipped_with_reason() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("libcupti.so.13");
        touch(&f);
        let mut env = env_in(t.path());
        env.vars.insert(ENV_CUPTI_PATH.into(), f.display().to_string());
        let err = open_plan(LibKind::Cupti, &search(LibKind::Cupti, &env))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("{} -- ", f.display())), "{err}");
    }

    #[test]
    fn driver_and_nvml_search() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path());
        assert_eq!(bare(&search(LibKind::Cuda, &env)), vec!["libcuda.so.1", "libcuda.so"]);
        assert_eq!(
            bare(&search(LibKind::Nvml, &env)),
            vec!["libnvidia-ml.so.1", "libnvidia-ml.so"]
        );
        let mut env = env_in(t.path());
        let d = t.path().join("drv");
        touch(&d.join("libcuda.so.1"));
        env.vars.insert(ENV_LIBCUDA_PATH.into(), d.display().to_string());
        let plan = search(LibKind::Cuda, &env);
        assert_eq!(paths(&plan), vec![(d.join("libcuda.so.1"), Source::EnvVar)]);
        assert!(bare(&plan).is_empty());
    }
}
