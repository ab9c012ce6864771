//! The one model of the options of a benchmark ([`OPTIONS`]): every keyword of Python's
//! `kprof.analyze.kernel` and every field of [`BenchOptions`](crate::runner::BenchOptions), once,
//! with its name, type, default, allowed values (from its enum's `NAMES` in [`crate::choices`]), a
//! one-line doc, the doors that take it and the `KPROF_*` variable that overrides it. Python reads it
//! as `kprof._core.option_model()`; the options table of `docs/quickstart.md` is [`markdown_table`]
//! and the choice aliases of `python/kprof/_core.pyi` are [`pyi_choice_aliases`] (tests compare both
//! with the files, and kprof-cli's the shared flags with `OptionSpec::cli`). Python-only options are
//! listed too, with no Rust field. This module describes the options; each door still converts its
//! own values (through the enums' one parser each).

use crate::choices::{
    Attribution, Backend, CacheControl, ClockControl, DurationSource, GraphTrace, KernelTrace, L2Flush, ReplayMode,
    RunOrder, ThermalMode,
};
use crate::overrides::{
    ATTRIBUTION_ENV, COUNTER_PASS_RECORDS_ENV, GRAPH_TRACE_ENV, KERNEL_TRACE_ENV, L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV,
    ONE_PASS_ENV,
};

/// The type of an option's value, as the Python door takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    /// `True`/`False`.
    Bool,
    /// An integer.
    Int,
    /// A number.
    Float,
    /// A string.
    Str,
    /// A file system path (a string or `os.PathLike`).
    Path,
    /// One of these canonical names (an enum's `NAMES`).
    Choice(&'static [&'static str]),
    /// A list of strings (a bare string is one item).
    StrList,
    /// A Python callable.
    Callable,
    /// Another value (configurations, a dict of ncu options, an executor, a token...).
    Other(&'static str),
}

impl OptionType {
    /// The type's name: `bool`, `int`, `float`, `str`, `path`, `choice`, `list[str]`,
    /// `callable`, or the other value's description.
    pub fn name(self) -> &'static str {
        match self {
            OptionType::Bool => "bool",
            OptionType::Int => "int",
            OptionType::Float => "float",
            OptionType::Str => "str",
            OptionType::Path => "path",
            OptionType::Choice(_) => "choice",
            OptionType::StrList => "list[str]",
            OptionType::Callable => "callable",
            OptionType::Other(what) => what,
        }
    }

    /// The allowed values of a choice (empty for other types).
    pub fn choices(self) -> &'static [&'static str] {
        match self {
            OptionType::Choice(names) => names,
            _ => &[],
        }
    }
}

/// A flag of `kprof run` that takes the same option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliFlag {
    /// The flag (`--durations`).
    pub flag: &'static str,
    /// The values it accepts, when fewer than the option's choices (`--replay-mode`: `kernel`).
    pub choices: Option<&'static [&'static str]>,
}

/// One option of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The Python keyword (or, for a Rust-only option, the field's name).
    pub name: &'static str,
    /// The value's type.
    pub ty: OptionType,
    /// `None` is accepted too.
    pub optional: bool,
    /// The default, as Python writes it for a keyword of the decorator (`'auto'`, `None`, `1`),
    /// else as Rust does.
    pub default: &'static str,
    /// What it does, in one line.
    pub doc: &'static str,
    /// A keyword of `kprof.analyze.kernel`.
    pub python: bool,
    /// A per-process setting, not a bench call's: a keyword of Python's `kprof.configure` and a
    /// field of [`TraceOptions`](crate::choices::TraceOptions).
    pub configure: bool,
    /// The field of `BenchOptions` that takes it (`duration`, `policy.max_runs`), or of
    /// `TraceOptions` for a per-process setting, if any.
    pub rust: Option<&'static str>,
    /// The `kprof run` flag that takes it, if any.
    pub cli: Option<CliFlag>,
    /// The `KPROF_*` variable that overrides it when set, if any.
    pub env: Option<&'static str>,
}

impl OptionSpec {
    const fn new(name: &'static str, ty: OptionType, default: &'static str, doc: &'static str) -> Self {
        OptionSpec {
            name,
            ty,
            optional: false,
            default,
            doc,
            python: true,
            configure: false,
            rust: None,
            cli: None,
            env: None,
        }
    }

