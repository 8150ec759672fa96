//! [`advise`]: the configuration advisor over a loaded config file.

use std::collections::BTreeSet;

use resil_core::advisor::{
    self, advise_health, advise_shared_breaker, Finding, HealthIndicator, Protection, Traffic,
};
use resil_registry::config::{FileConfig, Resolved};

/// Advice on every instance a config file configures, under `traffic`: the
/// findings of [`advisor::advise`] for each name the file's
/// `circuitbreaker`, `retry`, `bulkhead` and `timelimiter` sections
/// configure (the instances of one name protect one call, as one annotated
/// fn names them), then the health-indicator and shared-breaker checks.
/// Each finding names the key path it is about and, with
/// [`Finding::set_at`], where the value in force is written (a
/// `base-config`, a line of the file, an environment variable, or `default`).
///
/// What the file adds to the pure advisor:
///
/// * **retries of every error**: a retry instance with no `retry-exceptions`
///   (or an empty one) and no `retry-exception-predicate` retries every error
///   (an `ignore-exceptions` list alone still retries everything else);
/// * **health on a liveness path**: a circuit breaker or rate limiter whose
///   indicator is registered (resil's default) and
///   `allow-health-indicator-to-fail: true` is a warning when the file's
///   `management.endpoint.health.group.liveness.include` names
///   `circuitBreakers` / `rateLimiters` (or `*`), a note otherwise;
/// * **one breaker for several downstreams**: a file does not say which
///   breaker a call uses, so the advisor reads the names. When the file
///   configures retry, bulkhead, time-limiter, rate-limiter or thread-pool
///   instances `catalog-query` and `catalog-export` (names beginning with a
///   breaker's name and `-`, `_` or `.`) that have no breaker of their own,
///   while a breaker `catalog` exists, both calls almost certainly name the
///   breaker `catalog`: a warning on that breaker listing them.
///
/// ```
/// use std::time::Duration;
/// use resil::advisor::Traffic;
/// use resil::config::FileConfig;
///
/// let file = FileConfig::from_yaml_str(
///     "resilience4j.bulkhead.instances.inventory.max-concurrent-calls: 10\n",
/// ).unwrap();
/// let traffic = Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120));
/// let findings = resil::advise(&file, &traffic);
/// assert_eq!(
///     findings[0].to_string(),
///     "warning: resilience4j.bulkhead.instances.inventory.max-concurrent-calls: 10 is below \
///      the 24 calls in flight at p99 (Little's law: 200 qps × 120ms): normal traffic is refused; \
///      size it at 24 or more (set at line 1 resilience4j.bulkhead.instances.inventory.max-concurrent-calls)"
/// );
/// ```
pub fn advise(file: &FileConfig, traffic: &Traffic) -> Vec<Finding> {
    let mut names = BTreeSet::new();
    names.extend(file.circuit_breaker().instance_names());
    names.extend(file.retry().instance_names());
    names.extend(file.bulkhead().instance_names());
    names.extend(file.time_limiter().instance_names());

    let mut out = Vec::new();
    for name in names {
        let cb = file.circuit_breaker().instance(name);
        let retry = file.retry().instance(name);
        let bulkhead = file.bulkhead().instance(name);
        let time_limiter = file.time_limiter().instance(name);
        let mut protection = Protection::new(name);
        if let Some(r) = cb {
            protection = protection.circuit_breaker(r.config());
        }
        if let Some(r) = retry {
            protection = protection
                .retry(r.config())
                .retries_every_error(retries_every_error(r));
        }
        if let Some(r) = bulkhead {
            protection = protection.bulkhead(r.config());
        }
        if let Some(r) = time_limiter {
            protection = protection.time_limiter(r.config());
        }
        for finding in advisor::advise(&protection, traffic) {
            let at = match finding.key_path().split('.').nth(1) {
                Some("circuitbreaker") => cb.map(|r| set_at(r, finding.key())),
                Some("retry") => retry.map(|r| set_at(r, finding.key())),
                Some("bulkhead") => bulkhead.map(|r| set_at(r, finding.key())),
                Some("timelimiter") => time_limiter.map(|r| set_at(r, finding.key())),
                _ => None,
            };
            out.push(match at {
                Some(at) => finding.with_set_at(at),
                None => finding,
            });
        }
    }

    health(file, &mut out);
    shared_breakers(file, &mut out);
    out
}

/// Neither a list of errors to retry nor a predicate deciding them.
fn retries_every_error<C>(retry: &Resolved<C>) -> bool {
    retry.retry_errors().is_none_or(|l| l.names().is_empty())
        && retry
            .predicate_names("retry-exception-predicate")
            .is_none_or(|l| l.names().is_empty())
}

/// Where option `key` (as a finding names it) of `resolved` is written.
fn set_at<C>(resolved: &Resolved<C>, key: &str) -> String {
    // A finding names the list as Resilience4j files spell it.
    let key = match key {
        "retry-exceptions" => "retry-errors",
        other => other,
    };
    resolved
        .provenance()
        .into_iter()
        .find(|p| p.key == key)
        .and_then(|p| p.location)
        .unwrap_or_else(|| "default".to_owned())
}

/// The items of the liveness health group, as Spring reads the key: a
/// comma-separated value or a list.
fn liveness_group(file: &FileConfig) -> Vec<String> {
    const KEY: &str = "management.endpoint.health.group.liveness.include";
    let mut items: Vec<String> = file
        .property(KEY)
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_owned())
        .collect();
    for i in 0.. {
        match file.property(&format!("{KEY}[{i}]")) {
            Some(v) => items.push(v.trim().to_owned()),
            None => break,
        }
    }
    items
}

fn health(file: &FileConfig, out: &mut Vec<Finding>) {
    let liveness = liveness_group(file);
    let on_liveness = |contributor: &str| {
        liveness
            .iter()
            .any(|i| i == "*" || i.eq_ignore_ascii_case(contributor))
    };
    let breakers = file
        .circuit_breaker()
        .instances()
        .map(|(_, r)| indicator(r, on_liveness("circuitBreakers")));
    let limiters = file
        .rate_limiter()
        .instances()
        .map(|(_, r)| indicator(r, on_liveness("rateLimiters")));
    out.extend(breakers.chain(limiters).flatten());
}

fn indicator<C>(resolved: &Resolved<C>, on_liveness: bool) -> Option<Finding> {
    let health = HealthIndicator::new(
        resolved.register_health_indicator().unwrap_or(true),
        resolved.allow_health_indicator_to_fail().unwrap_or(false),
    )
    .on_liveness(on_liveness);
    advise_health(resolved.path(), &health)
        .map(|f| f.with_set_at(set_at(resolved, "allow-health-indicator-to-fail")))
}

fn shared_breakers(file: &FileConfig, out: &mut Vec<Finding>) {
    let mut calls = BTreeSet::new();
    calls.extend(file.retry().instance_names());
    calls.extend(file.bulkhead().instance_names());
    calls.extend(file.time_limiter().instance_names());
    calls.extend(file.rate_limiter().instance_names());
    calls.extend(file.thread_pool_bulkhead().instance_names());
    let breakers = file.circuit_breaker();
    for (breaker, resolved) in breakers.instances() {
        let under: Vec<&str> = calls
            .iter()
            .copied()
            .filter(|call| breakers.instance(call).is_none())
            .filter(|call| {
                call.strip_prefix(breaker)
                    .and_then(|rest| rest.chars().next())
                    .is_some_and(|c| matches!(c, '-' | '_' | '.'))
            })
            .collect();
        out.extend(advise_shared_breaker(resolved.path(), &under));
    }
}
