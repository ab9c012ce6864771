//! Hand-written `#[repr(C)]` parameter structs of the CUPTI Profiler Host API
//! (`cupti_profiler_host.h`), the Range Profiler (`cupti_range_profiler.h`) and the few target calls
//! they need (`cupti_profiler_target.h`, `cupti_target.h`), as of CUDA 13.0 (CUPTI API 130001).
//! Every struct starts with `structSize` and `pPriv`; the sizes to put there are [`v13_0`]'s, or
//! [`StructSizes::for_api_version`]'s for the loaded libcupti. The test
//! `counters_host::struct_layouts_match_cuda_13_0_headers` checks every offset and `…_STRUCT_SIZE`
//! value here against the real 13.0 headers from the pip wheel.

#![allow(non_snake_case, non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_void};

/// `CUcontext` (opaque driver handle).
pub type CUcontext = *mut c_void;
/// `CUptiResult` (spelled as in the headers; the result codes are [`super`]'s).
pub type CUptiResult = super::CuptiResult;
pub use super::{
    CUPTI_ERROR_HARDWARE_BUSY, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_ERROR_INVALID_CHIP_NAME,
    CUPTI_ERROR_INVALID_METRIC_NAME, CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
    CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_SUPPORTED, CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED,
    CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, CUPTI_SUCCESS,
};

/// `CUpti_MetricType`.
pub const CUPTI_METRIC_TYPE_COUNTER: u32 = 0;
pub const CUPTI_METRIC_TYPE_RATIO: u32 = 1;
pub const CUPTI_METRIC_TYPE_THROUGHPUT: u32 = 2;
/// `CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER`.
pub const CUPTI_PROFILER_TYPE_RANGE_PROFILER: u32 = 0;
/// `CUpti_ProfilerRange`.
pub const CUPTI_AUTO_RANGE: u32 = 1;
pub const CUPTI_USER_RANGE: u32 = 2;
/// `CUpti_ProfilerReplayMode`.
pub const CUPTI_APPLICATION_REPLAY: u32 = 1;
pub const CUPTI_KERNEL_REPLAY: u32 = 2;
pub const CUPTI_USER_REPLAY: u32 = 3;

/// Opaque `CUpti_Profiler_Host_Object`.
pub type HostObject = c_void;
/// Opaque `CUpti_RangeProfiler_Object`.
pub type RangeProfilerObject = c_void;

// ---------------------------------------------------------------------------------------------
// cupti_profiler_target.h / cupti_target.h

#[repr(C)]
pub struct CUpti_Profiler_Initialize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
}

#[repr(C)]
pub struct CUpti_Profiler_DeInitialize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
}

#[repr(C)]
pub struct CUpti_Device_GetChipName_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub deviceIndex: usize,
    pub pChipName: *const c_char,
}

#[repr(C)]
pub struct CUpti_Profiler_GetCounterAvailability_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub ctx: CUcontext,
    pub counterAvailabilityImageSize: usize,
    pub pCounterAvailabilityImage: *mut u8,
    /// Added in CUPTI 13.1 (struct size 41). Left 0 (device-level counters not allowed).
    pub bAllowDeviceLevelCounters: u8,
}

// ---------------------------------------------------------------------------------------------
// cupti_profiler_host.h

#[repr(C)]
pub struct CUpti_Profiler_Host_Initialize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub profilerType: u32,
    pub pChipName: *const c_char,
    pub pCounterAvailabilityImage: *const u8,
    pub pHostObject: *mut HostObject,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_Deinitialize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetSupportedChips_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub numChips: usize,
    pub ppChipNames: *const *const c_char,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetBaseMetrics_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub metricType: u32,
    pub ppMetricNames: *mut *const c_char,
    pub numMetrics: usize,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetSubMetrics_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub metricType: u32,
    pub pMetricName: *const c_char,
    pub numOfSubmetrics: usize,
    pub ppSubMetrics: *mut *const c_char,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetMetricProperties_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub pMetricName: *const c_char,
    pub pDescription: *const c_char,
    pub pHwUnit: *const c_char,
    pub pDimUnit: *const c_char,
    pub metricType: u32,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetRangeName_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pCounterDataImage: *const u8,
    pub counterDataImageSize: usize,
    pub rangeIndex: usize,
    pub delimiter: *const c_char,
    pub pRangeName: *const c_char,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_EvaluateToGpuValues_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub pCounterDataImage: *const u8,
    pub counterDataImageSize: usize,
    pub rangeIndex: usize,
    pub ppMetricNames: *mut *const c_char,
    pub numMetrics: usize,
    pub pMetricValues: *mut f64,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_ConfigAddMetrics_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub ppMetricNames: *mut *const c_char,
    pub numMetrics: usize,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetConfigImageSize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub configImageSize: usize,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetConfigImage_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pHostObject: *mut HostObject,
    pub configImageSize: usize,
    pub pConfigImage: *mut u8,
}

