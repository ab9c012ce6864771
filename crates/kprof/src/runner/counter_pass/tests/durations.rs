//! Durations from the counters (`duration_source` "counters" and "auto"): they replace the
//! kernel records' in kernel and application replay, need no other counter metric, and "auto"
//! falls back to the records where the counters cannot give them.

use super::*;

#[test]
fn durations_from_the_counters_replace_the_records_in_kernel_and_application_replay() {
    // Records: k1 10 + k2 20 = 30 ns; counters: (10 + 3) + (20 + 3) = 36 ns. (Range replay
    // refuses them: auto_takes_the_records_in_range_replay_and_counters_there_are_refused.)
    for mode in [ReplayMode::Kernel, ReplayMode::Application] {
        let (mock, mut p) = setup(2);
        let o = BenchOptions {
            duration: DurationSource::Counters,
            ..opts(&["bytes.sum", "gpu__time_duration.sum"], mode)
        };
        let raw = bench_on(&mock, &mut p, "b", &o, region_a_k1_k2).unwrap();
        let (unit, d) = series(&raw, "a", DEFAULT_METRIC);
        assert_eq!(
            (unit.as_str(), d),
            ("ns", vec![36.0, 36.0]),
            "{mode:?}: one sample per run, from the counters"
        );
        assert_eq!(series(&raw, "a", "bytes.sum").1, vec![60.0, 60.0], "{mode:?}");
        let plan = p.counter_plan().unwrap();
        assert_eq!(
            plan.metrics,
            vec![DEFAULT_METRIC.to_string(), "bytes.sum".into()],
            "{mode:?}"
        );
        assert_eq!(
            *mock.records_off_in_collect.lock().unwrap(),
            vec![true, true],
            "{mode:?}"
        );
    }
}

#[test]
fn durations_from_the_counters_need_no_other_counter_metric() {
    let (mock, mut p) = setup(1);
    let o = counters_opts(ReplayMode::Application);
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        run.annotate("a", |_| m.launch("k1", 10))?;
        run.annotate("empty", |_| {})?;
        Ok(())
    })
    .unwrap();
    assert_eq!(mock.collects.load(Ordering::SeqCst), 2);
    assert_eq!(series(&raw, "a", DEFAULT_METRIC).1, vec![13.0, 13.0]);
    // A region without kernels: one NaN per run (not one from each source) and its warning.
    let (_, empty) = series(&raw, "empty", DEFAULT_METRIC);
    assert_eq!(empty.len(), 2);
    assert!(empty.iter().all(|v| v.is_nan()));
    assert_warned(&p, "\"empty\" launched no kernel");
    assert_eq!(raw.series.len(), 2, "one series per region: {:?}", raw.series);
}

#[test]
fn durations_from_the_counters_are_refused_without_the_cupti_backend_and_a_bad_name_names_both() {
    let (_, mut p) = setup_mock(Mock {
        without_counters: true,
        ..Default::default()
    });
    let o = counters_opts(ReplayMode::Kernel);
    let e = p.bench("b", &[], &o, |_, _| Ok(())).unwrap_err().to_string();
    assert!(
        e.contains("duration source \"counters\"") && e.contains("need the CUPTI backend"),
        "{e}"
    );
    assert_eq!("counters".parse::<DurationSource>(), Ok(DurationSource::Counters));
    assert_eq!("records".parse::<DurationSource>(), Ok(DurationSource::Records));
    let e = "ncu".parse::<DurationSource>().unwrap_err().to_string();
    assert!(
        e.contains("'ncu'") && e.contains("'records'") && e.contains("'counters'"),
        "{e}"
    );
}

/// One region "a" with one 10 ns kernel, durations `duration` (application replay).
fn bench_one_kernel(mock: &Arc<Mock>, p: &mut Profiler, duration: DurationSource) -> Result<RawResults, EngineError> {
    let o = BenchOptions {
        duration,
        ..opts(&[], ReplayMode::Application)
    };
    bench_on(mock, p, "b", &o, region_a_k1)
}

#[test]
fn auto_takes_durations_from_the_counters_when_they_open_and_says_so_per_sample() {
    let (mock, mut p) = setup(1);
    let raw = bench_one_kernel(&mock, &mut p, DurationSource::Auto).unwrap();
    assert_eq!(
        series(&raw, "a", DEFAULT_METRIC).1,
        vec![13.0, 13.0],
        "counter durations (dur + 3)"
    );
    assert_eq!(
        duration_sources(&raw, "a"),
        vec![ExtraValue::Text("counters".into()); 2]
    );
    assert!(BenchOptions::default().duration == DurationSource::Auto);
    assert_eq!(BenchOptions::default().replay_mode, ReplayMode::Application);
}

#[test]
fn counter_passes_are_counted_in_the_process_cost() {
    // The process-wide cost grows with every counter pass of a recorded run (other tests may add
    // to it at the same time: only a lower bound is checked).
    let before = crate::runner::counter_cost().counter_runs;
    let (mock, mut p) = setup(1);
    bench_one_kernel(&mock, &mut p, DurationSource::Counters).unwrap();
    let after = crate::runner::counter_cost();
    assert!(after.counter_runs >= before + 2, "{before} -> {after:?}");
    assert!(after.counter_run_s >= after.records_switch_s);
}

#[test]
fn auto_takes_the_records_in_range_replay_and_counters_there_are_refused() {
    // A range's counter duration runs from its push to its pop (idle included): with range
    // (user) replay "auto" keeps the records, and "counters" is refused before any run.
    let (mock, mut p) = setup(1);
    let o = BenchOptions {
        duration: DurationSource::Auto,
        ..opts(&["bytes.sum", DEFAULT_METRIC], ReplayMode::User)
    };
    let raw = bench_on(&mock, &mut p, "range", &o, region_a_k1).unwrap();
    assert_record_durations(&raw, 10.0, "the records' 10 ns");
    let e = counters_opts(ReplayMode::User).validate().unwrap_err().to_string();
    assert!(e.contains("range replay") && e.contains("\"kernel\""), "{e}");
}

#[test]
fn auto_falls_back_to_the_records_with_one_warning_when_the_counters_cannot_open() {
    let (mock, mut p) = setup_mock(Mock {
        passes: 1,
        fail_open: Some("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES".into()),
        ..Default::default()
    });
    let raw = bench_one_kernel(&mock, &mut p, DurationSource::Auto).unwrap();
    assert_eq!(
        series(&raw, "a", DEFAULT_METRIC).1,
        vec![10.0, 10.0],
        "record durations"
    );
    assert_eq!(mock.collects.load(Ordering::SeqCst), 0, "no counter pass");
    let w = warnings_with(&p, "INSUFFICIENT_PRIVILEGES");
    assert_eq!(w.len(), 1, "{:?}", p.warnings());
    assert!(w[0].contains("not Nsight Compute's gpu__time_duration"), "{}", w[0]);
    assert_eq!(duration_sources(&raw, "a"), vec![ExtraValue::Text("records".into()); 2]);
    // Asked for explicitly, the counters' failure is an error, not a fallback.
    let e = bench_one_kernel(&mock, &mut p, DurationSource::Counters).unwrap_err();
    assert!(e.to_string().contains("INSUFFICIENT_PRIVILEGES"), "{e}");
}
