//! Cold-cache control shared by the backends: before a cold run (and before every top-level
//! region of it) the L2 is emptied of the user's data by going through a device buffer of at
//! least twice the L2 (256 MiB when the device does not report its L2 size), allocated at the
//! first flush.
//!
//! Three methods, picked by `KPROF_L2_FLUSH` ([`L2_FLUSH_ENV`]):
//! * `read` (default): a small PTX kernel reads the buffer. Every line of the user's data is
//!   evicted and its dirty lines are written back during the flush, so the measured kernel starts
//!   with a cold *and clean* L2 (the L2 holds the buffer's clean lines).
//! * `discard`: `read`, then a second kernel drops the buffer's lines from the L2 without writing
//!   them back (PTX `discard.global.L2`, sm_80 and later), so the L2 ends empty, as after ncu's
//!   `--cache-control all` (which invalidates it).
//! * `write`: a memset of the buffer, as Triton's `do_bench` and NVBench flush. It leaves the L2
//!   full of dirty lines that the measured kernel pays to write back (on the H200: about 3 MB
//!   more DRAM writes for an 8 MB read-only region, and slower cold runs of write-heavy kernels).
//!
//! When the driver cannot load the read kernel, the buffer is written (memset) and a note is
//! printed once; `discard` on a GPU that cannot load its kernel is an error.
//!
//! `KPROF_L2_FLUSH_BYTES` ([`L2_FLUSH_BYTES_ENV`]) sets the buffer's size in bytes (rounded up to
//! a MiB; at least the L2), read when the buffer is allocated.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use super::invalid_option;
use crate::driver::{CuFunction, DeviceBuffer, Driver};
use crate::error::EngineError;
use crate::lock;

/// Environment variable that picks the L2 flush method: `read` (default), `discard` or `write`.
pub const L2_FLUSH_ENV: &str = "KPROF_L2_FLUSH";

/// Environment variable that sets the flush buffer's size in bytes (default: twice the L2).
pub const L2_FLUSH_BYTES_ENV: &str = "KPROF_L2_FLUSH_BYTES";

/// The flush buffer's size: twice `l2_bytes` (256 MiB when 0, unknown), or the bytes a
/// `KPROF_L2_FLUSH_BYTES` value gives, rounded up to a MiB and at least the L2.
fn flush_buffer_bytes(l2_bytes: u64, value: Option<&str>) -> Result<usize, EngineError> {
    let mib = 1usize << 20;
    let default = match l2_bytes {
        0 => 256 * mib,
        l2 => (2 * l2 as usize).next_multiple_of(mib),
    };
    match value.map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(b) if b as u64 >= l2_bytes && b > 0 => Ok(b.next_multiple_of(mib)),
            _ => Err(invalid_option(&format!(
                "{L2_FLUSH_BYTES_ENV}={v:?} is not a flush buffer size: give a number of bytes of at least the L2 \
                 ({l2_bytes} bytes here), e.g. {}, or unset it (default: twice the L2, {default} bytes)",
                2 * default
            ))),
        },
    }
}

/// Name of the L2 flush kernels (exact for the read kernel, a prefix of the discard kernel):
/// kept out of the kernels a run is matched by, see [`is_flush_kernel`].
pub(crate) const L2_FLUSH_KERNEL: &str = "kprof_l2_flush";
const READ_KERNEL_C: &CStr = c"kprof_l2_flush";
const DISCARD_KERNEL_C: &CStr = c"kprof_l2_flush_discard";

/// Whether a kernel is one of kprof's L2 flush kernels.
pub(crate) fn is_flush_kernel(name: &str) -> bool {
    name.starts_with(L2_FLUSH_KERNEL)
}

/// PTX of `kprof_l2_flush(buf, sectors)`: every thread reads one 32-byte sector per step of a
/// grid-stride loop (`ld.global.cg`: cached in L2 only) and stores nothing unless the xor of
/// everything it read equals a magic value, which keeps the loads alive through the JIT.
const READ_PTX: &CStr = c".version 7.0
.target sm_52
.address_size 64
.visible .entry kprof_l2_flush(.param .u64 p_buf, .param .u64 p_sectors)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p_buf];
    ld.param.u64 %rd2, [p_sectors];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd3, %r1, %r2;
    cvt.u64.u32 %rd4, %r3;
    add.u64 %rd5, %rd3, %rd4;
    mul.wide.u32 %rd6, %r4, %r2;
    mov.u32 %r5, 0;
    setp.ge.u64 %p1, %rd5, %rd2;
    @%p1 bra DONE;
LOOP:
    shl.b64 %rd7, %rd5, 5;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.cg.u32 %r6, [%rd8];
    xor.b32 %r5, %r5, %r6;
    add.u64 %rd5, %rd5, %rd6;
    setp.lt.u64 %p2, %rd5, %rd2;
    @%p2 bra LOOP;
