//! A deadline on the wire: gRPC's `grpc-timeout` and a millisecond header.

use std::time::Duration;

use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};

/// gRPC's timeout header (PROTOCOL-HTTP2: `TimeoutValue TimeoutUnit`, at
/// most 8 digits, units `H`, `M`, `S`, `m`, `u`, `n`).
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The HTTP header resil reads and sends a budget in, by default: Envoy's
/// `x-envoy-expected-rq-timeout-ms`, the budget in whole milliseconds, which
/// Envoy already sets on every request it routes (so a service behind Envoy
/// gets its deadline with no change), and which any client can send.
pub const DEFAULT_TIMEOUT_HEADER: HeaderName =
    HeaderName::from_static("x-envoy-expected-rq-timeout-ms");

/// A `grpc-timeout` value: `None` for anything the gRPC spec does not allow
/// (empty, more than 8 digits, an unknown unit).
pub fn parse_grpc_timeout(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// `budget` as a `grpc-timeout` value: the finest unit whose count fits in
/// 8 digits, rounded down (a callee must never see more than is left).
pub fn grpc_timeout_value(budget: Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let nanos = budget.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let (count, unit) = units
        .into_iter()
        .map(|(per, unit)| (nanos / per, unit))
        .find(|(count, _)| *count <= MAX)
        .unwrap_or((MAX, 'H'));
    HeaderValue::from_str(&format!("{count}{unit}")).unwrap_or(HeaderValue::from_static("0n"))
}

/// A millisecond header's value: digits only (a fraction, a sign or a unit
/// is not a budget).
pub fn parse_millis(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().map(Duration::from_millis)
}

/// `budget` in whole milliseconds, rounded down.
pub fn millis_value(budget: Duration) -> HeaderValue {
    HeaderValue::from(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX))
}

/// The budget a request's headers give: the shorter of `grpc-timeout` and
/// `header` when both are there; a value that does not parse is no budget.
pub fn budget_of(headers: &HeaderMap, header: &HeaderName) -> Option<Duration> {
    let grpc = headers.get(GRPC_TIMEOUT).and_then(parse_grpc_timeout);
    let http = headers.get(header).and_then(parse_millis);
    match (grpc, http) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether a request is gRPC (`content-type: application/grpc…`): its
/// budget goes out as `grpc-timeout`.
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &'static str) -> HeaderValue {
        HeaderValue::from_static(s)
    }

    #[test]
    fn grpc_timeouts_parse_in_every_unit_and_refuse_what_the_spec_refuses() {
        assert_eq!(
            parse_grpc_timeout(&v("2H")),
            Some(Duration::from_secs(7200))
        );
        assert_eq!(parse_grpc_timeout(&v("3M")), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout(&v("1S")), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_grpc_timeout(&v("250m")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_grpc_timeout(&v("7u")), Some(Duration::from_micros(7)));
        assert_eq!(
            parse_grpc_timeout(&v("99999999n")),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in ["", "m", "100", "123456789m", "1.5S", "-1S", "10s", "1 S"] {
            assert_eq!(
                parse_grpc_timeout(&HeaderValue::from_str(bad).unwrap()),
                None,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_budget_goes_out_in_the_finest_unit_that_fits_rounded_down() {
        assert_eq!(grpc_timeout_value(Duration::from_nanos(1500)), "1500n");
        assert_eq!(grpc_timeout_value(Duration::from_millis(980)), "980000u");
        assert_eq!(grpc_timeout_value(Duration::from_secs(500)), "500000m");
        assert_eq!(
            grpc_timeout_value(Duration::from_secs(86_400 * 400)),
            "34560000S"
        );
        assert_eq!(
            grpc_timeout_value(Duration::from_secs(86_400 * 4000)),
            "5760000M"
        );
        // More than 8 digits of hours: the largest value the header holds.
        assert_eq!(grpc_timeout_value(Duration::MAX), "99999999H");
        for d in [
            Duration::from_nanos(1),
            Duration::from_millis(1234),
            Duration::from_secs(99_999),
        ] {
            let back = parse_grpc_timeout(&grpc_timeout_value(d)).unwrap();
            assert!(
                back <= d && d - back < d / 1000 + Duration::from_nanos(1),
                "{d:?} → {back:?}"
            );
        }
    }

    #[test]
    fn the_millisecond_header_takes_digits_only_and_the_shorter_budget_wins() {
        assert_eq!(parse_millis(&v("1500")), Some(Duration::from_millis(1500)));
        assert_eq!(parse_millis(&v("1.5")), None);
        assert_eq!(parse_millis(&v("-3")), None);
        assert_eq!(millis_value(Duration::from_micros(980_999)), "980");
        let mut h = HeaderMap::new();
        assert_eq!(budget_of(&h, &DEFAULT_TIMEOUT_HEADER), None);
        h.insert(DEFAULT_TIMEOUT_HEADER, v("800"));
        assert_eq!(
            budget_of(&h, &DEFAULT_TIMEOUT_HEADER),
            Some(Duration::from_millis(800))
        );
        h.insert(GRPC_TIMEOUT, v("300m"));
        assert_eq!(
            budget_of(&h, &DEFAULT_TIMEOUT_HEADER),
            Some(Duration::from_millis(300))
        );
    }
}
