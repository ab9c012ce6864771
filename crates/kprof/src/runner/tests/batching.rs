//! Batched flushing ([`FlushPolicy`]): one flush serves many runs, and batches split anywhere give
//! the results of a flush after every run.

use super::*;

/// Never flush for time in tests (timing on a loaded machine must not change the counts).
fn batches_of(max_runs: u32) -> FlushPolicy {
    FlushPolicy {
        max_runs,
        max_time: Duration::from_secs(3600),
    }
}

/// Every sample as comparable text (NaN-safe): region, config, run, value, kernels, warning.
fn rows(raw: &RawResults) -> Vec<String> {
    let warning = raw.extras.iter().find(|c| c.name == "Warning");
    raw.samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let k = &raw.series_of(s).key;
            let w = warning.map(|c| format!("{:?}", c.values[i])).unwrap_or_default();
            format!(
                "{}|{}|{}|{:?}|{}|{w}",
                k.annotation, k.config, s.run, s.value, raw.kernel_names[s.kernel as usize]
            )
        })
        .collect()
}

/// A profiler on a new mock that flushes by `policy`, and the mock.
fn flushing(policy: FlushPolicy) -> (Arc<Mock>, Profiler) {
    let (mock, mut p) = mock_profiler();
    p.set_flush_policy(policy);
    (mock, p)
}

/// `runs` runs of each configuration in turn, no warm-up, no cache flush, raw CSVs into `dir`.
fn sequential_into(runs: u32, dir: &Path) -> BenchOptions {
    BenchOptions {
        runs,
        warmup: 0,
        cache: CacheControl::None,
        order: RunOrder::Sequential,
        output_prefix: Some(dir.to_path_buf()),
        ..Default::default()
    }
}

/// How long a kernel of (config, run, part) lasts in `sweep_with`; warm-ups add 10^9.
fn dur(config: usize, run: u32, warmup: bool, part: u64) -> u64 {
    100_000 * (config as u64 + 1) + 1000 * run as u64 + part + if warmup { 1_000_000_000 } else { 0 }
}

/// 5 configs x 10 runs (+1 warm-up) with nested regions, a kernel outside every region and
/// one launched from a second thread inside the outer region (attributed by key only in the
/// mock, by launch time on a GPU). Returns the results, the profiler and the mock.
fn sweep_with(policy: FlushPolicy, order: RunOrder) -> (RawResults, Profiler, Arc<Mock>) {
    let (mock, mut p) = flushing(policy);
    let m = mock.clone();
    let opts = BenchOptions {
        runs: 10,
        warmup: 1,
        cache: CacheControl::None,
        order,
        ..Default::default()
    };
    let cfgs = configs(5);
    let raw = p
        .bench("sweep", &cfgs, &opts, |c, run| {
            let i = cfgs.iter().position(|x| x == c).unwrap();
            let (r, w) = (run.index(), run.is_warmup());
            m.launch("before", 3);
            {
                let _outer = run.region("outer")?;
                m.launch("gemm", dur(i, r, w, 1));
                run.annotate("inner", |_| m.launch("epilogue", dur(i, r, w, 2)))?;
            }
            m.launch("after", 3);
            Ok(())
        })
        .unwrap();
    (raw, p, mock)
}

#[test]
fn one_flush_serves_a_whole_sweep_and_every_kernel_keeps_its_config_run_and_region() {
    let (raw, p, mock) = sweep_with(batches_of(256), RunOrder::Interleaved);
    // 55 runs (50 recorded + 5 warm-ups), all in one batch: one flush, at the end.
    assert_eq!(p.flush_count(), 1);
    assert_eq!(mock.collects.load(Ordering::SeqCst), 1);
    assert_eq!(*mock.spans_per_collect.lock().unwrap(), vec![55 * 2]);
    // Still one synchronisation per run: runs never overlap.
    assert_eq!(mock.syncs.load(Ordering::SeqCst), 55);
    assert_eq!(raw.samples.len(), 5 * 10 * 2);
    for s in &raw.samples {
        let k = &raw.series_of(s).key;
        let (c, r) = (k.config as usize, s.run);
        let want = match k.annotation.as_str() {
            "outer" => dur(c, r, false, 1) + dur(c, r, false, 2),
            "inner" => dur(c, r, false, 2),
            other => panic!("unexpected region {other}"),
        };
        assert_eq!(s.value, want as f64, "{} config {c} run {r}", k.annotation);
    }
    // Warm-up kernels (same run index 0, other key) never leak into recorded samples.
    assert!(raw.samples.iter().all(|s| s.value < 1e9));
    // The two kernels outside regions of each of the 55 runs are unattributed.
    assert_eq!(p.unattributed_kernels(), 110);
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
}

