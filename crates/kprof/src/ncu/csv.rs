//! Reading ncu's raw-page CSV export (`ncu --import REP --csv --page raw --print-units base`) into
//! [`RawResults`]: the table, its numbers and NVTX cells, and the attribution of kernels to regions
//! by kprof's keyed range names or, in a report made by plain ncu, by its NVTX ranges
//! ([`parse_ncu_csv`] describes both). What real exports look like, captured on the H200:
//! `tests/fixtures/ncu-csv-exports/README.md`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use kprof_core::transforms::{record_combined, Reducer, TransformError};
use kprof_core::{Config, DeviceInfo, RawResults, SampleRecord};

use super::{parse_range_name, tail_lines, NcuError, DOMAIN};

/// How numbers are written in the export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NumberStyle {
    /// Decide from the file's numbers (`,` groups and `.` decimals unless the file shows
    /// otherwise, e.g. `1.980.000` or `12,88`).
    #[default]
    Auto,
    /// `4,264,448` and `90.60` (ncu under `LC_ALL=C`).
    C,
    /// `4.264.448` and `90,60`.
    European,
}

/// Options of [`parse_ncu_csv`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Benchmark name of the samples (of the first benchmark call; see [`ImportOptions::call_names`]).
    pub benchmark: String,
    /// Benchmark names by call index; a call without a name here is `<benchmark>` for the first
    /// call (index 0) and `<benchmark>#<k>` for call index k.
    pub call_names: Vec<String>,
    /// Configurations by index; a config index without an entry becomes `config=<index>`.
    pub configs: Vec<Config>,
    /// The metric columns that become samples. `None`: every numeric metric column except the
    /// `device__attribute_*` ones. A name that is not a column is an error.
    pub metrics: Option<Vec<String>>,
    /// How the kernels of one region in one run are combined.
    pub reducer: Reducer,
    /// Number format.
    pub number_style: NumberStyle,
    /// kprof's NVTX domain (`""`: keyed names in the default domain, for programs that can
    /// only push default-domain ranges).
    pub domain: String,
    /// Name of the input for error messages.
    pub source_name: String,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            benchmark: "ncu".into(),
            call_names: Vec::new(),
            configs: Vec::new(),
            metrics: None,
            reducer: Reducer::Sum,
            number_style: NumberStyle::Auto,
            domain: DOMAIN.into(),
            source_name: "<input>".into(),
        }
    }
}

/// One NVTX range from ncu's NVTX cells.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NvtxRange {
    /// Start/end range id (`None` for push/pop ranges).
    pub id: Option<u64>,
    /// Domain; `None` for the default domain (printed `<default domain>`).
    pub domain: Option<String>,
    /// Range name (the message).
    pub name: String,
}

impl NvtxRange {
    /// The region name of a plain range: `name` in the default domain, `domain@name` otherwise.
    pub fn region(&self) -> String {
        match &self.domain {
            None => self.name.clone(),
            Some(d) => format!("{d}@{}", self.name),
        }
    }
}

/// Splits one `domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg` entry. A name with
/// `:` makes the entry longer; without a message (`...:none:none`) the range is everything
/// before the last 6 fields, otherwise range and message are taken as equal halves of the rest.
fn split_entry(entry: &str) -> Option<(Option<String>, String)> {
    let parts: Vec<&str> = entry.split(':').collect();
    let n = parts.len();
    if n >= 8 && parts[n - 2] == "none" && parts[n - 1] == "none" {
        // No message (Msg_Type `none`), as for `nvtxRangePushA` in the default domain on the
        // H200: the name is everything between the domain and the 6 payload/color/message
        // fields, `:` included.
        let range = parts[1..n - 6].join(":");
        return Some((domain_of(parts[0]), range));
    }
    if parts.len() < 8 || (parts.len() - 8) % 2 != 0 {
        // Not the documented layout: treat everything after the domain as the name.
        let (d, rest) = entry.split_once(':')?;
        return Some((domain_of(d), rest.to_string()));
    }
    let k = (parts.len() - 8) / 2;
    let range = parts[1..2 + k].join(":");
    let msg = parts[parts.len() - 1 - k..].join(":");
    let name = if range.is_empty() || range == "none" {
        msg
    } else {
        range
    };
    Some((domain_of(parts[0]), name))
}

