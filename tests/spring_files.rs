//! Spring Boot files, as published, load into a registry and give the values
//! they configure: dotted section keys, other top-level keys, Java class
//! names, named predicates, `.properties`, profiles and Resilience4j 1.x keys.

use std::path::PathBuf;
use std::time::Duration;

use resil::config::{FileConfig, Format, ProblemKind};
use resil::registry_crate::{ReloadError, Status};
use resil::Registry;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/spring")
        .join(name)
}

/// The production example's errors: `InventoryConnectionException` and
/// `InventoryBusinessException` in the Java original.
#[derive(Debug, resil::ErrorClass)]
enum InventoryError {
    InventoryConnection,
    InventoryBusiness,
}

fn seed_registry(file: &str) -> Registry {
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    registry
        .reload_file_with_env(data(file), [("", ""); 0])
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    registry
}

/// Every effective value of one instance, as the snapshot shows it.
fn values(registry: &Registry, kind: &str, name: &str) -> Vec<(String, String)> {
    let snapshot = registry.snapshot();
    let i = snapshot
        .instances
        .iter()
        .find(|i| i.kind == kind && i.name == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"));
    i.config
        .iter()
        .map(|c| (c.key.to_owned(), c.value.clone()))
        .collect()
}

fn assert_seed_values(registry: &Registry) {
    let cb = registry.circuit_breaker("inventory-query");
    let c = cb.config();
    assert_eq!(c.sliding_window_size(), 20);
    assert_eq!(c.minimum_number_of_calls(), 10);
    assert_eq!(c.failure_rate_threshold(), 50.0);
    assert_eq!(c.slow_call_duration_threshold(), Duration::from_millis(500));
    assert_eq!(c.slow_call_rate_threshold(), 60.0);
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(10));
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 3);
    assert_eq!(
        c.max_wait_duration_in_half_open_state(),
        Duration::from_secs(3)
    );
    assert!(!c.automatic_transition_from_open_to_half_open_enabled());
    let bh = registry.bulkhead("inventory-query");
    assert_eq!(bh.config().max_concurrent_calls(), 20);
    assert_eq!(bh.config().max_wait_duration(), Duration::ZERO);
    let tl = registry.time_limiter("inventory-query");
    assert_eq!(tl.config().timeout_duration(), Duration::from_millis(800));
    assert!(tl.config().cancel_running_future());
    let retry = registry.retry("inventory-query");
    assert_eq!(retry.config().max_attempts(), 2);
    assert_eq!(retry.config().wait_duration(), Duration::from_millis(100));
}

#[test]
fn the_production_example_loads_byte_for_byte_and_its_java_names_resolve() {
    let file = FileConfig::from_file(data("seed-production.yml")).unwrap();
    assert_eq!(file.ignored_keys(), ["management"]);
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    let registry = seed_registry("seed-production.yml");
    assert_seed_values(&registry);

    // `retry-exceptions: [com.example.order.InventoryConnectionException]`
    // is the class `inventory_connection`: retried; the business one is not.
    let retry = registry.retry("inventory-query");
    let mut attempts = 0;
    let _ = retry.call(|| {
        attempts += 1;
        Err::<(), _>(InventoryError::InventoryConnection)
    });
    assert_eq!(attempts, 2);
    let mut attempts = 0;
    let _ = retry.call(|| {
        attempts += 1;
        Err::<(), _>(InventoryError::InventoryBusiness)
    });
    assert_eq!(attempts, 1);
}

#[test]
fn the_properties_form_gives_the_same_snapshot() {
    let yaml = seed_registry("seed-production.yml");
    let properties = seed_registry("seed-production.properties");
    assert_seed_values(&yaml);
    assert_seed_values(&properties);
    for kind in ["circuit_breaker", "retry", "bulkhead", "time_limiter"] {
        assert_eq!(
            values(&yaml, kind, "inventory-query"),
            values(&properties, kind, "inventory-query"),
            "{kind}"
        );
    }
    // The snapshot says where each value is written.
    let snapshot = properties.snapshot();
    let retry = snapshot
        .instances
        .iter()
        .find(|i| i.kind == "retry")
        .unwrap();
    assert_eq!(
        retry.config_value("max-attempts").unwrap().location,
        "seed-production.properties:17 resilience4j.retry.instances.inventory-query.max-attempts"
    );
}

