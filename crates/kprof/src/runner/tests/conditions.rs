//! Run conditions in the run loop: thermal guard, background sampler, info collectors,
//! environment fingerprint.

use super::*;
use crate::conditions::runtime::{BoxClock, BoxSensor, BoxSource, ConditionsProbe, ProfilerConditions};
use crate::conditions::sampler::{ConditionsSource, CONDITION_COLUMNS};
use crate::conditions::thermal::{Clock, TemperatureSensor, ThermalMode};
use crate::conditions::{CollectionScope, FnCollector};

fn column<'a>(raw: &'a RawResults, name: &str) -> &'a [ExtraValue] {
    &raw.extras
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .values
}

fn num(v: &ExtraValue) -> f64 {
    match v {
        ExtraValue::Number(x) => *x,
        other => panic!("not a number: {other:?}"),
    }
}

fn body(m: Arc<Mock>) -> impl FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    move |_c, run| {
        {
            let _a = run.region("a")?;
            m.launch("ka", 100);
        }
        let _b = run.region("b")?;
        m.launch("kb", 50);
        Ok(())
    }
}

#[test]
fn without_nvml_the_condition_columns_are_nan_with_one_warning() {
    let (mock, mut p) = mock_profiler();
    p.set_conditions(ProfilerConditions::unavailable("libnvidia-ml.so.1 not found"));
    let opts = BenchOptions {
        runs: 3,
        ..Default::default()
    };
    let raw = p.bench("g", &configs(2), &opts, body(mock.clone())).unwrap();
    for c in CONDITION_COLUMNS {
        assert_eq!(column(&raw, c).len(), raw.samples.len(), "{c}");
    }
    assert!(column(&raw, "SMClockMHz").iter().all(|v| num(v).is_nan()));
    assert!(column(&raw, "EnergyMilliJ").iter().all(|v| num(v).is_nan()));
    assert!(column(&raw, "ThermalWaitS").iter().all(|v| num(v) == 0.0));
    assert!(column(&raw, "ThrottleReasons")
        .iter()
        .all(|v| *v == ExtraValue::Missing));
    let nvml: Vec<_> = p.warnings().iter().filter(|w| w.contains("NVML")).collect();
    assert_eq!(nvml.len(), 1, "{:?}", p.warnings());
    p.bench("g2", &configs(1), &opts, body(mock.clone())).unwrap();
    assert_eq!(p.warnings().iter().filter(|w| w.contains("NVML")).count(), 1);
    // Processed: all-NaN columns stay single columns, ThrottledRuns is NaN.
    let processed = kprof_core::stats::aggregate(&raw, &Default::default());
    let row = &processed.rows[0];
    let tr = row.extras.iter().find(|(n, _)| n == "ThrottledRuns").unwrap();
    assert!(num(&tr.1).is_nan());
    // Off: no columns at all.
    let off = BenchOptions {
        conditions: false,
        ..opts
    };
    let raw = p.bench("g3", &configs(1), &off, body(mock.clone())).unwrap();
    assert!(!raw.extras.iter().any(|c| c.name == "SMClockMHz"));
}

/// Scripted headroom readings (the last one repeats) and counters of the reads. The
/// source (polled by the background sampler thread) has constant readings, except the
/// energy counter, and records the threads it is read on; `source_margin: None` makes the
/// guard read the scripted sensor directly before every run.
struct Fake {
    margins: Arc<Mutex<Vec<f64>>>,
    margin_reads: Arc<AtomicU64>,
    energy: Arc<AtomicU64>,
    source_margin: Option<f64>,
    source_threads: Arc<Mutex<Vec<std::thread::ThreadId>>>,
}

impl Fake {
    /// Headroom `margins` (the last one repeats), counted in `margin_reads`; the source's margin
    /// `source_margin` (None: the guard reads the sensor before every run); an energy counter
    /// from 1000 mJ; the threads the source is read on into `source_threads`.
    fn new(
        margins: Vec<f64>,
        margin_reads: Arc<AtomicU64>,
        source_margin: Option<f64>,
        source_threads: Arc<Mutex<Vec<std::thread::ThreadId>>>,
    ) -> Fake {
        Fake {
            margins: Arc::new(Mutex::new(margins)),
            margin_reads,
            energy: Arc::new(AtomicU64::new(1000)),
            source_margin,
            source_threads,
        }
    }
}

struct Sensor(Arc<Mutex<Vec<f64>>>, Arc<AtomicU64>);
impl TemperatureSensor for Sensor {
    fn margin_c(&mut self) -> Option<f64> {
        self.1.fetch_add(1, Ordering::SeqCst);
        let mut m = self.0.lock().unwrap();
        Some(if m.len() > 1 { m.remove(0) } else { m[0] })
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(60.0)
    }
}

