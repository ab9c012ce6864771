//! Nsight Compute's section and set names (`SpeedOfLight`, `basic`, …) expanded into their metric
//! names ([`expand`]), so that `metrics=` takes what `ncu --section`/`--set` takes. The table is
//! `sections.txt` ([`table`]); [`expand`] keeps what the counters can give, and the engine then
//! leaves out the names the chip's counters do not know (`kprof::counters::sections`).
//!
//! Which sections and sets, and what is left out, as users see it: `docs/counters.md` (Sections and
//! sets).

use std::sync::OnceLock;

/// Errors of the expansion.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SectionError {
    /// A name that is neither a metric (it has no `__`) nor a known section or set.
    #[error("{name:?} is not a metric, section or set kprof knows; sections: {sections}; sets: {sets}")]
    Unknown {
        /// The name given.
        name: String,
        /// The section identifiers of the table.
        sections: String,
        /// The set names of the table.
        sets: String,
    },
    /// A chip whose compute capability kprof does not know (the sections filter metrics by it).
    #[error("no compute capability known for chip {0:?}: section metrics depend on it (give the chip, e.g. GH100)")]
    UnknownChip(String),
    /// The table itself is malformed (a broken build).
    #[error("sections table, line {line}: {what}")]
    Table {
        /// 1-based line of `sections.txt`.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

/// One metric of a section and the compute capabilities (x10, inclusive ranges) it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionMetric {
    /// The ncu name, e.g. `gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed`.
    pub name: String,
    /// Inclusive ranges of compute capability x10 (`[(89, 100)]`); empty: every one.
    pub arch: Vec<(u32, u32)>,
}

impl SectionMetric {
    /// Whether the section names this metric on a device of compute capability `cc` (x10).
    pub fn admits(&self, cc: u32) -> bool {
        self.arch.is_empty() || self.arch.iter().any(|&(lo, hi)| (lo..=hi).contains(&cc))
    }
}

/// One section: its identifier (what `ncu --section` takes), its sets and its metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Identifier, e.g. `SpeedOfLight`.
    pub id: String,
    /// The ncu sets it belongs to.
    pub sets: Vec<String>,
    /// Its metrics in the section file's order.
    pub metrics: Vec<SectionMetric>,
    /// Metrics whose breakdown the section shows (`breakdown:` names; not expanded).
    pub breakdowns: Vec<String>,
}

/// The sections and sets kprof can expand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionTable {
    /// Sections, in the table's order.
    pub sections: Vec<Section>,
    /// Sets and their member sections.
    pub sets: Vec<(String, Vec<String>)>,
}

/// A metric of a section that the expansion leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The metric name.
    pub metric: String,
    /// The section naming it.
    pub section: String,
    /// Why it is not collected.
    pub reason: String,
}

/// The result of [`expand`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expansion {
    /// Metric names in order, without duplicates: the names given, sections replaced by theirs.
    pub metrics: Vec<String>,
    /// The sections expanded (sets replaced by their sections).
    pub sections: Vec<String>,
    /// Section metrics left out.
    pub left_out: Vec<LeftOut>,
}

impl Expansion {
    /// One line per reason, for a warning (`None` when nothing was left out).
    pub fn left_out_note(&self) -> Option<String> {
        if self.left_out.is_empty() {
            return None;
        }
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for l in &self.left_out {
            match reasons.iter_mut().find(|(r, _)| *r == l.reason) {
                Some((_, names)) => names.push(&l.metric),
                None => reasons.push((&l.reason, vec![&l.metric])),
            }
        }
        let parts: Vec<String> = reasons
            .iter()
            .map(|(r, names)| format!("{} ({r})", names.join(", ")))
            .collect();
        Some(format!(
            "sections {}: left out {}",
            self.sections.join(", "),
            parts.join("; ")
        ))
    }
}

const TABLE_TEXT: &str = include_str!("sections.txt");

/// The table compiled into kprof (`sections.txt`): per section, the metrics its section file
/// names (header, body, charts, and the metrics their derived values are computed from) with the
/// compute capabilities each is filtered to, and the members of the sets kprof can expand;
/// checked against a record of ncu's section files (`tests/fixtures/ncu-sections/`).
pub fn table() -> &'static SectionTable {
    static TABLE: OnceLock<SectionTable> = OnceLock::new();
    TABLE.get_or_init(|| parse_table(TABLE_TEXT).unwrap_or_else(|e| panic!("{e}")))
}

fn parse_arch(word: &str, line: usize) -> Result<(u32, u32), SectionError> {
    let num = |s: &str| {
        s.parse::<u32>().map_err(|_| SectionError::Table {
            line,
            what: format!("bad compute capability {word:?}"),
        })
    };
    if let Some(lo) = word.strip_suffix('+') {
        Ok((num(lo)?, u32::MAX))
    } else if let Some(hi) = word.strip_prefix('-') {
        Ok((0, num(hi)?))
    } else if let Some((lo, hi)) = word.split_once('-') {
        Ok((num(lo)?, num(hi)?))
    } else {
        let v = num(word)?;
        Ok((v, v))
    }
}

