//! Fills a results store with synthetic runs, for `benches/store_bench.sh`:
//! `fill_store DB RUNS [SERIES] [SAMPLES]` stores RUNS runs (one commit each) of SERIES series
//! (default 5) with SAMPLES samples each (default 10), through the public API.

use std::path::Path;

use kprof_core::{Config, DeviceInfo, RawResults, SampleRecord};
use kprof_store::{GitInfo, NewRun, ResultStore, RunMeta, SqliteStore};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fill_store DB RUNS [SERIES] [SAMPLES]");
        std::process::exit(2);
    }
    let runs: usize = args[2].parse().expect("RUNS must be a number");
    let series: u32 = args.get(3).map_or(5, |s| s.parse().expect("SERIES must be a number"));
    let samples: u32 = args.get(4).map_or(10, |s| s.parse().expect("SAMPLES must be a number"));
    let mut store = SqliteStore::open(Path::new(&args[1])).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let device = DeviceInfo::default();
    let t = std::time::Instant::now();
    for r in 0..runs {
        let mut raw = RawResults::new();
        for s in 0..series {
            let config = Config::new().with("n", 512i64 << s);
            for run in 0..samples {
                let value = 1000.0 * f64::from(s + 1) * (1.0 + 0.01 * ((r * 7 + run as usize * 13) % 11) as f64 / 11.0);
                raw.push(&SampleRecord {
                    benchmark: "sgemm",
                    annotation: "matmul",
                    config: &config,
                    run,
                    metric: "gpu__time_duration.sum",
                    value,
                    unit: "ns",
                    kernel: "k",
                    device: &device,
                    extras: &[],
                })
                .expect("valid samples");
            }
        }
        let mut meta = RunMeta::new("sgemm");
        meta.git = Some(GitInfo {
            commit: format!("{r:040x}"),
            branch: Some("main".into()),
            dirty: Some(false),
        });
        store
            .insert_run(&NewRun {
                meta: &meta,
                raw: Some(&raw),
                processed: None,
            })
            .unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(1)
            });
    }
    eprintln!("stored {runs} runs in {:.1} s", t.elapsed().as_secs_f64());
}