struct Source(Arc<AtomicU64>, Option<f64>, Arc<Mutex<Vec<std::thread::ThreadId>>>);
impl ConditionsSource for Source {
    fn sm_clock_mhz(&mut self) -> Option<f64> {
        self.2.lock().unwrap().push(std::thread::current().id());
        // Below 90% of 1980 MHz: every run is throttled.
        Some(1500.0)
    }
    fn margin_c(&mut self) -> Option<f64> {
        self.2.lock().unwrap().push(std::thread::current().id());
        self.1
    }
    fn mem_clock_mhz(&mut self) -> Option<f64> {
        Some(3201.0)
    }
    fn max_sm_clock_mhz(&mut self) -> Option<f64> {
        Some(1980.0)
    }
    fn throttle_reasons(&mut self) -> Option<u64> {
        Some(0)
    }
    fn temperature_c(&mut self) -> Option<f64> {
        Some(55.0)
    }
    fn power_mw(&mut self) -> Option<f64> {
        Some(300_000.0)
    }
    fn total_energy_mj(&mut self) -> Option<u64> {
        Some(self.0.fetch_add(250, Ordering::SeqCst))
    }
}

struct FakeClock(Duration);
impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0
    }
    fn sleep(&mut self, d: Duration) {
        self.0 += d;
    }
}

impl ConditionsProbe for Fake {
    fn sensor(&mut self) -> Option<BoxSensor> {
        Some(Box::new(Sensor(self.margins.clone(), self.margin_reads.clone())))
    }
    fn source(&mut self) -> Option<BoxSource> {
        Some(Box::new(Source(
            self.energy.clone(),
            self.source_margin,
            self.source_threads.clone(),
        )))
    }
    fn clock(&mut self) -> BoxClock {
        Box::new(FakeClock(Duration::ZERO))
    }
}

/// `body` with 2 ms of host time per run, so that the 1 ms sampler polls inside runs.
fn slow_body(m: Arc<Mock>) -> impl FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut inner = body(m);
    move |c, run| {
        std::thread::sleep(Duration::from_millis(2));
        inner(c, run)
    }
}

/// [`slow_body`] that notes 1 ms of GPU idle time inside its fourth call: with one warm-up run,
/// recorded run 2 (2 ms).
fn idle_in_run_2(
    m: Arc<Mock>,
) -> impl FnMut(&Config, &mut Run) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut inner = slow_body(m);
    let mut calls = 0;
    move |c, run| {
        calls += 1;
        if calls == 4 {
            let t = std::time::Instant::now();
            crate::conditions::background::note_gpu_idle(t, t + Duration::from_millis(1));
        }
        inner(c, run)
    }
}

#[test]
fn the_run_loop_reads_no_nvml_per_run_only_the_sampler_thread_polls() {
    let (mock, mut p) = mock_profiler();
    let reads = Arc::new(AtomicU64::new(0));
    let threads: Arc<Mutex<Vec<std::thread::ThreadId>>> = Arc::default();
    p.set_conditions(ProfilerConditions::with_probe(Box::new(Fake::new(
        vec![30.0],
        reads.clone(),
        Some(30.0),
        threads.clone(),
    ))));
    p.conditions.set_poll_interval(Duration::from_millis(5));
    let opts = super::runs_and_warmup(20, 2);
    let raw = p.bench("g", &configs(3), &opts, body(mock.clone())).unwrap();
    assert_eq!(raw.samples.len(), 3 * 20 * 2);
    let me = std::thread::current().id();
    let polled = threads.lock().unwrap().clone();
    assert!(!polled.is_empty(), "the sampler thread polled");
    assert!(
        polled.iter().all(|t| *t != me),
        "a source read on the run loop's thread"
    );
    // The guard checked the sampler's margin before each of the 66 runs, never the device.
    assert_eq!(reads.load(Ordering::SeqCst), 0);
    assert!(column(&raw, "PowerW").iter().all(|v| num(v) == 300.0));
    // Between bench calls the sampler is paused; dropping the profiler stops it.
    std::thread::sleep(Duration::from_millis(10)); // a poll in progress ends
    let n = threads.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(threads.lock().unwrap().len(), n, "polls while no bench call runs");
    drop(p);
}

