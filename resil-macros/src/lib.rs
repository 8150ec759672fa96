//! resil's attribute macros. Use them through the `resil` facade
//! (`#[resil::circuit_breaker(…)]`), whose documentation shows each one with
//! the code it expands to; this crate only routes each entry point to the
//! pipeline in `entry.rs`: parse (`attr.rs`, `item.rs`) → model
//! (`model.rs`, siblings collected) → validate (`valid.rs`, every rule) →
//! expand (`expand.rs`, `check.rs`).
#![warn(missing_docs)]

use proc_macro::TokenStream;

mod attr;
mod check;
mod derive_error_class;
mod diag;
mod entry;
mod expand;
mod fallback;
mod item;
mod model;
mod respan;
mod valid;

use resil_options::Aspect;

/// Protects a fn with the registry's circuit breaker `name`.
///
/// ```
/// # #[derive(Debug)] pub struct InventoryError;
/// # impl From<resil::Rejection> for InventoryError { fn from(_: resil::Rejection) -> Self { InventoryError } }
/// #[resil::circuit_breaker(name = "doc-inventory", sliding_window_size = 20)]
/// fn query_inventory(sku: &str) -> Result<u32, InventoryError> {
///     Ok(sku.len() as u32)
/// }
///
/// assert_eq!(query_inventory("sku-1").unwrap(), 5);
/// let breaker = resil::registry().circuit_breaker("doc-inventory");
/// assert_eq!(breaker.metrics().successful_calls(), 1);
/// ```
///
/// Every resil attribute works the same way; this page documents what they
/// share. Arguments: `name = "…"` (required: the registry instance, shared by
/// every fn naming it), `fallback = f` or `fallback = [f, g]`, `order = [...]`,
/// and literal settings named as the config builder's setters.
///
/// # Expansion
///
/// The fn is rewritten in place (a fn calling itself is protected on every
/// call: there is no proxy to bypass). The example above expands to about:
///
/// ```
/// # #[derive(Debug)] pub struct InventoryError;
/// # impl From<resil::Rejection> for InventoryError { fn from(_: resil::Rejection) -> Self { InventoryError } }
/// use std::sync::OnceLock;
/// use resil::{circuit_breaker::CircuitBreaker, Handle};
///
/// fn query_inventory(sku: &str) -> Result<u32, InventoryError> {
///     // Once per call site, not per call; the handle sees registry reloads.
///     static SITE: OnceLock<Handle<CircuitBreaker>> = OnceLock::new();
///     let breaker: &CircuitBreaker = SITE.get_or_init(|| {
///         let registry = resil::registry();
///         registry
///             .configure_circuit_breaker("doc-inventory-by-hand", |b| b.sliding_window_size(20))
///             .expect("checked at compile time");
///         registry.circuit_breaker("doc-inventory-by-hand")
///     });
///     let out = breaker.call(|| -> Result<u32, InventoryError> { Ok(sku.len() as u32) });
///     // No fallback: a rejection becomes the fn's error through `From<Rejection>`.
///     out.map_err(|e| match e.into_rejection() {
///         Ok(rejection) => InventoryError::from(rejection),
///         Err(call) => call,
///     })
/// }
/// # assert_eq!(query_inventory("sku-1").unwrap(), 5);
/// ```
///
/// Costs: one `OnceLock` check and one atomic load per primitive per call,
/// on top of the primitives themselves; no allocation. Settings written as
/// literals are applied when the call site first runs, after the file's (an
/// instance created earlier under that name is rebuilt, as a reload would).
///
/// # Order
///
/// Attributes on one fn build one stack, in one fixed order whatever order
/// they are written in: the one aspect table, `resil::options::ORDER`,
/// whose documentation gives the order (Resilience4j's default aspect
/// order, with `hedge` and `chaos`) and what each nesting changes. The tower
/// layer (`resil::tower::ResilienceLayer`) applies its aspects in the same
/// table.
///
/// The override is given once, on any of the fn's resil attributes, and must
/// list each of them exactly once:
///
/// ```
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::circuit_breaker(name = "doc-order", order = [circuit_breaker, retry])]
/// #[resil::retry(name = "doc-order", max_attempts = 3, wait_duration = "0ms")]
/// fn flaky() -> Result<u32, E> {
///     Err(E)
/// }
///
/// assert_eq!(flaky(), Err(E));
/// assert_eq!(resil::registry().circuit_breaker("doc-order").metrics().failed_calls(), 1);
/// ```
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::circuit_breaker(name = "doc-order", order = [circuit_breaker])] // `retry` missing
/// #[resil::retry(name = "doc-order")]
/// fn flaky() -> Result<u32, E> { Err(E) }
/// ```
///
/// Attributes are recognised by path shape (`retry`, `resil::retry`,
/// `::resil::retry`); a renamed import is not, and is reported.
///
/// # Fallback
///
/// One list per fn, applied outermost (after every retry). A fallback takes
/// the fn's parameters, plus an optional trailing parameter whose type selects
/// what it handles: `resil::Error<E>` or nothing (everything), `E` (the
/// call's own error), `resil::Rejection` (every refusal) or one refusal type
/// (`resil::error::Timeout`, `CallNotPermitted`, …). The most specific match
/// wins, whatever the list order. A fallback's own error propagates; degraded
/// results are counted by cause in `resil::fallback::metrics`.
///
/// ```
/// use resil::error::CallNotPermitted;
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
///
/// #[resil::circuit_breaker(name = "doc-fallback", fallback = [stale, while_open])]
/// fn price(sku: &str) -> Result<u32, E> {
///     Err(E)
/// }
///
/// fn stale(_sku: &str, _why: resil::Error<E>) -> Result<u32, E> {
///     Ok(1)
/// }
///
/// fn while_open(_sku: &str, _why: CallNotPermitted) -> Result<u32, E> {
///     Ok(2)
/// }
///
/// assert_eq!(price("sku"), Ok(1));
/// resil::registry().circuit_breaker("doc-fallback").transition_to_forced_open().unwrap();
/// assert_eq!(price("sku"), Ok(2)); // the more specific one, though listed last
/// ```
///
/// Arguments needed again (by the fallback, or by retry attempts) are re-used
/// as they are when they are references or `Copy`, and cloned otherwise; a
/// type that is not `Clone` is a compile error at the argument.
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::circuit_breaker(name = "doc-fallback-arity", fallback = stale)]
/// fn price(sku: &str) -> Result<u32, E> { Err(E) }
///
/// fn stale(_sku: &str, _region: u8) -> Result<u32, E> { Ok(1) } // not the fn's parameters
/// ```
///
/// # Rejections and `?`
///
/// Without a fallback (or when no fallback handles a refusal), a refusal is
/// returned as the fn's own error, through `E: From<resil::Rejection>`; that
/// one line is what the compiler asks for when it is missing:
///
/// ```compile_fail
/// #[derive(Debug)]
/// pub struct E; // no `impl From<resil::Rejection> for E`
///
/// #[resil::circuit_breaker(name = "doc-rejection")]
/// fn price() -> Result<u32, E> { Ok(1) }
/// ```
///
/// # Settings
///
/// `failure_rate_threshold`, `slow_call_rate_threshold` (percentages),
/// `slow_call_duration_threshold`, `wait_duration_in_open_state`,
/// `max_wait_duration_in_half_open_state` (durations: `"500ms"`, `"60s"`),
/// `sliding_window_size`, `minimum_number_of_calls`,
/// `permitted_number_of_calls_in_half_open_state` (integers ≥ 1),
/// `automatic_transition_from_open_to_half_open_enabled` (bool). Checked at
/// the literal:
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::circuit_breaker(name = "doc-settings", minimum_number_of_calls = 0)]
/// fn price() -> Result<u32, E> { Ok(1) }
/// ```
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::CircuitBreaker, args.into(), item.into()).into()
}

