//! Activity records, NVTX range occurrences and a small recorded-like fixture shared by the
//! unit tests of the timing (`report`) and counter (`counters`) paths.

use kprof::cupti::records::{ActivityBatch, ApiRecord, KernelRecord};

use crate::book::RangeOcc;

pub(crate) fn kernel(corr: u32, name: &str, start: u64, dur: u64) -> KernelRecord {
    KernelRecord {
        start_ns: start,
        end_ns: start + dur,
        device_id: 0,
        context_id: 1,
        stream_id: 7,
        correlation_id: corr,
        grid_id: corr as i64,
        graph_id: 0,
        graph_node_id: 0,
        name: name.to_string(),
    }
}
pub(crate) fn launch(corr: u32, t: u64) -> ApiRecord {
    ApiRecord {
        kind: 4,
        cbid: 307,
        start_ns: t,
        end_ns: t + 5,
        process_id: 1,
        thread_id: 1,
        correlation_id: corr,
    }
}
pub(crate) fn range(id: u64, parent: Option<u64>, name: &str, s: u64, e: u64) -> RangeOcc {
    RangeOcc {
        id,
        parent,
        thread: 1,
        domain: String::new(),
        name: name.into(),
        start_ns: s,
        end_ns: e,
        start_correlation_id: 0,
        end_correlation_id: 0,
        push_pop: true,
    }
}

/// Two occurrences of "step" (each holding "mm"), plus one kernel launched outside.
pub(crate) fn fixture() -> (Vec<RangeOcc>, ActivityBatch) {
    let ranges = vec![
        range(1, None, "step", 100, 200),
        range(2, Some(1), "mm", 110, 150),
        range(3, None, "step", 300, 400),
        range(4, Some(3), "mm", 310, 350),
    ];
    let batch = ActivityBatch {
        kernels: vec![
            kernel(1, "gemm", 1000, 50),
            kernel(2, "relu", 1100, 10),
            kernel(3, "gemm", 2000, 60),
            kernel(4, "relu", 2100, 11),
            kernel(5, "copy", 3000, 7),
        ],
        launches: vec![
            launch(1, 120),
            launch(2, 160),
            launch(3, 320),
            launch(4, 360),
            launch(5, 500),
        ],
        external: vec![],
        ..Default::default()
    };
    (ranges, batch)
}
