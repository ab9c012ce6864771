//! Per-run conditions from synthetic sample streams, and the background sampler thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kprof::conditions::background::*;
use kprof::conditions::sampler::ConditionsSource;
use kprof::conditions::thermal::TemperatureSensor;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// A sample at `t0 + at_ms` with the given SM clock, reasons and energy counter.
fn s(t0: Instant, at_ms: u64, sm: f64, reasons: u64, energy: u64) -> Sample {
    Sample {
        at: t0 + ms(at_ms),
        sm_clock_mhz: sm,
        mem_clock_mhz: 3201.0,
        reasons: Some(reasons),
        temperature_c: 40.0 + at_ms as f64 / 10.0,
        power_mw: 100_000.0 + 1000.0 * at_ms as f64,
        energy_mj: Some(energy),
        margin_c: Some(30.0),
    }
}

#[test]
fn a_window_with_samples_uses_their_mean_min_and_or() {
    let t0 = Instant::now();
    let samples = vec![
        s(t0, 0, 1980.0, 0x1, 1000),
        s(t0, 20, 1980.0, 0x0, 1400),
        s(t0, 40, 1600.0, 0x0, 1800),
        s(t0, 60, 1980.0, 0x0, 2200),
        s(t0, 80, 1980.0, 0x0, 2600),
    ];
    let c = conditions_from_samples(&samples, t0 + ms(10), t0 + ms(70), 1980.0, ms(3));
    assert_eq!(c.samples_in_run, Some(3));
    assert_eq!(c.sm_clock_mhz_after, (1980.0 + 1600.0 + 1980.0) / 3.0);
    assert_eq!(c.sm_clock_mhz_min, 1600.0);
    assert_eq!(c.sm_clock_mhz_before, 1980.0);
    assert_eq!(c.power_mw, 140_000.0, "mean of 120, 140, 160 W");
    assert_eq!(c.temperature_c, 44.0);
    assert_eq!(c.mem_clock_mhz, 3201.0);
    // Energy: 1200 at 10 ms, 2400 at 70 ms.
    assert!((c.energy_mj - 1200.0).abs() < 1e-9, "{}", c.energy_mj);
    // GPU_IDLE before the run is in the OR but does not count as throttling; the 1600 MHz
    // sample (< 0.9 * 1980) does.
    assert_eq!(c.throttle_reasons, Some(0x1));
    assert_eq!(c.throttle_reasons_before, Some(0x1));
    assert_eq!(c.throttled, Some(true));
    assert_eq!(c.thermal_wait_s, 0.003);
    assert!((c.wall_s - 0.060).abs() < 1e-9);
}

#[test]
fn a_run_shorter_than_the_interval_takes_the_nearest_sample() {
    let t0 = Instant::now();
    let samples = vec![s(t0, 0, 1700.0, 0, 1000), s(t0, 20, 1980.0, 0, 1400)];
    // [14, 16] ms: nearer to the 20 ms sample.
    let c = conditions_from_samples(&samples, t0 + ms(14), t0 + ms(16), 1980.0, Duration::ZERO);
    assert_eq!(c.samples_in_run, Some(0));
    assert_eq!(c.sm_clock_mhz_after, 1980.0);
    assert_eq!(c.power_mw, 120_000.0);
    assert_eq!(c.throttled, Some(false));
    // One update of the counter (at 10 ms, the middle between the polls that saw the change) and
    // the start of sampling resolve no power: NaN (a slope through the start of sampling read
    // 2-25 times power x duration on the H200).
    assert!(c.energy_mj.is_nan(), "{}", c.energy_mj);
    // [2, 4] ms: nearer to the 0 ms sample, whose 1700 MHz is throttled.
    let c = conditions_from_samples(&samples, t0 + ms(2), t0 + ms(4), 1980.0, Duration::ZERO);
    assert_eq!(c.sm_clock_mhz_after, 1700.0);
    assert_eq!(c.throttled, Some(true));
}