/// Retries a fn with the registry's retry `name`: outermost in the fixed
/// order, so each attempt goes through every other primitive of the fn (see
/// [`circuit_breaker`](macro@circuit_breaker) for what all attributes share).
///
/// Settings: `max_attempts` (≥ 1, counting the first call), `wait_duration`.
///
/// **A retry budget per key.** `key = <expr>` (over the fn's arguments, as
/// for the rate limiter) makes the retry draw on the key's budget of the
/// keyed retry-budget family `name` (`Registry::keyed_retry_budget`)
/// instead of one budget for every caller: a tenant whose calls all fail
/// spends its own retries, not the others'. The retry's settings are the
/// instance's (file or code), not the attribute's.
///
/// ```
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// use std::sync::atomic::{AtomicU32, Ordering};
/// static CALLS: AtomicU32 = AtomicU32::new(0);
///
/// #[resil::retry(name = "doc-retry", max_attempts = 3, wait_duration = "0ms")]
/// fn flaky(items: Vec<u32>) -> Result<u32, E> {
///     // `items` is cloned for each attempt: it is not `Copy`.
///     if CALLS.fetch_add(1, Ordering::SeqCst) < 2 { Err(E) } else { Ok(items.len() as u32) }
/// }
///
/// assert_eq!(flaky(vec![1, 2]), Ok(2));
/// assert_eq!(CALLS.load(Ordering::SeqCst), 3);
/// ```
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// pub struct Request; // not Clone: an attempt cannot get its own copy
///
/// #[resil::retry(name = "doc-retry-clone")]
/// fn send(request: Request) -> Result<u32, E> { Ok(1) }
/// ```
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Retry, args.into(), item.into()).into()
}

