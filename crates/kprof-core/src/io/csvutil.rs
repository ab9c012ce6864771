//! Helpers shared by the CSV readers and writers.

use std::path::Path;

use super::IoError;
use crate::model::{Config, ParamValue};

/// Formats a number for a CSV cell: NaN as an empty cell (as pandas writes `None`/`NaN`),
/// everything else in Rust's shortest round-trip form with a `.0` on integral values
/// (`100.0`, `1e-7`, `inf`), which is also how Python prints floats.
pub(crate) fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!("{x:?}")
    }
}

/// Formats an optional number; `None` and NaN are empty cells.
pub(crate) fn fmt_opt(x: Option<f64>) -> String {
    x.map(fmt_num).unwrap_or_default()
}

/// Whether a cell means "no value": empty, `nan` (any case), `None`, `NA` or `<NA>`.
pub(crate) fn is_missing(cell: &str) -> bool {
    let t = cell.trim();
    t.is_empty() || t.eq_ignore_ascii_case("nan") || t == "None" || t == "NA" || t == "<NA>"
}

/// Parses a number cell; missing cells are NaN. Accepts `inf`, `-inf`, `infinity`.
pub(crate) fn parse_num(cell: &str) -> Option<f64> {
    if is_missing(cell) {
        return Some(f64::NAN);
    }
    cell.trim().parse::<f64>().ok()
}

/// The first CSV record of `bytes` (the header), or nothing when it cannot be parsed.
pub(crate) fn first_record(bytes: &[u8]) -> Vec<String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut rec = csv::StringRecord::new();
    match rdr.read_record(&mut rec) {
        Ok(true) => rec.iter().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// A reader that turns `\r\n` into `\n` (a lone `\r` stays). The `csv` crate reports the
/// record after a `\r\n` as starting on the line before (its position sits on the `\n`), so
/// every message about a Windows-saved file named the line above the bad one.
pub(crate) struct CrlfToLf<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    pending_cr: bool,
}

impl<R: std::io::Read> CrlfToLf<R> {
    pub(crate) fn new(inner: R) -> Self {
        CrlfToLf {
            inner,
            buf: Vec::with_capacity(8192),
            pos: 0,
            pending_cr: false,
        }
    }
}

impl<R: std::io::Read> std::io::Read for CrlfToLf<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.pos < self.buf.len() {
                let n = out.len().min(self.buf.len() - self.pos);
                out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            let mut chunk = [0u8; 8192];
            let n = self.inner.read(&mut chunk)?;
            self.buf.clear();
            self.pos = 0;
            if n == 0 {
                if std::mem::take(&mut self.pending_cr) {
                    self.buf.push(b'\r');
                    continue;
                }
                return Ok(0);
            }
            for &b in &chunk[..n] {
                if std::mem::take(&mut self.pending_cr) && b != b'\n' {
                    self.buf.push(b'\r');
                }
                if b == b'\r' {
                    self.pending_cr = true;
                } else {
                    self.buf.push(b);
                }
            }
        }
    }
}

/// Turns a `csv` crate error into an [`IoError`] naming the file and line.
pub(crate) fn csv_error(path: &Path, e: csv::Error) -> IoError {
    let line = e.position().map(|p| p.line()).unwrap_or(0);
    let text = e.to_string();
    match e.into_kind() {
        csv::ErrorKind::Io(source) => IoError::Read { path: path.to_path_buf(), source },
        csv::ErrorKind::Utf8 { err, .. } => IoError::Parse {
            path: path.to_path_buf(),
            line,
            column: String::new(),
            message: format!("invalid UTF-8 ({err}); save the file as UTF-8"),
        },
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => IoError::Parse {
            path: path.to_path_buf(),
            line,
            column: String::new(),
            message: format!(
                "this row has {len} fields but the header has {expected_len}; check for unquoted commas or a truncated line"
            ),
        },
        _ => IoError::Parse { path: path.to_path_buf(), line, column: String::new(), message: format!("malformed CSV: {text}") },
    }
}

