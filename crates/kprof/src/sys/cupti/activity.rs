//! The buffers CUPTI fills with activity records: CUPTI asks for an empty buffer
//! (`buffer_requested`: one of 8 MiB, recycled through a pool) and hands it back full
//! (`buffer_completed`), on whatever thread it likes. A completed buffer goes, as a
//! `CompletedBuffer` valid during the call, to the handler the engine registered
//! (`super::CuptiFns::activity_register_callbacks`), then back to the pool.
//!
//! Neither function unwinds into CUPTI (`catch_unwind`).

use std::alloc::Layout;
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

use super::{offsets, CuptiFns, ACTIVITY_KIND_CONCURRENT_KERNEL, ACTIVITY_KIND_KERNEL};
use super::{CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_SUCCESS};
use crate::lock;

/// Size of each activity buffer handed to CUPTI.
pub const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;

/// What the engine does with CUPTI's buffers (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BufferHandlers {
    /// Receives every completed buffer (on CUPTI's thread).
    pub(crate) completed: fn(&CompletedBuffer<'_>),
    /// Called when no buffer could be allocated for CUPTI (records are lost).
    pub(crate) allocation_failed: fn(),
}

/// Free buffers (addresses), recycled between CUPTI requests.
static POOL: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// The table and handlers of the first registration.
static REGISTERED: OnceLock<(&'static CuptiFns, BufferHandlers)> = OnceLock::new();

pub(super) fn register(fns: &'static CuptiFns, handlers: BufferHandlers) {
    let _ = REGISTERED.set((fns, handlers));
}

fn buffer_layout() -> Layout {
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("valid layout")
}

/// `CUpti_BuffersCallbackRequestFunc`: a buffer from the pool, or a new one.
pub(super) unsafe extern "C" fn buffer_requested(buf: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let r = catch_unwind(|| {
        let ptr = lock(&POOL)
            .pop()
            .map(|a| a as *mut u8)
            // SAFETY: a non-zero-sized layout; a null result is handled below.
            .unwrap_or_else(|| unsafe { std::alloc::alloc(buffer_layout()) });
        // SAFETY: CUPTI passes three valid out-pointers.
        unsafe {
            if ptr.is_null() {
                *buf = std::ptr::null_mut();
                *size = 0;
                if let Some((_, h)) = REGISTERED.get() {
                    (h.allocation_failed)();
                }
            } else {
                *buf = ptr;
                *size = BUFFER_BYTES;
            }
            *max = 0;
        }
    });
    if r.is_err() {
        // SAFETY: as above.
        unsafe {
            *buf = std::ptr::null_mut();
            *size = 0;
            *max = 0;
        }
    }
}

/// `CUpti_BuffersCallbackCompleteFunc`: hands the buffer to the engine, then back to the pool.
pub(super) unsafe extern "C" fn buffer_completed(
    ctx: *mut c_void,
    stream: u32,
    buf: *mut u8,
    size: usize,
    valid: usize,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some((fns, handlers)) = REGISTERED.get() else {
            return;
        };
        if buf.is_null() {
            return;
        }
        let completed = CompletedBuffer {
            fns,
            ctx,
            stream,
            buf,
            valid,
            _buffer: PhantomData,
        };
        (handlers.completed)(&completed);
    }));
    if !buf.is_null() {
        if size == BUFFER_BYTES {
            lock(&POOL).push(buf as usize);
        } else if let Ok(l) = Layout::from_size_align(size, BUFFER_ALIGN) {
            // Not one of ours (cannot happen); free with the size CUPTI reports.
            if size > 0 {
                // SAFETY: CUPTI hands back only buffers it got from `buffer_requested`.
                unsafe { std::alloc::dealloc(buf, l) };
            }
        }
    }
}

/// A buffer CUPTI completed: `valid` bytes of records, borrowed for the duration of the callback.
pub(crate) struct CompletedBuffer<'a> {
    fns: &'static CuptiFns,
    ctx: *mut c_void,
    stream: u32,
    buf: *mut u8,
    valid: usize,
    _buffer: PhantomData<&'a [u8]>,
}

/// One activity record of a `CompletedBuffer`: its bytes, from its start to the next record's.
#[derive(Clone, Copy)]
pub(crate) struct ActivityRecord<'a> {
    bytes: &'a [u8],
}

impl<'a> CompletedBuffer<'a> {
    /// The records, in order (`cuptiActivityGetNextRecord`), and how many were lost: an iteration
    /// error other than the end of the buffer, or a record CUPTI places outside it.
    pub(crate) fn records(&self) -> (Vec<ActivityRecord<'a>>, u64) {
        // Record start pointers, in order.
        let mut starts: Vec<usize> = Vec::new();
        let mut rec: *mut c_void = std::ptr::null_mut();
        let mut lost = 0u64;
        loop {
            // SAFETY: the buffer CUPTI completed, with the valid size it reported, and `rec`
            // (CUPTI's cursor: null at first, then the record it returned last).
            let r = unsafe { (self.fns.cuptiActivityGetNextRecord)(self.buf, self.valid, &mut rec) };
            if r == CUPTI_SUCCESS {
                starts.push(rec as usize);
            } else {
                if r != CUPTI_ERROR_MAX_LIMIT_REACHED {
                    lost += 1;
                }
                break;
            }
        }
        let base = self.buf as usize;
        let end = base + self.valid;
        let mut records = Vec::with_capacity(starts.len());
        for (i, &s) in starts.iter().enumerate() {
            let next = starts.get(i + 1).copied().unwrap_or(end);
            if s < base || next > end || next <= s {
                lost += 1;
                continue;
            }
            // SAFETY: `s..next` lies inside the `valid` bytes of the buffer, which CUPTI does not
            // touch until this callback returns (the borrow `'a`).
            let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, next - s) };
            records.push(ActivityRecord { bytes });
        }
        (records, lost)
    }

    /// `cuptiActivityGetNumDroppedRecords` for the buffer's context and stream (0 when the call
    /// fails).
    pub(crate) fn dropped(&self) -> usize {
        let mut dropped = 0usize;
        // SAFETY: the context and stream CUPTI passed with this buffer; writes one usize.
        let _ = unsafe { (self.fns.cuptiActivityGetNumDroppedRecords)(self.ctx, self.stream, &mut dropped) };
        dropped
    }
}

impl<'a> ActivityRecord<'a> {
    /// The record's bytes (parsed by `crate::cupti::records`).
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The name of a kernel record (KERNEL or CONCURRENT_KERNEL), read from the string its `name`
    /// field points at, which lives only as long as the buffer; `None` for other records and for
    /// a null name.
    pub(crate) fn kernel_name(&self) -> Option<String> {
        let rd = |off: usize, n: usize| self.bytes.get(off..off + n);
        let kind = u32::from_le_bytes(rd(offsets::KIND, 4)?.try_into().ok()?);
        if kind != ACTIVITY_KIND_CONCURRENT_KERNEL && kind != ACTIVITY_KIND_KERNEL {
            return None;
        }
        let p = u64::from_le_bytes(rd(offsets::KERNEL_NAME, 8)?.try_into().ok()?);
        if p == 0 {
            return None;
        }
        // SAFETY: in a kernel record of a buffer CUPTI completed, `name` is null (not here) or a
        // NUL-terminated string of CUPTI's that lives as long as the buffer (the borrow `'a`).
        let name = unsafe { CStr::from_ptr(p as *const std::ffi::c_char) };
        Some(name.to_string_lossy().into_owned())
    }
}
