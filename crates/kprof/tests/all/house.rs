//! House rules over the source tree: file size, where `unsafe` may live, and no
//! import cycles between the engine's top-level modules. Plain file reading, no GPU.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::source_tree::{assert_scan_found, repo_root, rs_files};

/// Most lines a `.rs` file under `crates/*/src`, `crates/*/examples` or `crates/*/tests` may have.
const MAX_LINES: usize = 1200;

/// Where `unsafe` may appear: the engine's FFI layer (`crates/kprof/src/sys/`, every file under
/// it) and, in each other crate that needs one, its one FFI module (kprof-inject's exported NVTX
/// injection ABI). Everywhere else the keyword fails the test (the engine's crate root also denies
/// `unsafe_code` outside `sys`); in these modules every `unsafe` block and `unsafe impl` needs a
/// `// SAFETY:` comment right above it.
const FFI_MODULES: &[&str] = &["crates/kprof/src/sys/", "crates/kprof-inject/src/nvtx_abi.rs"];

fn in_ffi_module(file: &str) -> bool {
    FFI_MODULES.iter().any(|m| {
        if m.ends_with('/') {
            file.starts_with(m)
        } else {
            file == *m
        }
    })
}

/// Import cycles between engine modules that are tolerated: none. The last one, a knot of ten
/// modules through `error` (its `#[from]` variants named the error types of `counters`, `ncu` and
/// `conditions`, which reach `error` again through the loader, the driver and NVTX), went away:
/// those error types (and `NcuVersion`, in the leaf `ncu_version`) are defined with the
/// engine's, `RegionSpan` beside the CUPTI records, and the activity session takes a loaded CUPTI
/// rather than the loader's `Libraries`.
const CYCLE_ALLOWLIST: &[&[&str]] = &[];

/// The edges (`from -> to`: `from` uses `crate::to`) allowed inside the cycles above: none.
const CYCLE_EDGE_ALLOWLIST: &[&str] = &[];

/// `(path relative to the repository root with '/' separators, absolute path)` of every `.rs`
/// file under `crates/*/<dir>` for each of `dirs` (by crate, then in the order of `dirs`).
fn crate_files(root: &Path, dirs: &[&str]) -> Vec<(String, PathBuf)> {
    let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    crates.sort();
    let mut files = Vec::new();
    for c in crates {
        for dir in dirs {
            rs_files(&c.join(dir), &mut files);
        }
    }
    files.into_iter().map(|p| (rel(root, &p), p)).collect()
}

/// `(path relative to the repository root with '/' separators, absolute path)` of every `.rs`
/// file under `crates/*/src`.
fn crate_sources(root: &Path) -> Vec<(String, PathBuf)> {
    crate_files(root, &["src"])
}

