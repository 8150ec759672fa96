//! Shadow trials: a config staged beside the one in force, on the same
//! calls, reporting what it would have done before it acts.
//!
//! A valid but wrong threshold pushed to every replica opens them all
//! together, or leaves them all unprotected (seed 000 §二十八). A trial
//! answers first: [`Registry::stage_shadow`] validates a config as a reload
//! would (every rule, all or nothing) and records it as a
//! [`ConfigVersion`](crate::ConfigVersion) with status
//! [`Shadow`](crate::VersionStatus::Shadow), applying nothing. Each circuit
//! breaker, rate limiter, bulkhead and retry whose settings it changes gets
//! a shadow ([`Shadowed::start_shadow`]): the new settings see the same
//! calls and outcomes and record what they would have done — a breaker's
//! transitions and refusals, a limiter's and a bulkhead's refusals, a
//! retry's retries and give-ups — while the live instance decides every
//! call as before (what each kind's shadow can and cannot see is in
//! [`resil_core::shadow`]). The report ([`Registry::shadow_trial`], the snapshot, the
//! `/actuator/shadow` endpoint, `resil_shadow_*` metrics, `SHADOW` events
//! in each instance's history and log lines under target `resil::shadow`)
//! says, per instance, what the trial would have done.
//!
//! Then an operator decides: [`Registry::promote_shadow`] applies the staged
//! version as a new version (a reload from source management, its
//! `promoted_from` naming the trial), or [`Registry::discard_shadow`] drops
//! it. One trial at a time; a reload applied meanwhile ends it (the trial
//! compared against settings no longer in force), and a `configure_*`
//! rebuild of an instance keeps its shadow.
//!
//! The other kinds (time limiters, thread-pool bulkheads, …) have no
//! shadows: a staged change to one is listed in
//! [`ShadowTrial::not_trialled`] and applies only on promotion.

use std::sync::{Arc, Weak};
use std::time::SystemTime;

use parking_lot::Mutex;
use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerEventKind};
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::shadow::Shadowed;

use crate::config::FileConfig;
use crate::event::RegistryEventKind;
use crate::handle::Handle;
use crate::kind::Kind;
use crate::primitive::Primitive;
use crate::registry::{Inner, Registry};
use crate::reload::{ReloadError, ReloadReport};
use crate::telemetry::describe::{Family, Metric};
use crate::telemetry::exposition::Sample;
use crate::telemetry::ring::{iso8601, Ring};
use crate::versions::{VersionError, VersionSource};

/// How many transitions a shadow keeps in its report (the count goes on).
const KEPT_TRANSITIONS: usize = 64;

/// The trial running beside the config in force: what each shadow would
/// have done so far.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShadowTrial {
    /// The staged config version on trial.
    pub version: u64,
    /// Who staged it.
    pub by: String,
    /// When it was staged (ISO-8601 UTC, the registry's wall clock).
    pub started: String,
    /// Each shadowed instance, by kind and name.
    pub instances: Vec<ShadowInstance>,
    /// Instances (`kind name`) the staged config changes that have no
    /// shadow (kinds other than the circuit breaker, rate limiter, bulkhead
    /// and retry): the change applies only on promotion, untried.
    pub not_trialled: Vec<String>,
}

impl ShadowTrial {
    /// The shadow of the `kind` called `name`.
    pub fn instance(&self, kind: Kind, name: &str) -> Option<&ShadowInstance> {
        self.instances
            .iter()
            .find(|i| i.kind == kind.as_str() && i.name == name)
    }
}

