//! Checks the CUPTI constants and record offsets hard-coded in kprof against the real CUPTI 13.0
//! headers from the `nvidia-cuda-cupti==13.0.85` wheel. Skips (with a printed reason) when the
//! wheel cannot be found or downloaded, or when gcc is missing.

use crate::common;

use kprof::sys::cupti::offsets;
use kprof::sys::cupti::{self as ffi, cbid};

fn header(cu13: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(cu13.join("include").join(name)).unwrap()
}

/// Finds `NAME = value` (an enumerator) or `#define NAME value` in header text.
fn enum_value(text: &str, name: &str) -> Option<i64> {
    for line in text.lines() {
        let l = line.trim();
        let rest = l
            .strip_prefix(name)
            .or_else(|| l.strip_prefix("#define ").and_then(|r| r.strip_prefix(name)));
        let Some(rest) = rest else { continue };
        if !rest.starts_with(|c: char| c.is_whitespace() || c == '=') {
            continue;
        }
        let v = rest.trim_start().trim_start_matches('=').trim();
        let v = v.trim_end_matches(',').trim();
        let v = v.split_whitespace().next()?;
        let v = v.trim_end_matches(',');
        if let Some(h) = v.strip_prefix("0x") {
            return i64::from_str_radix(h, 16).ok();
        }
        if let Ok(n) = v.parse() {
            return Some(n);
        }
    }
    None
}

#[test]
fn constants_match_cupti_13_0_headers() {
    let Some(cu13) = common::or_skip("constants_match_cupti_13_0_headers", common::cupti_wheel()) else {
        return;
    };
    let cbids = header(&cu13, "cupti_driver_cbid.h");
    let act = header(&cu13, "cupti_activity.h");
    let res = header(&cu13, "cupti_result.h");
    let ver = header(&cu13, "cupti_version.h");
    let cb = header(&cu13, "cupti_callbacks.h");
    let checks: Vec<(&str, &str, i64)> = vec![
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel",
            cbid::CU_LAUNCH_KERNEL as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz",
            cbid::CU_LAUNCH_KERNEL_PTSZ as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel",
            cbid::CU_LAUNCH_COOPERATIVE_KERNEL as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz",
            cbid::CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch",
            cbid::CU_GRAPH_LAUNCH as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz",
            cbid::CU_GRAPH_LAUNCH_PTSZ as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount",
            cbid::CU_DEVICE_GET_COUNT as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx",
            cbid::CU_LAUNCH_KERNEL_EX as i64,
        ),
        (
            &cbids,
            "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz",
            cbid::CU_LAUNCH_KERNEL_EX_PTSZ as i64,
        ),
        (&act, "CUPTI_ACTIVITY_KIND_KERNEL", ffi::ACTIVITY_KIND_KERNEL as i64),
        (&act, "CUPTI_ACTIVITY_KIND_DRIVER", ffi::ACTIVITY_KIND_DRIVER as i64),
        (&act, "CUPTI_ACTIVITY_KIND_RUNTIME", ffi::ACTIVITY_KIND_RUNTIME as i64),
        (
            &act,
            "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL",
            ffi::ACTIVITY_KIND_CONCURRENT_KERNEL as i64,
        ),
        (
            &act,
            "CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION",
            ffi::ACTIVITY_KIND_EXTERNAL_CORRELATION as i64,
        ),
        (
            &act,
            "CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0",
            ffi::EXTERNAL_CORRELATION_KIND_CUSTOM0 as i64,
        ),
        (
            &act,
            "CUPTI_ACTIVITY_FLAG_FLUSH_FORCED",
            ffi::ACTIVITY_FLAG_FLUSH_FORCED as i64,
        ),
        (&res, "CUPTI_SUCCESS", ffi::CUPTI_SUCCESS as i64),
        (
            &res,
            "CUPTI_ERROR_INVALID_PARAMETER",
            ffi::CUPTI_ERROR_INVALID_PARAMETER as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_MAX_LIMIT_REACHED",
            ffi::CUPTI_ERROR_MAX_LIMIT_REACHED as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_NOT_INITIALIZED",
            ffi::CUPTI_ERROR_NOT_INITIALIZED as i64,
        ),
        (&res, "CUPTI_ERROR_NOT_SUPPORTED", ffi::CUPTI_ERROR_NOT_SUPPORTED as i64),
        (&res, "CUPTI_ERROR_HARDWARE_BUSY", ffi::CUPTI_ERROR_HARDWARE_BUSY as i64),
        (
            &res,
            "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
            ffi::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            ffi::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED as i64,
        ),
        (&res, "CUPTI_ERROR_UNKNOWN", ffi::CUPTI_ERROR_UNKNOWN as i64),
        (
            &res,
            "CUPTI_ERROR_INVALID_METRIC_NAME",
            ffi::CUPTI_ERROR_INVALID_METRIC_NAME as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED",
            ffi::CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
            ffi::CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES as i64,
        ),
        (
            &res,
            "CUPTI_ERROR_INVALID_CHIP_NAME",
            ffi::CUPTI_ERROR_INVALID_CHIP_NAME as i64,
        ),
        (&cb, "CUPTI_API_ENTER", ffi::API_ENTER as i64),
        (&cb, "CUPTI_API_EXIT", ffi::API_EXIT as i64),
        (&cb, "CUPTI_CB_DOMAIN_DRIVER_API", ffi::CB_DOMAIN_DRIVER_API as i64),
        (&cb, "CUPTI_CB_DOMAIN_RUNTIME_API", ffi::CB_DOMAIN_RUNTIME_API as i64),
        (&cb, "CUPTI_CB_DOMAIN_RESOURCE", ffi::CB_DOMAIN_RESOURCE as i64),
        (
            &cb,
            "CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED",
            ffi::CBID_RESOURCE_GRAPHEXEC_CREATED as i64,
        ),
        (
            &cb,
            "CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING",
            ffi::CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING as i64,
        ),
        (&ver, "CUPTI_API_VERSION", 130001),
    ];
    let mut bad = Vec::new();
    for (text, name, ours) in checks {
        match enum_value(text, name) {
            Some(v) if v == ours => {}
            got => bad.push(format!("{name}: header {got:?}, kprof {ours}")),
        }
    }
    assert!(bad.is_empty(), "mismatches:\n{}", bad.join("\n"));
}

