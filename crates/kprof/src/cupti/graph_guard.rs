//! Graph records without the crash: CUDA graph executables instantiated during the session are
//! traced as a whole (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`); a launch of one instantiated before the
//! session runs with graph trace switched off, so its nodes come as kernel records and its span
//! is merged from them ([`crate::attribution::work_items`]).
//!
//! Why (measured on the H200, CUPTI 13.0, issue 17; `docs/timing.md`): graph records time a graph
//! as CUDA events around its replay do without a profiler (60 kernels: 198.6 vs 202.2 us; the C++
//! program under `kprof run`: 198.4 vs 200.6 us), where node records make every node run
//! instrumented (214.8 us); but with concurrent kernel records on, **replaying a graph that was
//! instantiated before tracing started crashes the process inside CUPTI** (segmentation fault in
//! `cudaGraphLaunch`; torch graphs captured before the first benchmark). CUDA events recorded
//! around each launch from the callback did not help: 229.8 us (records switched off during the
//! launch) and 265.0 us (left on).
//!
//! How: the session subscribes to the resource callbacks `GRAPHEXEC_CREATED` and
//! `GRAPHEXEC_DESTROY_STARTING` (every executable instantiated from then on is remembered until
//! it is destroyed) and to the driver callbacks of `cuGraphLaunch` and
//! `cuGraphLaunch_ptsz` (the runtime's `cudaGraphLaunch` goes through them). At the entry of a
//! launch of an executable it has not seen created, graph trace is switched off; at the exit it is
//! switched back on (when no other such launch is in flight).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// What the callbacks know, while a session traces graphs as a whole.
struct Guard {
    cupti: &'static Cupti,
    /// Executables (`CUgraphExec` addresses) instantiated since the session started.
    created: HashSet<usize>,
    /// Launches of older executables in flight (graph trace is off while this is > 0).
    old_launches_open: u32,
    /// How many launches ran with graph trace switched off (reported in the fingerprint).
    old_launches: u64,
}

static GUARD: Mutex<Option<Guard>> = Mutex::new(None);
/// Graph executables the guard saw instantiated and not yet destroyed. One instantiated while
/// CUPTI is attached fails (`CUDA_ERROR_LAUNCH_FAILED`) when launched after `cuptiFinalize` (torch
/// graphs captured during a benchmark, on the H200, CUPTI 13.0, session 16), so kprof does not
/// detach CUPTI while any is alive.
static LIVE_UNDER_CUPTI: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
/// Whether graph executables may have been instantiated while kprof had CUPTI attached without
/// the guard seeing them: a session ran without the guard, or CUPTI stayed attached after one.
static UNSEEN_UNDER_CUPTI: AtomicBool = AtomicBool::new(false);
/// Whether the fast path may skip the lock (no session traces graphs as a whole).
static ARMED: AtomicBool = AtomicBool::new(false);

/// Starts guarding graph launches for a session with graph trace on. The caller enables the
/// callbacks ([`CB_DOMAIN_RESOURCE`] / [`CBID_RESOURCE_GRAPHEXEC_CREATED`] and the driver's
/// [`GRAPH_LAUNCH_CBIDS`]).
pub(crate) fn arm(cupti: &'static Cupti) {
    *lock(&GUARD) = Some(Guard {
        cupti,
        created: HashSet::new(),
        old_launches_open: 0,
        old_launches: 0,
    });
    ARMED.store(true, Ordering::SeqCst);
}

/// Stops guarding (the session ends).
pub(crate) fn disarm() {
    ARMED.store(false, Ordering::SeqCst);
    lock(&GUARD).take();
}

/// Whether a session guards graph launches now (it has the graph-launch callbacks enabled).
pub(crate) fn is_armed() -> bool {
    ARMED.load(Ordering::SeqCst)
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

/// Handles a CUPTI callback if it is a graph-executable creation or a graph launch.
pub(crate) fn on_callback(callback: &Callback<'_>) {
    if !callback.has_data() || !ARMED.load(Ordering::SeqCst) {
        return;
    }
    let (domain, id) = (callback.domain(), callback.cbid());
    if domain == CB_DOMAIN_RESOURCE && id == CBID_RESOURCE_GRAPHEXEC_CREATED {
        // The executable, from the graph data of the resource callback (none: it cannot be
        // followed, so kprof will not detach CUPTI).
        let Some(exec) = callback.created_graph_exec() else {
            note_unseen_graph_execs();
            return;
        };
        track_live(exec, true);
        if let Some(g) = lock(&GUARD).as_mut() {
            g.created.insert(exec);
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
    if g.created.contains(&exec) {
        return;
    }
    // An older executable: CUDA calls the exit callback of a call whose entry it called, so the
    // count below returns to zero.
    if cb.callbackSite == SITE_ENTER {
        g.old_launches += 1;
        g.old_launches_open += 1;
        if g.old_launches_open == 1 {
            switch_kind(g.cupti, ACTIVITY_KIND_GRAPH_TRACE, false);
        }
    } else {
        g.old_launches_open = g.old_launches_open.saturating_sub(1);
        if g.old_launches_open == 0 {
            switch_kind(g.cupti, ACTIVITY_KIND_GRAPH_TRACE, true);
        }
    }
}
