//! Library code warns through the `log` facade or the results' warnings,
//! never straight to stderr/stdout. Scans the library sources of kprof, kprof-core and
//! kprof-plot (test modules excluded); a print must be preceded by a `// stderr:` comment
//! saying why it is the only channel (the ncu child's exit message).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn library_code_does_not_print() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in ["kprof/src", "kprof-core/src", "kprof-plot/src"] {
        rust_files(&crates.join(c), &mut files);
    }
    assert!(files.len() > 20, "{files:?}");
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lib_part = text.split("#[cfg(test)]").next().unwrap_or("");
        let lines: Vec<&str> = lib_part.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let prints = ["eprintln!(", "println!(", "eprint!(", " print!("]
                .iter()
                .any(|m| code.contains(m))
                || code.starts_with("print!(");
            let justified = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with("//"))
                .any(|l| l.contains("// stderr:"));
            if prints && !justified {
                found.push(format!("{}:{}: {}", f.display(), i + 1, code));
            }
        }
    }
    assert!(found.is_empty(), "library code prints:\n{}", found.join("\n"));
}
