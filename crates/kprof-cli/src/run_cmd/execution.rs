//! One execution of the command under `kprof run`: its folder, its run spec and environment
//! (with `--gpus`, `CUDA_VISIBLE_DEVICES` set to the worker's GPU), its launch, and what its
//! processes left (with `--gpus`, every sample's `Device` set to that GPU: see [`super::gpus`]).

use std::path::Path;
use std::process::Command;

use kprof::run_spec::ENV_RUN_SPEC;
use kprof_core::RawResults;

use super::gpus::Gpu;
use super::queue::{Outcome, Start};
use super::{collect, exit_code, progress_line, run_spec, saw_graphs, Invocation, Launches, RunArgs};
use super::{ENV_COUNTER_LAUNCH_METRICS, INJECTION_VARS};
use crate::run_split::ExecutionTimes;

/// What every execution of one `kprof run` shares.
pub struct Context<'a> {
    pub args: &'a RunArgs,
    /// The injection library.
    pub lib: &'a Path,
    pub benchmark: &'a str,
    /// The metrics of the counter launch (empty without one).
    pub counters: &'a [String],
    /// Kernels per counter-data image of the counter launch.
    pub ranges: usize,
    pub launches: Launches,
}

/// What one execution left.
pub struct Executed {
    pub inv: Invocation,
    /// The command's exit code (128 + signal when a signal ended it).
    pub code: i32,
    /// The samples of each process file.
    pub raws: Vec<RawResults>,
    /// Its wall-clock times, with its status files.
    pub times: ExecutionTimes,
    /// A counter launch that ran CUDA graphs: its repetition needs a timing launch.
    pub timing_after: bool,
}

impl Outcome for Executed {
    fn wants_timing_after(&self) -> bool {
        self.timing_after
    }
}

/// The label of an execution in the time split: `repetition 2, N=1024, counter launch, GPU 1`.
fn execution_label(inv: &Invocation, gpu: Option<&Gpu>) -> String {
    let mut what = vec![format!("repetition {}", inv.repeat + 1)];
    if let Some((name, value)) = &inv.sweep {
        what.push(format!("{name}={value}"));
    }
    let launch = if inv.counters {
        "counter launch"
    } else {
        "timing launch"
    };
    what.push(launch.into());
    if let Some(g) = gpu {
        what.push(format!("GPU {}", g.visible));
    }
    what.join(", ")
}

/// The command of one execution, with its environment.
fn command(ctx: &Context, inv: &Invocation, gpu: Option<&Gpu>, spec: String) -> Command {
    let args = ctx.args;
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).env(ENV_RUN_SPEC, spec);
    for var in INJECTION_VARS {
        cmd.env(var, ctx.lib);
    }
    if inv.counters {
        cmd.env(ENV_COUNTER_LAUNCH_METRICS, ctx.counters.join(","));
    } else {
        cmd.env_remove(ENV_COUNTER_LAUNCH_METRICS);
    }
    if let Some((var, val)) = &inv.sweep {
        cmd.env(var, val);
    }
    if let Some(g) = gpu {
        cmd.env("CUDA_VISIBLE_DEVICES", &g.visible);
    }
    cmd
}

/// Runs one execution; `Err` holds kprof's exit code when it cannot (no folder, the command
/// cannot start).
pub fn execute(ctx: &Context, start: Start) -> Result<Executed, i32> {
    let (args, inv, gpu) = (ctx.args, start.inv, start.gpu);
    if start.total > 1 && !args.quiet {
        eprintln!("{}", progress_line(start.index, start.total, inv, gpu));
    }
    let dir = args.out.join(&inv.dir);
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("kprof: error: cannot create {}: {e}", dir.display());
        return Err(2);
    }
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let counters = inv.counters.then_some((ctx.counters, ctx.ranges));
    let spec = run_spec(args, ctx.benchmark, &dir, counters).to_json().map_err(|e| {
        eprintln!("kprof: error: {e} (output folder {})", dir.display());
        2
    })?;
    let spawn_unix_ns = kprof::run_status::unix_ns();
    let status = command(ctx, inv, gpu, spec).status();
    let end_unix_ns = kprof::run_status::unix_ns();
    let code = match status {
        Ok(st) => exit_code(st),
        Err(e) => {
            eprintln!("kprof: error: cannot start {}: {e}", args.command[0].to_string_lossy());
            return Err(if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            });
        }
    };
    if code != 0 {
        report_exit(code, inv, start.total, gpu);
    }
    let mut out = Executed {
        inv: inv.clone(),
        code,
        raws: Vec::new(),
        times: ExecutionTimes {
            label: execution_label(inv, gpu),
            counters: inv.counters,
            pair_key: format!("{:?}/{}", inv.sweep, inv.repeat),
            spawn_unix_ns,
            end_unix_ns,
            statuses: Vec::new(),
        },
        timing_after: false,
    };
    match collect(&dir) {
        Ok(c) => {
            out.timing_after = inv.counters && ctx.launches.timing_for_graphs && saw_graphs(&c.statuses);
            if out.timing_after && !args.quiet {
                eprintln!(
                    "kprof run: the program launched CUDA graphs, whose spans the counters do not see: \
                     a timing launch gives the durations"
                );
            }
            out.raws = c.raws;
            if let Some(g) = gpu {
                out.raws.iter_mut().for_each(|raw| super::gpus::set_device(raw, g));
            }
            out.times.statuses = c.statuses;
        }
        Err(e) => eprintln!("kprof: error: {}", crate::output::error_text(&e)),
    }
    Ok(out)
}

/// `kprof: the command exited with 3 in its counter launch (repetition 1, GPU 2)`.
fn report_exit(code: i32, inv: &Invocation, total: usize, gpu: Option<&Gpu>) {
    let mut where_ = Vec::new();
    if total > 1 {
        where_.push(format!("repetition {}", inv.repeat));
    }
    if let Some(g) = gpu {
        where_.push(format!("GPU {}", g.visible));
    }
    eprintln!(
        "kprof: the command exited with {code}{}{}",
        if inv.counters { " in its counter launch" } else { "" },
        if where_.is_empty() {
            String::new()
        } else {
            format!(" ({})", where_.join(", "))
        }
    );
}
