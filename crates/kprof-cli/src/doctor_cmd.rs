//! `kprof doctor`: what kprof can use on this machine, and how to fix what it cannot.
//!
//! First the settings from the environment: the `KPROF_*` variables set, with their values and
//! meanings (`kprof::settings`, docs/configuration.md), and any other `KPROF_*` name (not one of
//! kprof's settings: a misspelling?). Then the checks, in order: the CUDA driver (libcuda, GPUs),
//! libcupti (every place kprof's loader searches), libnvperf_host beside it, NVML, Nsight Compute,
//! GPU performance-counter permission, other profilers injecting themselves, and kprof run's
//! injection library. Each problem is printed with its fix. Exits 1 when a check failed (a
//! `[FAIL]` line, such as a machine without a GPU or driver), 0 when everything kprof needs is
//! there (warnings allowed).

use crate::output;
use kprof::loader::{self, Candidate, LibKind, SearchEnv};
use kprof::settings::EnvVar;

/// Arguments of `kprof doctor`.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Also list every location the library search looked at.
    #[arg(long)]
    pub verbose: bool,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    pub item: String,
    pub detail: String,
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Fail,
    Info,
}

impl Level {
    fn tag(self) -> &'static str {
        match self {
            Level::Ok => "[ ok ]",
            Level::Warn => "[warn]",
            Level::Fail => "[FAIL]",
            Level::Info => "[info]",
        }
    }
}

fn f(level: Level, item: &str, detail: impl Into<String>, fix: Option<String>) -> Finding {
    Finding {
        level,
        item: item.into(),
        detail: detail.into(),
        fix,
    }
}

/// The search plan of a library as lines (candidates, then places that held nothing).
fn plan_lines(kind: LibKind, env: &SearchEnv) -> Vec<String> {
    let plan = loader::search(kind, env);
    let mut out: Vec<String> = plan
        .candidates
        .iter()
        .map(|(c, s)| match c {
            Candidate::Path(p) => format!("candidate {} ({s:?})", p.display()),
            Candidate::BareName(n) => format!("candidate {n} (loader default search)"),
        })
        .collect();
    out.extend(plan.tried.iter().map(|p| format!("looked at {}", p.display())));
    out
}

/// The failed check of a library that did not load: `what`, the error's detail, and the hint of
/// its kind as the fix.
fn missing_library(kind: LibKind, item: &str, what: &str, e: &dyn std::fmt::Display) -> Finding {
    let detail = error_detail(&e.to_string());
    f(Level::Fail, item, format!("{what}: {detail}"), Some(kind.hint()))
}

/// An engine error on one line: its lines joined with "; ", without its own "fix:" line (the
/// finding carries the fix).
fn error_detail(e: &str) -> String {
    e.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("fix:"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Parses `RmProfilingAdminOnly: N` from /proc/driver/nvidia/params.
pub fn profiling_admin_only(params: &str) -> Option<bool> {
    params.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "RmProfilingAdminOnly").then(|| v.trim() == "1")
    })
}

/// The item of the settings findings.
pub const SETTINGS_ITEM: &str = "settings from the environment";

/// The settings findings: one line per registered variable set (`active`: name, value, meaning),
/// then one per other `KPROF_*` name set (`unknown`: name and value), or one line "none set".
pub fn settings_findings(active: &[(&EnvVar, String)], unknown: &[(String, String)]) -> Vec<Finding> {
    let value = |v: &str| {
        if v.is_empty() {
            " (set, empty)".to_string()
        } else {
            format!("={v}")
        }
    };
    let mut out: Vec<Finding> = active
        .iter()
        .map(|(var, v)| {
            f(
                Level::Info,
                SETTINGS_ITEM,
                format!("{}{}: {}", var.name, value(v), var.meaning),
                None,
            )
        })
        .collect();
    out.extend(unknown.iter().map(|(name, v)| {
        f(
            Level::Info,
            SETTINGS_ITEM,
            format!(
                "{name}{}: not one of kprof's settings (a misspelling? docs/configuration.md lists them)",
                value(v)
            ),
            None,
        )
    }));
    if out.is_empty() {
        out.push(f(Level::Info, SETTINGS_ITEM, "none set", None));
    }
    out
}

/// The `KPROF_*` variables of this process's environment that are not kprof's settings, sorted.
fn unknown_settings() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.to_string_lossy().into_owned();
            (k.starts_with("KPROF_") && kprof::settings::lookup(&k).is_none())
                .then(|| (k, v.to_string_lossy().into_owned()))
        })
        .collect();
    out.sort();
    out
}

