//! The actuator's shadow trial over real HTTP (issue 32, item 3): staged,
//! reported, promoted and discarded behind the management authorization.
#![cfg(feature = "yaml")]

use std::sync::Arc;

use resil::config::FileConfig;
use resil::Registry;
use resil_web::actuator::{Actuator, BearerToken};
use serde_json::{json, Value};

const TOKEN: &str = "shadow-token-3c1f";

const LIVE: &str = "resilience4j.circuitbreaker.instances.inventory:
  sliding-window-size: 4
  minimum-number-of-calls: 4
  failure-rate-threshold: 90
";

#[derive(Debug)]
struct Down;

#[tokio::test]
async fn a_trial_is_staged_reported_promoted_and_discarded_only_with_authorization() {
    let registry = Arc::new(Registry::new());
    registry
        .reload(FileConfig::from_yaml_str(LIVE).unwrap())
        .unwrap();
    let breaker = registry.circuit_breaker("inventory");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Actuator::builder(registry.clone())
        .management(BearerToken::new(TOKEN))
        .router();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();
    let auth = format!("Bearer {TOKEN}");
    let post = |path: &str, body: Value| {
        client
            .post(format!("{url}/actuator/shadow{path}"))
            .header("authorization", &auth)
            .json(&body)
            .send()
    };

    // Without the token: nothing shown, nothing staged.
    let r = client
        .get(format!("{url}/actuator/shadow"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .post(format!("{url}/actuator/shadow"))
        .header("authorization", "Bearer wrong")
        .json(&json!({ "version": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(registry.shadow_trial().is_none());

    // Bad input: a misspelt key is refused with its did-you-mean.
    let r = post(
        "",
        json!({ "config": "resilience4j.circuitbreaker.instances.inventory.failure-rate-treshold: 50\n" }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["problems"][0]
            .as_str()
            .unwrap()
            .contains("did you mean `failure-rate-threshold`"),
        "{body}"
    );
    let r = post("", json!({ "config": "x: 1", "format": "ini" }))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "invalid `format`: got `ini`, expected one of `yaml`, `toml`, `properties`"
    );
    let r = post("/promote", json!({})).await.unwrap();
    assert_eq!(r.status(), 404);

    // Staged: 201 with the trial, which then sees the calls.
    let staged = LIVE.replace("90", "50");
    let r = post("", json!({ "config": staged, "by": "alice" }))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["trial"]["version"], 2);
    assert_eq!(body["trial"]["by"], "alice");
    let r = post("", json!({ "version": 1 })).await.unwrap();
    assert_eq!(r.status(), 409, "one trial at a time");
    for fail in [true, true, false, false] {
        let _ = breaker.call(|| if fail { Err(Down) } else { Ok(()) });
    }
    let report: Value = client
        .get(format!("{url}/actuator/shadow"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shadow = &report["trial"]["instances"][0];
    assert_eq!(shadow["live_state"], "CLOSED");
    assert_eq!(shadow["shadow_state"], "OPEN");
    assert_eq!(shadow["transitions"][0]["from"], "CLOSED");
    assert_eq!(shadow["transitions"][0]["to"], "OPEN");
    assert_eq!(shadow["failure_rate"], 50.0);

    // Promoted: the staged settings are the version in force.
    let r = post("/promote", json!({ "by": "bob" })).await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["version"], 3);
    assert_eq!(body["replaced"], json!(["circuit_breaker inventory"]));
    assert_eq!(breaker.config().failure_rate_threshold(), 50.0);
    let versions: Value = client
        .get(format!("{url}/actuator/configversions"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(versions["versions"][1]["status"], "SHADOW");
    assert_eq!(versions["versions"][2]["promotedFrom"], 2);
    assert_eq!(versions["versions"][2]["source"], "management by bob");

    // A kept version staged again, then discarded.
    let r = post("", json!({ "version": 1, "by": "carol" }))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = post("/discard", json!({ "by": "carol" })).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["trial"]["version"], 4);
    assert!(registry.shadow_trial().is_none());
    let r = post("", json!({ "version": 99 })).await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(registry.active_config_version(), Some(3));
}