/// The Resilience4j Spring Boot 3 demo's errors, by the Java names its file lists.
#[derive(Debug, resil::ErrorClass)]
enum DemoError {
    /// `org.springframework.web.client.HttpServerErrorException`.
    HttpServerError,
    /// `java.io.IOException`, by an explicit alias.
    #[error_class(aliases = ["java.io.IOException"])]
    Network,
    /// `io.github.robwin.exception.BusinessException`.
    Business,
    /// In no list of the file.
    Throttled,
}

#[test]
fn resilience4j_s_spring_boot_3_demo_file_loads_as_published() {
    let registry = Registry::new();
    registry.register_error_class::<DemoError>();
    // Its `recordFailurePredicate: io.github.robwin.exception.RecordFailurePredicate`.
    registry.register_predicate("RecordFailurePredicate", |e: &DemoError| {
        !matches!(e, DemoError::Business)
    });
    registry
        .reload_file_with_env(
            data("resilience4j-spring-boot3-demo.application.yml"),
            [("", ""); 0],
        )
        .unwrap_or_else(|e| panic!("{e}"));

    let a = registry.circuit_breaker("backendA");
    let c = a.config();
    assert_eq!(c.sliding_window_size(), 10);
    assert_eq!(c.minimum_number_of_calls(), 5);
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 3);
    assert!(c.automatic_transition_from_open_to_half_open_enabled());
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(5));
    // recordExceptions: the three Java names are the three classes; the
    // ignored business error is not a failure.
    use resil::circuit_breaker::Outcome;
    assert_eq!(
        c.classify_error(&DemoError::HttpServerError),
        Outcome::Failure
    );
    assert_eq!(c.classify_error(&DemoError::Network), Outcome::Failure);
    assert_eq!(c.classify_error(&DemoError::Business), Outcome::Ignored);

    // backendB inherits `configs.default` (no baseConfig) and adds the
    // predicate: an error in no list is a failure by the predicate, where
    // backendA, with the record list alone, counts it as a success.
    let b = registry.circuit_breaker("backendB");
    assert_eq!(b.config().minimum_number_of_calls(), 10);
    assert_eq!(
        b.config().classify_error(&DemoError::Throttled),
        Outcome::Failure
    );
    assert_eq!(c.classify_error(&DemoError::Throttled), Outcome::Success);
    let _ = b.call(|| Err::<(), _>(DemoError::Business));
    let _ = b.call(|| Err::<(), _>(DemoError::Throttled));
    let m = b.metrics();
    assert_eq!((m.failed_calls(), m.ignored_calls()), (1, 1));

    let retry = registry.retry("backendA");
    assert_eq!(retry.config().max_attempts(), 3);
    assert_eq!(retry.config().wait_duration(), Duration::from_millis(100));
    assert_eq!(
        registry
            .bulkhead("backendA")
            .config()
            .max_concurrent_calls(),
        10
    );
    let bh = registry.bulkhead("backendB");
    assert_eq!(bh.config().max_concurrent_calls(), 20);
    assert_eq!(bh.config().max_wait_duration(), Duration::from_millis(10));
    let pool = registry.thread_pool_bulkhead("backendA");
    assert_eq!(pool.config().max_thread_pool_size(), 4);
    assert_eq!(pool.config().core_thread_pool_size(), 2);
    assert_eq!(pool.config().queue_capacity(), 2);
    let rl = registry.rate_limiter("backendB");
    assert_eq!(rl.config().limit_for_period(), 6);
    assert_eq!(
        rl.config().limit_refresh_period(),
        Duration::from_millis(500)
    );
    assert_eq!(rl.config().timeout_duration(), Duration::from_secs(3));
    let tl = registry.time_limiter("backendB");
    assert_eq!(tl.config().timeout_duration(), Duration::from_secs(2));
    assert!(!tl.config().cancel_running_future());

    // `registerHealthIndicator: false` on the rate limiters' default config:
    // they are not in the health summary; the breakers are.
    let health = registry.health();
    assert!(health
        .components
        .iter()
        .any(|c| c.kind == "circuit_breaker"));
    assert!(
        !health.components.iter().any(|c| c.kind == "rate_limiter"),
        "{health:?}"
    );
}

