//! What a hedging instance reports to its subscribers.

use std::fmt;

use crate::event::{Event, EventKind};

/// Something that happened to a hedged call, delivered to every stream from
/// [`Hedging::subscribe`](super::Hedging::subscribe) (Polly's `OnHedging`,
/// plus how each call ended).
pub type HedgingEvent = Event<HedgingEventKind>;

/// The kinds of [`HedgingEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgingEventKind {
    /// A hedged attempt started (its [`attempt`](HedgingEvent::attempt) is
    /// 1 for the first hedge).
    HedgeStarted,
    /// The first attempt's outcome was accepted (attempt 0).
    WonByPrimary,
    /// A hedged attempt's outcome was accepted; the others were dropped.
    WonByHedge,
    /// Every attempt failed; the last outcome was returned.
    AllFailed,
    /// The retry budget could not pay for a hedge, so none was started
    /// (attempt: the one that would have started).
    BudgetExhausted,
}

impl HedgingEventKind {
    /// A short, stable label: `hedge_started`, `won_by_primary`,
    /// `won_by_hedge`, `all_failed`, `budget_exhausted`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HedgingEventKind::HedgeStarted => "hedge_started",
            HedgingEventKind::WonByPrimary => "won_by_primary",
            HedgingEventKind::WonByHedge => "won_by_hedge",
            HedgingEventKind::AllFailed => "all_failed",
            HedgingEventKind::BudgetExhausted => "budget_exhausted",
        }
    }
}

impl fmt::Display for HedgingEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl HedgingEvent {
    /// The attempt concerned: 0 is the first, 1 the first hedge, …; for
    /// `AllFailed`, how many attempts were made in all.
    #[inline]
    pub fn attempt(&self) -> u32 {
        *self.detail()
    }
}

/// The detail is the attempt ([`HedgingEvent::attempt`]).
impl EventKind for HedgingEventKind {
    type Detail = u32;
    const EVENT: &'static str = "HedgingEvent";
    const SOURCE: &'static str = "hedging";

    /// `HEDGE_STARTED`, `WON_BY_PRIMARY`, `WON_BY_HEDGE`, `ALL_FAILED`,
    /// `BUDGET_EXHAUSTED`.
    fn label(&self) -> &'static str {
        match self {
            HedgingEventKind::HedgeStarted => "HEDGE_STARTED",
            HedgingEventKind::WonByPrimary => "WON_BY_PRIMARY",
            HedgingEventKind::WonByHedge => "WON_BY_HEDGE",
            HedgingEventKind::AllFailed => "ALL_FAILED",
            HedgingEventKind::BudgetExhausted => "BUDGET_EXHAUSTED",
        }
    }

    /// Never: every event is about one call.
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(&self, attempt: &u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {self} (attempt {attempt})")
    }

    fn fmt_detail(attempt: &u32, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("attempt", attempt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = HedgingEvent::with_detail(
            &std::sync::Arc::from("quotes"),
            HedgingEventKind::WonByHedge,
            1,
        );
        assert_eq!(e.to_string(), "hedging 'quotes': won_by_hedge (attempt 1)");
        assert_eq!(
            format!("{e:?}"),
            "HedgingEvent { name: \"quotes\", kind: WonByHedge, attempt: 1 }"
        );
        assert_eq!(HedgingEventKind::HedgeStarted.as_str(), "hedge_started");
        assert_eq!(HedgingEventKind::AllFailed.as_str(), "all_failed");
        assert_eq!(
            HedgingEventKind::BudgetExhausted.as_str(),
            "budget_exhausted"
        );
        assert_eq!(HedgingEventKind::WonByPrimary.as_str(), "won_by_primary");
    }
}
