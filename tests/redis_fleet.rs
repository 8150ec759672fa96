//! Management across replicas through a real Redis (issue 32, item 5):
//! four registries stand for four replicas, each with its own Redis
//! connections and its own manual clock, in one test process (separate
//! processes would need a control channel into each; the registries share
//! nothing but Redis, which is what a fleet shares). Waits are on each
//! replica's fleet status with generous bounds, never on wall-clock time.

#[path = "support/redis_server.rs"]
mod redis_server;

use std::time::Duration;

use redis_server::RedisServer;
use resil::circuit_breaker::State;
use resil::clock::ManualClock;
use resil::registry_crate::fleet::{Fleet, FleetOptions};
use resil::registry_crate::{Kind, Switch, SwitchAction};
use resil::Registry;

const PATIENCE: Duration = Duration::from_secs(60);

struct Replica {
    registry: Registry,
    clock: ManualClock,
    fleet: Fleet,
}

impl Replica {
    fn join(server: &RedisServer, namespace: &str, name: &str) -> Replica {
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock.clone()).build();
        registry.circuit_breaker("inventory");
        let fleet = registry
            .join_fleet(FleetOptions::new(&server.url(), namespace).replica(name))
            .unwrap();
        assert!(
            fleet.wait_for(|s| s.connected, PATIENCE),
            "{:?}",
            fleet.status()
        );
        Replica {
            registry,
            clock,
            fleet,
        }
    }

    fn state(&self) -> State {
        self.registry.circuit_breaker("inventory").state()
    }

    fn wait_applied(&self, n: u64) {
        assert!(
            self.fleet.wait_for(|s| s.applied_from_fleet >= n, PATIENCE),
            "{:?}",
            self.fleet.status()
        );
    }
}

fn force_open(ttl: Option<u64>, reason: &str) -> Switch {
    Switch {
        name: "inventory".into(),
        action: SwitchAction::ForceOpen,
        reason: reason.into(),
        ttl: ttl.map(Duration::from_secs),
    }
}

#[test]
fn a_force_open_with_a_ttl_reaches_every_replica_expires_on_each_and_a_late_replica_applies_it() {
    let server = RedisServer::start();
    let ns = "fleet-ttl";
    let replicas: Vec<Replica> = (1..=3)
        .map(|i| Replica::join(&server, ns, &format!("r{i}")))
        .collect();

    replicas[0]
        .fleet
        .switch(&force_open(Some(30), "inventory db failing over"), "alice")
        .unwrap();
    assert_eq!(replicas[0].state(), State::ForcedOpen, "applied here first");
    for r in &replicas[1..] {
        r.wait_applied(1);
        assert_eq!(r.state(), State::ForcedOpen);
        let o = r.registry.manual_override("inventory").unwrap();
        assert_eq!(&*o.reason, "inventory db failing over");
        assert!(o.until.unwrap() <= Duration::from_secs(30));
    }

    // A replica started during the TTL applies what is in force.
    let late = Replica::join(&server, ns, "r4");
    late.wait_applied(1);
    assert_eq!(late.state(), State::ForcedOpen);
    let left = late
        .registry
        .manual_override("inventory")
        .unwrap()
        .until
        .unwrap();
    assert!(
        left > Duration::ZERO && left <= Duration::from_secs(30),
        "{left:?}"
    );

    // The TTL ends it on every replica, each on its own clock.
    for r in replicas.iter().chain([&late]) {
        r.clock.advance(Duration::from_secs(30));
        r.registry.run_due_overrides();
        assert_eq!(r.state(), State::Closed);
    }
    // Each replica applied the change exactly once.
    for r in &replicas[1..] {
        assert_eq!(r.fleet.status().applied_from_fleet, 1);
    }
    assert_eq!(replicas[0].fleet.status().applied_from_fleet, 0, "its own");
}

#[test]
fn a_release_reaches_every_replica_and_chaos_switches_travel_too() {
    let server = RedisServer::start();
    let replicas: Vec<Replica> = (1..=3)
        .map(|i| Replica::join(&server, "fleet-release", &format!("r{i}")))
        .collect();
    for r in &replicas {
        r.registry.chaos("drill");
    }
    replicas[1]
        .fleet
        .switch(
            &Switch {
                name: "drill".into(),
                action: SwitchAction::ChaosOn,
                reason: "game day".into(),
                ttl: None,
            },
            "bob",
        )
        .unwrap();
    replicas[1]
        .fleet
        .switch(&force_open(None, "maintenance"), "bob")
        .unwrap();
    for r in [&replicas[0], &replicas[2]] {
        r.wait_applied(2);
        assert!(r.registry.chaos_status("drill").unwrap().enabled());
        assert_eq!(r.state(), State::ForcedOpen);
    }
    replicas[2]
        .fleet
        .release(Kind::CircuitBreaker, "inventory", "carol")
        .unwrap();
    replicas[0].wait_applied(3);
    replicas[1].wait_applied(1);
    for r in &replicas {
        assert_eq!(r.state(), State::Closed);
    }
    assert!(replicas[0]
        .registry
        .chaos_status("drill")
        .unwrap()
        .enabled());
}

#[test]
fn with_redis_down_local_management_works_the_gap_is_reported_and_shared_once_back() {
    let mut server = RedisServer::start();
    let a = Replica::join(&server, "fleet-outage", "a");
    let b = Replica::join(&server, "fleet-outage", "b");

    server.kill();
    assert!(
        a.fleet.wait_for(|s| !s.connected, PATIENCE),
        "{:?}",
        a.fleet.status()
    );
    a.fleet
        .switch(&force_open(Some(600), "db down"), "alice")
        .unwrap();
    assert_eq!(
        a.state(),
        State::ForcedOpen,
        "local management keeps working"
    );
    let status = a.fleet.status();
    assert!(!status.connected);
    assert_eq!(status.unsent, 1, "the gap: one change not shared yet");
    assert!(status.error.is_some());
    // The other replica's own management works too.
    b.registry
        .disable("inventory", None, "local decision")
        .unwrap();
    assert_eq!(b.state(), State::Disabled);

    server.restart();
    assert!(
        a.fleet.wait_for(|s| s.connected && s.unsent == 0, PATIENCE),
        "{:?}",
        a.fleet.status()
    );
    b.wait_applied(1);
    assert_eq!(b.state(), State::ForcedOpen, "shared once Redis is back");
}
