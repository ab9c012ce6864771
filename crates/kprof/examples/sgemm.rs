//! A cuBLAS fp32 sgemm sweep 512..8192, profiled with kprof (cuBLAS may pick split-k and launch
//! two kernels for some sizes: each run combines its own kernels).
//!
//! Run on a GPU machine: `cargo run --release -p kprof --example sgemm`.

mod common;

use common::{cublas, print_results, BoxError, Gpu, Matmul};
use kprof::core::model::Config;
use kprof::runner::{BenchOptions, Profiler};

fn main() {
    common::run_or_exit(run);
}

fn run() -> Result<(), BoxError> {
    let mut prof = Profiler::new()?;
    let gpu = Gpu::new()?;
    let blas = cublas(&gpu.stream)?;
    let sizes = [512usize, 1024, 2048, 4096, 8192];
    let mut mats: Vec<Matmul> = sizes.iter().map(|&n| Matmul::new(&gpu, n)).collect::<Result<_, _>>()?;
    gpu.sync()?;
    let configs: Vec<Config> = sizes.iter().map(|&n| Config::new().with("n", n)).collect();
    let mut opts = BenchOptions::default();
    opts.output_prefix = std::env::args().nth(1).map(Into::into);
    let raw = prof.bench("sgemm", &configs, &opts, |c, run| {
        let i = configs.iter().position(|x| x == c).unwrap();
        let _r = run.region("matmul")?;
        mats[i].run(&blas)
    })?;
    print_results("sgemm fp32 (cold L2, 10 runs)", &raw);
    for s in common::series_stats(&raw) {
        let n: f64 = s.config.trim_start_matches("n=").parse().unwrap_or(0.0);
        println!("  n={n:>5}: {:.1} TFLOP/s", 2.0 * n * n * n / s.median / 1e3);
    }
    Ok(())
}