#[test]
fn capture_and_runtime_launch_callback_ids_match_cupti_13_0_headers() {
    let Some(cu13) = common::or_skip(
        "capture_and_runtime_launch_callback_ids_match_cupti_13_0_headers",
        common::cupti_wheel(),
    ) else {
        return;
    };
    let drv = header(&cu13, "cupti_driver_cbid.h");
    let rt = header(&cu13, "cupti_runtime_cbid.h");
    let d = |n: &str| format!("CUPTI_DRIVER_TRACE_CBID_{n}");
    let r = |n: &str| format!("CUPTI_RUNTIME_TRACE_CBID_{n}");
    let checks: Vec<(&str, String, u32)> = vec![
        (&drv, d("cuStreamBeginCapture"), cbid::CU_STREAM_BEGIN_CAPTURE),
        (&drv, d("cuStreamBeginCapture_ptsz"), cbid::CU_STREAM_BEGIN_CAPTURE_PTSZ),
        (&drv, d("cuStreamEndCapture"), cbid::CU_STREAM_END_CAPTURE),
        (&drv, d("cuStreamEndCapture_ptsz"), cbid::CU_STREAM_END_CAPTURE_PTSZ),
        (&drv, d("cuStreamBeginCapture_v2"), cbid::CU_STREAM_BEGIN_CAPTURE_V2),
        (
            &drv,
            d("cuStreamBeginCapture_v2_ptsz"),
            cbid::CU_STREAM_BEGIN_CAPTURE_V2_PTSZ,
        ),
        (
            &drv,
            d("cuStreamBeginCaptureToGraph"),
            cbid::CU_STREAM_BEGIN_CAPTURE_TO_GRAPH,
        ),
        (
            &drv,
            d("cuStreamBeginCaptureToGraph_ptsz"),
            cbid::CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
        ),
        (&rt, r("cudaStreamBeginCapture_v10000"), cbid::CUDA_STREAM_BEGIN_CAPTURE),
        (
            &rt,
            r("cudaStreamBeginCapture_ptsz_v10000"),
            cbid::CUDA_STREAM_BEGIN_CAPTURE_PTSZ,
        ),
        (&rt, r("cudaStreamEndCapture_v10000"), cbid::CUDA_STREAM_END_CAPTURE),
        (
            &rt,
            r("cudaStreamEndCapture_ptsz_v10000"),
            cbid::CUDA_STREAM_END_CAPTURE_PTSZ,
        ),
        (
            &rt,
            r("cudaStreamBeginCaptureToGraph_v12030"),
            cbid::CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH,
        ),
        (
            &rt,
            r("cudaStreamBeginCaptureToGraph_ptsz_v12030"),
            cbid::CUDA_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
        ),
        (&rt, r("cudaLaunch_v3020"), cbid::CUDA_LAUNCH),
        (&rt, r("cudaLaunchKernel_v7000"), cbid::CUDA_LAUNCH_KERNEL),
        (&rt, r("cudaLaunch_ptsz_v7000"), cbid::CUDA_LAUNCH_PTSZ),
        (&rt, r("cudaLaunchKernel_ptsz_v7000"), cbid::CUDA_LAUNCH_KERNEL_PTSZ),
        (
            &rt,
            r("cudaLaunchCooperativeKernel_v9000"),
            cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL,
        ),
        (
            &rt,
            r("cudaLaunchCooperativeKernel_ptsz_v9000"),
            cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
        ),
        (
            &rt,
            r("cudaLaunchCooperativeKernelMultiDevice_v9000"),
            cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL_MULTI_DEVICE,
        ),
        (&rt, r("cudaGraphLaunch_v10000"), cbid::CUDA_GRAPH_LAUNCH),
        (&rt, r("cudaGraphLaunch_ptsz_v10000"), cbid::CUDA_GRAPH_LAUNCH_PTSZ),
        (&rt, r("cudaLaunchKernelExC_v11060"), cbid::CUDA_LAUNCH_KERNEL_EX_C),
        (
            &rt,
            r("cudaLaunchKernelExC_ptsz_v11060"),
            cbid::CUDA_LAUNCH_KERNEL_EX_C_PTSZ,
        ),
        (&rt, r("__cudaLaunchKernel_v13000"), cbid::CUDA_LAUNCH_KERNEL_INTERNAL),
        (
            &rt,
            r("__cudaLaunchKernel_ptsz_v13000"),
            cbid::CUDA_LAUNCH_KERNEL_INTERNAL_PTSZ,
        ),
    ];
    let mut bad = Vec::new();
    for (text, name, ours) in checks {
        match enum_value(text, &name) {
            Some(v) if v == i64::from(ours) => {}
            got => bad.push(format!("{name}: header {got:?}, kprof {ours}")),
        }
    }
    assert!(bad.is_empty(), "mismatches:\n{}", bad.join("\n"));
}

