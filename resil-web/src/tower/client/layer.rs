//! The client layer and its builder.

use std::fmt;
use std::time::Duration;

use http::header::HeaderName;
use http::HeaderMap;
use resil_core::hedging::Hedging;
use resil_core::keyed::{BudgetHandle, KeyedRetryBudget};
use resil_core::retry::{OnBudget, Retry};
use resil_registry::config::HttpClientEntry;
use resil_registry::Handle;
use tower_layer::Layer;

use super::outbound::Outbound;
use super::policy::{ReplayMethods, ReplayPolicy};
use super::service::Client;
use crate::tower::layer::{Builder, ResilienceLayer};
use crate::tower::respond::AsErrors;
use crate::tower::shared::Shared;

/// What every service of one client layer shares (leaked once per built
/// layer, as the [`ResilienceLayer`]'s instances are).
pub(crate) struct ClientShared<C: 'static> {
    pub(crate) resilience: &'static Shared<C, AsErrors>,
    pub(crate) retry: Option<Handle<Retry>>,
    pub(crate) hedging: Option<Handle<Hedging>>,
    /// The replay rules and the deadline header, following the registry's
    /// file through its reloads.
    pub(crate) settings: Handle<ClientSettings>,
    /// The retry budget per key ([`ClientBuilder::retry_budget_per`]).
    pub(crate) budgets: Option<(KeyedRetryBudget, RetryBudgetKey)>,
    pub(crate) name: String,
}

/// The settings a client layer reads per request: code's over the file's
/// `resil.http-client.instances.<name>` over a preset's over the defaults.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientSettings {
    pub(crate) policy: ReplayPolicy,
    pub(crate) outbound: Outbound,
    /// One deadline for a request and all its attempts, if any.
    pub(crate) total_timeout: Option<Duration>,
}

impl<C> ClientShared<C> {
    /// The retry for a request to `host` with `headers`, on the budget of
    /// the request's key when the layer keeps one per key (and the request
    /// has a key), else on the retry's own; `None` without a retry. `held`
    /// keeps the key's budget for the request's attempts.
    pub(crate) fn retry<'a>(
        &'a self,
        host: Option<&str>,
        headers: &HeaderMap,
        held: &'a mut Option<BudgetHandle<'a>>,
    ) -> Option<OnBudget<'a>> {
        let retry = self.retry.as_ref()?.get();
        if let Some((family, key)) = &self.budgets {
            *held = key.of(host, headers).map(|k| family.get(k));
        }
        Some(retry.with_budget_or_own(held.as_deref()))
    }
}

/// Which of a request's values keys its retry budget
/// ([`ClientBuilder::retry_budget_per`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryBudgetKey {
    /// The downstream host (the request URI's): a failing host spends its
    /// own retries, not those of the hosts that answer.
    Host,
    /// The text of a header (a tenant id the request carries): one tenant's
    /// failing calls spend its own retries.
    Header(HeaderName),
}

impl RetryBudgetKey {
    /// The key of a request to `host` with `headers`, if it has one.
    fn of<'a>(&self, host: Option<&'a str>, headers: &'a HeaderMap) -> Option<&'a str> {
        match self {
            RetryBudgetKey::Host => host,
            RetryBudgetKey::Header(name) => headers.get(name)?.to_str().ok(),
        }
    }
}

/// A [`Layer`] for a client's service stack (a hyper or tonic client, any
/// `Service<http::Request<_>>`): the registry's retry and hedging called
/// `name` around a [`ResilienceLayer`]'s aspects, in the attributes' order,
/// Retry( Hedge( Throttler( CircuitBreaker( RateLimiter( TimeLimiter(
/// Bulkhead( service ))))))), over replayable requests, with the task's
/// deadline sent downstream. Built by [`ClientBuilder`]; see the
/// [module docs](super). `Copy`-cheap.
pub struct ClientLayer<C: 'static = crate::tower::BreakerPredicates> {
    resilience: ResilienceLayer<C, AsErrors>,
    shared: &'static ClientShared<C>,
}

