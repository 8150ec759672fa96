//! Management by name: breaker transitions (with a TTL and a reason for the
//! manual modes), a rate limiter's limit, a bulkhead's size and a chaos
//! instance's fault injection (on with a TTL and a reason, off by default).
//!
//! Forgotten manual switches cause long outages (a breaker forced open during
//! an incident and never closed again): so `force_open` and `disable` take an
//! optional TTL after which the breaker returns to the mode it was in, on the
//! registry's clock, and a reason that appears in the events and the snapshot.
//!
//! Expiry is checked by [`Registry::run_due_overrides`], which every
//! management operation, snapshot and health check calls first, and which a
//! small timer thread calls on its own while an override with a TTL is pending
//! (one thread per registry, started with the first TTL, exiting when none is
//! left or the registry is dropped).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use resil_core::bulkhead::Bulkhead;
use resil_core::chaos::ChaosStatus;
use resil_core::circuit_breaker::{CircuitBreaker, State};
use resil_core::rate_limiter::RateLimiter;

use crate::error::RegistryError;
use crate::event::RegistryEventKind;
use crate::kind::Kind;
use crate::kinds::chaos::{
    disable as disable_chaos, enable as enable_chaos, status as chaos_status,
};
use crate::kinds::circuit_breaker::transition;
use crate::kinds::rate_limiter::RateChange;
use crate::overrides::{ManualOverride, Transition};
use crate::primitive::Primitive;
use crate::registry::{Inner, Registry};
/// The transition that puts a breaker back into `state` after an override.
pub(crate) fn back_to(state: State) -> Transition {
    match state {
        State::Disabled => Transition::Disabled,
        State::MetricsOnly => Transition::MetricsOnly,
        State::ForcedOpen => Transition::ForcedOpen,
        // A breaker that was CLOSED, OPEN or HALF_OPEN before the override
        // resumes normal operation: CLOSED, with a fresh window.
        State::Closed | State::Open | State::HalfOpen => Transition::Closed,
    }
}

impl Registry {
    fn existing_breaker(&self, name: &str) -> Result<crate::Handle<CircuitBreaker>, RegistryError> {
        self.existing::<CircuitBreaker>(name)
    }

    /// The instance of kind `P` called `name`, or `NotFound`: management acts
    /// only on instances that exist, never creates one.
    fn existing<P: crate::Primitive>(&self, name: &str) -> Result<crate::Handle<P>, RegistryError> {
        self.find::<P>(name).ok_or_else(|| RegistryError::NotFound {
            kind: P::KIND,
            name: name.to_owned(),
        })
    }

    fn publish_breaker(&self, name: &str, what: RegistryEventKind) {
        let entry = self.store::<CircuitBreaker>().entries.get(name);
        self.inner.events.publish(
            Kind::CircuitBreaker,
            name.into(),
            what,
            entry.as_ref().map(|e| &e.slot.history),
        );
    }

    fn now(&self) -> Duration {
        self.ttl_now()
    }

    /// Transitions the breaker called `name`. A transition to CLOSED, OPEN,
    /// HALF_OPEN, METRICS_ONLY or a reset ends any manual override (a plain
    /// METRICS_ONLY is kept as the breaker's mode by a rebuild, and is the
    /// mode a later override returns to); FORCED_OPEN and DISABLED set one
    /// without a TTL: use [`force_open`](Self::force_open),
    /// [`disable`](Self::disable) and [`metrics_only`](Self::metrics_only)
    /// for a TTL and a reason.
    pub fn transition_circuit_breaker(
        &self,
        name: &str,
        to: Transition,
    ) -> Result<(), RegistryError> {
        match to {
            Transition::ForcedOpen => return self.force_open(name, None, ""),
            Transition::Disabled => return self.disable(name, None, ""),
            _ => {}
        }
        self.run_due_overrides();
        let breaker = self.existing_breaker(name)?;
        let mut overrides = self.inner.overrides.by_name.lock();
        transition(&breaker, to).map_err(|reason| RegistryError::IllegalOperation {
            kind: Kind::CircuitBreaker,
            name: name.to_owned(),
            reason,
        })?;
        overrides.remove(name);
        drop(overrides);
        tracing::info!(kind = "circuit_breaker", name, to = %to, "manual transition");
        self.publish_breaker(
            name,
            RegistryEventKind::ManualTransition {
                to,
                reason: None,
                ttl: None,
            },
        );
        Ok(())
    }

