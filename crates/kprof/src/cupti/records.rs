//! Pure parsing of CUPTI activity records (kernel, API, external correlation and graph trace
//! records) by their stable prefix, whose byte offsets are the FFI layer's [`offsets`], and the
//! JSON-lines fixture format ([`DumpLine`]) that stores activity recorded on a GPU machine so that
//! CI can parse it again.

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::sys::cupti::{
    ACTIVITY_KIND_CONCURRENT_KERNEL, ACTIVITY_KIND_DRIVER, ACTIVITY_KIND_EXTERNAL_CORRELATION,
    ACTIVITY_KIND_GRAPH_TRACE, ACTIVITY_KIND_KERNEL, ACTIVITY_KIND_RUNTIME,
};

/// Byte offsets of the stable record prefixes (the FFI layer's record layout).
pub use crate::sys::cupti::offsets;

/// One open-then-closed region, in CUPTI timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionSpan {
    /// The external correlation id pushed for this region (an encoded region key).
    pub id: u64,
    /// The id of the enclosing region on the same thread, if nested.
    pub parent: Option<u64>,
    /// OS thread id (gettid) of the thread that opened the region. Informational only: CUPTI's
    /// API records carry a different thread id (on the H200 it looked like a truncated
    /// `pthread_self`), so rule (B) does not match threads.
    pub thread_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// CUPTI's correlation id taken when the region opened (`attribution="order"`): launches
    /// numbered after it and before [`RegionSpan::end_correlation_id`] were made while the region
    /// was open. 0: every launch before the end counts (an NVTX range opened before CUPTI's
    /// session started, under `kprof run`, or launch order not used); `u32::MAX`: the numbered
    /// call got no id (no launch counts).
    #[serde(default)]
    pub start_correlation_id: u32,
    /// CUPTI's correlation id taken when the region closed; 0: not taken (the region then gets
    /// no kernel by launch order).
    #[serde(default)]
    pub end_correlation_id: u32,
}

/// One kernel execution (CONCURRENT_KERNEL or KERNEL record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRecord {
    pub start_ns: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub grid_id: i64,
    /// 0 when the kernel was not launched from a CUDA graph.
    pub graph_id: u32,
    pub graph_node_id: u64,
    /// Mangled kernel name ("" if CUPTI gave none).
    pub name: String,
}

impl KernelRecord {
    /// GPU duration, `end - start` (0 if the record is inconsistent).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// One driver/runtime API call (here: a launch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiRecord {
    /// Activity kind: 4 driver API, 5 runtime API (their CBID numberings differ).
    #[serde(default = "driver_kind")]
    pub kind: u32,
    pub cbid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub process_id: u32,
    pub thread_id: u32,
    pub correlation_id: u32,
}

fn driver_kind() -> u32 {
    ACTIVITY_KIND_DRIVER
}

/// Links a CUPTI correlation id to the external id pushed by the launching thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalCorrelationRecord {
    pub external_kind: u32,
    pub external_id: u64,
    pub correlation_id: u32,
}

/// One CUDA graph launch as a whole (GRAPH_TRACE record): from its first node's start to its last
/// node's end on the GPU. CUPTI gives no kernel records for the nodes of a graph traced this way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphRecord {
    pub start_ns: u64,
    pub end_ns: u64,
    pub device_id: u32,
    pub stream_id: u32,
    /// The correlation id of the launch API record (`cuGraphLaunch`/`cudaGraphLaunch`).
    pub correlation_id: u32,
    pub graph_id: u32,
}

impl GraphRecord {
    /// The graph launch as one work item of a region: a [`KernelRecord`] named
    /// [`graph_item_name`], spanning the whole graph (`graph_node_id` 0: not one node).
    pub fn as_work_item(&self) -> KernelRecord {
        KernelRecord {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            device_id: self.device_id,
            context_id: 0,
            stream_id: self.stream_id,
            correlation_id: self.correlation_id,
            grid_id: 0,
            graph_id: self.graph_id,
            graph_node_id: 0,
            name: graph_item_name(self.graph_id),
        }
    }
}

/// The name a whole CUDA graph launch carries in the `Kernel` column: `cuda-graph:<graphId>`.
pub fn graph_item_name(graph_id: u32) -> String {
    format!("cuda-graph:{graph_id}")
}

