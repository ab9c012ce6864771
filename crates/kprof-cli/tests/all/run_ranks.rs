//! Without a GPU: `kprof run` on a launcher whose workers write process files as
//! `libkprof_inject.so` would (a `torchrun` stand-in in `sh`), and a run without ranks that
//! keeps its keys for `kprof compare` and the results store.

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_core::io::{self, ReadOptions};
use kprof_core::ParamValue;

use crate::common::{self, fake_inject_lib as fake_lib};

fn kprof() -> Command {
    let mut c = common::kprof();
    c.env_remove("KPROF_STORE").env("KPROF_NO_DEVICE", "1");
    for v in [
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ] {
        c.env_remove(v);
    }
    c
}

use common::text;

/// The placement columns a worker writes.
#[derive(Clone, Copy, PartialEq)]
enum Columns {
    /// An older injection library: none.
    Old,
    /// `Device` and `DeviceUUID` (a process without a rank).
    NoRank,
    /// `Rank` (from `$RANK`), `Device` and `DeviceUUID`.
    Ranked,
}

/// A worker script: writes `kprof-run-<its pid>.csv` and `.json` into the run spec's output
/// folder, as the injection library does: three runs of `matmul` of `100 * (rank + 1) + run` ns
/// and one NCCL kernel outside every range, with the placement columns of `columns`.
fn worker(dir: &Path, name: &str, columns: Columns) -> PathBuf {
    let (head, cols, rank_json) = match columns {
        Columns::Old => ("", "", "null"),
        Columns::NoRank => (",Device,DeviceUUID", ",0,GPU-0000", "null"),
        Columns::Ranked => (
            ",Rank,Device,DeviceUUID",
            ",$RANK,0,GPU-0000",
            r#"{"rank": $RANK, "source": "RANK", "local_rank": $RANK, "world_size": 2}"#,
        ),
    };
    let script = format!(
        r#"dir=$(printf '%s' "$KPROF_RUN_SPEC" | sed -n 's/.*"output":"\([^"]*\)".*/\1/p')
base=$(( ${{RANK:-0}} * 100 + 100 ))
{{
echo "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,DeviceOrdinal{head},Benchmark,Run"
for run in 0 1 2; do
  echo "matmul,$((base + run)),gpu__time_duration.sum,gemm,NVIDIA H200,vm,,,ns,0{cols},app,$run"
done
echo "ncclDevKernel_AllReduce_Sum_f32_RING_LL,7,gpu__time_duration.sum,ncclDevKernel_AllReduce_Sum_f32_RING_LL,NVIDIA H200,vm,,,ns,0{cols},app,0"
}} > "$dir/kprof-run-$$.csv"
cat > "$dir/kprof-run-$$.json" <<JSON
{{"pid": $$, "cuda_injected": true, "rank": {rank_json},
 "devices": [{{"ordinal": 0, "uuid": "GPU-0000", "name": "NVIDIA H200", "kernels": 4}}], "warnings": [], "errors": []}}
JSON
"#
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    path
}

#[test]
fn a_launcher_of_two_ranks_gives_rows_per_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = fake_lib(tmp.path());
    let w = worker(tmp.path(), "worker.sh", Columns::Ranked);
    let out = tmp.path().join("out");
    // The launcher starts both workers (rank 1 first) and launches no kernel itself.
    let launcher = format!("RANK=1 sh {w} & RANK=0 sh {w} & wait", w = w.display());
    let o = kprof()
        .env("KPROF_INJECT_PATH", &lib)
        .args(["run", "--benchmark", "app", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", &launcher])
        .output()
        .unwrap();
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    // One line per rank, in rank order.
    let ranks: Vec<&str> = se.lines().filter(|l| l.starts_with("kprof: rank ")).collect();
    assert_eq!(ranks.len(), 2, "{se}");
    assert!(
        ranks[0].starts_with("kprof: rank 0 (RANK; local rank 0, world size 2): pid "),
        "{se}"
    );
    assert!(
        ranks[1].contains("device 0 (NVIDIA H200, GPU-0000), 4 kernel(s)"),
        "{se}"
    );
    // The table has Rank and Device columns (first: the workers' files do not say where their
    // durations came from, so no `durations:` line).
    let header = so.lines().next().unwrap();
    assert!(header.contains("Rank") && header.contains("Device"), "{so}");

    // raw.csv: Rank and Device are parameters (read back as such), each rank's runs from 0.
    let raw = io::read_raw_csv(&out.join("raw.csv"), &ReadOptions::default()).unwrap();
    assert_eq!(raw.param_names(), ["Rank", "Device"]);
    assert!(raw.extras.iter().all(|c| c.name != "DeviceUUID"));
    let mut seen: Vec<(i64, String, u32, f64)> = raw
        .samples
        .iter()
        .map(|s| {
            let series = raw.series_of(s);
            let rank = match raw.config_of(series).get("Rank") {
                Some(ParamValue::Int(r)) => *r,
                other => panic!("Rank {other:?}"),
            };
            (rank, series.key.annotation.clone(), s.run, s.value)
        })
        .collect();
    seen.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL".to_string();
    let mm = "matmul".to_string();
    assert_eq!(
        seen,
        [
            (0, mm.clone(), 0, 100.0),
            (0, mm.clone(), 1, 101.0),
            (0, mm.clone(), 2, 102.0),
            (0, nccl.clone(), 0, 7.0),
            (1, mm.clone(), 0, 200.0),
            (1, mm.clone(), 1, 201.0),
            (1, mm, 2, 202.0),
            (1, nccl, 0, 7.0),
        ]
    );
    // processed.csv: one row per (rank, region), rank 0 first, with each rank's own median.
    let processed = std::fs::read_to_string(out.join("processed.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(processed.as_bytes());
    let head = rows.headers().unwrap().clone();
    let col = |n: &str| {
        head.iter()
            .position(|h| h == n)
            .unwrap_or_else(|| panic!("{n} in {head:?}"))
    };
    let (rank, ann, median) = (col("Rank"), col("Annotation"), col("Median"));
    let got: Vec<(String, String, String)> = rows
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[rank].to_string(), r[ann].to_string(), r[median].to_string())
        })
        .filter(|r| r.1 == "matmul")
        .collect();
    assert_eq!(
        got,
        [
            ("0".into(), "matmul".into(), "101.0".into()),
            ("1".into(), "matmul".into(), "201.0".into())
        ]
    );
}

/// A run without ranks (today's single-process program) keeps today's keys and columns, so it
/// compares with, and stores beside, a run of an older injection library.
#[test]
fn a_run_without_ranks_keeps_its_keys_for_compare_and_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = fake_lib(tmp.path());
    let db = tmp.path().join("kprof.db");
    let mut outs = Vec::new();
    for (name, columns) in [("old.sh", Columns::Old), ("norank.sh", Columns::NoRank)] {
        let w = worker(tmp.path(), name, columns);
        let out = tmp.path().join(name.trim_end_matches(".sh"));
        let o = kprof()
            .env("KPROF_INJECT_PATH", &lib)
            .args(["run", "--quiet", "--benchmark", "app", "--store"])
            .arg(&db)
            .arg("--out")
            .arg(&out)
            .arg("--")
            .arg("sh")
            .arg(&w)
            .output()
            .unwrap();
        let (so, se) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{so}{se}");
        assert!(!se.contains("kprof: rank"), "{se}");
        outs.push(out);
    }
    let header = |dir: &Path| {
        let t = std::fs::read_to_string(dir.join("raw.csv")).unwrap();
        t.lines().next().unwrap().to_string()
    };
    assert_eq!(header(&outs[0]), header(&outs[1]));
    assert!(!header(&outs[1]).contains("Device,") && !header(&outs[1]).contains("Rank"));
    // Every row matched, no change: the files against each other, and the older run's file
    // against the last stored run (the newer one).
    let compare = |args: &[&std::ffi::OsStr]| {
        let o = kprof().arg("compare").args(args).output().unwrap();
        let (so, se) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{so}{se}");
        let rows: Vec<String> = so
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect();
        assert_eq!(rows.len(), 2, "{so}{se}");
        assert!(rows.iter().all(|l| l.ends_with("same")), "{so}");
    };
    for file in ["raw.csv", "processed.csv"] {
        compare(&[outs[0].join(file).as_os_str(), outs[1].join(file).as_os_str()]);
    }
    let old_raw = outs[0].join("raw.csv");
    compare(&[
        "--against".as_ref(),
        "last".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
        old_raw.as_os_str(),
    ]);
    // The store holds the two runs in the same two series.
    let o = kprof().env("KPROF_STORE", &db).arg("history").output().unwrap();
    let (so, se) = text(&o);
    assert!(o.status.success(), "{so}{se}");
    assert!(format!("{so}{se}").contains("2 series"), "{so}{se}");
}