/// Runs every check.
pub fn diagnose(env: &SearchEnv, verbose: bool) -> Vec<Finding> {
    let mut out = Vec::new();

    // 0. The settings from the environment.
    out.extend(settings_findings(&kprof::settings::active(), &unknown_settings()));

    // 1. CUDA driver and GPUs.
    let mut have_driver = false;
    match kprof::Driver::load(env) {
        Ok(d) => {
            have_driver = true;
            let v = d.version;
            out.push(f(
                Level::Ok,
                "CUDA driver",
                format!("{} (supports CUDA {}.{})", d.path.display(), v / 1000, (v % 1000) / 10),
                None,
            ));
            match d.device_count() {
                Ok(0) | Err(_) => out.push(f(
                    Level::Fail,
                    "GPU",
                    "the driver sees no GPU",
                    Some("check nvidia-smi and CUDA_VISIBLE_DEVICES".into()),
                )),
                Ok(n) => {
                    for i in 0..n {
                        match d.device_info(i) {
                            Ok(p) => out.push(f(
                                Level::Ok,
                                "GPU",
                                format!(
                                    "#{i} {} (cc {}.{}, L2 {} MiB, SM clock {} MHz, uuid {})",
                                    p.name,
                                    p.cc.0,
                                    p.cc.1,
                                    p.l2_bytes >> 20,
                                    p.clock_khz / 1000,
                                    p.uuid
                                ),
                                None,
                            )),
                            Err(e) => out.push(f(Level::Warn, "GPU", format!("#{i}: {e}"), None)),
                        }
                    }
                }
            }
        }
        Err(e) => {
            out.push(missing_library(
                LibKind::Cuda,
                "CUDA driver",
                "libcuda is missing or unusable",
                &e,
            ));
            if verbose {
                for l in plan_lines(LibKind::Cuda, env) {
                    out.push(f(Level::Info, "libcuda search", l, None));
                }
            }
        }
    }

    // 2. CUPTI (every place searched) and nvperf.
    let cupti_lines = plan_lines(LibKind::Cupti, env);
    match kprof::cupti::Cupti::load(env) {
        Ok(c) => {
            let v = c.api_version;
            out.push(f(
                Level::Ok,
                "CUPTI",
                format!(
                    "{} (API {v}, CUDA {}.{})",
                    c.path.display(),
                    v / 10000,
                    (v % 10000) / 100
                ),
                None,
            ));
            match &c.nvperf_host {
                Some(p) => out.push(f(Level::Ok, "nvperf host", p.display().to_string(), None)),
                None => out.push(f(Level::Warn, "nvperf host", format!("no libnvperf_host.so beside {}", c.path.display()), Some("in-process hardware counters need it: use a CUPTI folder that has it (toolkit targets/*/lib or the nvidia-cuda-cupti wheel)".into()))),
            }
            if v < 130300 {
                out.push(f(Level::Info, "CUPTI subscribers", format!("CUPTI API {v} allows one subscriber per process (multi-subscriber needs CUDA 13.3+ and driver r610+)"), None));
            }
            if c.path.to_string_lossy().contains("site-packages") {
                out.push(f(Level::Info, "CUPTI copy", "a pip copy: its NVTX-to-CUPTI path has been seen to deliver no markers; kprof run receives NVTX itself through NVTX_INJECTION64_PATH, so this does not matter there", None));
            }
        }
        Err(e) => {
            out.push(missing_library(LibKind::Cupti, "CUPTI", "libcupti not loadable", &e));
        }
    }
    if verbose || !out.iter().any(|x| x.item == "CUPTI" && x.level == Level::Ok) {
        for l in cupti_lines {
            out.push(f(Level::Info, "libcupti search", l, None));
        }
    }

    // 3. NVML.
    match loader::load_library(LibKind::Nvml, env) {
        Ok(l) => out.push(f(Level::Ok, "NVML", l.path.display().to_string(), None)),
        Err(_) => out.push(f(
            Level::Warn,
            "NVML",
            "libnvidia-ml not found: no clocks, temperature or power in the results",
            Some(LibKind::Nvml.hint()),
        )),
    }

    // 4. Nsight Compute.
    match kprof::ncu::NcuInstall::detect() {
        Ok(n) => out.push(ncu_line(&n, std::env::var(kprof::ncu::MODE_ENV).ok().as_deref())),
        Err(e) => out.push(f(Level::Warn, "Nsight Compute", format!("{e}").lines().next().unwrap_or("").to_string(), Some("install Nsight Compute (it ships with the CUDA toolkit) or put ncu on PATH; only the ncu backend and counter cross-checks need it".into()))),
    }

    // 5. Counter permission.
    match std::fs::read_to_string("/proc/driver/nvidia/params")
        .ok()
        .as_deref()
        .and_then(profiling_admin_only)
    {
        Some(true) => {
            let root = kprof::sys::os::effective_uid() == 0;
            out.push(f(if root { Level::Ok } else { Level::Warn }, "counter permission", format!("RmProfilingAdminOnly=1 (performance counters need admin){}", if root { "; running as root" } else { "" }), (!root).then(|| "run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 (kernel timing via CUPTI activity is not affected)".to_string())));
        }
        Some(false) => out.push(f(
            Level::Ok,
            "counter permission",
            "RmProfilingAdminOnly=0: any user may read performance counters",
            None,
        )),
        None => out.push(f(
            Level::Info,
            "counter permission",
            if have_driver {
                "unknown (/proc/driver/nvidia/params has no RmProfilingAdminOnly)"
            } else {
                "unknown (no NVIDIA driver)"
            },
            None,
        )),
    }

    // 6. Other CUPTI users / injectors.
    let injectors: Vec<String> = ["CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"]
        .iter()
        .filter_map(|v| {
            std::env::var(v)
                .ok()
                .filter(|x| !x.is_empty())
                .map(|x| format!("{v}={x}"))
        })
        .collect();
    if injectors.is_empty() {
        out.push(f(Level::Info, "other CUPTI users", "none injected through the environment; another CUPTI client inside a program (torch.profiler/Kineto, Proton, a second kprof) cannot be seen before subscribing: kprof then reports 'subscriber taken'", Some("to check a program: run it under `kprof run --verbose` and look for 'cannot start CUPTI activity collection'".into())));
    } else {
        out.push(f(
            Level::Warn,
            "other CUPTI users",
            format!("a profiler injects itself: {}", injectors.join(", ")),
            Some("kprof run refuses to run under ncu/nsys; run kprof outside them".into()),
        ));
    }

    // 7. kprof run's injection library.
    let exe = std::env::current_exe().ok();
    match crate::run_cmd::find_inject_lib(std::env::var_os(crate::run_cmd::ENV_INJECT_PATH).map(Into::into), exe) {
        Ok(p) => out.push(f(
            Level::Ok,
            "kprof run",
            format!("injection library {}", p.display()),
            None,
        )),
        Err(e) => out.push(f(Level::Warn, "kprof run", e.to_string(), None)),
    }
    out
}

