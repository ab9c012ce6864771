//! Unit names: the Profiler Host API's dimension words → Nsight Compute's base-unit spellings.
//! `cuptiProfilerHostGetMetricProperties` gives units as words, with hardware-specific atoms
//! (`gpc_cycle`, `l2_sector`, `instruction`, `nanosecond`, `percent`), products written without a
//! separator (`gpc_cyclewarp`) and at most one `/` (`byte/second`); `ncu --csv --print-units base`
//! writes `%`, `byte`, `ns`, `cycle`, … . [`ncu_unit`] (with the whole mapping) is the one place
//! that maps the former to the latter, so counter series carry the units an ncu export has.

/// Atoms the GH100 catalog (CUPTI 13.0) uses, longest first where one is a prefix of another.
const ATOMS: &[&str] = &[
    "l1data_bank_conflict",
    "l1data_bank_access",
    "l1tex_wavefront",
    "l1tex_request",
    "branch_target",
    "gcc_request",
    "idc_request",
    "l2_request",
    "l2_sector",
    "lrc_sector",
    "instruction",
    "nanosecond",
    "l1tex_tag",
    "percent",
    "lrc_req",
    "L2_tag",
    "second",
    "thread",
    "fe_op",
    "math_op",
    "byte",
    "warp",
    "cycle",
    "cta",
    "cga",
];

/// Splits a product of atoms (`gpc_cyclewarp` → `[gpc_cycle, warp]`); `None` if it does not split.
fn atoms(mut s: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    while !s.is_empty() {
        // A listed atom first (`cta` of `ctagpc_cycle`), else `<unit>_cycle` (gpc, dram, fbp,
        // sys, ctc, nvlrx, nvltx, pcie, …).
        let known = ATOMS.iter().find(|a| s.starts_with(**a)).map(|a| a.len());
        let cycle = || {
            s.find("_cycle")
                .filter(|&i| i > 0 && s[..i].bytes().all(|b| b.is_ascii_alphanumeric()))
                .map(|i| i + "_cycle".len())
        };
        let n = known.or_else(cycle)?;
        out.push(&s[..n]);
        s = &s[n..];
    }
    Some(out)
}

fn atom(a: &str) -> &str {
    match a {
        "percent" => "%",
        "nanosecond" => "ns",
        "second" => "s",
        "instruction" => "inst",
        "l2_sector" | "lrc_sector" => "sector",
        "lrc_req" => "request",
        "cta" => "block",
        "cga" => "cluster",
        a if a.ends_with("_cycle") || a == "cycle" => "cycle",
        a if a.ends_with("_request") => "request",
        a => a,
    }
}

fn side(s: &str) -> Option<String> {
    Some(atoms(s)?.into_iter().map(atom).collect::<Vec<_>>().join("*"))
}

/// Nsight Compute's base-unit spelling (`--print-units base`) of a Profiler Host API unit
/// (`percent` → `%`, `nanosecond` → `ns`, `gpc_cycle` → `cycle`, `byte/second` → `byte/s`,
/// `gpc_cycle/second` → `Hz`). A unit that does not split into known atoms is returned unchanged.
///
/// | host API                                   | kprof / ncu            |
/// |--------------------------------------------|------------------------|
/// | `percent`                                  | `%`                    |
/// | `nanosecond`                               | `ns`                   |
/// | `second` (after `/`)                       | `s`                    |
/// | `*_cycle` (`gpc_cycle`, `dram_cycle`, …)   | `cycle`                |
/// | `cycle/second` (any `*_cycle/second`)      | `Hz`                   |
/// | `instruction`                              | `inst`                 |
/// | `l2_sector`, `lrc_sector`                  | `sector`               |
/// | `*_request`, `lrc_req`                     | `request`              |
/// | `cta`                                      | `block`                |
/// | `cga`                                      | `cluster`              |
/// | `byte`, `warp`, `thread`, other atoms      | unchanged              |
/// | products (`gpc_cyclewarp`)                 | `*`-joined (`cycle*warp`) |
pub fn ncu_unit(host: &str) -> String {
    let (num, den) = match host.split_once('/') {
        Some((n, d)) => (n, Some(d)),
        None => (host, None),
    };
    if num.is_empty() && den.is_none() {
        return String::new();
    }
    let Some(n) = side(num) else { return host.to_string() };
    let Some(d) = den.map(side) else { return n };
    let Some(d) = d else { return host.to_string() };
    if n == "cycle" && d == "s" {
        return "Hz".into();
    }
    format!("{n}/{d}")
}

#[cfg(test)]
mod tests {
    use super::ncu_unit;

    #[test]
    fn host_units_map_to_ncu_base_units() {
        for (host, ncu) in [
            ("", ""),
            ("percent", "%"),
            ("byte", "byte"),
            ("nanosecond", "ns"),
            ("byte/second", "byte/s"),
            ("gpc_cycle", "cycle"),
            ("dram_cycle", "cycle"),
            ("sys_cycle", "cycle"),
            ("nvlrx_cycle", "cycle"),
            ("gpc_cycle/second", "Hz"),
            ("dram_cycle/second", "Hz"),
            ("instruction", "inst"),
            ("instruction/gpc_cycle", "inst/cycle"),
            ("instruction/warp", "inst/warp"),
            ("l2_sector", "sector"),
            ("l2_sector/l1tex_request", "sector/request"),
            ("l1tex_request/second", "request/s"),
            ("lrc_req/fbp_cycle", "request/cycle"),
            ("byte/l2_sector", "byte/sector"),
            ("cta", "block"),
            ("cga/gpc_cycle", "cluster/cycle"),
            ("warp", "warp"),
            ("thread/warp", "thread/warp"),
            ("gpc_cyclewarp", "cycle*warp"),
            ("gpc_cycleinstruction/warp", "cycle*inst/warp"),
            ("l2_requestl2_sector/gcc_requestsecond", "request*sector/request*s"),
            ("nanosecond/second", "ns/s"),
            ("L2_tag/fbp_cycle", "L2_tag/cycle"),
            ("l1tex_wavefront", "l1tex_wavefront"),
            ("furlong/fortnight", "furlong/fortnight"),
        ] {
            assert_eq!(ncu_unit(host), ncu, "{host}");
        }
    }
}