#[test]
fn the_thermal_guard_runs_before_every_run_and_its_wait_is_reported() {
    let (mock, mut p) = mock_profiler();
    let reads = Arc::new(AtomicU64::new(0));
    // Runs: warm-up (30), run 0 (30), run 1 (5: pause; polls 15, 15, 25: resume), run 2 (30).
    let margins = vec![30.0, 30.0, 5.0, 15.0, 15.0, 25.0, 30.0];
    p.set_conditions(ProfilerConditions::with_probe(Box::new(Fake::new(
        margins,
        reads.clone(),
        None,
        Arc::default(),
    ))));
    p.conditions.set_poll_interval(Duration::from_millis(1));
    let opts = super::runs_and_warmup(3, 1);
    let raw = p.bench("g", &configs(1), &opts, slow_body(mock.clone())).unwrap();
    // One headroom read per run (4 runs) plus 3 polls while cooling.
    assert_eq!(reads.load(Ordering::SeqCst), 4 + 3);
    let wait: Vec<(u32, f64)> = raw
        .samples
        .iter()
        .zip(column(&raw, "ThermalWaitS"))
        .map(|(s, v)| (s.run, num(v)))
        .collect();
    for (run, w) in wait {
        assert_eq!(w, if run == 1 { 1.5 } else { 0.0 }, "run {run}");
    }
    assert_warned(&p, "waited 1.5 s");
    // The background sampler: readings of the samples around each run (their number
    // depends on timing; the values of this fake do not, except the energy).
    assert!(column(&raw, "PowerW").iter().all(|v| num(v) == 300.0));
    assert!(column(&raw, "EnergyMilliJ").iter().all(|v| {
        let e = num(v);
        e.is_nan() || e >= 0.0
    }));
    let throttled: Vec<f64> = column(&raw, "Throttled").iter().map(num).collect();
    assert_eq!(throttled, vec![1.0; 6]);
    let processed = kprof_core::stats::aggregate(&raw, &Default::default());
    for row in &processed.rows {
        let get = |n: &str| row.extras.iter().find(|(x, _)| x == n).map(|(_, v)| num(v)).unwrap();
        assert_eq!(get("ThrottledRuns"), 3.0);
        assert_eq!(get("SMClockMHz_Min"), 1500.0);
        assert_eq!(get("SMClockMHz_Max"), 1500.0);
        assert_eq!(get("TemperatureC_Avg"), 55.0);
    }
    // Off: the sensor is never read.
    let before = reads.load(Ordering::SeqCst);
    let off = BenchOptions {
        thermal: ThermalOptions::off(),
        ..opts
    };
    p.bench("g2", &configs(1), &off, body(mock.clone())).unwrap();
    assert_eq!(reads.load(Ordering::SeqCst), before);
    assert_eq!(off.thermal.mode, ThermalMode::Off);
}

#[test]
fn runs_with_idle_gpu_time_beside_them_get_nan_energy_with_the_reason() {
    // The fake's energy counter moves at every 1 ms poll, so it resolves runs of a few ms. A run
    // with more than 5 % of its length of idle GPU time noted within an update of the counter of
    // it (the run loop's rests, runner/gpu_rest.rs, and host work) gets NaN energy, and the sweep
    // says why once. (The pace is the process's: other tests' work can make it rest beside other
    // runs too, so only the run given idle time here is checked.)
    let (mock, mut p) = mock_profiler();
    p.set_conditions(ProfilerConditions::with_probe(Box::new(Fake::new(
        vec![30.0],
        Arc::default(),
        Some(30.0),
        Arc::default(),
    ))));
    p.conditions.set_poll_interval(Duration::from_millis(1));
    let opts = super::runs_and_warmup(4, 1);
    let raw = p
        .bench("rests", &configs(1), &opts, idle_in_run_2(mock.clone()))
        .unwrap();
    let energy: Vec<f64> = column(&raw, "EnergyMilliJ").iter().map(num).collect();
    let runs: Vec<u32> = raw.samples.iter().map(|s| s.run).collect();
    let run2: Vec<f64> = energy
        .iter()
        .zip(&runs)
        .filter(|(_, r)| **r == 2)
        .map(|(e, _)| *e)
        .collect();
    assert!(
        !run2.is_empty() && run2.iter().all(|e| e.is_nan()),
        "{energy:?} {runs:?}"
    );
    assert!(
        warnings_with(&p, "run(s) have EnergyMilliJ NaN: the GPU was idle for more")
            .iter()
            .any(|w| w.starts_with("energy: ")),
        "{:?}",
        p.warnings()
    );
    // An expected NaN energy is said once per profiler: a second benchmark with the same idle time
    // adds no warning (its note goes to the debug log).
    p.bench("rests again", &configs(1), &opts, idle_in_run_2(mock.clone()))
        .unwrap();
    assert_eq!(
        warnings_with(&p, "the GPU was idle for more").len(),
        1,
        "{:?}",
        p.warnings()
    );
}

