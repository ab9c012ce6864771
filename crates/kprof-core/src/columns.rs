//! The column names of kprof's result tables, defined once: every other list of column names in
//! kprof (the CSV readers and writers, the engine's collector-name checks, the tables `kprof._core`
//! hands to Python, the Python package's constants) is one of these constants or built from them.
//! The order of the raw table is on [`RAW_COLUMNS`], that of the processed table on
//! [`PROCESSED_COLUMNS`]: nsight-python's columns in its order, then kprof's.

/// nsight-python's raw (`profiled_data`) columns, in its order.
pub const NSIGHT_RAW_COLUMNS: [&str; 9] = [
    "Annotation",
    "Value",
    "Metric",
    "Kernel",
    "GPU",
    "Host",
    "ComputeClock",
    "MemoryClock",
    "Unit",
];

/// kprof's own raw columns, written after the parameter columns.
pub const KPROF_RAW_COLUMNS: [&str; 2] = ["Benchmark", "Run"];

/// The raw columns without the parameter and extra columns: [`NSIGHT_RAW_COLUMNS`], then
/// [`KPROF_RAW_COLUMNS`]. The raw CSV writes [`NSIGHT_RAW_COLUMNS`], the extra columns, the
/// parameter columns, then [`KPROF_RAW_COLUMNS`]; the raw table of the Python backend has the
/// parameter columns between the two (after `Unit`).
pub const RAW_COLUMNS: [&str; 11] = concat(&[&NSIGHT_RAW_COLUMNS, &KPROF_RAW_COLUMNS]);

/// The processed columns before the parameter columns (the series' key besides the benchmark).
pub const PROCESSED_KEY_COLUMNS: [&str; 2] = ["Annotation", "Metric"];

/// nsight-python's processed columns between the parameter columns and the extra columns.
pub const PROCESSED_STAT_COLUMNS: [&str; 11] = [
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "NumRuns",
    "Kernel",
    "GPU",
    "Host",
    "ComputeClock",
    "MemoryClock",
    "Unit",
];

/// nsight-python's processed columns after the extra columns: the confidence interval and the
/// stability verdict.
pub const PROCESSED_QUALITY_COLUMNS: [&str; 4] = ["CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement"];

/// The processed column holding the baseline's mean of a normalised row; present only when some
/// row is normalised.
pub const NORMALIZATION_VALUE_COLUMN: &str = "NormalizationValue";

/// nsight-python's last processed columns: normalisation and the geometric mean
/// ([`NORMALIZATION_VALUE_COLUMN`] only when some row is normalised).
pub const PROCESSED_NORMALIZATION_COLUMNS: [&str; 3] = ["Normalized", NORMALIZATION_VALUE_COLUMN, "Geomean"];

/// nsight-python's processed (`processed_data`) columns in its order, without the parameter
/// and extra columns.
pub const NSIGHT_PROCESSED_COLUMNS: [&str; 20] = concat(&[
    &PROCESSED_KEY_COLUMNS,
    &PROCESSED_STAT_COLUMNS,
    &PROCESSED_QUALITY_COLUMNS,
    &PROCESSED_NORMALIZATION_COLUMNS,
]);

/// kprof's own processed columns, after nsight-python's.
pub const KPROF_PROCESSED_COLUMNS: [&str; 7] = [
    "Benchmark",
    "Median",
    "P05",
    "P95",
    "TotalRuns",
    "OutliersMild",
    "OutliersSevere",
];

/// The processed columns in order, without the parameter, extra and bootstrap columns:
/// [`NSIGHT_PROCESSED_COLUMNS`], then [`KPROF_PROCESSED_COLUMNS`]. With them (one row per
/// series): [`PROCESSED_KEY_COLUMNS`], the parameter columns, [`PROCESSED_STAT_COLUMNS`], the
/// extra columns (CSV; the Python table has them last), [`PROCESSED_QUALITY_COLUMNS`],
/// [`PROCESSED_NORMALIZATION_COLUMNS`] (`NormalizationValue` only when some row is normalised),
/// [`KPROF_PROCESSED_COLUMNS`], then [`BOOTSTRAP_COLUMNS`] (only when some row has a bootstrap
/// interval).
pub const PROCESSED_COLUMNS: [&str; 27] = concat(&[&NSIGHT_PROCESSED_COLUMNS, &KPROF_PROCESSED_COLUMNS]);

