//! Loading libcupti for the counter APIs ([`CuptiLib::load`], which preloads `libnvperf_host.so`
//! from libcupti's own folder: see `sys::loader::open_cupti_global` for why), and a safe wrapper of
//! the Profiler Host API (`cupti_profiler_host.h`): metric enumeration, config images, pass counts
//! and metric evaluation, through libcupti's one function table ([`crate::sys::cupti::CuptiFns`]).
//! None of it needs a GPU: with only the chip name (e.g. `"GH100"`) the host API runs on a GPU-less
//! machine (checked with the pip wheel `nvidia-cuda-cupti` 13.0.85).

use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::sync::{Mutex, OnceLock};

use super::structs::*;
use super::CountersError;
use crate::sys::cupti::{CuptiFns, ObjectPtr};
use crate::sys::loader::LoadError;

/// A loaded libcupti (never unloaded) with the counter entry points.
pub struct CuptiLib {
    /// Absolute path of the libcupti that was loaded.
    pub path: PathBuf,
    /// The `libnvperf_host.so` preloaded from the same folder, if one was there.
    pub nvperf_host: Option<PathBuf>,
    /// `cuptiGetVersion`, e.g. 130001 for CUDA 13.0.
    pub api_version: u32,
    /// The `structSize`s to use with this library.
    pub sizes: StructSizes,
    /// Entry points (libcupti's one table, resolved again from this handle).
    pub(crate) fns: CuptiFns,
}

/// Serializes `cuptiProfilerHostInitialize`/`Deinitialize`: concurrent first initializations
/// from several threads fail with `CUPTI_ERROR_UNKNOWN` (seen with CUPTI 13.0 on the dev machine).
static HOST_INIT_LOCK: Mutex<()> = Mutex::new(());

static LOADED: OnceLock<Mutex<HashMap<PathBuf, &'static CuptiLib>>> = OnceLock::new();

