//! `--format markdown` of `kprof compare` and `kprof history`: a summary that a pull-request
//! comment, a GitLab merge-request note or `$GITHUB_STEP_SUMMARY` shows well. A heading with the
//! count of each verdict, one table row per series with a mark for its verdict, the worst first
//! (regressions by how much worse, then changes the test could not confirm, untested and unmatched
//! series, unchanged ones, improvements last). The verdicts are those of `kprof compare`
//! ([`Verdict`]); for `kprof history`, the latest commit's change against the one before it.

use std::cmp::Ordering;

use kprof_store::history::{Change, SeriesHistory};

use crate::compare_cmd::{fmt_num, fmt_pct, lower_is_better, DirectionArg, Row, Verdict};
use crate::store_cmd::short;

/// The mark of a verdict in a Markdown table.
pub fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "🔴",
        Verdict::NotSignificant => "🟡",
        Verdict::Untested => "❔",
        Verdict::OnlyInBase => "➖",
        Verdict::OnlyInNew => "➕",
        Verdict::Same => "⚪",
        Verdict::Improvement => "🟢",
    }
}

/// The order of the rows: worst verdict first.
fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Regression => 0,
        Verdict::NotSignificant => 1,
        Verdict::Untested => 2,
        Verdict::OnlyInBase => 3,
        Verdict::OnlyInNew => 4,
        Verdict::Same => 5,
        Verdict::Improvement => 6,
    }
}

/// How much worse, in percent (positive: worse); NaN when unknown.
fn worse_pct(change_pct: f64, lower_is_better: bool) -> f64 {
    if lower_is_better {
        change_pct
    } else {
        -change_pct
    }
}

/// Worst first: by verdict, then by how much worse (unknown changes after known ones).
fn worst_first(a: (Verdict, f64), b: (Verdict, f64)) -> Ordering {
    rank(a.0)
        .cmp(&rank(b.0))
        .then_with(|| match (a.1.is_nan(), b.1.is_nan()) {
            (false, false) => b.1.total_cmp(&a.1),
            (x, y) => x.cmp(&y),
        })
}

