//! The actuator's dashboard in a real browser: headless Chromium driven
//! through its WebDriver (chromedriver, started once by this binary on a free
//! port) with fantoccini. The page is loaded from a test service; each
//! instance's card must show its state and numbers, a breaker forced open
//! through the management API must show FORCED_OPEN within 2 s without a
//! reload, and the page's own buttons must go through the same
//! authorization (a wrong token changes nothing).
//!
//! This is the one place a real wait is allowed: the DOM is polled until a
//! bounded deadline, never slept on to assert timing. Chromium and
//! chromedriver are Debian's `chromium` and `chromium-driver`, which
//! `scripts/test` installs; a missing browser fails this test, it never
//! passes silently.
//!
//! `RESIL_DASHBOARD_SCREENSHOT=docs/dashboard.png cargo test --test
//! web_dashboard` also saves a screenshot of the page (the README's).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use resil::Registry;
use resil_web::actuator::{Actuator, BearerToken};
use serde_json::json;

const TOKEN: &str = "dashboard-test-token-71ab";

/// chromedriver; dropping it (also on a failed assertion's unwinding) kills
/// it. The browser session is closed before that, pass or fail.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let binary = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let child = Command::new(&binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `{binary}` ({e}): install Debian's chromium and \
                     chromium-driver (scripts/test does)"
                )
            });
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Waits (bounded) until the driver answers, then opens a headless
    /// Chromium session.
    async fn session(&self) -> Client {
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        loop {
            let ready = http.get(format!("{}/status", self.url)).send().await;
            if let Ok(r) = ready {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer on {} within 30 s",
                self.url
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut options = json!({
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1200,720"],
        });
        if let Ok(chromium) = std::env::var("CHROMIUM") {
            options["binary"] = json!(chromium);
        } else if std::path::Path::new("/usr/bin/chromium").exists() {
            options["binary"] = json!("/usr/bin/chromium");
        }
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), options);
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("cannot start headless Chromium through chromedriver: {e}"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of `field` in the card of `instance` (`kind/name`), polled
/// until it satisfies `wanted` or `within` passes.
async fn until(
    browser: &Client,
    instance: &str,
    field: &str,
    within: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let css = format!(r#"[data-instance="{instance}"] [data-field="{field}"]"#);
    let deadline = Instant::now() + within;
    let mut last = String::from("<no such element>");
    loop {
        if let Ok(element) = browser.find(Locator::Css(&css)).await {
            if let Ok(text) = element.text().await {
                if wanted(&text) {
                    return text;
                }
                last = text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "`{css}` still shows `{last}` after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn shows(browser: &Client, instance: &str, field: &str, text: &str) {
    until(browser, instance, field, Duration::from_secs(10), |t| {
        t == text
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_every_instance_and_follows_a_forced_open_breaker_live() {
    let driver = Driver::start();
    let browser = driver.session().await;
    // The scenario on its own task: whether it passes or panics, the
    // browser session is closed and the driver stopped before the verdict.
    let outcome = tokio::spawn(scenario(browser.clone())).await;
    let _ = browser.close().await;
    drop(driver);
    if let Err(failed) = outcome {
        std::panic::resume_unwind(failed.into_panic());
    }
}

async fn scenario(browser: Client) {
    let registry = Arc::new(Registry::new());
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.sliding_window_size(10).minimum_number_of_calls(2)
        })
        .unwrap();
    let inventory = registry.circuit_breaker("inventory");
    for _ in 0..3 {
        let _ = inventory.call(|| Ok::<_, u32>(()));
    }
    let _ = inventory.call(|| Err::<(), _>(1u32));
    registry
        .circuit_breaker("payments")
        .transition_to_open()
        .unwrap();
    registry
        .configure_bulkhead("inventory", |b| b.max_concurrent_calls(10))
        .unwrap();
    let bulkhead = registry.bulkhead("inventory");
    let held: Vec<_> = (0..3)
        .map(|_| bulkhead.try_acquire_permission().unwrap())
        .collect();
    registry
        .configure_rate_limiter("inventory", |b| {
            b.limit_for_period(5)
                .limit_refresh_period(Duration::from_secs(3600))
        })
        .unwrap();
    let limiter = registry.rate_limiter("inventory");
    assert!(limiter.try_acquire_permission(2));
    registry.retry("inventory");
    registry.time_limiter("inventory");

    let app = Actuator::builder(registry.clone())
        .management(BearerToken::new(TOKEN))
        .stream_interval(Duration::from_millis(100))
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    browser
        .goto(&format!("{base}/actuator/dashboard"))
        .await
        .unwrap();

    // Every instance, with its state and numbers.
    shows(&browser, "circuit_breaker/inventory", "state", "CLOSED").await;
    shows(
        &browser,
        "circuit_breaker/inventory",
        "failure-rate",
        "25.0 %",
    )
    .await;
    shows(&browser, "circuit_breaker/inventory", "buffered", "4").await;
    shows(&browser, "circuit_breaker/inventory", "not-permitted", "0").await;
    shows(&browser, "circuit_breaker/payments", "state", "OPEN").await;
    shows(&browser, "bulkhead/inventory", "headroom", "7 of 10 free").await;
    shows(&browser, "rate_limiter/inventory", "permits", "3").await;
    shows(&browser, "retry/inventory", "name", "inventory").await;

    // Forced open through the management API: on the page within 2 s,
    // without a reload.
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/actuator/circuitbreakers/inventory"))
        .bearer_auth(TOKEN)
        .json(&json!({ "updateState": "FORCE_OPEN", "reason": "drill" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    until(
        &browser,
        "circuit_breaker/inventory",
        "state",
        Duration::from_secs(2),
        |t| t == "FORCED_OPEN",
    )
    .await;
    shows(
        &browser,
        "circuit_breaker/inventory",
        "override",
        "FORCED_OPEN (drill)",
    )
    .await;

    // The page's own buttons go through the same authorization: a wrong
    // token is refused and changes nothing, the right one closes the breaker.
    let close = r#"[data-instance="circuit_breaker/payments"] button[data-action="CLOSE"]"#;
    let token = browser.find(Locator::Id("token")).await.unwrap();
    token.send_keys("wrong-token").await.unwrap();
    browser
        .find(Locator::Css(close))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let message = browser
            .find(Locator::Id("message"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if message.starts_with("403") {
            break;
        }
        assert!(Instant::now() < deadline, "no refusal shown: `{message}`");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        registry.circuit_breaker("payments").state(),
        resil::circuit_breaker::State::Open,
        "a refused action changes nothing"
    );
    token.clear().await.unwrap();
    token.send_keys(TOKEN).await.unwrap();
    browser
        .find(Locator::Css(close))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    shows(&browser, "circuit_breaker/payments", "state", "CLOSED").await;
    assert_eq!(
        registry.circuit_breaker("payments").state(),
        resil::circuit_breaker::State::Closed
    );

    // Calls made now show on the next tick of the stream, no reload.
    let payments = registry.circuit_breaker("payments");
    for i in 0..5 {
        let _ = payments.call(|| if i < 4 { Ok(()) } else { Err(1u32) });
    }
    shows(&browser, "circuit_breaker/payments", "buffered", "5").await;
    shows(&browser, "circuit_breaker/payments", "failed", "1").await;

    if let Ok(path) = std::env::var("RESIL_DASHBOARD_SCREENSHOT") {
        // The README's picture: the breaker forced open for a drill.
        token.clear().await.unwrap();
        let png = browser.screenshot().await.unwrap();
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
    drop(held);
}
