//! What to plot: [`PlotSpec`] and its option enums.

/// How rows are split into series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SeriesBy {
    /// One series per annotation (nsight-python's default).
    #[default]
    Annotation,
    /// nsight-python's `variant_fields` + `variant_annotations`: the listed annotations (all
    /// annotations when `annotations` is empty) are split into one series per combination of
    /// `fields`, labelled `"<annotation> k=v, ..."`; other annotations stay one series each.
    Variant {
        /// Parameters whose value combinations split a series.
        fields: Vec<String>,
        /// Annotations to split; empty means all.
        annotations: Vec<String>,
    },
}

/// Line plot or grouped bars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlotType {
    /// Lines with markers (numeric x axes stay numeric).
    #[default]
    Line,
    /// Grouped bars, one group per x value.
    Bar,
}

/// The extra aggregate bar drawn per series after the x values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Arithmetic mean of the plotted means (`AvgValue`) in the panel.
    Avg,
    /// The row's `Geomean` column (the geometric mean of `AvgValue` over the configs) when the
    /// series shows all configs of its annotation; otherwise (split series, panels, NaN column)
    /// the geometric mean of the series' plotted positive means.
    Geomean,
}

/// Everything that describes one plot of one metric.
///
/// `PlotSpec::new("gpu__time_duration.sum")` gives nsight-python's defaults plus error bars;
/// set the public fields to change them.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    /// Metric to plot. Empty: the only metric in the results (an error when there are several).
    pub metric: String,
    /// Configuration parameter on the x axis. `None`: a categorical axis labelled with the
    /// configuration (`"p1=v1, p2=v2"`, leaving out parameters used for panels or variants).
    /// Parameters that are neither x, panels nor variant fields split series further, so no
    /// two points of a series share an x value.
    pub x: Option<String>,
    /// How rows become series.
    pub series_by: SeriesBy,
    /// Lines or grouped bars.
    pub plot_type: PlotType,
    /// Draw CI95 error bars (`Summary::ci95_lower..ci95_upper`) where there are >= 2 runs.
    pub error_bars: bool,
    /// Parameters whose value combinations make the rows of the facet grid.
    pub row_panels: Vec<String>,
    /// Parameters whose value combinations make the columns of the facet grid.
    pub col_panels: Vec<String>,
    /// Add an aggregate bar per series.
    pub aggregate: Option<Aggregate>,
    /// Write each point's value next to it.
    pub annotate_points: bool,
    /// Title; the default is the metric. The GPU names are added below it.
    pub title: Option<String>,
    /// Replaces the metric name in the y label; the unit is still appended.
    pub ylabel: Option<String>,
    /// Image width in pixels; `None` sizes it from the facet grid.
    pub width_px: Option<u32>,
    /// Image height in pixels; `None` sizes it from the facet grid.
    pub height_px: Option<u32>,
}

impl Default for PlotSpec {
    fn default() -> Self {
        PlotSpec {
            metric: String::new(),
            x: None,
            series_by: SeriesBy::Annotation,
            plot_type: PlotType::Line,
            error_bars: true,
            row_panels: Vec::new(),
            col_panels: Vec::new(),
            aggregate: None,
            annotate_points: false,
            title: None,
            ylabel: None,
            width_px: None,
            height_px: None,
        }
    }
}

impl PlotSpec {
    /// A line plot of `metric` with error bars and every other option at its default.
    pub fn new(metric: impl Into<String>) -> Self {
        PlotSpec {
            metric: metric.into(),
            ..Default::default()
        }
    }

    /// Sets the x-axis parameter (builder style).
    pub fn with_x(mut self, param: impl Into<String>) -> Self {
        self.x = Some(param.into());
        self
    }
}
