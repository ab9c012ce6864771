//! The run spec: what `kprof run` tells the injection library in every process it starts. `kprof run`
//! (kprof-cli) builds one [`RunSpec`] per execution of the command and passes it as one JSON
//! document in [`ENV_RUN_SPEC`] (`KPROF_RUN_SPEC`), which every child process inherits;
//! `libkprof_inject.so` (kprof-inject) reads it once per process ([`RunSpec::from_env`]) and writes
//! a document it cannot read ([`RunSpecError`]) to its status file, which `kprof run` prints.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::choices::{Attribution, GraphTrace, KernelTrace, ReplayMode, TraceOptions};

/// The environment variable holding the spec (JSON).
pub const ENV_RUN_SPEC: &str = "KPROF_RUN_SPEC";

/// The version of the spec this build writes and reads.
pub const RUN_SPEC_VERSION: u32 = 1;

/// The column of a process file (`kprof-run-<pid>.csv`) holding the process's rank, read from
/// the launcher's environment (`torchrun`'s `RANK`, MPI's, Slurm's; see the `kprof-inject`
/// crate's `placement` module); absent when the process has none. `kprof run` makes it a key
/// (a configuration parameter) of the merged results when any process has one.
pub const RANK_COLUMN: &str = "Rank";

/// The column of a process file holding the CUDA device ordinal (in the process, as CUDA numbers
/// the devices it sees) the sample's kernels ran on, from the kernel records; several devices
/// are joined with `|`. `kprof run` makes it a key when it varies.
pub const DEVICE_COLUMN: &str = "Device";

/// The column of a process file holding the UUID (`GPU-...`) of the sample's device, when known.
pub const DEVICE_UUID_COLUMN: &str = "DeviceUUID";

/// Kernels per counter-data image in the counter launch, before the image is decoded and
/// restarted ([`CounterSpec::ranges_per_image`]).
pub const DEFAULT_COUNTER_RANGES: usize = 4096;

/// How the injection library turns kernels into annotations (`kprof run --group-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// NVTX ranges; kernels outside ranges by kernel name.
    #[default]
    Nvtx,
    /// Every kernel by its name.
    Kernel,
    /// NVTX ranges, and every kernel by its name.
    Both,
}

/// How the kernels of nested NVTX ranges count (`kprof run --nvtx-nesting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NvtxNesting {
    /// A range's row holds every kernel launched while it was open, those of ranges opened
    /// inside it (any domain, any thread: a library's own) included; rows are named by their
    /// path of enclosing ranges (`outer/inner`) and carry the kernels attributed to the range
    /// itself, not to a nested one, in the `SelfNs` column.
    #[default]
    Inclusive,
    /// Every kernel counts once, in the innermost range open at its launch; rows are named by
    /// the range alone (rows add up to the time of all the kernels in ranges).
    Innermost,
}

