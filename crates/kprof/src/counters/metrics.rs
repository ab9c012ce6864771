//! Metric discovery and validation on the host (no GPU): the catalog of a chip's metrics
//! ([`MetricsCatalog`]), ncu names with their suffixes, closest-name suggestions,
//! device-level/context-level compatibility ([`MetricScope`]) and the number of replay passes a
//! metric set needs. Names are the ncu/Perfworks names `base.rollup[.submetric]` (counters need a
//! rollup: `dram__bytes_read.sum`; ratios `.ratio`/`.pct`/`.max_rate`; throughputs a rollup plus a
//! `pct_of_peak_sustained_*` submetric); the host API lists every accepted suffix of a base metric
//! (`cuptiProfilerHostGetSubMetrics`), so the valid full names are exactly `base + suffix`.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;

use super::host::{c_names, CuptiLib, HostObject, MetricKind, MetricProperties};
use super::structs::{CUPTI_ERROR_INVALID_METRIC_NAME, CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_NOT_SUPPORTED};
use super::{CountersError, UnknownMetric};

/// Hardware units whose metrics are device-level on CUPTI 13.0 (NVLink, C2C, PCIe).
pub const DEVICE_LEVEL_HW_UNITS: [&str; 4] = ["nvlrx", "nvltx", "ctc", "pcie"];

/// Whether a metric is collected per context (the default) or per device. The host API has no
/// "scope" property, so the scope is derived from the metric's hardware unit
/// ([`DEVICE_LEVEL_HW_UNITS`]). On CUPTI 13.0 with chip GH100, `cuptiProfilerHostConfigAddMetrics`
/// returns `CUPTI_ERROR_NOT_SUPPORTED` when device-level metrics are mixed with context-level
/// ones (they mix with each other and with `gpu__time_duration`); CUPTI 13.1 adds
/// `bAllowDeviceLevelCounters` to `cuptiProfilerGetCounterAvailability` for device-level
/// collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricScope {
    /// Counts the profiled context's work (SM, caches, DRAM, …).
    Context,
    /// Counts the whole device's links (NVLink, C2C, PCIe); cannot be mixed with context-level
    /// metrics in one session on CUPTI 13.0.
    Device,
}

impl MetricScope {
    fn of_hw_unit(hw: &str) -> Self {
        if DEVICE_LEVEL_HW_UNITS.contains(&hw) {
            MetricScope::Device
        } else {
            MetricScope::Context
        }
    }
}

/// A base metric of the chip (no suffix).
#[derive(Debug, Clone)]
pub struct BaseMetric {
    /// Base name, e.g. `dram__bytes_read`.
    pub name: String,
    /// Counter, ratio or throughput.
    pub kind: MetricKind,
    /// Description from the host API.
    pub description: String,
    /// Hardware unit (`dram`, `sm`, …).
    pub hw_unit: String,
    /// Dimension of the base value in ncu's spelling (`byte`, `ns`, `%`, …; see [`super::units`]).
    pub dim_unit: String,
    /// Accepted suffixes, each starting with `.` (`.sum`, `.avg.pct_of_peak_sustained_elapsed`).
    pub suffixes: Vec<String>,
}

impl BaseMetric {
    /// Context- or device-level.
    pub fn scope(&self) -> MetricScope {
        MetricScope::of_hw_unit(&self.hw_unit)
    }

    /// Full names `base + suffix`, in the host API's order.
    pub fn full_names(&self) -> impl Iterator<Item = String> + '_ {
        self.suffixes.iter().map(move |s| format!("{}{}", self.name, s))
    }
}

/// A validated full metric name.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricInfo {
    /// Full name, e.g. `dram__bytes_read.sum`.
    pub name: String,
    /// Its base metric.
    pub base: String,
    /// Description, units and kind of the full name (units depend on the suffix).
    pub properties: MetricProperties,
    /// Context- or device-level.
    pub scope: MetricScope,
}

/// All metrics of one chip, read through the Profiler Host API.
pub struct MetricsCatalog {
    lib: &'static CuptiLib,
    chip: String,
    counter_availability: Option<Vec<u8>>,
    host: HostObject,
    bases: Vec<BaseMetric>,
    by_name: HashMap<String, usize>,
    /// Base names qualified by a metric group (`TPC.TriageCompute.sm__…`), not listed by default.
    qualified: Vec<(String, MetricKind)>,
}

impl MetricsCatalog {
    /// Loads libcupti from `cupti_path` and reads the metrics of `chip` (e.g. `"GH100"`). Works
    /// without a GPU.
    pub fn open(cupti_path: &Path, chip: &str) -> Result<Self, CountersError> {
        let lib = CuptiLib::load(cupti_path)?;
        Self::with_lib(lib, chip, None)
    }

