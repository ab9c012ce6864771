//! Each option with choices (`kprof::choices::CHOICE_OPTIONS`: `replay_mode`, `cache_control`,
//! `clock_control`, `l2_flush`, `kernel_trace`, `graph_trace`, `attribution`, `order`,
//! `duration_source`, `backend`, `thermal_mode`) is parsed in exactly one place,
//! `crates/kprof/src/choices.rs` and `choices/` (their `FromStr`); every other crate and the
//! Python package go through it (`kprof._core.parse_choice` from Python). A Rust match arm on one
//! of their values or an equality test against one, or a Python tuple of accepted values, near a
//! word of the option's name anywhere else in `crates/*/src` or `python/kprof` fails this test
//! (Python logic on an already parsed value, `backend == "ncu"`, is fine).

use std::path::{Path, PathBuf};

use kprof::choices::CHOICE_OPTIONS;

/// Known places that compare a choice's value outside its enum, each with its reason.
const KNOWN: &[(&str, &str, &str)] = &[(
    "crates/kprof-core/src/durations.rs",
    "duration_source",
    "the DurationSource column's values read back from result files (kprof-core does not depend on the engine)",
)];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if matches!(p.extension().and_then(|x| x.to_str()), Some("rs" | "py")) {
            out.push(p);
        }
    }
}

#[test]
fn each_option_with_choices_has_one_parser() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for d in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let src = d.path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    sources(&root.join("python/kprof"), &mut files);
    // What parsing a value looks like: a match arm on it, or an equality test against it, near a
    // word of its option's name.
    let mut values: Vec<(&str, &str)> = CHOICE_OPTIONS
        .iter()
        .flat_map(|(option, names)| names.iter().map(move |n| (*option, *n)))
        .collect();
    values.push(("replay_mode", "user"));
    let mut offenders = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let rel = rel.trim_start_matches("./").to_string();
        // The one parsers, and tests (which assert values, parse nothing).
        let test = rel.contains("/tests/") || rel.ends_with("tests.rs") || rel.contains("/test_");
        if rel.ends_with("kprof/src/choices.rs") || rel.contains("kprof/src/choices/") || test {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let is_py = f.extension().is_some_and(|x| x == "py");
        for (i, line) in lines.iter().enumerate() {
            let code = if is_py {
                line.split('#').next().unwrap_or("")
            } else {
                line.split("//").next().unwrap_or("")
            };
            for (option, v) in &values {
                if KNOWN.iter().any(|(file, o, _)| rel.ends_with(file) && o == option) {
                    continue;
                }
                if parses(code, v, is_py) && near_option(option, code, &lines[i.saturating_sub(3)..i]) {
                    offenders.push(format!("{rel}:{}: {option}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "parse these options with kprof::choices (one FromStr each):\n{}",
        offenders.join("\n")
    );
    // The one parser is there: each choice's row in its enum's `choice_names!` table.
    let choices = std::fs::read_to_string(root.join("crates/kprof/src/choices.rs")).unwrap()
        + &std::fs::read_to_string(root.join("crates/kprof/src/choices/run.rs")).unwrap();
    for (choice, row) in [
        ("ReplayMode", "Application => \"application\""),
        ("CacheControl", "All => \"all\""),
        ("ClockControl", "Base => \"base\""),
        ("L2Flush", "Discard => \"discard\""),
        ("KernelTrace", "Serial => \"serial\""),
        ("GraphTrace", "Nodes => \"nodes\""),
        ("RunOrder", "Sequential => \"sequential\""),
        ("DurationSource", "Counters => \"counters\""),
        ("Backend", "CudaEvents => \"cuda-events\""),
        ("ThermalMode", "Manual => \"manual\""),
    ] {
        let table = choices
            .split_once(&format!("choice_names!({choice}, "))
            .and_then(|(_, rest)| rest.split_once("});"))
            .map(|(table, _)| table)
            .unwrap_or_else(|| panic!("no choice_names! table of {choice}"));
        assert!(table.contains(row), "{choice}: {row}");
    }
}

/// A Rust match arm on `"v"` or an equality test against it; a Python tuple of accepted values.
fn parses(code: &str, v: &str, is_py: bool) -> bool {
    let q = format!("\"{v}\"");
    if is_py {
        code.contains(&format!("({q},")) || code.contains(&format!(", {q})"))
    } else {
        [
            format!("{q} =>"),
            format!("{q} |"),
            format!("== {q}"),
            format!("!= {q}"),
            format!("Some({q})"),
        ]
        .iter()
        .any(|p| code.contains(p.as_str()))
    }
}

/// The line or the three before it name the option (a distinctive word of its name, in any case:
/// `thermal` of `thermal_mode`, `trace` of `kernel_trace`).
fn near_option(option: &str, code: &str, before: &[&str]) -> bool {
    const GENERIC: [&str; 6] = ["mode", "control", "source", "kernel", "graph", "l2"];
    option.split('_').filter(|w| !GENERIC.contains(w)).any(|w| {
        let w = w.to_ascii_lowercase();
        code.to_ascii_lowercase().contains(&w) || before.iter().any(|l| l.to_ascii_lowercase().contains(&w))
    })
}

#[test]
fn a_choice_compared_outside_its_enum_is_found() {
    assert!(parses(
        "        \"sequential\" => RunOrder::Sequential,",
        "sequential",
        false
    ));
    assert!(parses(
        "    let ncu = backend.as_deref() == Some(\"ncu\");",
        "ncu",
        false
    ));
    assert!(parses(
        "_ORDERS = (\"interleaved\", \"sequential\")",
        "interleaved",
        true
    ));
    assert!(!parses("    if backend == \"ncu\":", "ncu", true));
    assert!(near_option("order", "let o = match order {", &[]));
    assert!(near_option("duration_source", "x", &["    // the duration"]));
    assert!(!near_option("backend", "let x = 1;", &["fn f() {"]));
    assert!(!near_option(
        "thermal_mode",
        "\"auto\" => Ok(NcuModeRequest::Auto),",
        &["match mode {"]
    ));
}
