//! The one table that fixes the aspect order, and the names of the aspects.

use std::fmt;

/// One kind of protection an attribute asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Aspect {
    Retry,
    Hedge,
    CircuitBreaker,
    RateLimiter,
    TimeLimiter,
    Bulkhead,
    Chaos,
}

/// Outermost first:
/// Retry( Hedge( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( Chaos( call ))))))),
/// Resilience4j's default Spring aspect order with the two aspects it lacks:
/// hedging just inside the retry (each hedged attempt takes its own breaker
/// permit, rate-limiter permission, timeout and bulkhead slot; the retry sees
/// one outcome per hedged group), chaos innermost (it stands for the
/// downstream, so every other aspect sees an injected fault as a real one). Nothing else in the crate
/// encodes an order: the expansion sorts by the position in this table, or
/// follows a validated per-fn `order = [...]`.
pub(crate) const ORDER: [Aspect; 7] = [
    Aspect::Retry,
    Aspect::Hedge,
    Aspect::CircuitBreaker,
    Aspect::RateLimiter,
    Aspect::TimeLimiter,
    Aspect::Bulkhead,
    Aspect::Chaos,
];

impl Aspect {
    /// The attribute's name, as the user writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Aspect::Retry => "retry",
            Aspect::Hedge => "hedge",
            Aspect::CircuitBreaker => "circuit_breaker",
            Aspect::RateLimiter => "rate_limiter",
            Aspect::TimeLimiter => "time_limiter",
            Aspect::Bulkhead => "bulkhead",
            Aspect::Chaos => "chaos",
        }
    }

    /// The aspect an attribute (or an `order` entry) names.
    pub(crate) fn from_name(name: &str) -> Option<Aspect> {
        ORDER.into_iter().find(|a| a.as_str() == name)
    }

    /// The position in [`ORDER`]: 0 is outermost.
    pub(crate) fn rank(self) -> usize {
        ORDER
            .iter()
            .position(|&a| a == self)
            .expect("every aspect is in ORDER")
    }
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `retry, circuit_breaker, …` in table order, for messages.
pub(crate) fn default_order_text() -> String {
    ORDER.map(Aspect::as_str).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_aspect_once_outermost_first() {
        assert_eq!(
            default_order_text(),
            "retry, hedge, circuit_breaker, rate_limiter, time_limiter, bulkhead, chaos"
        );
        for a in ORDER {
            assert_eq!(Aspect::from_name(a.as_str()), Some(a));
            assert_eq!(ORDER[a.rank()], a);
        }
    }
}