#[test]
fn collectors_are_called_at_each_scope_and_become_columns() {
    let (mock, mut p) = mock_profiler();
    let calls = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = |tag: &'static str, calls: &Arc<Mutex<Vec<String>>>| {
        let calls = calls.clone();
        move |ctx: &crate::conditions::CollectContext<'_>| {
            calls.lock().unwrap().push(tag.to_string());
            match tag {
                "once" => ExtraValue::Text("580.159.04".into()),
                "config" => ExtraValue::Number(ctx.config.and_then(|c| c.get("n")).and_then(|v| v.as_f64()).unwrap()),
                "run" => ExtraValue::Number(ctx.run.unwrap() as f64 * 10.0),
                _ => ExtraValue::Number(ctx.annotation.unwrap().len() as f64 + ctx.run.unwrap() as f64),
            }
        }
    };
    let collectors = Collectors::new(vec![
        FnCollector::new("Driver", CollectionScope::Once, log("once", &calls)).boxed(),
        FnCollector::new("N2", CollectionScope::Config, log("config", &calls)).boxed(),
        FnCollector::new("RunX", CollectionScope::Run, log("run", &calls)).boxed(),
        FnCollector::new("Ann", CollectionScope::Annotation, log("annotation", &calls)).boxed(),
        FnCollector::fallible(
            "Broken",
            CollectionScope::Run,
            |_: &crate::conditions::CollectContext<'_>| Err::<f64, _>("no sensor"),
        )
        .boxed(),
    ]);
    let opts = BenchOptions {
        runs: 3,
        warmup: 1,
        collectors: collectors.clone(),
        ..Default::default()
    };
    let raw = p.bench("g", &configs(2), &opts, body(mock.clone())).unwrap();
    let count = |t: &str| calls.lock().unwrap().iter().filter(|c| *c == t).count();
    assert_eq!(
        (count("once"), count("config"), count("run"), count("annotation")),
        (1, 2, 6, 12)
    );
    for (i, s) in raw.samples.iter().enumerate() {
        let region = &raw.series[s.series as usize].key.annotation;
        let n = raw.configs[raw.series[s.series as usize].key.config as usize]
            .get("n")
            .unwrap()
            .as_f64()
            .unwrap();
        assert_eq!(column(&raw, "Driver")[i], ExtraValue::Text("580.159.04".into()));
        assert_eq!(num(&column(&raw, "N2")[i]), n);
        assert_eq!(num(&column(&raw, "RunX")[i]), s.run as f64 * 10.0);
        assert_eq!(num(&column(&raw, "Ann")[i]), region.len() as f64 + s.run as f64);
        assert_eq!(column(&raw, "Broken")[i], ExtraValue::Missing);
    }
    assert_eq!(
        p.warnings().iter().filter(|w| w.contains("\"Broken\"")).count(),
        1,
        "{:?}",
        p.warnings()
    );
    let processed = kprof_core::stats::aggregate(&raw, &Default::default());
    let row = &processed.rows[0];
    let names: Vec<&str> = row.extras.iter().map(|(n, _)| n.as_str()).collect();
    for c in [
        "Driver", "N2_Avg", "RunX_Avg", "RunX_Std", "RunX_Min", "RunX_Max", "Ann_Avg",
    ] {
        assert!(names.contains(&c), "{c} not in {names:?}");
    }
    // The collectors are back in the options: a second call uses them again.
    assert_eq!(collectors.len(), 5);
    p.bench("h", &configs(1), &opts, body(mock.clone())).unwrap();
    assert_eq!(count("once"), 2);
    // Reserved names and parameter collisions are clear errors.
    for bad in ["AvgValue", "SMClockMHz", "n"] {
        let o = BenchOptions {
            collectors: Collectors::new(vec![FnCollector::new(
                bad,
                CollectionScope::Run,
                |_: &crate::conditions::CollectContext<'_>| 1.0,
            )
            .boxed()]),
            ..Default::default()
        };
        let e = p
            .bench("x", &configs(1), &o, body(mock.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(bad), "{e}");
    }
}

#[test]
fn the_fingerprint_is_collected_once_and_written_next_to_the_raw_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, mut p) = mock_profiler();
    assert!(p.fingerprint().is_none());
    let opts = BenchOptions {
        runs: 2,
        output_prefix: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    p.bench("g", &configs(1), &opts, body(mock.clone())).unwrap();
    let csv = dir.path().join("g-raw.csv");
    assert!(csv.exists());
    let side = dir.path().join("g-raw.env.json");
    let fp = crate::conditions::Fingerprint::from_json(&std::fs::read_to_string(&side).unwrap()).unwrap();
    assert_eq!(Some(&fp), p.fingerprint());
    assert_eq!(fp.kprof_version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(fp.thermal_mode.as_deref(), Some("auto"));
    assert!(fp.hostname.is_some());
    assert_eq!(crate::conditions::Fingerprint::read_sidecar(&csv).unwrap(), fp);
}
