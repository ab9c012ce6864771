//! The thermal guard's state machine against scripted sensors and a fake clock.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use kprof::conditions::thermal::*;
use kprof::conditions::ConditionsError;

/// A clock that only moves when slept on.
#[derive(Clone, Default)]
struct FakeClock {
    now: Rc<Cell<Duration>>,
    sleeps: Rc<Cell<u32>>,
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.now.get()
    }
    fn sleep(&mut self, d: Duration) {
        self.now.set(self.now.get() + d);
        self.sleeps.set(self.sleeps.get() + 1);
    }
}

/// Returns the scripted margins in order, then repeats the last one.
struct Script {
    margins: VecDeque<Option<f64>>,
    last: Option<f64>,
    reads: Rc<Cell<u32>>,
}

fn script(m: &[f64]) -> Script {
    Script {
        margins: m.iter().map(|&x| Some(x)).collect(),
        last: None,
        reads: Rc::default(),
    }
}

impl TemperatureSensor for Script {
    fn margin_c(&mut self) -> Option<f64> {
        self.reads.set(self.reads.get() + 1);
        if let Some(m) = self.margins.pop_front() {
            self.last = m;
        }
        self.last
    }
    fn temperature_c(&mut self) -> Option<f64> {
        self.last.map(|m| 90.0 - m)
    }
}

/// Margin as a function of the fake time (seconds).
struct TimeSensor {
    clock: FakeClock,
    f: Box<dyn Fn(f64) -> f64>,
}

impl TemperatureSensor for TimeSensor {
    fn margin_c(&mut self) -> Option<f64> {
        Some((self.f)(self.clock.now().as_secs_f64()))
    }
    fn temperature_c(&mut self) -> Option<f64> {
        None
    }
}

fn guard<S: TemperatureSensor>(mode: ThermalMode, sensor: S) -> ThermalGuard<S, FakeClock> {
    ThermalGuard::new(mode, ThermalSettings::default(), Some(sensor), FakeClock::default()).unwrap()
}

fn time_guard(mode: ThermalMode, f: impl Fn(f64) -> f64 + 'static) -> ThermalGuard<TimeSensor, FakeClock> {
    let clock = FakeClock::default();
    let sensor = TimeSensor {
        clock: clock.clone(),
        f: Box::new(f),
    };
    ThermalGuard::new(mode, ThermalSettings::default(), Some(sensor), clock).unwrap()
}

#[test]
fn defaults_match_nsight_python() {
    let s = ThermalSettings::default();
    assert_eq!((s.wait_c, s.cont_c), (10.0, 20.0));
    assert_eq!(s.timeout, Duration::from_secs(180));
    assert_eq!(s.poll, Duration::from_millis(500));
    assert_eq!(
        (MIN_THERMAL_CONT_C, MAX_THERMAL_CONT_C, ADJUSTMENT_STEP_C),
        (12.0, 50.0, 3.0)
    );
    assert_eq!((TARGET_MIN_ITERATIONS, TARGET_MAX_ITERATIONS), (5, 50));
    assert_eq!(ThermalMode::default(), ThermalMode::Auto);
}

#[test]
fn cool_gpu_never_waits_and_starts_counting() {
    let mut g = guard(ThermalMode::Auto, script(&[30.0]));
    assert!(!g.is_counting());
    assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
    assert!(g.is_counting());
    assert_eq!(g.iterations_since_cont(), 0);
    for i in 1..=3 {
        assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
        assert_eq!(g.iterations_since_cont(), i);
    }
    assert_eq!(g.clock().sleeps.get(), 0);
    assert!(g.waits().is_empty());
}

#[test]
fn headroom_between_thresholds_does_not_start_counting() {
    // 15 °C: above the pause threshold, below the resume threshold.
    let mut g = guard(ThermalMode::Auto, script(&[15.0, 15.0, 25.0]));
    g.guard_before_run().unwrap();
    assert!(!g.is_counting());
    g.guard_before_run().unwrap();
    assert!(!g.is_counting());
    g.guard_before_run().unwrap();
    assert!(g.is_counting());
}

