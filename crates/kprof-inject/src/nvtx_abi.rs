//! The NVTX v3 injection handshake ([`InitializeInjectionNvtx2`], which every NVTX copy of the
//! process calls at its first NVTX call, and [`attach`]) and the callbacks it writes into each
//! copy's function-pointer slots ([`installed`]: module, callback id, function; slots left alone
//! stay no-ops): the crate's FFI module, its only `unsafe`. The ABI is NVTX v3's (`nvtxTypes.h`,
//! `nvtxImpl.h`, `nvtxInit.h`; written from reading them, nothing copied), as `kprof::sys::nvtx`
//! declares it and checks it against NVIDIA's headers; messages come as ASCII (1), wide `wchar_t`
//! strings (2, 4 bytes on Linux) or registered string handles (3).

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{book, stamp_close, stamp_open, thread_id};

// The handshake's ids and tables: kprof's declarations, checked against NVIDIA's headers by
// kprof's `nvtx_headers` test.
use kprof::sys::nvtx::EventAttributes;
pub use kprof::sys::nvtx::{
    ExportTableCallbacks, ExportTableVersionInfo, GetExportTableFn as GetExportTable, ETID_CALLBACKS, ETID_VERSIONINFO,
    MESSAGE_TYPE_ASCII as MESSAGE_ASCII, MODULE_CORE, MODULE_CORE2,
};

/// Offsets in `nvtxEventAttributes_v2` (kprof's [`EventAttributes`]), and its size.
pub const ATTR_SIZE: usize = std::mem::offset_of!(EventAttributes, size);
pub const ATTR_MESSAGE_TYPE: usize = std::mem::offset_of!(EventAttributes, message_type);
pub const ATTR_MESSAGE: usize = std::mem::offset_of!(EventAttributes, message);
pub const ATTR_V2_SIZE: usize = std::mem::size_of::<EventAttributes>();
pub const MESSAGE_UNICODE: i32 = 2;
pub const MESSAGE_REGISTERED: i32 = 3;

fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

unsafe fn ascii(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    CStr::from_ptr(p).to_string_lossy().into_owned()
}

unsafe fn wide(p: *const i32) -> String {
    if p.is_null() {
        return String::new();
    }
    let mut s = String::new();
    for i in 0..4096 {
        let c = *p.add(i);
        if c == 0 {
            break;
        }
        s.push(char::from_u32(c as u32).unwrap_or('\u{fffd}'));
    }
    s
}

/// The message of an event attribute structure (empty when absent or malformed).
///
/// # Safety
/// `attr` is null or points to an `nvtxEventAttributes_t` as NVTX passes it.
pub unsafe fn attr_message(attr: *const c_void) -> String {
    if attr.is_null() {
        return String::new();
    }
    let b = attr as *const u8;
    let size = std::ptr::read_unaligned(b.add(ATTR_SIZE) as *const u16) as usize;
    if size < ATTR_V2_SIZE {
        return String::new();
    }
    let kind = std::ptr::read_unaligned(b.add(ATTR_MESSAGE_TYPE) as *const i32);
    let msg = std::ptr::read_unaligned(b.add(ATTR_MESSAGE) as *const usize);
    match kind {
        MESSAGE_ASCII => ascii(msg as *const c_char),
        MESSAGE_UNICODE => wide(msg as *const i32),
        MESSAGE_REGISTERED => book::with(|b| b.string(msg as u64).unwrap_or("").to_string()),
        _ => String::new(),
    }
}

// ---- CORE ----------------------------------------------------------------------------------

