//! Every operator switch in one vocabulary: what is in force
//! ([`Registry::switches`]), how to apply one ([`Registry::apply_switch`])
//! and how to end one ([`Registry::release`]). A switch outlives every
//! reload and `configure_*`, whatever they change, until its TTL or its
//! release; a fleet shares them in this shape.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use resil_core::bulkhead::Bulkhead;
use resil_core::chaos::Chaos;
use resil_core::circuit_breaker::{CircuitBreaker, State};
use resil_core::clock::Clock;
use resil_core::rate_limiter::RateLimiter;

use crate::error::RegistryError;
use crate::event::RegistryEventKind;
use crate::kind::Kind;
use crate::kinds::circuit_breaker::transition;
use crate::kinds::rate_limiter::RateChange;
use crate::primitive::Primitive;
use crate::registry::Registry;

/// What an operator switched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwitchAction {
    /// A breaker forced open ([`Registry::force_open`]).
    ForceOpen,
    /// A breaker disabled ([`Registry::disable`]).
    Disable,
    /// A breaker in METRICS_ONLY ([`Registry::metrics_only`]).
    MetricsOnly,
    /// Chaos injection on ([`Registry::enable_chaos`]).
    ChaosOn,
    /// Chaos injection off ([`Registry::disable_chaos`]).
    ChaosOff,
    /// A rate limiter's `limit-for-period` ([`Registry::set_rate_limit`]).
    RateLimit(u32),
    /// A rate limiter's `timeout-duration` ([`Registry::set_rate_limiter_timeout`]).
    RateTimeout(Duration),
    /// A bulkhead's `max-concurrent-calls` ([`Registry::set_bulkhead_size`]).
    BulkheadSize(u32),
}

impl SwitchAction {
    /// The kind of instance the action applies to.
    pub const fn kind(self) -> Kind {
        match self {
            SwitchAction::ForceOpen | SwitchAction::Disable | SwitchAction::MetricsOnly => {
                Kind::CircuitBreaker
            }
            SwitchAction::ChaosOn | SwitchAction::ChaosOff => Kind::Chaos,
            SwitchAction::RateLimit(_) | SwitchAction::RateTimeout(_) => Kind::RateLimiter,
            SwitchAction::BulkheadSize(_) => Kind::Bulkhead,
        }
    }

    /// Whether the action takes a TTL (the modes and chaos on).
    pub const fn takes_ttl(self) -> bool {
        matches!(
            self,
            SwitchAction::ForceOpen
                | SwitchAction::Disable
                | SwitchAction::MetricsOnly
                | SwitchAction::ChaosOn
        )
    }
}

impl fmt::Display for SwitchAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchAction::ForceOpen => f.write_str("force_open"),
            SwitchAction::Disable => f.write_str("disable"),
            SwitchAction::MetricsOnly => f.write_str("metrics_only"),
            SwitchAction::ChaosOn => f.write_str("chaos_on"),
            SwitchAction::ChaosOff => f.write_str("chaos_off"),
            SwitchAction::RateLimit(n) => write!(f, "rate_limit={n}"),
            SwitchAction::RateTimeout(d) => write!(f, "rate_timeout={}ms", d.as_millis()),
            SwitchAction::BulkheadSize(n) => write!(f, "bulkhead_size={n}"),
        }
    }
}

/// One operator switch in force on one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// The instance's name (its kind is the action's).
    pub name: String,
    /// What was switched.
    pub action: SwitchAction,
    /// Why, as the operator said.
    pub reason: String,
    /// How long it stays in force from now; `None`: until released.
    pub ttl: Option<Duration>,
}

