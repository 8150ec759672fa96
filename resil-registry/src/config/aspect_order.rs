//! Spring's `*-aspect-order` keys (`resilience4j.retry.retry-aspect-order`,
//! …), read the way Spring orders aspects: the lower value is the outer
//! aspect, and a key left out keeps Resilience4j's default. resil's order is
//! compiled into each fn's expansion ([`resil_options::ORDER`]), so a file
//! cannot change it: keys that give that same order are accepted, keys that
//! ask for another are refused with the `order = [...]` line that gives it.

use resil_options::Aspect;

use super::error::{Problem, ProblemKind};
use super::schema::{normalize, Kind};
use super::value::Value;

/// Spring's `Ordered.LOWEST_PRECEDENCE` (`Integer.MAX_VALUE`).
const LOWEST_PRECEDENCE: i64 = i32::MAX as i64;

/// One aspect's key, the section it is read under, and Resilience4j's
/// default (its Spring Boot 3 starter's `*ConfigurationProperties`), in
/// resil's order, outermost first.
struct Key {
    kind: Kind,
    key: &'static str,
    aspect: Aspect,
    default: i64,
}

const KEYS: [Key; 5] = [
    Key {
        kind: Kind::Retry,
        key: "retry-aspect-order",
        aspect: Aspect::Retry,
        default: LOWEST_PRECEDENCE - 5,
    },
    Key {
        kind: Kind::CircuitBreaker,
        key: "circuit-breaker-aspect-order",
        aspect: Aspect::CircuitBreaker,
        default: LOWEST_PRECEDENCE - 4,
    },
    Key {
        kind: Kind::RateLimiter,
        key: "rate-limiter-aspect-order",
        aspect: Aspect::RateLimiter,
        default: LOWEST_PRECEDENCE - 3,
    },
    Key {
        kind: Kind::TimeLimiter,
        key: "time-limiter-aspect-order",
        aspect: Aspect::TimeLimiter,
        default: LOWEST_PRECEDENCE - 2,
    },
    Key {
        kind: Kind::Bulkhead,
        key: "bulkhead-aspect-order",
        aspect: Aspect::Bulkhead,
        default: LOWEST_PRECEDENCE - 1,
    },
];

/// An aspect order a file writes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Written {
    aspect: Aspect,
    value: i64,
    /// The key path as written.
    path: String,
}

/// Reads `key` (ending in `aspect-order`) of `kind`'s section: the order, or
/// `None` and a problem for a key of another section or a value that is not
/// an integer.
pub(crate) fn read(
    kind: Kind,
    key: &str,
    path: &str,
    value: &Value,
    problems: &mut Vec<Problem>,
) -> Option<Written> {
    let Some(spec) = KEYS
        .iter()
        .find(|k| k.kind == kind && normalize(k.key) == normalize(key))
    else {
        let own = KEYS.iter().find(|k| k.kind == kind).map(|k| k.key);
        let hint = match own {
            Some(own) => format!("this section's aspect order is `{own}`"),
            None => format!("Resilience4j has no aspect order for the {}", kind.label()),
        };
        problems.push(Problem::unknown_key(path.to_owned(), own, Some(&hint)));
        return None;
    };
    let number = match value {
        Value::Int(i) => Some(*i),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    };
    let Some(value) = number else {
        problems.push(Problem::new(
            ProblemKind::WrongType,
            Some(path.to_owned()),
            format!(
                "invalid `{path}`: got {}, expected an integer (Spring's order: the lower value is the outer aspect)",
                value.describe()
            ),
        ));
        return None;
    };
    Some(Written {
        aspect: spec.aspect,
        value,
        path: path.to_owned(),
    })
}

