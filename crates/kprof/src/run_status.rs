//! What the injection library reports back to `kprof run` about where a process's time went.
//!
//! The reverse of [`crate::run_spec`]: `libkprof_inject.so` (kprof-inject) writes a status file
//! `kprof-run-<pid>.json` per process; its `timeline` is a [`Timeline`] and, in a counter launch,
//! its `counters` object carries the fields of [`CounterTimes`]. `kprof run` (kprof-cli) reads
//! both to print and write its time split (`kprof run --verbose`, `time-split.json`). Every
//! field has a default, so a status file of an older library reads as "not measured".
//!
//! Instants are Unix nanoseconds (`CLOCK_REALTIME`), the clock `kprof run` reads around each
//! launch, so instants of different processes can be subtracted.

use serde::{Deserialize, Serialize};

/// Now, in Unix nanoseconds (`CLOCK_REALTIME`, the clock of every instant here); 0 if the clock
/// is before 1970.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// One annotation's kernel-record durations in one process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RegionMean {
    /// The annotation (NVTX range name, or kernel name outside ranges).
    pub annotation: String,
    /// Its runs (occurrences) in the process.
    pub runs: usize,
    /// The mean of its `gpu__time_duration.sum` samples from the kernel records (ns).
    pub mean_ns: f64,
}

/// The time line of one process (the `timeline` of its status file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timeline {
    /// When the CUDA driver called `InitializeInjection` (inside the program's first `cuInit`).
    pub cuda_init_unix_ns: Option<u64>,
    /// When the exit handler started (the program had returned from `main` or called `exit`).
    pub exit_handler_unix_ns: Option<u64>,
    /// When the exit handler had its results (samples written), just before the status file.
    pub results_unix_ns: Option<u64>,
    /// Kernel activity records received (kernel replay may report a kernel more than once).
    pub kernel_records: usize,
    /// Distinct kernels among them (correlation id, graph node).
    pub kernels: usize,
    /// GPU time of every record, summed (ns).
    pub records_gpu_ns: u64,
    /// GPU time of the first record of each distinct kernel, summed (ns).
    pub kernels_gpu_ns: u64,
    /// Per annotation, the mean duration of its runs from the kernel records. In a counter
    /// launch these are the kernel records taken under kernel replay, which `kprof run` compares
    /// with the timing launch's durations.
    pub region_means: Vec<RegionMean>,
    /// The GPU's start of a CUDA graph launch added to the span of every graph record (ns,
    /// `runner/graph_start.rs`, measured on kprof's own graph at exit); `None` without graph
    /// records or when it could not be measured.
    pub graph_start_ns: Option<u64>,
}

/// The host times of a counter launch's collection (fields of the status file's `counters`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CounterTimes {
    /// Kernel launches profiled (counted in a counter-data image).
    pub launches: u64,
    /// Replay passes the metric set needs (the config image's pass count); 0 before the start.
    pub passes: usize,
    /// Counter-data images decoded.
    pub images_decoded: usize,
    /// The Range Profiler's start at the first launch (CUPTI's profiler initialisation, counter
    /// availability, host object, config image, enabling, the first counter-data image,
    /// `SetConfig`, `Start`), seconds.
    pub start_s: f64,
    /// Of `start_s`, the configuration with the Profiler Host API (host object for the chip, the
    /// metrics, the config image and its pass count), seconds.
    pub config_s: f64,
    /// Of `start_s`, loading libcupti and the driver's entry points, seconds.
    pub load_s: f64,
    /// Of `start_s`, CUPTI's profiler initialisation, the chip name, the counter availability and
    /// `cuptiRangeProfilerEnable`, seconds.
    pub enable_s: f64,
    /// Of `start_s`, the first counter-data image (its size and initialisation), `SetConfig` and
    /// `Start`, seconds.
    pub first_image_s: f64,
    /// Kernels the first counter-data image holds (later images hold twice as many as the one
    /// before, up to the run spec's `ranges_per_image`).
    pub first_image_ranges: usize,
    /// Time inside the profiled launch calls, from their entry (after the image bookkeeping) to
    /// their return, seconds: the kernels' replay passes, CUPTI's save and restore of device
    /// memory included, when CUPTI replays inside the launch call.
    pub replay_s: f64,
    /// The longest of those launch calls, seconds.
    pub replay_max_s: f64,
    /// Switching full counter-data images while the program runs (`Stop`, decode, evaluation,
    /// new image, `SetConfig`, `Start`), seconds.
    pub restart_s: f64,
    /// `Stop` and `DecodeData` of every image (while running and at exit), seconds.
    pub decode_s: f64,
    /// Evaluating the metrics of every range with the host API (while running and at exit), seconds.
    pub evaluate_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_status_reads_as_not_measured() {
        let t: Timeline = serde_json::from_str("{}").unwrap();
        assert_eq!(t, Timeline::default());
        let c: CounterTimes = serde_json::from_str(r#"{"launches": 3, "chip": "GH100"}"#).unwrap();
        assert_eq!(c.launches, 3);
        assert_eq!(c.passes, 0);
    }

    #[test]
    fn unix_time_is_after_2020() {
        assert!(unix_ns() > 1_577_836_800_000_000_000);
    }

    #[test]
    fn timeline_round_trips() {
        let t = Timeline {
            cuda_init_unix_ns: Some(5),
            kernels: 2,
            region_means: vec![RegionMean {
                annotation: "gemm".into(),
                runs: 30,
                mean_ns: 1.5,
            }],
            ..Default::default()
        };
        let back: Timeline = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
