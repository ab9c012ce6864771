//! One pass where one is enough: recorded runs of eager kernels take their durations from the
//! counter pass alone, mapped through the last warm-up's kernels; graphs and closures that launch
//! otherwise keep the timing pass.

use super::*;

/// A mock with launch callbacks (a flush before each kernel of a counter pass) and its profiler.
fn callbacks_mock() -> (Arc<Mock>, Profiler) {
    setup_mock(Mock {
        passes: 1,
        each_kernel: true,
        ..Default::default()
    })
}

fn one_pass_opts(runs: u32) -> BenchOptions {
    BenchOptions {
        runs,
        ..auto_opts(ReplayMode::Application)
    }
}

#[test]
fn eager_kernels_run_once_per_recorded_run_with_the_counters_durations() {
    let (mock, mut p) = callbacks_mock();
    let mut calls = 0;
    let raw = bench_on(&mock, &mut p, "b", &one_pass_opts(3), |m, run| {
        calls += 1;
        m.launch("setup", 5);
        run.annotate("a", |_| {
            m.launch("k1", 10);
            m.launch("k2", 20);
        })?;
        run.annotate("b", |_| m.launch("k3", 30))?;
        Ok(())
    })
    .unwrap();
    // One warm-up, then one counter pass per recorded run (two passes would make 1 + 2 x 3).
    assert_eq!(calls, 4);
    assert_eq!(mock.collects.load(Ordering::SeqCst), 3);
    // The counters' durations (each kernel's + 3 ns), mapped to their regions.
    assert_eq!(series(&raw, "a", DEFAULT_METRIC).1, vec![36.0; 3]);
    assert_eq!(series(&raw, "b", DEFAULT_METRIC).1, vec![33.0; 3]);
    assert!(duration_sources(&raw, "a")
        .iter()
        .all(|s| *s == ExtraValue::Text("counters".into())));
}

#[test]
fn graph_launches_in_the_warmup_keep_the_timing_pass() {
    let (mock, mut p) = callbacks_mock();
    let mut calls = 0;
    bench_on(&mock, &mut p, "g", &one_pass_opts(2), |m, run| {
        calls += 1;
        region_a_k1_graph(m, run)
    })
    .unwrap();
    assert_eq!(calls, 1 + 2 * 2);
}

#[test]
fn a_closure_whose_first_call_launches_otherwise_takes_its_map_from_a_timing_pass() {
    let (mock, mut p) = callbacks_mock();
    let mut calls = 0;
    let raw = bench_on(&mock, &mut p, "c", &one_pass_opts(4), |m, run| {
        calls += 1;
        if calls == 1 {
            m.launch("first-call-setup", 5); // the warm-up only
        }
        region_a_k1_k2(m, run)
    })
    .unwrap();
    // Warm-up 1; run 0: its one pass does not match the warm-up's map (1), so it takes a timing
    // pass and a counter pass (2), whose records are the map from then on; runs 1-3 one pass each.
    assert_eq!(calls, 1 + 1 + 2 + 3);
    assert_eq!(series(&raw, "a", DEFAULT_METRIC).1, vec![36.0; 4]);
}

#[test]
fn a_closure_that_launches_otherwise_every_time_goes_back_to_two_passes() {
    let (mock, mut p) = callbacks_mock();
    let mut calls = 0;
    let raw = bench_on(&mock, &mut p, "c", &one_pass_opts(3), |m, run| {
        calls += 1;
        run.annotate("a", |_| {
            for _ in 0..calls {
                m.launch("k", 10); // one kernel more at every call
            }
        })?;
        Ok(())
    })
    .unwrap();
    // Warm-up 1; run 0: a mismatch (1), then two passes (2) that give the map again; run 1: a
    // second mismatch (1), two passes for good (2); run 2: two passes (2).
    assert_eq!(calls, 1 + 3 + 3 + 2);
    // A closure that never repeats itself: each run's counter pass does not match its own timing
    // pass either, so its duration is the timing pass's records (10 ns a kernel), as with two
    // passes from the start.
    assert_eq!(series(&raw, "a", DEFAULT_METRIC).1, vec![30.0, 60.0, 80.0]);
}

#[test]
fn a_warm_cache_records_or_one_pass_off_keep_the_timing_pass() {
    // Warm: a timing pass, a counter pass and the re-warming run per recorded run. One pass off:
    // a timing pass and a counter pass. Records: the timing pass alone, no counter pass.
    for (o, expected_calls, expected_collects) in [
        (
            BenchOptions {
                cache: CacheControl::None,
                ..one_pass_opts(2)
            },
            1 + 2 * 3,
            2,
        ),
        (
            BenchOptions {
                one_pass: false,
                ..one_pass_opts(2)
            },
            1 + 2 * 2,
            2,
        ),
        (
            BenchOptions {
                duration: DurationSource::Records,
                ..one_pass_opts(2)
            },
            1 + 2,
            0,
        ),
    ] {
        let (mock, mut p) = callbacks_mock();
        let mut calls = 0;
        bench_on(&mock, &mut p, "w", &o, |m, run| {
            calls += 1;
            region_a_k1(m, run)
        })
        .unwrap();
        assert_eq!(calls, expected_calls);
        assert_eq!(mock.collects.load(Ordering::SeqCst), expected_collects);
    }
}

#[test]
fn a_closure_that_asks_for_its_counter_passes_keeps_its_timing_passes() {
    let (mock, mut p) = callbacks_mock();
    let (mut calls, mut timed) = (0, 0);
    let mut ends = 0;
    bench_on(&mock, &mut p, "t", &one_pass_opts(2), |m, run| {
        calls += 1;
        if !run.is_counter_pass() && !run.is_warmup() {
            timed += 1;
        }
        ends += usize::from(run.ends_recorded_run());
        region_a_k1(m, run)
    })
    .unwrap();
    assert_eq!((calls, timed, ends), (1 + 2 * 2, 2, 2));
}

#[test]
fn a_run_in_one_pass_ends_in_its_counter_pass() {
    let (mock, mut p) = callbacks_mock();
    let mut ends = 0;
    bench_on(&mock, &mut p, "e", &one_pass_opts(3), |m, run| {
        ends += usize::from(run.ends_recorded_run());
        region_a_k1(m, run)
    })
    .unwrap();
    assert_eq!(ends, 3);
}

#[test]
fn a_run_in_one_pass_that_fails_ends_the_sweep_at_once() {
    let (mock, mut p) = callbacks_mock();
    let mut calls = 0;
    let e = bench_on(&mock, &mut p, "f", &one_pass_opts(5), |m, run| {
        calls += 1;
        run.annotate("a", |_| m.launch("k1", 10))?;
        if calls == 3 {
            return Err("boom".into());
        }
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("boom"), "{e}");
    // The warm-up, two good runs and the failed one: no run after it.
    assert_eq!(calls, 3);
}
