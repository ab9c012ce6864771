//! Fingerprint JSON round trip, sidecar and rendering.

use std::path::Path;

use kprof::conditions::fingerprint::*;

fn full() -> Fingerprint {
    Fingerprint {
        gpu_name: Some("NVIDIA H200".into()),
        uuid: Some("GPU-1a2b3c4d-0000-1111-2222-333344445555".into()),
        cuda_ordinal: Some(0),
        nvml_index: Some(0),
        compute_capability: Some("9.0".into()),
        driver_version: Some("580.159.04".into()),
        cuda_driver_version: Some("13.0".into()),
        cuda_runtime_version: None,
        cupti_version: Some(format_cupti_version(130001)),
        nvml_version: Some("13.580.159.04".into()),
        ecc_enabled: Some(true),
        mig_enabled: Some(false),
        persistence_mode: Some(true),
        power_limit_w: Some(700.0),
        max_sm_clock_mhz: Some(1980),
        max_mem_clock_mhz: Some(3201),
        rated_sm_clock_khz: Some(1_980_000),
        rated_mem_clock_khz: Some(3_201_000),
        sm_count: Some(132),
        clock_policy: Some("none (clocks not locked)".into()),
        thermal_mode: Some("auto".into()),
        kernel_timing: Some("CUPTI kernel records, serial (kernels not instrumented)".into()),
        other_processes: Some(0),
        hostname: Some("vm".into()),
        os: Some("Ubuntu 24.04.3 LTS".into()),
        kernel: Some("Linux 6.18.44".into()),
        arch: Some("x86_64".into()),
        kprof_version: Some("0.1.0".into()),
        git_revision: Some("unknown".into()),
        collected_at_unix_s: Some(1_790_000_000),
    }
}

#[test]
fn json_round_trip_with_nulls() {
    let fp = full();
    let json = fp.to_json();
    assert!(json.contains("\"cuda_runtime_version\": null"), "{json}");
    assert!(json.contains("\"gpu_name\": \"NVIDIA H200\""));
    assert_eq!(Fingerprint::from_json(&json).unwrap(), fp);
    let empty = Fingerprint::default();
    assert_eq!(Fingerprint::from_json(&empty.to_json()).unwrap(), empty);
    // Older/newer files: missing fields are null, unknown fields are ignored.
    let fp2 = Fingerprint::from_json(r#"{"gpu_name": "X", "future_field": 3}"#).unwrap();
    assert_eq!(fp2.gpu_name.as_deref(), Some("X"));
    assert_eq!(fp2.uuid, None);
    assert!(Fingerprint::from_json("[1,2]").is_err());
}

#[test]
fn sidecar_next_to_the_csv() {
    assert_eq!(
        sidecar_path(Path::new("/r/processed_data-mm-1.csv")),
        Path::new("/r/processed_data-mm-1.env.json")
    );
    assert_eq!(sidecar_path(Path::new("out.csv")), Path::new("out.env.json"));
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("profiled_data-mm-1.csv");
    let fp = full();
    let written = fp.write_sidecar(&csv).unwrap();
    assert_eq!(written, dir.path().join("profiled_data-mm-1.env.json"));
    assert_eq!(Fingerprint::read_sidecar(&csv).unwrap(), fp);
    let err = Fingerprint::read_sidecar(&dir.path().join("nothing.csv")).unwrap_err();
    assert!(err.to_string().contains("nothing.env.json"), "{err}");
}

#[test]
fn render_lists_every_field() {
    let text = render(&full());
    assert!(text.starts_with("Environment\n"));
    for needle in [
        "NVIDIA H200",
        "580.159.04",
        "13.0 (API 130001)",
        "ECC",
        "enabled",
        "700 W",
        "1980 MHz",
        "Ubuntu 24.04.3 LTS",
        "Kernel timing",
        "serial (kernels not instrumented)",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.contains("CUDA runtime") && l.ends_with("unknown")),
        "{text}"
    );
    // Values start in one column.
    let fields = full().fields();
    let width = fields.iter().map(|(l, _)| l.chars().count()).max().unwrap();
    for ((label, value), line) in fields.iter().zip(text.lines().skip(1)) {
        assert_eq!(
            line,
            format!("  {label:<width$}  {}", value.as_deref().unwrap_or("unknown"))
        );
    }
    let empty = render(&Fingerprint::default());
    assert_eq!(empty.matches("unknown").count(), full().fields().len());
}

#[test]
fn host_only_and_collect_without_nvml() {
    let fp = Fingerprint::host_only();
    assert_eq!(fp.kprof_version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert!(fp.git_revision.is_some());
    assert!(fp.arch.is_some());
    assert!(fp.collected_at_unix_s.is_some());
    assert_eq!(fp.gpu_name, None);
    let inputs = FingerprintInputs {
        cuda_ordinal: Some(0),
        gpu_name: Some("NVIDIA H200".into()),
        compute_capability: Some((9, 0)),
        cuda_driver_version: Some(13000),
        clock_policy: Some("none".into()),
        ..Default::default()
    };
    let fp = Fingerprint::collect(&inputs, None, None);
    assert_eq!(fp.gpu_name.as_deref(), Some("NVIDIA H200"));
    assert_eq!(fp.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(fp.cuda_driver_version.as_deref(), Some("13.0"));
    assert_eq!(fp.driver_version, None);
    assert_eq!(fp.ecc_enabled, None);
    assert!(fp.kprof_version.is_some());
}

#[test]
fn version_formats_and_os_release() {
    assert_eq!(format_cuda_version(13000), "13.0");
    assert_eq!(format_cuda_version(12040), "12.4");
    assert_eq!(format_cupti_version(130001), "13.0 (API 130001)");
    assert_eq!(format_cupti_version(24), "API 24");
    let text = "NAME=\"Ubuntu\"\nVERSION=\"24.04.3 LTS (Noble Numbat)\"\nPRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\n";
    assert_eq!(parse_os_release(text).as_deref(), Some("Ubuntu 24.04.3 LTS"));
    assert_eq!(
        parse_os_release("NAME=Debian\nVERSION=12\n").as_deref(),
        Some("Debian 12")
    );
    assert_eq!(parse_os_release("").as_deref(), None);
}
