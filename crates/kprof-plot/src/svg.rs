//! An SVG drawing backend for plotters that can tag elements with a CSS class.
//!
//! plotters' own `SVGBackend` writes anonymous elements, so a test (or a stylesheet) cannot tell
//! a series line from a grid line. This backend writes the same elements, adding
//! `class="..."` from a [`Tagger`] that the drawing code sets before each group of elements.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind, FontStyle,
    FontTransform,
};

/// The font stack written into SVG text: the embedded DejaVu Sans first, so browsers that have
/// it lay text out as the PNG renderer does.
pub(crate) const SVG_FONT_FAMILY: &str = "DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif";

#[derive(Default)]
struct SvgState {
    buf: String,
    class: Option<String>,
}

/// Sets the class of the elements drawn next. A no-op handle for non-SVG backends.
#[derive(Clone, Default)]
pub(crate) struct Tagger(Option<Rc<RefCell<SvgState>>>);

impl Tagger {
    /// Tags the following elements with `class` until the next call.
    pub(crate) fn set(&self, class: &str) {
        if let Some(s) = &self.0 {
            s.borrow_mut().class = Some(class.to_string());
        }
    }

    /// Stops tagging.
    pub(crate) fn clear(&self) {
        if let Some(s) = &self.0 {
            s.borrow_mut().class = None;
        }
    }
}

/// Error type of the SVG backend (it cannot fail; plotters needs a type).
#[derive(Debug)]
pub(crate) struct SvgError;

impl std::fmt::Display for SvgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("svg backend error")
    }
}

impl std::error::Error for SvgError {}

/// The backend. Create it with [`TaggedSvg::new`], draw, then take the text with
/// [`TaggedSvg::finish`] on the handle returned alongside.
pub(crate) struct TaggedSvg {
    state: Rc<RefCell<SvgState>>,
    size: (u32, u32),
}

/// Reads the finished SVG text out of a backend's shared state.
pub(crate) struct SvgOutput(Rc<RefCell<SvgState>>);

impl SvgOutput {
    /// The whole document, closed.
    pub(crate) fn finish(self) -> String {
        let mut s = std::mem::take(&mut self.0.borrow_mut().buf);
        s.push_str("</svg>\n");
        s
    }
}

pub(crate) fn escape(buf: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '<' => buf.push_str("&lt;"),
            '>' => buf.push_str("&gt;"),
            '&' => buf.push_str("&amp;"),
            '"' => buf.push_str("&quot;"),
            '\'' => buf.push_str("&apos;"),
            other => buf.push(other),
        }
    }
}

/// The `fill` and `stroke` attributes of a shape drawn filled or as an outline in `c`.
fn fill_and_stroke(c: BackendColor, fill: bool) -> (String, String) {
    if fill {
        (color(c), "none".to_string())
    } else {
        ("none".to_string(), color(c))
    }
}

fn color(c: BackendColor) -> String {
    let (r, g, b) = c.rgb;
    format!("#{r:02X}{g:02X}{b:02X}")
}

impl TaggedSvg {
    /// A new document of `size` pixels, with a tagger and an output handle.
    pub(crate) fn new(size: (u32, u32)) -> (TaggedSvg, Tagger, SvgOutput) {
        let state = Rc::new(RefCell::new(SvgState::default()));
        {
            let mut s = state.borrow_mut();
            let (w, h) = size;
            let _ = writeln!(
                s.buf,
                r#"<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg" class="kprof-plot">"#
            );
        }
        (
            TaggedSvg {
                state: state.clone(),
                size,
            },
            Tagger(Some(state.clone())),
            SvgOutput(state),
        )
    }

    fn element(&mut self, tag: &str, attrs: &[(&str, String)], text: Option<&str>) {
        let mut s = self.state.borrow_mut();
        let class = s.class.clone();
        let buf = &mut s.buf;
        buf.push('<');
        buf.push_str(tag);
        if let Some(c) = class {
            buf.push_str(" class=\"");
            escape(buf, &c);
            buf.push('"');
        }
        for (k, v) in attrs {
            buf.push(' ');
            buf.push_str(k);
            buf.push_str("=\"");
            escape(buf, v);
            buf.push('"');
        }
        match text {
            None => buf.push_str("/>\n"),
            Some(t) => {
                buf.push('>');
                escape(buf, t);
                buf.push_str("</");
                buf.push_str(tag);
                buf.push_str(">\n");
            }
        }
    }
    /// One `tag` element with the attributes `attrs` gives for the colour `c`; nothing when `c` is
    /// fully transparent.
    fn shape(
        &mut self,
        tag: &str,
        c: BackendColor,
        attrs: impl FnOnce(BackendColor) -> Vec<(&'static str, String)>,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        if c.alpha != 0.0 {
            self.element(tag, &attrs(c), None);
        }
        Ok(())
    }
}

