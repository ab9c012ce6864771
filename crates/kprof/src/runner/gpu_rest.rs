//! Idle GPU time after long GPU work, as the pace of Nsight Compute gives the kernels it profiles:
//! the run loop adds up its GPU work (each piece from its start to the synchronization that ends
//! it) and, once that reaches [`REST_AFTER`], the next work waits as long again (at most
//! [`MAX_REST`]), so that the power cap does not slow what follows. Long runs ([`LONG_WORK`]) earn
//! no rest unless NVML saw them slowed, warm-up runs count for nothing, and under
//! `KPROF_GPU_REST=power` a configuration that NVML's energy counter measured at low power has its
//! rests waived ([`power`]). The idle time is noted for the runs' energy
//! (`conditions::background::note_gpu_idle`). Why each rule, with the measurements behind it:
//! docs/architecture.md, "The GPU's rests".

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

pub(crate) mod power;
use power::{PowerWindow, RestRule};

/// Work accumulated since the last rest that earns one: the GPU then rests as long as the work
/// took.
pub const REST_AFTER: Duration = Duration::from_millis(10);
/// The longest rest.
pub const MAX_REST: Duration = Duration::from_millis(100);
/// A run whose timing pass took at least this long after a rest earns no rest, nor does the rest
/// of its run (its counter pass, kernel by kernel), nor do the runs after it as long as they stay
/// that long: such work is slowed within itself anyway, and its energy is one NVML's counter
/// resolves (it moves about every 100 ms on the H200), which idle beside the run would blur: the
/// sampler's interpolation reads a 258 ms pass with 100 ms of idle beside it 12 % low, a 120 ms
/// one with as much idle 30 % low, for the worst phase of the counter (within 3 % back to back;
/// `tests/all/conditions_background.rs`). Twice the counter's period, and judged after a rest,
/// because a run's own slowing counts toward it: at 100 ms, judged on any pass,
/// eight 11 ms matmuls in a region (88 ms rested) that the power cap had slowed to 103 ms earned
/// no rest and stayed slowed (+17 %), as did sixteen (176 ms rested, 206 slowed) at
/// 200 ms judged on any pass.
pub const LONG_WORK: Duration = Duration::from_millis(200);

/// The pace of one GPU: the work done since its last rest, when the current work started, when
/// the last work ended, and until when the GPU rests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    busy: Duration,
    busy_since: Option<Instant>,
    idle_since: Option<Instant>,
    rest_until: Option<Instant>,
    /// The last timing pass was [`LONG_WORK`] or longer, and so was every one since the first
    /// such pass that started rested: the rest of its run (its counter pass, kernel by kernel)
    /// earns no rest either, so that a run whose energy NVML resolves runs back to back.
    long_run: bool,
    /// A timing pass since the last warm-up run was slowed by the GPU's power or thermal limits
    /// (NVML's reasons), or NVML could not say: no run is long until the next warm-up (a benchmark
    /// at the cap would otherwise alternate, a slowed run resting and the next going back to
    /// back, which leaves neither their durations nor NVML's one-second power average right).
    capped: bool,
    /// The current piece of work started on a rested GPU: after a rest owed and taken (not
    /// waived), an idle gap as long as the work since the last rest (at least [`MAX_REST`] after
    /// work that counted for nothing), or no work before it in this process.
    fresh: bool,
    /// How long the last timing pass took (zero after a warm-up run): whether its counter pass
    /// rests between kernels with a warm cache ([`Pace::counter_pass_rests_between_kernels`]).
    last_timing_pass: Duration,
    /// When the work since the last warm-up run began: an energy window from then on measures
    /// this configuration's work and its rests alone ([`Pace::power_is_low`]).
    streak_start: Option<Instant>,
    /// The longest piece of that work: after a piece of [`REST_AFTER`] or more every rest is taken.
    longest_piece: Duration,
    /// The rests taken in the last [`REST_HISTORY`], oldest first: how much of an energy window
    /// was rest rather than work.
    recent_rests: VecDeque<(Instant, Instant)>,
}

/// How long the rests taken are remembered (longer than an energy window and its freshness).
const REST_HISTORY: Duration = Duration::from_secs(1);