/// A CSV header with name lookup.
pub(crate) struct Header {
    pub(crate) names: Vec<String>,
}

impl Header {
    /// Reads the header of `rdr`, rejecting duplicate column names.
    pub(crate) fn read<R: std::io::Read>(path: &Path, rdr: &mut csv::Reader<R>) -> Result<Header, IoError> {
        let rec = rdr.headers().map_err(|e| csv_error(path, e))?;
        let names: Vec<String> = rec
            .iter()
            .map(|s| s.trim_start_matches('\u{feff}').to_string())
            .collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(IoError::Parse {
                    path: path.to_path_buf(),
                    line: 1,
                    column: n.clone(),
                    message: "this column name appears twice in the header; rename or remove one of them".into(),
                });
            }
        }
        Ok(Header { names })
    }

    /// Index of the column called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Index of a required column, or [`IoError::MissingColumn`].
    pub(crate) fn require(&self, path: &Path, name: &str) -> Result<usize, IoError> {
        self.find(name).ok_or_else(|| IoError::MissingColumn {
            path: path.to_path_buf(),
            column: name.to_string(),
            found: self.names.clone(),
        })
    }
}

/// The cell at `idx` of `rec`, or `""` when the column is absent.
pub(crate) fn cell(rec: &csv::StringRecord, idx: Option<usize>) -> &str {
    idx.and_then(|i| rec.get(i)).unwrap_or("")
}

/// The configuration of `rec`: each parameter column `(name, index)` of `params` with a
/// non-empty cell, its value inferred from the text.
pub(crate) fn config_of(rec: &csv::StringRecord, params: &[(String, usize)]) -> Config {
    Config {
        params: params
            .iter()
            .filter_map(|(name, i)| {
                let text = cell(rec, Some(*i));
                (!text.is_empty()).then(|| (name.clone(), ParamValue::infer(text)))
            })
            .collect(),
    }
}

/// 1-based line of a record (the header is line 1).
pub(crate) fn line_of(rec: &csv::StringRecord) -> u64 {
    rec.position().map(|p| p.line()).unwrap_or(0)
}

/// Maps a csv write error to [`IoError::Write`].
pub(crate) fn write_error(path: &Path, e: csv::Error) -> IoError {
    let text = e.to_string();
    let source = match e.into_kind() {
        csv::ErrorKind::Io(io) => io,
        _ => std::io::Error::other(text),
    };
    IoError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Rejects a column name used twice (e.g. a parameter called like a reserved column).
pub(crate) fn check_unique_columns(path: &Path, columns: &[String]) -> Result<(), IoError> {
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(IoError::Schema {
                path: path.to_path_buf(),
                message: format!(
                    "column {c:?} would appear twice (a parameter or extra column has the name of another column); rename the parameter or extra column"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod crlf_tests {
    use super::CrlfToLf;
    use std::io::Read;

    /// A reader that hands out one byte per call (every chunk boundary falls everywhere).
    struct OneByte<'a>(&'a [u8]);

    impl Read for OneByte<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !out.is_empty() => {
                    out[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn crlf_becomes_lf_across_reads_and_lone_crs_stay() {
        for input in [&b"a\r\nb\rc\r\n\r"[..], b"", b"\r", b"\r\r\n"] {
            let mut out = Vec::new();
            CrlfToLf::new(OneByte(input)).read_to_end(&mut out).unwrap();
            let expected = String::from_utf8_lossy(input).replace("\r\n", "\n");
            assert_eq!(String::from_utf8_lossy(&out), expected, "{input:?}");
            let mut out = Vec::new();
            CrlfToLf::new(input).read_to_end(&mut out).unwrap();
            assert_eq!(String::from_utf8_lossy(&out), expected, "{input:?}");
        }
    }
}
