//! ncu CSV import: the hand-written fixtures in tests/fixtures/ncu-csv-exports (documented format) and any
//! exports captured on the H200 (`h200-*.csv`, see the README there).

use std::collections::BTreeMap;
use std::path::PathBuf;

use kprof::ncu::{parse_ncu_csv, parse_ncu_csv_file, ImportOptions, NcuError, NumberStyle};
use kprof_core::{Config, RawResults};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/ncu-csv-exports")
        .join(name)
}

/// (benchmark, annotation, config, metric) → run → (value, kernel names, unit).
type Table = BTreeMap<(String, String, String, String), BTreeMap<u32, (f64, String, String)>>;

fn table(raw: &RawResults) -> Table {
    let mut t = Table::new();
    for s in &raw.samples {
        let series = raw.series_of(s);
        let k = &series.key;
        let cfg = raw.config_of(series).to_string();
        let prev = t
            .entry((k.benchmark.clone(), k.annotation.clone(), cfg, k.metric.clone()))
            .or_default()
            .insert(
                s.run,
                (
                    s.value,
                    raw.kernel_names[s.kernel as usize].clone(),
                    series.unit.clone(),
                ),
            );
        assert!(prev.is_none(), "duplicate run");
    }
    t
}

/// A series' (run, value) pairs, by run.
fn run_values(m: &BTreeMap<u32, (f64, String, String)>) -> Vec<(u32, f64)> {
    m.iter().map(|(run, v)| (*run, v.0)).collect()
}

/// The hand-written keyed export (`kprof-keyed.csv`), parsed, and as a table.
fn keyed_fixture() -> (RawResults, Table) {
    let raw = parse_ncu_csv_file(&fixture("kprof-keyed.csv"), &opts()).unwrap();
    let t = table(&raw);
    (raw, t)
}

fn get<'a>(t: &'a Table, b: &str, a: &str, cfg: &str, m: &str) -> &'a BTreeMap<u32, (f64, String, String)> {
    t.get(&(b.into(), a.into(), cfg.into(), m.into()))
        .unwrap_or_else(|| panic!("no series {b}/{a}/{cfg}/{m}; have {:#?}", t.keys().collect::<Vec<_>>()))
}

const T: &str = "gpu__time_duration.sum";
const R: &str = "dram__bytes_read.sum";
const W: &str = "dram__bytes_write.sum";
const SM: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

fn opts() -> ImportOptions {
    opts_with(|_| {})
}

/// [`opts`] with `f` applied.
fn opts_with(f: impl FnOnce(&mut ImportOptions)) -> ImportOptions {
    import_with(|o| {
        o.benchmark = "sweep".into();
        f(o);
    })
}

/// The default options with `f` applied.
fn import_with(f: impl FnOnce(&mut ImportOptions)) -> ImportOptions {
    let mut o = ImportOptions::default();
    f(&mut o);
    o
}

#[test]
fn keyed_fixture_values_units_and_thousands_separators() {
    let (raw, t) = keyed_fixture();
    let m = get(&t, "sweep", "matmul", "config=0", T);
    assert_eq!(run_values(m), [(0, 60_000.0), (1, 60_032.0)]);
    assert_eq!(m[&0].2, "ns");
    assert!(m[&0].1.starts_with("sm80_xmma_gemm_f32f32"), "{}", m[&0].1);
    let r = get(&t, "sweep", "matmul", "config=0", R);
    assert_eq!(r[&0].0, 4_264_448.0);
    assert_eq!(r[&0].2, "byte");
    let sm = get(&t, "sweep", "matmul", "config=0", SM);
    assert_eq!(sm[&0].0, 45.12);
    assert_eq!(sm[&0].2, "%");
    let s = get(&t, "sweep", "scale", "config=0", R);
    assert_eq!(run_values(s), [(0, 268_451_840.0), (1, 268_451_328.0)]);
    // Device attributes are metadata, not metrics.
    assert!(!t.keys().any(|k| k.3.starts_with("device__attribute")));
    assert_eq!(raw.devices.len(), 1);
    let d = &raw.devices[0];
    assert_eq!(d.gpu, "NVIDIA H200");
    assert_eq!(d.host, "vm");
    assert_eq!(d.compute_clock_khz, Some(1_980_000.0));
    assert_eq!(d.memory_clock_khz, Some(3_201_000.0));
}

