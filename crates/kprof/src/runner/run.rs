//! One run of a benchmark closure and its regions: [`Run`], [`RegionGuard`], and the spans they
//! record ([`SpanRec`], per run in [`RunState`]) for attribution after the run.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use super::{Backend, FlushSpec};
use crate::error::EngineError;

#[derive(Debug)]
pub(super) struct SpanRec {
    pub(super) name: String,
    pub(super) key: u64,
    pub(super) parent: Option<usize>,
    pub(super) thread_id: u64,
    pub(super) start_ns: u64,
    pub(super) end_ns: Option<u64>,
    /// The backend's launch-order numbers at opening and closing (0: none).
    pub(super) start_correlation_id: u32,
    pub(super) end_correlation_id: u32,
    /// The region's body failed and the failure was ignored: its value is NaN.
    pub(super) failed: bool,
}

#[derive(Default)]
pub(super) struct RunInner {
    spans: Vec<SpanRec>,
    names: HashSet<String>,
    stack: Vec<usize>,
    misuse: Vec<String>,
}

pub(super) struct RunState {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) call: u64,
    pub(super) config: u64,
    pub(super) run: u64,
    pub(super) inner: RefCell<RunInner>,
    /// Annotation-scope info collectors, called on every region enter.
    pub(super) on_enter: Option<crate::conditions::runtime::AnnotationHook>,
    /// Cold cache: flush the L2 (as this says) before every top-level region.
    pub(super) flush_before_regions: Option<FlushSpec>,
    /// The closure asked whether it runs in a counter pass ([`Run::is_counter_pass`]): it times
    /// itself, so its benchmark keeps a timing pass in every recorded run.
    pub(super) asked_counter_pass: std::cell::Cell<bool>,
}

/// One run of a benchmark closure: open regions with [`Run::region`] or [`Run::annotate`].
pub struct Run {
    pub(super) state: Rc<RunState>,
    pub(super) warmup: bool,
    pub(super) run_index: u32,
    /// This call of the closure is a counter pass (its samples are counters, not timings).
    pub(super) counter_pass: bool,
    /// This counter pass is the run's only pass (`runner/one_pass.rs`).
    pub(super) one_pass: bool,
}

/// An open region; the region closes when the guard is dropped. Guards must be dropped in the
/// reverse order of creation, on the thread that created them (the guard is not `Send`).
#[must_use = "the region closes as soon as the guard is dropped"]
pub struct RegionGuard {
    state: Rc<RunState>,
    index: usize,
}

impl Run {
    /// Opens a region named `name`. Kernels launched until the guard is dropped (from this
    /// thread, or from other threads while it is open) are attributed to it. A name may be used
    /// once per run; regions may nest (an outer region includes its inner regions' kernels).
    pub fn region(&mut self, name: &str) -> Result<RegionGuard, EngineError> {
        let st = &self.state;
        let index;
        let key;
        if let Some(hook) = &st.on_enter {
            hook(name);
        }
        if let Some(spec) = st.flush_before_regions.filter(|_| st.inner.borrow().stack.is_empty()) {
            st.backend.flush_l2(spec)?;
        }
        {
            let mut inner = st.inner.borrow_mut();
            if inner.names.contains(name) {
                return Err(EngineError::RegionMisuse(format!(
                    "region {name:?} was opened twice in one run; region names must be unique \
                     within a run (use distinct names, or one region around both parts)"
                )));
            }
            crate::nvtx::validate_region_name(name)?;
            index = inner.spans.len();
            key = st.backend.encode_key(st.call, st.config, st.run, index as u64)?;
            st.backend.enter(key, name)?;
            let parent = inner.stack.last().copied();
            let thread_id = st.backend.thread_id();
            inner.names.insert(name.to_string());
            inner.stack.push(index);
            let start_ns = st.backend.timestamp_ns();
            let start_correlation_id = crate::attribution::opening_number(st.backend.correlation_mark());
            inner.spans.push(SpanRec {
                name: name.to_string(),
                key,
                parent,
                thread_id,
                start_ns,
                end_ns: None,
                start_correlation_id,
                end_correlation_id: 0,
                failed: false,
            });
        }
        Ok(RegionGuard {
            state: Rc::clone(&self.state),
            index,
        })
    }

