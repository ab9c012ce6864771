//! `replay_mode`, `cache_control`, `clock_control`, `l2_flush`, `kernel_trace` and
//! `graph_trace` are each parsed in exactly one place, `crates/kprof/src/choices.rs` (their
//! `FromStr`); every other crate and the Python package go through it (`kprof._core.parse_choice` from Python). A Rust match arm on one of
//! their values, or a Python tuple of accepted values, anywhere else in `crates/*/src` or
//! `python/kprof` fails this test (logic on an already parsed value, `clock == "base"`, is fine).

use std::path::{Path, PathBuf};

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
    // What parsing a value looks like: a match arm on it, or an equality test against it.
    let values = [
        "kernel",
        "range",
        "user",
        "application",
        "all",
        "none",
        "base",
        "read",
        "discard",
        "write",
        "concurrent",
        "serial",
        "graph",
        "nodes",
    ];
    let mut offenders = Vec::new();
    for f in &files {
        if f.ends_with("choices.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let is_py = f.extension().is_some_and(|x| x == "py");
            let code = if is_py {
                line.split('#').next().unwrap_or("")
            } else {
                line.split("//").next().unwrap_or("")
            };
            for v in values {
                let q = format!("\"{v}\"");
                // A Rust match arm, or a Python tuple of accepted values (`("all", "none")`).
                let parses = if is_py {
                    code.contains(&format!("({q},")) || code.contains(&format!(", {q})"))
                } else {
                    code.contains(&format!("{q} =>")) || code.contains(&format!("{q} |"))
                };
                let about_choices = [
                    "replay", "cache", "clock", "Replay", "Cache", "Clock", "flush", "Flush", "trace", "Trace",
                ]
                .iter()
                .any(|w| code.contains(w) || lines[i.saturating_sub(3)..i].iter().any(|l| l.contains(w)));
                if parses && about_choices {
                    offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "parse these options with kprof::choices (one FromStr each):\n{}",
        offenders.join("\n")
    );
    // The one parser is there.
    let choices = std::fs::read_to_string(root.join("crates/kprof/src/choices.rs")).unwrap();
    for arm in [
        "\"application\" => Ok(ReplayMode::Application)",
        "\"all\" => Ok(CacheControl::All)",
        "\"base\" => Ok(ClockControl::Base)",
        "\"discard\" => Ok(L2Flush::Discard)",
        "\"serial\" => Ok(KernelTrace::Serial)",
        "\"nodes\" => Ok(GraphTrace::Nodes)",
    ] {
        assert!(choices.contains(arm), "{arm}");
    }
}