impl CuptiLib {
    /// Loads libcupti from `path` (a file such as `…/libcupti.so.13`), preloading
    /// `libnvperf_host.so` from the same folder. Loading the same path twice returns the same
    /// copy; loading a *different* libcupti into a process that already holds one is refused
    /// (two CUPTI copies in one process break each other).
    pub fn load(path: &Path) -> Result<&'static CuptiLib, CountersError> {
        let abs = std::fs::canonicalize(path).map_err(|e| CountersError::Load {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let map = LOADED.get_or_init(|| Mutex::new(HashMap::new()));
        let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lib) = map.get(&abs) {
            return Ok(lib);
        }
        if let Some(other) = map.keys().next() {
            return Err(CountersError::Load {
                path: abs,
                reason: format!(
                    "another libcupti ({}) is already loaded in this process",
                    other.display()
                ),
            });
        }
        let (lib, nvperf_host) = crate::sys::loader::open_cupti_global(&abs)
            .map_err(|(path, reason)| CountersError::Load { path, reason })?;
        let too_old = |symbol: &str, why: Option<&str>| CountersError::Load {
            path: abs.clone(),
            reason: format!(
                "{symbol} is missing{}; the Range Profiler needs CUPTI from CUDA 12.6 Update 2 or later",
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ),
        };
        let fns = match CuptiFns::resolve(&lib) {
            Ok(fns) => fns,
            Err(LoadError::SymbolMissing { symbol, .. }) => return Err(too_old(&symbol, None)),
            Err(e) => {
                return Err(CountersError::Load {
                    path: abs,
                    reason: e.to_string(),
                })
            }
        };
        if let Some((symbol, why)) = fns.missing_profiler_entry() {
            return Err(too_old(symbol, Some(why)));
        }
        let mut api_version = 0u32;
        let rc = fns.get_version(&mut api_version);
        if rc != CUPTI_SUCCESS {
            return Err(CountersError::Load {
                path: abs,
                reason: format!("cuptiGetVersion failed with {rc}"),
            });
        }
        let me: &'static CuptiLib = Box::leak(Box::new(CuptiLib {
            path: abs.clone(),
            nvperf_host,
            api_version,
            sizes: StructSizes::for_api_version(api_version),
            fns,
        }));
        map.insert(abs, me);
        Ok(me)
    }

    /// `cuptiGetResultString` (e.g. `CUPTI_ERROR_INVALID_METRIC_NAME`).
    pub fn result_name(&self, rc: CUptiResult) -> String {
        self.fns
            .get_result_string(rc)
            .unwrap_or_else(|| format!("CUPTI error {rc}"))
    }

    /// Turns a CUPTI return code into a result, naming the call.
    pub fn check(&self, call: &'static str, rc: CUptiResult) -> Result<(), CountersError> {
        self.checked(call, if rc == CUPTI_SUCCESS { Ok(()) } else { Err(rc) })
    }

    /// A call's value, or its error code as [`CountersError::Cupti`] naming the call.
    pub(crate) fn checked<T>(&self, call: &'static str, r: Result<T, CUptiResult>) -> Result<T, CountersError> {
        r.map_err(|rc| CountersError::Cupti {
            call,
            code: rc,
            name: self.result_name(rc),
            hint: hint_for(rc),
        })
    }

    /// Chips this libcupti's host API knows (`cuptiProfilerHostGetSupportedChips`).
    pub fn supported_chips(&self) -> Result<Vec<String>, CountersError> {
        let mut p = CUpti_Profiler_Host_GetSupportedChips_Params {
            structSize: v13_0::HOST_GET_SUPPORTED_CHIPS,
            pPriv: null_mut(),
            numChips: 0,
            ppChipNames: null(),
        };
        self.checked(
            "cuptiProfilerHostGetSupportedChips",
            self.fns.host_get_supported_chips(&mut p),
        )
    }

    /// Number of replay passes a config image needs (`cuptiProfilerHostGetNumOfPasses`).
    pub fn num_passes(&self, config_image: &[u8]) -> Result<usize, CountersError> {
        let mut p = CUpti_Profiler_Host_GetNumOfPasses_Params {
            structSize: v13_0::HOST_GET_NUM_OF_PASSES,
            pPriv: null_mut(),
            configImageSize: config_image.len(),
            pConfigImage: null_mut(),
            numOfPasses: 0,
        };
        self.check(
            "cuptiProfilerHostGetNumOfPasses",
            self.fns.host_get_num_of_passes(&mut p, config_image),
        )?;
        Ok(p.numOfPasses)
    }

    /// Number of ranges stored in a counter-data image (`cuptiRangeProfilerGetCounterDataInfo`).
    pub fn counter_data_num_ranges(&self, counter_data: &[u8]) -> Result<usize, CountersError> {
        let mut p = CUpti_RangeProfiler_GetCounterDataInfo_Params {
            structSize: v13_0::RANGE_GET_COUNTER_DATA_INFO,
            pPriv: null_mut(),
            pCounterDataImage: null(),
            counterDataImageSize: 0,
            numTotalRanges: 0,
        };
        self.check(
            "cuptiRangeProfilerGetCounterDataInfo",
            self.fns.rp_get_counter_data_info(&mut p, counter_data),
        )?;
        Ok(p.numTotalRanges)
    }

    /// Name of range `index` in a counter-data image (nested levels joined by `/`).
    pub fn range_name(&self, counter_data: &[u8], index: usize) -> Result<String, CountersError> {
        let mut p = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params {
            structSize: v13_0::RANGE_COUNTER_DATA_GET_RANGE_INFO,
            pPriv: null_mut(),
            pCounterDataImage: null(),
            counterDataImageSize: 0,
            rangeIndex: index,
            rangeDelimiter: null(),
            rangeName: null(),
        };
        self.checked(
            "cuptiRangeProfilerCounterDataGetRangeInfo",
            self.fns.rp_counter_data_get_range_info(&mut p, counter_data, c"/"),
        )
    }
}

