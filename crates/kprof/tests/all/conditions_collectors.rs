//! Info collectors: scopes, contexts, validation, failures, attaching values to samples.

use std::sync::{Arc, Mutex};

use kprof::conditions::collectors::*;
use kprof::conditions::ConditionsError;
use kprof::core::{Config, DeviceInfo, ExtraValue, ParamValue, RawResults, SampleRecord, DEFAULT_METRIC};

fn params() -> Vec<String> {
    vec!["n".into(), "dtype".into()]
}

fn names_err(names: &[&str]) -> ConditionsError {
    validate_names(names, &params()).unwrap_err()
}

#[test]
fn validation_rejects_with_clear_errors() {
    assert!(validate_names(&["driver", "sm_clock", "temp"], &params()).is_ok());
    let e = names_err(&["a", "b", "a"]);
    assert!(
        matches!(e, ConditionsError::DuplicateCollector(ref n) if n == "a"),
        "{e}"
    );
    assert!(e.to_string().contains("more than one collector"));
    for name in NSIGHT_RESERVED_COLUMN_NAMES {
        let e = names_err(&[name]);
        assert!(e.to_string().contains("nsight-python's reserved"), "{name}: {e}");
    }
    // kprof's own columns, each refused with what it is.
    let own: [(&[&str], &str); 3] = [
        (
            &["Benchmark", "Run", "Median", "BootstrapMean_Lower"],
            "kprof's result tables",
        ),
        (
            &[
                "SMClockMHz",
                "Throttled",
                "ThrottledRuns",
                "ThermalWaitS",
                "EnergyMilliJ",
            ],
            "run-condition column",
        ),
        (
            &[
                "Warning",
                "DeviceOrdinal",
                "DriverVersion",
                "CudaVersion",
                "CuptiVersion",
            ],
            "engine writes",
        ),
    ];
    for (names, why) in own {
        for name in names {
            assert!(names_err(&[name]).to_string().contains(why), "{name}");
        }
    }
    assert!(names_err(&["SMClockMHz_Avg"]).to_string().contains("aggregate _Avg"));
    let e = names_err(&["n"]);
    assert!(
        matches!(e, ConditionsError::CollectorParamCollision(ref n) if n == "n"),
        "{e}"
    );
    assert!(e.to_string().contains("parameter"));
    let e = names_err(&["temp", "temp_Max"]);
    assert!(
        e.to_string()
            .contains("aggregate _Max column of the collector \"temp\""),
        "{e}"
    );
    assert!(matches!(names_err(&[" "]), ConditionsError::EmptyCollectorName));
    assert!(names_err(&["_config"]).to_string().contains("configuration index"));
    // The list of reserved names is what the check refuses.
    let reserved = reserved_names();
    assert!(reserved.len() > 40 && reserved.contains(&"SMClockMHz") && reserved.contains(&"_config"));
    for name in reserved {
        assert!(reserved_reason(name).is_some(), "{name}");
    }
    // Not reserved: a similar but different name, other case.
    assert!(validate_names(&["value", "Value2", "SMClock"], &params()).is_ok());
}

#[test]
fn collector_set_validates_on_construction() {
    let cs = vec![
        FnCollector::new("x", CollectionScope::Run, |_| 1.0).boxed(),
        FnCollector::new("GPU", CollectionScope::Once, |_| "h").boxed(),
    ];
    let err = CollectorSet::new(cs, &params()).unwrap_err();
    assert!(err.to_string().contains("\"GPU\" is reserved"), "{err}");
}

