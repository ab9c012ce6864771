//! The file-safety and display review item 22: `Nvml::load()` (the sampler's NVML) honours `KPROF_NVML_PATH` as the loader
//! and `kprof doctor` do. Its own test binary: it sets the variable for the whole process.

use kprof::conditions::nvml::Nvml;

#[test]
fn nvml_load_uses_kprof_nvml_path() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libnvidia-ml-fake.so.1");
    std::fs::write(&fake, b"not a library").unwrap();
    std::env::set_var("KPROF_NVML_PATH", &fake);
    let e = Nvml::load().unwrap_err().to_string();
    assert!(
        e.contains("libnvidia-ml-fake.so.1") && e.contains("KPROF_NVML_PATH"),
        "{e}"
    );
    // A folder: the library inside it.
    std::env::set_var("KPROF_NVML_PATH", dir.path());
    let e = Nvml::load().unwrap_err().to_string();
    assert!(
        e.contains(&dir.path().join("libnvidia-ml.so.1").display().to_string()),
        "{e}"
    );
    std::env::remove_var("KPROF_NVML_PATH");
}