/// What to change when CUPTI refuses for a reason outside kprof.
pub fn hint_for(rc: CUptiResult) -> Option<String> {
    match rc {
        CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => Some(
            "reading GPU performance counters needs permission: run as root (or with CAP_SYS_ADMIN), or allow all users by \
             loading the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0 (e.g. `options nvidia \
             NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/, then reload the driver or reboot); see \
             https://developer.nvidia.com/ERR_NVGPUCTRPERM"
                .into(),
        ),
        CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES => Some(
            "this virtual GPU does not expose performance counters to the guest: enable profiling for the vGPU on the \
             host (vGPU profiling support / `enable_profiling` in the vGPU plugin) or use a bare-metal or passthrough GPU"
                .into(),
        ),
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED | CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED => Some(
            "another CUPTI client holds the profiler in this process (torch.profiler, Nsight Compute/Systems, or the \
             legacy Profiler API): run without it"
                .into(),
        ),
        CUPTI_ERROR_HARDWARE_BUSY => Some(
            "the GPU's performance counters are in use by another process (Nsight Compute, another kprof process \
             collecting counters, or a DCGM profiling job): wait for it to end, or take the durations from the records \
             (Python duration_source=\"records\", Rust DurationSource::Records, kprof run --durations records)"
                .into(),
        ),
        CUPTI_ERROR_NOT_INITIALIZED => Some(
            "CUPTI could not load libnvperf_host.so; keep it in libcupti's folder or put that folder on LD_LIBRARY_PATH".into(),
        ),
        _ => None,
    }
}

/// Metric kinds of the host API (`CUpti_MetricType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricKind {
    /// Raw counters: need a rollup (`.sum`, `.avg`, `.min`, `.max`), optionally a submetric.
    Counter,
    /// Ratios: need `.ratio`, `.pct` or `.max_rate`.
    Ratio,
    /// Throughputs: need a rollup and a `pct_of_peak_*` submetric.
    Throughput,
}

impl MetricKind {
    /// All kinds, in `CUpti_MetricType` order.
    pub const ALL: [MetricKind; 3] = [MetricKind::Counter, MetricKind::Ratio, MetricKind::Throughput];

    /// The `CUpti_MetricType` value.
    pub fn raw(self) -> u32 {
        match self {
            MetricKind::Counter => CUPTI_METRIC_TYPE_COUNTER,
            MetricKind::Ratio => CUPTI_METRIC_TYPE_RATIO,
            MetricKind::Throughput => CUPTI_METRIC_TYPE_THROUGHPUT,
        }
    }

    fn from_raw(v: u32) -> Self {
        match v {
            CUPTI_METRIC_TYPE_RATIO => MetricKind::Ratio,
            CUPTI_METRIC_TYPE_THROUGHPUT => MetricKind::Throughput,
            _ => MetricKind::Counter,
        }
    }

    /// `"counter"`, `"ratio"` or `"throughput"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Ratio => "ratio",
            MetricKind::Throughput => "throughput",
        }
    }
}

impl std::fmt::Display for MetricKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `cuptiProfilerHostGetMetricProperties` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricProperties {
    /// Short description.
    pub description: String,
    /// Hardware unit (`dram`, `sm`, `gpu`, `lts`, …).
    pub hw_unit: String,
    /// Dimension of the values in Nsight Compute's base spelling (`byte`, `ns`, `%`, `byte/s`,
    /// `cycle`, `Hz`, …): the host API's word (`nanosecond`, `percent`, `byte/second`,
    /// `gpc_cycle`, …) mapped by [`super::units::ncu_unit`]. Depends on the suffix of the full name.
    pub dim_unit: String,
    /// Counter, ratio or throughput.
    pub kind: MetricKind,
}

/// A `CUpti_Profiler_Host_Object` for one chip (deinitialized on drop).
pub struct HostObject {
    lib: &'static CuptiLib,
    /// CUPTI's host object (plain host memory, not tied to a thread).
    obj: ObjectPtr<super::structs::HostObject>,
    chip: CString,
}