/// Collectors `o`, `c`, `r`, `a`, one per scope, made by `mk`.
fn one_per_scope(mk: impl Fn(&'static str, CollectionScope) -> Box<dyn InfoCollector>) -> CollectorSet {
    let scopes = [
        ("o", CollectionScope::Once),
        ("c", CollectionScope::Config),
        ("r", CollectionScope::Run),
        ("a", CollectionScope::Annotation),
    ];
    CollectorSet::new(scopes.into_iter().map(|(n, s)| mk(n, s)).collect(), &params()).unwrap()
}

#[test]
fn scopes_are_called_at_their_points_with_their_context() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let mk = |name: &'static str, scope: CollectionScope| {
        let log = log.clone();
        FnCollector::new(name, scope, move |ctx: &CollectContext<'_>| {
            let desc = format!(
                "{name}:{}:{}:{}:{}:{}",
                ctx.scope.unwrap(),
                ctx.config.map(|c| c.to_string()).unwrap_or_default(),
                ctx.config_index.map(|i| i.to_string()).unwrap_or_default(),
                ctx.run.map(|r| r.to_string()).unwrap_or_default(),
                ctx.annotation.unwrap_or_default()
            );
            log.lock().unwrap().push(desc);
            match ctx.config.and_then(|c| c.get("n")) {
                Some(ParamValue::Int(n)) => ExtraValue::Number(*n as f64 + ctx.run.unwrap_or(0) as f64),
                _ => ExtraValue::Text("once".into()),
            }
        })
        .boxed()
    };
    let mut set = one_per_scope(mk);
    assert_eq!(set.len(), 4);
    assert_eq!(set.names(), vec!["o", "c", "r", "a"]);
    assert!(set.has_scope(CollectionScope::Annotation));
    let cfg = Config::new().with("n", 10).with("dtype", "fp16");
    assert_eq!(
        set.collect_once(),
        vec![("o".to_string(), ExtraValue::Text("once".into()))]
    );
    assert_eq!(
        set.collect_config(0, &cfg),
        vec![("c".to_string(), ExtraValue::Number(10.0))]
    );
    assert_eq!(
        set.collect_run(0, &cfg, 2),
        vec![("r".to_string(), ExtraValue::Number(12.0))]
    );
    assert_eq!(
        set.collect_annotation("matmul", 0, &cfg, 3),
        vec![("a".to_string(), ExtraValue::Number(13.0))]
    );
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "o:once::::",
            "c:config:n=10, dtype=fp16:0::",
            "r:run:n=10, dtype=fp16:0:2:",
            "a:annotation:n=10, dtype=fp16:0:3:matmul",
        ]
    );
    assert!(set.take_warnings().is_empty());
    assert!(CollectorSet::<ExtraValue>::empty().collect_once().is_empty());
}

#[test]
fn failures_give_missing_and_one_warning_per_scope_and_name() {
    let mut set = CollectorSet::new(
        vec![
            FnCollector::fallible("bad", CollectionScope::Run, |ctx| {
                if ctx.run == Some(1) {
                    Ok(5.0)
                } else {
                    Err("sensor offline")
                }
            })
            .boxed(),
            FnCollector::new("boom", CollectionScope::Run, |_| -> f64 {
                panic!("collector exploded")
            })
            .boxed(),
            FnCollector::new("fine", CollectionScope::Run, |_| Some(1u32)).boxed(),
            FnCollector::new("none", CollectionScope::Run, |_| Option::<f64>::None).boxed(),
        ],
        &params(),
    )
    .unwrap();
    let cfg = Config::new().with("n", 1);
    let v0 = set.collect_run(0, &cfg, 0);
    assert_eq!(
        v0,
        vec![
            ("bad".to_string(), ExtraValue::Missing),
            ("boom".to_string(), ExtraValue::Missing),
            ("fine".to_string(), ExtraValue::Number(1.0)),
            ("none".to_string(), ExtraValue::Missing),
        ]
    );
    let w = set.take_warnings();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("\"bad\"") && w[0].contains("sensor offline") && w[0].contains("scope run"),
        "{}",
        w[0]
    );
    assert!(w[1].contains("collector exploded"), "{}", w[1]);
    assert_eq!(set.collect_run(0, &cfg, 1)[0].1, ExtraValue::Number(5.0));
    set.collect_run(0, &cfg, 2);
    assert!(
        set.take_warnings().is_empty(),
        "one warning per (scope, name) per session"
    );
}

#[test]
fn value_conversions() {
    assert_eq!(true.into_extra(), ExtraValue::Number(1.0));
    assert_eq!(3i32.into_extra(), ExtraValue::Number(3.0));
    assert_eq!("580.x".into_extra(), ExtraValue::Text("580.x".into()));
    assert_eq!(String::from("a").into_extra(), ExtraValue::Text("a".into()));
    assert_eq!(None::<i64>.into_extra(), ExtraValue::Missing);
}

#[test]
fn scope_strings() {
    for s in CollectionScope::ALL {
        assert_eq!(s.as_str().parse::<CollectionScope>().unwrap(), s);
        assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
    }
    assert_eq!("RUN".parse::<CollectionScope>().unwrap(), CollectionScope::Run);
    let e = "always".parse::<CollectionScope>().unwrap_err();
    assert!(e.to_string().contains("\"annotation\""), "{e}");
}

