//! The status-based classifier.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};
use resil_core::circuit_breaker::{CircuitBreakerConfigBuilder, Outcome, ResultTransition};
use resil_core::retry::RetryConfigBuilder;
use resil_core::IntervalFunction;
use resil_registry::Handle;

use super::error::HttpError;
use super::retry_after::retry_after;
use super::status_set::StatusSet;

type Predicate = dyn Fn(StatusCode, &HeaderMap) -> Option<Outcome> + Send + Sync;

/// Anything with a status and headers: `http::Response<B>`, its `Parts`,
/// and (feature `reqwest`) `reqwest::Response`.
pub trait StatusLike {
    /// The status.
    fn status(&self) -> StatusCode;
    /// The headers.
    fn headers(&self) -> &HeaderMap;
}

impl<B> StatusLike for http::Response<B> {
    fn status(&self) -> StatusCode {
        http::Response::status(self)
    }
    fn headers(&self) -> &HeaderMap {
        http::Response::headers(self)
    }
}

impl StatusLike for http::response::Parts {
    fn status(&self) -> StatusCode {
        self.status
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// Classifies HTTP responses by status (see the [module docs](super) for the
/// rules and defaults). Cheap to clone: clones share the sets, and a
/// classifier that follows a registry's config file
/// ([`HttpClassifier::follow`]) sees every clone's sets change together when
/// the registry reloads the file (one atomic load per classification, as a
/// registry handle).
#[derive(Clone)]
pub struct HttpClassifier {
    pub(super) inner: Handle<Inner>,
}

pub(super) struct Inner {
    predicates: Vec<Arc<Predicate>>,
    /// Per status 100..=999, what the sets below decide (see [`Verdicts`]):
    /// a classification reads one byte of it, one cache line, where the
    /// sets would take three or four (one each), which a server pays for
    /// with every request once its caches went cold between requests.
    verdicts: Verdicts,
    record: StatusSet,
    ignore: StatusSet,
    success: Option<StatusSet>,
    retry_after: StatusSet,
    wall_clock: fn() -> SystemTime,
}

impl Inner {
    #[inline]
    fn outcome_of(&self, status: StatusCode, headers: &HeaderMap) -> Outcome {
        for p in &self.predicates {
            if let Some(outcome) = p(status, headers) {
                return outcome;
            }
        }
        self.verdicts.outcome(status)
    }

    fn retry_after(&self, response: &impl StatusLike) -> Option<Duration> {
        if !self.verdicts.honours_retry_after(response.status()) {
            return None;
        }
        // `Retry-After`, else the IETF `RateLimit` field's reset of a spent
        // quota (draft-ietf-httpapi-ratelimit-headers).
        retry_after(response.headers(), (self.wall_clock)())
            .or_else(|| super::rate_limit::rate_limit_reset(response.headers()))
    }
}

/// Equal when a rebuild from an unchanged file would change nothing: the same
/// sets, the same predicates (shared with the builder they came from) and
/// the same wall clock.
impl PartialEq for Inner {
    fn eq(&self, other: &Self) -> bool {
        self.record == other.record
            && self.ignore == other.ignore
            && self.success == other.success
            && self.retry_after == other.retry_after
            && self.predicates.len() == other.predicates.len()
            && self
                .predicates
                .iter()
                .zip(&other.predicates)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && std::ptr::fn_addr_eq(self.wall_clock, other.wall_clock)
    }
}

/// The status sets' decisions, one byte a status: the outcome in the low
/// two bits, whether a `Retry-After` is honoured in the third.
struct Verdicts([u8; 900]);

impl Verdicts {
    const FAILURE: u8 = 1;
    const IGNORED: u8 = 2;
    const RETRY_AFTER: u8 = 4;

    fn new(
        record: &StatusSet,
        ignore: &StatusSet,
        success: Option<&StatusSet>,
        retry_after: &StatusSet,
    ) -> Self {
        let mut table = [0u8; 900];
        for (entry, code) in table.iter_mut().zip(100u16..) {
            *entry = if ignore.contains(code) {
                Self::IGNORED
            } else if record.contains(code) || success.is_some_and(|s| !s.contains(code)) {
                Self::FAILURE
            } else {
                0
            };
            if retry_after.contains(code) {
                *entry |= Self::RETRY_AFTER;
            }
        }
        Verdicts(table)
    }

    #[inline]
    fn of(&self, status: StatusCode) -> u8 {
        // A `StatusCode` is always within 100..=999.
        self.0
            .get(usize::from(status.as_u16()).wrapping_sub(100))
            .copied()
            .unwrap_or(0)
    }

    #[inline]
    fn outcome(&self, status: StatusCode) -> Outcome {
        match self.of(status) & 3 {
            Self::IGNORED => Outcome::Ignored,
            Self::FAILURE => Outcome::Failure,
            _ => Outcome::Success,
        }
    }

    #[inline]
    fn honours_retry_after(&self, status: StatusCode) -> bool {
        self.of(status) & Self::RETRY_AFTER != 0
    }
}

/// The name of a classifier built in code (no registry follows it).
const DETACHED: &str = "http-classifier";

/// How much longer than a `Retry-After` a retry waits (see
/// [`HttpClassifier::retry`]; the client layers' retry waits as long).
pub(crate) const PAST_RETRY_AFTER: Duration = Duration::from_millis(1);

/// The default `record-status`: `408, 429, 500-599`.
pub const DEFAULT_RECORD_STATUS: StatusSet =
    StatusSet::new().with(408).with(429).with_range(500, 599);

impl Default for HttpClassifier {
    fn default() -> Self {
        HttpClassifier::builder().build()
    }
}

impl HttpClassifier {
    /// A builder with the defaults.
    pub fn builder() -> HttpClassifierBuilder {
        HttpClassifierBuilder {
            record: None,
            ignore: StatusSet::new(),
            success: None,
            retry_after: StatusSet::new().with(429).with(503),
            predicates: Vec::new(),
            wall_clock: SystemTime::now,
        }
    }

    /// How the breaker records a response with `status` (and no headers the
    /// code predicates look at).
    pub fn outcome(&self, status: StatusCode) -> Outcome {
        self.outcome_of(status, &HeaderMap::new())
    }

    /// How the breaker records a response with `status` and `headers`.
    pub fn outcome_of(&self, status: StatusCode, headers: &HeaderMap) -> Outcome {
        self.inner.get().outcome_of(status, headers)
    }

    /// The `Retry-After` a response asks for: only for the statuses that
    /// honour it (429 and 503 by default) and only when it is not a success.
    pub fn retry_after(&self, response: &impl StatusLike) -> Option<Duration> {
        self.inner.get().retry_after(response)
    }

    /// The outcome and the transition (open for the `Retry-After`) of a
    /// response, both from the same sets (one load of them, also while a
    /// reload replaces them).
    pub fn judge(&self, response: &impl StatusLike) -> (Outcome, ResultTransition) {
        let i = self.inner.get();
        let outcome = i.outcome_of(response.status(), response.headers());
        let transition = match outcome {
            Outcome::Success => ResultTransition::Stay,
            _ => match i.retry_after(response) {
                Some(wait) => ResultTransition::OpenFor(wait),
                None => ResultTransition::Stay,
            },
        };
        (outcome, transition)
    }

    /// A response as a call's result: `Ok` for a success, else
    /// [`HttpError::Status`] carrying the outcome and the `Retry-After`.
    pub fn check<R: StatusLike>(&self, response: R) -> Result<R, HttpError> {
        let (outcome, transition) = self.judge(&response);
        match outcome {
            Outcome::Success => Ok(response),
            outcome => Err(HttpError::Status {
                status: response.status(),
                outcome,
                retry_after: match transition {
                    ResultTransition::OpenFor(wait) => Some(wait),
                    _ => None,
                },
            }),
        }
    }

    /// Adds to a breaker's configuration what an [`HttpError`] asks: ignored
    /// statuses ignored, a `Retry-After` opening the breaker for that long.
    /// Every other `HttpError` (failure statuses, transport errors) is a
    /// failure, as any error is without `record_error` predicates.
    pub fn circuit_breaker(
        &self,
        builder: CircuitBreakerConfigBuilder,
    ) -> CircuitBreakerConfigBuilder {
        builder
            .ignore_error(|e: &HttpError| e.is_ignored())
            .transition_on_error(|e: &HttpError| e.transition())
    }

    /// Adds to a retry's configuration: ignored statuses are not retried,
    /// and the wait before the next attempt is the failed response's
    /// `Retry-After` when it has one, else `interval`'s (which also becomes
    /// the retry's interval function). `T` is the protected call's `Ok`
    /// type. The wait after a `Retry-After` is 1 ms longer than it: the
    /// breaker that the same response opened for exactly the `Retry-After`
    /// permits calls only strictly after its wait, so the retry's attempt
    /// then finds it half-open instead of being refused.
    pub fn retry<T: 'static>(
        &self,
        builder: RetryConfigBuilder,
        interval: IntervalFunction,
    ) -> RetryConfigBuilder {
        let fallback = interval.clone();
        builder
            .interval_function(interval)
            .retry_on_error(|e: &HttpError| !e.is_ignored())
            .interval_bi_function(
                move |attempt, outcome: Result<&T, &HttpError>| match outcome {
                    // Just past the Retry-After: a breaker it opened for that
                    // long lets calls through only strictly after its wait.
                    Err(e) => Some(match e.retry_after() {
                        Some(wait) => wait + PAST_RETRY_AFTER,
                        None => fallback.interval(attempt),
                    }),
                    Ok(_) => Some(fallback.interval(attempt)),
                },
            )
    }
}

impl fmt::Debug for HttpClassifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &*self.inner;
        f.debug_struct("HttpClassifier")
            .field("record_status", &i.record)
            .field("ignore_status", &i.ignore)
            .field("success_status", &i.success)
            .field("retry_after_status", &i.retry_after)
            .field("predicates", &i.predicates.len())
            .finish()
    }
}

