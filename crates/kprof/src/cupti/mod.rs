//! The CUPTI activity backend: the function table ([`ffi`]), pure record parsing and fixtures
//! ([`records`]) and the process-global collector ([`collector`]).

pub mod collector;
pub mod ffi;
pub mod graph_guard;
pub mod records;

pub use collector::{
    current_thread_id, ActivitySession, GraphTrace, KernelTrace, LaunchRecords, ENV_KERNEL_TRACE, ENV_LAUNCH_RECORDS,
    ENV_RECORD_ACTIVITY,
};
pub use ffi::Cupti;
pub use records::{
    parse_record, ActivityBatch, ApiRecord, DumpLine, ExternalCorrelationRecord, KernelRecord, Record, RecordedBuffer,
    RecordedFlush,
};
