//! The choices of kprof's options, one enum and one parser each: [`ReplayMode`]
//! (`replay_mode`), [`CacheControl`] (`cache_control`), [`ClockControl`] (`clock_control`),
//! [`L2Flush`] (`l2_flush`), [`KernelTrace`] (`kernel_trace`), [`GraphTrace`] (`graph_trace`),
//! [`Attribution`] (`attribution`), the run loop's [`RunOrder`] (`order`), [`DurationSource`]
//! (`duration_source`), [`Backend`] (`backend`) and [`ThermalMode`] (`thermal_mode`) (in `run`),
//! [`parse_choice`] (any of them by option name), and the on/off spelling of switches ([`parse_switch`]); the per-process [`TraceOptions`]; and
//! the error of a value an option does not accept ([`InvalidOptionValue`]). The runner, the
//! counters, the ncu backend, the Rust CLI, the Python glue and the injection library all use
//! these (re-exported as `counters::ReplayMode` and `runner::{CacheControl, ClockControl}`). This
//! module imports no other module of the engine.

use std::fmt;

mod run;
pub use run::{Backend, DurationSource, RunOrder, ThermalMode};

/// A value an option does not accept. Displays as
/// `replay_mode must be one of 'kernel', 'range', 'application'; got 'app'` (the wording of the
/// Python package's own checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOptionValue {
    /// The option (`replay_mode`, `cache_control`, `clock_control`).
    pub option: &'static str,
    /// The value given.
    pub value: String,
    /// The canonical values accepted (aliases are not listed).
    pub accepted: &'static [&'static str],
}

impl InvalidOptionValue {
    pub(crate) fn new(option: &'static str, value: &str, accepted: &'static [&'static str]) -> Self {
        InvalidOptionValue {
            option,
            value: value.to_string(),
            accepted,
        }
    }
}

impl fmt::Display for InvalidOptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} must be one of ", self.option)?;
        for (i, a) in self.accepted.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "'{a}'")?;
        }
        write!(f, "; got '{}'", self.value)
    }
}

impl std::error::Error for InvalidOptionValue {}