/// Limits a fn's concurrency with the registry's bulkhead `name`: innermost
/// in the fixed order (see [`circuit_breaker`](macro@circuit_breaker)).
///
/// `kind = "semaphore"` (the default; settings `max_concurrent_calls`,
/// `max_wait_duration`, `fair_call_handling_enabled`) holds a slot while the
/// body runs. `kind = "thread_pool"` (settings `core_thread_pool_size`,
/// `max_thread_pool_size`, `queue_capacity`, `keep_alive_duration`) runs the
/// body — blocking code — on the bulkhead's own threads while the caller
/// awaits, so the fn must be `async` and its arguments owned and `Send`.
///
/// ```
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::bulkhead(name = "doc-bulkhead", max_concurrent_calls = 4)]
/// fn render(page: u32) -> Result<u32, E> {
///     Ok(page)
/// }
///
/// #[resil::bulkhead(name = "doc-pool", kind = "thread_pool", core_thread_pool_size = 1, max_thread_pool_size = 2)]
/// async fn checksum(data: Vec<u8>) -> Result<u32, E> {
///     Ok(data.iter().map(|&b| u32::from(b)).sum()) // runs on a pool thread
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// assert_eq!(render(2), Ok(2));
/// assert_eq!(checksum(vec![1, 2, 3]).await, Ok(6));
/// # }
/// ```
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::bulkhead(name = "doc-pool-borrow", kind = "thread_pool")]
/// async fn checksum(data: std::rc::Rc<Vec<u8>>) -> Result<u32, E> { Ok(data.len() as u32) }
/// ```
#[proc_macro_attribute]
pub fn bulkhead(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Bulkhead, args.into(), item.into()).into()
}

/// Limits a fn's call rate with the registry's rate limiter `name` (see
/// [`circuit_breaker`](macro@circuit_breaker)). Inside `retry` in the fixed
/// order: each attempt spends a permit.
///
/// Settings: `limit_for_period` (≥ 1), `limit_refresh_period`, `timeout_duration`.
///
/// **One quota for every process.** With resil's `redis` feature, when the
/// registry's settings for `name` say `backend = "redis"` (in its instance
/// entry, its base config or the default config), the call site uses the
/// registry's Redis-backed limiter of that name instead: the same quota
/// (`limit_for_period` per `limit_refresh_period`, the attribute's settings
/// included) shared through Redis by every process, the same refusal
/// (`resil::error::RequestNotPermitted`, the same
/// fallbacks) and the Redis settings from the file (URL, key prefix,
/// algorithm, failure policy). The backend is chosen on the site's first
/// call; a sync fn then blocks its thread while Redis answers, so prefer
/// async fns there.
///
/// **Weighted calls.** `permits = <expr>` (an unsigned integer over the
/// fn's arguments, evaluated once per call before the body runs) makes each
/// call take that many permits, as Resilience4j 2.3's
/// `@RateLimiter(permits = N)`; with `key = <expr>`, one limiter per key.
///
/// ```
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::rate_limiter(name = "doc-rate", limit_for_period = 1, limit_refresh_period = "1h", timeout_duration = "0ms", fallback = later)]
/// fn send(to: &str) -> Result<&'static str, E> {
///     Ok("sent")
/// }
///
/// fn later(_to: &str, _why: resil::error::RequestNotPermitted) -> Result<&'static str, E> {
///     Ok("queued")
/// }
///
/// assert_eq!(send("a"), Ok("sent"));
/// assert_eq!(send("b"), Ok("queued"));
/// ```
#[proc_macro_attribute]
pub fn rate_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::RateLimiter, args.into(), item.into()).into()
}

