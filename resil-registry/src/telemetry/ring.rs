//! The bounded rings of events kept per instance: its history of notable
//! events (transitions, resets, manual overrides, reloads, chaos switches)
//! and, when the registry records them, its recent per-call events. Two
//! rings, so a flood of per-call events never evicts a transition.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use resil_core::clock::{Clock, SharedClock};
use resil_core::event::Field;

/// One remembered event.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecordedEvent {
    /// When, on the registry's clock (time since its origin).
    pub at: Duration,
    /// When, on the wall clock: ISO-8601 in UTC with milliseconds
    /// (`2026-12-02T07:00:00.123Z`), as Resilience4j's actuator shows
    /// `creationTime` (see [`RegistryBuilder::wall_clock_origin`](crate::RegistryBuilder::wall_clock_origin)).
    pub creation_time: String,
    /// Who published it: `registry` (replaced, reconfigured, manual
    /// transitions, override expiry, chaos switches) or `instance` (the
    /// primitive's own events).
    pub source: &'static str,
    /// The event type: Resilience4j's name for an instance's event
    /// (`STATE_TRANSITION`, `NOT_PERMITTED`, `SUCCESS`, …), the registry's for
    /// its own (`REPLACED`, `RECONFIGURED`, `MANUAL_TRANSITION`,
    /// `OVERRIDE_EXPIRED`, `CHAOS_SWITCHED`).
    pub event_type: &'static str,
    /// What happened, in words (`circuit breaker 'inventory':
    /// STATE_TRANSITION CLOSED -> OPEN`).
    pub description: String,
    /// Its structured fields (a transition's `from` and `to`, a call's
    /// `elapsed`, a retry's `attempts`, an operator's `reason`).
    pub fields: Vec<(&'static str, FieldValue)>,
}

impl RecordedEvent {
    /// The value of field `name`.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

/// The value of one structured field of a [`RecordedEvent`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum FieldValue {
    /// A word or a text.
    Text(String),
    /// A count.
    Count(u64),
    /// A rate in percent, or a duration in seconds (by the field's name:
    /// `elapsed`, `wait` and `ttl` are durations).
    Number(f64),
}

impl FieldValue {
    /// The text, for a text field.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FieldValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<Field<'_>> for FieldValue {
    fn from(f: Field<'_>) -> Self {
        match f {
            Field::Str(s) => FieldValue::Text(s.to_owned()),
            Field::U64(n) => FieldValue::Count(n),
            Field::Percent(p) => FieldValue::Number(p),
            Field::Duration(d) => FieldValue::Number(d.as_secs_f64()),
            // `Field` is open for new value types: show them in words.
            other => FieldValue::Text(format!("{other:?}")),
        }
    }
}

/// A fixed-capacity ring: the oldest event goes when a new one arrives full.
/// Allocates nothing until the first event.
#[derive(Debug)]
pub(crate) struct Ring {
    capacity: usize,
    events: Mutex<VecDeque<RecordedEvent>>,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            capacity: capacity.max(1),
            events: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn push(&self, event: RecordedEvent) {
        let mut events = self.events.lock();
        if events.len() == self.capacity {
            events.pop_front();
        }
        events.push_back(event);
    }

    pub(crate) fn to_vec(&self) -> Vec<RecordedEvent> {
        self.events.lock().iter().cloned().collect()
    }
}

/// The registry's wall clock: the wall-clock time of its clock's reading at
/// build, advanced by its clock. A test's manual clock moves it too, so
/// timestamps are as deterministic as everything else.
#[derive(Debug, Clone)]
pub(crate) struct WallClock {
    clock: SharedClock,
    /// The clock's reading at `origin`.
    reading: u64,
    origin: SystemTime,
}

impl WallClock {
    /// `origin` is the wall-clock time of `clock`'s reading now.
    pub(crate) fn new(clock: SharedClock, origin: SystemTime) -> WallClock {
        WallClock {
            reading: clock.now_nanos(),
            clock,
            origin,
        }
    }

    /// `(the clock's reading as time since its origin, the wall-clock time)`.
    pub(crate) fn now(&self) -> (Duration, SystemTime) {
        let now = self.clock.now_nanos();
        let wall = self.origin + Duration::from_nanos(now.saturating_sub(self.reading));
        (Duration::from_nanos(now), wall)
    }

    /// An event recorded now.
    pub(crate) fn record(
        &self,
        source: &'static str,
        event_type: &'static str,
        description: String,
        fields: Vec<(&'static str, FieldValue)>,
    ) -> RecordedEvent {
        let (at, wall) = self.now();
        RecordedEvent {
            at,
            creation_time: iso8601(wall),
            source,
            event_type,
            description,
            fields,
        }
    }
}

/// `2026-12-02T07:00:00.123Z`: UTC, millisecond precision (times before
/// 1970 show as the epoch).
pub(crate) fn iso8601(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resil_core::clock::ManualClock;

    fn event(i: u64) -> RecordedEvent {
        RecordedEvent {
            at: Duration::from_secs(i),
            creation_time: String::new(),
            source: "registry",
            event_type: "REPLACED",
            description: i.to_string(),
            fields: Vec::new(),
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_events_up_to_its_capacity() {
        let ring = Ring::new(3);
        for i in 0..5 {
            ring.push(event(i));
        }
        let kept: Vec<String> = ring.to_vec().into_iter().map(|e| e.description).collect();
        assert_eq!(kept, ["2", "3", "4"]);
    }

    #[test]
    fn wall_clock_times_are_iso_8601_utc_with_milliseconds() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_194_800_123);
        assert_eq!(iso8601(t), "2026-12-02T07:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn the_wall_clock_moves_with_the_registry_clock() {
        let clock = ManualClock::new();
        let origin = UNIX_EPOCH + Duration::from_millis(1_796_194_800_000);
        let wall = WallClock::new(SharedClock::new(clock.clone()), origin);
        clock.advance(Duration::from_millis(1500));
        let e = wall.record("registry", "REPLACED", String::new(), Vec::new());
        assert_eq!(e.creation_time, "2026-12-02T07:00:01.500Z");
    }
}
