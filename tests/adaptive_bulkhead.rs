//! The adaptive bulkhead through the facade: the limit follows a downstream
//! whose capacity changes (a simulation on the manual clock, against a fixed
//! bulkhead), stays within its bounds, and every slot comes back whatever
//! happens to the call (refusal, cancellation, panic, timeout, many threads).
//!
//! Run with `--nocapture` to see the simulation's figures.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use resil::bulkhead::{
    AdaptiveBulkhead, AdaptiveBulkheadConfig, AdaptiveBulkheadEventKind, Bulkhead, BulkheadConfig,
};
use resil::clock::{Clock, ManualClock};
use resil::error::Timeout;
use resil::{deadline, Error, ErrorKind};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Windows of 1 ms and 1 call: the limit is updated at (almost) every call,
/// so the tests below can follow Vegas step by step.
fn step_by_step() -> resil::bulkhead::AdaptiveBulkheadConfigBuilder {
    AdaptiveBulkheadConfig::builder()
        .min_window_time(ms(1))
        .max_window_time(ms(1))
        .window_size(1)
        .min_rtt_threshold(Duration::ZERO)
}

fn adaptive(clock: &ManualClock, initial: u32, min: u32, max: u32) -> AdaptiveBulkhead {
    AdaptiveBulkhead::with_clock(
        "inventory",
        step_by_step()
            .initial_limit(initial)
            .min_limit(min)
            .max_limit(max)
            // No probe of the no-load latency within these short tests.
            .probe_multiplier(1000)
            .build()
            .unwrap(),
        clock.clone(),
    )
}

// ---------------------------------------------------------------------------
// The simulation.
// ---------------------------------------------------------------------------

/// Each request needs this much of one server's time downstream.
const SERVICE_MS: u64 = 10;
/// Requests arriving per millisecond (open loop): 6000/s, more than any
/// capacity below serves, so the limit in front is always what binds.
const ARRIVALS_PER_MS: u32 = 6;
/// The downstream's servers over time: (from ms, servers).
const PHASES: [(u64, u32); 3] = [(0, 20), (PHASE_MS, 5), (2 * PHASE_MS, 40)];
const PHASE_MS: u64 = 10_000;
const END_MS: u64 = 3 * PHASE_MS;
/// The adaptive bulkhead's shortest sample window (its longest is the
/// default 1 s).
const WINDOW_MS: u64 = 100;
/// The first part of each phase, where the limit is still moving, is left out
/// of the "settled" figures (it is in the whole-phase ones).
const SETTLE_MS: u64 = 3000;

fn capacity_at(t: u64) -> u32 {
    PHASES.iter().rev().find(|(from, _)| t >= *from).unwrap().1
}

fn phase_of(t: u64) -> usize {
    PHASES.iter().rposition(|(from, _)| t >= *from).unwrap()
}

/// What one run measured, per phase.
#[derive(Debug, Default, Clone)]
struct Phase {
    /// Latency (admission to answer, ms) of every call answered in the phase.
    latencies: Vec<u64>,
    /// The same, for calls answered after the phase's first `SETTLE_MS`.
    settled: Vec<u64>,
    refused: u64,
    limit_at_end: u32,
    /// The limit sampled each millisecond after settling.
    limits: Vec<u32>,
}

fn p99(values: &[u64]) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    v[(v.len() * 99).div_ceil(100) - 1]
}

/// A downstream with `capacity_at(t)` servers and a FIFO queue in front of
/// them, fed through a limiter: `acquire` admits or refuses, `finish`
/// returns a permit once its request was answered (with the clock at the
/// answer's time), `limit` reads the limiter's limit.
fn simulate<P>(
    clock: &ManualClock,
    acquire: impl Fn() -> Option<P>,
    finish: impl Fn(P),
    limit: impl Fn() -> u32,
) -> Vec<Phase> {
    struct Request<P> {
        admitted: u64,
        permit: P,
    }
    let mut phases = vec![Phase::default(); PHASES.len()];
    let mut queue: VecDeque<Request<P>> = VecDeque::new();
    // Requests in service, with the time their service ends.
    let mut serving: Vec<(u64, Request<P>)> = Vec::new();
    for t in 0..END_MS {
        clock.set(ms(t));
        let phase = phase_of(t);
        let settled = t - PHASES[phase].0 >= SETTLE_MS;
        // Answers due now leave the downstream (in the order they started).
        let mut i = 0;
        while i < serving.len() {
            if serving[i].0 <= t {
                let (_, req) = serving.remove(i);
                let latency = t - req.admitted;
                phases[phase].latencies.push(latency);
                if settled {
                    phases[phase].settled.push(latency);
                }
                finish(req.permit);
            } else {
                i += 1;
            }
        }
        // New arrivals, admitted or refused by the limiter.
        for _ in 0..ARRIVALS_PER_MS {
            match acquire() {
                Some(permit) => queue.push_back(Request {
                    admitted: t,
                    permit,
                }),
                None => phases[phase].refused += 1,
            }
        }
        // Free servers take the queue's head (a server that went away
        // finishes its request first, then is gone).
        while serving.len() < capacity_at(t) as usize {
            let Some(req) = queue.pop_front() else { break };
            serving.push((t + SERVICE_MS, req));
        }
        if settled {
            phases[phase].limits.push(limit());
        }
        phases[phase].limit_at_end = limit();
    }
    phases
}

