//! Collection with the CUPTI Range Profiler (`cupti_range_profiler.h`) on the current context
//! ([`RangeProfiler`]), in the three [`ReplayMode`]s: kernel replay (AutoRange + KernelReplay: one
//! range per kernel, the closure runs once, CUPTI saves, restores and replays each kernel per pass),
//! application replay (AutoRange + UserReplay: one range per kernel, the closure re-run once per
//! pass, so the caller can flush the L2 before every pass) and user replay (UserRange + UserReplay:
//! the closure's named ranges, [`UserRanges`], re-run once per pass). The CUPTI call sequence is on
//! [`RangeProfiler::collect`]; which mode to use, and what each costs: `docs/counters.md`.

use std::ffi::CString;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, Ordering};

use super::host::{c_names, CuptiLib, HostObject};
use super::metrics::{is_bad_name_code, MetricsCatalog};
use super::structs::*;
use super::CountersError;
use crate::sys::cupti::ObjectPtr;

pub use crate::choices::ReplayMode;

/// The values of one range.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeResult {
    /// Range name: `"0"`, `"1"`, … in kernel replay; the pushed names (nested joined by `/`) in user replay.
    pub name: String,
    /// `(metric, value)` in the order the metrics were given.
    pub values: Vec<(String, f64)>,
}

impl RangeResult {
    /// The value of one metric.
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.values.iter().find(|(m, _)| m == metric).map(|(_, v)| *v)
    }
}

/// Everything one collection produced: the images (enough to re-evaluate offline) and the values.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Chip name (e.g. `GH100`).
    pub chip: String,
    /// CUPTI API version that recorded it.
    pub api_version: u32,
    /// Replay mode used.
    pub mode: ReplayMode,
    /// Metric names, in order.
    pub metrics: Vec<String>,
    /// Passes the config needed (`cuptiProfilerHostGetNumOfPasses`).
    pub passes: usize,
    /// Times the closure ran (1 in kernel replay; the pass count in user replay).
    pub closure_runs: usize,
    /// Config image.
    pub config_image: Vec<u8>,
    /// Counter-availability image of the device.
    pub counter_availability: Vec<u8>,
    /// Decoded counter-data image.
    pub counter_data: Vec<u8>,
    /// Values per range.
    pub ranges: Vec<RangeResult>,
    /// Where the collection's host time went.
    pub timings: CollectTimings,
}

/// Host time of one [`RangeProfiler::collect`] (or of one streaming collection, as
/// [`RangeProfiler::stop_streaming`] says), by phase (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CollectTimings {
    /// Counter-data image and `cuptiRangeProfilerSetConfig` (and, in user replay, enabling a
    /// new session when the image outgrows the one of the session's first `Start`).
    pub setup_s: f64,
    /// Of `setup_s`: the counter-data image (a copy of a blank one once one was initialised).
    pub image_s: f64,
    /// The passes: `Start`, the workload, `Stop`, as many times as CUPTI asks.
    pub passes_s: f64,
    /// Of `passes_s`: the `cuptiRangeProfilerStart` calls (zero for a streaming collection,
    /// whose `Start` is in `setup_s`).
    pub start_s: f64,
    /// Of `passes_s`: the `cuptiRangeProfilerStop` calls (zero for a streaming collection, whose
    /// `Stop` is in `decode_s`).
    pub stop_s: f64,
    /// `cuptiRangeProfilerDecodeData` and the overflow checks.
    pub decode_s: f64,
    /// Evaluating every range's metrics with the host API.
    pub evaluate_s: f64,
}

static PROFILER_INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Evaluates every range of a decoded counter-data image with a host object that has `metrics`
/// added. Used after collection and for offline re-evaluation.
pub fn evaluate_counter_data(
    host: &HostObject,
    counter_data: &[u8],
    metrics: &[String],
) -> Result<Vec<RangeResult>, CountersError> {
    let lib = host.lib();
    let c = c_names(metrics)?;
    let n = lib.counter_data_num_ranges(counter_data)?;
    (0..n)
        .map(|i| {
            let name = lib.range_name(counter_data, i)?;
            let vals = host.evaluate(counter_data, i, &c)?;
            Ok(RangeResult {
                name,
                values: metrics.iter().cloned().zip(vals).collect(),
            })
        })
        .collect()
}