#[test]
fn energy_is_interpolated_through_the_counters_updates_and_extrapolated_past_the_newest() {
    let t0 = Instant::now();
    // The counter changed between the polls at 0 and 20 ms: its update is placed at 10 ms.
    let samples = vec![s(t0, 0, 1980.0, 0, 1000), s(t0, 20, 1980.0, 0, 1400)];
    assert_eq!(energy_at(&samples, t0 + ms(5)), Some(1200.0));
    assert_eq!(energy_at(&samples, t0 + ms(10)), Some(1400.0));
    // After the newest update: the last two updates' slope.
    assert_eq!(energy_at(&samples, t0 + ms(20)), Some(1800.0));
    // Before the oldest: unknown.
    let before = t0.checked_sub(ms(1)).unwrap();
    assert_eq!(energy_at(&samples, before), None);
    assert_eq!(energy_at(&samples[..1], t0 + ms(5)), None);
    // A counter that did not move between polls resolves nothing: NaN, never a zero.
    let flat = vec![s(t0, 0, 1980.0, 0, 1000), s(t0, 20, 1980.0, 0, 1000)];
    let c = conditions_from_samples(&flat, t0 + ms(5), t0 + ms(8), 1980.0, Duration::ZERO);
    assert!(c.energy_mj.is_nan(), "{}", c.energy_mj);
    // A counter going backwards is NaN.
    let back = vec![s(t0, 0, 1980.0, 0, 1000), s(t0, 20, 1980.0, 0, 900)];
    let c = conditions_from_samples(&back, t0 + ms(5), t0 + ms(8), 1980.0, Duration::ZERO);
    assert!(c.energy_mj.is_nan());
}

/// Polls every 20 ms of a counter that, as NVML's on the H200 (driver 580), moves only every
/// 100 ms, by 65 J at 650 W.
fn h200_like_counter(t0: Instant, until_ms: u64) -> Vec<Sample> {
    (0..=until_ms / 20)
        .map(|i| {
            let at = i * 20;
            s(t0, at, 1980.0, 0, 1_000_000 + 65_000 * (at / 100))
        })
        .collect()
}

#[test]
fn a_run_shorter_than_the_counters_update_period_has_nan_energy_and_a_longer_one_power_times_time() {
    let t0 = Instant::now();
    let samples = h200_like_counter(t0, 1000);
    let updates = energy_updates(&samples);
    assert_eq!(energy_update_period(&updates), Some(ms(100)));
    // A 22 ms run (an fp32 matmul 8192) between two polls that read the same value:
    // not resolved, NaN (it read 0.0 before).
    let c = conditions_from_samples(&samples, t0 + ms(505), t0 + ms(527), 1980.0, Duration::ZERO);
    assert!(c.energy_mj.is_nan(), "{}", c.energy_mj);
    assert!((c.energy_update_period_s - 0.1).abs() < 1e-9);
    // A 250 ms run: the mean power (650 W) times the time, within 10 %.
    let c = conditions_from_samples(&samples, t0 + ms(305), t0 + ms(555), 1980.0, Duration::ZERO);
    let want = 650.0 * 250.0; // mJ = W * ms
    assert!((c.energy_mj / want - 1.0).abs() < 0.10, "{} vs {want}", c.energy_mj);
    // The same run when the counter happened to update 4 ms after sampling started: the slope
    // through the start of sampling would read 65 J per 4 ms; only the real updates count.
    let shifted: Vec<Sample> = (0..=50u64)
        .map(|i| {
            let at = i * 20;
            s(t0, at, 1980.0, 0, 1_000_000 + 65_000 * ((at + 96) / 100))
        })
        .collect();
    let c = conditions_from_samples(&shifted, t0 + ms(5), t0 + ms(255), 1980.0, Duration::ZERO);
    assert!((c.energy_mj / want - 1.0).abs() < 0.10, "{} vs {want}", c.energy_mj);
}

