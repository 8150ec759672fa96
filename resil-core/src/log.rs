//! What the primitives write to the log, through `tracing`.
//!
//! * **Transitions**, synchronously where they happen (so the line lands in
//!   the caller's current span): a breaker opening or forced open is `WARN`,
//!   half-opening, closing or any other change of mode is `INFO`, with the
//!   fields `name`, `from`, `to`, `failure_rate`, `slow_call_rate`,
//!   `buffered_calls` and `reason` (target `resil::circuit_breaker`). The
//!   line is written while the breaker decides the transition, under its
//!   lock, so lines come in the order of the transitions: a subscriber that
//!   blocks on a write delays only the calls that need that lock (a failure
//!   while CLOSED, a probe), for the few transitions an outage makes.
//! * **Refusals**, aggregated: a breaker refusing a call, a full bulkhead, a
//!   rate limiter out of permits add at most one `INFO` line per instance per
//!   [interval](set_refusal_log_interval) (10 s by default), such as
//!   `inventory: 431074 calls not permitted in the last 10 s`, with the fields
//!   `name`, `refused` and `interval_s` (target `resil::refusals`). The first
//!   refusal after a quiet interval is reported at once (`1 call not
//!   permitted`), so an outage shows in the log when it starts; an outage
//!   therefore costs a bounded number of lines, whatever the call rate.
//!   The tally is kept on the refusal path itself (one atomic add, one clock
//!   reading, and a compare-and-swap by one thread per interval), with no
//!   background task: refusals after the last line of a quiet-ending outage
//!   show in the next line, whenever that comes, and in the metrics at once.
//!
//! Per-call events are never logged by the primitives; a registry recording
//! instance events logs them at `DEBUG`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::{Clock, SharedClock};

/// How often, at most, one instance logs its refusals unless
/// [`set_refusal_log_interval`] says otherwise: 10 seconds.
pub const DEFAULT_REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The interval every instance in the process aggregates its refusals over,
/// in nanoseconds.
static REFUSAL_LOG_INTERVAL_NANOS: AtomicU64 = AtomicU64::new(10_000_000_000);

/// Sets how often, at most, each instance logs a line about the calls it
/// refused (see the [module docs](self)); at least 1 ms. Process-wide: a
/// registry builder's `refusal_log_interval` sets it.
pub fn set_refusal_log_interval(every: Duration) {
    let nanos = crate::clock::nanos(every.max(Duration::from_millis(1)));
    REFUSAL_LOG_INTERVAL_NANOS.store(nanos, Ordering::Relaxed);
}

/// The interval set by [`set_refusal_log_interval`]
/// ([`DEFAULT_REFUSAL_LOG_INTERVAL`] unless set).
pub fn refusal_log_interval() -> Duration {
    Duration::from_nanos(REFUSAL_LOG_INTERVAL_NANOS.load(Ordering::Relaxed))
}

/// One instance's refusal tally, in one word (8 bytes in every primitive
/// that refuses): the high half is when the last line was written, in
/// milliseconds of the clock plus one (0: never), wrapping every 49 days; the
/// low half counts the refusals since (up to 4 294 967 295 within one
/// interval).
#[derive(Debug)]
pub(crate) struct RefusalLog {
    word: AtomicU64,
}

/// What a refusal's line says: how many calls were refused since the last
/// line, and how long ago that line was (`None`: the first line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) refused: u64,
    pub(crate) since: Option<Duration>,
}

const COUNT: u64 = 0xFFFF_FFFF;

/// A clock reading as the tally's stamp: milliseconds plus one, never 0.
fn stamp(now_nanos: u64) -> u32 {
    match ((now_nanos / 1_000_000) as u32).wrapping_add(1) {
        0 => 1,
        s => s,
    }
}

impl RefusalLog {
    /// An empty tally.
    pub(crate) const fn new() -> RefusalLog {
        RefusalLog {
            word: AtomicU64::new(0),
        }
    }

