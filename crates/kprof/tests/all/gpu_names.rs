//! No message of the product names a GPU model: a warning or an error is read on whatever GPU
//! the user has, where "on the H200 by up to 3 %" says nothing true. Every string literal of the
//! Rust sources (`crates/*/src`, outside comments and test code) is checked; the Python
//! package's messages are checked by `tests/python/test_messages.py`. Measured values belong in
//! the documentation (docs/timing.md and the others), which may name the GPU they come from.

use std::fs;
use std::path::{Path, PathBuf};

use crate::source_tree::{assert_scan_found, repo_root, rs_files_but};

/// GPU models (not chips: `GH100` names the counters' chip catalog, not a claim about a GPU).
const MODELS: &[&str] = &[
    "H100", "H200", "H800", "H20", "GH200", "A100", "A800", "A10", "A30", "A40", "V100", "B100", "B200", "GB200", "L4",
    "L40", "L40S", "T4", "P100",
];

/// Every `.rs` file under `dir` but test modules kept in their own files (`tests.rs`, `tests/`).
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    rs_files_but(
        dir,
        &|p| p.file_name().is_some_and(|n| n == "tests" || n == "tests.rs"),
        out,
    );
}

/// The source with comments and string literals blanked (same length in chars, newlines kept),
/// and each string literal's text with the char offset where it starts.
fn lex(src: &str) -> (Vec<char>, Vec<(usize, String)>) {
    let s: Vec<char> = src.chars().collect();
    let mut code = s.clone();
    let mut strings = Vec::new();
    let blank = |code: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut code[from..to.min(s.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let (c, next) = (s[i], s.get(i + 1).copied());
        if c == '/' && next == Some('/') {
            let end = s[i..].iter().position(|&c| c == '\n').map_or(s.len(), |p| i + p);
            blank(&mut code, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut code, i, j);
            i = j;
        } else if (c == 'r' || c == 'b') && (i == 0 || !ident(s[i - 1])) && matches!(next, Some('"' | '#' | 'r')) {
            // r"..", r#".."#, b"..", br"..": the prefix, then a raw or plain string.
            let mut j = i + 1;
            let raw = c == 'r' || s.get(j) == Some(&'r');
            if c == 'b' && raw {
                j += 1;
            }
            let hashes = s[j..].iter().take_while(|&&c| c == '#').count();
            if s.get(j + hashes) != Some(&'"') {
                i += 1; // an identifier such as `r#type` or `b`
                continue;
            }
            let start = j + hashes + 1;
            let end = if raw {
                let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                (start..s.len())
                    .find(|&k| s[k..].starts_with(&close))
                    .unwrap_or(s.len())
            } else {
                plain_string_end(&s, start)
            };
            strings.push((start, s[start..end].iter().collect()));
            blank(&mut code, i, end + 1 + hashes);
            i = end + 1 + hashes;
        } else if c == '"' {
            let end = plain_string_end(&s, i + 1);
            strings.push((i + 1, s[i + 1..end].iter().collect()));
            blank(&mut code, i, end + 1);
            i = end + 1;
        } else if c == '\'' && (s.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A char literal ('x', '\n', '\''); otherwise a lifetime.
            let end = if next == Some('\\') {
                i + 3 + s[i + 3..].iter().position(|&c| c == '\'').unwrap_or(0)
            } else {
                i + 2
            };
            blank(&mut code, i, end + 1);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    (code, strings)
}

/// The index of the closing quote of a plain string whose text starts at `start`.
fn plain_string_end(s: &[char], start: usize) -> usize {
    let mut k = start;
    while k < s.len() && s[k] != '"' {
        k += if s[k] == '\\' { 2 } else { 1 };
    }
    k.min(s.len())
}

/// Char ranges of the `#[cfg(test)]` modules of `code` (comments and strings blanked).
fn test_modules(code: &[char]) -> Vec<(usize, usize)> {
    let text: String = code.iter().collect();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("#[cfg(test)]") {
        let at = from + p;
        let rest = text[at + 12..].trim_start();
        from = at + 12;
        if !rest.starts_with("mod ") {
            continue;
        }
        let Some(open) = text[at..].find('{').map(|o| at + o) else {
            break;
        };
        let mut depth = 0;
        let chars: Vec<char> = text.chars().collect();
        let open_c = text[..open].chars().count();
        let mut end = chars.len();
        for (k, &c) in chars.iter().enumerate().skip(open_c) {
            depth += match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            if depth == 0 {
                end = k;
                break;
            }
        }
        out.push((text[..at].chars().count(), end));
    }
    out
}

/// Whether `text` names one of [`MODELS`] as a word.
fn model_in(text: &str) -> Option<&'static str> {
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    MODELS.iter().copied().find(|m| words.contains(m))
}

/// `file:line: model: literal` for every string literal of `src` outside test modules that
/// names a GPU model.
fn offenders(file: &str, src: &str) -> Vec<String> {
    let (code, strings) = lex(src);
    let tests = test_modules(&code);
    let chars: Vec<char> = src.chars().collect();
    strings
        .into_iter()
        .filter(|(at, _)| !tests.iter().any(|(a, b)| (a..=b).contains(&at)))
        .filter_map(|(at, text)| {
            let model = model_in(&text)?;
            let line = chars[..at].iter().filter(|&&c| c == '\n').count() + 1;
            Some(format!(
                "{file}:{line}: {model}: {}",
                text.chars().take(120).collect::<String>()
            ))
        })
        .collect()
}

#[test]
fn no_string_literal_of_the_rust_sources_names_a_gpu_model() {
    let root = repo_root();
    let mut files = Vec::new();
    for c in fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok())
    {
        rs_files(&c.path().join("src"), &mut files);
    }
    assert_scan_found(files.len(), 50, "source files under crates/*/src", &root);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
        found.extend(offenders(&rel, &fs::read_to_string(&f).expect("readable source")));
    }
    assert!(
        found.is_empty(),
        "messages that name a GPU model (say it in general terms, or give the value measured on the device in \
         use; the documentation keeps what was measured where):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_models_in_strings_only_outside_comments_and_test_modules() {
    let src = "// on the H200\nfn f() { warn(\"slower on the H100 by 3 %\"); let r = r#\"an \"A100\" here\"#; }\n\
               /* H200 */ fn g<'a>(x: &'a str) -> char { '\"' }\nconst C: &str = \"GH100 chip, NVIDIA H200X\";\n\
               #[cfg(test)]\nmod tests {\n    const D: &str = \"NVIDIA H200\";\n}\nfn h() { e(\"B200\") }\n";
    let found = offenders("x.rs", src);
    let models: Vec<&str> = found.iter().map(|f| f.split(": ").nth(1).unwrap()).collect();
    assert_eq!(models, ["H100", "A100", "B200"], "{found:?}");
    assert!(found[0].starts_with("x.rs:2:"), "{found:?}");
    assert!(found[2].starts_with("x.rs:9:"), "{found:?}");
}
