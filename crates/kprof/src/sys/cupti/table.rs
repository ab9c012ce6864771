//! libcupti's function table: the activity API and callbacks (every use of CUPTI), and the
//! Profiler Host and Range Profiler APIs (the counters; CUPTI from CUDA 12.6 Update 2 on).

use std::ffi::{c_char, c_void, CStr, CString};

use super::activity::{buffer_completed, buffer_requested, BufferHandlers};
use super::callback::subscriber_callback;
use super::profiler::*;
use super::{CuptiResult, SubscriberHandle, CUPTI_ERROR_INVALID_PARAMETER, CUPTI_SUCCESS};
use crate::sys::loader::{LoadError, LoadedLib};

/// `CUpti_CallbackFunc`.
pub(super) type CallbackFunc = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
/// `CUpti_BuffersCallbackRequestFunc`.
type BufferRequestedFunc = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// `CUpti_BuffersCallbackCompleteFunc`.
type BufferCompletedFunc = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

type FnGetVersion = unsafe extern "C" fn(*mut u32) -> CuptiResult;
type FnGetResultString = unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult;
type FnSubscribe = unsafe extern "C" fn(*mut SubscriberHandle, Option<CallbackFunc>, *mut c_void) -> CuptiResult;
type FnUnsubscribe = unsafe extern "C" fn(SubscriberHandle) -> CuptiResult;
type FnRegisterCallbacks =
    unsafe extern "C" fn(Option<BufferRequestedFunc>, Option<BufferCompletedFunc>) -> CuptiResult;
type FnActivityKind = unsafe extern "C" fn(u32) -> CuptiResult;
/// `cuptiActivityEnableDriverApi` / `cuptiActivityEnableRuntimeApi(cbid, enable)`.
type FnEnableApi = unsafe extern "C" fn(u32, u8) -> CuptiResult;
type FnPushExternal = unsafe extern "C" fn(u32, u64) -> CuptiResult;
type FnPopExternal = unsafe extern "C" fn(u32, *mut u64) -> CuptiResult;
type FnFlushAll = unsafe extern "C" fn(u32) -> CuptiResult;
pub(super) type FnGetNextRecord = unsafe extern "C" fn(*mut u8, usize, *mut *mut c_void) -> CuptiResult;
pub(super) type FnGetNumDropped = unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult;
type FnGetTimestamp = unsafe extern "C" fn(*mut u64) -> CuptiResult;
type FnFinalize = unsafe extern "C" fn() -> CuptiResult;
/// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
type FnEnableCallback = unsafe extern "C" fn(u32, SubscriberHandle, u32, u32) -> CuptiResult;
/// The profiler APIs' shape: one params struct.
type Fp<T> = unsafe extern "C" fn(*mut T) -> CuptiResult;

