//! libcupti's function table.

use std::ffi::{c_char, c_void, CStr};

use super::activity::{buffer_completed, buffer_requested, BufferHandlers};
use super::callback::subscriber_callback;
use super::{CuptiResult, SubscriberHandle, CUPTI_SUCCESS};
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

/// libcupti's function table, resolved once per loaded copy ([`CuptiFns::resolve`]). Each entry
/// point is called through the safe method of the same name in snake case.
///
/// The calls pass CUPTI values, handles it gave out (the subscriber, contexts: it checks them)
/// and pointers to Rust memory that lives across the call with the size CUPTI writes.
#[derive(Debug, Clone, Copy)]
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
    /// Resolved (a libcupti without it is refused, as always) but never called.
    #[allow(dead_code)]
    cuptiFinalize: FnFinalize,
    /// `cuptiEnableCallback` (optional: only callbacks need it).
    cuptiEnableCallback: Option<FnEnableCallback>,
}

/// The names of the symbols [`CuptiFns::resolve`] requires (a libcupti without one is refused).
pub const REQUIRED_SYMBOLS: [&str; 14] = [
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords",
    "cuptiGetTimestamp",
    "cuptiFinalize",
];

/// `cuptiActivityEnableDriverApi` or `cuptiActivityEnableRuntimeApi` of a CUPTI that has them
/// ([`CuptiFns::api_switches`]).
#[derive(Debug, Clone, Copy)]
pub struct ApiSwitch(FnEnableApi);

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
pub struct EnableCallback(FnEnableCallback);

impl EnableCallback {
    /// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
    pub(crate) fn call(&self, enable: u32, subscriber: SubscriberHandle, domain: u32, cbid: u32) -> CuptiResult {
        // SAFETY: values and the subscriber handle CUPTI gave out (it checks it).
        unsafe { (self.0)(enable, subscriber, domain, cbid) }
    }
}

impl CuptiFns {
    /// Resolves the table from a loaded libcupti: [`REQUIRED_SYMBOLS`] must be there, the rest is
    /// optional.
    pub(crate) fn resolve(lib: &LoadedLib) -> Result<Self, LoadError> {
        // SAFETY: each type above is the entry point's prototype in CUPTI 13.0's headers
        // (`cupti_activity.h`, `cupti_callbacks.h`, `cupti_result.h`, `cupti_version.h`).
        unsafe {
            Ok(CuptiFns {
                cuptiGetVersion: lib.sym("cuptiGetVersion")?,
                cuptiGetResultString: lib.sym("cuptiGetResultString")?,
                cuptiSubscribe: lib.sym("cuptiSubscribe")?,
                cuptiUnsubscribe: lib.sym("cuptiUnsubscribe")?,
                cuptiActivityRegisterCallbacks: lib.sym("cuptiActivityRegisterCallbacks")?,
                cuptiActivityEnable: lib.sym("cuptiActivityEnable")?,
                cuptiActivityDisable: lib.sym("cuptiActivityDisable")?,
                cuptiActivityEnableDriverApi: lib.opt_sym("cuptiActivityEnableDriverApi"),
                cuptiActivityEnableRuntimeApi: lib.opt_sym("cuptiActivityEnableRuntimeApi"),
                cuptiActivityPushExternalCorrelationId: lib.sym("cuptiActivityPushExternalCorrelationId")?,
                cuptiActivityPopExternalCorrelationId: lib.sym("cuptiActivityPopExternalCorrelationId")?,
                cuptiActivityFlushAll: lib.sym("cuptiActivityFlushAll")?,
                cuptiActivityGetNextRecord: lib.sym("cuptiActivityGetNextRecord")?,
                cuptiActivityGetNumDroppedRecords: lib.sym("cuptiActivityGetNumDroppedRecords")?,
                cuptiGetTimestamp: lib.sym("cuptiGetTimestamp")?,
                cuptiFinalize: lib.sym("cuptiFinalize")?,
                cuptiEnableCallback: lib.opt_sym("cuptiEnableCallback"),
            })
        }
    }

    /// `cuptiGetVersion`.
    pub(crate) fn get_version(&self, version: &mut u32) -> CuptiResult {
        // SAFETY: writes one u32 into `version`.
        unsafe { (self.cuptiGetVersion)(version) }
    }

    /// `cuptiGetResultString`: the text of a result code (`None` when CUPTI has none).
    pub(crate) fn get_result_string(&self, code: CuptiResult) -> Option<String> {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: writes one pointer into `p`.
        let r = unsafe { (self.cuptiGetResultString)(code, &mut p) };
        if r == CUPTI_SUCCESS && !p.is_null() {
            // SAFETY: on success `p` is one of CUPTI's static NUL-terminated strings.
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        } else {
            None
        }
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