#[test]
fn the_default_policy_flushes_far_fewer_times_than_runs() {
    let (_, p, _) = sweep_with(FlushPolicy::default(), RunOrder::Interleaved);
    // 55 mock runs take microseconds: the 50 ms budget is not reached (10 would need 0.5 s).
    assert!(p.flush_count() <= 10, "{} flushes", p.flush_count());
    let (_, p, _) = sweep_with(FlushPolicy::every_run(), RunOrder::Interleaved);
    assert_eq!(p.flush_count(), 55);
}

#[test]
fn batches_split_anywhere_give_the_same_results_as_a_flush_per_run() {
    for order in [RunOrder::Interleaved, RunOrder::Sequential] {
        let (every, p1, _) = sweep_with(FlushPolicy::every_run(), order);
        assert_eq!(p1.flush_count(), 55);
        // Batches of 4 and 7 runs split rounds and configs in the middle.
        for (n, flushes) in [(4, 14), (7, 8), (256, 1)] {
            let (batched, p, mock) = sweep_with(batches_of(n), order);
            assert_eq!(p.flush_count(), flushes, "{order:?} batches of {n}");
            assert_eq!(rows(&batched), rows(&every), "{order:?} batches of {n}");
            assert_eq!(batched.kernel_breakdown, every.kernel_breakdown);
            assert_eq!(p.unattributed_kernels(), p1.unattributed_kernels());
            let spans = mock.spans_per_collect.lock().unwrap().clone();
            assert_eq!(spans.iter().sum::<usize>(), 110, "{spans:?}");
        }
    }
}

#[test]
fn a_zero_time_budget_flushes_after_every_run_and_zero_runs_counts_as_one() {
    let p0 = FlushPolicy {
        max_runs: 1000,
        max_time: Duration::ZERO,
    };
    let (_, p, _) = sweep_with(p0, RunOrder::Interleaved);
    assert_eq!(p.flush_count(), 55);
    let (_, p, _) = sweep_with(batches_of(0), RunOrder::Interleaved);
    assert_eq!(p.flush_count(), 55);
}

/// Adaptive stopping over 2 configs (one stable, one noisy) under a flush policy.
fn adaptive(policy: FlushPolicy, order: RunOrder) -> (RawResults, Profiler) {
    let (mock, mut p) = flushing(policy);
    let m = mock.clone();
    let stopping = super::ci_target_policy();
    let opts = BenchOptions {
        warmup: 1,
        cache: CacheControl::None,
        order,
        policy: Some(stopping),
        ..Default::default()
    };
    let raw = p
        .bench("s", &configs(3), &opts, |c, run| {
            let i = run.index() as u64;
            let n = c.get("n").and_then(|v| v.as_f64()).unwrap() as i64;
            let _g = run.region("k")?;
            // 512: stable, 1024: noisy, 2048: slightly noisy.
            m.launch("k", 100 + (i % 2) * [0, 50, 1][(n / 1024) as usize]);
            Ok(())
        })
        .unwrap();
    (raw, p)
}

#[test]
fn adaptive_stopping_decides_as_before_with_batched_flushes() {
    for order in [RunOrder::Interleaved, RunOrder::Sequential] {
        let (every, _) = adaptive(FlushPolicy::every_run(), order);
        let (batched, p) = adaptive(batches_of(256), order);
        assert_eq!(rows(&batched), rows(&every), "{order:?}");
        assert_eq!(values(&batched, "k", 0).len(), 3, "{order:?}");
        assert_eq!(values(&batched, "k", 1).len(), 20, "{order:?}");
        assert_eq!(values(&batched, "k", 2).len(), 4, "{order:?}");
        let flushes = p.flush_count();
        match order {
            // One flush per round (before run r of a config whose run r-1 is waiting) for
            // rounds 1..19 (config 1 needs all 20 runs), then one at the end.
            RunOrder::Interleaved => assert_eq!(flushes, 20, "{order:?}"),
            // Sequential: a decision after every recorded run, as a flush per run did: before
            // runs 1..3 of config 0 (run 3 is then not run), 1..19 of config 1 and 1..4 of
            // config 2; nothing is left for the end.
            RunOrder::Sequential => assert_eq!(flushes, 3 + 19 + 4, "{order:?}"),
        }
    }
}