fn domain_of(d: &str) -> Option<String> {
    let d = d.trim();
    if d.is_empty() || d == "<default domain>" || d == "<default>" {
        None
    } else {
        Some(d.to_string())
    }
}

/// The quoted entries of an NVTX cell, in order.
fn quoted_entries(cell: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = cell;
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        match after.find('"') {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// Parses the push/pop NVTX cell: `<tid>  "d:r:...:msg"  "d2:r2:..."`, in the cell's order
/// (outermost first within a domain; across domains not in nesting order, as the real exports in
/// `tests/fixtures/ncu-csv-exports/README.md` show).
/// Returns the thread id (when present) and the ranges. An empty cell has no ranges.
pub fn parse_push_pop_cell(cell: &str) -> (Option<u64>, Vec<NvtxRange>) {
    let cell = cell.trim();
    let tid = cell.split_whitespace().next().and_then(|w| w.parse::<u64>().ok());
    let ranges = quoted_entries(cell)
        .into_iter()
        .filter_map(split_entry)
        .map(|(domain, name)| NvtxRange { id: None, domain, name })
        .collect();
    (tid, ranges)
}

/// Parses the start/end NVTX cell: `"id:domain:range:...:msg" ...`.
pub fn parse_start_end_cell(cell: &str) -> Vec<NvtxRange> {
    quoted_entries(cell)
        .into_iter()
        .filter_map(|e| {
            let (id, rest) = e.split_once(':')?;
            let id = id.trim().parse::<u64>().ok();
            let (domain, name) = split_entry(rest)?;
            Some(NvtxRange { id, domain, name })
        })
        .collect()
}

/// One metric column of the export.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricColumn {
    /// Metric name.
    pub name: String,
    /// Unit from the units row (`ns`, `byte`, `%`; empty when none).
    pub unit: String,
    /// Column index in the CSV.
    pub index: usize,
}

/// One profiled kernel (one data row of the export).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    /// ncu's `ID` (launch order).
    pub id: u64,
    /// 1-based line number of the record in the filtered CSV (for messages).
    pub line: u64,
    /// `Kernel Name`.
    pub kernel: String,
    /// Push/pop ranges in the cell's order (outermost first within each domain).
    pub push_pop: Vec<NvtxRange>,
    /// Start/end ranges.
    pub start_end: Vec<NvtxRange>,
    /// The raw cells of the row.
    pub cells: Vec<String>,
}

/// The export as a table: columns, units and rows, before attribution.
#[derive(Clone, Debug, PartialEq)]
pub struct NcuTable {
    /// Header names.
    pub header: Vec<String>,
    /// Units by column (empty when there is no units row).
    pub units: Vec<String>,
    /// Data rows in launch order.
    pub rows: Vec<KernelRow>,
    /// The number style used.
    pub style: NumberStyle,
}

fn csv_err(opts: &ImportOptions, line: u64, message: impl Into<String>) -> NcuError {
    NcuError::Csv {
        source_name: opts.source_name.clone(),
        line,
        message: message.into(),
    }
}

/// Keeps the lines of ncu's output that are CSV records (those starting with `"`), with the
/// 1-based line number in `text` of each kept line (messages name the file's own lines).
fn csv_lines(text: &str) -> (String, Vec<u64>) {
    let text = text.trim_start_matches('\u{feff}');
    let mut out = String::with_capacity(text.len());
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with('"') {
            out.push_str(line.trim_end_matches('\r'));
            out.push('\n');
            lines.push(i as u64 + 1);
        }
    }
    (out, lines)
}

/// Missing-value cells.
fn is_na(s: &str) -> bool {
    let t = s.trim();
    t.is_empty() || t.eq_ignore_ascii_case("n/a") || t == "-" || t.eq_ignore_ascii_case("nan")
}

