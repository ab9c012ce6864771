//! Aligned plain-ASCII terminal tables of processed and raw results.

use crate::columns::SELF_TIME_COLUMN;
use crate::model::{ExtraValue, ProcessedResults, ProcessedRow, RawResults};

/// Formats a rate or count with an SI prefix and 4 significant digits: `66.90 T`, `750.0 G`,
/// `1.014` (below 1000 no prefix); NaN as `-`.
pub fn fmt_si(x: f64) -> String {
    if !x.is_finite() {
        return fmt_sig(x);
    }
    const PREFIXES: [(f64, &str); 5] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    match PREFIXES.iter().find(|(scale, _)| x.abs() >= *scale) {
        Some((scale, p)) => format!("{} {p}", fmt_sig(x / scale)),
        None => fmt_sig(x),
    }
}

/// Formats a number to about 4 significant digits: `1,234,567`, `1,234`, `12.35`, `0.001235`,
/// `1.235e-7`; NaN as `-`, infinities as `inf`/`-inf`.
pub fn fmt_sig(x: f64) -> String {
    if x.is_nan() {
        return "-".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-3..15).contains(&exp) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    // Rounding can add a digit (9.9996 -> 10.000); trim a trailing zero run after the point
    // only when it is beyond 4 significant digits.
    let s = if decimals > 0 && s.contains('.') {
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        let digits = int.trim_start_matches('-').trim_start_matches('0').len() + frac.len();
        if digits > 4 && frac.ends_with('0') && int.trim_start_matches('-') != "0" {
            let keep = frac.len().saturating_sub(digits - 4);
            if keep == 0 {
                int.to_string()
            } else {
                format!("{int}.{}", &frac[..keep])
            }
        } else {
            s.clone()
        }
    } else {
        s
    };
    group_thousands(&s)
}

fn group_thousands(s: &str) -> String {
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    // Every integer part of 4 digits or more is grouped, so a column never shows `5408` next to
    // `16,717`.
    if int.len() <= 3 {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    out.push_str(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Shortens text wider than `max` terminal columns with a trailing `...` (after [`printable`]).
fn clip(s: &str, max: usize) -> String {
    let s = printable(s);
    if display_width(&s) <= max {
        return s.into_owned();
    }
    let mut out = String::new();
    let mut width = 0;
    for c in s.chars() {
        let w = char_width(c);
        if width + w > max.saturating_sub(3) {
            break;
        }
        width += w;
        out.push(c);
    }
    out.push_str("...");
    out
}

/// Whether `c` would change the terminal rather than print: control characters (C0, DEL, C1)
/// and the bidirectional formatting characters (U+202A..U+202E, U+2066..U+2069, U+200E/F,
/// U+061C) that reorder the rest of the line.
fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// The text with each unprintable character (control characters, and the bidirectional
/// formatting characters that reorder a line) written as `\u{XXXX}`, so a
/// name from a result file cannot reorder or corrupt the terminal.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unprintable) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unprintable(c) {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Terminal columns taken by `c`: 0 for combining marks, zero-width characters and variation
/// selectors, 2 for East Asian wide and fullwidth characters and emoji, 1 otherwise.
fn char_width(c: char) -> usize {
    let u = c as u32;
    match u {
        0x0300..=0x036F | 0x200B..=0x200D | 0x2060 | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F | 0xE0100..=0xE01EF => 0,
        0x1100..=0x115F
        | 0x231A..=0x231B
        | 0x2329..=0x232A
        | 0x23E9..=0x23EC
        | 0x2614..=0x2615
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F680..=0x1F6FF
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD => 2,
        _ => 1,
    }
}

/// Terminal columns taken by `s` (0 for combining marks, 2 for wide East Asian characters and
/// emoji, else 1); tables align on it, not on `char`s.
pub fn display_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Renders an aligned table: the header, a rule, then the rows; `right[i]` right-aligns column
/// `i` (numbers). Cells are made [`printable`] and aligned by [`display_width`].
pub fn render_table(header: &[String], right: &[bool], rows: &[Vec<String>]) -> String {
    let mut t = Table {
        header: header.to_vec(),
        right: right.to_vec(),
        rows: rows.to_vec(),
    };
    t.right.resize(t.header.len(), false);
    t.render()
}

/// A table under construction: a header and rows of cells, with per-column alignment.
struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(String, bool)]) -> Self {
        Table {
            header: columns.iter().map(|(n, _)| n.clone()).collect(),
            right: columns.iter().map(|(_, r)| *r).collect(),
            rows: Vec::new(),
        }
    }

    fn render(&self) -> String {
        let n = self.header.len();
        let clean = |cells: &[String]| -> Vec<String> { cells.iter().map(|c| printable(c).into_owned()).collect() };
        let header = clean(&self.header);
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| clean(r)).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| display_width(h)).collect();
        for row in &rows {
            for (i, c) in row.iter().enumerate().take(n) {
                widths[i] = widths[i].max(display_width(c));
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut l = String::new();
            for (i, &width) in widths.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = width.saturating_sub(display_width(c));
                if i > 0 {
                    l.push_str("  ");
                }
                if self.right[i] {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                } else {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(&header, &mut out);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule, &mut out);
        for row in &rows {
            line(row, &mut out);
        }
        out
    }
}