#[test]
fn keyed_fixture_varying_kernel_counts_are_summed_with_breakdown() {
    let (raw, t) = keyed_fixture();
    let m = get(&t, "sweep", "matmul", "config=1", T);
    assert_eq!(run_values(m), [(0, 2_670_688.0), (1, 2_670_800.0)]);
    assert!(
        m[&0]
            .1
            .contains("splitk_execute_kernel_cublas|void splitKreduce_kernel<32, 16,"),
        "{}",
        m[&0].1
    );
    // Percentages are summed too (the reducer is the caller's choice; Sum is the default).
    assert!((get(&t, "sweep", "matmul", "config=1", SM)[&0].0 - 100.6).abs() < 1e-9);
    // Breakdown: 2 runs x 2 kernels x 4 metrics; single-kernel groups have none.
    assert_eq!(raw.kernel_breakdown.len(), 16);
    let time_series = raw
        .series
        .iter()
        .position(|s| {
            s.key.metric == T
                && s.key.annotation == "matmul"
                && raw.configs[s.key.config as usize].to_string() == "config=1"
        })
        .unwrap() as u32;
    let mut parts: Vec<(u32, u32, f64)> = raw
        .kernel_breakdown
        .iter()
        .filter(|k| k.series == time_series)
        .map(|k| (k.run, k.position, k.value))
        .collect();
    parts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(
        parts,
        vec![
            (0, 0, 2_000_000.0),
            (0, 1, 670_688.0),
            (1, 0, 2_000_100.0),
            (1, 1, 670_700.0)
        ]
    );
}

#[test]
fn keyed_fixture_skipped_run_and_na_and_second_call() {
    let (raw, t) = keyed_fixture();
    // Config 2: run 1 was skipped; runs 0 and 2 keep their own indices.
    let m = get(&t, "sweep", "matmul", "config=2", T);
    assert_eq!(run_values(m), [(0, 2_670_688.0), (2, 2_671_000.0)]);
    // n/a is NaN (a failed run), the other metrics of that kernel are fine.
    let w = get(&t, "sweep", "matmul", "config=2", W);
    assert_eq!(w[&0].0, 67_108_864.0);
    assert!(w[&2].0.is_nan());
    // The second benchmark call (index 1) is its own benchmark.
    assert_eq!(get(&t, "sweep#1", "matmul", "config=0", T)[&0].0, 61_000.0);
    // Counts: matmul c0: 2+2+2 runs, scale 2, the second call: 1 → 9 groups x 4 metrics.
    assert_eq!(raw.samples.len(), 9 * 4);
}

#[test]
fn configs_and_call_names_from_the_caller() {
    let mut o = opts();
    o.configs = vec![
        Config::new().with("n", 1024),
        Config::new().with("n", 2048),
        Config::new().with("n", 4096),
    ];
    o.call_names = vec!["mm".into(), "mm_again".into()];
    o.metrics = Some(vec![T.into()]);
    let raw = parse_ncu_csv_file(&fixture("kprof-keyed.csv"), &o).unwrap();
    let t = table(&raw);
    assert_eq!(get(&t, "mm", "matmul", "n=4096", T)[&2].0, 2_671_000.0);
    assert_eq!(get(&t, "mm_again", "matmul", "n=1024", T)[&0].0, 61_000.0);
    assert!(t.keys().all(|k| k.3 == T));
}

