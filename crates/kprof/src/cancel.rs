//! Stopping a benchmark from outside it: a [`Cancel`] token that the run loop polls between runs,
//! between the passes of a run and in slices of every wait it makes (the GPU's rests, the thermal
//! guard's cooling), so that a cancelled bench call returns [`EngineError::Cancelled`] within
//! [`SLICE`] of a wait or one pass of the closure, with the runs finished before it kept. The caller
//! sets it ([`Cancel::cancel`]) or gives a poll ([`Cancel::with_poll`]: Python's Ctrl-C); while a
//! bench call runs its token is the thread's current one ([`scope`]), which the engine's waits
//! consult ([`requested`], [`sleep`]), never while the user's workload runs ([`in_workload`]).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::EngineError;

/// The longest a wait of the engine sleeps before it polls the current token again.
pub const SLICE: Duration = Duration::from_millis(10);

type Poll = dyn Fn() -> bool + Send + Sync;

/// A cancellation token: cheap to clone (shared), set once for good.
#[derive(Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    poll: Option<Arc<Poll>>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.flag.load(Ordering::SeqCst))
            .field("poll", &self.poll.is_some())
            .finish()
    }
}

impl Cancel {
    /// A token that only [`Cancel::cancel`] sets.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token that is also set when `poll` returns true (asked on the bench call's thread at
    /// every check: keep it short).
    pub fn with_poll(poll: impl Fn() -> bool + Send + Sync + 'static) -> Cancel {
        Cancel {
            flag: Arc::default(),
            poll: Some(Arc::new(poll)),
        }
    }

    /// Asks the bench call that holds this token (or a clone) to stop.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether the token was set, without asking the poll.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Whether the bench call must stop: the token was set, or its poll says so now (which sets it).
    pub fn is_cancelled(&self) -> bool {
        if self.is_set() {
            return true;
        }
        if self.poll.as_ref().is_some_and(|p| p()) {
            self.cancel();
            return true;
        }
        false
    }

    /// [`EngineError::Cancelled`] when [`Cancel::is_cancelled`].
    pub fn check(&self) -> Result<(), EngineError> {
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Cancel>> = const { RefCell::new(None) };
    /// How many calls of the user's workload this thread is inside ([`in_workload`]).
    static WORKLOAD_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, the user's workload: while it runs, [`requested`] and [`sleep`] on this thread read
/// the current token's flag and never call its poll. The poll may need what the workload's thread
/// gave up (the Python door's poll runs Python code, and a framework releases the GIL around its
/// launches), so a wait inside a CUDA callback of one of the workload's launches reads the flag
/// alone.
pub fn in_workload<R>(f: impl FnOnce() -> R) -> R {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            WORKLOAD_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    WORKLOAD_DEPTH.with(|d| d.set(d.get() + 1));
    let _depth = Depth;
    f()
}

/// While alive, `token` is the current token of this thread; dropping it restores the one before.
#[must_use]
pub struct Scope {
    previous: Option<Cancel>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Makes `token` (none: no token) this thread's current token until the returned guard drops.
pub fn scope(token: Option<&Cancel>) -> Scope {
    let previous = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), token.cloned()));
    Scope { previous }
}

/// Whether this thread's current token (if any) asks to stop; inside the user's workload
/// ([`in_workload`]) only whether it was set.
pub fn requested() -> bool {
    // The poll may re-enter (a Python signal handler); the token is cloned out of the cell first.
    let token = CURRENT.with(|c| c.borrow().clone());
    let in_workload = WORKLOAD_DEPTH.with(Cell::get) > 0;
    token.is_some_and(|t| if in_workload { t.is_set() } else { t.is_cancelled() })
}

/// [`EngineError::Cancelled`] when this thread's current token asks to stop.
pub fn check() -> Result<(), EngineError> {
    if requested() {
        Err(EngineError::Cancelled)
    } else {
        Ok(())
    }
}

/// Sleeps `d` in slices of at most [`SLICE`], polling this thread's current token between them;
/// returns the time slept, less than `d` when the token asked to stop.
pub fn sleep(d: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let left = d.saturating_sub(start.elapsed());
        if left.is_zero() || requested() {
            return start.elapsed().min(d);
        }
        std::thread::sleep(left.min(SLICE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn a_token_set_from_another_thread_ends_a_sleep_within_a_slice() {
        let token = Cancel::new();
        let _scope = scope(Some(&token));
        let setter = token.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            setter.cancel();
        });
        let t0 = Instant::now();
        let slept = sleep(Duration::from_secs(5));
        t.join().unwrap();
        assert!(slept < Duration::from_millis(50) + 3 * SLICE, "slept {slept:?}");
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(matches!(check(), Err(EngineError::Cancelled)));
    }

    #[test]
    fn a_poll_is_asked_between_slices_and_sets_the_token() {
        let asked = Arc::new(AtomicU32::new(0));
        let a = Arc::clone(&asked);
        let token = Cancel::with_poll(move || a.fetch_add(1, Ordering::SeqCst) + 1 >= 3);
        let _scope = scope(Some(&token));
        let slept = sleep(Duration::from_secs(5));
        assert!(slept < 5 * SLICE, "slept {slept:?}");
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        assert!(token.is_set());
        // Once set, the poll is not asked again.
        assert!(requested());
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn inside_the_workload_a_wait_reads_the_flag_and_never_calls_the_poll() {
        let asked = Arc::new(AtomicU32::new(0));
        let a = Arc::clone(&asked);
        let token = Cancel::with_poll(move || {
            a.fetch_add(1, Ordering::SeqCst);
            false
        });
        let _scope = scope(Some(&token));
        in_workload(|| {
            assert_eq!(sleep(2 * SLICE), 2 * SLICE);
            assert!(!requested());
            token.cancel();
            assert!(
                requested(),
                "a token set from outside still stops a wait in the workload"
            );
        });
        assert_eq!(asked.load(Ordering::SeqCst), 0, "the poll ran inside the workload");
        // Outside the workload again, the poll is asked as before (here the token is set already).
        let fresh = Cancel::with_poll({
            let a = Arc::clone(&asked);
            move || a.fetch_add(1, Ordering::SeqCst) > 100
        });
        let _s = scope(Some(&fresh));
        assert!(!requested());
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn without_a_token_a_sleep_is_whole_and_scopes_restore_the_token_before() {
        assert!(!requested());
        assert_eq!(sleep(Duration::from_millis(25)), Duration::from_millis(25));
        let outer = Cancel::new();
        outer.cancel();
        let _o = scope(Some(&outer));
        {
            let _inner = scope(None);
            assert!(!requested());
        }
        assert!(requested());
    }
}
