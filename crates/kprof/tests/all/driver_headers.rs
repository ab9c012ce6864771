//! Checks kprof's hand-written CUDA driver bindings (`kprof::sys::driver`) against `cuda.h` from the
//! `nvidia-cuda-runtime==13.0.96` wheel: a C file assigns every entry point kprof resolves to a
//! function pointer of the prototype kprof declares (gcc rejects a mismatch), and a C program
//! prints the layout of `CUDA_KERNEL_NODE_PARAMS_v2`, which kprof's own graph passes. Skips (with
//! a printed reason) when the wheel cannot be found or downloaded, or when gcc is missing.

use std::mem::{offset_of, size_of};
use std::process::Command;

use kprof::sys::driver::KernelNodeParams;

use crate::common;

/// Each entry point kprof resolves, with the prototype of its Rust function type in
/// `sys/driver.rs` written in C (`void *` where kprof passes an opaque handle). The plain names
/// go through `cuda.h`'s macros to the `_v2` entry points that kprof loads.
const PROTOTYPES_C: &str = r#"
#include <cuda.h>
#define CHECK(name, ret, ...) ret (*check_##name)(__VA_ARGS__) = name;
CHECK(cuInit, CUresult, unsigned int)
CHECK(cuDriverGetVersion, CUresult, int *)
CHECK(cuCtxGetCurrent, CUresult, CUcontext *)
CHECK(cuCtxSetCurrent, CUresult, CUcontext)
CHECK(cuCtxGetDevice, CUresult, CUdevice *)
CHECK(cuCtxSynchronize, CUresult, void)
CHECK(cuDevicePrimaryCtxRetain, CUresult, CUcontext *, CUdevice)
CHECK(cuDeviceGet, CUresult, CUdevice *, int)
CHECK(cuDeviceGetCount, CUresult, int *)
CHECK(cuDeviceGetName, CUresult, char *, int, CUdevice)
CHECK(cuDeviceGetAttribute, CUresult, int *, CUdevice_attribute, CUdevice)
CHECK(cuDeviceGetUuid, CUresult, CUuuid *, CUdevice)
CHECK(cuMemAlloc, CUresult, CUdeviceptr *, size_t)
CHECK(cuMemFree, CUresult, CUdeviceptr)
CHECK(cuMemsetD8, CUresult, CUdeviceptr, unsigned char, size_t)
CHECK(cuGetErrorName, CUresult, CUresult, const char **)
CHECK(cuEventCreate, CUresult, CUevent *, unsigned int)
CHECK(cuEventRecord, CUresult, CUevent, CUstream)
CHECK(cuEventElapsedTime, CUresult, float *, CUevent, CUevent)
CHECK(cuEventDestroy, CUresult, CUevent)
CHECK(cuModuleLoadData, CUresult, CUmodule *, const void *)
CHECK(cuModuleGetFunction, CUresult, CUfunction *, CUmodule, const char *)
CHECK(cuLaunchKernel, CUresult, CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
      unsigned int, unsigned int, unsigned int, CUstream, void **, void **)
CHECK(cuMemHostAlloc, CUresult, void **, size_t, unsigned int)
CHECK(cuMemFreeHost, CUresult, void *)
CHECK(cuMemHostGetDevicePointer, CUresult, CUdeviceptr *, void *, unsigned int)
CHECK(cuStreamWaitValue32, CUresult, CUstream, CUdeviceptr, cuuint32_t, unsigned int)
CHECK(cuGraphCreate, CUresult, CUgraph *, unsigned int)
CHECK(cuGraphAddKernelNode, CUresult, CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
      const CUDA_KERNEL_NODE_PARAMS_v2 *)
CHECK(cuGraphInstantiateWithFlags, CUresult, CUgraphExec *, CUgraph, unsigned long long)
CHECK(cuGraphLaunch, CUresult, CUgraphExec, CUstream)
CHECK(cuGraphExecDestroy, CUresult, CUgraphExec)
CHECK(cuGraphDestroy, CUresult, CUgraph)
"#;

const LAYOUT_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <cuda.h>
#define OFF(f) printf("%s %zu\n", #f, offsetof(CUDA_KERNEL_NODE_PARAMS_v2, f))
int main(void) {
  printf("size %zu\n", sizeof(CUDA_KERNEL_NODE_PARAMS_v2));
  OFF(func); OFF(gridDimX); OFF(blockDimX); OFF(sharedMemBytes); OFF(kernelParams); OFF(extra);
  OFF(kern); OFF(ctx);
  printf("plain_is_v2 %d\n", (int)(sizeof(CUDA_KERNEL_NODE_PARAMS) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2)));
  return 0;
}
"#;

#[test]
fn driver_prototypes_match_cuda_13_0_header() {
    let name = "driver_prototypes_match_cuda_13_0_header";
    let Some(include) = common::or_skip_with_gcc(name, common::cuda_include()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prototypes.c");
    std::fs::write(&src, PROTOTYPES_C).unwrap();
    let out = Command::new("gcc")
        .args(["-c", "-Werror=incompatible-pointer-types", "-Werror"])
        .arg(format!("-I{}", include.display()))
        .arg(&src)
        .arg("-o")
        .arg(dir.path().join("prototypes.o"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a driver prototype differs from cuda.h:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kernel_node_params_match_cuda_13_0_header() {
    let Some(got) = common::probe_or_skip::<usize>(
        "kernel_node_params_match_cuda_13_0_header",
        common::cuda_include(),
        &[("layout.c", LAYOUT_C)],
        &[],
    ) else {
        return;
    };
    let want = [
        ("size", size_of::<KernelNodeParams>()),
        ("func", offset_of!(KernelNodeParams, func)),
        ("gridDimX", offset_of!(KernelNodeParams, grid_dim)),
        ("blockDimX", offset_of!(KernelNodeParams, block_dim)),
        ("sharedMemBytes", offset_of!(KernelNodeParams, shared_mem_bytes)),
        ("kernelParams", offset_of!(KernelNodeParams, kernel_params)),
        ("extra", offset_of!(KernelNodeParams, extra)),
        ("kern", offset_of!(KernelNodeParams, kern)),
        ("ctx", offset_of!(KernelNodeParams, ctx)),
        ("plain_is_v2", 1),
    ];
    common::assert_header_values(&got, &want);
    assert_eq!(got.len(), want.len(), "{got:?}");
}