/// A parsed activity record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Kernel(KernelRecord),
    Api(ApiRecord),
    External(ExternalCorrelationRecord),
    Graph(GraphRecord),
}

fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// The record kind (first u32), if the slice holds one.
pub fn record_kind(bytes: &[u8]) -> Option<u32> {
    rd_u32(bytes, offsets::KIND)
}

/// Parses one record from its bytes. Unknown kinds and short slices give `None` (never panics).
/// `kernel_name` is the already-resolved name for kernel records (the pointer in the bytes is
/// only valid while CUPTI's buffer lives).
pub fn parse_record(bytes: &[u8], kernel_name: Option<String>) -> Option<Record> {
    use offsets::*;
    let kind = record_kind(bytes)?;
    match kind {
        ACTIVITY_KIND_CONCURRENT_KERNEL | ACTIVITY_KIND_KERNEL => {
            if bytes.len() < KERNEL_MIN_LEN {
                return None;
            }
            Some(Record::Kernel(KernelRecord {
                start_ns: rd_u64(bytes, KERNEL_START)?,
                end_ns: rd_u64(bytes, KERNEL_END)?,
                device_id: rd_u32(bytes, KERNEL_DEVICE_ID)?,
                context_id: rd_u32(bytes, KERNEL_CONTEXT_ID)?,
                stream_id: rd_u32(bytes, KERNEL_STREAM_ID)?,
                correlation_id: rd_u32(bytes, KERNEL_CORRELATION_ID)?,
                grid_id: rd_u64(bytes, KERNEL_GRID_ID)? as i64,
                graph_id: rd_u32(bytes, KERNEL_GRAPH_ID)?,
                graph_node_id: rd_u64(bytes, KERNEL_GRAPH_NODE_ID)?,
                name: kernel_name.unwrap_or_default(),
            }))
        }
        ACTIVITY_KIND_DRIVER | ACTIVITY_KIND_RUNTIME => {
            if bytes.len() < API_MIN_LEN {
                return None;
            }
            Some(Record::Api(ApiRecord {
                kind,
                cbid: rd_u32(bytes, API_CBID)?,
                start_ns: rd_u64(bytes, API_START)?,
                end_ns: rd_u64(bytes, API_END)?,
                process_id: rd_u32(bytes, API_PROCESS_ID)?,
                thread_id: rd_u32(bytes, API_THREAD_ID)?,
                correlation_id: rd_u32(bytes, API_CORRELATION_ID)?,
            }))
        }
        ACTIVITY_KIND_EXTERNAL_CORRELATION => {
            if bytes.len() < EXT_MIN_LEN {
                return None;
            }
            Some(Record::External(ExternalCorrelationRecord {
                external_kind: rd_u32(bytes, EXT_KIND)?,
                external_id: rd_u64(bytes, EXT_ID)?,
                correlation_id: rd_u32(bytes, EXT_CORRELATION_ID)?,
            }))
        }
        ACTIVITY_KIND_GRAPH_TRACE => {
            if bytes.len() < GRAPH_MIN_LEN {
                return None;
            }
            Some(Record::Graph(GraphRecord {
                start_ns: rd_u64(bytes, GRAPH_START)?,
                end_ns: rd_u64(bytes, GRAPH_END)?,
                device_id: rd_u32(bytes, GRAPH_DEVICE_ID)?,
                stream_id: rd_u32(bytes, GRAPH_STREAM_ID)?,
                correlation_id: rd_u32(bytes, GRAPH_CORRELATION_ID)?,
                graph_id: rd_u32(bytes, GRAPH_ID)?,
            }))
        }
        _ => None,
    }
}

/// The records drained by one flush.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActivityBatch {
    pub kernels: Vec<KernelRecord>,
    pub launches: Vec<ApiRecord>,
    pub external: Vec<ExternalCorrelationRecord>,
    /// Whole-graph launches (graph trace).
    pub graphs: Vec<GraphRecord>,
}

