//! Finding ncu, parsing its version, choosing the mode (by version: older, equal, newer, unknown;
//! by request: auto, relaunch, attach); the missing / too-old / attach errors.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common;
use kprof::ncu::{
    find_ncu_in, ModeChoice, NcuError, NcuInstall, NcuMode, NcuModeRequest, NcuSearch, NcuVersion, ATTACH_MIN_VERSION,
    MIN_VERSION, MODE_ENV,
};

fn fake_ncu(path: &Path, version_line: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\necho 'Copyright (c) 2018-2025 NVIDIA Corporation'\necho '{version_line}'\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn version_parsing() {
    let out = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n";
    assert_eq!(NcuVersion::parse(out), Some(NcuVersion::new(2025, 3, 1, 0)));
    assert_eq!(
        NcuVersion::parse("Version 2026.2.1.0 (build 1)"),
        Some(NcuVersion::new(2026, 2, 1, 0))
    );
    assert_eq!(
        NcuVersion::parse("Version 2023.1.1"),
        Some(NcuVersion::new(2023, 1, 1, 0))
    );
    assert_eq!(NcuVersion::parse("2025.3.1"), Some(NcuVersion::new(2025, 3, 1, 0)));
    assert_eq!(NcuVersion::parse("Version unknown"), None);
    assert_eq!(NcuVersion::parse("Version 2025.x.1.0"), None);
    assert_eq!(NcuVersion::new(2025, 3, 1, 0).to_string(), "2025.3.1.0");
}

const OLD: NcuVersion = NcuVersion::new(2025, 3, 1, 0);
const JUST_BELOW: NcuVersion = NcuVersion::new(2026, 2, 0, 9);
const NEWER: NcuVersion = NcuVersion::new(2027, 1, 0, 0);

fn choose(req: NcuModeRequest, v: Option<NcuVersion>) -> Result<ModeChoice, NcuError> {
    ModeChoice::choose(req, v, Path::new("/x/ncu"))
}

#[test]
fn attach_support_by_version() {
    assert!(!NcuMode::attach_supported(OLD));
    assert!(!NcuMode::attach_supported(JUST_BELOW));
    assert!(NcuMode::attach_supported(ATTACH_MIN_VERSION));
    assert!(NcuMode::attach_supported(NEWER));
    assert_eq!(ATTACH_MIN_VERSION.to_string(), "2026.2.1.0");
}

/// The versions too old for attach mode (or unknown), each with how kprof names what it found.
const TOO_OLD: [(Option<NcuVersion>, &str); 3] = [
    (Some(OLD), "found 2025.3.1.0"),
    (Some(JUST_BELOW), "found 2026.2.0.9"),
    (None, "found an ncu of unknown version"),
];

#[test]
fn auto_relaunches_and_says_why() {
    let too_old = TOO_OLD.map(|(v, found)| (v, format!("attach needs ncu >= 2026.2.1.0; {found}")));
    let new_enough = [
        (
            Some(ATTACH_MIN_VERSION),
            "ncu 2026.2.1.0 could attach, but kprof does not implement attach mode yet",
        ),
        (
            Some(NEWER),
            "ncu 2027.1.0.0 could attach, but kprof does not implement attach mode yet",
        ),
    ]
    .map(|(v, reason)| (v, reason.to_string()));
    for (v, reason) in too_old.into_iter().chain(new_enough) {
        let c = choose(NcuModeRequest::Auto, v).unwrap();
        assert_eq!(
            c,
            ModeChoice {
                mode: NcuMode::Relaunch,
                requested: NcuModeRequest::Auto,
                reason
            }
        );
    }
    let c = choose(NcuModeRequest::Auto, Some(OLD)).unwrap();
    assert_eq!(
        c.summary(OLD),
        "ncu 2025.3.1.0 in relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)"
    );
}

#[test]
fn explicit_relaunch_works_with_every_version() {
    for v in [Some(OLD), Some(ATTACH_MIN_VERSION), Some(NEWER), None] {
        let c = choose(NcuModeRequest::Relaunch, v).unwrap();
        assert_eq!((c.mode, c.requested), (NcuMode::Relaunch, NcuModeRequest::Relaunch));
        assert_eq!(c.reason, "relaunch requested (KPROF_NCU_MODE or the mode option)");
    }
}

#[test]
fn explicit_attach_is_one_clear_error() {
    // Older or unknown ncu: names the version found, the minimum and the fallback.
    for (v, found) in TOO_OLD {
        let e = choose(NcuModeRequest::Attach, v).unwrap_err();
        assert!(matches!(e, NcuError::AttachUnavailable { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with("ncu attach mode needs Nsight Compute >= 2026.2.1.0 (CUDA 13.3 Update 1); "),
            "{msg}"
        );
        assert!(msg.contains(&format!("{found} at /x/ncu")), "{msg}");
        assert!(
            msg.contains("\"relaunch\"") && msg.contains("runs this ncu in relaunch mode"),
            "{msg}"
        );
        assert!(msg.contains("does not implement attach mode yet"), "{msg}");
    }
    // New enough ncu: not implemented, with the fallback.
    for v in [ATTACH_MIN_VERSION, NEWER] {
        let e = choose(NcuModeRequest::Attach, Some(v)).unwrap_err();
        assert!(matches!(e, NcuError::AttachNotImplemented { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with("ncu attach mode is not implemented in this version of kprof"),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("ncu {v} at /x/ncu")) && msg.contains("\"relaunch\""),
            "{msg}"
        );
    }
}

#[test]
fn mode_requests_parse_and_defer_to_the_environment() {
    assert_eq!(NcuModeRequest::default(), NcuModeRequest::Auto);
    for (text, want) in [
        ("auto", NcuModeRequest::Auto),
        ("relaunch", NcuModeRequest::Relaunch),
        (" Attach ", NcuModeRequest::Attach),
    ] {
        assert_eq!(NcuModeRequest::parse(text, "x").unwrap(), want);
        assert_eq!(NcuModeRequest::parse(want.as_str(), "x").unwrap(), want);
    }
    let e = NcuModeRequest::parse("inject", "ncu_options['mode']").unwrap_err();
    assert_eq!(
        e.to_string(),
        "ncu_options['mode'] is \"inject\"; the ncu mode must be \"auto\", \"relaunch\" or \"attach\""
    );
    // The environment fills in only an `auto` request; an empty variable is unset.
    let auto = NcuModeRequest::Auto;
    assert_eq!(auto.or_env_value(None).unwrap(), NcuModeRequest::Auto);
    assert_eq!(auto.or_env_value(Some("")).unwrap(), NcuModeRequest::Auto);
    assert_eq!(auto.or_env_value(Some("relaunch")).unwrap(), NcuModeRequest::Relaunch);
    assert_eq!(
        NcuModeRequest::Relaunch.or_env_value(Some("attach")).unwrap(),
        NcuModeRequest::Relaunch
    );
    let e = auto.or_env_value(Some("x")).unwrap_err();
    assert!(e.to_string().starts_with(&format!("{MODE_ENV} is \"x\"")), "{e}");
}

#[test]
fn installs_describe_their_mode() {
    let i = NcuInstall::from_version_output("/x/ncu".into(), "Version 2025.3.1.0 (build 36398880)").unwrap();
    assert_eq!(
        i.describe(NcuModeRequest::Auto),
        "ncu 2025.3.1.0 at /x/ncu, relaunch mode (attach needs ncu >= 2026.2.1.0; found 2025.3.1.0)"
    );
    assert!(
        i.describe(NcuModeRequest::Attach)
            .starts_with("ncu 2025.3.1.0 at /x/ncu, mode attach: ncu attach mode needs Nsight Compute >= 2026.2.1.0"),
        "{}",
        i.describe(NcuModeRequest::Attach)
    );
    let i = NcuInstall::from_version_output("/x/ncu".into(), "Version 2026.2.1.0 (build 1)").unwrap();
    assert_eq!(i.choose_mode(NcuModeRequest::Auto).unwrap().mode, NcuMode::Relaunch);
}

#[test]
fn too_old_and_unparsable_versions() {
    let e = NcuInstall::from_version_output("/old/ncu".into(), "Version 2022.4.1.0 (build 1)").unwrap_err();
    assert!(matches!(e, NcuError::TooOld { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("/old/ncu") && msg.contains("2022.4.1.0") && msg.contains(&MIN_VERSION.to_string()),
        "{msg}"
    );
    assert!(msg.contains("KPROF_NCU") && msg.contains("cupti"), "{msg}");
    let e = NcuInstall::from_version_output("/x/ncu".into(), "garbage").unwrap_err();
    assert!(
        e.to_string().contains("printed no version") && e.to_string().contains("garbage"),
        "{e}"
    );
}

#[test]
fn missing_ncu_says_where_it_looked() {
    let root = tempfile::tempdir().unwrap();
    let s = NcuSearch {
        kprof_ncu: None,
        path: Some("/nonexistent/bin:/also/not".into()),
        cuda_home: Some("/opt/cuda-x".into()),
        cuda_path: None,
        root: root.path().to_path_buf(),
    };
    let e = find_ncu_in(&s).unwrap_err();
    let msg = e.to_string();
    for want in [
        "/nonexistent/bin/ncu",
        "/also/not/ncu",
        "/opt/cuda-x/bin/ncu",
        "usr/local/cuda/bin/ncu",
        "opt/nvidia/nsight-compute/<version>/ncu",
        "Install Nsight Compute",
        "KPROF_NCU",
        "CUPTI backend",
    ] {
        assert!(msg.contains(want), "missing {want:?} in: {msg}");
    }
}

#[test]
fn search_order_and_newest_opt_install() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for v in ["2024.1.0", "2025.3.1", "2025.10.0", "extras"] {
        fake_ncu(
            &r.join(format!("opt/nvidia/nsight-compute/{v}/ncu")),
            &format!("Version {v}.0 (build 1)"),
        );
    }
    let s = NcuSearch {
        root: r.to_path_buf(),
        ..NcuSearch::default()
    };
    let c = s.candidates();
    let opt: Vec<String> = c
        .iter()
        .filter_map(|p| p.strip_prefix(r.join("opt/nvidia/nsight-compute")).ok())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(opt, vec!["2025.10.0/ncu", "2025.3.1/ncu", "2024.1.0/ncu", "extras/ncu"]);
    assert_eq!(
        find_ncu_in(&s).unwrap(),
        r.join("opt/nvidia/nsight-compute/2025.10.0/ncu")
    );

    // /usr/local/cuda/bin comes before /opt; CUDA_HOME before that; PATH before that; KPROF_NCU first.
    fake_ncu(&r.join("usr/local/cuda/bin/ncu"), "Version 2025.3.1.0 (build 36398880)");
    assert_eq!(find_ncu_in(&s).unwrap(), r.join("usr/local/cuda/bin/ncu"));
    fake_ncu(&r.join("home/cuda/bin/ncu"), "Version 2025.3.1.0 (build 36398880)");
    let s = NcuSearch {
        cuda_home: Some(r.join("home/cuda").into()),
        ..s
    };
    assert_eq!(find_ncu_in(&s).unwrap(), r.join("home/cuda/bin/ncu"));
    fake_ncu(&r.join("path/bin/ncu"), "Version 2025.3.1.0 (build 36398880)");
    // A non-executable file on PATH is skipped.
    std::fs::create_dir_all(r.join("noexec")).unwrap();
    std::fs::write(r.join("noexec/ncu"), "").unwrap();
    let path = std::env::join_paths([r.join("noexec"), r.join("path/bin")]).unwrap();
    let s = NcuSearch { path: Some(path), ..s };
    assert_eq!(find_ncu_in(&s).unwrap(), r.join("path/bin/ncu"));
    fake_ncu(&r.join("explicit/ncu"), "Version 2026.2.1.0 (build 1)");
    let s = NcuSearch {
        kprof_ncu: Some(r.join("explicit/ncu").into()),
        ..s
    };
    let found: PathBuf = find_ncu_in(&s).unwrap();
    assert_eq!(found, r.join("explicit/ncu"));

    // detect runs --version on what it found (retrying ETXTBSY: another test thread may have
    // forked while a fake was being written).
    let i = common::retry_text_busy(|| NcuInstall::detect_in(&s));
    assert_eq!(i.version, NcuVersion::new(2026, 2, 1, 0));
}