/// What one instance's shadow would have done.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShadowInstance {
    /// The kind ([`Kind::as_str`]).
    pub kind: &'static str,
    /// The instance name.
    pub name: String,
    /// The live instance's state (`CLOSED`, …; a breaker's only).
    pub live_state: Option<&'static str>,
    /// The state the staged settings would be in (a breaker's only).
    pub shadow_state: Option<&'static str>,
    /// The transitions the staged settings would have made, oldest first
    /// (the last 64).
    pub transitions: Vec<ShadowTransition>,
    /// How many transitions they would have made in all.
    pub transition_count: u64,
    /// Calls they would have refused (a breaker's, a rate limiter's or a
    /// bulkhead's refusals; 0 for a retry).
    pub would_have_refused: u64,
    /// Calls they would have let through only after a wait: a rate
    /// limiter's reservations of a later period's permits, and calls that
    /// found a bulkhead full with a nonzero `max-wait-duration` (whether a
    /// slot came free in time is unknown).
    pub would_have_waited: u64,
    /// Retries they would have made (a retry's; the last one of an
    /// unobserved call included).
    pub would_have_retried: u64,
    /// Calls whose attempts they would have run out of (a retry's).
    pub would_have_given_up: u64,
    /// Calls whose outcome under them is unknown: calls the live instance
    /// refused that they would have let through (they never ran), and for
    /// a retry, calls the live retry ended where they would have made
    /// another attempt. While 0, the shadow's report is exactly what the
    /// staged settings would have done (for calls that do not overlap).
    pub unobserved: u64,
    /// Outcomes the shadow could not classify because one of its
    /// predicates panicked.
    pub predicate_panics: u64,
    /// The staged settings' failure rate in percent (`None` below their
    /// minimum number of calls).
    pub failure_rate: Option<f32>,
    /// Their slow-call rate in percent (`None` likewise).
    pub slow_call_rate: Option<f32>,
    /// Calls in their sliding window.
    pub buffered_calls: u64,
}

/// One transition the staged settings would have made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShadowTransition {
    /// The state left (`CLOSED`, …).
    pub from: &'static str,
    /// The state entered (`OPEN`, …).
    pub to: &'static str,
    /// When (ISO-8601 UTC, the registry's wall clock).
    pub at: String,
}

/// Why a trial could not be staged, promoted or discarded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ShadowError {
    /// A trial is running already (its version): promote or discard it first.
    Running(u64),
    /// No trial is running.
    NoTrial,
    /// The staged config changes no instance of a kind that has shadows
    /// (the changed instances of other kinds are listed).
    NothingToTrial(Vec<String>),
    /// The staged config is refused as a reload would refuse it (every
    /// problem listed); nothing was staged.
    Invalid(ReloadError),
    /// The version to stage is unknown or was refused.
    Version(VersionError),
}

impl std::fmt::Display for ShadowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShadowError::Running(v) => write!(
                f,
                "a shadow trial of config version {v} is running: promote or discard it first"
            ),
            ShadowError::NoTrial => f.write_str("no shadow trial is running"),
            ShadowError::NothingToTrial(others) if others.is_empty() => f.write_str(
                "the staged config changes no circuit breaker's, rate limiter's, bulkhead's or \
                 retry's settings: nothing to trial",
            ),
            ShadowError::NothingToTrial(others) => write!(
                f,
                "the staged config changes no circuit breaker's, rate limiter's, bulkhead's or \
                 retry's settings, only {} (no shadows for those kinds): nothing to trial",
                others.join(", ")
            ),
            ShadowError::Invalid(e) => write!(f, "shadow trial refused: {e}"),
            ShadowError::Version(e) => write!(f, "shadow trial refused: {e}"),
        }
    }
}

impl std::error::Error for ShadowError {}

/// What a kind's shadow needs from the trial that starts it.
// `pub` in a private module: the sealed `Hooks::start_shadow` takes it.
pub struct TrialContext {
    pub(crate) version: u64,
    pub(crate) registry: Weak<Inner>,
}

/// One running shadow, as its kind started it.
pub trait ShadowRun: Send + Sync {
    /// What it would have done so far.
    fn report(&self) -> ShadowInstance;
    /// Detaches it from its live instance (it sees no more calls).
    fn stop(&self);
    /// Publishes a `SHADOW` event of its instance (`what`, `detail`).
    fn announce(&self, registry: &Registry, version: u64, what: &'static str, detail: String);
    /// One line saying what it would have done (`report` is its own).
    fn summary(&self, report: &ShadowInstance) -> String;
    /// Its instance's kind.
    fn kind(&self) -> Kind;
    /// Its metrics (`report` is its own).
    fn samples(&self, report: &ShadowInstance, out: &mut Vec<Sample>);
}

/// The running trial.
pub(crate) struct Trial {
    version: u64,
    by: String,
    started: SystemTime,
    file: Arc<FileConfig>,
    runs: Vec<Box<dyn ShadowRun>>,
    not_trialled: Vec<String>,
}

impl Trial {
    fn report(&self) -> ShadowTrial {
        ShadowTrial {
            version: self.version,
            by: self.by.clone(),
            started: iso8601(self.started),
            instances: self.runs.iter().map(|r| r.report()).collect(),
            not_trialled: self.not_trialled.clone(),
        }
    }