/// A Range Profiler session on one CUDA context, for one metric set.
pub struct RangeProfiler {
    lib: &'static CuptiLib,
    obj: ObjectPtr<RangeProfilerObject>,
    host: HostObject,
    chip: String,
    counter_availability: Vec<u8>,
    metrics: Vec<String>,
    metrics_c: Vec<CString>,
    config_image: Vec<u8>,
    passes: usize,
    mode: ReplayMode,
    /// The streaming collection of [`RangeProfiler::start_streaming`], while it runs.
    stream: Option<Stream>,
    /// An initialised counter-data image and the ranges it holds: every collection of that many
    /// ranges starts from a copy (initialising one takes 1.6-2.6 ms of host time on the H200,
    /// whatever its size; copying it microseconds).
    blank_image: Option<(usize, Vec<u8>)>,
    /// The context the session is enabled on (a `CUcontext` as an address).
    ctx: usize,
    /// In user replay (application and range modes): the ranges of the image this session's
    /// first `Start` had. That first `Start` also sizes what later collections can hold: on
    /// the H200 (CUDA 13.0) a session first started with 17 ranges returned 34 of 60 kernels
    /// into a 65-range image, one started with 65 returned 130 of 200, with no range counted
    /// as dropped (`truth_check growimage app`); kernel replay is not limited so. A larger
    /// image therefore gets a new session ([`RangeProfiler::collect`]).
    first_start_ranges: Option<usize>,
    /// Host time [`RangeProfiler::new`] spent on the configuration (host object, metrics, config
    /// image, pass count), seconds.
    config_s: f64,
    /// Host time the rest of [`RangeProfiler::new`] took (CUPTI's profiler initialisation, the
    /// chip name, the counter availability, `cuptiRangeProfilerEnable`), seconds.
    enable_s: f64,
}

/// A running streaming collection: its counter-data image, its capacity in ranges (without the
/// spare slot), the host time its start took and when it started.
struct Stream {
    image: Vec<u8>,
    capacity: usize,
    setup_s: f64,
    started: std::time::Instant,
}

impl RangeProfiler {
    /// Sets up the Range Profiler on `ctx` (a `CUcontext`, current on this thread) of device
    /// `device_index` for `metrics`. Fails before any GPU work on unknown or incompatible metric
    /// names (with the closest valid names), and with a message saying what to change when the
    /// user may not read counters.
    pub fn new<S: AsRef<str>>(
        lib: &'static CuptiLib,
        ctx: CUcontext,
        device_index: usize,
        metrics: &[S],
        mode: ReplayMode,
    ) -> Result<Self, CountersError> {
        let t_new = std::time::Instant::now();
        profiler_initialize(lib)?;
        let chip = chip_name(lib, device_index)?;
        let counter_availability = counter_availability(lib, ctx)?;
        let metrics: Vec<String> = metrics.iter().map(|m| m.as_ref().trim().to_string()).collect();
        let metrics_c = c_names(&metrics)?;
        let t_config = std::time::Instant::now();
        let mut host = HostObject::new(lib, &chip, Some(&counter_availability))?;
        if let Err(e) = host.add_metrics(&metrics_c) {
            // Explain with the catalog (closest names, device-level conflicts) when it is the names.
            if let CountersError::Cupti { code, .. } = &e {
                if is_bad_name_code(*code) || *code == CUPTI_ERROR_NOT_SUPPORTED {
                    let catalog = MetricsCatalog::with_lib(lib, &chip, Some(counter_availability.clone()))?;
                    catalog.validate(&metrics)?;
                }
            }
            return Err(e);
        }
        let config_image = host.config_image()?;
        let passes = lib.num_passes(&config_image)?;
        let config_s = t_config.elapsed().as_secs_f64();
        let object = enable(lib, ctx)?;
        let enable_s = t_new.elapsed().as_secs_f64() - config_s;
        Ok(RangeProfiler {
            lib,
            obj: ObjectPtr::new(object),
            blank_image: None,
            ctx: ctx as usize,
            first_start_ranges: None,
            host,
            chip,
            counter_availability,
            metrics,
            metrics_c,
            config_image,
            passes,
            mode,
            stream: None,
            config_s,
            enable_s,
        })
    }

    /// Chip name of the device.
    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// Replay passes the metric set needs.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// Host time the configuration took in [`RangeProfiler::new`] (host object, metrics, config
    /// image, pass count), seconds.
    pub fn config_s(&self) -> f64 {
        self.config_s
    }