#[test]
fn european_fixture_matches_the_c_locale_one() {
    let raw = parse_ncu_csv_file(&fixture("kprof-keyed-european.csv"), &opts()).unwrap();
    let t = table(&raw);
    assert_eq!(get(&t, "sweep", "matmul", "config=0", R)[&0].0, 4_264_448.0);
    assert_eq!(get(&t, "sweep", "matmul", "config=0", SM)[&1].0, 45.2);
    assert_eq!(get(&t, "sweep", "matmul", "config=1", T)[&0].0, 2_670_688.0);
    assert_eq!(raw.devices[0].compute_clock_khz, Some(1_980_000.0));
    // Forcing the style gives the same; forcing the wrong one is an error naming the style found.
    let forced = parse_ncu_csv_file(
        &fixture("kprof-keyed-european.csv"),
        &opts_with(|o| o.number_style = NumberStyle::European),
    )
    .unwrap();
    assert_eq!(table(&forced), t);
    let wrong = parse_ncu_csv_file(
        &fixture("kprof-keyed-european.csv"),
        &opts_with(|o| o.number_style = NumberStyle::C),
    )
    .unwrap_err();
    assert!(wrong.to_string().contains("european style"), "{wrong}");
}

#[test]
fn plain_ncu_report_ranges_occurrences_and_kernels_outside_ranges() {
    let raw = parse_ncu_csv_file(&fixture("plain-ncu.csv"), &import_with(|o| o.benchmark = "app".into())).unwrap();
    let t = table(&raw);
    // Default-domain push/pop range "matmul": three back-to-back occurrences of one kernel.
    let m = get(&t, "app", "matmul", "", T);
    assert_eq!(
        m.iter().map(|(r, v)| (*r, v.0)).collect::<Vec<_>>(),
        vec![(0, 60_000.0), (1, 60_100.0), (2, 60_200.0)]
    );
    // "splitk": two occurrences of two kernels each.
    let s = get(&t, "app", "splitk", "", T);
    assert_eq!(
        s.iter().map(|(r, v)| (*r, v.0)).collect::<Vec<_>>(),
        vec![(0, 2_670_688.0), (1, 2_670_800.0)]
    );
    // Start/end ranges in domain "app": each id is a run; the region is domain@name.
    let st = get(&t, "app", "app@step", "", T);
    assert_eq!(
        st.iter().map(|(r, v)| (*r, v.0)).collect::<Vec<_>>(),
        vec![(0, 125_000.0), (1, 125_100.0)]
    );
    // Kernels outside any range: grouped by kernel name, one run per launch.
    let ew = t
        .keys()
        .find(|k| k.1.starts_with("void at::native::vectorized_elementwise_kernel") && k.3 == T)
        .unwrap();
    let runs = &t[ew];
    assert_eq!(
        runs.iter().map(|(r, v)| (*r, v.0)).collect::<Vec<_>>(),
        vec![(0, 124_768.0), (1, 124_900.0)]
    );
    assert_eq!(raw.devices[0].gpu, "");
    assert_eq!(raw.devices[0].compute_clock_khz, None);
}

#[test]
fn auto_scaled_units_are_kept_and_missing_units_row_is_fine() {
    let csv = concat!(
        "\"ID\",\"Kernel Name\",\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\",\"gpu__time_duration.sum\"\n",
        "\"\",\"\",\"\",\"us\"\n",
        "\"0\",\"k\",\"1  \"\"kprof:r#c0.0.0:none:none:none:none:REGISTERED:r#c0.0.0\"\" \",\"202.048000\"\n",
    );
    let raw = parse_ncu_csv(csv, &opts()).unwrap();
    assert_eq!(raw.series[0].unit, "us");
    assert_eq!(raw.samples[0].value, 202.048);
    let no_units = concat!(
        "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n",
        "\"0\",\"k\",\"1,000\"\n"
    );
    let raw = parse_ncu_csv(no_units, &opts()).unwrap();
    assert_eq!(raw.series[0].unit, "");
    assert_eq!(raw.samples[0].value, 1000.0);
    assert_eq!(raw.series[0].key.annotation, "k");
}

