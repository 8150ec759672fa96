//! `/actuator/stream/events`: a server-sent-events stream of live events,
//! as Resilience4j's reactive endpoints stream them.
//!
//! Two event types: `registry` for each event as it happens — an instance
//! added, replaced or reconfigured, an operator's transition, an override
//! expiring, and an instance's own notable event (a breaker's transition,
//! pushed the moment it happens, not on the next tick) — its data `{"kind",
//! "name", "type", "description", "fields"}` plus, for an instance's event,
//! `creationTime` and the Resilience4j event record (`event`: for a breaker,
//! `{"circuitBreakerName", "type": "STATE_TRANSITION", "creationTime",
//! "stateTransition": "CLOSED_TO_OPEN", …}`); and `instances`, the state,
//! health and metrics of every instance, sent at once on connection and
//! then every stream interval (one second by default) when something
//! changed. Health is the registry's one verdict, as `/actuator/health`
//! shows it. A client that falls behind misses registry events (counted in
//! the next `instances` as `missedEvents`), never blocks the registry.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use futures_util::stream::{self, Stream};
use resil_core::event::EventStream;
use resil_registry::{RegistryEvent, RegistryEventKind, Snapshot};
use serde_json::{json, Value};

use super::endpoints::{breaker_details, event_dto};
use super::{Ctx, Shared};

/// Every instance's state and metrics, for a dashboard.
pub(crate) fn instances(snapshot: &Snapshot) -> Value {
    let all: Vec<Value> = snapshot
        .instances
        .iter()
        .map(|i| {
            let metrics: serde_json::Map<String, Value> = i
                .metrics
                .iter()
                .map(|m| {
                    let key = match m.kind {
                        Some(kind) => format!("{}.{kind}", m.name),
                        None => m.name.to_owned(),
                    };
                    (key, json!(m.value))
                })
                .collect();
            let mut v = json!({
                "kind": i.kind,
                "name": i.name,
                "state": i.state,
                "health": i.health.as_str(),
                "metrics": metrics,
            });
            if i.kind == "circuit_breaker" {
                v["details"] = breaker_details(i);
            }
            v
        })
        .collect();
    Value::Array(all)
}

struct Feed {
    ctx: Arc<Ctx>,
    events: EventStream<RegistryEvent>,
    tick: tokio::time::Interval,
    last: Option<Value>,
}

fn registry_event(e: &RegistryEvent) -> Event {
    let fields: serde_json::Map<String, Value> = e
        .what
        .fields()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect();
    let mut data = json!({
        "kind": e.kind.as_str(),
        "name": &*e.name,
        "type": e.what.event_type(),
        "description": e.what.describe(),
        "fields": fields,
    });
    if let RegistryEventKind::Instance(recorded) = &e.what {
        data["creationTime"] = json!(recorded.creation_time);
        if let Some((_, _, name_key)) = super::endpoints::event_keys(e.kind) {
            data["event"] = event_dto(e.kind, name_key, &e.name, recorded);
        }
    }
    Event::default().event("registry").data(data.to_string())
}

pub(crate) async fn events(State(ctx): Shared) -> impl IntoResponse {
    let mut tick = tokio::time::interval(ctx.stream_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let feed = Feed {
        events: ctx.registry.subscribe(),
        ctx,
        tick,
        last: None,
    };
    Sse::new(feed_stream(feed)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

fn feed_stream(feed: Feed) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(feed, |mut feed| async move {
        loop {
            tokio::select! {
                event = feed.events.recv() => {
                    if let Some(e) = event {
                        return Some((Ok(registry_event(&e)), feed));
                    }
                    // The registry is gone: nothing more will happen.
                    return None;
                }
                _ = feed.tick.tick() => {
                    let now = instances(&feed.ctx.registry.snapshot());
                    if feed.last.as_ref() != Some(&now) {
                        let data = json!({
                            "instances": &now,
                            "missedEvents": feed.events.missed(),
                        });
                        feed.last = Some(now);
                        return Some((Ok(Event::default().event("instances").data(data.to_string())), feed));
                    }
                }
            }
        }
    })
}