#[repr(C)]
pub struct CUpti_Profiler_Host_GetNumOfPasses_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub configImageSize: usize,
    pub pConfigImage: *mut u8,
    pub numOfPasses: usize,
}

// ---------------------------------------------------------------------------------------------
// cupti_range_profiler.h

#[repr(C)]
pub struct CUpti_RangeProfiler_SetConfig_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub configSize: usize,
    pub pConfig: *const u8,
    pub counterDataImageSize: usize,
    pub pCounterDataImage: *mut u8,
    pub range: u32,
    pub replayMode: u32,
    pub maxRangesPerPass: usize,
    pub numNestingLevels: u16,
    pub minNestingLevel: u16,
    pub passIndex: usize,
    pub targetNestingLevel: u16,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_Enable_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub ctx: CUcontext,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    /// Added in CUPTI 13.4 (struct size 36). Left 0.
    pub cacheControlMode: u32,
}

/// Shape shared by `Disable`, `Start` and `PopRange` params.
#[repr(C)]
pub struct CUpti_RangeProfiler_Object_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
}
pub type CUpti_RangeProfiler_Disable_Params = CUpti_RangeProfiler_Object_Params;
pub type CUpti_RangeProfiler_Start_Params = CUpti_RangeProfiler_Object_Params;
pub type CUpti_RangeProfiler_PopRange_Params = CUpti_RangeProfiler_Object_Params;

#[repr(C)]
pub struct CUpti_RangeProfiler_Stop_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub passIndex: usize,
    pub targetNestingLevel: usize,
    pub isAllPassSubmitted: u8,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_PushRange_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub pRangeName: *const c_char,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_DecodeData_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub numOfRangeDropped: usize,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_GetCounterDataSize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub pMetricNames: *mut *const c_char,
    pub numMetrics: usize,
    pub maxNumOfRanges: usize,
    pub maxNumRangeTreeNodes: u32,
    pub counterDataSize: usize,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pRangeProfilerObject: *mut RangeProfilerObject,
    pub counterDataSize: usize,
    pub pCounterData: *mut u8,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_GetCounterDataInfo_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pCounterDataImage: *const u8,
    pub counterDataImageSize: usize,
    pub numTotalRanges: usize,
}

#[repr(C)]
pub struct CUpti_RangeProfiler_CounterData_GetRangeInfo_Params {
    pub structSize: usize,
    pub pPriv: *mut c_void,
    pub pCounterDataImage: *const u8,
    pub counterDataImageSize: usize,
    pub rangeIndex: usize,
    pub rangeDelimiter: *const c_char,
    pub rangeName: *const c_char,
}

// ---------------------------------------------------------------------------------------------
// Sizes