/// Builds an [`HttpClassifier`]. Cloning it clones its settings (the code
/// predicates are shared).
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HttpClassifierBuilder {
    record: Option<StatusSet>,
    ignore: StatusSet,
    success: Option<StatusSet>,
    retry_after: StatusSet,
    predicates: Vec<Arc<Predicate>>,
    wall_clock: fn() -> SystemTime,
}

impl HttpClassifierBuilder {
    /// The statuses recorded as failures (`record-status`; replaces the
    /// default `408, 429, 500-599`).
    pub fn record_status(mut self, set: StatusSet) -> Self {
        self.record = Some(set);
        self
    }

    /// The statuses ignored (`ignore-status`): checked first.
    pub fn ignore_status(mut self, set: StatusSet) -> Self {
        self.ignore = set;
        self
    }

    /// The only statuses that are successes (`success-status`): any other
    /// status not ignored is a failure. Setting it drops the default
    /// `record-status` unless one was set.
    pub fn success_status(mut self, set: StatusSet) -> Self {
        self.success = Some(set);
        self
    }

    /// The statuses whose `Retry-After` opens the breaker and sets the
    /// retry's wait (`429, 503` by default).
    pub fn retry_after_status(mut self, set: StatusSet) -> Self {
        self.retry_after = set;
        self
    }

