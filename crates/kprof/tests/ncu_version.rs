//! Finding ncu, parsing its version, choosing the mode; the missing / too-old errors.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kprof::ncu::{find_ncu_in, NcuError, NcuInstall, NcuMode, NcuSearch, NcuVersion, ATTACH_MIN_VERSION, MIN_VERSION};

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

#[test]
fn mode_choice() {
    assert_eq!(NcuMode::for_version(NcuVersion::new(2025, 3, 1, 0)), NcuMode::Relaunch);
    assert_eq!(NcuMode::for_version(NcuVersion::new(2026, 2, 0, 9)), NcuMode::Relaunch);
    assert_eq!(NcuMode::for_version(ATTACH_MIN_VERSION), NcuMode::Attach);
    assert_eq!(NcuMode::for_version(NcuVersion::new(2027, 1, 0, 0)), NcuMode::Attach);
    let i = NcuInstall::from_version_output("/x/ncu".into(), "Version 2025.3.1.0 (build 36398880)").unwrap();
    assert_eq!(i.mode, NcuMode::Relaunch);
    assert_eq!(i.describe(), "ncu 2025.3.1.0 at /x/ncu, relaunch mode");
    let i = NcuInstall::from_version_output("/x/ncu".into(), "Version 2026.2.1.0 (build 1)").unwrap();
    assert_eq!(i.mode, NcuMode::Attach);
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
    let mut tries = 0;
    let i = loop {
        match NcuInstall::detect_in(&s) {
            Ok(i) => break i,
            Err(NcuError::VersionRun { source, .. }) if source.raw_os_error() == Some(26) && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!((i.version, i.mode), (NcuVersion::new(2026, 2, 1, 0), NcuMode::Attach));
}
