//! The progress hook of [`super::BenchOptions::progress`]: called after every recorded run with
//! the runs recorded so far and the total the stopping policy now expects, so a progress bar
//! never reads `10/10 runs, ETA done` while an adaptive sweep goes on.

use std::sync::Arc;

/// Where a sweep stands after a recorded run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Index of the configuration that just recorded a run.
    pub config: usize,
    /// Its run index.
    pub run: u32,
    /// Recorded runs so far, all configurations.
    pub done_runs: u64,
    /// The runs the sweep will record as it now stands: for each configuration its recorded runs
    /// once the policy stopped it, else the most it may get (`runs`, or the policy's `max_runs`).
    /// Falls as adaptive stopping ends configurations early; never below `done_runs`.
    pub total_runs: u64,
}

/// A callback receiving [`Progress`]; cheap to clone (shared). Called on the thread that runs
/// the sweep, between runs: keep it short.
#[derive(Clone)]
pub struct ProgressHook(Arc<dyn Fn(&Progress) + Send + Sync>);

impl ProgressHook {
    /// Wraps a callback.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        ProgressHook(Arc::new(f))
    }

    /// Calls it.
    pub fn call(&self, p: &Progress) {
        (self.0)(p)
    }
}

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook(..)")
    }
}

/// The expected total of recorded runs: a stopped configuration counts its recorded runs, an
/// active one `max_runs` (or more, if it already has more).
pub(crate) fn expected_total(done: &[usize], stopped: impl Fn(usize) -> bool, max_runs: u32) -> u64 {
    done.iter()
        .enumerate()
        .map(|(c, &d)| {
            if stopped(c) {
                d as u64
            } else {
                (d as u64).max(u64::from(max_runs))
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_follows_stopped_configurations() {
        // Three configs, up to 50 runs each; config 1 stopped after 12.
        assert_eq!(expected_total(&[10, 12, 10], |c| c == 1, 50), 50 + 12 + 50);
        assert_eq!(expected_total(&[50, 12, 3], |c| c == 1, 50), 50 + 12 + 50);
        assert_eq!(expected_total(&[], |_| false, 50), 0);
    }
}
