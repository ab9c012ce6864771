//! The environment variables that override options which change measurements (`KPROF_L2_FLUSH`,
//! `KPROF_L2_FLUSH_BYTES`, `KPROF_COUNTER_PASS_RECORDS`, `KPROF_ONE_PASS`, `KPROF_KERNEL_TRACE`,
//! `KPROF_GRAPH_TRACE`, `KPROF_ATTRIBUTION`), read in this one place. Each setting is an option of
//! the API first; its variable, **when set to a non-empty value, wins over the option**, so that a
//! script or a CI job can change how an unmodified program measures. An invalid value is an error
//! naming the variable ([`InvalidOverride`]), never ignored. Which option each overrides is on its
//! constant below; when each is read: `docs/configuration.md`.

use std::fmt;
use std::str::FromStr;

use crate::choices::{parse_switch, InvalidOptionValue, TraceOptions};

/// An override variable set to a value its option does not accept (becomes
/// [`EngineError::InvalidOption`](crate::EngineError::InvalidOption)). Displays as
/// `KPROF_L2_FLUSH="memset" (an override of the option): l2_flush must be one of 'read', …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOverride {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for InvalidOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} (an override of the option): {}",
            self.var, self.value, self.problem
        )
    }
}

impl std::error::Error for InvalidOverride {}

/// Overrides [`BenchOptions::l2_flush`](crate::runner::BenchOptions::l2_flush): `read`, `discard` or `write`.
pub const L2_FLUSH_ENV: &str = "KPROF_L2_FLUSH";

/// Overrides [`BenchOptions::l2_flush_bytes`](crate::runner::BenchOptions::l2_flush_bytes): the
/// flush buffer's size in bytes.
pub const L2_FLUSH_BYTES_ENV: &str = "KPROF_L2_FLUSH_BYTES";

/// Overrides [`BenchOptions::counter_pass_records`](crate::runner::BenchOptions::counter_pass_records): `on` or `off`.
pub const COUNTER_PASS_RECORDS_ENV: &str = "KPROF_COUNTER_PASS_RECORDS";

/// Overrides [`BenchOptions::one_pass`](crate::runner::BenchOptions::one_pass): `on` or `off`.
pub const ONE_PASS_ENV: &str = "KPROF_ONE_PASS";

/// Overrides [`TraceOptions::kernel_trace`]: `concurrent` or `serial`.
pub const KERNEL_TRACE_ENV: &str = "KPROF_KERNEL_TRACE";

/// Overrides [`TraceOptions::graph_trace`]: `graph` or `nodes`.
pub const GRAPH_TRACE_ENV: &str = "KPROF_GRAPH_TRACE";

/// Overrides [`TraceOptions::attribution`]: `order` or `records`.
pub const ATTRIBUTION_ENV: &str = "KPROF_ATTRIBUTION";

