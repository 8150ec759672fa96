//! Shadow trials: a config staged beside the one in force, on the same
//! calls, reporting what it would have done before it acts.
//!
//! A valid but wrong threshold pushed to every replica opens them all
//! together, or leaves them all unprotected (seed 000 §二十八). A trial
//! answers first: [`Registry::stage_shadow`] validates a config as a reload
//! would (every rule, all or nothing) and records it as a
//! [`ConfigVersion`](crate::ConfigVersion) with status
//! [`Shadow`](crate::VersionStatus::Shadow), applying nothing. Each circuit
//! breaker whose settings it changes gets a shadow
//! ([`CircuitBreaker::start_shadow`](resil_core::circuit_breaker::CircuitBreaker::start_shadow)):
//! the new settings see the same calls and outcomes, run the whole state
//! machine (thresholds, window, predicates), and record the transitions and
//! refusals they would have made; the live breaker decides every call as
//! before. The report ([`Registry::shadow_trial`], the snapshot, the
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
//! Only circuit breakers have shadows: a staged change to another kind is
//! listed in [`ShadowTrial::not_trialled`] and applies only on promotion.

use std::sync::{Arc, Weak};
use std::time::SystemTime;

use parking_lot::Mutex;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEventKind};

use crate::config::FileConfig;
use crate::event::RegistryEventKind;
use crate::handle::Handle;
use crate::kind::Kind;
use crate::registry::{Inner, Registry};
use crate::reload::{ReloadError, ReloadReport};
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
    /// shadow (kinds other than the circuit breaker): the change applies
    /// only on promotion, untried.
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
    /// The live instance's state (`CLOSED`, …).
    pub live_state: &'static str,
    /// The state the staged settings would be in.
    pub shadow_state: &'static str,
    /// The transitions the staged settings would have made, oldest first
    /// (the last 64).
    pub transitions: Vec<ShadowTransition>,
    /// How many transitions they would have made in all.
    pub transition_count: u64,
    /// Calls they would have refused (the live instance let them through).
    pub would_have_refused: u64,
    /// Calls the live instance refused that they would have let through:
    /// those never ran, so their outcome is unknown. While 0, the shadow's
    /// transitions are exactly what the staged settings would have done
    /// (for calls that do not overlap).
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
    /// The staged config changes no instance that has shadows (the
    /// changed instances of other kinds are listed).
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
                "the staged config changes no circuit breaker's settings: nothing to trial",
            ),
            ShadowError::NothingToTrial(others) => write!(
                f,
                "the staged config changes no circuit breaker's settings, only {} (no shadows \
                 for those kinds): nothing to trial",
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

/// A circuit breaker's shadow.
pub(crate) struct BreakerRun {
    handle: Handle<CircuitBreaker>,
    shadow: CircuitBreaker,
    transitions: Arc<Mutex<(Vec<ShadowTransition>, u64)>>,
}

impl BreakerRun {
    /// Starts the shadow of `config` beside the breaker `handle` follows.
    pub(crate) fn start(
        handle: &Handle<CircuitBreaker>,
        config: &CircuitBreakerConfig,
        trial: &TrialContext,
    ) -> Box<dyn ShadowRun> {
        let shadow = handle.start_shadow(config.clone());
        let transitions = Arc::new(Mutex::new((Vec::new(), 0)));
        let sink = Arc::clone(&transitions);
        let registry = trial.registry.clone();
        let version = trial.version;
        let name: Arc<str> = handle.registry_name().into();
        // Weak: the slot holds the live breaker, which holds the shadow,
        // which holds this tap. No map look-up in the tap either: it runs
        // on a call's thread under the shadow's read lock, which a rebuild
        // (holding the map's shard) waits for.
        let slot = Arc::downgrade(handle.slot());
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
        Box::new(BreakerRun {
            handle: handle.clone(),
            shadow,
            transitions,
        })
    }
}

impl Drop for BreakerRun {
    /// A trial dropped without an end (the registry itself dropped) still
    /// detaches its shadow.
    fn drop(&mut self) {
        self.stop();
    }
}

impl ShadowRun for BreakerRun {
    fn report(&self) -> ShadowInstance {
        let (transitions, transition_count) = self.transitions.lock().clone();
        let m = self.shadow.metrics();
        ShadowInstance {
            kind: Kind::CircuitBreaker.as_str(),
            name: self.handle.registry_name().to_owned(),
            live_state: self.handle.state().as_str(),
            shadow_state: self.shadow.state().as_str(),
            transitions,
            transition_count,
            would_have_refused: self.shadow.call_totals().not_permitted(),
            unobserved: self.shadow.unobserved_calls(),
            predicate_panics: self.shadow.shadow_panics(),
            failure_rate: m.failure_rate(),
            slow_call_rate: m.slow_call_rate(),
            buffered_calls: m.buffered_calls(),
        }
    }

    fn stop(&self) {
        // The shadow may have moved to a rebuilt instance: stop whichever
        // instance holds it now.
        if self.handle.shadow().is_some() {
            self.handle.stop_shadow();
        }
    }
}

impl Registry {
    /// Stages `file` as a shadow trial by `who`: validated as a reload
    /// would be (refused with every problem, nothing staged), recorded as
    /// a version with status [`Shadow`](crate::VersionStatus::Shadow), and
    /// run beside the config in force on every circuit breaker whose
    /// settings it changes, deciding nothing (see the [module](self)).
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
        for i in &report.instances {
            self.publish_breaker_shadow(&i.name, version, "staged", format!("staged by {who}"));
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
                self.log_trial_end(&report, who, "promoted");
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
        self.log_trial_end(&report, who, "discarded");
        Ok(report)
    }

    /// Ends a running trial because version `applied` was applied.
    pub(crate) fn end_shadow_trial(&self, applied: u64) {
        let Some(trial) = self.inner.shadow.lock().take() else {
            return;
        };
        trial.stop();
        let report = trial.report();
        self.log_trial_end(&report, &format!("version {applied}"), "ended");
    }

    /// The audit line and events of a trial's end.
    fn log_trial_end(&self, report: &ShadowTrial, who: &str, how: &'static str) {
        let version = report.version;
        for i in &report.instances {
            tracing::warn!(
                target: "resil::shadow",
                version,
                who,
                name = %i.name,
                transitions = i.transition_count,
                would_have_refused = i.would_have_refused,
                unobserved = i.unobserved,
                "shadow trial of config version {version} {how} by {who}: circuit breaker '{}' \
                 would have made {} transitions and refused {} calls",
                i.name,
                i.transition_count,
                i.would_have_refused,
            );
            self.publish_breaker_shadow(&i.name, version, how, format!("{how} by {who}"));
        }
    }

    /// Publishes a `SHADOW` event of the breaker `name`, recorded in its
    /// history (looked up by name: not from a tap).
    fn publish_breaker_shadow(&self, name: &str, version: u64, what: &'static str, detail: String) {
        let slot = self
            .store::<CircuitBreaker>()
            .entries
            .get(name)
            .map(|e| Arc::clone(&e.slot));
        self.publish_shadow(
            Kind::CircuitBreaker,
            &name.into(),
            version,
            what,
            detail,
            slot.as_ref().map(|s| &s.history),
        );
    }

    /// Publishes a `SHADOW` event of `name`, recorded in `history`.
    fn publish_shadow(
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
