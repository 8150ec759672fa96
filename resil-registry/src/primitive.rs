//! What the registry needs of each kind of primitive it holds: the traits
//! only. Each kind's impls are its module in `kinds/`; the one list of
//! kinds (`kinds/mod.rs`) says where each kind's store and file section are.

use std::fmt;
use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::ConfigError;

use crate::classes::{ErrorClasses, ErrorList};
use crate::config::{ErrorNames, FileConfig, Resolved, Section};
use crate::error::RegistryError;
use crate::event::Publisher;
use crate::handle::Handle;
use crate::kind::Kind;
use crate::overrides::Overrides;
use crate::shadow::{ShadowRun, TrialContext};
use crate::store::{CodeSettings, Store, Stores};
use crate::telemetry::describe::Describe;
use crate::telemetry::describe::Telemetry;

pub(crate) use self::sealed::{Hooks, Located};
pub(crate) use crate::config::bind::Bind;
pub(crate) use crate::config::{Apply, Render};

mod sealed {
    use std::sync::Arc;

    use resil_core::clock::SharedClock;

    use super::{ErrorClasses, ErrorList, ErrorNames, FileConfig, Overrides, Resolved, Section};
    use super::{Handle, ShadowRun, TrialContext};
    use super::{Store, Stores};

    /// Where the list of kinds keeps a kind: its store and its part of a
    /// config file. Generated for every kind by the list (`kinds/mod.rs`);
    /// sealed, users cannot name it.
    pub trait Located: Sized {
        /// The validated configuration (the same as [`Primitive::Config`](super::Primitive::Config)).
        type Options;

        /// This kind's store.
        fn store(stores: &Stores) -> &Store<Self>
        where
            Self: super::Primitive;

        /// This kind's part of a config file.
        fn section(file: &FileConfig) -> &Section<Self::Options>;
    }

    /// What the registry does differently per kind, written in the kind's
    /// module. Every hook has a default that suits a kind with nothing
    /// special to say; none reaches the registry itself.
    pub trait Hooks: Located {
        /// The builder code settings transform (the same as
        /// [`Primitive::Builder`](super::Primitive::Builder)).
        type Settings;

        /// Instances of the kind built apart from get-or-create, beside its
        /// own: the rate limiter's Redis-backed twins. [`NoTwins`](super::NoTwins)
        /// for every other kind.
        type Twins: super::Twins<Self::Settings>;

        /// Applies `config` through the instance's run-time setters, when
        /// every difference is one a setter covers; whether it did (the
        /// instance is then kept, nothing it counts is lost).
        fn update_in_place(&self, _config: &Self::Options) -> bool {
            false
        }

        /// The instance that replaces `self` for `config`, and whether it
        /// carried `self`'s state over. `None`: a new instance, nothing
        /// carried (the registry builds it with [`Primitive::create`](super::Primitive::create)).
        fn rebuilt(
            &self,
            _name: Arc<str>,
            _config: &Self::Options,
            _clock: Option<&SharedClock>,
        ) -> Option<(Self, bool)> {
            None
        }

        /// Settles `next` before it replaces `previous` under `name`, while
        /// no handle sees it yet; `overrides` are the operators' switches.
        fn before_install(
            _overrides: &Overrides,
            _name: &str,
            _previous: &Self,
            _next: &Self,
            _carried: bool,
        ) {
        }

        /// Applies again the operator's run-time settings in force on `name`
        /// (`overrides`' tunings) to `self`, after a reload or a `configure_*`
        /// rebuilt it or updated it in place: a managed limit outlives them.
        fn reassert(&self, _overrides: &Overrides, _name: &str) {}

        /// Starts a shadow trial of `config` beside the instance `handle`
        /// follows: the new settings see the same calls and record what
        /// they would have done, deciding nothing (see [`crate::shadow`]).
        /// `None` (the default): the kind has no shadows, and its changes
        /// are listed as not trialled.
        fn start_shadow(
            _handle: &Handle<Self>,
            _config: &Self::Options,
            _trial: &TrialContext,
        ) -> Option<Box<dyn ShadowRun>> {
            None
        }

        /// Turns on what the instance records for telemetry beyond its
        /// defaults, once it is built (on creation and on every rebuild):
        /// `histograms` says whether its timers keep a percentile histogram.
        fn instrument(&self, _histograms: bool) {}

        /// The error-name lists of a file entry, and the predicates they become.
        fn error_lists(_entry: &Resolved<Self::Options>) -> Vec<(ErrorNames<'_>, ErrorList)> {
            Vec::new()
        }

