//! Nsight Compute's section and set names in the Rust options: the bench call expands them for
//! the chip before any GPU work (`counters::sections`).

use super::*;

#[test]
fn section_names_are_expanded_before_any_gpu_work_and_need_a_chip() {
    if std::env::var_os("KPROF_CHIP").is_some() || std::path::Path::new("/dev/nvidia0").exists() {
        return; // the chip is known here: the expansion itself is tested in counters::sections
    }
    let (mock, mut p) = setup(1);
    let o = opts(&["SpeedOfLight"], ReplayMode::Application);
    let e = p
        .bench("b", &[], &o, |_, _| panic!("the closure must not run"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("section and set names need the chip"), "{e}");
    assert_eq!(mock.collects.load(Ordering::SeqCst), 0);
    // Metric names alone go through as they are.
    let o = opts(&["bytes.sum"], ReplayMode::Application);
    bench_on(&mock, &mut p, "b", &o, region_a_k1).unwrap();
}
