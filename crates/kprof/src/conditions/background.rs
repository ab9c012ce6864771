//! The background conditions sampler: NVML read off the run loop's path. A [`BackgroundSampler`]
//! thread polls the device into a ring of timestamped [`Sample`]s, so that the run loop only takes
//! `Instant::now()` around each run and [`conditions_from_samples`] turns each window into a
//! [`RunConditions`] later; the thermal guard reads the latest sample ([`SampledSensor`]).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::sampler::{ConditionsSource, RunConditions};
use super::thermal::TemperatureSensor;

/// Default poll interval of the background sampler.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Most samples kept (at 20 ms, about 160 s).
pub const RING_CAPACITY: usize = 8192;
/// The guard's pre-run check uses the latest sample when it is at most this many poll
/// intervals old (and at least [`STALE_MIN`]).
pub const STALE_POLLS: u32 = 4;
/// The least age up to which the guard's pre-run check trusts the latest sample (the GPU's
/// temperature moves slowly; the guard polls every 0.5 s while cooling).
pub const STALE_MIN: Duration = Duration::from_millis(250);
/// Environment variable overriding the poll interval, in milliseconds.
pub const POLL_ENV: &str = "KPROF_CONDITIONS_POLL_MS";

/// One poll of the device. `None`/NaN: could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// When it was taken (middle of the poll).
    pub at: Instant,
    /// SM clock, MHz.
    pub sm_clock_mhz: f64,
    /// Memory clock, MHz.
    pub mem_clock_mhz: f64,
    /// Clock-event reasons.
    pub reasons: Option<u64>,
    /// GPU temperature, °C.
    pub temperature_c: f64,
    /// Power draw, mW.
    pub power_mw: f64,
    /// Total-energy counter, mJ.
    pub energy_mj: Option<u64>,
    /// Headroom to the slowdown temperature, °C.
    pub margin_c: Option<f64>,
}

impl Sample {
    /// Reads every value from `source` once.
    pub fn poll<S: ConditionsSource + ?Sized>(source: &mut S) -> Sample {
        Sample::read(source, true)
    }

    /// Reads every value from `source` once, the thermal margin only `with_margin` (else `None`):
    /// the energy counter first, as both samplers take them.
    pub(crate) fn read<S: ConditionsSource + ?Sized>(source: &mut S, with_margin: bool) -> Sample {
        let t0 = Instant::now();
        let energy_mj = source.total_energy_mj();
        let sm_clock_mhz = source.sm_clock_mhz().unwrap_or(f64::NAN);
        let reasons = source.throttle_reasons();
        let mem_clock_mhz = source.mem_clock_mhz().unwrap_or(f64::NAN);
        let temperature_c = source.temperature_c().unwrap_or(f64::NAN);
        let power_mw = source.power_mw().unwrap_or(f64::NAN);
        let margin_c = if with_margin {
            source.margin_c().filter(|m| m.is_finite())
        } else {
            None
        };
        let at = t0 + t0.elapsed() / 2;
        Sample {
            at,
            sm_clock_mhz,
            mem_clock_mhz,
            reasons,
            temperature_c,
            power_mw,
            energy_mj,
            margin_c,
        }
    }
}

