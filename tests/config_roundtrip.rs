//! Every value the snapshot renders is one the loader reads back as the same
//! value: for random valid configs of every kind, the snapshot's values,
//! written into a config file, load into an instance whose snapshot shows the
//! same values. And no input makes the loader panic, in any format.

use std::time::Duration;

use proptest::prelude::*;
use resil::config::{FileConfig, Format};
use resil::registry_crate::{Kind, Registry};

/// Snapshot values of the one instance of `kind` called `x`.
fn rendered(registry: &Registry, kind: Kind) -> Vec<(String, String)> {
    let snapshot = registry.snapshot();
    let i = snapshot.instance(kind, "x").expect("the instance exists");
    i.config
        .iter()
        .map(|c| (c.key.to_owned(), c.value.clone()))
        .collect()
}

/// The values written as a YAML file for instance `x`, loaded, rendered.
fn reloaded(kind: Kind, values: &[(String, String)]) -> Vec<(String, String)> {
    let section = kind.config_key();
    let mut text = format!("resilience4j.{section}.instances.x:\n");
    for (key, value) in values {
        text.push_str(&format!("  {key}: {value}\n"));
    }
    let file = FileConfig::from_yaml_str(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
    let registry = Registry::new();
    registry.reload(file).unwrap();
    touch(&registry, kind);
    rendered(&registry, kind)
}

fn touch(registry: &Registry, kind: Kind) {
    match kind {
        Kind::CircuitBreaker => drop(registry.circuit_breaker("x")),
        Kind::Retry => drop(registry.retry("x")),
        Kind::Bulkhead => drop(registry.bulkhead("x")),
        Kind::ThreadPoolBulkhead => drop(registry.thread_pool_bulkhead("x")),
        Kind::RateLimiter => drop(registry.rate_limiter("x")),
        Kind::TimeLimiter => drop(registry.time_limiter("x")),
        Kind::Hedging => drop(registry.hedging("x")),
        Kind::AdaptiveBulkhead => drop(registry.adaptive_bulkhead("x")),
        Kind::Chaos => drop(registry.chaos("x")),
        Kind::Throttler => drop(registry.throttler("x")),
        other => unreachable!("{other} is not in Kind::ALL"),
    }
}

fn roundtrip(registry: &Registry, kind: Kind) -> Result<(), TestCaseError> {
    touch(registry, kind);
    let first = rendered(registry, kind);
    prop_assert!(!first.is_empty());
    let second = reloaded(kind, &first);
    prop_assert_eq!(first, second);
    Ok(())
}

/// Any duration from a nanosecond to a few days, often on round units.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..10_000_000_000_000).prop_map(Duration::from_nanos),
        (1u64..100_000).prop_map(Duration::from_millis),
        (1u64..1_000).prop_map(Duration::from_secs),
    ]
}

