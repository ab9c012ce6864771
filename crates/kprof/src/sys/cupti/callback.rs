//! The subscriber's callback function. CUPTI calls it on the thread of the CUDA call, with the
//! callback's domain, its id and a pointer to the domain's data; `subscriber_callback` wraps
//! them in a [`Callback`] (a safe view, valid during the call) and passes it to the engine's hook
//! (the graph guard), then to the process's hook (`kprof run --metrics`). A panic in a hook is
//! caught and ignored; only callbacks enabled with `cuptiEnableCallback` arrive.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use super::{
    cbid, CUpti_CallbackData, CUpti_GraphData, CUpti_ResourceData, API_EXIT, CBID_RESOURCE_GRAPHEXEC_CREATED,
    CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, CB_DOMAIN_DRIVER_API, CB_DOMAIN_RESOURCE, CB_DOMAIN_RUNTIME_API,
};

/// A function that receives the subscriber's callbacks.
pub type CallbackHook = fn(&Callback<'_>);

/// The engine's own hook (the graph guard), called first.
static ENGINE_HOOK: OnceLock<CallbackHook> = OnceLock::new();
/// The process's hook ([`set_hook`]), called second.
static HOOK: OnceLock<CallbackHook> = OnceLock::new();

/// Installs the engine's hook (once per process; later calls change nothing).
pub(crate) fn set_engine_hook(hook: CallbackHook) {
    let _ = ENGINE_HOOK.set(hook);
}

/// Installs the process's hook (once; a second call returns `false` and changes nothing).
pub fn set_hook(hook: CallbackHook) -> bool {
    HOOK.set(hook).is_ok()
}

/// `CUpti_CallbackFunc` of every subscription the engine makes.
pub(super) unsafe extern "C" fn subscriber_callback(_: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    let cb = Callback {
        domain,
        cbid,
        data,
        _data: PhantomData,
    };
    if let Some(h) = ENGINE_HOOK.get() {
        let _ = catch_unwind(AssertUnwindSafe(|| h(&cb)));
    }
    if let Some(h) = HOOK.get() {
        let _ = catch_unwind(AssertUnwindSafe(|| h(&cb)));
    }
}

/// One callback: `(domain, cbid, data)` as CUPTI passed them (`CUpti_CallbackDomain`,
/// `CUpti_CallbackId`, the domain's callback data), readable for the duration of the callback.
pub struct Callback<'a> {
    domain: u32,
    cbid: u32,
    data: *const c_void,
    _data: PhantomData<&'a c_void>,
}

impl<'a> Callback<'a> {
    /// `CUpti_CallbackDomain` (1 driver API, 2 runtime API, 3 resource, ...).
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The callback id within the domain.
    pub fn cbid(&self) -> u32 {
        self.cbid
    }

    /// Whether CUPTI passed callback data at all.
    pub fn has_data(&self) -> bool {
        !self.data.is_null()
    }

    /// The `CUpti_CallbackData` of a driver- or runtime-API callback.
    pub fn api(&self) -> Option<&'a CUpti_CallbackData> {
        if self.data.is_null() || (self.domain != CB_DOMAIN_DRIVER_API && self.domain != CB_DOMAIN_RUNTIME_API) {
            return None;
        }
        // SAFETY: CUPTI passes a CUpti_CallbackData (layout checked against the header in CI) to
        // driver- and runtime-API callbacks, valid during the callback.
        Some(unsafe { &*(self.data as *const CUpti_CallbackData) })
    }

    /// The return value of a driver- or runtime-API call (`CUresult` / `cudaError_t`, 0 for
    /// success), at the callback of its exit; `None` at its entry or without callback data.
    pub fn api_result(&self) -> Option<i32> {
        let cb = self.api()?;
        if cb.callbackSite != API_EXIT || cb.functionReturnValue.is_null() {
            return None;
        }
        // SAFETY: at an API exit CUPTI points functionReturnValue at the call's return value, a
        // CUresult or cudaError_t (C enums, 4 bytes), valid during the callback.
        Some(unsafe { *(cb.functionReturnValue as *const i32) })
    }

    /// The `CUpti_ResourceData` of a resource callback.
    pub fn resource(&self) -> Option<&'a CUpti_ResourceData> {
        if self.data.is_null() || self.domain != CB_DOMAIN_RESOURCE {
            return None;
        }
        // SAFETY: CUPTI passes a CUpti_ResourceData (layout checked in CI) to resource callbacks,
        // valid during the callback.
        Some(unsafe { &*(self.data as *const CUpti_ResourceData) })
    }

    /// The executable (`CUgraphExec`, as an address) of `CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED`.
    pub fn created_graph_exec(&self) -> Option<usize> {
        if self.cbid != CBID_RESOURCE_GRAPHEXEC_CREATED {
            return None;
        }
        self.graph_exec_of_resource()
    }

    /// The executable (`CUgraphExec`, as an address) of
    /// `CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING`.
    pub fn destroyed_graph_exec(&self) -> Option<usize> {
        if self.cbid != CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING {
            return None;
        }
        self.graph_exec_of_resource()
    }

    fn graph_exec_of_resource(&self) -> Option<usize> {
        let rd = self.resource()?;
        if rd.resourceDescriptor.is_null() {
            return None;
        }
        // SAFETY: for graph resource callbacks the descriptor is a CUpti_GraphData (layout checked
        // in CI), valid during the callback.
        let gd = unsafe { &*(rd.resourceDescriptor as *const CUpti_GraphData) };
        Some(gd.graphExec as usize)
    }

    /// The executable (`CUgraphExec`, as an address) a `cuGraphLaunch` or `cuGraphLaunch_ptsz`
    /// driver callback launches.
    pub fn launched_graph_exec(&self) -> Option<usize> {
        if self.domain != CB_DOMAIN_DRIVER_API
            || (self.cbid != cbid::CU_GRAPH_LAUNCH && self.cbid != cbid::CU_GRAPH_LAUNCH_PTSZ)
        {
            return None;
        }
        let cb = self.api()?;
        if cb.functionParams.is_null() {
            return None;
        }
        // SAFETY: both graph-launch callbacks pass a `cuGraphLaunch_params` whose first member is
        // the executable, valid during the callback.
        Some(unsafe { *(cb.functionParams as *const *mut c_void) } as usize)
    }
}
