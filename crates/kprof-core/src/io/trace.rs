//! Timelines ([`Timeline`]: kernels, regions and counter values on one clock) as Chrome trace-event
//! JSON, the format chrome://tracing and Perfetto (ui.perfetto.dev) open: the one writer of that
//! format ([`write_chrome_trace`]). The layout of the document is on [`Timeline::to_chrome_trace`].

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{atomic, IoError};

/// One kernel execution on the GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSlice {
    /// The CUDA device.
    pub device: u32,
    /// The CUDA stream.
    pub stream: u32,
    /// The kernel's name.
    pub name: String,
    /// Start on the GPU clock, ns.
    pub start_ns: u64,
    /// End on the GPU clock, ns.
    pub end_ns: u64,
    /// The region it was attributed to ("" for none).
    #[serde(default)]
    pub region: String,
    /// The configuration, as text (`n=1024`).
    #[serde(default)]
    pub config: String,
    /// The run of the configuration.
    #[serde(default)]
    pub run: u32,
}

/// One region instance (an annotation of one run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionSlice {
    /// The host thread that opened it.
    pub thread: u64,
    /// The region's name.
    pub name: String,
    /// Start on the GPU clock, ns.
    pub start_ns: u64,
    /// End on the GPU clock, ns.
    pub end_ns: u64,
    /// The configuration, as text.
    #[serde(default)]
    pub config: String,
    /// The run of the configuration.
    #[serde(default)]
    pub run: u32,
}

/// One value of a counter track.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterPoint {
    /// The CUDA device whose track it is.
    pub device: u32,
    /// The metric.
    pub name: String,
    /// When the value starts to hold, ns on the GPU clock.
    pub ts_ns: u64,
    /// The value.
    pub value: f64,
}

/// A timeline: kernels, regions and counter values on one clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The kernels.
    #[serde(default)]
    pub kernels: Vec<KernelSlice>,
    /// The regions.
    #[serde(default)]
    pub regions: Vec<RegionSlice>,
    /// The counter values.
    #[serde(default)]
    pub counters: Vec<CounterPoint>,
}

/// The process id of the host regions; GPU `d` is process `d + 1`.
const REGIONS_PID: u64 = 0;

fn gpu_pid(device: u32) -> u64 {
    u64::from(device) + 1
}

fn timed(start: u64, end: u64) -> bool {
    !(start == 0 && end == 0) && end >= start
}

/// A metadata event naming a process (`tid` None) or a track.
fn name_event(pid: u64, tid: Option<u64>, name: &str) -> Value {
    match tid {
        None => json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}),
        Some(t) => json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": name}}),
    }
}

impl Timeline {
    /// The earliest timestamp of the timeline (0 when it is empty).
    fn origin(&self) -> u64 {
        let k = self
            .kernels
            .iter()
            .filter(|k| timed(k.start_ns, k.end_ns))
            .map(|k| k.start_ns);
        let r = self
            .regions
            .iter()
            .filter(|r| timed(r.start_ns, r.end_ns))
            .map(|r| r.start_ns);
        let c = self.counters.iter().map(|c| c.ts_ns);
        k.chain(r).chain(c).min().unwrap_or(0)
    }

    /// The names of every process and track the events use.
    fn metadata(&self, threads: &[u64]) -> Vec<Value> {
        let mut out = Vec::new();
        if !threads.is_empty() {
            out.push(name_event(REGIONS_PID, None, "regions"));
            for (i, t) in threads.iter().enumerate() {
                out.push(name_event(REGIONS_PID, Some(i as u64 + 1), &format!("thread {t}")));
            }
        }
        let devices: BTreeSet<u32> = self
            .kernels
            .iter()
            .map(|k| k.device)
            .chain(self.counters.iter().map(|c| c.device))
            .collect();
        for d in devices {
            out.push(name_event(gpu_pid(d), None, &format!("GPU {d}")));
        }
        let streams: BTreeSet<(u32, u32)> = self.kernels.iter().map(|k| (k.device, k.stream)).collect();
        for (d, s) in streams {
            out.push(name_event(gpu_pid(d), Some(u64::from(s)), &format!("stream {s}")));
        }
        out
    }