/// libcupti's function table, resolved once per loaded copy (`CuptiFns::resolve`). Each entry
/// point is called through the safe method of the same name in snake case.
///
/// The calls pass CUPTI values, handles it gave out (the subscriber, contexts, host and Range
/// Profiler objects: they go back as they came) and pointers to Rust memory that lives across
/// the call with the size CUPTI writes. The profiler APIs take one `#[repr(C)]` params struct
/// ([`super::profiler`]); their methods set every pointer to memory in it from the Rust
/// references they are given (and `pPriv` to null), so the caller fills in only values, sizes
/// and handles.
#[derive(Debug, Clone)]
#[allow(non_snake_case)]
pub struct CuptiFns {
    cuptiGetVersion: FnGetVersion,
    cuptiGetResultString: FnGetResultString,
    cuptiSubscribe: FnSubscribe,
    cuptiUnsubscribe: FnUnsubscribe,
    cuptiActivityRegisterCallbacks: FnRegisterCallbacks,
    cuptiActivityEnable: FnActivityKind,
    cuptiActivityDisable: FnActivityKind,
    /// Absent before CUPTI 12.5: then the whole DRIVER kind is enabled instead.
    cuptiActivityEnableDriverApi: Option<FnEnableApi>,
    /// `cuptiActivityEnableRuntimeApi` (CUPTI >= 12.5; same signature as the driver one).
    cuptiActivityEnableRuntimeApi: Option<FnEnableApi>,
    cuptiActivityPushExternalCorrelationId: FnPushExternal,
    cuptiActivityPopExternalCorrelationId: FnPopExternal,
    cuptiActivityFlushAll: FnFlushAll,
    pub(super) cuptiActivityGetNextRecord: FnGetNextRecord,
    pub(super) cuptiActivityGetNumDroppedRecords: FnGetNumDropped,
    cuptiGetTimestamp: FnGetTimestamp,
    /// `cuptiFinalize`: detaches CUPTI from the process when kprof is done with it.
    cuptiFinalize: FnFinalize,
    /// `cuptiEnableCallback` (optional: only callbacks need it).
    cuptiEnableCallback: Option<FnEnableCallback>,
    /// The profiler APIs (absent before CUDA 12.6 Update 2; [`CuptiFns::missing_profiler_entry`]).
    profiler: ProfilerFns,
    /// The first profiler entry point this libcupti lacks, and the loader's message.
    profiler_missing: Option<(&'static str, String)>,
}

/// The entry points of the Profiler Host and Range Profiler APIs.
#[derive(Debug, Clone, Copy, Default)]
struct ProfilerFns {
    host_initialize: Option<Fp<CUpti_Profiler_Host_Initialize_Params>>,
    host_deinitialize: Option<Fp<CUpti_Profiler_Host_Deinitialize_Params>>,
    host_get_supported_chips: Option<Fp<CUpti_Profiler_Host_GetSupportedChips_Params>>,
    host_get_base_metrics: Option<Fp<CUpti_Profiler_Host_GetBaseMetrics_Params>>,
    host_get_sub_metrics: Option<Fp<CUpti_Profiler_Host_GetSubMetrics_Params>>,
    host_get_metric_properties: Option<Fp<CUpti_Profiler_Host_GetMetricProperties_Params>>,
    /// Resolved (a libcupti without it is refused for counters, as always) but never called.
    #[allow(dead_code)]
    host_get_range_name: Option<Fp<CUpti_Profiler_Host_GetRangeName_Params>>,
    host_evaluate_to_gpu_values: Option<Fp<CUpti_Profiler_Host_EvaluateToGpuValues_Params>>,
    host_config_add_metrics: Option<Fp<CUpti_Profiler_Host_ConfigAddMetrics_Params>>,
    host_get_config_image_size: Option<Fp<CUpti_Profiler_Host_GetConfigImageSize_Params>>,
    host_get_config_image: Option<Fp<CUpti_Profiler_Host_GetConfigImage_Params>>,
    host_get_num_of_passes: Option<Fp<CUpti_Profiler_Host_GetNumOfPasses_Params>>,
    profiler_initialize: Option<Fp<CUpti_Profiler_Initialize_Params>>,
    profiler_deinitialize: Option<Fp<CUpti_Profiler_DeInitialize_Params>>,
    device_get_chip_name: Option<Fp<CUpti_Device_GetChipName_Params>>,
    get_counter_availability: Option<Fp<CUpti_Profiler_GetCounterAvailability_Params>>,
    rp_enable: Option<Fp<CUpti_RangeProfiler_Enable_Params>>,
    rp_disable: Option<Fp<CUpti_RangeProfiler_Disable_Params>>,
    rp_set_config: Option<Fp<CUpti_RangeProfiler_SetConfig_Params>>,
    rp_start: Option<Fp<CUpti_RangeProfiler_Start_Params>>,
    rp_stop: Option<Fp<CUpti_RangeProfiler_Stop_Params>>,
    rp_push_range: Option<Fp<CUpti_RangeProfiler_PushRange_Params>>,
    rp_pop_range: Option<Fp<CUpti_RangeProfiler_PopRange_Params>>,
    rp_decode_data: Option<Fp<CUpti_RangeProfiler_DecodeData_Params>>,
    rp_get_counter_data_size: Option<Fp<CUpti_RangeProfiler_GetCounterDataSize_Params>>,
    rp_counter_data_image_initialize: Option<Fp<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>>,
    rp_get_counter_data_info: Option<Fp<CUpti_RangeProfiler_GetCounterDataInfo_Params>>,
    rp_counter_data_get_range_info: Option<Fp<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>>,
}

/// A CUPTI object pointer (a Profiler Host object, a Range Profiler object): CUPTI's, opaque to
/// kprof, which only passes it back.
#[derive(Debug)]
pub(crate) struct ObjectPtr<T>(*mut T);

impl<T> Clone for ObjectPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ObjectPtr<T> {}

// SAFETY: host and Range Profiler objects are CUPTI heap objects, not tied to the thread that made
// them (a Range Profiler works on the context it was enabled on, whichever thread calls); kprof
// uses each from one thread at a time (through `&mut`, or under a mutex).
unsafe impl<T> Send for ObjectPtr<T> {}

impl<T> ObjectPtr<T> {
    /// Wraps the pointer CUPTI returned.
    pub(crate) fn new(p: *mut T) -> Self {
        ObjectPtr(p)
    }