/// A table cell: `|` escaped and line breaks folded, so a name cannot break the table.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// A Markdown table from its header (`:` in an alignment means right-aligned) and rows.
fn table(header: &[(&str, bool)], rows: &[Vec<String>]) -> String {
    let mut out = String::from("|");
    for (name, _) in header {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str("\n|");
    for (_, right) in header {
        out.push_str(if *right { "--:|" } else { "---|" });
    }
    out.push('\n');
    for row in rows {
        out.push('|');
        for c in row {
            out.push_str(&format!(" {c} |"));
        }
        out.push('\n');
    }
    out
}

/// `🔴 2 regression · ⚪ 3 same`: the count of each verdict present, worst first.
fn counts(verdicts: &[Verdict]) -> String {
    let mut kinds: Vec<Verdict> = verdicts.to_vec();
    kinds.sort_by_key(|v| rank(*v));
    kinds.dedup();
    kinds
        .iter()
        .map(|k| {
            let n = verdicts.iter().filter(|v| *v == k).count();
            format!("{} {n} {}", mark(*k), k.as_str().to_lowercase())
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The series' name: benchmark, annotation, configuration and metric, the empty ones left out.
fn series_label(parts: [&str; 4]) -> String {
    let kept: Vec<&str> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    cell(&kept.join(" / "))
}

/// A mean with its unit.
fn value(mean: f64, unit: &str) -> String {
    let v = fmt_num(mean);
    if unit.is_empty() || v == "-" {
        v
    } else {
        format!("{v} {}", cell(unit))
    }
}

fn interval(low: f64, high: f64) -> String {
    if low.is_finite() && high.is_finite() {
        format!("[{}, {}]", fmt_pct(low), fmt_pct(high))
    } else {
        "-".into()
    }
}

/// What a compare summary says about its inputs and its test.
pub struct CompareContext<'a> {
    /// The baseline: a file, or the store's description of it.
    pub base: &'a str,
    /// The new results.
    pub new: &'a str,
    /// The noise threshold, in percent.
    pub threshold_pct: f64,
    /// The significance level.
    pub alpha: f64,
}

/// The legend and the test, under a table.
fn footer(threshold_pct: f64, alpha: f64) -> String {
    format!(
        "<sub>Welch's t-test at alpha {alpha}, changes under {threshold_pct}% count as same. \
         🔴 regression · 🟡 not significant · ❔ untested (fewer than 2 runs) · ➖ only in base · \
         ➕ only in new · ⚪ same · 🟢 improvement</sub>\n"
    )
}

/// `kprof compare --format markdown`.
pub fn compare(rows: &[Row], ctx: &CompareContext) -> String {
    let mut order: Vec<&Row> = rows.iter().collect();
    order.sort_by(|a, b| {
        worst_first(
            (a.verdict, worse_pct(a.change_pct, a.lower_is_better)),
            (b.verdict, worse_pct(b.change_pct, b.lower_is_better)),
        )
    });
    let verdicts: Vec<Verdict> = rows.iter().map(|r| r.verdict).collect();
    let regressions = verdicts.iter().filter(|v| **v == Verdict::Regression).count();
    let mut out = format!(
        "### kprof compare: {}\n\n{}\n\nBaseline `{}`, new `{}`.\n\n",
        if regressions > 0 { "regression" } else { "no regression" },
        counts(&verdicts),
        cell(ctx.base),
        cell(ctx.new)
    );
    let header = [
        ("", false),
        ("Series", false),
        ("Base", true),
        ("New", true),
        ("Change", true),
        ("CI95", true),
        ("p", true),
        ("Verdict", false),
    ];
    let body: Vec<Vec<String>> = order
        .iter()
        .map(|r| {
            let k = &r.key;
            vec![
                mark(r.verdict).to_string(),
                series_label([&k.benchmark, &k.annotation, &k.config, &k.metric]),
                r.base.map_or("-".into(), |m| value(m.mean, &r.unit)),
                r.new.map_or("-".into(), |m| value(m.mean, &r.unit)),
                fmt_pct(r.change_pct),
                interval(r.ci_low_pct, r.ci_high_pct),
                if r.p_value.is_finite() {
                    format!("{:.3}", r.p_value)
                } else {
                    "-".into()
                },
                r.verdict.as_str().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(&header, &body));
    out.push('\n');
    out.push_str(&footer(ctx.threshold_pct, ctx.alpha));
    out
}

/// The verdict of a commit's change against the previous commit, by `kprof compare`'s rules
/// (`marked` is significant and at least the threshold).
pub fn history_verdict(change: Option<&Change>, lower_is_better: bool, threshold_pct: f64) -> Verdict {
    let Some(c) = change else {
        return Verdict::Untested;
    };
    let worse = if lower_is_better { c.pct > 0.0 } else { c.pct < 0.0 };
    if c.pct.is_finite() && c.pct.abs() < threshold_pct {
        Verdict::Same
    } else if c.marked && worse {
        Verdict::Regression
    } else if c.marked {
        Verdict::Improvement
    } else {
        Verdict::NotSignificant
    }
}

/// The change points of a series before its latest commit: `abc1234 🔴 +5.00%`.
fn earlier_change_points(h: &SeriesHistory, lib: bool, threshold_pct: f64) -> String {
    let n = h.points.len();
    let marks: Vec<String> = h.points[..n.saturating_sub(1)]
        .iter()
        .filter_map(|p| {
            let c = p.change.as_ref().filter(|c| c.marked)?;
            let v = history_verdict(Some(c), lib, threshold_pct);
            let commit = p
                .commit
                .as_deref()
                .map_or("-".to_string(), |c| format!("`{}`", short(c)));
            Some(format!("{commit} {} {}", mark(v), fmt_pct(c.pct)))
        })
        .collect();
    if marks.is_empty() {
        "-".into()
    } else {
        marks.join(", ")
    }
}

/// `kprof history --format markdown`: one row per series, its latest commit against the one
/// before it, the earlier change points listed.
pub fn history(histories: &[SeriesHistory], direction: DirectionArg, threshold_pct: f64, alpha: f64) -> String {
    struct Line {
        verdict: Verdict,
        worse: f64,
        cells: Vec<String>,
    }
    let mut lines: Vec<Line> = histories
        .iter()
        .filter_map(|h| {
            let last = h.points.last()?;
            let lib = lower_is_better(&h.series.metric, &h.unit, direction);
            let verdict = history_verdict(last.change.as_ref(), lib, threshold_pct);
            let pct = last.change.map_or(f64::NAN, |c| c.pct);
            let s = &h.series;
            let commit = match &last.commit {
                Some(c) => format!("`{}`{}", short(c), if last.dirty { "+" } else { "" }),
                None => format!("(run {})", last.runs[0]),
            };
            let cells = vec![
                mark(verdict).to_string(),
                series_label([&s.benchmark, &s.annotation, &s.config, &s.metric]),
                h.points.len().to_string(),
                commit,
                value(last.pooled.mean, &h.unit),
                fmt_pct(pct),
                last.change
                    .map_or("-".into(), |c| interval(c.ci_low_pct, c.ci_high_pct)),
                earlier_change_points(h, lib, threshold_pct),
            ];
            Some(Line {
                verdict,
                worse: worse_pct(pct, lib),
                cells,
            })
        })
        .collect();
    lines.sort_by(|a, b| worst_first((a.verdict, a.worse), (b.verdict, b.worse)));
    let verdicts: Vec<Verdict> = lines.iter().map(|l| l.verdict).collect();
    let regressions = verdicts.iter().filter(|v| **v == Verdict::Regression).count();
    let mut out = format!(
        "### kprof history: {}\n\n{}\n\nThe latest commit of each series against the one before it.\n\n",
        if regressions > 0 {
            "regression at the latest commit"
        } else {
            "no regression at the latest commit"
        },
        counts(&verdicts)
    );
    let header = [
        ("", false),
        ("Series", false),
        ("Commits", true),
        ("Latest", false),
        ("Mean", true),
        ("Change", true),
        ("CI95", true),
        ("Earlier change points", false),
    ];
    let body: Vec<Vec<String>> = lines.into_iter().map(|l| l.cells).collect();
    out.push_str(&table(&header, &body));
    out.push('\n');
    out.push_str(&footer(threshold_pct, alpha));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare_cmd::{compare as compare_rows, Key, Moments, Options, Side};

    fn side(values: &[(&str, f64)]) -> Side {
        values
            .iter()
            .map(|(a, mean)| {
                let key = Key {
                    benchmark: "b".into(),
                    annotation: (*a).into(),
                    config: "n=1|2".into(),
                    metric: "gpu__time_duration.sum".into(),
                };
                (
                    key,
                    Moments {
                        n: 10,
                        mean: *mean,
                        sd: 1.0,
                    },
                    "ns".to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn rows_come_worst_first_with_their_marks() {
        let base = side(&[("faster", 100.0), ("same", 100.0), ("small", 100.0), ("big", 100.0)]);
        let new = side(&[("faster", 80.0), ("same", 100.1), ("small", 105.0), ("big", 130.0)]);
        let o = Options {
            threshold_pct: 2.0,
            alpha: 0.05,
            direction: DirectionArg::Auto,
        };
        let ctx = CompareContext {
            base: "a.csv",
            new: "b.csv",
            threshold_pct: 2.0,
            alpha: 0.05,
        };
        let md = compare(&compare_rows(&base, &new, &o), &ctx);
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains(" / "))
            .collect();
        let order: Vec<&str> = ["big", "small", "same", "faster"].to_vec();
        for (line, name) in rows.iter().zip(&order) {
            assert!(line.contains(&format!("b / {name} /")), "{md}");
        }
        assert_eq!(rows.len(), 4, "{md}");
        assert!(rows[0].starts_with("| 🔴 ") && rows[3].starts_with("| 🟢 "), "{md}");
        // The `|` inside the configuration is escaped.
        assert!(rows[0].contains("n=1\\|2"), "{md}");
        assert!(md.starts_with("### kprof compare: regression\n"), "{md}");
        assert!(md.contains("🔴 2 regression · ⚪ 1 same · 🟢 1 improvement"), "{md}");
    }

    #[test]
    fn history_verdicts_follow_compare_rules() {
        let c = |pct: f64, marked: bool| Change {
            pct,
            ci_low_pct: pct - 1.0,
            ci_high_pct: pct + 1.0,
            significant: marked,
            marked,
        };
        assert_eq!(history_verdict(Some(&c(5.0, true)), true, 2.0), Verdict::Regression);
        assert_eq!(history_verdict(Some(&c(5.0, true)), false, 2.0), Verdict::Improvement);
        assert_eq!(
            history_verdict(Some(&c(5.0, false)), true, 2.0),
            Verdict::NotSignificant
        );
        assert_eq!(history_verdict(Some(&c(1.0, false)), true, 2.0), Verdict::Same);
        assert_eq!(history_verdict(None, true, 2.0), Verdict::Untested);
    }
}