/// Reads a table in `sections.txt`'s format.
pub fn parse_table(text: &str) -> Result<SectionTable, SectionError> {
    let mut t = SectionTable {
        sections: Vec::new(),
        sets: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix("set ") {
            let (name, members) = rest.split_once('=').ok_or(SectionError::Table {
                line,
                what: "a set line is `set NAME = SECTION ...`".into(),
            })?;
            let members = members.split_whitespace().map(String::from).collect();
            t.sets.push((name.trim().to_string(), members));
        } else if let Some(rest) = l.strip_prefix('[') {
            let (id, sets) = rest.split_once(']').ok_or(SectionError::Table {
                line,
                what: "a section line is `[Identifier] set,set`".into(),
            })?;
            t.sections.push(Section {
                id: id.to_string(),
                sets: sets
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                metrics: Vec::new(),
                breakdowns: Vec::new(),
            });
        } else {
            let section = t.sections.last_mut().ok_or(SectionError::Table {
                line,
                what: "a metric before the first section".into(),
            })?;
            let mut words = l.split_whitespace();
            let name = words.next().unwrap_or_default();
            if let Some(b) = name.strip_prefix("breakdown:") {
                section.breakdowns.push(b.to_string());
                continue;
            }
            let arch = words.map(|w| parse_arch(w, line)).collect::<Result<_, _>>()?;
            section.metrics.push(SectionMetric {
                name: name.to_string(),
                arch,
            });
        }
    }
    for (set, members) in &t.sets {
        if let Some(m) = members.iter().find(|m| t.section(m).is_none()) {
            return Err(SectionError::Table {
                line: 0,
                what: format!("set {set} names section {m}, which the table lacks"),
            });
        }
    }
    Ok(t)
}

impl SectionTable {
    /// A section by identifier (exact, as ncu's `--section` takes it).
    pub fn section(&self, id: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.id == id)
    }

    /// A set's member sections.
    pub fn set(&self, name: &str) -> Option<&[String]> {
        self.sets.iter().find(|(n, _)| n == name).map(|(_, m)| m.as_slice())
    }

    fn unknown(&self, name: &str) -> SectionError {
        SectionError::Unknown {
            name: name.to_string(),
            sections: self
                .sections
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            sets: self.sets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "),
        }
    }
}

/// Whether a name is a metric name rather than a section or set (metric names have `__`).
pub fn is_metric_name(name: &str) -> bool {
    name.contains("__")
}

/// Why a section's metric is not a counter the Range Profiler collects; `None` when it may be.
pub fn not_a_counter(name: &str) -> Option<&'static str> {
    if name.starts_with("launch__") || name.starts_with("device__") {
        Some("a launch attribute: ncu reads it from the launch, not from the counters")
    } else if !name.contains('.') {
        Some("no rollup suffix: ncu computes it itself or tabulates its instances")
    } else {
        None
    }
}

/// Expands the section and set names among `names` into their metrics for a device of compute
/// capability `cc` (x10, e.g. 90 for GH100), keeping metric names as given. Metric names keep
/// their place; a section's metrics come at its place; a name already listed is not repeated.
/// Only names with a rollup (`base.sum`, `base.avg.…`) are kept: launch attributes (`launch__*`,
/// `device__*`, read by ncu from the launch), names without a rollup (ncu computes them or lists
/// their instances in a table) and `breakdown:` lists are left out, each with its reason in
/// [`Expansion::left_out`].
pub fn expand<S: AsRef<str>>(names: &[S], cc: u32) -> Result<Expansion, SectionError> {
    expand_with(table(), names, cc)
}

/// [`expand`] with another table.
pub fn expand_with<S: AsRef<str>>(t: &SectionTable, names: &[S], cc: u32) -> Result<Expansion, SectionError> {
    let mut out = Expansion::default();
    let push = |out: &mut Expansion, m: &str| {
        if !out.metrics.iter().any(|x| x == m) {
            out.metrics.push(m.to_string());
        }
    };
    for name in names {
        let name = name.as_ref().trim();
        if is_metric_name(name) {
            push(&mut out, name);
            continue;
        }
        let ids: Vec<&str> = match (t.section(name), t.set(name)) {
            (Some(s), _) => vec![s.id.as_str()],
            (None, Some(members)) => members.iter().map(String::as_str).collect(),
            (None, None) => return Err(t.unknown(name)),
        };
        for id in ids {
            if out.sections.iter().any(|s| s == id) {
                continue;
            }
            out.sections.push(id.to_string());
            let section = t.section(id).ok_or_else(|| t.unknown(id))?;
            for m in section.metrics.iter().filter(|m| m.admits(cc)) {
                match not_a_counter(&m.name) {
                    Some(reason) => {
                        if !out.left_out.iter().any(|l| l.metric == m.name) {
                            out.left_out.push(LeftOut {
                                metric: m.name.clone(),
                                section: id.to_string(),
                                reason: reason.to_string(),
                            });
                        }
                    }
                    None => push(&mut out, &m.name),
                }
            }
        }
    }
    Ok(out)
}

/// Compute capability x10 of a chip as CUPTI names it (`GH100` → 90); `None` when unknown.
pub fn compute_capability(chip: &str) -> Option<u32> {
    // Prefixes, most specific first (GA10B before GA1xx). Chips not listed: give the chip's
    // compute capability through `expand`.
    const CHIPS: [(&str, u32); 10] = [
        ("GV100", 70),
        ("TU1", 75),
        ("GA100", 80),
        ("GA10B", 87),
        ("GA1", 86),
        ("AD1", 89),
        ("GH100", 90),
        ("GB100", 100),
        ("GB102", 100),
        ("GB20", 120),
    ];
    let chip = chip.trim().to_ascii_uppercase();
    CHIPS.iter().find(|(p, _)| chip.starts_with(p)).map(|&(_, cc)| cc)
}

/// [`expand`] for a chip name.
pub fn expand_for_chip<S: AsRef<str>>(names: &[S], chip: &str) -> Result<Expansion, SectionError> {
    if names.iter().all(|n| is_metric_name(n.as_ref())) {
        return expand(names, 0);
    }
    let cc = compute_capability(chip).ok_or_else(|| SectionError::UnknownChip(chip.to_string()))?;
    expand(names, cc)
}