    /// Host time the rest of [`RangeProfiler::new`] took: CUPTI's profiler initialisation, the
    /// chip name, the counter availability and `cuptiRangeProfilerEnable`, seconds.
    pub fn enable_s(&self) -> f64 {
        self.enable_s
    }

    /// Host time the start of the running streaming collection took (its counter-data image,
    /// `SetConfig`, `Start`), seconds; `None` when none runs.
    pub fn stream_setup_s(&self) -> Option<f64> {
        self.stream.as_ref().map(|s| s.setup_s)
    }

    /// The metric names.
    pub fn metrics(&self) -> &[String] {
        &self.metrics
    }

    /// The replay mode.
    pub fn mode(&self) -> ReplayMode {
        self.mode
    }

    /// The unit of each metric, in ncu's spelling, from this session's host object.
    pub fn metric_units(&self) -> Result<Vec<String>, CountersError> {
        self.metrics
            .iter()
            .map(|m| Ok(self.host.properties(m)?.dim_unit))
            .collect()
    }

    fn obj_params(&self) -> CUpti_RangeProfiler_Object_Params {
        CUpti_RangeProfiler_Object_Params {
            structSize: v13_0::RANGE_START,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
        }
    }

    /// The parameters of `cuptiRangeProfilerStop` for this profiler's object.
    fn stop_params(&self) -> CUpti_RangeProfiler_Stop_Params {
        CUpti_RangeProfiler_Stop_Params {
            structSize: v13_0::RANGE_STOP,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
            passIndex: 0,
            targetNestingLevel: 0,
            isAllPassSubmitted: 0,
        }
    }

