//! `kprof plot`: one metric of a result file as an SVG or PNG image.
//!
//! ```text
//! kprof plot PROCESSED.csv --metric M [--x n] [-o fig.svg|fig.png] [--type line|bar]
//!            [--row-panels a,b] [--col-panels c] [--aggregate avg|geomean] [--annotate-points]
//!            [--no-error-bars] [--title T] [--ylabel Y] [--variant-fields f --variant-annotations a]
//! ```
//!
//! The input may also be a raw CSV (summarised with the default statistics) or a kprof JSON
//! file. An unknown metric or parameter is an error listing the available names (exit 1).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::output;
use kprof_plot::{render_png_bytes, render_svg, Aggregate, PlotSpec, PlotType, SeriesBy};

use crate::results_input;

/// `--type`: line plot or grouped bars.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotTypeArg {
    /// Lines with markers.
    Line,
    /// Grouped bars.
    Bar,
}

/// `--aggregate`: the extra aggregate bar per series.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateArg {
    /// Arithmetic mean of the plotted means.
    Avg,
    /// Geometric mean.
    Geomean,
}

/// Arguments of `kprof plot`.
#[derive(clap::Args, Debug, Clone)]
pub struct PlotArgs {
    /// Result file: processed CSV, raw CSV or kprof JSON.
    pub input: PathBuf,
    /// Metric to plot; may be left out when the file has only one.
    #[arg(short, long, value_name = "M")]
    pub metric: Option<String>,
    /// Configuration parameter on the x axis (default: a categorical axis of configurations).
    #[arg(long, value_name = "PARAM")]
    pub x: Option<String>,
    /// Output image; `.png` writes a PNG, anything else an SVG.
    #[arg(short, long, default_value = "plot.svg", value_name = "FILE")]
    pub output: PathBuf,
    /// Line plot or grouped bars.
    #[arg(long = "type", value_enum, default_value = "line")]
    pub plot_type: PlotTypeArg,
    /// Parameters whose value combinations make the rows of the facet grid.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub row_panels: Vec<String>,
    /// Parameters whose value combinations make the columns of the facet grid.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub col_panels: Vec<String>,
    /// Add an aggregate bar per series.
    #[arg(long, value_enum)]
    pub aggregate: Option<AggregateArg>,
    /// Write each point's value next to it.
    #[arg(long)]
    pub annotate_points: bool,
    /// Leave out the CI95 error bars.
    #[arg(long)]
    pub no_error_bars: bool,
    /// Plot title (default: the metric).
    #[arg(long, value_name = "T")]
    pub title: Option<String>,
    /// y-axis label replacing the metric name (the unit is still appended).
    #[arg(long, value_name = "Y")]
    pub ylabel: Option<String>,
    /// Split series by the value combinations of these parameters (nsight-python's variant_fields).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub variant_fields: Vec<String>,
    /// Only split these annotations by the variant fields (default: all).
    #[arg(long, value_delimiter = ',', value_name = "A,B", requires = "variant_fields")]
    pub variant_annotations: Vec<String>,
    /// Image width in pixels (default: sized from the facet grid).
    #[arg(long, value_name = "PX")]
    pub width: Option<u32>,
    /// Image height in pixels (default: sized from the facet grid).
    #[arg(long, value_name = "PX")]
    pub height: Option<u32>,
}

impl PlotArgs {
    /// The [`PlotSpec`] these arguments describe.
    pub fn spec(&self) -> PlotSpec {
        PlotSpec {
            metric: self.metric.clone().unwrap_or_default(),
            x: self.x.clone(),
            series_by: if self.variant_fields.is_empty() {
                SeriesBy::Annotation
            } else {
                SeriesBy::Variant {
                    fields: self.variant_fields.clone(),
                    annotations: self.variant_annotations.clone(),
                }
            },
            plot_type: match self.plot_type {
                PlotTypeArg::Line => PlotType::Line,
                PlotTypeArg::Bar => PlotType::Bar,
            },
            error_bars: !self.no_error_bars,
            row_panels: self.row_panels.clone(),
            col_panels: self.col_panels.clone(),
            aggregate: self.aggregate.map(|a| match a {
                AggregateArg::Avg => Aggregate::Avg,
                AggregateArg::Geomean => Aggregate::Geomean,
            }),
            annotate_points: self.annotate_points,
            title: self.title.clone(),
            ylabel: self.ylabel.clone(),
            width_px: self.width,
            height_px: self.height,
        }
    }
}

/// Runs `kprof plot`: reads the input, renders the plot, writes the image.
pub fn run(args: &PlotArgs) -> Result<()> {
    let input = results_input::load(&args.input)?;
    if input.processed.rows.is_empty() {
        bail!("{} has no rows to plot", args.input.display());
    }
    let spec = args.spec();
    let png = args.output.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if png {
        render_png_bytes(&input.processed, &spec).with_context(|| format!("cannot plot {}", args.input.display()))?
    } else {
        render_svg(&input.processed, &spec)
            .with_context(|| format!("cannot plot {}", args.input.display()))?
            .into_bytes()
    };
    output::write_file(&args.output, &bytes)?;
    output::wrote(&args.output, "");
    Ok(())
}