impl<C: 'static> ClientLayer<C> {
    /// The inner aspects' layer and what the client side shares.
    #[cfg(feature = "reqwest-middleware")]
    pub(crate) fn parts(&self) -> (ResilienceLayer<C, AsErrors>, &'static ClientShared<C>) {
        (self.resilience, self.shared)
    }

    /// The name the instances were looked up by.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The aspects this layer applies, outermost first.
    pub fn aspects(&self) -> impl Iterator<Item = resil_options::Aspect> + 'static {
        use resil_options::Aspect;
        let outer = [
            (Aspect::Retry, self.shared.retry.is_some()),
            (Aspect::Hedge, self.shared.hedging.is_some()),
        ];
        outer
            .into_iter()
            .filter_map(|(a, on)| on.then_some(a))
            .chain(self.resilience.aspects())
    }
}

impl<C: 'static> Clone for ClientLayer<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: 'static> Copy for ClientLayer<C> {}

impl<C: 'static> fmt::Debug for ClientLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared;
        let now = s.settings.get();
        f.debug_struct("ClientLayer")
            .field("name", &s.name)
            .field("retry", &s.retry.is_some())
            .field("hedge", &s.hedging.is_some())
            .field("inner", &self.resilience)
            .field("replay_methods", &now.policy.methods)
            .field("idempotency_header", &now.policy.idempotency_header)
            .field("max_replay_body", &now.policy.max_body)
            .field("deadline_header", &now.outbound.header)
            .field("deadline_margin", &now.outbound.margin)
            .field("total_timeout", &now.total_timeout)
            .finish()
    }
}

impl<S, C: 'static> Layer<S> for ClientLayer<C> {
    type Service = Client<S, C>;

    fn layer(&self, inner: S) -> Client<S, C> {
        Client::new(self.resilience.layer(inner), self.shared)
    }
}

/// Chooses a client layer's aspects and replay rules: a [`Builder`] with
/// retry, hedging, or [`Builder::client`] chosen. The aspects apply in the
/// attributes' order whatever order they are chosen in.
#[must_use = "a builder does nothing until `build` is called"]
pub struct ClientBuilder<'r, C = crate::tower::BreakerPredicates> {
    inner: Builder<'r, C, AsErrors>,
    retry: bool,
    hedge: bool,
    budget_key: Option<RetryBudgetKey>,
    code: CodeSettings,
    /// A preset's settings, beneath the file's.
    pub(super) preset: CodeSettings,
}

/// One layer of a client's settings, each `None` where it says nothing:
/// what code set on the builder (over the file's
/// `resil.http-client.instances.<name>`, over a preset's, over the
/// defaults), or the file's entry read into the same shape.
#[derive(Default, Clone)]
pub(super) struct CodeSettings {
    methods: Option<ReplayMethods>,
    idempotency_header: Option<HeaderName>,
    max_body: Option<usize>,
    deadline_header: Option<HeaderName>,
    margin: Option<Duration>,
    pub(super) total_timeout: Option<Duration>,
}

