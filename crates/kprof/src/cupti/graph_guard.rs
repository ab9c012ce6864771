//! Graph records without the crash: CUDA graph executables instantiated during the activity session
//! are traced as a whole (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`); a launch of one instantiated before
//! the session runs with graph trace switched off, so its nodes come as kernel records and its span
//! is merged from them ([`crate::attribution::work_items`]). The guard also counts graph launches
//! (to size counter passes) and keeps CUPTI attached while an executable instantiated under it may
//! be alive.
//!
//! Why, how and what it costs (measured on the H200): `docs/architecture.md` (CUDA graphs: graph
//! records and the graph guard); the limits users meet: `docs/timing.md` (Known limits).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::cupti::collector::switch_kind;
use crate::cupti::library::Cupti;
use crate::lock;
use crate::sys::cupti::callback::Callback;
use crate::sys::cupti::{cbid, ACTIVITY_KIND_GRAPH_TRACE, API_ENTER as SITE_ENTER};
pub use crate::sys::cupti::{
    CBID_RESOURCE_GRAPHEXEC_CREATED, CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RESOURCE,
};

/// The driver callbacks of graph launches.
pub const GRAPH_LAUNCH_CBIDS: [u32; 2] = [cbid::CU_GRAPH_LAUNCH, cbid::CU_GRAPH_LAUNCH_PTSZ];

/// When graph trace is switched, as a state machine without CUPTI (unit-tested below): each
/// method returns `Some(on)` when graph trace must be switched on (`true`) or off (`false`).
#[derive(Debug)]
struct TraceSwitch {
    /// Whether graph trace is on now (it is when the session starts).
    on: bool,
    /// Launches of older executables in flight (graph trace stays off while this is > 0).
    old_launches_open: u32,
    /// Whether graph trace stays off after such a launch (during a benchmark).
    lazy: bool,
}

impl TraceSwitch {
    fn new() -> TraceSwitch {
        TraceSwitch {
            on: true,
            old_launches_open: 0,
            lazy: true,
        }
    }

    /// A benchmark starts (`true`: graph trace may stay off between launches) or ends.
    fn set_lazy(&mut self, lazy: bool) -> Option<bool> {
        self.lazy = lazy;
        if lazy {
            None
        } else {
            self.trace_wanted()
        }
    }

    /// The entry of a launch of an executable from before the session: graph trace off.
    fn old_launch_enters(&mut self) -> Option<bool> {
        self.old_launches_open += 1;
        self.set(false)
    }

    /// The exit of such a launch: during a benchmark graph trace stays off (a loop of them
    /// switches once), between benchmarks it comes back on.
    fn old_launch_exits(&mut self) -> Option<bool> {
        self.old_launches_open = self.old_launches_open.saturating_sub(1);
        if self.lazy {
            None
        } else {
            self.trace_wanted()
        }
    }

    /// The entry of a launch of an executable of the session, or a flush of the records: graph
    /// trace back on, unless an older executable's launch is in flight.
    fn trace_wanted(&mut self) -> Option<bool> {
        if self.old_launches_open > 0 {
            return None;
        }
        self.set(true)
    }

    /// Whether an executable created now was instantiated with graph trace on (else it is
    /// treated as one from before the session).
    fn created_with_trace(&self) -> bool {
        self.on
    }

    fn set(&mut self, on: bool) -> Option<bool> {
        if self.on == on {
            return None;
        }
        self.on = on;
        Some(on)
    }
}

/// What the callbacks know, while a session traces graphs as a whole.
struct Guard {
    cupti: &'static Cupti,
    /// Executables (`CUgraphExec` addresses) instantiated since the session started, with graph
    /// trace on, and how many Range Profiler sessions had been enabled when each was.
    created: HashMap<usize, u64>,
    /// Whether graph trace is on, and the launches of older executables in flight.
    switch: TraceSwitch,
    /// How many launches ran with graph trace switched off (reported in the fingerprint).
    old_launches: u64,
}

impl Guard {
    fn apply(&self, action: Option<bool>) {
        if let Some(on) = action {
            switch_kind(self.cupti, ACTIVITY_KIND_GRAPH_TRACE, on);
        }
    }
}

static GUARD: Mutex<Option<Guard>> = Mutex::new(None);
/// Graph executables the guard saw instantiated and not yet destroyed. One instantiated while
/// CUPTI is attached fails (`CUDA_ERROR_LAUNCH_FAILED`) when launched after `cuptiFinalize` (torch
/// graphs captured during a benchmark, on the H200, CUPTI 13.0), so kprof does not
/// detach CUPTI while any is alive.
static LIVE_UNDER_CUPTI: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
/// Whether graph executables may have been instantiated while kprof had CUPTI attached without
/// the guard seeing them: a session ran without the guard, or CUPTI stayed attached after one.
static UNSEEN_UNDER_CUPTI: AtomicBool = AtomicBool::new(false);
/// Whether the fast path may skip the lock (no session traces graphs as a whole).
static ARMED: AtomicBool = AtomicBool::new(false);
/// Graph launches seen by the callbacks of any session, to size counter passes: a Range Profiler
/// pass in application replay whose graph launches overflow its counter-data image crashes the
/// process inside CUPTI 13.0 (H200: 130 replays of a one-node graph in a region with
/// an image of 64 ranges), where eager kernels are dropped and counted.
static GRAPH_LAUNCHES_SEEN: AtomicU64 = AtomicU64::new(0);
/// Successful `cuptiRangeProfilerEnable` calls in this process ([`note_range_profiler_enabled`]).
static RANGE_PROFILER_ENABLES: AtomicU64 = AtomicU64::new(0);
/// Launches of the session's graph executables instantiated before the latest Range Profiler
/// enable.
static LAUNCHES_BEFORE_COUNTERS: AtomicU64 = AtomicU64::new(0);

