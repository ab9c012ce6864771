//! kprof's own NVTX v3 "copy": the run-time half of NVTX's header-only implementation, in Rust.
//! NVTX v3 has no library to link: every program compiles its own copy, whose function pointers
//! start unset; at the first NVTX call the copy looks for a tool (`find_tool`, as NVIDIA's copy
//! does) and calls its `InitializeInjectionNvtx2` with this copy's `nvtxGetExportTable`; the tool
//! asks for `GetModuleFunctionTable` and writes its functions into the slots of the modules it
//! wants. If the library cannot be loaded, has no entry point or its entry point returns 0, every
//! slot is cleared (all calls become no-ops, as in NVIDIA's implementation) and [`injection`] says
//! why; kprof also prints that reason once on stderr. Nothing here panics.

use std::ffi::{c_char, c_void, CStr, OsString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use super as abi;
use super::{ExportTableCallbacks, ExportTableVersionInfo, GetExportTableFn, InitializeInjectionFn};

/// The environment variable naming the tool library (64-bit processes).
pub const ENV_INJECTION_PATH: &str = "NVTX_INJECTION64_PATH";

/// What happened when this copy looked for a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// No tool: `NVTX_INJECTION64_PATH` is unset and no static tool is linked in. Calls are no-ops.
    NoTool,
    /// A tool attached; `path` is the library (None for a statically linked tool).
    Attached {
        /// The tool library's path, from `NVTX_INJECTION64_PATH`.
        path: Option<String>,
    },
    /// A tool was named but could not attach; calls are no-ops.
    Failed {
        /// Why, naming the library and what to do.
        reason: String,
    },
}

/// Function-pointer slots per module (indexed by callback id) and the tables handed to tools
/// (`table[cbid]` points at slot `cbid`; entry 0 and entry `size` stay null, as NVIDIA's copy
/// leaves them).
struct Globals {
    slots: [[AtomicPtr<c_void>; abi::MAX_CBID_SIZE]; abi::MODULE_SIZE],
    tables: [[AtomicPtr<AtomicPtr<c_void>>; abi::MAX_CBID_SIZE + 1]; abi::MODULE_SIZE],
}

static GLOBALS: Globals = Globals {
    slots: [const { [const { AtomicPtr::new(null_mut()) }; abi::MAX_CBID_SIZE] }; abi::MODULE_SIZE],
    tables: [const { [const { AtomicPtr::new(null_mut()) }; abi::MAX_CBID_SIZE + 1] }; abi::MODULE_SIZE],
};

static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: std::mem::size_of::<ExportTableCallbacks>(),
    get_module_function_table: Some(get_module_function_table),
};

static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: std::mem::size_of::<ExportTableVersionInfo>(),
    version: abi::NVTX_VERSION,
    reserved0: 0,
    set_injection_nvtx_version: Some(set_injection_nvtx_version),
};

fn cbid_size(module: i32) -> Option<usize> {
    abi::CBID_SIZES.iter().find(|(m, _)| *m == module).map(|(_, n)| *n)
}

unsafe extern "C" fn get_module_function_table(
    module: i32,
    out_table: *mut *mut *mut *const c_void,
    out_size: *mut u32,
) -> i32 {
    let Some(size) = cbid_size(module) else { return 0 };
    let table = &GLOBALS.tables[module as usize];
    let slots = &GLOBALS.slots[module as usize];
    for (cbid, entry) in table.iter().enumerate().take(size).skip(1) {
        entry.store(&slots[cbid] as *const AtomicPtr<c_void> as *mut _, Ordering::Relaxed);
    }
    if !out_size.is_null() {
        // SAFETY: a tool passes valid out-pointers (or null, checked).
        unsafe { *out_size = size as u32 };
    }
    if !out_table.is_null() {
        // SAFETY: as above.
        unsafe { *out_table = table.as_ptr() as *mut *mut *const c_void };
    }
    1
}

unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        abi::ETID_CALLBACKS => &CALLBACKS as *const ExportTableCallbacks as *const c_void,
        abi::ETID_VERSIONINFO => &VERSION_INFO as *const ExportTableVersionInfo as *const c_void,
        _ => std::ptr::null(),
    }
}