fn percent() -> impl Strategy<Value = f32> {
    prop_oneof![(1u32..=100).prop_map(|p| p as f32), 0.01f32..100.0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_circuit_breaker_value_renders_as_it_loads(
        failure in percent(),
        slow in percent(),
        slow_after in duration(),
        window in 1u32..500,
        minimum in 1u32..500,
        wait in duration(),
        probes in 1u32..50,
        half_open_wait in duration(),
        auto in any::<bool>(),
        time_based in any::<bool>(),
        backoff in proptest::option::of((1.0f64..4.0, proptest::option::of(duration()))),
    ) {
        let registry = Registry::new();
        let window_type = if time_based {
            resil::circuit_breaker::SlidingWindowType::TimeBased
        } else {
            resil::circuit_breaker::SlidingWindowType::CountBased
        };
        let ok = registry.configure_circuit_breaker("x", move |b| {
            let b = b
                .failure_rate_threshold(failure)
                .slow_call_rate_threshold(slow)
                .slow_call_duration_threshold(slow_after)
                .sliding_window_type(window_type)
                .sliding_window_size(window)
                .minimum_number_of_calls(minimum)
                .permitted_number_of_calls_in_half_open_state(probes)
                .max_wait_duration_in_half_open_state(half_open_wait)
                .automatic_transition_from_open_to_half_open_enabled(auto);
            match backoff {
                Some((m, max)) => {
                    let f = resil::retry::IntervalFunction::exponential(wait, m);
                    b.wait_interval_function_in_open_state(match max {
                        Some(max) if max >= wait => f.with_max(max),
                        _ => f,
                    })
                }
                None => b.wait_duration_in_open_state(wait),
            }
        });
        prop_assume!(ok.is_ok());
        roundtrip(&registry, Kind::CircuitBreaker)?;
    }

    #[test]
    fn every_failure_model_throttler_and_warm_up_value_renders_as_it_loads(
        model in 0u8..3,
        consecutive in 1u32..1_000,
        count in 1u32..65_536,
        interval in duration(),
        ramp in duration(),
        cold in 1u32..10,
        k in 1.0f64..8.0,
        window in 1u64..3_600,
        cap in 0.01f64..1.0,
    ) {
        use resil::circuit_breaker::FailureModel;
        let registry = Registry::new();
        let model = [FailureModel::Rate, FailureModel::Consecutive, FailureModel::Count][model as usize];
        let ok = registry.configure_circuit_breaker("x", move |b| {
            b.failure_model(model)
                .consecutive_failure_threshold(consecutive)
                .failure_count_threshold(count)
                .failure_count_interval(interval)
                .warm_up_period(ramp)
                .cold_factor(cold)
        });
        prop_assume!(ok.is_ok());
        roundtrip(&registry, Kind::CircuitBreaker)?;
        let ok = registry.configure_throttler("x", move |b| {
            b.accepts_multiplier(k)
                .sliding_window_duration(Duration::from_secs(window))
                .max_rejection_probability(cap)
        });
        prop_assume!(ok.is_ok());
        roundtrip(&registry, Kind::Throttler)?;
    }

    #[test]
    fn every_retry_value_renders_as_it_loads(
        attempts in 1u32..20,
        wait in duration(),
        fail_after in any::<bool>(),
        shape in 0u8..4,
        multiplier in 1.0f64..4.0,
        factor in 0.0f64..1.0,
    ) {
        let registry = Registry::new();
        let ok = registry.configure_retry("x", move |b| {
            let b = b.max_attempts(attempts).fail_after_max_attempts(fail_after);
            use resil::retry::IntervalFunction as F;
            match shape {
                0 => b.wait_duration(wait),
                1 => b.interval_function(F::exponential(wait, multiplier)),
                2 => b.interval_function(F::randomized(wait, factor)),
                _ => b.interval_function(F::exponential_random(wait, multiplier, factor)),
            }
        });
        prop_assume!(ok.is_ok());
        roundtrip(&registry, Kind::Retry)?;
    }

    #[test]
    fn every_bulkhead_limiter_and_time_limiter_value_renders_as_it_loads(
        calls in 1u32..10_000,
        wait in duration(),
        fair in any::<bool>(),
        core in 1usize..8,
        extra in 0usize..8,
        queue in 1usize..1000,
        keep_alive in duration(),
        limit in 1u32..10_000,
        refresh in duration(),
        timeout in duration(),
        cancel in any::<bool>(),
    ) {
        let registry = Registry::new();
        prop_assume!(registry
            .configure_bulkhead("x", move |b| b
                .max_concurrent_calls(calls)
                .max_wait_duration(wait)
                .fair_call_handling_enabled(fair))
            .is_ok());
        roundtrip(&registry, Kind::Bulkhead)?;
        prop_assume!(registry
            .configure_thread_pool_bulkhead("x", move |b| b
                .core_thread_pool_size(core)
                .max_thread_pool_size(core + extra)
                .queue_capacity(queue)
                .keep_alive_duration(keep_alive))
            .is_ok());
        roundtrip(&registry, Kind::ThreadPoolBulkhead)?;
        prop_assume!(registry
            .configure_rate_limiter("x", move |b| b
                .limit_for_period(limit)
                .limit_refresh_period(refresh)
                .timeout_duration(timeout))
            .is_ok());
        roundtrip(&registry, Kind::RateLimiter)?;
        prop_assume!(registry
            .configure_time_limiter("x", move |b| b
                .timeout_duration(timeout)
                .cancel_running_future(cancel))
            .is_ok());
        roundtrip(&registry, Kind::TimeLimiter)?;
    }

    #[test]
    fn every_hedging_adaptive_bulkhead_and_chaos_value_renders_as_it_loads(
        attempts in 1u32..=10,
        delay in duration(),
        min in 1u32..100,
        span in 0u32..1000,
        initial in 0u32..1000,
        smoothing in 0.001f64..=1.0,
        probe in 1u32..=1000,
        window in 1u64..60_000,
        window_extra in 0u64..60_000,
        calls in 1u32..100_000,
        rtt in 0u64..1_000_000,
        enabled in any::<bool>(),
        rate in 0.0f64..=1.0,
        latency in duration(),
    ) {
        let registry = Registry::new();
        prop_assume!(registry
            .configure_hedging("x", move |b| b.max_hedged_attempts(attempts).delay(delay))
            .is_ok());
        roundtrip(&registry, Kind::Hedging)?;
        let max = min + span;
        let min_window = Duration::from_millis(window);
        let max_window = Duration::from_millis((window + window_extra).min(60_000));
        prop_assume!(registry
            .configure_adaptive_bulkhead("x", move |b| b
                .min_limit(min)
                .max_limit(max)
                .initial_limit(min + initial.min(span))
                .smoothing(smoothing)
                .probe_multiplier(probe)
                .min_window_time(min_window)
                .max_window_time(max_window)
                .window_size(calls)
                .min_rtt_threshold(Duration::from_micros(rtt)))
            .is_ok());
        roundtrip(&registry, Kind::AdaptiveBulkhead)?;
        prop_assume!(registry
            .configure_chaos("x", move |b| b.enabled(enabled).inject_latency(rate, latency))
            .is_ok());
        roundtrip(&registry, Kind::Chaos)?;
    }
}

// ---- the loader never panics ------------------------------------------------

const WORDS: &[&str] = &[
    "resilience4j",
    "resilience4j.circuitbreaker",
    "resilience4j.retry.instances",
    "circuitbreaker",
    "retry",
    "instances",
    "configs",
    "default",
    "a",
    "a.b",
    "[a.b]",
    "x[0]",
    "x[3]",
    "spring.config.activate.on-profile",
    "spring.profiles.active",
    "management",
    "backends",
    "base-config",
    "maxRetryAttempts",
    "ringBufferSizeInClosedState",
    "sliding-window-size",
    "wait-duration",
    "retry-exceptions",
    "recordFailurePredicate",
    "register-health-indicator",
];

const SCALARS: &[&str] = &[
    "0",
    "1",
    "-1",
    "1.5",
    "true",
    "10s",
    "1500ms",
    "${X}",
    "${X:5}",
    "${",
    "${:}",
    "${X:${Y:1}}",
    "prod",
    "!prod",
    "a,b",
    "com.example.FooException",
    "",
    "é",
    "\\u12",
    "18446744073709551616",
];

/// A random tree of keys and scalars.
fn tree() -> impl Strategy<Value = Tree> {
    let leaf = (0..SCALARS.len()).prop_map(Tree::Leaf);
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec((0..WORDS.len(), inner.clone()), 0..6).prop_map(Tree::Map),
            proptest::collection::vec(inner, 0..4).prop_map(Tree::List),
        ]
    })
}