/// What one execution of the command under `kprof run` asks of the injection library, as one
/// JSON document in [`ENV_RUN_SPEC`]:
///
/// ```text
/// KPROF_RUN_SPEC={"version":1,"output":"/tmp/out/procs/rep0","benchmark":"sgemm","group_by":"nvtx",
///                 "nvtx_include":[],"nvtx_exclude":[],"verbose":false,"counters":null,
///                 "kernel_trace":"concurrent","graph_trace":null,"attribution":"order",
///                 "nvtx_nesting":"inclusive"}
/// ```
///
/// The counter launch of `kprof run --metrics` has `"counters":{"metrics":[...],...}`
/// ([`CounterSpec`]); the timing launch has `"counters":null`. A document of another
/// [`RunSpec::version`], one that is not JSON, or one with unknown or mistyped fields is a
/// [`RunSpecError`] that names the variable and what is wrong, never a silent default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    /// The spec's version ([`RUN_SPEC_VERSION`]); another one is an error. Fields left out of a
    /// document take their [`Default`] (nothing written, the defaults of `kprof run`).
    pub version: u32,
    /// The folder (or file name stem) where each process writes `kprof-run-<pid>.csv` and
    /// `.json` at exit; `None`: nothing is written.
    pub output: Option<PathBuf>,
    /// The benchmark name of the samples; `None` or empty: the process's name.
    pub benchmark: Option<String>,
    /// How kernels become annotations.
    pub group_by: GroupBy,
    /// Patterns (a name, `domain@name`, or a prefix ending in `*`) of the NVTX ranges to keep;
    /// empty: every range.
    pub nvtx_include: Vec<String>,
    /// Patterns of the NVTX ranges to drop.
    pub nvtx_exclude: Vec<String>,
    /// Let the library report on stderr (lines prefixed `kprof:`).
    pub verbose: bool,
    /// The counter launch of `kprof run --metrics`; `None`: a timing launch.
    pub counters: Option<CounterSpec>,
    /// How CUPTI records kernels (`kprof run --kernel-trace`; default concurrent).
    /// `KPROF_KERNEL_TRACE`, when set in the process, overrides it.
    #[serde(with = "choice_name")]
    pub kernel_trace: KernelTrace,
    /// How CUDA graph launches are timed (`kprof run --graph-trace`); `None`: graph records with
    /// concurrent kernel records, node records with serial ones. `KPROF_GRAPH_TRACE`, when set in
    /// the process, overrides it.
    #[serde(with = "opt_choice_name")]
    pub graph_trace: Option<GraphTrace>,
    /// How kernels are attributed to NVTX ranges (`kprof run --attribution`; default by launch
    /// order). `KPROF_ATTRIBUTION`, when set in the process, overrides it.
    #[serde(with = "choice_name", default)]
    pub attribution: Attribution,
    /// How the kernels of nested ranges count (`kprof run --nvtx-nesting`; default inclusive).
    pub nvtx_nesting: NvtxNesting,
    /// Each process of a timing launch also writes its timeline (`kprof run --trace`): its kernel
    /// records and NVTX ranges, kprof-core's `io::trace::Timeline` as JSON, next to its results
    /// (`kprof-run-<pid>.timeline.json`).
    pub trace: bool,
}

/// The counters the counter launch collects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    /// ncu metric names (`gpu__time_duration.sum` is the timing launch's and ignored here).
    pub metrics: Vec<String>,
    /// The replay mode; the library accepts only [`ReplayMode::Kernel`].
    #[serde(with = "replay_mode_name", default = "kernel_replay")]
    pub replay_mode: ReplayMode,
    /// Kernels per counter-data image before it is decoded and restarted (positive).
    #[serde(default = "default_counter_ranges")]
    pub ranges_per_image: usize,
}

fn kernel_replay() -> ReplayMode {
    ReplayMode::Kernel
}

fn default_counter_ranges() -> usize {
    DEFAULT_COUNTER_RANGES
}

