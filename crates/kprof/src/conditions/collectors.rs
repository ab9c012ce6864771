//! Info collectors (experimental, as in nsight-python 1.1): user values that become columns. A
//! collector has a name (the column), a [`CollectionScope`] (when it is called) and a callback; a
//! [`CollectorSession`] calls them at their points of a bench call and keeps their values
//! ([`CollectedValues`]) to attach to samples, for the runner and for the Python package alike
//! (sessions are generic over the value, [`CollectedValue`]). Names are checked before profiling
//! ([`validate_names`]). What users see: `docs/python-differences.md` (info collectors).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;

use kprof_core::columns::CONFIG_INDEX_COLUMN;
use kprof_core::{Config, ExtraValue};

use super::sampler::{CONDITION_COLUMNS, THROTTLED_RUNS_COLUMN};
use super::ConditionsError;

/// nsight-python's `RESERVED_COLUMN_NAMES` (kprof-core's list).
pub use kprof_core::columns::NSIGHT_RESERVED_COLUMN_NAMES;

/// Columns kprof writes beyond nsight-python's (besides [`CONDITION_COLUMNS`] and
/// `ThrottledRuns`; kprof-core's list).
pub use kprof_core::columns::KPROF_RESERVED_COLUMN_NAMES;

/// Suffixes kprof-core's aggregation appends to numeric extra columns.
pub use kprof_core::columns::AGGREGATE_SUFFIXES;

/// When a collector is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CollectionScope {
    /// Once per session, without arguments.
    Once,
    /// Once per configuration, with the configuration.
    Config,
    /// Before every run, with the configuration and the run index.
    Run,
    /// On every annotation enter, before the region starts, with the annotation name, the
    /// configuration and the run index.
    Annotation,
}

impl CollectionScope {
    /// All scopes, in calling order.
    pub const ALL: [CollectionScope; 4] = [
        CollectionScope::Once,
        CollectionScope::Config,
        CollectionScope::Run,
        CollectionScope::Annotation,
    ];

    /// `once`, `config`, `run`, `annotation` (nsight-python's values).
    pub fn as_str(self) -> &'static str {
        match self {
            CollectionScope::Once => "once",
            CollectionScope::Config => "config",
            CollectionScope::Run => "run",
            CollectionScope::Annotation => "annotation",
        }
    }
}

impl FromStr for CollectionScope {
    type Err = ConditionsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "once" => Ok(CollectionScope::Once),
            "config" => Ok(CollectionScope::Config),
            "run" => Ok(CollectionScope::Run),
            "annotation" => Ok(CollectionScope::Annotation),
            _ => Err(ConditionsError::UnknownScope(s.to_string())),
        }
    }
}

impl fmt::Display for CollectionScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a collector is called with. Fields not given by the scope are `None`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CollectContext<'a> {
    /// The scope of this call.
    pub scope: Option<CollectionScope>,
    /// The configuration (config, run and annotation scopes).
    pub config: Option<&'a Config>,
    /// The configuration's index in the bench call's list (config, run and annotation scopes).
    pub config_index: Option<usize>,
    /// The run index (run and annotation scopes).
    pub run: Option<u32>,
    /// The annotation being entered (annotation scope).
    pub annotation: Option<&'a str>,
}

/// A value collectors give: [`ExtraValue`] in the engine; the Python package keeps its own
/// objects.
pub trait CollectedValue: Clone + Send {
    /// The value of a collector that failed.
    fn missing() -> Self;
}

impl CollectedValue for ExtraValue {
    fn missing() -> Self {
        ExtraValue::Missing
    }
}