/// Minimal stand-in for cuda.h: only the types the CUPTI headers name (sizes of the record
/// fields we check do not depend on them).
const STUB_CUDA_H: &str = r#"
#ifndef KPROF_STUB_CUDA_H
#define KPROF_STUB_CUDA_H
#include <stdint.h>
#include <stddef.h>
typedef struct CUctx_st *CUcontext; typedef struct CUstream_st *CUstream; typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode; typedef struct CUgraphExec_st *CUgraphExec; typedef struct CUfunc_st *CUfunction;
typedef struct CUmod_st *CUmodule; typedef int CUdevice; typedef int CUresult; typedef uint64_t CUdeviceptr;
typedef int CUgraphNodeType; typedef struct CUlib_st *CUlibrary; typedef struct CUkern_st *CUkernel;
typedef unsigned long long cuuint64_t; typedef unsigned int cuuint32_t;
typedef int CUdevice_P2PAttribute; typedef int CUgraphInstantiateResult;
typedef int CUstreamAttrID; typedef union CUstreamAttrValue_u CUstreamAttrValue;
typedef struct CUaccessPolicyWindow_st CUaccessPolicyWindow; typedef int CUdevice_attribute;
typedef struct CUuuid_st { char bytes[16]; } CUuuid;
#endif
"#;