#[test]
fn the_adaptive_limit_follows_the_downstream_capacity_and_bounds_p99_where_a_fixed_one_does_not() {
    let clock = ManualClock::new();
    let adaptive = AdaptiveBulkhead::with_clock(
        "inventory",
        AdaptiveBulkheadConfig::builder()
            .min_window_time(ms(WINDOW_MS))
            .build()
            .unwrap(),
        clock.clone(),
    );
    let seen = simulate(
        &clock,
        || adaptive.try_acquire_permission().ok(),
        |p| p.record_success(),
        || adaptive.limit(),
    );

    // A fixed bulkhead sized for the best phase (40 servers) plus headroom,
    // as a capacity plan from Little's law would size it.
    let fixed_clock = ManualClock::new();
    let fixed = Bulkhead::with_clock(
        "inventory-fixed",
        BulkheadConfig::builder()
            .max_concurrent_calls(50)
            .build()
            .unwrap(),
        fixed_clock.clone(),
    );
    let fixed_seen = simulate(
        &fixed_clock,
        || fixed.try_acquire_permission().ok(),
        drop,
        || 50,
    );

    println!(
        "downstream: {SERVICE_MS} ms per request per server, {ARRIVALS_PER_MS} arrivals/ms; \
         p99 in ms over the phase (after its first {SETTLE_MS} ms)"
    );
    println!(
        "{:>9} | {:>22} {:>12} {:>9} | {:>12} {:>9}",
        "servers", "adaptive limit min-max", "p99", "answered", "fixed(50) p99", "answered"
    );
    for (i, (a, f)) in seen.iter().zip(&fixed_seen).enumerate() {
        let servers = PHASES[i].1;
        let (lo, hi) = (
            *a.limits.iter().min().unwrap(),
            *a.limits.iter().max().unwrap(),
        );
        println!(
            "{servers:>9} | {:>15} (end {:>2}) {:>5} ({:>4}) {:>9} | {:>5} ({:>4}) {:>9}",
            format!("{lo}-{hi}"),
            a.limit_at_end,
            p99(&a.latencies),
            p99(&a.settled),
            a.latencies.len(),
            p99(&f.latencies),
            p99(&f.settled),
            f.latencies.len(),
        );
    }

    for (i, (a, f)) in seen.iter().zip(&fixed_seen).enumerate() {
        let servers = PHASES[i].1;
        // The limit follows the capacity: once settled, it stays within the
        // servers plus Vegas' queue allowance (beta = 6 below a limit of 100,
        // and a probe's overshoot).
        let (lo, hi) = (
            *a.limits.iter().min().unwrap(),
            *a.limits.iter().max().unwrap(),
        );
        assert!(
            lo >= servers && hi <= servers + 12,
            "phase {i}: limit {lo}..={hi} for {servers} servers"
        );
        // Its settled p99 stays within about twice the service time …
        assert!(
            p99(&a.settled) <= 2 * SERVICE_MS + 5,
            "phase {i}: adaptive p99 {}",
            p99(&a.settled)
        );
        // … and it still answers (nearly) as many calls as the servers allow.
        let served_ms = PHASE_MS - SERVICE_MS;
        let max_answers = u64::from(servers) * served_ms / SERVICE_MS;
        assert!(
            a.latencies.len() as u64 * 100 >= max_answers * 90,
            "phase {i}: {} answered of at most {max_answers}",
            a.latencies.len()
        );
        let _ = f;
    }
    // The fixed bulkhead lets 50 calls queue at 5 servers: its p99 is the
    // queue's, ten service times, where the adaptive one's is not.
    let five = &fixed_seen[1];
    assert!(
        p99(&five.settled) >= 9 * SERVICE_MS,
        "fixed p99 {}",
        p99(&five.settled)
    );
    assert!(p99(&five.settled) >= 4 * p99(&seen[1].settled));
}

