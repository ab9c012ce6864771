//! NVTX push/pop ranges in the ASCII domain `kprof`, so that `ncu --nvtx --nvtx-include
//! "kprof@<name>/"` and nsys see the same regions as the CUPTI backend.
//!
//! kprof carries its own NVTX v3 copy (the FFI layer's [`crate::sys::nvtx::copy`], with
//! hand-written declarations in [`crate::sys::nvtx`]; no C compiler or libclang at build time): a
//! no-op unless a tool injects itself through `NVTX_INJECTION64_PATH`, exactly as a C program's
//! NVTX copy ([`injection`] says what happened). Names are always passed as ASCII strings: wide
//! strings show in ncu 2025.3 as one character and its filters then match nothing.

use std::ffi::CString;
use std::marker::PhantomData;
use std::sync::OnceLock;

use crate::error::EngineError;
use crate::sys::nvtx::copy;
pub use crate::sys::nvtx::copy::{injection, Injection, ENV_INJECTION_PATH};

/// The NVTX domain name.
pub const DOMAIN: &str = "kprof";

/// The `kprof` domain's handle from the tool (null without one), created at the first range.
fn domain() -> copy::DomainHandle {
    static D: OnceLock<copy::DomainHandle> = OnceLock::new();
    *D.get_or_init(|| copy::domain_create(c"kprof"))
}

/// Characters that NVTX filter expressions or ncu's CSV columns give a meaning to, plus `%` (the
/// escape itself) and `#` (kprof's key separator under ncu).
pub const RESERVED_CHARS: &[char] = &['@', ',', '[', ']', '/', '*', '+', ':', '"', '\\', '%', '#'];

/// The NVTX range name of one region in one (call, config, run): `region#c<call>.<config>.<run>`,
/// e.g. `matmul#c0.2.7`.
///
/// The region is percent-encoded ([`encode_range_name`]), so the name is printable
/// ASCII without any of [`RESERVED_CHARS`] whatever the region is called, and survives ncu's
/// `--nvtx-include` filters and the `domain:range:...` cells of the CSV export.
/// [`parse_range_name`](crate::ncu::parse_range_name) is the inverse.
pub fn range_name(region: &str, call: u32, config: u32, run: u32) -> String {
    format!("{}#c{call}.{config}.{run}", encode_range_name(region))
}

/// The NVTX range name of a region: the name with every reserved character, space, non-ASCII
/// byte and control character percent-encoded (`x * 2` → `x%20%2A%202`), so any region name
/// (the seed's `a + b * c (unfused)` included) survives ncu's `--nvtx-include` filters and the
/// `domain:range:...` cells of its CSV export. [`decode_range_name`] is the inverse.
pub fn encode_range_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        let c = b as char;
        if b.is_ascii_graphic() && !RESERVED_CHARS.contains(&c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes [`encode_range_name`]'s `%XX` escapes (other text is kept as it is).
pub fn decode_range_name(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks a region name (any non-empty text) and returns its NVTX range name
/// ([`encode_range_name`]) as an ASCII C string.
pub fn validate_region_name(name: &str) -> Result<CString, EngineError> {
    if name.is_empty() {
        return Err(EngineError::RegionMisuse("a region name must not be empty".into()));
    }
    CString::new(encode_range_name(name)).map_err(|_| EngineError::RegionMisuse(format!("{name:?} contains NUL")))
}

/// An open NVTX push/pop range on the current thread; popped on drop. Not `Send`: a push/pop
/// range must end on the thread that started it.
pub struct NvtxRange {
    domain: copy::DomainHandle,
    _not_send: PhantomData<*const ()>,
}

impl Drop for NvtxRange {
    fn drop(&mut self) {
        copy::domain_range_pop(self.domain);
    }
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
    let domain = domain();
    copy::domain_range_push(domain, &name);
    NvtxRange {
        domain,
        _not_send: PhantomData,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_encoded() {
        assert_eq!(
            validate_region_name("matmul_4096").unwrap().to_str().unwrap(),
            "matmul_4096"
        );
        assert!(validate_region_name("").is_err());
        for name in [
            "x * 2 (256 MB)",
            "a + b * c (unfused)",
            "a/b:c@d,e[f]\"g\\h%i#j",
            "caf\u{e9}",
            "a\nb",
        ] {
            let c = validate_region_name(name).unwrap();
            let encoded = c.to_str().unwrap();
            assert!(
                encoded
                    .chars()
                    .all(|c| c.is_ascii_graphic() && (c == '%' || !RESERVED_CHARS.contains(&c))),
                "{encoded}"
            );
            assert_eq!(decode_range_name(encoded), name);
        }
        assert_eq!(encode_range_name("x * 2"), "x%20%2A%202");
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
