//! The `overload` mode: a service of capacity C offered 2 C by closed-loop
//! clients of mixed criticality, over real HTTP, with and without the
//! inbound guard and criticality classes.
//!
//! The service completes at most [`CAPACITY`] requests per [`TICK`] of the
//! lab's clock, first come first served (a CPU). [`CRITICAL`] clients
//! offer 60 % of that and [`SHEDDABLE`] clients the rest of 2 C; each sends
//! one request, waits for its answer (or gives up after [`DEADLINE`]: an
//! answer later than that is useless to it, and it sends its next request),
//! and sends again at the next tick. The class is the route:
//! `/work/CRITICAL`, `/work/SHEDDABLE`.
//!
//! * `guarded`: the server admits through an [`InboundGuard`] (BBR under CPU
//!   pressure) and the handler's work is an annotated fn with an adaptive
//!   bulkhead (`overload-service` in lab.yaml, limit C) and
//!   `criticality = class`: `SHEDDABLE` is refused once half the limit is
//!   busy, so `CRITICAL` keeps its share.
//! * `no-classes`: the same guard and bulkhead, every request `CRITICAL`.
//! * `unguarded`: every request queues; queued work outlives its clients'
//!   deadlines, so the service spends itself on answers nobody waits for.
//!
//! Deterministic: the driver sends in a fixed order and waits, by count, for
//! each request's admission decision and each answer before it moves the
//! lab's clock; latencies are lab time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use parking_lot::Mutex;
use resil::clock::Clock;
use resil::inbound::{InboundGuard, InboundGuardConfig};
use resil::{Criticality, Rejection};
use tokio::sync::{oneshot, watch};

use crate::http::{self, reply, Server};
use crate::lab::Lab;

/// Requests the service completes per tick.
pub const CAPACITY: usize = 20;
/// One step of the lab's clock.
pub const TICK: Duration = Duration::from_millis(100);
/// Clients sending `CRITICAL` requests (60 % of capacity).
pub const CRITICAL: usize = 12;
/// Clients sending `SHEDDABLE` requests (the rest of 2 × capacity).
pub const SHEDDABLE: usize = 2 * CAPACITY - CRITICAL;
/// A client gives up on an answer this late.
pub const DEADLINE: Duration = Duration::from_millis(150);
/// Ticks each run lasts.
pub const TICKS: u32 = 30;

/// The work fn's error: only refusals.
#[derive(Debug)]
pub struct Shed;

impl From<Rejection> for Shed {
    fn from(_: Rejection) -> Self {
        Shed
    }
}

/// The service's one resource: a first-come-first-served queue the driver
/// serves `CAPACITY` entries of per tick.
#[derive(Default)]
pub struct Cpu {
    queue: Mutex<VecDeque<oneshot::Sender<()>>>,
}

impl Cpu {
    fn enqueue(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.queue.lock().push_back(tx);
        rx
    }

    /// Completes up to `n` queued requests; how many.
    fn serve(&self, n: usize) -> usize {
        let mut q = self.queue.lock();
        let mut served = 0;
        while served < n {
            match q.pop_front() {
                Some(tx) => {
                    // A request whose handler is gone costs its turn too.
                    let _ = tx.send(());
                    served += 1;
                }
                None => break,
            }
        }
        served
    }
}

/// What the server shares with the driver.
pub struct Service {
    cpu: Cpu,
    guard: Option<InboundGuard>,
    classes: bool,
    /// Requests whose admission was decided (queued or refused).
    decided: watch::Sender<u32>,
}

impl Service {
    fn decided(&self) {
        self.decided.send_modify(|n| *n += 1);
    }
}

/// The handler's work: queue on the CPU, in the adaptive bulkhead's slot,
/// as the request's class.
#[resil::bulkhead(name = "overload-service", kind = "adaptive", criticality = class)]
async fn work(class: Criticality, service: Arc<Service>) -> Result<(), Shed> {
    let _ = class;
    let done = service.cpu.enqueue();
    service.decided();
    let _ = done.await;
    Ok(())
}

