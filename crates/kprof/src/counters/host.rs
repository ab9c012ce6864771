//! Loading libcupti for the counter APIs, and a safe wrapper of the Profiler Host API
//! (`cupti_profiler_host.h`): metric enumeration, config images, pass counts and metric
//! evaluation. None of this needs a GPU: with only the chip name (e.g. `"GH100"`) the host API
//! runs on a GPU-less machine (measured with the pip wheel `nvidia-cuda-cupti` 13.0.85).
//!
//! Pitfall found on the dev machine: libcupti dlopens `libnvperf_host.so` **by bare name**, so
//! unless that folder is on the loader path `cuptiProfilerHostInitialize` fails with
//! `CUPTI_ERROR_NOT_INITIALIZED`. [`CuptiLib::load`] therefore preloads `libnvperf_host.so` from
//! libcupti's own folder by absolute path first (glibc then matches the bare name against the
//! SONAME of the loaded copy).

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::sync::{Mutex, OnceLock};

use super::structs::*;
use super::CountersError;

type Fp<T> = unsafe extern "C" fn(*mut T) -> CUptiResult;

/// The CUPTI entry points the counter module uses, resolved from one libcupti.
#[allow(missing_docs)]
pub struct CuptiFns {
    pub get_version: unsafe extern "C" fn(*mut u32) -> CUptiResult,
    pub get_result_string: unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult,
    // host
    pub host_initialize: Fp<CUpti_Profiler_Host_Initialize_Params>,
    pub host_deinitialize: Fp<CUpti_Profiler_Host_Deinitialize_Params>,
    pub host_get_supported_chips: Fp<CUpti_Profiler_Host_GetSupportedChips_Params>,
    pub host_get_base_metrics: Fp<CUpti_Profiler_Host_GetBaseMetrics_Params>,
    pub host_get_sub_metrics: Fp<CUpti_Profiler_Host_GetSubMetrics_Params>,
    pub host_get_metric_properties: Fp<CUpti_Profiler_Host_GetMetricProperties_Params>,
    pub host_get_range_name: Fp<CUpti_Profiler_Host_GetRangeName_Params>,
    pub host_evaluate_to_gpu_values: Fp<CUpti_Profiler_Host_EvaluateToGpuValues_Params>,
    pub host_config_add_metrics: Fp<CUpti_Profiler_Host_ConfigAddMetrics_Params>,
    pub host_get_config_image_size: Fp<CUpti_Profiler_Host_GetConfigImageSize_Params>,
    pub host_get_config_image: Fp<CUpti_Profiler_Host_GetConfigImage_Params>,
    pub host_get_num_of_passes: Fp<CUpti_Profiler_Host_GetNumOfPasses_Params>,
    // target (GPU)
    pub profiler_initialize: Fp<CUpti_Profiler_Initialize_Params>,
    pub profiler_deinitialize: Fp<CUpti_Profiler_DeInitialize_Params>,
    pub device_get_chip_name: Fp<CUpti_Device_GetChipName_Params>,
    pub get_counter_availability: Fp<CUpti_Profiler_GetCounterAvailability_Params>,
    // range profiler
    pub rp_enable: Fp<CUpti_RangeProfiler_Enable_Params>,
    pub rp_disable: Fp<CUpti_RangeProfiler_Disable_Params>,
    pub rp_set_config: Fp<CUpti_RangeProfiler_SetConfig_Params>,
    pub rp_start: Fp<CUpti_RangeProfiler_Start_Params>,
    pub rp_stop: Fp<CUpti_RangeProfiler_Stop_Params>,
    pub rp_push_range: Fp<CUpti_RangeProfiler_PushRange_Params>,
    pub rp_pop_range: Fp<CUpti_RangeProfiler_PopRange_Params>,
    pub rp_decode_data: Fp<CUpti_RangeProfiler_DecodeData_Params>,
    pub rp_get_counter_data_size: Fp<CUpti_RangeProfiler_GetCounterDataSize_Params>,
    pub rp_counter_data_image_initialize: Fp<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>,
    pub rp_get_counter_data_info: Fp<CUpti_RangeProfiler_GetCounterDataInfo_Params>,
    pub rp_counter_data_get_range_info: Fp<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>,
}

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
    /// Entry points.
    pub fns: CuptiFns,
}

/// Serializes `cuptiProfilerHostInitialize`/`Deinitialize`: concurrent first initializations
/// from several threads fail with `CUPTI_ERROR_UNKNOWN` (seen with CUPTI 13.0 on the dev machine).
static HOST_INIT_LOCK: Mutex<()> = Mutex::new(());

static LOADED: OnceLock<Mutex<HashMap<PathBuf, &'static CuptiLib>>> = OnceLock::new();

