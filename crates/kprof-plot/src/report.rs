//! The self-contained HTML report: summary table, plots, distributions, environment, warnings.

use std::fmt::Write as _;

use kprof_core::{ExtraValue, ProcessedResults, ProcessedRow, RawResults};

use crate::dist::{render_distribution_svg, DistributionSpec};
use crate::plot::render_svg;
use crate::spec::{PlotSpec, PlotType};
use crate::util::{fmt_num, html_escape};
use crate::PlotError;

/// One result set in a report.
#[derive(Clone, Debug)]
pub struct ReportInput<'a> {
    /// Heading of this result set (a file name, a benchmark name).
    pub title: &'a str,
    /// Raw samples, for the per-configuration distributions; optional.
    pub raw: Option<&'a RawResults>,
    /// The processed table: summary table, plots and warnings come from it.
    pub processed: &'a ProcessedResults,
    /// The environment fingerprint (GPU, driver, clocks, ...) as recorded, shown flattened.
    pub environment: Option<&'a serde_json::Value>,
}

/// Report-wide options.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Page title and top heading.
    pub title: String,
    /// Timer resolution in ns; time means below `floor_factor` × this are flagged.
    pub timer_floor_ns: f64,
    /// How many timer floors a time must exceed to be trusted (10 by default).
    pub floor_factor: f64,
    /// x-axis parameter of the plots; `None` picks the first numeric parameter that varies.
    pub x: Option<String>,
    /// Line or bar plots.
    pub plot_type: PlotType,
    /// Draw per-configuration distributions when raw results are given.
    pub distributions: bool,
    /// At most this many distribution images per metric (the rest is mentioned, not drawn).
    pub max_distribution_configs: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: "kprof report".into(),
            timer_floor_ns: 32.0,
            floor_factor: 10.0,
            x: None,
            plot_type: PlotType::Line,
            distributions: true,
            max_distribution_configs: 48,
        }
    }
}