/// Checks the orders a file writes (`written`, one per section at most)
/// against resil's: nothing when they give it, else one problem at the first
/// key naming every key, the order they ask for and the `order = [...]` to
/// write instead.
pub(crate) fn check(written: &[&Written], problems: &mut Vec<Problem>) {
    let Some(first) = written.first() else {
        return;
    };
    let value_of = |k: &Key| {
        written
            .iter()
            .find(|w| w.aspect == k.aspect)
            .map_or(k.default, |w| w.value)
    };
    // Spring's order, outermost first; a tie keeps resil's order here, and
    // is reported below.
    let mut asked: Vec<(i64, &Key)> = KEYS.iter().map(|k| (value_of(k), k)).collect();
    asked.sort_by_key(|(v, _)| *v);
    let keys = written
        .iter()
        .map(|w| format!("`{}: {}`", w.path, w.value))
        .collect::<Vec<_>>()
        .join(", ");
    let tie = asked.windows(2).find(|w| w[0].0 == w[1].0);
    if let Some(w) = tie {
        problems.push(Problem::new(
            ProblemKind::Unsupported,
            Some(first.path.clone()),
            format!(
                "{keys} give `{}` and `{}` the same order {}, which leaves their nesting undefined in Spring; \
                 resil's order is fixed: {}; remove the keys, or give the outer aspect the lower value",
                w[0].1.aspect,
                w[1].1.aspect,
                w[0].0,
                nesting(KEYS.iter().map(|k| k.aspect)),
            ),
        ));
        return;
    }
    if asked
        .iter()
        .map(|(_, k)| k.aspect)
        .eq(KEYS.iter().map(|k| k.aspect))
    {
        return;
    }
    let order = asked
        .iter()
        .map(|(_, k)| k.aspect.name())
        .collect::<Vec<_>>()
        .join(", ");
    problems.push(Problem::new(
        ProblemKind::Unsupported,
        Some(first.path.clone()),
        format!(
            "{keys} ask for {} (in Spring the lower order is the outer aspect; unset keys keep \
             Resilience4j's defaults), but resil's order is compiled into each fn: {}; remove the \
             keys and write `order = [{order}]` on the fn's attributes instead, listing only the \
             attributes the fn has (a tower stack: nest the layers in that order)",
            nesting(asked.iter().map(|(_, k)| k.aspect)),
            nesting(KEYS.iter().map(|k| k.aspect)),
        ),
    ));
}

/// `Retry(CircuitBreaker(…(call)))`.
fn nesting(aspects: impl Iterator<Item = Aspect>) -> String {
    let names: Vec<&str> = aspects.map(label).collect();
    format!("{}(call{}", names.join("("), ")".repeat(names.len()))
}

fn label(aspect: Aspect) -> &'static str {
    match aspect {
        Aspect::Retry => "Retry",
        Aspect::Hedge => "Hedge",
        Aspect::Throttler => "Throttler",
        Aspect::CircuitBreaker => "CircuitBreaker",
        Aspect::RateLimiter => "RateLimiter",
        Aspect::TimeLimiter => "TimeLimiter",
        Aspect::Bulkhead => "Bulkhead",
        Aspect::Chaos => "Chaos",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(aspect: Aspect, value: i64) -> Written {
        Written {
            aspect,
            value,
            path: format!("resilience4j.{}.x-aspect-order", aspect.name()),
        }
    }

    fn check_all(w: &[Written]) -> Vec<Problem> {
        let mut problems = Vec::new();
        check(&w.iter().collect::<Vec<_>>(), &mut problems);
        problems
    }

    #[test]
    fn orders_that_give_resils_nesting_are_accepted() {
        assert!(check_all(&[]).is_empty());
        // Resilience4j's own defaults, written out.
        let defaults: Vec<Written> = KEYS.iter().map(|k| written(k.aspect, k.default)).collect();
        assert!(check_all(&defaults).is_empty());
        // Small numbers, the rest left at their (larger) defaults.
        assert!(check_all(&[
            written(Aspect::Retry, 1),
            written(Aspect::CircuitBreaker, 2)
        ])
        .is_empty());
    }

    #[test]
    fn an_order_with_the_breaker_outside_the_retry_is_refused_with_the_order_line() {
        let problems = check_all(&[
            written(Aspect::CircuitBreaker, 1),
            written(Aspect::Retry, 2),
        ]);
        assert_eq!(problems.len(), 1);
        let message = problems[0].to_string();
        assert!(
            message.contains(
                "ask for CircuitBreaker(Retry(RateLimiter(TimeLimiter(Bulkhead(call)))))"
            ),
            "{message}"
        );
        assert!(
            message.contains(
                "write `order = [circuit_breaker, retry, rate_limiter, time_limiter, bulkhead]`"
            ),
            "{message}"
        );
        assert_eq!(problems[0].kind(), ProblemKind::Unsupported);
    }

    #[test]
    fn two_aspects_with_one_value_are_refused_as_undefined() {
        let problems = check_all(&[written(Aspect::Retry, 7), written(Aspect::Bulkhead, 7)]);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].to_string().contains("same order 7"));
    }
}