/// The bootstrap confidence intervals of the mean and the median, written after
/// [`PROCESSED_COLUMNS`] when some row has them (CSV and JSON files; floats).
pub const BOOTSTRAP_COLUMNS: [&str; 4] = [
    "BootstrapMean_Lower",
    "BootstrapMean_Upper",
    "BootstrapMedian_Lower",
    "BootstrapMedian_Upper",
];

/// The columns of [`PROCESSED_COLUMNS`] that hold floats (a missing value is NaN).
pub const PROCESSED_FLOAT_COLUMNS: [&str; 14] = [
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "ComputeClock",
    "MemoryClock",
    "CI95_Lower",
    "CI95_Upper",
    "RelativeStdDevPct",
    NORMALIZATION_VALUE_COLUMN,
    "Geomean",
    "Median",
    "P05",
    "P95",
];

/// The columns of [`PROCESSED_COLUMNS`] that hold non-negative integers (run counts).
pub const PROCESSED_INT_COLUMNS: [&str; 4] = ["NumRuns", "TotalRuns", "OutliersMild", "OutliersSevere"];

/// The per-run extra column that flags a throttled run (1 or 0; one of [`CONDITION_COLUMNS`]).
pub const THROTTLED_COLUMN: &str = "Throttled";

/// The processed column counting a series' throttled runs (added whenever the raw results have
/// a [`THROTTLED_COLUMN`]).
pub const THROTTLED_RUNS_COLUMN: &str = "ThrottledRuns";

/// The run-condition columns kprof's engine writes for every run, in order (documented in
/// `kprof::conditions::sampler`).
pub const CONDITION_COLUMNS: [&str; 8] = [
    "SMClockMHz",
    "MemClockMHz",
    "TemperatureC",
    "PowerW",
    "EnergyMilliJ",
    "ThrottleReasons",
    THROTTLED_COLUMN,
    "ThermalWaitS",
];

/// The extra columns kprof's engine writes besides [`CONDITION_COLUMNS`]: constant run
/// information, the warning of a failed run, the mangled kernel name when the `Kernel` column
/// shows it demangled ([`crate::kernels::MANGLED_KERNEL_COLUMN`]), and where a duration came from
/// (`DurationSource`: `counters`, `records`, `counters+records` or `cuda-events`, see `docs/timing.md`),
/// and, under `kprof run`, the GPU time of an NVTX range's own kernels ([`SELF_TIME_COLUMN`]) and
/// the union of its kernels' intervals ([`BUSY_TIME_COLUMN`]).
pub const ENGINE_INFO_COLUMNS: [&str; 9] = [
    "DeviceOrdinal",
    "DriverVersion",
    "CudaVersion",
    "CuptiVersion",
    "Warning",
    crate::kernels::MANGLED_KERNEL_COLUMN,
    "DurationSource",
    SELF_TIME_COLUMN,
    BUSY_TIME_COLUMN,
];

/// `kprof run`'s column of a range's self time (ns): the GPU time of the kernels whose innermost
/// range it is, where the range's value holds those of the ranges opened inside it as well.
pub const SELF_TIME_COLUMN: &str = "SelfNs";

/// `kprof run`'s column of a range's GPU busy time (ns): how long at least one of its kernels ran,
/// the union of their intervals, where the range's value sums them (kernels that overlap on two
/// streams count once here, in full each there).
pub const BUSY_TIME_COLUMN: &str = "BusyNs";

/// Every extra column kprof's engine writes: [`ENGINE_INFO_COLUMNS`], then [`CONDITION_COLUMNS`].
///
/// Reading a raw CSV without `ReadOptions::params`, these are extra columns, not parameters: the
/// raw CSVs the runner wrote on the H200
/// (`tests/fixtures/h200-engine-checks-raw-concurrent-trace/`) otherwise read back with
/// `DeviceOrdinal`, `DriverVersion`, `CudaVersion` and `CuptiVersion` as parameters, and per-run
/// columns (a `Warning` on one run, `SMClockMHz`, `PowerW`, ...) would split a series into one
/// configuration per run.
pub const KPROF_EXTRA_COLUMNS: [&str; 17] = concat(&[&ENGINE_INFO_COLUMNS, &CONDITION_COLUMNS]);

/// nsight-python's `RESERVED_COLUMN_NAMES`: its raw and processed columns
/// ([`NSIGHT_RAW_COLUMNS`], then the rest of [`NSIGHT_PROCESSED_COLUMNS`]).
pub const NSIGHT_RESERVED_COLUMN_NAMES: [&str; 21] = union(&[&NSIGHT_RAW_COLUMNS, &NSIGHT_PROCESSED_COLUMNS]);