    /// Runs `workload` under the profiler and returns the values of every range.
    ///
    /// `max_ranges` sizes the counter-data image: the number of kernels launched (kernel
    /// replay) or of ranges pushed per pass (user replay). More ranges than that are an error
    /// ([`CountersError::DroppedRanges`]), never silently lost.
    ///
    /// Kernel replay calls `workload` once; user replay calls it once per pass, and it must
    /// push the same ranges every time.
    ///
    /// The CUPTI sequence (with [`RangeProfiler::new`]'s part first): `cuptiProfilerInitialize` →
    /// `cuptiDeviceGetChipName` → `cuptiProfilerGetCounterAvailability` → host object, config
    /// image and pass count → `cuptiRangeProfilerEnable(ctx)` → per collection:
    /// `GetCounterDataSize` + `CounterDataImageInitialize` → `SetConfig` → `Start` /
    /// [`PushRange` … `PopRange`] / `Stop` until `isAllPassSubmitted` → `DecodeData`
    /// (synchronizes the context; dropped ranges are an error here) → per range
    /// `CounterDataGetRangeInfo` + `cuptiProfilerHostEvaluateToGpuValues`.
    pub fn collect<F>(&mut self, max_ranges: usize, mut workload: F) -> Result<Recording, CountersError>
    where
        F: FnMut(&mut UserRanges<'_>),
    {
        if max_ranges == 0 {
            return Err(CountersError::Usage("max_ranges must be at least 1".into()));
        }
        let lib = self.lib;
        let t_setup = std::time::Instant::now();
        // Counter-data image for max_ranges ranges plus one spare: CUPTI 13.0 drops the kernels of
        // a full image in kernel replay without counting them in numOfRangeDropped (seen on the
        // H200: 4 kernels into a 2-range image gave 2 ranges and no error), so a range in the
        // spare slot is how an overflow shows.
        let user_max = max_ranges;
        if self.is_paused() || needs_new_session(self.mode, self.first_start_ranges, max_ranges + 1) {
            self.reenable()?;
        }
        let mut image = self.counter_data_image(max_ranges + 1)?;
        let image_s = t_setup.elapsed().as_secs_f64();
        self.set_config(&mut image, max_ranges + 1)?;

        let setup_s = t_setup.elapsed().as_secs_f64();
        let t_passes = std::time::Instant::now();
        let max_runs = self.passes.max(1) + 2;
        let mut runs = 0usize;
        let mut first_pass_ranges: Option<Vec<String>> = None;
        let (mut start_s, mut stop_s) = (0.0, 0.0);
        loop {
            if runs >= max_runs {
                return Err(CountersError::Usage(format!(
                    "CUPTI still wants passes after {runs} runs of the workload (the config needs {}); did the workload \
                     launch any kernel inside a range?",
                    self.passes
                )));
            }
            let mut start = self.obj_params();
            let t_start = std::time::Instant::now();
            lib.check("cuptiRangeProfilerStart", lib.fns.rp_start(&mut start))?;
            start_s += t_start.elapsed().as_secs_f64();
            self.first_start_ranges.get_or_insert(max_ranges + 1);
            let mut ranges = UserRanges {
                lib,
                obj: self.obj.get(),
                mode: self.mode,
                pass: runs,
                stack: Vec::new(),
                pushed: Vec::new(),
                error: None,
            };
            workload(&mut ranges);
            let pass_error = ranges.finish();
            let mut stop = self.stop_params();
            let t_stop = std::time::Instant::now();
            let stop_rc = lib.fns.rp_stop(&mut stop);
            stop_s += t_stop.elapsed().as_secs_f64();
            runs += 1;
            if let Some(e) = pass_error.err() {
                return Err(e);
            }
            lib.check("cuptiRangeProfilerStop", stop_rc)?;
            if self.mode == ReplayMode::User {
                match &first_pass_ranges {
                    None => first_pass_ranges = Some(ranges.pushed.clone()),
                    Some(first) if *first != ranges.pushed => {
                        return Err(CountersError::Usage(format!(
                            "user replay: pass {} pushed ranges {:?} but pass 0 pushed {:?}; the workload must be repeatable",
                            runs - 1,
                            ranges.pushed,
                            first
                        )))
                    }
                    _ => {}
                }
                if ranges.pushed.len() > user_max {
                    return Err(CountersError::DroppedRanges {
                        dropped: ranges.pushed.len() - user_max,
                        capacity: user_max,
                    });
                }
            }
            if stop.isAllPassSubmitted != 0 {
                break;
            }
        }
        let passes_s = t_passes.elapsed().as_secs_f64();
        let (ranges, mut timings) = self.decode_and_evaluate(&image, user_max, setup_s, passes_s)?;
        timings.start_s = start_s;
        timings.stop_s = stop_s;
        timings.image_s = image_s;
        Ok(Recording {
            chip: self.chip.clone(),
            api_version: lib.api_version,
            mode: self.mode,
            metrics: self.metrics.clone(),
            passes: self.passes,
            closure_runs: runs,
            config_image: self.config_image.clone(),
            counter_availability: self.counter_availability.clone(),
            counter_data: image,
            ranges,
            timings,
        })
    }

    /// A counter-data image for `max_ranges` ranges: a copy of the blank one of as many ranges
    /// when there is one, else a new one (`GetCounterDataSize` + `CounterDataImageInitialize`).
    fn counter_data_image(&mut self, max_ranges: usize) -> Result<Vec<u8>, CountersError> {
        if let Some((ranges, image)) = &self.blank_image {
            if *ranges == max_ranges {
                return Ok(image.clone());
            }
        }
        let image = self.initialised_image(max_ranges)?;
        self.blank_image = Some((max_ranges, image.clone()));
        Ok(image)
    }

    /// A new counter-data image for `max_ranges` ranges.
    fn initialised_image(&self, max_ranges: usize) -> Result<Vec<u8>, CountersError> {
        let lib = self.lib;
        let mut sz = CUpti_RangeProfiler_GetCounterDataSize_Params {
            structSize: v13_0::RANGE_GET_COUNTER_DATA_SIZE,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
            pMetricNames: null_mut(),
            numMetrics: 0,
            maxNumOfRanges: max_ranges,
            maxNumRangeTreeNodes: u32::try_from(max_ranges).unwrap_or(u32::MAX),
            counterDataSize: 0,
        };
        lib.check(
            "cuptiRangeProfilerGetCounterDataSize",
            lib.fns.rp_get_counter_data_size(&mut sz, &self.metrics_c),
        )?;
        let mut image = vec![0u8; sz.counterDataSize];
        let mut init = CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            structSize: v13_0::RANGE_COUNTER_DATA_IMAGE_INITIALIZE,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
            counterDataSize: 0,
            pCounterData: null_mut(),
        };
        lib.check(
            "cuptiRangeProfilerCounterDataImageInitialize",
            lib.fns.rp_counter_data_image_initialize(&mut init, &mut image),
        )?;
        Ok(image)
    }