fn points(path: impl IntoIterator<Item = BackendCoord>) -> String {
    let mut s = String::new();
    for (x, y) in path {
        let _ = write!(s, "{x},{y} ");
    }
    s.pop();
    s
}

impl DrawingBackend for TaggedSvg {
    type ErrorType = SvgError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<SvgError>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<SvgError>> {
        Ok(())
    }

    fn draw_pixel(&mut self, p: BackendCoord, c: BackendColor) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("rect", c, |c| {
            vec![
                ("x", p.0.to_string()),
                ("y", p.1.to_string()),
                ("width", "1".into()),
                ("height", "1".into()),
                ("fill", color(c)),
                ("opacity", c.alpha.to_string()),
            ]
        })
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("line", style.color(), |c| {
            vec![
                ("x1", from.0.to_string()),
                ("y1", from.1.to_string()),
                ("x2", to.0.to_string()),
                ("y2", to.1.to_string()),
                ("stroke", color(c)),
                ("stroke-width", style.stroke_width().to_string()),
                ("opacity", c.alpha.to_string()),
            ]
        })
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("rect", style.color(), |c| {
            let (f, s) = fill_and_stroke(c, fill);
            vec![
                ("x", ul.0.to_string()),
                ("y", ul.1.to_string()),
                ("width", (br.0 - ul.0).to_string()),
                ("height", (br.1 - ul.1).to_string()),
                ("fill", f),
                ("stroke", s),
                ("opacity", c.alpha.to_string()),
            ]
        })
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("polyline", style.color(), |c| {
            vec![
                ("fill", "none".into()),
                ("stroke", color(c)),
                ("stroke-width", style.stroke_width().to_string()),
                ("opacity", c.alpha.to_string()),
                ("points", points(path)),
            ]
        })
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("polygon", style.color(), |c| {
            vec![
                ("fill", color(c)),
                ("opacity", c.alpha.to_string()),
                ("points", points(path)),
            ]
        })
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        self.shape("circle", style.color(), |c| {
            let (f, s) = fill_and_stroke(c, fill);
            vec![
                ("cx", center.0.to_string()),
                ("cy", center.1.to_string()),
                ("r", radius.to_string()),
                ("fill", f),
                ("stroke", s),
                ("stroke-width", style.stroke_width().to_string()),
                ("opacity", c.alpha.to_string()),
            ]
        })
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<SvgError>> {
        let c = style.color();
        if c.alpha == 0.0 {
            return Ok(());
        }
        let (x, y) = pos;
        let anchor = match style.anchor().h_pos {
            HPos::Left => "start",
            HPos::Right => "end",
            HPos::Center => "middle",
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => "0.76em",
            VPos::Center => "0.5ex",
            VPos::Bottom => "-0.5ex",
        };
        let mut attrs = vec![
            ("x", x.to_string()),
            ("y", y.to_string()),
            ("dy", dy.to_string()),
            ("text-anchor", anchor.to_string()),
            ("font-family", SVG_FONT_FAMILY.to_string()),
            ("font-size", format!("{:.1}", style.size() / 1.24)),
            ("fill", color(c)),
        ];
        match style.style() {
            FontStyle::Normal => {}
            FontStyle::Bold => attrs.push(("font-weight", "bold".into())),
            other => attrs.push(("font-style", other.as_str().into())),
        }
        let rot = match style.transform() {
            FontTransform::Rotate90 => Some(90),
            FontTransform::Rotate180 => Some(180),
            FontTransform::Rotate270 => Some(270),
            _ => None,
        };
        if let Some(r) = rot {
            attrs.push(("transform", format!("rotate({r}, {x}, {y})")));
        }
        self.element("text", &attrs, Some(text));
        Ok(())
    }
}