DONE:
    setp.eq.u32 %p1, %r5, 1515870810;
    @%p1 st.global.u32 [%rd1], %r5;
    ret;
}
";

/// PTX of `kprof_l2_flush_discard(buf, lines)`: every thread drops one 128-byte line of the
/// buffer from the L2 per step of a grid-stride loop (`discard.global.L2`: no write-back; the
/// buffer's contents do not matter).
const DISCARD_PTX: &CStr = c".version 7.4
.target sm_80
.address_size 64
.visible .entry kprof_l2_flush_discard(.param .u64 p_buf, .param .u64 p_lines)
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p_buf];
    ld.param.u64 %rd2, [p_lines];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd3, %r1, %r2;
    cvt.u64.u32 %rd4, %r3;
    add.u64 %rd5, %rd3, %rd4;
    mul.wide.u32 %rd6, %r4, %r2;
    setp.ge.u64 %p1, %rd5, %rd2;
    @%p1 bra DONE;
LOOP:
    shl.b64 %rd7, %rd5, 7;
    add.u64 %rd8, %rd1, %rd7;
    discard.global.L2 [%rd8], 128;
    add.u64 %rd5, %rd5, %rd6;
    setp.lt.u64 %p2, %rd5, %rd2;
    @%p2 bra LOOP;
DONE:
    ret;
}
";

/// How the L2 is flushed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlushMethod {
    /// Read a 2xL2 buffer: the L2 ends cold and clean.
    Read,
    /// Read, then discard the buffer's lines: the L2 ends empty.
    Discard,
    /// Memset the buffer: the L2 ends full of dirty lines.
    Write,
}

impl FlushMethod {
    /// The method a `KPROF_L2_FLUSH` value names (unset or empty: `read`).
    pub(crate) fn parse(value: Option<&str>) -> Result<FlushMethod, EngineError> {
        match value {
            None | Some("") | Some("read") => Ok(FlushMethod::Read),
            Some("discard") => Ok(FlushMethod::Discard),
            Some("write") => Ok(FlushMethod::Write),
            Some(other) => Err(invalid_option(&format!(
                "{L2_FLUSH_ENV}={other:?} is not a flush method: use \"read\" (default: the L2 ends clean), \
                 \"discard\" (the L2 ends empty, sm_80 and later) or \"write\" (a memset: the L2 ends full of dirty \
                 lines)"
            ))),
        }
    }
}

/// The flush buffer and the kernels the driver could load (each loaded at its first use).
#[derive(Clone, Copy)]
struct FlushState {
    buf: DeviceBuffer,
    read_kernel: Option<CuFunction>,
    discard_kernel: Option<CuFunction>,
}

// SAFETY: a CUfunction handle is a process-wide driver object usable from any thread with its
// context current; the flusher only uses it under its mutex.
unsafe impl Send for FlushState {}

/// The cold-cache flusher of one backend (see the module docs).
pub(super) struct L2Flusher {
    l2_bytes: u64,
    state: Mutex<Option<FlushState>>,
    value: AtomicU8,
}

impl L2Flusher {
    /// A flusher for a device with `l2_bytes` of L2 (0: unknown). Allocates nothing yet.
    pub(super) fn new(l2_bytes: u64) -> Self {
        L2Flusher {
            l2_bytes,
            state: Mutex::new(None),
            value: AtomicU8::new(0),
        }
    }

    /// Empties the L2 of the user's data with the method `KPROF_L2_FLUSH` names, and waits.
    pub(super) fn flush(&self, driver: &Driver) -> Result<(), EngineError> {
        let method = FlushMethod::parse(std::env::var(L2_FLUSH_ENV).ok().as_deref())?;
        driver.ensure_context()?;
        let mut slot = lock(&self.state);
        let st = match slot.as_mut() {
            Some(st) => st,
            None => {
                let bytes = flush_buffer_bytes(self.l2_bytes, std::env::var(L2_FLUSH_BYTES_ENV).ok().as_deref())?;
                let buf = driver.alloc(bytes)?;
                let read_kernel = match driver.load_function(READ_PTX, READ_KERNEL_C) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        // Through the logging facade (the application decides where it goes),
                        // never straight to stderr.
                        log::warn!(
                            "kprof: the L2 flush kernel could not be loaded ({e}); flushing with a memset, which leaves \
                             dirty lines in the L2"
                        );
                        None
                    }
                };
                slot.insert(FlushState {
                    buf,
                    read_kernel,
                    discard_kernel: None,
                })
            }
        };
        if method == FlushMethod::Discard && st.discard_kernel.is_none() {
            let f = driver.load_function(DISCARD_PTX, DISCARD_KERNEL_C).map_err(|e| {
                EngineError::Unsupported(format!(
                    "{L2_FLUSH_ENV}=discard needs PTX `discard.global.L2` (compute capability 8.0 or later), which \
                     the driver could not load here ({e}); use {L2_FLUSH_ENV}=read"
                ))
            })?;
            st.discard_kernel = Some(f);
        }
        let st = *st;
        match (method, st.read_kernel) {
            (FlushMethod::Write, _) | (_, None) => driver.memset(st.buf, self.value.fetch_add(1, Ordering::Relaxed))?,
            (_, Some(read)) => {
                // SAFETY: kprof_l2_flush(u64 buffer, u64 sectors) from this context's module.
                unsafe { launch_over(driver, read, st.buf, 32)? };
                if let (FlushMethod::Discard, Some(discard)) = (method, st.discard_kernel) {
                    // SAFETY: kprof_l2_flush_discard(u64 buffer, u64 lines), same module rules.
                    unsafe { launch_over(driver, discard, st.buf, 128)? };
                }
            }
        }
        driver.synchronize()
    }

    /// Frees the buffer (backends call it when dropped).
    pub(super) fn release(&self, driver: &Driver) {
        if let Some(st) = lock(&self.state).take() {
            let _ = driver.free(st.buf);
        }
    }
}