/// The columns of kprof's result tables beyond nsight-python's ([`KPROF_RAW_COLUMNS`],
/// [`KPROF_PROCESSED_COLUMNS`] and [`BOOTSTRAP_COLUMNS`]), besides the engine's extra columns
/// ([`KPROF_EXTRA_COLUMNS`]) and [`THROTTLED_RUNS_COLUMN`].
pub const KPROF_RESERVED_COLUMN_NAMES: [&str; 12] =
    union(&[&KPROF_RAW_COLUMNS, &KPROF_PROCESSED_COLUMNS, &BOOTSTRAP_COLUMNS]);

/// The column of the Python package's raw tables (the backend contract) holding each row's
/// configuration index; never written to a file.
pub const CONFIG_INDEX_COLUMN: &str = "_config";

/// Suffixes of the columns kprof-core's aggregation makes of a numeric extra column `X`:
/// `X_Avg`, `X_Std`, `X_Min`, `X_Max`.
pub const AGGREGATE_SUFFIXES: [&str; 4] = ["_Avg", "_Std", "_Min", "_Max"];

/// `parts` one after the other; fails to compile unless they hold exactly `N` names.
const fn concat<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            assert!(n < N, "concat: more names than the array holds");
            out[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "concat: fewer names than the array holds");
    out
}

/// The names of `parts` in order, each once; fails to compile unless there are exactly `N`.
const fn union<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            let name = parts[p][i];
            let mut seen = false;
            let mut j = 0;
            while j < n {
                seen |= str_eq(out[j], name);
                j += 1;
            }
            if !seen {
                assert!(n < N, "union: more names than the array holds");
                out[n] = name;
                n += 1;
            }
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "union: fewer names than the array holds");
    out
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(names: &[&str]) -> bool {
        names.iter().enumerate().all(|(i, n)| !names[..i].contains(n))
    }

    #[test]
    fn orders_are_nsight_pythons_then_kprofs() {
        assert_eq!(
            NSIGHT_RESERVED_COLUMN_NAMES.join(","),
            "Annotation,Value,Metric,Kernel,GPU,Host,ComputeClock,MemoryClock,Unit,AvgValue,StdDev,MinValue,\
             MaxValue,NumRuns,CI95_Lower,CI95_Upper,RelativeStdDevPct,StableMeasurement,Normalized,\
             NormalizationValue,Geomean"
        );
        assert_eq!(&PROCESSED_COLUMNS[..20], &NSIGHT_PROCESSED_COLUMNS);
        assert_eq!(PROCESSED_COLUMNS[19], "Geomean");
        assert_eq!(&PROCESSED_COLUMNS[20..], &KPROF_PROCESSED_COLUMNS);
        assert_eq!(KPROF_EXTRA_COLUMNS[ENGINE_INFO_COLUMNS.len()..], CONDITION_COLUMNS);
        assert_eq!(
            KPROF_RESERVED_COLUMN_NAMES[..8],
            [
                "Benchmark",
                "Run",
                "Median",
                "P05",
                "P95",
                "TotalRuns",
                "OutliersMild",
                "OutliersSevere"
            ]
        );
    }

    #[test]
    fn lists_have_no_duplicates_and_typed_columns_are_processed_columns() {
        for list in [
            &RAW_COLUMNS[..],
            &PROCESSED_COLUMNS,
            &KPROF_EXTRA_COLUMNS,
            &NSIGHT_RESERVED_COLUMN_NAMES,
            &KPROF_RESERVED_COLUMN_NAMES,
        ] {
            assert!(unique(list), "{list:?}");
        }
        for c in PROCESSED_FLOAT_COLUMNS.iter().chain(&PROCESSED_INT_COLUMNS) {
            assert!(PROCESSED_COLUMNS.contains(c), "{c}");
        }
        assert!(PROCESSED_FLOAT_COLUMNS
            .iter()
            .all(|c| !PROCESSED_INT_COLUMNS.contains(c)));
        for c in KPROF_EXTRA_COLUMNS.iter().chain([&THROTTLED_RUNS_COLUMN]) {
            assert!(
                !NSIGHT_RESERVED_COLUMN_NAMES.contains(c) && !KPROF_RESERVED_COLUMN_NAMES.contains(c),
                "{c}"
            );
        }
    }
}