/// The names of a choice enum, from one table of its variants, each with its canonical name and
/// any aliases its parser also accepts: `NAMES` (the canonical names, in the order error messages
/// list them), `as_str` (the option's canonical name), `FromStr` (an [`InvalidOptionValue`] of
/// `$option` for anything else; with `fold_case`, the value is trimmed and lowercased first) and
/// `Display` (through `as_str`).
macro_rules! choice_names {
    ($t:ident, $option:expr, { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        $crate::choices::choice_names!(@impl $t, $option, s => s, { $($variant => $name $(| $alias)*),+ });
    };
    ($t:ident, $option:expr, fold_case, { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        $crate::choices::choice_names!(@impl $t, $option, s => s.trim().to_ascii_lowercase(), {
            $($variant => $name $(| $alias)*),+
        });
    };
    (@impl $t:ident, $option:expr, $s:ident => $key:expr, { $($variant:ident => $name:literal $(| $alias:literal)*),+ }) => {
        impl $t {
            /// The canonical names, in the order error messages list them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The option's canonical name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($t::$variant => $name,)+
                }
            }
        }

        impl std::str::FromStr for $t {
            type Err = $crate::choices::InvalidOptionValue;

            /// Parses a canonical name ([`Self::NAMES`]) or an alias of one.
            fn from_str($s: &str) -> Result<Self, Self::Err> {
                let key: &str = &$key;
                match key {
                    $($name $(| $alias)* => Ok($t::$variant),)+
                    _ => Err($crate::choices::InvalidOptionValue::new($option, $s, Self::NAMES)),
                }
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use choice_names;

/// How ranges are formed and passes replayed: the one enum of the `replay_mode` option (Python's
/// `replay_mode`, `kprof run --replay-mode` and its run spec, ncu's `--replay-mode`), parsed
/// only by its [`FromStr`](std::str::FromStr) impl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplayMode {
    /// AutoRange + KernelReplay: one range (one value per metric) per kernel, named "0", "1", …
    Kernel,
    /// `"range"` (alias `"user"`): UserRange + UserReplay: one range per
    /// [`UserRanges::push`](crate::counters::UserRanges::push)/[`pop`](crate::counters::UserRanges::pop) region; the closure is re-run once per pass.
    /// Rates (`*.pct_of_peak_sustained_elapsed`, `*.per_second`) are over the range's whole
    /// elapsed time, idle gaps included. ncu's `--replay-mode range`.
    User,
    /// AutoRange + UserReplay: one range per kernel, named "0", "1", …, the closure re-run once
    /// per pass (nothing saved or restored).
    Application,
}

choice_names!(ReplayMode, "replay_mode", {
    Kernel => "kernel",
    User => "range" | "user",
    Application => "application",
});

impl ReplayMode {
    /// CUPTI's name (`"kernel"`, `"user"`, `"application"`): the `mode=` of a saved
    /// [`Recording`](crate::counters::Recording) and the wording of counter-pass messages.
    pub fn cupti_name(self) -> &'static str {
        match self {
            ReplayMode::Kernel => "kernel",
            ReplayMode::User => "user",
            ReplayMode::Application => "application",
        }
    }

    /// Whether every kernel is its own range (kernel and application replay).
    pub fn per_kernel(self) -> bool {
        self != ReplayMode::User
    }
}

/// L2 cache state at the start of every run and region: the one enum of the `cache_control`
/// option (Python's `cache_control`, ncu's `--cache-control`), parsed only by its
/// [`FromStr`](std::str::FromStr) impl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheControl {
    /// Cold cache (the default, as in Nsight Compute): before every run and before every
    /// top-level region, outside the timed regions, the SMs' instruction caches are emptied (a
    /// kernel with more code than they hold runs) and then the L2 (a buffer of twice its size is
    /// read through it, see `KPROF_L2_FLUSH`), so each region starts cold and clean whatever ran
    /// before it. Kernels *inside* one region share the caches (ncu flushes before each kernel).
    #[default]
    All,
    /// Warm cache: nothing is done between runs.
    None,
}

/// GPU clock control: the one enum of the `clock_control` option (Python's `clock_control`,
/// ncu's `--clock-control`), parsed only by its [`FromStr`](std::str::FromStr) impl. kprof
/// defaults to `none` (unlike ncu 2025.3.1, which defaults to base).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClockControl {
    /// Leave the clocks as they are (the only choice in the CUPTI activity backend).
    #[default]
    None,
    /// Lock clocks to base: only the ncu backend can do that; asking for it here is an error.
    Base,
}

choice_names!(CacheControl, "cache_control", {
    All => "all",
    None => "none",
});

choice_names!(ClockControl, "clock_control", {
    None => "none",
    Base => "base",
});

/// How the L2 is emptied before cold runs and top-level regions: the one enum of the `l2_flush`
/// option (Python's `l2_flush`, [`BenchOptions::l2_flush`](crate::runner::BenchOptions::l2_flush),
/// `kprof run --l2-flush`; `KPROF_L2_FLUSH` overrides it), parsed only by its
/// [`FromStr`](std::str::FromStr) impl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L2Flush {
    /// A kernel reads a buffer of twice the L2 (the default): the L2 ends clean.
    #[default]
    Read,
    /// `Read`, then the buffer's lines are dropped (PTX `discard.global.L2`, sm_80 and later): the
    /// L2 ends empty, as after ncu's `--cache-control all`.
    Discard,
    /// A memset of the buffer, as Triton and NVBench flush: the L2 ends full of dirty lines.
    Write,
}

choice_names!(L2Flush, "l2_flush", {
    Read => "read",
    Discard => "discard",
    Write => "write",
});