#[test]
fn throttle_reasons_are_the_or_of_the_window_and_its_neighbours() {
    let t0 = Instant::now();
    let samples = vec![
        s(t0, 0, 1980.0, 0x0, 0),   // older than the nearest before: not included
        s(t0, 20, 1980.0, 0x4, 0),  // nearest before: SW power cap
        s(t0, 40, 1980.0, 0x1, 0),  // inside
        s(t0, 60, 1980.0, 0x40, 0), // nearest after: HW thermal slowdown
        s(t0, 80, 1980.0, 0x100, 0),
    ];
    let c = conditions_from_samples(&samples, t0 + ms(30), t0 + ms(50), 1980.0, Duration::ZERO);
    assert_eq!(c.throttle_reasons, Some(0x4 | 0x1 | 0x40));
    assert_eq!(c.throttle_reasons_before, Some(0x4));
    assert_eq!(c.throttled, Some(true));
    let idle = vec![s(t0, 0, 1980.0, 0x1, 0), s(t0, 20, 1980.0, 0x100, 0)];
    let c = conditions_from_samples(&idle, t0 + ms(5), t0 + ms(10), 1980.0, Duration::ZERO);
    assert_eq!(c.throttle_reasons, Some(0x101));
    assert_eq!(c.throttled, Some(false));
}

#[test]
fn no_samples_gives_nan_columns() {
    let t0 = Instant::now();
    let c = conditions_from_samples(&[], t0, t0 + ms(1), 1980.0, Duration::ZERO);
    assert!(c.sm_clock_mhz_after.is_nan() && c.energy_mj.is_nan() && c.power_mw.is_nan());
    assert_eq!(c.throttled, None);
}

/// Counts its reads; the energy counter advances by 10 mJ per read.
struct Counting(Arc<AtomicU64>);

impl ConditionsSource for Counting {
    fn sm_clock_mhz(&mut self) -> Option<f64> {
        Some(1980.0)
    }
    fn mem_clock_mhz(&mut self) -> Option<f64> {
        Some(3201.0)
    }
    fn max_sm_clock_mhz(&mut self) -> Option<f64> {
        Some(1980.0)
    }
    fn throttle_reasons(&mut self) -> Option<u64> {
        // GPU_IDLE (0x1) on every poll, SW_POWER_CAP (0x4) from the 40th on.
        Some(if self.0.load(Ordering::SeqCst) >= 40 { 0x5 } else { 0x1 })
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(50.0)
    }
    fn power_mw(&mut self) -> Option<f64> {
        Some(200_000.0)
    }
    fn total_energy_mj(&mut self) -> Option<u64> {
        Some(10 * self.0.fetch_add(1, Ordering::SeqCst))
    }
    fn margin_c(&mut self) -> Option<f64> {
        Some(25.0)
    }
}

struct Direct(Arc<AtomicU64>);
impl TemperatureSensor for Direct {
    fn margin_c(&mut self) -> Option<f64> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Some(5.0)
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(80.0)
    }
}

#[test]
fn the_thread_polls_only_while_active_and_feeds_the_guard_sensor() {
    let polls = Arc::new(AtomicU64::new(0));
    let bg = BackgroundSampler::start(Counting(polls.clone()), ms(2));
    assert!(bg.is_running());
    std::thread::sleep(ms(20));
    assert_eq!(polls.load(Ordering::SeqCst), 0, "paused until activated");
    bg.set_active(true);
    assert!(bg.latest().is_some(), "activation waits for the first sample");
    let start = Instant::now();
    std::thread::sleep(ms(20));
    let end = Instant::now();
    assert!(bg.wait_for_sample_after(end, ms(500)));
    let c = bg.conditions(&[(start, end, Duration::ZERO)], Some(end));
    assert_eq!(c.len(), 1);
    assert!(c[0].samples_in_run.unwrap() >= 1, "{c:?}");
    assert_eq!(c[0].max_sm_clock_mhz, 1980.0);
    assert_eq!(c[0].sm_clock_mhz_after, 1980.0);
    assert_eq!(c[0].power_mw, 200_000.0);
    assert!(c[0].energy_mj > 0.0);
    assert_eq!(c[0].throttled, Some(false));
    // The guard's pre-run check answers from the samples; cooling polls read the device.
    let direct = Arc::new(AtomicU64::new(0));
    let mut sensor = bg.sensor(Direct(direct.clone()));
    assert_eq!(sensor.margin_c(), Some(25.0));
    assert_eq!(direct.load(Ordering::SeqCst), 0);
    assert_eq!(sensor.margin_c_fresh(), Some(5.0));
    assert_eq!(direct.load(Ordering::SeqCst), 1);
    // Paused: no polls, and the sensor reads the device.
    bg.set_active(false);
    std::thread::sleep(ms(10));
    let n = polls.load(Ordering::SeqCst);
    std::thread::sleep(ms(20));
    assert_eq!(polls.load(Ordering::SeqCst), n);
    assert_eq!(sensor.margin_c(), Some(5.0));
    drop(bg); // joins the thread
}