impl Registry {
    /// Every operator switch in force, ordered by kind, name and action.
    pub fn switches(&self) -> Vec<Switch> {
        self.run_due_overrides();
        let now = self.ttl_now();
        let left = |until: Option<Duration>| until.map(|u| u.saturating_sub(now));
        let overrides = &self.inner.overrides;
        let mut out = Vec::new();
        for (name, o) in overrides.by_name.lock().iter() {
            let action = match o.mode {
                State::ForcedOpen => SwitchAction::ForceOpen,
                State::Disabled => SwitchAction::Disable,
                _ => SwitchAction::MetricsOnly,
            };
            out.push(Switch {
                name: name.to_string(),
                action,
                reason: o.reason.to_string(),
                ttl: left(o.until),
            });
        }
        for (name, s) in overrides.chaos.lock().iter() {
            out.push(Switch {
                name: name.to_string(),
                action: if s.enabled {
                    SwitchAction::ChaosOn
                } else {
                    SwitchAction::ChaosOff
                },
                reason: s.reason.to_string(),
                ttl: left(s.until),
            });
        }
        for ((_, name), t) in overrides.tunings.lock().iter() {
            let actions = [
                t.limit_for_period.map(SwitchAction::RateLimit),
                t.timeout_duration.map(SwitchAction::RateTimeout),
                t.max_concurrent_calls.map(SwitchAction::BulkheadSize),
            ];
            for action in actions.into_iter().flatten() {
                out.push(Switch {
                    name: name.to_string(),
                    action,
                    reason: String::new(),
                    ttl: None,
                });
            }
        }
        out.sort_by(|a, b| {
            (a.action.kind().as_str(), &a.name, a.action.to_string()).cmp(&(
                b.action.kind().as_str(),
                &b.name,
                b.action.to_string(),
            ))
        });
        out
    }

    /// Applies `switch` through the management operation its action names
    /// (a TTL on an action that takes none is refused with
    /// `IllegalOperation`).
    pub fn apply_switch(&self, switch: &Switch) -> Result<(), RegistryError> {
        let Switch {
            name,
            action,
            reason,
            ttl,
        } = switch;
        if ttl.is_some() && !action.takes_ttl() {
            return Err(RegistryError::IllegalOperation {
                kind: action.kind(),
                name: name.clone(),
                reason: format!("`{action}` takes no TTL"),
            });
        }
        match *action {
            SwitchAction::ForceOpen => self.force_open(name, *ttl, reason),
            SwitchAction::Disable => self.disable(name, *ttl, reason),
            SwitchAction::MetricsOnly => self.metrics_only(name, *ttl, reason),
            SwitchAction::ChaosOn => self.enable_chaos(name, *ttl, reason),
            SwitchAction::ChaosOff => self.disable_chaos(name, reason),
            SwitchAction::RateLimit(n) => self.set_rate_limit(name, n),
            SwitchAction::RateTimeout(d) => self.set_rate_limiter_timeout(name, d),
            SwitchAction::BulkheadSize(n) => self.set_bulkhead_size(name, n),
        }
    }

    /// Ends every operator switch on the `kind` called `name`, returning the
    /// instance to what its settings say: a breaker to the mode the override
    /// interrupted (CLOSED when it was operating normally), a chaos
    /// instance to its `enabled` setting, a rate limiter or bulkhead to its
    /// resolved limit, timeout and size. Whether there was one to end.
    pub fn release(&self, kind: Kind, name: &str) -> Result<bool, RegistryError> {
        self.run_due_overrides();
        match kind {
            Kind::CircuitBreaker => self.release_breaker(name),
            Kind::Chaos => self.release_chaos(name),
            Kind::RateLimiter => self.release_rate_limiter(name),
            Kind::Bulkhead => self.release_tuning::<Bulkhead>(name),
            _ => Ok(false),
        }
    }

    fn release_breaker(&self, name: &str) -> Result<bool, RegistryError> {
        let breaker = self.existing_instance::<CircuitBreaker>(name)?;
        let mut overrides = self.inner.overrides.by_name.lock();
        let Some(released) = overrides.remove(name) else {
            return Ok(false);
        };
        let to = crate::manage::back_to(released.previous);
        transition(&breaker, to).map_err(|reason| RegistryError::IllegalOperation {
            kind: Kind::CircuitBreaker,
            name: name.to_owned(),
            reason,
        })?;
        drop(overrides);
        tracing::info!(kind = "circuit_breaker", name, back_to = %to, "manual override released");
        self.announce::<CircuitBreaker>(
            name,
            RegistryEventKind::ManualTransition {
                to,
                reason: Some("released".into()),
                ttl: None,
            },
        );
        Ok(true)
    }