/// `…_STRUCT_SIZE` values of the CUDA 13.0 headers (CUPTI API 130001). CUPTI versions its structs
/// by `structSize`: a library accepts the sizes of older headers, and newer headers append fields.
/// The macro is `offsetof(last field) + sizeof(last field)`, so it is **not** `size_of` when the
/// struct ends with padding (`SetConfig` is 90 where `size_of` is 96).
pub mod v13_0 {
    pub const PROFILER_INITIALIZE: usize = 16;
    pub const PROFILER_DEINITIALIZE: usize = 16;
    pub const DEVICE_GET_CHIP_NAME: usize = 32;
    pub const PROFILER_GET_COUNTER_AVAILABILITY: usize = 40;
    pub const HOST_INITIALIZE: usize = 48;
    pub const HOST_DEINITIALIZE: usize = 24;
    pub const HOST_GET_SUPPORTED_CHIPS: usize = 32;
    pub const HOST_GET_BASE_METRICS: usize = 48;
    pub const HOST_GET_SUB_METRICS: usize = 56;
    pub const HOST_GET_METRIC_PROPERTIES: usize = 60;
    pub const HOST_GET_RANGE_NAME: usize = 56;
    pub const HOST_EVALUATE_TO_GPU_VALUES: usize = 72;
    pub const HOST_CONFIG_ADD_METRICS: usize = 40;
    pub const HOST_GET_CONFIG_IMAGE_SIZE: usize = 32;
    pub const HOST_GET_CONFIG_IMAGE: usize = 40;
    pub const HOST_GET_NUM_OF_PASSES: usize = 40;
    pub const RANGE_SET_CONFIG: usize = 90;
    pub const RANGE_ENABLE: usize = 32;
    pub const RANGE_DISABLE: usize = 24;
    pub const RANGE_START: usize = 24;
    pub const RANGE_STOP: usize = 41;
    pub const RANGE_PUSH_RANGE: usize = 32;
    pub const RANGE_POP_RANGE: usize = 24;
    pub const RANGE_DECODE_DATA: usize = 32;
    pub const RANGE_GET_COUNTER_DATA_SIZE: usize = 64;
    pub const RANGE_COUNTER_DATA_IMAGE_INITIALIZE: usize = 40;
    pub const RANGE_GET_COUNTER_DATA_INFO: usize = 40;
    pub const RANGE_COUNTER_DATA_GET_RANGE_INFO: usize = 56;
}

/// The `structSize` values used for the structs whose size depends on the loaded libcupti: the
/// CUDA 13.0 values, grown where a later CUPTI appended a field that these structs also declare
/// (trailing fields stay zero, their documented default). All others are the CUDA 13.0 values of
/// [`v13_0`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StructSizes {
    /// 40 on 13.0; 41 from 13.1 (`bAllowDeviceLevelCounters`).
    pub get_counter_availability: usize,
    /// 32 on 13.0–13.3; 36 from 13.4 (`cacheControlMode`).
    pub range_enable: usize,
    /// Always 48: later CUPTIs append `pSinglePassMetricSetName` (size 56), which these structs
    /// do not declare, and CUPTI accepts the older size.
    pub host_initialize: usize,
}

impl StructSizes {
    /// Sizes for a libcupti whose `cuptiGetVersion` reports `api_version` (e.g. 130001).
    /// CUPTI's API version is `major*10000 + minor*100 + patch`-like (13.0 → 130001, 13.1 → 130100).
    pub fn for_api_version(api_version: u32) -> Self {
        StructSizes {
            get_counter_availability: if api_version >= 130100 {
                41
            } else {
                v13_0::PROFILER_GET_COUNTER_AVAILABILITY
            },
            range_enable: if api_version >= 130400 { 36 } else { v13_0::RANGE_ENABLE },
            host_initialize: v13_0::HOST_INITIALIZE,
        }
    }
}

/// `offsetof(last) + sizeof(last)`: what a `…_STRUCT_SIZE` macro computes.
macro_rules! struct_size {
    ($t:ty, $last:ident, $last_ty:ty) => {
        std::mem::offset_of!($t, $last) + std::mem::size_of::<$last_ty>()
    };
}

