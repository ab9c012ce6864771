//! The warnings a bench call gives once about its flushed batches ([`BatchWarnings`]): CUDA-graph
//! kernels without timestamps, graphs timed under CUPTI or from their node records, kernels
//! attributed by launch order across threads, and the CUDA-events backend's stream hold dropped.

use super::super::stream_hold::HOLD_TIMEOUT;
use super::super::{Backend, Collected};

/// Which of the once-per-call warnings about flushed batches were given.
#[derive(Default)]
pub(super) struct Warned {
    /// CUDA-graph kernels without timestamps.
    untimed: bool,
    /// Graphs instantiated before the session (also said by `Profiler::resolve_auto`).
    pub(super) old_graphs: bool,
    /// Kernels attributed by launch order while regions of several threads were open.
    ambiguous: bool,
    /// The CUDA-events backend's stream hold dropped.
    hold: bool,
}

/// What the batch warnings use of the bench call and the profiler.
pub(super) struct BatchWarnings<'a> {
    pub(super) name: &'a str,
    pub(super) warned: &'a mut Warned,
    /// The backend's count of graph launches timed from node records when the call started.
    pub(super) old_graph_launches_at_start: u64,
    pub(super) backend: &'a dyn Backend,
    /// Whether the note that CUPTI slows the CUDA graphs it times was given (once per profiler).
    pub(super) warned_graphs_under_cupti: &'a mut bool,
    pub(super) warnings: &'a mut Vec<String>,
}

impl BatchWarnings<'_> {
    /// Gives the warnings that the batch `collected` calls for and were not given yet.
    pub(super) fn give(mut self, collected: &Collected) {
        self.untimed(collected);
        self.graphs(collected);
        self.threads_and_hold(collected);
    }

    /// CUDA-graph kernels that came without timestamps.
    fn untimed(&mut self, collected: &Collected) {
        let untimed = collected
            .by_region
            .values()
            .flatten()
            .filter(|k| k.is_untimed())
            .count();
        if untimed > 0 && !self.warned.untimed {
            self.warned.untimed = true;
            self.warnings.push(format!(
                "{}: {untimed} kernel(s) of CUDA graphs came without timestamps and count as 0 ns: this CUPTI did not \
                 trace graph launches as a whole (GRAPH_TRACE records) and serial kernel records do not time graph \
                 nodes; set KPROF_KERNEL_TRACE=concurrent to time the nodes (the graph's span is then taken from them)",
                self.name
            ));
        }
    }

    /// CUDA graphs timed with CUPTI attached, or from the node records of graphs instantiated
    /// before the session.
    fn graphs(&mut self, collected: &Collected) {
        let graphs_in_regions = collected.by_region.values().flatten().any(|k| k.graph);
        // Graphs instantiated before the session, launched in this call (the count is the
        // process's: an earlier benchmark's old graphs say nothing of this one's).
        let old_graphs = collected.graph_launches_from_nodes > self.old_graph_launches_at_start && graphs_in_regions;
        if graphs_in_regions && !old_graphs && !*self.warned_graphs_under_cupti {
            // Said once per profiler: every graph this backend times runs with CUPTI attached.
            *self.warned_graphs_under_cupti = true;
            let start = match self.backend.graph_start_ns() {
                Some(Some(ns)) => format!(
                    "each launch's span includes the GPU's start of a graph, {:.2} us measured on kprof's own graph",
                    ns as f64 / 1e3
                ),
                _ => "the GPU's start of a graph (a few microseconds per launch) could not be measured and is left \
                      out of the spans"
                    .to_string(),
            };
            self.warnings.push(format!(
            "{}: CUDA graph replays are timed from CUPTI's records of them, as the graph runs with CUPTI \
                 attached, which slows graphs (a few percent for graphs of one stream, up to about a fifth for \
                 graphs captured from several streams: docs/timing.md); {start}: for a graph's span without CUPTI use the CUDA-events backend (Python \
                 backend='cuda-events', Rust Profiler::with_cuda_events()) in a process where kprof's CUPTI session \
                 has not started",
            self.name
        ));
        }
        if old_graphs && !self.warned.old_graphs {
            self.warned.old_graphs = true;
            self.warnings.push(format!(
                "{}: CUDA graph(s) instantiated before kprof's CUPTI session started were timed from their node \
                 records (CUPTI 13.0 crashes on graph records of such graphs): their nodes run instrumented, which \
                 reads a few percent long (up to about a fifth for one captured from several streams: \
                 docs/timing.md); graphs captured after the first benchmark started get their graph records instead \
                 (within 3 % from one stream). CUPTI slows graphs while it is attached: for a graph's span without \
                 it, use the CUDA-events backend (Python backend='cuda-events', Rust Profiler::with_cuda_events()) \
                 in a process where kprof's CUPTI session has not started",
                self.name
            ));
        }
    }

    /// Kernels attributed by launch order across threads; the stream hold dropped.
    fn threads_and_hold(&mut self, collected: &Collected) {
        if collected.ambiguous > 0 && !self.warned.ambiguous {
            self.warned.ambiguous = true;
            self.warnings.push(format!(
                "{}: {} kernel(s) were launched while regions of more than one thread were open; attributed by launch \
                 order, each went to the region opened last, whichever thread launched it: set \
                 attribution='records' (Python kprof.configure, Rust TraceOptions, KPROF_ATTRIBUTION=records) to \
                 attribute each thread's launches to its own regions (costs the launch API records, 0.2-0.5 us per \
                 launch)",
                self.name, collected.ambiguous
            ));
        }
        if collected.hold_dropped > 0 && !self.warned.hold {
            self.warned.hold = true;
            self.warnings.push(format!(
                "{}: two regions in a row were still open {} ms after the CUDA-events backend held the stream for \
                 them (they wait for the GPU inside, e.g. a synchronization or a blocking copy, queue more launches \
                 than the stream's queue holds, or take that long to queue): the rest of this benchmark is timed \
                 without the hold, so the host's launch gaps inside a region count in its time",
                self.name,
                HOLD_TIMEOUT.as_millis()
            ));
        }
    }
}
