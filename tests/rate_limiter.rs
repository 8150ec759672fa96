//! The rate limiter through the facade: Resilience4j's AtomicRateLimiter
//! semantics, seed 003's `rate` experiment, reservations, deadlines,
//! cancellation, a multi-threaded stress test and a model-based property test;
//! then `drain_permissions_on_result` and the refilling token bucket
//! (`RefillRateLimiter`), with its own stress test and property test against a
//! token-bucket model.
//!
//! Sync behaviour runs on a `ManualClock` (a sync wait advances it, so waits are
//! instant and exactly observable); async behaviour runs on paused tokio time
//! with a `TokioClock`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use proptest::prelude::*;
use resil::clock::{ManualClock, TokioClock};
use resil::error::{DeadlineExceeded, RequestNotPermitted};
use resil::rate_limiter::{
    AcquireError, RateLimiter, RateLimiterConfig, RateLimiterEventKind, RefillRateLimiter,
    RefillRateLimiterConfig,
};
use resil::{deadline, Error, ErrorKind};

const SEC: Duration = Duration::from_secs(1);

fn config(limit: u32, period: Duration, timeout: Duration) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .timeout_duration(timeout)
        .build()
        .expect("a valid config")
}

fn manual(limit: u32, period: Duration, timeout: Duration) -> (RateLimiter, ManualClock) {
    let clock = ManualClock::new();
    let limiter = RateLimiter::with_clock("read", config(limit, period, timeout), clock.clone());
    (limiter, clock)
}

#[test]
fn the_defaults_are_resilience4j_defaults() {
    let limiter = RateLimiter::new("defaults", RateLimiterConfig::default());
    let config = limiter.config();
    assert_eq!(config.limit_for_period(), 50);
    assert_eq!(config.limit_refresh_period(), Duration::from_nanos(500));
    assert_eq!(config.timeout_duration(), Duration::from_secs(5));
    assert_eq!(limiter.name(), "defaults");
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 0);
}

#[test]
fn invalid_values_are_rejected_naming_the_field_at_build_and_at_run_time() {
    let err = RateLimiterConfig::builder()
        .limit_refresh_period(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "limit_refresh_period");
    let err = RateLimiterConfig::builder()
        .limit_for_period(0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "limit_for_period");

    let (limiter, _clock) = manual(2, SEC, Duration::ZERO);
    let err = limiter.change_limit_for_period(0).unwrap_err();
    assert_eq!(err.field(), "limit_for_period");
    assert_eq!(err.got(), "0");
    assert_eq!(
        limiter.config().limit_for_period(),
        2,
        "a rejected change changes nothing"
    );
}