        /// Adds the predicates of the `resil.http` sets `file` gives `name`
        /// for the registered error types (breaker and retry only).
        fn apply_http(
            _classes: &ErrorClasses,
            builder: Self::Settings,
            _file: &crate::config::FileConfig,
            _name: &str,
        ) -> Self::Settings {
            builder
        }

        /// Adds the predicates of one error-name list to a builder.
        fn apply_error_list(
            _classes: &ErrorClasses,
            builder: Self::Settings,
            _list: ErrorList,
            _names: &[String],
        ) -> Self::Settings {
            builder
        }
    }
}

/// A primitive the registry can hold: one of resil-core's types, one kind.
///
/// Sealed; it lets the generic methods ([`Registry::get`](crate::Registry::get),
/// [`Registry::configure`](crate::Registry::configure), …) serve every kind
/// with one implementation.
pub trait Primitive:
    Located<Options = Self::Config>
    + Hooks<Settings = <Self as Primitive>::Builder>
    + Describe
    + Clone
    + Send
    + Sync
    + fmt::Debug
    + 'static
{
    /// The validated configuration.
    type Config: Apply
        + Bind<Builder = <Self as Primitive>::Builder>
        + Render
        + Clone
        + Send
        + Sync
        + fmt::Debug
        + 'static;
    /// Its builder, which code settings transform.
    type Builder: Clone + Send + Sync + fmt::Debug + 'static;
    /// Which kind this is.
    const KIND: Kind;

    /// A builder holding Resilience4j's defaults.
    fn default_builder() -> <Self as Primitive>::Builder;
    /// Validates a builder.
    fn build(builder: <Self as Primitive>::Builder) -> Result<Self::Config, ConfigError> {
        <Self::Config as Apply>::build(builder)
    }
    /// A builder starting from `config`.
    fn to_builder(config: &Self::Config) -> <Self as Primitive>::Builder;
    /// A new instance; `clock` (the registry's, when it has one) times it.
    fn create(name: Arc<str>, config: Self::Config, clock: Option<&SharedClock>) -> Self;
    /// The configuration the instance runs with.
    fn config_of(&self) -> Self::Config;

    /// The builder a config file's entry resolved to.
    #[doc(hidden)]
    fn file_builder(entry: &Resolved<Self::Config>) -> <Self as Primitive>::Builder {
        entry.builder()
    }
}

/// Instances of a kind that its get-or-create does not build, kept in its
/// store beside its own and shown with them: the rate limiter's
/// Redis-backed twins (feature `redis`). `B` is the kind's builder, whose
/// code settings the twins share. Every method has a default that suits a
/// kind without twins ([`NoTwins`]).
pub trait Twins<B>: Default + Send + Sync + 'static {
    /// Rebuilds validated but not yet installed.
    type Pending: Default;

    /// How many exist.
    fn len(&self) -> usize {
        0
    }

    /// Their names, sorted.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Calls `f` with the telemetry of the twin `name`, if it exists.
    fn with(&self, _name: &str, _f: &mut dyn FnMut(&dyn Telemetry)) {}

    /// The labels their metrics carry beside the name (`backend="redis"`),
    /// apart from the local instance of the same name.
    fn labels(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// After the code settings `code` of `name` changed (not yet applied):
    /// the rebuilds they make. Validates only.
    fn reconfigured(
        &self,
        _classes: &ErrorClasses,
        _file: &FileConfig,
        _code: &CodeSettings<B>,
        _name: &str,
    ) -> Result<Self::Pending, RegistryError> {
        Ok(Self::Pending::default())
    }

    /// A reload from `old` to `new`: the rebuilds it makes, with an error for
    /// each twin (or instance of the kind, whose names `local` lists when
    /// asked) it cannot move. Validates only.
    fn reloaded(
        &self,
        _classes: &ErrorClasses,
        _old: &FileConfig,
        _new: &FileConfig,
        _code: &CodeSettings<B>,
        _local: &dyn Fn() -> Vec<String>,
        _errors: &mut Vec<RegistryError>,
    ) -> Self::Pending {
        Self::Pending::default()
    }

    /// Installs validated rebuilds, announcing each with `cause`; the labels
    /// of the replaced ones.
    fn install(&self, _pending: Self::Pending, _events: &Publisher, _cause: &str) -> Vec<String> {
        Vec::new()
    }
}

/// The validated rebuilds of the twins of kind `P`.
pub(crate) type Pending<P> = <<P as Hooks>::Twins as Twins<<P as Primitive>::Builder>>::Pending;

/// The twins of a kind that has none.
#[derive(Debug, Default)]
pub struct NoTwins;

impl<B> Twins<B> for NoTwins {
    type Pending = ();
}
