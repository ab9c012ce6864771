//! The counter pass and CUDA graph launches: a graph launch keeps its span from the timing
//! pass's records among the counters' durations of eager kernels (the Range Profiler does not
//! profile graph launches), and each duration row names its source.

use super::*;

/// A mock with one counter pass per run whose graph spans come from graph records (graph trace
/// of graphs instantiated in the session), and its profiler.
fn graph_records_mock() -> (Arc<Mock>, Profiler) {
    setup_mock(Mock {
        passes: 1,
        graph_records: true,
        ..Default::default()
    })
}

#[test]
fn auto_takes_the_records_when_warm_up_replays_a_graph_instantiated_before_the_session() {
    // Graph records time graphs instantiated in the session even with a counter pass: counters.
    let (mock, mut p) = graph_records_mock();
    let o = auto_opts(ReplayMode::Application);
    let raw = bench_on(&mock, &mut p, "fresh", &o, region_a_k1_graph).unwrap();
    assert_eq!(
        series(&raw, "a", DEFAULT_METRIC).1,
        vec![513.0, 513.0],
        "k1 from the counters + the span"
    );
    assert_eq!(
        mock.releases.load(Ordering::SeqCst),
        0,
        "the session stays open between benchmarks"
    );
    // A graph from before the session (node records), seen in the warm-up run: the records, one
    // warning, no counter pass, the span kept.
    let raw = bench_on(&mock, &mut p, "old", &o, |m, run| {
        run.annotate("a", |_| {
            m.launch("k1", 10);
            m.launch_old_graph(500);
        })?;
        Ok(())
    })
    .unwrap();
    assert_record_durations(&raw, 510.0, "k1 from the records + the span");
    let w = warnings_with(&p, "instantiated before");
    assert_eq!(w.len(), 1, "{:?}", p.warnings());
    assert!(w[0].starts_with("old: "), "{}", w[0]);
    assert_eq!(
        mock.collects.load(Ordering::SeqCst),
        2,
        "no counter pass for 'old' (2 runs of 'fresh')"
    );
    // Asked for explicitly, the counters stay (the span is then checked per run).
    let o = BenchOptions {
        duration: DurationSource::Counters,
        ..o
    };
    let raw = bench_on(&mock, &mut p, "asked", &o, |m, run| {
        run.annotate("a", |_| m.launch_old_graph(500))?;
        Ok(())
    })
    .unwrap();
    // (A region of graph launches only has its duration from the records: its span.)
    assert_eq!(duration_sources(&raw, "a"), vec![ExtraValue::Text("records".into()); 2]);
    // A later benchmark of graphs instantiated in the session: the counters, and no word of the
    // old graphs that earlier benchmarks replayed.
    let o = BenchOptions {
        duration: DurationSource::Auto,
        ..o
    };
    let before = mock.collects.load(Ordering::SeqCst);
    let raw = bench_on(&mock, &mut p, "new", &o, |m, run| {
        run.annotate("a", |_| m.launch_graph(500))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(duration_sources(&raw, "a"), vec![ExtraValue::Text("records".into()); 2]);
    assert_eq!(
        mock.collects.load(Ordering::SeqCst),
        before + 2,
        "auto kept its counter pass for graphs of the session"
    );
    let w = warnings_with(&p, "instantiated before");
    let by: Vec<&str> = w.iter().map(|w| w.split(':').next().unwrap()).collect();
    assert_eq!(
        by,
        ["old", "asked"],
        "one per benchmark that replayed old graphs: {w:?}"
    );
    drop(p);
    assert_eq!(
        mock.releases.load(Ordering::SeqCst),
        1,
        "given back when the profiler ends"
    );
}

#[test]
fn a_graph_launch_keeps_its_span_among_counter_durations_of_eager_kernels() {
    // Region: k1 (10 ns), a graph (500 ns span), k2 (20 ns). The counter pass profiles k1 and k2
    // only (dur + 3 each); the graph's span comes from the records; bytes cover the kernels.
    // (Kernel replay leaves runs with graph launches to the records: kernel_replay_leaves_runs_...)
    for (mode, graph_ranges) in [(ReplayMode::Application, false), (ReplayMode::Application, true)] {
        let (mock, mut p) = setup_mock(Mock {
            passes: 1,
            graph_ranges,
            ..Default::default()
        });
        let o = BenchOptions {
            duration: DurationSource::Counters,
            ..opts(&["bytes.sum"], mode)
        };
        let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
            run.annotate("mixed", |_| {
                m.launch("k1", 10);
                m.launch_graph(500);
                m.launch("k2", 20);
            })?;
            Ok(())
        })
        .unwrap();
        assert_eq!(
            series(&raw, "mixed", DEFAULT_METRIC).1,
            vec![13.0 + 500.0 + 23.0; 2],
            "{mode:?}"
        );
        assert_eq!(series(&raw, "mixed", "bytes.sum").1, vec![60.0; 2], "{mode:?}");
        assert!(
            raw.kernel_names.contains(&"k1|cuda-graph:1|k2".to_string()),
            "{:?}",
            raw.kernel_names
        );
        assert!(
            !p.warnings().iter().any(|w| w.contains("Counters recorded as NaN")),
            "{:?}",
            p.warnings()
        );
    }
}