#[test]
fn errors_name_the_problem() {
    let e = parse_ncu_csv("==PROF== nothing\n", &opts()).unwrap_err();
    assert!(matches!(e, NcuError::Csv { .. }));
    assert!(e.to_string().contains("not an Nsight Compute CSV export"), "{e}");
    let e = parse_ncu_csv("\"Kernel\",\"x\"\n\"a\",\"1\"\n", &opts()).unwrap_err();
    assert!(
        e.to_string().contains("no \"ID\" column") && e.to_string().contains("--page raw"),
        "{e}"
    );
    let e = parse_ncu_csv_file(
        &fixture("kprof-keyed.csv"),
        &opts_with(|o| o.metrics = Some(vec!["nope__x.sum".into()])),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("kprof-keyed.csv") && msg.contains("\"nope__x.sum\"") && msg.contains("gpu__time_duration.sum"),
        "{msg}"
    );
    let e = parse_ncu_csv_file(
        &fixture("kprof-keyed.csv"),
        &opts_with(|o| o.metrics = Some(vec!["device__attribute_display_name".into()])),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not numbers"), "{e}");
}

/// Exports captured on the H200 by gpu-checks/ncu-capture.sh: every executed (call, config, run,
/// region) of capture_program.py's manifest is found, nothing else. The committed captures must be
/// there (a moved folder fails here instead of passing with nothing checked).
#[test]
fn h200_captures_when_present() {
    let dir = fixture("");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut checked = 0;
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("h200-") && name.ends_with(".csv")) {
            continue;
        }
        let manifest = dir.join(name.replace(".csv", ".expected.txt"));
        let text = std::fs::read_to_string(&manifest).unwrap_or_default();
        // capture_program.py records how it pushed ranges; without the nvtx package or the
        // interop library they are keyed names in the default domain.
        let domain = if text.contains("NVTX method: torch-default-domain") {
            ""
        } else {
            "kprof"
        };
        let mut opts = ImportOptions::default();
        opts.benchmark = "capture".into();
        opts.domain = domain.into();
        let raw = parse_ncu_csv_file(&e.path(), &opts).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(!raw.samples.is_empty(), "{name}: no samples");
        if text.is_empty() {
            continue;
        }
        let mut want: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        want.sort();
        let mut have: Vec<String> = raw
            .samples
            .iter()
            .filter(|s| raw.series_of(s).key.metric == T && !raw.config_of(raw.series_of(s)).params.is_empty())
            .map(|s| {
                let k = &raw.series_of(s).key;
                format!(
                    "{} {} {} {}",
                    k.benchmark,
                    k.annotation,
                    raw.config_of(raw.series_of(s)),
                    s.run
                )
            })
            .collect();
        have.sort();
        assert_eq!(have, want, "{name}");
        checked += 1;
    }
    assert!(
        checked >= 2,
        "{}: {checked} H200 captures with a manifest, want the two committed",
        dir.display()
    );
}

fn runs_of(t: &Table, b: &str, a: &str, cfg: &str) -> Vec<(u32, f64, usize)> {
    get(t, b, a, cfg, T)
        .iter()
        .map(|(r, v)| (*r, v.0, v.1.split('|').count()))
        .collect()
}

