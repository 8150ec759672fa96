//! Events that are never lost where it matters (issue 27): every breaker
//! transition is in the instance's history and in the log, whatever the load,
//! and refusals cost at most one log line per instance per interval.
//!
//! Each thread runs under its own `tracing` dispatcher (a shared collector),
//! so these tests see only their own lines; the refusal interval is the
//! process-wide default (10 s), which no test of this binary changes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use resil_core::circuit_breaker::State;
use resil_core::clock::ManualClock;
use resil_registry::{Kind, Registry, RegistryEventKind};

/// One `tracing` event: its target, level, message and fields.
#[derive(Debug, Clone)]
struct Line {
    target: String,
    level: tracing::Level,
    message: String,
    fields: Vec<(String, String)>,
}

impl Line {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Collects every `tracing` event of the threads it is the default of.
#[derive(Default, Clone)]
struct Collector(Arc<Mutex<Vec<Line>>>);

impl Collector {
    fn lines(&self, target: &str) -> Vec<Line> {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .filter(|l| l.target == target)
            .cloned()
            .collect()
    }

    /// Runs `f` with this collector as the thread's dispatcher.
    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        tracing::subscriber::with_default(self.clone(), || {
            // Callsites another thread registered without a subscriber are
            // cached as "never": recompute them for this one.
            tracing::callsite::rebuild_interest_cache();
            f()
        })
    }
}