/// Parses [`POLL_ENV`]'s value (milliseconds, 1..=1000).
pub fn poll_interval_from_env(value: Option<&str>) -> Option<Duration> {
    let ms: u64 = value?.trim().parse().ok()?;
    (1..=1000).contains(&ms).then(|| Duration::from_millis(ms))
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs
        .filter(|x| x.is_finite())
        .fold((0.0, 0u32), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// How far back before a run the samples are kept and read for the energy counter: enough for
/// its updates around the run and their period (about 100 ms on the H200) to be known.
pub const ENERGY_HISTORY: Duration = Duration::from_secs(1);

/// Idle time the run loop left the GPU between its pieces of work (`runner::gpu_rest`'s rests
/// against the power cap, and its own host work between passes), the last [`IDLE_KEPT`]
/// intervals, oldest first.
static GPU_IDLE: Mutex<VecDeque<(Instant, Instant)>> = Mutex::new(VecDeque::new());
/// How many intervals [`GPU_IDLE`] keeps (runs are settled within ~50 ms of their counter pass,
/// which notes at most one interval per kernel).
const IDLE_KEPT: usize = 4096;
/// The most idle GPU time beside a run, as a share, that leaves its energy
/// ([`idle_blurs_energy`]): the interpolation mixes the idle power into the run's (the synthetic
/// timeline of `tests/all/conditions_background.rs` reads a 258 ms run with 100 ms of idle beside
/// it 12 % low, about 0.3 x the idle share), so 5 % keeps it within about 2 %.
pub const IDLE_SHARE_MAX: f64 = 0.05;

/// Notes that the GPU was idle from `start` to `end` (the run loop, between its pieces of work).
pub fn note_gpu_idle(start: Instant, end: Instant) {
    let mut idle = GPU_IDLE.lock().unwrap_or_else(|p| p.into_inner());
    if idle.len() == IDLE_KEPT {
        idle.pop_front();
    }
    idle.push_back((start, end));
}

/// How far back NVML's power reading (`PowerW`) averages on the H200 (one second): idle time that
/// recent blurs it (`PowerW` is the mean of such averages read during the run), so a run's energy
/// is given only where the run and the second before it were busy (258 ms runs after rests read
/// 697-700 W by their energy, 574-602 W by `PowerW`; 2026-12-03).
pub const POWER_AVERAGE: Duration = Duration::from_secs(1);

/// The idle time noted by [`note_gpu_idle`] within `[start - before, end + after]`.
pub fn gpu_idle_near(start: Instant, end: Instant, before: Duration, after: Duration) -> Duration {
    let (from, to) = (start.checked_sub(before).unwrap_or(start), end + after);
    let idle = GPU_IDLE.lock().unwrap_or_else(|p| p.into_inner());
    idle.iter()
        .map(|&(a, b)| b.min(to).saturating_duration_since(a.max(from)))
        .sum()
}

/// Whether the idle GPU time noted beside the run `[start, end]` ([`note_gpu_idle`]) blurs its
/// energy: more than [`IDLE_SHARE_MAX`] of the run within `period` (the energy counter's update
/// period) of it, where the counter's interpolation reaches, or of the run and the
/// [`POWER_AVERAGE`] before it, which NVML's power average (`PowerW`, and any check of the energy
/// against power x duration) reads. Neither can tell the idle power from the run's.
pub fn idle_blurs_energy(start: Instant, end: Instant, period: Duration) -> bool {
    let run_s = end.saturating_duration_since(start).as_secs_f64();
    let beside_s = gpu_idle_near(start, end, period, period).as_secs_f64();
    let averaged_s = gpu_idle_near(start, end, POWER_AVERAGE, Duration::ZERO).as_secs_f64();
    beside_s > IDLE_SHARE_MAX * run_s || averaged_s > IDLE_SHARE_MAX * (POWER_AVERAGE.as_secs_f64() + run_s)
}

/// The energy counter's update instants in `samples` (time order): for every change of value,
/// the middle between the last sample with the old value and the first with the new one, with the
/// new value; the first sample with a counter starts the list as it is.
pub fn energy_updates(samples: &[Sample]) -> Vec<(Instant, f64)> {
    let mut out: Vec<(Instant, f64)> = Vec::new();
    let mut prev: Option<(Instant, u64)> = None;
    for s in samples {
        let Some(e) = s.energy_mj else { continue };
        match prev {
            None => out.push((s.at, e as f64)),
            Some((at, v)) if v != e => out.push((at + s.at.duration_since(at) / 2, e as f64)),
            Some(_) => {}
        }
        prev = Some((s.at, e));
    }
    out
}

/// The counter's update period: the median interval between its updates (at least two intervals
/// needed; the first update is where sampling started, not an update, and is left out).
pub fn energy_update_period(updates: &[(Instant, f64)]) -> Option<Duration> {
    let mut gaps: Vec<Duration> = updates
        .windows(2)
        .skip(1)
        .map(|w| w[1].0.saturating_duration_since(w[0].0))
        .collect();
    if gaps.len() < 2 {
        return None;
    }
    gaps.sort();
    Some(gaps[gaps.len() / 2])
}

/// The energy counter at `t`, mJ: linear interpolation between the update instants around `t`
/// ([`energy_updates`]), or extrapolated from the last two when `t` is after all of them; `None`
/// when `t` is before every sample or there are too few updates.
pub fn energy_at(samples: &[Sample], t: Instant) -> Option<f64> {
    interpolate(&energy_updates(samples), t)
}

fn interpolate(pts: &[(Instant, f64)], t: Instant) -> Option<f64> {
    if pts.is_empty() {
        return None;
    }
    if let Some(&(_, e)) = pts.iter().find(|(at, _)| *at == t) {
        return Some(e);
    }
    let after = pts.iter().position(|(at, _)| *at > t);
    let (a, b) = match after {
        Some(0) => return None, // before every sample: the ring does not reach back that far
        Some(i) => (pts[i - 1], pts[i]),
        None if pts.len() >= 2 => (pts[pts.len() - 2], pts[pts.len() - 1]),
        None => return None,
    };
    let span = b.0.duration_since(a.0).as_secs_f64();
    if span <= 0.0 {
        return Some(b.1);
    }
    let x = if t >= a.0 {
        t.duration_since(a.0).as_secs_f64()
    } else {
        -a.0.duration_since(t).as_secs_f64()
    };
    Some(a.1 + (b.1 - a.1) * x / span)
}

/// The conditions of the run `[start, end]` from `samples` (in time order): means of the samples
/// inside the run (the nearest one when none), the OR of the clock-event reasons around it, and
/// the energy counter interpolated through its update instants ([`energy_updates`]). A run shorter
/// than the counter's update period ([`energy_update_period`]), or with more than
/// [`IDLE_SHARE_MAX`] of idle GPU time beside it ([`idle_blurs_energy`]), gets NaN energy: the
/// counter cannot resolve it (`docs/timing.md`, Energy). `max_sm_clock_mhz` is the device's boost
/// clock, `thermal_wait` the guard's wait before the run.
pub fn conditions_from_samples(
    samples: &[Sample],
    start: Instant,
    end: Instant,
    max_sm_clock_mhz: f64,
    thermal_wait: Duration,
) -> RunConditions {
    let mut c = RunConditions::unknown(thermal_wait);
    c.max_sm_clock_mhz = max_sm_clock_mhz;
    c.wall_s = end.saturating_duration_since(start).as_secs_f64();
    let inside: Vec<&Sample> = samples.iter().filter(|s| s.at >= start && s.at <= end).collect();
    let before = samples.iter().rev().find(|s| s.at < start);
    let after = samples.iter().find(|s| s.at > end);
    c.samples_in_run = Some(inside.len() as u32);
    if samples.is_empty() {
        c.classify();
        return c;
    }
    let nearest = match (before, after) {
        (Some(b), Some(a)) => {
            if start.duration_since(b.at) < a.at.duration_since(end) {
                Some(b)
            } else {
                Some(a)
            }
        }
        (b, a) => a.or(b),
    };
    let window: Vec<&Sample> = if inside.is_empty() {
        nearest.into_iter().collect()
    } else {
        inside.clone()
    };
    c.sm_clock_mhz_before = before.map(|s| s.sm_clock_mhz).unwrap_or(f64::NAN);
    c.sm_clock_mhz_after = mean(window.iter().map(|s| s.sm_clock_mhz));
    c.sm_clock_mhz_min = window
        .iter()
        .map(|s| s.sm_clock_mhz)
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::min);
    c.mem_clock_mhz = mean(window.iter().map(|s| s.mem_clock_mhz));
    c.temperature_c = mean(window.iter().map(|s| s.temperature_c));
    c.power_mw = mean(window.iter().map(|s| s.power_mw));
    c.throttle_reasons_before = before.and_then(|s| s.reasons);
    let all = inside.iter().copied().chain(before).chain(after);
    c.throttle_reasons = all.fold(None, |acc: Option<u64>, s| match (acc, s.reasons) {
        (a, None) => a,
        (a, Some(r)) => Some(a.unwrap_or(0) | r),
    });
    let updates = energy_updates(samples);
    let period = energy_update_period(&updates);
    c.energy_update_period_s = period.map_or(f64::NAN, |p| p.as_secs_f64());
    c.energy_counter_read = !updates.is_empty();
    // Only the counter's real updates: the first point is where sampling started, and a slope
    // through it and an update that happened soon after is no power at all (seen on the H200:
    // energies 2-25 times power x duration).
    let real = updates.get(1..).unwrap_or(&[]);
    let sampling_start = updates.first().map(|u| u.0);
    let at = |t: Instant| match (real, sampling_start) {
        // Between the start of sampling and the first update: back along the first two updates.
        ([a, b, ..], Some(s0)) if t < a.0 && t >= s0 => {
            let span = b.0.duration_since(a.0).as_secs_f64();
            (span > 0.0).then(|| a.1 - (b.1 - a.1) * a.0.duration_since(t).as_secs_f64() / span)
        }
        _ => interpolate(real, t),
    };
    c.energy_mj = match (period, at(start), at(end)) {
        // The update period not known yet (fewer than three updates seen), or a run shorter than
        // one update of the counter: not resolved (NaN, with a warning per sweep).
        (None, _, _) => f64::NAN,
        (Some(p), _, _) if end.saturating_duration_since(start) < p => f64::NAN,
        (_, Some(a), Some(z)) if z >= a => z - a,
        _ => f64::NAN,
    };
    c.classify();
    c
}

struct State {
    stop: bool,
    active: bool,
    ring: VecDeque<Sample>,
    max_sm_clock_mhz: f64,
    polls: u64,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    interval: Duration,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// After a poll that read the energy counter at `reading` (`(when, mJ)`): when the counter moved
/// since `last_update`, publishes the mean power between the two polls that saw it move
/// ([`super::power::note_power`]). Returns the last update seen.
fn publish_power(
    last_update: Option<(Instant, u64)>,
    reading: (Instant, u64),
    limit_mw: f64,
) -> Option<(Instant, u64)> {
    match last_update {
        Some((_, mj)) if mj == reading.1 => last_update,
        Some(earlier) => {
            if let Some(w) = super::power::PowerWindow::between(earlier, reading, limit_mw) {
                super::power::note_power(w);
            }
            Some(reading)
        }
        None => Some(reading),
    }
}

/// The sampler thread and its ring of samples: it polls the device every
/// [`DEFAULT_POLL_INTERVAL`] (set with [`super::ProfilerConditions::set_poll_interval`] or
/// `KPROF_CONDITIONS_POLL_MS`) into a ring of at most [`RING_CAPACITY`] timestamped [`Sample`]s,
/// only while a bench call runs, and is joined when the sampler is dropped.
pub struct BackgroundSampler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for BackgroundSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundSampler")
            .field("interval", &self.shared.interval)
            .finish_non_exhaustive()
    }
}

