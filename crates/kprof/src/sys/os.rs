//! The libc calls the engine and its front ends make, as safe functions.

/// The OS thread id (`gettid`) of the calling thread, as CUPTI records and region spans use it.
pub fn thread_id() -> u32 {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// The real user id of the process (`getuid`).
pub fn real_uid() -> u32 {
    // SAFETY: getuid takes no argument and cannot fail.
    unsafe { libc::getuid() }
}

/// The effective user id of the process (`geteuid`; 0 for root).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no argument and cannot fail.
    unsafe { libc::geteuid() }
}

/// `CLOCK_REALTIME` in nanoseconds since the epoch.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Registers `f` to run at normal process exit (`atexit`); `false` when libc refused.
pub fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: `f` is a plain function with the signature atexit expects; it stays valid for the
    // life of the process (it is code, not a closure).
    unsafe { libc::atexit(f) == 0 }
}
