//! The error of parsing an option's string form (`replay_mode`, `cache_control`,
//! `clock_control`): each of those options is parsed by exactly one `FromStr` impl
//! ([`ReplayMode`](crate::counters::ReplayMode), [`CacheControl`](crate::runner::CacheControl),
//! [`ClockControl`](crate::runner::ClockControl)); the Rust CLI, the Python glue, the injection
//! library and the ncu argv all call it.

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

#[cfg(test)]
mod tests {
    use crate::counters::ReplayMode;
    use crate::runner::{CacheControl, ClockControl};

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