    /// Forces the breaker called `name` open: every call is refused. With a
    /// `ttl`, it returns to the mode it was in (CLOSED when it was operating
    /// normally) once `ttl` has passed on the registry's clock. `reason` shows
    /// in the events, the logs and the snapshot.
    pub fn force_open(
        &self,
        name: &str,
        ttl: Option<Duration>,
        reason: &str,
    ) -> Result<(), RegistryError> {
        self.set_override(name, State::ForcedOpen, ttl, reason)
    }

    /// Disables the breaker called `name`: every call passes, nothing is
    /// recorded. `ttl` and `reason` as for [`force_open`](Self::force_open).
    pub fn disable(
        &self,
        name: &str,
        ttl: Option<Duration>,
        reason: &str,
    ) -> Result<(), RegistryError> {
        self.set_override(name, State::Disabled, ttl, reason)
    }

    /// Puts the breaker called `name` in METRICS_ONLY: every call passes and
    /// is recorded, the thresholds never open it (a trial of new settings
    /// on real traffic). `ttl` and `reason` as for
    /// [`force_open`](Self::force_open).
    pub fn metrics_only(
        &self,
        name: &str,
        ttl: Option<Duration>,
        reason: &str,
    ) -> Result<(), RegistryError> {
        self.set_override(name, State::MetricsOnly, ttl, reason)
    }

    /// The manual override in force on the breaker called `name`, if any.
    pub fn manual_override(&self, name: &str) -> Option<ManualOverride> {
        self.run_due_overrides();
        self.inner.overrides.get(name)
    }

    fn set_override(
        &self,
        name: &str,
        mode: State,
        ttl: Option<Duration>,
        reason: &str,
    ) -> Result<(), RegistryError> {
        self.run_due_overrides();
        let breaker = self.existing_breaker(name)?;
        let to = Transition::of_mode(mode);
        let now = self.now();
        let mut overrides = self.inner.overrides.by_name.lock();
        // A second override keeps the mode the first one interrupted.
        let previous = overrides
            .get(name)
            .map_or_else(|| breaker.state(), |o| o.previous);
        transition(&breaker, to).map_err(|reason| RegistryError::IllegalOperation {
            kind: Kind::CircuitBreaker,
            name: name.to_owned(),
            reason,
        })?;
        let reason: Arc<str> = reason.into();
        overrides.insert(
            name.into(),
            ManualOverride {
                mode,
                previous,
                reason: Arc::clone(&reason),
                since: now,
                until: ttl.map(|t| now.saturating_add(t)),
            },
        );
        drop(overrides);
        tracing::warn!(
            kind = "circuit_breaker", name, to = %to, reason = &*reason, ttl = ?ttl,
            "manual override"
        );
        self.publish_breaker(
            name,
            RegistryEventKind::ManualTransition {
                to,
                reason: Some(reason),
                ttl,
            },
        );
        if ttl.is_some() {
            self.start_override_timer();
        }
        Ok(())
    }

