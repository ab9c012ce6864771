//! Host-side counter tests (no GPU): struct layouts against the real CUPTI 13.0 headers, metric
//! listing, validation with closest names, pass counts, device-level conflicts, and offline
//! re-evaluation of the images recorded on the H200 (`tests/fixtures/h200-cupti-counter-images/`).
//!
//! They need the `nvidia-cuda-cupti` 13.0.85 wheel unpacked (headers + libcupti +
//! libnvperf_host): `KPROF_CUPTI_WHEEL_DIR` (set by `scripts/test.sh`), else
//! `target/cupti-wheel/unpacked` (made by `scripts/setup-dev.sh`), else `/tmp/cupti-wheel/unpacked`.
//! Without one each test prints why it is skipped and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use kprof::counters::metrics::MetricsCatalog;
use kprof::counters::recorded::{evaluate_recorded, recorded_cases};
use kprof::counters::{cupti_in, CountersError, MetricKind, MetricScope};
use kprof::sys::cupti::profiler::{layout_table, v13_0_constants};

/// The committed recordings keep `counter_data.bin` gzipped (`counter_data.bin.gz`: 1.3-2 MB of
/// mostly empty image shrinks to 0.4-0.6 MB). Returns a folder with every file of `case`, `*.gz`
/// decompressed, under `tmp`; a folder without `.gz` files is returned as it is.
fn unpacked(case: &Path, tmp: &Path) -> PathBuf {
    use std::io::Read;
    let files: Vec<PathBuf> = std::fs::read_dir(case).unwrap().map(|e| e.unwrap().path()).collect();
    if !files.iter().any(|p| p.extension().is_some_and(|e| e == "gz")) {
        return case.to_path_buf();
    }
    let out = tmp.join(case.file_name().unwrap());
    std::fs::create_dir_all(&out).unwrap();
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        match name.strip_suffix(".gz") {
            Some(plain) => {
                let mut bytes = Vec::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap())
                    .read_to_end(&mut bytes)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                std::fs::write(out.join(plain), bytes).unwrap();
            }
            None => {
                std::fs::copy(&p, out.join(&name)).unwrap();
            }
        }
    }
    out
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The unpacked wheel root (holding `nvidia/cu13/{lib,include}`).
fn wheel_root() -> Option<PathBuf> {
    let mut c: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("KPROF_CUPTI_WHEEL_DIR").filter(|v| !v.is_empty()) {
        c.push(v.into());
    }
    c.push(workspace().join("target/cupti-wheel/unpacked"));
    c.push("/tmp/cupti-wheel/unpacked".into());
    c.into_iter().find(|d| d.join("nvidia/cu13/lib").is_dir())
}

pub(crate) fn cupti() -> Option<PathBuf> {
    let found = wheel_root().and_then(|w| cupti_in(&w));
    if found.is_none() {
        eprintln!(
            "SKIPPED: no unpacked nvidia-cuda-cupti wheel (set KPROF_CUPTI_WHEEL_DIR or run scripts/setup-dev.sh, which \
             unpacks it into target/cupti-wheel/unpacked)"
        );
    }
    found
}

fn catalog() -> Option<MetricsCatalog> {
    Some(MetricsCatalog::open(&cupti()?, "GH100").expect("open GH100 catalog"))
}

const SET3: [&str; 3] = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
];

