//! Shared helpers: find the CUPTI 13.0 PyPI wheel (headers + libcupti), extract it once.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kprof::ncu::{NcuError, NcuInstall};

pub const WHEEL_SPEC: &str = "nvidia-cuda-cupti==13.0.85";

/// Where the wheel is extracted: `$KPROF_CUPTI_WHEEL_DIR`, else a fixed dir under the system temp.
fn extract_root() -> PathBuf {
    std::env::temp_dir().join("kprof-cupti-wheel-13.0.85")
}

/// The wheel in `dir` whose file name starts with `stem` (`name-version`).
fn find_wheel(dir: &Path, stem: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(stem) && n.ends_with(".whl"))
        })
}

const CUPTI_WHEEL_STEM: &str = "nvidia_cuda_cupti-13.0.85";

/// Returns the extracted `nvidia/cu13` directory (with `include/` and `lib/`), or why not.
/// Looks in `$KPROF_CUPTI_WHEEL_DIR`, `/tmp/cupti-wheel`, then tries `pip download`.
pub fn cupti_wheel() -> Result<PathBuf, String> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let root = extract_root();
    let cu13 = root.join("nvidia/cu13");
    if cu13.join("include/cupti_activity.h").is_file() && cu13.join("lib/libcupti.so.13").is_file() {
        return Ok(cu13);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("KPROF_CUPTI_WHEEL_DIR") {
        dirs.push(d.into());
    }
    dirs.push("/tmp/cupti-wheel".into());
    let mut wheel = dirs.iter().find_map(|d| find_wheel(d, CUPTI_WHEEL_STEM));
    if wheel.is_none() {
        let dl = std::env::temp_dir().join("kprof-cupti-wheel-download");
        let _ = std::fs::create_dir_all(&dl);
        let ok = ["pip", "pip3"].iter().any(|pip| {
            Command::new(pip)
                .args(["download", "--no-deps", "--quiet", WHEEL_SPEC, "-d"])
                .arg(&dl)
                .status()
                .is_ok_and(|s| s.success())
        });
        if ok {
            wheel = find_wheel(&dl, CUPTI_WHEEL_STEM);
        }
    }
    let wheel = wheel.ok_or_else(|| {
        format!(
            "the {WHEEL_SPEC} wheel is not in $KPROF_CUPTI_WHEEL_DIR or /tmp/cupti-wheel and \
             `pip download` failed (offline?)"
        )
    })?;
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let status = unzip(&wheel, &root)?;
    if !status.success() || !cu13.join("include/cupti_activity.h").is_file() {
        return Err(format!("could not extract {}", wheel.display()));
    }
    Ok(cu13)
}

/// Unpacks the wheel `wheel` into `root` (with Python's zipfile: no unzip tool needed).
fn unzip(wheel: &Path, root: &Path) -> Result<std::process::ExitStatus, String> {
    Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
        ])
        .arg(wheel)
        .arg(root)
        .status()
        .map_err(|e| format!("python3 to unzip the wheel: {e}"))
}

/// The directory `found` (from [`cupti_wheel`] or [`nvtx_include`]), or `None` after printing why
/// `test` is skipped.
pub fn or_skip(test: &str, found: Result<PathBuf, String>) -> Option<PathBuf> {
    found.map_err(|why| skip(test, &why)).ok()
}

/// [`or_skip`], and `None` as well (after printing that `test` is skipped) when gcc does not run.
pub fn or_skip_with_gcc(test: &str, found: Result<PathBuf, String>) -> Option<PathBuf> {
    let dir = or_skip(test, found)?;
    if Command::new("gcc").arg("--version").output().is_err() {
        skip(test, "gcc is not installed");
        return None;
    }
    Some(dir)
}

/// Runs `compile` (a C or C++ compiler call that writes the program `exe`), fails the test with
/// the compiler's messages when it fails, then runs `exe`: its standard output.
pub fn build_and_run(compile: &mut Command, exe: &Path) -> String {
    let out = compile.output().unwrap();
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(Command::new(exe).output().unwrap().stdout).unwrap()
}

/// Builds with gcc, in a new temporary folder, the C program `files[0]` (a name and its text),
/// with the other `files` beside it as headers, `include` searched for headers too and `libs`
/// linked, and runs it: its `key value` lines, the values parsed.
pub fn gcc_probe<V: std::str::FromStr>(files: &[(&str, &str)], include: &Path, libs: &[&str]) -> HashMap<String, V> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let exe = dir.path().join("probe");
    let text = build_and_run(
        Command::new("gcc")
            .arg(format!("-I{}", dir.path().display()))
            .arg(format!("-I{}", include.display()))
            .arg(dir.path().join(files[0].0))
            .arg("-o")
            .arg(&exe)
            .args(libs),
        &exe,
    );
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// [`gcc_probe`] of `files` with the headers in `found` (see [`or_skip_with_gcc`]): `None` after
/// printing why `test` is skipped when `found` is an error or gcc does not run.
pub fn probe_or_skip<V: std::str::FromStr>(
    test: &str,
    found: Result<PathBuf, String>,
    files: &[(&str, &str)],
    libs: &[&str],
) -> Option<HashMap<String, V>> {
    let include = or_skip_with_gcc(test, found)?;
    Some(gcc_probe(files, &include, libs))
}