impl ActivityBatch {
    /// Appends a parsed record to the matching list.
    pub fn push(&mut self, r: Record) {
        match r {
            Record::Kernel(k) => self.kernels.push(k),
            Record::Api(a) => self.launches.push(a),
            Record::External(e) => self.external.push(e),
            Record::Graph(g) => self.graphs.push(g),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty() && self.launches.is_empty() && self.external.is_empty() && self.graphs.is_empty()
    }

    pub fn extend(&mut self, other: ActivityBatch) {
        self.kernels.extend(other.kernels);
        self.launches.extend(other.launches);
        self.external.extend(other.external);
        self.graphs.extend(other.graphs);
    }
}

/// One line of an activity fixture file (JSON lines, `"type"` tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DumpLine {
    /// Written once when a session starts.
    Meta {
        cupti_version: u32,
        cupti_path: String,
        #[serde(default)]
        note: String,
    },
    /// One raw record as CUPTI produced it.
    Record {
        /// Index of the flush that drained it (0-based, per session).
        flush: u64,
        kind: u32,
        /// The record's bytes as lowercase hex.
        hex: String,
        /// Kernel name resolved while the buffer was alive (kernel records only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A region span recorded by the runner for the same flush (so attribution can be replayed).
    Region { flush: u64, span: RegionSpan },
}

/// Lowercase hex of bytes.
pub fn to_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Bytes from hex; `None` on odd length or a bad digit.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One flush worth of recorded activity, re-parsed from a fixture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedFlush {
    pub flush: u64,
    pub batch: ActivityBatch,
    pub regions: Vec<RegionSpan>,
    /// Records whose bytes did not parse (unknown kind or too short).
    pub unparsed: usize,
}

/// A whole recorded fixture file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedBuffer {
    pub meta: Vec<DumpLine>,
    pub flushes: Vec<RecordedFlush>,
}

impl RecordedBuffer {
    /// Reads a JSON-lines fixture written by the collector (`KPROF_RECORD_ACTIVITY`).
    pub fn read_jsonl(path: &Path) -> Result<Self, EngineError> {
        let f = std::fs::File::open(path).map_err(|e| EngineError::io(format!("opening {}", path.display()), e))?;
        Self::parse_lines(path, std::io::BufReader::new(f))
    }

    /// Parses fixture text (used by `read_jsonl`; public for tests).
    pub fn parse_lines(path: &Path, r: impl BufRead) -> Result<Self, EngineError> {
        let mut out = RecordedBuffer::default();
        for (i, line) in r.lines().enumerate() {
            let line = line.map_err(|e| EngineError::io(format!("reading {}", path.display()), e))?;
            if line.trim().is_empty() {
                continue;
            }
            let bad = |message: String| EngineError::Fixture {
                path: path.to_path_buf(),
                line: i + 1,
                message,
            };
            let dl: DumpLine = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
            match dl {
                DumpLine::Meta { .. } => out.meta.push(dl),
                DumpLine::Record { flush, hex, name, .. } => {
                    let bytes = from_hex(&hex).ok_or_else(|| bad("bad hex".into()))?;
                    let f = out.flush_mut(flush);
                    match parse_record(&bytes, name) {
                        Some(r) => f.batch.push(r),
                        None => f.unparsed += 1,
                    }
                }
                DumpLine::Region { flush, span } => out.flush_mut(flush).regions.push(span),
            }
        }
        Ok(out)
    }

    fn flush_mut(&mut self, flush: u64) -> &mut RecordedFlush {
        if let Some(i) = self.flushes.iter().position(|f| f.flush == flush) {
            return &mut self.flushes[i];
        }
        self.flushes.push(RecordedFlush {
            flush,
            ..Default::default()
        });
        self.flushes.last_mut().unwrap()
    }
}