fn dlopen_global(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // RTLD_NOW | RTLD_GLOBAL so the bare-name dlopen inside libcupti finds this copy.
    unsafe { libloading::os::unix::Library::open(Some(path), libc_flags()).map(Into::into) }
}

const fn libc_flags() -> std::ffi::c_int {
    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL
}

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
        let dir = abs.parent().unwrap_or(Path::new("/"));
        let nvperf = dir.join("libnvperf_host.so");
        let nvperf_host = if nvperf.exists() {
            let l = dlopen_global(&nvperf).map_err(|e| CountersError::Load {
                path: nvperf.clone(),
                reason: e.to_string(),
            })?;
            std::mem::forget(l);
            Some(nvperf)
        } else {
            None
        };
        let lib = dlopen_global(&abs).map_err(|e| CountersError::Load {
            path: abs.clone(),
            reason: e.to_string(),
        })?;
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        macro_rules! sym {
            ($name:literal) => {
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| CountersError::Load {
                    path: abs.clone(),
                    reason: format!(
                        "{} is missing ({e}); the Range Profiler needs CUPTI from CUDA 12.6 Update 2 or later",
                        $name
                    ),
                })?
            };
        }
        let fns = CuptiFns {
            get_version: sym!("cuptiGetVersion"),
            get_result_string: sym!("cuptiGetResultString"),
            host_initialize: sym!("cuptiProfilerHostInitialize"),
            host_deinitialize: sym!("cuptiProfilerHostDeinitialize"),
            host_get_supported_chips: sym!("cuptiProfilerHostGetSupportedChips"),
            host_get_base_metrics: sym!("cuptiProfilerHostGetBaseMetrics"),
            host_get_sub_metrics: sym!("cuptiProfilerHostGetSubMetrics"),
            host_get_metric_properties: sym!("cuptiProfilerHostGetMetricProperties"),
            host_get_range_name: sym!("cuptiProfilerHostGetRangeName"),
            host_evaluate_to_gpu_values: sym!("cuptiProfilerHostEvaluateToGpuValues"),
            host_config_add_metrics: sym!("cuptiProfilerHostConfigAddMetrics"),
            host_get_config_image_size: sym!("cuptiProfilerHostGetConfigImageSize"),
            host_get_config_image: sym!("cuptiProfilerHostGetConfigImage"),
            host_get_num_of_passes: sym!("cuptiProfilerHostGetNumOfPasses"),
            profiler_initialize: sym!("cuptiProfilerInitialize"),
            profiler_deinitialize: sym!("cuptiProfilerDeInitialize"),
            device_get_chip_name: sym!("cuptiDeviceGetChipName"),
            get_counter_availability: sym!("cuptiProfilerGetCounterAvailability"),
            rp_enable: sym!("cuptiRangeProfilerEnable"),
            rp_disable: sym!("cuptiRangeProfilerDisable"),
            rp_set_config: sym!("cuptiRangeProfilerSetConfig"),
            rp_start: sym!("cuptiRangeProfilerStart"),
            rp_stop: sym!("cuptiRangeProfilerStop"),
            rp_push_range: sym!("cuptiRangeProfilerPushRange"),
            rp_pop_range: sym!("cuptiRangeProfilerPopRange"),
            rp_decode_data: sym!("cuptiRangeProfilerDecodeData"),
            rp_get_counter_data_size: sym!("cuptiRangeProfilerGetCounterDataSize"),
            rp_counter_data_image_initialize: sym!("cuptiRangeProfilerCounterDataImageInitialize"),
            rp_get_counter_data_info: sym!("cuptiRangeProfilerGetCounterDataInfo"),
            rp_counter_data_get_range_info: sym!("cuptiRangeProfilerCounterDataGetRangeInfo"),
        };
        let mut api_version = 0u32;
        let rc = unsafe { (fns.get_version)(&mut api_version) };
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
        let mut s: *const c_char = null();
        let ok = unsafe { (self.fns.get_result_string)(rc, &mut s) };
        if ok == CUPTI_SUCCESS && !s.is_null() {
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        } else {
            format!("CUPTI error {rc}")
        }
    }

    /// Turns a CUPTI return code into a result, naming the call.
    pub fn check(&self, call: &'static str, rc: CUptiResult) -> Result<(), CountersError> {
        if rc == CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(CountersError::Cupti {
                call,
                code: rc,
                name: self.result_name(rc),
                hint: hint_for(rc),
            })
        }
    }

    /// Chips this libcupti's host API knows (`cuptiProfilerHostGetSupportedChips`).
    pub fn supported_chips(&self) -> Result<Vec<String>, CountersError> {
        let mut p = CUpti_Profiler_Host_GetSupportedChips_Params {
            structSize: v13_0::HOST_GET_SUPPORTED_CHIPS,
            pPriv: null_mut(),
            numChips: 0,
            ppChipNames: null(),
        };
        self.check("cuptiProfilerHostGetSupportedChips", unsafe {
            (self.fns.host_get_supported_chips)(&mut p)
        })?;
        Ok(unsafe { cstr_list(p.ppChipNames, p.numChips) })
    }

    /// Number of replay passes a config image needs (`cuptiProfilerHostGetNumOfPasses`).
    pub fn num_passes(&self, config_image: &[u8]) -> Result<usize, CountersError> {
        let mut p = CUpti_Profiler_Host_GetNumOfPasses_Params {
            structSize: v13_0::HOST_GET_NUM_OF_PASSES,
            pPriv: null_mut(),
            configImageSize: config_image.len(),
            pConfigImage: config_image.as_ptr() as *mut u8,
            numOfPasses: 0,
        };
        self.check("cuptiProfilerHostGetNumOfPasses", unsafe {
            (self.fns.host_get_num_of_passes)(&mut p)
        })?;
        Ok(p.numOfPasses)
    }

    /// Number of ranges stored in a counter-data image (`cuptiRangeProfilerGetCounterDataInfo`).
    pub fn counter_data_num_ranges(&self, counter_data: &[u8]) -> Result<usize, CountersError> {
        let mut p = CUpti_RangeProfiler_GetCounterDataInfo_Params {
            structSize: v13_0::RANGE_GET_COUNTER_DATA_INFO,
            pPriv: null_mut(),
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            numTotalRanges: 0,
        };
        self.check("cuptiRangeProfilerGetCounterDataInfo", unsafe {
            (self.fns.rp_get_counter_data_info)(&mut p)
        })?;
        Ok(p.numTotalRanges)
    }

    /// Name of range `index` in a counter-data image (nested levels joined by `/`).
    pub fn range_name(&self, counter_data: &[u8], index: usize) -> Result<String, CountersError> {
        let mut p = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params {
            structSize: v13_0::RANGE_COUNTER_DATA_GET_RANGE_INFO,
            pPriv: null_mut(),
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            rangeIndex: index,
            rangeDelimiter: c"/".as_ptr(),
            rangeName: null(),
        };
        self.check("cuptiRangeProfilerCounterDataGetRangeInfo", unsafe {
            (self.fns.rp_counter_data_get_range_info)(&mut p)
        })?;
        // The name is allocated by CUPTI; it is small and left to CUPTI (not freed here).
        Ok(if p.rangeName.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p.rangeName) }.to_string_lossy().into_owned()
        })
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
        CUPTI_ERROR_NOT_INITIALIZED => Some(
            "CUPTI could not load libnvperf_host.so; keep it in libcupti's folder or put that folder on LD_LIBRARY_PATH".into(),
        ),
        _ => None,
    }
}