#[test]
fn each_duration_row_names_its_source_graph_spans_coming_from_the_records() {
    // Durations from the counters: a region of eager kernels says counters, one of a graph launch
    // only records (its span is the graph's record), one of both counters+records.
    let (mock, mut p) = graph_records_mock();
    let o = counters_opts(ReplayMode::Application);
    let raw = bench_on(&mock, &mut p, "b", &o, |m, run| {
        run.annotate("eager", |_| m.launch("k1", 10))?;
        run.annotate("graph", |_| m.launch_graph(500))?;
        run.annotate("mixed", |_| {
            m.launch("k2", 20);
            m.launch_graph(300);
        })?;
        Ok(())
    })
    .unwrap();
    assert_eq!(series(&raw, "eager", DEFAULT_METRIC).1, vec![13.0; 2]);
    assert_eq!(series(&raw, "graph", DEFAULT_METRIC).1, vec![500.0; 2]);
    assert_eq!(series(&raw, "mixed", DEFAULT_METRIC).1, vec![323.0; 2]);
    let text = |v: &str| vec![ExtraValue::Text(v.into()); 2];
    assert_eq!(duration_sources(&raw, "eager"), text("counters"));
    assert_eq!(duration_sources(&raw, "graph"), text("records"));
    assert_eq!(
        duration_sources(&raw, "mixed"),
        text(crate::runner::COUNTERS_AND_RECORDS)
    );
}

#[test]
fn a_graph_span_stretched_past_the_timing_pass_is_nan_with_one_warning() {
    // A graph whose span ends 3 ms after the timing pass, among eager kernels, durations from the
    // counters; `graph_records`: the span comes from a graph record, not merged from node records.
    let bench = |graph_records: bool| {
        let (mock, mut p) = setup_mock(Mock {
            passes: 1,
            graph_stretch_ns: 3_000_000,
            graph_records,
            ..Default::default()
        });
        let o = counters_opts(ReplayMode::Application);
        let raw = p
            .bench("b", &[], &o, |_, run| {
                run.annotate("g", |_| {
                    mock.launch("k1", 10);
                    mock.launch_graph(500);
                })?;
                Ok(())
            })
            .unwrap();
        let stretched: Vec<String> = warnings_with(&p, "ran past the timing pass")
            .into_iter()
            .cloned()
            .collect();
        (series(&raw, "g", DEFAULT_METRIC).1, stretched, p.warnings().to_vec())
    };
    let (values, stretched, all) = bench(false);
    assert!(values.iter().all(|v| v.is_nan()));
    assert_eq!(stretched.len(), 1, "{all:?}");

    // From a graph record, a graph that ends after the timing pass's window is still its own span.
    let (values, stretched, _) = bench(true);
    assert!(values.iter().all(|v| v.is_finite()));
    assert!(stretched.is_empty());
}

