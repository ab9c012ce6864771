//! The scheduler of the run loop (pure): which (configuration, run) comes next, warm-ups first,
//! in the requested [`RunOrder`], with configurations stopped early by adaptive stopping.

use super::RunOrder;

/// One step of the run loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub config: usize,
    /// Run index: recorded runs count from 0; warm-up runs count from 0 too, separately.
    pub run: u32,
    pub warmup: bool,
}

/// Yields (configuration, run) pairs in the requested order; configurations can be stopped early
/// (adaptive stopping).
#[derive(Debug)]
pub(crate) struct Scheduler {
    n_configs: usize,
    warmup: u32,
    max_runs: u32,
    order: RunOrder,
    stopped: Vec<bool>,
    /// Recorded runs handed out per configuration.
    done: Vec<u32>,
    warm_done: Vec<u32>,
    /// Interleaved: the current pass (warm-up passes first) and position.
    pass: u32,
    pos: usize,
}

impl Scheduler {
    pub fn new(n_configs: usize, warmup: u32, max_runs: u32, order: RunOrder) -> Self {
        Scheduler {
            n_configs,
            warmup,
            max_runs,
            order,
            stopped: vec![false; n_configs],
            done: vec![0; n_configs],
            warm_done: vec![0; n_configs],
            pass: 0,
            pos: 0,
        }
    }

    /// No more recorded runs for this configuration.
    pub fn stop(&mut self, config: usize) {
        self.stopped[config] = true;
    }

    /// Whether [`Scheduler::stop`] was called for this configuration.
    pub fn is_stopped(&self, config: usize) -> bool {
        self.stopped[config]
    }

    /// Whether a configuration will get no more runs.
    pub fn finished(&self, config: usize) -> bool {
        self.stopped[config] || self.done[config] >= self.max_runs
    }

    fn take(&mut self, c: usize) -> Option<Step> {
        if self.warm_done[c] < self.warmup {
            let run = self.warm_done[c];
            self.warm_done[c] += 1;
            return Some(Step {
                config: c,
                run,
                warmup: true,
            });
        }
        if self.finished(c) {
            return None;
        }
        let run = self.done[c];
        self.done[c] += 1;
        Some(Step {
            config: c,
            run,
            warmup: false,
        })
    }

    pub fn next_step(&mut self) -> Option<Step> {
        match self.order {
            RunOrder::Sequential => {
                while self.pos < self.n_configs {
                    if let Some(s) = self.take(self.pos) {
                        return Some(s);
                    }
                    self.pos += 1;
                }
                None
            }
            RunOrder::Interleaved => loop {
                if self.pass >= self.warmup + self.max_runs {
                    return None;
                }
                while self.pos < self.n_configs {
                    let c = self.pos;
                    self.pos += 1;
                    let in_warmup = self.pass < self.warmup;
                    if in_warmup != (self.warm_done[c] < self.warmup) {
                        continue;
                    }
                    if let Some(s) = self.take(c) {
                        return Some(s);
                    }
                }
                self.pos = 0;
                self.pass += 1;
                if self.pass >= self.warmup && (0..self.n_configs).all(|c| self.finished(c)) {
                    return None;
                }
            },
        }
    }
}