/// Writes dump lines (used by the collector; public so tests can build fixtures).
pub fn write_dump_line(w: &mut impl Write, line: &DumpLine) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, line).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// Builders of synthetic record bytes with the documented offsets (for tests and fixtures).
pub mod synth {
    use super::offsets::*;
    use super::*;

    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn put64(b: &mut [u8], off: usize, v: u64) {
        b[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// A CONCURRENT_KERNEL record of `size` bytes (216 = CUDA 13.0's Kernel10, 208 = 12.x's
    /// Kernel9); the name pointer is left 0.
    pub fn kernel_bytes(k: &KernelRecord, size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size.max(KERNEL_MIN_LEN)];
        put32(&mut b, KIND, ACTIVITY_KIND_CONCURRENT_KERNEL);
        put64(&mut b, KERNEL_START, k.start_ns);
        put64(&mut b, KERNEL_END, k.end_ns);
        put64(&mut b, 32, k.end_ns); // completed
        put32(&mut b, KERNEL_DEVICE_ID, k.device_id);
        put32(&mut b, KERNEL_CONTEXT_ID, k.context_id);
        put32(&mut b, KERNEL_STREAM_ID, k.stream_id);
        put32(&mut b, KERNEL_CORRELATION_ID, k.correlation_id);
        put64(&mut b, KERNEL_GRID_ID, k.grid_id as u64);
        put64(&mut b, KERNEL_GRAPH_NODE_ID, k.graph_node_id);
        put32(&mut b, KERNEL_GRAPH_ID, k.graph_id);
        b
    }

    /// A DRIVER API record (40 bytes).
    pub fn api_bytes(a: &ApiRecord) -> Vec<u8> {
        let mut b = vec![0u8; 40];
        put32(&mut b, KIND, a.kind);
        put32(&mut b, API_CBID, a.cbid);
        put64(&mut b, API_START, a.start_ns);
        put64(&mut b, API_END, a.end_ns);
        put32(&mut b, API_PROCESS_ID, a.process_id);
        put32(&mut b, API_THREAD_ID, a.thread_id);
        put32(&mut b, API_CORRELATION_ID, a.correlation_id);
        b
    }

    /// A GRAPH_TRACE record (CUpti_ActivityGraphTrace2, 56 bytes).
    pub fn graph_bytes(g: &GraphRecord) -> Vec<u8> {
        let mut b = vec![0u8; 56];
        put32(&mut b, KIND, ACTIVITY_KIND_GRAPH_TRACE);
        put32(&mut b, GRAPH_CORRELATION_ID, g.correlation_id);
        put64(&mut b, GRAPH_START, g.start_ns);
        put64(&mut b, GRAPH_END, g.end_ns);
        put32(&mut b, GRAPH_DEVICE_ID, g.device_id);
        put32(&mut b, GRAPH_ID, g.graph_id);
        put32(&mut b, GRAPH_STREAM_ID, g.stream_id);
        put32(&mut b, 48, g.device_id); // endDeviceId
        b
    }

    /// An EXTERNAL_CORRELATION record (24 bytes).
    pub fn external_bytes(e: &ExternalCorrelationRecord) -> Vec<u8> {
        let mut b = vec![0u8; 24];
        put32(&mut b, KIND, ACTIVITY_KIND_EXTERNAL_CORRELATION);
        put32(&mut b, EXT_KIND, e.external_kind);
        put64(&mut b, EXT_ID, e.external_id);
        put32(&mut b, EXT_CORRELATION_ID, e.correlation_id);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::synth::*;
    use super::*;

    fn kernel() -> KernelRecord {
        KernelRecord {
            start_ns: 1_000_267_285,
            end_ns: 1_000_486_285,
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            correlation_id: 42,
            grid_id: -5,
            graph_id: 3,
            graph_node_id: 0x1_0000_0002,
            name: "_Z5copykPKfPfi".into(),
        }
    }

    #[test]
    fn kernel_round_trip_13_and_12_sizes() {
        let k = kernel();
        for size in [208, 216, 224, 232, 248] {
            let b = kernel_bytes(&k, size);
            assert_eq!(parse_record(&b, Some(k.name.clone())), Some(Record::Kernel(k.clone())));
        }
        assert_eq!(k.duration_ns(), 219_000);
    }

    #[test]
    fn api_and_external_round_trip() {
        let a = ApiRecord {
            kind: ACTIVITY_KIND_DRIVER,
            cbid: 307,
            start_ns: 10,
            end_ns: 20,
            process_id: 100,
            thread_id: 101,
            correlation_id: 42,
        };
        assert_eq!(parse_record(&api_bytes(&a), None), Some(Record::Api(a.clone())));
        let mut rt = api_bytes(&a);
        rt[0] = 5; // RUNTIME kind parses the same way, and keeps its kind
        assert_eq!(parse_record(&rt, None), Some(Record::Api(ApiRecord { kind: 5, ..a })));
        let e = ExternalCorrelationRecord {
            external_kind: 3,
            external_id: 0xfff0_0000_0000_0001,
            correlation_id: 42,
        };
        assert_eq!(parse_record(&external_bytes(&e), None), Some(Record::External(e)));
    }

    #[test]
    fn short_or_unknown_records_are_none() {
        let b = kernel_bytes(&kernel(), 216);
        for len in [0, 3, 4, 100, 159] {
            assert_eq!(parse_record(&b[..len], None), None, "len {len}");
        }
        assert!(parse_record(&b[..160], None).is_some());
        let a = api_bytes(&ApiRecord {
            kind: ACTIVITY_KIND_DRIVER,
            cbid: 1,
            start_ns: 1,
            end_ns: 2,
            process_id: 3,
            thread_id: 4,
            correlation_id: 5,
        });
        assert_eq!(parse_record(&a[..35], None), None);
        let mut unknown = a.clone();
        unknown[0] = 12; // MARKER: not parsed
        assert_eq!(parse_record(&unknown, None), None);
        let e = external_bytes(&ExternalCorrelationRecord {
            external_kind: 3,
            external_id: 1,
            correlation_id: 2,
        });
        assert_eq!(parse_record(&e[..19], None), None);
    }

    #[test]
    fn graph_trace_round_trip_and_work_item() {
        let g = GraphRecord {
            start_ns: 1_000,
            end_ns: 129_000,
            device_id: 0,
            stream_id: 13,
            correlation_id: 77,
            graph_id: 4,
        };
        let b = graph_bytes(&g);
        assert_eq!(parse_record(&b, None), Some(Record::Graph(g.clone())));
        assert_eq!(parse_record(&b[..39], None), None);
        let item = g.as_work_item();
        assert_eq!((item.start_ns, item.end_ns, item.correlation_id), (1_000, 129_000, 77));
        assert_eq!(item.name, "cuda-graph:4");
        assert_eq!(item.duration_ns(), 128_000);
    }

    #[test]
    fn hex_round_trip() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    #[test]
    fn fixture_round_trip() {
        let k = kernel();
        let e = ExternalCorrelationRecord {
            external_kind: 3,
            external_id: 9,
            correlation_id: 42,
        };
        let span = RegionSpan {
            id: 9,
            parent: None,
            thread_id: 101,
            start_ns: 5,
            end_ns: 50,
            start_correlation_id: 3,
            end_correlation_id: 8,
        };
        let mut text = Vec::new();
        for line in [
            DumpLine::Meta {
                cupti_version: 130001,
                cupti_path: "/x/libcupti.so.13".into(),
                note: String::new(),
            },
            DumpLine::Record {
                flush: 0,
                kind: 10,
                hex: to_hex(&kernel_bytes(&k, 216)),
                name: Some(k.name.clone()),
            },
            DumpLine::Record {
                flush: 0,
                kind: 39,
                hex: to_hex(&external_bytes(&e)),
                name: None,
            },
            DumpLine::Record {
                flush: 1,
                kind: 12,
                hex: "0c000000".into(),
                name: None,
            },
            DumpLine::Region { flush: 0, span },
        ] {
            write_dump_line(&mut text, &line).unwrap();
        }
        let rb = RecordedBuffer::parse_lines(Path::new("mem"), &text[..]).unwrap();
        assert_eq!(rb.meta.len(), 1);
        assert_eq!(rb.flushes.len(), 2);
        assert_eq!(rb.flushes[0].batch.kernels, vec![k]);
        assert_eq!(rb.flushes[0].batch.external, vec![e]);
        assert_eq!(rb.flushes[0].regions, vec![span]);
        assert_eq!(rb.flushes[1].unparsed, 1);

        let bad = b"{\"type\":\"record\",\"flush\":0,\"kind\":10,\"hex\":\"0\"}\n";
        let err = RecordedBuffer::parse_lines(Path::new("f.jsonl"), &bad[..]).unwrap_err();
        assert!(err.to_string().contains("f.jsonl, line 1: bad hex"), "{err}");
    }
}
