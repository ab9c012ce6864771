//! Cold-cache control shared by the backends: before a cold run, before every top-level region of
//! it and, in a counter pass of application replay, before every kernel
//! ([`crate::cupti::kernel_flush`]), the L2 is emptied of the user's data by going through a device
//! buffer of at least twice the L2, after a kernel that empties the SMs' instruction caches. The
//! method is [`BenchOptions::l2_flush`](super::BenchOptions::l2_flush) (`read`, `discard`,
//! `write`), the buffer's size [`BenchOptions::l2_flush_bytes`](super::BenchOptions::l2_flush_bytes);
//! what each does and costs: docs/architecture.md, "The cold-cache flush".

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use super::invalid_option;
use crate::choices::L2Flush;
use crate::driver::{DeviceBuffer, Driver};
use crate::error::EngineError;
use crate::lock;
use crate::overrides::{L2_FLUSH_BYTES_ENV, L2_FLUSH_ENV};
use crate::sys::kernels::{instruction_flush, LoadedKernel, L2_FLUSH_DISCARD, L2_FLUSH_READ};

/// How one bench call flushes the L2: the method and the buffer size it asked for (both after
/// their environment overrides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlushSpec {
    pub method: L2Flush,
    /// `None`: twice the L2.
    pub bytes: Option<u64>,
}

/// The flush buffer's size: twice `l2_bytes` (256 MiB when 0, unknown), or `value` bytes
/// (`l2_flush_bytes`) rounded up to a MiB, at least the L2.
fn flush_buffer_bytes(l2_bytes: u64, value: Option<u64>) -> Result<usize, EngineError> {
    let mib = 1usize << 20;
    let default = match l2_bytes {
        0 => 256 * mib,
        l2 => (2 * l2 as usize).next_multiple_of(mib),
    };
    match value {
        None => Ok(default),
        Some(b) if b >= l2_bytes && b > 0 => Ok((b as usize).next_multiple_of(mib)),
        Some(b) => Err(invalid_option(&format!(
            "l2_flush_bytes={b} (or {L2_FLUSH_BYTES_ENV}) is not a flush buffer size: give a number of bytes of at \
             least the L2 ({l2_bytes} bytes here), e.g. {}, or leave it unset (default: twice the L2, {default} bytes)",
            2 * default
        ))),
    }
}

/// Name of the cold-cache flush kernels (exact for the read kernel, a prefix of the discard and
/// instruction kernels): kept out of the kernels a run is matched by, see [`is_flush_kernel`].
pub(crate) const L2_FLUSH_KERNEL: &str = "kprof_l2_flush";

/// Whether a kernel is one of kprof's cold-cache flush kernels.
pub(crate) fn is_flush_kernel(name: &str) -> bool {
    name.starts_with(L2_FLUSH_KERNEL)
}

/// The flush buffer and the kernels the driver could load (each loaded at its first use).
#[derive(Clone, Copy)]
struct FlushState {
    buf: DeviceBuffer,
    read_kernel: Option<LoadedKernel>,
    discard_kernel: Option<LoadedKernel>,
    /// `None`: not loaded (the flush then leaves the instruction caches; warned once).
    instruction_kernel: Option<LoadedKernel>,
}

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

    /// Empties the L2 of the user's data as `spec` says, and waits: the number of kernels it
    /// launched (0 for a memset).
    pub(super) fn flush(&self, driver: &Driver, spec: FlushSpec) -> Result<u32, EngineError> {
        let method = spec.method;
        let bytes = flush_buffer_bytes(self.l2_bytes, spec.bytes)?;
        driver.ensure_context()?;
        let mut slot = lock(&self.state);
        if let Some(old) = slot.take_if(|st| st.buf.bytes != bytes) {
            // Another size asked for: a new buffer (the kernels stay loaded).
            driver.free(old.buf)?;
            let buf = driver.alloc(bytes)?;
            *slot = Some(FlushState { buf, ..old });
        }
        let st = match slot.as_mut() {
            Some(st) => st,
            None => {
                let buf = driver.alloc(bytes)?;
                let read_kernel = match driver.load_kernel(&L2_FLUSH_READ) {
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
                let instruction_kernel = match driver.load_kernel(instruction_flush()) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        log::warn!(
                            "kprof: the instruction-cache flush kernel could not be loaded ({e}); cold runs start with \
                             the kernel's code still cached (Nsight Compute's cache control empties those caches too)"
                        );
                        None
                    }
                };
                slot.insert(FlushState {
                    buf,
                    read_kernel,
                    discard_kernel: None,
                    instruction_kernel,
                })
            }
        };
        if method == L2Flush::Discard && st.discard_kernel.is_none() {
            let f = driver.load_kernel(&L2_FLUSH_DISCARD).map_err(|e| {
                EngineError::Unsupported(format!(
                    "l2_flush=\"discard\" ({L2_FLUSH_ENV}=discard) needs PTX `discard.global.L2` (compute capability \
                     8.0 or later), which the driver could not load here ({e}); use l2_flush=\"read\""
                ))
            })?;
            st.discard_kernel = Some(f);
        }
        let st = *st;
        let mut kernels = 0;
        match (method, st.read_kernel) {
            (L2Flush::Write, _) | (_, None) => driver.memset(st.buf, self.value.fetch_add(1, Ordering::Relaxed))?,
            (_, Some(read)) => {
                if let Some(code) = st.instruction_kernel {
                    // First: its code passes through the L2, which the read flush then empties.
                    driver.launch_kernel(code, INSTRUCTION_FLUSH_BLOCKS, 128, (st.buf.ptr, 0))?;
                    kernels += 1;
                }
                launch_over(driver, read, st.buf, 32)?;
                kernels += 1;
                if let (L2Flush::Discard, Some(discard)) = (method, st.discard_kernel) {
                    launch_over(driver, discard, st.buf, 128)?;
                    kernels += 1;
                }
            }
        }
        driver.synchronize()?;
        Ok(kernels)
    }

    /// Frees the buffer (backends call it when dropped).
    pub(super) fn release(&self, driver: &Driver) {
        if let Some(st) = lock(&self.state).take() {
            let _ = driver.free(st.buf);
        }
    }
}