#[test]
fn poll_interval_from_the_environment_value() {
    assert_eq!(poll_interval_from_env(Some("10")), Some(ms(10)));
    assert_eq!(poll_interval_from_env(Some(" 15 ")), Some(ms(15)));
    assert_eq!(poll_interval_from_env(Some("0")), None);
    assert_eq!(poll_interval_from_env(Some("5000")), None);
    assert_eq!(poll_interval_from_env(Some("x")), None);
    assert_eq!(poll_interval_from_env(None), None);
    assert_eq!(DEFAULT_POLL_INTERVAL, ms(20));
}

struct Probe(Arc<AtomicU64>, Arc<AtomicU64>);
impl kprof::conditions::ConditionsProbe for Probe {
    fn sensor(&mut self) -> Option<kprof::conditions::runtime::BoxSensor> {
        Some(Box::new(Direct(self.1.clone())))
    }
    fn source(&mut self) -> Option<kprof::conditions::runtime::BoxSource> {
        Some(Box::new(Counting(self.0.clone())))
    }
}

/// The run loop's conditions hooks (guard check, start and end stamps, and the flush's
/// `settle` every 16 runs) over 2000 runs read no sensor directly (their cost per run is printed).
#[test]
fn the_run_loops_conditions_hooks_read_no_sensor_directly_and_keep_the_sampled_power() {
    use kprof::conditions::{Collectors, ProfilerConditions, ThermalOptions};
    let (polls, direct) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut pc = ProfilerConditions::with_probe(Box::new(Probe(polls.clone(), direct.clone())));
    pc.set_poll_interval(ms(10));
    pc.begin_sweep(&ThermalOptions::default(), true, &Collectors::default(), &[])
        .unwrap();
    let config = kprof::core::Config::new().with("n", 1);
    let mut per_run = Vec::new();
    for run in 0..2000u32 {
        let t = Instant::now();
        pc.thermal_guard().unwrap();
        pc.before_run(0, &config, run, false).unwrap();
        pc.after_run(0, run, false);
        if run % 16 == 15 {
            pc.settle();
        }
        per_run.push(t.elapsed());
    }
    per_run.sort();
    let median = per_run[per_run.len() / 2];
    eprintln!(
        "conditions hooks per run: median {median:?}, p99 {:?}",
        per_run[per_run.len() * 99 / 100]
    );
    // Its cost is printed, not asserted: speed targets live in benches/, and a loaded 2-core
    // machine made a bound here fail.
    assert_eq!(direct.load(Ordering::SeqCst), 0, "the guard read the sensor directly");
    let extras = pc.extras_for(0, 1999, "r");
    assert!(
        extras.contains(&("PowerW".to_string(), kprof::core::ExtraValue::Number(200.0))),
        "{extras:?}"
    );
    // Runs of a few microseconds are shorter than the energy counter's updates (or came before
    // it had updated three times): NaN energy, and those are the only warnings.
    let warnings = pc.end_sweep();
    assert!(
        warnings.iter().all(|w| w.starts_with("energy: ")
            && (w.contains("updated three times") || w.contains("shorter than the update period"))),
        "{warnings:?}"
    );
}

