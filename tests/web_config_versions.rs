//! The actuator's config versions over real HTTP: listed, diffed and
//! rolled back behind the management authorization (issue 32, item 2).
#![cfg(feature = "toml")]

use std::sync::Arc;

use resil::config::FileConfig;
use resil::Registry;
use resil_web::actuator::{Actuator, BearerToken};
use serde_json::{json, Value};

const TOKEN: &str = "versions-token-81d2";

fn file(window: u32) -> FileConfig {
    FileConfig::from_toml_str(&format!(
        "[resilience4j.circuitbreaker.instances.inventory]\nsliding-window-size = {window}\n"
    ))
    .unwrap()
}

#[tokio::test]
async fn versions_are_listed_diffed_and_rolled_back_only_with_authorization() {
    let registry = Arc::new(Registry::new());
    registry.reload(file(10)).unwrap();
    registry.reload(file(100)).unwrap();
    let bad = FileConfig::from_toml_str(
        "[resilience4j.circuitbreaker.instances.inventory]\nrecord-errors = [\"nobody\"]\n",
    )
    .unwrap();
    registry.reload(bad).unwrap_err();
    let breaker = registry.circuit_breaker("inventory");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Actuator::builder(registry.clone())
        .management(BearerToken::new(TOKEN))
        .router();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();
    let auth = format!("Bearer {TOKEN}");

    // Without the token: refused, nothing shown, nothing changed.
    let r = client
        .get(format!("{url}/actuator/configversions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .post(format!("{url}/actuator/configversions/1/rollback"))
        .header("authorization", "Bearer wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(breaker.config().sliding_window_size(), 100);

    let list: Value = client
        .get(format!("{url}/actuator/configversions"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["active"], 2);
    let versions = list["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3);
    assert_eq!(versions[1]["status"], "APPLIED");
    assert_eq!(versions[1]["active"], true);
    assert_eq!(versions[2]["status"], "REFUSED");
    assert!(
        versions[2]["problems"][0]
            .as_str()
            .unwrap()
            .contains("nobody"),
        "{list}"
    );
    assert!(versions[0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(versions[0]["hash"].as_str().unwrap().len(), 16);

    let diff: Value = client
        .get(format!("{url}/actuator/configversions/diff?from=1&to=2"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        diff["changes"],
        json!([{
            "key": "resilience4j.circuitbreaker.instances.inventory.sliding-window-size",
            "before": "10",
            "after": "100",
        }])
    );
    let r = client
        .get(format!("{url}/actuator/configversions/diff?from=1&to=x"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    let r = client
        .post(format!("{url}/actuator/configversions/3/rollback"))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409, "a refused version cannot be applied");
    let r = client
        .post(format!("{url}/actuator/configversions/1/rollback"))
        .header("authorization", &auth)
        .json(&json!({"by": "alice"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["version"], 4);
    assert_eq!(breaker.config().sliding_window_size(), 10);
    let last = registry.config_versions().pop().unwrap();
    assert_eq!(last.source.to_string(), "management by alice");
    assert_eq!(last.rollback_of, Some(1));
}