    /// The trace-event document (`traceEvents`, `displayTimeUnit`, `otherData`): every kernel a
    /// complete slice (`"ph": "X"`) on its GPU (one process per device, `GPU <device>`) and its
    /// stream (one track per stream, `stream <id>`), with its region, configuration and run as
    /// arguments; every region a slice on the host thread that opened it (the process `regions`,
    /// one track per thread, `thread <id>`); every counter value a point of a counter track
    /// (`"ph": "C"`) of its GPU, named after the metric. The metadata events that name processes
    /// and tracks come first, the others in time order. Timestamps are microseconds (the format's
    /// unit) from the earliest event, so the GPU clock's nanoseconds keep their precision in an
    /// `f64`. Kernels without timestamps (CUDA-graph nodes under serial kernel tracing) and slices
    /// that end before they start are left out and counted in `otherData`.
    pub fn to_chrome_trace(&self) -> Value {
        let origin = self.origin();
        let us = |ns: u64| (ns - origin) as f64 / 1e3;
        let threads: Vec<u64> = self
            .regions
            .iter()
            .map(|r| r.thread)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let track_of = |t: u64| threads.iter().position(|x| *x == t).map_or(0, |i| i as u64 + 1);
        let mut events: Vec<(u64, u64, Value)> = Vec::new(); // (start, -end as sort key, event)
        let mut left_out = 0usize;
        for k in &self.kernels {
            if !timed(k.start_ns, k.end_ns) {
                left_out += 1;
                continue;
            }
            let args = json!({"region": k.region, "config": k.config, "run": k.run});
            let e = json!({"ph": "X", "cat": "kernel", "name": k.name, "pid": gpu_pid(k.device),
                "tid": k.stream, "ts": us(k.start_ns), "dur": (k.end_ns - k.start_ns) as f64 / 1e3, "args": args});
            events.push((k.start_ns, u64::MAX - k.end_ns, e));
        }
        for r in &self.regions {
            if !timed(r.start_ns, r.end_ns) {
                left_out += 1;
                continue;
            }
            let args = json!({"config": r.config, "run": r.run});
            let e = json!({"ph": "X", "cat": "region", "name": r.name, "pid": REGIONS_PID,
                "tid": track_of(r.thread), "ts": us(r.start_ns), "dur": (r.end_ns - r.start_ns) as f64 / 1e3,
                "args": args});
            events.push((r.start_ns, u64::MAX - r.end_ns, e));
        }
        for c in &self.counters {
            let value = if c.value.is_finite() {
                json!(c.value)
            } else {
                Value::Null
            };
            let e = json!({"ph": "C", "cat": "counter", "name": c.name, "pid": gpu_pid(c.device), "tid": 0,
                "ts": us(c.ts_ns), "args": {"value": value}});
            events.push((c.ts_ns, u64::MAX, e));
        }
        // Time order; at one start the longer slice first, so that slices nest as they open.
        events.sort_by_key(|(start, end_key, _)| (*start, *end_key));
        let mut all = self.metadata(&threads);
        all.extend(events.into_iter().map(|(_, _, e)| e));
        json!({
            "traceEvents": all,
            "displayTimeUnit": "ns",
            "otherData": {"producer": "kprof", "origin_ns": origin, "left_out_untimed": left_out},
        })
    }

    /// The document as JSON text.
    pub fn to_chrome_trace_json(&self) -> String {
        serde_json::to_string(&self.to_chrome_trace()).unwrap_or_default() + "\n"
    }
}

/// Writes `timeline` at `path` as Chrome trace-event JSON (atomically; `-`: standard output).
pub fn write_chrome_trace(path: &Path, timeline: &Timeline) -> Result<(), IoError> {
    atomic::write_bytes(path, timeline.to_chrome_trace_json().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(stream: u32, start: u64, end: u64, run: u32) -> KernelSlice {
        KernelSlice {
            device: 0,
            stream,
            name: format!("k{stream}"),
            start_ns: start,
            end_ns: end,
            region: "r".into(),
            config: "n=1".into(),
            run,
        }
    }

    #[test]
    fn slices_are_ordered_nested_and_on_named_tracks() {
        let t = Timeline {
            kernels: vec![
                kernel(7, 1_500, 2_000, 0),
                kernel(13, 1_100, 1_400, 0),
                kernel(7, 0, 0, 0),
            ],
            regions: vec![RegionSlice {
                thread: 424_242,
                name: "r".into(),
                start_ns: 1_000,
                end_ns: 2_100,
                config: "n=1".into(),
                run: 0,
            }],
            counters: vec![CounterPoint {
                device: 0,
                name: "dram__bytes_read.sum".into(),
                ts_ns: 1_000,
                value: 4096.0,
            }],
        };
        let doc = t.to_chrome_trace();
        let events = doc["traceEvents"].as_array().unwrap();
        let meta: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
        let rest: Vec<&Value> = events.iter().filter(|e| e["ph"] != "M").collect();
        // Metadata first; the untimed kernel is left out and counted.
        assert_eq!(events.iter().position(|e| e["ph"] != "M"), Some(meta.len()));
        assert_eq!(rest.len(), 4);
        assert_eq!(doc["otherData"]["left_out_untimed"], 1);
        let ts: Vec<f64> = rest.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
        assert_eq!(ts[0], 0.0);
        // Every slice and counter is on a named process and track.
        for e in &rest {
            let named = |kind: &str, tid: Option<&Value>| {
                meta.iter()
                    .any(|m| m["name"] == kind && m["pid"] == e["pid"] && tid.is_none_or(|t| m["tid"] == *t))
            };
            assert!(named("process_name", None), "{e}");
            if e["ph"] == "X" {
                assert!(named("thread_name", Some(&e["tid"])), "{e}");
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
            }
        }
        // The region (at 1000 ns, with the counter) before the kernels; the stream tracks are the streams.
        assert_eq!(rest[0]["cat"], "region");
        assert_eq!(rest[0]["dur"].as_f64(), Some(1.1));
        assert!(meta.iter().any(|m| m["args"]["name"] == "stream 13" && m["tid"] == 13));
        assert!(meta.iter().any(|m| m["args"]["name"] == "thread 424242"));
    }

    #[test]
    fn the_file_is_written_atomically_and_reads_back_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/trace.json");
        let t = Timeline {
            kernels: vec![kernel(7, 10, 20, 1)],
            ..Timeline::default()
        };
        write_chrome_trace(&path, &t).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["traceEvents"].as_array().unwrap().len(), 3);
        assert_eq!(v["displayTimeUnit"], "ns");
    }
}
