use std::path::PathBuf;

use super::{alias_name, lookup, markdown_table, pyi_choice_aliases, OptionType, OPTIONS};
use crate::choices::{parse_choice, CHOICE_OPTIONS};
use crate::runner::BenchOptions;

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

/// The text between the two marker lines of `rel`; with `UPDATE_OPTION_DOCS=1` set, `want`
/// replaces it first (how the generated sections are refreshed).
fn generated_section(rel: &str, begin: &str, end: &str, want: &str) -> String {
    let path = repo_file(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let (Some(a), Some(b)) = (text.find(begin), text.find(end)) else {
        panic!("{rel} has no section between {begin:?} and {end:?}");
    };
    let start = a + begin.len() + 1;
    if std::env::var_os("UPDATE_OPTION_DOCS").is_some() {
        let updated = format!("{}{want}{}", &text[..start], &text[b..]);
        std::fs::write(&path, updated).unwrap();
        return want.to_string();
    }
    text[start..b].to_string()
}

#[test]
fn every_option_is_listed_once_with_a_default_its_type_accepts() {
    for (i, o) in OPTIONS.iter().enumerate() {
        assert!(!OPTIONS[..i].iter().any(|p| p.name == o.name), "{} twice", o.name);
        assert!(o.python || o.configure || o.rust.is_some(), "{}: no door", o.name);
        assert!(
            !(o.python && o.configure),
            "{}: a bench call's option or a process's",
            o.name
        );
        assert!(
            !o.doc.is_empty() && !o.doc.contains('\n') && !o.doc.contains('|'),
            "{}: one line",
            o.name
        );
        if let OptionType::Choice(names) = o.ty {
            // The choices are the enum's, parsed by its one parser.
            let registered = CHOICE_OPTIONS.iter().find(|(n, _)| *n == o.name);
            assert_eq!(registered.map(|(_, c)| *c), Some(names), "{}", o.name);
            if o.default != "None" {
                let bare = o.default.trim_matches('\'');
                assert_eq!(parse_choice(o.name, bare), Some(Ok(bare)), "{}'s default", o.name);
            }
        }
        if o.default == "None" {
            assert!(o.optional, "{}: default None but not optional", o.name);
        }
    }
    // Every option with choices is in the model.
    for (option, names) in CHOICE_OPTIONS {
        let o = lookup(option).unwrap_or_else(|| panic!("{option} has choices but is not in the model"));
        assert_eq!(o.ty.choices(), *names, "{option}");
    }
    assert_eq!(lookup("duration_source").unwrap().rust, Some("duration"));
    assert!(lookup("executor").unwrap().python_only());
    assert!(lookup("no_such_option").is_none());
}

#[test]
fn overrides_are_registered_variables_and_every_bench_override_has_its_option() {
    for o in OPTIONS {
        if let Some(var) = o.env {
            assert!(
                crate::settings::lookup(var).is_some(),
                "{var} is not in settings::ENV_VARS"
            );
            assert!(o.rust.is_some(), "{}: an override of no Rust field", o.name);
        }
    }
    use crate::overrides::{
        ATTRIBUTION_ENV, COUNTER_PASS_RECORDS_ENV, GRAPH_TRACE_ENV, KERNEL_TRACE_ENV, L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV,
        ONE_PASS_ENV,
    };
    for var in [
        L2_FLUSH_ENV,
        L2_FLUSH_BYTES_ENV,
        COUNTER_PASS_RECORDS_ENV,
        ONE_PASS_ENV,
        KERNEL_TRACE_ENV,
        GRAPH_TRACE_ENV,
        ATTRIBUTION_ENV,
    ] {
        assert!(
            OPTIONS.iter().any(|o| o.env == Some(var)),
            "{var} overrides no option of the model"
        );
    }
}

#[test]
fn the_rust_defaults_are_the_models() {
    let d = BenchOptions::default();
    let rust: &[(&str, String)] = &[
        ("warmup", d.warmup.to_string()),
        ("cache_control", format!("'{}'", d.cache.as_str())),
        ("clock_control", format!("'{}'", d.clock.as_str())),
        ("order", format!("'{}'", d.order.as_str())),
        ("duration_source", format!("'{}'", d.duration.as_str())),
        ("thermal_mode", format!("'{}'", d.thermal.mode.as_str())),
        ("l2_flush", format!("'{}'", d.l2_flush.as_str())),
        (
            "counter_pass_records",
            if d.counter_pass_records { "True" } else { "False" }.into(),
        ),
        ("one_pass", if d.one_pass { "True" } else { "False" }.into()),
        ("ignore_failures", d.ignore_failures.to_string()),
        ("conditions", d.conditions.to_string()),
    ];
    let t = crate::choices::TraceOptions::default();
    let trace = [
        ("kernel_trace", format!("'{}'", t.kernel_trace.as_str())),
        ("attribution", format!("'{}'", t.attribution.as_str())),
        (
            "graph_trace",
            t.graph_trace.map_or("None".into(), |g| format!("'{}'", g.as_str())),
        ),
    ];
    let rust = rust.iter().chain(trace.iter());
    for (name, value) in rust {
        assert_eq!(lookup(name).unwrap().default, value, "{name}");
    }
}

#[test]
fn the_quickstart_options_table_is_the_models() {
    let want = markdown_table();
    for row in want.lines() {
        // Eight cells in every row: no `|` inside one.
        assert_eq!(row.matches('|').count(), 9, "{row}");
    }
    let got = generated_section(
        "docs/quickstart.md",
        "<!-- options table: generated from crates/kprof/src/option_model.rs (UPDATE_OPTION_DOCS=1 cargo test -p kprof option_model) -->",
        "<!-- end of the options table -->",
        &want,
    );
    assert_eq!(got, want, "docs/quickstart.md's options table differs from the model: run UPDATE_OPTION_DOCS=1 cargo test -p kprof option_model");
}

#[test]
fn the_stubs_choice_aliases_are_the_models() {
    let want = pyi_choice_aliases();
    assert!(
        want.contains("DurationSourceName = Literal[\"auto\", \"records\", \"counters\"]\n"),
        "{want}"
    );
    assert_eq!(alias_name("l2_flush"), "L2FlushName");
    let got = generated_section(
        "python/kprof/_core.pyi",
        "# choices: generated from crates/kprof/src/option_model.rs (UPDATE_OPTION_DOCS=1 cargo test -p kprof option_model)",
        "# end of the choices",
        &want,
    );
    assert_eq!(
        got, want,
        "_core.pyi's choice aliases differ from the model: run UPDATE_OPTION_DOCS=1 cargo test -p kprof option_model"
    );
}