impl HostObject {
    /// `cuptiProfilerHostInitialize` for the Range Profiler. `counter_availability` is the image
    /// from `cuptiProfilerGetCounterAvailability` on a GPU machine; `None` works offline.
    pub fn new(lib: &'static CuptiLib, chip: &str, counter_availability: Option<&[u8]>) -> Result<Self, CountersError> {
        let chip_c = CString::new(chip).map_err(|_| CountersError::InvalidChip {
            chip: chip.into(),
            supported: vec![],
        })?;
        let mut p = CUpti_Profiler_Host_Initialize_Params {
            structSize: lib.sizes.host_initialize,
            pPriv: null_mut(),
            profilerType: CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: null(),
            pCounterAvailabilityImage: null(),
            pHostObject: null_mut(),
        };
        let rc = {
            let _guard = HOST_INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            lib.fns.host_initialize(&mut p, &chip_c, counter_availability)
        };
        if rc == CUPTI_ERROR_INVALID_CHIP_NAME {
            return Err(CountersError::InvalidChip {
                chip: chip.into(),
                supported: lib.supported_chips().unwrap_or_default(),
            });
        }
        lib.check("cuptiProfilerHostInitialize", rc)?;
        Ok(HostObject {
            lib,
            obj: ObjectPtr::new(p.pHostObject),
            chip: chip_c,
        })
    }

    /// The library this object was made with.
    pub fn lib(&self) -> &'static CuptiLib {
        self.lib
    }

    /// The chip name.
    pub fn chip(&self) -> &str {
        self.chip.to_str().unwrap_or("")
    }

    /// Base metric names of one kind (`cuptiProfilerHostGetBaseMetrics`). Some names are
    /// qualified by a metric group (`TPC.TriageCompute.sm__…`).
    pub fn base_metrics(&self, kind: MetricKind) -> Result<Vec<String>, CountersError> {
        let mut p = CUpti_Profiler_Host_GetBaseMetrics_Params {
            structSize: v13_0::HOST_GET_BASE_METRICS,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            metricType: kind.raw(),
            ppMetricNames: null_mut(),
            numMetrics: 0,
        };
        self.lib.checked(
            "cuptiProfilerHostGetBaseMetrics",
            self.lib.fns.host_get_base_metrics(&mut p),
        )
    }

    /// Suffixes a base metric accepts (`.sum`, `.avg.pct_of_peak_sustained_elapsed`, `.ratio`, …),
    /// each starting with a dot (`cuptiProfilerHostGetSubMetrics`).
    pub fn sub_metrics(&self, kind: MetricKind, base: &str) -> Result<Vec<String>, CountersError> {
        let name = CString::new(base).map_err(|_| CountersError::NulInName(base.into()))?;
        let mut p = CUpti_Profiler_Host_GetSubMetrics_Params {
            structSize: v13_0::HOST_GET_SUB_METRICS,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            metricType: kind.raw(),
            pMetricName: null(),
            numOfSubmetrics: 0,
            ppSubMetrics: null_mut(),
        };
        self.lib.checked(
            "cuptiProfilerHostGetSubMetrics",
            self.lib.fns.host_get_sub_metrics(&mut p, &name),
        )
    }

    /// Description, units and kind of a metric, with or without suffix.
    pub fn properties(&self, metric: &str) -> Result<MetricProperties, CountersError> {
        let name = CString::new(metric).map_err(|_| CountersError::NulInName(metric.into()))?;
        let mut p = CUpti_Profiler_Host_GetMetricProperties_Params {
            structSize: v13_0::HOST_GET_METRIC_PROPERTIES,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            pMetricName: null(),
            pDescription: null(),
            pHwUnit: null(),
            pDimUnit: null(),
            metricType: 0,
        };
        let strings = self.lib.checked(
            "cuptiProfilerHostGetMetricProperties",
            self.lib.fns.host_get_metric_properties(&mut p, &name),
        )?;
        Ok(MetricProperties {
            description: strings.description,
            hw_unit: strings.hw_unit,
            dim_unit: super::units::ncu_unit(&strings.dim_unit),
            kind: MetricKind::from_raw(p.metricType),
        })
    }

    /// `cuptiProfilerHostConfigAddMetrics`: schedules metrics into this object's config.
    /// Returns the raw CUPTI code on failure so callers can tell bad names
    /// (`INVALID_PARAMETER`/`INVALID_METRIC_NAME`) from incompatible sets (`NOT_SUPPORTED`).
    pub fn add_metrics(&mut self, metrics: &[CString]) -> Result<(), CountersError> {
        let mut p = CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: v13_0::HOST_CONFIG_ADD_METRICS,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            ppMetricNames: null_mut(),
            numMetrics: 0,
        };
        self.lib.check(
            "cuptiProfilerHostConfigAddMetrics",
            self.lib.fns.host_config_add_metrics(&mut p, metrics),
        )
    }

    /// The config image of the metrics added so far.
    pub fn config_image(&self) -> Result<Vec<u8>, CountersError> {
        let mut s = CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: v13_0::HOST_GET_CONFIG_IMAGE_SIZE,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            configImageSize: 0,
        };
        self.lib.check(
            "cuptiProfilerHostGetConfigImageSize",
            self.lib.fns.host_get_config_image_size(&mut s),
        )?;
        let mut buf = vec![0u8; s.configImageSize];
        let mut p = CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: v13_0::HOST_GET_CONFIG_IMAGE,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            configImageSize: 0,
            pConfigImage: null_mut(),
        };
        self.lib.check(
            "cuptiProfilerHostGetConfigImage",
            self.lib.fns.host_get_config_image(&mut p, &mut buf),
        )?;
        Ok(buf)
    }

    /// Evaluates `metrics` for range `index` of a decoded counter-data image
    /// (`cuptiProfilerHostEvaluateToGpuValues`).
    pub fn evaluate(&self, counter_data: &[u8], index: usize, metrics: &[CString]) -> Result<Vec<f64>, CountersError> {
        let mut out = vec![f64::NAN; metrics.len()];
        let mut p = CUpti_Profiler_Host_EvaluateToGpuValues_Params {
            structSize: v13_0::HOST_EVALUATE_TO_GPU_VALUES,
            pPriv: null_mut(),
            pHostObject: self.obj.get(),
            pCounterDataImage: null(),
            counterDataImageSize: 0,
            rangeIndex: index,
            ppMetricNames: null_mut(),
            numMetrics: 0,
            pMetricValues: null_mut(),
        };
        self.lib.check(
            "cuptiProfilerHostEvaluateToGpuValues",
            self.lib
                .fns
                .host_evaluate_to_gpu_values(&mut p, counter_data, metrics, &mut out),
        )?;
        Ok(out)
    }
}