#[test]
fn collected_values_attach_to_samples_by_scope() {
    let mut set = CollectorSet::new(
        vec![
            FnCollector::new("driver", CollectionScope::Once, |_| "580.159.04").boxed(),
            FnCollector::new("size", CollectionScope::Config, |ctx| {
                ctx.config.and_then(|c| c.get("n")).and_then(ParamValue::as_f64)
            })
            .boxed(),
            FnCollector::new("sm_clock", CollectionScope::Run, |ctx| 1900.0 + ctx.run.unwrap() as f64).boxed(),
            FnCollector::new("where", CollectionScope::Annotation, |ctx| {
                ctx.annotation.unwrap().to_uppercase()
            })
            .boxed(),
        ],
        &params(),
    )
    .unwrap();
    let configs = [Config::new().with("n", 1024), Config::new().with("n", 4096)];
    let mut values = CollectedValues::new();
    values.set_once(set.collect_once());
    let mut raw = RawResults::new();
    let dev = DeviceInfo::default();
    for (ci, cfg) in configs.iter().enumerate() {
        let ci = ci as u32;
        values.set_config(ci, set.collect_config(ci as usize, cfg));
        for run in 0..2 {
            values.set_run(ci, run, set.collect_run(ci as usize, cfg, run));
            for ann in ["a", "b"] {
                values.set_annotation(ci, run, ann, set.collect_annotation(ann, ci as usize, cfg, run));
                let extras = values.extras_for(ci, run, ann);
                let names: Vec<&str> = extras.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, ["driver", "size", "sm_clock", "where"]);
                let extras: Vec<(&str, ExtraValue)> = extras.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
                raw.push(&SampleRecord {
                    benchmark: "b",
                    annotation: ann,
                    config: cfg,
                    run,
                    metric: DEFAULT_METRIC,
                    value: 1.0,
                    unit: "ns",
                    kernel: "k",
                    device: &dev,
                    extras: &extras,
                })
                .unwrap();
            }
        }
    }
    let col = |name: &str| raw.extras.iter().find(|c| c.name == name).unwrap().values.clone();
    assert!(col("driver")
        .iter()
        .all(|v| *v == ExtraValue::Text("580.159.04".into())));
    let size: Vec<ExtraValue> = [1024.0, 1024.0, 1024.0, 1024.0, 4096.0, 4096.0, 4096.0, 4096.0]
        .map(ExtraValue::Number)
        .to_vec();
    assert_eq!(col("size"), size);
    let clock: Vec<ExtraValue> = [1900.0, 1900.0, 1901.0, 1901.0, 1900.0, 1900.0, 1901.0, 1901.0]
        .map(ExtraValue::Number)
        .to_vec();
    assert_eq!(col("sm_clock"), clock);
    assert_eq!(
        col("where")[..2],
        [ExtraValue::Text("A".into()), ExtraValue::Text("B".into())]
    );
    // A sample of an unknown run gets only once- and config-values.
    assert_eq!(values.extras_for(0, 9, "a").len(), 2);
}

/// A session calls each scope at its point: once at the start, config collectors at a
/// configuration's first run (a warm-up too), run collectors before measured runs only,
/// annotation collectors when told; the values are found per sample by column.
/// A collector (the trait itself) that logs where it is called and returns that place.
struct Probe {
    name: &'static str,
    scope: CollectionScope,
    log: Arc<Mutex<Vec<String>>>,
}

impl InfoCollector for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn scope(&self) -> CollectionScope {
        self.scope
    }
    fn collect(&mut self, ctx: &CollectContext<'_>) -> Result<ExtraValue, String> {
        let mut at = self.name.to_string();
        if let Some(i) = ctx.config_index {
            at += &format!(" c{i}");
        }
        if let Some(r) = ctx.run {
            at += &format!(" r{r}");
        }
        self.log.lock().unwrap().push(at.clone());
        Ok(ExtraValue::Text(at))
    }
}

#[test]
fn a_session_calls_each_scope_at_its_point() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let set = one_per_scope(|name, scope| {
        Box::new(Probe {
            name,
            scope,
            log: log.clone(),
        })
    });
    let cfg = [Config::new().with("n", 1), Config::new().with("n", 2)];
    let mut s = CollectorSession::start(set);
    // Config 0: one warm-up, two measured runs; config 1: one measured run.
    s.before_run(0, &cfg[0], 0, true);
    s.before_run(0, &cfg[0], 0, false);
    s.enter_annotation("mm", 0, &cfg[0], 0);
    s.before_run(0, &cfg[0], 1, false);
    s.before_run(1, &cfg[1], 0, false);
    assert_eq!(
        *log.lock().unwrap(),
        ["o", "c c0", "r c0 r0", "a c0 r0", "r c0 r1", "c c1", "r c1 r0"]
    );
    let text = |v: Option<&ExtraValue>| match v {
        Some(ExtraValue::Text(t)) => t.clone(),
        other => format!("{other:?}"),
    };
    let v = s.values();
    assert_eq!(text(v.get("o", 1, 0, "x")), "o");
    assert_eq!(text(v.get("c", 1, 0, "x")), "c c1");
    assert_eq!(text(v.get("r", 0, 1, "mm")), "r c0 r1");
    assert_eq!(text(v.get("a", 0, 0, "mm")), "a c0 r0");
    assert_eq!(v.get("a", 0, 1, "mm"), None);
    assert_eq!(v.get("nope", 0, 0, "mm"), None);
    assert!(s.take_warnings().is_empty());
    assert_eq!(s.into_set().len(), 4);
}
