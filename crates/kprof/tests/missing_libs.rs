//! A machine without the driver or without CUPTI gets one clear error value, never a panic.
//! (Uses the KPROF_*_PATH overrides pointed at an empty directory, so it holds on any machine.)

use kprof::driver::Driver;
use kprof::loader::{LoadError, SearchEnv, ENV_CUPTI_PATH, ENV_LIBCUDA_PATH};
use kprof::{EngineError, Libraries};

#[test]
fn missing_driver_and_cupti_are_clear_errors() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().display().to_string();
    // Process-wide env: this is the only test in this binary.
    std::env::set_var(ENV_LIBCUDA_PATH, &dir);
    std::env::set_var(ENV_CUPTI_PATH, &dir);

    let e = Driver::load(&SearchEnv::from_process()).unwrap_err();
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(
        matches!(e, EngineError::Load(LoadError::LibraryNotFound { .. })),
        "{e:?}"
    );
    assert!(msg.starts_with("libcuda could not be loaded"), "{msg}");
    assert!(msg.contains(&dir), "{msg}");
    assert!(msg.contains("install the NVIDIA driver"), "{msg}");

    let e = kprof::cupti::Cupti::load(&SearchEnv::from_process()).unwrap_err();
    let msg = e.to_string();
    eprintln!("{msg}");
    assert!(msg.starts_with("libcupti could not be loaded"), "{msg}");
    assert!(msg.contains("KPROF_CUPTI_PATH"), "{msg}");

    // Libraries::load reports the first missing piece (the driver).
    let e = Libraries::load().unwrap_err();
    assert!(e.to_string().starts_with("libcuda could not be loaded"), "{e}");

    // Without the overrides, on a machine with no driver, the bare-name search fails cleanly too.
    std::env::remove_var(ENV_LIBCUDA_PATH);
    match Driver::load(&SearchEnv::from_process()) {
        Ok(d) => eprintln!("a driver is present here: {}", d.path.display()),
        Err(e) => {
            eprintln!("{e}");
            assert!(
                matches!(
                    e,
                    EngineError::Load(LoadError::LibraryNotFound { .. }) | EngineError::DriverCall { .. }
                ),
                "{e:?}"
            );
        }
    }
}

#[test]
fn error_messages_name_the_fix() {
    let e = EngineError::SubscriberTaken {
        call: "cuptiSubscribe",
        message: "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED".into(),
        version: 130001,
    };
    let m = e.to_string();
    for needle in [
        "torch.profiler",
        "Nsight Systems",
        "Nsight Compute",
        "another kprof",
        "cuda-events",
    ] {
        assert!(m.contains(needle), "{needle} missing from: {m}");
    }
    let m = EngineError::DroppedRecords {
        count: 3,
        buffer_mib: 8,
    }
    .to_string();
    assert!(m.contains("dropped 3"), "{m}");
}