/// Evidence of a cell for the number style: `Some(C)`/`Some(European)` when strong.
fn style_evidence(s: &str) -> Option<NumberStyle> {
    let t = s.trim().trim_start_matches(['-', '+']);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',') {
        return None;
    }
    let dots = t.matches('.').count();
    let commas = t.matches(',').count();
    match (dots, commas) {
        (0, 0) => None,
        (d, c) if d > 0 && c > 0 => {
            if t.rfind('.') > t.rfind(',') {
                Some(NumberStyle::C)
            } else {
                Some(NumberStyle::European)
            }
        }
        (d, 0) if d >= 2 => Some(NumberStyle::European),
        (0, c) if c >= 2 => Some(NumberStyle::C),
        (1, 0) => {
            let frac = &t[t.find('.').unwrap() + 1..];
            (frac.len() != 3).then_some(NumberStyle::C)
        }
        (0, 1) => {
            let frac = &t[t.find(',').unwrap() + 1..];
            (frac.len() != 3).then_some(NumberStyle::European)
        }
        _ => None,
    }
}

/// Parses one number cell; `Ok(NaN)` for `n/a`; `Err(())` when it is not a number.
fn parse_number(s: &str, style: NumberStyle) -> Result<f64, ()> {
    if is_na(s) {
        return Ok(f64::NAN);
    }
    let t = s.trim();
    let (group, decimal) = match style {
        NumberStyle::European => ('.', ','),
        _ => (',', '.'),
    };
    let mut cleaned = String::with_capacity(t.len());
    for c in t.chars() {
        if c == group {
            continue;
        }
        cleaned.push(if c == decimal { '.' } else { c });
    }
    if !cleaned.bytes().any(|b| b.is_ascii_digit()) {
        return Err(());
    }
    cleaned.parse::<f64>().map_err(|_| ())
}

fn is_push_pop_header(h: &str) -> bool {
    h.contains("Push/Pop_Range") || h.contains("Push/Pop Range")
}

fn is_start_end_header(h: &str) -> bool {
    h.contains("Start/Stop_Range") || h.contains("Start/End_Range") || h.contains("Start/Stop Range")
}