async fn handle(service: Arc<Service>, path: String) -> http::Response {
    let named = path
        .rsplit('/')
        .next()
        .and_then(|c| c.parse::<Criticality>().ok())
        .unwrap_or_default();
    let Some(guard) = service.guard.clone() else {
        let done = service.cpu.enqueue();
        service.decided();
        let _ = done.await;
        return reply(StatusCode::OK, "done");
    };
    let Ok(permit) = guard.try_enter() else {
        service.decided();
        return reply(StatusCode::SERVICE_UNAVAILABLE, "overloaded");
    };
    let class = if service.classes {
        named
    } else {
        Criticality::Critical
    };
    match work(class, Arc::clone(&service)).await {
        Ok(()) => {
            drop(permit);
            reply(StatusCode::OK, "done")
        }
        Err(Shed) => {
            // Refused further in: not a completion for the guard's estimate.
            permit.refused();
            service.decided();
            reply(StatusCode::SERVICE_UNAVAILABLE, "shed")
        }
    }
}

/// One class's figures over a run.
#[derive(Debug, Default, Clone)]
struct Figures {
    offered: u32,
    goodput: u32,
    refused: u32,
    late: u32,
    /// Latencies of admitted requests that were answered.
    latencies: Vec<Duration>,
}

impl Figures {
    fn p99(&self) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        match l.len() {
            0 => Duration::ZERO,
            n => l[(n * 99).div_ceil(100) - 1],
        }
    }

    fn percent(&self) -> f64 {
        if self.offered == 0 {
            0.0
        } else {
            f64::from(self.goodput) * 100.0 / f64::from(self.offered)
        }
    }

    fn line(&self, run: &str, class: Criticality) -> String {
        format!(
            "{run} {class} offered={} goodput={} ({:.1}%) refused={} late={} p99={}ms",
            self.offered,
            self.goodput,
            self.percent(),
            self.refused,
            self.late,
            self.p99().as_millis()
        )
    }
}

/// A client's request on its way: when it was sent, and whether the client
/// still waits for it.
struct Outstanding {
    sent: u64,
    id: u32,
}

/// What comes back to the driver: client, request id, status.
type Answered = (usize, u32, Option<StatusCode>);