#[test]
fn struct_layouts_match_cuda_13_0_headers() {
    let Some(root) = wheel_root() else {
        eprintln!("SKIPPED: no unpacked CUPTI wheel, so no headers to compare with");
        return;
    };
    let include = root.join("nvidia/cu13/include");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    if Command::new(&cxx).arg("--version").output().is_err() {
        eprintln!("SKIPPED: no C++ compiler ({cxx}) to read the headers with");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // cupti_range_profiler.h and cupti_callbacks.h include <cuda.h> and <builtin_types.h>, which
    // the wheel does not ship: stubs of the types they use suffice.
    std::fs::write(
        tmp.path().join("cuda.h"),
        "#pragma once\ntypedef struct CUctx_st *CUcontext;\ntypedef int CUdevice;\ntypedef int CUresult;\n\
         typedef struct CUstream_st *CUstream;\ntypedef struct CUfunc_st *CUfunction;\n\
         typedef struct CUgraph_st *CUgraph;\ntypedef struct CUgraphExec_st *CUgraphExec;\n\
         typedef struct CUgraphNode_st *CUgraphNode;\ntypedef int CUgraphNodeType;\ntypedef int CUstreamAttrID;\n\
         typedef union { int i; } CUstreamAttrValue;\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("builtin_types.h"),
        "#pragma once\ntypedef int cudaError_t;\n",
    )
    .unwrap();
    let table = layout_table();
    let consts = v13_0_constants();
    let mut src = String::from(
        "#include <cstdio>\n#include <cstddef>\n#include <cupti_profiler_target.h>\n#include <cupti_target.h>\n\
         #include <cupti_profiler_host.h>\n#include <cupti_range_profiler.h>\n#include <cupti_callbacks.h>\nint main(){\n",
    );
    for (key, _) in &table {
        match key.split_once('.') {
            Some((s, f)) => src.push_str(&format!("printf(\"{key} %zu\\n\", (size_t)offsetof({s}, {f}));\n")),
            None => src.push_str(&format!("printf(\"{key}#macro %zu\\n\", (size_t){key}_STRUCT_SIZE);\n")),
        }
    }
    for (name, _) in &consts {
        src.push_str(&format!(
            "printf(\"{name}#const %zu\\n\", (size_t){name}_STRUCT_SIZE);\n"
        ));
    }
    src.push_str("return 0;}\n");
    let c = tmp.path().join("sizes.cpp");
    std::fs::write(&c, src).unwrap();
    let exe = tmp.path().join("sizes");
    let text = common::build_and_run(
        Command::new(&cxx)
            .args(["-std=c++17", "-o"])
            .arg(&exe)
            .arg(&c)
            .arg("-I")
            .arg(tmp.path())
            .arg("-I")
            .arg(&include),
        &exe,
    );
    let c_vals: std::collections::HashMap<&str, usize> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    let mut checked = 0;
    for (key, rust) in &table {
        let ckey = if key.contains('.') {
            key.clone()
        } else {
            format!("{key}#macro")
        };
        assert_eq!(c_vals[ckey.as_str()], *rust, "{key}: C header vs Rust");
        checked += 1;
    }
    for (name, val) in &consts {
        assert_eq!(c_vals[format!("{name}#const").as_str()], *val, "{name}_STRUCT_SIZE");
        checked += 1;
    }
    eprintln!("checked {checked} offsets and sizes against {}", include.display());
}

#[test]
fn gh100_listing_has_dram_bytes_read() {
    let Some(cat) = catalog() else { return };
    assert!(
        cat.base_metrics().len() > 1000,
        "only {} base metrics",
        cat.base_metrics().len()
    );
    let b = cat.base("dram__bytes_read").expect("dram__bytes_read listed");
    assert_eq!(b.kind, MetricKind::Counter);
    assert_eq!(b.dim_unit, "byte");
    assert_eq!(b.hw_unit, "dram");
    assert!(b.suffixes.iter().any(|s| s == ".sum"));
    assert!(b.suffixes.iter().any(|s| s == ".sum.per_second"));
    assert!(b.suffixes.iter().any(|s| s == ".avg.pct_of_peak_sustained_elapsed"));
    let t = cat.base("sm__throughput").unwrap();
    assert_eq!(t.kind, MetricKind::Throughput);
    assert!(t
        .full_names()
        .any(|n| n == "sm__throughput.avg.pct_of_peak_sustained_elapsed"));
    assert!(cat
        .base_metrics()
        .iter()
        .any(|b| b.kind == MetricKind::Ratio && b.suffixes.iter().any(|s| s == ".ratio")));
    let dram = cat.filter(Some("DRAM__BYTES"));
    assert!(dram.iter().all(|b| b.name.contains("dram__bytes")) && dram.len() >= 3);
    let p = cat.properties("gpu__time_duration.sum").unwrap();
    assert_eq!(p.dim_unit, "ns");
    assert_eq!(
        cat.properties("dram__bytes_read.sum.per_second").unwrap().dim_unit,
        "byte/s"
    );
    assert!(cat.num_full_names() > 100_000);
    // Every unit of the catalog is in ncu's spelling (units::ncu_unit knows all its atoms).
    for b in cat.base_metrics() {
        let u = &b.dim_unit;
        assert!(
            !u.contains("percent") && !u.contains("second") && !u.contains("_cycle") && !u.contains("instruction"),
            "{}: unit {u:?} not mapped",
            b.name
        );
    }
    assert_eq!(
        cat.properties("gpc__cycles_elapsed.avg.per_second").unwrap().dim_unit,
        "Hz"
    );
    assert_eq!(cat.properties("sm__warps_active.avg").unwrap().dim_unit, "cycle*warp");
}

#[test]
fn validation_names_closest_metrics() {
    let Some(cat) = catalog() else { return };
    let infos = cat.validate(&SET3).unwrap();
    assert_eq!(infos.len(), 3);
    assert_eq!(infos[2].properties.dim_unit, "%");
    assert!(infos.iter().all(|i| i.scope == MetricScope::Context));

    let err = cat.validate(&[
        "dram__bytes_red.sum",
        "gpu__time_duration.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elpased",
    ]);
    let Err(CountersError::UnknownMetrics(list)) = err else {
        panic!("expected UnknownMetrics, got {err:?}")
    };
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].closest[0], "dram__bytes_read.sum");
    assert_eq!(list[0].closest.len(), 3);
    assert_eq!(list[1].closest[0], "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    let msg = CountersError::UnknownMetrics(list).to_string();
    assert!(msg.contains("closest valid names: dram__bytes_read.sum"), "{msg}");

    let Err(CountersError::UnknownMetrics(list)) = cat.validate(&["dram__bytes_read"]) else {
        panic!()
    };
    assert!(list[0].reason.contains("rollup"), "{:?}", list[0]);
    assert!(
        list[0].closest.iter().any(|c| c == "dram__bytes_read.sum"),
        "{:?}",
        list[0].closest
    );

    let Err(CountersError::UnknownMetrics(list)) = cat.validate(&["not_a_metric_at_all"]) else {
        panic!()
    };
    assert_eq!(list[0].closest.len(), 3);

    // Group-qualified names are accepted through CUPTI directly.
    assert!(cat.validate(&["TPC.TriageCompute.sm__cycles_active.sum"]).is_ok());
}