    /// `cuptiRangeProfilerSetConfig` for this profiler's mode, writing into `image`.
    fn set_config(&self, image: &mut [u8], max_ranges: usize) -> Result<(), CountersError> {
        let (range, replay) = match self.mode {
            ReplayMode::Kernel => (CUPTI_AUTO_RANGE, CUPTI_KERNEL_REPLAY),
            ReplayMode::User => (CUPTI_USER_RANGE, CUPTI_USER_REPLAY),
            ReplayMode::Application => (CUPTI_AUTO_RANGE, CUPTI_USER_REPLAY),
        };
        let mut cfg = CUpti_RangeProfiler_SetConfig_Params {
            structSize: v13_0::RANGE_SET_CONFIG,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
            configSize: 0,
            pConfig: null(),
            counterDataImageSize: 0,
            pCounterDataImage: null_mut(),
            range,
            replayMode: replay,
            maxRangesPerPass: max_ranges,
            numNestingLevels: 1,
            minNestingLevel: 1,
            passIndex: 0,
            targetNestingLevel: 1,
        };
        // CUPTI writes into `image` until it is decoded: the caller keeps it until then.
        self.lib.check(
            "cuptiRangeProfilerSetConfig",
            self.lib.fns.rp_set_config(&mut cfg, &self.config_image, image),
        )
    }

    /// [`RangeProfiler::decode`] and the evaluation of every range, timed, with the setup and
    /// passes times the caller measured.
    fn decode_and_evaluate(
        &self,
        image: &[u8],
        user_max: usize,
        setup_s: f64,
        passes_s: f64,
    ) -> Result<(Vec<RangeResult>, CollectTimings), CountersError> {
        let t_decode = std::time::Instant::now();
        self.decode(image, user_max)?;
        let decode_s = t_decode.elapsed().as_secs_f64();
        let t_eval = std::time::Instant::now();
        let ranges = evaluate_counter_data(&self.host, image, &self.metrics)?;
        let timings = CollectTimings {
            setup_s,
            passes_s,
            decode_s,
            evaluate_s: t_eval.elapsed().as_secs_f64(),
            ..CollectTimings::default()
        };
        Ok((ranges, timings))
    }

    /// `cuptiRangeProfilerDecodeData`, then the overflow checks: dropped ranges, or a range in
    /// the spare slot beyond `user_max`, are [`CountersError::DroppedRanges`].
    fn decode(&self, image: &[u8], user_max: usize) -> Result<(), CountersError> {
        let lib = self.lib;
        let mut dec = CUpti_RangeProfiler_DecodeData_Params {
            structSize: v13_0::RANGE_DECODE_DATA,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj.get(),
            numOfRangeDropped: 0,
        };
        lib.check("cuptiRangeProfilerDecodeData", lib.fns.rp_decode_data(&mut dec))?;
        if dec.numOfRangeDropped > 0 {
            return Err(CountersError::DroppedRanges {
                dropped: dec.numOfRangeDropped,
                capacity: user_max,
            });
        }
        let total = lib.counter_data_num_ranges(image)?;
        if total > user_max {
            // The spare slot was used: at least one range more than asked for, maybe more lost.
            return Err(CountersError::DroppedRanges {
                dropped: total - user_max,
                capacity: user_max,
            });
        }
        Ok(())
    }

    /// Starts a kernel-replay collection that is not bound to a closure (for an injected
    /// library, where the workload is the rest of the program): a counter-data image for
    /// `max_ranges` kernels plus a spare slot, `SetConfig` (AutoRange + KernelReplay) and
    /// `cuptiRangeProfilerStart`. Every kernel launched on the context from now on is one range,
    /// until [`RangeProfiler::stop_streaming`]. The caller counts its launches and stops (and
    /// restarts) before `max_ranges` is exceeded; an overflow is reported by `stop_streaming`.
    ///
    /// Kernel replay only ([`CountersError::Usage`] otherwise, or when a collection is running).
    pub fn start_streaming(&mut self, max_ranges: usize) -> Result<(), CountersError> {
        if self.mode != ReplayMode::Kernel {
            return Err(CountersError::Usage(
                "streaming collection needs kernel replay (ReplayMode::Kernel)".into(),
            ));
        }
        if self.stream.is_some() {
            return Err(CountersError::Usage("a streaming collection is already running".into()));
        }
        if max_ranges == 0 {
            return Err(CountersError::Usage("max_ranges must be at least 1".into()));
        }
        let t_setup = std::time::Instant::now();
        let mut image = self.counter_data_image(max_ranges + 1)?;
        self.set_config(&mut image, max_ranges + 1)?;
        let mut start = self.obj_params();
        self.lib
            .check("cuptiRangeProfilerStart", self.lib.fns.rp_start(&mut start))?;
        self.stream = Some(Stream {
            image,
            capacity: max_ranges,
            setup_s: t_setup.elapsed().as_secs_f64(),
            started: std::time::Instant::now(),
        });
        Ok(())
    }