fn clear_slots() {
    for module in &GLOBALS.slots {
        for slot in module {
            slot.store(null_mut(), Ordering::Relaxed);
        }
    }
}

/// A tool's entry point, found but not yet called.
enum Tool {
    Dynamic(libloading::Library, InitializeInjectionFn, String),
    Static(InitializeInjectionFn),
}

/// Finds the tool as NVIDIA's copy does; `env` is `NVTX_INJECTION64_PATH`. Loads the library but
/// calls nothing in it:
/// 1. `NVTX_INJECTION64_PATH` names a shared library: it is `dlopen`ed (`RTLD_LAZY`) and its
///    `InitializeInjectionNvtx2` is the entry point;
/// 2. else a statically linked tool's `InitializeInjectionNvtx2_fnptr`, found in the process's
///    global symbols;
/// 3. else (no tool) every call is a no-op.
fn find_tool(env: Option<OsString>) -> Result<Option<Tool>, String> {
    if let Some(path) = env.filter(|p| !p.is_empty()) {
        let shown = path.to_string_lossy().into_owned();
        // SAFETY: loading a library runs its initialisers; the user asked for this tool.
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| {
            format!(
                "{ENV_INJECTION_PATH}={shown} could not be loaded ({e}); NVTX ranges go to no tool. Fix: point \
                 {ENV_INJECTION_PATH} at an existing NVTX tool library (for example libkprof_inject.so), or unset it"
            )
        })?;
        // SAFETY: the symbol has this type in every NVTX tool.
        let init = unsafe { lib.get::<InitializeInjectionFn>(b"InitializeInjectionNvtx2\0") }
            .map(|s| *s)
            .map_err(|_| {
                format!(
                    "{ENV_INJECTION_PATH}={shown} has no InitializeInjectionNvtx2 entry point: it is not an NVTX \
                     tool; NVTX ranges go to no tool. Fix: point {ENV_INJECTION_PATH} at an NVTX tool library"
                )
            })?;
        return Ok(Some(Tool::Dynamic(lib, init, shown)));
    }
    // SAFETY: dlsym on the global scope with a NUL-terminated name.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"InitializeInjectionNvtx2_fnptr".as_ptr()) };
    if !sym.is_null() {
        // SAFETY: a static tool defines this symbol as a function-pointer variable.
        let f = unsafe { *(sym as *const Option<InitializeInjectionFn>) };
        if let Some(f) = f {
            return Ok(Some(Tool::Static(f)));
        }
    }
    Ok(None)
}

fn attach(env: Option<OsString>) -> Injection {
    let tool = match find_tool(env) {
        Ok(Some(t)) => t,
        Ok(None) => return Injection::NoTool,
        Err(reason) => return Injection::Failed { reason },
    };
    let (init, path) = match &tool {
        Tool::Dynamic(_, init, path) => (*init, Some(path.clone())),
        Tool::Static(init) => (*init, None),
    };
    // SAFETY: the tool's entry point, called once with this copy's export-table function.
    let ok = unsafe { init(get_export_table as GetExportTableFn) };
    if ok == 0 {
        clear_slots();
        drop(tool); // dlclose, as NVIDIA's copy does
        return Injection::Failed {
            reason: format!(
                "the NVTX tool {} refused to attach (InitializeInjectionNvtx2 returned 0); NVTX ranges go to no \
                 tool. Fix: check the tool's own messages, or unset {ENV_INJECTION_PATH}",
                path.as_deref().unwrap_or("(statically linked)")
            ),
        };
    }
    if let Tool::Dynamic(lib, _, _) = tool {
        std::mem::forget(lib); // the slots point into it for the rest of the process
    }
    Injection::Attached { path }
}

/// Looks for a tool at the first call (once per process) and returns what happened.
pub fn injection() -> &'static Injection {
    static STATE: OnceLock<Injection> = OnceLock::new();
    STATE.get_or_init(|| {
        let r = attach(std::env::var_os(ENV_INJECTION_PATH));
        if let Injection::Failed { reason } = &r {
            log::warn!("kprof: {reason}");
        }
        r
    })
}

fn slot(cbid: usize) -> *mut c_void {
    injection();
    GLOBALS.slots[abi::MODULE_CORE2 as usize][cbid].load(Ordering::Relaxed)
}

