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
    pub(crate) policy: ReplayPolicy,
    pub(crate) outbound: Outbound,
    pub(crate) name: String,
    /// The retry budget per key ([`ClientBuilder::retry_budget_per`]).
    pub(crate) budgets: Option<(KeyedRetryBudget, RetryBudgetKey)>,
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
        f.debug_struct("ClientLayer")
            .field("name", &s.name)
            .field("retry", &s.retry.is_some())
            .field("hedge", &s.hedging.is_some())
            .field("inner", &self.resilience)
            .field("replay_methods", &s.policy.methods)
            .field("idempotency_header", &s.policy.idempotency_header)
            .field("max_replay_body", &s.policy.max_body)
            .field("deadline_header", &s.outbound.header)
            .field("deadline_margin", &s.outbound.margin)
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
}

/// What code set on the builder (over the file's
/// `resil.http-client.instances.<name>`, over the defaults).
#[derive(Default)]
struct CodeSettings {
    methods: Option<ReplayMethods>,
    idempotency_header: Option<HeaderName>,
    max_body: Option<usize>,
    deadline_header: Option<HeaderName>,
    margin: Option<Duration>,
}

impl<'r, C: 'static> ClientBuilder<'r, C> {
    pub(crate) fn new(inner: Builder<'r, C, AsErrors>) -> Self {
        ClientBuilder {
            inner,
            retry: false,
            hedge: false,
            budget_key: None,
            code: CodeSettings::default(),
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

    /// Looks the chosen instances up and builds the layer. The replay
    /// rules and the deadline header are what code set on this builder,
    /// else what the registry's file gives under
    /// `resil.http-client.instances.<name>` (read now: a later reload does
    /// not change a built layer's), else the defaults.
    pub fn build(self) -> ClientLayer<C> {
        let registry = self.inner.registry();
        let name = self.inner.name().to_owned();
        let retry = self.retry.then(|| registry.retry(&name));
        let hedging = self.hedge.then(|| registry.hedging(&name));
        let file = registry.loaded_file();
        let (policy, outbound) = settings(self.code, file.http_client().instance(&name));
        let budgets = self
            .budget_key
            .map(|key| (registry.keyed_retry_budget(&name), key));
        let resilience = self.inner.build();
        let shared = ClientShared {
            resilience: resilience.shared(),
            retry,
            hedging,
            policy,
            outbound,
            name,
            budgets,
        };
        ClientLayer {
            resilience,
            shared: Box::leak(Box::new(shared)),
        }
    }
}

/// Code over file over defaults, setting by setting.
fn settings(code: CodeSettings, file: Option<&HttpClientEntry>) -> (ReplayPolicy, Outbound) {
    let (mut policy, mut outbound) = (ReplayPolicy::default(), Outbound::default());
    // The loader checked the header names' shape, so they parse.
    let header = |name: &Option<String>| {
        name.as_deref()
            .and_then(|n| HeaderName::from_bytes(n.as_bytes()).ok())
    };
    if let Some(file) = file {
        if let Some(methods) = file.replay_methods.and_then(ReplayMethods::from_name) {
            policy.methods = methods;
        }
        if let Some(h) = header(&file.idempotency_header) {
            policy.idempotency_header = h;
        }
        if let Some(bytes) = file.max_replay_body {
            policy.max_body = bytes;
        }
        if let Some(h) = header(&file.deadline_header) {
            outbound.header = h;
        }
        if let Some(margin) = file.deadline_margin {
            outbound.margin = margin;
        }
    }
    policy.methods = code.methods.unwrap_or(policy.methods);
    policy.idempotency_header = code.idempotency_header.unwrap_or(policy.idempotency_header);
    policy.max_body = code.max_body.unwrap_or(policy.max_body);
    outbound.header = code.deadline_header.unwrap_or(outbound.header);
    outbound.margin = code.margin.unwrap_or(outbound.margin);
    (policy, outbound)
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