/// Counts a Range Profiler session enabled (`counters::range` calls it): CUDA graphs instantiated
/// before the latest enable run faster than in a process without a profiler once it is on (H200,
/// a graph of 200 one-block kernels 168.8 µs by CUDA events against 205.0 before the
/// enable and 203-210 without a profiler; 20 replays of a ten-kernel graph after an enable anew
/// 456 against 494 µs), so launches of such graphs are counted
/// ([`launches_instantiated_before_counters`]).
pub(crate) fn note_range_profiler_enabled() {
    RANGE_PROFILER_ENABLES.fetch_add(1, Ordering::SeqCst);
}

/// Starts guarding graph launches for a session with graph trace on. The caller enables the
/// callbacks ([`CB_DOMAIN_RESOURCE`] / [`CBID_RESOURCE_GRAPHEXEC_CREATED`] and the driver's
/// [`GRAPH_LAUNCH_CBIDS`]).
pub(crate) fn arm(cupti: &'static Cupti) {
    *lock(&GUARD) = Some(Guard {
        cupti,
        created: HashMap::new(),
        switch: TraceSwitch::new(),
        old_launches: 0,
    });
    ARMED.store(true, Ordering::SeqCst);
}

/// Switches graph trace back on if a launch of an older executable left it off and none is in
/// flight: called when the session flushes its records, so that executables instantiated
/// between runs are traced as a whole.
pub(crate) fn restore_graph_trace() {
    if !ARMED.load(Ordering::SeqCst) {
        return;
    }
    if let Some(g) = lock(&GUARD).as_mut() {
        let action = g.switch.trace_wanted();
        g.apply(action);
    }
}

/// A benchmark starts (`false`) or ends (`true`): between benchmarks graph trace comes back on
/// at the exit of each launch of an older executable, so that executables the program
/// instantiates between benchmarks are traced as a whole.
pub(crate) fn set_between_benchmarks(between: bool) {
    if !ARMED.load(Ordering::SeqCst) {
        return;
    }
    if let Some(g) = lock(&GUARD).as_mut() {
        let action = g.switch.set_lazy(!between);
        g.apply(action);
    }
}

/// Stops guarding (the session ends).
pub(crate) fn disarm() {
    ARMED.store(false, Ordering::SeqCst);
    lock(&GUARD).take();
}

/// How many graph launches of executables instantiated before the session ran with graph trace
/// off (their spans merged from node records) since the session started.
pub(crate) fn old_launches() -> u64 {
    lock(&GUARD).as_ref().map_or(0, |g| g.old_launches)
}

/// Notes that graph executables may have been instantiated while kprof had CUPTI attached without
/// the guard seeing them (see [`graph_execs_under_cupti`]).
pub(crate) fn note_unseen_graph_execs() {
    UNSEEN_UNDER_CUPTI.store(true, Ordering::SeqCst);
}

/// Whether a graph executable instantiated while kprof had CUPTI attached may still be alive
/// (one the guard saw created and not destroyed, or any it could not see); kprof then leaves
/// CUPTI attached (such executables fail after `cuptiFinalize`).
pub fn graph_execs_under_cupti() -> bool {
    UNSEEN_UNDER_CUPTI.load(Ordering::SeqCst) || lock(&LIVE_UNDER_CUPTI).as_ref().is_some_and(|l| !l.is_empty())
}

/// Remembers an executable instantiated while CUPTI is attached (`true`) or forgets a destroyed
/// one (`false`).
fn track_live(exec: usize, created: bool) {
    let mut live = lock(&LIVE_UNDER_CUPTI);
    let set = live.get_or_insert_with(HashSet::new);
    if created {
        set.insert(exec);
    } else {
        set.remove(&exec);
    }
}

/// Launches of graph executables of the session that were instantiated before the latest Range
/// Profiler session was enabled (they run faster than without a profiler: see
/// [`note_range_profiler_enabled`]).
pub(crate) fn launches_instantiated_before_counters() -> u64 {
    LAUNCHES_BEFORE_COUNTERS.load(Ordering::SeqCst)
}

/// Graph launches the sessions' callbacks have seen in this process (at their entry).
pub(crate) fn graph_launches_seen() -> u64 {
    GRAPH_LAUNCHES_SEEN.load(Ordering::SeqCst)
}