/// An NVTX domain handle (`nvtxDomainHandle_t`): opaque, given by the tool; null without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainHandle(usize);

/// `nvtxDomainCreateA(name)`: the tool's handle, or a null handle without a tool.
pub fn domain_create(name: &CStr) -> DomainHandle {
    let f = slot(abi::CBID_CORE2_DOMAIN_CREATE_A);
    if f.is_null() {
        return DomainHandle(0);
    }
    // SAFETY: the tool wrote a function of this type into this slot.
    let f: abi::DomainCreateAFn = unsafe { std::mem::transmute::<*mut c_void, abi::DomainCreateAFn>(f) };
    // SAFETY: a NUL-terminated string that outlives the call.
    DomainHandle(unsafe { f(name.as_ptr()) } as usize)
}

/// `nvtxDomainRangePushEx(domain, {ASCII message})`; no-op without a tool.
pub fn domain_range_push(domain: DomainHandle, message: &CStr) {
    let f = slot(abi::CBID_CORE2_DOMAIN_RANGE_PUSH_EX);
    if f.is_null() {
        return;
    }
    let attr = abi::EventAttributes::ascii(message.as_ptr() as *const c_char);
    // SAFETY: the tool wrote a function of this type into this slot; `attr` outlives the call.
    unsafe {
        let f = std::mem::transmute::<*mut c_void, abi::DomainRangePushExFn>(f);
        f(domain.0 as *mut c_void, &attr);
    }
}

/// `nvtxDomainRangePop(domain)`; no-op without a tool.
pub fn domain_range_pop(domain: DomainHandle) {
    let f = slot(abi::CBID_CORE2_DOMAIN_RANGE_POP);
    if f.is_null() {
        return;
    }
    // SAFETY: the tool wrote a function of this type into this slot.
    unsafe {
        let f = std::mem::transmute::<*mut c_void, abi::DomainRangePopFn>(f);
        f(domain.0 as *mut c_void);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_value_naming_the_fix() {
        let Err(e) = find_tool(Some("/nonexistent/libnvtx_tool.so".into())) else {
            panic!("a missing library must not be found");
        };
        assert!(e.contains("/nonexistent/libnvtx_tool.so") && e.contains("Fix:"), "{e}");
        assert_eq!(
            attach(Some("/nonexistent/libnvtx_tool.so".into())),
            Injection::Failed { reason: e }
        );
    }

    #[test]
    fn a_library_without_the_entry_point_is_refused() {
        let Err(e) = find_tool(Some("libc.so.6".into())) else {
            panic!("libc is not an NVTX tool");
        };
        assert!(e.contains("InitializeInjectionNvtx2"), "{e}");
    }

    #[test]
    fn no_tool_without_the_variable() {
        assert!(matches!(find_tool(None), Ok(None)));
        assert!(matches!(find_tool(Some(OsString::new())), Ok(None)));
    }

    #[test]
    fn module_tables_follow_nvtx_layout() {
        for (module, size) in abi::CBID_SIZES {
            let mut table: *mut *mut *const c_void = null_mut();
            let mut n = 0u32;
            // SAFETY: valid out-pointers.
            assert_eq!(unsafe { get_module_function_table(module, &mut table, &mut n) }, 1);
            assert_eq!(n as usize, size);
            // SAFETY: the table has size + 1 entries.
            unsafe {
                assert!((*table).is_null(), "entry 0 (the invalid id) stays null");
                assert!((*table.add(size)).is_null(), "the entry past the end stays null");
                for cbid in 1..size {
                    assert!(!(*table.add(cbid)).is_null());
                }
            }
        }
        // SAFETY: unknown modules are refused without touching the pointers.
        assert_eq!(unsafe { get_module_function_table(0, null_mut(), null_mut()) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { get_module_function_table(7, null_mut(), null_mut()) }, 0);
        // SAFETY: plain lookups.
        unsafe {
            assert!(!get_export_table(abi::ETID_CALLBACKS).is_null());
            assert!(!get_export_table(abi::ETID_VERSIONINFO).is_null());
            assert!(get_export_table(2).is_null());
        }
    }
}