    /// Whether a streaming collection is running.
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Ends the collection of [`RangeProfiler::start_streaming`]: `cuptiRangeProfilerStop`,
    /// `DecodeData` (synchronizes the context) and the evaluation of every range, in launch
    /// order. More kernels than `max_ranges` are [`CountersError::DroppedRanges`].
    ///
    /// Also returns where the host time went: `setup_s` the image, `SetConfig` and `Start` of
    /// `start_streaming`; `passes_s` from `Start` to this call (the program's launches, kernel
    /// replay included); `decode_s` `Stop` and `DecodeData`; `evaluate_s` the evaluation.
    pub fn stop_streaming(&mut self) -> Result<(Vec<RangeResult>, CollectTimings), CountersError> {
        let Some(Stream {
            image,
            capacity,
            setup_s,
            started,
        }) = self.stream.take()
        else {
            return Err(CountersError::Usage("no streaming collection is running".into()));
        };
        let passes_s = started.elapsed().as_secs_f64();
        let lib = self.lib;
        let mut stop = self.stop_params();
        let t_stop = std::time::Instant::now();
        lib.check("cuptiRangeProfilerStop", lib.fns.rp_stop(&mut stop))?;
        let stop_s = t_stop.elapsed().as_secs_f64();
        let (ranges, mut timings) = self.decode_and_evaluate(&image, capacity, setup_s, passes_s)?;
        timings.decode_s += stop_s;
        Ok((ranges, timings))
    }
}

impl RangeProfiler {
    /// Disables the Range Profiler until the next collection, which enables it again with the
    /// same configuration: between benchmarks the process runs as without it (an enabled Range
    /// Profiler slows the CUDA graphs and kernel launches of the user's own code).
    pub fn pause(&mut self) {
        self.disable();
    }

    /// Whether [`RangeProfiler::pause`] left it disabled.
    pub fn is_paused(&self) -> bool {
        self.obj.get().is_null()
    }

    /// `cuptiRangeProfilerDisable` of this session's object (once).
    fn disable(&mut self) {
        if !self.obj.get().is_null() {
            let mut p = self.obj_params();
            p.structSize = v13_0::RANGE_DISABLE;
            self.lib.fns.rp_disable(&mut p);
            self.obj = ObjectPtr::new(null_mut());
        }
    }

    /// A new session on the same context, configuration and metrics (its first `Start` sizes
    /// the collections anew: see `first_start_ranges`).
    fn reenable(&mut self) -> Result<(), CountersError> {
        self.disable();
        let t0 = std::time::Instant::now();
        self.obj = ObjectPtr::new(enable(self.lib, self.ctx as CUcontext)?);
        self.enable_s += t0.elapsed().as_secs_f64();
        self.first_start_ranges = None;
        self.blank_image = None;
        Ok(())
    }
}

/// Whether a collection into an image of `image_ranges` ranges needs a new session (see
/// `RangeProfiler::first_start_ranges`): in application replay when the image is more than twice
/// the session's first `Start`'s (a session holds twice its first image there: started with 17
/// ranges it returned 34 of 60 kernels, with 65 130 of 200; H200, 2026-12-02), in range replay
/// when it is larger; never in kernel replay. Enabling anew has a cost beyond its time: CUDA
/// graphs replayed after it ran faster than in a process without a profiler (20 replays of a
/// ten-kernel graph: CUDA events 456 µs after it, 494 before, 479 without a profiler; H200,
/// 2026-12-04), so it is left to images that need it.
fn needs_new_session(mode: ReplayMode, first_start_ranges: Option<usize>, image_ranges: usize) -> bool {
    match mode {
        ReplayMode::Kernel => false,
        ReplayMode::Application => first_start_ranges.is_some_and(|first| first.saturating_mul(2) < image_ranges),
        ReplayMode::User => first_start_ranges.is_some_and(|first| first < image_ranges),
    }
}

