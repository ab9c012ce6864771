//! Every `KPROF_*` environment variable kprof reads, in one table ([`ENV_VARS`]): overrides and
//! diagnostics for what the API's options do not reach, the overrides of the options that change
//! measurements (read in `crate::overrides`), the protocol between `kprof` and the processes it
//! starts, and switches of the build and of the scripts. This module only describes them: each stays
//! read where its entry's `read_by` says. `docs/configuration.md` shows the same table, and the
//! `settings` test (`tests/all/settings.rs`) fails on a name read anywhere in the tree but missing
//! here, an entry no longer read, or a documentation table that differs; `kprof doctor` prints the
//! ones set ([`active`]).

/// One environment variable kprof reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVar {
    /// The variable's name (`KPROF_...`).
    pub name: &'static str,
    /// What happens when it is unset, in words.
    pub default: &'static str,
    /// What it changes, and the values it takes.
    pub meaning: &'static str,
    /// The crate and module, or the script, that reads it (and who sets it, when kprof does).
    pub read_by: &'static str,
}

/// Every `KPROF_*` environment variable read in `crates/*/src`, `crates/*/build.rs`,
/// `python/kprof` and `scripts/`, grouped by what reads it: library search, measurement, the
/// Nsight Compute backend, `kprof run`, the command line, the build, then scripts and tests.
pub const ENV_VARS: &[EnvVar] = &[
    // Library search (engine).
    EnvVar {
        name: "KPROF_CUPTI_PATH",
        default: "unset: a libcupti already loaded in the process, then `$CUDA_HOME`, `$CUDA_PATH`, \
                  `/usr/local/cuda`, then Python site-packages, then the dynamic loader's search",
        meaning: "The libcupti to load: a file, or a folder holding `libcupti.so*`. When set it is the only place \
                  searched (a wrong path is an error, never a silent fallback). Also the first place the offline \
                  metric lookup of `kprof metrics` (where `--cupti` wins) and of `kprof run --metrics` looks.",
        read_by: "kprof (`sys::loader`: the engine's search and `locate_cupti`), kprof-inject, kprof-cli (`metrics`, `doctor`)",
    },
    EnvVar {
        name: "KPROF_LIBCUDA_PATH",
        default: "unset: `libcuda.so.1`, then `libcuda.so`, through the dynamic loader's search",
        meaning: "The libcuda to load: a file, or the folder holding it. When set it is the only place searched.",
        read_by: "kprof (`sys::loader`), so every front end and `kprof doctor`",
    },
    EnvVar {
        name: "KPROF_NVML_PATH",
        default: "unset: `libnvidia-ml.so.1`, then `libnvidia-ml.so`, through the dynamic loader's search",
        meaning: "The libnvidia-ml (NVML: clocks, temperature, power, energy) to load: a file, or the folder holding \
                  `libnvidia-ml.so.1`. When set it is the only place searched.",
        read_by: "kprof (`sys::loader`, `conditions::nvml`), kprof-cli (`doctor`)",
    },
    EnvVar {
        name: "KPROF_PYTHON_SITE_PACKAGES",
        default: "set by `import kprof` (when not already set) to the interpreter's site-packages folders; unset \
                  outside Python",
        meaning: "`:`-separated site-packages folders in which the libcupti search looks for pip's NVIDIA wheels \
                  (`nvidia/cu13/lib`, `nvidia/cuda_cupti/lib`), before those of `$VIRTUAL_ENV` and `$CONDA_PREFIX`.",
        read_by: "kprof (`sys::loader`); set by `python/kprof/_backend.py`",
    },
    EnvVar {
        name: "KPROF_CUPTI_WHEEL_DIR",
        default: "unset: not searched",
        meaning: "An unpacked `nvidia-cuda-cupti` wheel, searched for libcupti by the offline metric lookup \
                  (`kprof metrics`, the `--metrics` check of `kprof run` without a GPU) after `KPROF_CUPTI_PATH` and \
                  before `$CUDA_HOME` and `/usr/local/cuda`; the tests find CUPTI there too.",
        read_by: "kprof (`sys::loader::locate_cupti`, through `counters::locate_cupti`), the tests of kprof and kprof-cli; set by `scripts/test.sh`",
    },
    // Measurement (engine).
    EnvVar {
        name: "KPROF_KERNEL_TRACE",
        default: "`concurrent`",
        meaning: "Overrides the `kernel_trace` option (Python `kprof.configure(kernel_trace=...)`, Rust \
                  `TraceOptions::kernel_trace` of `Profiler::with_trace`, `kprof run --kernel-trace`), and wins over \
                  it when set: how CUPTI records kernels, `concurrent` (kernels keep their concurrency and CUDA graphs \
                  their span; CUPTI instruments every kernel) or `serial` (kernels one at a time, not instrumented; \
                  CUDA graphs untimed). Any other value is an error. Read when an activity session starts (once per \
                  process); the fingerprint's `kernel_timing` says which was used.",
        read_by: "kprof (`overrides`, when `cupti::collector` starts a session), so the in-process API and \
                  kprof-inject",
    },
    EnvVar {
        name: "KPROF_GRAPH_TRACE",
        default: "`graph` with concurrent kernel records, `nodes` with serial ones",
        meaning: "Overrides the `graph_trace` option (Python `kprof.configure(graph_trace=...)`, Rust \
                  `TraceOptions::graph_trace`, `kprof run --graph-trace`), and wins over it when set: how CUDA graph \
                  launches are timed, `graph` (one record per launch, the graph's GPU span) or `nodes` (per-node \
                  records, the launch's span merged from them; nodes run instrumented). Any other value is an error. \
                  Read when an activity session starts.",
        read_by: "kprof (`overrides`, when `cupti::collector` starts a session), so the in-process API and \
                  kprof-inject",
    },
    EnvVar {
        name: "KPROF_ATTRIBUTION",
        default: "`order`",
        meaning: "Overrides the `attribution` option (Python `kprof.configure(attribution=...)`, Rust \
                  `TraceOptions::attribution`, `kprof run --attribution`), and wins over it when set: how kernels are \
                  attributed to regions, `order` (by launch order: the innermost region open when the kernel was \
                  launched, on any thread; no launch API records) or `records` (launch API records: exact for the \
                  thread that opened the region, by launch time for other threads; 0.2-0.5 us more per launch). Any \
                  other value is an error. Read when an activity session starts.",
        read_by: "kprof (`overrides`, when `cupti::collector` starts a session), so the in-process API and \
                  kprof-inject",
    },
    EnvVar {
        name: "KPROF_PAUSE_BETWEEN_BENCHMARKS",
        default: "unset: kernels and launches stay traced from the first benchmark to the end of the process",
        meaning: "`1` switches CUPTI's kernel and launch records off after every benchmark and on before the next, \
                  so that launches outside benchmarks cost what they cost without kprof (measured: a \
                  tiny launch took 10-15 us after a benchmark vs 7.5-8.5 us before). Opt-in until checked on a GPU.",
        read_by: "kprof (`runner::gpu`)",
    },
    EnvVar {
        name: "KPROF_CUPTI_LAUNCH_RECORDS",
        default: "the driver and runtime activity kinds with every non-launch call switched off (the whole kinds \
                  before CUPTI 12.5)",
        meaning: "Diagnostics, with `attribution='records'` (with `order` no API records are traced): how the API \
                  records of kernel launches are enabled. `kind`: every driver and runtime call is recorded; `cbid`: \
                  only the launch calls (misses contexts created before the session); `off`: none (kernels of \
                  other threads then stay unattributed). Any other value gives the default.",
        read_by: "kprof (`cupti::collector`)",
    },
    EnvVar {
        name: "KPROF_RECORD_ACTIVITY",
        default: "unset: nothing recorded",
        meaning: "A file to which every raw CUPTI activity record (and each flush's region spans) is appended as JSON \
                  lines when an activity session starts, so that a GPU run can become a test fixture.",
        read_by: "kprof (`cupti::collector`); set by `gpu-checks/gpu-check.sh`",
    },
    EnvVar {
        name: "KPROF_L2_FLUSH",
        default: "`read`",
        meaning: "Overrides the `l2_flush` option (Python `l2_flush=`, Rust `BenchOptions::l2_flush`), and wins over \
                  it when set: how the L2 is emptied before cold runs and top-level regions, `read` (a kernel reads a \
                  buffer: the L2 ends clean), `discard` (then drops the buffer's lines: the L2 ends empty, sm_80 and \
                  later), both after a kernel that empties the instruction caches as ncu does, or `write` (a memset \
                  only, as Triton and NVBench: the L2 ends full of dirty lines). Any other \
                  value is an error. Read once per bench call.",
        read_by: "kprof (`overrides`, through `BenchOptions::with_env_overrides` in `runner::profiler`)",
    },
    EnvVar {
        name: "KPROF_L2_FLUSH_BYTES",
        default: "twice the L2 (256 MiB when the device does not report its L2 size)",
        meaning: "Overrides the `l2_flush_bytes` option (Python `l2_flush_bytes=`, Rust \
                  `BenchOptions::l2_flush_bytes`), and wins over it when set: the size of the flush buffer in bytes, \
                  rounded up to a MiB; at least the L2, else an error. Read once per bench call; the buffer is \
                  allocated again when a benchmark asks for another size.",
        read_by: "kprof (`overrides`, through `BenchOptions::with_env_overrides` in `runner::profiler`)",
    },
    EnvVar {
        name: "KPROF_COUNTER_PASS_RECORDS",
        default: "`off`",
        meaning: "Overrides the `counter_pass_records` option (Python `counter_pass_records=`, Rust \
                  `BenchOptions::counter_pass_records`), and wins over it when set: `on` keeps CUPTI's kernel activity \
                  records on during counter passes (they cost each kernel about 0.9 us as the counters see it; the \
                  kernels stay unattributed); `off` turns them off there. Any other value is an error. Read once per \
                  bench call.",
        read_by: "kprof (`overrides`, through `BenchOptions::with_env_overrides` in `runner::profiler`)",
    },
    EnvVar {
        name: "KPROF_ONE_PASS",
        default: "`on`",
        meaning: "Overrides the `one_pass` option (Python's `one_pass=`, Rust `BenchOptions::one_pass`), and wins over it when set: `on` \
                  lets recorded runs of eager kernels take their durations from the counter pass alone (mapped to \
                  regions through the warm-up's records); `off` gives every recorded run its timing pass too. Any \
                  other value is an error. Read once per bench call.",
        read_by: "kprof (`overrides`, through `BenchOptions::with_env_overrides` in `runner::profiler`)",
    },
    EnvVar {
        name: "KPROF_GPU_REST",
        default: "`fixed`",
        meaning: "How the run loop rests the GPU after long work (docs/timing.md): `fixed` takes every rest (10 ms \
                  of idle per 10 ms of work); `power` (not yet timed on a GPU) waives a configuration's rests once \
                  NVML's energy counter has measured its work below half the power limit (pieces under 10 ms). Any \
                  other value is an error of the bench call. Read once per process.",
        read_by: "kprof (`runner::gpu_rest`; checked in `BenchOptions::with_env_overrides`)",
    },
    EnvVar {
        name: "KPROF_CONDITIONS_POLL_MS",
        default: "20",
        meaning: "The poll interval, in milliseconds (1 to 1000; other values are ignored), of the background NVML \
                  sampler behind the run-condition columns (clocks, temperature, power, energy). \
                  `ProfilerConditions::set_poll_interval` (Rust) wins.",
        read_by: "kprof (`conditions::runtime`, `conditions::background`)",
    },
    // Nsight Compute backend.
    EnvVar {
        name: "KPROF_NCU",
        default: "unset: `ncu` on `PATH`, then `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, then the \
                  newest `/opt/nvidia/nsight-compute/<version>`",
        meaning: "The ncu executable, tried first when the Nsight Compute backend and `kprof doctor` look for ncu \
                  (when it is not executable the search goes on).",
        read_by: "kprof (`ncu::version`), kprof-cli (`doctor`)",
    },
    EnvVar {
        name: "KPROF_NCU_MODE",
        default: "`auto` (today always relaunch)",
        meaning:
            "How the Nsight Compute backend profiles when the program does not say (`ncu_options={\"mode\": ...}` \
                  in Python, `NcuOptions::mode` in Rust win): `auto`, `relaunch` or `attach` (not implemented: an \
                  error naming the fallback). Case and blanks ignored; empty counts as unset.",
        read_by: "kprof (`ncu::version`, `ncu::relaunch`), kprof-cli (`doctor`)",
    },
    EnvVar {
        name: "KPROF_NCU_CHILD",
        default: "unset: this process is not an ncu child",
        meaning: "Protocol, not for users: set by the Nsight Compute backend for the program it re-runs under ncu, to \
                  the id of the benchmark to profile there; the others return empty results in the child.",
        read_by: "kprof (`runner::ncu_child`, `ncu::relaunch`, `ncu::bench`), `python/kprof/_ncu.py`, `gpu-checks/gpu-check-ncu.py`; set by \
                  kprof (`ncu::bench`) and kprof-py (`ncu`)",
    },
    EnvVar {
        name: "KPROF_NCU_CHILD_TRACE",
        default: "unset: nothing traced",
        meaning: "Testing: a file to which an ncu child appends every NVTX range name it pushes; the child then also \
                  runs without a CUDA driver, to check the relaunch protocol without ncu or a GPU.",
        read_by: "kprof (`runner::ncu_child`)",
    },
    // `kprof run` and its injection library.
    EnvVar {
        name: "KPROF_INJECT_PATH",
        default: "unset: next to the kprof executable (or in `../lib`), then the Python package's folders, then the \
                  copy embedded in a release build",
        meaning: "The `libkprof_inject.so` that `kprof run` injects into the program; it must be a file.",
        read_by: "kprof-cli (`inject_lib`, `run`, `doctor`)",
    },
    EnvVar {
        name: "KPROF_RUN_SPEC",
        default: "unset: the injection library writes nothing",
        meaning: "Protocol of `kprof run`: what the injection library does in each process of the command, as one \
                  JSON document (`kprof::run_spec::RunSpec`, versioned): the output folder (from `--out`), the \
                  benchmark name (`--benchmark`, else the command's or script's name), the grouping (`--group-by`), \
                  the NVTX include and exclude patterns, `verbose` (`--verbose`: the library reports on stderr, \
                  lines prefixed `kprof:`) and, in the counter launch of `--metrics`, the counters (metrics, kernel \
                  replay, kernels per counter-data image). Another version or bad content is an error in the \
                  process's status file, and no sample is written.",
        read_by: "kprof-inject; set by kprof-cli (`run`)",
    },
    EnvVar {
        name: "KPROF_RUN_METRICS",
        default: "unset: a timing launch",
        meaning: "Set by `kprof run --metrics` in its counter launch, to the comma-separated counter metrics, for the \
                  profiled program: one that times itself can tell that kernel replay makes its timings meaningless. \
                  kprof does not read it (the injection library reads `KPROF_RUN_SPEC`).",
        read_by: "the profiled program (`gpu-checks/gpu-run/nvtx_ranges.cu`); set by kprof-cli (`run`)",
    },
    EnvVar {
        name: "KPROF_RUN_COUNTER_RANGES",
        default: "4096",
        meaning: "Kernels per counter-data image, at most, in the counter launch of `kprof run --metrics`, before the \
                  image is decoded and restarted (the first image holds 64, each later one twice as many; from the \
                  first CUDA graph launch on, this many); a positive number, else `kprof run` stops with an error \
                  before running the command. Passed to the injection library in `KPROF_RUN_SPEC`.",
        read_by: "kprof-cli (`run`)",
    },
    // The command line.
    EnvVar {
        name: "KPROF_STORE",
        default: "unset or empty: `kprof.db` in the current folder",
        meaning: "The results store (SQLite) used when `--db` (`kprof store`, `history`, `compare --against`), \
                  `--store` without a path (`kprof run`) or `path` (Python `save_to_store`) is not given.",
        read_by: "kprof-cli (`store_cmd` and the commands using it), `python/kprof/results.py`",
    },
    EnvVar {
        name: "KPROF_CHIP",
        default: "unset: the GPU's chip; without a GPU, `kprof metrics` uses GH100 and `kprof run --metrics` leaves \
                  the names to the counter launch",
        meaning: "The chip (e.g. `GH100`) whose metric names are listed or checked on a machine without a GPU \
                  (`kprof metrics`, where `--chip` wins; the `--metrics` check of `kprof run`).",
        read_by: "kprof-cli (`metrics`, `run`)",
    },
    EnvVar {
        name: "KPROF_NO_DEVICE",
        default: "unset: a GPU is used when `/dev/nvidia0` exists",
        meaning:
            "When set (to any value, even empty or `0`), `kprof metrics` and the `--metrics` check of `kprof run` \
                  act as on a machine without a GPU (offline libcupti search, `KPROF_CHIP`).",
        read_by: "kprof-cli (`metrics`, `run`)",
    },
    // Scale-out workers (Python).
    EnvVar {
        name: "KPROF_WORKER_BACKEND",
        default: "unset: the workers measure with the installed backend (the CUPTI engine)",
        meaning: "Testing: `module:factory`. Every scale-out worker (`devices=`, `executor=`) installs `factory()` as \
                  its measurement backend (`kprof._backend.set_backend`) before its first task, so that the tests \
                  replay GPU recordings in real worker processes without a GPU. Read by each worker from its own \
                  environment.",
        read_by: "`python/kprof/scaleout.py` (the workers); set by `tests/python/scaleout_support.py`",
    },
    // The build.
    EnvVar {
        name: "KPROF_GIT_REV",
        default: "unset: `git rev-parse --short HEAD` of the source, else `unknown`",
        meaning: "Build time: the git revision recorded in kprof's version (`0.1.0+g<rev>`) and in the fingerprint of \
                  every result, for builds outside a git checkout.",
        read_by: "kprof (`build.rs`, `conditions::fingerprint`, `VERSION`)",
    },
    EnvVar {
        name: "KPROF_EMBED_INJECT",
        default: "unset: embedded in release builds only",
        meaning: "Build time: `1` embeds `libkprof_inject.so` in the kprof executable (so `cargo install` gives a \
                  working `kprof run`), `0` does not (the Python wheel ships it as a file).",
        read_by: "kprof-cli (`build.rs`); set by `scripts/build-wheel.sh`, `scripts/build-carry.sh`",
    },
    // Scripts and tests.
    EnvVar {
        name: "KPROF_NVTX_INCLUDE",
        default: "unset: the tests unpack or download the `nvidia-nvtx` wheel themselves",
        meaning: "Testing: the `include` folder of an unpacked `nvidia-nvtx` wheel, holding the NVTX headers that the \
                  tests check kprof's bindings against.",
        read_by: "the tests of kprof (`tests/common`); set by `scripts/test.sh`",
    },
    EnvVar {
        name: "KPROF_CUDA_INCLUDE",
        default: "unset: the tests unpack or download the `nvidia-cuda-runtime` wheel themselves",
        meaning: "Testing: the `include` folder of an unpacked `nvidia-cuda-runtime` wheel, holding `cuda.h`, which \
                  the tests check kprof's hand-written driver bindings against.",
        read_by: "the tests of kprof (`tests/common`); set by `scripts/test.sh`",
    },
    EnvVar {
        name: "KPROF_BIN",
        default: "`.carry/bin`",
        meaning: "GPU check: the folder of the executables built by `scripts/build-carry.sh`.",
        read_by: "`gpu-checks/gpu-check.sh`",
    },
    EnvVar {
        name: "KPROF_MODES",
        default: "empty: no extra runs",
        meaning: "GPU check: space-separated `trace:graphs:source` triples; each runs `truth_check` once more with \
                  `KPROF_KERNEL_TRACE=trace`, `KPROF_GRAPH_TRACE=graphs` and that duration source.",
        read_by: "`gpu-checks/gpu-check-truth.sh`",
    },
    EnvVar {
        name: "KPROF_REQUIRE_CHROMIUM",
        default: "`0`: the browser check is skipped when Chromium cannot be installed",
        meaning: "`1` makes a missing Chromium a failure of the HTML report's browser check.",
        read_by: "`scripts/report-screenshot.sh`, `scripts/test-report-browser.sh`",
    },
    EnvVar {
        name: "KPROF_SCREENSHOT_SIZE",
        default: "`1400,2000`",
        meaning: "`W,H`: the window (and screenshot) size of the HTML report's browser check.",
        read_by: "`scripts/report-screenshot.sh`",
    },
];

