//! The CUDA-events fallback backend ([`Profiler::with_cuda_events`](super::Profiler::with_cuda_events)).

use std::sync::Mutex;
use std::time::Instant;

use kprof_core::model::{DeviceInfo, ExtraValue};

use super::l2_flush::L2Flusher;
use super::stream_hold::{StreamHold, HOLD_TIMEOUT};
use super::{host_name, Backend, Collected, FlushSpec, KernelRun, Span};
use crate::attribution::{decode_region_key, encode_region_key};
use crate::conditions::fingerprint::format_cuda_version;
use crate::conditions::FingerprintInputs;
use crate::driver::{CuEvent, Driver, HostWord};
use crate::error::EngineError;
use crate::loader::SearchEnv;
use crate::lock;

/// What starting the backend yields: the backend, the device, the constant extra columns.
type Started = (EventsBackend, DeviceInfo, Vec<(String, ExtraValue)>);

/// Name of the single pseudo-kernel of each region.
pub(super) const EVENTS_KERNEL: &str = "(cuda events)";

/// Raw CUDA event handles, used only through the driver while the backend's locks are held.
struct Event(CuEvent);

pub(super) struct EventsBackend {
    driver: &'static Driver,
    epoch: Instant,
    /// Regions entered and not exited: (key, start event), innermost last.
    open: Mutex<Vec<(u64, Event)>>,
    /// Regions exited since the last collect: (key, start, end).
    done: Mutex<Vec<(u64, Event, Event)>>,
    l2: L2Flusher,
    inputs: FingerprintInputs,
    /// The stream hold (`None` where this driver cannot wait on host memory): see
    /// [`super::stream_hold`].
    hold: Option<StreamHold<HostWord>>,
    holding: Mutex<HoldState>,
}

/// The hold of the outermost open region, and the benchmark calls that stopped holding.
#[derive(Default)]
struct HoldState {
    /// Whether the open outermost region holds the stream.
    held: bool,
    /// The benchmark call of the last hold the watchdog released, and how many in a row it
    /// released there (a first launch that loads a kernel module waits for the GPU once, so one
    /// is forgiven).
    timed_out_in_a_row: (u32, u32),
    /// The benchmark call that stopped holding: the watchdog released two of its holds in a row.
    skip_call: Option<u32>,
    /// Benchmark calls that stopped holding since the last collect.
    dropped: usize,
}

impl EventsBackend {
    pub(super) fn start() -> Result<Started, EngineError> {
        let driver = Driver::load(&SearchEnv::from_process())?;
        driver.ensure_context()?;
        let ordinal = driver.current_device()?;
        let props = driver.device_info(ordinal)?;
        let device = DeviceInfo {
            gpu: props.name.clone(),
            host: host_name(),
            compute_clock_khz: (props.clock_khz > 0).then_some(props.clock_khz as f64),
            memory_clock_khz: (props.mem_clock_khz > 0).then_some(props.mem_clock_khz as f64),
        };
        let extras = vec![
            ("DeviceOrdinal".to_string(), ExtraValue::Number(ordinal as f64)),
            (
                "CudaVersion".to_string(),
                ExtraValue::Text(format_cuda_version(driver.version)),
            ),
        ];
        let mut inputs = crate::conditions::runtime::fingerprint_inputs(ordinal, &props, driver.version, None);
        // The stream hold needs pinned host memory the GPU can wait on, and a stream wait on it
        // (tried once with a value the word already holds, which waits for nothing).
        let hold = driver
            .host_word()
            .ok()
            .filter(|w| driver.hold_stream(w, 0).is_ok())
            .and_then(|w| StreamHold::start(w, HOLD_TIMEOUT));
        inputs.kernel_timing = Some(
            if hold.is_some() {
                "CUDA events around each region (no CUPTI), the legacy stream held until the region's work is queued"
            } else {
                "CUDA events around each region (no CUPTI); this driver cannot hold the stream, so host launch gaps count"
            }
            .to_string(),
        );
        let backend = EventsBackend {
            driver,
            epoch: Instant::now(),
            open: Mutex::new(Vec::new()),
            done: Mutex::new(Vec::new()),
            l2: L2Flusher::new(props.l2_bytes),
            inputs,
            hold,
            holding: Mutex::new(HoldState::default()),
        };
        Ok((backend, device, extras))
    }

    fn recorded_event(&self) -> Result<Event, EngineError> {
        let e = self.driver.event_create()?;
        if let Err(err) = self.driver.event_record(e) {
            let _ = self.driver.event_destroy(e);
            return Err(err);
        }
        Ok(Event(e))
    }

