//! The embedded font (DejaVu Sans, see `assets/DejaVu-LICENSE.txt`), registered with plotters once.

use std::sync::OnceLock;

use plotters::style::FontStyle;

use crate::PlotError;

/// The font family name every kprof plot uses; it is backed by the embedded DejaVu Sans.
pub const FONT_FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTERED: OnceLock<bool> = OnceLock::new();

/// Registers the embedded font for every style plotters may ask for (idempotent).
pub(crate) fn ensure_font() -> Result<(), PlotError> {
    let ok = *REGISTERED.get_or_init(|| {
        [
            FontStyle::Normal,
            FontStyle::Bold,
            FontStyle::Italic,
            FontStyle::Oblique,
        ]
        .into_iter()
        .all(|style| plotters::style::register_font(FONT_FAMILY, style, DEJAVU_SANS).is_ok())
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Render(
            "the embedded DejaVu Sans font could not be loaded".into(),
        ))
    }
}
