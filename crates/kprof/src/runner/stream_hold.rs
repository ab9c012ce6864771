//! Holding the stream while a region's work is queued, for the CUDA-events backend: the stream
//! waits on a word of pinned host memory before the start event
//! ([`crate::driver::Driver::hold_stream`]) until the outermost region has exited, so that the
//! events and the work run back to back as NVBench's blocking kernel makes them (events on an idle
//! GPU would time the host's launch gaps too). A watchdog releases a hold after [`HOLD_TIMEOUT`]
//! (a region that waits for the GPU inside); after two such releases in a row the backend stops
//! holding for the rest of the call and the results say so.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::lock;

/// How long a held stream waits for its region to exit before the watchdog releases it.
pub(crate) const HOLD_TIMEOUT: Duration = Duration::from_millis(20);

/// The word the stream waits on: pinned host memory ([`crate::driver::HostWord`]) or, in tests,
/// an atomic.
pub(crate) trait HoldWord: Send + Sync + 'static {
    fn store(&self, value: u32);
}

impl HoldWord for crate::driver::HostWord {
    fn store(&self, value: u32) {
        crate::driver::HostWord::store(self, value)
    }
}

/// The generations of holds and the watchdog that ends a hold nobody released.
pub(crate) struct StreamHold<W: HoldWord> {
    shared: Arc<Shared<W>>,
    timeout: Duration,
    watchdog: Option<JoinHandle<()>>,
}

struct Shared<W> {
    word: W,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// The value of the current (or last) hold: the stream waits until the word reaches it.
    generation: u32,
    /// When the watchdog releases the current hold; `None` when no hold is pending.
    deadline: Option<Instant>,
    stop: bool,
}

impl<W: HoldWord> StreamHold<W> {
    /// Starts the watchdog thread for `word` (which must hold 0); `None` when no thread can be
    /// started (then the backend never holds the stream).
    pub(crate) fn start(word: W, timeout: Duration) -> Option<Self> {
        let shared = Arc::new(Shared {
            word,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let watchdog = std::thread::Builder::new()
            .name("kprof-stream-hold".into())
            .spawn(move || watch(&theirs))
            .ok()?;
        Some(StreamHold {
            shared,
            timeout,
            watchdog: Some(watchdog),
        })
    }

    /// The word the stream is to wait on.
    pub(crate) fn word(&self) -> &W {
        &self.shared.word
    }

    /// Starts a hold: the value the stream must wait for (the word reaching it releases the
    /// stream), with the watchdog armed to release it after the timeout.
    pub(crate) fn arm(&self) -> u32 {
        let mut st = lock(&self.shared.state);
        st.generation = st.generation.wrapping_add(1);
        st.deadline = Some(Instant::now() + self.timeout);
        self.shared.wake.notify_all();
        st.generation
    }

    /// Ends the current hold (the region exited, or the hold could not be queued): stores its
    /// value and disarms the watchdog. Returns whether the watchdog had released it already
    /// (call it once per [`StreamHold::arm`]).
    pub(crate) fn release(&self) -> bool {
        let mut st = lock(&self.shared.state);
        let timed_out = st.deadline.is_none();
        self.shared.word.store(st.generation);
        st.deadline = None;
        timed_out
    }
}

/// The watchdog: releases a hold whose deadline passed.
fn watch<W: HoldWord>(shared: &Shared<W>) {
    let mut st = lock(&shared.state);
    while !st.stop {
        match st.deadline {
            None => st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner()),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    shared.word.store(st.generation);
                    st.deadline = None;
                } else {
                    st = shared
                        .wake
                        .wait_timeout(st, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

impl<W: HoldWord> Drop for StreamHold<W> {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.shared.state);
            // Never leave the stream waiting.
            self.shared.word.store(st.generation);
            st.deadline = None;
            st.stop = true;
            self.shared.wake.notify_all();
        }
        if let Some(t) = self.watchdog.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A word the test can still read after the hold is dropped.
    #[derive(Clone, Default)]
    struct Word(Arc<AtomicU32>);

    impl Word {
        fn load(&self) -> u32 {
            self.0.load(Ordering::SeqCst)
        }
    }

    impl HoldWord for Word {
        fn store(&self, value: u32) {
            self.0.store(value, Ordering::SeqCst)
        }
    }

    #[test]
    fn a_released_hold_stores_its_generation_and_the_watchdog_stays_quiet() {
        let hold = StreamHold::start(Word::default(), Duration::from_secs(5)).unwrap();
        let first = hold.arm();
        assert_eq!(first, 1);
        assert_eq!(hold.word().load(), 0, "armed, not released");
        assert!(!hold.release());
        assert_eq!(hold.word().load(), 1);
        let second = hold.arm();
        assert_eq!(second, 2);
        assert!(!hold.release());
        assert_eq!(hold.word().load(), 2);
    }

    #[test]
    fn the_watchdog_releases_a_hold_nobody_ends() {
        let hold = StreamHold::start(Word::default(), Duration::from_millis(30)).unwrap();
        let t0 = Instant::now();
        let g = hold.arm();
        while hold.word().load() != g {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the watchdog never released the hold"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(t0.elapsed() >= Duration::from_millis(30), "released before its timeout");
        assert!(hold.release(), "the region's exit learns that the watchdog released it");
        // A later hold is timed afresh.
        let g2 = hold.arm();
        assert!(!hold.release(), "a hold released in time is not a timeout");
        assert_eq!(hold.word().load(), g2);
    }

    #[test]
    fn dropping_the_hold_releases_the_stream() {
        let word = Word::default();
        let hold = StreamHold::start(word.clone(), Duration::from_secs(60)).unwrap();
        let g = hold.arm();
        assert_eq!(word.load(), 0);
        drop(hold);
        assert_eq!(word.load(), g, "a dropped hold left the stream waiting");
    }
}