    /// A per-process setting of the trace (`kprof.configure`, `TraceOptions`).
    const fn process(name: &'static str, ty: OptionType, default: &'static str, doc: &'static str) -> Self {
        let mut o = OptionSpec::new(name, ty, default, doc);
        o.python = false;
        o.configure = true;
        o
    }

    const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    const fn rust(mut self, field: &'static str) -> Self {
        self.rust = Some(field);
        self
    }

    const fn rust_only(mut self, field: &'static str) -> Self {
        self.rust = Some(field);
        self.python = false;
        self
    }

    const fn cli(mut self, flag: &'static str, choices: Option<&'static [&'static str]>) -> Self {
        self.cli = Some(CliFlag { flag, choices });
        self
    }

    const fn env(mut self, var: &'static str) -> Self {
        self.env = Some(var);
        self
    }

    /// A keyword of the Python decorator that no Rust field takes (callables, scale-out, files).
    pub fn python_only(&self) -> bool {
        self.python && self.rust.is_none()
    }

    /// The doors that take it, comma-separated (`python, rust, cli`; `configure` for
    /// `kprof.configure`).
    pub fn doors(&self) -> String {
        let doors = [
            (self.python, "python"),
            (self.configure, "configure"),
            (self.rust.is_some(), "rust"),
            (self.cli.is_some(), "cli"),
        ];
        let names: Vec<&str> = doors.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        names.join(", ")
    }
}

use OptionType::{Bool, Callable, Choice, Float, Int, Other, Path, Str, StrList};

/// Every option of a benchmark, in the order of the Python decorator's signature (then the
/// per-process trace settings of `kprof.configure`, then the Rust-only fields).
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "configs",
        Other("iterable"),
        "None",
        "The configurations: one tuple (or value) of arguments each.",
    )
    .optional(),
    OptionSpec::new(
        "runs",
        Int,
        "1",
        "Recorded runs per configuration (the minimum with adaptive stopping).",
    )
    .rust("runs"),
    OptionSpec::new(
        "derive_metric",
        Callable,
        "None",
        "f(*metric values, *config values): one more metric per region and run.",
    )
    .optional(),
    OptionSpec::new(
        "normalize_against",
        Str,
        "None",
        "A region; the others become ratios to it.",
    )
    .optional(),
    OptionSpec::new(
        "verbosity",
        Other("VerbosityLevel"),
        "VerbosityLevel.INFO",
        "Progress and messages on stderr.",
    ),
    OptionSpec::new(
        "metrics",
        StrList,
        "('gpu__time_duration.sum',)",
        "What to measure: Nsight Compute metric names.",
    )
    .rust("metrics")
    .cli("--metrics", None),
    OptionSpec::new("ignore_kernel_list", StrList, "None", "Kernels left out, by name.")
        .optional()
        .rust("ignore_kernels"),
    OptionSpec::new(
        "clock_control",
        Choice(ClockControl::NAMES),
        "'none'",
        "GPU clocks: as they are, or locked to base (ncu backend).",
    )
    .rust("clock"),
    OptionSpec::new(
        "cache_control",
        Choice(CacheControl::NAMES),
        "'all'",
        "Cold caches before every run and region, or warm.",
    )
    .rust("cache"),
    OptionSpec::new(
        "replay_mode",
        Choice(ReplayMode::NAMES),
        "None",
        "How counter passes replay (None: application, kernel under ncu).",
    )
    .optional()
    .rust("replay_mode")
    .cli("--replay-mode", Some(&["kernel"])),
    OptionSpec::new(
        "thermal_mode",
        Choice(ThermalMode::NAMES),
        "'auto'",
        "The thermal guard before every run.",
    )
    .rust("thermal.mode"),
    OptionSpec::new(
        "thermal_wait",
        Float,
        "None",
        "Pause at this headroom to the slowdown temperature, degrees C.",
    )
    .optional()
    .rust("thermal.wait_c"),
    OptionSpec::new("thermal_cont", Float, "None", "Resume at this headroom, degrees C.")
        .optional()
        .rust("thermal.cont_c"),
    OptionSpec::new("thermal_timeout", Float, "None", "Longest cooling wait, seconds.")
        .optional()
        .rust("thermal.timeout"),
    OptionSpec::new(
        "thermal_device",
        Int,
        "None",
        "The CUDA device the thermal guard watches (the benchmark's own).",
    )
    .optional(),
    OptionSpec::new(
        "combine_kernel_metrics",
        Other("reducer name or callable"),
        "None",
        "How a region's kernels combine (sum by default).",
    )
    .optional()
    .rust("combine"),
    OptionSpec::new("output_prefix", Path, "None", "Where result files are written.")
        .optional()
        .rust("output_prefix"),
    OptionSpec::new("output_csv", Bool, "False", "Write the raw and processed CSV files."),
    OptionSpec::new(
        "info_collectors",
        Other("iterable"),
        "None",
        "(name, callback, scope) columns added to the results.",
    )
    .optional()
    .rust("collectors"),
    OptionSpec::new(
        "warmup",
        Int,
        "1",
        "Unrecorded runs per configuration before the recorded ones.",
    )
    .rust("warmup"),
    OptionSpec::new(
        "order",
        Choice(RunOrder::NAMES),
        "'interleaved'",
        "Run r of every configuration before run r+1, or one configuration at a time.",
    )
    .rust("order"),
    OptionSpec::new(
        "target_rsd",
        Float,
        "None",
        "Adaptive stopping: relative standard deviation target, percent.",
    )
    .optional()
    .rust("policy.target_rsd_pct"),
    OptionSpec::new(
        "target_ci",
        Float,
        "None",
        "Adaptive stopping: relative CI95 half-width target, percent.",
    )
    .optional()
    .rust("policy.target_rel_ci_half_width"),
    OptionSpec::new(
        "max_runs",
        Int,
        "None",
        "Adaptive stopping: most runs per configuration.",
    )
    .optional()
    .rust("policy.max_runs"),
    OptionSpec::new(
        "time_budget",
        Float,
        "None",
        "Adaptive stopping: most time per configuration, seconds.",
    )
    .optional()
    .rust("policy.time_budget"),
    OptionSpec::new(
        "backend",
        Choice(Backend::NAMES),
        "'cupti'",
        "CUPTI in-process, CUDA events, or Nsight Compute relaunched.",
    ),
    OptionSpec::new(
        "ncu_options",
        Other("dict"),
        "None",
        "More Nsight Compute arguments (backend='ncu').",
    )
    .optional(),
    OptionSpec::new(
        "throughput",
        Callable,
        "None",
        "Elements, bytes or FLOPs of one run of a configuration: rates per region (results.throughput()).",
    )
    .optional(),
    OptionSpec::new(
        "duration_source",
        Choice(DurationSource::NAMES),
        "'auto'",
        "Where gpu__time_duration.sum comes from.",
    )
    .rust("duration")
    .cli("--durations", None),
    OptionSpec::new(
        "l2_flush",
        Choice(L2Flush::NAMES),
        "'read'",
        "How the cold cache empties the L2.",
    )
    .rust("l2_flush")
    .env(L2_FLUSH_ENV),
    OptionSpec::new(
        "l2_flush_bytes",
        Int,
        "None",
        "The L2 flush buffer's size (None: twice the L2).",
    )
    .optional()
    .rust("l2_flush_bytes")
    .env(L2_FLUSH_BYTES_ENV),
    OptionSpec::new(
        "counter_pass_records",
        Bool,
        "False",
        "Keep CUPTI's kernel records on in counter passes.",
    )
    .rust("counter_pass_records")
    .env(COUNTER_PASS_RECORDS_ENV),
    OptionSpec::new(
        "one_pass",
        Bool,
        "True",
        "Recorded runs of eager kernels in one counter pass where one is enough.",
    )
    .rust("one_pass")
    .env(ONE_PASS_ENV),
    OptionSpec::new("store", Path, "None", "A results store every call's results go to.")
        .optional()
        .cli("--store", None),
    OptionSpec::new(
        "devices",
        Other("'all' or list[int]"),
        "None",
        "One worker process per GPU of this host.",
    )
    .optional()
    .cli("--gpus", None),
    OptionSpec::new(
        "executor",
        Other("executor"),
        "None",
        "Send the sweep to an executor (dask, Slurm through submitit).",
    )
    .optional(),
    OptionSpec::new(
        "pool_devices",
        Bool,
        "False",
        "Pool the rows of a configuration split over several GPUs.",
    ),
    OptionSpec::new(
        "runs_per_task",
        Int,
        "None",
        "Split a configuration's runs over tasks of this many runs.",
    )
    .optional(),
    OptionSpec::new("configs_per_task", Int, "1", "Configurations per executor task."),
    OptionSpec::new(
        "worker_timeout",
        Float,
        "60.0",
        "Seconds without a heartbeat before an executor's task is lost.",
    ),
    OptionSpec::process(
        "kernel_trace",
        Choice(KernelTrace::NAMES),
        "'concurrent'",
        "How CUPTI records kernels (per process).",
    )
    .rust("kernel_trace")
    .cli("--kernel-trace", None)
    .env(KERNEL_TRACE_ENV),
    OptionSpec::process(
        "graph_trace",
        Choice(GraphTrace::NAMES),
        "None",
        "How CUDA graph launches are timed (None: the kernel trace's default).",
    )
    .optional()
    .rust("graph_trace")
    .cli("--graph-trace", None)
    .env(GRAPH_TRACE_ENV),
    OptionSpec::process(
        "attribution",
        Choice(Attribution::NAMES),
        "'order'",
        "How kernels are attributed to regions (per process).",
    )
    .rust("attribution")
    .cli("--attribution", None)
    .env(ATTRIBUTION_ENV),
    OptionSpec::new(
        "ignore_failures",
        Bool,
        "false",
        "A failing run gives NaN samples and the sweep goes on.",
    )
    .rust_only("ignore_failures"),
    OptionSpec::new(
        "conditions",
        Bool,
        "true",
        "Sample NVML run conditions around every run.",
    )
    .rust_only("conditions"),
    OptionSpec::new(
        "progress",
        Other("ProgressHook"),
        "None",
        "Called after every recorded run.",
    )
    .optional()
    .rust_only("progress"),
    OptionSpec::new("cancel", Other("Cancel"), "None", "A token that stops the bench call.")
        .optional()
        .rust_only("cancel"),
];

