//! kprof's engine (in progress).
pub use kprof_core as core;
pub mod counters;
