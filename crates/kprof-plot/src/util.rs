//! Small shared helpers: number formatting, value ordering, palette and markers, HTML escaping.

use std::cmp::Ordering;

use kprof_core::{Config, ParamValue};
use plotters::prelude::*;

/// Compact number text: up to 4 significant digits, exponent form for very large or small values.
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "NaN".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Orders parameter values: numbers numerically, then everything else as text.
pub(crate) fn cmp_values(a: &ParamValue, b: &ParamValue) -> Ordering {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        // Text keeps its first-appearance order (callers sort stably).
        (None, None) => Ordering::Equal,
    }
}

/// Orders value tuples element-wise with [`cmp_values`].
pub(crate) fn cmp_tuples(a: &[ParamValue], b: &[ParamValue]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = cmp_values(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The values of `names` in `config` (missing ones as the text `-`).
pub(crate) fn values_of(config: &Config, names: &[String]) -> Vec<ParamValue> {
    names
        .iter()
        .map(|n| config.get(n).cloned().unwrap_or_else(|| ParamValue::Str("-".into())))
        .collect()
}

/// `k=v, k=v` for the given names and values.
pub(crate) fn label(names: &[String], values: &[ParamValue]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ten colours (Tableau 10, readable on white and distinguishable with common colour-vision
/// deficiencies when combined with the marker shapes).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Marker shapes; with 10 colours and 7 shapes the first 70 series are all distinct pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    Cross,
    TriangleDown,
    Plus,
}

const MARKERS: [Marker; 7] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::Cross,
    Marker::TriangleDown,
    Marker::Plus,
];

/// Colour and marker of series `i`.
pub(crate) fn series_style(i: usize) -> (RGBColor, Marker) {
    (PALETTE[i % PALETTE.len()], MARKERS[i % MARKERS.len()])
}

/// A marker element at a chart coordinate.
pub(crate) fn marker<'a, DB: DrawingBackend + 'a, C: Clone + 'a>(
    m: Marker,
    at: C,
    size: i32,
    color: RGBColor,
) -> DynElement<'a, DB, C> {
    let fill = color.filled();
    let stroke = color.stroke_width(2);
    let s = size;
    match m {
        Marker::Circle => Circle::new(at, s, fill).into_dyn(),
        Marker::Square => (EmptyElement::at(at) + Rectangle::new([(-s, -s), (s, s)], fill)).into_dyn(),
        Marker::TriangleUp => {
            (EmptyElement::at(at) + Polygon::new(vec![(0, -s - 1), (s + 1, s), (-s - 1, s)], fill)).into_dyn()
        }
        Marker::TriangleDown => {
            (EmptyElement::at(at) + Polygon::new(vec![(0, s + 1), (s + 1, -s), (-s - 1, -s)], fill)).into_dyn()
        }
        Marker::Diamond => (EmptyElement::at(at)
            + Polygon::new(vec![(0, -s - 1), (s + 1, 0), (0, s + 1), (-s - 1, 0)], fill))
        .into_dyn(),
        Marker::Cross => (EmptyElement::at(at)
            + PathElement::new(vec![(-s, -s), (s, s)], stroke)
            + PathElement::new(vec![(-s, s), (s, -s)], stroke))
        .into_dyn(),
        Marker::Plus => (EmptyElement::at(at)
            + PathElement::new(vec![(-s - 1, 0), (s + 1, 0)], stroke)
            + PathElement::new(vec![(0, -s - 1), (0, s + 1)], stroke))
        .into_dyn(),
    }
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    crate::svg::escape(&mut out, s);
    out
}

/// Maps a plotters error to [`crate::PlotError::Render`].
pub(crate) fn render_err<E: std::fmt::Display>(e: E) -> crate::PlotError {
    crate::PlotError::Render(e.to_string())
}

/// Largest image side we agree to draw (a bitmap of this size is ~200 MB).
pub(crate) const MAX_SIDE: u32 = 8192;