    /// Counts one refusal at `now` (clock nanos) and returns the line to
    /// write when one is due (the interval since the last line has passed,
    /// or there was none): one caller per interval wins it, with every
    /// refusal counted since.
    pub(crate) fn count(&self, now: u64, interval: u64) -> Option<Report> {
        let interval_ms = (interval / 1_000_000).max(1);
        let prev = self.word.fetch_add(1, Ordering::Relaxed);
        let last = (prev >> 32) as u32;
        let now = stamp(now);
        let since_ms = u64::from(now.wrapping_sub(last));
        if last != 0 && since_ms < interval_ms {
            return None;
        }
        let mut current = prev.wrapping_add(1);
        loop {
            if (current >> 32) as u32 != last {
                return None; // another refusal wrote the line
            }
            match self.word.compare_exchange_weak(
                current,
                u64::from(now) << 32,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Report {
                        refused: current & COUNT,
                        since: (last != 0).then(|| Duration::from_millis(since_ms)),
                    })
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Counts one refusal by `source` (`circuit breaker`, …) `name` and
    /// writes the aggregated line when one is due: `{name}: {n} {what} in
    /// the last {s} s`, `what` being plural (`calls not permitted`).
    #[cold]
    pub(crate) fn refused(
        &self,
        source: &'static str,
        name: &str,
        what: &str,
        clock: &SharedClock,
    ) {
        let interval = REFUSAL_LOG_INTERVAL_NANOS.load(Ordering::Relaxed);
        if let Some(report) = self.count(clock.now_nanos(), interval) {
            write(source, name, what, report);
        }
    }

    /// Refusals counted since the last line.
    #[cfg(test)]
    fn pending(&self) -> u64 {
        self.word.load(Ordering::Relaxed) & COUNT
    }
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::new()
    }
}

/// Writes one aggregated refusal line.
fn write(source: &'static str, name: &str, what: &str, report: Report) {
    let Report { refused, since } = report;
    let singular;
    let what = if refused == 1 {
        singular = what.replacen("calls", "call", 1);
        &singular
    } else {
        what
    };
    match since {
        Some(since) => {
            let seconds = since.as_secs_f64();
            tracing::info!(
                target: "resil::refusals",
                source,
                name,
                refused,
                interval_s = seconds,
                "{name}: {refused} {what} in the last {} s",
                Seconds(seconds)
            );
        }
        None => {
            tracing::info!(
                target: "resil::refusals",
                source,
                name,
                refused,
                "{name}: {refused} {what}"
            );
        }
    }
}

/// Seconds as a log line shows them: whole when whole (`10`), else with one
/// decimal (`2.5`).
struct Seconds(f64);

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.fract() == 0.0 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:.1}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn refusals_make_one_line_per_interval_and_every_refusal_is_counted_once() {
        let log = RefusalLog::new();
        let interval = 10 * S;
        let mut lines = Vec::new();
        // 1 refusal at 0 s, then 1000 a second for 35 s.
        if let Some(r) = log.count(0, interval) {
            lines.push((0, r));
        }
        for second in 0..35u64 {
            for i in 0..1000u64 {
                let now = second * S + i * (S / 1000) + 1;
                if let Some(r) = log.count(now, interval) {
                    lines.push((now / S, r));
                }
            }
        }
        let at: Vec<u64> = lines.iter().map(|(s, _)| *s).collect();
        assert_eq!(at, [0, 10, 20, 30], "one line per 10 s");
        assert_eq!(
            lines[0].1,
            Report {
                refused: 1,
                since: None
            }
        );
        assert_eq!(lines[1].1.since, Some(Duration::from_secs(10)));
        let reported: u64 = lines.iter().map(|(_, r)| r.refused).sum();
        let pending = log.pending();
        assert_eq!(reported + pending, 35_001, "nothing lost, nothing twice");
    }

    #[test]
    fn a_refusal_after_a_quiet_spell_is_reported_at_once_with_the_time_since_the_last_line() {
        let log = RefusalLog::new();
        assert!(log.count(0, 10 * S).is_some());
        assert!(log.count(S, 10 * S).is_none());
        let r = log.count(300 * S, 10 * S).expect("due");
        assert_eq!(r.refused, 2);
        assert_eq!(r.since, Some(Duration::from_secs(300)));
    }

    #[test]
    fn threads_racing_on_a_due_line_write_it_once() {
        let log = RefusalLog::new();
        let lines = AtomicU64::new(0);
        let counted = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..50_000 {
                        if let Some(r) = log.count(5 * S, 10 * S) {
                            lines.fetch_add(1, Ordering::Relaxed);
                            counted.fetch_add(r.refused, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(lines.load(Ordering::Relaxed), 1);
        let total = counted.load(Ordering::Relaxed) + log.pending();
        assert_eq!(total, 100_000);
    }

    #[test]
    fn seconds_are_shown_whole_or_with_one_decimal() {
        assert_eq!(Seconds(10.0).to_string(), "10");
        assert_eq!(Seconds(2.54).to_string(), "2.5");
    }
}
