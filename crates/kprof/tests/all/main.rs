//! The crate's integration tests, linked as one test binary (one module per former test file).
//! `tests/missing_libs.rs` stays its own binary: it sets process-wide environment variables.

#[path = "../common/mod.rs"]
mod common;

mod activity_fixtures;
mod conditions_background;
mod conditions_collectors;
mod conditions_fingerprint;
mod conditions_h200_fixture;
mod conditions_sampler;
mod conditions_thermal;
mod counters_host;
mod counters_sections;
mod cupti_headers;
mod driver_headers;
mod gpu_names;
mod gpu_smoke;
mod house;
mod house_labels;
mod ncu_argv;
mod ncu_bench;
mod ncu_csv;
mod ncu_relaunch;
mod ncu_version;
mod nvtx_headers;
mod option_parsers;
mod real_cupti;
mod seed_counters_h200;
mod settings;
mod source_tree;
