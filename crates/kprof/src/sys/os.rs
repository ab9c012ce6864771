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

static SIGINT_SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_sigint(_signal: libc::c_int) {
    // Async-signal-safe: one atomic store.
    SIGINT_SEEN.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// While alive, SIGINT (Ctrl-C) does not end this process: it is noted for [`SigintCaught::seen`]
/// instead. Programs the process starts meanwhile get SIGINT's default action back (`exec`
/// resets a caught signal), so a Ctrl-C in the terminal, sent to the whole foreground process
/// group, still reaches them. Dropping it restores the action before.
pub struct SigintCaught {
    previous: Option<libc::sigaction>,
}

impl SigintCaught {
    /// Catches SIGINT from now on (when libc refuses, nothing changes and nothing is noted).
    pub fn install() -> SigintCaught {
        SIGINT_SEEN.store(false, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: both structs are plain C data, zeroed then filled as sigaction(2) expects and
        // valid for the duration of the calls; the handler only stores to an atomic.
        let previous = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let mut previous: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            (libc::sigaction(libc::SIGINT, &action, &mut previous) == 0).then_some(previous)
        };
        SigintCaught { previous }
    }

    /// Whether a SIGINT came since [`SigintCaught::install`].
    pub fn seen(&self) -> bool {
        SIGINT_SEEN.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for SigintCaught {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // SAFETY: `previous` is the action sigaction(2) returned for SIGINT; valid for the call.
            unsafe { libc::sigaction(libc::SIGINT, &previous, std::ptr::null_mut()) };
        }
    }
}
