//! `kprof --version` carries the git revision the binary was built from.

use std::process::Command;

#[test]
fn version_carries_the_git_revision() {
    let out = Command::new(env!("CARGO_BIN_EXE_kprof"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(line, format!("kprof {}", kprof::VERSION));
    let rev = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match (rev, option_env!("KPROF_GIT_REV")) {
        (_, Some(explicit)) => assert!(line.ends_with(&format!("+g{explicit}")), "{line}"),
        (Some(rev), None) => assert_eq!(line, format!("kprof {}+g{rev}", env!("CARGO_PKG_VERSION"))),
        (None, None) => assert_eq!(line, format!("kprof {}", env!("CARGO_PKG_VERSION"))),
    }
}