impl Pace {
    /// A pace with no work and no rest.
    pub const fn new() -> Pace {
        Pace {
            busy: Duration::ZERO,
            busy_since: None,
            idle_since: None,
            rest_until: None,
            long_run: false,
            capped: false,
            fresh: true,
            last_timing_pass: Duration::ZERO,
            streak_start: None,
            longest_piece: Duration::ZERO,
            recent_rests: VecDeque::new(),
        }
    }

    /// [`Pace::rest_before_at_power`] under the fixed rule.
    #[cfg(test)]
    pub fn rest_before(&mut self, now: Instant) -> Duration {
        self.rest_before_at_power(now, None, RestRule::Fixed)
    }

    /// New work is about to start at `now`: how long to wait first (the rest earned by the work
    /// before). The work is taken to start once that wait is over. An idle gap since the last
    /// work at least as long as the work accumulated since the last rest counts as a rest. Under
    /// [`RestRule::Power`] a rest owed is waived when [`Pace::power_is_low`] for `power`, the
    /// latest energy window.
    pub fn rest_before_at_power(&mut self, now: Instant, power: Option<PowerWindow>, rule: RestRule) -> Duration {
        let owed = self.rest_until.take();
        let mut wait = owed.map(|t| t.saturating_duration_since(now)).unwrap_or_default();
        let waived = !wait.is_zero() && rule == RestRule::Power && self.power_is_low(now, power);
        if waived {
            wait = Duration::ZERO;
        }
        let gap = self.idle_since.take().map(|idle| now.saturating_duration_since(idle));
        self.fresh = (owed.is_some() && !waived)
            || match gap {
                None => true,
                Some(g) => g >= MAX_REST || (!self.busy.is_zero() && g >= self.busy),
            };
        if gap.is_some_and(|g| g >= self.busy) {
            self.busy = Duration::ZERO;
        }
        if !wait.is_zero() {
            while self
                .recent_rests
                .front()
                .is_some_and(|r| now.saturating_duration_since(r.1) > REST_HISTORY)
            {
                self.recent_rests.pop_front();
            }
            self.recent_rests.push_back((now, now + wait));
        }
        self.busy_since = Some(now + wait);
        self.streak_start.get_or_insert(now);
        wait
    }

    /// Whether the GPU drew too little power for its power cap to act: the latest energy window
    /// began after this configuration's work did (so it measures that work and its rests alone),
    /// ended at most [`power::POWER_FRESH`] before `now`, and its mean power, scaled up to the
    /// share of the window that was not rest, was under [`power::LOW_POWER_SHARE`] of the limit;
    /// and no piece of the work took [`REST_AFTER`] or more. The first energy update of a
    /// configuration comes about 0.1 s into it, so its first rests are always taken.
    fn power_is_low(&self, now: Instant, power: Option<PowerWindow>) -> bool {
        let (Some(w), Some(streak)) = (power, self.streak_start) else {
            return false;
        };
        let span = w.end.saturating_duration_since(w.start).as_secs_f64();
        let rested: f64 = self
            .recent_rests
            .iter()
            .map(|&(a, b)| b.min(w.end).saturating_duration_since(a.max(w.start)).as_secs_f64())
            .sum();
        let working = span - rested;
        self.longest_piece < REST_AFTER
            && w.start >= streak
            && now.saturating_duration_since(w.end) <= power::POWER_FRESH
            && working > 0.1 * span
            && w.share_of_limit * span / working < power::LOW_POWER_SHARE
    }

    /// The work started by the last [`Pace::rest_before`] ended at `now` and counts for nothing (a
    /// warm-up run, whose host time is mostly first-call set-up: module loading, library handles,
    /// JIT); the GPU is not rested after it, though.
    pub fn forget_work(&mut self, now: Instant) {
        self.busy_since = None;
        self.streak_start = None;
        self.longest_piece = Duration::ZERO;
        self.idle_since = Some(now);
        self.long_run = false;
        self.capped = false;
        self.last_timing_pass = Duration::ZERO;
    }