    /// Ends every manual override whose TTL has passed on the registry's
    /// clock, returning each breaker to its previous mode. Returns how many
    /// expired. Called by every management operation, snapshot and health
    /// check, and by the override timer; tests on a
    /// [`ManualClock`](resil_core::clock::ManualClock) call it after advancing.
    pub fn run_due_overrides(&self) -> usize {
        let now = self.now();
        self.inner.overrides.forget_expired_chaos(now);
        let due: Vec<(Arc<str>, ManualOverride)> = {
            let mut overrides = self.inner.overrides.by_name.lock();
            let names: Vec<Arc<str>> = overrides
                .iter()
                .filter(|(_, o)| o.until.is_some_and(|u| u <= now))
                .map(|(n, _)| Arc::clone(n))
                .collect();
            names
                .into_iter()
                .filter_map(|n| overrides.remove(&n).map(|o| (n, o)))
                .collect()
        };
        for (name, expired) in &due {
            let to = back_to(expired.previous);
            if let Some(breaker) = self.find::<CircuitBreaker>(name) {
                if let Err(reason) = transition(&breaker, to) {
                    tracing::error!(
                        kind = "circuit_breaker",
                        name = &**name,
                        reason,
                        "override expiry"
                    );
                }
            }
            tracing::info!(
                kind = "circuit_breaker", name = &**name, back_to = %to,
                reason = &*expired.reason, "manual override expired"
            );
            self.publish_breaker(
                name,
                RegistryEventKind::OverrideExpired {
                    to,
                    reason: Arc::clone(&expired.reason),
                },
            );
        }
        due.len()
    }

