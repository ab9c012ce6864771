//! End-to-end check of the CUPTI backend on a real GPU: only runs when KPROF_GPU_TESTS=1.
//! Launches hand-written PTX kernels through the driver API (no toolkit needed), in a region on
//! the main thread and from a second thread, then 100,000 small kernels, and checks attribution and
//! that no record is dropped. With KPROF_RECORD_ACTIVITY set, the records become a fixture.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use kprof::attribution::{attribute, encode_region_key, RegionSpan};
use kprof::cupti::current_thread_id;
use kprof::{ActivitySession, Libraries};

const PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 p, .param .u32 n)
{
  .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .pred %p;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r5;
DONE:
  ret;
}
.visible .entry empty()
{
  ret;
}
"#;

type FnModuleLoadData = unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> i32;
type FnModuleGetFunction = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const i8) -> i32;
type FnLaunchKernel = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> i32;
type FnCtxSetCurrent = unsafe extern "C" fn(*mut c_void) -> i32;

struct Kernels {
    fill: usize,
    empty: usize,
    launch: FnLaunchKernel,
}

impl Kernels {
    fn fill(&self, ptr: u64, n: u32) {
        let mut p = ptr;
        let mut nn = n;
        let mut args = [&mut p as *mut u64 as *mut c_void, &mut nn as *mut u32 as *mut c_void];
        let r = unsafe {
            (self.launch)(
                self.fill as *mut c_void,
                n.div_ceil(256),
                1,
                1,
                256,
                1,
                1,
                0,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, 0, "cuLaunchKernel(fill)");
    }
    fn empty(&self) {
        let r = unsafe {
            (self.launch)(
                self.empty as *mut c_void,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, 0, "cuLaunchKernel(empty)");
    }
}

/// A session that attributes by launch API records (rules A and B, which this smoke test checks
/// on the GPU; launch order is checked by `truth_check bracket` and the GPU check).
fn records_session(cupti: &'static kprof::cupti::Cupti) -> ActivitySession {
    let mut trace = kprof::choices::TraceOptions::default();
    trace.attribution = kprof::choices::Attribution::Records;
    ActivitySession::start_traced(cupti, trace).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn gpu_end_to_end() {
    if std::env::var("KPROF_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("SKIPPED gpu_end_to_end: set KPROF_GPU_TESTS=1 on a GPU machine");
        return;
    }
    let libs = Libraries::load().unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "libcuda {} (CUDA {}), libcupti {} (API {}), nvperf_host {:?}, nvml {:?} driver {:?}",
        libs.cuda_path.display(),
        libs.versions.driver,
        libs.cupti_path.display(),
        libs.versions.cupti_api,
        libs.nvperf_host_path,
        libs.nvml_path,
        libs.versions.driver_release
    );
    let drv = libs.cuda;
    let early = if std::env::var("KPROF_TEST_EARLY").as_deref() == Ok("1") {
        Some(records_session(libs.cupti))
    } else {
        None
    };
    let ctx = drv.ensure_context().unwrap();
    let dev = drv.current_device().unwrap();
    eprintln!("device {dev}: {:?}", drv.device_info(dev).unwrap());

    let lib = unsafe { libloading::Library::new(&libs.cuda_path) }.unwrap();
    let (load, getf, launch, setcur) = unsafe {
        (
            *lib.get::<FnModuleLoadData>(b"cuModuleLoadData\0").unwrap(),
            *lib.get::<FnModuleGetFunction>(b"cuModuleGetFunction\0").unwrap(),
            *lib.get::<FnLaunchKernel>(b"cuLaunchKernel\0").unwrap(),
            *lib.get::<FnCtxSetCurrent>(b"cuCtxSetCurrent\0").unwrap(),
        )
    };
    let ptx = CString::new(PTX).unwrap();
    let mut module = std::ptr::null_mut();
    assert_eq!(
        unsafe { load(&mut module, ptx.as_ptr() as *const c_void) },
        0,
        "cuModuleLoadData"
    );
    let mut f_fill = std::ptr::null_mut();
    let mut f_empty = std::ptr::null_mut();
    unsafe {
        assert_eq!(getf(&mut f_fill, module, c"fill".as_ptr()), 0);
        assert_eq!(getf(&mut f_empty, module, c"empty".as_ptr()), 0);
    }
    let k = Arc::new(Kernels {
        fill: f_fill as usize,
        empty: f_empty as usize,
        launch,
    });
    // Baseline host cost of 100,000 empty launches without CUPTI.
    for _ in 0..1000 {
        k.empty();
    }
    drv.synchronize().unwrap();
    let wall = std::time::Instant::now();
    for _ in 0..100_000 {
        k.empty();
    }
    let base = wall.elapsed();
    drv.synchronize().unwrap();
    let n: u32 = 1 << 24;
    let buf = drv.alloc(n as usize * 4).unwrap();

    let mut s = match early {
        Some(s) => s,
        None => records_session(libs.cupti),
    };
    // Warm-up (module load / first launch), not attributed.
    k.fill(buf.ptr, n);
    drv.synchronize().unwrap();
    let _ = s.flush().unwrap();

    // Region A: 3 kernels on this thread, 2 from a second thread while A is open.
    let a_id = encode_region_key(0, 0, 0, 1).unwrap();
    let t0 = s.timestamp_ns().unwrap();
    s.push_external_id(a_id).unwrap();
    let nvtx = kprof::nvtx::push_range("regionA").unwrap();
    for _ in 0..3 {
        k.fill(buf.ptr, n);
    }
    let k2 = k.clone();
    let ctx_addr = ctx as usize;
    let ptr = buf.ptr;
    std::thread::spawn(move || {
        assert_eq!(unsafe { setcur(ctx_addr as *mut c_void) }, 0);
        k2.fill(ptr, n);
        k2.fill(ptr, n);
    })
    .join()
    .unwrap();
    drop(nvtx);
    assert_eq!(s.pop_external_id().unwrap(), a_id);
    let t1 = s.timestamp_ns().unwrap();
    k.fill(buf.ptr, n); // outside every region
    drv.synchronize().unwrap();
    let batch = s.flush().unwrap_or_else(|e| panic!("{e}"));
    let regions = [RegionSpan {
        id: a_id,
        parent: None,
        thread_id: current_thread_id(),
        start_ns: t0,
        end_ns: t1,
        start_correlation_id: 0,
        end_correlation_id: 0,
    }];
    s.record_regions(&regions).unwrap();
    eprintln!(
        "batch: {} kernels, {} launches, {} external",
        batch.kernels.len(),
        batch.launches.len(),
        batch.external.len()
    );
    for kr in &batch.kernels {
        eprintln!("  {} corr {} {} ns", kr.name, kr.correlation_id, kr.duration_ns());
    }
    for l in &batch.launches {
        eprintln!(
            "  launch cbid {} corr {} tid {} t {}",
            l.cbid, l.correlation_id, l.thread_id, l.start_ns
        );
    }
    assert_eq!(batch.kernels.len(), 6);
    let att = attribute(&batch, &regions);
    assert_eq!(att.by_region[&a_id].len(), 5);
    assert_eq!(
        (att.direct_via[&a_id].external, att.direct_via[&a_id].launch_time),
        (3, 2)
    );
    assert_eq!(att.unattributed.len(), 1);
    let bytes = n as f64 * 4.0;
    for kr in &att.by_region[&a_id] {
        eprintln!(
            "  fill 64 MiB: {} ns = {:.0} GB/s",
            kr.duration_ns(),
            bytes / kr.duration_ns() as f64
        );
    }

    // 100,000 small kernels in one run: no record may be dropped.
    let b_id = encode_region_key(0, 0, 1, 1).unwrap();
    let wall = std::time::Instant::now();
    s.push_external_id(b_id).unwrap();
    for _ in 0..100_000 {
        k.empty();
    }
    s.pop_external_id().unwrap();
    let host = wall.elapsed();
    drv.synchronize().unwrap();
    let batch = s.flush().unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "100k empty kernels ({:?}): {} kernel records, {} launches, host {:.2} us/launch vs {:.2} \
         without a session",
        s.launch_records(),
        batch.kernels.len(),
        batch.launches.len(),
        host.as_secs_f64() * 1e6 / 100_000.0,
        base.as_secs_f64() * 1e6 / 100_000.0
    );
    assert_eq!(batch.kernels.len(), 100_000);
    let att = attribute(&batch, &[]);
    assert_eq!(att.by_region[&b_id].len(), 100_000);
    s.stop().unwrap();

    // A second session in the same process works (subscriber released).
    let s2 = records_session(libs.cupti);
    drop(s2);
    drv.free(buf).unwrap();
}
