//! Which rests change a number: the conditions' background sampler publishes the GPU's mean power
//! over each update of NVML's energy counter (`conditions::power`); a rest owed by short pieces of
//! work that drew under [`LOW_POWER_SHARE`] of the enforced power limit is waived, since the power
//! cap cannot act there. Opt-in (`KPROF_GPU_REST=power`) until it is timed against the rests of
//! `fixed` on a GPU (`gpu-checks/rest_rule_check.py`).

use std::sync::OnceLock;
use std::time::Duration;

pub(super) use crate::conditions::power::{latest, PowerWindow};
use crate::overrides::{process_env, InvalidOverride, Lookup};

/// How the run loop rests the GPU after long work: `fixed` (the default) or `power`; read once per
/// process, checked at every bench call ([`check_env`]).
pub const GPU_REST_ENV: &str = "KPROF_GPU_REST";

/// The share of the enforced power limit under which a rest is waived.
pub const LOW_POWER_SHARE: f64 = 0.5;
/// How long after its end an energy update still speaks for the work (five polls of the sampler
/// beyond the counter's update period).
pub const POWER_FRESH: Duration = Duration::from_millis(250);

/// Whether rests follow the work alone (the default) or also the power the GPU drew.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestRule {
    /// A rest owed is waived when the latest energy update says the power was low.
    Power,
    /// Every rest owed is taken.
    #[default]
    Fixed,
}

/// The rule `KPROF_GPU_REST` names (`fixed` or `power`; unset or empty: `fixed`).
pub fn parse_rule(value: Option<&str>) -> Result<RestRule, InvalidOverride> {
    match value.map(str::trim) {
        None | Some("") | Some("fixed") => Ok(RestRule::Fixed),
        Some("power") => Ok(RestRule::Power),
        Some(other) => Err(InvalidOverride {
            var: GPU_REST_ENV,
            value: other.to_string(),
            problem: format!(
                "{GPU_REST_ENV} must be 'fixed' (every rest taken, the default) or 'power' (rests waived \
                 where the GPU drew under half its power limit)"
            ),
        }),
    }
}

/// Checks `KPROF_GPU_REST` in `env` (each bench call, so that a bad value is an error there).
pub(crate) fn check_env(env: Lookup<'_>) -> Result<(), InvalidOverride> {
    parse_rule(env(GPU_REST_ENV).as_deref()).map(|_| ())
}

/// The process's rule, read once (a bad value, already an error of the bench call, keeps every
/// rest).
pub(super) fn rule() -> RestRule {
    static RULE: OnceLock<RestRule> = OnceLock::new();
    *RULE.get_or_init(|| parse_rule(process_env(GPU_REST_ENV).as_deref()).unwrap_or(RestRule::Fixed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_is_fixed_unless_power_is_asked_and_another_value_is_an_error_naming_the_variable() {
        assert_eq!(parse_rule(None), Ok(RestRule::Fixed));
        assert_eq!(parse_rule(Some(" power ")), Ok(RestRule::Power));
        assert_eq!(parse_rule(Some("fixed")), Ok(RestRule::Fixed));
        let e = parse_rule(Some("sometimes")).unwrap_err();
        assert!(e.to_string().contains("KPROF_GPU_REST=\"sometimes\"") && e.problem.contains("'fixed'"));
        assert!(check_env(&|_| Some("fixed".into())).is_ok());
        assert!(check_env(&|_| Some("never".into())).is_err());
    }
}