/// [`ReplayMode`] as its option name (`"kernel"`), parsed by its `FromStr`.
mod replay_mode_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::choices::ReplayMode;

    pub fn serialize<S: Serializer>(mode: &ReplayMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(mode.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ReplayMode, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A choice ([`KernelTrace`], ...) as its option name, parsed by its `FromStr`.
mod choice_name {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, T: FromStr<Err: Display>, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// An optional choice as its option name or `null`.
mod opt_choice_name {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: FromStr<Err: Display>, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|v| v.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A spec that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunSpecError {
    /// Not a JSON object.
    #[error("{ENV_RUN_SPEC} is not a JSON object ({0}); it is set by `kprof run`, not by hand")]
    NotJson(String),
    /// No `version` field, or one that is not a number.
    #[error("{ENV_RUN_SPEC} has no numeric \"version\"; it is set by `kprof run`, not by hand")]
    NoVersion,
    /// Another version than [`RUN_SPEC_VERSION`].
    #[error(
        "{ENV_RUN_SPEC} is version {found} but this libkprof_inject.so reads version {RUN_SPEC_VERSION}: the kprof \
         command and its injection library come from different builds (check KPROF_INJECT_PATH, or reinstall kprof)"
    )]
    Version {
        /// The version found.
        found: u64,
    },
    /// The right version, but a field is unknown, missing or of the wrong type.
    #[error("{ENV_RUN_SPEC} (version {RUN_SPEC_VERSION}) is not a valid run spec: {0}")]
    Content(String),
    /// The variable's value is not UTF-8.
    #[error("{ENV_RUN_SPEC} is not UTF-8")]
    NotUtf8,
    /// A spec that cannot be written as JSON (a path that is not UTF-8).
    #[error("cannot write the run spec: {0}")]
    Write(String),
}

impl Default for RunSpec {
    /// This version, nothing written, the defaults of `kprof run`.
    fn default() -> Self {
        RunSpec {
            version: RUN_SPEC_VERSION,
            output: None,
            benchmark: None,
            group_by: GroupBy::default(),
            nvtx_include: Vec::new(),
            nvtx_exclude: Vec::new(),
            verbose: false,
            counters: None,
            kernel_trace: KernelTrace::default(),
            graph_trace: None,
            attribution: Attribution::default(),
            nvtx_nesting: NvtxNesting::default(),
            trace: false,
        }
    }
}

impl RunSpec {
    /// The JSON document (one line) for [`ENV_RUN_SPEC`].
    pub fn to_json(&self) -> Result<String, RunSpecError> {
        serde_json::to_string(self).map_err(|e| RunSpecError::Write(e.to_string()))
    }

    /// Reads a document: the version first (another one is [`RunSpecError::Version`], whatever
    /// the other fields hold), then the fields.
    pub fn from_json(text: &str) -> Result<RunSpec, RunSpecError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| RunSpecError::NotJson(e.to_string()))?;
        let Some(object) = value.as_object() else {
            return Err(RunSpecError::NotJson("not an object".into()));
        };
        let found = object
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .ok_or(RunSpecError::NoVersion)?;
        if found != u64::from(RUN_SPEC_VERSION) {
            return Err(RunSpecError::Version { found });
        }
        serde_json::from_value(value).map_err(|e| RunSpecError::Content(e.to_string()))
    }

    /// The spec of this process: `Ok(None)` when [`ENV_RUN_SPEC`] is unset.
    pub fn from_env() -> Result<Option<RunSpec>, RunSpecError> {
        match std::env::var_os(ENV_RUN_SPEC) {
            None => Ok(None),
            Some(v) => Self::from_json(v.to_str().ok_or(RunSpecError::NotUtf8)?).map(Some),
        }
    }

    /// The trace options the spec asks the process's activity session for (before the
    /// `KPROF_KERNEL_TRACE` / `KPROF_GRAPH_TRACE` overrides).
    pub fn trace_options(&self) -> TraceOptions {
        TraceOptions {
            kernel_trace: self.kernel_trace,
            graph_trace: self.graph_trace,
            attribution: self.attribution,
        }
    }

    /// The `output` of a document that [`RunSpec::from_json`] rejects, when it has a string
    /// there: where to write the status file that reports the error.
    pub fn output_of_invalid(text: &str) -> Option<PathBuf> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        value
            .get("output")?
            .as_str()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter_spec() -> RunSpec {
        RunSpec {
            output: Some("/tmp/out/procs/rep0-counters".into()),
            benchmark: Some("sgemm".into()),
            group_by: GroupBy::Both,
            nvtx_include: vec!["app@step*".into(), "a,b\nc".into()],
            verbose: true,
            counters: Some(CounterSpec {
                metrics: vec!["dram__bytes_read.sum".into()],
                replay_mode: ReplayMode::Kernel,
                ranges_per_image: 16,
            }),
            kernel_trace: KernelTrace::Serial,
            graph_trace: Some(GraphTrace::Graph),
            attribution: Attribution::Records,
            ..RunSpec::default()
        }
    }

    #[test]
    fn round_trip() {
        let spec = counter_spec();
        let text = spec.to_json().unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(RunSpec::from_json(&text).unwrap(), spec);
        assert_eq!(
            RunSpec::from_json(&RunSpec::default().to_json().unwrap()).unwrap(),
            RunSpec::default()
        );
    }

    /// The form [`RunSpec`]'s documentation shows: an object in the counter launch, `null` in the
    /// timing launch.
    #[test]
    fn the_counter_launch_is_recognisable_in_the_text() {
        assert!(counter_spec()
            .to_json()
            .unwrap()
            .contains("\"counters\":{\"metrics\":["));
        assert!(RunSpec::default().to_json().unwrap().contains("\"counters\":null"));
        let text = counter_spec().to_json().unwrap();
        assert!(
            text.contains("\"kernel_trace\":\"serial\",\"graph_trace\":\"graph\",\"attribution\":\"records\""),
            "{text}"
        );
        let text = RunSpec::default().to_json().unwrap();
        assert!(
            text.contains("\"kernel_trace\":\"concurrent\",\"graph_trace\":null,\"attribution\":\"order\""),
            "{text}"
        );
    }

    #[test]
    fn missing_fields_take_the_defaults() {
        let spec = RunSpec::from_json(r#"{"version":1,"counters":{"metrics":["a.sum"]}}"#).unwrap();
        assert_eq!(spec.group_by, GroupBy::Nvtx);
        assert_eq!(spec.nvtx_nesting, NvtxNesting::Inclusive);
        let innermost = RunSpec::from_json(r#"{"version":1,"nvtx_nesting":"innermost"}"#).unwrap();
        assert_eq!(innermost.nvtx_nesting, NvtxNesting::Innermost);
        assert!(RunSpec::from_json(r#"{"version":1,"nvtx_nesting":"outer"}"#).is_err());
        assert_eq!((spec.kernel_trace, spec.graph_trace), (KernelTrace::Concurrent, None));
        assert_eq!(spec.trace_options(), TraceOptions::default());
        assert_eq!(spec.output, None);
        let c = spec.counters.unwrap();
        assert_eq!(
            (c.replay_mode, c.ranges_per_image),
            (ReplayMode::Kernel, DEFAULT_COUNTER_RANGES)
        );
    }

    #[test]
    fn bad_documents_are_clear_errors() {
        let e = RunSpec::from_json(r#"{"version":2,"output":"/x","new_field":1}"#).unwrap_err();
        assert_eq!(e, RunSpecError::Version { found: 2 });
        assert!(
            e.to_string().contains("version 2") && e.to_string().contains("reads version 1"),
            "{e}"
        );
        assert_eq!(
            RunSpec::from_json(r#"{"output":"/x"}"#).unwrap_err(),
            RunSpecError::NoVersion
        );
        assert_eq!(
            RunSpec::from_json(r#"{"version":"1"}"#).unwrap_err(),
            RunSpecError::NoVersion
        );
        assert!(matches!(RunSpec::from_json("nvtx"), Err(RunSpecError::NotJson(_))));
        assert!(matches!(RunSpec::from_json("[1]"), Err(RunSpecError::NotJson(_))));
        let e = RunSpec::from_json(r#"{"version":1,"group_by":"ranges"}"#).unwrap_err();
        assert!(matches!(&e, RunSpecError::Content(m) if m.contains("ranges")), "{e}");
        let e = RunSpec::from_json(r#"{"version":1,"verbos":true}"#).unwrap_err();
        assert!(matches!(&e, RunSpecError::Content(m) if m.contains("verbos")), "{e}");
        let e = RunSpec::from_json(r#"{"version":1,"counters":{"metrics":[],"replay_mode":"app"}}"#).unwrap_err();
        assert!(e.to_string().contains("replay_mode must be one of"), "{e}");
        let e = RunSpec::from_json(r#"{"version":1,"kernel_trace":"parallel"}"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("kernel_trace must be one of 'concurrent', 'serial'"),
            "{e}"
        );
        let e = RunSpec::from_json(r#"{"version":1,"graph_trace":"all"}"#).unwrap_err();
        assert!(
            e.to_string().contains("graph_trace must be one of 'graph', 'nodes'"),
            "{e}"
        );
        assert_eq!(
            RunSpec::output_of_invalid(r#"{"version":2,"output":"/x"}"#),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(RunSpec::output_of_invalid(r#"{"version":2}"#), None);
    }
}
