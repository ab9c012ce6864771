//! kprof-core: the part of kprof that needs no GPU.
//!
//! - [`model`]: raw samples identified by key, and the processed table; [`columns`]: their names.
//! - [`stats`]: per-series statistics; [`policy`]: the adaptive stopping rule of the run loop.
//! - [`transforms`]: derived metrics, normalisation, kernel combination, geomean.
//! - [`io`]: the result files; [`display`]: aligned terminal tables; [`durations`]: the line
//!   before a table that names the definition of its durations.
//! - [`kernels`]: kernel names (demangling, ignore lists); [`sections`]: ncu sections and sets
//!   expanded into metrics; [`sol`]: speed of light and roofline, with a verdict.

pub mod columns;
pub mod display;
pub mod durations;
pub mod io;
pub mod kernels;
pub mod model;
pub mod pipeline;
pub mod policy;
pub mod sections;
pub mod sol;
pub mod stats;
pub mod transforms;

pub use model::*;