#[test]
fn pauses_at_wait_threshold_and_resumes_at_cont() {
    // Hot at t=0 (8 °C headroom), cools 1 °C per second: reaches 20 °C at t=12 s.
    let mut g = time_guard(ThermalMode::Auto, |t| 8.0 + t);
    let waited = g.guard_before_run().unwrap();
    assert_eq!(waited, Duration::from_secs(12));
    assert!(g.is_counting(), "counting starts after cooling");
    assert_eq!(g.iterations_since_cont(), 0);
    assert_eq!(g.clock().sleeps.get(), 24, "polls every 0.5 s");
    let w = &g.waits()[0];
    assert_eq!((w.margin_start_c, w.margin_end_c, w.cont_c), (8.0, 20.0, 20.0));
    assert_eq!(g.total_wait(), Duration::from_secs(12));
    // Exactly at the wait threshold pauses too (<=).
    let mut g = guard(ThermalMode::Manual, script(&[10.0, 19.0, 20.0]));
    assert_eq!(g.guard_before_run().unwrap(), Duration::from_secs(1));
}

#[test]
fn manual_mode_times_out_at_once() {
    let mut g = time_guard(ThermalMode::Manual, |_| 5.0);
    let err = g.guard_before_run().unwrap_err();
    match err {
        ConditionsError::CoolingTimeout {
            margin_c,
            cont_c,
            waited_s,
            timeout_s,
            ref mode,
        } => {
            assert_eq!((margin_c, cont_c, timeout_s), (5.0, 20.0, 180.0));
            assert!((180.0..181.0).contains(&waited_s), "{waited_s}");
            assert_eq!(mode, "manual");
        }
        e => panic!("{e}"),
    }
    assert!(err.to_string().contains("did not cool down"), "{err}");
    assert_eq!(g.cont_c(), 20.0, "manual mode never adapts");
}

#[test]
fn auto_mode_lowers_cont_on_timeout_then_resumes() {
    // Headroom stuck at 15 °C: 20 → 17 (timeout) → 14 (timeout) → 15 >= 14 resumes.
    let mut g = time_guard(ThermalMode::Auto, |t| if t < 0.1 { 5.0 } else { 15.0 });
    let waited = g.guard_before_run().unwrap();
    assert_eq!(g.cont_c(), 14.0);
    let s = waited.as_secs_f64();
    assert!((361.0..=362.0).contains(&s), "two timeouts of just over 180 s: {s}");
    let warnings = g.take_warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("resuming at 17"), "{}", warnings[0]);
    assert!(g.take_warnings().is_empty());
}

#[test]
fn auto_mode_gives_up_at_the_floor() {
    // 20 → 17 → 14 → 12, then a fourth timeout at the floor raises.
    let mut g = time_guard(ThermalMode::Auto, |_| 5.0);
    let err = g.guard_before_run().unwrap_err();
    let ConditionsError::CoolingTimeout { cont_c, waited_s, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(cont_c, MIN_THERMAL_CONT_C);
    assert!((722.0..=724.0).contains(&waited_s), "{waited_s}");
    assert_eq!(g.take_warnings().len(), 3);
}

/// Starts counting, runs `runs` more guards at 60 °C, then pauses once and cools at once.
fn pause_after(mode: ThermalMode, runs: usize, cont_before: Option<f64>) -> ThermalGuard<Script, FakeClock> {
    let mut m = vec![60.0; runs + 1];
    m.push(5.0);
    m.push(70.0);
    let mut settings = ThermalSettings::default();
    if let Some(c) = cont_before {
        settings.cont_c = c;
    }
    let mut g = ThermalGuard::new(mode, settings, Some(script(&m)), FakeClock::default()).unwrap();
    for _ in 0..runs + 2 {
        g.guard_before_run().unwrap();
    }
    g
}

#[test]
fn auto_mode_cools_more_after_too_few_runs_and_less_after_many() {
    // (runs before the pause, the continue temperature after it, from 20): fewer than 5 counted
    // runs since the last pause cool more (23), more than 50 less (17), 5 to 50 leave it.
    for (runs, cont) in [(1, 23.0), (3, 23.0), (4, 20.0), (49, 20.0), (50, 17.0)] {
        let g = pause_after(ThermalMode::Auto, runs, None);
        assert_eq!(g.waits()[0].runs_since_last as usize, runs + 1, "{runs} runs");
        assert_eq!(g.cont_c(), cont, "{runs} runs");
    }
    // Capped at 50, floored at 12.
    assert_eq!(pause_after(ThermalMode::Auto, 1, Some(49.0)).cont_c(), 50.0);
    assert_eq!(pause_after(ThermalMode::Auto, 50, Some(13.0)).cont_c(), 12.0);
}

#[test]
fn manual_mode_never_adapts() {
    assert_eq!(pause_after(ThermalMode::Manual, 1, None).cont_c(), 20.0);
    assert_eq!(pause_after(ThermalMode::Manual, 50, None).cont_c(), 20.0);
}

#[test]
fn first_pause_without_counting_does_not_adapt() {
    // Hot from the start: not counting yet, so no adjustment.
    let mut g = guard(ThermalMode::Auto, script(&[5.0, 30.0]));
    g.guard_before_run().unwrap();
    assert_eq!(g.cont_c(), 20.0);
    assert!(g.is_counting());
    // Immediately hot again after resuming: counted 1 run (< 5) → cool more.
    let mut g = guard(ThermalMode::Auto, script(&[5.0, 30.0, 5.0, 40.0]));
    g.guard_before_run().unwrap();
    g.guard_before_run().unwrap();
    assert_eq!(g.cont_c(), 23.0);
    assert_eq!(g.waits().len(), 2);
}

#[test]
fn unsupported_sensor_disables_the_guard_with_one_warning() {
    let reads = Rc::new(Cell::new(0));
    let sensor = Script {
        margins: VecDeque::from([None]),
        last: None,
        reads: reads.clone(),
    };
    let mut g = guard(ThermalMode::Auto, sensor);
    assert!(g.is_active());
    assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
    assert!(!g.is_active());
    let w = g.take_warnings();
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("disabled"), "{}", w[0]);
    for _ in 0..3 {
        assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
    }
    assert_eq!(reads.get(), 1, "a disabled guard reads nothing");
    assert!(g.take_warnings().is_empty());
}

