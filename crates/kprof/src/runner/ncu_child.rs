//! The ncu child's side of the ncu backend (protocol: `ncu/bench.rs`): in a program re-run under
//! Nsight Compute with `KPROF_NCU_CHILD=<benchmark id>`, [`Profiler::new`](super::Profiler::new)
//! builds a profiler over [`child_parts`]: no CUPTI session, only NVTX ranges named [`range_name`]
//! in the `kprof` domain around recorded runs; bench calls return at once ([`skip_in_child`])
//! unless armed ([`arm_child`]). It lives in the runner so that the runner does not import `ncu`.

use std::cell::RefCell;
use std::ffi::CString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use kprof_core::model::{DeviceInfo, ExtraValue};

use super::{Backend, BenchOptions, Collected, FlushSpec, Span};
use crate::attribution::{decode_region_key, encode_region_key};
use crate::driver::Driver;
use crate::error::EngineError;
use crate::loader::SearchEnv;
use crate::nvtx::{push_range_cstr, range_name, NvtxRange};

/// The environment variable that selects the benchmark to profile in the child.
pub const CHILD_ENV: &str = "KPROF_NCU_CHILD";

/// Whether this process is a child started by
/// [`relaunch_under_ncu`](crate::ncu::relaunch_under_ncu).
pub fn is_ncu_child() -> bool {
    child_target().is_some()
}

/// The benchmark id the parent asked this child to profile (`KPROF_NCU_CHILD`, non-empty).
pub fn child_target() -> Option<String> {
    std::env::var(CHILD_ENV).ok().filter(|s| !s.is_empty())
}

/// `KPROF_NCU_CHILD_TRACE=FILE`: the child appends every NVTX range name it pushes to FILE (one
/// per line), and tolerates a CUDA driver that cannot be loaded. For checking the relaunch
/// protocol without ncu or a GPU.
pub const TRACE_ENV: &str = "KPROF_NCU_CHILD_TRACE";

// ------------------------------------------------------------------------------------------------
// The child's backend: NVTX ranges only, no CUPTI
// ------------------------------------------------------------------------------------------------

thread_local! {
    static RANGES: RefCell<Vec<Option<NvtxRange>>> = const { RefCell::new(Vec::new()) };
}

pub(crate) struct ChildBackend {
    driver: Option<&'static Driver>,
    epoch: Instant,
    armed: AtomicBool,
    /// Key run indices from here on are warm-up runs (no range).
    warmup_from: AtomicU64,
    trace: Option<Mutex<std::fs::File>>,
}

static CHILD: OnceLock<Arc<ChildBackend>> = OnceLock::new();

fn child_backend() -> Result<Arc<ChildBackend>, EngineError> {
    if let Some(b) = CHILD.get() {
        return Ok(Arc::clone(b));
    }
    let trace_path = std::env::var_os(TRACE_ENV).filter(|v| !v.is_empty());
    let driver = match Driver::load(&SearchEnv::from_process()) {
        Ok(d) => {
            d.ensure_context()?;
            Some(d)
        }
        Err(_) if trace_path.is_some() => None,
        Err(e) => return Err(e),
    };
    let trace = match trace_path {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| EngineError::io(format!("opening {}", PathBuf::from(&p).display()), e))?,
        )),
        None => None,
    };
    let b = Arc::new(ChildBackend {
        driver,
        epoch: Instant::now(),
        armed: AtomicBool::new(false),
        warmup_from: AtomicU64::new(u64::MAX),
        trace,
    });
    Ok(Arc::clone(CHILD.get_or_init(|| b)))
}

/// The parts of an ncu child's profiler ([`Profiler::new`](super::Profiler::new) returns it when
/// `KPROF_NCU_CHILD` is set): a backend of NVTX ranges only, no CUPTI; the device and its
/// constant extra columns.
pub(crate) fn child_parts() -> Result<ChildParts, EngineError> {
    let backend = child_backend()?;
    let mut device = DeviceInfo::default();
    let mut extras = Vec::new();
    if let Some(d) = backend.driver {
        let ordinal = d.current_device()?;
        let props = d.device_info(ordinal)?;
        device.gpu = props.name;
        extras.push(("DeviceOrdinal".to_string(), ExtraValue::Number(ordinal as f64)));
    }
    Ok((backend, device, extras))
}

/// The backend, the device and the extra columns of an ncu child's profiler.
pub(crate) type ChildParts = (Arc<dyn Backend>, DeviceInfo, Vec<(String, ExtraValue)>);

/// Whether a bench call in this process must return at once: an ncu child whose selected
/// benchmark is not running now.
pub(crate) fn skip_in_child() -> bool {
    child_target().is_some() && !CHILD.get().is_some_and(|b| b.armed.load(Ordering::SeqCst))
}

/// While alive, the child's bench calls run (the selected benchmark). Dropping it disarms.
#[must_use]
pub struct ChildArmed(());

impl Drop for ChildArmed {
    fn drop(&mut self) {
        if let Some(b) = CHILD.get() {
            b.armed.store(false, Ordering::SeqCst);
            b.warmup_from.store(u64::MAX, Ordering::SeqCst);
        }
    }
}

/// Lets the next bench call of this child run with `opts` (for bindings that run the selected
/// benchmark through [`Profiler::bench`](super::Profiler::bench), e.g. Python). Errors outside an ncu child.
pub fn arm_child(opts: &BenchOptions) -> Result<ChildArmed, EngineError> {
    if child_target().is_none() {
        return Err(EngineError::Unsupported(format!(
            "arm_child is for a program running under ncu with {CHILD_ENV} set"
        )));
    }
    let b = child_backend()?;
    b.warmup_from.store(opts.max_runs() as u64, Ordering::SeqCst);
    b.armed.store(true, Ordering::SeqCst);
    Ok(ChildArmed(()))
}

impl super::Backend for ChildBackend {
    fn timestamp_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    fn thread_id(&self) -> u64 {
        0
    }
    fn encode_key(&self, _call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        // One benchmark call per child: every range carries benchmark call number 0, which the parent maps back.
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        encode_region_key(0, c(config), c(run), c(region))
    }
    fn enter(&self, key: u64, name: &str) -> Result<(), EngineError> {
        let k = decode_region_key(key);
        let range = if (k.run as u64) < self.warmup_from.load(Ordering::SeqCst) {
            let full = range_name(name, 0, k.config, k.run);
            if let Some(t) = &self.trace {
                let mut f = t.lock().unwrap_or_else(|p| p.into_inner());
                writeln!(f, "{full}").map_err(|e| EngineError::io("writing the ncu child trace", e))?;
            }
            let c = CString::new(full).map_err(|_| EngineError::RegionMisuse(format!("{name:?} contains NUL")))?;
            Some(push_range_cstr(c))
        } else {
            None
        };
        RANGES.with(|r| r.borrow_mut().push(range));
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        RANGES.with(|r| drop(r.borrow_mut().pop()));
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        match self.driver {
            Some(d) => {
                d.ensure_context()?;
                d.synchronize()
            }
            None => Ok(()),
        }
    }
    fn flush_l2(&self, _spec: FlushSpec) -> Result<(), EngineError> {
        Ok(())
    }
    fn collect(&self, _spans: &[Span]) -> Result<Collected, EngineError> {
        Ok(Collected::default())
    }
}