#[test]
fn pass_count_of_the_h200_set() {
    let Some(cat) = catalog() else { return };
    // Measured on the H200 (gpu-stack.md §3.5): these 3 metrics need 8 passes, config image 10,512 bytes.
    assert_eq!(cat.num_passes(&SET3).unwrap(), 8);
    assert_eq!(cat.config_image(&SET3).unwrap().len(), 10_512);
    assert_eq!(cat.num_passes(&["gpu__time_duration.sum"]).unwrap(), 1);
    assert_eq!(
        cat.num_passes(&["dram__bytes_read.sum", "dram__bytes_write.sum"])
            .unwrap(),
        1
    );
}

#[test]
fn device_level_metrics_cannot_mix_with_context_level() {
    let Some(cat) = catalog() else { return };
    assert_eq!(cat.base("nvlrx__bytes").unwrap().scope(), MetricScope::Device);
    assert!(cat
        .validate(&["nvlrx__bytes.sum", "nvltx__bytes.sum", "gpu__time_duration.sum"])
        .is_ok());
    let err = cat.validate(&["nvlrx__bytes.sum", "dram__bytes_read.sum"]).unwrap_err();
    let CountersError::IncompatibleMetrics(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(
        msg.contains("nvlrx__bytes.sum (device-level") && msg.contains("dram__bytes_read.sum (context-level"),
        "{msg}"
    );
}

#[test]
fn unknown_chip_lists_supported_ones() {
    let Some(lib) = cupti() else { return };
    match MetricsCatalog::open(&lib, "XX100") {
        Err(CountersError::InvalidChip { supported, .. }) => assert!(supported.iter().any(|c| c == "GH100")),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("XX100 accepted"),
    }
}

#[test]
fn recorded_h200_images_reevaluate_exactly() {
    let root = workspace().join("tests/fixtures/h200-cupti-counter-images");
    let cases = recorded_cases(&root);
    assert!(
        !cases.is_empty(),
        "no recordings in {} (the committed H200 recordings)",
        root.display()
    );
    let Some(lib) = cupti() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for case in cases {
        let dir = unpacked(&case, tmp.path());
        let check = evaluate_recorded(&lib, &dir).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let bad = check.mismatches();
        assert!(bad.is_empty(), "{}:\n{}", case.display(), bad.join("\n"));
        assert!(!check.reevaluated.is_empty());
        eprintln!("{}: {} ranges identical", case.display(), check.reevaluated.len());
    }
}

/// Without the wheel: the committed H200 recordings read back, and their values are what the
/// program did (`scale` over 64 Mi floats reads and writes 256 MiB per launch).
#[test]
fn recorded_h200_values_are_plausible() {
    use kprof::counters::recorded::read_recording;
    let root = workspace().join("tests/fixtures/h200-cupti-counter-images");
    let cases = recorded_cases(&root);
    let names: Vec<String> = cases
        .iter()
        .map(|c| c.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["kernel_replay", "user_replay"]);
    let tmp = tempfile::tempdir().unwrap();
    let mib256 = 256.0 * 1024.0 * 1024.0;
    let close = |v: f64, want: f64, tol: f64| (v / want - 1.0).abs() <= tol;
    for case in &cases {
        let rec = read_recording(&unpacked(case, tmp.path())).unwrap();
        assert_eq!(rec.chip, "GH100");
        assert_eq!(rec.api_version, 130_001);
        assert_eq!(rec.passes, 8);
        assert_eq!(
            rec.metrics,
            [
                "gpu__time_duration.sum",
                "dram__bytes_read.sum",
                "dram__bytes_write.sum",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed"
            ]
        );
        assert_eq!(rec.config_image.len(), 10_600);
        assert!(rec.counter_data.len() > 1_000_000, "{}", rec.counter_data.len());
        let value = |r: usize, m: &str| -> f64 { rec.ranges[r].values.iter().find(|(n, _)| n == m).unwrap().1 };
        let launches: Vec<f64> = match rec.mode.as_str() {
            "kernel" => {
                assert_eq!(rec.closure_runs, 1);
                assert_eq!(rec.ranges.len(), 3);
                vec![1.0; 3]
            }
            _ => {
                assert_eq!(rec.closure_runs, 8, "user replay runs the closure once per pass");
                let n: Vec<&str> = rec.ranges.iter().map(|r| r.name.as_str()).collect();
                assert_eq!(n, ["scale_x1", "scale_x3"]);
                vec![1.0, 3.0]
            }
        };
        for (r, k) in launches.iter().enumerate() {
            assert!(
                close(value(r, "dram__bytes_read.sum"), k * mib256, 0.001),
                "{case:?} {r}"
            );
            assert!(
                close(value(r, "dram__bytes_write.sum"), k * mib256, 0.01),
                "{case:?} {r}"
            );
            // ~2.4-3.4 TB/s on the H200's HBM3e: 160-230 us per launch.
            let t = value(r, "gpu__time_duration.sum") / k;
            assert!((150_000.0..230_000.0).contains(&t), "{case:?} {r}: {t}");
            let sm = value(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
            assert!((10.0..40.0).contains(&sm), "{case:?} {r}: {sm}");
        }
    }
}

/// What `Profiler::bench` does on the host before any GPU work (the run loop's counter plan):
/// units and pass count of the seed's step 6 and 7 sets, closest names, device-level conflicts.
#[test]
fn bench_counter_plan_validates_on_the_host() {
    use kprof::runner::{CounterPlan, ReplayMode};
    let Some(cat) = catalog() else { return };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let step6 = s(&[
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ]);
    let plan = CounterPlan::new(&cat, &step6, ReplayMode::Kernel).unwrap();
    assert_eq!(plan.chip, "GH100");
    assert_eq!(plan.units, ["%", "%"]);
    assert!(plan.passes >= 1, "{plan:?}");
    let step7 = s(&["dram__bytes_read.sum", "dram__bytes_write.sum"]);
    let plan = CounterPlan::new(&cat, &step7, ReplayMode::User).unwrap();
    assert_eq!((plan.units.clone(), plan.passes), (s(&["byte", "byte"]), 1));
    assert!(
        plan.describe().contains("1 replay pass(es) in user replay"),
        "{}",
        plan.describe()
    );
    // The plan of durations from the counters (DurationSource::Counters): gpu__time_duration.sum
    // first, in the timing tier's unit, with the step 7 set still one pass.
    let with_duration = s(&[
        "gpu__time_duration.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
    ]);
    let plan = CounterPlan::new(&cat, &with_duration, ReplayMode::Application).unwrap();
    assert_eq!(
        (plan.units.clone(), plan.passes),
        (s(&[kprof::runner::DEFAULT_UNIT, "byte", "byte"]), 1)
    );
    // The plan of durations alone, which the run loop builds from the opened session without the
    // catalog (CounterPlan::for_durations), is what the catalog gives: one pass, in ns.
    for mode in [ReplayMode::Kernel, ReplayMode::Application, ReplayMode::User] {
        let by_catalog = CounterPlan::new(&cat, &s(&["gpu__time_duration.sum"]), mode).unwrap();
        assert_eq!(by_catalog, CounterPlan::for_durations("GH100", 1, mode));
    }
    let e = CounterPlan::new(&cat, &s(&["dram__bytes_raed.sum"]), ReplayMode::Kernel).unwrap_err();
    let msg = kprof::EngineError::from(e).to_string();
    assert!(
        msg.contains("closest valid names") && msg.contains("dram__bytes_read.sum"),
        "{msg}"
    );
    let e = CounterPlan::new(
        &cat,
        &s(&["nvlrx__bytes.sum", "dram__bytes_read.sum"]),
        ReplayMode::Kernel,
    )
    .unwrap_err();
    assert!(matches!(e, CountersError::IncompatibleMetrics(_)), "{e:?}");
}