/// Field offsets of every struct here, as `("Struct.field", offset)`, plus
/// `("Struct", struct_size)` rows computed like the header macros (13.0 last field). Compared
/// against the C headers by the test `counters_host::struct_layouts_match_cuda_13_0_headers`.
pub fn layout_table() -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = Vec::new();
    macro_rules! fields {
        ($cname:literal, $t:ty, [$($f:ident),*]) => {
            $( v.push((format!("{}.{}", $cname, stringify!($f)), std::mem::offset_of!($t, $f))); )*
        };
    }
    macro_rules! size {
        ($cname:literal, $t:ty, $last:ident, $lt:ty) => {
            v.push(($cname.to_string(), struct_size!($t, $last, $lt)));
        };
    }
    fields!(
        "CUpti_Profiler_Initialize_Params",
        CUpti_Profiler_Initialize_Params,
        [structSize, pPriv]
    );
    size!(
        "CUpti_Profiler_Initialize_Params",
        CUpti_Profiler_Initialize_Params,
        pPriv,
        *mut c_void
    );
    fields!(
        "CUpti_Device_GetChipName_Params",
        CUpti_Device_GetChipName_Params,
        [structSize, pPriv, deviceIndex, pChipName]
    );
    size!(
        "CUpti_Device_GetChipName_Params",
        CUpti_Device_GetChipName_Params,
        pChipName,
        *const c_char
    );
    fields!(
        "CUpti_Profiler_GetCounterAvailability_Params",
        CUpti_Profiler_GetCounterAvailability_Params,
        [
            structSize,
            pPriv,
            ctx,
            counterAvailabilityImageSize,
            pCounterAvailabilityImage
        ]
    );
    size!(
        "CUpti_Profiler_GetCounterAvailability_Params",
        CUpti_Profiler_GetCounterAvailability_Params,
        pCounterAvailabilityImage,
        *mut u8
    );
    fields!(
        "CUpti_Profiler_Host_Initialize_Params",
        CUpti_Profiler_Host_Initialize_Params,
        [
            structSize,
            pPriv,
            profilerType,
            pChipName,
            pCounterAvailabilityImage,
            pHostObject
        ]
    );
    size!(
        "CUpti_Profiler_Host_Initialize_Params",
        CUpti_Profiler_Host_Initialize_Params,
        pHostObject,
        *mut HostObject
    );
    fields!(
        "CUpti_Profiler_Host_Deinitialize_Params",
        CUpti_Profiler_Host_Deinitialize_Params,
        [structSize, pPriv, pHostObject]
    );
    size!(
        "CUpti_Profiler_Host_Deinitialize_Params",
        CUpti_Profiler_Host_Deinitialize_Params,
        pHostObject,
        *mut HostObject
    );
    fields!(
        "CUpti_Profiler_Host_GetSupportedChips_Params",
        CUpti_Profiler_Host_GetSupportedChips_Params,
        [structSize, pPriv, numChips, ppChipNames]
    );
    size!(
        "CUpti_Profiler_Host_GetSupportedChips_Params",
        CUpti_Profiler_Host_GetSupportedChips_Params,
        ppChipNames,
        *const *const c_char
    );
    fields!(
        "CUpti_Profiler_Host_GetBaseMetrics_Params",
        CUpti_Profiler_Host_GetBaseMetrics_Params,
        [structSize, pPriv, pHostObject, metricType, ppMetricNames, numMetrics]
    );
    size!(
        "CUpti_Profiler_Host_GetBaseMetrics_Params",
        CUpti_Profiler_Host_GetBaseMetrics_Params,
        numMetrics,
        usize
    );
    fields!(
        "CUpti_Profiler_Host_GetSubMetrics_Params",
        CUpti_Profiler_Host_GetSubMetrics_Params,
        [
            structSize,
            pPriv,
            pHostObject,
            metricType,
            pMetricName,
            numOfSubmetrics,
            ppSubMetrics
        ]
    );
    size!(
        "CUpti_Profiler_Host_GetSubMetrics_Params",
        CUpti_Profiler_Host_GetSubMetrics_Params,
        ppSubMetrics,
        *mut *const c_char
    );
    fields!(
        "CUpti_Profiler_Host_GetMetricProperties_Params",
        CUpti_Profiler_Host_GetMetricProperties_Params,
        [
            structSize,
            pPriv,
            pHostObject,
            pMetricName,
            pDescription,
            pHwUnit,
            pDimUnit,
            metricType
        ]
    );
    size!(
        "CUpti_Profiler_Host_GetMetricProperties_Params",
        CUpti_Profiler_Host_GetMetricProperties_Params,
        metricType,
        u32
    );
    fields!(
        "CUpti_Profiler_Host_GetRangeName_Params",
        CUpti_Profiler_Host_GetRangeName_Params,
        [
            structSize,
            pPriv,
            pCounterDataImage,
            counterDataImageSize,
            rangeIndex,
            delimiter,
            pRangeName
        ]
    );
    size!(
        "CUpti_Profiler_Host_GetRangeName_Params",
        CUpti_Profiler_Host_GetRangeName_Params,
        pRangeName,
        *const c_char
    );
    fields!(
        "CUpti_Profiler_Host_EvaluateToGpuValues_Params",
        CUpti_Profiler_Host_EvaluateToGpuValues_Params,
        [
            structSize,
            pPriv,
            pHostObject,
            pCounterDataImage,
            counterDataImageSize,
            rangeIndex,
            ppMetricNames,
            numMetrics,
            pMetricValues
        ]
    );
    size!(
        "CUpti_Profiler_Host_EvaluateToGpuValues_Params",
        CUpti_Profiler_Host_EvaluateToGpuValues_Params,
        pMetricValues,
        *mut f64
    );
    fields!(
        "CUpti_Profiler_Host_ConfigAddMetrics_Params",
        CUpti_Profiler_Host_ConfigAddMetrics_Params,
        [structSize, pPriv, pHostObject, ppMetricNames, numMetrics]
    );
    size!(
        "CUpti_Profiler_Host_ConfigAddMetrics_Params",
        CUpti_Profiler_Host_ConfigAddMetrics_Params,
        numMetrics,
        usize
    );
    fields!(
        "CUpti_Profiler_Host_GetConfigImageSize_Params",
        CUpti_Profiler_Host_GetConfigImageSize_Params,
        [structSize, pPriv, pHostObject, configImageSize]
    );
    size!(
        "CUpti_Profiler_Host_GetConfigImageSize_Params",
        CUpti_Profiler_Host_GetConfigImageSize_Params,
        configImageSize,
        usize
    );
    fields!(
        "CUpti_Profiler_Host_GetConfigImage_Params",
        CUpti_Profiler_Host_GetConfigImage_Params,
        [structSize, pPriv, pHostObject, configImageSize, pConfigImage]
    );
    size!(
        "CUpti_Profiler_Host_GetConfigImage_Params",
        CUpti_Profiler_Host_GetConfigImage_Params,
        pConfigImage,
        *mut u8
    );
    fields!(
        "CUpti_Profiler_Host_GetNumOfPasses_Params",
        CUpti_Profiler_Host_GetNumOfPasses_Params,
        [structSize, pPriv, configImageSize, pConfigImage, numOfPasses]
    );
    size!(
        "CUpti_Profiler_Host_GetNumOfPasses_Params",
        CUpti_Profiler_Host_GetNumOfPasses_Params,
        numOfPasses,
        usize
    );
    fields!(
        "CUpti_RangeProfiler_SetConfig_Params",
        CUpti_RangeProfiler_SetConfig_Params,
        [
            structSize,
            pPriv,
            pRangeProfilerObject,
            configSize,
            pConfig,
            counterDataImageSize,
            pCounterDataImage,
            range,
            replayMode,
            maxRangesPerPass,
            numNestingLevels,
            minNestingLevel,
            passIndex,
            targetNestingLevel
        ]
    );
    size!(
        "CUpti_RangeProfiler_SetConfig_Params",
        CUpti_RangeProfiler_SetConfig_Params,
        targetNestingLevel,
        u16
    );
    fields!(
        "CUpti_RangeProfiler_Enable_Params",
        CUpti_RangeProfiler_Enable_Params,
        [structSize, pPriv, ctx, pRangeProfilerObject]
    );
    size!(
        "CUpti_RangeProfiler_Enable_Params",
        CUpti_RangeProfiler_Enable_Params,
        pRangeProfilerObject,
        *mut RangeProfilerObject
    );
    for name in [
        "CUpti_RangeProfiler_Disable_Params",
        "CUpti_RangeProfiler_Start_Params",
        "CUpti_RangeProfiler_PopRange_Params",
    ] {
        v.push((
            format!("{name}.structSize"),
            std::mem::offset_of!(CUpti_RangeProfiler_Object_Params, structSize),
        ));
        v.push((
            format!("{name}.pPriv"),
            std::mem::offset_of!(CUpti_RangeProfiler_Object_Params, pPriv),
        ));
        v.push((
            format!("{name}.pRangeProfilerObject"),
            std::mem::offset_of!(CUpti_RangeProfiler_Object_Params, pRangeProfilerObject),
        ));
        v.push((
            name.to_string(),
            struct_size!(
                CUpti_RangeProfiler_Object_Params,
                pRangeProfilerObject,
                *mut RangeProfilerObject
            ),
        ));
    }
    fields!(
        "CUpti_RangeProfiler_Stop_Params",
        CUpti_RangeProfiler_Stop_Params,
        [
            structSize,
            pPriv,
            pRangeProfilerObject,
            passIndex,
            targetNestingLevel,
            isAllPassSubmitted
        ]
    );
    size!(
        "CUpti_RangeProfiler_Stop_Params",
        CUpti_RangeProfiler_Stop_Params,
        isAllPassSubmitted,
        u8
    );
    fields!(
        "CUpti_RangeProfiler_PushRange_Params",
        CUpti_RangeProfiler_PushRange_Params,
        [structSize, pPriv, pRangeProfilerObject, pRangeName]
    );
    size!(
        "CUpti_RangeProfiler_PushRange_Params",
        CUpti_RangeProfiler_PushRange_Params,
        pRangeName,
        *const c_char
    );
    fields!(
        "CUpti_RangeProfiler_DecodeData_Params",
        CUpti_RangeProfiler_DecodeData_Params,
        [structSize, pPriv, pRangeProfilerObject, numOfRangeDropped]
    );
    size!(
        "CUpti_RangeProfiler_DecodeData_Params",
        CUpti_RangeProfiler_DecodeData_Params,
        numOfRangeDropped,
        usize
    );
    fields!(
        "CUpti_RangeProfiler_GetCounterDataSize_Params",
        CUpti_RangeProfiler_GetCounterDataSize_Params,
        [
            structSize,
            pPriv,
            pRangeProfilerObject,
            pMetricNames,
            numMetrics,
            maxNumOfRanges,
            maxNumRangeTreeNodes,
            counterDataSize
        ]
    );
    size!(
        "CUpti_RangeProfiler_GetCounterDataSize_Params",
        CUpti_RangeProfiler_GetCounterDataSize_Params,
        counterDataSize,
        usize
    );
    fields!(
        "CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
        [structSize, pPriv, pRangeProfilerObject, counterDataSize, pCounterData]
    );
    size!(
        "CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
        pCounterData,
        *mut u8
    );
    fields!(
        "CUpti_RangeProfiler_GetCounterDataInfo_Params",
        CUpti_RangeProfiler_GetCounterDataInfo_Params,
        [
            structSize,
            pPriv,
            pCounterDataImage,
            counterDataImageSize,
            numTotalRanges
        ]
    );
    size!(
        "CUpti_RangeProfiler_GetCounterDataInfo_Params",
        CUpti_RangeProfiler_GetCounterDataInfo_Params,
        numTotalRanges,
        usize
    );
    fields!(
        "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
        [
            structSize,
            pPriv,
            pCounterDataImage,
            counterDataImageSize,
            rangeIndex,
            rangeDelimiter,
            rangeName
        ]
    );
    size!(
        "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
        rangeName,
        *const c_char
    );
    // The callback data of launch callbacks (`kprof run --metrics` reads its callback site and
    // context); cupti_callbacks.h has no size macro for it.
    fields!(
        "CUpti_CallbackData",
        super::CUpti_CallbackData,
        [callbackSite, functionName, symbolName, context, correlationId]
    );
    // The graph resource callbacks (the graph guard reads the executable of GRAPHEXEC_CREATED).
    fields!(
        "CUpti_ResourceData",
        super::CUpti_ResourceData,
        [context, resourceHandle, resourceDescriptor]
    );
    fields!(
        "CUpti_GraphData",
        super::CUpti_GraphData,
        [
            graph,
            originalGraph,
            node,
            originalNode,
            nodeType,
            dependency,
            graphExec
        ]
    );
    v
}

