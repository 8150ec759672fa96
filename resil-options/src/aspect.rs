//! The aspect order: the one table that says which protection wraps which,
//! read by the attribute macros' expansion and by resil-web's
//! `ResilienceLayer`.

use std::fmt;

/// One kind of protection around a call: what an attribute
/// (`#[resil::retry]`, …) or a layer's builder method asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aspect {
    /// `#[resil::retry]`.
    Retry,
    /// `#[resil::hedge]`.
    Hedge,
    /// `#[resil::throttler]`: adaptive client-side throttling.
    Throttler,
    /// `#[resil::circuit_breaker]`.
    CircuitBreaker,
    /// `#[resil::rate_limiter]`.
    RateLimiter,
    /// `#[resil::time_limiter]`.
    TimeLimiter,
    /// `#[resil::bulkhead]` (any kind: semaphore, thread pool, adaptive).
    Bulkhead,
    /// `#[resil::chaos]`.
    Chaos,
}

/// The order aspects nest in, outermost first, whatever order the
/// attributes are written in (or a layer's builder methods are called in):
///
/// ```text
/// Retry( Hedge( Throttler( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( Chaos( call ))))))))
/// ```
///
/// This is the one place the order is written. The attribute macros sort a
/// fn's attributes by it (unless the fn gives its own `order = [...]`), and
/// resil-web's `ResilienceLayer` applies its aspects in it (its
/// `ResilienceLayer::ORDER` is this table restricted to what a layer
/// applies, checked against its state machine at compile time).
///
/// It is Resilience4j's default Spring aspect order,
/// Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call ))))),
/// with the two aspects Resilience4j lacks:
///
/// - **Hedge** just inside Retry: each hedged attempt takes its own breaker
///   permit, rate-limiter permission, timeout and bulkhead slot, and the
///   retry sees one outcome per hedged group.
/// - **Chaos** innermost: it stands for the downstream, so every other aspect
///   sees an injected fault as a real one.
/// - **Throttler** (adaptive client-side throttling) inside Hedge and
///   Retry, outside the breaker: every attempt, hedged or retried, is one
///   request to it (the SRE book counts retries as requests, and sheds
///   them first when the downstream refuses); a local refusal costs no
///   breaker permit, rate-limiter permission, timer or bulkhead slot; and
///   the breaker never counts the throttler's own refusals as the
///   downstream's failures, while the throttler counts nothing for a
///   breaker's (or any inner) local refusal — only what reached the
///   downstream, plus timeouts, which it counts as refused.
///
/// # Consequences
///
/// An outer aspect sees one sample per call of the inner one:
///
/// | | this order | `order = [circuit_breaker, retry]` |
/// |---|---|---|
/// | breaker samples per logical call with 3 failing attempts | 3 | 1 |
/// | breaker timing | one attempt | all attempts and backoffs |
/// | time limit (TimeLimiter inside Retry) | per attempt; worst case ≈ attempts × timeout + waits | (unchanged) |
/// | rate-limiter permits | one per attempt | one per attempt |
/// | an open breaker | returned at once, not retried | refuses before any attempt |
///
/// ```
/// use resil_options::{Aspect, ORDER};
///
/// assert_eq!(ORDER[0], Aspect::Retry);
/// assert!(Aspect::CircuitBreaker.is_outside(Aspect::Bulkhead));
/// assert_eq!(
///     resil_options::in_order([Aspect::Bulkhead, Aspect::Retry, Aspect::TimeLimiter]),
///     [Aspect::Retry, Aspect::TimeLimiter, Aspect::Bulkhead],
/// );
/// ```
pub const ORDER: [Aspect; 8] = [
    Aspect::Retry,
    Aspect::Hedge,
    Aspect::Throttler,
    Aspect::CircuitBreaker,
    Aspect::RateLimiter,
    Aspect::TimeLimiter,
    Aspect::Bulkhead,
    Aspect::Chaos,
];

impl Aspect {
    /// The attribute's name, as the user writes it: `circuit_breaker`.
    pub const fn name(self) -> &'static str {
        match self {
            Aspect::Retry => "retry",
            Aspect::Hedge => "hedge",
            Aspect::Throttler => "throttler",
            Aspect::CircuitBreaker => "circuit_breaker",
            Aspect::RateLimiter => "rate_limiter",
            Aspect::TimeLimiter => "time_limiter",
            Aspect::Bulkhead => "bulkhead",
            Aspect::Chaos => "chaos",
        }
    }

    /// The aspect an attribute (or an `order = [...]` entry) names.
    pub fn from_name(name: &str) -> Option<Aspect> {
        ORDER.into_iter().find(|a| a.name() == name)
    }

    /// The position in [`ORDER`]: 0 is outermost.
    pub const fn rank(self) -> usize {
        let mut i = 0;
        while i < ORDER.len() {
            if ORDER[i] as u8 == self as u8 {
                return i;
            }
            i += 1;
        }
        panic!("every aspect is in ORDER")
    }

    /// Whether `self` wraps `inner` in [`ORDER`] (`Retry` is outside everything).
    pub const fn is_outside(self, inner: Aspect) -> bool {
        self.rank() < inner.rank()
    }
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `aspects` sorted by [`ORDER`], outermost first; usable in a `const`, so a
/// consumer that applies a subset of the aspects derives its order from the
/// table instead of writing it again.
pub const fn in_order<const N: usize>(mut aspects: [Aspect; N]) -> [Aspect; N] {
    // Insertion sort: `const fn` has no `sort`, and N is at most 8.
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && aspects[j].rank() < aspects[j - 1].rank() {
            let outer = aspects[j];
            aspects[j] = aspects[j - 1];
            aspects[j - 1] = outer;
            j -= 1;
        }
        i += 1;
    }
    aspects
}

/// `retry, hedge, circuit_breaker, …`: [`ORDER`] as a message lists it.
pub fn order_text() -> String {
    ORDER.map(Aspect::name).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_aspect_once_outermost_first() {
        assert_eq!(
            order_text(),
            "retry, hedge, throttler, circuit_breaker, rate_limiter, time_limiter, bulkhead, chaos"
        );
        for a in ORDER {
            assert_eq!(Aspect::from_name(a.name()), Some(a));
            assert_eq!(ORDER[a.rank()], a);
            assert_eq!(a.to_string(), a.name());
        }
        assert_eq!(Aspect::from_name("circuitbreaker"), None);
    }

    #[test]
    fn any_subset_sorts_into_the_table_order() {
        let mut reversed = ORDER;
        reversed.reverse();
        assert_eq!(in_order(reversed), ORDER);
        assert_eq!(
            in_order([Aspect::Chaos, Aspect::CircuitBreaker, Aspect::Hedge]),
            [Aspect::Hedge, Aspect::CircuitBreaker, Aspect::Chaos]
        );
        assert_eq!(in_order::<0>([]), []);
        assert!(Aspect::Retry.is_outside(Aspect::Chaos));
        assert!(!Aspect::Bulkhead.is_outside(Aspect::TimeLimiter));
        assert!(!Aspect::Bulkhead.is_outside(Aspect::Bulkhead));
    }
}