/// A user value source.
pub trait InfoCollector<V = ExtraValue>: Send {
    /// Column name.
    fn name(&self) -> &str;
    /// When it is called.
    fn scope(&self) -> CollectionScope;
    /// The value; `Err` (or a panic) gives a missing value and one warning.
    fn collect(&mut self, ctx: &CollectContext<'_>) -> Result<V, String>;
}

/// Values a collector callback may return.
pub trait IntoExtraValue {
    /// The column value.
    fn into_extra(self) -> ExtraValue;
}

impl IntoExtraValue for ExtraValue {
    fn into_extra(self) -> ExtraValue {
        self
    }
}
macro_rules! number_into_extra {
    ($($t:ty),*) => {$(
        impl IntoExtraValue for $t {
            fn into_extra(self) -> ExtraValue { ExtraValue::Number(self as f64) }
        }
    )*};
}
number_into_extra!(f64, f32, i64, i32, u64, u32, usize);
impl IntoExtraValue for bool {
    /// 1 or 0, so that it aggregates like pandas' booleans.
    fn into_extra(self) -> ExtraValue {
        ExtraValue::Number(if self { 1.0 } else { 0.0 })
    }
}
impl IntoExtraValue for String {
    fn into_extra(self) -> ExtraValue {
        ExtraValue::Text(self)
    }
}
impl IntoExtraValue for &str {
    fn into_extra(self) -> ExtraValue {
        ExtraValue::Text(self.to_string())
    }
}
impl<T: IntoExtraValue> IntoExtraValue for Option<T> {
    fn into_extra(self) -> ExtraValue {
        self.map(IntoExtraValue::into_extra).unwrap_or(ExtraValue::Missing)
    }
}

type Callback = Box<dyn FnMut(&CollectContext<'_>) -> Result<ExtraValue, String> + Send>;

/// A collector made of a name, a scope and a closure (nsight's `(name, callback, scope)`).
pub struct FnCollector {
    name: String,
    scope: CollectionScope,
    callback: Callback,
}

impl fmt::Debug for FnCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnCollector")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl FnCollector {
    /// A collector whose closure returns a value (number, text, bool, `Option`, `ExtraValue`).
    pub fn new<T, F>(name: impl Into<String>, scope: CollectionScope, mut f: F) -> Self
    where
        T: IntoExtraValue,
        F: FnMut(&CollectContext<'_>) -> T + Send + 'static,
    {
        FnCollector {
            name: name.into(),
            scope,
            callback: Box::new(move |ctx| Ok(f(ctx).into_extra())),
        }
    }

    /// A collector whose closure can fail.
    pub fn fallible<T, E, F>(name: impl Into<String>, scope: CollectionScope, mut f: F) -> Self
    where
        T: IntoExtraValue,
        E: fmt::Display,
        F: FnMut(&CollectContext<'_>) -> Result<T, E> + Send + 'static,
    {
        FnCollector {
            name: name.into(),
            scope,
            callback: Box::new(move |ctx| f(ctx).map(IntoExtraValue::into_extra).map_err(|e| e.to_string())),
        }
    }

    /// Boxed, for [`CollectorSet::new`].
    pub fn boxed(self) -> Box<dyn InfoCollector> {
        Box::new(self)
    }
}

impl InfoCollector for FnCollector {
    fn name(&self) -> &str {
        &self.name
    }
    fn scope(&self) -> CollectionScope {
        self.scope
    }
    fn collect(&mut self, ctx: &CollectContext<'_>) -> Result<ExtraValue, String> {
        (self.callback)(ctx)
    }
}

/// The names no collector may take (besides the aggregates of the run-condition columns, see
/// [`reserved_reason`]): nsight-python's columns, kprof's ([`KPROF_RESERVED_COLUMN_NAMES`]), the
/// engine's extra columns (run information, run conditions), `ThrottledRuns` and the Python
/// tables' configuration index.
pub fn reserved_names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let all = NSIGHT_RESERVED_COLUMN_NAMES
        .iter()
        .chain(&KPROF_RESERVED_COLUMN_NAMES)
        .chain(&kprof_core::columns::KPROF_EXTRA_COLUMNS)
        .chain([&THROTTLED_RUNS_COLUMN, &CONFIG_INDEX_COLUMN]);
    for name in all {
        if !out.contains(name) {
            out.push(name);
        }
    }
    out
}

/// Why `name` is reserved, if it is.
pub fn reserved_reason(name: &str) -> Option<String> {
    if NSIGHT_RESERVED_COLUMN_NAMES.contains(&name) {
        return Some("one of nsight-python's reserved column names".into());
    }
    if KPROF_RESERVED_COLUMN_NAMES.contains(&name) {
        return Some("a column of kprof's result tables".into());
    }
    if CONDITION_COLUMNS.contains(&name) || name == THROTTLED_RUNS_COLUMN {
        return Some("a run-condition column kprof measures itself".into());
    }
    if kprof_core::columns::ENGINE_INFO_COLUMNS.contains(&name) {
        return Some("a column kprof's engine writes itself".into());
    }
    if name == CONFIG_INDEX_COLUMN {
        return Some("the configuration index column of the Python package's raw tables".into());
    }
    for suffix in AGGREGATE_SUFFIXES {
        if let Some(base) = name.strip_suffix(suffix) {
            if CONDITION_COLUMNS.contains(&base) || base == THROTTLED_RUNS_COLUMN {
                return Some(format!("the aggregate {suffix} of kprof's run-condition column {base}"));
            }
        }
    }
    None
}

/// Checks collector names: non-empty, unique, not reserved ([`reserved_reason`]), not a
/// parameter name, and not another collector's aggregate column (`x` and `x_Avg`).
pub fn validate_names(names: &[&str], param_names: &[String]) -> Result<(), ConditionsError> {
    let mut seen = HashSet::new();
    for &name in names {
        if name.trim().is_empty() {
            return Err(ConditionsError::EmptyCollectorName);
        }
        if !seen.insert(name) {
            return Err(ConditionsError::DuplicateCollector(name.to_string()));
        }
        if let Some(why) = reserved_reason(name) {
            return Err(ConditionsError::ReservedCollectorName {
                name: name.to_string(),
                why,
            });
        }
        if param_names.iter().any(|p| p == name) {
            return Err(ConditionsError::CollectorParamCollision(name.to_string()));
        }
    }
    for &name in names {
        for suffix in AGGREGATE_SUFFIXES {
            if let Some(base) = name.strip_suffix(suffix) {
                if seen.contains(base) {
                    return Err(ConditionsError::ReservedCollectorName {
                        name: name.to_string(),
                        why: format!("the aggregate {suffix} column of the collector {base:?}"),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The validated collectors of a benchmark, with the per-(scope, name) warning memory.
pub struct CollectorSet<V = ExtraValue> {
    collectors: Vec<Box<dyn InfoCollector<V>>>,
    warned: HashSet<(CollectionScope, String)>,
    warnings: Vec<String>,
}

impl<V> fmt::Debug for CollectorSet<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.collectors.iter().map(|c| c.name()).collect();
        f.debug_struct("CollectorSet")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl<V: CollectedValue> CollectorSet<V> {
    /// Validates the names against each other and the benchmark's parameter names.
    pub fn new(collectors: Vec<Box<dyn InfoCollector<V>>>, param_names: &[String]) -> Result<Self, ConditionsError> {
        let names: Vec<&str> = collectors.iter().map(|c| c.name()).collect();
        validate_names(&names, param_names)?;
        Ok(CollectorSet {
            collectors,
            warned: HashSet::new(),
            warnings: Vec::new(),
        })
    }

    /// No collectors.
    pub fn empty() -> Self {
        CollectorSet {
            collectors: Vec::new(),
            warned: HashSet::new(),
            warnings: Vec::new(),
        }
    }

    /// Number of collectors.
    pub fn len(&self) -> usize {
        self.collectors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.collectors.is_empty()
    }

    /// Collector names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.collectors.iter().map(|c| c.name()).collect()
    }

    /// Whether any collector has this scope.
    pub fn has_scope(&self, scope: CollectionScope) -> bool {
        self.collectors.iter().any(|c| c.scope() == scope)
    }

    /// Calls every collector of `scope` with `ctx`, in order, and returns `(name, value)`.
    pub fn collect(&mut self, scope: CollectionScope, ctx: &CollectContext<'_>) -> Vec<(String, V)> {
        let ctx = CollectContext {
            scope: Some(scope),
            ..*ctx
        };
        let mut out = Vec::new();
        for c in self.collectors.iter_mut().filter(|c| c.scope() == scope) {
            // A failing collector (an `Err` or a panic) gives a missing value and one warning per
            // (scope, name) per session; the panic is caught, but Rust's panic hook still prints it.
            let result = match catch_unwind(AssertUnwindSafe(|| c.collect(&ctx))) {
                Ok(r) => r,
                Err(payload) => Err(format!("panicked: {}", panic_message(&payload))),
            };
            let name = c.name().to_string();
            let value = match result {
                Ok(v) => v,
                Err(e) => {
                    if self.warned.insert((scope, name.clone())) {
                        self.warnings.push(format!(
                            "info collector {name:?} (scope {scope}) failed: {e}; its value is missing (further failures of this collector are not reported)"
                        ));
                    }
                    V::missing()
                }
            };
            out.push((name, value));
        }
        out
    }

    /// Once per session.
    pub fn collect_once(&mut self) -> Vec<(String, V)> {
        self.collect(CollectionScope::Once, &CollectContext::default())
    }

    /// Once per configuration (`config_index`: its index in the bench call's list).
    pub fn collect_config(&mut self, config_index: usize, config: &Config) -> Vec<(String, V)> {
        self.collect(
            CollectionScope::Config,
            &CollectContext {
                config: Some(config),
                config_index: Some(config_index),
                ..Default::default()
            },
        )
    }

    /// Before every run.
    pub fn collect_run(&mut self, config_index: usize, config: &Config, run: u32) -> Vec<(String, V)> {
        self.collect(
            CollectionScope::Run,
            &CollectContext {
                config: Some(config),
                config_index: Some(config_index),
                run: Some(run),
                ..Default::default()
            },
        )
    }

    /// On every annotation enter, before the region starts.
    pub fn collect_annotation(
        &mut self,
        annotation: &str,
        config_index: usize,
        config: &Config,
        run: u32,
    ) -> Vec<(String, V)> {
        self.collect(
            CollectionScope::Annotation,
            &CollectContext {
                scope: None,
                config: Some(config),
                config_index: Some(config_index),
                run: Some(run),
                annotation: Some(annotation),
            },
        )
    }

    /// The collectors, to use them again.
    pub fn into_collectors(self) -> Vec<Box<dyn InfoCollector<V>>> {
        self.collectors
    }

    /// Warnings produced since the last call (each failing (scope, name) once per session).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// The collectors of one bench call at work: calls each scope at its point and keeps the values
/// ([`CollectedValues`]). The points, for every driver of a bench call (the runner, the Python
/// package's backend loop):
/// - [`CollectorSession::start`]: the once-collectors;
/// - [`CollectorSession::before_run`], before every run of a configuration (warm-ups included):
///   its config collectors at its first run, the run collectors before every measured run;
/// - [`CollectorSession::enter_annotation`], on every annotation enter of a measured run.
pub struct CollectorSession<V = ExtraValue> {
    set: CollectorSet<V>,
    values: CollectedValues<V>,
    configs_seen: HashSet<usize>,
}

impl<V> fmt::Debug for CollectorSession<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectorSession")
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl<V: CollectedValue> CollectorSession<V> {
    /// Starts a bench call's session: calls the once-collectors.
    pub fn start(mut set: CollectorSet<V>) -> Self {
        let mut values = CollectedValues::new();
        values.set_once(set.collect_once());
        CollectorSession {
            set,
            values,
            configs_seen: HashSet::new(),
        }
    }

    /// Before a run of configuration `config_index` (`run`: the measured run's index; ignored
    /// for a warm-up).
    pub fn before_run(&mut self, config_index: usize, config: &Config, run: u32, warmup: bool) {
        if self.configs_seen.insert(config_index) && self.set.has_scope(CollectionScope::Config) {
            let v = self.set.collect_config(config_index, config);
            self.values.set_config(config_index as u32, v);
        }
        if !warmup && self.set.has_scope(CollectionScope::Run) {
            let v = self.set.collect_run(config_index, config, run);
            self.values.set_run(config_index as u32, run, v);
        }
    }

    /// On an annotation enter of measured run `run` of configuration `config_index`.
    pub fn enter_annotation(&mut self, annotation: &str, config_index: usize, config: &Config, run: u32) {
        if self.set.has_scope(CollectionScope::Annotation) {
            let v = self.set.collect_annotation(annotation, config_index, config, run);
            self.values.set_annotation(config_index as u32, run, annotation, v);
        }
    }

    /// Whether any collector has this scope.
    pub fn has_scope(&self, scope: CollectionScope) -> bool {
        self.set.has_scope(scope)
    }

    /// The values collected so far.
    pub fn values(&self) -> &CollectedValues<V> {
        &self.values
    }

    /// The values, to add more of the same keys (the runner's run conditions).
    pub fn values_mut(&mut self) -> &mut CollectedValues<V> {
        &mut self.values
    }

    /// Warnings of failed collectors since the last call ([`CollectorSet::take_warnings`]).
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.set.take_warnings()
    }

    /// Ends the session: the collectors, to use them again.
    pub fn into_set(self) -> CollectorSet<V> {
        self.set
    }
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic".into()
    }
}

/// The collected values of a session, keyed by where they apply, so the runner can attach them
/// to each sample: once-values to every sample, config values to the samples of that
/// configuration, run values to that run, annotation values to that annotation in that run
/// (the last enter wins when a region is entered several times in one run). Configurations
/// are identified by the runner's own index.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectedValues<V = ExtraValue> {
    once: Vec<(String, V)>,
    config: HashMap<u32, Vec<(String, V)>>,
    run: HashMap<(u32, u32), Vec<(String, V)>>,
    annotation: HashMap<(u32, u32, String), Vec<(String, V)>>,
}

impl<V> Default for CollectedValues<V> {
    fn default() -> Self {
        CollectedValues {
            once: Vec::new(),
            config: HashMap::new(),
            run: HashMap::new(),
            annotation: HashMap::new(),
        }
    }
}

impl<V: Clone> CollectedValues<V> {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores the once-values.
    pub fn set_once(&mut self, values: Vec<(String, V)>) {
        self.once = values;
    }

    /// Stores a configuration's values.
    pub fn set_config(&mut self, config: u32, values: Vec<(String, V)>) {
        self.config.insert(config, values);
    }

    /// Stores a run's values.
    pub fn set_run(&mut self, config: u32, run: u32, values: Vec<(String, V)>) {
        self.run.insert((config, run), values);
    }

    /// Stores an annotation enter's values.
    pub fn set_annotation(&mut self, config: u32, run: u32, annotation: &str, values: Vec<(String, V)>) {
        self.annotation.insert((config, run, annotation.to_string()), values);
    }

    /// A run's values, as stored.
    pub fn run_values(&self, config: u32, run: u32) -> Vec<(String, V)> {
        self.run.get(&(config, run)).cloned().unwrap_or_default()
    }

    /// The scopes' values that apply to a sample of `annotation` in `run` of `config`: once,
    /// config, run, annotation values, in that order.
    fn applying(&self, config: u32, run: u32, annotation: &str) -> impl Iterator<Item = &(String, V)> {
        self.once
            .iter()
            .chain(self.config.get(&config).into_iter().flatten())
            .chain(self.run.get(&(config, run)).into_iter().flatten())
            .chain(
                self.annotation
                    .get(&(config, run, annotation.to_string()))
                    .into_iter()
                    .flatten(),
            )
    }

    /// Every value that applies to a sample of `annotation` in `run` of `config`: once, config,
    /// run, annotation values, in that order.
    pub fn extras_for(&self, config: u32, run: u32, annotation: &str) -> Vec<(String, V)> {
        self.applying(config, run, annotation).cloned().collect()
    }

    /// The value of column `name` for a sample of `annotation` in `run` of `config`, if one
    /// applies.
    pub fn get(&self, name: &str, config: u32, run: u32, annotation: &str) -> Option<&V> {
        self.applying(config, run, annotation)
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}