/// Parses the export into an [`NcuTable`] (no attribution yet).
pub fn parse_table(text: &str, opts: &ImportOptions) -> Result<NcuTable, NcuError> {
    let (body, file_lines) = csv_lines(text);
    // The line of the original text for a 1-based line of `body`.
    let file_line = |body_line: u64| -> u64 {
        let i = body_line.saturating_sub(1) as usize;
        file_lines.get(i).or(file_lines.last()).copied().unwrap_or(0)
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(body.as_bytes());
    let mut records: Vec<(u64, Vec<String>)> = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(i as u64 + 1, |p| p.line());
            csv_err(opts, file_line(line), format!("not valid CSV: {e}"))
        })?;
        let line = rec.position().map_or(i as u64 + 1, |p| p.line());
        records.push((file_line(line), rec.iter().map(str::to_string).collect()));
    }
    let Some((_, header)) = records.first().cloned() else {
        let first = text
            .trim_start_matches('\u{feff}')
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let what = if first.is_empty() {
            "the file is empty".to_string()
        } else if first.contains("Annotation") && first.contains("Value") {
            "this is a kprof/nsight-python result CSV, not an ncu export: use `kprof summarize` or `kprof show` on it"
                .to_string()
        } else {
            "no line starts with a quoted cell, as every line of ncu's CSV export does".to_string()
        };
        return Err(csv_err(
            opts,
            1,
            format!(
                "not an Nsight Compute CSV export ({what}); expected the output of \
                 `ncu --import REP --csv --page raw --print-units base` (a header row starting with \"ID\")"
            ),
        ));
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let id_col = col("ID").ok_or_else(|| {
        csv_err(
            opts,
            1,
            format!(
                "no \"ID\" column; this is not ncu's raw-page CSV (export with --page raw). Header: {}",
                header.join(", ")
            ),
        )
    })?;
    let kernel_col = col("Kernel Name").or_else(|| col("Function Name"));
    let pp_col = header.iter().position(|h| is_push_pop_header(h));
    let se_col = header.iter().position(|h| is_start_end_header(h));

    let mut units: Vec<String> = Vec::new();
    let mut data: Vec<(u64, Vec<String>)> = Vec::new();
    let mut k = 1;
    while k < records.len() {
        let (line, cells) = &records[k];
        if *cells == header {
            k += 1;
            continue;
        }
        let id_cell = cells.get(id_col).map(String::as_str).unwrap_or("");
        if id_cell.trim().is_empty()
            || !id_cell
                .trim()
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
        {
            // The units row (ID cell empty); keep the first one.
            if units.is_empty() {
                units = cells.clone();
            }
        } else {
            data.push((*line, cells.clone()));
        }
        k += 1;
    }
    units.resize(header.len(), String::new());

    // Evidence of each style in the metric cells: counts and the first cell showing it.
    let (mut c, mut e) = (0usize, 0usize);
    let mut example: [Option<(u64, &str, &str)>; 2] = [None, None];
    for (line, cells) in &data {
        for (j, cell) in cells.iter().enumerate() {
            let Some(h) = header.get(j).filter(|h| h.contains("__")) else {
                continue;
            };
            match style_evidence(cell) {
                Some(NumberStyle::C) => {
                    c += 1;
                    example[0].get_or_insert((*line, h.as_str(), cell.as_str()));
                }
                Some(NumberStyle::European) => {
                    e += 1;
                    example[1].get_or_insert((*line, h.as_str(), cell.as_str()));
                }
                _ => {}
            }
        }
    }
    let style = match opts.number_style {
        NumberStyle::Auto if e > c => NumberStyle::European,
        NumberStyle::Auto => NumberStyle::C,
        s => s,
    };
    // A style given explicitly that every telling cell contradicts would silently drop columns.
    let contradiction = match style {
        NumberStyle::European if c > 0 && e == 0 => example[0].map(|x| (x, "c", "european")),
        NumberStyle::C if e > 0 && c == 0 => example[1].map(|x| (x, "european", "c")),
        _ => None,
    };
    if let Some(((line, column, cell), found, given)) = contradiction {
        return Err(csv_err(
            opts,
            line,
            format!(
                "the numbers are written in {found} style (column {column:?} holds {cell:?}) but the number style \
                 asked for is {given}; use --numbers {found} or auto"
            ),
        ));
    }

    let mut rows = Vec::with_capacity(data.len());
    for (line, mut cells) in data {
        cells.resize(header.len(), String::new());
        let id = parse_number(&cells[id_col], style)
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| csv_err(opts, line, format!("ID {:?} is not a number", cells[id_col])))?
            as u64;
        let kernel = kernel_col.map(|c| cells[c].clone()).unwrap_or_default();
        let push_pop = pp_col.map(|c| parse_push_pop_cell(&cells[c]).1).unwrap_or_default();
        let start_end = se_col.map(|c| parse_start_end_cell(&cells[c])).unwrap_or_default();
        rows.push(KernelRow {
            id,
            line,
            kernel,
            push_pop,
            start_end,
            cells,
        });
    }
    rows.sort_by_key(|r| r.id);
    Ok(NcuTable {
        header,
        units,
        rows,
        style,
    })
}