/// Bounds an async fn's duration with the registry's time limiter `name`
/// (see [`circuit_breaker`](macro@circuit_breaker)). Inside `retry` in the
/// fixed order, so the limit is per attempt. A timeout stops *waiting*; it
/// cannot undo what the call already did remotely.
///
/// Settings: `timeout_duration`, `cancel_running_future`.
///
/// ```
/// # #[derive(Debug, PartialEq)] pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// use std::time::Duration;
///
/// #[resil::time_limiter(name = "doc-timeout", timeout_duration = "100ms", fallback = too_slow)]
/// async fn report(ms: u64) -> Result<&'static str, E> {
///     tokio::time::sleep(Duration::from_millis(ms)).await;
///     Ok("fresh")
/// }
///
/// async fn too_slow(_ms: u64, _why: resil::error::Timeout) -> Result<&'static str, E> {
///     Ok("cached")
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert_eq!(report(10).await, Ok("fresh"));
/// assert_eq!(report(500).await, Ok("cached"));
/// # }
/// ```
///
/// A sync fn cannot be timed out (nothing can interrupt a running thread):
///
/// ```compile_fail
/// # pub struct E;
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E } }
/// #[resil::time_limiter(name = "doc-timeout-sync")]
/// fn report() -> Result<u32, E> { Ok(1) }
/// ```
#[proc_macro_attribute]
pub fn time_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::TimeLimiter, args.into(), item.into()).into()
}

/// Hedging (Polly v8's strategy): the registry's hedging instance `name`
/// (`resilience4j.hedging.instances.<name>`: `delay`, `max-hedged-attempts`,
/// `hedge-errors`). The body runs once; if it has not answered after `delay`,
/// or failed with an error the instance hedges on, it runs again beside it,
/// up to `max-hedged-attempts` more times, and the first good answer wins
/// (the others are dropped, giving back what they held). Async fns only. In
/// the fixed order (`resil::options::ORDER`) it sits just inside `retry`,
/// so every hedged attempt takes its own breaker permit, rate-limiter
/// permission, timeout and bulkhead slot, and the retry sees one outcome per
/// hedged group. The body must be safe to run more than once at a time (a
/// read, an idempotent write).
///
/// ```
/// # #[derive(Debug, PartialEq)]
/// # pub enum E { Down, Refused }
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E::Refused } }
/// use std::sync::atomic::{AtomicU32, Ordering};
/// static RUNS: AtomicU32 = AtomicU32::new(0);
///
/// #[resil::hedge(name = "doc-hedge")]
/// async fn quote(sku: u32) -> Result<u32, E> {
///     // The first run fails at once: a hedge starts without waiting.
///     if RUNS.fetch_add(1, Ordering::SeqCst) == 0 { Err(E::Down) } else { Ok(sku) }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert_eq!(quote(7).await, Ok(7));
/// assert_eq!(RUNS.load(Ordering::SeqCst), 2);
/// assert_eq!(resil::registry().hedging("doc-hedge").metrics().won_by_hedge(), 1);
/// # }
/// ```
#[proc_macro_attribute]
pub fn hedge(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Hedge, args.into(), item.into()).into()
}