impl Drop for HostObject {
    fn drop(&mut self) {
        if !self.obj.get().is_null() {
            let mut p = CUpti_Profiler_Host_Deinitialize_Params {
                structSize: v13_0::HOST_DEINITIALIZE,
                pPriv: null_mut(),
                pHostObject: self.obj.get(),
            };
            let _guard = HOST_INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            self.lib.fns.host_deinitialize(&mut p);
        }
    }
}

/// Metric names as C strings.
pub fn c_names<S: AsRef<str>>(names: &[S]) -> Result<Vec<CString>, CountersError> {
    names
        .iter()
        .map(|n| CString::new(n.as_ref().trim()).map_err(|_| CountersError::NulInName(n.as_ref().into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_held_by_another_process_name_the_cause_and_the_records_way_around() {
        let hint = hint_for(CUPTI_ERROR_HARDWARE_BUSY).expect("a hint for CUPTI_ERROR_HARDWARE_BUSY");
        assert!(hint.contains("in use by another process"), "{hint}");
        for way in [
            "duration_source=\"records\"",
            "DurationSource::Records",
            "--durations records",
        ] {
            assert!(hint.contains(way), "{hint} lacks {way}");
        }
        assert_eq!(hint_for(CUPTI_SUCCESS), None);
    }
}