// ---------------------------------------------------------------------------
// Bounds, refusals, samples.
// ---------------------------------------------------------------------------

/// `n` calls at once, each taking `took`.
fn round(b: &AdaptiveBulkhead, clock: &ManualClock, n: u32, took: Duration) {
    let permits: Vec<_> = (0..n)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();
    clock.advance(took);
    for p in permits {
        p.record_success();
    }
}

#[test]
fn the_limit_grows_to_its_max_without_queueing_and_shrinks_to_its_min_with_it() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 10, 8, 30);
    for _ in 0..20 {
        let n = b.limit();
        round(&b, &clock, n, ms(10));
    }
    assert_eq!(b.limit(), 30, "no queueing: grows, capped at max_limit");
    for _ in 0..40 {
        let n = b.limit();
        round(&b, &clock, n, ms(100));
    }
    // Ten times the no-load latency reads as a queue of 90 % of the limit,
    // above Vegas' beta (6) down to a limit of 7: it shrinks to min_limit.
    assert_eq!(b.limit(), 8, "shrinks to min_limit");
    let m = b.metrics();
    assert_eq!(m.min_rtt(), ms(10));
    assert_eq!(m.limit(), 8);
    assert_eq!(m.concurrent_calls(), 0);
}

#[test]
fn a_call_beyond_the_limit_is_refused_at_once_with_the_bulkhead_name() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 2, 1, 10);
    let held = [
        b.try_acquire_permission().unwrap(),
        b.try_acquire_permission().unwrap(),
    ];
    let out = b.call(|| Ok::<_, ()>(1));
    match out {
        Err(Error::BulkheadFull(r)) => assert_eq!(r.name(), "inventory"),
        other => panic!("expected BulkheadFull, got {other:?}"),
    }
    assert_eq!(b.metrics().rejected_calls(), 1);
    drop(held);
    assert_eq!(b.available_concurrent_calls(), 2);
    assert_eq!(
        b.metrics().samples(),
        0,
        "permits merely dropped teach nothing"
    );
}

#[test]
fn low_traffic_never_grows_the_limit() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 20, 1, 1000);
    for _ in 0..100 {
        round(&b, &clock, 3, ms(10));
    }
    assert_eq!(
        b.limit(),
        20,
        "3 of 20 in flight: the limit is not what bounds the calls"
    );
}