/// Fails the test, listing every difference, unless the headers' values `got` (a probe's) hold
/// kprof's value of each name in `want`.
pub fn assert_header_values<K: AsRef<str>, V: PartialEq + std::fmt::Debug + std::fmt::Display>(
    got: &HashMap<String, V>,
    want: &[(K, V)],
) {
    let bad: Vec<String> = want
        .iter()
        .filter(|(k, v)| got.get(k.as_ref()) != Some(v))
        .map(|(k, v)| format!("{}: header {:?}, kprof {v}", k.as_ref(), got.get(k.as_ref())))
        .collect();
    assert!(bad.is_empty(), "kprof differs from the headers:\n{}", bad.join("\n"));
}

/// Prints a skip reason in a way that shows with `--nocapture` and in the test summary output.
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
    println!("SKIPPED {test}: {why}");
}

/// The NVTX v3 headers' wheel (the CUPTI wheel has none): `nvidia-nvtx`, the CUDA 13.0 release.
pub const NVTX_WHEEL_SPEC: &str = "nvidia-nvtx==13.0.85";

/// The CUDA runtime's wheel, for its `cuda.h` (the driver API's header): the CUDA 13.0 release.
pub const CUDA_RUNTIME_WHEEL_SPEC: &str = "nvidia-cuda-runtime==13.0.96";

/// Returns the `include` directory holding `nvtx3/nvToolsExt.h` from the `nvidia-nvtx` wheel, or
/// why not ([`wheel_include`], `$KPROF_NVTX_INCLUDE`).
pub fn nvtx_include() -> Result<PathBuf, String> {
    wheel_include("KPROF_NVTX_INCLUDE", NVTX_WHEEL_SPEC, "nvtx3/nvToolsExt.h")
}

/// Returns the `include` directory holding `cuda.h` from the `nvidia-cuda-runtime` wheel, or why
/// not ([`wheel_include`], `$KPROF_CUDA_INCLUDE`).
pub fn cuda_include() -> Result<PathBuf, String> {
    wheel_include("KPROF_CUDA_INCLUDE", CUDA_RUNTIME_WHEEL_SPEC, "cuda.h")
}

/// The `nvidia/cu13/include` folder of the wheel `spec` (`name==version`), which must hold
/// `marker`, or why not: `$env` (set by scripts/test.sh after scripts/setup-dev.sh unpacked the
/// wheel), else an extraction under the system temp directory, else `pip download`.
fn wheel_include(env: &str, spec: &str, marker: &str) -> Result<PathBuf, String> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let has = |d: &Path| d.join(marker).is_file();
    if let Some(d) = std::env::var_os(env).map(PathBuf::from) {
        if has(&d) {
            return Ok(d);
        }
    }
    // `nvidia-nvtx==13.0.85` is the file `nvidia_nvtx-13.0.85-...whl`.
    let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
    let stem = format!("{}-{version}", name.replace('-', "_"));
    let root = std::env::temp_dir().join(format!("kprof-{stem}-wheel"));
    let inc = root.join("nvidia/cu13/include");
    if has(&inc) {
        return Ok(inc);
    }
    let dl = std::env::temp_dir().join(format!("kprof-{stem}-download"));
    let _ = std::fs::create_dir_all(&dl);
    let find = || find_wheel(&dl, &stem);
    if find().is_none() {
        for py in ["python3", "python"] {
            let ok = Command::new(py)
                .args(["-m", "pip", "download", "--no-deps", "--quiet", spec, "-d"])
                .arg(&dl)
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                break;
            }
        }
    }
    let wheel = find()
        .ok_or_else(|| format!("the {spec} wheel is not unpacked at ${env} and `pip download` failed (offline?)"))?;
    let status = unzip(&wheel, &root)?;
    if !status.success() || !has(&inc) {
        return Err(format!("could not extract {}", wheel.display()));
    }
    Ok(inc)
}

/// Writes the shared fake `ncu` (`tests/fixtures/fake-ncu/ncu.sh`, see its top) into `dir` as an
/// executable `ncu`: its path.
#[cfg(unix)]
pub fn write_fake_ncu(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fake-ncu/ncu.sh");
    let ncu = dir.join("ncu");
    std::fs::write(&ncu, std::fs::read(script).unwrap()).unwrap();
    std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).unwrap();
    ncu
}

/// The install `find` gives (a lookup that runs `ncu --version`). Another test thread may fork
/// while a fake ncu's write fd is open; exec then fails with ETXTBSY until that child has
/// exec'ed: retried briefly.
pub fn retry_text_busy(mut find: impl FnMut() -> Result<NcuInstall, NcuError>) -> NcuInstall {
    let mut tries = 0;
    loop {
        match find() {
            Ok(i) => return i,
            Err(NcuError::VersionRun { source, .. }) if source.raw_os_error() == Some(26) && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    }
}
