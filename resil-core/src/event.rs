//! Event delivery that never slows the caller.
//!
//! Every primitive publishes what happens to it (a success, a rejection, a state
//! transition …) through an [`EventPublisher`]. Subscribers receive events on a
//! bounded broadcast channel: publishing never waits for a consumer, a consumer
//! that falls behind loses its oldest events (and learns how many through
//! [`EventStream::missed`]), and with no subscriber the cost of publishing is one
//! atomic load — the event is not even constructed.
//!
//! The channel itself (a ring of `capacity` events per publisher) is allocated
//! by the first [`subscribe`](EventPublisher::subscribe): a primitive nobody
//! listens to carries no channel, only a few words, which matters when a
//! registry holds thousands of instances.
//!
//! Every primitive's event is one generic type, [`Event<K>`]: the instance's
//! name and what happened, a kind `K` implementing [`EventKind`]
//! (`CircuitBreakerEvent` is `Event<CircuitBreakerEventKind>`, and so on).

use std::fmt;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::broadcast;

/// What a primitive's events say happened: the kinds of [`Event`].
///
/// Each primitive has one kind enum (`CircuitBreakerEventKind`,
/// `RetryEventKind`, …); its variant docs give Resilience4j's event-type
/// names, which [`label`](Self::label) returns.
///
/// # What is notable
///
/// [`is_notable`](Self::is_notable) is `true` for what an operator must see:
/// a change of the instance itself — a state transition, a reset, a manual
/// override, fault injection switched on or off (or expiring), a limit
/// moving, a failure or slow-call rate crossing its threshold. It is `false`
/// for every per-call event (a permit granted or refused, a call finished, a
/// retry, a timeout, an injected fault, a Redis verdict): those come at the
/// call rate and belong in metrics, not in a log line each.
pub trait EventKind: Copy + fmt::Debug + Send + Sync + 'static {
    /// What an event of this kind carries besides its name and kind (`()`
    /// for most; a rate limiter's permit count, a time limiter's elapsed
    /// time, …).
    type Detail: Clone + PartialEq + Send + Sync + 'static;

    /// The event type's name in `Debug` output (`"CircuitBreakerEvent"`).
    const EVENT: &'static str;

    /// What published it, as the `Display` line starts
    /// (`"circuit breaker"`, `"rate limiter"`).
    const SOURCE: &'static str;

    /// Resilience4j's event-type name for the kind (`"SUCCESS"`, `"ERROR"`,
    /// `"NOT_PERMITTED"`, `"STATE_TRANSITION"`, …).
    fn label(&self) -> &'static str;

    /// Whether an operator must see it (see the [trait docs](EventKind)).
    fn is_notable(&self) -> bool;

    /// Writes what the `Display` line says after `{SOURCE} '{name}'`.
    fn fmt_line(&self, detail: &Self::Detail, f: &mut fmt::Formatter<'_>) -> fmt::Result;

    /// Adds the detail's fields to the event's `Debug` output, after `name`
    /// and `kind` (nothing by default).
    fn fmt_detail(detail: &Self::Detail, out: &mut fmt::DebugStruct<'_, '_>) {
        let _ = (detail, out);
    }

    /// Hands each structured field of the event to `visit`: what a log line
    /// or an actuator's event record shows besides the type (a breaker's
    /// `from` and `to` states, a call's `elapsed` time, a retry's
    /// `attempts`). Names are snake_case and stable. Nothing by default.
    fn visit_fields(&self, detail: &Self::Detail, visit: &mut dyn FnMut(&'static str, Field<'_>)) {
        let _ = (detail, visit);
    }
}

/// The value of one structured field of an event ([`EventKind::visit_fields`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Field<'a> {
    /// A word or a text (a state's name, a reason).
    Str(&'a str),
    /// A count.
    U64(u64),
    /// A rate, in percent.
    Percent(f64),
    /// A duration.
    Duration(Duration),
}

/// One thing that happened to a named primitive instance, as delivered to its
/// subscribers: the instance's name and the [kind](EventKind) of event, plus
/// the kind's detail.
///
/// Each primitive names its instantiation (`CircuitBreakerEvent`,
/// `RateLimiterEvent`, …); accessors of a primitive's detail (a rate
/// limiter's `permits`, a hedge's `attempt`) are on that instantiation.
pub struct Event<K: EventKind> {
    name: Arc<str>,
    kind: K,
    detail: K::Detail,
}

