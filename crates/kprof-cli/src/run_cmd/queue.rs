//! The queue of `kprof run`'s executions and the workers that take from it: the plan's executions
//! grouped by repetition ([`units`]: a sweep value × repetition, its timing launch, its counter
//! launch and the timing launch a counter launch's CUDA graphs call for), one queue of them, and one
//! worker per `--gpus` GPU (else one without a GPU) that runs a repetition's launches one after
//! another, so its counter and timing samples come from the same GPU ([`run_queue`]).
//!
//! How it behaves for users (Ctrl-C included): `docs/kprof-run.md` (The executions on several GPUs).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::gpus::Gpu;
use super::Invocation;

/// The executions of one repetition, in the order they run.
pub type Unit = Vec<Invocation>;

/// Groups the plan's executions (see [`super::plan`]) by repetition, keeping their order.
pub fn units(plan: Vec<Invocation>) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for inv in plan {
        match out.last_mut() {
            Some(unit) if unit[0].sweep == inv.sweep && unit[0].repeat == inv.repeat => unit.push(inv),
            _ => out.push(vec![inv]),
        }
    }
    out
}

/// What an execution hands back to the queue.
pub trait Outcome: Send {
    /// The repetition needs a timing launch after this one (its counter launch ran CUDA graphs).
    fn wants_timing_after(&self) -> bool;
}

/// An execution as the queue sees it: its 0-based start number among all, the total so far.
pub struct Start<'a> {
    pub inv: &'a Invocation,
    pub gpu: Option<&'a Gpu>,
    pub index: usize,
    pub total: usize,
}

/// The result of [`run_queue`].
pub struct Ran<O> {
    /// The outcomes of the executions that ran, in plan order.
    pub outcomes: Vec<O>,
    /// The exit code of the first fatal failure, if any.
    pub fatal: Option<i32>,
    /// The executions of the plan, those a counter launch added included.
    pub total: usize,
}

struct Shared<O> {
    next_unit: AtomicUsize,
    started: AtomicUsize,
    total: AtomicUsize,
    fatal: Mutex<Option<i32>>,
    done: Mutex<Vec<((usize, usize), O)>>,
}

impl<O> Shared<O> {
    fn stopped(&self, stop: &(dyn Fn() -> bool + Sync)) -> bool {
        stop() || self.fatal.lock().map(|f| f.is_some()).unwrap_or(true)
    }
}

/// Runs the units: one worker per entry of `workers` (`None`: a worker that leaves the GPU
/// alone), each calling `execute` for its executions until the queue is empty or `stop()` says
/// so. `execute` returns the outcome, or the exit code of a fatal failure (the command cannot
/// start), after which no worker starts another execution; the running ones are waited for.
pub fn run_queue<O: Outcome>(
    units: Vec<Unit>,
    workers: &[Option<Gpu>],
    stop: &(dyn Fn() -> bool + Sync),
    execute: &(dyn Fn(Start) -> Result<O, i32> + Sync),
) -> Ran<O> {
    let shared = Shared {
        next_unit: AtomicUsize::new(0),
        started: AtomicUsize::new(0),
        total: AtomicUsize::new(units.iter().map(Vec::len).sum()),
        fatal: Mutex::new(None),
        done: Mutex::new(Vec::new()),
    };
    std::thread::scope(|scope| {
        for gpu in workers {
            let (shared, units) = (&shared, &units);
            scope.spawn(move || work(units, gpu.as_ref(), shared, stop, execute));
        }
    });
    let mut done = shared.done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(at, _)| *at);
    Ran {
        outcomes: done.into_iter().map(|(_, o)| o).collect(),
        fatal: shared.fatal.into_inner().unwrap_or_else(|e| e.into_inner()),
        total: shared.total.into_inner(),
    }
}

