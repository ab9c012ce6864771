//! NVTX push/pop ranges in the ASCII domain `kprof`, so that `ncu --nvtx --nvtx-include
//! "kprof@<name>/"` and nsys see the same regions as the CUPTI backend.
//!
//! Uses NVIDIA's `nvtx` crate (NVTX v3 compiled in; a no-op unless a tool injects itself through
//! `NVTX_INJECTION64_PATH`). Names are always passed as ASCII `CString`s: the crate's `&str`
//! conversions make wide strings, which ncu 2025.3 shows as one character and its filters then
//! match nothing.

use std::ffi::CString;
use std::sync::OnceLock;

use crate::error::EngineError;

/// The NVTX domain name.
pub const DOMAIN: &str = "kprof";

fn domain() -> &'static nvtx::Domain {
    static D: OnceLock<nvtx::Domain> = OnceLock::new();
    D.get_or_init(|| nvtx::Domain::new(c"kprof"))
}

/// Characters that NVTX filter expressions or ncu's CSV columns give a meaning to.
pub const RESERVED_CHARS: &[char] = &['@', ',', '[', ']', '/', '*', '+', ':', '"', '\\'];

/// Checks that a region name can be used as an NVTX range name and in ncu filters: non-empty,
/// printable ASCII, no reserved character.
pub fn validate_region_name(name: &str) -> Result<CString, EngineError> {
    if name.is_empty() {
        return Err(EngineError::RegionMisuse(
            "a region name must not be empty".into(),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !c.is_ascii() || c.is_ascii_control() || RESERVED_CHARS.contains(c))
    {
        return Err(EngineError::RegionMisuse(format!(
            "region name {name:?} contains {c:?}; use printable ASCII without any of {} \
             (they have a meaning in ncu's --nvtx-include filters and CSV columns)",
            RESERVED_CHARS.iter().collect::<String>()
        )));
    }
    CString::new(name).map_err(|_| EngineError::RegionMisuse(format!("{name:?} contains NUL")))
}

/// An open NVTX push/pop range on the current thread; popped on drop. Not `Send`: a push/pop
/// range must end on the thread that started it.
pub struct NvtxRange {
    _range: nvtx::domain::LocalRange<'static>,
}

impl std::fmt::Debug for NvtxRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NvtxRange")
    }
}

/// Pushes a range named `name` (validated by [`validate_region_name`]) in the `kprof` domain.
pub fn push_range(name: &str) -> Result<NvtxRange, EngineError> {
    let c = validate_region_name(name)?;
    Ok(push_range_cstr(c))
}

/// Pushes a range from an already validated ASCII name.
pub fn push_range_cstr(name: CString) -> NvtxRange {
    NvtxRange {
        _range: domain().local_range(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(validate_region_name("matmul_4096").is_ok());
        assert!(validate_region_name("").is_err());
        let e = validate_region_name("a/b").unwrap_err().to_string();
        assert!(e.contains("'/'"), "{e}");
        assert!(validate_region_name("caf\u{e9}").is_err());
        assert!(validate_region_name("a\nb").is_err());
    }

    #[test]
    fn ranges_are_noops_without_a_tool() {
        // No NVTX_INJECTION64_PATH here: push/pop must be harmless.
        let r = push_range("outer").unwrap();
        let inner = push_range("inner").unwrap();
        drop(inner);
        drop(r);
    }
}