#[test]
fn sensor_failing_while_cooling_stops_waiting() {
    let sensor = Script {
        margins: VecDeque::from([Some(5.0), Some(6.0), None]),
        last: None,
        reads: Rc::default(),
    };
    let mut g = guard(ThermalMode::Auto, sensor);
    let waited = g.guard_before_run().unwrap();
    assert_eq!(waited, Duration::from_secs(1));
    assert!(!g.is_active());
    assert_eq!(g.take_warnings().len(), 1);
    assert!(g.waits()[0].margin_end_c.is_nan());
}

#[test]
fn off_mode_and_missing_sensor_read_nothing() {
    let reads = Rc::new(Cell::new(0));
    let sensor = Script {
        margins: VecDeque::from([Some(1.0)]),
        last: None,
        reads: reads.clone(),
    };
    let mut g = ThermalGuard::new(
        ThermalMode::Off,
        ThermalSettings::default(),
        Some(sensor),
        FakeClock::default(),
    )
    .unwrap();
    assert!(!g.is_active());
    assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
    assert_eq!(reads.get(), 0);
    let mut g: ThermalGuard<Script, FakeClock> = ThermalGuard::new(
        ThermalMode::Auto,
        ThermalSettings::default(),
        None,
        FakeClock::default(),
    )
    .unwrap();
    assert_eq!(g.guard_before_run().unwrap(), Duration::ZERO);
    assert!(
        g.take_warnings().is_empty(),
        "missing NVML is reported by the caller, once"
    );
}

#[test]
fn settings_and_mode_parsing() {
    let mut bad = ThermalSettings::default();
    bad.wait_c = 20.0;
    bad.cont_c = 10.0;
    let err = ThermalGuard::new(ThermalMode::Auto, bad, Some(script(&[30.0])), FakeClock::default()).unwrap_err();
    assert!(err.to_string().contains("must be below thermal_cont"), "{err}");
    // Off mode does not care.
    assert!(ThermalGuard::new(ThermalMode::Off, bad, Some(script(&[30.0])), FakeClock::default()).is_ok());
    let mut zero_timeout = ThermalSettings::default();
    zero_timeout.timeout = Duration::ZERO;
    assert!(zero_timeout.validate().is_err());
    assert_eq!("AUTO".parse::<ThermalMode>().unwrap(), ThermalMode::Auto);
    assert_eq!("manual".parse::<ThermalMode>().unwrap(), ThermalMode::Manual);
    assert_eq!("off".parse::<ThermalMode>().unwrap(), ThermalMode::Off);
    let err = "hot".parse::<ThermalMode>().unwrap_err();
    assert!(err.to_string().contains("'auto', 'manual', 'off'"), "{err}");
    assert_eq!(ThermalMode::Manual.to_string(), "manual");
    assert_eq!(serde_json::to_string(&ThermalMode::Auto).unwrap(), "\"auto\"");
}

#[test]
fn system_clock_moves() {
    let mut c = SystemClock::new();
    let a = c.now();
    c.sleep(Duration::from_millis(2));
    assert!(c.now() >= a + Duration::from_millis(2));
}
