//! The GPU's mean power over each update of NVML's energy counter, as the background sampler sees
//! it, for the run loop's rests (`runner::gpu_rest`): the latest window, process-wide.

use std::sync::Mutex;
use std::time::Instant;

use crate::lock;

/// The GPU's mean power between two updates of NVML's energy counter, as a share of its enforced
/// power limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerWindow {
    /// The poll that saw the earlier update.
    pub start: Instant,
    /// The poll that saw the later update.
    pub end: Instant,
    /// Mean power over the window divided by the enforced power limit.
    pub share_of_limit: f64,
}

impl PowerWindow {
    /// The window between two energy readings (`(when polled, mJ)`), against `limit_mw`; `None`
    /// when the counter did not move forward or the limit is unknown.
    pub fn between(earlier: (Instant, u64), later: (Instant, u64), limit_mw: f64) -> Option<PowerWindow> {
        let seconds = later.0.checked_duration_since(earlier.0)?.as_secs_f64();
        let millijoules = later.1.checked_sub(earlier.1)?;
        (seconds > 0.0 && millijoules > 0 && limit_mw > 0.0).then(|| PowerWindow {
            start: earlier.0,
            end: later.0,
            share_of_limit: millijoules as f64 / seconds / limit_mw,
        })
    }
}

/// The latest window the sampler published.
static LATEST: Mutex<Option<PowerWindow>> = Mutex::new(None);

/// Called by the background sampler at every update of the energy counter it sees.
pub(crate) fn note_power(window: PowerWindow) {
    *lock(&LATEST) = Some(window);
}

/// The latest published window, if any.
pub(crate) fn latest() -> Option<PowerWindow> {
    *lock(&LATEST)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_window_is_the_mean_power_between_two_updates_against_the_limit() {
        let t0 = Instant::now();
        let w = PowerWindow::between((t0, 1_000), (t0 + Duration::from_millis(100), 36_000), 700_000.0).unwrap();
        // 35 J in 0.1 s is 350 W, half of 700 W.
        assert!((w.share_of_limit - 0.5).abs() < 1e-9);
        assert!(PowerWindow::between((t0, 5), (t0 + Duration::from_millis(100), 5), 700_000.0).is_none());
        assert!(PowerWindow::between((t0, 5), (t0 + Duration::from_millis(100), 9), 0.0).is_none());
        assert!(PowerWindow::between((t0 + Duration::from_millis(1), 5), (t0, 9), 1.0).is_none());
    }
}