#[test]
fn a_misspelt_java_name_suggests_the_registered_class_and_every_stage_reports_at_once() {
    let dir = tempdir("misspelt");
    let path = dir.join("application.yml");
    std::fs::write(
        &path,
        "resilience4j.retry.instances.inventory-query:\n  max-atempts: 2\n  retry-exceptions:\n    - com.example.order.InventoryConectionException\n",
    )
    .unwrap();
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    let Err(ReloadError::File(e)) = registry.reload_file_with_env(&path, [("", ""); 0]) else {
        panic!("must fail");
    };
    let kinds: Vec<ProblemKind> = e.problems().iter().map(|p| p.kind()).collect();
    assert!(kinds.contains(&ProblemKind::UnknownKey), "{e}");
    let class = e
        .problems()
        .iter()
        .find(|p| p.kind() == ProblemKind::UnknownErrorClass)
        .unwrap_or_else(|| panic!("the unknown class is in the same report: {e}"));
    assert_eq!(class.suggestion(), Some("inventory_connection"), "{e}");
}

#[test]
fn an_unregistered_predicate_is_an_error_listing_the_registered_ones() {
    let registry = Registry::new();
    registry.register_predicate("KnownPredicate", |_: &DemoError| true);
    let file = FileConfig::from_yaml_str(
        "resilience4j.circuitbreaker.instances.x.recordFailurePredicate: com.acme.OtherPredicate\n",
    )
    .unwrap();
    let Err(ReloadError::File(e)) = registry.reload(file) else {
        panic!("must fail");
    };
    let text = e.to_string();
    assert!(
        text.contains("unknown predicate `com.acme.OtherPredicate`"),
        "{text}"
    );
    assert!(text.contains("`KnownPredicate`"), "{text}");
}