    /// Runs `f` inside a region named `name` and returns its result.
    pub fn annotate<R>(&mut self, name: &str, f: impl FnOnce(&mut Run) -> R) -> Result<R, EngineError> {
        let guard = self.region(name)?;
        let r = f(self);
        drop(guard);
        Ok(r)
    }

    /// Whether this is a warm-up run (its samples are not recorded).
    pub fn is_warmup(&self) -> bool {
        self.warmup
    }

    /// Whether this call of the closure is a counter pass: with counter metrics, or durations from
    /// the counters (`DurationSource::Auto`, the default, where the counters can be used), every
    /// recorded run calls the closure again for the counters after its timing pass. A closure
    /// that times itself (CUDA events around its work) keeps only the timing pass's numbers: a
    /// benchmark whose closure asks this keeps a timing pass in every recorded run (no one pass).
    pub fn is_counter_pass(&self) -> bool {
        self.state.asked_counter_pass.set(true);
        self.counter_pass
    }

    /// Whether this call of the closure ends a recorded run: its timing pass, or the counter
    /// pass of a run taken in one pass. Progress counts these; nothing is noted.
    pub fn ends_recorded_run(&self) -> bool {
        !self.warmup && (!self.counter_pass || self.one_pass)
    }

    /// The run index (recorded runs and warm-up runs count separately from 0).
    pub fn index(&self) -> u32 {
        self.run_index
    }
}

impl RegionGuard {
    /// Marks the region as failed: its value in this run is recorded as NaN (with a warning)
    /// whatever kernels it launched, and the sweep goes on. For code that catches an error
    /// inside a region on purpose (Python's `annotate(..., ignore_failures=True)`).
    pub fn mark_failed(&self) {
        self.state.inner.borrow_mut().spans[self.index].failed = true;
    }
}

impl Drop for RegionGuard {
    fn drop(&mut self) {
        let st = &self.state;
        let end_correlation_id = st.backend.correlation_mark().unwrap_or(0);
        let end = st.backend.timestamp_ns();
        let mut inner = st.inner.borrow_mut();
        match inner.stack.last() {
            Some(&top) if top == self.index => {
                inner.stack.pop();
            }
            _ => {
                let name = inner.spans[self.index].name.clone();
                inner.misuse.push(format!(
                    "region {name:?} was closed while an inner region was still open; drop \
                     region guards in the reverse order of creation"
                ));
                inner.stack.retain(|&i| i != self.index);
            }
        }
        inner.spans[self.index].end_ns = Some(end);
        inner.spans[self.index].end_correlation_id = end_correlation_id;
        if let Err(e) = st.backend.exit() {
            inner.misuse.push(format!("closing region failed: {e}"));
        }
    }
}

impl RunState {
    /// Closes regions left open (a leaked guard) and returns the spans plus misuse messages.
    pub(super) fn finish(&self) -> (Vec<SpanRec>, Vec<String>) {
        let mut inner = self.inner.borrow_mut();
        let (end, end_correlation_id) = if inner.stack.is_empty() {
            (0, 0)
        } else {
            (
                self.backend.timestamp_ns(),
                self.backend.correlation_mark().unwrap_or(0),
            )
        };
        while let Some(i) = inner.stack.pop() {
            let name = inner.spans[i].name.clone();
            inner.misuse.push(format!(
                "region {name:?} was still open at the end of the run (was its guard leaked?)"
            ));
            inner.spans[i].end_ns = Some(end);
            inner.spans[i].end_correlation_id = end_correlation_id;
            let _ = self.backend.exit();
        }
        (std::mem::take(&mut inner.spans), std::mem::take(&mut inner.misuse))
    }
}
