//! `kprof run --trace FILE`: the timelines every process of the timing launches wrote
//! (`procs/<execution>/kprof-run-<pid>.timeline.json`, see kprof-inject's `trace`), merged into
//! one Chrome trace-event file by kprof-core's writer. Each slice's `config` argument names its
//! execution (`rep0`, `sweep1-rep2`); counter launches (`-counters`) have no timeline.

use std::path::Path;

use anyhow::{bail, Context, Result};
use kprof_core::io::trace::{write_chrome_trace, Timeline};

/// The merged timeline of the executions under `procs`.
pub fn merged(procs: &Path) -> Result<Timeline> {
    let mut out = Timeline::default();
    let mut dirs: Vec<_> = std::fs::read_dir(procs)
        .with_context(|| format!("cannot read {}", procs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && !p.to_string_lossy().ends_with("-counters"))
        .collect();
    dirs.sort();
    for dir in dirs {
        let execution = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<_> = std::fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".timeline.json"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
            let mut t: Timeline =
                serde_json::from_slice(&text).with_context(|| format!("{} is not a kprof timeline", f.display()))?;
            t.kernels.iter_mut().for_each(|k| k.config.clone_from(&execution));
            t.regions.iter_mut().for_each(|r| r.config.clone_from(&execution));
            out.kernels.append(&mut t.kernels);
            out.regions.append(&mut t.regions);
            out.counters.append(&mut t.counters);
        }
    }
    Ok(out)
}

/// Writes the merged timeline of `procs` at `file`; the number of kernels in it.
pub fn write(procs: &Path, file: &Path) -> Result<usize> {
    let t = merged(procs)?;
    if t.kernels.is_empty() && t.regions.is_empty() {
        bail!(
            "--trace: no process wrote a timeline under {} (see the errors above)",
            procs.display()
        );
    }
    write_chrome_trace(file, &t)?;
    Ok(t.kernels.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kprof_core::io::trace::{KernelSlice, RegionSlice};

    fn process_file(dir: &Path, pid: u32, start: u64) {
        let t = Timeline {
            kernels: vec![KernelSlice {
                device: 0,
                stream: 7,
                name: "gemm".into(),
                start_ns: start + 10,
                end_ns: start + 20,
                region: String::new(),
                config: String::new(),
                run: 0,
            }],
            regions: vec![RegionSlice {
                thread: u64::from(pid),
                name: "step".into(),
                start_ns: start,
                end_ns: start + 30,
                config: String::new(),
                run: 0,
            }],
            counters: Vec::new(),
        };
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("kprof-run-{pid}.timeline.json"));
        std::fs::write(path, serde_json::to_vec(&t).unwrap()).unwrap();
    }

    #[test]
    fn the_timing_launches_timelines_merge_into_one_trace() {
        let tmp = tempfile::tempdir().unwrap();
        let procs = tmp.path().join("procs");
        process_file(&procs.join("rep0"), 11, 1_000);
        process_file(&procs.join("rep0"), 12, 1_005);
        process_file(&procs.join("rep1"), 13, 5_000);
        process_file(&procs.join("rep1-counters"), 14, 9_000);
        let file = tmp.path().join("trace.json");
        assert_eq!(write(&procs, &file).unwrap(), 3);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let slices: Vec<&serde_json::Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(slices.len(), 6);
        let executions: Vec<&str> = slices.iter().map(|e| e["args"]["config"].as_str().unwrap()).collect();
        assert!(
            executions.iter().all(|c| *c == "rep0" || *c == "rep1"),
            "{executions:?}"
        );
        let threads = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .count();
        assert_eq!(threads, 3 + 1, "three host threads and one stream");
        // Nothing written: an error, not an empty trace.
        let empty = tmp.path().join("empty/procs");
        std::fs::create_dir_all(empty.join("rep0")).unwrap();
        assert!(write(&empty, &tmp.path().join("none.json")).is_err());
    }
}
