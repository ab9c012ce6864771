//! Checks kprof's hand-written NVTX v3 declarations (`kprof::sys::nvtx`) against NVIDIA's real
//! headers from the `nvidia-nvtx==13.0.85` wheel: a C program built with gcc prints every
//! constant, size and offset. Skips (with a printed reason) when the wheel cannot be found or
//! downloaded, or when gcc is missing.

use std::mem::{offset_of, size_of};

use kprof::sys::nvtx::{self as abi, EventAttributes, ExportTableCallbacks, ExportTableVersionInfo};

use crate::common;

/// `("CStruct.cField", offset)` of each `rust_field: "cField"` of the Rust struct `$t`.
macro_rules! offsets {
    ($c:literal, $t:ty, { $($field:ident: $c_field:literal),* $(,)? }) => {
        [$((concat!($c, ".", $c_field), offset_of!($t, $field) as i64)),*]
    };
}

const PROGRAM_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include "nvtx3/nvToolsExt.h"
#define V(x) printf("%s %ld\n", #x, (long)(x))
#define OFF(t, f) printf("%s.%s %ld\n", #t, #f, (long)offsetof(t, f))
int main(void) {
  V(NVTX_VERSION);
  V(NVTX_ETID_CALLBACKS); V(NVTX_ETID_VERSIONINFO);
  V(NVTX_CB_MODULE_CORE); V(NVTX_CB_MODULE_CUDA); V(NVTX_CB_MODULE_OPENCL);
  V(NVTX_CB_MODULE_CUDART); V(NVTX_CB_MODULE_CORE2); V(NVTX_CB_MODULE_SYNC); V(NVTX_CB_MODULE_SIZE);
  V(NVTX_CBID_CORE_SIZE); V(NVTX_CBID_CUDA_SIZE); V(NVTX_CBID_OPENCL_SIZE);
  V(NVTX_CBID_CUDART_SIZE); V(NVTX_CBID_CORE2_SIZE); V(NVTX_CBID_SYNC_SIZE);
  V(NVTX_CBID_CORE2_DomainRangePushEx); V(NVTX_CBID_CORE2_DomainRangePop); V(NVTX_CBID_CORE2_DomainCreateA);
  V(NVTX_MESSAGE_TYPE_ASCII);
  V(sizeof(NvtxExportTableCallbacks));
  OFF(NvtxExportTableCallbacks, struct_size); OFF(NvtxExportTableCallbacks, GetModuleFunctionTable);
  V(sizeof(NvtxExportTableVersionInfo));
  OFF(NvtxExportTableVersionInfo, struct_size); OFF(NvtxExportTableVersionInfo, version);
  OFF(NvtxExportTableVersionInfo, reserved0); OFF(NvtxExportTableVersionInfo, SetInjectionNvtxVersion);
  V(sizeof(nvtxEventAttributes_t));
  OFF(nvtxEventAttributes_t, version); OFF(nvtxEventAttributes_t, size); OFF(nvtxEventAttributes_t, category);
  OFF(nvtxEventAttributes_t, colorType); OFF(nvtxEventAttributes_t, color);
  OFF(nvtxEventAttributes_t, payloadType); OFF(nvtxEventAttributes_t, reserved0);
  OFF(nvtxEventAttributes_t, payload); OFF(nvtxEventAttributes_t, messageType);
  OFF(nvtxEventAttributes_t, message);
  return 0;
}
"#;

#[test]
fn nvtx_declarations_match_the_nvtx_13_0_headers() {
    let Some(got) = common::probe_or_skip::<i64>(
        "nvtx_declarations_match_the_nvtx_13_0_headers",
        common::nvtx_include(),
        &[("nvtx_abi.c", PROGRAM_C)],
        &["-ldl"],
    ) else {
        return;
    };
    let size = |m: i32| abi::CBID_SIZES.iter().find(|(x, _)| *x == m).unwrap().1 as i64;
    let mut want: Vec<(&str, i64)> = vec![
        ("NVTX_VERSION", abi::NVTX_VERSION as i64),
        ("NVTX_ETID_CALLBACKS", abi::ETID_CALLBACKS as i64),
        ("NVTX_ETID_VERSIONINFO", abi::ETID_VERSIONINFO as i64),
        ("NVTX_CB_MODULE_CORE", abi::MODULE_CORE as i64),
        ("NVTX_CB_MODULE_CUDA", abi::MODULE_CUDA as i64),
        ("NVTX_CB_MODULE_OPENCL", abi::MODULE_OPENCL as i64),
        ("NVTX_CB_MODULE_CUDART", abi::MODULE_CUDART as i64),
        ("NVTX_CB_MODULE_CORE2", abi::MODULE_CORE2 as i64),
        ("NVTX_CB_MODULE_SYNC", abi::MODULE_SYNC as i64),
        ("NVTX_CB_MODULE_SIZE", abi::MODULE_SIZE as i64),
        ("NVTX_CBID_CORE_SIZE", size(abi::MODULE_CORE)),
        ("NVTX_CBID_CUDA_SIZE", size(abi::MODULE_CUDA)),
        ("NVTX_CBID_OPENCL_SIZE", size(abi::MODULE_OPENCL)),
        ("NVTX_CBID_CUDART_SIZE", size(abi::MODULE_CUDART)),
        ("NVTX_CBID_CORE2_SIZE", size(abi::MODULE_CORE2)),
        ("NVTX_CBID_SYNC_SIZE", size(abi::MODULE_SYNC)),
        (
            "NVTX_CBID_CORE2_DomainRangePushEx",
            abi::CBID_CORE2_DOMAIN_RANGE_PUSH_EX as i64,
        ),
        (
            "NVTX_CBID_CORE2_DomainRangePop",
            abi::CBID_CORE2_DOMAIN_RANGE_POP as i64,
        ),
        ("NVTX_CBID_CORE2_DomainCreateA", abi::CBID_CORE2_DOMAIN_CREATE_A as i64),
        ("NVTX_MESSAGE_TYPE_ASCII", abi::MESSAGE_TYPE_ASCII as i64),
        (
            "sizeof(NvtxExportTableCallbacks)",
            size_of::<ExportTableCallbacks>() as i64,
        ),
        (
            "sizeof(NvtxExportTableVersionInfo)",
            size_of::<ExportTableVersionInfo>() as i64,
        ),
        ("sizeof(nvtxEventAttributes_t)", size_of::<EventAttributes>() as i64),
    ];
    want.extend(offsets!("NvtxExportTableCallbacks", ExportTableCallbacks, {
        struct_size: "struct_size",
        get_module_function_table: "GetModuleFunctionTable",
    }));
    want.extend(offsets!("NvtxExportTableVersionInfo", ExportTableVersionInfo, {
        struct_size: "struct_size",
        version: "version",
        reserved0: "reserved0",
        set_injection_nvtx_version: "SetInjectionNvtxVersion",
    }));
    want.extend(offsets!("nvtxEventAttributes_t", EventAttributes, {
        version: "version",
        size: "size",
        category: "category",
        color_type: "colorType",
        color: "color",
        payload_type: "payloadType",
        reserved0: "reserved0",
        payload: "payload",
        message_type: "messageType",
        message: "message",
    }));
    common::assert_header_values(&got, &want);
    assert_eq!(got.len(), want.len(), "{got:?}");
    // The largest table must fit every module.
    assert_eq!(
        abi::MAX_CBID_SIZE as i64,
        want[10..16].iter().map(|(_, v)| *v).max().unwrap()
    );
}
