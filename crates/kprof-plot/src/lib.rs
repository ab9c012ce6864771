//! kprof-plot: plots and a self-contained HTML report from kprof results, drawn with plotters and
//! an embedded DejaVu Sans font ([`FONT_FAMILY`]: PNG output needs no system font); SVG elements
//! carry `kprof-*` CSS classes for tests and stylesheets. What users get: `docs/offline.md`.
//! - [`render_svg`] / [`render_png`]: a metric against a configuration parameter, one series per
//!   annotation (or variant), CI95 error bars; the palette cycles together with marker shapes, so
//!   any number of series stays readable.
//! - [`render_distribution_svg`]: each configuration's runs over a box plot, Tukey outliers marked.
//! - [`render_roofline_svg`]: the roofline of a result's speed-of-light rows (`kprof_core::sol`).
//! - [`render_report`]: one HTML file with inline CSS, JS and SVG and no network references.

#![warn(missing_docs)]

mod dist;
mod font;
mod plot;
mod report;
mod roofline;
mod spec;
mod svg;
mod util;

pub use dist::{render_distribution_svg, DistributionSpec};
pub use font::FONT_FAMILY;
pub use plot::{render_png, render_png_bytes, render_svg};
pub use report::{render_report, ReportInput, ReportOptions};
pub use roofline::{render_roofline_png_bytes, render_roofline_svg, RooflineSpec};

pub use spec::{Aggregate, PlotSpec, PlotType, SeriesBy};

/// Why a plot or report could not be made. Errors about names list the names that exist.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The metric is not in the results.
    #[error("unknown metric {metric:?}; available metrics: {}", .available.join(", "))]
    UnknownMetric {
        /// The metric asked for.
        metric: String,
        /// Metrics present in the results.
        available: Vec<String>,
    },
    /// No metric was named and the results hold more than one.
    #[error("no metric given and the results have several; choose one of: {}", .available.join(", "))]
    AmbiguousMetric {
        /// Metrics present in the results.
        available: Vec<String>,
    },
    /// A parameter named in the spec (x axis, panels, variant fields) does not exist.
    #[error("unknown parameter {name:?} (used as {role}); available parameters: {}", if .available.is_empty() { "(none)".to_string() } else { .available.join(", ") })]
    UnknownParameter {
        /// The parameter asked for.
        name: String,
        /// Where the spec used it (`x`, `row_panels`, `col_panels`, `variant fields`).
        role: &'static str,
        /// Parameters present in the results.
        available: Vec<String>,
    },
    /// An annotation named in the spec does not exist.
    #[error("unknown annotation {name:?}; available annotations: {}", .available.join(", "))]
    UnknownAnnotation {
        /// The annotation asked for.
        name: String,
        /// Annotations present in the results.
        available: Vec<String>,
    },
    /// The spec contradicts itself (a parameter used twice, a zero or huge image size).
    #[error("invalid plot spec: {0}")]
    InvalidSpec(String),
    /// Nothing to draw (no rows, or every value NaN).
    #[error("nothing to plot: {0}")]
    NoData(String),
    /// plotters failed while drawing or encoding the image.
    #[error("rendering failed: {0}")]
    Render(String),
    /// Writing the image file failed (the message names the file).
    #[error(transparent)]
    Write(#[from] kprof_core::io::IoError),
}
