//! `key = <expr>` and `permits = <expr>`: an attribute takes its key's
//! instance of a keyed family, configured like the instance `name`.

use std::sync::Once;
use std::time::Duration;

use resil::{Registry, Rejection};

#[path = "support/budgets.rs"]
mod budgets;

#[derive(Debug, PartialEq)]
enum AppError {
    Refused(&'static str),
    Down,
}

impl From<Rejection> for AppError {
    fn from(r: Rejection) -> Self {
        AppError::Refused(r.kind().as_str())
    }
}

static INIT: Once = Once::new();

fn configured() {
    INIT.call_once(|| {
        // A clock nobody advances: the keyed budgets' windows never pass.
        let r = Registry::builder()
            .clock(resil::clock::ManualClock::new())
            .build();
        let per_minute = |limit| {
            move |b: resil::rate_limiter::RateLimiterConfigBuilder| {
                b.limit_for_period(limit)
                    .limit_refresh_period(Duration::from_secs(60))
                    .timeout_duration(Duration::ZERO)
            }
        };
        r.configure_rate_limiter("keyed-api", per_minute(2))
            .unwrap();
        r.configure_rate_limiter("keyed-weighted", per_minute(10))
            .unwrap();
        r.configure_rate_limiter("keyed-stack", per_minute(100))
            .unwrap();
        r.configure_circuit_breaker("keyed-hosts", |b| {
            b.sliding_window_size(2).minimum_number_of_calls(2)
        })
        .unwrap();
        r.configure_bulkhead("keyed-stack", |b| b.max_concurrent_calls(1))
            .unwrap();
        // A retry whose budget per key pays for one retry a second, and
        // nothing per call (so a key's second failing call is not retried).
        for name in ["keyed-budget", "keyed-budget-async", "keyed-budget-stack"] {
            r.configure_retry(name, |b| {
                b.max_attempts(2)
                    .wait_duration(Duration::ZERO)
                    .budget(budgets::one_retry_budget())
            })
            .unwrap();
        }
        resil::init(r).unwrap();
    });
}

struct Tenant {
    id: String,
}

impl Tenant {
    fn id(&self) -> &str {
        &self.id
    }
}

#[resil::rate_limiter(name = "keyed-api", key = tenant.id())]
fn handle(tenant: &Tenant) -> Result<&'static str, AppError> {
    Ok("ok")
}

#[resil::rate_limiter(name = "keyed-weighted", key = user, permits = items.len())]
async fn order(user: u64, items: Vec<u32>) -> Result<usize, AppError> {
    Ok(items.len())
}

#[resil::circuit_breaker(name = "keyed-hosts", key = host.clone())]
fn fetch(host: String, up: bool) -> Result<(), AppError> {
    if up {
        Ok(())
    } else {
        Err(AppError::Down)
    }
}

#[resil::retry(name = "keyed-stack")]
#[resil::bulkhead(name = "keyed-stack", key = route)]
#[resil::rate_limiter(name = "keyed-stack", key = route)]
async fn stacked(route: &'static str) -> Result<(), AppError> {
    assert!(route.starts_with('/'));
    tokio::task::yield_now().await;
    Ok(())
}

#[test]
fn each_tenant_gets_its_own_quota() {
    configured();
    let a = Tenant {
        id: "tenant-a".into(),
    };
    let b = Tenant {
        id: "tenant-b".into(),
    };
    assert_eq!(handle(&a), Ok("ok"));
    assert_eq!(handle(&a), Ok("ok"));
    assert_eq!(handle(&a), Err(AppError::Refused("request_not_permitted")));
    assert_eq!(handle(&b), Ok("ok"));
    let family = resil::registry().keyed_rate_limiter("keyed-api");
    assert_eq!(family.counts().in_use, 2);
}

#[tokio::test]
async fn permits_weigh_each_call_on_its_key() {
    configured();
    assert_eq!(order(1, vec![0; 6]).await, Ok(6));
    assert_eq!(
        order(1, vec![0; 6]).await,
        Err(AppError::Refused("request_not_permitted")),
        "6 + 6 > 10 for user 1"
    );
    assert_eq!(order(1, vec![0; 4]).await, Ok(4));
    assert_eq!(order(2, vec![0; 10]).await, Ok(10));
}

