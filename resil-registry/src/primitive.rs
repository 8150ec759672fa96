//! What the registry needs of each kind of primitive it holds: the traits
//! only. Each kind's impls are its module in `kinds/`; the one list of
//! kinds (`kinds/mod.rs`) says where each kind's store and file section are.

use std::fmt;
use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::ConfigError;

use crate::classes::{ErrorClasses, ErrorList};
use crate::config::{ErrorNames, FileConfig, Resolved, Section};
use crate::kind::Kind;
use crate::overrides::Overrides;
use crate::store::{CodeSettings, KindVisitor, Store, Stores};
use crate::telemetry::describe::Describe;

pub(crate) use self::sealed::{Hooks, Located};
pub(crate) use crate::config::bind::Bind;
pub(crate) use crate::config::{Apply, Render};

mod sealed {
    use std::sync::Arc;

    use resil_core::clock::SharedClock;

    use resil_core::rate_limiter::RateLimiterConfigBuilder;

    use super::{CodeSettings, KindVisitor, Store, Stores};
    use super::{ErrorClasses, ErrorList, ErrorNames, FileConfig, Overrides, Resolved, Section};

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

        /// The error-name lists of a file entry, and the predicates they become.
        fn error_lists(_entry: &Resolved<Self::Options>) -> Vec<(ErrorNames<'_>, ErrorList)> {
            Vec::new()
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

        /// What a walk over every kind visits right after this one: the
        /// rate limiter's Redis-backed twins, beside it.
        fn after_visit(_visitor: &mut impl KindVisitor) {}

        /// The code settings the rate limiter's Redis-backed twins share:
        /// `code` itself for the rate limiter, nothing for other kinds.
        fn rate_limiter_code(
            _code: &CodeSettings<Self::Settings>,
        ) -> Option<&CodeSettings<RateLimiterConfigBuilder>> {
            None
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