    /// Holds the legacy stream before the outermost region of `key` starts, unless the
    /// watchdog had to release a region of the same benchmark call. A hold that cannot be
    /// queued is released at once (the region is then timed without it).
    fn hold_for(&self, key: u64) {
        let Some(hold) = &self.hold else { return };
        let mut st = lock(&self.holding);
        if st.held || st.skip_call == Some(decode_region_key(key).call) {
            return;
        }
        let value = hold.arm();
        if self.driver.hold_stream(hold.word(), value).is_ok() {
            st.held = true;
        } else {
            hold.release();
        }
    }

    /// Releases the hold once the outermost region has exited; after two holds in a row that
    /// the watchdog released, the rest of that benchmark call is timed without holding.
    fn release_after(&self, key: u64) {
        let Some(hold) = &self.hold else { return };
        let mut st = lock(&self.holding);
        if !std::mem::take(&mut st.held) {
            return;
        }
        let call = decode_region_key(key).call;
        if !hold.release() {
            st.timed_out_in_a_row = (call, 0);
            return;
        }
        let (last, n) = st.timed_out_in_a_row;
        let n = if last == call { n + 1 } else { 1 };
        st.timed_out_in_a_row = (call, n);
        if n >= 2 {
            st.skip_call = Some(call);
            st.dropped += 1;
        }
    }

    /// Releases a hold still pending (before a synchronization, which would wait for it).
    fn release_pending(&self) {
        if let Some(hold) = &self.hold {
            if std::mem::take(&mut lock(&self.holding).held) {
                hold.release();
            }
        }
    }
}

impl Drop for EventsBackend {
    fn drop(&mut self) {
        // The GPU must be past any wait on the hold's word before the word is freed.
        self.release_pending();
        if self.driver.ensure_context().is_ok() {
            let _ = self.driver.synchronize();
        }
        for (_, e) in lock(&self.open).drain(..) {
            let _ = self.driver.event_destroy(e.0);
        }
        for (_, s, e) in lock(&self.done).drain(..) {
            let _ = self.driver.event_destroy(s.0);
            let _ = self.driver.event_destroy(e.0);
        }
        self.l2.release(self.driver);
    }
}

impl Backend for EventsBackend {
    fn timestamp_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    fn thread_id(&self) -> u64 {
        0
    }
    fn encode_key(&self, call: u64, config: u64, run: u64, region: u64) -> Result<u64, EngineError> {
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        encode_region_key(c(call), c(config), c(run), c(region))
    }
    fn enter(&self, key: u64, _name: &str) -> Result<(), EngineError> {
        if lock(&self.open).is_empty() {
            self.hold_for(key);
        }
        let e = self.recorded_event()?;
        lock(&self.open).push((key, e));
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        let end = self.recorded_event();
        let mut open = lock(&self.open);
        let popped = open.pop();
        let outermost_done = open.is_empty();
        drop(open);
        if outermost_done {
            if let Some((key, _)) = &popped {
                self.release_after(*key);
            } else {
                self.release_pending();
            }
        }
        let end = end?;
        match popped {
            Some((key, start)) => lock(&self.done).push((key, start, end)),
            None => {
                let _ = self.driver.event_destroy(end.0);
            }
        }
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        self.release_pending();
        self.driver.ensure_context()?;
        self.driver.synchronize()
    }
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError> {
        self.l2.flush(self.driver, spec).map(drop)
    }
    fn collect(&self, _spans: &[Span]) -> Result<Collected, EngineError> {
        let mut collected = Collected {
            hold_dropped: std::mem::take(&mut lock(&self.holding).dropped),
            ..Collected::default()
        };
        for (key, start, end) in lock(&self.done).drain(..) {
            let elapsed = self.driver.event_elapsed_ms(start.0, end.0);
            let _ = self.driver.event_destroy(start.0);
            let _ = self.driver.event_destroy(end.0);
            let ns = (f64::from(elapsed?) * 1e6).round() as u64;
            collected.by_region.entry(key).or_default().push(KernelRun {
                device: 0,
                stream: 0,
                graph: false,
                name: EVENTS_KERNEL.to_string(),
                demangled: None,
                start_ns: 0,
                end_ns: ns,
            });
        }
        Ok(collected)
    }
    fn fingerprint_inputs(&self) -> FingerprintInputs {
        self.inputs.clone()
    }
}