#[test]
fn a_panicking_call_releases_its_slot_and_is_no_sample() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 5, 1, 10);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.call(|| -> Result<(), ()> { panic!("user code panics") })
    }));
    assert!(out.is_err());
    assert_eq!(b.available_concurrent_calls(), 5);
    assert_eq!(b.metrics().samples(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_releases_its_slot_and_is_no_sample() {
    let b = AdaptiveBulkhead::with_clock(
        "inventory",
        AdaptiveBulkheadConfig::default(),
        resil::clock::TokioClock::new(),
    );
    let call = b.call_async(async {
        tokio::time::sleep(ms(1000)).await;
        Ok::<_, ()>(())
    });
    assert!(tokio::time::timeout(ms(10), call).await.is_err());
    assert_eq!(b.available_concurrent_calls(), 20);
    assert_eq!(b.metrics().samples(), 0);

    let ok = b
        .call_async(async {
            tokio::time::sleep(ms(1)).await;
            Ok::<_, ()>(7)
        })
        .await;
    assert_eq!(ok, Ok(7));
    assert_eq!(b.metrics().samples(), 1);

    // A panic inside the protected future: unwound, slot back.
    let call = b.call_async(async { panic!("inside the future") as Result<(), ()> });
    assert!(std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .is_err());
    assert_eq!(b.available_concurrent_calls(), 20);
}

#[tokio::test(start_paused = true)]
async fn an_inner_timeout_is_a_drop_that_shrinks_the_limit_and_other_refusals_are_ignored() {
    let b = AdaptiveBulkhead::with_clock(
        "inventory",
        step_by_step().initial_limit(10).build().unwrap(),
        resil::clock::TokioClock::new(),
    );
    let _ = b
        .call_async_nested(async {
            tokio::time::sleep(ms(10)).await; // sets the no-load latency
            Ok::<_, Error<()>>(())
        })
        .await;
    let out = b
        .call_async_nested(async {
            tokio::time::sleep(ms(10)).await;
            Err::<(), _>(Error::<()>::Timeout(Timeout::new("per-call", ms(10))))
        })
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    let m = b.metrics();
    assert_eq!((m.dropped_calls(), m.limit()), (1, 9));
    let _ = b
        .call_async_nested(async {
            Err::<(), _>(Error::<()>::BulkheadFull(resil::error::BulkheadFull::new(
                "inner",
            )))
        })
        .await;
    assert_eq!(
        b.metrics().samples(),
        2,
        "an inner refusal carries no latency"
    );
}

#[tokio::test(start_paused = true)]
async fn a_spent_deadline_refuses_without_counting_a_rejection() {
    let b = AdaptiveBulkhead::new("inventory", AdaptiveBulkheadConfig::default());
    let out = deadline::within(ms(10), async {
        tokio::time::sleep(ms(10)).await;
        b.call_async(async { Ok::<_, ()>(()) }).await
    })
    .await;
    assert_eq!(
        out.unwrap().unwrap_err().kind(),
        ErrorKind::DeadlineExceeded
    );
    assert_eq!(b.metrics().rejected_calls(), 0);
}

#[test]
fn limit_changes_are_published_as_events() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 10, 1, 100);
    let mut events = b.subscribe();
    round(&b, &clock, 10, ms(10));
    round(&b, &clock, 10, ms(10));
    let changes: Vec<_> = events
        .drain()
        .into_iter()
        .filter_map(|e| match e.kind() {
            AdaptiveBulkheadEventKind::LimitChanged { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(changes[0], (10, 16));
    assert_eq!(changes.last().unwrap().1, b.limit());
}

/// Many threads hammering one adaptive bulkhead while its limit moves: every
/// slot comes back, refusals and answers add up, the limit stays in bounds.
#[test]
fn under_many_threads_every_slot_comes_back_and_the_counts_add_up() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 8, 2, 64);
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (b, clock, answered) = (&b, &clock, answered.clone());
            s.spawn(move || {
                for i in 0..5000u64 {
                    let out = b.call(|| {
                        if (i + t) % 7 == 0 {
                            clock.advance(Duration::from_micros(50));
                        }
                        Ok::<_, ()>(())
                    });
                    if out.is_ok() {
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let m = b.metrics();
    assert_eq!(m.concurrent_calls(), 0);
    assert_eq!(
        answered.load(std::sync::atomic::Ordering::Relaxed) + m.rejected_calls(),
        20_000
    );
    assert!((2..=64).contains(&m.limit()));
    assert_eq!(b.available_concurrent_calls(), m.limit());
    let _ = clock.now_nanos();
}

// Issue 30, item 6: the two promises of the docs, checked as a user would
// (Vegas is the anchor; see `resil_core::bulkhead::AdaptiveBulkhead`).

#[test]
fn a_queue_above_six_f_with_fewer_than_half_the_limit_in_flight_changes_nothing() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 46, 1, 100);
    round(&b, &clock, 46, ms(10)); // the no-load latency
                                   // The window that closes on the next round's first sample holds the
                                   // first round's samples too (46 in flight): it may shrink by one.
    round(&b, &clock, 20, ms(100));
    let limit = b.limit();
    assert!(limit >= 45, "{limit}");
    // 20 calls in flight (fewer than half of 45), latency 10× the no-load
    // one, for 12 s: the limit stays where it is.
    for _ in 0..120 {
        round(&b, &clock, 20, ms(100));
    }
    assert_eq!(b.limit(), limit, "app-limited: neither grows nor shrinks");
    // Half the limit in flight, the same latency: queueing shows, shrinks
    // (the window closes on the next sample).
    round(&b, &clock, limit.div_ceil(2), ms(100));
    round(&b, &clock, 1, ms(100));
    assert!(b.limit() < limit, "{} < {limit}", b.limit());
}

#[test]
fn a_timeout_in_the_first_window_shrinks_the_limit_and_sets_no_baseline() {
    let clock = ManualClock::new();
    let b = adaptive(&clock, 46, 1, 100);
    let permit = b.try_acquire_permission().unwrap();
    clock.advance(ms(800));
    permit.record_dropped();
    clock.advance(ms(1)); // the window closes
    let _ = b.try_acquire_permission().map(|p| p.record_success());
    let m = b.metrics();
    assert_eq!(m.limit(), 45, "a timeout always shrinks, by log10 = 1");
    assert_ne!(
        m.min_rtt(),
        ms(800),
        "the timeout is not the no-load latency"
    );
}