/// Handles a CUPTI callback if it is a graph-executable creation or a graph launch.
pub(crate) fn on_callback(callback: &Callback<'_>) {
    if !callback.has_data() {
        return;
    }
    let (domain, id) = (callback.domain(), callback.cbid());
    if domain == CB_DOMAIN_DRIVER_API
        && GRAPH_LAUNCH_CBIDS.contains(&id)
        && callback.api().is_some_and(|cb| cb.callbackSite == SITE_ENTER)
    {
        GRAPH_LAUNCHES_SEEN.fetch_add(1, Ordering::SeqCst);
    }
    if !ARMED.load(Ordering::SeqCst) {
        return;
    }
    if domain == CB_DOMAIN_RESOURCE && id == CBID_RESOURCE_GRAPHEXEC_CREATED {
        // The executable, from the graph data of the resource callback (none: it cannot be
        // followed, so kprof will not detach CUPTI).
        let Some(exec) = callback.created_graph_exec() else {
            note_unseen_graph_execs();
            return;
        };
        track_live(exec, true);
        if let Some(g) = lock(&GUARD).as_mut() {
            if g.switch.created_with_trace() {
                g.created.insert(exec, RANGE_PROFILER_ENABLES.load(Ordering::SeqCst));
            }
        }
        return;
    }
    if domain == CB_DOMAIN_RESOURCE && id == CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING {
        if let Some(exec) = callback.destroyed_graph_exec() {
            track_live(exec, false);
            // Its address may come back for a later executable, instantiated before a session.
            if let Some(g) = lock(&GUARD).as_mut() {
                g.created.remove(&exec);
            }
        }
        return;
    }
    if domain != CB_DOMAIN_DRIVER_API || !GRAPH_LAUNCH_CBIDS.contains(&id) {
        return;
    }
    let Some(cb) = callback.api() else { return };
    // The executable launched (no launch parameters: nothing to do).
    let Some(exec) = callback.launched_graph_exec() else {
        return;
    };
    let mut guard = lock(&GUARD);
    let Some(g) = guard.as_mut() else { return };
    let entry = cb.callbackSite == SITE_ENTER;
    if let Some(&enables) = g.created.get(&exec) {
        if entry {
            if enables < RANGE_PROFILER_ENABLES.load(Ordering::SeqCst) {
                LAUNCHES_BEFORE_COUNTERS.fetch_add(1, Ordering::SeqCst);
            }
            let action = g.switch.trace_wanted();
            g.apply(action);
        }
        return;
    }
    // An older executable: CUDA calls the exit callback of a call whose entry it called, so the
    // count of those in flight returns to zero.
    if entry {
        g.old_launches += 1;
        let action = g.switch.old_launch_enters();
        g.apply(action);
    } else {
        let action = g.switch.old_launch_exits();
        g.apply(action);
    }
}

#[cfg(test)]
mod tests {
    use super::TraceSwitch;

    #[test]
    fn a_loop_of_older_launches_switches_graph_trace_once() {
        let mut s = TraceSwitch::new();
        assert_eq!(s.old_launch_enters(), Some(false));
        assert_eq!(s.old_launch_exits(), None);
        for _ in 0..5 {
            assert_eq!(s.old_launch_enters(), None);
            assert_eq!(s.old_launch_exits(), None);
        }
        // The flush (or a launch of the session's executable) switches it back on, once.
        assert_eq!(s.trace_wanted(), Some(true));
        assert_eq!(s.trace_wanted(), None);
    }

    #[test]
    fn graph_trace_stays_off_while_an_older_launch_is_in_flight() {
        let mut s = TraceSwitch::new();
        assert_eq!(s.old_launch_enters(), Some(false));
        assert_eq!(s.old_launch_enters(), None); // a second thread
        s.old_launch_exits();
        assert_eq!(s.trace_wanted(), None, "one older launch is still in flight");
        s.old_launch_exits();
        s.old_launch_exits(); // an unmatched exit does not go below zero
        assert_eq!(s.trace_wanted(), Some(true));
    }

    #[test]
    fn between_benchmarks_graph_trace_comes_back_at_each_exit() {
        let mut s = TraceSwitch::new();
        assert_eq!(s.old_launch_enters(), Some(false));
        assert_eq!(s.old_launch_exits(), None);
        // The benchmark ends with graph trace off: on again.
        assert_eq!(s.set_lazy(false), Some(true));
        assert_eq!(s.old_launch_enters(), Some(false));
        assert_eq!(s.old_launch_exits(), Some(true));
        assert!(s.created_with_trace());
        assert_eq!(s.set_lazy(true), None);
    }

    #[test]
    fn executables_instantiated_while_graph_trace_is_off_count_as_older() {
        let mut s = TraceSwitch::new();
        assert!(s.created_with_trace());
        s.old_launch_enters();
        s.old_launch_exits();
        assert!(!s.created_with_trace(), "left off after the older launch");
        s.trace_wanted();
        assert!(s.created_with_trace());
    }
}
