//! `kprof plot` and `kprof report` through the library entry point [`kprof_cli::run`], on the
//! recorded H200 tables in `tests/fixtures/h200-python-tutorial-steps`.

use std::path::{Path, PathBuf};

use crate::common::{self, run};

fn fixture(name: &str) -> String {
    common::fixture(&format!("h200-python-tutorial-steps/{name}"))
}

fn out(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `kprof plot <fixture> <args> -o <dir>/<name>`, which must exit 0; the figure's path.
fn plot_to(dir: &tempfile::TempDir, fixture_name: &str, name: &str, args: &[&str]) -> PathBuf {
    let path = out(dir, name);
    let fixture = fixture(fixture_name);
    let argv: Vec<&str> = ["plot", fixture.as_str()]
        .into_iter()
        .chain(args.iter().copied())
        .chain(["-o", path.to_str().unwrap()])
        .collect();
    assert_eq!(run(&argv), 0, "kprof {}", argv.join(" "));
    path
}

#[test]
fn plot_processed_csv_to_svg_with_error_bars() {
    let dir = tempfile::tempdir().unwrap();
    let svg = plot_to(
        &dir,
        "step5-tflops.csv",
        "fig.svg",
        &[
            "--metric",
            "gpu__time_duration.sum",
            "--x",
            "n",
            "--title",
            "fp32 vs fp16",
            "--ylabel",
            "time",
        ],
    );
    let text = read(&svg);
    assert!(text.starts_with("<svg") || text.contains("<svg"), "an SVG document");
    assert!(text.contains("fp32 vs fp16"), "title");
    assert!(text.contains("kprof-errorbar"), "error bars drawn by default");
    assert!(
        text.contains("fp16") && text.contains("fp32"),
        "one series per annotation in the legend"
    );

    let svg2 = plot_to(
        &dir,
        "step5-tflops.csv",
        "bare.svg",
        &[
            "--metric",
            "gpu__time_duration.sum",
            "--x",
            "n",
            "--no-error-bars",
            "--type",
            "bar",
            "--aggregate",
            "geomean",
            "--annotate-points",
        ],
    );
    let text = read(&svg2);
    assert!(!text.contains("kprof-errorbar"), "--no-error-bars");
    assert!(text.contains("Geomean"), "aggregate bar labelled");
}

#[test]
fn plot_raw_csv_to_png() {
    let dir = tempfile::tempdir().unwrap();
    let png = plot_to(&dir, "sgemm-raw.csv", "sgemm.png", &["--x", "n"]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 5_000, "a real image ({} bytes)", bytes.len());
}

#[test]
fn plot_panels_and_variants() {
    let dir = tempfile::tempdir().unwrap();
    // step5: parameter n only; panels by n gives one panel per size.
    let svg = plot_to(
        &dir,
        "step5-tflops.csv",
        "panels.svg",
        &["--metric", "tflops", "--col-panels", "n"],
    );
    let text = read(&svg);
    assert_eq!(text.matches("kprof-panel\"").count(), 4, "one panel per n (512..4096)");
}

#[test]
fn unknown_metric_or_parameter_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let svg = out(&dir, "x.svg");
    let file = fixture("step5-tflops.csv");
    assert_eq!(
        run(&["plot", &file, "--metric", "nope", "-o", svg.to_str().unwrap()]),
        1
    );
    assert_eq!(
        run(&[
            "plot",
            &file,
            "--metric",
            "tflops",
            "--x",
            "m",
            "-o",
            svg.to_str().unwrap()
        ]),
        1
    );
    assert_eq!(
        run(&["plot", &file, "-o", svg.to_str().unwrap()]),
        1,
        "two metrics and none chosen"
    );
    assert!(!svg.exists(), "nothing written on error");
    assert_eq!(run(&["plot", "/nonexistent.csv", "-o", svg.to_str().unwrap()]), 1);
    assert_eq!(run(&["plot", &file, "-m", "tflops", "-o", "/dev/null/x.png"]), 1);
    assert_eq!(
        run(&["plot", &file, "--type", "pie"]),
        2,
        "bad argument: clap usage error"
    );
}

#[test]
fn report_from_raw_and_processed_with_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    // A copy of the raw CSV with an environment sidecar next to it.
    let raw = out(&dir, "sgemm.csv");
    std::fs::copy(fixture("sgemm-raw.csv"), &raw).unwrap();
    std::fs::write(
        out(&dir, "sgemm.env.json"),
        r#"{"GPU": "NVIDIA H200", "Driver": "580.159.04", "marker": "sidecar-fingerprint-xyz"}"#,
    )
    .unwrap();
    let html = out(&dir, "report.html");
    let code = run(&[
        "report",
        raw.to_str().unwrap(),
        &fixture("step5-tflops.csv"),
        "-o",
        html.to_str().unwrap(),
        "--title",
        "H200 sweep",
    ]);
    assert_eq!(code, 0);
    let text = read(&html);
    assert!(text.contains("<title>H200 sweep</title>"));
    assert!(text.contains("kprof-summary"), "summary table");
    assert!(
        text.contains("sidecar-fingerprint-xyz"),
        "the sidecar fingerprint is shown"
    );
    assert!(text.contains("kprof-run"), "distributions from the raw CSV");
    assert!(
        text.matches("<section class=\"result\"").count() == 2,
        "one section per input"
    );
    // No network references: the only URL is the SVG namespace.
    let without_ns = text.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !without_ns.contains("http://") && !without_ns.contains("https://"),
        "no network references"
    );
}

#[test]
fn report_errors() {
    let dir = tempfile::tempdir().unwrap();
    let html = out(&dir, "r.html");
    assert_eq!(run(&["report", "/nonexistent.csv", "-o", html.to_str().unwrap()]), 1);
    let bad_sidecar = out(&dir, "t.csv");
    std::fs::copy(fixture("step5-tflops.csv"), &bad_sidecar).unwrap();
    std::fs::write(out(&dir, "t.env.json"), "{not json").unwrap();
    assert_eq!(
        run(&["report", bad_sidecar.to_str().unwrap(), "-o", html.to_str().unwrap()]),
        1
    );
    assert_eq!(
        run(&[
            "report",
            &fixture("step5-tflops.csv"),
            "--x",
            "zz",
            "-o",
            html.to_str().unwrap()
        ]),
        1
    );
    assert_eq!(run(&["report", "-o", html.to_str().unwrap()]), 2, "RESULTS is required");
    assert!(!html.exists());
}

#[test]
fn plot_and_report_from_kprof_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = out(&dir, "sgemm.json");
    assert_eq!(
        run(&["summarize", &fixture("sgemm-raw.csv"), "-o", json.to_str().unwrap()]),
        0
    );
    let svg = out(&dir, "sgemm.svg");
    assert_eq!(
        run(&["plot", json.to_str().unwrap(), "--x", "n", "-o", svg.to_str().unwrap()]),
        0
    );
    assert!(read(&svg).contains("kprof-errorbar"));
    let html = out(&dir, "sgemm.html");
    assert_eq!(
        run(&["report", json.to_str().unwrap(), "-o", html.to_str().unwrap()]),
        0
    );
    assert!(
        read(&html).contains("kprof-run"),
        "the JSON's raw samples give distributions"
    );
}