impl NcuTable {
    /// The metric columns (names containing `__`) whose non-missing cells are all numbers.
    pub fn numeric_metrics(&self) -> Vec<MetricColumn> {
        self.header
            .iter()
            .enumerate()
            .filter(|(_, h)| h.contains("__") && !is_push_pop_header(h) && !is_start_end_header(h))
            .filter(|(j, _)| self.rows.iter().all(|r| parse_number(&r.cells[*j], self.style).is_ok()))
            .map(|(j, h)| MetricColumn {
                name: h.clone(),
                unit: self.units[j].trim().to_string(),
                index: j,
            })
            .collect()
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The value of a numeric column in a row (NaN when missing or not a number).
    pub fn value(&self, row: &KernelRow, col: usize) -> f64 {
        parse_number(&row.cells[col], self.style).unwrap_or(f64::NAN)
    }

    /// The device of a row: `device__attribute_display_name` (else a non-numeric `Device`
    /// cell), `Host Name`, and the clocks in kHz from `device__attribute_clock_rate` and
    /// `device__attribute_memory_clock_rate` (converted from the unit of the units row).
    pub fn device(&self, row: &KernelRow) -> DeviceInfo {
        let text = |name: &str| {
            self.column(name)
                .map(|c| row.cells[c].trim().to_string())
                .filter(|s| !is_na(s))
        };
        let gpu = text("device__attribute_display_name")
            .or_else(|| text("Device").filter(|d| parse_number(d, self.style).is_err()))
            .unwrap_or_default();
        let host = text("Host Name").unwrap_or_default();
        let clock = |name: &str| -> Option<f64> {
            let c = self.column(name)?;
            let v = parse_number(&row.cells[c], self.style).ok().filter(|x| x.is_finite())?;
            let scale = match self.units[c].trim().to_ascii_lowercase().as_str() {
                "hz" => 1e-3,
                "mhz" => 1e3,
                "ghz" => 1e6,
                _ => 1.0, // "khz" or no unit: CUDA's attribute is in kHz
            };
            Some(v * scale)
        };
        DeviceInfo {
            gpu,
            host,
            compute_clock_khz: clock("device__attribute_clock_rate"),
            memory_clock_khz: clock("device__attribute_memory_clock_rate"),
        }
    }
}

/// The attribution of one kernel row.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct GroupKey {
    call: u32,
    config: u32,
    /// Plain reports and kernels outside ranges: no configuration.
    keyed: bool,
    region: String,
    run: u32,
}

/// The key of a row of a plain report or a kernel outside ranges: its region and run, no
/// configuration.
fn unkeyed(region: String, run: u32) -> GroupKey {
    GroupKey {
        call: 0,
        config: 0,
        keyed: false,
        region,
        run,
    }
}

/// The innermost push/pop range of a plain report's row. ncu lists the ranges per domain (each
/// domain's stack outermost first), not in nesting order across domains: on the H200 (ncu
/// 2025.3.1) a default-domain range pushed *inside* a `kprof` range was listed *before* it. The
/// nesting between domains is not in the export, so a default-domain range (the program's own,
/// e.g. `torch.cuda.nvtx`) is taken as the innermost when there is one, else the last range.
fn innermost_push_pop(ranges: &[NvtxRange]) -> Option<&NvtxRange> {
    ranges
        .iter()
        .rev()
        .find(|r| r.domain.is_none())
        .or_else(|| ranges.last())
}

/// Groups the rows by (call, config, region, run) as [`parse_ncu_csv`] says. Returns the
/// groups in order of their first kernel, each with its rows in launch order.
fn attribute(table: &NcuTable, domain: &str) -> Vec<(GroupKey, Vec<usize>)> {
    let mut order: Vec<GroupKey> = Vec::new();
    let mut groups: HashMap<GroupKey, Vec<usize>> = HashMap::new();
    let mut add = |key: GroupKey, i: usize, order: &mut Vec<GroupKey>| {
        groups
            .entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(i);
    };
    // Plain push/pop occurrence tracking.
    let mut run_counter: HashMap<String, u32> = HashMap::new();
    let mut current: Option<(Vec<NvtxRange>, String, GroupKey)> = None; // (stack, first kernel, key)
    let mut start_end_runs: HashMap<(String, u64), u32> = HashMap::new();

    for (i, row) in table.rows.iter().enumerate() {
        let keyed = row
            .push_pop
            .iter()
            .chain(row.start_end.iter())
            .filter(|r| r.domain.as_deref().unwrap_or("") == domain)
            .filter_map(|r| parse_range_name(&r.name))
            .next_back(); // the innermost keyed range
        if let Some(k) = keyed {
            current = None;
            add(
                GroupKey {
                    call: k.call,
                    config: k.config,
                    keyed: true,
                    region: k.region,
                    run: k.run,
                },
                i,
                &mut order,
            );
            continue;
        }
        if let Some(inner) = innermost_push_pop(&row.push_pop) {
            let region = inner.region();
            let same_stretch = matches!(&current, Some((stack, first, key))
                if *stack == row.push_pop && key.region == region && row.kernel != *first);
            if !same_stretch {
                let n = run_counter.entry(region.clone()).or_insert(0);
                let key = unkeyed(region.clone(), *n);
                *n += 1;
                current = Some((row.push_pop.clone(), row.kernel.clone(), key));
            }
            let key = current.as_ref().map(|c| c.2.clone()).expect("set above");
            add(key, i, &mut order);
            continue;
        }
        current = None;
        if let Some(inner) = row.start_end.last() {
            let region = inner.region();
            let id = inner.id.unwrap_or(u64::MAX);
            let next = run_counter.get(&region).copied().unwrap_or(0);
            let run = *start_end_runs.entry((region.clone(), id)).or_insert_with(|| {
                run_counter.insert(region.clone(), next + 1);
                next
            });
            add(unkeyed(region, run), i, &mut order);
            continue;
        }
        let region = row.kernel.clone();
        let n = run_counter.entry(format!("\0kernel:{region}")).or_insert(0);
        let run = *n;
        *n += 1;
        add(unkeyed(region, run), i, &mut order);
    }
    order
        .into_iter()
        .map(|k| {
            let rows = groups.remove(&k).unwrap_or_default();
            (k, rows)
        })
        .collect()
}