pub(crate) unsafe fn cstr_list(p: *const *const c_char, n: usize) -> Vec<String> {
    if p.is_null() {
        return Vec::new();
    }
    (0..n)
        .map(|i| {
            let s = *p.add(i);
            if s.is_null() {
                String::new()
            } else {
                CStr::from_ptr(s).to_string_lossy().into_owned()
            }
        })
        .collect()
}

unsafe fn opt_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
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
    obj: *mut super::structs::HostObject,
    chip: CString,
}

// The host object is plain host memory owned by us; CUPTI does not tie it to a thread.
unsafe impl Send for HostObject {}

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
            pChipName: chip_c.as_ptr(),
            pCounterAvailabilityImage: counter_availability.map_or(null(), |a| a.as_ptr()),
            pHostObject: null_mut(),
        };
        let rc = {
            let _guard = HOST_INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            unsafe { (lib.fns.host_initialize)(&mut p) }
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
            obj: p.pHostObject,
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
            pHostObject: self.obj,
            metricType: kind.raw(),
            ppMetricNames: null_mut(),
            numMetrics: 0,
        };
        self.lib.check("cuptiProfilerHostGetBaseMetrics", unsafe {
            (self.lib.fns.host_get_base_metrics)(&mut p)
        })?;
        Ok(unsafe { cstr_list(p.ppMetricNames, p.numMetrics) })
    }

    /// Suffixes a base metric accepts (`.sum`, `.avg.pct_of_peak_sustained_elapsed`, `.ratio`, …),
    /// each starting with a dot (`cuptiProfilerHostGetSubMetrics`).
    pub fn sub_metrics(&self, kind: MetricKind, base: &str) -> Result<Vec<String>, CountersError> {
        let name = CString::new(base).map_err(|_| CountersError::NulInName(base.into()))?;
        let mut p = CUpti_Profiler_Host_GetSubMetrics_Params {
            structSize: v13_0::HOST_GET_SUB_METRICS,
            pPriv: null_mut(),
            pHostObject: self.obj,
            metricType: kind.raw(),
            pMetricName: name.as_ptr(),
            numOfSubmetrics: 0,
            ppSubMetrics: null_mut(),
        };
        self.lib.check("cuptiProfilerHostGetSubMetrics", unsafe {
            (self.lib.fns.host_get_sub_metrics)(&mut p)
        })?;
        Ok(unsafe { cstr_list(p.ppSubMetrics, p.numOfSubmetrics) })
    }

    /// Description, units and kind of a metric, with or without suffix.
    pub fn properties(&self, metric: &str) -> Result<MetricProperties, CountersError> {
        let name = CString::new(metric).map_err(|_| CountersError::NulInName(metric.into()))?;
        let mut p = CUpti_Profiler_Host_GetMetricProperties_Params {
            structSize: v13_0::HOST_GET_METRIC_PROPERTIES,
            pPriv: null_mut(),
            pHostObject: self.obj,
            pMetricName: name.as_ptr(),
            pDescription: null(),
            pHwUnit: null(),
            pDimUnit: null(),
            metricType: 0,
        };
        self.lib.check("cuptiProfilerHostGetMetricProperties", unsafe {
            (self.lib.fns.host_get_metric_properties)(&mut p)
        })?;
        unsafe {
            Ok(MetricProperties {
                description: opt_str(p.pDescription),
                hw_unit: opt_str(p.pHwUnit),
                dim_unit: super::units::ncu_unit(&opt_str(p.pDimUnit)),
                kind: MetricKind::from_raw(p.metricType),
            })
        }
    }

    /// `cuptiProfilerHostConfigAddMetrics`: schedules metrics into this object's config.
    /// Returns the raw CUPTI code on failure so callers can tell bad names
    /// (`INVALID_PARAMETER`/`INVALID_METRIC_NAME`) from incompatible sets (`NOT_SUPPORTED`).
    pub fn add_metrics(&mut self, metrics: &[CString]) -> Result<(), CountersError> {
        let mut ptrs: Vec<*const c_char> = metrics.iter().map(|m| m.as_ptr()).collect();
        let mut p = CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: v13_0::HOST_CONFIG_ADD_METRICS,
            pPriv: null_mut(),
            pHostObject: self.obj,
            ppMetricNames: ptrs.as_mut_ptr(),
            numMetrics: ptrs.len(),
        };
        self.lib.check("cuptiProfilerHostConfigAddMetrics", unsafe {
            (self.lib.fns.host_config_add_metrics)(&mut p)
        })
    }

    /// The config image of the metrics added so far.
    pub fn config_image(&self) -> Result<Vec<u8>, CountersError> {
        let mut s = CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: v13_0::HOST_GET_CONFIG_IMAGE_SIZE,
            pPriv: null_mut(),
            pHostObject: self.obj,
            configImageSize: 0,
        };
        self.lib.check("cuptiProfilerHostGetConfigImageSize", unsafe {
            (self.lib.fns.host_get_config_image_size)(&mut s)
        })?;
        let mut buf = vec![0u8; s.configImageSize];
        let mut p = CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: v13_0::HOST_GET_CONFIG_IMAGE,
            pPriv: null_mut(),
            pHostObject: self.obj,
            configImageSize: buf.len(),
            pConfigImage: buf.as_mut_ptr(),
        };
        self.lib.check("cuptiProfilerHostGetConfigImage", unsafe {
            (self.lib.fns.host_get_config_image)(&mut p)
        })?;
        Ok(buf)
    }

    /// Evaluates `metrics` for range `index` of a decoded counter-data image
    /// (`cuptiProfilerHostEvaluateToGpuValues`).
    pub fn evaluate(&self, counter_data: &[u8], index: usize, metrics: &[CString]) -> Result<Vec<f64>, CountersError> {
        let mut ptrs: Vec<*const c_char> = metrics.iter().map(|m| m.as_ptr()).collect();
        let mut out = vec![f64::NAN; metrics.len()];
        let mut p = CUpti_Profiler_Host_EvaluateToGpuValues_Params {
            structSize: v13_0::HOST_EVALUATE_TO_GPU_VALUES,
            pPriv: null_mut(),
            pHostObject: self.obj,
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            rangeIndex: index,
            ppMetricNames: ptrs.as_mut_ptr(),
            numMetrics: ptrs.len(),
            pMetricValues: out.as_mut_ptr(),
        };
        self.lib.check("cuptiProfilerHostEvaluateToGpuValues", unsafe {
            (self.lib.fns.host_evaluate_to_gpu_values)(&mut p)
        })?;
        Ok(out)
    }
}

impl Drop for HostObject {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            let mut p = CUpti_Profiler_Host_Deinitialize_Params {
                structSize: v13_0::HOST_DEINITIALIZE,
                pPriv: null_mut(),
                pHostObject: self.obj,
            };
            let _guard = HOST_INIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            unsafe { (self.lib.fns.host_deinitialize)(&mut p) };
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