    /// A code predicate consulted before the sets: `Some(outcome)` decides,
    /// `None` leaves it to the next predicate and then the sets.
    pub fn classify_with(
        mut self,
        predicate: impl Fn(StatusCode, &HeaderMap) -> Option<Outcome> + Send + Sync + 'static,
    ) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }

    /// The wall clock an HTTP-date `Retry-After` is measured against
    /// (`SystemTime::now` by default; tests pin it).
    pub fn wall_clock(mut self, now: fn() -> SystemTime) -> Self {
        self.wall_clock = now;
        self
    }

    /// The classifier.
    pub fn build(self) -> HttpClassifier {
        HttpClassifier {
            inner: Handle::detached(DETACHED, self.build_inner()),
        }
    }

    /// The sets and predicates a classifier reads.
    pub(super) fn build_inner(self) -> Inner {
        super::error::register_error_type();
        let record = match (self.record, self.success) {
            (Some(record), _) => record,
            (None, Some(_)) => StatusSet::new(),
            (None, None) => DEFAULT_RECORD_STATUS,
        };
        let verdicts = Verdicts::new(
            &record,
            &self.ignore,
            self.success.as_ref(),
            &self.retry_after,
        );
        Inner {
            predicates: self.predicates,
            verdicts,
            record,
            ignore: self.ignore,
            success: self.success,
            retry_after: self.retry_after,
            wall_clock: self.wall_clock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sets' rule, written directly: what the verdict table must say.
    fn by_the_sets(
        record: &StatusSet,
        ignore: &StatusSet,
        success: Option<&StatusSet>,
        code: u16,
    ) -> Outcome {
        if ignore.contains(code) {
            Outcome::Ignored
        } else if record.contains(code) || success.is_some_and(|s| !s.contains(code)) {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    }

    #[test]
    fn the_verdict_table_says_what_the_sets_say_for_every_status() {
        let set = |s: &str| StatusSet::parse(s).unwrap();
        let classifiers = [
            HttpClassifier::default(),
            // Seed 003: 200 is the price, 403 ignored, anything else fails.
            HttpClassifier::builder()
                .success_status(set("200"))
                .ignore_status(set("403"))
                .build(),
            // Overlapping sets: ignore wins over record.
            HttpClassifier::builder()
                .record_status(set("400-599"))
                .ignore_status(set("404, 409"))
                .retry_after_status(set("503, 999"))
                .build(),
            HttpClassifier::builder()
                .record_status(set("100-999"))
                .success_status(set("200-299"))
                .build(),
        ];
        for classifier in &classifiers {
            let i = &*classifier.inner;
            for code in 100..=999u16 {
                let status = StatusCode::from_u16(code).unwrap();
                assert_eq!(
                    classifier.outcome(status),
                    by_the_sets(&i.record, &i.ignore, i.success.as_ref(), code),
                    "{code} for {classifier:?}"
                );
                assert_eq!(
                    i.verdicts.honours_retry_after(status),
                    i.retry_after.contains(code),
                    "{code} for {classifier:?}"
                );
            }
        }
    }
}