/// The entry of `name`, if it is one of kprof's variables.
pub fn lookup(name: &str) -> Option<&'static EnvVar> {
    ENV_VARS.iter().find(|v| v.name == name)
}

/// The variables of [`ENV_VARS`] set in this process's environment (even to an empty value),
/// with their values (lossily converted to UTF-8), in the table's order.
pub fn active() -> Vec<(&'static EnvVar, String)> {
    active_in(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

/// [`active`] over any environment (`get` returns a variable's value when it is set).
fn active_in(get: impl Fn(&str) -> Option<String>) -> Vec<(&'static EnvVar, String)> {
    ENV_VARS
        .iter()
        .filter_map(|v| get(v.name).map(|value| (v, value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_lists_the_set_variables_in_table_order() {
        let env = [
            ("KPROF_STORE", "/tmp/x.db"),
            ("KPROF_CUPTI_PATH", ""),
            ("KPROF_NOT_A_SETTING", "1"),
        ];
        let get = |n: &str| env.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string());
        let got: Vec<(&str, String)> = active_in(get).into_iter().map(|(v, s)| (v.name, s)).collect();
        assert_eq!(
            got,
            vec![
                ("KPROF_CUPTI_PATH", String::new()),
                ("KPROF_STORE", "/tmp/x.db".to_string())
            ]
        );
        assert!(active_in(|_| None).is_empty());
    }

    #[test]
    fn lookup_finds_registered_names_only() {
        assert_eq!(lookup("KPROF_L2_FLUSH").map(|v| v.default), Some("`read`"));
        assert!(lookup("KPROF_NOT_A_SETTING").is_none());
    }
}
