//! The crate's integration tests, linked as one test binary (one module per former test file).

mod common;
mod h200_raw_stats;
mod io_csv;
mod io_errors;
mod io_json;
mod policy_stopping;
mod sections;
mod sol;
mod stats_aggregate;
mod stats_edge;
mod stats_props;
mod stats_reference;
mod transforms_combine;
mod transforms_derived;
mod transforms_normalize;