    fn release_chaos(&self, name: &str) -> Result<bool, RegistryError> {
        let _settings = self.store::<Chaos>().code.read();
        let chaos = self.existing_instance::<Chaos>(name)?;
        if self.inner.overrides.chaos.lock().remove(name).is_none() {
            return Ok(false);
        }
        let enabled = chaos.config().enabled();
        let reason: Arc<str> = "released: as its settings say".into();
        if enabled {
            chaos.enable(Arc::clone(&reason));
        } else {
            chaos.disable(Arc::clone(&reason));
        }
        tracing::info!(kind = "chaos", name, enabled, "chaos switch released");
        self.announce::<Chaos>(
            name,
            RegistryEventKind::ChaosSwitched {
                enabled,
                reason,
                ttl: None,
            },
        );
        Ok(true)
    }

    fn release_tuning<P: Primitive>(&self, name: &str) -> Result<bool, RegistryError> {
        let code = self.store::<P>().code.read();
        let instance = self.existing_instance::<P>(name)?;
        let key = (P::KIND, Arc::<str>::from(name));
        if self.inner.overrides.tunings.lock().remove(&key).is_none() {
            return Ok(false);
        }
        let config = self.resolve::<P>(&self.file(), &code, name)?;
        if !instance.update_in_place(&config) {
            self.replace_with::<P>(name, config, "release");
        }
        drop(code);
        tracing::info!(kind = P::KIND.as_str(), name, "run-time settings released");
        self.announce::<P>(
            name,
            RegistryEventKind::Reconfigured {
                cause: "release".into(),
            },
        );
        Ok(true)
    }

    /// A rate limiter's limit and timeout back to its settings: the local
    /// limiter of the name and its Redis-backed one, whichever run.
    fn release_rate_limiter(&self, name: &str) -> Result<bool, RegistryError> {
        if self.find::<RateLimiter>(name).is_some() {
            if !self.release_tuning::<RateLimiter>(name)? {
                return Ok(false);
            }
        } else {
            let key = (Kind::RateLimiter, Arc::<str>::from(name));
            if self.inner.overrides.tunings.lock().remove(&key).is_none() {
                return Err(RegistryError::NotFound {
                    kind: Kind::RateLimiter,
                    name: name.to_owned(),
                });
            }
        }
        // The Redis-backed limiter: the file's limit and timeout again.
        let file = self.file();
        let config = file.rate_limiter().for_name(name).config().clone();
        let twins = &self.store::<RateLimiter>().twins;
        let events = &self.inner.events;
        let limit = RateChange::Limit(config.limit_for_period());
        twins.change(name, limit, events, "release")?;
        let timeout = RateChange::Timeout(config.timeout_duration());
        twins.change(name, timeout, events, "release")?;
        Ok(true)
    }

    /// Publishes `what` about the instance of kind `P` called `name`.
    fn announce<P: Primitive>(&self, name: &str, what: RegistryEventKind) {
        let entry = self.store::<P>().entries.get(name);
        self.inner.events.publish(
            P::KIND,
            name.into(),
            what,
            entry.as_ref().map(|e| &e.slot.history),
        );
    }

    /// The instance of kind `P` called `name`, or `NotFound`.
    fn existing_instance<P: Primitive>(
        &self,
        name: &str,
    ) -> Result<crate::Handle<P>, RegistryError> {
        self.find::<P>(name).ok_or_else(|| RegistryError::NotFound {
            kind: P::KIND,
            name: name.to_owned(),
        })
    }

    /// Now on the registry's TTL clock.
    pub(crate) fn ttl_now(&self) -> Duration {
        Duration::from_nanos(self.inner.ttl_clock.now_nanos())
    }
}