/// The option of this name.
pub fn lookup(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The allowed values of a table cell: choices quoted, else the type (with `None`).
fn values_cell(o: &OptionSpec) -> String {
    let base = match o.ty {
        Choice(names) => names.iter().map(|n| format!("`'{n}'`")).collect::<Vec<_>>().join(", "),
        ty => ty.name().to_string(),
    };
    if o.optional {
        format!("{base}, `None`")
    } else {
        base
    }
}

/// The options table of `docs/quickstart.md`: one row per option.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| option | values | default | doors | Rust field | `kprof run` | override | what |\n|---|---|---|---|---|---|---|---|\n",
    );
    for o in OPTIONS {
        let code = |s: Option<&str>| s.map(|s| format!("`{s}`")).unwrap_or_default();
        let owner = if o.configure { "TraceOptions" } else { "BenchOptions" };
        let field = o.rust.map(|f| format!("{owner}::{f}"));
        out.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {} | {} | {} | {} |\n",
            o.name,
            values_cell(o),
            o.default,
            o.doors(),
            code(field.as_deref()),
            code(o.cli.map(|c| c.flag)),
            code(o.env),
            o.doc
        ));
    }
    out
}

/// The Python type alias of an option with choices: `duration_source` -> `DurationSourceName`.
pub fn alias_name(option: &str) -> String {
    let mut out = String::new();
    for part in option.split('_') {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out + "Name"
}

/// The `Literal` aliases of the Python options with choices (the decorator's, `configure`'s), as `_core.pyi` holds them.
pub fn pyi_choice_aliases() -> String {
    let mut out = String::new();
    for o in OPTIONS.iter().filter(|o| o.python || o.configure) {
        if let Choice(names) = o.ty {
            let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            out.push_str(&format!("{} = Literal[{}]\n", alias_name(o.name), quoted.join(", ")));
        }
    }
    out
}

#[cfg(test)]
#[path = "option_model/tests.rs"]
mod tests;