/// Blocks of 128 threads of the instruction flush: several per SM on any GPU (each block runs
/// the whole code once; 98 µs on the H200's 132 SMs).
const INSTRUCTION_FLUSH_BLOCKS: u32 = 1024;

/// Launches `kernel(buffer, buffer bytes / step)` on 1024 blocks of 256 threads.
fn launch_over(driver: &Driver, kernel: LoadedKernel, buf: DeviceBuffer, step: usize) -> Result<(), EngineError> {
    driver.launch_kernel(kernel, 1024, 256, (buf.ptr, (buf.bytes / step) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_buffer_is_twice_the_l2_unless_set_and_a_bad_size_names_the_variable() {
        let l2 = 60 << 20;
        assert_eq!(flush_buffer_bytes(l2, None).unwrap(), 120 << 20);
        assert_eq!(flush_buffer_bytes(0, None).unwrap(), 256 << 20);
        assert_eq!(flush_buffer_bytes(l2, Some(251658240)).unwrap(), 240 << 20);
        assert_eq!(flush_buffer_bytes(l2, Some(251658241)).unwrap(), 241 << 20);
        for bad in [1000, 0] {
            let msg = flush_buffer_bytes(l2, Some(bad)).unwrap_err().to_string();
            assert!(
                msg.contains(&format!("l2_flush_bytes={bad} (or KPROF_L2_FLUSH_BYTES)"))
                    && msg.contains("at least the L2"),
                "{msg}"
            );
        }
    }

    #[test]
    fn flush_ptx_declares_the_kernels_the_flusher_looks_up() {
        let read = L2_FLUSH_READ.image();
        assert!(read.contains(".visible .entry kprof_l2_flush(.param .u64 p_buf, .param .u64 p_sectors)"));
        assert!(read.contains("ld.global.cg.u32"), "the loads must go through the L2");
        assert!(read.contains("shl.b64 %rd7, %rd5, 5;"), "one 32-byte sector per step");
        let discard = L2_FLUSH_DISCARD.image();
        assert!(discard.contains(".visible .entry kprof_l2_flush_discard(.param .u64 p_buf, .param .u64 p_lines)"));
        assert!(discard.contains("discard.global.L2 [%rd8], 128;"));
        assert!(discard.contains("shl.b64 %rd7, %rd5, 7;"), "one 128-byte line per step");
        assert_eq!(L2_FLUSH_READ.name(), L2_FLUSH_KERNEL);
        assert!(is_flush_kernel(L2_FLUSH_DISCARD.name()));
        assert!(
            is_flush_kernel(instruction_flush().name()),
            "kept out of the runs' kernels"
        );
        assert!(instruction_flush()
            .image()
            .contains(".visible .entry kprof_l2_flush_instructions(.param .u64 p_buf,"));
        assert!(!is_flush_kernel("kprof_scale"));
    }
}