#[test]
fn a_counter_pass_has_room_for_every_graph_launch_of_its_timing_pass() {
    // CUPTI 13.0 crashed when a pass's graph launches overflowed its image (130 replays against
    // 64 ranges on the H200): each pass's image holds the kernel capacity plus the graph
    // launches of its run's timing pass.
    let (mock, mut p) = setup_mock(Mock {
        passes: 1,
        graph_records: true,
        graph_ranges: true,
        ..Default::default()
    });
    let o = counters_opts(ReplayMode::Application);
    let (mut timing_passes, mut n) = (0, 0);
    let raw = bench_on(&mock, &mut p, "many", &o, |m, run| {
        // 200 graph launches in the warm-up and the first recorded run, 10 in the second; a
        // counter pass launches what its timing pass did.
        if !m.in_counter_pass.load(Ordering::SeqCst) {
            timing_passes += 1;
            n = if timing_passes <= 2 { 200 } else { 10 };
        }
        run.annotate("a", |_| {
            m.launch("k1", 10);
            for _ in 0..n {
                m.launch_graph(5);
            }
        })?;
        Ok(())
    })
    .unwrap();
    assert_eq!(*mock.capacities.lock().unwrap(), vec![64 + 200, 64 + 10]);
    assert_eq!(duration_sources(&raw, "a").len(), 2);
    // With more eager kernels than the kernel capacity: room for the timing pass's kernels, each
    // with the two flush kernels of a cold application-replay pass before it.
    mock.capacities.lock().unwrap().clear();
    bench_on(&mock, &mut p, "eager", &o, |m, run| {
        run.annotate("a", |_| {
            for _ in 0..100 {
                m.launch("k", 1);
            }
            m.launch_graph(5);
        })?;
        Ok(())
    })
    .unwrap();
    // 100 kernels and the timing pass's two L2 flushes (before the run and the region).
    assert_eq!(*mock.capacities.lock().unwrap(), vec![102 * 3 + 1, 102 * 3 + 1]);
    // Past the largest image no capacity (the run then fails with a message naming the records).
    assert_eq!(super::super::pass_capacity(64, 1 << 20), None);
    assert_eq!(super::super::pass_capacity(64, 0), Some(64));
}

#[test]
fn kernel_replay_leaves_runs_with_graph_launches_to_the_records() {
    // Any graph launch in a kernel-replay pass crashed CUPTI 13.0 (H200): auto takes
    // the records with one warning and runs no counter pass; counters asked for fail the run with
    // a message that names application replay.
    let (mock, mut p) = graph_records_mock();
    let o = auto_opts(ReplayMode::Kernel);
    let raw = bench_on(&mock, &mut p, "kr", &o, region_a_k1_graph).unwrap();
    assert_eq!(duration_sources(&raw, "a"), vec![ExtraValue::Text("records".into()); 2]);
    assert_eq!(mock.collects.load(Ordering::SeqCst), 0, "no counter pass");
    assert_eq!(warnings_with(&p, "kernel replay cannot profile").len(), 1);
    // Eager kernels alone: the counters, as before.
    bench_on(&mock, &mut p, "eager", &o, region_a_k1).unwrap();
    assert_eq!(mock.collects.load(Ordering::SeqCst), 2);
    let o = BenchOptions {
        duration: DurationSource::Counters,
        ..o
    };
    let e = bench_on(&mock, &mut p, "asked", &o, |m, run| {
        run.annotate("a", |_| m.launch_graph(500))?;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("replay_mode=\"application\""), "{e}");
}

#[test]
fn a_benchmark_replaying_graphs_instantiated_before_the_counter_session_says_so() {
    // Such graphs ran faster than without a profiler once the Range Profiler was on (H200,
    // the H200): one warning for the benchmark that replayed them, none for the next.
    let (mock, mut p) = graph_records_mock();
    let o = auto_opts(ReplayMode::Application);
    bench_on(&mock, &mut p, "stale", &o, |m, run| {
        run.annotate("a", |_| {
            m.stale_graph_launches.fetch_add(1, Ordering::SeqCst);
            m.launch_graph(500);
        })?;
        Ok(())
    })
    .unwrap();
    bench_on(&mock, &mut p, "fresh", &o, |m, run| {
        run.annotate("a", |_| m.launch_graph(500))?;
        Ok(())
    })
    .unwrap();
    let w = warnings_with(&p, "instantiated before kprof's counter session");
    assert_eq!(w.len(), 1, "{:?}", p.warnings());
    assert!(w[0].starts_with("stale: 5 launch(es)"), "{}", w[0]);
}