/// Energy of the middle timing pass of a synthetic timeline as the sampler's interpolation reads
/// it, over the true energy: passes of `pass_ms` at 600 W, `idle_ms` at 120 W before each,
/// NVML's counter updated every 100 ms (phase `phase_ms`) and polled every 20 ms.
fn run_energy_ratio(pass_ms: u64, idle_ms: u64, phase_ms: u64) -> f64 {
    let (p_run, p_idle) = (600u64, 120u64); // W = mJ per ms
    let mut segments = Vec::new(); // (start, end, W)
    let mut windows = Vec::new();
    let mut t = 0;
    for pass in 0..12 {
        if idle_ms > 0 {
            segments.push((t, t + idle_ms, p_idle));
            t += idle_ms;
        }
        if pass % 2 == 0 {
            windows.push((t, t + pass_ms));
        }
        segments.push((t, t + pass_ms, p_run));
        t += pass_ms;
    }
    let energy = |x: u64| -> u64 {
        segments
            .iter()
            .map(|&(a, b, w)| if x <= a { 0 } else { w * (x.min(b) - a) })
            .sum()
    };
    let counter = |x: u64| -> u64 {
        let updates = if x < phase_ms { 0 } else { (x - phase_ms) / 100 + 1 };
        if updates == 0 {
            0
        } else {
            energy(phase_ms + (updates - 1) * 100)
        }
    };
    let t0 = Instant::now();
    let samples: Vec<Sample> = (0..t / 20)
        .map(|i| Sample {
            energy_mj: Some(counter(i * 20)),
            ..s(t0, i * 20, 1980.0, 0, 0)
        })
        .collect();
    let (a, b) = windows[3];
    let got = energy_at(&samples, t0 + ms(b)).unwrap() - energy_at(&samples, t0 + ms(a)).unwrap();
    got / (p_run * (b - a)) as f64
}

#[test]
fn idle_time_beside_a_run_blurs_its_energy_which_is_why_long_work_earns_no_rest() {
    // runner/gpu_rest.rs gives no rest to a run whose timing pass took 200 ms or more after a
    // rest (unless NVML saw the power cap), nor to its counter pass, and the run loop gives NaN
    // energy to a run with idle time beside it (idle_blurs_energy): runs that long are the ones
    // whose energy NVML's counter resolves. Back to back, a 258 ms pass reads its energy
    // within 3 % whatever the counter's phase; with 100 ms of idle beside every pass 12 % low for
    // the worst of four phases, 120 ms passes with as much idle 30 % low.
    for phase in [7, 31, 58, 83] {
        let r = run_energy_ratio(258, 0, phase);
        assert!((r - 1.0).abs() < 0.03, "back to back, phase {phase}: {r}");
    }
    let low = |pass, idle| {
        [7, 31, 58, 83]
            .iter()
            .map(|&p| run_energy_ratio(pass, idle, p))
            .fold(f64::MAX, f64::min)
    };
    assert!((0.85..0.9).contains(&low(258, 100)), "{}", low(258, 100));
    assert!(low(120, 120) < 0.75, "{}", low(120, 120));
}