/// `cuptiRangeProfilerEnable` on `ctx`: the new Range Profiler object.
fn enable(lib: &CuptiLib, ctx: CUcontext) -> Result<*mut RangeProfilerObject, CountersError> {
    let mut en = CUpti_RangeProfiler_Enable_Params {
        structSize: lib.sizes.range_enable,
        pPriv: null_mut(),
        ctx,
        pRangeProfilerObject: null_mut(),
        cacheControlMode: 0,
    };
    lib.check("cuptiRangeProfilerEnable", lib.fns.rp_enable(&mut en))?;
    // CUDA graphs instantiated before this run faster from now on (the graph guard counts them).
    crate::cupti::graph_guard::note_range_profiler_enabled();
    Ok(en.pRangeProfilerObject)
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        self.disable();
    }
}

/// Range control handed to the workload closure of [`RangeProfiler::collect`].
pub struct UserRanges<'a> {
    lib: &'a CuptiLib,
    obj: *mut RangeProfilerObject,
    mode: ReplayMode,
    pass: usize,
    stack: Vec<CString>,
    pushed: Vec<String>,
    error: Option<CountersError>,
}

impl UserRanges<'_> {
    /// Which run of the workload this is (0-based; the pass in user replay).
    pub fn pass(&self) -> usize {
        self.pass
    }

    /// Opens a named range (user replay only). Errors are also kept and reported by `collect`.
    pub fn push(&mut self, name: &str) -> Result<(), CountersError> {
        let r = self.push_inner(name);
        if let Err(e) = &r {
            self.error.get_or_insert_with(|| clone_err(e));
        }
        r
    }

    fn push_inner(&mut self, name: &str) -> Result<(), CountersError> {
        if self.mode != ReplayMode::User {
            return Err(CountersError::Usage(
                "ranges can only be pushed in user replay (ReplayMode::User)".into(),
            ));
        }
        if !self.stack.is_empty() {
            return Err(CountersError::Usage(format!(
                "range {name:?} opened inside {:?}: nested ranges are not configured (one nesting level)",
                self.stack
                    .last()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            )));
        }
        let c = CString::new(name).map_err(|_| CountersError::NulInName(name.into()))?;
        let mut p = CUpti_RangeProfiler_PushRange_Params {
            structSize: v13_0::RANGE_PUSH_RANGE,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj,
            pRangeName: null(),
        };
        self.lib
            .check("cuptiRangeProfilerPushRange", self.lib.fns.rp_push_range(&mut p, &c))?;
        self.pushed.push(name.to_string());
        self.stack.push(c);
        Ok(())
    }

    /// Closes the innermost range.
    pub fn pop(&mut self) -> Result<(), CountersError> {
        let r = self.pop_inner();
        if let Err(e) = &r {
            self.error.get_or_insert_with(|| clone_err(e));
        }
        r
    }

    fn pop_inner(&mut self) -> Result<(), CountersError> {
        if self.stack.is_empty() {
            return Err(CountersError::Usage("pop without a matching push".into()));
        }
        let mut p = CUpti_RangeProfiler_PopRange_Params {
            structSize: v13_0::RANGE_POP_RANGE,
            pPriv: null_mut(),
            pRangeProfilerObject: self.obj,
        };
        self.lib
            .check("cuptiRangeProfilerPopRange", self.lib.fns.rp_pop_range(&mut p))?;
        self.stack.pop();
        Ok(())
    }

    /// Runs `f` inside the named range.
    pub fn range<R>(&mut self, name: &str, f: impl FnOnce() -> R) -> Result<R, CountersError> {
        self.push(name)?;
        let r = f();
        self.pop()?;
        Ok(r)
    }

    fn finish(&mut self) -> Result<(), CountersError> {
        while !self.stack.is_empty() {
            let name = self
                .stack
                .last()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = self.pop_inner();
            self.error.get_or_insert(CountersError::Usage(format!(
                "range {name:?} was not closed by the workload"
            )));
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn clone_err(e: &CountersError) -> CountersError {
    match e {
        CountersError::Cupti { call, code, name, hint } => CountersError::Cupti {
            call,
            code: *code,
            name: name.clone(),
            hint: hint.clone(),
        },
        CountersError::NulInName(n) => CountersError::NulInName(n.clone()),
        other => CountersError::Usage(other.to_string()),
    }
}

/// `cuptiProfilerInitialize`, once per process.
pub fn profiler_initialize(lib: &CuptiLib) -> Result<(), CountersError> {
    if !PROFILER_INITIALIZED.load(Ordering::Acquire) {
        let mut p = CUpti_Profiler_Initialize_Params {
            structSize: v13_0::PROFILER_INITIALIZE,
            pPriv: null_mut(),
        };
        lib.check("cuptiProfilerInitialize", lib.fns.profiler_initialize(&mut p))?;
        PROFILER_INITIALIZED.store(true, Ordering::Release);
    }
    Ok(())
}

/// `cuptiProfilerDeInitialize` when [`profiler_initialize`] initialized the profiler; errors
/// are ignored (it runs on the way out).
pub fn profiler_deinitialize(lib: &CuptiLib) {
    if PROFILER_INITIALIZED.swap(false, Ordering::AcqRel) {
        let mut p = CUpti_Profiler_DeInitialize_Params {
            structSize: v13_0::PROFILER_DEINITIALIZE,
            pPriv: null_mut(),
        };
        lib.fns.profiler_deinitialize(&mut p);
    }
}

/// Whether CUPTI's profiler is initialized in this process ([`profiler_initialize`], not yet
/// [`profiler_deinitialize`]d).
pub fn profiler_initialized() -> bool {
    PROFILER_INITIALIZED.load(Ordering::Acquire)
}

/// `cuptiDeviceGetChipName` (e.g. `"GH100"`); call [`profiler_initialize`] first.
pub fn chip_name(lib: &CuptiLib, device_index: usize) -> Result<String, CountersError> {
    let mut p = CUpti_Device_GetChipName_Params {
        structSize: v13_0::DEVICE_GET_CHIP_NAME,
        pPriv: null_mut(),
        deviceIndex: device_index,
        pChipName: null(),
    };
    let name = lib.checked("cuptiDeviceGetChipName", lib.fns.device_get_chip_name(&mut p))?;
    name.ok_or_else(|| CountersError::Usage("cuptiDeviceGetChipName returned no name".into()))
}

/// `cuptiProfilerGetCounterAvailability` for `ctx` (size query, then the image).
pub fn counter_availability(lib: &CuptiLib, ctx: CUcontext) -> Result<Vec<u8>, CountersError> {
    let mut p = CUpti_Profiler_GetCounterAvailability_Params {
        structSize: lib.sizes.get_counter_availability,
        pPriv: null_mut(),
        ctx,
        counterAvailabilityImageSize: 0,
        pCounterAvailabilityImage: null_mut(),
        bAllowDeviceLevelCounters: 0,
    };
    lib.check(
        "cuptiProfilerGetCounterAvailability",
        lib.fns.get_counter_availability(&mut p, None),
    )?;
    let mut buf = vec![0u8; p.counterAvailabilityImageSize];
    lib.check(
        "cuptiProfilerGetCounterAvailability",
        lib.fns.get_counter_availability(&mut p, Some(&mut buf)),
    )?;
    buf.truncate(p.counterAvailabilityImageSize);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::{needs_new_session, ReplayMode};

    #[test]
    fn a_user_replay_session_is_enabled_anew_for_an_image_larger_than_its_first() {
        for mode in [ReplayMode::Application, ReplayMode::User] {
            assert!(!needs_new_session(mode, None, 1000), "no Start yet: the first sizes it");
            assert!(!needs_new_session(mode, Some(65), 65));
            assert!(!needs_new_session(mode, Some(257), 65), "a smaller image fits");
            assert!(needs_new_session(mode, Some(65), 257));
        }
        // Application replay holds twice the first image; range replay only the first.
        assert!(!needs_new_session(ReplayMode::Application, Some(65), 130));
        assert!(needs_new_session(ReplayMode::Application, Some(65), 131));
        assert!(needs_new_session(ReplayMode::User, Some(65), 66));
        assert!(
            !needs_new_session(ReplayMode::Kernel, Some(17), 65536),
            "kernel replay took 200 after 17"
        );
    }
}