/// Renders findings, one per line, fixes indented below.
pub fn render(findings: &[Finding]) -> String {
    let mut s = String::new();
    for x in findings {
        // One finding per line: a detail that spans lines is joined.
        let mut detail = String::new();
        for part in x
            .detail
            .lines()
            .map(|l| l.trim().trim_start_matches("- "))
            .filter(|l| !l.is_empty())
        {
            if !detail.is_empty() {
                detail.push_str(if detail.ends_with(':') { " " } else { "; " });
            }
            detail.push_str(part);
        }
        s.push_str(&format!("{} {}: {}\n", x.level.tag(), x.item, detail));
        if let Some(fix) = &x.fix {
            if x.level != Level::Ok {
                s.push_str(&format!("       fix: {fix}\n"));
            }
        }
    }
    let fails = findings.iter().filter(|x| x.level == Level::Fail).count();
    let warns = findings.iter().filter(|x| x.level == Level::Warn).count();
    s.push_str(&format!("{fails} problem(s), {warns} warning(s)\n"));
    s
}

/// The exit code of `kprof doctor` for these findings: 1 when one of them failed, else 0.
pub fn exit_code(findings: &[Finding]) -> i32 {
    i32::from(findings.iter().any(|x| x.level == Level::Fail))
}

/// Runs `kprof doctor`; returns 1 when a check failed, 0 otherwise.
pub fn run(args: &DoctorArgs) -> i32 {
    let env = SearchEnv::from_process();
    let findings = diagnose(&env, args.verbose);
    match output::print(&render(&findings)) {
        Ok(()) => exit_code(&findings),
        Err(e) => output::fail(&e, 1),
    }
}