    /// The pointer, to hand back to CUPTI.
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
}

/// The strings `cuptiProfilerHostGetMetricProperties` returns (empty when absent).
#[derive(Debug, Clone, Default)]
pub(crate) struct MetricStrings {
    pub(crate) description: String,
    pub(crate) hw_unit: String,
    pub(crate) dim_unit: String,
}

/// `cuptiActivityEnableDriverApi` or `cuptiActivityEnableRuntimeApi` of a CUPTI that has them
/// ([`CuptiFns::api_switches`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApiSwitch(FnEnableApi);

impl ApiSwitch {
    /// Turns the API records of callback id `cbid` on (`enable` 1) or off (0). Ids this CUPTI
    /// does not know fail with an error code.
    pub(crate) fn set(&self, cbid: u32, enable: u8) -> CuptiResult {
        // SAFETY: takes two values.
        unsafe { (self.0)(cbid, enable) }
    }
}

/// `cuptiEnableCallback` of a CUPTI that has it ([`CuptiFns::enable_callback`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnableCallback(FnEnableCallback);

impl EnableCallback {
    /// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
    pub(crate) fn call(&self, enable: u32, subscriber: SubscriberHandle, domain: u32, cbid: u32) -> CuptiResult {
        // SAFETY: values and the subscriber handle CUPTI gave out (it checks it).
        unsafe { (self.0)(enable, subscriber, domain, cbid) }
    }
}

/// [`REQUIRED_SYMBOLS`] and [`CuptiFns::resolve`] from one list of the entry points of
/// [`CuptiFns`] outside the profiler APIs, each a field named as its symbol.
macro_rules! activity_entry_points {
    (required: [$($required:ident),* $(,)?], optional: [$($optional:ident),* $(,)?] $(,)?) => {
        /// The names of the symbols `CuptiFns::resolve` requires (a libcupti without one is refused).
        pub const REQUIRED_SYMBOLS: [&str; 14] = [$(stringify!($required)),*];

        impl CuptiFns {
            /// Resolves the table from a loaded libcupti: [`REQUIRED_SYMBOLS`] must be there, the
            /// rest is optional.
            pub(crate) fn resolve(lib: &LoadedLib) -> Result<Self, LoadError> {
                // SAFETY: each type above is the entry point's prototype in CUPTI 13.0's headers
                // (`cupti_activity.h`, `cupti_callbacks.h`, `cupti_result.h`, `cupti_version.h`).
                let mut fns = unsafe {
                    CuptiFns {
                        $($required: lib.sym(stringify!($required))?,)*
                        $($optional: lib.opt_sym(stringify!($optional)),)*
                        profiler: ProfilerFns::default(),
                        profiler_missing: None,
                    }
                };
                fns.resolve_profiler(lib);
                Ok(fns)
            }
        }
    };
}

activity_entry_points! {
    required: [
        cuptiGetVersion,
        cuptiGetResultString,
        cuptiSubscribe,
        cuptiUnsubscribe,
        cuptiActivityRegisterCallbacks,
        cuptiActivityEnable,
        cuptiActivityDisable,
        cuptiActivityPushExternalCorrelationId,
        cuptiActivityPopExternalCorrelationId,
        cuptiActivityFlushAll,
        cuptiActivityGetNextRecord,
        cuptiActivityGetNumDroppedRecords,
        cuptiGetTimestamp,
        cuptiFinalize,
    ],
    optional: [cuptiActivityEnableDriverApi, cuptiActivityEnableRuntimeApi, cuptiEnableCallback],
}

impl CuptiFns {
    /// Resolves the profiler entry points that are there, and notes the first one missing.
    fn resolve_profiler(&mut self, lib: &LoadedLib) {
        let missing = &mut self.profiler_missing;
        let p = &mut self.profiler;
        macro_rules! entry {
            ($field:ident, $name:literal) => {
                // SAFETY: each field's type is the entry point's prototype in CUPTI 13.0's
                // `cupti_profiler_host.h`, `cupti_range_profiler.h`, `cupti_profiler_target.h`
                // and `cupti_target.h` (one params struct of `super::profiler`).
                p.$field = match unsafe { lib.sym_or_reason($name) } {
                    Ok(f) => Some(f),
                    Err(e) => {
                        missing.get_or_insert(($name, e));
                        None
                    }
                };
            };
        }
        entry!(host_initialize, "cuptiProfilerHostInitialize");
        entry!(host_deinitialize, "cuptiProfilerHostDeinitialize");
        entry!(host_get_supported_chips, "cuptiProfilerHostGetSupportedChips");
        entry!(host_get_base_metrics, "cuptiProfilerHostGetBaseMetrics");
        entry!(host_get_sub_metrics, "cuptiProfilerHostGetSubMetrics");
        entry!(host_get_metric_properties, "cuptiProfilerHostGetMetricProperties");
        entry!(host_get_range_name, "cuptiProfilerHostGetRangeName");
        entry!(host_evaluate_to_gpu_values, "cuptiProfilerHostEvaluateToGpuValues");
        entry!(host_config_add_metrics, "cuptiProfilerHostConfigAddMetrics");
        entry!(host_get_config_image_size, "cuptiProfilerHostGetConfigImageSize");
        entry!(host_get_config_image, "cuptiProfilerHostGetConfigImage");
        entry!(host_get_num_of_passes, "cuptiProfilerHostGetNumOfPasses");
        entry!(profiler_initialize, "cuptiProfilerInitialize");
        entry!(profiler_deinitialize, "cuptiProfilerDeInitialize");
        entry!(device_get_chip_name, "cuptiDeviceGetChipName");
        entry!(get_counter_availability, "cuptiProfilerGetCounterAvailability");
        entry!(rp_enable, "cuptiRangeProfilerEnable");
        entry!(rp_disable, "cuptiRangeProfilerDisable");
        entry!(rp_set_config, "cuptiRangeProfilerSetConfig");
        entry!(rp_start, "cuptiRangeProfilerStart");
        entry!(rp_stop, "cuptiRangeProfilerStop");
        entry!(rp_push_range, "cuptiRangeProfilerPushRange");
        entry!(rp_pop_range, "cuptiRangeProfilerPopRange");
        entry!(rp_decode_data, "cuptiRangeProfilerDecodeData");
        entry!(rp_get_counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
        entry!(
            rp_counter_data_image_initialize,
            "cuptiRangeProfilerCounterDataImageInitialize"
        );
        entry!(rp_get_counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
        entry!(
            rp_counter_data_get_range_info,
            "cuptiRangeProfilerCounterDataGetRangeInfo"
        );
    }

    /// The first entry point of the profiler APIs this libcupti lacks and the loader's message;
    /// `None` when it has them all. (Their methods return `CUPTI_ERROR_NOT_SUPPORTED` for a
    /// missing one; the counter module refuses such a libcupti when it loads it.)
    pub(crate) fn missing_profiler_entry(&self) -> Option<(&'static str, &str)> {
        self.profiler_missing.as_ref().map(|(n, e)| (*n, e.as_str()))
    }

    /// `cuptiGetVersion`.
    pub(crate) fn get_version(&self, version: &mut u32) -> CuptiResult {
        // SAFETY: writes one u32 into `version`.
        unsafe { (self.cuptiGetVersion)(version) }
    }

    /// `cuptiGetResultString`: the text of a result code (`None` when CUPTI has none).
    pub(crate) fn get_result_string(&self, code: CuptiResult) -> Option<String> {
        // SAFETY: writes one pointer, on success to one of CUPTI's static NUL-terminated strings.
        unsafe { crate::sys::out_string(CUPTI_SUCCESS, |p| (self.cuptiGetResultString)(code, p)) }
    }

    /// `cuptiSubscribe` with this layer's callback function ([`super::callback`]): the callbacks
    /// enabled later go to the hooks set there.
    pub(crate) fn subscribe(&self, subscriber: &mut SubscriberHandle) -> CuptiResult {
        // SAFETY: writes one handle into `subscriber`; the callback is a function of the right
        // type that lives for the process, and it takes no user data (null).
        unsafe { (self.cuptiSubscribe)(subscriber, Some(subscriber_callback), std::ptr::null_mut()) }
    }

    /// `cuptiSubscribe` without a callback function: holds the subscriber slot, as another
    /// profiling tool would.
    pub(crate) fn subscribe_without_callback(&self, subscriber: &mut SubscriberHandle) -> CuptiResult {
        // SAFETY: writes one handle into `subscriber`; no callback, no user data.
        unsafe { (self.cuptiSubscribe)(subscriber, None, std::ptr::null_mut()) }
    }

    /// `cuptiFinalize`: CUPTI leaves the process (the driver's tool hooks off) until the next
    /// CUPTI call attaches it again.
    pub(crate) fn finalize(&self) -> CuptiResult {
        // SAFETY: takes no arguments; called only with no subscriber, activity kind or profiler
        // session of kprof's left on (see `runner::detach_cupti`).
        unsafe { (self.cuptiFinalize)() }
    }

    /// `cuptiUnsubscribe`.
    pub(crate) fn unsubscribe(&self, subscriber: SubscriberHandle) -> CuptiResult {
        // SAFETY: a subscriber handle CUPTI gave out (it checks it).
        unsafe { (self.cuptiUnsubscribe)(subscriber) }
    }

    /// `cuptiActivityRegisterCallbacks` with this layer's buffer functions ([`super::activity`]):
    /// CUPTI gets 8 MiB buffers from a pool, and every completed buffer goes to
    /// `handlers.completed` (on the thread CUPTI calls back on), then back to the pool. The first
    /// registration's table and handlers stay for the rest of the process.
    pub(crate) fn activity_register_callbacks(&'static self, handlers: BufferHandlers) -> CuptiResult {
        super::activity::register(self, handlers);
        // SAFETY: two functions of the right types that live for the process.
        unsafe { (self.cuptiActivityRegisterCallbacks)(Some(buffer_requested), Some(buffer_completed)) }
    }

    /// `cuptiActivityEnable(kind)`.
    pub(crate) fn activity_enable(&self, kind: u32) -> CuptiResult {
        // SAFETY: takes an activity kind by value (an unknown kind is an error code).
        unsafe { (self.cuptiActivityEnable)(kind) }
    }

    /// `cuptiActivityDisable(kind)`.
    pub(crate) fn activity_disable(&self, kind: u32) -> CuptiResult {
        // SAFETY: takes an activity kind by value (an unknown kind is an error code).
        unsafe { (self.cuptiActivityDisable)(kind) }
    }

    /// The per-callback-id switches of API records, `(driver, runtime)`, when this CUPTI has them
    /// (12.5 and newer).
    pub(crate) fn api_switches(&self) -> Option<(ApiSwitch, ApiSwitch)> {
        match (self.cuptiActivityEnableDriverApi, self.cuptiActivityEnableRuntimeApi) {
            (Some(d), Some(r)) => Some((ApiSwitch(d), ApiSwitch(r))),
            _ => None,
        }
    }

    /// Whether this CUPTI has `cuptiActivityEnableDriverApi`.
    pub(crate) fn has_enable_driver_api(&self) -> bool {
        self.cuptiActivityEnableDriverApi.is_some()
    }

    /// `cuptiActivityPushExternalCorrelationId(kind, id)`.
    pub(crate) fn activity_push_external_correlation_id(&self, kind: u32, id: u64) -> CuptiResult {
        // SAFETY: takes two values.
        unsafe { (self.cuptiActivityPushExternalCorrelationId)(kind, id) }
    }

    /// `cuptiActivityPopExternalCorrelationId(kind, &id)`.
    pub(crate) fn activity_pop_external_correlation_id(&self, kind: u32, id: &mut u64) -> CuptiResult {
        // SAFETY: writes one u64 into `id`.
        unsafe { (self.cuptiActivityPopExternalCorrelationId)(kind, id) }
    }

    /// `cuptiActivityFlushAll(flags)`: completed buffers come back through the buffer callback,
    /// possibly on this thread.
    pub(crate) fn activity_flush_all(&self, flags: u32) -> CuptiResult {
        // SAFETY: takes a value.
        unsafe { (self.cuptiActivityFlushAll)(flags) }
    }

    /// `cuptiActivityGetNumDroppedRecords` of every context (null context, stream 0).
    pub(crate) fn activity_get_num_dropped_records(&self, dropped: &mut usize) -> CuptiResult {
        // SAFETY: writes one usize into `dropped`; the null context means "all".
        unsafe { (self.cuptiActivityGetNumDroppedRecords)(std::ptr::null_mut(), 0, dropped) }
    }

    /// `cuptiGetTimestamp` (ns, the clock of the activity records).
    pub(crate) fn get_timestamp(&self, t: &mut u64) -> CuptiResult {
        // SAFETY: writes one u64 into `t`.
        unsafe { (self.cuptiGetTimestamp)(t) }
    }

    /// `cuptiEnableCallback`, when this CUPTI has it.
    pub(crate) fn enable_callback(&self) -> Option<EnableCallback> {
        self.cuptiEnableCallback.map(EnableCallback)
    }
}

/// `CUPTI_ERROR_NOT_SUPPORTED`: what a missing profiler entry point returns.
const MISSING: CuptiResult = super::CUPTI_ERROR_NOT_SUPPORTED;

/// A params struct of the profiler APIs, whose `pPriv` kprof always passes as null.
trait ProfilerParams {
    /// Sets `pPriv` to null.
    fn clear_priv(&mut self);
}

macro_rules! profiler_params {
    ($($params:ty),* $(,)?) => {
        $(impl ProfilerParams for $params {
            fn clear_priv(&mut self) {
                self.pPriv = std::ptr::null_mut();
            }
        })*
    };
}

profiler_params!(
    CUpti_Profiler_Host_Initialize_Params,
    CUpti_Profiler_Host_Deinitialize_Params,
    CUpti_Profiler_Host_GetSupportedChips_Params,
    CUpti_Profiler_Host_GetBaseMetrics_Params,
    CUpti_Profiler_Host_GetSubMetrics_Params,
    CUpti_Profiler_Host_GetMetricProperties_Params,
    CUpti_Profiler_Host_EvaluateToGpuValues_Params,
    CUpti_Profiler_Host_ConfigAddMetrics_Params,
    CUpti_Profiler_Host_GetConfigImageSize_Params,
    CUpti_Profiler_Host_GetConfigImage_Params,
    CUpti_Profiler_Host_GetNumOfPasses_Params,
    CUpti_Profiler_Initialize_Params,
    CUpti_Profiler_DeInitialize_Params,
    CUpti_Device_GetChipName_Params,
    CUpti_Profiler_GetCounterAvailability_Params,
    CUpti_RangeProfiler_Enable_Params,
    CUpti_RangeProfiler_Object_Params,
    CUpti_RangeProfiler_SetConfig_Params,
    CUpti_RangeProfiler_Stop_Params,
    CUpti_RangeProfiler_PushRange_Params,
    CUpti_RangeProfiler_DecodeData_Params,
    CUpti_RangeProfiler_GetCounterDataSize_Params,
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
    CUpti_RangeProfiler_GetCounterDataInfo_Params,
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
);

/// Calls the profiler entry point `entry` with `p` (its `pPriv` set to null); `MISSING` when this
/// libcupti lacks it.
///
/// # Safety
/// Every pointer in `p` is valid for what the entry point reads and writes through it during the
/// call, and every handle in it is one CUPTI gave out.
unsafe fn call<T: ProfilerParams>(entry: Option<Fp<T>>, p: &mut T) -> CuptiResult {
    let Some(f) = entry else {
        return MISSING;
    };
    p.clear_priv();
    // SAFETY: per the caller.
    unsafe { f(p) }
}

/// [`call`], with any result but `CUPTI_SUCCESS` as the error.
///
/// # Safety
/// As for [`call`].
unsafe fn call_ok<T: ProfilerParams>(entry: Option<Fp<T>>, p: &mut T) -> Result<(), CuptiResult> {
    // SAFETY: per the caller.
    match unsafe { call(entry, p) } {
        CUPTI_SUCCESS => Ok(()),
        rc => Err(rc),
    }
}

/// Pointers to the C strings of `names`, for a `const char**` parameter (valid while `names` is).
fn c_ptrs(names: &[CString]) -> Vec<*const c_char> {
    names.iter().map(|m| m.as_ptr()).collect()
}

/// The strings of a `const char* const*` array CUPTI returned (null entries as "").
///
/// # Safety
/// `p` is null or points at `n` pointers, each null or a NUL-terminated string, all alive.
unsafe fn cstr_list(p: *const *const c_char, n: usize) -> Vec<String> {
    if p.is_null() {
        return Vec::new();
    }
    (0..n)
        // SAFETY: `i < n` entries, per the caller; each one is null or a string.
        .map(|i| unsafe { opt_str(*p.add(i)) })
        .collect()
}

/// The string CUPTI returned ("" for null).
///
/// # Safety
/// `p` is null or a NUL-terminated string that is alive.
unsafe fn opt_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: per the caller.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

// The Profiler Host and Range Profiler APIs. On success, out-pointers CUPTI returns point at
// strings CUPTI owns and keeps (for the host object's or the library's life), read right away.
impl CuptiFns {
    /// `cuptiProfilerHostInitialize` for `chip` (and, on a GPU machine, its counter availability).
    pub(crate) fn host_initialize(
        &self,
        p: &mut CUpti_Profiler_Host_Initialize_Params,
        chip: &CStr,
        counter_availability: Option<&[u8]>,
    ) -> CuptiResult {
        p.pChipName = chip.as_ptr();
        p.pCounterAvailabilityImage = counter_availability.map_or(std::ptr::null(), |a| a.as_ptr());
        // SAFETY: the chip name and the image are borrowed for the call; CUPTI writes the new
        // object's pointer into `p`.
        unsafe { call(self.profiler.host_initialize, p) }
    }

    /// `cuptiProfilerHostGetSupportedChips`: the chip names.
    pub(crate) fn host_get_supported_chips(
        &self,
        p: &mut CUpti_Profiler_Host_GetSupportedChips_Params,
    ) -> Result<Vec<String>, CuptiResult> {
        // SAFETY: CUPTI writes a count and a pointer to its own array into `p`.
        unsafe { call_ok(self.profiler.host_get_supported_chips, p)? };
        // SAFETY: on success, `numChips` names of CUPTI's (see the impl's comment).
        Ok(unsafe { cstr_list(p.ppChipNames, p.numChips) })
    }

    /// `cuptiProfilerHostGetBaseMetrics`: the base metric names of one kind.
    pub(crate) fn host_get_base_metrics(
        &self,
        p: &mut CUpti_Profiler_Host_GetBaseMetrics_Params,
    ) -> Result<Vec<String>, CuptiResult> {
        // SAFETY: the host object's handle; CUPTI writes a count and its own array into `p`.
        unsafe { call_ok(self.profiler.host_get_base_metrics, p)? };
        // SAFETY: on success, `numMetrics` names of CUPTI's.
        Ok(unsafe { cstr_list(p.ppMetricNames, p.numMetrics) })
    }

    /// `cuptiProfilerHostGetSubMetrics` of `metric`: its suffixes.
    pub(crate) fn host_get_sub_metrics(
        &self,
        p: &mut CUpti_Profiler_Host_GetSubMetrics_Params,
        metric: &CStr,
    ) -> Result<Vec<String>, CuptiResult> {
        p.pMetricName = metric.as_ptr();
        // SAFETY: the name is borrowed for the call; CUPTI writes a count and its own array.
        unsafe { call_ok(self.profiler.host_get_sub_metrics, p)? };
        // SAFETY: on success, `numOfSubmetrics` strings of CUPTI's.
        Ok(unsafe { cstr_list(p.ppSubMetrics, p.numOfSubmetrics) })
    }

    /// `cuptiProfilerHostGetMetricProperties` of `metric`: its strings (the kind stays in `p`).
    pub(crate) fn host_get_metric_properties(
        &self,
        p: &mut CUpti_Profiler_Host_GetMetricProperties_Params,
        metric: &CStr,
    ) -> Result<MetricStrings, CuptiResult> {
        p.pMetricName = metric.as_ptr();
        // SAFETY: the name is borrowed for the call; CUPTI writes three string pointers of its own
        // and the kind into `p`.
        unsafe { call_ok(self.profiler.host_get_metric_properties, p)? };
        // SAFETY: on success, each is null or a string of CUPTI's.
        unsafe {
            Ok(MetricStrings {
                description: opt_str(p.pDescription),
                hw_unit: opt_str(p.pHwUnit),
                dim_unit: opt_str(p.pDimUnit),
            })
        }
    }

    /// `cuptiProfilerHostConfigAddMetrics` of `metrics`.
    pub(crate) fn host_config_add_metrics(
        &self,
        p: &mut CUpti_Profiler_Host_ConfigAddMetrics_Params,
        metrics: &[CString],
    ) -> CuptiResult {
        let mut ptrs = c_ptrs(metrics);
        p.ppMetricNames = ptrs.as_mut_ptr();
        p.numMetrics = ptrs.len();
        // SAFETY: `numMetrics` name pointers, alive (with `metrics`) for the call.
        unsafe { call(self.profiler.host_config_add_metrics, p) }
    }

    /// `cuptiProfilerHostGetConfigImage` into `image`.
    pub(crate) fn host_get_config_image(
        &self,
        p: &mut CUpti_Profiler_Host_GetConfigImage_Params,
        image: &mut [u8],
    ) -> CuptiResult {
        p.configImageSize = image.len();
        p.pConfigImage = image.as_mut_ptr();
        // SAFETY: CUPTI writes at most `configImageSize` bytes into `image`.
        unsafe { call(self.profiler.host_get_config_image, p) }
    }

    /// `cuptiProfilerHostGetNumOfPasses` of a config image.
    pub(crate) fn host_get_num_of_passes(
        &self,
        p: &mut CUpti_Profiler_Host_GetNumOfPasses_Params,
        config_image: &[u8],
    ) -> CuptiResult {
        p.configImageSize = config_image.len();
        p.pConfigImage = config_image.as_ptr() as *mut u8;
        // SAFETY: CUPTI reads `configImageSize` bytes of the image (the header's `uint8_t*` is
        // not written) and writes the count into `p`.
        unsafe { call(self.profiler.host_get_num_of_passes, p) }
    }

    /// `cuptiProfilerHostEvaluateToGpuValues` of `metrics` into `values` (one per metric).
    pub(crate) fn host_evaluate_to_gpu_values(
        &self,
        p: &mut CUpti_Profiler_Host_EvaluateToGpuValues_Params,
        counter_data: &[u8],
        metrics: &[CString],
        values: &mut [f64],
    ) -> CuptiResult {
        let entry = self.profiler.host_evaluate_to_gpu_values;
        if entry.is_some() && values.len() < metrics.len() {
            return CUPTI_ERROR_INVALID_PARAMETER;
        }
        let mut ptrs = c_ptrs(metrics);
        p.pCounterDataImage = counter_data.as_ptr();
        p.counterDataImageSize = counter_data.len();
        p.ppMetricNames = ptrs.as_mut_ptr();
        p.numMetrics = ptrs.len();
        p.pMetricValues = values.as_mut_ptr();
        // SAFETY: the image and `numMetrics` names are borrowed for the call; CUPTI writes
        // `numMetrics` values, and `values` holds at least that many.
        unsafe { call(entry, p) }
    }

    /// `cuptiDeviceGetChipName`: the chip name (`None` when CUPTI gave none).
    pub(crate) fn device_get_chip_name(
        &self,
        p: &mut CUpti_Device_GetChipName_Params,
    ) -> Result<Option<String>, CuptiResult> {
        // SAFETY: a device index; CUPTI writes a pointer to its own string into `p`.
        unsafe { call_ok(self.profiler.device_get_chip_name, p)? };
        // SAFETY: on success, null or a string of CUPTI's.
        Ok((!p.pChipName.is_null()).then(|| unsafe { opt_str(p.pChipName) }))
    }

    /// `cuptiProfilerGetCounterAvailability` of the context in `p`: the image size only (`image`
    /// `None`), or the image into `image`.
    pub(crate) fn get_counter_availability(
        &self,
        p: &mut CUpti_Profiler_GetCounterAvailability_Params,
        image: Option<&mut [u8]>,
    ) -> CuptiResult {
        match image {
            Some(buf) => {
                p.counterAvailabilityImageSize = buf.len();
                p.pCounterAvailabilityImage = buf.as_mut_ptr();
            }
            None => {
                p.counterAvailabilityImageSize = 0;
                p.pCounterAvailabilityImage = std::ptr::null_mut();
            }
        }
        // SAFETY: the context's handle; CUPTI writes at most `counterAvailabilityImageSize` bytes
        // into the image (none when null) and the size into `p`.
        unsafe { call(self.profiler.get_counter_availability, p) }
    }

    /// `cuptiRangeProfilerSetConfig` with `config` into the counter-data image `image`.
    ///
    /// CUPTI keeps writing into `image` until the collection is decoded ([`Self::rp_decode_data`])
    /// or the profiler disabled: the caller keeps it alive and unmoved until then (the one
    /// obligation of this layer's callers that the types do not carry; `RangeProfiler` keeps the
    /// image in a local or in its own field, a `Vec` it does not touch, until it decodes).
    pub(crate) fn rp_set_config(
        &self,
        p: &mut CUpti_RangeProfiler_SetConfig_Params,
        config: &[u8],
        image: &mut [u8],
    ) -> CuptiResult {
        p.configSize = config.len();
        p.pConfig = config.as_ptr();
        p.counterDataImageSize = image.len();
        p.pCounterDataImage = image.as_mut_ptr();
        // SAFETY: the object's handle and two buffers of the sizes given, borrowed for the call.
        // CUPTI keeps using the image until the collection is decoded: the engine keeps it alive
        // and unmoved (a `Vec` it does not touch) until then.
        unsafe { call(self.profiler.rp_set_config, p) }
    }

    /// `cuptiRangeProfilerPushRange` named `name`.
    pub(crate) fn rp_push_range(&self, p: &mut CUpti_RangeProfiler_PushRange_Params, name: &CStr) -> CuptiResult {
        p.pRangeName = name.as_ptr();
        // SAFETY: the object's handle and a name borrowed for the call (CUPTI copies it).
        unsafe { call(self.profiler.rp_push_range, p) }
    }

    /// `cuptiRangeProfilerDecodeData` of the object in `p` (into the image of its `SetConfig`).
    pub(crate) fn rp_decode_data(&self, p: &mut CUpti_RangeProfiler_DecodeData_Params) -> CuptiResult {
        // SAFETY: the object's handle; CUPTI writes into the image it was configured with, which
        // the engine keeps alive until here (see `rp_set_config`), and a count into `p`.
        unsafe { call(self.profiler.rp_decode_data, p) }
    }

    /// `cuptiRangeProfilerGetCounterDataSize` for `metrics`.
    pub(crate) fn rp_get_counter_data_size(
        &self,
        p: &mut CUpti_RangeProfiler_GetCounterDataSize_Params,
        metrics: &[CString],
    ) -> CuptiResult {
        let mut ptrs = c_ptrs(metrics);
        p.pMetricNames = ptrs.as_mut_ptr();
        p.numMetrics = ptrs.len();
        // SAFETY: the object's handle and `numMetrics` names borrowed for the call; CUPTI writes
        // the size into `p`.
        unsafe { call(self.profiler.rp_get_counter_data_size, p) }
    }

    /// `cuptiRangeProfilerCounterDataImageInitialize` of `image`.
    pub(crate) fn rp_counter_data_image_initialize(
        &self,
        p: &mut CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
        image: &mut [u8],
    ) -> CuptiResult {
        p.counterDataSize = image.len();
        p.pCounterData = image.as_mut_ptr();
        // SAFETY: the object's handle; CUPTI writes at most `counterDataSize` bytes into `image`.
        unsafe { call(self.profiler.rp_counter_data_image_initialize, p) }
    }

    /// `cuptiRangeProfilerGetCounterDataInfo` of a counter-data image.
    pub(crate) fn rp_get_counter_data_info(
        &self,
        p: &mut CUpti_RangeProfiler_GetCounterDataInfo_Params,
        counter_data: &[u8],
    ) -> CuptiResult {
        p.pCounterDataImage = counter_data.as_ptr();
        p.counterDataImageSize = counter_data.len();
        // SAFETY: CUPTI reads the image (borrowed for the call) and writes a count into `p`.
        unsafe { call(self.profiler.rp_get_counter_data_info, p) }
    }

    /// `cuptiRangeProfilerCounterDataGetRangeInfo` of a counter-data image: the range's name
    /// (nested levels joined by `delimiter`; "" when CUPTI gave none).
    pub(crate) fn rp_counter_data_get_range_info(
        &self,
        p: &mut CUpti_RangeProfiler_CounterData_GetRangeInfo_Params,
        counter_data: &[u8],
        delimiter: &CStr,
    ) -> Result<String, CuptiResult> {
        p.pCounterDataImage = counter_data.as_ptr();
        p.counterDataImageSize = counter_data.len();
        p.rangeDelimiter = delimiter.as_ptr();
        // SAFETY: the image and the delimiter are borrowed for the call; CUPTI writes a pointer to
        // a name it allocates into `p`.
        unsafe { call_ok(self.profiler.rp_counter_data_get_range_info, p)? };
        // The name is allocated by CUPTI; it is small and left to CUPTI (not freed here).
        // SAFETY: on success, null or a string of CUPTI's.
        Ok(unsafe { opt_str(p.rangeName) })
    }
}

/// The methods of the profiler entry points whose params struct holds only values, sizes and
/// handles CUPTI gave out (a context, a host or Range Profiler object), nothing that points at
/// memory: CUPTI reads the struct and writes values (a new object's pointer, a size, the pass
/// state) back into it.
macro_rules! value_calls {
    ($($(#[$doc:meta])* $name:ident($params:ty);)*) => {
        impl CuptiFns {
            $(
                $(#[$doc])*
                pub(crate) fn $name(&self, p: &mut $params) -> CuptiResult {
                    // SAFETY: a struct of values, sizes and handles CUPTI gave out (see the macro's
                    // doc), which CUPTI reads and writes values into during the call.
                    unsafe { call(self.profiler.$name, p) }
                }
            )*
        }
    };
}

value_calls! {
    /// `cuptiProfilerHostDeinitialize` of the object in `p`.
    host_deinitialize(CUpti_Profiler_Host_Deinitialize_Params);
    /// `cuptiProfilerHostGetConfigImageSize`.
    host_get_config_image_size(CUpti_Profiler_Host_GetConfigImageSize_Params);
    /// `cuptiProfilerInitialize`.
    profiler_initialize(CUpti_Profiler_Initialize_Params);
    /// `cuptiProfilerDeInitialize`.
    profiler_deinitialize(CUpti_Profiler_DeInitialize_Params);
    /// `cuptiRangeProfilerEnable` on the context in `p` (the new object is written into `p`).
    rp_enable(CUpti_RangeProfiler_Enable_Params);
    /// `cuptiRangeProfilerDisable` of the object in `p`.
    rp_disable(CUpti_RangeProfiler_Disable_Params);
    /// `cuptiRangeProfilerStart` of the object in `p`.
    rp_start(CUpti_RangeProfiler_Start_Params);
    /// `cuptiRangeProfilerStop` of the object in `p` (the pass state is written into `p`).
    rp_stop(CUpti_RangeProfiler_Stop_Params);
    /// `cuptiRangeProfilerPopRange` of the object in `p`.
    rp_pop_range(CUpti_RangeProfiler_PopRange_Params);
}
