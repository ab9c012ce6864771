//! The CUPTI activity backend: the loaded libcupti ([`library`], over the FFI layer's
//! [`crate::sys::cupti`]), pure record parsing and fixtures ([`records`]), the process-global
//! collector ([`collector`]), the graph guard ([`graph_guard`]) and the cold cache before every
//! kernel of a counter pass ([`kernel_flush`]).

pub mod collector;
pub mod graph_guard;
pub mod kernel_flush;
pub mod library;
pub mod records;

pub use collector::{
    current_thread_id, ActivitySession, GraphTrace, KernelTrace, LaunchRecords, ENV_LAUNCH_RECORDS, ENV_RECORD_ACTIVITY,
};
pub use library::{Cupti, SubscriberSlot};
pub use records::{
    parse_record, ActivityBatch, ApiRecord, DumpLine, ExternalCorrelationRecord, KernelRecord, Record, RecordedBuffer,
    RecordedFlush,
};