/// Parses ncu's raw-page CSV export into raw results.
///
/// The input (`ncu --import REP --csv --page raw --print-units base`): a header row, a units row
/// (`"ns"`, `"byte"`, `"%"`), then one row per profiled kernel in launch order; numbers with or
/// without thousands separators (`.`-grouped with a `,` decimal mark in European locales,
/// detected per file or forced with [`NumberStyle`]), `n/a` for missing values (NaN, a failed
/// run); the CLI's `==PROF==`/`==WARNING==`/`==ERROR==` lines are skipped (only lines that start
/// with `"` are CSV). The NVTX cells: push/pop
/// `<tid>  "domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg" ...` (one quoted entry per
/// open range) and start/end `"id:domain:range:..."` (empty outside start/end ranges). Real exports: `tests/fixtures/ncu-csv-exports/README.md`.
///
/// Attribution:
/// - a kernel inside one of kprof's ranges (domain [`DOMAIN`], name
///   `region#c<call>.<config>.<run>`, see [`range_name`](super::range_name)) belongs to that
///   (call, config, run, region), the innermost such range when nested. Rows are grouped by this
///   key, never by position, so runs with different kernel counts and skipped runs need nothing
///   special. The kernels of one group are combined with [`ImportOptions::reducer`] (default
///   sum) and each kernel's own value is kept in [`RawResults::kernel_breakdown`];
/// - in a report made by plain ncu, a kernel inside other NVTX ranges belongs to the region named
///   by its innermost range (`name` in the default domain, `domain@name` otherwise; across
///   domains a default-domain range counts as the innermost), and each occurrence of the range is
///   one run: a start/end range occurrence is known by its id; for push/pop ranges (which ncu
///   does not number) an occurrence is a stretch of consecutive kernels under the same range
///   stack, split where the stretch's first kernel name comes again (`A B A B` = two runs of
///   `A B`; `A A A` = three runs);
/// - a kernel outside any range is a run of the region named after the kernel.
pub fn parse_ncu_csv(text: &str, opts: &ImportOptions) -> Result<RawResults, NcuError> {
    let table = parse_table(text, opts)?;
    table_to_raw(&table, opts)
}

/// Reads and parses an exported CSV file.
pub fn parse_ncu_csv_file(path: &Path, opts: &ImportOptions) -> Result<RawResults, NcuError> {
    let text = std::fs::read_to_string(path).map_err(|e| NcuError::io(format!("cannot read {}", path.display()), e))?;
    let opts = ImportOptions {
        source_name: path.display().to_string(),
        ..opts.clone()
    };
    parse_ncu_csv(&text, &opts)
}