/// The real exports of 2026-11-30 (ncu 2025.3.1 on the H200, capture_program.py; see the
/// README): values, kernel counts, the device and the NVTX cells as ncu really wrote them.
#[test]
fn h200_kprof_export_values_kernels_and_device() {
    let mut opts = ImportOptions::default();
    opts.benchmark = "capture".into();
    let raw = parse_ncu_csv_file(&fixture("h200-kprof-cache-all.csv"), &opts).unwrap();
    // No unit on the clock rates in the real units row: the values are kHz.
    assert_eq!(raw.devices.len(), 1);
    assert_eq!(raw.devices[0].gpu, "NVIDIA H200");
    assert_eq!(raw.devices[0].host, "127.0.0.1");
    assert_eq!(raw.devices[0].compute_clock_khz, Some(1_980_000.0));
    assert_eq!(raw.devices[0].memory_clock_khz, Some(3_201_000.0));
    let t = table(&raw);
    let c = |i: u32| format!("config={i}");
    // cuBLAS picks 2 kernels for 256^3, 1 for 1024^3, split-K + reduce for 64x65536x64, 1 for
    // 4096^3; run 1 of config 1 was skipped by the program.
    assert_eq!(
        runs_of(&t, "capture", "matmul", &c(0)),
        [(0, 11_392.0, 2), (1, 11_104.0, 2), (2, 11_232.0, 2)]
    );
    assert_eq!(
        runs_of(&t, "capture", "matmul", &c(1)),
        [(0, 61_472.0, 1), (2, 61_152.0, 1)]
    );
    assert_eq!(
        runs_of(&t, "capture", "matmul", &c(2)),
        [(0, 33_984.0, 2), (1, 33_952.0, 2), (2, 34_592.0, 2)]
    );
    let m2 = &get(&t, "capture", "matmul", &c(2), T)[&0].1;
    assert!(m2.contains("cutlass") && m2.contains("splitKreduce_kernel"), "{m2}");
    assert_eq!(
        runs_of(&t, "capture", "matmul", &c(3)),
        [(0, 2_682_464.0, 1), (1, 2_679_296.0, 1), (2, 2_679_584.0, 1)]
    );
    // chain: config k launches k+1 kernels.
    assert_eq!(runs_of(&t, "capture", "chain", &c(0)), [(0, 4_000.0, 1)]);
    assert_eq!(runs_of(&t, "capture", "chain", &c(1)), [(0, 8_352.0, 2)]);
    assert_eq!(runs_of(&t, "capture", "chain", &c(2)), [(0, 12_448.0, 3)]);
    // two: the second kernel also sits in a default-domain range, listed before kprof's.
    assert_eq!(runs_of(&t, "capture", "two", &c(0)), [(0, 8_288.0, 2), (1, 8_256.0, 2)]);
    // outer > inner: each kernel goes to its innermost keyed range only.
    assert_eq!(runs_of(&t, "capture", "outer", &c(0)), [(0, 4_160.0, 1)]);
    assert_eq!(runs_of(&t, "capture", "inner", &c(0)), [(0, 4_064.0, 1)]);
    // The second bench call (index 1).
    assert_eq!(runs_of(&t, "capture#1", "matmul", &c(0)), [(0, 10_912.0, 2)]);
    // Every kernel of the export is in exactly one sample: 31 kernels, 19 samples.
    let samples: Vec<_> = raw
        .samples
        .iter()
        .filter(|s| raw.series_of(s).key.metric == T)
        .collect();
    assert_eq!(samples.len(), 19);
    let kernels: usize = t
        .iter()
        .filter(|(k, _)| k.3 == T)
        .flat_map(|(_, runs)| runs.values())
        .map(|v| v.1.split('|').count())
        .sum();
    assert_eq!(kernels, 31);

    // The narrowed export (`--metrics gpu__time_duration.sum,...`) gives the same durations.
    let narrowed = parse_ncu_csv_file(&fixture("h200-kprof-cache-all-narrowed.csv"), &opts).unwrap();
    let tn = table(&narrowed);
    for (k, runs) in t.iter().filter(|(k, _)| k.3 == T) {
        assert_eq!(Some(runs), tn.get(k), "{k:?}");
    }
}

/// The plain report (no kprof; torch.cuda.nvtx ranges "matmul" x3 and "scale" x2, kernels
/// outside any range around them).
#[test]
fn h200_plain_export_ranges_and_kernels_outside() {
    let raw = parse_ncu_csv_file(
        &fixture("h200-plain.csv"),
        &import_with(|o| o.benchmark = "plain".into()),
    )
    .unwrap();
    let t = table(&raw);
    assert_eq!(
        runs_of(&t, "plain", "matmul", ""),
        [(0, 61_344.0, 1), (1, 62_144.0, 1), (2, 61_344.0, 1)]
    );
    assert_eq!(runs_of(&t, "plain", "scale", ""), [(0, 4_320.0, 1), (1, 4_256.0, 1)]);
    // 24 kernels: 5 in ranges, 19 outside (warm-ups and the final `x + 3.0`), each one run of
    // the region named after its kernel.
    let outside: usize = t
        .iter()
        .filter(|(k, _)| k.3 == T && k.1 != "matmul" && k.1 != "scale")
        .map(|(_, runs)| runs.len())
        .sum();
    assert_eq!(outside, 19);
    assert_eq!(raw.devices[0].compute_clock_khz, Some(1_980_000.0));
}

