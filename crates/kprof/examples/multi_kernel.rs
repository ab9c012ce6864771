//! A region with three kernels (scale, add, scale): kprof reports their sum, and the per-kernel
//! breakdown is in `RawResults::kernel_breakdown`.
//!
//! Run on a GPU machine: `cargo run --release -p kprof --example multi_kernel`.

mod common;

use common::{print_results, BoxError};
use kprof::core::model::Config;
use kprof::runner::CacheControl;

fn main() {
    common::run_or_exit(run);
}

fn run() -> Result<(), BoxError> {
    let (mut prof, gpu, k) = common::start()?;
    let n: u32 = 1 << 24;
    let [x, mut y, mut z] = common::operands(&gpu.stream, n)?;
    gpu.sync()?;
    let opts = common::bench_options(5, CacheControl::None);
    let raw = prof.bench("multi_kernel", &[Config::new().with("n", n as i64)], &opts, |_, run| {
        let _r = run.region("three")?;
        k.scale(&gpu.stream, &mut y, &x, 2.0, n)?;
        k.add(&gpu.stream, &mut y, &x, n)?;
        k.scale(&gpu.stream, &mut z, &y, 0.5, n)
    })?;
    print_results("multi_kernel", &raw);
    println!("breakdown (run, position, kernel, ns):");
    for b in &raw.kernel_breakdown {
        println!("  {} {} {:<12} {:.0}", b.run, b.position, b.kernel, b.value);
    }
    Ok(())
}
