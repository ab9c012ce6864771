//! kprof-core: the part of kprof that needs no GPU.
//!
//! - [`model`]: raw samples identified by key, and the processed table.
//! - [`stats`]: per-series statistics (t-based CIs, percentiles, outliers, bootstrap).
//! - [`transforms`]: derived metrics, normalisation, kernel combination, geomean.
//! - [`policy`]: the adaptive stopping rule the run loop consults after each run.
//! - [`io`]: raw/processed CSV and JSON result files, readers and writers.
//! - [`display`]: aligned terminal tables.
//! - [`durations`]: the line before a table saying which definition of a duration it used.
//! - [`columns`]: the column names of the result tables (nsight-python's and kprof's).
//! - [`kernels`]: kernel names: demangling for the `Kernel` column, matching ignore lists.
//! - [`sections`]: Nsight Compute section and set names expanded into their metrics.
//! - [`sol`]: speed of light and roofline per region and configuration, with a verdict.

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