#[test]
fn idle_gpu_time_counts_beside_a_run_within_the_margin_only() {
    // Times an hour ahead: no other test's idle time (the log is the process's) reaches them.
    let t0 = Instant::now() + Duration::from_secs(3600);
    note_gpu_idle(t0 + ms(500), t0 + ms(520));
    note_gpu_idle(t0 + ms(530), t0 + ms(535));
    // A run ending 70 ms before the idle time, with a 100 ms margin (the counter's update period):
    // 20 ms of it; one ending 20 ms before: 25; one overlapping it: the 3 ms inside its margin of 0.
    assert_eq!(gpu_idle_near(t0 + ms(200), t0 + ms(430), ms(100), ms(100)), ms(20));
    assert_eq!(gpu_idle_near(t0 + ms(200), t0 + ms(480), ms(100), ms(100)), ms(25));
    assert_eq!(gpu_idle_near(t0 + ms(510), t0 + ms(513), ms(0), ms(0)), ms(3));
    // ... and one starting 60 ms after the last; further than the margin on either side: none.
    assert_eq!(gpu_idle_near(t0 + ms(595), t0 + ms(900), ms(100), ms(100)), ms(25));
    assert_eq!(
        gpu_idle_near(t0 + ms(100), t0 + ms(390), ms(100), ms(100)),
        Duration::ZERO
    );
    assert_eq!(
        gpu_idle_near(t0 + ms(640), t0 + ms(900), ms(100), ms(100)),
        Duration::ZERO
    );
    // The second before a run (NVML's power average) counts, after it only the margin.
    assert_eq!(gpu_idle_near(t0 + ms(1400), t0 + ms(1500), ms(1000), ms(100)), ms(25));
    assert_eq!(gpu_idle_near(t0 + ms(1600), t0 + ms(1700), ms(1000), ms(100)), ms(0));
    assert_eq!(
        gpu_idle_near(t0 - ms(800), t0 + ms(300), ms(1000), ms(100)),
        Duration::ZERO
    );
    assert_eq!(gpu_idle_near(t0 - ms(800), t0 + ms(420), ms(1000), ms(100)), ms(20));
}

#[test]
fn the_reasons_between_two_instants_are_those_the_sampler_polled_then() {
    // The run loop's rests (runner/gpu_rest.rs) ask whether NVML saw the power cap during a long
    // timing pass.
    let polls = Arc::new(AtomicU64::new(0));
    let bg = BackgroundSampler::start(Counting(polls.clone()), ms(1));
    let before = Instant::now();
    assert_eq!(bg.reasons_between(before - ms(10), before), None, "nothing polled yet");
    bg.set_active(true);
    let t0 = Instant::now();
    while polls.load(Ordering::SeqCst) < 20 {
        std::thread::sleep(ms(1));
    }
    let t1 = Instant::now();
    assert_eq!(bg.reasons_between(t0, t1), Some(0x1));
    while polls.load(Ordering::SeqCst) < 60 {
        std::thread::sleep(ms(1));
    }
    let t2 = Instant::now();
    assert_eq!(bg.reasons_between(t1, t2).map(|r| r & 0x4), Some(0x4));
    assert_eq!(bg.reasons_between(t2 + ms(3600), t2 + ms(3601)), None);
}

#[test]
fn idle_time_blurs_a_runs_energy_beyond_5_percent_beside_it_or_of_the_second_before() {
    // Times two hours ahead: no other test's idle time reaches them. A 258 ms run at 1000-1258 ms.
    let t0 = Instant::now() + Duration::from_secs(7200);
    let run = |p| idle_blurs_energy(t0 + ms(1000), t0 + ms(1258), ms(p));
    assert!(!run(100), "no idle noted");
    // 12 ms of host work 50 ms after it (4.7 % of the run): kept.
    note_gpu_idle(t0 + ms(1308), t0 + ms(1320));
    assert!(!run(100));
    // 30 ms of rests 0.6 s before it: beyond the counter's reach, 2.4 % of the run and the
    // second before it: kept; 40 ms more there (5.6 %): NaN, as is 2 ms more right after it.
    note_gpu_idle(t0 + ms(400), t0 + ms(430));
    assert!(!run(100));
    note_gpu_idle(t0 + ms(300), t0 + ms(340));
    assert!(run(100));
    let t1 = t0 + Duration::from_secs(60);
    note_gpu_idle(t1 + ms(1258), t1 + ms(1272));
    assert!(
        idle_blurs_energy(t1 + ms(1000), t1 + ms(1258), ms(100)),
        "14 ms beside: 5.4 %"
    );
}
