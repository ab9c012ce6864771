//! The column names of the result tables (kprof-core's `columns` module) as attributes of
//! `kprof._core`, each a tuple of str, so that the Python package has no list of its own.
//!
//! `NSIGHT_RAW_COLUMNS`, `KPROF_RAW_COLUMNS`, `RAW_COLUMNS`, `PROCESSED_KEY_COLUMNS`,
//! `NSIGHT_PROCESSED_COLUMNS`, `KPROF_PROCESSED_COLUMNS`, `PROCESSED_COLUMNS`, `BOOTSTRAP_COLUMNS`,
//! `PROCESSED_FLOAT_COLUMNS`, `PROCESSED_INT_COLUMNS`, `CONDITION_COLUMNS`, `ENGINE_INFO_COLUMNS`,
//! `KPROF_EXTRA_COLUMNS`, `NSIGHT_RESERVED_COLUMN_NAMES`, `KPROF_RESERVED_COLUMN_NAMES`,
//! `AGGREGATE_SUFFIXES`; and the single names `NORMALIZATION_VALUE_COLUMN`, `THROTTLED_COLUMN`,
//! `THROTTLED_RUNS_COLUMN`, `CONFIG_INDEX_COLUMN` as str.

use kprof_core::columns as c;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Adds the column-name attributes to `kprof._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let lists: [(&str, &[&str]); 16] = [
        ("NSIGHT_RAW_COLUMNS", &c::NSIGHT_RAW_COLUMNS),
        ("KPROF_RAW_COLUMNS", &c::KPROF_RAW_COLUMNS),
        ("RAW_COLUMNS", &c::RAW_COLUMNS),
        ("PROCESSED_KEY_COLUMNS", &c::PROCESSED_KEY_COLUMNS),
        ("NSIGHT_PROCESSED_COLUMNS", &c::NSIGHT_PROCESSED_COLUMNS),
        ("KPROF_PROCESSED_COLUMNS", &c::KPROF_PROCESSED_COLUMNS),
        ("PROCESSED_COLUMNS", &c::PROCESSED_COLUMNS),
        ("BOOTSTRAP_COLUMNS", &c::BOOTSTRAP_COLUMNS),
        ("PROCESSED_FLOAT_COLUMNS", &c::PROCESSED_FLOAT_COLUMNS),
        ("PROCESSED_INT_COLUMNS", &c::PROCESSED_INT_COLUMNS),
        ("CONDITION_COLUMNS", &c::CONDITION_COLUMNS),
        ("ENGINE_INFO_COLUMNS", &c::ENGINE_INFO_COLUMNS),
        ("KPROF_EXTRA_COLUMNS", &c::KPROF_EXTRA_COLUMNS),
        ("NSIGHT_RESERVED_COLUMN_NAMES", &c::NSIGHT_RESERVED_COLUMN_NAMES),
        ("KPROF_RESERVED_COLUMN_NAMES", &c::KPROF_RESERVED_COLUMN_NAMES),
        ("AGGREGATE_SUFFIXES", &c::AGGREGATE_SUFFIXES),
    ];
    for (name, names) in lists {
        m.add(name, PyTuple::new(m.py(), names)?)?;
    }
    m.add("NORMALIZATION_VALUE_COLUMN", c::NORMALIZATION_VALUE_COLUMN)?;
    m.add("THROTTLED_COLUMN", c::THROTTLED_COLUMN)?;
    m.add("THROTTLED_RUNS_COLUMN", c::THROTTLED_RUNS_COLUMN)?;
    m.add("CONFIG_INDEX_COLUMN", c::CONFIG_INDEX_COLUMN)?;
    Ok(())
}