impl BackgroundSampler {
    /// Starts the thread over `source`, paused (see [`BackgroundSampler::set_active`]). The max
    /// SM clock is read once, in the thread.
    pub fn start<S: ConditionsSource + Send + 'static>(mut source: S, interval: Duration) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                stop: false,
                active: false,
                ring: VecDeque::new(),
                max_sm_clock_mhz: f64::NAN,
                polls: 0,
            }),
            wake: Condvar::new(),
            interval,
        });
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kprof-nvml-sampler".into())
            .spawn(move || {
                let max = source.max_sm_clock_mhz().unwrap_or(f64::NAN);
                lock(&sh.state).max_sm_clock_mhz = max;
                let limit_mw = source.power_limit_mw().unwrap_or(f64::NAN);
                let mut last_energy_update: Option<(Instant, u64)> = None;
                let mut next = Instant::now();
                loop {
                    {
                        let mut g = lock(&sh.state);
                        loop {
                            if g.stop {
                                return;
                            }
                            let now = Instant::now();
                            if g.active && now >= next {
                                break;
                            }
                            let wait = if g.active { next - now } else { sh.interval };
                            g = sh.wake.wait_timeout(g, wait).unwrap_or_else(|p| p.into_inner()).0;
                        }
                    }
                    let s = Sample::poll(&mut source);
                    next = Instant::now().max(next) + sh.interval;
                    if let Some(mj) = s.energy_mj {
                        last_energy_update = publish_power(last_energy_update, (s.at, mj), limit_mw);
                    }
                    let mut g = lock(&sh.state);
                    if g.active {
                        if g.ring.len() >= RING_CAPACITY {
                            g.ring.pop_front();
                        }
                        g.ring.push_back(s);
                        g.polls += 1;
                    }
                }
            })
            .ok();
        BackgroundSampler { shared, thread }
    }

    /// Whether the thread is running.
    pub fn is_running(&self) -> bool {
        self.thread.is_some()
    }

    /// The clock-event reasons (OR) of the samples polled from `start` to `end`; `None` when no
    /// sample of that time read them.
    pub fn reasons_between(&self, start: Instant, end: Instant) -> Option<u64> {
        let g = lock(&self.shared.state);
        g.ring
            .iter()
            .filter(|s| s.at >= start && s.at <= end)
            .fold(None, |acc, s| match (acc, s.reasons) {
                (a, None) => a,
                (a, Some(r)) => Some(a.unwrap_or(0) | r),
            })
    }

    /// The poll interval.
    pub fn interval(&self) -> Duration {
        self.shared.interval
    }

    /// Starts (`true`: clears the ring, polls at once) or pauses polling. Starting waits (at
    /// most 2 poll intervals + 100 ms) for the first sample, so that the first run has a sample
    /// before it and the guard's first check needs no direct read.
    pub fn set_active(&self, active: bool) {
        let mut g = lock(&self.shared.state);
        let starting = active && !g.active;
        if starting {
            g.ring.clear();
        }
        g.active = active;
        drop(g);
        self.shared.wake.notify_all();
        if starting && self.thread.is_some() {
            let t0 = Instant::now();
            let limit = self.shared.interval * 2 + Duration::from_millis(100);
            while lock(&self.shared.state).ring.is_empty() && t0.elapsed() < limit {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// The max SM clock read by the thread (NaN until read, or when unknown).
    pub fn max_sm_clock_mhz(&self) -> f64 {
        lock(&self.shared.state).max_sm_clock_mhz
    }

    /// Polls stored so far.
    pub fn polls(&self) -> u64 {
        lock(&self.shared.state).polls
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<Sample> {
        lock(&self.shared.state).ring.back().cloned()
    }

    /// Waits (at most `timeout`) until a sample taken after `t` exists; returns whether one does.
    pub fn wait_for_sample_after(&self, t: Instant, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if lock(&self.shared.state).ring.back().is_some_and(|s| s.at > t) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Conditions of each window `(start, end, thermal_wait)`, in one lock of the ring; drops
    /// the samples older than the sample before `keep_from` (when given).
    pub fn conditions(
        &self,
        windows: &[(Instant, Instant, Duration)],
        keep_from: Option<Instant>,
    ) -> Vec<RunConditions> {
        let mut g = lock(&self.shared.state);
        let max = g.max_sm_clock_mhz;
        let ring = g.ring.make_contiguous();
        let out = windows
            .iter()
            .map(|&(a, z, w)| {
                // Only the samples around the window (binary search on time), and the
                // energy counter's history before it (its updates and their period).
                let hi = (ring.partition_point(|s| s.at <= z) + 1).min(ring.len());
                let lo = ring
                    .partition_point(|s| s.at < a.checked_sub(ENERGY_HISTORY).unwrap_or(a))
                    .min(ring.partition_point(|s| s.at < a).saturating_sub(2))
                    .min(hi.saturating_sub(2));
                conditions_from_samples(&ring[lo..hi], a, z, max, w)
            })
            .collect();
        if let Some(t) = keep_from {
            let t = t.checked_sub(ENERGY_HISTORY).unwrap_or(t);
            let first_needed = g.ring.iter().position(|s| s.at >= t).unwrap_or(g.ring.len());
            let drop_n = first_needed.saturating_sub(2);
            g.ring.drain(..drop_n);
        }
        out
    }

    /// A sensor for the thermal guard over this sampler's latest sample, reading `direct` when
    /// the sample is stale or has no margin, and always while cooling.
    pub fn sensor<T: TemperatureSensor>(&self, direct: T) -> SampledSensor<T> {
        SampledSensor {
            shared: Arc::clone(&self.shared),
            direct,
        }
    }
}

impl Drop for BackgroundSampler {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thermal guard's sensor: the latest background sample's margin before each run (the device
/// when that sample is stale); the device (`direct`) otherwise.
pub struct SampledSensor<T> {
    shared: Arc<Shared>,
    direct: T,
}

impl<T: TemperatureSensor> TemperatureSensor for SampledSensor<T> {
    fn margin_c(&mut self) -> Option<f64> {
        let fresh = {
            let g = lock(&self.shared.state);
            let max_age = (self.shared.interval * STALE_POLLS).max(STALE_MIN);
            g.ring
                .back()
                .filter(|s| g.active && s.at.elapsed() <= max_age)
                .and_then(|s| s.margin_c)
        };
        fresh.or_else(|| self.direct.margin_c())
    }
    fn temperature_c(&mut self) -> Option<f64> {
        self.direct.temperature_c()
    }
    fn margin_c_fresh(&mut self) -> Option<f64> {
        self.direct.margin_c_fresh()
    }
}
