//! `kprof run --trace`: the timeline of one process of a timing launch (its kernel records on
//! their device and stream, its NVTX ranges on their thread), written at exit as kprof-core's
//! [`Timeline`] in JSON next to the process's results; `kprof run` merges the processes' files
//! into one Chrome trace with kprof-core's writer.

use std::path::{Path, PathBuf};

use kprof::cupti::records::KernelRecord;
use kprof_core::io::trace::{KernelSlice, RegionSlice, Timeline};
use kprof_core::io::{atomic, IoError};

use crate::book::RangeOcc;

/// The timeline file beside a process's status file `kprof-run-<pid>.json`.
pub fn timeline_path(status_json: &Path) -> PathBuf {
    status_json.with_extension("timeline.json")
}

/// The ranges (named `domain@name` outside NVTX's default domain) and kernels of a process.
pub fn timeline(ranges: &[RangeOcc], kernels: &[KernelRecord]) -> Timeline {
    Timeline {
        kernels: kernels
            .iter()
            .map(|k| KernelSlice {
                device: k.device_id,
                stream: k.stream_id,
                name: k.name.clone(),
                start_ns: k.start_ns,
                end_ns: k.end_ns,
                region: String::new(),
                config: String::new(),
                run: 0,
            })
            .collect(),
        regions: ranges
            .iter()
            .map(|r| RegionSlice {
                thread: u64::from(r.thread),
                name: if r.domain.is_empty() {
                    r.name.clone()
                } else {
                    format!("{}@{}", r.domain, r.name)
                },
                start_ns: r.start_ns,
                end_ns: r.end_ns,
                config: String::new(),
                run: 0,
            })
            .collect(),
        counters: Vec::new(),
    }
}

/// Writes the process's timeline at `path` (atomically).
pub fn write_timeline(path: &Path, ranges: &[RangeOcc], kernels: &[KernelRecord]) -> Result<(), IoError> {
    let text = serde_json::to_vec(&timeline(ranges, kernels)).unwrap_or_default();
    atomic::write_bytes(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{kernel, range};

    #[test]
    fn a_process_timeline_keeps_every_kernel_and_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = timeline_path(&dir.path().join("kprof-run-42.json"));
        assert_eq!(path, dir.path().join("kprof-run-42.timeline.json"));
        let mut outer = range(1, None, "step", 100, 900);
        outer.domain = "app".into();
        let ranges = vec![outer, range(2, Some(1), "fwd", 150, 500)];
        let kernels = vec![kernel(1, "gemm", 200, 100), kernel(2, "relu", 600, 50)];
        write_timeline(&path, &ranges, &kernels).unwrap();
        let t: Timeline = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(t.kernels.len(), 2);
        assert_eq!(
            (t.kernels[0].stream, t.kernels[0].start_ns, t.kernels[0].end_ns),
            (7, 200, 300)
        );
        let names: Vec<&str> = t.regions.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["app@step", "fwd"]);
    }
}