    /// A run's timing pass, started by the last [`Pace::rest_before`], ended with a
    /// synchronization at `now`: as [`Pace::synchronized`]; when it lasted [`LONG_WORK`] or
    /// more and started rested (or the run before was long too), the rest of the run earns no
    /// rest. One that long that started unrested earns a rest, so that the next shows whether
    /// the run is long by itself or only slowed by the power cap.
    ///
    /// `slowed`: NVML said the GPU was slowed by its power or thermal limits during the pass (or
    /// could not say). No run is long from then until the next warm-up run: it rests, or its
    /// counter pass, run back to back, would read the capped speed where ncu's pace does not
    /// (twelve fp32 matmuls 8192 per region at the 700 W cap read +0.7 to +5.8 % back to back,
    /// the H200).
    pub fn timing_pass_done(&mut self, now: Instant, slowed: bool) {
        self.last_timing_pass = self
            .busy_since
            .map(|start| now.saturating_duration_since(start))
            .unwrap_or_default();
        self.capped |= slowed;
        self.long_run = self.last_timing_pass >= LONG_WORK && (self.long_run || self.fresh) && !self.capped;
        self.synchronized(now);
    }

    /// Whether the counter pass of the run whose timing pass ended last should wait for each
    /// kernel and rest between kernels even with a warm cache (where no flush synchronizes
    /// before each kernel): its timing pass took [`REST_AFTER`] or more, so the pass's kernels
    /// back to back would reach the power cap where ncu's pace does not (eight 11 ms bf16 matmuls
    /// in one warm region read 5-7 % above ncu without it), and less than
    /// [`LONG_WORK`] (a longer run earns no rest once judged long).
    pub fn counter_pass_rests_between_kernels(&self) -> bool {
        !self.long_run && self.last_timing_pass >= REST_AFTER
    }

    /// The work started by the last [`Pace::rest_before`] ended with a synchronization at `now`:
    /// it adds to the work since the last rest, and once that reaches [`REST_AFTER`] the next
    /// work rests as long (at most [`MAX_REST`]) from `now`. Without a start (a synchronization
    /// outside the run loop's work) nothing changes.
    pub fn synchronized(&mut self, now: Instant) {
        if let Some(start) = self.busy_since.take() {
            let piece = now.saturating_duration_since(start);
            self.longest_piece = self.longest_piece.max(piece);
            self.idle_since = Some(now);
            if self.long_run {
                self.busy = Duration::ZERO;
                return;
            }
            self.busy += piece;
            if self.busy >= REST_AFTER {
                self.rest_until = Some(now + self.busy.min(MAX_REST));
                self.busy = Duration::ZERO;
            }
        }
    }
}

/// The process's pace (the power cap belongs to the GPU, not to one profiler). One per process:
/// profilers of several GPUs running at once in one process share it, so the rests of one count
/// the work of all (kprof's scale-out runs a worker process per GPU).
static PACE: Mutex<Pace> = Mutex::new(Pace::new());
/// Nanoseconds rested so far in this process.
static RESTED_NS: AtomicU64 = AtomicU64::new(0);

/// Idle time between pieces of work shorter than this is not noted for the energy of the runs
/// beside it (a share of a run too small to matter: see `conditions::background::IDLE_SHARE_MAX`).
const IDLE_NOTED_FROM: Duration = Duration::from_millis(1);

/// Before GPU work of the run loop: sleeps the rest owed by the last long work, if any, and notes
/// the GPU's idle time since the last work, rest included, for the energy of the runs beside it
/// (`conditions::background::note_gpu_idle`).
pub(crate) fn before_gpu_work() {
    let now = Instant::now();
    let (wait, idle_since) = {
        let mut pace = lock(&PACE);
        let idle_since = pace.idle_since;
        (
            pace.rest_before_at_power(now, power::latest(), power::rule()),
            idle_since,
        )
    };
    // A cancelled benchmark (`crate::cancel`) cuts the rest short.
    let wait = if wait.is_zero() {
        wait
    } else {
        crate::cancel::sleep(wait)
    };
    RESTED_NS.fetch_add(wait.as_nanos() as u64, Ordering::Relaxed);
    if let Some(from) = idle_since {
        let to = now + wait;
        if to.saturating_duration_since(from) >= IDLE_NOTED_FROM {
            crate::conditions::background::note_gpu_idle(from, to);
        }
    }
}

/// After the synchronization that ends GPU work of the run loop.
pub(crate) fn after_synchronize() {
    lock(&PACE).synchronized(Instant::now());
}

/// After the synchronization that ends a recorded run's timing pass (see
/// [`Pace::timing_pass_done`]).
pub(crate) fn after_timing_pass(slowed: bool) {
    lock(&PACE).timing_pass_done(Instant::now(), slowed);
}