/// Launches `func(buffer, buffer bytes / step)` on 1024 blocks of 256 threads.
///
/// # Safety
/// `func` must take exactly (u64 device pointer, u64 count) and come from the current context.
unsafe fn launch_over(driver: &Driver, func: CuFunction, buf: DeviceBuffer, step: usize) -> Result<(), EngineError> {
    let mut ptr = buf.ptr;
    let mut count = (buf.bytes / step) as u64;
    let mut params = [
        (&mut ptr as *mut u64).cast::<std::ffi::c_void>(),
        (&mut count as *mut u64).cast::<std::ffi::c_void>(),
    ];
    // SAFETY: both parameters live until the launch call returns; the caller vouches for `func`.
    unsafe { driver.launch_1d(func, 1024, 256, &mut params) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_method_reads_by_default_and_rejects_unknown_values() {
        assert_eq!(FlushMethod::parse(None).unwrap(), FlushMethod::Read);
        assert_eq!(FlushMethod::parse(Some("")).unwrap(), FlushMethod::Read);
        assert_eq!(FlushMethod::parse(Some("read")).unwrap(), FlushMethod::Read);
        assert_eq!(FlushMethod::parse(Some("discard")).unwrap(), FlushMethod::Discard);
        assert_eq!(FlushMethod::parse(Some("write")).unwrap(), FlushMethod::Write);
        let msg = FlushMethod::parse(Some("memset")).unwrap_err().to_string();
        assert!(
            msg.contains("KPROF_L2_FLUSH=\"memset\"") && msg.contains("\"read\"") && msg.contains("\"discard\""),
            "{msg}"
        );
    }

    #[test]
    fn flush_buffer_is_twice_the_l2_unless_set_and_a_bad_size_names_the_variable() {
        let l2 = 60 << 20;
        assert_eq!(flush_buffer_bytes(l2, None).unwrap(), 120 << 20);
        assert_eq!(flush_buffer_bytes(0, Some("")).unwrap(), 256 << 20);
        assert_eq!(flush_buffer_bytes(l2, Some(" 251658240 ")).unwrap(), 240 << 20);
        assert_eq!(flush_buffer_bytes(l2, Some("251658241")).unwrap(), 241 << 20);
        for bad in ["1000", "4x", "-1", "0"] {
            let msg = flush_buffer_bytes(l2, Some(bad)).unwrap_err().to_string();
            assert!(
                msg.contains(&format!("KPROF_L2_FLUSH_BYTES=\"{bad}\"")) && msg.contains("at least the L2"),
                "{msg}"
            );
        }
    }

    #[test]
    fn flush_ptx_declares_the_kernels_the_flusher_looks_up() {
        let read = READ_PTX.to_str().unwrap();
        assert!(read.contains(".visible .entry kprof_l2_flush(.param .u64 p_buf, .param .u64 p_sectors)"));
        assert!(read.contains("ld.global.cg.u32"), "the loads must go through the L2");
        assert!(read.contains("shl.b64 %rd7, %rd5, 5;"), "one 32-byte sector per step");
        let discard = DISCARD_PTX.to_str().unwrap();
        assert!(discard.contains(".visible .entry kprof_l2_flush_discard(.param .u64 p_buf, .param .u64 p_lines)"));
        assert!(discard.contains("discard.global.L2 [%rd8], 128;"));
        assert!(discard.contains("shl.b64 %rd7, %rd5, 7;"), "one 128-byte line per step");
        assert_eq!(READ_KERNEL_C.to_str().unwrap(), L2_FLUSH_KERNEL);
        assert!(is_flush_kernel(DISCARD_KERNEL_C.to_str().unwrap()));
        assert!(!is_flush_kernel("kprof_scale"));
    }
}