unsafe extern "C" fn range_push_a(msg: *const c_char) -> i32 {
    guard(-1, || {
        // SAFETY: NVTX passes null or a NUL-terminated string, valid during the call.
        let (t, name) = (stamp_open(), unsafe { ascii(msg) });
        book::with(|b| b.push(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_push_w(msg: *const i32) -> i32 {
    guard(-1, || {
        // SAFETY: NVTX passes null or a NUL-terminated `wchar_t` (4-byte) string, valid during the call.
        let (t, name) = (stamp_open(), unsafe { wide(msg) });
        book::with(|b| b.push(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_push_ex(attr: *const c_void) -> i32 {
    guard(-1, || {
        // SAFETY: NVTX passes null or the call's `nvtxEventAttributes_t`, valid during the call.
        let (t, name) = (stamp_open(), unsafe { attr_message(attr) });
        book::with(|b| b.push(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_pop() -> i32 {
    guard(-1, || {
        let t = stamp_close();
        book::with(|b| b.pop(thread_id(), 0, t))
    })
}
unsafe extern "C" fn range_start_a(msg: *const c_char) -> u64 {
    guard(0, || {
        // SAFETY: NVTX passes null or a NUL-terminated string, valid during the call.
        let (t, name) = (stamp_open(), unsafe { ascii(msg) });
        book::with(|b| b.start(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_start_w(msg: *const i32) -> u64 {
    guard(0, || {
        // SAFETY: NVTX passes null or a NUL-terminated `wchar_t` (4-byte) string, valid during the call.
        let (t, name) = (stamp_open(), unsafe { wide(msg) });
        book::with(|b| b.start(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_start_ex(attr: *const c_void) -> u64 {
    guard(0, || {
        // SAFETY: NVTX passes null or the call's `nvtxEventAttributes_t`, valid during the call.
        let (t, name) = (stamp_open(), unsafe { attr_message(attr) });
        book::with(|b| b.start(thread_id(), 0, &name, t))
    })
}
unsafe extern "C" fn range_end(id: u64) {
    guard((), || {
        let t = stamp_close();
        book::with(|b| b.end(id, t))
    })
}

// ---- CORE2 (domains) -----------------------------------------------------------------------

unsafe extern "C" fn domain_range_push_ex(domain: *const c_void, attr: *const c_void) -> i32 {
    guard(-1, || {
        // SAFETY: NVTX passes null or the call's `nvtxEventAttributes_t`, valid during the call.
        let (t, name) = (stamp_open(), unsafe { attr_message(attr) });
        book::with(|b| b.push(thread_id(), domain as u64, &name, t))
    })
}
unsafe extern "C" fn domain_range_pop(domain: *const c_void) -> i32 {
    guard(-1, || {
        let t = stamp_close();
        book::with(|b| b.pop(thread_id(), domain as u64, t))
    })
}
unsafe extern "C" fn domain_range_start_ex(domain: *const c_void, attr: *const c_void) -> u64 {
    guard(0, || {
        // SAFETY: NVTX passes null or the call's `nvtxEventAttributes_t`, valid during the call.
        let (t, name) = (stamp_open(), unsafe { attr_message(attr) });
        book::with(|b| b.start(thread_id(), domain as u64, &name, t))
    })
}
unsafe extern "C" fn domain_range_end(_domain: *const c_void, id: u64) {
    guard((), || {
        let t = stamp_close();
        book::with(|b| b.end(id, t))
    })
}
unsafe extern "C" fn domain_register_string_a(_d: *const c_void, s: *const c_char) -> *const c_void {
    guard(std::ptr::null(), || {
        // SAFETY: NVTX passes null or a NUL-terminated string, valid during the call.
        let s = unsafe { ascii(s) };
        book::with(|b| b.register_string(&s)) as *const c_void
    })
}
unsafe extern "C" fn domain_register_string_w(_d: *const c_void, s: *const i32) -> *const c_void {
    guard(std::ptr::null(), || {
        // SAFETY: NVTX passes null or a NUL-terminated `wchar_t` (4-byte) string, valid during the call.
        let s = unsafe { wide(s) };
        book::with(|b| b.register_string(&s)) as *const c_void
    })
}
unsafe extern "C" fn domain_create_a(name: *const c_char) -> *const c_void {
    guard(std::ptr::null(), || {
        // SAFETY: NVTX passes null or a NUL-terminated string, valid during the call.
        let n = unsafe { ascii(name) };
        book::with(|b| b.create_domain(&n)) as *const c_void
    })
}
unsafe extern "C" fn domain_create_w(name: *const i32) -> *const c_void {
    guard(std::ptr::null(), || {
        // SAFETY: NVTX passes null or a NUL-terminated `wchar_t` (4-byte) string, valid during the call.
        let n = unsafe { wide(name) };
        book::with(|b| b.create_domain(&n)) as *const c_void
    })
}
unsafe extern "C" fn domain_noop(_d: *const c_void) {}
unsafe extern "C" fn domain_mark_noop(_d: *const c_void, _a: *const c_void) {}
unsafe extern "C" fn initialize_noop(_r: *const c_void) {}

/// The (module, callback id, function) triples installed into every NVTX copy.
pub fn installed() -> Vec<(i32, usize, *const c_void)> {
    vec![
        (MODULE_CORE, 4, range_start_ex as *const c_void),
        (MODULE_CORE, 5, range_start_a as *const c_void),
        (MODULE_CORE, 6, range_start_w as *const c_void),
        (MODULE_CORE, 7, range_end as *const c_void),
        (MODULE_CORE, 8, range_push_ex as *const c_void),
        (MODULE_CORE, 9, range_push_a as *const c_void),
        (MODULE_CORE, 10, range_push_w as *const c_void),
        (MODULE_CORE, 11, range_pop as *const c_void),
        (MODULE_CORE2, 1, domain_mark_noop as *const c_void),
        (MODULE_CORE2, 2, domain_range_start_ex as *const c_void),
        (MODULE_CORE2, 3, domain_range_end as *const c_void),
        (MODULE_CORE2, 4, domain_range_push_ex as *const c_void),
        (MODULE_CORE2, 5, domain_range_pop as *const c_void),
        (MODULE_CORE2, 10, domain_register_string_a as *const c_void),
        (MODULE_CORE2, 11, domain_register_string_w as *const c_void),
        (MODULE_CORE2, 12, domain_create_a as *const c_void),
        (MODULE_CORE2, 13, domain_create_w as *const c_void),
        (MODULE_CORE2, 14, domain_noop as *const c_void),
        (MODULE_CORE2, 15, initialize_noop as *const c_void),
    ]
}

/// `NVTX_INJECTION64_PATH` entry point, called by each NVTX v3 copy at its first NVTX call.
///
/// # Safety
/// `get_export_table` must be the function the NVTX copy passes.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: Option<GetExportTable>) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        let Some(get) = get_export_table else {
            return 0;
        };
        // SAFETY: `get` is the export-table function of the NVTX copy calling this entry point.
        crate::on_nvtx_copy(|| unsafe { attach(get) })
    }))
    .unwrap_or(0)
}

/// Performs the handshake with one NVTX copy. Returns the number of slots installed, or an
/// error message.
///
/// # Safety
/// `get` must be the `getExportTable` an NVTX copy passed to `InitializeInjectionNvtx2`.
pub unsafe fn attach(get: GetExportTable) -> Result<usize, String> {
    let cb = get(ETID_CALLBACKS) as *const ExportTableCallbacks;
    if cb.is_null() {
        return Err("getExportTable(NVTX_ETID_CALLBACKS) returned NULL".into());
    }
    if (*cb).struct_size < std::mem::size_of::<ExportTableCallbacks>() {
        return Err(format!("NVTX callbacks table too small ({} bytes)", (*cb).struct_size));
    }
    let Some(get_table) = (*cb).get_module_function_table else {
        return Err("NVTX callbacks table has no GetModuleFunctionTable".into());
    };
    let mut installed_n = 0;
    for module in [MODULE_CORE, MODULE_CORE2] {
        let mut table: *mut *mut *const c_void = std::ptr::null_mut();
        let mut size: u32 = 0;
        if get_table(module, &mut table, &mut size) == 0 || table.is_null() {
            return Err(format!("GetModuleFunctionTable({module}) failed"));
        }
        for (m, cbid, f) in installed() {
            if m != module || cbid >= size as usize {
                continue;
            }
            let slot = *table.add(cbid);
            if !slot.is_null() {
                *slot = f;
                installed_n += 1;
            }
        }
    }
    let vi = get(ETID_VERSIONINFO) as *const ExportTableVersionInfo;
    if !vi.is_null() && (*vi).struct_size >= std::mem::size_of::<ExportTableVersionInfo>() {
        if let Some(set) = (*vi).set_injection_nvtx_version {
            set(2);
        }
    }
    Ok(installed_n)
}