const OFFSETS_C: &str = r#"
#include <stdio.h>
#include <stddef.h>
#include <cupti_activity.h>
#define P(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))
#define S(T) printf("%s.size %zu\n", #T, sizeof(T))
int main(void) {
  P(CUpti_ActivityKernel10, kind); P(CUpti_ActivityKernel10, start); P(CUpti_ActivityKernel10, end);
  P(CUpti_ActivityKernel10, deviceId); P(CUpti_ActivityKernel10, contextId); P(CUpti_ActivityKernel10, streamId);
  P(CUpti_ActivityKernel10, correlationId); P(CUpti_ActivityKernel10, gridId); P(CUpti_ActivityKernel10, name);
  P(CUpti_ActivityKernel10, graphNodeId); P(CUpti_ActivityKernel10, graphId); S(CUpti_ActivityKernel10);
  P(CUpti_ActivityKernel9, start); P(CUpti_ActivityKernel9, end); P(CUpti_ActivityKernel9, deviceId);
  P(CUpti_ActivityKernel9, contextId); P(CUpti_ActivityKernel9, streamId); P(CUpti_ActivityKernel9, correlationId);
  P(CUpti_ActivityKernel9, gridId); P(CUpti_ActivityKernel9, name); P(CUpti_ActivityKernel9, graphNodeId);
  P(CUpti_ActivityKernel9, graphId); S(CUpti_ActivityKernel9);
  P(CUpti_ActivityAPI, kind); P(CUpti_ActivityAPI, cbid); P(CUpti_ActivityAPI, start); P(CUpti_ActivityAPI, end);
  P(CUpti_ActivityAPI, processId); P(CUpti_ActivityAPI, threadId); P(CUpti_ActivityAPI, correlationId);
  S(CUpti_ActivityAPI);
  P(CUpti_ActivityExternalCorrelation, externalKind); P(CUpti_ActivityExternalCorrelation, externalId);
  P(CUpti_ActivityExternalCorrelation, correlationId); S(CUpti_ActivityExternalCorrelation);
  P(CUpti_ActivityGraphTrace2, kind); P(CUpti_ActivityGraphTrace2, correlationId); P(CUpti_ActivityGraphTrace2, start);
  P(CUpti_ActivityGraphTrace2, end); P(CUpti_ActivityGraphTrace2, deviceId); P(CUpti_ActivityGraphTrace2, graphId);
  P(CUpti_ActivityGraphTrace2, streamId); S(CUpti_ActivityGraphTrace2);
  printf("CUPTI_ACTIVITY_KIND_GRAPH_TRACE %d\n", (int)CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  return 0;
}
"#;

#[test]
fn record_offsets_match_cupti_13_0_headers() {
    let Some(got) = common::probe_or_skip::<usize>(
        "record_offsets_match_cupti_13_0_headers",
        common::cupti_wheel().map(|cu13| cu13.join("include")),
        &[
            ("offsets.c", OFFSETS_C),
            ("cuda.h", STUB_CUDA_H),
            ("builtin_types.h", ""),
        ],
        &[],
    ) else {
        return;
    };
    use offsets::*;
    let mut want: Vec<(String, usize)> = vec![
        ("CUpti_ActivityKernel10.size".into(), 216),
        ("CUpti_ActivityKernel9.size".into(), 208),
        ("CUpti_ActivityAPI.size".into(), 40),
        ("CUpti_ActivityExternalCorrelation.size".into(), 24),
        ("CUpti_ActivityGraphTrace2.size".into(), 56),
        ("CUpti_ActivityGraphTrace2.kind".into(), KIND),
        ("CUpti_ActivityGraphTrace2.correlationId".into(), GRAPH_CORRELATION_ID),
        ("CUpti_ActivityGraphTrace2.start".into(), GRAPH_START),
        ("CUpti_ActivityGraphTrace2.end".into(), GRAPH_END),
        ("CUpti_ActivityGraphTrace2.deviceId".into(), GRAPH_DEVICE_ID),
        ("CUpti_ActivityGraphTrace2.graphId".into(), GRAPH_ID),
        ("CUpti_ActivityGraphTrace2.streamId".into(), GRAPH_STREAM_ID),
        (
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE".into(),
            ffi::ACTIVITY_KIND_GRAPH_TRACE as usize,
        ),
        ("CUpti_ActivityKernel10.kind".into(), KIND),
        ("CUpti_ActivityAPI.kind".into(), KIND),
        ("CUpti_ActivityAPI.cbid".into(), API_CBID),
        ("CUpti_ActivityAPI.start".into(), API_START),
        ("CUpti_ActivityAPI.end".into(), API_END),
        ("CUpti_ActivityAPI.processId".into(), API_PROCESS_ID),
        ("CUpti_ActivityAPI.threadId".into(), API_THREAD_ID),
        ("CUpti_ActivityAPI.correlationId".into(), API_CORRELATION_ID),
        ("CUpti_ActivityExternalCorrelation.externalKind".into(), EXT_KIND),
        ("CUpti_ActivityExternalCorrelation.externalId".into(), EXT_ID),
        (
            "CUpti_ActivityExternalCorrelation.correlationId".into(),
            EXT_CORRELATION_ID,
        ),
    ];
    for t in ["CUpti_ActivityKernel10", "CUpti_ActivityKernel9"] {
        for (f, off) in [
            ("start", KERNEL_START),
            ("end", KERNEL_END),
            ("deviceId", KERNEL_DEVICE_ID),
            ("contextId", KERNEL_CONTEXT_ID),
            ("streamId", KERNEL_STREAM_ID),
            ("correlationId", KERNEL_CORRELATION_ID),
            ("gridId", KERNEL_GRID_ID),
            ("name", KERNEL_NAME),
            ("graphNodeId", KERNEL_GRAPH_NODE_ID),
            ("graphId", KERNEL_GRAPH_ID),
        ] {
            want.push((format!("{t}.{f}"), off));
        }
    }
    common::assert_header_values(&got, &want);
    // Every field of the stable prefix lies inside the minimum length the parser requires.
    const {
        assert!(KERNEL_GRAPH_ID + 4 <= KERNEL_MIN_LEN);
        assert!(API_CORRELATION_ID + 4 <= API_MIN_LEN);
        assert!(EXT_CORRELATION_ID + 4 <= EXT_MIN_LEN);
        assert!(GRAPH_STREAM_ID + 4 <= GRAPH_MIN_LEN);
    }
}