impl<'r, C: 'static> ClientBuilder<'r, C> {
    pub(crate) fn new(inner: Builder<'r, C, AsErrors>) -> Self {
        ClientBuilder {
            inner,
            retry: false,
            hedge: false,
            budget_key: None,
            code: CodeSettings::default(),
            preset: CodeSettings::default(),
        }
    }

    fn map(self, f: impl FnOnce(Builder<'r, C, AsErrors>) -> Builder<'r, C, AsErrors>) -> Self {
        ClientBuilder {
            inner: f(self.inner),
            ..self
        }
    }

    /// Retries with the registry's retry called `name` (outermost): every
    /// attempt passes through the other aspects again. Only a replayable
    /// request is retried (see [`replay_methods`](Self::replay_methods)).
    pub fn retry(mut self) -> Self {
        self.retry = true;
        self
    }

    /// Gives the retry one budget per `key` of the request (its host, or a
    /// header), from the registry's keyed retry-budget family `name`
    /// ([`Registry::keyed_retry_budget`](resil_registry::Registry::keyed_retry_budget)),
    /// instead of one budget for every request: a downstream host (or a
    /// tenant) whose calls all fail spends its own retries. A request
    /// without the key retries on the retry's own budget, if it has one.
    /// Implies [`retry`](Self::retry).
    pub fn retry_budget_per(mut self, key: RetryBudgetKey) -> Self {
        self.retry = true;
        self.budget_key = Some(key);
        self
    }

    /// Hedges with the registry's hedging called `name` (just inside the
    /// retry): a slow or failed attempt is raced by another, each through
    /// its own breaker permit, limiter permission, timeout and slot. Only a
    /// replayable request is hedged.
    pub fn hedge(mut self) -> Self {
        self.hedge = true;
        self
    }

    /// See [`Builder::throttler`].
    pub fn throttler(self) -> Self {
        self.map(Builder::throttler)
    }

    /// See [`Builder::circuit_breaker`].
    pub fn circuit_breaker(self) -> Self {
        self.map(Builder::circuit_breaker)
    }

    /// See [`Builder::rate_limiter`].
    pub fn rate_limiter(self) -> Self {
        self.map(Builder::rate_limiter)
    }

    /// See [`Builder::time_limiter`]: each attempt is timed on its own.
    pub fn time_limiter(self) -> Self {
        self.map(Builder::time_limiter)
    }

    /// See [`Builder::bulkhead`].
    pub fn bulkhead(self) -> Self {
        self.map(Builder::bulkhead)
    }

    /// Classifies responses with `classify` (for the breaker, and for the
    /// retry and the hedging: a response it records as a failure is tried
    /// again, and returned as it is when they stop).
    pub fn classify<C2: 'static>(self, classify: C2) -> ClientBuilder<'r, C2> {
        ClientBuilder {
            inner: self.inner.classify(classify),
            retry: self.retry,
            hedge: self.hedge,
            budget_key: self.budget_key,
            code: self.code,
            preset: self.preset,
        }
    }

    /// Which methods are replayed without an idempotency key (RFC 9110's
    /// safe methods by default).
    pub fn replay_methods(mut self, methods: ReplayMethods) -> Self {
        self.code.methods = Some(methods);
        self
    }

    /// The header whose presence makes a request of any method replayable
    /// ([`DEFAULT_IDEMPOTENCY_HEADER`](super::DEFAULT_IDEMPOTENCY_HEADER),
    /// `Idempotency-Key`, by default).
    pub fn idempotency_header(mut self, header: HeaderName) -> Self {
        self.code.idempotency_header = Some(header);
        self
    }

    /// The largest body buffered for a replay, in bytes
    /// ([`DEFAULT_MAX_REPLAY_BODY`](super::DEFAULT_MAX_REPLAY_BODY) by
    /// default); a larger one is sent once.
    pub fn max_replay_body(mut self, bytes: usize) -> Self {
        self.code.max_body = Some(bytes);
        self
    }

    /// The header the task's remaining deadline goes out in, in whole
    /// milliseconds, for a request that is not gRPC (a gRPC request sends
    /// `grpc-timeout`).
    pub fn deadline_header(mut self, header: HeaderName) -> Self {
        self.code.deadline_header = Some(header);
        self
    }

    /// What is taken off the remaining deadline before it is sent
    /// ([`DEFAULT_DEADLINE_MARGIN`](super::DEFAULT_DEADLINE_MARGIN) by
    /// default); a request with no more than this left is not sent.
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.code.margin = Some(margin);
        self
    }

    /// One deadline for a request and all its attempts, retries, waits and
    /// hedges included (the total request timeout of Microsoft's standard
    /// pipeline; none by default): a [`resil_core::deadline`] around the
    /// call, inside any the caller set, so the retry starts no attempt or
    /// wait it cannot hold and the budget sent downstream is what is left
    /// of it. A request that runs out of it fails with
    /// `Error::DeadlineExceeded`. File key `total-timeout`.
    pub fn total_timeout(mut self, total: Duration) -> Self {
        self.code.total_timeout = Some(total);
        self
    }

    /// Looks the chosen instances up and builds the layer. The replay
    /// rules and the deadline header are what code set on this builder,
    /// else what the registry's file gives under
    /// `resil.http-client.instances.<name>`, else the defaults. The layer
    /// follows the registry's reloads: a reload that changes the file's
    /// entry changes the rules of the requests that start after it (a
    /// request keeps the rules it started with), as a reload changes the
    /// instances' settings (they are the registry's handles).
    pub fn build(self) -> ClientLayer<C> {
        let registry = self.inner.registry();
        let name = self.inner.name().to_owned();
        let retry = self.retry.then(|| registry.retry(&name));
        let hedging = self.hedge.then(|| registry.hedging(&name));
        let (code, preset) = (self.code, self.preset);
        let entry = name.clone();
        let settings = registry.follow_file(&name, move |file| {
            settings(&code, &preset, file.http_client().instance(&entry))
        });
        let budgets = self
            .budget_key
            .map(|key| (registry.keyed_retry_budget(&name), key));
        let resilience = self.inner.build();
        let shared = ClientShared {
            resilience: resilience.shared(),
            retry,
            hedging,
            settings,
            name,
            budgets,
        };
        ClientLayer {
            resilience,
            shared: Box::leak(Box::new(shared)),
        }
    }
}