#[test]
fn profiles_select_documents_and_profile_files_and_provenance_names_them() {
    let path = data("profiles.yml");
    let load = |vars: &[(&str, &str)]| {
        FileConfig::from_file_with_env(&path, vars.iter().copied())
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let size = |f: &FileConfig| {
        f.circuit_breaker()
            .for_name("inventory-query")
            .config()
            .sliding_window_size()
    };
    let none = load(&[]);
    assert_eq!(size(&none), 20);
    assert_eq!(
        none.retry()
            .for_name("inventory-query")
            .config()
            .max_attempts(),
        2
    );
    assert_eq!(
        none.retry()
            .for_name("inventory-query")
            .config()
            .wait_duration(),
        Duration::from_millis(100),
        "the placeholder's default"
    );
    let prod = load(&[("RESIL_PROFILES", "prod"), ("RETRY_WAIT", "250ms")]);
    assert_eq!(prod.profiles(), ["prod"]);
    assert_eq!(size(&prod), 100);
    let cb = prod.circuit_breaker().for_name("inventory-query");
    assert_eq!(
        cb.config().failure_rate_threshold(),
        50.0,
        "the shared document's"
    );
    let retry = prod.retry().for_name("inventory-query");
    assert_eq!(retry.config().max_attempts(), 3);
    assert_eq!(retry.config().wait_duration(), Duration::from_millis(250));
    assert_eq!(
        at(cb, "sliding-window-size"),
        "profiles.yml (document 2):14 resilience4j.circuitbreaker.instances.inventory-query.sliding-window-size"
    );
    let dev = load(&[("RESIL_PROFILES", "dev")]);
    assert_eq!(
        dev.circuit_breaker()
            .for_name("inventory-query")
            .config()
            .failure_rate_threshold(),
        90.0
    );

    // `application-{profile}.yml` beside the main file, read after it.
    let dir = tempdir("profile-files");
    std::fs::write(
        dir.join("application.yml"),
        "resilience4j.retry.instances.a.max-attempts: 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("application-prod.yml"),
        "resilience4j:\n  retry:\n    instances:\n      a:\n        max-attempts: 4\n",
    )
    .unwrap();
    let f =
        FileConfig::from_file_with_env(dir.join("application.yml"), [("RESIL_PROFILES", "prod")])
            .unwrap();
    let a = f.retry().for_name("a");
    assert_eq!(a.config().max_attempts(), 4);
    assert_eq!(
        at(a, "max-attempts"),
        "application-prod.yml:5 resilience4j.retry.instances.a.max-attempts"
    );
    let f = FileConfig::from_file(dir.join("application.yml")).unwrap();
    assert_eq!(f.retry().for_name("a").config().max_attempts(), 2);

    // The main file's own `spring.profiles.active` selects the profile file
    // when the environment names none; a syntax error in the main file is
    // reported once, at its line.
    std::fs::write(
        dir.join("application.yml"),
        "spring.profiles.active: prod\nresilience4j.retry.instances.a.max-attempts: 2\n",
    )
    .unwrap();
    let f = FileConfig::from_file(dir.join("application.yml")).unwrap();
    assert_eq!(f.profiles(), ["prod"]);
    assert_eq!(f.retry().for_name("a").config().max_attempts(), 4);
    std::fs::write(
        dir.join("application.yml"),
        "resilience4j.retry.instances.a.max-attempts: 2\nresilience4j.retry.instances.a.max-attempts: 3\n",
    )
    .unwrap();
    let e = FileConfig::from_file(dir.join("application.yml")).unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
}

#[test]
fn an_unresolvable_placeholder_is_an_error_at_its_key() {
    let e = FileConfig::from_yaml_str(
        "resilience4j.retry.instances.a.wait-duration: ${RETRY_WAIT}\ninfo.name: ${spring.application.name}\n",
    )
    .unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
    let p = &e.problems()[0];
    assert_eq!(
        p.path(),
        Some("resilience4j.retry.instances.a.wait-duration")
    );
    assert_eq!(p.line(), Some(1));
    assert!(p.to_string().contains("`${RETRY_WAIT}` is not set"), "{p}");
    // A placeholder naming another key of the file takes its value.
    let f = FileConfig::from_yaml_str(
        "app.retries: 4\nresilience4j.retry.instances.a.max-attempts: ${app.retries}\n",
    )
    .unwrap();
    assert_eq!(f.retry().for_name("a").config().max_attempts(), 4);
}

#[test]
fn a_resilience4j_1x_file_loads_with_each_old_key_read_as_its_2x_meaning() {
    let file = FileConfig::from_file(data("resilience4j-1x.yml")).unwrap_or_else(|e| panic!("{e}"));
    let cb = file.circuit_breaker().for_name("inventory");
    assert_eq!(cb.config().sliding_window_size(), 20);
    assert_eq!(
        cb.config().permitted_number_of_calls_in_half_open_state(),
        4
    );
    assert_eq!(
        cb.config().wait_duration_in_open_state(),
        Duration::from_secs(5)
    );
    // Spring on Resilience4j 2.x would make 3 attempts here; the file asks for 5.
    assert_eq!(
        file.retry().for_name("inventory").config().max_attempts(),
        5
    );
    assert_eq!(
        file.rate_limiter()
            .for_name("inventory")
            .config()
            .limit_for_period(),
        10
    );
    assert_eq!(
        file.bulkhead()
            .for_name("inventory")
            .config()
            .max_wait_duration(),
        Duration::from_millis(10)
    );
    let warnings: Vec<String> = file.warnings().iter().map(|w| w.to_string()).collect();
    let renamed = |old: &str, new: &str| {
        assert!(
            warnings.iter().any(|w| w.contains(old) && w.contains(new)),
            "{old} → {new} in {warnings:#?}"
        );
    };
    renamed(
        "circuitbreaker.backends",
        "resilience4j.circuitbreaker.instances",
    );
    renamed("ratelimiter.limiters", "resilience4j.ratelimiter.instances");
    renamed("ringBufferSizeInClosedState", "sliding-window-size");
    renamed(
        "ringBufferSizeInHalfOpenState",
        "permitted-number-of-calls-in-half-open-state",
    );
    renamed("waitInterval", "wait-duration-in-open-state");
    renamed("maxRetryAttempts", "max-attempts");
    renamed("maxWaitTime", "max-wait-duration");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("subscribeForEvents") && w.contains("ignored")),
        "{warnings:#?}"
    );
    assert!(file
        .warnings()
        .iter()
        .all(|w| w.kind() == ProblemKind::Renamed || w.kind() == ProblemKind::Ignored));
    assert!(file.warnings().iter().all(|w| w.line().is_some()));

    // registerHealthIndicator: false takes effect.
    let registry = Registry::new();
    registry.reload(file).unwrap();
    let _ = registry.rate_limiter("inventory");
    let _ = registry.circuit_breaker("inventory");
    let health = registry.health();
    assert!(!health.components.iter().any(|c| c.kind == "rate_limiter"));
    assert!(health
        .components
        .iter()
        .any(|c| c.kind == "circuit_breaker"));
}