/// Seed 003, experiment `rate`: limit 2 per 2 s, timeout 0. Two calls in one
/// period pass, the third is refused without reaching the downstream; in the
/// next period a call passes again.
#[test]
fn seed_003_rate_accepts_two_rejects_the_third_and_accepts_again_next_period() {
    let (limiter, clock) = manual(2, Duration::from_secs(2), Duration::ZERO);
    let downstream_calls = AtomicU64::new(0);
    let downstream = |value: &'static str| {
        downstream_calls.fetch_add(1, Ordering::Relaxed);
        Ok::<_, std::io::Error>(value)
    };

    let mut period_accepted = 0;
    let mut rejected = 0;
    for _ in 0..3 {
        match limiter.call(|| downstream("ok")) {
            Ok("ok") => period_accepted += 1,
            Err(Error::RequestNotPermitted(r)) => {
                assert_eq!(r.name(), "read");
                rejected += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        (
            period_accepted,
            rejected,
            downstream_calls.load(Ordering::Relaxed)
        ),
        (2, 1, 2),
        "periodAccepted=2 rejected=1 httpCalls=2"
    );

    clock.advance(Duration::from_secs(2));
    let next_period = limiter.call(|| downstream("42").map(|v| v.parse::<u32>().unwrap()));
    assert_eq!(next_period.unwrap(), 42);
    assert_eq!(
        downstream_calls.load(Ordering::Relaxed),
        3,
        "nextPeriod=42 httpCalls=3"
    );
}

#[test]
fn a_second_caller_reserves_the_next_cycle_and_waits_exactly_one_cycle() {
    let (limiter, clock) = manual(1, SEC, Duration::from_secs(3));
    limiter.acquire_permission(1).unwrap();
    assert_eq!(clock.elapsed(), Duration::ZERO, "the first permit is free");
    assert_eq!(limiter.available_permissions(), 0);

    // The second caller sleeps through the clock: the manual clock moves by
    // exactly the wait.
    limiter.acquire_permission(1).unwrap();
    assert_eq!(clock.elapsed(), SEC);

    // Reserving without waiting shows the negative count.
    assert_eq!(limiter.reserve_permission(1), Ok(SEC));
    assert_eq!(limiter.reserve_permission(1), Ok(2 * SEC));
    assert_eq!(limiter.available_permissions(), -2);
    clock.advance(SEC);
    assert_eq!(limiter.available_permissions(), -1);
    clock.advance(SEC);
    assert_eq!(limiter.available_permissions(), 0);
    clock.advance(SEC);
    assert_eq!(limiter.available_permissions(), 1);
}

#[test]
fn a_caller_whose_wait_exceeds_the_timeout_is_refused_and_consumes_nothing() {
    let (limiter, clock) = manual(1, SEC, Duration::from_millis(1500));
    clock.advance(Duration::from_millis(200));
    limiter.acquire_permission(1).unwrap();
    assert_eq!(
        limiter.reserve_permission(1),
        Ok(Duration::from_millis(800))
    );
    // The next free permit is two cycles away: 1.8 s > 1.5 s.
    let err = limiter.acquire_permission(1).unwrap_err();
    assert_eq!(
        err,
        AcquireError::NotPermitted(RequestNotPermitted::new("read"))
    );
    assert_eq!(
        limiter.available_permissions(),
        -1,
        "the refusal reserved nothing"
    );
    let err = limiter.call(|| Ok::<_, ()>(())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestNotPermitted);
    assert_eq!(limiter.available_permissions(), -1);
    assert_eq!(clock.elapsed(), Duration::from_millis(200), "nobody waited");
}

#[test]
fn a_long_idle_refills_only_up_to_the_limit() {
    let (limiter, clock) = manual(3, SEC, Duration::ZERO);
    assert!(limiter.try_acquire_permission(1));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(limiter.available_permissions(), 3);
    for _ in 0..3 {
        assert!(limiter.try_acquire_permission(1));
    }
    assert!(
        !limiter.try_acquire_permission(1),
        "unused cycles do not accumulate"
    );
}

#[test]
fn several_permits_are_taken_at_once_and_more_than_the_limit_are_refused_at_once() {
    let (limiter, clock) = manual(5, SEC, Duration::from_secs(10));
    assert!(limiter.try_acquire_permission(3));
    assert!(!limiter.try_acquire_permission(3), "try never reserves");
    assert_eq!(limiter.available_permissions(), 2);
    // 4 permits: 2 now + 2 of the next cycle, so wait for the next cycle.
    assert_eq!(limiter.reserve_permission(4), Ok(SEC));
    assert_eq!(limiter.available_permissions(), -2);

    let err = limiter.acquire_permission(6).unwrap_err();
    match &err {
        AcquireError::ExceedsLimit(e) => {
            assert_eq!(
                (e.name(), e.requested(), e.limit_for_period()),
                ("read", 6, 5)
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(limiter.available_permissions(), -2, "nothing consumed");
    assert_eq!(clock.elapsed(), Duration::ZERO);
    assert_eq!(
        Error::<()>::from(err).kind(),
        ErrorKind::RequestNotPermitted
    );
    assert!(
        limiter.acquire_permission(0).is_ok(),
        "zero permits are always granted"
    );
}

#[test]
fn a_changed_limit_applies_from_the_next_cycle_and_a_changed_timeout_at_once() {
    let (limiter, clock) = manual(2, SEC, Duration::ZERO);
    assert!(limiter.try_acquire_permission(1));
    limiter.change_limit_for_period(5).unwrap();
    assert_eq!(limiter.config().limit_for_period(), 5);
    assert_eq!(
        limiter.available_permissions(),
        1,
        "the current cycle keeps its limit"
    );
    assert!(limiter.try_acquire_permission(1));
    assert!(!limiter.try_acquire_permission(1));

    clock.advance(SEC);
    assert_eq!(limiter.available_permissions(), 5);
    limiter.change_limit_for_period(1).unwrap();
    assert_eq!(limiter.available_permissions(), 5);
    clock.advance(SEC);
    assert_eq!(limiter.available_permissions(), 1);

    assert!(limiter.acquire_permission(1).is_ok());
    assert!(
        limiter.acquire_permission(1).is_err(),
        "timeout 0 refuses a wait"
    );
    limiter.change_timeout_duration(SEC);
    assert_eq!(limiter.config().timeout_duration(), SEC);
    assert!(limiter.acquire_permission(1).is_ok());
    assert_eq!(clock.elapsed(), 3 * SEC, "waited one cycle");
}

#[test]
fn events_report_successful_and_failed_acquisitions() {
    let (limiter, _clock) = manual(1, SEC, Duration::ZERO);
    let mut events = limiter.subscribe();
    assert!(limiter.try_acquire_permission(1));
    assert!(limiter.call(|| Ok::<_, ()>(())).is_err());
    let seen: Vec<_> = events
        .drain()
        .into_iter()
        .map(|e| (e.name().to_owned(), e.kind(), e.permits()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                "read".to_owned(),
                RateLimiterEventKind::SuccessfulAcquire,
                1
            ),
            ("read".to_owned(), RateLimiterEventKind::FailedAcquire, 1),
        ]
    );
}

#[test]
fn the_call_error_passes_through_and_a_refused_call_never_runs() {
    let (limiter, _clock) = manual(1, SEC, Duration::ZERO);
    let err = limiter.call(|| Err::<(), _>("boom")).unwrap_err();
    assert_eq!(err, Error::Call("boom"));
    let mut ran = false;
    let err = limiter
        .call(|| {
            ran = true;
            Ok::<_, &str>(())
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestNotPermitted);
    assert!(!ran);
}

#[test]
fn many_threads_never_get_more_than_the_limit_per_cycle_and_the_counts_add_up() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 40;
    const ATTEMPTS: u64 = 200;
    const LIMIT: u32 = 37;
    let (limiter, clock) = manual(LIMIT, SEC, Duration::ZERO);
    let accepted: Vec<AtomicU64> = (0..ROUNDS).map(|_| AtomicU64::new(0)).collect();
    let rejected = AtomicU64::new(0);
    let start = Barrier::new(THREADS + 1);
    let done = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (limiter, accepted, rejected, start, done) =
                (&limiter, &accepted, &rejected, &start, &done);
            s.spawn(move || {
                for round in accepted.iter() {
                    start.wait();
                    for i in 0..ATTEMPTS {
                        // Mix the sync API's entry points; timeout 0 never waits.
                        let ok = if (i + t as u64) % 2 == 0 {
                            limiter.try_acquire_permission(1)
                        } else {
                            limiter.acquire_permission(1).is_ok()
                        };
                        if ok {
                            round.fetch_add(1, Ordering::Relaxed);
                        } else {
                            rejected.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    done.wait();
                }
            });
        }
        for _ in 0..ROUNDS {
            start.wait();
            done.wait();
            clock.advance(SEC);
        }
    });
    for (round, accepted) in accepted.iter().enumerate() {
        assert_eq!(
            accepted.load(Ordering::Relaxed),
            u64::from(LIMIT),
            "round {round}: exactly the limit, never more"
        );
    }
    let total_accepted: u64 = accepted.iter().map(|a| a.load(Ordering::Relaxed)).sum();
    assert_eq!(
        total_accepted + rejected.load(Ordering::Relaxed),
        (THREADS * ROUNDS) as u64 * ATTEMPTS
    );
}

#[test]
fn limiters_are_independent_per_instance() {
    let (a, _ca) = manual(1, SEC, Duration::ZERO);
    let (b, _cb) = manual(1, SEC, Duration::ZERO);
    assert!(a.try_acquire_permission(1));
    assert!(!a.try_acquire_permission(1));
    assert!(
        b.try_acquire_permission(1),
        "another instance has its own permits"
    );
    let clone = a.clone();
    assert!(!clone.try_acquire_permission(1), "clones share permits");
}

#[tokio::test(start_paused = true)]
async fn an_async_caller_awaits_its_reserved_cycle_without_blocking_a_thread() {
    let limiter = RateLimiter::with_clock(
        "read",
        config(1, SEC, Duration::from_secs(3)),
        TokioClock::new(),
    );
    let t0 = tokio::time::Instant::now();
    limiter.call_async(async { Ok::<_, ()>(()) }).await.unwrap();
    let second = tokio::spawn({
        let limiter = limiter.clone();
        async move {
            limiter
                .call_async(async { Ok::<_, ()>(tokio::time::Instant::now()) })
                .await
        }
    });
    tokio::task::yield_now().await;
    assert_eq!(limiter.available_permissions(), -1);
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 1);
    let ran_at = second.await.unwrap().unwrap();
    assert_eq!(ran_at - t0, SEC, "waited exactly one cycle");
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 0);
    assert_eq!(limiter.available_permissions(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_reservation_that_does_not_fit_the_deadline_is_refused_before_reserving() {
    let limiter = RateLimiter::with_clock(
        "read",
        config(1, SEC, Duration::from_secs(5)),
        TokioClock::new(),
    );
    assert!(limiter.try_acquire_permission(1));

    let out = deadline::within(Duration::from_millis(500), async {
        limiter.call_async(async { Ok::<_, ()>(()) }).await
    })
    .await
    .expect("refused at once, long before the deadline");
    assert_eq!(
        out,
        Err(Error::DeadlineExceeded(DeadlineExceeded::by("read")))
    );
    assert_eq!(limiter.available_permissions(), 0, "no permit consumed");

    // A wait ending exactly at the deadline leaves no time for the call.
    let out = deadline::within(SEC, limiter.acquire_permission_async(1)).await;
    assert!(matches!(out, Ok(Err(AcquireError::DeadlineExceeded(_)))));

    let t0 = tokio::time::Instant::now();
    let out = deadline::within(Duration::from_secs(2), async {
        limiter.call_async(async { Ok::<_, ()>(()) }).await
    })
    .await;
    assert_eq!(out, Ok(Ok(())));
    assert_eq!(tokio::time::Instant::now() - t0, SEC);

    // Beyond the limiter's own timeout it stays RequestNotPermitted.
    limiter.change_timeout_duration(Duration::from_millis(100));
    let out = deadline::within(
        Duration::from_millis(50),
        limiter.acquire_permission_async(1),
    )
    .await;
    assert!(matches!(out, Ok(Err(AcquireError::NotPermitted(_)))));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_gives_its_permit_back_only_while_it_is_the_latest() {
    let limiter = RateLimiter::with_clock(
        "read",
        config(1, SEC, Duration::from_secs(5)),
        TokioClock::new(),
    );
    assert!(limiter.try_acquire_permission(1));

    let polled = Arc::new(AtomicU64::new(0));
    let work = |polled: Arc<AtomicU64>| async move {
        polled.fetch_add(1, Ordering::Relaxed);
        Ok::<_, ()>(())
    };
    let mut first = Box::pin(limiter.call_async(work(polled.clone())));
    assert!(futures::poll!(first.as_mut()).is_pending());
    let mut second = Box::pin(limiter.call_async(work(polled.clone())));
    assert!(futures::poll!(second.as_mut()).is_pending());
    assert_eq!(limiter.available_permissions(), -2);
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 2);

    drop(first);
    assert_eq!(
        limiter.available_permissions(),
        -2,
        "the second waiter was told to wait behind the first: it stays consumed"
    );
    drop(second);
    assert_eq!(
        limiter.available_permissions(),
        -1,
        "the latest is given back"
    );
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 0);
    assert_eq!(polled.load(Ordering::Relaxed), 0, "no work ran");

    // A waiter dropped after its cycle started, but before it was polled
    // again, gives back a permit that is now free in the current cycle.
    tokio::time::advance(2 * SEC).await;
    assert_eq!(limiter.available_permissions(), 1);
    let mut third = Box::pin(limiter.acquire_permission_async(1));
    assert_eq!(
        futures::poll!(third.as_mut()),
        std::task::Poll::Ready(Ok(()))
    );
    let mut fourth = Box::pin(limiter.acquire_permission_async(1));
    assert!(futures::poll!(fourth.as_mut()).is_pending());
    tokio::time::advance(SEC).await;
    drop(fourth);
    assert_eq!(limiter.available_permissions(), 1);
}

/// Resilience4j's AtomicRateLimiter, written the way its source reads: the
/// state `(activeCycle, activePermissions)`, refilled by `min(p + k × limit,
/// limit)` on crossing cycles, with `nanosToWaitForPermission`'s wait. A limit
/// change refreshes the state, then applies from the next cycle.
#[derive(Debug)]
struct Model {
    period: u64,
    limit: i64,
    active_cycle: u64,
    permissions: i64,
    now: u64,
}

impl Model {
    fn refresh(&mut self) {
        let cycle = self.now / self.period;
        if cycle > self.active_cycle {
            let refill = (cycle - self.active_cycle) as i64 * self.limit;
            self.permissions = (self.permissions + refill).min(self.limit);
            self.active_cycle = cycle;
        }
    }

    fn reserve(&mut self, permits: i64, timeout: u64) -> Result<u64, &'static str> {
        if permits > self.limit {
            return Err("exceeds_limit");
        }
        self.refresh();
        if self.permissions >= permits {
            self.permissions -= permits;
            return Ok(0);
        }
        let cycles = (permits - self.permissions + self.limit - 1) / self.limit;
        let wait = (self.active_cycle + cycles as u64) * self.period - self.now;
        if wait > timeout {
            return Err("not_permitted");
        }
        self.permissions -= permits;
        Ok(wait)
    }

    fn available(&mut self) -> i64 {
        self.refresh();
        self.permissions
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Reserve { permits: u32, timeout: u64 },
    Try { permits: u32 },
    ChangeLimit(u32),
}

fn ops(period: u64, limit: u32) -> impl Strategy<Value = Vec<Op>> {
    let max_limit = period.min(8) as u32;
    prop::collection::vec(
        prop_oneof![
            3 => (0..3 * period).prop_map(Op::Advance),
            4 => (0..=limit + 1, 0..4 * period)
                .prop_map(|(permits, timeout)| Op::Reserve { permits, timeout }),
            2 => (0..=limit + 1).prop_map(|permits| Op::Try { permits }),
            1 => (1..=max_limit).prop_map(Op::ChangeLimit),
        ],
        1..60,
    )
}

fn scenario() -> impl Strategy<Value = (u64, u32, u64, Vec<Op>)> {
    (1u64..50, 0u64..1000).prop_flat_map(|(period, offset)| {
        (1..=period.min(8) as u32).prop_flat_map(move |limit| {
            (Just(period), Just(limit), Just(offset), ops(period, limit))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_cursor_state_behaves_like_resilience4js_cycle_state(
        (period, limit, offset, ops) in scenario()
    ) {
        let clock = ManualClock::new();
        clock.advance(Duration::from_nanos(offset));
        let limiter = RateLimiter::with_clock(
            "model",
            config(limit, Duration::from_nanos(period), Duration::ZERO),
            clock.clone(),
        );
        let mut model = Model {
            period,
            limit: i64::from(limit),
            active_cycle: 0,
            permissions: i64::from(limit),
            now: 0,
        };
        for op in ops {
            match op {
                Op::Advance(by) => {
                    clock.advance(Duration::from_nanos(by));
                    model.now += by;
                }
                Op::Reserve { permits, timeout } => {
                    limiter.change_timeout_duration(Duration::from_nanos(timeout));
                    let got = limiter.reserve_permission(permits).map_err(|e| match e {
                        AcquireError::ExceedsLimit(_) => "exceeds_limit",
                        AcquireError::NotPermitted(_) => "not_permitted",
                        other => panic!("unexpected {other:?}"),
                    });
                    let want = model.reserve(i64::from(permits), timeout);
                    prop_assert_eq!(got, want.map(Duration::from_nanos), "{:?}", model);
                }
                Op::Try { permits } => {
                    let got = limiter.try_acquire_permission(permits);
                    let want = model.reserve(i64::from(permits), 0).is_ok();
                    prop_assert_eq!(got, want, "{:?}", model);
                }
                Op::ChangeLimit(new) => {
                    limiter.change_limit_for_period(new).unwrap();
                    model.refresh();
                    model.limit = i64::from(new);
                }
            }
            prop_assert_eq!(limiter.available_permissions(), model.available(), "{:?}", model);
        }
    }
}

// ---- Issue 6, item 15: drain_permissions_on_result ----

#[test]
fn a_result_the_drain_predicate_accepts_empties_the_cycle_until_the_next_one() {
    let clock = ManualClock::new();
    let limiter = RateLimiter::with_clock(
        "partner",
        RateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(SEC)
            .timeout_duration(Duration::ZERO)
            .drain_permissions_on_result(|r: Result<&u16, &String>| r == Ok(&429))
            .build()
            .unwrap(),
        clock.clone(),
    );
    let mut events = limiter.subscribe();
    assert_eq!(limiter.call(|| Ok::<u16, String>(200)), Ok(200));
    assert_eq!(limiter.available_permissions(), 9);
    assert_eq!(limiter.call(|| Ok::<u16, String>(429)), Ok(429));
    assert_eq!(limiter.available_permissions(), 0);
    let kinds: Vec<_> = events
        .drain()
        .iter()
        .map(|e| (e.kind(), e.permits()))
        .collect();
    assert_eq!(
        kinds,
        [
            (RateLimiterEventKind::SuccessfulAcquire, 1),
            (RateLimiterEventKind::SuccessfulAcquire, 1),
            (RateLimiterEventKind::Drained, 8),
        ]
    );
    let refused = limiter.call(|| Ok::<u16, String>(200));
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::RequestNotPermitted);
    // Other types never drain, and the next cycle refills as usual.
    clock.advance(SEC);
    assert_eq!(limiter.call(|| Ok::<u32, String>(429)), Ok(429));
    assert_eq!(limiter.available_permissions(), 9);
}

#[tokio::test(start_paused = true)]
async fn an_error_inside_a_resil_error_drains_too_and_drain_permissions_is_public() {
    let limiter = RateLimiter::with_clock(
        "partner",
        RateLimiterConfig::builder()
            .limit_for_period(5)
            .limit_refresh_period(SEC)
            .timeout_duration(Duration::ZERO)
            .drain_permissions_on_result(|r: Result<&(), &&str>| r == Err(&"quota"))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    // A rate limiter around another primitive: the error arrives as resil::Error<&str>.
    let out = limiter
        .call_async(async { Err::<(), Error<&str>>(Error::Call("quota")) })
        .await;
    assert!(out.is_err());
    assert_eq!(limiter.available_permissions(), 0);
    tokio::time::advance(SEC).await;
    assert_eq!(limiter.available_permissions(), 5);
    limiter.drain_permissions();
    assert_eq!(limiter.available_permissions(), 0);
}

// ---- Issue 6, item 15: the refilling token bucket ----

fn refill(
    limit: u32,
    period: Duration,
    capacity: u32,
    initial: u32,
    timeout: Duration,
) -> (RefillRateLimiter, ManualClock) {
    let clock = ManualClock::new();
    let config = RefillRateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(period)
        .permit_capacity(capacity)
        .initial_permits(initial)
        .timeout_duration(timeout)
        .build()
        .expect("a valid config");
    (
        RefillRateLimiter::with_clock("pace", config, clock.clone()),
        clock,
    )
}

#[test]
fn the_refill_limiter_paces_where_the_cycle_limiter_bursts_at_the_boundary() {
    let ms = Duration::from_millis;
    let (cycle, cycle_clock) = manual(10, SEC, Duration::ZERO);
    let (bucket, bucket_clock) = refill(10, SEC, 10, 10, Duration::ZERO);
    // Both spend their 10 permits at 0.9 s...
    for clock in [&cycle_clock, &bucket_clock] {
        clock.advance(ms(900));
    }
    let spend = |f: &dyn Fn() -> bool| (0..20).filter(|_| f()).count();
    assert_eq!(spend(&|| cycle.try_acquire_permission(1)), 10);
    assert_eq!(spend(&|| bucket.try_acquire_permission(1)), 10);
    // ...and 100 ms later the cycle limiter grants 10 more at once (20 calls
    // in 100 ms), the bucket one: a permit every 100 ms.
    for clock in [&cycle_clock, &bucket_clock] {
        clock.advance(ms(100));
    }
    assert_eq!(spend(&|| cycle.try_acquire_permission(1)), 10);
    assert_eq!(spend(&|| bucket.try_acquire_permission(1)), 1);
    bucket_clock.advance(ms(250));
    assert_eq!(spend(&|| bucket.try_acquire_permission(1)), 2);
    // An idle spell banks at most the capacity.
    bucket_clock.advance(Duration::from_secs(3600));
    assert_eq!(bucket.available_permissions(), 10);
    assert_eq!(spend(&|| bucket.try_acquire_permission(1)), 10);
}

#[test]
fn the_refill_limiter_s_defaults_and_validation_are_resilience4j_s_with_errors_for_nonsense() {
    let config = RefillRateLimiterConfig::default();
    assert_eq!(
        (
            config.limit_for_period(),
            config.permit_capacity(),
            config.initial_permits()
        ),
        (50, 50, 50)
    );
    assert_eq!(config.nanos_per_permit(), Duration::from_nanos(10));
    assert_eq!(config.timeout_duration(), Duration::from_secs(5));
    let err = RefillRateLimiterConfig::builder()
        .permit_capacity(10)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `permit_capacity`: got 10, expected an integer >= limit_for_period (50)"
    );
}

#[test]
fn a_refill_reservation_waits_for_its_permit_and_one_beyond_the_timeout_consumes_nothing() {
    let ms = Duration::from_millis;
    let (limiter, clock) = refill(10, SEC, 10, 0, ms(250));
    assert_eq!(limiter.reserve_permission(1), Ok(ms(100)));
    assert_eq!(limiter.reserve_permission(1), Ok(ms(200)));
    assert_eq!(limiter.available_permissions(), -2);
    let err = limiter.reserve_permission(1).unwrap_err();
    assert!(matches!(err, AcquireError::NotPermitted(_)), "{err:?}");
    assert_eq!(
        limiter.available_permissions(),
        -2,
        "a refusal takes nothing"
    );
    // A sync acquire sleeps through the clock for exactly its wait.
    clock.advance(ms(200));
    assert_eq!(limiter.available_permissions(), 0);
    limiter.acquire_permission(1).unwrap();
    assert_eq!(clock.elapsed(), ms(300));
    // More than the capacity at once can never be granted.
    let err = limiter.acquire_permission(11).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rate limiter 'pace' cannot grant 11 permits at once: its permit_capacity is 10"
    );
    // A call waits for its permit the same way: the next is due at 400 ms.
    assert_eq!(limiter.call(|| Ok::<_, ()>(1)), Ok(1));
    assert_eq!(clock.elapsed(), ms(400));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_refill_waiter_gives_its_permit_back_and_deadlines_are_respected() {
    let ms = Duration::from_millis;
    let limiter = RefillRateLimiter::with_clock(
        "pace",
        RefillRateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(SEC)
            .initial_permits(0)
            .timeout_duration(SEC)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let mut waiting = Box::pin(limiter.call_async(async { Ok::<_, ()>(1) }));
    assert!(futures::poll!(waiting.as_mut()).is_pending());
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 1);
    assert_eq!(limiter.available_permissions(), -1);
    drop(waiting);
    assert_eq!(
        limiter.available_permissions(),
        0,
        "the reservation came back"
    );
    assert_eq!(limiter.metrics().number_of_waiting_threads(), 0);

    let start = tokio::time::Instant::now();
    assert_eq!(limiter.call_async(async { Ok::<_, ()>(2) }).await, Ok(2));
    assert_eq!(start.elapsed(), ms(100));

    let out = deadline::within(ms(50), limiter.call_async(async { Ok::<_, ()>(3) })).await;
    assert_eq!(
        out.unwrap().unwrap_err(),
        Error::DeadlineExceeded(DeadlineExceeded::by("pace"))
    );
    assert_eq!(
        limiter.available_permissions(),
        0,
        "refused before reserving"
    );
}

#[test]
fn the_refill_limiter_drains_on_result_and_publishes_its_events() {
    let clock = ManualClock::new();
    let limiter = RefillRateLimiter::with_clock(
        "pace",
        RefillRateLimiterConfig::builder()
            .limit_for_period(4)
            .limit_refresh_period(SEC)
            .timeout_duration(Duration::ZERO)
            .drain_permissions_on_result(|r: Result<&u16, &()>| r == Ok(&429))
            .build()
            .unwrap(),
        clock.clone(),
    );
    let mut events = limiter.subscribe();
    assert_eq!(limiter.call(|| Ok::<u16, ()>(429)), Ok(429));
    assert!(!limiter.try_acquire_permission(1));
    let kinds: Vec<_> = events
        .drain()
        .iter()
        .map(|e| (e.kind(), e.permits()))
        .collect();
    assert_eq!(
        kinds,
        [
            (RateLimiterEventKind::SuccessfulAcquire, 1),
            (RateLimiterEventKind::Drained, 3),
            (RateLimiterEventKind::FailedAcquire, 1),
        ]
    );
    clock.advance(Duration::from_millis(250));
    assert!(
        limiter.try_acquire_permission(1),
        "the next permit is one interval away"
    );
}

#[test]
fn many_threads_on_one_bucket_get_exactly_the_permits_it_holds() {
    const THREADS: usize = 4;
    const ROUNDS: u64 = 30;
    const ATTEMPTS: u64 = 300;
    const CAPACITY: u32 = 197;
    // A permit every 10 ms; each round refills 13 permits.
    let (limiter, clock) = refill(100, SEC, CAPACITY, CAPACITY, Duration::ZERO);
    let granted: Vec<AtomicU64> = (0..=ROUNDS).map(|_| AtomicU64::new(0)).collect();
    let start = Barrier::new(THREADS + 1);
    let done = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (limiter, granted, start, done) = (&limiter, &granted, &start, &done);
            s.spawn(move || {
                for round in granted.iter() {
                    start.wait();
                    for i in 0..ATTEMPTS {
                        let ok = if (i + t as u64) % 2 == 0 {
                            limiter.try_acquire_permission(1)
                        } else {
                            limiter.acquire_permission(1).is_ok()
                        };
                        if ok {
                            round.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    done.wait();
                }
            });
        }
        for _ in 0..=ROUNDS {
            start.wait();
            done.wait();
            clock.advance(Duration::from_millis(130));
        }
    });
    let counts: Vec<u64> = granted.iter().map(|g| g.load(Ordering::Relaxed)).collect();
    assert_eq!(
        counts[0],
        u64::from(CAPACITY),
        "the initial bucket, no more"
    );
    assert!(counts[1..].iter().all(|&n| n == 13), "{counts:?}");
    assert_eq!(limiter.available_permissions(), 13);
}

/// A token bucket written the obvious way: a credit in nanoseconds of
/// permits, topped up by the time passed (capped at the capacity), spent by
/// each grant, negative while reservations wait.
#[derive(Debug)]
struct BucketModel {
    interval: i128,
    capacity: i128,
    credit: i128,
    last: i128,
    now: i128,
}

impl BucketModel {
    fn refresh(&mut self) {
        self.credit = (self.credit + (self.now - self.last)).min(self.capacity * self.interval);
        self.last = self.now;
    }

    fn reserve(&mut self, permits: i128, timeout: i128) -> Result<u64, &'static str> {
        if permits > self.capacity {
            return Err("exceeds_limit");
        }
        self.refresh();
        let cost = permits * self.interval;
        let wait = (cost - self.credit).max(0);
        if wait > timeout {
            return Err("not_permitted");
        }
        self.credit -= cost;
        Ok(wait as u64)
    }

    fn available(&mut self) -> i64 {
        self.refresh();
        self.credit.div_euclid(self.interval) as i64
    }

    fn drain(&mut self) {
        self.refresh();
        self.credit = self.credit.min(0);
    }
}

#[derive(Debug, Clone)]
enum BucketOp {
    Advance(u64),
    Reserve { permits: u32, timeout: u64 },
    Try { permits: u32 },
    Drain,
}

fn bucket_scenario() -> impl Strategy<Value = (u64, u32, u32, u32, u64, Vec<BucketOp>)> {
    // (interval, limit, extra capacity, initial, origin offset, ops)
    (1u64..20, 1u32..5, 0u32..6, 0u64..1000).prop_flat_map(|(interval, limit, extra, offset)| {
        let capacity = limit + extra;
        let op = prop_oneof![
            3 => (0..4 * interval * u64::from(limit)).prop_map(BucketOp::Advance),
            4 => (0..=capacity + 1, 0..6 * interval)
                .prop_map(|(permits, timeout)| BucketOp::Reserve { permits, timeout }),
            2 => (0..=capacity + 1).prop_map(|permits| BucketOp::Try { permits }),
            1 => Just(BucketOp::Drain),
        ];
        (
            Just(interval),
            Just(limit),
            Just(capacity),
            0..=capacity,
            Just(offset),
            prop::collection::vec(op, 1..60),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_refill_limiter_behaves_like_a_token_bucket_model(
        (interval, limit, capacity, initial, offset, ops) in bucket_scenario()
    ) {
        let clock = ManualClock::new();
        clock.advance(Duration::from_nanos(offset));
        // A period that is not a multiple of the limit: the interval rounds down.
        let period = interval * u64::from(limit) + u64::from(limit) - 1;
        let limiter = RefillRateLimiter::with_clock(
            "model",
            RefillRateLimiterConfig::builder()
                .limit_for_period(limit)
                .limit_refresh_period(Duration::from_nanos(period))
                .permit_capacity(capacity)
                .initial_permits(initial)
                .timeout_duration(Duration::ZERO)
                .build()
                .unwrap(),
            clock.clone(),
        );
        let interval = i128::from(interval);
        let mut model = BucketModel {
            interval,
            capacity: i128::from(capacity),
            credit: i128::from(initial) * interval,
            last: 0,
            now: 0,
        };
        for op in ops {
            match op {
                BucketOp::Advance(by) => {
                    clock.advance(Duration::from_nanos(by));
                    model.now += i128::from(by);
                }
                BucketOp::Reserve { permits, timeout } => {
                    limiter.change_timeout_duration(Duration::from_nanos(timeout));
                    let got = limiter.reserve_permission(permits).map_err(|e| match e {
                        AcquireError::ExceedsLimit(_) => "exceeds_limit",
                        AcquireError::NotPermitted(_) => "not_permitted",
                        other => panic!("unexpected {other:?}"),
                    });
                    let want = model.reserve(i128::from(permits), i128::from(timeout));
                    prop_assert_eq!(got, want.map(Duration::from_nanos), "{:?}", model);
                }
                BucketOp::Try { permits } => {
                    let got = limiter.try_acquire_permission(permits);
                    let want = model.reserve(i128::from(permits), 0).is_ok();
                    prop_assert_eq!(got, want, "{:?}", model);
                }
                BucketOp::Drain => {
                    limiter.drain_permissions();
                    model.drain();
                }
            }
            prop_assert_eq!(limiter.available_permissions(), model.available(), "{:?}", model);
        }
    }
}

/// Counts debug events from the rate limiter module.
#[derive(Default, Clone)]
struct DebugEvents(Arc<AtomicU64>);

impl tracing::Subscriber for DebugEvents {
    fn enabled(&self, meta: &tracing::Metadata<'_>) -> bool {
        meta.target().starts_with("resil_core::rate_limiter")
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::DEBUG {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_drain_predicate_for_other_types_never_drains_and_is_traced_once_per_limiter() {
    let events = DebugEvents::default();
    tracing::subscriber::with_default(events.clone(), || {
        // Other tests of this binary may have registered the event\'s callsite
        // (as "never") on threads without a subscriber: recompute it for ours.
        tracing::callsite::rebuild_interest_cache();
        let config = RateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(SEC)
            .drain_permissions_on_result(|r: Result<&u16, &()>| r == Ok(&429))
            .build()
            .unwrap();
        let limiter = RateLimiter::with_clock("partner", config.clone(), ManualClock::new());
        for _ in 0..3 {
            // The call returns `u32`: the `u16` predicate can never match.
            assert_eq!(limiter.call(|| Ok::<u32, ()>(429)), Ok(429));
        }
        assert_eq!(limiter.available_permissions(), 7);
        let other = RateLimiter::with_clock("partner-2", config, ManualClock::new());
        let _ = other.call(|| Ok::<u32, ()>(429));
        let _ = other.call(|| Ok::<u16, ()>(200)); // its own types: never traced
    });
    assert_eq!(events.0.load(Ordering::Relaxed), 2, "once per limiter");
}