    /// Like [`open`](Self::open) with an already loaded library and, on a GPU machine, the
    /// device's counter-availability image.
    pub fn with_lib(
        lib: &'static CuptiLib,
        chip: &str,
        counter_availability: Option<Vec<u8>>,
    ) -> Result<Self, CountersError> {
        let host = HostObject::new(lib, chip, counter_availability.as_deref())?;
        let mut bases = Vec::new();
        let mut qualified = Vec::new();
        for kind in MetricKind::ALL {
            for name in host.base_metrics(kind)? {
                if name.contains('.') {
                    qualified.push((name, kind));
                    continue;
                }
                let props = host.properties(&name)?;
                let suffixes = host.sub_metrics(kind, &name)?;
                bases.push(BaseMetric {
                    name,
                    kind,
                    description: props.description,
                    hw_unit: props.hw_unit,
                    dim_unit: props.dim_unit,
                    suffixes,
                });
            }
        }
        bases.sort_by(|a, b| a.name.cmp(&b.name));
        let by_name = bases.iter().enumerate().map(|(i, b)| (b.name.clone(), i)).collect();
        Ok(MetricsCatalog {
            lib,
            chip: chip.to_string(),
            counter_availability,
            host,
            bases,
            by_name,
            qualified,
        })
    }

    /// The library in use.
    pub fn lib(&self) -> &'static CuptiLib {
        self.lib
    }

    /// The chip name.
    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// Base metrics (without group-qualified names), sorted by name.
    pub fn base_metrics(&self) -> &[BaseMetric] {
        &self.bases
    }

    /// Group-qualified base names (`TPC.TriageCompute.sm__cycles_active`, …) with their kinds.
    pub fn qualified_base_metrics(&self) -> &[(String, MetricKind)] {
        &self.qualified
    }

    /// A base metric by name.
    pub fn base(&self, name: &str) -> Option<&BaseMetric> {
        self.by_name.get(name).map(|&i| &self.bases[i])
    }

    /// Base metrics whose name contains `filter` (case-insensitive); all when `None`.
    pub fn filter(&self, filter: Option<&str>) -> Vec<&BaseMetric> {
        let f = filter.map(|f| f.to_ascii_lowercase());
        self.bases
            .iter()
            .filter(|b| f.as_deref().is_none_or(|f| b.name.to_ascii_lowercase().contains(f)))
            .collect()
    }

    /// Number of valid full names (base x suffix, unqualified).
    pub fn num_full_names(&self) -> usize {
        self.bases.iter().map(|b| b.suffixes.len()).sum()
    }

    /// Description and units of a name (with or without suffix).
    pub fn properties(&self, name: &str) -> Result<MetricProperties, CountersError> {
        self.host.properties(name)
    }

    fn split<'a>(&self, name: &'a str) -> Option<(&BaseMetric, &'a str)> {
        let (b, s) = match name.find('.') {
            Some(i) => (&name[..i], &name[i..]),
            None => (name, ""),
        };
        self.base(b).map(|base| (base, s))
    }

    fn check_one(&self, name: &str) -> Result<MetricInfo, UnknownMetric> {
        let unknown = |reason: String| UnknownMetric {
            name: name.to_string(),
            reason,
            closest: self.closest(name, 3),
        };
        if let Some((base, suffix)) = self.split(name) {
            if base.suffixes.iter().any(|s| s == suffix) {
                let properties = self.host.properties(name).map_err(|e| unknown(e.to_string()))?;
                return Ok(MetricInfo {
                    name: name.into(),
                    base: base.name.clone(),
                    properties,
                    scope: base.scope(),
                });
            }
            let reason = if suffix.is_empty() {
                match base.kind {
                    MetricKind::Counter => format!(
                        "{} is a counter: add a rollup such as .sum, .avg, .min or .max",
                        base.name
                    ),
                    MetricKind::Ratio => format!("{} is a ratio: add .ratio, .pct or .max_rate", base.name),
                    MetricKind::Throughput => {
                        format!(
                            "{} is a throughput: add e.g. .avg.pct_of_peak_sustained_elapsed",
                            base.name
                        )
                    }
                }
            } else {
                format!("{} is not a suffix of the {} metric {}", suffix, base.kind, base.name)
            };
            return Err(unknown(reason));
        }
        // Group-qualified names and anything the enumeration missed: ask CUPTI directly.
        let accepted = self
            .host
            .properties(name)
            .ok()
            .filter(|_| self.try_add(&[name]).is_ok());
        match accepted {
            Some(properties) => {
                let scope = MetricScope::of_hw_unit(&properties.hw_unit);
                let base = name.rsplit_once('.').map_or(name, |(b, _)| b).to_string();
                Ok(MetricInfo {
                    name: name.into(),
                    base,
                    properties,
                    scope,
                })
            }
            None => Err(unknown(format!("no such metric for {}", self.chip))),
        }
    }

    fn try_add<S: AsRef<str>>(&self, names: &[S]) -> Result<HostObject, CountersError> {
        let mut h = HostObject::new(self.lib, &self.chip, self.counter_availability.as_deref())?;
        h.add_metrics(&c_names(names)?)?;
        Ok(h)
    }

    /// Checks names before any GPU work: unknown names give [`CountersError::UnknownMetrics`]
    /// with the 3 closest valid names each; sets CUPTI cannot collect together (device-level
    /// with context-level) give [`CountersError::IncompatibleMetrics`] naming the pairs.
    pub fn validate<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<MetricInfo>, CountersError> {
        if names.is_empty() {
            return Err(CountersError::Usage("no metrics given".into()));
        }
        let mut ok = Vec::new();
        let mut bad = Vec::new();
        for n in names {
            match self.check_one(n.as_ref().trim()) {
                Ok(i) => ok.push(i),
                Err(u) => bad.push(u),
            }
        }
        if !bad.is_empty() {
            return Err(CountersError::UnknownMetrics(bad));
        }
        self.check_compatible(&ok)?;
        Ok(ok)
    }

    fn check_compatible(&self, infos: &[MetricInfo]) -> Result<(), CountersError> {
        let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
        match self.try_add(&names) {
            Ok(_) => Ok(()),
            Err(CountersError::Cupti { code, .. }) if code == CUPTI_ERROR_NOT_SUPPORTED => {
                let mut pairs = Vec::new();
                for (i, a) in infos.iter().enumerate() {
                    for b in &infos[i + 1..] {
                        if pairs.len() < 8 && self.try_add(&[&a.name, &b.name]).is_err() {
                            pairs.push((a, b));
                        }
                    }
                }
                let describe = |m: &MetricInfo| {
                    format!(
                        "{} ({}-level, unit {})",
                        m.name,
                        if m.scope == MetricScope::Device {
                            "device"
                        } else {
                            "context"
                        },
                        m.properties.hw_unit
                    )
                };
                let detail = if pairs.is_empty() {
                    "no single pair conflicts; the set as a whole is refused".to_string()
                } else {
                    pairs
                        .iter()
                        .map(|(a, b)| format!("{} with {}", describe(a), describe(b)))
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                Err(CountersError::IncompatibleMetrics(format!(
                    "CUPTI {} cannot collect these metrics in one session (cuptiProfilerHostConfigAddMetrics: \
                     CUPTI_ERROR_NOT_SUPPORTED): {detail}. Device-level metrics (NVLink nvlrx/nvltx, C2C ctc, PCIe pcie) \
                     cannot be mixed with context-level ones; collect them in a separate run",
                    self.lib.api_version
                )))
            }
            Err(e) => Err(e),
        }
    }

    /// Config image for a validated metric set (what `cuptiRangeProfilerSetConfig` takes).
    pub fn config_image<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<u8>, CountersError> {
        self.validate(names)?;
        self.try_add(names)?.config_image()
    }

    /// Number of replay passes the metric set needs (`cuptiProfilerHostGetNumOfPasses`).
    pub fn num_passes<S: AsRef<str>>(&self, names: &[S]) -> Result<usize, CountersError> {
        let image = self.config_image(names)?;
        self.lib.num_passes(&image)
    }

    /// Up to `k` valid full names closest to `name` (Levenshtein distance), best first.
    pub fn closest(&self, name: &str, k: usize) -> Vec<String> {
        let name = name.trim();
        let (user_base, _) = name.split_once('.').unwrap_or((name, ""));
        let mut scored: Vec<(usize, &BaseMetric)> = self
            .bases
            .iter()
            .map(|b| (levenshtein(user_base, &b.name), b))
            .collect();
        scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        let best = scored.first().map_or(0, |s| s.0);
        let candidates = scored.iter().take_while(|(d, _)| *d <= best + 2).take(12);
        let mut full: Vec<(usize, String)> = candidates
            .flat_map(|(_, b)| b.full_names())
            .map(|f| (levenshtein(name, &f), f))
            .collect();
        // Ties go to the names people use most (`.sum` before `.avg`, …), then to shorter names.
        let pref = |f: &str| {
            const ORDER: [&str; 7] = [
                ".sum",
                ".avg.pct_of_peak_sustained_elapsed",
                ".ratio",
                ".pct",
                ".avg",
                ".max",
                ".min",
            ];
            let suffix = f.find('.').map_or("", |i| &f[i..]);
            ORDER.iter().position(|o| *o == suffix).unwrap_or(ORDER.len())
        };
        full.sort_by(|a, b| {
            (a.0, pref(&a.1), a.1.len())
                .cmp(&(b.0, pref(&b.1), b.1.len()))
                .then_with(|| a.1.cmp(&b.1))
        });
        full.dedup_by(|a, b| a.1 == b.1);
        full.into_iter().take(k).map(|(_, f)| f).collect()
    }
}

/// Classic edit distance (insert, delete, substitute), on bytes.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Whether a CUPTI error from `ConfigAddMetrics` means "bad name" rather than "bad combination".
pub fn is_bad_name_code(code: u32) -> bool {
    code == CUPTI_ERROR_INVALID_PARAMETER || code == CUPTI_ERROR_INVALID_METRIC_NAME
}

/// Metric names as owned C strings (re-exported for the collection side).
pub fn to_c(names: &[String]) -> Result<Vec<CString>, CountersError> {
    c_names(names)
}

#[cfg(test)]
mod tests {
    use super::levenshtein;

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("dram__bytes_red.sum", "dram__bytes_read.sum"), 1);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
