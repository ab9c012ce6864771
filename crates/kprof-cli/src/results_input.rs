//! Reading any result file (raw CSV, processed CSV, kprof JSON) for `kprof plot` and
//! `kprof report`: the processed table always, the raw samples and the environment fingerprint
//! when the file has them.

use std::path::Path;

use anyhow::{Context, Result};

use kprof_core::io::{self, Loaded};
use kprof_core::pipeline::{process, ProcessOptions};
use kprof_core::{ProcessedResults, RawResults};

/// One result file, ready to plot.
#[derive(Clone, Debug)]
pub struct ResultInput {
    /// The raw samples, when the file has them (raw CSV, JSON with raw samples).
    pub raw: Option<RawResults>,
    /// The processed table: read from the file, or computed from the raw samples with
    /// kprof's default statistics options.
    pub processed: ProcessedResults,
    /// The environment fingerprint: the JSON file's `environment`, or for a CSV the
    /// `<stem>.env.json` sidecar next to it when present.
    pub environment: Option<serde_json::Value>,
}

/// Reads `path` (kind detected by content, see [`kprof_core::io::read_any`]).
///
/// Errors: the file cannot be read or parsed, the raw samples cannot be processed, a JSON file
/// holds no results, or a sidecar fingerprint exists but is not valid JSON.
pub fn load(path: &Path) -> Result<ResultInput> {
    // The reader's errors name the file already.
    let loaded = io::read_any(path)?;
    let (raw, processed, environment) = match loaded {
        Loaded::Raw(raw) => (Some(raw), None, None),
        Loaded::Processed(p) => (None, Some(p), None),
        Loaded::Json(file) => (file.raw, file.processed, file.environment),
    };
    let processed = match (processed, &raw) {
        (Some(p), _) => p,
        (None, Some(raw)) => process(raw, &ProcessOptions::default())
            .with_context(|| format!("cannot summarize the raw samples of {}", path.display()))?,
        (None, None) => anyhow::bail!(
            "{} holds no results (neither raw samples nor a processed table)",
            path.display()
        ),
    };
    let environment = match environment {
        Some(env) => Some(env),
        None => read_sidecar(path)?,
    };
    Ok(ResultInput {
        raw,
        processed,
        environment,
    })
}

/// The `<stem>.env.json` fingerprint next to a CSV, when it exists.
fn read_sidecar(path: &Path) -> Result<Option<serde_json::Value>> {
    if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        return Ok(None);
    }
    let sidecar = kprof::conditions::fingerprint::sidecar_path(path);
    let text = match std::fs::read_to_string(&sidecar) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", sidecar.display())),
    };
    let value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not valid JSON (the environment fingerprint of {})",
            sidecar.display(),
            path.display()
        )
    })?;
    Ok(Some(value))
}