/// Code over file over a preset over defaults, setting by setting.
fn settings(
    code: &CodeSettings,
    preset: &CodeSettings,
    file: Option<&HttpClientEntry>,
) -> ClientSettings {
    // The loader checked the header names' shape, so they parse.
    let header = |name: &Option<String>| {
        name.as_deref()
            .and_then(|n| HeaderName::from_bytes(n.as_bytes()).ok())
    };
    let file = file.map(|f| CodeSettings {
        methods: f.replay_methods.and_then(ReplayMethods::from_name),
        idempotency_header: header(&f.idempotency_header),
        max_body: f.max_replay_body,
        deadline_header: header(&f.deadline_header),
        margin: f.deadline_margin,
        total_timeout: f.total_timeout,
    });
    let layers = [Some(code), file.as_ref(), Some(preset)];
    // The first layer that sets it, code first.
    fn first<T: Clone>(
        layers: &[Option<&CodeSettings>],
        get: impl Fn(&CodeSettings) -> &Option<T>,
    ) -> Option<T> {
        layers.iter().flatten().find_map(|l| get(l).clone())
    }
    let (policy, outbound) = (ReplayPolicy::default(), Outbound::default());
    ClientSettings {
        policy: ReplayPolicy {
            methods: first(&layers, |l| &l.methods).unwrap_or(policy.methods),
            idempotency_header: first(&layers, |l| &l.idempotency_header)
                .unwrap_or(policy.idempotency_header),
            max_body: first(&layers, |l| &l.max_body).unwrap_or(policy.max_body),
        },
        outbound: Outbound {
            header: first(&layers, |l| &l.deadline_header).unwrap_or(outbound.header),
            margin: first(&layers, |l| &l.margin).unwrap_or(outbound.margin),
        },
        total_timeout: first(&layers, |l| &l.total_timeout),
    }
}

impl<'r, C: 'static> Builder<'r, C, AsErrors> {
    /// The client side of this layer: retry, hedging, replay rules and
    /// deadlines sent downstream (see [`ClientBuilder`]), with the aspects
    /// chosen so far.
    pub fn client(self) -> ClientBuilder<'r, C> {
        ClientBuilder::new(self)
    }

    /// [`client`](Self::client) with the retry called `name`.
    pub fn retry(self) -> ClientBuilder<'r, C> {
        self.client().retry()
    }

    /// [`client`](Self::client) with the hedging called `name`.
    pub fn hedge(self) -> ClientBuilder<'r, C> {
        self.client().hedge()
    }
}