/// Attributes the rows of a parsed table and builds the raw results.
pub fn table_to_raw(table: &NcuTable, opts: &ImportOptions) -> Result<RawResults, NcuError> {
    let numeric = table.numeric_metrics();
    let metrics: Vec<MetricColumn> = match &opts.metrics {
        None => numeric
            .into_iter()
            .filter(|m| !m.name.starts_with("device__attribute_"))
            .collect(),
        Some(names) => {
            let mut out = Vec::new();
            for name in names {
                match numeric.iter().find(|m| &m.name == name) {
                    Some(m) => out.push(m.clone()),
                    None => {
                        let why = if table.header.iter().any(|h| h == name) {
                            "its values are not numbers"
                        } else {
                            "it is not a column of the export"
                        };
                        return Err(csv_err(
                            opts,
                            1,
                            format!(
                                "metric {name:?} cannot be read: {why}; the numeric metric columns are: {}",
                                table
                                    .numeric_metrics()
                                    .iter()
                                    .map(|m| m.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                }
            }
            out
        }
    };
    let mut raw = RawResults::new();
    if table.rows.is_empty() {
        return Ok(raw);
    }
    for (key, rows) in attribute(table, &opts.domain) {
        let benchmark = if key.keyed {
            match opts.call_names.get(key.call as usize) {
                Some(n) => n.clone(),
                None if key.call == 0 => opts.benchmark.clone(),
                None => format!("{}#{}", opts.benchmark, key.call),
            }
        } else {
            opts.benchmark.clone()
        };
        let config = if key.keyed {
            opts.configs
                .get(key.config as usize)
                .cloned()
                .unwrap_or_else(|| Config::new().with("config", key.config as i64))
        } else {
            Config::new()
        };
        let first = &table.rows[rows[0]];
        let device = table.device(first);
        for m in &metrics {
            let kernels: Vec<(&str, f64)> = rows
                .iter()
                .map(|&i| (table.rows[i].kernel.as_str(), table.value(&table.rows[i], m.index)))
                .collect();
            let rec = SampleRecord {
                benchmark: &benchmark,
                annotation: &key.region,
                config: &config,
                run: key.run,
                metric: &m.name,
                value: f64::NAN,
                unit: &m.unit,
                kernel: "",
                device: &device,
                extras: &[],
            };
            record_combined(&mut raw, &rec, &kernels, &opts.reducer).map_err(|e| match e {
                TransformError::Model(m) => NcuError::Model(m),
                other => csv_err(opts, first.line, other.to_string()),
            })?;
        }
    }
    raw.check_unique_runs()?;
    Ok(raw)
}

/// The arguments of the export: `--import REP --csv --page raw --print-units base`.
pub fn export_args(report: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--import".into(), report.as_os_str().to_owned()];
    v.extend(["--csv", "--page", "raw", "--print-units", "base"].map(OsString::from));
    v
}

/// Runs `ncu --import REP --csv --page raw --print-units base` under `LC_ALL=C` and returns
/// its standard output (the CSV, possibly with `==PROF==` lines, which the parser skips).
pub fn export_csv(ncu: &Path, report: &Path) -> Result<String, NcuError> {
    let args = export_args(report);
    let command = std::iter::once(ncu.as_os_str())
        .chain(args.iter().map(|a| a.as_os_str()))
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    if !report.is_file() {
        return Err(NcuError::io(
            format!("cannot export {}", report.display()),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    }
    let out = Command::new(ncu)
        .args(&args)
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .output()
        .map_err(|source| NcuError::Spawn {
            program: ncu.to_path_buf(),
            source,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let has_csv = stdout.lines().any(|l| l.trim_start().starts_with('"'));
    if !out.status.success() || !has_csv {
        let status = match out.status.code() {
            Some(c) if !out.status.success() => format!("exit code {c}"),
            Some(_) => "no CSV in the output".to_string(),
            None => "killed by a signal".to_string(),
        };
        return Err(NcuError::Export {
            report: report.to_path_buf(),
            command,
            status,
            tail: tail_lines(&format!("{stdout}\n{stderr}"), 20),
        });
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_number("4,264,448", NumberStyle::C), Ok(4_264_448.0));
        assert_eq!(parse_number("4.264.448", NumberStyle::European), Ok(4_264_448.0));
        assert_eq!(parse_number("90,60", NumberStyle::European), Ok(90.6));
        assert_eq!(parse_number("1,234.5", NumberStyle::C), Ok(1234.5));
        assert!(parse_number("n/a", NumberStyle::C).unwrap().is_nan());
        assert!(parse_number("NVIDIA H200", NumberStyle::C).is_err());
        assert_eq!(style_evidence("1.980.000"), Some(NumberStyle::European));
        assert_eq!(style_evidence("4,264,448"), Some(NumberStyle::C));
        assert_eq!(style_evidence("202,048"), None);
        assert_eq!(style_evidence("90.60"), Some(NumberStyle::C));
        assert_eq!(style_evidence("12,88"), Some(NumberStyle::European));
        assert_eq!(style_evidence("1.234,5"), Some(NumberStyle::European));
    }

    #[test]
    fn nvtx_cells() {
        let (tid, r) = parse_push_pop_cell(
            r#"576  "nsight-rs:regionA:none:none:none:none:REGISTERED:regionA"  "nsight-rs-raw:regionA:none:none:none:none:ASCII:regionA" "#,
        );
        assert_eq!(tid, Some(576));
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            NvtxRange {
                id: None,
                domain: Some("nsight-rs".into()),
                name: "regionA".into()
            }
        );
        assert_eq!(r[1].domain.as_deref(), Some("nsight-rs-raw"));
        let (_, r) = parse_push_pop_cell(r#"7  "<default domain>:a:b:none:none:none:none:ASCII:a:b" "#);
        assert_eq!(
            r,
            vec![NvtxRange {
                id: None,
                domain: None,
                name: "a:b".into()
            }]
        );
        assert_eq!(r[0].region(), "a:b");
        let r = parse_start_end_cell(r#" "0:nsight-rs:regionA:none:none:none:none:ASCII:regionA" "#);
        assert_eq!(
            r,
            vec![NvtxRange {
                id: Some(0),
                domain: Some("nsight-rs".into()),
                name: "regionA".into()
            }]
        );
        assert_eq!(r[0].region(), "nsight-rs@regionA");
        assert!(parse_push_pop_cell("").1.is_empty());
    }

    /// Cells exactly as ncu 2025.3.1 exported them on the H200 (tests/fixtures/ncu-csv-exports/h200-*.csv).
    #[test]
    fn nvtx_cells_of_the_h200_exports() {
        // torch.cuda.nvtx.range_push("user_inner") inside kprof's range "two": the default
        // domain is listed first although it is the inner range.
        let (tid, r) = parse_push_pop_cell(
            r#"696  "<default domain>:user_inner:none:none:none:none:none:none"  "kprof:two#c0.0.0:none:none:none:none:ASCII:two#c0.0.0" "#,
        );
        assert_eq!(tid, Some(696));
        assert_eq!((r[0].domain.as_deref(), r[0].name.as_str()), (None, "user_inner"));
        assert_eq!(
            (r[1].domain.as_deref(), r[1].name.as_str()),
            (Some("kprof"), "two#c0.0.0")
        );
        assert_eq!(innermost_push_pop(&r).unwrap().name, "user_inner");
        // Nested ranges of one domain: outermost first.
        let (_, r) = parse_push_pop_cell(
            r#"696  "kprof:outer#c0.0.0:none:none:none:none:ASCII:outer#c0.0.0"  "kprof:inner#c0.0.0:none:none:none:none:ASCII:inner#c0.0.0" "#,
        );
        assert_eq!(innermost_push_pop(&r).unwrap().name, "inner#c0.0.0");
        // A default-domain name with `:` and no message.
        let (_, r) = parse_push_pop_cell(r#"1453  "<default domain>:a:b:none:none:none:none:none:none" "#);
        assert_eq!((r[0].domain.as_deref(), r[0].name.as_str()), (None, "a:b"));
        let (_, r) = parse_push_pop_cell(r#"1453  "<default domain>:matmul:none:none:none:none:none:none" "#);
        assert_eq!(r[0].region(), "matmul");
    }
}