const CSS: &str = r#"
body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;margin:24px;color:#222;background:#fff;max-width:1600px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:20px;border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:16px;margin:20px 0 8px}.meta{color:#666;font-size:13px;margin:0 0 16px}
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;user-select:none;position:sticky;top:0}th:hover{background:#e6e6e6}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td.t,th.t{text-align:left}tr:nth-child(even) td{background:#fafafa}tr.unstable td{background:#fff4e0}
.table-wrap{overflow-x:auto;max-height:640px;overflow-y:auto;border:1px solid #eee}
ul.warnings{padding-left:20px;font-size:13px}ul.warnings li{margin:2px 0}
.warn-unstable,.warn-throttled,.warn-floor,.warn-baseline,.warn-failed{list-style:none}
.tag{display:inline-block;font-size:11px;padding:0 6px;border-radius:3px;margin-right:6px;color:#fff}
.tag.unstable{background:#d9822b}.tag.throttled{background:#c23030}.tag.floor{background:#7a5cc2}.tag.baseline{background:#555}.tag.failed{background:#a00}
.ok{color:#2b7a2b;font-size:13px}figure{margin:8px 0 16px}figure svg{max-width:100%;height:auto;border:1px solid #eee}
.dist-grid{display:flex;flex-wrap:wrap;gap:8px}.dist-grid figure{margin:0}
.plot-error{color:#a00;font-size:13px}table.env td{text-align:left;font-family:"DejaVu Sans Mono",monospace}
details summary{cursor:pointer;font-weight:bold;margin:6px 0}
"#;

const JS: &str = r#"
(function(){
  function key(cell){var v=cell.getAttribute('data-v');return v===null?cell.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    var heads=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads,function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows);
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        rows.sort(function(a,b){
          var x=key(a.cells[i]),y=key(b.cells[i]),nx=parseFloat(x),ny=parseFloat(y),r;
          if(!isNaN(nx)&&!isNaN(ny))r=nx-ny;else if(!isNaN(nx))r=-1;else if(!isNaN(ny))r=1;else r=String(x).localeCompare(String(y));
          return asc?r:-r;});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
})();
"#;

fn distinct(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Number cell with a sortable raw value.
fn num_td(v: f64) -> String {
    if v.is_finite() {
        format!("<td data-v=\"{v}\">{}</td>", fmt_num(v))
    } else {
        "<td data-v=\"\">NaN</td>".into()
    }
}

fn text_td(s: &str) -> String {
    format!("<td class=\"t\">{}</td>", html_escape(s))
}

/// The `ThrottledRuns` column (or its aggregated `_Max`/`_Avg` form) of a row, when present.
fn throttled_runs(r: &ProcessedRow) -> Option<f64> {
    for name in ["ThrottledRuns", "ThrottledRuns_Max", "ThrottledRuns_Avg"] {
        if let Some((_, ExtraValue::Number(x))) = r.extras.iter().find(|(n, _)| n == name) {
            return Some(*x);
        }
    }
    None
}

fn row_label(r: &ProcessedRow) -> String {
    let cfg = r.config.to_string();
    let mut s = format!("{}/{} · {}", r.benchmark, r.annotation, r.metric);
    if !cfg.is_empty() {
        s.push_str(&format!(" · {cfg}"));
    }
    s
}

/// The warnings of one result set, as `(css class, tag text, message)`.
fn warnings(p: &ProcessedResults, opts: &ReportOptions) -> Vec<(&'static str, &'static str, String)> {
    let mut w = Vec::new();
    let floor = opts.timer_floor_ns * opts.floor_factor;
    for r in &p.rows {
        let s = &r.summary;
        if s.stable == Some(false) {
            w.push((
                "unstable",
                "unstable",
                format!(
                    "{}: relative std dev {:.1}% over {} runs (CI95 {} .. {} {})",
                    row_label(r),
                    s.rsd_pct,
                    s.num_runs,
                    fmt_num(s.ci95_lower),
                    fmt_num(s.ci95_upper),
                    r.unit
                ),
            ));
        }
        if let Some(t) = throttled_runs(r).filter(|t| *t > 0.0) {
            w.push((
                "throttled",
                "throttled",
                format!(
                    "{}: {} run(s) measured while the GPU was throttled",
                    row_label(r),
                    fmt_num(t)
                ),
            ));
        }
        if r.unit == "ns" && r.normalized.is_none() && s.mean.is_finite() && s.mean < floor {
            w.push((
                "floor",
                "timer floor",
                format!(
                    "{}: mean {} ns is within {}x of the {} ns timer floor; the value is mostly timer overhead",
                    row_label(r),
                    fmt_num(s.mean),
                    fmt_num(opts.floor_factor),
                    fmt_num(opts.timer_floor_ns)
                ),
            ));
        }
        if s.total_runs > s.num_runs {
            w.push((
                "failed",
                "failed runs",
                format!(
                    "{}: {} of {} runs failed (NaN)",
                    row_label(r),
                    s.total_runs - s.num_runs,
                    s.total_runs
                ),
            ));
        }
    }
    for m in &p.missing_baselines {
        w.push((
            "baseline",
            "no baseline",
            format!(
            "{}/{} · {} · {}: dropped from normalisation, the baseline annotation has no value for this configuration",
            m.benchmark, m.annotation, m.metric, m.config
        ),
        ));
    }
    w
}

fn summary_table(p: &ProcessedResults, out: &mut String) {
    let mut params = p.param_names.clone();
    for r in &p.rows {
        for n in r.config.names() {
            if !params.iter().any(|m| m == n) {
                params.push(n.to_string());
            }
        }
    }
    let extras = distinct(p.rows.iter().flat_map(|r| r.extras.iter().map(|(n, _)| n.clone())));
    let any_norm = p.rows.iter().any(|r| r.normalized.is_some());
    out.push_str("<div class=\"table-wrap\"><table class=\"kprof-summary sortable\"><thead><tr>");
    let mut head = |name: &str, text: bool| {
        let _ = write!(
            out,
            "<th{}>{}</th>",
            if text { " class=\"t\"" } else { "" },
            html_escape(name)
        );
    };
    head("Benchmark", true);
    head("Annotation", true);
    for n in &params {
        head(n, false);
    }
    head("Metric", true);
    head("Unit", true);
    for h in [
        "NumRuns", "AvgValue", "CI95 ±", "StdDev", "RSD %", "Median", "MinValue", "MaxValue",
    ] {
        head(h, false);
    }
    head("Stable", true);
    head("Geomean", false);
    if any_norm {
        head("Normalized", true);
    }
    for e in &extras {
        head(e, false);
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in &p.rows {
        let s = &r.summary;
        let _ = write!(
            out,
            "<tr{}>",
            if s.stable == Some(false) {
                " class=\"unstable\""
            } else {
                ""
            }
        );
        out.push_str(&text_td(&r.benchmark));
        out.push_str(&text_td(&r.annotation));
        for n in &params {
            match r.config.get(n) {
                Some(v) => match v.as_f64() {
                    Some(x) if !matches!(v, kprof_core::ParamValue::Bool(_)) => {
                        let _ = write!(out, "<td data-v=\"{x}\">{}</td>", html_escape(&v.to_string()));
                    }
                    _ => out.push_str(&text_td(&v.to_string())),
                },
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str(&text_td(&r.metric));
        out.push_str(&text_td(&r.unit));
        let _ = write!(out, "<td data-v=\"{}\">{}</td>", s.num_runs, s.num_runs);
        out.push_str(&num_td(s.mean));
        out.push_str(&num_td((s.ci95_upper - s.ci95_lower) / 2.0));
        out.push_str(&num_td(s.std_dev));
        out.push_str(&num_td(s.rsd_pct));
        out.push_str(&num_td(s.median));
        out.push_str(&num_td(s.min));
        out.push_str(&num_td(s.max));
        out.push_str(&text_td(match s.stable {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        }));
        out.push_str(&num_td(r.geomean));
        if any_norm {
            out.push_str(&text_td(r.normalized.as_deref().unwrap_or("")));
        }
        for e in &extras {
            match r.extras.iter().find(|(n, _)| n == e).map(|(_, v)| v) {
                Some(ExtraValue::Number(x)) => out.push_str(&num_td(*x)),
                Some(v) => out.push_str(&text_td(&v.to_string())),
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    if out.len() >= 1000 {
        return;
    }
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flatten(&key(k), v, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), v, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The x parameter for a report's plots: the first numeric parameter with more than one value.
fn auto_x(p: &ProcessedResults) -> Option<String> {
    p.param_names.iter().find_map(|n| {
        let vals: Vec<f64> = p
            .rows
            .iter()
            .filter_map(|r| r.config.get(n).and_then(|v| v.as_f64()))
            .collect();
        let numeric = vals.len() == p.rows.len()
            && p.rows.iter().all(|r| {
                matches!(
                    r.config.get(n),
                    Some(kprof_core::ParamValue::Int(_) | kprof_core::ParamValue::Float(_))
                )
            });
        let varies = vals.iter().any(|v| *v != vals[0]);
        (numeric && varies).then(|| n.clone())
    })
}

/// Renders one self-contained HTML report over several result sets.
///
/// The page has inline CSS, a small inline script that sorts the summary table when a header is
/// clicked, one inline SVG per metric plot, per-configuration distribution SVGs when raw results
/// are given, the environment fingerprint when given, and a warnings section (unstable
/// measurements, throttled runs, means within `floor_factor` × `timer_floor_ns`, failed runs,
/// configurations dropped for lack of a baseline). It references nothing on the network.
///
/// A plot that cannot be drawn (say, a metric whose values are all NaN) is reported on the page
/// instead of failing the report; an invalid `opts.x` fails it with the available names.
pub fn render_report(inputs: &[ReportInput<'_>], opts: &ReportOptions) -> Result<String, PlotError> {
    if !(opts.timer_floor_ns.is_finite() && opts.timer_floor_ns >= 0.0 && opts.floor_factor.is_finite()) {
        return Err(PlotError::InvalidSpec(
            "timer floor and factor must be finite and non-negative".into(),
        ));
    }
    let mut h = String::with_capacity(1 << 20);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n<p class=\"meta\">kprof-plot {v} · {n} result set(s) · self-contained: no network access needed</p>\n",
        t = html_escape(&opts.title),
        v = env!("CARGO_PKG_VERSION"),
        n = inputs.len()
    );
    for (ii, input) in inputs.iter().enumerate() {
        let p = input.processed;
        let _ = write!(
            h,
            "<section class=\"result\" id=\"result-{ii}\">\n<h2>{}</h2>\n",
            html_escape(input.title)
        );
        let gpus = distinct(p.rows.iter().map(|r| r.device.gpu.clone()).filter(|g| !g.is_empty()));
        if !gpus.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"meta\">GPU: {} · {} rows</p>",
                html_escape(&gpus.join(", ")),
                p.rows.len()
            );
        }

        h.push_str("<h3>Warnings</h3>\n");
        let ws = warnings(p, opts);
        if ws.is_empty() {
            h.push_str("<p class=\"ok warnings-none\">No warnings: every measurement is stable, unthrottled and well above the timer floor.</p>\n");
        } else {
            h.push_str("<ul class=\"warnings\">\n");
            for (class, tag, msg) in &ws {
                let _ = writeln!(
                    h,
                    "<li class=\"warn-{class}\"><span class=\"tag {class}\">{tag}</span>{}</li>",
                    html_escape(msg)
                );
            }
            h.push_str("</ul>\n");
        }

        h.push_str("<h3>Summary</h3>\n");
        summary_table(p, &mut h);

        h.push_str("<h3>Plots</h3>\n");
        let x = match &opts.x {
            Some(x) => Some(x.clone()),
            None => auto_x(p),
        };
        for metric in distinct(p.rows.iter().map(|r| r.metric.clone())) {
            let spec = PlotSpec {
                x: x.clone(),
                plot_type: opts.plot_type,
                ..PlotSpec::new(metric.clone())
            };
            match render_svg(p, &spec) {
                Ok(svg) => {
                    let _ = write!(
                        h,
                        "<figure class=\"plot\" data-metric=\"{}\">\n{svg}</figure>\n",
                        html_escape(&metric)
                    );
                }
                Err(e @ PlotError::UnknownParameter { .. }) => return Err(e),
                Err(e) => {
                    let _ = writeln!(
                        h,
                        "<p class=\"plot-error\">{}: {}</p>",
                        html_escape(&metric),
                        html_escape(&e.to_string())
                    );
                }
            }
        }

        crate::roofline::report_section(p, &mut h);

        if let (true, Some(raw)) = (opts.distributions, input.raw) {
            h.push_str("<h3>Distributions</h3>\n<p class=\"meta\">Every run as a point; box: quartiles and median; whiskers: furthest runs within 1.5 IQR; red diamonds: runs outside (outliers).</p>\n");
            let metrics = distinct(raw.series.iter().map(|s| s.key.metric.clone()));
            for metric in metrics {
                let mut configs: Vec<u32> = Vec::new();
                for s in raw.series.iter().filter(|s| s.key.metric == metric) {
                    if !configs.contains(&s.key.config) {
                        configs.push(s.key.config);
                    }
                }
                let _ = write!(
                    h,
                    "<details class=\"dist\" open><summary>{}</summary>\n<div class=\"dist-grid\">\n",
                    html_escape(&metric)
                );
                for &c in configs.iter().take(opts.max_distribution_configs) {
                    let spec = DistributionSpec {
                        config: Some(c),
                        title: Some(raw.configs.get(c as usize).map(|c| c.to_string()).unwrap_or_default()),
                        width_px: Some(300),
                        height_px: 260,
                        ..Default::default()
                    };
                    match render_distribution_svg(raw, &metric, &spec) {
                        Ok(svg) => {
                            let _ = write!(h, "<figure class=\"distribution\">\n{svg}</figure>\n");
                        }
                        Err(e) => {
                            let _ = writeln!(h, "<p class=\"plot-error\">{}</p>", html_escape(&e.to_string()));
                        }
                    }
                }
                h.push_str("</div>\n");
                if configs.len() > opts.max_distribution_configs {
                    let _ = writeln!(
                        h,
                        "<p class=\"meta\">{} more configurations not drawn.</p>",
                        configs.len() - opts.max_distribution_configs
                    );
                }
                h.push_str("</details>\n");
            }
        }

        if let Some(env) = input.environment {
            h.push_str("<h3>Environment</h3>\n<table class=\"env\"><tbody>\n");
            let mut kv = Vec::new();
            flatten("", env, &mut kv);
            for (k, v) in kv {
                let _ = writeln!(h, "<tr><td>{}</td><td>{}</td></tr>", html_escape(&k), html_escape(&v));
            }
            h.push_str("</tbody></table>\n");
        }
        h.push_str("</section>\n");
    }
    let _ = write!(h, "<script>{JS}</script>\n</body>\n</html>\n");
    Ok(h)
}
