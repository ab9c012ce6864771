//! A cold cache before every kernel of a counter pass, as Nsight Compute's `--cache-control all`
//! gives every kernel it profiles (with one flush per region, the kernels after a region's first
//! find their inputs in the L2, and read shorter than ncu, whose per-kernel values nsight-python
//! users compare with: `docs/python-differences.md`, `cache_control`). While a pass runs with a
//! cold cache, the activity session's subscriber gets the kernel launch callbacks and flushes at
//! the entry of each (`on_callback`); [`kernel_ranges`] maps the pass's launch log onto its
//! ranges and keeps the user's kernels.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::cupti::graph_guard;
use crate::error::EngineError;
use crate::lock;
use crate::sys::cupti::callback::Callback;
use crate::sys::cupti::{cbid, API_ENTER, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RUNTIME_API};

/// One launch of a counter pass, in launch order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassLaunch {
    /// A flush before the next kernel: this many kernels of kprof's (0 for a memset flush, or for
    /// a wait without a flush: a warm counter pass that rests between kernels, `runner::gpu_rest`).
    Flush(u32),
    /// A kernel of the user's.
    Kernel,
    /// A CUDA graph launch (the Range Profiler gives it no range or one).
    Graph,
}

/// What a counter pass that flushed before every kernel launched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassLaunches {
    /// The launches in order.
    pub launches: Vec<PassLaunch>,
    /// The first flush that failed (the pass's values are then not used).
    pub failure: Option<String>,
}

/// The flush the hook runs before every kernel (or a wait without a flush): the number of kernels
/// it launched.
pub type FlushHook = Box<dyn Fn() -> Result<u32, EngineError> + Send + Sync>;

static HOOK: Mutex<Option<FlushHook>> = Mutex::new(None);
static ARMED: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Vec<PassLaunch>> = Mutex::new(Vec::new());
/// The first flush that failed during the pass (the pass's values are then not used).
static FAILURE: Mutex<Option<String>> = Mutex::new(None);
/// Stream captures begun and not ended since the hook was armed.
static CAPTURES: AtomicI64 = AtomicI64::new(0);
/// How many times the hook was armed: a thread's launch depth counts only within one arming (a
/// launch in flight on another thread when the hook was disarmed never saw its exit counted).
static ARMING: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Traced launch calls open on this thread (a runtime launch and the driver call inside it),
    /// with the arming they were counted in.
    static DEPTH: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
    /// Whether this thread is running the flush hook (its own launches are not the user's).
    static FLUSHING: Cell<bool> = const { Cell::new(false) };
}

/// Driver-API launches of kernels (graph launches are logged, not flushed).
pub const DRIVER_KERNEL_LAUNCHES: [u32; 6] = [
    cbid::CU_LAUNCH_KERNEL,
    cbid::CU_LAUNCH_KERNEL_PTSZ,
    cbid::CU_LAUNCH_COOPERATIVE_KERNEL,
    cbid::CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
    cbid::CU_LAUNCH_KERNEL_EX,
    cbid::CU_LAUNCH_KERNEL_EX_PTSZ,
];
/// Runtime-API launches of kernels (cuBLAS 13 launches through `cudaLaunchKernelExC` with no
/// traced driver call).
pub const RUNTIME_KERNEL_LAUNCHES: [u32; 11] = [
    cbid::CUDA_LAUNCH,
    cbid::CUDA_LAUNCH_KERNEL,
    cbid::CUDA_LAUNCH_PTSZ,
    cbid::CUDA_LAUNCH_KERNEL_PTSZ,
    cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL,
    cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
    cbid::CUDA_LAUNCH_COOPERATIVE_KERNEL_MULTI_DEVICE,
    cbid::CUDA_LAUNCH_KERNEL_EX_C,
    cbid::CUDA_LAUNCH_KERNEL_EX_C_PTSZ,
    cbid::CUDA_LAUNCH_KERNEL_INTERNAL,
    cbid::CUDA_LAUNCH_KERNEL_INTERNAL_PTSZ,
];
/// Runtime-API graph launches (their driver calls are logged as [`PassLaunch::Graph`]).
pub const RUNTIME_GRAPH_LAUNCHES: [u32; 2] = [cbid::CUDA_GRAPH_LAUNCH, cbid::CUDA_GRAPH_LAUNCH_PTSZ];