/// Whether the counter pass of the current run rests between its kernels with a warm cache (see
/// [`Pace::counter_pass_rests_between_kernels`]).
pub(crate) fn counter_pass_rests_between_kernels() -> bool {
    lock(&PACE).counter_pass_rests_between_kernels()
}

/// After a warm-up run: it owes no rest (see [`Pace::forget_work`]).
pub(crate) fn after_warmup() {
    lock(&PACE).forget_work(Instant::now());
}

/// Seconds this process rested the GPU so far (the `gpu_rest_s` of the counter cost).
pub(crate) fn rested_s() -> f64 {
    RESTED_NS.load(Ordering::Relaxed) as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// `n` pieces of work of `each` from `t`, each after the rest owed before it (none when
    /// `back_to_back`, which asserts that none is owed): when the last ends.
    fn pieces(p: &mut Pace, mut t: Instant, n: usize, each: Duration, back_to_back: bool) -> Instant {
        for i in 0..n {
            let wait = p.rest_before(t);
            assert!(!back_to_back || wait.is_zero(), "piece {i} waited {wait:?}");
            t += wait + each;
            p.synchronized(t);
        }
        t
    }

    #[test]
    fn long_work_is_followed_by_as_long_a_rest() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        assert_eq!(p.rest_before(t0), Duration::ZERO);
        p.synchronized(t0 + ms(22));
        // 3 ms of host work after the synchronization count toward the 22 ms rest.
        assert_eq!(p.rest_before(t0 + ms(25)), ms(19));
        // The next work starts after the rest: 11 ms of it earn 11 ms.
        p.synchronized(t0 + ms(44 + 11));
        assert_eq!(p.rest_before(t0 + ms(55)), ms(11));
    }

    #[test]
    fn short_work_adds_up_to_a_rest_and_rests_are_capped() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        // Four passes of 3 ms, 0.2 ms apart: the fourth brings the work to 12 ms.
        let mut t = t0;
        for _ in 0..4 {
            t = pieces(&mut p, t, 1, ms(3), true) + Duration::from_micros(200);
        }
        assert_eq!(p.rest_before(t), ms(12) - Duration::from_micros(200));
        // After the rest, 9 ms of work then a piece of 99 ms: 108 ms, the rest capped at 100 ms.
        let t = t + ms(12);
        p.synchronized(t + ms(9));
        p.rest_before(t + ms(9));
        p.synchronized(t + ms(108));
        assert_eq!(p.rest_before(t + ms(108)), MAX_REST);
    }

    #[test]
    fn a_run_is_long_only_if_its_timing_pass_takes_200_ms_after_a_rest() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        // Warm-up, then sixteen 11 ms matmuls slowed by the power cap to 206 ms: the pass started
        // unrested, so it earns a rest (capped at 100 ms) and its counter pass rests too.
        p.rest_before(t0);
        p.forget_work(t0 + ms(206));
        assert_eq!(p.rest_before(t0 + ms(206)), Duration::ZERO);
        p.timing_pass_done(t0 + ms(412), false);
        assert!(p.counter_pass_rests_between_kernels());
        assert_eq!(p.rest_before(t0 + ms(412)), MAX_REST);
        let mut t = pieces(&mut p, t0 + ms(512), 16, ms(11), false);
        // Rested, the next timing pass takes 176 ms: not long, rests again.
        t += p.rest_before(t);
        p.timing_pass_done(t + ms(176), false);
        assert_eq!(p.rest_before(t + ms(176)), MAX_REST);

        // Twelve 22 ms matmuls (258 ms, the energy row): the first pass after the warm-up is not
        // judged long, the next, after a rest, is; then runs go back to back while they stay long.
        let mut p = Pace::new();
        p.rest_before(t0);
        p.forget_work(t0 + ms(258));
        p.rest_before(t0 + ms(258));
        p.timing_pass_done(t0 + ms(516), false);
        assert_eq!(p.rest_before(t0 + ms(516)), MAX_REST);
        let mut t = pieces(&mut p, t0 + ms(616), 12, ms(22), false);
        t += p.rest_before(t);
        p.timing_pass_done(t + ms(258), false);
        assert!(!p.counter_pass_rests_between_kernels());
        let t = pieces(&mut p, t + ms(258), 12, ms(22), true);
        assert_eq!(p.rest_before(t), Duration::ZERO);
        p.timing_pass_done(t + ms(258), false);
        assert_eq!(p.rest_before(t + ms(258)), Duration::ZERO);
        // A shorter run ends it.
        p.timing_pass_done(t + ms(258 + 150), false);
        assert_eq!(p.rest_before(t + ms(408)), MAX_REST);
    }

    #[test]
    fn a_long_run_that_nvml_saw_slowed_by_the_power_cap_rests() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        // Rested, 258 ms, but the cap's reason was set during it (or NVML could not say): it
        // rests, and its counter pass rests between kernels.
        p.rest_before(t0);
        p.timing_pass_done(t0 + ms(258), true);
        assert!(p.counter_pass_rests_between_kernels());
        assert_eq!(p.rest_before(t0 + ms(258)), MAX_REST);
        // ... and so does every run after it until the next warm-up, slowed or not.
        let t = t0 + ms(358);
        p.timing_pass_done(t + ms(258), false);
        assert!(p.counter_pass_rests_between_kernels());
        assert_eq!(p.rest_before(t + ms(258)), MAX_REST);
        let t = t + ms(358);
        p.forget_work(t);
        p.rest_before(t + ms(200));
        p.timing_pass_done(t + ms(458), false);
        assert!(!p.counter_pass_rests_between_kernels());
        assert_eq!(p.rest_before(t + ms(458)), Duration::ZERO);
        // A long run stops being long once a pass is slowed.
        p.timing_pass_done(t + ms(716), true);
        assert_eq!(p.rest_before(t + ms(716)), MAX_REST);
    }

    #[test]
    fn the_counter_pass_of_a_long_run_earns_no_rest_kernel_by_kernel() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        // A 258 ms timing pass (twelve 22 ms matmuls), then its counter pass kernel by kernel.
        p.rest_before(t0);
        p.timing_pass_done(t0 + ms(258), false);
        let t = pieces(&mut p, t0 + ms(260), 12, ms(22), true);
        // The next run's timing pass starts at once; a short run then earns rests again.
        assert_eq!(p.rest_before(t), Duration::ZERO);
        p.timing_pass_done(t + ms(22), false);
        assert_eq!(p.rest_before(t + ms(22)), ms(22));
    }

    #[test]
    fn a_warm_counter_pass_rests_between_kernels_only_after_a_timing_pass_of_10_to_200_ms() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        assert!(!p.counter_pass_rests_between_kernels());
        let mut t = t0;
        // 9 ms, 10 ms, 88 ms (eight 11 ms matmuls), 103 ms (the same slowed by the power cap),
        // 199 ms, 200 ms and 258 ms timing passes.
        let passes = [
            (9, false),
            (10, true),
            (88, true),
            (103, true),
            (199, true),
            (200, false),
            (258, false),
        ];
        for (pass_ms, rests) in passes {
            t += p.rest_before(t);
            t += ms(pass_ms);
            p.timing_pass_done(t, false);
            assert_eq!(p.counter_pass_rests_between_kernels(), rests, "{pass_ms} ms");
        }
        // A warm-up run after it forgets the timing pass.
        t += p.rest_before(t);
        p.forget_work(t);
        p.rest_before(t);
        p.timing_pass_done(t + ms(50), false);
        assert!(p.counter_pass_rests_between_kernels());
        p.forget_work(t + ms(50));
        assert!(!p.counter_pass_rests_between_kernels());
    }

    #[test]
    fn an_idle_gap_as_long_as_the_work_counts_as_a_rest() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        p.rest_before(t0);
        p.synchronized(t0 + ms(6));
        // 6 ms of work, then 7 ms of host time: rested already; 6 more ms earn nothing yet.
        p.rest_before(t0 + ms(13));
        p.synchronized(t0 + ms(19));
        assert_eq!(p.rest_before(t0 + ms(19)), Duration::ZERO);
        // Without the gap the two would have earned a rest: 6 + 6 ms.
        p.synchronized(t0 + ms(25));
        assert_eq!(p.rest_before(t0 + ms(25)), ms(12));
    }

    #[test]
    fn warm_up_work_counts_for_nothing() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        p.rest_before(t0);
        p.forget_work(t0 + ms(200));
        p.synchronized(t0 + ms(200));
        assert_eq!(p.rest_before(t0 + ms(200)), Duration::ZERO);
    }

    #[test]
    fn a_synchronization_without_work_started_owes_nothing() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        p.synchronized(t0 + ms(50));
        assert_eq!(p.rest_before(t0 + ms(50)), Duration::ZERO);
        // Each start is ended once: a second synchronization does not extend the rest.
        p.synchronized(t0 + ms(60));
        p.synchronized(t0 + ms(90));
        assert_eq!(p.rest_before(t0 + ms(65)), ms(5));
    }

    /// Pieces of `each` from `t`, `n` of them, each taking the rest owed before it under the
    /// power rule with the window `power(t)` gives at its start: (when the last ends, the rests taken).
    fn pieces_at_power(
        p: &mut Pace,
        mut t: Instant,
        n: usize,
        each: Duration,
        power: impl Fn(Instant) -> Option<PowerWindow>,
    ) -> (Instant, Duration) {
        let mut rested = Duration::ZERO;
        for _ in 0..n {
            let wait = p.rest_before_at_power(t, power(t), RestRule::Power);
            rested += wait;
            t += wait + each;
            p.synchronized(t);
        }
        (t, rested)
    }

    fn window(start: Instant, end: Instant, share_of_limit: f64) -> Option<PowerWindow> {
        Some(PowerWindow {
            start,
            end,
            share_of_limit,
        })
    }

    #[test]
    fn short_work_at_low_power_rests_until_an_energy_update_has_measured_it_then_not() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        // 0.5 ms pieces; the energy counter's windows are 100 ms long, the first measuring the
        // streak from 100 ms on: until then rests are taken (10 ms per 10 ms of work).
        let low = |t: Instant| {
            let k = t.saturating_duration_since(t0).as_millis() as u64 / 100;
            (k >= 2).then(|| PowerWindow {
                start: t0 + ms(100 * (k - 1)),
                end: t0 + ms(100 * k),
                share_of_limit: 0.2,
            })
        };
        let (t, rested_early) = pieces_at_power(&mut p, t0, 200, Duration::from_micros(500), low);
        assert!(
            rested_early >= ms(40),
            "the first 0.1 s of the streak rests: {rested_early:?}"
        );
        let (_, rested_later) = pieces_at_power(&mut p, t, 2_000, Duration::from_micros(500), low);
        // 1 s of work would rest about 1 s; measured at 20 % of the limit (40 % with the rests
        // taken scaled out), at most the rest of the window that still held the early rests.
        assert!(
            rested_later <= ms(20),
            "measured at low power, no rest changes a number: {rested_later:?}"
        );
    }

    #[test]
    fn high_power_stale_or_earlier_windows_and_long_pieces_keep_their_rests() {
        let t0 = Instant::now();
        for (name, share, fresh, piece) in [
            ("high power", 0.8, true, ms(1)),
            ("stale window", 0.2, false, ms(1)),
            ("a piece of 10 ms", 0.2, true, ms(10)),
        ] {
            let mut p = Pace::new();
            // The streak starts at t0; each window measures the 100 ms before the piece.
            let power = |t: Instant| {
                let end = if fresh { t } else { t - ms(300) };
                window(t0.max(end - ms(100)), end, share)
            };
            let (_, rested) = pieces_at_power(&mut p, t0 + ms(200), 60, piece, power);
            assert!(rested >= ms(20), "{name}: rested {rested:?}");
        }
        // A window that began before the streak (the GPU rested since) speaks for other work.
        let mut p = Pace::new();
        let (_, rested) = pieces_at_power(&mut p, t0 + ms(500), 40, ms(1), |_| window(t0, t0 + ms(490), 0.1));
        assert!(rested >= ms(20), "rested {rested:?}");
    }

    #[test]
    fn a_warm_up_run_starts_a_new_streak_whose_first_rests_are_taken() {
        let t0 = Instant::now();
        let mut p = Pace::new();
        let low_since_t0 = |t: Instant| window(t0, t, 0.1);
        let (t, rested) = pieces_at_power(&mut p, t0, 40, ms(1), low_since_t0);
        assert_eq!(rested, Duration::ZERO);
        p.rest_before_at_power(t, None, RestRule::Power);
        p.forget_work(t + ms(1));
        // The window still begins at t0, before the new streak: the rests come back.
        let (_, rested) = pieces_at_power(&mut p, t + ms(2), 40, ms(1), low_since_t0);
        assert!(rested >= ms(20), "rested {rested:?}");
    }
}
