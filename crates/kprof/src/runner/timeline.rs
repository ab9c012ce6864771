//! The timeline of a bench call's recorded runs (`Profiler::take_timeline`): each run's regions
//! and the kernels attributed to them, with their timestamps, device and stream, as kprof-core's
//! [`Timeline`] (written as Chrome trace-event JSON by `kprof_core::io::trace`).

use kprof_core::io::trace::{KernelSlice, RegionSlice, Timeline};

use super::run::SpanRec;
use super::Collected;

/// Adds one recorded run: its closed regions and their kernels (kernels without timestamps
/// included; the writer leaves them out and counts them).
pub(super) fn append(t: &mut Timeline, config: &str, run: u32, spans: &[SpanRec], collected: &Collected) {
    for s in spans {
        let Some(end_ns) = s.end_ns else { continue };
        t.regions.push(RegionSlice {
            thread: s.thread_id,
            name: s.name.clone(),
            start_ns: s.start_ns,
            end_ns,
            config: config.to_string(),
            run,
        });
        for k in collected.by_region.get(&s.key).into_iter().flatten() {
            t.kernels.push(KernelSlice {
                device: k.device,
                stream: k.stream,
                name: k.demangled.clone().unwrap_or_else(|| k.name.clone()),
                start_ns: k.start_ns,
                end_ns: k.end_ns,
                region: s.name.clone(),
                config: config.to_string(),
                run,
            });
        }
    }
}