    fn start_override_timer(&self) {
        if self
            .inner
            .overrides
            .timer_running
            .swap(true, Ordering::AcqRel)
        {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("resil-override-ttl".into())
            .spawn(move || override_timer(weak));
        if spawned.is_err() {
            self.inner
                .overrides
                .timer_running
                .store(false, Ordering::Release);
            tracing::error!(
                "could not start the override timer; TTLs expire on the next management call"
            );
        }
    }

    /// Changes the rate limiter called `name`'s `limit_for_period` (from the
    /// next cycle on), through the limiter's own run-time setter. A
    /// Redis-backed limiter of that name (feature `redis`) is replaced by one
    /// with the new limit (the quota in Redis carries on). Lasts, through
    /// every reload and `configure_rate_limiter`, until
    /// [`release`](Self::release).
    pub fn set_rate_limit(&self, name: &str, limit_for_period: u32) -> Result<(), RegistryError> {
        let _settings = self.store::<RateLimiter>().code.read();
        self.manage_rate_limiter(
            name,
            "set_rate_limit",
            |limiter| {
                limiter
                    .change_limit_for_period(limit_for_period)
                    .map_err(|source| RegistryError::InvalidConfig {
                        kind: Kind::RateLimiter,
                        name: name.to_owned(),
                        source,
                    })
            },
            RateChange::Limit(limit_for_period),
        )?;
        self.tune(Kind::RateLimiter, name, |t| {
            t.limit_for_period = Some(limit_for_period)
        });
        tracing::info!(
            kind = "rate_limiter",
            name,
            limit_for_period,
            "limit changed"
        );
        Ok(())
    }

    /// Changes the rate limiter called `name`'s `timeout_duration` (and that
    /// of its Redis-backed limiter, as [`set_rate_limit`](Self::set_rate_limit)).
    /// Lasts until [`release`](Self::release), as `set_rate_limit`.
    pub fn set_rate_limiter_timeout(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<(), RegistryError> {
        let _settings = self.store::<RateLimiter>().code.read();
        self.manage_rate_limiter(
            name,
            "set_rate_limiter_timeout",
            |limiter| {
                limiter.change_timeout_duration(timeout);
                Ok(())
            },
            RateChange::Timeout(timeout),
        )?;
        self.tune(Kind::RateLimiter, name, |t| {
            t.timeout_duration = Some(timeout)
        });
        tracing::info!(kind = "rate_limiter", name, timeout = ?timeout, "timeout changed");
        Ok(())
    }

    /// Applies an operator's change to the local rate limiter `name` and to
    /// its Redis-backed limiter, whichever run (the local one first: a value
    /// it refuses changes neither); `NotFound` when neither does.
    fn manage_rate_limiter(
        &self,
        name: &str,
        cause: &str,
        local: impl FnOnce(&RateLimiter) -> Result<(), RegistryError>,
        twin: RateChange,
    ) -> Result<(), RegistryError> {
        let found = self.find::<RateLimiter>(name);
        if let Some(limiter) = &found {
            local(limiter)?;
        }
        let twins = &self.store::<RateLimiter>().twins;
        let found = twins.change(name, twin, &self.inner.events, cause)? || found.is_some();
        if found {
            Ok(())
        } else {
            Err(RegistryError::NotFound {
                kind: Kind::RateLimiter,
                name: name.to_owned(),
            })
        }
    }

    /// Changes the bulkhead called `name`'s `max_concurrent_calls`; calls in
    /// flight keep their slots. Lasts, through every reload and
    /// `configure_bulkhead`, until [`release`](Self::release).
    pub fn set_bulkhead_size(
        &self,
        name: &str,
        max_concurrent_calls: u32,
    ) -> Result<(), RegistryError> {
        let _settings = self.store::<Bulkhead>().code.read();
        let bulkhead = self.existing::<Bulkhead>(name)?;
        bulkhead
            .set_max_concurrent_calls(max_concurrent_calls)
            .map_err(|source| RegistryError::InvalidConfig {
                kind: Kind::Bulkhead,
                name: name.to_owned(),
                source,
            })?;
        self.tune(Kind::Bulkhead, name, |t| {
            t.max_concurrent_calls = Some(max_concurrent_calls)
        });
        tracing::info!(
            kind = "bulkhead",
            name,
            max_concurrent_calls,
            "size changed"
        );
        Ok(())
    }
}

impl Registry {
    /// Applies the operators' limits and timeouts again to the Redis-backed
    /// rate limiters a reload rebuilt.
    pub(crate) fn reassert_rate_twins(&self) {
        let tunings: Vec<(Arc<str>, crate::overrides::Tuning)> = (self.inner.overrides.tunings)
            .lock()
            .iter()
            .filter(|((kind, _), _)| *kind == Kind::RateLimiter)
            .map(|((_, name), t)| (Arc::clone(name), *t))
            .collect();
        let twins = &self.store::<RateLimiter>().twins;
        for (name, tuning) in tunings {
            twins.reassert(&name, tuning, &self.inner.events);
        }
    }

    /// Records an operator's run-time setting on the `kind` called `name`.
    fn tune(&self, kind: Kind, name: &str, set: impl FnOnce(&mut crate::overrides::Tuning)) {
        let mut tunings = self.inner.overrides.tunings.lock();
        set(tunings.entry((kind, name.into())).or_default());
    }

    /// Switches the chaos instance called `name` on: while on, its calls get
    /// the configured latency, errors and results at their rates. With a
    /// `ttl` it switches itself off once `ttl` has passed on the registry's
    /// clock (checked on every call through it and every snapshot, so a
    /// [`ManualClock`](resil_core::clock::ManualClock) test sees it at
    /// once); without one it stays on until [`disable_chaos`](Self::disable_chaos).
    /// `reason` shows in the events, the logs, the snapshot and the health
    /// summary (DEGRADED while on, never DOWN). The switch survives every
    /// reload and `configure_chaos`, whatever they change, until its TTL or
    /// [`release`](Self::release). Management acts only on instances that
    /// exist: `NotFound` otherwise.
    pub fn enable_chaos(
        &self,
        name: &str,
        ttl: Option<Duration>,
        reason: &str,
    ) -> Result<(), RegistryError> {
        // Held while switching: a reload or a `configure_chaos` replaces the
        // instance under this lock's write side, so the switch lands either
        // on the old instance before it is carried over, or on the new one.
        let now = self.now();
        let overrides = &self.inner.overrides;
        self.switch(name, |chaos| {
            enable_chaos(overrides, now, chaos, name, ttl, reason)
        })
    }

    /// Switches the chaos instance called `name` off (also one its file
    /// entry enabled), with the operator's `reason`. Stays off through every
    /// reload and `configure_chaos`, whatever they change (the file's
    /// `enabled` included), until [`release`](Self::release).
    pub fn disable_chaos(&self, name: &str, reason: &str) -> Result<(), RegistryError> {
        let now = self.now();
        let overrides = &self.inner.overrides;
        self.switch(name, |chaos| {
            disable_chaos(overrides, now, chaos, name, reason)
        })
    }

    /// Whether the chaos instance called `name` is injecting, why, and for
    /// how long more; `None` when no such instance exists.
    pub fn chaos_status(&self, name: &str) -> Option<ChaosStatus> {
        self.find(name).map(|c| chaos_status(&c))
    }

    /// An operator's switch on the existing instance `name` of kind `P`:
    /// `switch` acts on it and says what to announce.
    fn switch<P: Primitive>(
        &self,
        name: &str,
        switch: impl FnOnce(&P) -> RegistryEventKind,
    ) -> Result<(), RegistryError> {
        // Held while switching: a reload or a `configure_*` replaces the
        // instance under this lock's write side, so the switch lands either
        // on the old instance before it is carried over, or on the new one.
        let _settings = self.store::<P>().code.read();
        let instance = self.existing::<P>(name)?;
        let what = switch(&instance);
        let entry = self.store::<P>().entries.get(name);
        self.inner.events.publish(
            P::KIND,
            name.into(),
            what,
            entry.as_ref().map(|e| &e.slot.history),
        );
        Ok(())
    }
}

/// The override timer: sleeps until the nearest TTL (re-reading the registry's
/// clock at most once a second, so a manual or adjusted clock is followed),
/// expires what is due, and exits when nothing is pending or the registry is
/// gone.
fn override_timer(registry: Weak<Inner>) {
    const MAX_NAP: Duration = Duration::from_secs(1);
    loop {
        let nap = {
            let Some(inner) = registry.upgrade() else {
                return;
            };
            let registry = Registry { inner };
            let expired = registry.run_due_overrides();
            if expired > 0 {
                *registry.inner.overrides.timer_expired.lock() += expired;
                registry.inner.overrides.timer_progress.notify_all();
            }
            let next = registry.inner.overrides.next_deadline();
            match next {
                None => {
                    registry
                        .inner
                        .overrides
                        .timer_running
                        .store(false, Ordering::Release);
                    // An override set between the check and the store would
                    // have seen the flag still set: look once more.
                    if registry.inner.overrides.next_deadline().is_some()
                        && !registry
                            .inner
                            .overrides
                            .timer_running
                            .swap(true, Ordering::AcqRel)
                    {
                        continue;
                    }
                    return;
                }
                Some(at) => {
                    let now = registry.now();
                    at.saturating_sub(now)
                        .clamp(Duration::from_millis(1), MAX_NAP)
                }
            }
        };
        std::thread::sleep(nap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resil_core::clock::ManualClock;

    #[test]
    fn the_timer_thread_expires_an_override_by_itself_once_the_registry_clock_passes_the_ttl() {
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock.clone()).build();
        let cb = registry.circuit_breaker("x");
        registry
            .force_open("x", Some(Duration::from_secs(30)), "drill")
            .unwrap();
        clock.advance(Duration::from_secs(30));
        // Nothing but the timer thread runs the expiry from here on: wait for
        // it to report (a bound, not a timing assertion).
        let overrides = &registry.inner.overrides;
        let mut expired = overrides.timer_expired.lock();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while *expired == 0 {
            if overrides
                .timer_progress
                .wait_until(&mut expired, deadline)
                .timed_out()
            {
                break;
            }
        }
        assert_eq!(*expired, 1, "the timer expired the override");
        drop(expired);
        assert_eq!(cb.state(), State::Closed);
    }
}