/// The 13.0 `structSize` constants by C struct name (what this crate passes on 13.0).
pub fn v13_0_constants() -> Vec<(&'static str, usize)> {
    use v13_0::*;
    vec![
        ("CUpti_Profiler_Initialize_Params", PROFILER_INITIALIZE),
        ("CUpti_Profiler_DeInitialize_Params", PROFILER_DEINITIALIZE),
        ("CUpti_Device_GetChipName_Params", DEVICE_GET_CHIP_NAME),
        (
            "CUpti_Profiler_GetCounterAvailability_Params",
            PROFILER_GET_COUNTER_AVAILABILITY,
        ),
        ("CUpti_Profiler_Host_Initialize_Params", HOST_INITIALIZE),
        ("CUpti_Profiler_Host_Deinitialize_Params", HOST_DEINITIALIZE),
        ("CUpti_Profiler_Host_GetSupportedChips_Params", HOST_GET_SUPPORTED_CHIPS),
        ("CUpti_Profiler_Host_GetBaseMetrics_Params", HOST_GET_BASE_METRICS),
        ("CUpti_Profiler_Host_GetSubMetrics_Params", HOST_GET_SUB_METRICS),
        (
            "CUpti_Profiler_Host_GetMetricProperties_Params",
            HOST_GET_METRIC_PROPERTIES,
        ),
        ("CUpti_Profiler_Host_GetRangeName_Params", HOST_GET_RANGE_NAME),
        (
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params",
            HOST_EVALUATE_TO_GPU_VALUES,
        ),
        ("CUpti_Profiler_Host_ConfigAddMetrics_Params", HOST_CONFIG_ADD_METRICS),
        (
            "CUpti_Profiler_Host_GetConfigImageSize_Params",
            HOST_GET_CONFIG_IMAGE_SIZE,
        ),
        ("CUpti_Profiler_Host_GetConfigImage_Params", HOST_GET_CONFIG_IMAGE),
        ("CUpti_Profiler_Host_GetNumOfPasses_Params", HOST_GET_NUM_OF_PASSES),
        ("CUpti_RangeProfiler_SetConfig_Params", RANGE_SET_CONFIG),
        ("CUpti_RangeProfiler_Enable_Params", RANGE_ENABLE),
        ("CUpti_RangeProfiler_Disable_Params", RANGE_DISABLE),
        ("CUpti_RangeProfiler_Start_Params", RANGE_START),
        ("CUpti_RangeProfiler_Stop_Params", RANGE_STOP),
        ("CUpti_RangeProfiler_PushRange_Params", RANGE_PUSH_RANGE),
        ("CUpti_RangeProfiler_PopRange_Params", RANGE_POP_RANGE),
        ("CUpti_RangeProfiler_DecodeData_Params", RANGE_DECODE_DATA),
        (
            "CUpti_RangeProfiler_GetCounterDataSize_Params",
            RANGE_GET_COUNTER_DATA_SIZE,
        ),
        (
            "CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
            RANGE_COUNTER_DATA_IMAGE_INITIALIZE,
        ),
        (
            "CUpti_RangeProfiler_GetCounterDataInfo_Params",
            RANGE_GET_COUNTER_DATA_INFO,
        ),
        (
            "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
            RANGE_COUNTER_DATA_GET_RANGE_INFO,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_offset_rule() {
        let layout: std::collections::HashMap<_, _> = layout_table().into_iter().collect();
        for (name, size) in v13_0_constants() {
            if name == "CUpti_Profiler_DeInitialize_Params" {
                continue;
            }
            assert_eq!(layout[name], size, "{name}");
        }
        assert_eq!(std::mem::size_of::<CUpti_RangeProfiler_SetConfig_Params>(), 96);
    }

    #[test]
    fn sizes_grow_with_version() {
        assert_eq!(StructSizes::for_api_version(130001).get_counter_availability, 40);
        assert_eq!(StructSizes::for_api_version(130100).get_counter_availability, 41);
        assert_eq!(StructSizes::for_api_version(130300).range_enable, 32);
        assert_eq!(StructSizes::for_api_version(130400).range_enable, 36);
        assert_eq!(
            std::mem::offset_of!(CUpti_Profiler_GetCounterAvailability_Params, bAllowDeviceLevelCounters),
            40
        );
        assert_eq!(
            std::mem::offset_of!(CUpti_RangeProfiler_Enable_Params, cacheControlMode),
            32
        );
    }
}