/// A plain import of a kprof export: without the kprof domain the ranges are plain ranges, and
/// the kernel inside `torch.cuda.nvtx` range "user_inner" (listed before kprof's range in the
/// cell) belongs to "user_inner", not to `kprof@two#...`.
#[test]
fn h200_cross_domain_cell_in_a_plain_import() {
    let raw = parse_ncu_csv_file(
        &fixture("h200-kprof-cache-all.csv"),
        &import_with(|o| {
            o.benchmark = "p".into();
            o.domain = "no-such-domain".into();
        }),
    )
    .unwrap();
    let t = table(&raw);
    assert_eq!(runs_of(&t, "p", "user_inner", ""), [(0, 4_160.0, 1), (1, 4_096.0, 1)]);
    assert_eq!(runs_of(&t, "p", "kprof@two#c0.0.0", ""), [(0, 4_128.0, 1)]);
    assert_eq!(runs_of(&t, "p", "kprof@inner#c0.0.0", ""), [(0, 4_064.0, 1)]);
}

/// The ncu backend's own export on the H200
/// (tests/fixtures/ncu-csv-exports/h200-python-backend-ncu/README.md) parses to the raw table
/// `kprof import` made of it there: same regions, runs and values, by key.
#[test]
fn ncu_backend_export_from_the_h200_reproduces_its_raw_table() {
    let dir = fixture("h200-python-backend-ncu");
    let raw = parse_ncu_csv_file(&dir.join("step2-export.csv"), &ImportOptions::default()).unwrap();
    let mut got: Vec<(String, u32, f64)> = raw
        .samples
        .iter()
        .filter(|s| raw.series_of(s).key.metric == "gpu__time_duration.sum")
        .map(|s| (raw.series_of(s).key.annotation.clone(), s.run, s.value))
        .collect();
    let metrics: Vec<&str> = raw.series.iter().map(|s| s.key.metric.as_str()).collect();
    assert!(got.iter().all(|g| g.2.is_finite()), "{got:?} {metrics:?}");
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let text = std::fs::read_to_string(dir.join("step2-raw.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (a, v, r) = (col("Annotation"), col("Value"), col("Run"));
    let mut want: Vec<(String, u32, f64)> = rdr
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            (rec[a].to_string(), rec[r].parse().unwrap(), rec[v].parse().unwrap())
        })
        .collect();
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(got.len(), 20);
    assert_eq!(got, want);
}

/// A message names the line of the file, counting the `==PROF==` lines that
/// are not CSV records.
#[test]
fn error_lines_count_the_non_csv_lines() {
    let text = std::fs::read_to_string(fixture("kprof-keyed.csv")).unwrap();
    assert!(text.lines().next().unwrap().starts_with("==PROF=="));
    let e = parse_ncu_csv(&text, &opts_with(|o| o.number_style = NumberStyle::European)).unwrap_err();
    let line = text.lines().position(|l| l.contains("1,980,000")).unwrap() + 1;
    assert!(e.to_string().starts_with(&format!("<input>:{line}:")), "{e}");
    // A bad ID on file line 4, after two lines that are not CSV records.
    let text = "==PROF== x\n==WARNING== y\n\"ID\",\"Kernel Name\",\"a__b\"\n\"1.2.3\",\"k\",\"1\"\n";
    let e = parse_ncu_csv(text, &opts_with(|o| o.number_style = NumberStyle::C)).unwrap_err();
    assert!(e.to_string().starts_with("<input>:4: ID"), "{e}");
}

/// A number style contradicted by the file is named, not "no profiled kernels".
#[test]
fn a_contradicted_number_style_is_an_error() {
    let e = parse_ncu_csv_file(
        &fixture("kprof-keyed.csv"),
        &opts_with(|o| o.number_style = NumberStyle::European),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("c style") && e.to_string().contains("--numbers c"),
        "{e}"
    );
    let e = parse_ncu_csv_file(
        &fixture("kprof-keyed-european.csv"),
        &opts_with(|o| o.number_style = NumberStyle::C),
    )
    .unwrap_err();
    assert!(e.to_string().contains("european style"), "{e}");
    // A kprof result CSV is named as such.
    let e = parse_ncu_csv("Annotation,Value,Metric\na,1,m\n", &opts()).unwrap_err();
    assert!(e.to_string().contains("kprof summarize"), "{e}");
}
