//! An NVRTC-compiled vector scale `y = a * x` over 1..64 Mi floats, profiled with kprof.
//!
//! Run on a GPU machine: `cargo run --release -p kprof --example vector_scale`.

mod common;

use common::{print_results, BoxError};
use kprof::core::model::Config;
use kprof::runner::BenchOptions;

fn main() {
    common::run_or_exit(run);
}

fn run() -> Result<(), BoxError> {
    let (mut prof, gpu, k) = common::start()?;
    println!("kernels compiled with {}", k.source);
    let sizes: Vec<usize> = vec![1 << 20, 1 << 22, 1 << 24, 1 << 26];
    let max = *sizes.iter().max().unwrap();
    let x = gpu.stream.clone_htod(&vec![1.0f32; max])?;
    let mut y = gpu.stream.alloc_zeros::<f32>(max)?;
    gpu.sync()?;
    let configs: Vec<Config> = sizes.iter().map(|&n| Config::new().with("n", n)).collect();
    let raw = prof.bench("vector_scale", &configs, &BenchOptions::default(), |c, run| {
        let n = c.get("n").and_then(|v| v.as_f64()).unwrap() as u32;
        let _r = run.region("scale")?;
        k.scale(&gpu.stream, &mut y, &x, 2.0, n)
    })?;
    print_results("vector_scale (cold L2)", &raw);
    for s in common::series_stats(&raw) {
        let n: f64 = s.config.trim_start_matches("n=").parse().unwrap_or(0.0);
        println!("  n={n:>10}: {:.1} GB/s (read + write)", 8.0 * n / s.median);
    }
    for w in prof.warnings() {
        println!("warning: {w}");
    }
    Ok(())
}
