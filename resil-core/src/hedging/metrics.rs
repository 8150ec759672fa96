//! A hedging instance's counters.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::striped::Striped;

/// The live counters (relaxed atomics; each call adds to exactly one outcome).
/// The one every fast call writes is striped, so a thread counts it with a
/// plain store on a line of its own instead of a locked add.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) won_by_primary: Striped<AtomicU64>,
    pub(crate) won_by_hedge: AtomicU64,
    pub(crate) all_failed: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) hedges_started: AtomicU64,
    pub(crate) budget_refused: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HedgingMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        HedgingMetrics {
            won_by_primary: self.won_by_primary.sum(),
            won_by_hedge: get(&self.won_by_hedge),
            all_failed: get(&self.all_failed),
            cancelled: get(&self.cancelled),
            hedges_started: get(&self.hedges_started),
            budget_refused: get(&self.budget_refused),
        }
    }
}

/// A snapshot of a [`Hedging`](super::Hedging)'s counters, taken by
/// [`metrics`](super::Hedging::metrics).
///
/// Every finished call is counted in exactly one of
/// [`won_by_primary`](Self::won_by_primary), [`won_by_hedge`](Self::won_by_hedge),
/// [`all_failed`](Self::all_failed) and [`cancelled`](Self::cancelled), so
/// `calls() == won_by_primary + won_by_hedge + all_failed + cancelled`
/// (counters are read one by one, so a snapshot taken while calls finish
/// may be off by those calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HedgingMetrics {
    won_by_primary: u64,
    won_by_hedge: u64,
    all_failed: u64,
    cancelled: u64,
    hedges_started: u64,
    budget_refused: u64,
}

impl HedgingMetrics {
    /// Finished calls (every outcome below, summed).
    #[inline]
    pub fn calls(&self) -> u64 {
        self.won_by_primary + self.won_by_hedge + self.all_failed + self.cancelled
    }

    /// Calls whose first attempt's outcome was accepted (hedges started for
    /// them, if any, lost).
    #[inline]
    pub fn won_by_primary(&self) -> u64 {
        self.won_by_primary
    }

    /// Calls won by a hedged attempt.
    #[inline]
    pub fn won_by_hedge(&self) -> u64 {
        self.won_by_hedge
    }

    /// Calls where every attempt failed (the last outcome was returned).
    #[inline]
    pub fn all_failed(&self) -> u64 {
        self.all_failed
    }

    /// Calls dropped (cancelled, or unwound by a panic) before any outcome.
    #[inline]
    pub fn cancelled(&self) -> u64 {
        self.cancelled
    }

    /// Hedged attempts started (not counting first attempts): the extra load
    /// hedging sent downstream.
    #[inline]
    pub fn hedges_started(&self) -> u64 {
        self.hedges_started
    }

    /// Hedges not started because the retry budget could not pay for them.
    #[inline]
    pub fn budget_refused(&self) -> u64 {
        self.budget_refused
    }
}