#[derive(Debug, Clone)]
enum Tree {
    Leaf(usize),
    Map(Vec<(usize, Tree)>),
    List(Vec<Tree>),
}

fn yaml(t: &Tree, indent: usize, out: &mut String) {
    match t {
        Tree::Leaf(i) => {
            out.push_str(&format!(" \"{}\"\n", SCALARS[*i].replace('\\', "\\\\")));
        }
        Tree::Map(entries) => {
            out.push('\n');
            for (k, v) in entries {
                out.push_str(&" ".repeat(indent));
                out.push_str(&format!("\"{}\":", WORDS[*k]));
                yaml(v, indent + 2, out);
            }
            if entries.is_empty() {
                out.push_str(&" ".repeat(indent));
                out.push_str("{}\n");
            }
        }
        Tree::List(items) => {
            out.push('\n');
            for v in items {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                match v {
                    Tree::Leaf(i) => {
                        out.push_str(&format!("\"{}\"\n", SCALARS[*i].replace('\\', "\\\\")))
                    }
                    _ => {
                        out.push_str("x:");
                        yaml(v, indent + 4, out);
                    }
                }
            }
        }
    }
}

fn flat(t: &Tree, path: &str, out: &mut Vec<(String, String)>) {
    match t {
        Tree::Leaf(i) => out.push((path.to_owned(), SCALARS[*i].to_owned())),
        Tree::Map(entries) => {
            for (k, v) in entries {
                let p = if path.is_empty() {
                    WORDS[*k].to_owned()
                } else {
                    format!("{path}.{}", WORDS[*k])
                };
                flat(v, &p, out);
            }
        }
        Tree::List(items) => {
            for (i, v) in items.iter().enumerate() {
                flat(v, &format!("{path}[{i}]"), out);
            }
        }
    }
}

fn check(result: Result<FileConfig, resil::config::ConfigFileError>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(!e.problems().is_empty());
        let _ = e.to_string();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_tree_in_any_format_loads_or_is_a_config_file_error(
        docs in proptest::collection::vec(tree(), 1..3),
        profiles in "(|prod|dev|prod,dev)",
    ) {
        let vars = [("RESIL_PROFILES", profiles.as_str()), ("Y", "2")];
        let mut text = String::new();
        let mut properties = String::new();
        let mut toml = String::new();
        for (n, doc) in docs.iter().enumerate() {
            if n > 0 {
                text.push_str("---\n");
            }
            let mut one = String::new();
            yaml(doc, 0, &mut one);
            text.push_str(one.trim_start_matches('\n'));
            let mut pairs = Vec::new();
            flat(doc, "", &mut pairs);
            for (k, v) in pairs {
                properties.push_str(&format!("{k}={v}\n"));
                if !k.contains('[') {
                    toml.push_str(&format!(
                        "{} = \"{}\"\n",
                        k.split('.').map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join("."),
                        v.replace('\\', "\\\\")
                    ));
                }
            }
        }
        check(FileConfig::from_str_with_env(&text, Format::Yaml, vars))?;
        check(FileConfig::from_str_with_env(&properties, Format::Properties, vars))?;
        check(FileConfig::from_str_with_env(&toml, Format::Toml, vars))?;
    }

    #[test]
    fn any_bytes_in_any_format_load_or_are_a_config_file_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let text = String::from_utf8_lossy(&bytes);
        for format in [Format::Yaml, Format::Toml, Format::Properties] {
            check(FileConfig::from_str_with_env(&text, format, [("RESIL_PROFILES", "prod")]))?;
        }
    }
}
