//! What a hedging instance reports to its subscribers.

use std::fmt;
use std::sync::Arc;

/// Something that happened to a hedged call, delivered to every stream from
/// [`Hedging::subscribe`](super::Hedging::subscribe) (Polly's `OnHedging`,
/// plus how each call ended).
#[derive(Clone, PartialEq, Eq)]
pub struct HedgingEvent {
    name: Arc<str>,
    kind: HedgingEventKind,
    attempt: u32,
}

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
    pub(crate) fn new(name: &Arc<str>, kind: HedgingEventKind, attempt: u32) -> Self {
        HedgingEvent {
            name: Arc::clone(name),
            kind,
            attempt,
        }
    }

    /// The hedging instance's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    #[inline]
    pub fn kind(&self) -> HedgingEventKind {
        self.kind
    }

    /// The attempt concerned: 0 is the first, 1 the first hedge, …; for
    /// `AllFailed`, how many attempts were made in all.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl fmt::Debug for HedgingEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgingEvent")
            .field("name", &&*self.name)
            .field("kind", &self.kind)
            .field("attempt", &self.attempt)
            .finish()
    }
}

impl fmt::Display for HedgingEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hedging '{}': {} (attempt {})",
            self.name, self.kind, self.attempt
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = HedgingEvent::new(&Arc::from("quotes"), HedgingEventKind::WonByHedge, 1);
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
