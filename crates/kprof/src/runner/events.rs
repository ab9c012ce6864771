//! The CUDA-events fallback backend ([`Profiler::with_cuda_events`](super::Profiler::with_cuda_events)).

use std::sync::Mutex;
use std::time::Instant;

use kprof_core::model::{DeviceInfo, ExtraValue};

use super::l2_flush::L2Flusher;
use super::{host_name, Backend, Collected, FlushSpec, KernelRun, Span};
use crate::attribution::encode_region_key;
use crate::conditions::fingerprint::format_cuda_version;
use crate::conditions::FingerprintInputs;
use crate::driver::{CuEvent, Driver};
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
        inputs.kernel_timing = Some("CUDA events around each region (no CUPTI)".to_string());
        let backend = EventsBackend {
            driver,
            epoch: Instant::now(),
            open: Mutex::new(Vec::new()),
            done: Mutex::new(Vec::new()),
            l2: L2Flusher::new(props.l2_bytes),
            inputs,
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
}

impl Drop for EventsBackend {
    fn drop(&mut self) {
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
        let e = self.recorded_event()?;
        lock(&self.open).push((key, e));
        Ok(())
    }
    fn exit(&self) -> Result<(), EngineError> {
        let end = self.recorded_event()?;
        match lock(&self.open).pop() {
            Some((key, start)) => lock(&self.done).push((key, start, end)),
            None => {
                let _ = self.driver.event_destroy(end.0);
            }
        }
        Ok(())
    }
    fn synchronize(&self) -> Result<(), EngineError> {
        self.driver.ensure_context()?;
        self.driver.synchronize()
    }
    fn flush_l2(&self, spec: FlushSpec) -> Result<(), EngineError> {
        self.l2.flush(self.driver, spec).map(drop)
    }
    fn collect(&self, _spans: &[Span]) -> Result<Collected, EngineError> {
        let mut collected = Collected::default();
        for (key, start, end) in lock(&self.done).drain(..) {
            let elapsed = self.driver.event_elapsed_ms(start.0, end.0);
            let _ = self.driver.event_destroy(start.0);
            let _ = self.driver.event_destroy(end.0);
            let ns = (f64::from(elapsed?) * 1e6).round() as u64;
            collected.by_region.entry(key).or_default().push(KernelRun {
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