/// How CUPTI records kernels: the one enum of the `kernel_trace` option (a per-process setting:
/// [`TraceOptions::kernel_trace`], Python's `kprof.configure(kernel_trace=...)`, `kprof run
/// --kernel-trace`; `KPROF_KERNEL_TRACE` overrides it), parsed only by its
/// [`FromStr`](std::str::FromStr) impl. See `cupti::collector` for what each costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KernelTrace {
    /// `CUPTI_ACTIVITY_KIND_KERNEL`: CUPTI serializes kernels on the GPU (kernels on different
    /// streams no longer overlap) and times them without instrumenting them; CUDA graphs come
    /// untimed.
    Serial,
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL` (default): kernels keep their concurrency and graph
    /// launches their GPU span; CUPTI instruments every kernel to time it, which adds time to
    /// kernels made of many short blocks.
    #[default]
    Concurrent,
}

choice_names!(KernelTrace, "kernel_trace", {
    Concurrent => "concurrent",
    Serial => "serial",
});

/// How CUDA graph launches are timed: the one enum of the `graph_trace` option (a per-process
/// setting: [`TraceOptions::graph_trace`], Python's `kprof.configure(graph_trace=...)`, `kprof run
/// --graph-trace`; `KPROF_GRAPH_TRACE` overrides it), parsed only by its
/// [`FromStr`](std::str::FromStr) impl.
///
/// Whichever the mode, a region's value counts a graph launch as one work item spanning the
/// whole graph (see [`crate::attribution::work_items`]), never one node's time.
///
/// Measured on the H200 (CUPTI 13.0; `docs/timing.md`): graph-level records time a
/// graph as CUDA events around its replay do without a profiler (60 kernels: 198.6 vs 202.2 us;
/// `kprof run` on a C++ program: 198.4 vs 200.6 us); node records make every node run
/// instrumented (214.8 us). Graph records crash CUPTI 13.0 for executables instantiated before
/// the session started; [`crate::cupti::graph_guard`] switches them off for those launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GraphTrace {
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` (default with concurrent kernel records): one record per
    /// graph launch with the graph's start and end on the GPU, no records of its nodes; launches
    /// of executables instantiated before the session fall back to node records (guarded).
    Graph,
    /// Node records: with concurrent kernel records every node is timed (and instrumented) and a
    /// launch's span is merged from its nodes (per-node durations stay in the breakdown); with
    /// serial records nodes come untimed (the default with serial records: graph records then
    /// span about one node).
    Nodes,
}

choice_names!(GraphTrace, "graph_trace", {
    Graph => "graph",
    Nodes => "nodes",
});

impl GraphTrace {
    /// The default for a kernel trace: graph records with concurrent kernel records, node
    /// records with serial ones.
    pub fn default_for(kernels: KernelTrace) -> GraphTrace {
        match kernels {
            KernelTrace::Concurrent => GraphTrace::Graph,
            KernelTrace::Serial => GraphTrace::Nodes,
        }
    }
}

/// How kernels are attributed to the regions that were open when they were launched
/// (`attribution`; [`crate::attribution`] has the rules).
///
/// Measured on the H200 (CUPTI 13.0, driver 580, `truth_check launchparts`, the states
/// interleaved in one process, three processes): a CUPTI session with the kernel, graph and launch
/// API records added 0.74-0.99 us of host time per `cuLaunchKernel`, without the launch API
/// records 0.40-0.54 us; the callback that numbers region boundaries cost nothing measurable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Attribution {
    /// By launch order (default): CUPTI numbers every launch (its correlation id) and kprof takes
    /// a number when a region opens and closes, so a kernel belongs to the innermost region open
    /// when it was launched, whatever thread launched it. No launch API records are traced.
    /// Regions of different threads open at the same time make that ambiguous (kprof warns).
    #[default]
    Order,
    /// By the launch API records: kernels launched by the thread that opened a region belong to
    /// it exactly (CUPTI's external correlation), kernels of other threads by their launch time.
    /// Costs the launch API records (0.2-0.5 us more per launch).
    Records,
}

choice_names!(Attribution, "attribution", {
    Order => "order",
    Records => "records",
});

/// The options with choices, each with its canonical names (the enum's `NAMES`).
pub const CHOICE_OPTIONS: &[(&str, &[&str])] = &[
    ("replay_mode", ReplayMode::NAMES),
    ("cache_control", CacheControl::NAMES),
    ("clock_control", ClockControl::NAMES),
    ("l2_flush", L2Flush::NAMES),
    ("kernel_trace", KernelTrace::NAMES),
    ("graph_trace", GraphTrace::NAMES),
    ("attribution", Attribution::NAMES),
    ("order", RunOrder::NAMES),
    ("duration_source", DurationSource::NAMES),
    ("backend", Backend::NAMES),
    ("thermal_mode", ThermalMode::NAMES),
];

/// The canonical value of `option` for `value`, parsed by the option's one parser (aliases such
/// as `"user"` for `"range"` become the canonical name); `None` for an option without choices.
pub fn parse_choice(option: &str, value: &str) -> Option<Result<&'static str, InvalidOptionValue>> {
    fn canonical<T: std::str::FromStr<Err = InvalidOptionValue> + Copy>(
        value: &str,
        name: fn(T) -> &'static str,
    ) -> Result<&'static str, InvalidOptionValue> {
        value.parse::<T>().map(name)
    }
    Some(match option {
        "replay_mode" => canonical(value, ReplayMode::as_str),
        "cache_control" => canonical(value, CacheControl::as_str),
        "clock_control" => canonical(value, ClockControl::as_str),
        "l2_flush" => canonical(value, L2Flush::as_str),
        "kernel_trace" => canonical(value, KernelTrace::as_str),
        "graph_trace" => canonical(value, GraphTrace::as_str),
        "attribution" => canonical(value, Attribution::as_str),
        "order" => canonical(value, RunOrder::as_str),
        "duration_source" => canonical(value, DurationSource::as_str),
        "backend" => canonical(value, Backend::as_str),
        "thermal_mode" => canonical(value, ThermalMode::as_str),
        _ => return None,
    })
}

/// A switch (`counter_pass_records`) as its environment override spells it: `"on"` or `"off"`.
pub fn parse_switch(option: &'static str, s: &str) -> Result<bool, InvalidOptionValue> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(InvalidOptionValue::new(option, s, &["on", "off"])),
    }
}

/// The per-process options of the CUPTI activity session (how kernels and CUDA graphs are
/// traced), set once per process: [`Profiler::with_trace`](crate::runner::Profiler::with_trace),
/// [`ActivitySession::start_traced`](crate::cupti::ActivitySession::start_traced), Python's
/// `kprof.configure`, `kprof run --kernel-trace/--graph-trace`. `KPROF_KERNEL_TRACE` and
/// `KPROF_GRAPH_TRACE`, when set, override these fields (see `crate::overrides`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceOptions {
    /// How CUPTI records kernels (default [`KernelTrace::Concurrent`]).
    pub kernel_trace: KernelTrace,
    /// How CUDA graph launches are timed; `None` (the default):
    /// [`GraphTrace::default_for`] the kernel trace (graph records with concurrent kernels).
    pub graph_trace: Option<GraphTrace>,
    /// How kernels are attributed to regions (default [`Attribution::Order`]).
    pub attribution: Attribution,
}

impl TraceOptions {
    /// The graph trace these options ask for (the field, else the kernel trace's default).
    pub fn graph_trace(&self) -> GraphTrace {
        self.graph_trace.unwrap_or(GraphTrace::default_for(self.kernel_trace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of `choices` parses back from its name and displays as it.
    fn round_trips<T>(choices: &[T])
    where
        T: std::str::FromStr<Err = InvalidOptionValue> + fmt::Display + fmt::Debug + PartialEq + Copy,
    {
        for c in choices {
            assert_eq!(c.to_string().parse::<T>(), Ok(*c));
        }
    }

    #[test]
    fn every_choice_round_trips_and_aliases_parse() {
        round_trips(&[ReplayMode::Kernel, ReplayMode::User, ReplayMode::Application]);
        round_trips(&[CacheControl::All, CacheControl::None]);
        round_trips(&[ClockControl::None, ClockControl::Base]);
        round_trips(&[L2Flush::Read, L2Flush::Discard, L2Flush::Write]);
        round_trips(&[KernelTrace::Concurrent, KernelTrace::Serial]);
        round_trips(&[GraphTrace::Graph, GraphTrace::Nodes]);
        round_trips(&[Attribution::Order, Attribution::Records]);
        round_trips(&[RunOrder::Interleaved, RunOrder::Sequential]);
        round_trips(&[DurationSource::Auto, DurationSource::Records, DurationSource::Counters]);
        round_trips(&[Backend::Cupti, Backend::CudaEvents, Backend::Ncu]);
        round_trips(&[ThermalMode::Auto, ThermalMode::Manual, ThermalMode::Off]);
        assert_eq!(ReplayMode::User.as_str(), "range");
        assert_eq!("user".parse::<ReplayMode>(), Ok(ReplayMode::User));
        assert_eq!("None".parse::<ThermalMode>(), Ok(ThermalMode::Off));
        for (option, names) in CHOICE_OPTIONS {
            for n in *names {
                assert_eq!(parse_choice(option, n), Some(Ok(*n)), "{option}");
            }
            let bad = parse_choice(option, "no-such-value").unwrap().unwrap_err();
            assert_eq!((bad.option, bad.accepted), (*option, *names));
        }
        assert_eq!(parse_choice("replay_mode", "user"), Some(Ok("range")));
        assert_eq!(parse_choice("runs", "1"), None);
    }

    #[test]
    fn a_bad_value_names_the_option_and_its_choices() {
        for (option, value, message) in [
            (
                "replay_mode",
                "app",
                "replay_mode must be one of 'kernel', 'range', 'application'; got 'app'",
            ),
            (
                "cache_control",
                "some",
                "cache_control must be one of 'all', 'none'; got 'some'",
            ),
            (
                "clock_control",
                "fast",
                "clock_control must be one of 'none', 'base'; got 'fast'",
            ),
            (
                "l2_flush",
                "memset",
                "l2_flush must be one of 'read', 'discard', 'write'; got 'memset'",
            ),
            (
                "kernel_trace",
                "parallel",
                "kernel_trace must be one of 'concurrent', 'serial'; got 'parallel'",
            ),
            (
                "graph_trace",
                "all",
                "graph_trace must be one of 'graph', 'nodes'; got 'all'",
            ),
            (
                "attribution",
                "thread",
                "attribution must be one of 'order', 'records'; got 'thread'",
            ),
            (
                "duration_source",
                "ncu",
                "duration_source must be one of 'auto', 'records', 'counters'; got 'ncu'",
            ),
            (
                "order",
                "random",
                "order must be one of 'interleaved', 'sequential'; got 'random'",
            ),
            (
                "backend",
                "nsys",
                "backend must be one of 'cupti', 'cuda-events', 'ncu'; got 'nsys'",
            ),
            (
                "thermal_mode",
                "hot",
                "thermal_mode must be one of 'auto', 'manual', 'off'; got 'hot'",
            ),
        ] {
            let e = parse_choice(option, value).unwrap().unwrap_err();
            assert_eq!(e.to_string(), message);
        }
        assert_eq!(parse_switch("counter_pass_records", "on"), Ok(true));
        assert_eq!(parse_switch("counter_pass_records", "off"), Ok(false));
        assert_eq!(
            parse_switch("counter_pass_records", "yes").unwrap_err().to_string(),
            "counter_pass_records must be one of 'on', 'off'; got 'yes'"
        );
    }

    #[test]
    fn trace_and_flush_defaults() {
        assert_eq!(L2Flush::default(), L2Flush::Read);
        let t = TraceOptions::default();
        assert_eq!(t.attribution, Attribution::Order);
        assert_eq!(
            (t.kernel_trace, t.graph_trace()),
            (KernelTrace::Concurrent, GraphTrace::Graph)
        );
        let serial = TraceOptions {
            kernel_trace: KernelTrace::Serial,
            ..TraceOptions::default()
        };
        assert_eq!(serial.graph_trace(), GraphTrace::Nodes);
    }
}
