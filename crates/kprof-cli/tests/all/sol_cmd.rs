//! `kprof sol` on the seed's step 6 recorded on the H200 (crates/kprof-cli/src/sol_cmd.rs).

use crate::common;

fn sol(args: &[&str]) -> (i32, String, String) {
    let o = common::kprof().arg("sol").args(args).output().unwrap();
    let (out, err) = common::text(&o);
    (o.status.code().unwrap_or(-1), out, err)
}

#[test]
fn step6_table_and_json_give_each_region_its_verdict() {
    let f = common::fixture_path("h200-python-tutorial-steps/step6.csv");
    let f = f.to_str().unwrap();
    let (code, out, err) = sol(&[f]);
    assert_eq!(code, 0, "{err}");
    let verdict_of = |ann: &str| {
        out.lines()
            .find(|l| l.starts_with(ann) && l.contains(" — "))
            .unwrap_or_else(|| panic!("no reason line for {ann}: {out}"))
            .to_string()
    };
    for (region, verdict) in [
        ("fp16 matmul 4096", ": compute-bound — SM 90.4 %"),
        ("x * 2 (256 MB)", ": memory-bound — memory 86.5 %"),
        ("softmax 8192x1024", ": latency-bound"),
    ] {
        assert!(verdict_of(region).contains(verdict), "{region}: {verdict}\n{out}");
    }
    let (code, json, _) = sol(&["--json", f]);
    assert_eq!(code, 0);
    let rows: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 3);
    let mm = rows.iter().find(|r| r["Annotation"] == "fp16 matmul 4096").unwrap();
    assert_eq!(mm["Verdict"], "compute-bound");
    assert!((mm["SM_Pct"].as_f64().unwrap() - 90.376).abs() < 0.01);
    assert!(mm["FLOPsPerS_fp32"].is_null(), "no FLOP counters recorded");
}

#[test]
fn a_result_without_counters_says_what_to_profile_with() {
    let f = common::fixture_path("h200-python-tutorial-steps/step2.csv");
    let (code, out, err) = sol(&[f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("metrics=[\"SpeedOfLight\"]"), "{err}");
    assert!(out.contains("unknown"), "{out}");
}