/// Starts flushing before every kernel launch with `flush`, with an empty log. The caller enables
/// the callbacks (driver and runtime launches, stream capture begin and end).
pub(crate) fn arm(flush: FlushHook) {
    *lock(&HOOK) = Some(flush);
    lock(&LOG).clear();
    lock(&FAILURE).take();
    CAPTURES.store(0, Ordering::SeqCst);
    ARMING.fetch_add(1, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
}

/// Stops flushing: the pass's launches in order, and the first flush failure.
pub(crate) fn disarm() -> PassLaunches {
    ARMED.store(false, Ordering::SeqCst);
    lock(&HOOK).take();
    PassLaunches {
        launches: std::mem::take(&mut *lock(&LOG)),
        failure: lock(&FAILURE).take(),
    }
}

/// Handles a launch or capture callback while armed. At the entry of a kernel launch not nested
/// in another traced launch (the runtime's `cudaLaunchKernel` calls the driver's
/// `cuLaunchKernel`) it runs the flush hook of [`arm`] (the pass's L2 flush, which ends with a
/// context synchronization, so the flush has finished before the kernel is queued) and logs the
/// launch after the kernels the flush launched. Launches while a stream capture is open are
/// recorded into a graph, not run: they are neither flushed nor logged.
pub(crate) fn on_callback(callback: &Callback<'_>) {
    if !ARMED.load(Ordering::SeqCst) || FLUSHING.with(Cell::get) {
        return;
    }
    let (domain, id) = (callback.domain(), callback.cbid());
    let Some(api) = callback.api() else { return };
    let enter = api.callbackSite == API_ENTER;
    let driver = domain == CB_DOMAIN_DRIVER_API;
    let runtime = domain == CB_DOMAIN_RUNTIME_API;
    if (driver && cbid::BEGIN_CAPTURE_CBIDS.contains(&id))
        || (runtime && cbid::RUNTIME_BEGIN_CAPTURE_CBIDS.contains(&id))
    {
        if enter {
            CAPTURES.fetch_add(1, Ordering::SeqCst);
        }
        return;
    }
    if (driver && cbid::END_CAPTURE_CBIDS.contains(&id)) || (runtime && cbid::RUNTIME_END_CAPTURE_CBIDS.contains(&id)) {
        if enter {
            CAPTURES.fetch_sub(1, Ordering::SeqCst);
        }
        return;
    }
    let graph =
        driver && graph_guard::GRAPH_LAUNCH_CBIDS.contains(&id) || runtime && RUNTIME_GRAPH_LAUNCHES.contains(&id);
    let kernel = driver && DRIVER_KERNEL_LAUNCHES.contains(&id) || runtime && RUNTIME_KERNEL_LAUNCHES.contains(&id);
    if !graph && !kernel {
        return;
    }
    let arming = ARMING.load(Ordering::SeqCst);
    let depth = match DEPTH.with(Cell::get) {
        (a, d) if a == arming => d,
        _ => 0,
    };
    if !enter {
        DEPTH.with(|d| d.set((arming, depth.saturating_sub(1))));
        return;
    }
    DEPTH.with(|d| d.set((arming, depth + 1)));
    if depth > 0 || CAPTURES.load(Ordering::SeqCst) > 0 {
        return;
    }
    if graph {
        lock(&LOG).push(PassLaunch::Graph);
        return;
    }
    FLUSHING.with(|f| f.set(true));
    let flushed = lock(&HOOK).as_ref().map(|flush| flush());
    FLUSHING.with(|f| f.set(false));
    let mut log = lock(&LOG);
    match flushed {
        Some(Ok(kernels)) => log.push(PassLaunch::Flush(kernels)),
        Some(Err(e)) => {
            lock(&FAILURE).get_or_insert_with(|| format!("L2 flush before a kernel of the counter pass failed: {e}"));
        }
        None => {}
    }
    log.push(PassLaunch::Kernel);
}

/// Which of a pass's `ranges` Range Profiler ranges are the user's kernels, in order, given the
/// pass's launch log (the Range Profiler gives every kernel of the pass a range, flush kernels
/// included, in launch order): every flush kernel and a graph launch's range are left out. A graph launch
/// gives either one range or none (both seen on the H200); `None` when the ranges fit neither
/// (a launch the callbacks did not see, or a closure that launched other kernels).
pub fn kernel_ranges(log: &[PassLaunch], ranges: usize) -> Option<Vec<usize>> {
    for graphs_have_ranges in [true, false] {
        let mut kinds = Vec::new();
        for item in log {
            match *item {
                PassLaunch::Flush(k) => kinds.extend(std::iter::repeat_n(false, k as usize)),
                PassLaunch::Kernel => kinds.push(true),
                PassLaunch::Graph if graphs_have_ranges => kinds.push(false),
                PassLaunch::Graph => {}
            }
        }
        if kinds.len() == ranges {
            return Some(kinds.iter().enumerate().filter(|(_, k)| **k).map(|(i, _)| i).collect());
        }
        if !log.contains(&PassLaunch::Graph) {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{kernel_ranges, PassLaunch::*};

    #[test]
    fn flush_kernels_and_graph_ranges_are_left_out_in_launch_order() {
        // Two kernels, each after a flush of two kernels (instruction cache, L2 read).
        let log = [Flush(2), Kernel, Flush(2), Kernel];
        assert_eq!(kernel_ranges(&log, 6), Some(vec![2, 5]));
        // A memset flush launches no kernel.
        assert_eq!(
            kernel_ranges(&[Flush(0), Kernel, Flush(0), Kernel], 2),
            Some(vec![0, 1])
        );
        // A graph launch between them, with a range of its own or without one.
        let log = [Flush(2), Kernel, Graph, Flush(2), Kernel];
        assert_eq!(kernel_ranges(&log, 7), Some(vec![2, 6]));
        assert_eq!(kernel_ranges(&log, 6), Some(vec![2, 5]));
        // Ranges the log cannot account for: not mapped.
        assert_eq!(kernel_ranges(&log, 8), None);
        assert_eq!(kernel_ranges(&[Flush(2), Kernel], 2), None);
        assert_eq!(kernel_ranges(&[], 0), Some(vec![]));
    }
}
