//! A CUDA graph (scale, add, scale) captured once and replayed inside a region: the graph's
//! kernels are attributed to the region through the cuGraphLaunch correlation id.
//!
//! Run on a GPU machine: `cargo run --release -p kprof --example graph`.

mod common;

use common::{print_results, BoxError};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use kprof::core::model::Config;
use kprof::runner::CacheControl;

fn main() {
    common::run_or_exit(run);
}

fn run() -> Result<(), BoxError> {
    let (mut prof, gpu, k) = common::start()?;
    let n: u32 = 1 << 22;
    let stream = gpu.ctx.new_stream()?;
    let [x, mut y, mut z] = common::operands(&stream, n)?;
    stream.synchronize()?;
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    k.scale(&stream, &mut y, &x, 2.0, n)?;
    k.add(&stream, &mut y, &x, n)?;
    k.scale(&stream, &mut z, &y, 0.5, n)?;
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))?
        .ok_or("stream capture produced no graph")?;
    let opts = common::bench_options(5, CacheControl::None);
    let raw = prof.bench("graph", &[Config::new().with("n", n as i64)], &opts, |_, run| {
        let _r = run.region("graph_replay")?;
        graph.launch()?;
        Ok(())
    })?;
    print_results("graph replay", &raw);
    Ok(())
}