impl<K: EventKind> Event<K> {
    /// An event of `kind` at the instance named `name`, with `detail`.
    #[inline]
    pub(crate) fn with_detail(name: &Arc<str>, kind: K, detail: K::Detail) -> Self {
        Event {
            name: Arc::clone(name),
            kind,
            detail,
        }
    }

    /// The name of the instance that published the event.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    #[inline]
    pub fn kind(&self) -> K {
        self.kind
    }

    /// Resilience4j's event-type name ([`EventKind::label`]).
    #[inline]
    pub fn label(&self) -> &'static str {
        self.kind.label()
    }

    /// Whether an operator must see it ([`EventKind::is_notable`]).
    #[inline]
    pub fn is_notable(&self) -> bool {
        self.kind.is_notable()
    }

    #[inline]
    pub(crate) fn detail(&self) -> &K::Detail {
        &self.detail
    }

    /// Hands each structured field of the event to `visit`
    /// ([`EventKind::visit_fields`]).
    pub fn visit_fields(&self, visit: &mut dyn FnMut(&'static str, Field<'_>)) {
        self.kind.visit_fields(&self.detail, visit);
    }
}

impl<K: EventKind<Detail = ()>> Event<K> {
    /// An event of `kind` at the instance named `name` (for a kind without
    /// detail; a test can build the events it expects).
    pub fn new(name: impl Into<Arc<str>>, kind: K) -> Self {
        Event {
            name: name.into(),
            kind,
            detail: (),
        }
    }

    /// [`new`](Self::new) for a publisher holding the name.
    #[inline]
    pub(crate) fn of(name: &Arc<str>, kind: K) -> Self {
        Event::with_detail(name, kind, ())
    }
}

impl<K: EventKind> Clone for Event<K> {
    fn clone(&self) -> Self {
        Event {
            name: Arc::clone(&self.name),
            kind: self.kind,
            detail: self.detail.clone(),
        }
    }
}

impl<K: EventKind + PartialEq> PartialEq for Event<K> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.kind == other.kind && self.detail == other.detail
    }
}

impl<K: EventKind + Eq> Eq for Event<K> where K::Detail: Eq {}

/// `{EVENT} { name: "…", kind: …, <detail fields> }`.
impl<K: EventKind> fmt::Debug for Event<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct(K::EVENT);
        out.field("name", &&*self.name).field("kind", &self.kind);
        K::fmt_detail(&self.detail, &mut out);
        out.finish()
    }
}

/// `{SOURCE} '{name}'` and what the kind says (`bulkhead 'reports':
/// call_rejected`).
impl<K: EventKind> fmt::Display for Event<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} '{}'", K::SOURCE, self.name)?;
        self.kind.fmt_line(&self.detail, f)
    }
}

/// How many events a subscriber may fall behind before it starts losing the
/// oldest ones.
pub const DEFAULT_EVENT_CAPACITY: usize = 256;

/// The publishing side, owned by a primitive.
///
/// Holds no channel until the first [`subscribe`](Self::subscribe): creating
/// one allocates nothing.
///
/// # Notable events and the tap
///
/// A primitive publishes what an operator must see (a state transition, a
/// reset, fault injection switched on or off: see [`EventKind::is_notable`])
/// through [`publish_notable_with`](Self::publish_notable_with), and every
/// per-call event through [`publish_with`](Self::publish_with). A
/// [tap](Self::tap_notable) sees every notable event synchronously, on the
/// thread and inside the `tracing` span where it happened, even with nobody
/// subscribed; per-call publishing never looks at the tap, so a tap costs the
/// call path nothing (a registry taps every instance to keep a history of
/// transitions that per-call events cannot evict).
pub struct EventPublisher<T> {
    channel: OnceLock<Channel<T>>,
    /// Null, or the tap, set once from `Box::into_raw` and freed by `Drop`.
    /// One thin pointer: every primitive holds a publisher, and a
    /// `OnceLock<NotableTap>` would take twice the space (a rate limiter
    /// would grow by a cache line).
    tap: AtomicPtr<NotableTap<T>>,
    /// At most `u32::MAX`; a `u32` keeps the publisher small.
    capacity: u32,
    _owns_tap: PhantomData<NotableTap<T>>,
}

/// A synchronous observer of a publisher's notable events
/// ([`EventPublisher::tap_notable`]).
pub type NotableTap<T> = Box<dyn Fn(&T) + Send + Sync>;

/// The broadcast channel and its subscriber count, created on first subscribe.
struct Channel<T> {
    tx: broadcast::Sender<T>,
    subscribers: Arc<AtomicUsize>,
}

