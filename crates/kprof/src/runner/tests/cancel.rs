//! Cancelling a bench call ([`crate::cancel`]): the loop stops between runs, after a run whose
//! closure asked to stop, and inside the GPU's rests and the thermal guard's waits, returning
//! [`EngineError::Cancelled`] with the finished runs in the raw CSV.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::*;
use crate::cancel::Cancel;
use crate::conditions::runtime::{BoxSensor, BoxSource, ConditionsProbe, ProfilerConditions};
use crate::conditions::thermal::TemperatureSensor;

fn sequential(runs: u32, dir: &std::path::Path, cancel: &Cancel) -> BenchOptions {
    BenchOptions {
        runs,
        warmup: 1,
        order: RunOrder::Sequential,
        output_prefix: Some(dir.to_path_buf()),
        conditions: false,
        cancel: Some(cancel.clone()),
        ..Default::default()
    }
}

/// Data lines of a raw CSV.
fn rows(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count() - 1
}

#[test]
fn a_token_set_mid_sweep_stops_it_with_the_finished_runs_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    let cancel = Cancel::new();
    let opts = sequential(4, dir.path(), &cancel);
    let (m, c) = (mock.clone(), cancel.clone());
    let mut calls = Vec::new();
    let e = p
        .bench("f", &configs(3), &opts, |config, run| {
            calls.push((config.clone(), run.index(), run.is_warmup()));
            let _g = run.region("k")?;
            m.launch("k", 100);
            // Ctrl-C during run 2 of the second configuration.
            if config.get("n") == Some(&1024.into()) && run.index() == 2 && !run.is_warmup() {
                c.cancel();
            }
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(e, EngineError::Cancelled), "{e}");
    // Config 0: warm-up and 4 runs; config 1: warm-up and runs 0..=2, the last one cancelled.
    assert_eq!(calls.len(), 5 + 4, "{calls:?}");
    assert_eq!(calls.last().map(|c| c.1), Some(2));
    // Every finished run is in the raw CSV, the cancelled one is not.
    assert_eq!(rows(&dir.path().join("f-raw.csv")), 4 + 2);
}

#[test]
fn a_poll_that_says_stop_ends_the_sweep_before_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    let asked = Arc::new(AtomicU64::new(0));
    let a = asked.clone();
    // The loop polls a few times per run (before it, after its waits, after its passes): the
    // 11th poll, during the second or third run, says stop.
    let cancel = Cancel::with_poll(move || a.fetch_add(1, Ordering::SeqCst) + 1 >= 11);
    let opts = sequential(10, dir.path(), &cancel);
    let m = mock.clone();
    let mut calls = 0;
    let e = p
        .bench("f", &configs(1), &opts, |_c, run| {
            calls += 1;
            let _g = run.region("k")?;
            m.launch("k", 100);
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(e, EngineError::Cancelled), "{e}");
    assert!(calls <= 4, "the closure ran {calls} times");
    assert!(cancel.is_set());
    assert_eq!(asked.load(Ordering::SeqCst), 11, "asked again once set");
    // The warm-up is not recorded; a run cancelled after its closure is not either.
    let on_disk = rows(&dir.path().join("f-raw.csv"));
    assert!(on_disk >= 1 && on_disk < calls, "{on_disk} rows of {calls} calls");
}

#[test]
fn the_poll_never_runs_inside_the_closure_where_a_launch_callback_waits() {
    // A wait inside the workload (the GPU's rest in a CUDA callback of a launch the closure made)
    // reads the token's flag only: the poll may need what the closure's thread gave up.
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    let inside = Arc::new(AtomicBool::new(false));
    let polled_inside = Arc::new(AtomicU64::new(0));
    let polled = Arc::new(AtomicU64::new(0));
    let (i, pi, pa) = (inside.clone(), polled_inside.clone(), polled.clone());
    let cancel = Cancel::with_poll(move || {
        pa.fetch_add(1, Ordering::SeqCst);
        if i.load(Ordering::SeqCst) {
            pi.fetch_add(1, Ordering::SeqCst);
        }
        false
    });
    let opts = sequential(3, dir.path(), &cancel);
    let m = mock.clone();
    p.bench("f", &configs(2), &opts, |_c, run| {
        inside.store(true, Ordering::SeqCst);
        let _g = run.region("k")?;
        m.launch("k", 100);
        let stopped = crate::cancel::requested();
        crate::cancel::sleep(Duration::from_millis(1));
        inside.store(false, Ordering::SeqCst);
        assert!(!stopped);
        Ok(())
    })
    .unwrap();
    assert_eq!(polled_inside.load(Ordering::SeqCst), 0);
    assert!(polled.load(Ordering::SeqCst) > 0, "the loop polls between runs");
}

#[test]
fn a_cancel_during_the_gpus_rest_ends_the_rest_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    let cancel = Cancel::new();
    let opts = BenchOptions {
        warmup: 0,
        ..sequential(5, dir.path(), &cancel)
    };
    let m = mock.clone();
    let c = cancel.clone();
    let cancelled_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let at = cancelled_at.clone();
    let e = p
        .bench("f", &configs(1), &opts, |_c, run| {
            let _g = run.region("k")?;
            m.launch("k", 100);
            // 100 ms of work per run: the next run rests 100 ms first (unless a test beside this
            // one took the process's rest); the work itself stops at once when cancelled, as a
            // Python closure does on Ctrl-C.
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(100) && !c.is_set() {
                std::thread::sleep(Duration::from_millis(1));
            }
            if run.index() == 0 {
                // Ctrl-C 20 ms into the rest after run 0.
                let (c, at) = (c.clone(), at.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    *at.lock().unwrap() = Some(Instant::now());
                    c.cancel();
                });
            }
            Ok(())
        })
        .unwrap_err();
    let late = cancelled_at.lock().unwrap().expect("cancelled").elapsed();
    assert!(matches!(e, EngineError::Cancelled), "{e}");
    assert!(late < Duration::from_millis(50), "returned {late:?} after the cancel");
    assert_eq!(rows(&dir.path().join("f-raw.csv")), 1);
}

/// A GPU that stays too hot: the thermal guard waits, polling it every 0.5 s on the real clock.
struct Hot;
impl TemperatureSensor for Hot {
    fn margin_c(&mut self) -> Option<f64> {
        Some(0.0)
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(90.0)
    }
}
impl ConditionsProbe for Hot {
    fn sensor(&mut self) -> Option<BoxSensor> {
        Some(Box::new(Hot))
    }
    fn source(&mut self) -> Option<BoxSource> {
        None
    }
}

#[test]
fn a_cancel_while_the_thermal_guard_waits_for_cooling_ends_the_wait_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    p.set_conditions(ProfilerConditions::with_probe(Box::new(Hot)));
    let cancel = Cancel::new();
    let opts = sequential(3, dir.path(), &cancel);
    let c = cancel.clone();
    let t0 = Instant::now();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        c.cancel();
    });
    let m = mock.clone();
    let e = p
        .bench("f", &configs(1), &opts, |_c, run| {
            let _g = run.region("k")?;
            m.launch("k", 100);
            Ok(())
        })
        .unwrap_err();
    setter.join().unwrap();
    assert!(matches!(e, EngineError::Cancelled), "{e}");
    // The guard's wait would last until its 180 s timeout; its polls are 0.5 s apart.
    assert!(t0.elapsed() < Duration::from_millis(400), "{:?}", t0.elapsed());
}
