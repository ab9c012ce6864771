//! The version number of an Nsight Compute install ([`NcuVersion`]), a leaf module: the ncu
//! backend ([`crate::ncu`]) finds and parses it, and the engine's error types
//! ([`crate::error::NcuError`]) name it.

use std::fmt;

/// An ncu version, `year.minor.patch.build` as in `Version 2025.3.1.0 (build 36398880)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NcuVersion {
    /// Year (2025).
    pub major: u32,
    /// Release in the year (3).
    pub minor: u32,
    /// Patch (1).
    pub patch: u32,
    /// Fourth component (0).
    pub build: u32,
}

impl NcuVersion {
    /// A version from its four components.
    pub const fn new(major: u32, minor: u32, patch: u32, build: u32) -> Self {
        NcuVersion {
            major,
            minor,
            patch,
            build,
        }
    }

    /// Parses the first `Version a.b.c[.d]` in `ncu --version`'s output (a missing fourth
    /// component is 0). Also accepts a bare `a.b.c[.d]` (e.g. an install directory name).
    pub fn parse(text: &str) -> Option<NcuVersion> {
        for line in text.lines() {
            let mut words = line.split_whitespace();
            while let Some(w) = words.next() {
                if w.eq_ignore_ascii_case("version") {
                    if let Some(v) = words.clone().next().and_then(Self::parse_dotted) {
                        return Some(v);
                    }
                }
            }
        }
        Self::parse_dotted(text.trim())
    }

    pub(crate) fn parse_dotted(s: &str) -> Option<NcuVersion> {
        let s = s.trim_end_matches(|c: char| !c.is_ascii_digit());
        let parts: Vec<&str> = s.split('.').collect();
        if !(3..=4).contains(&parts.len()) {
            return None;
        }
        let mut n = [0u32; 4];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            n[i] = p.parse().ok()?;
        }
        Some(NcuVersion::new(n[0], n[1], n[2], n[3]))
    }
}

impl fmt::Display for NcuVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}.{}", self.major, self.minor, self.patch, self.build)
    }
}