impl<T: Clone + Send + 'static> EventPublisher<T> {
    /// A publisher whose subscribers may each lag `capacity` events behind.
    /// Allocates nothing until someone subscribes.
    pub const fn new(capacity: usize) -> Self {
        EventPublisher {
            channel: OnceLock::new(),
            tap: AtomicPtr::new(ptr::null_mut()),
            _owns_tap: PhantomData,
            capacity: if capacity == 0 {
                1
            } else if capacity > u32::MAX as usize {
                u32::MAX
            } else {
                capacity as u32
            },
        }
    }

    /// Whether anyone listens. Cheap: one atomic load while nobody ever
    /// subscribed, two relaxed loads after.
    #[inline]
    pub fn is_active(&self) -> bool {
        match self.channel.get() {
            Some(c) => c.subscribers.load(Ordering::Relaxed) != 0,
            None => false,
        }
    }

    /// Publishes the event `make` builds, building it only if someone listens.
    /// Never blocks and never fails: a lagging subscriber loses its oldest event.
    #[inline(always)]
    pub fn publish_with(&self, make: impl FnOnce() -> T) {
        if let Some(c) = self.channel.get() {
            if c.subscribers.load(Ordering::Relaxed) != 0 {
                send(c, make);
            }
        }
    }

    /// Publishes a notable event (see the [type docs](Self#notable-events-and-the-tap)):
    /// `make` builds it when someone subscribed or a tap is set; the tap sees
    /// it first, synchronously, then subscribers receive it. Off the call
    /// path (a transition, a reset, a switch), so it is never inlined there.
    #[cold]
    #[inline(never)]
    pub fn publish_notable_with(&self, make: impl FnOnce() -> T) {
        let channel = self
            .channel
            .get()
            .filter(|c| c.subscribers.load(Ordering::Relaxed) != 0);
        let tap = self.tap();
        if channel.is_none() && tap.is_none() {
            return;
        }
        let event = make();
        if let Some(tap) = tap {
            tap(&event);
        }
        if let Some(c) = channel {
            let _ = c.tx.send(event);
        }
    }

    /// Sets the tap that sees every notable event synchronously (see the
    /// [type docs](Self#notable-events-and-the-tap)). One tap per publisher:
    /// returns `false`, leaving the first in place, when one is already set.
    /// The tap runs while the primitive decides a transition (a breaker
    /// holds its lock): it must be quick and must not call back into the
    /// primitive.
    pub fn tap_notable(&self, tap: impl Fn(&T) + Send + Sync + 'static) -> bool {
        let tap: Box<NotableTap<T>> = Box::new(Box::new(tap));
        let tap = Box::into_raw(tap);
        match self
            .tap
            .compare_exchange(ptr::null_mut(), tap, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: `tap` came from `Box::into_raw` just above and was
                // never shared.
                drop(unsafe { Box::from_raw(tap) });
                false
            }
        }
    }

    /// The tap, if one is set.
    fn tap(&self) -> Option<&NotableTap<T>> {
        let tap = self.tap.load(Ordering::Acquire);
        // SAFETY: non-null only once set from `Box::into_raw`, never
        // replaced, and freed only by `Drop`, which has `&mut self`.
        unsafe { tap.as_ref() }
    }

    /// A new subscription that receives every event published from now on.
    /// The first one allocates the channel.
    pub fn subscribe(&self) -> EventStream<T> {
        let c = self.channel.get_or_init(|| Channel {
            tx: broadcast::channel(self.capacity as usize).0,
            subscribers: Arc::new(AtomicUsize::new(0)),
        });
        c.subscribers.fetch_add(1, Ordering::Relaxed);
        EventStream {
            rx: c.tx.subscribe(),
            subscribers: Arc::clone(&c.subscribers),
            missed: AtomicU64::new(0),
        }
    }
}

impl<T: Clone + Send + 'static> Default for EventPublisher<T> {
    fn default() -> Self {
        Self::new(DEFAULT_EVENT_CAPACITY)
    }
}

impl<T> fmt::Debug for EventPublisher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subscribers = self
            .channel
            .get()
            .map_or(0, |c| c.subscribers.load(Ordering::Relaxed));
        f.debug_struct("EventPublisher")
            .field("subscribers", &subscribers)
            .field("tapped", &!self.tap.load(Ordering::Relaxed).is_null())
            .finish()
    }
}