    fn stop(&self) {
        for run in &self.runs {
            run.stop();
        }
    }
}

/// What a kind that has shadows tells a trial (the breaker, the rate
/// limiter, the bulkhead and the retry); the rest of a shadow's run is
/// [`Run`], the same for every kind.
pub(crate) trait ShadowKind:
    Primitive + Shadowed<Config = <Self as Primitive>::Config>
{
    /// Taps the news of a shadow just started: by default, the first time
    /// it would have done each thing differently (a refusal, a wait, a
    /// retry, …) is a `SHADOW` event in the instance's history (the
    /// breaker's transitions go to the report and the history instead).
    fn tap(live: &Handle<Self>, shadow: &Self, tap: &Tap) {
        let registry = tap.registry.clone();
        let version = tap.version;
        let name = Arc::clone(&tap.name);
        // Weak, and no map look-up in the tap, as for the breaker's.
        let slot = Arc::downgrade(live.slot());
        shadow.on_first_divergence(move |what| {
            let Some(inner) = registry.upgrade() else {
                return;
            };
            let slot = slot.upgrade();
            Registry { inner }.publish_shadow(
                Self::KIND,
                &name,
                version,
                what.as_str(),
                what.to_string(),
                slot.as_ref().map(|s| &s.history),
            );
        });
    }

    /// Fills in what the shadow would have done so far, beside the live
    /// instance.
    fn report(live: &Self, shadow: &Self, into: &mut ShadowInstance);

    /// What it would have done, in one line (after "`kind` 'name' ").
    fn summary(i: &ShadowInstance) -> String;

    /// Its `resil_shadow_<kind>_*` counters: family and value.
    fn counters(i: &ShadowInstance) -> Vec<(Family, u64)>;

    /// Its gauges beyond the counters (the breaker's state).
    fn gauges(_i: &ShadowInstance, _labels: &[(&'static str, String)], _out: &mut Vec<Sample>) {}
}

/// What a tap needs to report a shadow's news.
pub(crate) struct Tap {
    transitions: Arc<Mutex<(Vec<ShadowTransition>, u64)>>,
    registry: Weak<Inner>,
    version: u64,
    name: Arc<str>,
}

/// A running shadow of an instance of kind `P`.
pub(crate) struct Run<P: ShadowKind> {
    handle: Handle<P>,
    shadow: P,
    transitions: Arc<Mutex<(Vec<ShadowTransition>, u64)>>,
}

impl<P: ShadowKind> Run<P> {
    /// Starts the shadow of `config` beside the instance `handle` follows.
    pub(crate) fn start(
        handle: &Handle<P>,
        config: &<P as Primitive>::Config,
        trial: &TrialContext,
    ) -> Box<dyn ShadowRun> {
        let shadow = Shadowed::start_shadow(&**handle, config.clone());
        let transitions = Arc::new(Mutex::new((Vec::new(), 0)));
        Box::new(Run {
            handle: handle.clone(),
            shadow,
            transitions,
        })
        .tapped(trial)
    }

    fn tapped(self: Box<Self>, trial: &TrialContext) -> Box<dyn ShadowRun> {
        let tap = Tap {
            transitions: Arc::clone(&self.transitions),
            registry: trial.registry.clone(),
            version: trial.version,
            name: self.handle.registry_name().into(),
        };
        P::tap(&self.handle, &self.shadow, &tap);
        self
    }
}

impl<P: ShadowKind> Drop for Run<P> {
    /// A trial dropped without an end (the registry itself dropped) still
    /// detaches its shadow.
    fn drop(&mut self) {
        self.stop();
    }
}

impl<P: ShadowKind> ShadowRun for Run<P> {
    fn report(&self) -> ShadowInstance {
        let (transitions, transition_count) = self.transitions.lock().clone();
        let mut report = ShadowInstance {
            kind: P::KIND.as_str(),
            name: self.handle.registry_name().to_owned(),
            live_state: None,
            shadow_state: None,
            transitions,
            transition_count,
            would_have_refused: 0,
            would_have_waited: 0,
            would_have_retried: 0,
            would_have_given_up: 0,
            unobserved: 0,
            predicate_panics: 0,
            failure_rate: None,
            slow_call_rate: None,
            buffered_calls: 0,
        };
        P::report(&self.handle, &self.shadow, &mut report);
        report
    }

    fn stop(&self) {
        // The shadow may have moved to a rebuilt instance: stop whichever
        // instance holds it now.
        if self.handle.shadow().is_some() {
            self.handle.stop_shadow();
        }
    }

    fn announce(&self, registry: &Registry, version: u64, what: &'static str, detail: String) {
        let name = self.handle.registry_name();
        let slot = registry
            .store::<P>()
            .entries
            .get(name)
            .map(|e| Arc::clone(&e.slot));
        registry.publish_shadow(
            P::KIND,
            &name.into(),
            version,
            what,
            detail,
            slot.as_ref().map(|s| &s.history),
        );
    }

    fn summary(&self, report: &ShadowInstance) -> String {
        P::summary(report)
    }

    fn kind(&self) -> Kind {
        P::KIND
    }

    fn samples(&self, report: &ShadowInstance, out: &mut Vec<Sample>) {
        let labels = vec![("name", report.name.clone())];
        for (family, n) in P::counters(report) {
            out.push(Sample {
                labels: labels.clone(),
                metric: Metric::counter(family, None, n),
            });
        }
        P::gauges(report, &labels, out);
    }
}

impl ShadowKind for CircuitBreaker {
    fn tap(live: &Handle<Self>, shadow: &Self, tap: &Tap) {
        let sink = Arc::clone(&tap.transitions);
        let registry = tap.registry.clone();
        let version = tap.version;
        let name = Arc::clone(&tap.name);
        // Weak: the slot holds the live breaker, which holds the shadow,
        // which holds this tap. No map look-up in the tap either: it runs
        // on a call's thread under the shadow's read lock, which a rebuild
        // (holding the map's shard) waits for.
        let slot = Arc::downgrade(live.slot());
        shadow.tap_notable(move |event| {
            let CircuitBreakerEventKind::StateTransition { from, to } = event.kind() else {
                return;
            };
            let Some(inner) = registry.upgrade() else {
                return;
            };
            let at = inner.events.wall().now().1;
            {
                let mut kept = sink.lock();
                if kept.0.len() == KEPT_TRANSITIONS {
                    kept.0.remove(0);
                }
                kept.0.push(ShadowTransition {
                    from: from.as_str(),
                    to: to.as_str(),
                    at: iso8601(at),
                });
                kept.1 += 1;
            }
            let slot = slot.upgrade();
            Registry { inner }.publish_shadow(
                Kind::CircuitBreaker,
                &name,
                version,
                "would_transition",
                format!("would have moved {from} -> {to}"),
                slot.as_ref().map(|s| &s.history),
            );
        });
    }

    fn report(live: &Self, shadow: &Self, i: &mut ShadowInstance) {
        let m = shadow.metrics();
        i.live_state = Some(live.state().as_str());
        i.shadow_state = Some(shadow.state().as_str());
        i.would_have_refused = shadow.call_totals().not_permitted();
        i.unobserved = shadow.unobserved_calls();
        i.predicate_panics = shadow.shadow_panics();
        i.failure_rate = m.failure_rate();
        i.slow_call_rate = m.slow_call_rate();
        i.buffered_calls = m.buffered_calls();
    }

    fn summary(i: &ShadowInstance) -> String {
        format!(
            "would have made {} transitions and refused {} calls",
            i.transition_count, i.would_have_refused
        )
    }

    fn counters(i: &ShadowInstance) -> Vec<(Family, u64)> {
        const TRANSITIONS: Family = Family::new(
            "resil_shadow_circuitbreaker_transitions",
            "Transitions a shadow trial's staged settings would have made",
        );
        const NOT_PERMITTED: Family = Family::new(
            "resil_shadow_circuitbreaker_not_permitted_calls",
            "Calls a shadow trial's staged settings would have refused (the live breaker let them through)",
        );
        const UNOBSERVED: Family = Family::new(
            "resil_shadow_circuitbreaker_unobserved_calls",
            "Calls the live breaker refused that a shadow trial's staged settings would have let through (their outcome is unknown)",
        );
        vec![
            (TRANSITIONS, i.transition_count),
            (NOT_PERMITTED, i.would_have_refused),
            (UNOBSERVED, i.unobserved),
        ]
    }

    fn gauges(i: &ShadowInstance, labels: &[(&'static str, String)], out: &mut Vec<Sample>) {
        const STATE: Family = Family::new(
            "resil_shadow_circuitbreaker_state",
            "The state a shadow trial's staged settings would have the circuit breaker in: 1 for that state, 0 for the others",
        );
        /// The `state` label values, as the breaker's own state gauge writes them.
        const STATES: [(&str, &str); 6] = [
            ("CLOSED", "closed"),
            ("OPEN", "open"),
            ("HALF_OPEN", "half_open"),
            ("FORCED_OPEN", "forced_open"),
            ("DISABLED", "disabled"),
            ("METRICS_ONLY", "metrics_only"),
        ];
        for (state, label) in STATES {
            let on = if Some(state) == i.shadow_state {
                1.0
            } else {
                0.0
            };
            let mut labels = labels.to_vec();
            labels.push(("state", label.to_owned()));
            out.push(Sample {
                labels,
                metric: Metric::gauge(STATE, None, on),
            });
        }
    }
}

impl ShadowKind for RateLimiter {
    fn report(_live: &Self, shadow: &Self, i: &mut ShadowInstance) {
        i.would_have_refused = shadow.metrics().failed_acquisitions();
        i.would_have_waited = shadow.shadow_waited_acquisitions();
        i.unobserved = shadow.unobserved_calls();
        i.predicate_panics = shadow.shadow_panics();
    }

    fn summary(i: &ShadowInstance) -> String {
        format!(
            "would have refused {} calls; {} would have waited",
            i.would_have_refused, i.would_have_waited
        )
    }

    fn counters(i: &ShadowInstance) -> Vec<(Family, u64)> {
        const NOT_PERMITTED: Family = Family::new(
            "resil_shadow_ratelimiter_not_permitted_calls",
            "Acquisitions a shadow trial's staged settings would have refused",
        );
        const WAITED: Family = Family::new(
            "resil_shadow_ratelimiter_waited_calls",
            "Acquisitions a shadow trial's staged settings would have granted only after waiting for a later period's permits",
        );
        const UNOBSERVED: Family = Family::new(
            "resil_shadow_ratelimiter_unobserved_calls",
            "Acquisitions the live rate limiter refused that a shadow trial's staged settings would have granted",
        );
        vec![
            (NOT_PERMITTED, i.would_have_refused),
            (WAITED, i.would_have_waited),
            (UNOBSERVED, i.unobserved),
        ]
    }
}

impl ShadowKind for Bulkhead {
    fn report(_live: &Self, shadow: &Self, i: &mut ShadowInstance) {
        i.would_have_refused = shadow.metrics().rejected_calls();
        i.would_have_waited = shadow.shadow_waited_calls();
        i.unobserved = shadow.unobserved_calls();
    }

    fn summary(i: &ShadowInstance) -> String {
        format!(
            "would have refused {} calls; {} would have waited",
            i.would_have_refused, i.would_have_waited
        )
    }

    fn counters(i: &ShadowInstance) -> Vec<(Family, u64)> {
        const NOT_PERMITTED: Family = Family::new(
            "resil_shadow_bulkhead_not_permitted_calls",
            "Calls a shadow trial's staged settings would have refused for want of a slot",
        );
        const WAITED: Family = Family::new(
            "resil_shadow_bulkhead_waited_calls",
            "Calls that found a shadow trial's staged limit full while its max-wait-duration is nonzero (they would have waited)",
        );
        const UNOBSERVED: Family = Family::new(
            "resil_shadow_bulkhead_unobserved_calls",
            "Calls the live bulkhead refused that a shadow trial's staged limit had room for (their outcome is unknown)",
        );
        vec![
            (NOT_PERMITTED, i.would_have_refused),
            (WAITED, i.would_have_waited),
            (UNOBSERVED, i.unobserved),
        ]
    }
}

impl ShadowKind for Retry {
    fn report(_live: &Self, shadow: &Self, i: &mut ShadowInstance) {
        i.would_have_retried = shadow.shadow_retries();
        i.would_have_given_up = shadow.shadow_give_ups();
        i.unobserved = shadow.unobserved_calls();
        i.predicate_panics = shadow.shadow_panics();
    }

    fn summary(i: &ShadowInstance) -> String {
        format!(
            "would have retried {} times and given up on {} calls",
            i.would_have_retried, i.would_have_given_up
        )
    }

    fn counters(i: &ShadowInstance) -> Vec<(Family, u64)> {
        const RETRIES: Family = Family::new(
            "resil_shadow_retry_retries",
            "Retries a shadow trial's staged settings would have made on the live calls' attempt outcomes",
        );
        const GIVEN_UP: Family = Family::new(
            "resil_shadow_retry_given_up_calls",
            "Calls whose attempts a shadow trial's staged settings would have run out of",
        );
        const UNOBSERVED: Family = Family::new(
            "resil_shadow_retry_unobserved_calls",
            "Calls the live retry ended where a shadow trial's staged settings would have made another attempt (its outcome is unknown)",
        );
        vec![
            (RETRIES, i.would_have_retried),
            (GIVEN_UP, i.would_have_given_up),
            (UNOBSERVED, i.unobserved),
        ]
    }
}

impl Registry {
    /// Stages `file` as a shadow trial by `who`: validated as a reload
    /// would be (refused with every problem, nothing staged), recorded as
    /// a version with status [`Shadow`](crate::VersionStatus::Shadow), and
    /// run beside the config in force on every circuit breaker, rate
    /// limiter, bulkhead and retry whose settings it changes, deciding
    /// nothing (see [`ShadowTrial`]).
    /// An authorization check belongs to the caller (the actuator's
    /// endpoint does it).
    pub fn stage_shadow(&self, file: FileConfig, who: &str) -> Result<ShadowTrial, ShadowError> {
        let _one_at_a_time = self.inner.reload_lock.lock();
        if let Some(running) = &*self.inner.shadow.lock() {
            return Err(ShadowError::Running(running.version));
        }
        let mut validated = self.validate_locked(&file).map_err(ShadowError::Invalid)?;
        let version = self.inner.versions.peek_next();
        let trial = TrialContext {
            version,
            registry: Arc::downgrade(&self.inner),
        };
        let mut runs = Vec::new();
        let mut not_trialled = Vec::new();
        validated.start_shadows(self, &trial, &mut runs, &mut not_trialled);
        drop(validated);
        if runs.is_empty() {
            return Err(ShadowError::NothingToTrial(not_trialled));
        }
        let file = Arc::new(file);
        let recorded = self.record_staged(&file, VersionSource::Management(who.to_owned()));
        debug_assert_eq!(
            recorded, version,
            "versions are numbered under the reload lock"
        );
        let trial = Trial {
            version,
            by: who.to_owned(),
            started: self.inner.events.wall().now().1,
            file,
            runs,
            not_trialled,
        };
        let report = trial.report();
        tracing::warn!(
            target: "resil::shadow",
            version,
            who,
            instances = report.instances.len(),
            not_trialled = ?report.not_trialled,
            "shadow trial of config version {version} staged by {who}"
        );
        for run in &trial.runs {
            run.announce(self, version, "staged", format!("staged by {who}"));
        }
        *self.inner.shadow.lock() = Some(trial);
        Ok(report)
    }

    /// Stages the kept version `id` (an applied one, say the version a
    /// rollback would return to) as a shadow trial by `who`.
    pub fn stage_shadow_version(&self, id: u64, who: &str) -> Result<ShadowTrial, ShadowError> {
        let file = self.kept_file(id).map_err(ShadowError::Version)?;
        self.stage_shadow((*file).clone(), who)
    }

    /// The `resil_shadow_<kind>_*` metrics of the trial running.
    pub(crate) fn shadow_samples(&self, out: &mut Vec<Sample>) {
        let trial = self.inner.shadow.lock();
        if let Some(trial) = &*trial {
            for run in &trial.runs {
                run.samples(&run.report(), out);
            }
        }
    }

    /// The trial running, with what each shadow would have done so far.
    pub fn shadow_trial(&self) -> Option<ShadowTrial> {
        self.inner.shadow.lock().as_ref().map(Trial::report)
    }

    /// Applies the staged version as the config in force, a new version
    /// from management by `who` whose `promoted_from` is the trial's
    /// version, and ends the trial. Every reload rule holds (all or
    /// nothing, operator switches kept, a breaker whose window keeps its
    /// shape carries its state over); the shadows' own state is not
    /// adopted. A refused promotion changes nothing and the trial goes on.
    pub fn promote_shadow(&self, who: &str) -> Result<ReloadReport, ShadowError> {
        let Some(trial) = self.inner.shadow.lock().take() else {
            return Err(ShadowError::NoTrial);
        };
        let report = trial.report();
        let result = self.reload_promoted((*trial.file).clone(), who, trial.version);
        match result {
            Ok(reloaded) => {
                trial.stop();
                self.log_trial_end(&trial, &report, who, "promoted");
                Ok(reloaded)
            }
            Err(e) => {
                *self.inner.shadow.lock() = Some(trial);
                Err(ShadowError::Invalid(e))
            }
        }
    }

    /// Ends the trial without applying it (`who` in the audit line); its
    /// final report.
    pub fn discard_shadow(&self, who: &str) -> Result<ShadowTrial, ShadowError> {
        let Some(trial) = self.inner.shadow.lock().take() else {
            return Err(ShadowError::NoTrial);
        };
        trial.stop();
        let report = trial.report();
        self.log_trial_end(&trial, &report, who, "discarded");
        Ok(report)
    }

    /// Ends a running trial because version `applied` was applied.
    pub(crate) fn end_shadow_trial(&self, applied: u64) {
        let Some(trial) = self.inner.shadow.lock().take() else {
            return;
        };
        trial.stop();
        let report = trial.report();
        self.log_trial_end(&trial, &report, &format!("version {applied}"), "ended");
    }

    /// The audit line and events of a trial's end: how it ended and what
    /// each shadow would have done.
    fn log_trial_end(&self, trial: &Trial, report: &ShadowTrial, who: &str, how: &'static str) {
        let version = report.version;
        for (run, i) in trial.runs.iter().zip(&report.instances) {
            let summary = run.summary(i);
            tracing::warn!(
                target: "resil::shadow",
                version,
                who,
                kind = i.kind,
                name = %i.name,
                transitions = i.transition_count,
                would_have_refused = i.would_have_refused,
                would_have_waited = i.would_have_waited,
                would_have_retried = i.would_have_retried,
                would_have_given_up = i.would_have_given_up,
                unobserved = i.unobserved,
                "shadow trial of config version {version} {how} by {who}: {} '{}' {summary}",
                run.kind().label(),
                i.name,
            );
            run.announce(self, version, how, format!("{how} by {who}: {summary}"));
        }
    }

    /// Publishes a `SHADOW` event of `name`, recorded in `history`.
    pub(crate) fn publish_shadow(
        &self,
        kind: Kind,
        name: &Arc<str>,
        version: u64,
        what: &'static str,
        detail: String,
        history: Option<&Ring>,
    ) {
        self.inner.events.publish(
            kind,
            Arc::clone(name),
            RegistryEventKind::Shadow {
                version,
                what,
                detail: detail.into(),
            },
            history,
        );
    }
}
