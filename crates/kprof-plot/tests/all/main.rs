//! The crate's integration tests, linked as one test binary (one module per former test file).

#[path = "../common/mod.rs"]
mod common;

mod png_and_report;
mod roofline;
mod svg_structure;