/// Where override values come from: the process environment, or a table in tests.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as a [`Lookup`].
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The trimmed value of `var`, `None` when unset or empty.
fn value(env: Lookup<'_>, var: &str) -> Option<String> {
    env(var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

fn env_error(var: &'static str, e: InvalidOptionValue) -> InvalidOverride {
    InvalidOverride {
        var,
        value: e.value.clone(),
        problem: e.to_string(),
    }
}

/// The choice `var` sets, parsed by the option's one parser; `None` when unset or empty.
pub(crate) fn choice<T: FromStr<Err = InvalidOptionValue>>(
    env: Lookup<'_>,
    var: &'static str,
) -> Result<Option<T>, InvalidOverride> {
    value(env, var)
        .map(|v| v.parse().map_err(|e| env_error(var, e)))
        .transpose()
}

/// The switch `var` sets (`on`/`off`); `None` when unset or empty.
pub(crate) fn switch(
    env: Lookup<'_>,
    var: &'static str,
    option: &'static str,
) -> Result<Option<bool>, InvalidOverride> {
    value(env, var)
        .map(|v| parse_switch(option, &v).map_err(|e| env_error(var, e)))
        .transpose()
}

/// The byte count `var` sets (a positive integer); `None` when unset or empty.
pub(crate) fn bytes(env: Lookup<'_>, var: &'static str) -> Result<Option<u64>, InvalidOverride> {
    value(env, var)
        .map(|v| match v.parse::<u64>() {
            Ok(b) if b > 0 => Ok(b),
            _ => Err(InvalidOverride {
                var,
                value: v,
                problem: "not a flush buffer size: give a positive number of bytes (at least the L2), or unset it"
                    .to_string(),
            }),
        })
        .transpose()
}

/// `opts` with `KPROF_KERNEL_TRACE`, `KPROF_GRAPH_TRACE` and `KPROF_ATTRIBUTION` applied over them. A kernel trace
/// from the environment without a graph trace leaves the graph trace to the option (or to the
/// kernel trace's default when the option has none).
pub fn trace_options(opts: TraceOptions) -> Result<TraceOptions, InvalidOverride> {
    trace_options_from(opts, &process_env)
}

pub(crate) fn trace_options_from(mut opts: TraceOptions, env: Lookup<'_>) -> Result<TraceOptions, InvalidOverride> {
    if let Some(k) = choice(env, KERNEL_TRACE_ENV)? {
        opts.kernel_trace = k;
    }
    if let Some(g) = choice(env, GRAPH_TRACE_ENV)? {
        opts.graph_trace = Some(g);
    }
    if let Some(a) = choice(env, ATTRIBUTION_ENV)? {
        opts.attribution = a;
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::{Attribution, GraphTrace, KernelTrace};

    fn table(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn trace_options_keep_the_fields_unless_a_variable_is_set_and_then_the_variable_wins() {
        let serial = TraceOptions {
            kernel_trace: KernelTrace::Serial,
            graph_trace: Some(GraphTrace::Graph),
            attribution: Attribution::Records,
        };
        assert_eq!(trace_options_from(serial, &table(&[])).unwrap(), serial);
        assert_eq!(
            trace_options_from(serial, &table(&[(KERNEL_TRACE_ENV, " "), (GRAPH_TRACE_ENV, "")])).unwrap(),
            serial
        );
        let got = trace_options_from(
            serial,
            &table(&[(KERNEL_TRACE_ENV, "concurrent"), (GRAPH_TRACE_ENV, " nodes")]),
        )
        .unwrap();
        assert_eq!(
            (got.kernel_trace, got.graph_trace()),
            (KernelTrace::Concurrent, GraphTrace::Nodes)
        );
        let got = trace_options_from(serial, &table(&[(ATTRIBUTION_ENV, "order")])).unwrap();
        assert_eq!(got.attribution, Attribution::Order);
        // The environment's serial trace without a graph trace: the serial default (node records).
        let got = trace_options_from(TraceOptions::default(), &table(&[(KERNEL_TRACE_ENV, "serial")])).unwrap();
        assert_eq!(got.graph_trace(), GraphTrace::Nodes);
        // An unknown value names the variable, the value and the choices.
        for (vars, want) in [
            (
                &[(KERNEL_TRACE_ENV, "parallel")],
                ["KPROF_KERNEL_TRACE=\"parallel\"", "'concurrent', 'serial'"],
            ),
            (
                &[(GRAPH_TRACE_ENV, "all")],
                ["KPROF_GRAPH_TRACE=\"all\"", "'graph', 'nodes'"],
            ),
            (
                &[(ATTRIBUTION_ENV, "thread")],
                ["KPROF_ATTRIBUTION=\"thread\"", "'order', 'records'"],
            ),
        ] {
            let msg = trace_options_from(serial, &table(vars)).unwrap_err().to_string();
            assert!(want.iter().all(|w| msg.contains(w)), "{msg}");
        }
    }

    #[test]
    fn switches_and_sizes_parse_and_name_the_variable_when_wrong() {
        let env = table(&[
            ("A", " on "),
            ("B", "off"),
            ("C", "yes"),
            ("D", "4096"),
            ("E", "0"),
            ("F", "4x"),
        ]);
        assert_eq!(switch(&env, "A", "x").unwrap(), Some(true));
        assert_eq!(switch(&env, "B", "x").unwrap(), Some(false));
        assert_eq!(switch(&env, "Z", "x").unwrap(), None);
        assert!(switch(&env, "C", "x").unwrap_err().to_string().contains("C=\"yes\""));
        assert_eq!(bytes(&env, "D").unwrap(), Some(4096));
        assert_eq!(bytes(&env, "Z").unwrap(), None);
        for bad in ["E", "F"] {
            assert!(bytes(&env, bad).unwrap_err().to_string().contains(&format!("{bad}=")));
        }
    }
}