/// Runs `clients` (their classes, in send order) for `TICKS` ticks; the
/// figures of `CRITICAL` and `SHEDDABLE` requests and the guard's refusals.
async fn run(
    lab: &Lab,
    clients: &[Criticality],
    guard: Option<InboundGuard>,
    classes: bool,
) -> ([Figures; 2], u64) {
    let (decided, mut decided_rx) = watch::channel(0u32);
    let service = Arc::new(Service {
        cpu: Cpu::default(),
        guard: guard.clone(),
        classes,
        decided,
    });
    let s = Arc::clone(&service);
    let server = Server::start(move |path| handle(Arc::clone(&s), path))
        .await
        .expect("the overload service starts");
    let addr = server.addr();
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<Answered>();
    let mut outstanding: Vec<Option<Outstanding>> = clients.iter().map(|_| None).collect();
    // Requests of each client still running (abandoned ones included), by id.
    let mut sent_at: Vec<std::collections::HashMap<u32, u64>> =
        clients.iter().map(|_| Default::default()).collect();
    let mut figures: [Figures; 2] = Default::default();
    let fig = |class: Criticality| usize::from(class != Criticality::Critical);
    let in_flight = Arc::new(AtomicU32::new(0));
    let mut sent = 0u32;
    let mut next_id = 0u32;
    let clock = lab.clock.clone();

    // Receives every answer due now: `expected` in-flight requests left.
    async fn settle(
        answers: &mut tokio::sync::mpsc::UnboundedReceiver<Answered>,
        in_flight: &AtomicU32,
        expected: u32,
        mut on: impl FnMut(Answered),
    ) {
        while in_flight.load(Ordering::SeqCst) > expected {
            if let Some(a) = answers.recv().await {
                in_flight.fetch_sub(1, Ordering::SeqCst);
                on(a);
            }
        }
        while let Ok(a) = answers.try_recv() {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            on(a);
        }
    }

    for _ in 0..TICKS {
        // 1. Every idle client sends, in order; each admission is decided
        //    before the next request goes out.
        for (c, class) in clients.iter().enumerate() {
            if outstanding[c].is_some() {
                continue;
            }
            let id = next_id;
            next_id += 1;
            let now = clock.now_nanos();
            outstanding[c] = Some(Outstanding { sent: now, id });
            sent_at[c].insert(id, now);
            figures[fig(*class)].offered += 1;
            in_flight.fetch_add(1, Ordering::SeqCst);
            let path = format!("/work/{class}");
            let tx = answers_tx.clone();
            tokio::spawn(async move {
                let status = http::get(addr, &path).await.ok().map(|a| a.status);
                let _ = tx.send((c, id, status));
            });
            sent += 1;
            let _ = decided_rx.wait_for(|n| *n >= sent).await;
        }
        // Refusals are answered at once.
        let queued = service.cpu.queue.lock().len() as u32;
        let mut record = |(c, id, status): Answered| {
            let class = clients[c];
            let f = &mut figures[fig(class)];
            let sent = sent_at[c].remove(&id).unwrap_or_default();
            let rt = Duration::from_nanos(clock.now_nanos().saturating_sub(sent));
            let current = outstanding[c].as_ref().is_some_and(|o| o.id == id);
            match status {
                Some(StatusCode::OK) => {
                    f.latencies.push(rt);
                    if current && rt <= DEADLINE {
                        f.goodput += 1;
                    } else if current {
                        f.late += 1;
                    }
                }
                _ => f.refused += 1,
            }
            if current {
                outstanding[c] = None;
            }
        };
        settle(&mut answers, &in_flight, queued, &mut record).await;
        // 2. A tick of work: CAPACITY requests complete.
        lab.wait(TICK);
        let served = service.cpu.serve(CAPACITY);
        if let Some(g) = &guard {
            g.record_system(Some(served as f64 * 100.0 / CAPACITY as f64), None);
        }
        let queued = service.cpu.queue.lock().len() as u32;
        settle(&mut answers, &in_flight, queued, &mut record).await;
        // 3. Clients give up on requests older than their deadline.
        let now = clock.now_nanos();
        for (c, o) in outstanding.iter_mut().enumerate() {
            if o.as_ref()
                .is_some_and(|o| now - o.sent > DEADLINE.as_nanos() as u64)
            {
                *o = None;
                figures[fig(clients[c])].late += 1;
            }
        }
    }
    // Drain what is left (not counted), so no slot stays held.
    while service.cpu.serve(usize::MAX) > 0 || in_flight.load(Ordering::SeqCst) > 0 {
        settle(&mut answers, &in_flight, 0, |_| {}).await;
    }
    drop(server);
    let refused = guard.map_or(0, |g| g.metrics().refused.iter().sum());
    (figures, refused)
}

/// The clients, interleaved: a `CRITICAL` one, a `SHEDDABLE` one, … then the
/// rest of the `SHEDDABLE` ones.
fn mixed() -> Vec<Criticality> {
    let mut out = Vec::new();
    for i in 0..SHEDDABLE.max(CRITICAL) {
        if i < CRITICAL {
            out.push(Criticality::Critical);
        }
        if i < SHEDDABLE {
            out.push(Criticality::Sheddable);
        }
    }
    out
}

fn guard(lab: &Lab) -> InboundGuard {
    InboundGuard::with_clock(InboundGuardConfig::default(), lab.clock.clone())
}

/// The mode: the unloaded baseline, then 2 C with the guard and classes,
/// with the guard alone, and with neither.
pub async fn overload(lab: &Lab) -> Vec<String> {
    let mut lines = vec![format!(
        "capacity={CAPACITY}/{}ms clients critical={CRITICAL} sheddable={SHEDDABLE} deadline={}ms ticks={TICKS}",
        TICK.as_millis(),
        DEADLINE.as_millis()
    )];
    let (unloaded, _) = run(
        lab,
        &[Criticality::Critical; CRITICAL],
        Some(guard(lab)),
        true,
    )
    .await;
    lines.push(unloaded[0].line("unloaded", Criticality::Critical));
    let clients = mixed();
    for (name, g, classes) in [
        ("guarded", Some(guard(lab)), true),
        ("no-classes", Some(guard(lab)), false),
        ("unguarded", None, true),
    ] {
        let (f, refused) = run(lab, &clients, g, classes).await;
        lines.push(f[0].line(name, Criticality::Critical));
        lines.push(f[1].line(name, Criticality::Sheddable));
        if name != "unguarded" {
            lines.push(format!("{name} guard refused={refused}"));
        }
    }
    lines
}
