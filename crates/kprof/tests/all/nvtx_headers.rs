//! Checks kprof's hand-written NVTX v3 declarations (`kprof::sys::nvtx`) against NVIDIA's real
//! headers from the `nvidia-nvtx==13.0.85` wheel: a C program built with gcc prints every
//! constant, size and offset. Skips (with a printed reason) when the wheel cannot be found or
//! downloaded, or when gcc is missing.

use std::collections::HashMap;
use std::mem::{offset_of, size_of};

use kprof::sys::nvtx::{self as abi, EventAttributes, ExportTableCallbacks, ExportTableVersionInfo};

use crate::common;

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
    let name = "nvtx_declarations_match_the_nvtx_13_0_headers";
    let Some(inc) = common::or_skip_with_gcc(name, common::nvtx_include()) else {
        return;
    };
    let got: HashMap<String, i64> = common::gcc_probe(&[("nvtx_abi.c", PROGRAM_C)], &inc, &["-ldl"]);
    let size = |m: i32| abi::CBID_SIZES.iter().find(|(x, _)| *x == m).unwrap().1 as i64;
    let want: Vec<(&str, i64)> = vec![
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
            "NvtxExportTableCallbacks.struct_size",
            offset_of!(ExportTableCallbacks, struct_size) as i64,
        ),
        (
            "NvtxExportTableCallbacks.GetModuleFunctionTable",
            offset_of!(ExportTableCallbacks, get_module_function_table) as i64,
        ),
        (
            "sizeof(NvtxExportTableVersionInfo)",
            size_of::<ExportTableVersionInfo>() as i64,
        ),
        (
            "NvtxExportTableVersionInfo.struct_size",
            offset_of!(ExportTableVersionInfo, struct_size) as i64,
        ),
        (
            "NvtxExportTableVersionInfo.version",
            offset_of!(ExportTableVersionInfo, version) as i64,
        ),
        (
            "NvtxExportTableVersionInfo.reserved0",
            offset_of!(ExportTableVersionInfo, reserved0) as i64,
        ),
        (
            "NvtxExportTableVersionInfo.SetInjectionNvtxVersion",
            offset_of!(ExportTableVersionInfo, set_injection_nvtx_version) as i64,
        ),
        ("sizeof(nvtxEventAttributes_t)", size_of::<EventAttributes>() as i64),
        (
            "nvtxEventAttributes_t.version",
            offset_of!(EventAttributes, version) as i64,
        ),
        ("nvtxEventAttributes_t.size", offset_of!(EventAttributes, size) as i64),
        (
            "nvtxEventAttributes_t.category",
            offset_of!(EventAttributes, category) as i64,
        ),
        (
            "nvtxEventAttributes_t.colorType",
            offset_of!(EventAttributes, color_type) as i64,
        ),
        ("nvtxEventAttributes_t.color", offset_of!(EventAttributes, color) as i64),
        (
            "nvtxEventAttributes_t.payloadType",
            offset_of!(EventAttributes, payload_type) as i64,
        ),
        (
            "nvtxEventAttributes_t.reserved0",
            offset_of!(EventAttributes, reserved0) as i64,
        ),
        (
            "nvtxEventAttributes_t.payload",
            offset_of!(EventAttributes, payload) as i64,
        ),
        (
            "nvtxEventAttributes_t.messageType",
            offset_of!(EventAttributes, message_type) as i64,
        ),
        (
            "nvtxEventAttributes_t.message",
            offset_of!(EventAttributes, message) as i64,
        ),
    ];
    let mut bad = Vec::new();
    for (k, v) in &want {
        match got.get(*k) {
            Some(g) if g == v => {}
            other => bad.push(format!("{k}: header {other:?}, kprof {v}")),
        }
    }
    assert!(
        bad.is_empty(),
        "NVTX declarations differ from the headers:\n{}",
        bad.join("\n")
    );
    assert_eq!(got.len(), want.len(), "{got:?}");
    // The largest table must fit every module.
    assert_eq!(
        abi::MAX_CBID_SIZE as i64,
        want[10..16].iter().map(|(_, v)| *v).max().unwrap()
    );
}