/// The failure scenario of `failures_are_nan_with_ignore_failures_and_errors_without`, plus
/// a failed warm-up, a region marked failed and an empty region, in the given order.
fn failing(policy: FlushPolicy, order: RunOrder, ignore: bool, dir: &Path) -> (Result<RawResults, String>, Profiler) {
    let (mock, mut p) = flushing(policy);
    let m = mock.clone();
    let opts = BenchOptions {
        runs: 3,
        warmup: 1,
        order,
        ignore_failures: ignore,
        output_prefix: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let res = p.bench("f", &configs(3), &opts, |c, run| {
        let n = c.get("n").and_then(|v| v.as_f64()).unwrap() as i64;
        if n == 2048 && run.is_warmup() {
            return Err("warm-up out of memory".into());
        }
        {
            let g = run.region("k")?;
            m.launch("k", 100 + n as u64);
            if n == 512 && run.index() == 2 && !run.is_warmup() {
                g.mark_failed();
            }
        }
        run.annotate("empty", |_| ())?;
        if n == 1024 && run.index() == 1 && !run.is_warmup() {
            return Err("out of memory".into());
        }
        Ok(())
    });
    (res.map_err(|e| e.to_string()), p)
}

#[test]
fn failures_and_nan_rows_are_unchanged_by_batching() {
    for order in [RunOrder::Interleaved, RunOrder::Sequential] {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // ignore_failures: NaN rows and warnings, in the same order, the same file.
        let (every, p1) = failing(FlushPolicy::every_run(), order, true, d1.path());
        let (batched, p2) = failing(batches_of(256), order, true, d2.path());
        let (every, batched) = (every.unwrap(), batched.unwrap());
        assert_eq!(rows(&batched), rows(&every), "{order:?}");
        assert_eq!(p2.warnings(), p1.warnings(), "{order:?}");
        assert!(values(&batched, "k", 1)[1].is_nan());
        assert!(values(&batched, "k", 0)[2].is_nan());
        assert!(values(&batched, "empty", 0).iter().all(|v| v.is_nan()));
        assert!(p2.warnings().iter().any(|w| w.contains("warm-up out of memory")));
        assert!(p2.flush_count() < p1.flush_count(), "{order:?}");
        let read = |d: &Path| std::fs::read_to_string(d.join("f-raw.csv")).unwrap();
        assert_eq!(read(d2.path()), read(d1.path()), "{order:?}");

        // Without: the same error, and the same rows on disk (those recorded before it).
        // (Interleaved order fails at config 2's warm-up, sequential at config 1's run 1.)
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (e1, _) = failing(FlushPolicy::every_run(), order, false, d1.path());
        let (e2, _) = failing(batches_of(256), order, false, d2.path());
        let (e1, e2) = (e1.unwrap_err(), e2.unwrap_err());
        assert_eq!(e2, e1, "{order:?}");
        assert!(e2.contains("out of memory"), "{e2}");
        assert_eq!(read(d2.path()), read(d1.path()), "{order:?}");
        if order == RunOrder::Sequential {
            // Config 0 (3 runs x 2 regions) and config 1's run 0 (2 regions).
            assert_eq!(read(d2.path()).lines().count(), 1 + 8);
        }
    }
}

#[test]
fn an_engine_error_mid_batch_still_records_and_writes_the_runs_before_it() {
    for policy in [FlushPolicy::every_run(), batches_of(256)] {
        let dir = tempfile::tempdir().unwrap();
        let mock = Arc::new(Mock::default());
        // Runs c0r0 c0r1 c0r2 c1r0 synchronise; c1r1's synchronisation fails.
        mock.fail_sync_at.store(5, Ordering::SeqCst);
        let mut p = profiler(&mock);
        p.set_flush_policy(policy);
        let m = mock.clone();
        let opts = sequential_into(3, dir.path());
        let e = p
            .bench("e", &configs(2), &opts, |_, run| {
                let _g = run.region("k")?;
                m.launch("k", 100);
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("mock device lost"), "{e}");
        let csv = std::fs::read_to_string(dir.path().join("e-raw.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 4, "{policy:?}: {csv}");
        assert_eq!(csv.matches("k,100.0,").count(), 4, "{policy:?}: {csv}");
    }
}

#[test]
fn a_finished_config_is_written_at_the_flush_that_records_its_last_run() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    p.set_flush_policy(batches_of(2));
    let m = mock.clone();
    let path = dir.path().join("w-raw.csv");
    let mut on_disk = Vec::new();
    let opts = sequential_into(2, dir.path());
    p.bench("w", &configs(3), &opts, |_, run| {
        let rows = std::fs::read_to_string(&path).map(|s| s.lines().count() - 1);
        on_disk.push(rows.unwrap_or(0));
        let _g = run.region("k")?;
        m.launch("k", 1);
        Ok(())
    })
    .unwrap();
    // c0r0 c0r1 | flush: config 0 written | c1r0 c1r1 | flush | c2r0 c2r1 | flush.
    assert_eq!(on_disk, vec![0, 0, 2, 2, 4, 4]);
    assert_eq!(p.flush_count(), 3);
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1 + 6);
}
