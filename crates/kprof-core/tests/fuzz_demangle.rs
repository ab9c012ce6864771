//! Fuzz of kernel-name demangling: every kernel name CUPTI reports goes
//! through `kprof_core::kernels::demangle`, so no name may panic or hang it. Inputs: `_Z` plus
//! arbitrary Itanium-ish text, and real names with bytes mutated.
//!
//! Long run: `PROPTEST_CASES=200000 nice -n 19 cargo test --release -p kprof-core --test fuzz_demangle -- --nocapture`

mod fuzz_common;

use fuzz_common::*;
use kprof_core::kernels::{demangle, demangle_label, matches};
use proptest::prelude::*;

const REAL: &[&str] = &[
    "_Z5scalePfPKffi",
    "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE",
    "_ZN2at6native53_GLOBAL__N__ee6a3d8f_20_layer_norm_kernel_cu_ba0f8e3e28vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_",
];

fn check(bytes: Vec<u8>) {
    within_deadline("demangle", move || {
        let name = String::from_utf8_lossy(&bytes).into_owned();
        let shown = demangle(&name);
        assert!(!shown.is_empty() || name.trim().is_empty());
        let _ = demangle_label(&format!("{name}|{name}"));
        let _ = matches(&name, "scale");
        let _ = matches(&name, &shown);
    });
}

#[test]
fn itanium_like_names() {
    // The letters of Itanium manglings' structure, digits and letters.
    let alphabet = prop_oneof![10 => special_or_alphanumeric(b"_ZNEISTL"), 1 => b'A'..=b'Z'];
    let strategy = proptest::collection::vec(alphabet, 0..200).prop_map(|mut v| {
        v.splice(0..0, *b"_Z");
        v
    });
    campaign("demangle/itanium-like", strategy, check);
}

#[test]
fn mutated_real_names() {
    let seeds = REAL.iter().map(|s| s.as_bytes().to_vec()).collect();
    campaign("demangle/mutated", mutated(seeds, 6), check);
}
