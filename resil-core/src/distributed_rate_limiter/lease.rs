//! Local permit leases: permits one script call took for this process, handed
//! out here without asking Redis again.
//!
//! The rules that keep the bound (`limit + processes × lease_size` in any
//! window) are all here:
//!
//! * **One lease at a time.** A new lease is asked for only once the current
//!   one is spent, too small for the acquire, or expired, and what is left of
//!   it is given back in that same call. So at any instant each process holds
//!   permits of at most one lease granted earlier: at most `lease_size`
//!   permits a window may see on top of the `limit` Redis counted in it.
//! * **One refill in flight.** Local acquires take turns (`turn`, a FIFO
//!   lock), and the refill runs in a task of its own: an acquire dropped
//!   while its refill is in flight does not cancel it, and the lease it
//!   brings lands here for the next in turn. A refill whose task is dropped
//!   or panics clears its flag on the way out ([`Refilling`]).
//! * **Nothing handed out late.** A lease's permits are handed out only
//!   within `lease_ttl` of its arrival; after that they are given back with
//!   the next call.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::script::{GiveBack, Verdict};

/// The lease of one limiter (shared by its clones).
pub(crate) struct Leases {
    pub(crate) size: u32,
    ttl_nanos: u64,
    /// Local acquires with leases on take turns, in the order they asked.
    pub(crate) turn: tokio::sync::Mutex<()>,
    state: Mutex<Held>,
    /// Signalled when a refill ends (landed, failed or dropped).
    refilled: Notify,
}

#[derive(Debug, Default)]
struct Held {
    /// Permits left to hand out.
    left: u32,
    /// Names the lease in a give-back (bucket end or TAT).
    token: u64,
    /// Local clock (nanoseconds) after which nothing more is handed out.
    expires: u64,
    /// Redis's clock when it granted the lease (µs since the epoch).
    server_time_micros: u64,
    /// Counts leases, so a refill's acquire takes from its own lease even if
    /// it expired before the acquire got back to it.
    generation: u64,
    refilling: bool,
    /// Local clock before which Redis said nothing comes back (the last
    /// refill was refused): acquires that cannot wait that long are refused
    /// here, without a round trip.
    closed_until: u64,
}

/// What a hand-out tells the grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HandOut {
    pub(crate) server_time_micros: u64,
}

impl Leases {
    pub(crate) fn new(size: u32, ttl_nanos: u64) -> Self {
        Leases {
            size,
            ttl_nanos: ttl_nanos.max(1),
            turn: tokio::sync::Mutex::new(()),
            state: Mutex::new(Held::default()),
            refilled: Notify::new(),
        }
    }

    /// Hands out `permits` (0: asks whether one is left, takes none) from the
    /// lease if it has them and has not expired at `now`, or if it is lease
    /// `generation` (the one the caller's own refill brought).
    pub(crate) fn take(&self, now: u64, permits: u32, generation: Option<u64>) -> Option<HandOut> {
        let mut held = self.state.lock();
        let fresh = now < held.expires || generation == Some(held.generation);
        if !fresh || held.left < permits.max(1) {
            return None;
        }
        held.left -= permits;
        Some(HandOut {
            server_time_micros: held.server_time_micros,
        })
    }

    /// How long, from `now`, Redis said no permit comes back (0: ask it).
    pub(crate) fn closed_for(&self, now: u64) -> u64 {
        self.state.lock().closed_until.saturating_sub(now)
    }

    /// A refill was refused at local time `now`: nothing comes back for `wait`
    /// nanoseconds (unless another process gives a lease back, which only
    /// makes this process refuse a little more than it had to).
    pub(crate) fn closed(&self, now: u64, wait: u64) {
        self.state.lock().closed_until = now.saturating_add(wait);
    }

    /// Whether a refill is in flight (its acquire was dropped, or it is ours).
    pub(crate) fn refilling(&self) -> bool {
        self.state.lock().refilling
    }

    /// Waits until the refill in flight ends. Registers before checking, so
    /// an end between the check and the wait is not missed.
    pub(crate) async fn refill_ended(&self) {
        let notified = self.refilled.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !self.refilling() {
            return;
        }
        notified.await;
    }

