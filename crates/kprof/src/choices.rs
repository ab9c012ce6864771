//! The choices of kprof's options, one enum and one parser each: [`ReplayMode`]
//! (`replay_mode`), [`CacheControl`] (`cache_control`), [`ClockControl`] (`clock_control`), and
//! the error of a value an option does not accept ([`InvalidOptionValue`]). The runner, the
//! counters, the ncu backend, the Rust CLI, the Python glue and the injection library all use
//! these (re-exported as `counters::ReplayMode` and `runner::{CacheControl, ClockControl}`). This
//! module imports no other module of the engine.

use std::fmt;

/// A value an option does not accept. Displays as
/// `replay_mode must be one of 'kernel', 'range', 'application'; got 'app'` (the wording of the
/// Python package's own checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOptionValue {
    /// The option (`replay_mode`, `cache_control`, `clock_control`).
    pub option: &'static str,
    /// The value given.
    pub value: String,
    /// The canonical values accepted (aliases are not listed).
    pub accepted: &'static [&'static str],
}

impl InvalidOptionValue {
    pub(crate) fn new(option: &'static str, value: &str, accepted: &'static [&'static str]) -> Self {
        InvalidOptionValue {
            option,
            value: value.to_string(),
            accepted,
        }
    }
}

impl fmt::Display for InvalidOptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} must be one of ", self.option)?;
        for (i, a) in self.accepted.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "'{a}'")?;
        }
        write!(f, "; got '{}'", self.value)
    }
}

impl std::error::Error for InvalidOptionValue {}

/// `impl fmt::Display` through `as_str`.
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
pub(crate) use display_as_str;

/// How ranges are formed and passes replayed: the one enum of the `replay_mode` option (Python's
/// `replay_mode`, `kprof run --replay-mode` and its run spec, ncu's `--replay-mode`), parsed
/// only by its [`FromStr`](std::str::FromStr) impl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplayMode {
    /// AutoRange + KernelReplay: one range (one value per metric) per kernel, named "0", "1", …
    Kernel,
    /// `"range"` (alias `"user"`): UserRange + UserReplay: one range per
    /// [`UserRanges::push`](crate::counters::UserRanges::push)/[`pop`](crate::counters::UserRanges::pop) region; the closure is re-run once per pass.
    /// Rates (`*.pct_of_peak_sustained_elapsed`, `*.per_second`) are over the range's whole
    /// elapsed time, idle gaps included. ncu's `--replay-mode range`.
    User,
    /// AutoRange + UserReplay: one range per kernel, named "0", "1", …, the closure re-run once
    /// per pass (nothing saved or restored).
    Application,
}

impl ReplayMode {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["kernel", "range", "application"];

    /// The option's canonical name (also ncu's spelling): `"kernel"`, `"range"` or
    /// `"application"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayMode::Kernel => "kernel",
            ReplayMode::User => "range",
            ReplayMode::Application => "application",
        }
    }

    /// CUPTI's name (`"kernel"`, `"user"`, `"application"`): the `mode=` of a saved
    /// [`Recording`](crate::counters::Recording) and the wording of counter-pass messages.
    pub fn cupti_name(self) -> &'static str {
        match self {
            ReplayMode::Kernel => "kernel",
            ReplayMode::User => "user",
            ReplayMode::Application => "application",
        }
    }

    /// Whether every kernel is its own range (kernel and application replay).
    pub fn per_kernel(self) -> bool {
        self != ReplayMode::User
    }
}

impl std::str::FromStr for ReplayMode {
    type Err = InvalidOptionValue;

    /// Parses `"kernel"`, `"range"` (or its alias `"user"`), `"application"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "kernel" => Ok(ReplayMode::Kernel),
            "range" | "user" => Ok(ReplayMode::User),
            "application" => Ok(ReplayMode::Application),
            _ => Err(InvalidOptionValue::new("replay_mode", s, Self::NAMES)),
        }
    }
}

display_as_str!(ReplayMode);

/// L2 cache state at the start of every run and region: the one enum of the `cache_control`
/// option (Python's `cache_control`, ncu's `--cache-control`), parsed only by its
/// [`FromStr`](std::str::FromStr) impl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheControl {
    /// Cold cache (the default, as in Nsight Compute): before every run and before every
    /// top-level region, outside the timed regions, the L2 is emptied (a buffer of twice its size
    /// is read through it, see `KPROF_L2_FLUSH`), so each region starts cold and clean whatever
    /// ran before it. Kernels *inside* one region share the L2 (ncu flushes before each kernel).
    #[default]
    All,
    /// Warm cache: nothing is done between runs.
    None,
}

/// GPU clock control: the one enum of the `clock_control` option (Python's `clock_control`,
/// ncu's `--clock-control`), parsed only by its [`FromStr`](std::str::FromStr) impl. kprof
/// defaults to `none` (unlike ncu 2025.3.1, which defaults to base).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClockControl {
    /// Leave the clocks as they are (the only choice in the CUPTI activity backend).
    #[default]
    None,
    /// Lock clocks to base: only the ncu backend can do that; asking for it here is an error.
    Base,
}

impl CacheControl {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["all", "none"];

    /// The option's canonical name (also ncu's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheControl::All => "all",
            CacheControl::None => "none",
        }
    }
}

impl std::str::FromStr for CacheControl {
    type Err = InvalidOptionValue;

    /// Parses `"all"` or `"none"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all" => Ok(CacheControl::All),
            "none" => Ok(CacheControl::None),
            _ => Err(InvalidOptionValue::new("cache_control", s, Self::NAMES)),
        }
    }
}

impl ClockControl {
    /// The canonical names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["none", "base"];

    /// The option's canonical name (also ncu's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            ClockControl::None => "none",
            ClockControl::Base => "base",
        }
    }
}

impl std::str::FromStr for ClockControl {
    type Err = InvalidOptionValue;

    /// Parses `"none"` or `"base"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(ClockControl::None),
            "base" => Ok(ClockControl::Base),
            _ => Err(InvalidOptionValue::new("clock_control", s, Self::NAMES)),
        }
    }
}

display_as_str!(CacheControl, ClockControl);

#[cfg(test)]
mod tests {
    use super::{CacheControl, ClockControl, ReplayMode};

    #[test]
    fn every_option_round_trips_and_names_bad_values() {
        for m in [ReplayMode::Kernel, ReplayMode::User, ReplayMode::Application] {
            assert_eq!(m.as_str().parse::<ReplayMode>(), Ok(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        assert_eq!("user".parse::<ReplayMode>(), Ok(ReplayMode::User));
        assert_eq!("range".parse::<ReplayMode>(), Ok(ReplayMode::User));
        for c in [CacheControl::All, CacheControl::None] {
            assert_eq!(c.as_str().parse::<CacheControl>(), Ok(c));
        }
        for c in [ClockControl::None, ClockControl::Base] {
            assert_eq!(c.as_str().parse::<ClockControl>(), Ok(c));
        }
        let e = |r: Result<(), super::InvalidOptionValue>| r.unwrap_err().to_string();
        assert_eq!(
            e("app".parse::<ReplayMode>().map(|_| ())),
            "replay_mode must be one of 'kernel', 'range', 'application'; got 'app'"
        );
        assert_eq!(
            e("some".parse::<CacheControl>().map(|_| ())),
            "cache_control must be one of 'all', 'none'; got 'some'"
        );
        assert_eq!(
            e("fast".parse::<ClockControl>().map(|_| ())),
            "clock_control must be one of 'none', 'base'; got 'fast'"
        );
    }
}