#[test]
fn the_health_indicator_keys_take_effect() {
    let registry = Registry::new();
    registry
        .reload(
            FileConfig::from_str_with_env(
                "resilience4j.circuitbreaker.instances:\n  essential:\n    allow-health-indicator-to-fail: true\n  optional: {}\n  hidden:\n    register-health-indicator: false\nresilience4j.ratelimiter.instances.quota.register-health-indicator: false\n",
                Format::Yaml,
                [("", ""); 0],
            )
            .unwrap(),
        )
        .unwrap();
    for name in ["essential", "optional", "hidden"] {
        let _ = registry.circuit_breaker(name);
    }
    let _ = registry.rate_limiter("quota");
    let names = |h: &resil::registry_crate::Health| -> Vec<String> {
        h.components.iter().map(|c| c.name.to_string()).collect()
    };
    let h = registry.health();
    assert_eq!(names(&h), ["essential", "optional"]);
    assert_eq!(h.status, Status::Up);

    // A downstream behind `optional` fails: DEGRADED, never DOWN.
    registry.force_open("optional", None, "drill").unwrap();
    assert_eq!(registry.health().status, Status::Degraded);
    // Behind `essential`, which may fail: DOWN.
    registry.force_open("essential", None, "drill").unwrap();
    assert_eq!(registry.health().status, Status::Down);
    // `hidden` changes nothing, whatever its state.
    registry.force_open("hidden", None, "drill").unwrap();
    assert_eq!(names(&registry.health()), ["essential", "optional"]);
}

#[test]
fn with_a_record_list_what_it_does_not_name_counts_as_a_success_refusals_included() {
    use resil::error::BulkheadFull;
    use resil::Error;
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    registry
        .reload(
            FileConfig::from_yaml_str(
                "resilience4j.circuitbreaker.instances:\n  listed:\n    record-exceptions: [inventory_connection]\n  unlisted: {}\n",
            )
            .unwrap(),
        )
        .unwrap();
    let full = || Err::<(), Error<InventoryError>>(BulkheadFull::new("db").into());
    let listed = registry.circuit_breaker("listed");
    let _ = listed.call_nested(full);
    let _ = listed.call_nested(|| Err::<(), _>(Error::Call(InventoryError::InventoryConnection)));
    let _ = listed.call_nested(|| Err::<(), _>(Error::Call(InventoryError::InventoryBusiness)));
    let m = listed.metrics();
    assert_eq!((m.failed_calls(), m.successful_calls()), (1, 2));
    // Without a list, every error and refusal is a failure.
    let unlisted = registry.circuit_breaker("unlisted");
    let _ = unlisted.call_nested(full);
    let _ = unlisted.call_nested(|| Err::<(), _>(Error::Call(InventoryError::InventoryBusiness)));
    assert_eq!(unlisted.metrics().failed_calls(), 2);
}

fn at<C>(p: &resil::config::Resolved<C>, key: &str) -> String {
    p.provenance()
        .into_iter()
        .find(|v| v.key == key)
        .and_then(|v| v.location)
        .unwrap()
}

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resil-spring-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_list_with_every_item_commented_out_is_unset_and_keeps_what_it_would_inherit() {
    let file =
        FileConfig::from_file(data("commented-out-lists.yml")).unwrap_or_else(|e| panic!("{e}"));
    // `backendA` inherits `default`; its own `retryExceptions:` (null) does
    // not replace the inherited list with nothing.
    let a = file.retry().for_name("backendA");
    assert_eq!(
        a.retry_errors().unwrap().names(),
        [
            "org.springframework.web.client.HttpServerErrorException",
            "java.io.IOException"
        ]
    );
    assert!(a.ignore_errors().is_none(), "a null list sets nothing");
    // `backendB` inherits `default` too (no base-config: the default config).
    let b = file.retry().for_name("backendB");
    assert_eq!(b.config().max_attempts(), 2);
    assert_eq!(b.retry_errors().unwrap().names().len(), 2);
    let cb = file.circuit_breaker().for_name("backendA");
    assert!(cb.record_errors().is_none());
    assert!(cb.ignore_errors().is_none());
    assert_eq!(cb.config().sliding_window_size(), 10);
    // A null where one value goes is still refused: only lists are unset.
    let err = FileConfig::from_yaml_str(
        "resilience4j.retry.instances.a:\n  maxAttempts:\n  retryExceptions:\n",
    )
    .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(
        err.problems()[0].path(),
        Some("resilience4j.retry.instances.a.maxAttempts")
    );
}