/// The Nsight Compute line: the ncu found and the mode the ncu backend would use with it
/// (`KPROF_NCU_MODE` = `env_mode` when set, else auto), with the reason; a warning when the
/// variable is invalid or asks for a mode that cannot be used.
fn ncu_line(install: &kprof::ncu::NcuInstall, env_mode: Option<&str>) -> Finding {
    use kprof::ncu::{NcuModeRequest, MODE_ENV};
    let requested = match NcuModeRequest::Auto.or_env_value(env_mode) {
        Ok(r) => r,
        Err(e) => {
            return f(
                Level::Warn,
                "Nsight Compute",
                install.describe(NcuModeRequest::Auto),
                Some(format!("{e}; unset {MODE_ENV} or fix it")),
            )
        }
    };
    match install.choose_mode(requested) {
        Ok(_) => f(Level::Ok, "Nsight Compute", install.describe(requested), None),
        Err(e) => f(
            Level::Warn,
            "Nsight Compute",
            install.describe(NcuModeRequest::Auto),
            Some(format!("{MODE_ENV}={requested}: {e}")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_exits_1_and_each_finding_is_one_line() {
        let ok = f(Level::Ok, "a", "fine", None);
        let warn = f(Level::Warn, "b", "meh", Some("do x".into()));
        let fail = f(
            Level::Fail,
            "c",
            "tried 2 location(s):\n- one -- no\n- two -- no",
            Some("fix it".into()),
        );
        assert_eq!(exit_code(&[ok.clone(), warn.clone()]), 0);
        assert_eq!(exit_code(&[ok, warn, fail.clone()]), 1);
        let text = render(&[fail]);
        assert_eq!(
            text.lines().next().unwrap(),
            "[FAIL] c: tried 2 location(s): one -- no; two -- no"
        );
    }

    #[test]
    fn ncu_line_reports_the_mode_and_why() {
        let old = kprof::ncu::NcuInstall::from_version_output("/x/ncu".into(), "Version 2025.3.1.0 (build 1)").unwrap();
        let l = ncu_line(&old, None);
        assert_eq!(l.level, Level::Ok);
        assert_eq!(
            l.detail,
            "ncu 2025.3.1.0 at /x/ncu, relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)"
        );
        let l = ncu_line(&old, Some("attach"));
        assert_eq!(l.level, Level::Warn);
        let fix = l.fix.unwrap();
        assert!(
            fix.starts_with("KPROF_NCU_MODE=attach: ncu attach mode needs Nsight Compute >= 2026.2.1.0"),
            "{fix}"
        );
        let l = ncu_line(&old, Some("fast"));
        assert_eq!(l.level, Level::Warn);
        assert!(l.fix.unwrap().contains("KPROF_NCU_MODE is \"fast\""));
        let new = kprof::ncu::NcuInstall::from_version_output("/y/ncu".into(), "Version 2026.2.1.0 (build 1)").unwrap();
        let l = ncu_line(&new, Some("relaunch"));
        assert_eq!(l.level, Level::Ok);
        assert!(l.detail.contains("relaunch mode (relaunch requested"), "{}", l.detail);
        assert!(ncu_line(&new, None)
            .detail
            .contains("could attach, but kprof does not implement attach mode yet"));
    }

    #[test]
    fn settings_findings_list_value_and_meaning_or_none_set() {
        let flush = kprof::settings::lookup("KPROF_L2_FLUSH").unwrap();
        let store = kprof::settings::lookup("KPROF_STORE").unwrap();
        let got = settings_findings(&[(flush, "write".into()), (store, String::new())], &[]);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|x| x.level == Level::Info && x.item == SETTINGS_ITEM));
        assert_eq!(got[0].detail, format!("KPROF_L2_FLUSH=write: {}", flush.meaning));
        assert_eq!(got[1].detail, format!("KPROF_STORE (set, empty): {}", store.meaning));
        let none = settings_findings(&[], &[]);
        assert_eq!(
            render(&none).lines().next(),
            Some("[info] settings from the environment: none set")
        );
    }

    #[test]
    fn admin_only_param() {
        assert_eq!(profiling_admin_only("Foo: 1\nRmProfilingAdminOnly: 1\n"), Some(true));
        assert_eq!(profiling_admin_only("RmProfilingAdminOnly: 0"), Some(false));
        assert_eq!(profiling_admin_only("x"), None);
    }
}
