//! Times of runs: UTC text for tables and exports, and the `--since` argument.

use crate::error::{Result, StoreError};

const MS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC) of milliseconds since the Unix epoch.
pub fn format_utc(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(MS_PER_DAY);
    let secs = unix_ms.rem_euclid(MS_PER_DAY) / 1000;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Parses `--since`: a date `YYYY-MM-DD` (midnight UTC), a time `YYYY-MM-DDTHH:MM[:SS][Z]`
/// (UTC), or an age `N` followed by `m` (minutes), `h` (hours), `d` (days) or `w` (weeks)
/// before `now_unix_ms`. Returns milliseconds since the Unix epoch.
pub fn parse_since(text: &str, now_unix_ms: i64) -> Result<i64> {
    let t = text.trim();
    let bad = || {
        StoreError::Invalid(format!(
            "--since {text:?} is not a date (2026-12-01), a UTC time (2026-12-01T08:30) or an age (12h, 7d, 2w)"
        ))
    };
    if let Some(unit) = t.chars().last().filter(|c| c.is_ascii_alphabetic() && !t.contains('-')) {
        let n: i64 = t[..t.len() - 1].trim().parse().map_err(|_| bad())?;
        let unit_ms = match unit {
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => MS_PER_DAY,
            'w' => 7 * MS_PER_DAY,
            _ => return Err(bad()),
        };
        if n < 0 {
            return Err(bad());
        }
        return Ok(now_unix_ms - n.saturating_mul(unit_ms));
    }
    let t = t.trim_end_matches('Z');
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, tm)) => (d, Some(tm)),
        None => (t, None),
    };
    let ymd: Vec<i64> = date
        .split('-')
        .map(|p| p.parse::<i64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad())?;
    let [y, m, d] = ymd[..] else { return Err(bad()) };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let mut ms = days_from_civil(y, m, d) * MS_PER_DAY;
    if let Some(tm) = time {
        let hms: Vec<i64> = tm
            .split(':')
            .map(|p| p.parse::<i64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad())?;
        let (h, mi, s) = match hms[..] {
            [h, mi] => (h, mi, 0),
            [h, mi, s] => (h, mi, s),
            _ => return Err(bad()),
        };
        if !(0..24).contains(&h) || !(0..60).contains(&mi) || !(0..61).contains(&s) {
            return Err(bad());
        }
        ms += (h * 3600 + mi * 60 + s) * 1000;
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_ages_count_back() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        // 2026-12-02T00:30:05Z, from `date -u -d 2026-12-02T00:30:05Z +%s`.
        assert_eq!(format_utc(1_796_171_405_000), "2026-12-02T00:30:05Z");
        assert_eq!(parse_since("2026-12-02T00:30:05Z", 0).unwrap(), 1_796_171_405_000);
        assert_eq!(parse_since("2026-12-02", 0).unwrap(), 1_796_169_600_000);
        assert_eq!(parse_since("2024-02-29 12:00", 0).unwrap(), 1_709_208_000_000);
        assert_eq!(parse_since("7d", 10 * MS_PER_DAY).unwrap(), 3 * MS_PER_DAY);
        assert_eq!(parse_since("90m", 100 * 60_000).unwrap(), 10 * 60_000);
        for bad in ["yesterday", "2026-13-01", "5y", "-3d", "2026-12-01T25:00"] {
            assert!(parse_since(bad, 0).is_err(), "{bad}");
        }
    }
}