/// Fault injection for drills: the registry's chaos instance `name`
/// (`resilience4j.chaos.instances.<name>`) around the fn's body, innermost in
/// the fixed order, `Bulkhead( Chaos( call ))`, so retries, breakers, time
/// limiters and bulkheads see an injected latency, error or result exactly as
/// they would see the downstream's. Off by default: nothing is injected until
/// an operator calls `Registry::enable_chaos` (with a TTL and a reason) or
/// the file's `enabled` is `true`; while off it costs one relaxed load.
///
/// ```
/// # #[derive(Debug, PartialEq)]
/// # pub enum E { Down, Refused }
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E::Refused } }
/// #[resil::chaos(name = "doc-chaos")]
/// fn stock(sku: u32) -> Result<u32, E> { Ok(sku) }
///
/// let registry = resil::registry();
/// registry.configure_chaos("doc-chaos", |b| b.inject_error(1.0, || E::Down)).unwrap();
/// assert_eq!(stock(7), Ok(7)); // off
/// registry.enable_chaos("doc-chaos", None, "drill").unwrap();
/// assert_eq!(stock(7), Err(E::Down));
/// registry.disable_chaos("doc-chaos", "done").unwrap();
/// assert_eq!(stock(7), Ok(7));
/// ```
#[proc_macro_attribute]
pub fn chaos(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Chaos, args.into(), item.into()).into()
}

/// Adaptive client-side throttling (the Google SRE book's): the registry's
/// throttler `name` (`resilience4j.throttler.instances.<name>`) refuses calls
/// locally, with probability `max(0, (requests − K·accepts) / (requests + 1))`
/// over its sliding window, once the downstream refuses more than it accepts
/// (by default every error is a refusal). In the fixed order it sits inside
/// `retry` and `hedge` and outside `circuit_breaker`:
/// `Retry( Hedge( Throttler( CircuitBreaker( … ))))`, so every attempt is a
/// request, a local refusal costs nothing inside, and an inner aspect's own
/// refusal (a breaker's, a bulkhead's) is not counted as the downstream's.
/// Its refusal is `resil::Error::Throttled` (kind `throttled`), named after
/// the throttler and carrying the rejection probability it used: a fallback
/// taking `resil::error::Throttled` handles it, one taking
/// `RequestNotPermitted` (a rate limiter's) does not.
///
/// ```
/// # #[derive(Debug, PartialEq)]
/// # pub enum E { Busy, Refused }
/// # impl From<resil::Rejection> for E { fn from(_: resil::Rejection) -> Self { E::Refused } }
/// #[resil::throttler(name = "doc-throttler")]
/// fn search(q: u32) -> Result<u32, E> {
///     if q == 0 { Err(E::Busy) } else { Ok(q) }
/// }
///
/// assert_eq!(search(7), Ok(7));
/// let mut refused_locally = 0;
/// for _ in 0..200 {
///     if search(0) == Err(E::Refused) {
///         refused_locally += 1;
///     }
/// }
/// assert!(refused_locally > 100, "{refused_locally}");
/// ```
#[proc_macro_attribute]
pub fn throttler(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Throttler, args.into(), item.into()).into()
}

/// Implements `resil::ErrorClass` for an enum: one stable name per variant,
/// the variant's name in snake_case, or `#[error_class(name = "…")]`. Config
/// files name these in `record-errors`, `ignore-errors` and `retry-errors`.
///
/// ```
/// use resil::ErrorClass;
///
/// #[derive(Debug, resil::ErrorClass)]
/// enum InventoryError {
///     NotFound,
///     #[error_class(name = "upstream-503")]
///     Unavailable(u16),
/// }
///
/// assert_eq!(InventoryError::NotFound.error_class(), "not_found");
/// assert_eq!(InventoryError::Unavailable(503).error_class(), "upstream-503");
/// assert_eq!(InventoryError::error_classes(), ["not_found", "upstream-503"]);
/// ```
#[proc_macro_derive(ErrorClass, attributes(error_class))]
pub fn derive_error_class(input: TokenStream) -> TokenStream {
    derive_error_class::expand(input.into()).into()
}

/// Not public API: the aspects of the resil attributes on the fn it is
/// given, in the order their expansion nests them (outermost first), as
/// `[resil::options::Aspect; N]`. For tests comparing the attributes'
/// order with the tower layer's (`ResilienceLayer::ORDER`): it runs the
/// same model and rules as the attributes, and emits nothing else.
#[doc(hidden)]
#[proc_macro]
pub fn __expansion_order(item: TokenStream) -> TokenStream {
    entry::expansion_order(item.into()).into()
}