#[test]
fn a_failing_host_opens_its_own_breaker_only() {
    configured();
    let _ = fetch("down.example".into(), false);
    let _ = fetch("down.example".into(), false);
    assert_eq!(
        fetch("down.example".into(), true),
        Err(AppError::Refused("call_not_permitted"))
    );
    assert_eq!(fetch("up.example".into(), true), Ok(()));
}

#[tokio::test]
async fn keyed_layers_compose_with_the_rest_of_the_stack() {
    configured();
    let (x, y, z) = tokio::join!(stacked("/a"), stacked("/a"), stacked("/b"));
    assert_eq!(
        y,
        Err(AppError::Refused("bulkhead_full")),
        "one call per route at a time"
    );
    assert_eq!((x, z), (Ok(()), Ok(())));
    assert_eq!(stacked("/a").await, Ok(()), "the slot came back");
}

static TRIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Every call fails, so every call asks its key's budget for a retry.
#[resil::retry(name = "keyed-budget", key = tenant)]
fn always_down(tenant: &str) -> Result<(), AppError> {
    assert!(!tenant.is_empty());
    TRIES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Err(AppError::Down)
}

#[resil::retry(name = "keyed-budget-async", key = tenant)]
async fn always_down_async(tenant: u32) -> Result<(), AppError> {
    assert!(tenant > 0);
    tokio::task::yield_now().await;
    Err(AppError::Down)
}

#[test]
fn a_tenant_that_spends_its_retry_budget_leaves_the_others_theirs() {
    configured();
    use std::sync::atomic::Ordering::SeqCst;
    let before = TRIES.load(SeqCst);
    // One retry in the floor per key (1/s over 1 s), nothing per call.
    assert_eq!(always_down("noisy"), Err(AppError::Down), "2 attempts");
    assert_eq!(TRIES.load(SeqCst) - before, 2);
    assert_eq!(
        always_down("noisy"),
        Err(AppError::Refused("retry_budget_exhausted")),
        "noisy's one retry is spent"
    );
    assert_eq!(
        TRIES.load(SeqCst) - before,
        3,
        "the first attempt still ran"
    );
    assert_eq!(always_down("quiet"), Err(AppError::Down), "quiet retries");
    assert_eq!(TRIES.load(SeqCst) - before, 5);
    let budgets = resil::registry().keyed_retry_budget("keyed-budget");
    assert_eq!(budgets.counts().in_use, 2);
    assert_eq!(budgets.get("noisy").available_retries(), 0);
    let top = budgets.top_keys(1);
    assert_eq!(top.by_refusals[0].key, "noisy");
}

static STACK_TRIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A keyed retry around a keyed bulkhead: each attempt takes the key's
/// slot, and the retries come from the key's budget.
#[resil::retry(name = "keyed-budget-stack", key = tenant)]
#[resil::bulkhead(name = "keyed-stack", key = tenant)]
async fn down_behind_a_bulkhead(tenant: &'static str) -> Result<(), AppError> {
    assert!(!tenant.is_empty());
    STACK_TRIES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Err(AppError::Down)
}

#[tokio::test]
async fn a_keyed_retry_around_other_keyed_layers_draws_on_its_keys_budget() {
    configured();
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!(down_behind_a_bulkhead("/x").await, Err(AppError::Down));
    assert_eq!(STACK_TRIES.load(SeqCst), 2, "one retry");
    assert_eq!(
        down_behind_a_bulkhead("/x").await,
        Err(AppError::Refused("retry_budget_exhausted"))
    );
    assert_eq!(STACK_TRIES.load(SeqCst), 3);
    assert_eq!(down_behind_a_bulkhead("/y").await, Err(AppError::Down));
    assert_eq!(STACK_TRIES.load(SeqCst), 5, "/y has its own budget");
    let bulkheads = resil::registry().keyed_bulkhead("keyed-stack");
    assert_eq!(bulkheads.get("/x").in_flight(), 0, "every slot came back");
}

#[tokio::test]
async fn an_async_fn_draws_on_its_keys_budget_too() {
    configured();
    assert_eq!(always_down_async(7).await, Err(AppError::Down));
    assert_eq!(
        always_down_async(7).await,
        Err(AppError::Refused("retry_budget_exhausted"))
    );
    assert_eq!(always_down_async(8).await, Err(AppError::Down));
}
