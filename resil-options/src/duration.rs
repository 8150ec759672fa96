//! Durations as config files and attributes write them: `500ms`, `10s`,
//! `1m`, ISO-8601 `PT0.5S`, or (in files) a plain integer of milliseconds, as
//! Spring binds a `Duration`. One parser and one formatter for every reader,
//! so every rendered duration parses back to itself.

use std::fmt;
use std::time::Duration;

/// What a config file may write for a duration, for error messages.
pub const EXPECTED_DURATION: &str =
    "a duration like `10s`, `500ms`, `1m`, `PT0.5S` or an integer of milliseconds";

/// Parses a duration written the way Spring Boot accepts one:
///
/// | form | examples | meaning |
/// |---|---|---|
/// | integer + unit | `500ms`, `10s`, `1m`, `2h`, `1d`, `250us`, `10ns` | units `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`, `d`, any case |
/// | integer alone | `500` | milliseconds |
/// | ISO-8601 | `PT10S`, `PT0.5S`, `PT1M30S`, `P1DT2H` | days, hours, minutes, seconds (fractions on seconds only) |
///
/// Negative durations, fractions outside ISO seconds (`1.5s`: write `1500ms`)
/// and values that overflow [`Duration`] are errors.
///
/// ```
/// use std::time::Duration;
/// use resil_options::duration::parse_duration;
///
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
/// assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
/// assert_eq!(parse_duration("PT1M30S"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("PT0.5S"), Ok(Duration::from_millis(500)));
/// assert!(parse_duration("1.5s").is_err());
/// ```
pub fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let text = input.trim();
    let fail = |reason: String| ParseDurationError {
        input: input.to_owned(),
        reason,
    };
    if text.is_empty() {
        return Err(fail("it is empty".into()));
    }
    if text.starts_with('-') {
        return Err(fail("a duration cannot be negative".into()));
    }
    let text = text.strip_prefix('+').unwrap_or(text);
    if text.starts_with(['P', 'p']) {
        return iso8601(text).map_err(fail);
    }
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits == 0 {
        return Err(fail("it does not start with a number".into()));
    }
    let n: u64 = text[..digits]
        .parse()
        .map_err(|_| fail("the number is too large".into()))?;
    let unit = &text[digits..];
    if unit.starts_with(['.', ',']) {
        return Err(fail(
            "fractions need a smaller unit (`1500ms`) or ISO-8601 (`PT1.5S`)".into(),
        ));
    }
    let too_large = || fail("it is too large".into());
    let secs = |factor: u64| {
        n.checked_mul(factor)
            .map(Duration::from_secs)
            .ok_or_else(too_large)
    };
    match unit.to_ascii_lowercase().as_str() {
        "" | "ms" => Ok(Duration::from_millis(n)),
        "ns" => Ok(Duration::from_nanos(n)),
        "us" | "µs" => Ok(Duration::from_micros(n)),
        "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "d" => secs(86_400),
        _ => Err(fail(format!(
            "unknown unit `{unit}` (units: ns, us, ms, s, m, h, d)"
        ))),
    }
}

/// ISO-8601 `PnDTnHnMn.nS`, as Java's `Duration.parse` reads it (no years or
/// months, fractions on seconds only).
fn iso8601(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not an ISO-8601 duration like `PT10S` or `PT1M30S`");
    let upper = text.to_ascii_uppercase();
    let rest = &upper[1..];
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) => {
            if time.is_empty() {
                return Err(bad());
            }
            (date, Some(time))
        }
        None => (rest, None),
    };
    let mut total = Duration::ZERO;
    let add = |total: Duration, part: Duration| total.checked_add(part).ok_or_else(bad);
    if !date.is_empty() {
        let days = date.strip_suffix('D').ok_or_else(bad)?;
        let days: u64 = parse_digits(days).ok_or_else(bad)?;
        let secs = days.checked_mul(86_400).ok_or_else(bad)?;
        total = add(total, Duration::from_secs(secs))?;
    }
    let Some(mut time) = time else {
        return if date.is_empty() {
            Err(bad())
        } else {
            Ok(total)
        };
    };
    // Units must come in this order, each at most once.
    let mut units: &[(char, u64)] = &[('H', 3600), ('M', 60), ('S', 1)];
    while !time.is_empty() {
        let end = time
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(bad)?;
        let (number, unit) = (&time[..end], time[end..].chars().next().ok_or_else(bad)?);
        let at = units.iter().position(|(u, _)| *u == unit).ok_or_else(bad)?;
        let factor = units[at].1;
        units = &units[at + 1..];
        let part = if unit == 'S' {
            seconds_with_fraction(number).ok_or_else(bad)?
        } else {
            let n = parse_digits(number).ok_or_else(bad)?;
            Duration::from_secs(n.checked_mul(factor).ok_or_else(bad)?)
        };
        total = add(total, part)?;
        time = &time[end + 1..];
    }
    Ok(total)
}

fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn seconds_with_fraction(s: &str) -> Option<Duration> {
    let (whole, fraction) = match s.split_once(['.', ',']) {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    let secs = parse_digits(whole)?;
    let nanos = match fraction {
        None => 0,
        Some(f) if f.is_empty() || f.len() > 9 => return None,
        Some(f) => {
            let digits = parse_digits(f)?;
            u32::try_from(digits * 10u64.pow(9 - f.len() as u32)).ok()?
        }
    };
    Some(Duration::new(secs, nanos))
}

/// Writes a duration back the way a config file would: the largest unit that
/// is exact (`90s`, `500ms`, `1h`; zero is `0ms`). The snapshot, provenance
/// and the docs write durations with it.
///
/// ```
/// use std::time::Duration;
/// use resil_options::duration::{format_duration, parse_duration};
///
/// assert_eq!(format_duration(Duration::from_secs(60)), "1m");
/// assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
/// assert_eq!(parse_duration(&format_duration(Duration::from_nanos(7))), Ok(Duration::from_nanos(7)));
/// ```
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0ms".into();
    }
    const UNITS: [(u128, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (size, unit) in UNITS {
        if nanos % size == 0 {
            return format!("{}{unit}", nanos / size);
        }
    }
    unreachable!("every duration is a whole number of nanoseconds")
}

/// A duration that [`parse_duration`] could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDurationError {
    input: String,
    reason: String,
}

impl ParseDurationError {
    /// The text that was given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it is not a duration.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a duration: {} (expected {EXPECTED_DURATION})",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ParseDurationError {}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn every_simple_unit_and_a_bare_integer_of_milliseconds() {
        for (text, expected) in [
            ("10ns", Duration::from_nanos(10)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("500ms", MS(500)),
            ("500MS", MS(500)),
            ("10s", Duration::from_secs(10)),
            ("1m", Duration::from_secs(60)),
            ("2h", Duration::from_secs(7200)),
            ("1d", Duration::from_secs(86_400)),
            ("0", Duration::ZERO),
            ("800", MS(800)),
            (" 3s ", Duration::from_secs(3)),
            ("+3s", Duration::from_secs(3)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn iso_8601_with_days_hours_minutes_and_fractional_seconds() {
        for (text, expected) in [
            ("PT10S", Duration::from_secs(10)),
            ("PT0.5S", MS(500)),
            ("pt0,25s", MS(250)),
            ("PT1M30S", Duration::from_secs(90)),
            ("PT2H", Duration::from_secs(7200)),
            ("P1D", Duration::from_secs(86_400)),
            ("P1DT1H1M1.000000001S", Duration::new(90_061, 1)),
            ("PT0S", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn malformed_negative_fractional_and_overflowing_durations_are_rejected_with_a_reason() {
        for (text, reason) in [
            ("", "empty"),
            ("-1s", "negative"),
            ("1.5s", "fractions"),
            ("ten seconds", "does not start with a number"),
            ("10sec", "unknown unit `sec`"),
            ("5y", "unknown unit `y`"),
            ("99999999999999999999ms", "too large"),
            ("18446744073709551615d", "too large"),
            ("PT", "ISO-8601"),
            ("P", "ISO-8601"),
            ("PT1S1M", "ISO-8601"),
            ("PT1.5M", "ISO-8601"),
            ("P1Y", "ISO-8601"),
            ("PT0.1234567891S", "ISO-8601"),
        ] {
            let err = parse_duration(text).unwrap_err();
            assert!(err.reason().contains(reason), "{text}: {err}");
            assert_eq!(err.input(), text);
        }
        assert_eq!(
            parse_duration("1.5s").unwrap_err().to_string(),
            "`1.5s` is not a duration: fractions need a smaller unit (`1500ms`) or ISO-8601 \
             (`PT1.5S`) (expected a duration like `10s`, `500ms`, `1m`, `PT0.5S` or an integer \
             of milliseconds)"
        );
    }

    #[test]
    fn formatting_uses_the_largest_exact_unit_and_parses_back() {
        for (d, text) in [
            (Duration::ZERO, "0ms"),
            (MS(500), "500ms"),
            (Duration::from_secs(90), "90s"),
            (Duration::from_secs(60), "1m"),
            (Duration::from_secs(3600), "1h"),
            (Duration::from_nanos(1500), "1500ns"),
            (Duration::from_micros(3), "3us"),
        ] {
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }
}