/// One worker: takes units until none is left or a stop.
fn work<O: Outcome>(
    units: &[Unit],
    gpu: Option<&Gpu>,
    shared: &Shared<O>,
    stop: &(dyn Fn() -> bool + Sync),
    execute: &(dyn Fn(Start) -> Result<O, i32> + Sync),
) {
    while !shared.stopped(stop) {
        let u = shared.next_unit.fetch_add(1, Ordering::SeqCst);
        let Some(unit) = units.get(u) else { return };
        let mut unit = unit.clone();
        let mut k = 0;
        while k < unit.len() {
            if shared.stopped(stop) {
                return;
            }
            let start = Start {
                inv: &unit[k],
                gpu,
                index: shared.started.fetch_add(1, Ordering::SeqCst),
                total: shared.total.load(Ordering::SeqCst),
            };
            match execute(start) {
                Ok(outcome) => {
                    if outcome.wants_timing_after() {
                        unit.insert(k + 1, unit[k].timing_after());
                        shared.total.fetch_add(1, Ordering::SeqCst);
                    }
                    if let Ok(mut done) = shared.done.lock() {
                        done.push(((u, k), outcome));
                    }
                }
                Err(code) => {
                    if let Ok(mut fatal) = shared.fatal.lock() {
                        fatal.get_or_insert(code);
                    }
                    return;
                }
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_cmd::{plan, Launches};
    use kprof::runner::DurationSource;
    use std::sync::Barrier;

    struct Ran1 {
        dir: String,
        gpu: Option<usize>,
        graphs: bool,
    }

    impl Outcome for Ran1 {
        fn wants_timing_after(&self) -> bool {
            self.graphs
        }
    }

    fn gpu(ordinal: usize) -> Option<Gpu> {
        Some(Gpu {
            ordinal,
            visible: ordinal.to_string(),
        })
    }

    fn ran(s: &Start, graphs: bool) -> Ran1 {
        Ran1 {
            dir: s.inv.dir.display().to_string(),
            gpu: s.gpu.map(|g| g.ordinal),
            graphs,
        }
    }

    fn four_repetitions(launches: Launches) -> Vec<Unit> {
        let sweep = ("N".to_string(), vec!["1".to_string(), "2".to_string()]);
        units(plan(Some(&sweep), 2, launches))
    }

    #[test]
    fn one_worker_runs_every_execution_once_in_plan_order() {
        let launches = Launches::of(&["m".to_string()], DurationSource::Records);
        let units = four_repetitions(launches);
        assert_eq!(units.len(), 4);
        assert!(units.iter().all(|u| u.len() == 2 && !u[0].counters && u[1].counters));
        let starts = Mutex::new(Vec::new());
        let r = run_queue(units, &[None], &|| false, &|s: Start| {
            starts.lock().unwrap().push((s.index, s.total));
            Ok(ran(&s, false))
        });
        let dirs: Vec<String> = r.outcomes.iter().map(|o| o.dir.clone()).collect();
        let want = [
            "sweep0-rep0",
            "sweep0-rep0-counters",
            "sweep0-rep1",
            "sweep0-rep1-counters",
        ];
        assert_eq!(dirs[..4], want.map(|d| format!("procs/{d}")));
        assert_eq!((dirs.len(), r.total, r.fatal), (8, 8, None));
        assert_eq!(starts.into_inner().unwrap(), (0..8).map(|i| (i, 8)).collect::<Vec<_>>());
    }

    #[test]
    fn two_workers_share_the_queue_and_keep_a_repetition_on_one_gpu() {
        let launches = Launches::of(&["m".to_string()], DurationSource::Auto);
        // Each worker's first execution waits for the other's: both workers take work.
        let both = Barrier::new(2);
        let first = Mutex::new(Vec::new());
        let r = run_queue(four_repetitions(launches), &[gpu(0), gpu(1)], &|| false, &|s: Start| {
            let newcomer = {
                let mut first = first.lock().unwrap();
                let g = s.gpu.unwrap().ordinal;
                let new = first.len() < 2 && !first.contains(&g);
                if new {
                    first.push(g);
                }
                new
            };
            if newcomer {
                both.wait();
            }
            // The counter launch of the first sweep value saw CUDA graphs.
            Ok(ran(&s, s.inv.counters && s.inv.sweep.as_ref().unwrap().1 == "1"))
        });
        let dirs: Vec<String> = r.outcomes.iter().map(|o| o.dir.clone()).collect();
        let want = [
            "sweep0-rep0-counters",
            "sweep0-rep0",
            "sweep0-rep1-counters",
            "sweep0-rep1",
            "sweep1-rep0-counters",
            "sweep1-rep1-counters",
        ];
        assert_eq!(dirs, want.map(|d| format!("procs/{d}")));
        assert_eq!((r.total, r.fatal), (6, None));
        let gpus: Vec<usize> = r.outcomes.iter().map(|o| o.gpu.unwrap()).collect();
        assert!(gpus.contains(&0) && gpus.contains(&1), "{gpus:?}");
        assert_eq!((gpus[0], gpus[2]), (gpus[1], gpus[3]), "{gpus:?}");
    }

    #[test]
    fn a_stop_or_a_fatal_failure_starts_nothing_further() {
        let launches = Launches::of(&[], DurationSource::Auto);
        let calls = AtomicUsize::new(0);
        let stop = || calls.load(Ordering::SeqCst) >= 2;
        let r = run_queue(four_repetitions(launches), &[None], &stop, &|s: Start| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(ran(&s, false))
        });
        assert_eq!((r.outcomes.len(), r.total, r.fatal), (2, 4, None));
        let r = run_queue(four_repetitions(launches), &[gpu(0)], &|| false, &|s: Start| {
            if s.index == 1 {
                Err(127)
            } else {
                Ok(ran(&s, false))
            }
        });
        assert_eq!((r.outcomes.len(), r.total, r.fatal), (1, 4, Some(127)));
    }
}