#[test]
fn limiters_and_backends_merge_with_instances_as_spring_binds_them() {
    let file =
        FileConfig::from_file(data("limiters-and-instances.yml")).unwrap_or_else(|e| panic!("{e}"));
    let a = file.rate_limiter().for_name("backendA");
    assert_eq!(a.config().limit_for_period(), 10, "from `limiters`");
    assert_eq!(
        a.config().timeout_duration(),
        Duration::ZERO,
        "from `instances`"
    );
    assert_eq!(
        file.rate_limiter()
            .for_name("backendB")
            .config()
            .limit_for_period(),
        6
    );
    let cb = file.circuit_breaker().for_name("backendA");
    assert_eq!(cb.config().sliding_window_size(), 20, "from `backends`");
    assert_eq!(
        cb.config().wait_duration_in_open_state(),
        Duration::from_secs(5),
        "from `instances`"
    );
    // The same value under both keys is one setting, not a conflict.
    assert_eq!(cb.config().failure_rate_threshold(), 50.0);
    assert!(file
        .warnings()
        .iter()
        .any(|w| w.to_string().contains("merged with")));

    // Two different values for one setting: the error names both keys and lines.
    let err = FileConfig::from_yaml_str(
        "resilience4j:\n  ratelimiter:\n    limiters:\n      backendA:\n        limitForPeriod: 10\n    \
         instances:\n      backendA:\n        limit-for-period: 20\n",
    )
    .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let p = &err.problems()[0];
    assert_eq!(p.kind(), ProblemKind::Duplicate);
    let message = p.to_string();
    assert!(
        message.contains("resilience4j.ratelimiter.limiters.backendA.limitForPeriod")
            && message.contains("resilience4j.ratelimiter.instances.backendA.limit-for-period")
            && message.contains("(lines 5 and 8)"),
        "{message}"
    );
}

#[test]
fn aspect_orders_that_give_resils_order_load() {
    let file = FileConfig::from_file(data("aspect-order-retry-outside.yml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(file.warnings().is_empty(), "{:?}", file.warnings());
    assert_eq!(file.retry().for_name("backendA").config().max_attempts(), 3);
}

#[test]
fn aspect_orders_that_ask_for_another_order_are_refused_with_the_order_line_to_write() {
    let err = FileConfig::from_file(data("aspect-order-breaker-outside.yml")).unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    let p = &err.problems()[0];
    assert_eq!(p.kind(), ProblemKind::Unsupported);
    assert_eq!(
        p.path(),
        Some("resilience4j.circuitbreaker.circuitBreakerAspectOrder")
    );
    assert_eq!(p.line(), Some(5));
    let message = p.to_string();
    for needle in [
        "`resilience4j.circuitbreaker.circuitBreakerAspectOrder: 1`",
        "`resilience4j.retry.retryAspectOrder: 2`",
        "`resilience4j.timelimiter.timeLimiterAspectOrder: 3`",
        "ask for CircuitBreaker(Retry(TimeLimiter(RateLimiter(Bulkhead(call)))))",
        "resil's order is compiled into each fn: Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))",
        "`order = [circuit_breaker, retry, time_limiter, rate_limiter, bulkhead]`",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    // A key of another section's aspect is an unknown key with the right one.
    let err = FileConfig::from_yaml_str("resilience4j.retry.circuit-breaker-aspect-order: 1\n")
        .unwrap_err();
    assert_eq!(err.problems()[0].suggestion(), Some("retry-aspect-order"));
}
