//! Kernel names: CUPTI reports Itanium-mangled C++ names (`_ZN2at6native...`); the `Kernel`
//! column shows them demangled, as ncu and nsight-python do (`void at::native::(anonymous
//! namespace)::vectorized_layer_norm_kernel<float, float, false>(...)`), and the engine keeps the
//! mangled name in [`MANGLED_KERNEL_COLUMN`]. Ignore lists match either spelling ([`matches()`]).

use std::borrow::Cow;

/// The raw table's column holding the mangled name of a sample's kernel(s) when the `Kernel`
/// column shows them demangled (same `|`-joined layout).
pub const MANGLED_KERNEL_COLUMN: &str = "KernelMangled";

/// Longest name handed to the demangler; longer ones are shown as they are.
const MAX_MANGLED_LEN: usize = 16 * 1024;

/// The demangled form of an Itanium-mangled name (`_Z...`), or the name itself when it is not
/// mangled or cannot be demangled. Never fails.
pub fn demangle(name: &str) -> Cow<'_, str> {
    let trimmed = name.trim();
    if !(trimmed.starts_with("_Z") || trimmed.starts_with("__Z")) || trimmed.len() > MAX_MANGLED_LEN {
        return Cow::Borrowed(name);
    }
    let Ok(symbol) = cpp_demangle::Symbol::new(trimmed) else {
        return Cow::Borrowed(name);
    };
    match symbol.demangle() {
        Ok(text) if !text.is_empty() => Cow::Owned(text),
        _ => Cow::Borrowed(name),
    }
}

/// [`demangle`] applied to each name of a `|`-joined kernel label (the label of a region that
/// launched several kernels; `|` never occurs in a mangled name).
pub fn demangle_label(label: &str) -> Cow<'_, str> {
    if !label.contains("_Z") {
        return Cow::Borrowed(label);
    }
    let parts: Vec<Cow<'_, str>> = label.split('|').map(demangle).collect();
    if parts.iter().all(|p| matches!(p, Cow::Borrowed(_))) {
        return Cow::Borrowed(label);
    }
    Cow::Owned(parts.join("|"))
}

/// The function's name without return type and parameters: `void ns::k<float>(int*)` →
/// `ns::k<float>`.
fn without_signature(demangled: &str) -> &str {
    let mut depth = 0i32;
    let mut end = demangled.len();
    for (i, c) in demangled.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && !demangled[i..].starts_with("(anonymous") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let name = demangled[..end].trim();
    name.strip_prefix("void ").unwrap_or(name)
}

/// The last `::` component, template arguments removed: `ns::k<float>` → `k`.
fn base_name(qualified: &str) -> &str {
    let no_template = qualified.split('<').next().unwrap_or(qualified);
    no_template.rsplit("::").next().unwrap_or(no_template).trim()
}

/// Whether the kernel `name` (as CUPTI reports it, usually mangled) matches an entry of an
/// ignore list: the exact mangled name, the exact demangled name (with or without its `void`
/// return type), the demangled name without parameters (`at::native::k<float>`), or the bare
/// function name (`k`).
pub fn matches(name: &str, pattern: &str) -> bool {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return false;
    }
    if name == pattern {
        return true;
    }
    let shown = demangle(name);
    if matches!(shown, Cow::Borrowed(_)) {
        return false;
    }
    let full = shown.as_ref();
    let pattern_no_void = pattern.strip_prefix("void ").unwrap_or(pattern);
    if full == pattern || full.strip_prefix("void ").unwrap_or(full) == pattern_no_void {
        return true;
    }
    let qualified = without_signature(full);
    qualified == without_signature(pattern) || base_name(qualified) == pattern_no_void
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYER_NORM: &str = "_ZN2at6native53_GLOBAL__N__ee6a3d8f_20_layer_norm_kernel_cu_ba0f8e3e28vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_";

    #[test]
    fn demangles_cuda_kernel_names() {
        assert_eq!(demangle("_Z5scalePfPKffi"), "scale(float*, float const*, float, int)");
        // What c++filt (and ncu) print for it.
        assert_eq!(
            demangle(LAYER_NORM),
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>\
             (int, float, float const*, float const*, float const*, float*)"
        );
        // Not mangled, or not valid: unchanged.
        assert_eq!(demangle("copyk"), "copyk");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
        assert_eq!(demangle(""), "");
    }

    #[test]
    fn labels_demangle_each_part() {
        assert_eq!(
            demangle_label("_Z5scalePfPKffi|copyk"),
            "scale(float*, float const*, float, int)|copyk"
        );
        assert!(matches!(demangle_label("a|b"), Cow::Borrowed(_)));
    }

    #[test]
    fn ignore_entries_match_either_spelling() {
        for pattern in [
            "_Z5scalePfPKffi",
            "scale(float*, float const*, float, int)",
            "scale",
            "void scale(float*, float const*, float, int)",
        ] {
            assert!(matches("_Z5scalePfPKffi", pattern), "{pattern}");
        }
        assert!(!matches("_Z5scalePfPKffi", "scal"));
        assert!(matches(LAYER_NORM, "vectorized_layer_norm_kernel"));
        let full = demangle(LAYER_NORM).into_owned();
        assert!(matches(LAYER_NORM, &full));
        assert!(matches(LAYER_NORM, without_signature(&full)));
        assert!(matches("copyk", "copyk") && !matches("copyk", "copy"));
        assert!(!matches("copyk", ""));
    }
}