    /// Retires the current lease for a refill: what is left of it, to give
    /// back in that call, and the flag that a refill is in flight (cleared by
    /// the returned guard however the refill ends).
    pub(crate) fn start_refill(self: &Arc<Self>) -> (GiveBack, Refilling) {
        let mut held = self.state.lock();
        debug_assert!(!held.refilling, "one refill in flight at a time");
        let back = GiveBack {
            token: held.token,
            permits: if held.token == 0 { 0 } else { held.left },
        };
        held.left = 0;
        held.token = 0;
        held.refilling = true;
        (
            back,
            Refilling {
                leases: Arc::clone(self),
            },
        )
    }

    /// Takes the lease a refill brought (arrived at local time `now`), and
    /// returns its generation.
    fn install(&self, now: u64, verdict: &Verdict) -> u64 {
        let mut held = self.state.lock();
        held.generation += 1;
        held.left = verdict.taken;
        held.token = verdict.token;
        held.expires = now.saturating_add(self.ttl_nanos);
        held.server_time_micros = verdict.server_time_micros;
        held.closed_until = 0;
        held.generation
    }

    /// Retires the lease without a refill (to give it back by itself).
    pub(crate) fn retire(&self) -> GiveBack {
        let mut held = self.state.lock();
        let back = GiveBack {
            token: held.token,
            permits: if held.token == 0 { 0 } else { held.left },
        };
        held.left = 0;
        held.token = 0;
        back
    }

    /// Permits left in the lease (expired or not).
    pub(crate) fn left(&self) -> u32 {
        self.state.lock().left
    }
}

/// A refill in flight; dropping it (the refill ended, however) clears the
/// flag and wakes whoever waits for it.
pub(crate) struct Refilling {
    leases: Arc<Leases>,
}

impl Refilling {
    /// The refill brought a lease: install it (the guard then clears the flag).
    pub(crate) fn landed(&self, now: u64, verdict: &Verdict) -> u64 {
        self.leases.install(now, verdict)
    }
}

impl Drop for Refilling {
    fn drop(&mut self) {
        self.leases.state.lock().refilling = false;
        self.leases.refilled.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn lease(taken: u32) -> Verdict {
        Verdict {
            granted: true,
            remaining: 0,
            wait: Duration::ZERO,
            server_time_micros: 7,
            taken,
            token: 42,
            returned: 0,
        }
    }

    #[test]
    fn a_lease_hands_out_its_permits_until_spent_or_expired_and_gives_back_the_rest() {
        let leases = Arc::new(Leases::new(5, 1_000));
        assert_eq!(leases.take(0, 1, None), None, "no lease yet");
        let (back, refill) = leases.start_refill();
        assert_eq!(back, GiveBack::default(), "nothing to give back");
        assert!(leases.refilling());
        let generation = refill.landed(100, &lease(5));
        drop(refill);
        assert!(!leases.refilling());
        assert!(leases.take(100, 2, None).is_some());
        assert!(leases.take(1099, 3, None).is_some());
        assert_eq!(leases.take(1099, 1, None), None, "spent");
        assert_eq!(leases.left(), 0);

        let (_, refill) = leases.start_refill();
        refill.landed(2_000, &lease(4));
        drop(refill);
        assert!(leases.take(2_500, 1, None).is_some());
        assert_eq!(leases.take(3_000, 1, None), None, "expired at 2000 + ttl");
        assert!(
            leases.take(3_000, 1, Some(generation + 1)).is_some(),
            "the refill's own acquire still gets its permits"
        );
        let (back, refill) = leases.start_refill();
        assert_eq!(
            back,
            GiveBack {
                token: 42,
                permits: 2
            },
            "what was never handed out goes back"
        );
        drop(refill);
        assert_eq!(leases.retire(), GiveBack::default(), "given back once");
    }

    #[test]
    fn a_dropped_refill_clears_its_flag_and_wakes_the_waiters() {
        let leases = Arc::new(Leases::new(5, 1_000));
        let (_, refill) = leases.start_refill();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let waiter = leases.refill_ended();
            tokio::pin!(waiter);
            assert!(futures::poll!(waiter.as_mut()).is_pending());
            drop(refill);
            waiter.await;
        });
        assert!(!leases.refilling());
    }
}