/// `(path relative to the repository root with '/' separators, absolute path)` of every `.rs`
/// file under `crates/*/examples` and `crates/*/tests` (multi-file examples and test targets
/// included).
fn crate_examples_and_tests(root: &Path) -> Vec<(String, PathBuf)> {
    crate_files(root, &["examples", "tests"])
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The source with comments, string literals and char literals blanked out (newlines kept, so
/// line numbers still match). Handles `//`, nested `/* */`, `"..."` with escapes, raw strings
/// `r#"..."#` (and `b`/`br`/`c` prefixes, which stay as identifier characters), char literals
/// versus lifetimes. Good enough for keyword and path scanning, not a full lexer.
fn strip_code(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(s[i - 1]);
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
                out.push(' ');
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, s[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (!prev_ident || (i == 1 || !is_ident(s[i - 2])) && s[i - 1] == 'b')
        {
            // Raw string: r"..." or r#"..."# (also after a `b` prefix).
            let mut j = i + 1;
            let mut hashes = 0;
            while s.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if s.get(j) != Some(&'"') {
                // `r#ident` (raw identifier): keep as is.
                out.push(c);
                i += 1;
                continue;
            }
            out.push(' ');
            for _ in i + 1..=j {
                out.push(' ');
            }
            i = j + 1;
            while i < s.len() {
                if s[i] == '"' && (0..hashes).all(|k| s.get(i + 1 + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, s[i]);
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < s.len() {
                if s[i] == '\\' {
                    blank(&mut out, s[i]);
                    if let Some(&e) = s.get(i + 1) {
                        blank(&mut out, e);
                    }
                    i += 2;
                } else if s[i] == '"' {
                    out.push(' ');
                    i += 1;
                    break;
                } else {
                    blank(&mut out, s[i]);
                    i += 1;
                }
            }
        } else if c == '\'' {
            // Char literal ('x', '\n', '\u{..}') or lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..s.len()).find(|&k| s[k] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for &ch in &s[i..=e] {
                        blank(&mut out, ch);
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whole-word occurrences of `word` in `code`, as 1-based line numbers.
fn word_lines(code: &str, word: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut start = 0;
        while let Some(off) = line[start..].find(word) {
            let at = start + off;
            let before = line[..at].chars().next_back();
            let after = line[at + word.len()..].chars().next();
            if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
                lines.push(n + 1);
            }
            start = at + word.len();
        }
    }
    lines
}

#[test]
fn no_source_file_over_1200_lines() {
    let root = repo_root();
    let files = crate_sources(&root);
    assert_scan_found(files.len(), 50, "source files under crates/*/src", &root);
    let others = crate_examples_and_tests(&root);
    assert_scan_found(others.len(), 20, "source files under crates/*/{examples,tests}", &root);
    let mut over: Vec<(String, usize)> = files
        .iter()
        .chain(&others)
        .map(|(name, path)| {
            (
                name.clone(),
                fs::read_to_string(path).expect("read source").lines().count(),
            )
        })
        .filter(|&(_, n)| n > MAX_LINES)
        .collect();
    over.sort_by_key(|o| std::cmp::Reverse(o.1));
    assert!(
        over.is_empty(),
        "source files over {MAX_LINES} lines (split them into submodules, e.g. move tests to `<module>/tests.rs` \
         or a cohesive part to its own file):\n{}",
        over.iter()
            .map(|(f, n)| format!("  {f}: {n} lines"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The 1-based lines of `src` holding an `unsafe` block or `unsafe impl` (in code, not in comments
/// or strings) without a `// SAFETY:` comment right above: in the run of comment lines directly
/// above that line (`//` lines; attributes in between are skipped).
fn undocumented_unsafe(src: &str) -> Vec<usize> {
    let code = strip_code(src);
    let code_lines: Vec<&str> = code.lines().collect();
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for n in word_lines(&code, "unsafe") {
        let line = code_lines[n - 1];
        let is_block_or_impl = line.match_indices("unsafe").any(|(at, w)| {
            let rest = line[at + w.len()..].trim_start();
            rest.starts_with('{') || rest.starts_with("impl")
        });
        if !is_block_or_impl {
            continue;
        }
        let mut documented = false;
        for above in lines[..n - 1].iter().rev().map(|l| l.trim()) {
            if above.starts_with("#[") {
                continue;
            }
            if !above.starts_with("//") {
                break;
            }
            if above.contains("SAFETY:") {
                documented = true;
                break;
            }
        }
        if !documented {
            out.push(n);
        }
    }
    out
}

#[test]
fn unsafe_only_in_the_ffi_layer() {
    let root = repo_root();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut undocumented = Vec::new();
    for (name, path) in crate_sources(&root) {
        let src = fs::read_to_string(&path).expect("read source");
        let n = word_lines(&strip_code(&src), "unsafe").len();
        if n > 0 {
            counts.insert(name.clone(), n);
        }
        if in_ffi_module(&name) {
            undocumented.extend(undocumented_unsafe(&src).into_iter().map(|l| format!("  {name}:{l}")));
        }
    }
    let total: usize = counts.values().sum();
    let in_ffi: usize = counts.iter().filter(|(f, _)| in_ffi_module(f)).map(|(_, n)| n).sum();
    let current = counts
        .iter()
        .map(|(f, n)| format!("    (\"{f}\", {n}),"))
        .collect::<Vec<_>>()
        .join("\n");
    println!(
        "`unsafe` per file ({total} in {} files, {in_ffi} of them in the FFI modules):\n{current}",
        counts.len()
    );

    for m in FFI_MODULES {
        assert!(root.join(m).exists(), "FFI_MODULES names {m}, which does not exist");
    }
    let lib_rs = fs::read_to_string(root.join("crates/kprof/src/lib.rs")).expect("read lib.rs");
    assert!(
        lib_rs.contains("#![deny(unsafe_code)]")
            && lib_rs.matches("#[allow(unsafe_code)]").count() == 1
            && lib_rs.contains("#[allow(unsafe_code)]\npub mod sys;"),
        "crates/kprof/src/lib.rs must deny `unsafe_code` for the crate and allow it only on `mod sys`"
    );
    let outside: Vec<String> = counts
        .iter()
        .filter(|(f, _)| !in_ffi_module(f))
        .map(|(f, n)| format!("  {f}: {n} `unsafe`"))
        .collect();
    assert!(
        outside.is_empty(),
        "`unsafe` outside the FFI layer:\n{}\nPut the call in the FFI layer (crates/kprof/src/sys/, or the crate's FFI \
         module: FFI_MODULES in crates/kprof/tests/all/house.rs) behind a safe function, and call that.",
        outside.join("\n")
    );
    assert!(
        undocumented.is_empty(),
        "`unsafe` blocks or impls in the FFI layer without a `// SAFETY:` comment right above (say why the call \
         is sound):\n{}",
        undocumented.join("\n")
    );
}

/// Top-level module of a file of `crates/kprof/src` (`a.rs`, `a/mod.rs`, `a/b.rs` -> `a`);
/// `None` for the crate root.
fn module_of(rel_to_src: &str) -> Option<String> {
    let first = rel_to_src.split('/').next()?;
    let m = first.strip_suffix(".rs").unwrap_or(first);
    (m != "lib" && m != "main").then(|| m.to_string())
}

/// Module names that `code` reaches through `crate::x` paths (in `use` or anywhere else,
/// `$crate::x` too), with the 1-based line of each, including grouped `use crate::{a, b::c}`.
fn crate_refs(code: &str) -> Vec<(String, usize)> {
    let s: Vec<char> = code.chars().collect();
    let line_at = |i: usize| s[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let skip_ws = |mut i: usize| {
        while i < s.len() && s[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let ident_at = |i: usize| {
        let mut j = i;
        while j < s.len() && is_ident(s[j]) {
            j += 1;
        }
        (s[i..j].iter().collect::<String>(), j)
    };
    let mut refs = Vec::new();
    let mut i = 0;
    while i + 5 <= s.len() {
        let is_crate = s[i..i + 5].iter().copied().eq("crate".chars())
            && (i == 0 || !is_ident(s[i - 1]))
            && !s.get(i + 5).copied().is_some_and(is_ident);
        if !is_crate {
            i += 1;
            continue;
        }
        let at = i;
        let mut j = skip_ws(i + 5);
        i += 5;
        if !(s.get(j) == Some(&':') && s.get(j + 1) == Some(&':')) {
            continue;
        }
        j = skip_ws(j + 2);
        if s.get(j) == Some(&'{') {
            // Grouped: the first identifier of each top-level item.
            let mut depth = 0usize;
            let mut expect_item = true;
            let mut k = j;
            while k < s.len() {
                match s[k] {
                    '{' => {
                        depth += 1;
                        if depth == 1 {
                            expect_item = true;
                        }
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => expect_item = true,
                    c if depth == 1 && expect_item && is_ident(c) => {
                        let (name, end) = ident_at(k);
                        refs.push((name, line_at(k)));
                        expect_item = false;
                        k = end;
                        continue;
                    }
                    _ => {}
                }
                k += 1;
            }
            i = k;
        } else if s.get(j).copied().is_some_and(is_ident) {
            let (name, end) = ident_at(j);
            refs.push((name, line_at(at)));
            i = end;
        }
    }
    refs
}

/// Strongly connected components of `graph` with more than one node (Tarjan), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(st: &mut St<'a>, v: &'a str) {
        let n = st.index.len();
        st.index.insert(v, n);
        st.low.insert(v, n);
        st.stack.push(v);
        st.on.insert(v);
        let g = st.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !st.index.contains_key(w) {
                visit(st, w);
                let lw = st.low[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if st.on.contains(w) {
                let iw = st.index[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = st.stack.pop().unwrap();
                st.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                st.out.push(comp);
            }
        }
    }
    let mut st = St {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !st.index.contains_key(v.as_str()) {
            visit(&mut st, v);
        }
    }
    st.out.sort();
    st.out
}

#[test]
fn no_new_import_cycles_between_engine_modules() {
    let root = repo_root();
    let src = root.join("crates/kprof/src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    // (from, to) -> where: "file:line".
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let Some(from) = module_of(&rel(&src, path)) else {
            continue;
        };
        graph.entry(from.clone()).or_default();
        let code = strip_code(&fs::read_to_string(path).expect("read source"));
        for (to, line) in crate_refs(&code) {
            if to == from || to == "self" || to == "super" {
                continue;
            }
            graph.entry(to.clone()).or_default();
            graph.get_mut(&from).unwrap().insert(to.clone());
            edges
                .entry((from.clone(), to))
                .or_default()
                .push(format!("{}:{line}", rel(&root, path)));
        }
    }
    assert!(
        graph.len() >= 8,
        "found only {} modules in {}: {:?}",
        graph.len(),
        src.display(),
        graph.keys()
    );

    let found = cycles(&graph);
    let describe = |comp: &[String]| {
        let mut s = format!("cycle {{{}}}:\n", comp.join(", "));
        for ((a, b), wheres) in &edges {
            if comp.contains(a) && comp.contains(b) {
                let shown: Vec<&str> = wheres.iter().take(4).map(String::as_str).collect();
                let more = if wheres.len() > 4 {
                    format!(" (+{} more)", wheres.len() - 4)
                } else {
                    String::new()
                };
                s += &format!("  {a} -> {b}: {}{more}\n", shown.join(", "));
            }
        }
        s
    };
    for comp in &found {
        print!("{}", describe(comp));
    }
    let allowed: Vec<BTreeSet<&str>> = CYCLE_ALLOWLIST.iter().map(|c| c.iter().copied().collect()).collect();
    for a in &allowed {
        if !found
            .iter()
            .any(|c| c.iter().all(|m| a.contains(m.as_str())) && c.len() == a.len())
        {
            println!("note: allowlisted cycle {a:?} no longer matches a cycle found: update CYCLE_ALLOWLIST in tests/all/house.rs (only ever shrink it)");
        }
    }
    let new: Vec<String> = found
        .iter()
        .filter(|c| !allowed.iter().any(|a| c.iter().all(|m| a.contains(m.as_str()))))
        .map(|c| describe(c))
        .collect();
    let allowed_edges: BTreeSet<&str> = CYCLE_EDGE_ALLOWLIST.iter().copied().collect();
    let mut in_cycles = BTreeSet::new();
    let mut new_edges = Vec::new();
    for comp in &found {
        for ((a, b), wheres) in &edges {
            if comp.contains(a) && comp.contains(b) {
                let e = format!("{a} -> {b}");
                if !allowed_edges.contains(e.as_str()) {
                    new_edges.push(format!("  {e}: {}\n", wheres.join(", ")));
                }
                in_cycles.insert(e);
            }
        }
    }
    for e in &allowed_edges {
        if !in_cycles.contains(*e) {
            println!("note: edge `{e}` is no longer part of a cycle: remove it from CYCLE_EDGE_ALLOWLIST in tests/all/house.rs");
        }
    }
    assert!(
        new_edges.is_empty(),
        "new imports inside an allowlisted cycle of crates/kprof/src (not in CYCLE_EDGE_ALLOWLIST, \
         crates/kprof/tests/all/house.rs):\n{}Do not tighten the knot: use a lower module, or pass what is needed in \
         (a function, a trait) instead of importing the module that sits higher. Do not add the edge to the allowlist.",
        new_edges.join("")
    );
    assert!(
        new.is_empty(),
        "import cycles between top-level modules of crates/kprof/src that CYCLE_ALLOWLIST \
         (crates/kprof/tests/all/house.rs) does not allow:\n{}Break the cycle: move the shared item to a lower \
         module both can use, or pass what the lower module needs in (a function, a trait) instead of importing \
         the higher one. Do not add it to the allowlist.",
        new.join("")
    );
}

#[test]
fn strip_code_blanks_comments_and_strings() {
    let code = strip_code(
        "let a = \"unsafe\"; // unsafe\n/* unsafe /* nested */ unsafe */ unsafe fn f<'a>(x: &'a u8) -> char { '\"' }\nr#\"unsafe \"# ; b'x'; unsafe {}\n",
    );
    assert_eq!(word_lines(&code, "unsafe"), vec![2, 3], "{code}");
    assert_eq!(code.lines().count(), 3);
    let src = "// SAFETY: fine\nunsafe { f() };\nlet x = unsafe { g() };\n// SAFETY: ok\n#[allow(x)]\nunsafe impl Send for X {}\nunsafe fn h() {}\n";
    assert_eq!(undocumented_unsafe(src), vec![3]);
    let refs = crate_refs("use crate::{a::B, b, c::{d, e}};\nfn f() { crate :: d::g(); }\npub(crate) fn h() {}\n");
    let names: Vec<(&str, usize)> = refs.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    assert_eq!(names, vec![("a", 1), ("b", 1), ("c", 1), ("d", 2)]);
}