/// Renders the processed table: Benchmark (when there is more than one), Annotation, Metric, each
/// parameter (right-aligned when numeric), AvgValue, SelfAvg (when rows carry `kprof run`'s self
/// time of nested NVTX ranges, [`SELF_TIME_COLUMN`]), ±CI95 (half-width of the 95% interval), StdDev, RSD%, Stable, NumRuns
/// (`valid/total` when runs failed), Unit, and Baseline/BaselineAvg when rows are normalised.
/// A footer lists configurations whose baseline is missing.
pub fn render_processed(p: &ProcessedResults) -> String {
    let mut params: Vec<String> = p.param_names.clone();
    for r in &p.rows {
        for n in r.config.names() {
            if !params.iter().any(|m| m == n) {
                params.push(n.to_string());
            }
        }
    }
    let multi_bench = p.rows.iter().any(|r| r.benchmark != p.rows[0].benchmark);
    let normalised = p.rows.iter().any(|r| r.normalized.is_some());
    let mut cols = leading_columns(multi_bench);
    cols.extend(params.iter().map(|n| {
        let numeric = p
            .rows
            .iter()
            .all(|r| r.config.get(n).is_none_or(|v| v.as_f64().is_some()));
        (n.clone(), numeric)
    }));
    // A range's own time beside its inclusive one (`kprof run`'s nested NVTX ranges).
    let self_avg = |r: &ProcessedRow| {
        let own = [format!("{SELF_TIME_COLUMN}_Avg"), SELF_TIME_COLUMN.to_string()];
        r.extras
            .iter()
            .find(|(n, _)| own.contains(n))
            .and_then(|(_, v)| match v {
                ExtraValue::Number(x) => Some(*x),
                _ => None,
            })
    };
    let with_self = p.rows.iter().any(|r| self_avg(r).is_some());
    cols.push(("AvgValue".to_string(), true));
    if with_self {
        cols.push(("SelfAvg".to_string(), true));
    }
    for (n, right) in [
        ("+/-CI95", true),
        ("StdDev", true),
        ("RSD%", true),
        ("Stable", false),
        ("NumRuns", true),
        ("Unit", false),
    ] {
        cols.push((n.to_string(), right));
    }
    if normalised {
        cols.push(("Baseline".into(), false));
        cols.push(("BaselineAvg".into(), true));
    }
    let mut t = Table::new(&cols);
    for r in &p.rows {
        let s = &r.summary;
        let mut row = Vec::with_capacity(cols.len());
        if multi_bench {
            row.push(clip(&r.benchmark, 40));
        }
        row.push(clip(&r.annotation, 40));
        row.push(clip(&r.metric, 48));
        for n in &params {
            row.push(r.config.get(n).map(|v| clip(&v.to_string(), 24)).unwrap_or_default());
        }
        row.push(fmt_sig(s.mean));
        if with_self {
            row.push(self_avg(r).map(fmt_sig).unwrap_or_else(|| "-".into()));
        }
        row.push(fmt_sig((s.ci95_upper - s.ci95_lower) / 2.0));
        row.push(fmt_sig(s.std_dev));
        row.push(if s.rsd_pct.is_nan() {
            "-".into()
        } else {
            format!("{:.2}", s.rsd_pct)
        });
        row.push(
            match s.stable {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
            .into(),
        );
        row.push(if s.total_runs > s.num_runs {
            format!("{}/{}", s.num_runs, s.total_runs)
        } else {
            s.num_runs.to_string()
        });
        row.push(r.unit.clone());
        if normalised {
            row.push(r.normalized.clone().unwrap_or_else(|| "-".into()));
            row.push(r.normalization_value.map(fmt_sig).unwrap_or_else(|| "-".into()));
        }
        t.rows.push(row);
    }
    let mut out = if p.rows.is_empty() {
        "(no results)\n".to_string()
    } else {
        t.render()
    };
    if normalised {
        out.push_str(
            "Normalised rows (unit x): AvgValue, StdDev, CI, Min/Max and percentiles are on the ratio scale \
             (relative to the baseline's mean); NormalizationValue is the baseline's mean in its original unit.\n",
        );
    }
    if !p.missing_baselines.is_empty() {
        out.push_str(&format!(
            "Missing baselines ({}), not normalised:\n",
            p.missing_baselines.len()
        ));
        for m in &p.missing_baselines {
            let config = m.config.to_string();
            out.push_str(&format!(
                "  {} / {} / {}{}\n",
                m.benchmark,
                m.annotation,
                m.metric,
                if config.is_empty() {
                    String::new()
                } else {
                    format!(" [{config}]")
                }
            ));
        }
    }
    out
}

/// The columns every table starts with, each `(name, right-aligned)`: Benchmark (when there is
/// more than one), Annotation and Metric.
fn leading_columns(multi_bench: bool) -> Vec<(String, bool)> {
    let mut cols: Vec<(String, bool)> = Vec::new();
    if multi_bench {
        cols.push(("Benchmark".into(), false));
    }
    cols.push(("Annotation".into(), false));
    cols.push(("Metric".into(), false));
    cols
}

/// Renders the first `max_rows` raw samples: Benchmark (when more than one), Annotation, Metric,
/// each parameter, Run, Value (`failed` for NaN), Unit, Kernel, and each extra column; a footer
/// says how many rows were left out.
pub fn render_raw(r: &RawResults, max_rows: usize) -> String {
    let params = r.param_names();
    let multi_bench = r
        .series
        .iter()
        .any(|s| r.series.first().is_some_and(|f| f.key.benchmark != s.key.benchmark));
    let mut cols = leading_columns(multi_bench);
    cols.extend(params.iter().map(|n| {
        let numeric = r.configs.iter().all(|c| c.get(n).is_none_or(|v| v.as_f64().is_some()));
        (n.clone(), numeric)
    }));
    cols.push(("Run".into(), true));
    cols.push(("Value".into(), true));
    cols.push(("Unit".into(), false));
    cols.push(("Kernel".into(), false));
    cols.extend(r.extras.iter().map(|c| (c.name.clone(), false)));
    let mut t = Table::new(&cols);
    for (i, s) in r.samples.iter().enumerate().take(max_rows) {
        let Some(series) = r.series.get(s.series as usize) else {
            continue;
        };
        let config = r.configs.get(series.key.config as usize);
        let mut row = Vec::with_capacity(cols.len());
        if multi_bench {
            row.push(clip(&series.key.benchmark, 40));
        }
        row.push(clip(&series.key.annotation, 40));
        row.push(clip(&series.key.metric, 48));
        for n in &params {
            row.push(
                config
                    .and_then(|c| c.get(n))
                    .map(|v| clip(&v.to_string(), 24))
                    .unwrap_or_default(),
            );
        }
        row.push(s.run.to_string());
        row.push(if s.value.is_nan() {
            "failed".into()
        } else {
            fmt_sig(s.value)
        });
        row.push(series.unit.clone());
        row.push(clip(
            r.kernel_names.get(s.kernel as usize).map(String::as_str).unwrap_or(""),
            48,
        ));
        for c in &r.extras {
            row.push(clip(&c.values.get(i).map(|v| v.to_string()).unwrap_or_default(), 24));
        }
        t.rows.push(row);
    }
    let mut out = if r.samples.is_empty() {
        "(no samples)\n".to_string()
    } else {
        t.render()
    };
    if r.samples.len() > max_rows {
        out.push_str(&format!(
            "... {} more rows ({} samples in all)\n",
            r.samples.len() - max_rows,
            r.samples.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn si_prefixes() {
        assert_eq!(fmt_si(6.69e13), format!("{} T", fmt_sig(66.9)));
        assert_eq!(fmt_si(7.5e11), format!("{} G", fmt_sig(750.0)));
        assert_eq!(fmt_si(1.014), fmt_sig(1.014));
        assert_eq!(fmt_si(-2.0e6), format!("{} M", fmt_sig(-2.0)));
        assert_eq!(fmt_si(f64::NAN), "-");
    }
    use super::{display_width, fmt_si, fmt_sig, printable, render_table};

    #[test]
    fn wide_names_align_and_control_characters_are_escaped() {
        let header = vec!["Name".to_string(), "Value".to_string()];
        let rows = vec![
            vec!["矩阵乘法".to_string(), "1".to_string()],
            vec!["ab🚀".to_string(), "22".to_string()],
            vec!["evil\u{202E}txt".to_string(), "333".to_string()],
        ];
        let out = render_table(&header, &[false, true], &rows);
        assert!(!out.contains('\u{202E}'), "{out}");
        assert!(out.contains("evil\\u{202E}txt"), "{out}");
        let widths: Vec<usize> = out.lines().map(display_width).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{widths:?}\n{out}");
        assert_eq!(display_width("矩阵"), 4);
        assert_eq!(printable("a\u{7}b"), "a\\u{0007}b");
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(fmt_sig(0.0), "0");
        assert_eq!(fmt_sig(1.0), "1.000");
        assert_eq!(fmt_sig(12.3456), "12.35");
        // 4-digit integer parts are grouped like longer ones.
        assert_eq!(fmt_sig(1234.4), "1,234");
        assert_eq!(fmt_sig(-1234.4), "-1,234");
        assert_eq!(fmt_sig(5408.0), "5,408");
        assert_eq!(fmt_sig(999.96), "1,000");
        assert_eq!(fmt_sig(123456.7), "123,457");
        assert_eq!(fmt_sig(0.00123456), "0.001235");
        assert_eq!(fmt_sig(9.99996), "10.00");
        assert_eq!(fmt_sig(1.5e-7), "1.500e-7");
        assert_eq!(fmt_sig(f64::NAN), "-");
    }
}