impl tracing::Subscriber for Collector {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Fields(String, Vec<(String, String)>);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                } else {
                    self.1.push((field.name().to_owned(), format!("{value:?}")));
                }
            }
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                self.1.push((field.name().to_owned(), value.to_owned()));
            }
        }
        let mut f = Fields(String::new(), Vec::new());
        event.record(&mut f);
        let meta = event.metadata();
        self.0.lock().unwrap().push(Line {
            target: meta.target().to_owned(),
            level: *meta.level(),
            message: f.0,
            fields: f.1,
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

const CYCLES: usize = 40;

#[test]
fn under_concurrent_load_every_transition_is_in_the_history_and_logged_once_in_order() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .wall_clock_origin(UNIX_EPOCH + Duration::from_millis(1_796_194_800_000))
        // Per-call events are recorded too: their ring overflows many times
        // over and must not evict a single transition.
        .record_instance_events(true)
        .event_buffer_size(4 * CYCLES)
        .build();
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.sliding_window_size(10)
                .minimum_number_of_calls(10)
                .failure_rate_threshold(50.0)
                .permitted_number_of_calls_in_half_open_state(3)
                .wait_duration_in_open_state(Duration::from_secs(1))
        })
        .unwrap();
    let cb = registry.circuit_breaker("inventory");
    let mut subscription = registry.subscribe();
    let log = Collector::default();
    let failing = AtomicBool::new(true);
    let done = AtomicBool::new(false);
    let refused_seen = std::sync::atomic::AtomicU64::new(0);

    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                log.run(|| {
                    while !done.load(Ordering::Relaxed) {
                        // Read inside the call: a probe permitted after the
                        // clock moved sees the downstream healthy.
                        let r = cb.call(|| {
                            if failing.load(Ordering::SeqCst) {
                                Err("503")
                            } else {
                                Ok(())
                            }
                        });
                        if matches!(r, Err(resil_core::Error::CallNotPermitted(_))) {
                            refused_seen.fetch_add(1, Ordering::Relaxed);
                        }
                        std::thread::yield_now();
                    }
                })
            });
        }
        log.run(|| {
            let wait_for = |state: State| {
                while cb.state() != state {
                    std::thread::yield_now();
                }
            };
            for _ in 0..CYCLES {
                failing.store(true, Ordering::SeqCst);
                wait_for(State::Open);
                // Lots of refusals while OPEN, from every thread.
                for _ in 0..1000 {
                    assert!(cb.call(|| Ok::<_, &str>(())).is_err());
                }
                failing.store(false, Ordering::SeqCst);
                clock.advance(Duration::from_millis(1001));
                wait_for(State::Closed);
            }
            done.store(true, Ordering::Relaxed);
        });
    });

    let pairs = |lines: &[Line]| -> Vec<(String, String)> {
        lines
            .iter()
            .map(|l| {
                (
                    l.field("from").unwrap().to_owned(),
                    l.field("to").unwrap().to_owned(),
                )
            })
            .collect()
    };
    let logged = log.lines("resil::circuit_breaker");
    let logged_pairs = pairs(&logged);
    let mut expected = Vec::new();
    for _ in 0..CYCLES {
        expected.push(("CLOSED".to_owned(), "OPEN".to_owned()));
        expected.push(("OPEN".to_owned(), "HALF_OPEN".to_owned()));
        expected.push(("HALF_OPEN".to_owned(), "CLOSED".to_owned()));
    }
    assert_eq!(
        logged_pairs, expected,
        "each transition logged once, in order"
    );
    for l in &logged {
        let want = if l.field("to") == Some("OPEN") {
            tracing::Level::WARN
        } else {
            tracing::Level::INFO
        };
        assert_eq!(l.level, want, "{l:?}");
        for f in [
            "name",
            "failure_rate",
            "slow_call_rate",
            "buffered_calls",
            "reason",
        ] {
            assert!(l.field(f).is_some(), "`{f}` missing in {l:?}");
        }
    }
    let opened = &logged[0];
    assert_eq!(opened.field("name"), Some("inventory"));
    assert_eq!(opened.field("buffered_calls"), Some("10"));
    assert_eq!(
        opened.field("reason"),
        Some("failure rate reached its threshold")
    );
    assert_eq!(
        opened.message,
        "circuit breaker 'inventory' CLOSED -> OPEN: failure rate reached its threshold"
    );

    let snapshot = registry.snapshot();
    let i = snapshot
        .instance(Kind::CircuitBreaker, "inventory")
        .unwrap();
    let history: Vec<(String, String)> = i
        .history
        .iter()
        .filter(|e| e.event_type == "STATE_TRANSITION")
        .map(|e| {
            (
                e.field("from").and_then(|v| v.as_str()).unwrap().to_owned(),
                e.field("to").and_then(|v| v.as_str()).unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(history, expected, "the history holds every transition");
    // Plus one FAILURE_RATE_EXCEEDED per opening: 4 notable events a cycle.
    assert_eq!(i.history.len(), 4 * CYCLES);
    assert_eq!(
        i.history[0].creation_time, "2026-12-02T07:00:00.000Z",
        "wall-clock time when it happened"
    );
    assert!(i
        .history
        .last()
        .unwrap()
        .creation_time
        .starts_with("2026-12-02T07:00:40"));
    assert!(
        i.recent_events
            .iter()
            .all(|e| e.event_type != "STATE_TRANSITION"),
        "per-call events in their own ring"
    );
    assert_eq!(i.recent_events.len(), 4 * CYCLES, "that ring is full");

    let published = subscription
        .drain()
        .into_iter()
        .filter(|e| matches!(&e.what, RegistryEventKind::Instance(r) if r.event_type == "STATE_TRANSITION"))
        .count();
    assert_eq!(
        published,
        3 * CYCLES,
        "and each was published as it happened"
    );

    // 40 s of manual time at 10 s per line: at most 5 refusal lines.
    let refused = refused_seen.load(Ordering::Relaxed) + 1000 * CYCLES as u64;
    let refusal_lines = log.lines("resil::refusals");
    assert!(
        !refusal_lines.is_empty() && refusal_lines.len() <= 5,
        "{} refusal lines for {refused} refusals: {refusal_lines:?}",
        refusal_lines.len()
    );
    let reported: u64 = refusal_lines
        .iter()
        .map(|l| l.field("refused").unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(reported <= refused);
}

#[test]
fn refusals_across_intervals_give_one_line_per_interval_with_the_right_counts() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let cb = registry.circuit_breaker("inventory");
    let bulkhead = registry.bulkhead("reports");
    let log = Collector::default();
    log.run(|| {
        cb.transition_to_forced_open().unwrap();
        let refuse = |n: usize| {
            for _ in 0..n {
                assert!(cb.call(|| Ok::<_, ()>(())).is_err());
            }
        };
        refuse(5); // t = 0: the first is reported at once
        clock.advance(Duration::from_secs(5));
        refuse(100); // t = 5 s: within the interval
        clock.advance(Duration::from_secs(5));
        refuse(1); // t = 10 s: due, with the 105 since
        clock.advance(Duration::from_secs(15));
        refuse(1); // t = 25 s: due, 1 since, 15 s after the last line
        refuse(431_073); // t = 25 s: none
        clock.advance(Duration::from_secs(10));
        refuse(1); // t = 35 s

        // A full bulkhead aggregates the same way, on its own tally.
        let _held: Vec<_> = std::iter::from_fn(|| bulkhead.try_acquire_permission().ok())
            .take(25)
            .collect();
        for _ in 0..3 {
            assert!(bulkhead.try_acquire_permission().is_err());
        }
    });
    let lines: Vec<String> = log
        .lines("resil::refusals")
        .into_iter()
        .map(|l| l.message)
        .collect();
    assert_eq!(
        lines,
        [
            "inventory: 1 call not permitted",
            "inventory: 105 calls not permitted in the last 10 s",
            "inventory: 1 call not permitted in the last 15 s",
            "inventory: 431074 calls not permitted in the last 10 s",
            "reports: 1 call rejected",
        ]
    );
}

#[test]
fn health_and_snapshot_give_one_verdict_on_an_open_and_a_forced_open_breaker() {
    let registry = Registry::new();
    let open = registry.circuit_breaker("open");
    let forced = registry.circuit_breaker("forced");
    let failing = registry.circuit_breaker("may-fail");
    registry.allow_health_indicator_to_fail::<resil_core::circuit_breaker::CircuitBreaker>(
        "may-fail", true,
    );
    open.transition_to_open().unwrap();
    failing.transition_to_open().unwrap();
    registry.force_open("forced", None, "INC-9").unwrap();
    let _ = forced;
    let health = registry.health();
    let snapshot = registry.snapshot();
    for (name, status) in [
        ("open", resil_registry::Status::Degraded),
        ("forced", resil_registry::Status::Degraded),
        ("may-fail", resil_registry::Status::Down),
    ] {
        let c = health.components.iter().find(|c| c.name == name).unwrap();
        let i = snapshot.instance(Kind::CircuitBreaker, name).unwrap();
        assert_eq!((c.status, i.health), (status, status), "{name}");
        assert_eq!(c.reason, i.health_reason, "{name}");
        assert_eq!(c.state, i.state, "{name}");
    }
}