impl<T> Drop for EventPublisher<T> {
    fn drop(&mut self) {
        let tap = std::mem::replace(self.tap.get_mut(), ptr::null_mut());
        if !tap.is_null() {
            // SAFETY: set once from `Box::into_raw`; `&mut self`: no reader
            // is left, and it is freed exactly once, here.
            drop(unsafe { Box::from_raw(tap) });
        }
    }
}

/// A subscription to a primitive's events.
///
/// Dropping it unsubscribes. Receive with [`recv`](EventStream::recv) from async
/// code or [`try_recv`](EventStream::try_recv) from anywhere.
pub struct EventStream<T> {
    rx: broadcast::Receiver<T>,
    subscribers: Arc<AtomicUsize>,
    missed: AtomicU64,
}

impl<T: Clone> EventStream<T> {
    /// The next event, waiting for one; `None` once the primitive is gone.
    /// Events lost to lagging are skipped and counted in [`missed`](Self::missed).
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            match self.rx.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    self.missed.fetch_add(n, Ordering::Relaxed);
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is ready, without waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        loop {
            match self.rx.try_recv() {
                Ok(event) => return Some(event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    self.missed.fetch_add(n, Ordering::Relaxed);
                }
                Err(_) => return None,
            }
        }
    }

    /// Every event ready now, in order.
    pub fn drain(&mut self) -> Vec<T> {
        std::iter::from_fn(|| self.try_recv()).collect()
    }

    /// How many events this subscriber lost by falling behind.
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

impl<T> Drop for EventStream<T> {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T> fmt::Debug for EventStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("missed", &self.missed.load(Ordering::Relaxed))
            .finish()
    }
}

/// Builds and sends an event: off the hot path, so the check above stays
/// two loads inlined into every call.
#[cold]
#[inline(never)]
fn send<T>(channel: &Channel<T>, make: impl FnOnce() -> T) {
    let _ = channel.tx.send(make());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_channel_exists_until_someone_subscribes() {
        let publisher = EventPublisher::<u32>::new(256);
        publisher.publish_with(|| 1);
        assert!(publisher.channel.get().is_none());
        let mut stream = publisher.subscribe();
        assert!(publisher.channel.get().is_some());
        publisher.publish_with(|| 2);
        assert_eq!(stream.drain(), vec![2]);
        drop(stream);
        assert!(!publisher.is_active());
        let mut again = publisher.subscribe();
        publisher.publish_with(|| 3);
        assert_eq!(
            again.drain(),
            vec![3],
            "a later subscriber reuses the channel"
        );
    }

    #[test]
    fn without_subscribers_the_event_is_never_built() {
        let publisher = EventPublisher::<u32>::new(4);
        let mut built = false;
        publisher.publish_with(|| {
            built = true;
            1
        });
        assert!(!built);
        assert!(!publisher.is_active());
    }

    #[test]
    fn a_lagging_subscriber_loses_the_oldest_events_and_never_blocks_the_publisher() {
        let publisher = EventPublisher::<u32>::new(4);
        let mut stream = publisher.subscribe();
        for i in 0..10 {
            publisher.publish_with(|| i);
        }
        assert_eq!(stream.drain(), vec![6, 7, 8, 9]);
        assert_eq!(stream.missed(), 6);
    }

    #[test]
    fn a_tap_sees_notable_events_without_subscribers_and_never_per_call_ones() {
        let publisher = EventPublisher::<u32>::new(4);
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        assert!(publisher.tap_notable(move |e| sink.lock().push(*e)));
        assert!(!publisher.tap_notable(|_| {}), "one tap per publisher");
        let mut built = false;
        publisher.publish_with(|| {
            built = true;
            1
        });
        assert!(!built, "a tap does not make per-call events get built");
        publisher.publish_notable_with(|| 2);
        let mut stream = publisher.subscribe();
        publisher.publish_notable_with(|| 3);
        publisher.publish_with(|| 4);
        assert_eq!(*seen.lock(), vec![2, 3]);
        assert_eq!(stream.drain(), vec![3, 4], "subscribers get both");
    }

    #[test]
    fn without_tap_or_subscriber_a_notable_event_is_never_built() {
        let publisher = EventPublisher::<u32>::new(4);
        let mut built = false;
        publisher.publish_notable_with(|| {
            built = true;
            1
        });
        assert!(!built);
    }

    #[test]
    fn dropping_the_last_subscription_deactivates_publishing() {
        let publisher = EventPublisher::<u32>::new(4);
        let a = publisher.subscribe();
        let b = publisher.subscribe();
        assert!(publisher.is_active());
        drop(a);
        assert!(publisher.is_active());
        drop(b);
        assert!(!publisher.is_active());
    }
}
