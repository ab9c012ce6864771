//! The crate's integration tests, linked as one test binary (one module per former test file).

mod common;
mod compare_explain;
mod markdown_summaries;
mod metadata;
mod metrics_cmd;
mod output_files;
mod plot_report_cmd;
mod run_compare_doctor;
mod run_gpus;
mod run_metrics;
mod run_metrics_h200;
mod run_nesting;
mod run_ranks;
mod sol_cmd;
mod store_history;
mod summarize_cmd;
mod version;
