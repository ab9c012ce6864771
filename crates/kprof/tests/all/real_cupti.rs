//! Loads the real libcupti.so.13 from the CUPTI 13.0 wheel (no GPU, no libcuda needed to load it)
//! and checks the function table resolves, the version, and that starting a session on a machine
//! without a driver fails with an error value instead of a panic. Skips with a reason when the
//! wheel is unavailable.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;

use kprof::cupti::Cupti;
use kprof::loader::{SearchEnv, ENV_CUPTI_PATH};
use kprof::sys::cupti::REQUIRED_SYMBOLS;
use kprof::{ActivitySession, EngineError};

#[test]
fn loads_wheel_libcupti_and_fails_cleanly_without_a_driver() {
    let name = "loads_wheel_libcupti_and_fails_cleanly_without_a_driver";
    let Some(cu13) = common::or_skip(name, common::cupti_wheel()) else {
        return;
    };
    let lib_dir = cu13.join("lib");
    let mut env = SearchEnv::default();
    env.vars = HashMap::from([(ENV_CUPTI_PATH.to_string(), lib_dir.display().to_string())]);
    env.proc_maps = None;
    env.site_packages = vec![];
    env.root = PathBuf::from("/nonexistent-root");
    let cupti = Cupti::load(&env).expect("load the wheel's libcupti");
    assert_eq!(cupti.path, lib_dir.join("libcupti.so.13"));
    assert_eq!(cupti.api_version, 130001);
    assert_eq!(
        cupti.nvperf_host.as_deref(),
        Some(lib_dir.join("libnvperf_host.so").as_path())
    );
    assert!(
        cupti.has_per_cbid_switches(),
        "CUPTI 13.0 has cuptiActivityEnableDriverApi"
    );
    assert_eq!(REQUIRED_SYMBOLS.len(), 14);
    let msg = cupti.result_string(39);
    assert!(!msg.is_empty(), "result string for 39");
    eprintln!("cuptiGetResultString(39) = {msg:?}");

    // Is there a driver on this machine? If so the session may legitimately start.
    let has_driver = unsafe { libloading::Library::new("libcuda.so.1") }.is_ok();
    match ActivitySession::start(cupti) {
        Ok(s) => {
            assert!(has_driver, "a session started without libcuda?");
            s.stop().unwrap();
        }
        Err(e) => {
            eprintln!("session start without a GPU: {e}");
            assert!(
                matches!(e, EngineError::CuptiCall { .. } | EngineError::SubscriberTaken { .. }),
                "{e:?}"
            );
            // A failed start leaves no session behind: the next attempt gets the same kind of
            // error, not SessionActive.
            let e2 = ActivitySession::start(cupti).unwrap_err();
            assert!(!matches!(e2, EngineError::SessionActive), "{e2:?}");
        }
    }
}
