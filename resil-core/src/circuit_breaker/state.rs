//! The breaker's states, the transitions allowed between them, and the packed
//! atomic word that holds the current one.

use std::fmt;
use std::sync::Arc;

/// The states of a circuit breaker, named as in Resilience4j.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls pass and their outcomes are recorded in the sliding window.
    Closed,
    /// Calls are refused until the wait in the open state has passed.
    Open,
    /// A limited number of probe calls pass; their outcomes decide OPEN or CLOSED.
    HalfOpen,
    /// Every call is refused until an operator transitions the breaker.
    ForcedOpen,
    /// Every call passes; nothing is recorded.
    Disabled,
    /// Every call passes and is recorded; thresholds publish events but never open.
    MetricsOnly,
}

impl State {
    /// Resilience4j's name for the state: `CLOSED`, `OPEN`, `HALF_OPEN`,
    /// `FORCED_OPEN`, `DISABLED`, `METRICS_ONLY`.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Open => "OPEN",
            State::HalfOpen => "HALF_OPEN",
            State::ForcedOpen => "FORCED_OPEN",
            State::Disabled => "DISABLED",
            State::MetricsOnly => "METRICS_ONLY",
        }
    }

    /// Whether calls in this state may run (CLOSED, HALF_OPEN with a free probe
    /// slot, DISABLED, METRICS_ONLY).
    pub const fn allows_calls(self) -> bool {
        !matches!(self, State::Open | State::ForcedOpen)
    }

    /// Whether a breaker in this state may be moved to `to`, by Resilience4j's
    /// transition table (`CircuitBreaker.StateTransition`). Every pair is allowed
    /// except three:
    ///
    /// * CLOSED → HALF_OPEN (probing needs an OPEN period first),
    /// * METRICS_ONLY → OPEN and METRICS_ONLY → HALF_OPEN (a breaker that only
    ///   measures never opens; leave it through CLOSED, FORCED_OPEN or DISABLED).
    ///
    /// Moving to the current state is allowed and starts it afresh.
    ///
    /// ```
    /// use resil_core::circuit_breaker::State;
    ///
    /// assert!(!State::Closed.can_transition_to(State::HalfOpen));
    /// assert!(State::Open.can_transition_to(State::HalfOpen));
    /// assert!(!State::MetricsOnly.can_transition_to(State::Open));
    /// assert!(State::MetricsOnly.can_transition_to(State::MetricsOnly));
    /// ```
    pub const fn can_transition_to(self, to: State) -> bool {
        !matches!(
            (self, to),
            (State::Closed, State::HalfOpen)
                | (State::MetricsOnly, State::Open)
                | (State::MetricsOnly, State::HalfOpen)
        )
    }
}

/// A transition the breaker refused because its transition table does not allow
/// it (see [`State::can_transition_to`]); the breaker's state is unchanged.
///
/// Returned by the `transition_to_*` methods of
/// [`CircuitBreaker`](super::CircuitBreaker). Its `Display` is lowercase and
/// stable, for an operator to read:
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
///
/// let breaker = CircuitBreaker::new("inventory", CircuitBreakerConfig::default());
/// let refused = breaker.transition_to_half_open().unwrap_err();
/// assert_eq!(
///     refused.to_string(),
///     "circuit breaker 'inventory' cannot move from CLOSED to HALF_OPEN"
/// );
/// assert_eq!((refused.from(), refused.to()), (State::Closed, State::HalfOpen));
/// assert_eq!(breaker.state(), State::Closed);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct IllegalTransition {
    name: Arc<str>,
    from: State,
    to: State,
}

impl IllegalTransition {
    /// Breaker `name`, in state `from`, refused to move to `to`.
    pub fn new(name: impl Into<Arc<str>>, from: State, to: State) -> Self {
        IllegalTransition {
            name: name.into(),
            from,
            to,
        }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state the breaker was (and still is) in.
    pub fn from(&self) -> State {
        self.from
    }

    /// The refused target state.
    pub fn to(&self) -> State {
        self.to
    }
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "circuit breaker '{}' cannot move from {} to {}",
            self.name, self.from, self.to
        )
    }
}

impl fmt::Debug for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IllegalTransition")
            .field("name", &&*self.name)
            .field("from", &self.from)
            .field("to", &self.to)
            .finish()
    }
}

impl std::error::Error for IllegalTransition {}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The breaker's whole admission state in one `u64`, read with one atomic load
/// on every call: `epoch:36 | free probe slots:25 | state tag:3`.
///
/// * The **tag** is the [`State`].
/// * The **free probe slots** count HALF_OPEN permits still available (0 in
///   every other state); taking and returning one is a CAS on the whole word, so
///   a slot can never be taken from, or returned to, a later HALF_OPEN round.
/// * The **epoch** grows by one on every transition and reset. A permit keeps
///   the epoch it was granted in; an outcome whose epoch is no longer current is
///   not recorded into the new state's window. 2^36 transitions would be needed
///   for it to wrap.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

const TAG_BITS: u32 = 3;
const SLOT_BITS: u32 = 25;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const SLOT_MASK: u64 = ((1 << SLOT_BITS) - 1) << TAG_BITS;
const EPOCH_SHIFT: u32 = TAG_BITS + SLOT_BITS;

/// The largest number of half-open probe slots the word can hold.
pub(crate) const MAX_PROBE_SLOTS: u32 = (1 << (SLOT_BITS - 1)) as u32;

impl Word {
    #[inline]
    pub(crate) const fn new(epoch: u64, state: State, slots: u32) -> Word {
        Word((epoch << EPOCH_SHIFT) | ((slots as u64) << TAG_BITS) | state.tag())
    }

    #[inline]
    pub(crate) const fn state(self) -> State {
        State::from_tag(self.0 & TAG_MASK)
    }

    #[inline]
    pub(crate) const fn slots(self) -> u32 {
        ((self.0 & SLOT_MASK) >> TAG_BITS) as u32
    }

    #[inline]
    pub(crate) const fn epoch(self) -> u64 {
        self.0 >> EPOCH_SHIFT
    }

    /// CLOSED (not ramping up after recovery), DISABLED or METRICS_ONLY: a
    /// call is permitted without a probe slot or a ramp's admission. The
    /// slot field is 0 in these states, except in CLOSED while it ramps up
    /// (see `warm_up_period`), where it is 1.
    #[inline]
    pub(crate) const fn passes_unguarded(self) -> bool {
        matches!(self.0 & (TAG_MASK | SLOT_MASK), 0 | 4 | 5)
    }

    /// The same word with one probe slot fewer (callers check `slots() > 0`).
    #[inline]
    pub(crate) const fn take_slot(self) -> Word {
        Word(self.0 - (1 << TAG_BITS))
    }

    /// The same word with one probe slot more.
    #[inline]
    pub(crate) const fn return_slot(self) -> Word {
        Word(self.0 + (1 << TAG_BITS))
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Word")
            .field("epoch", &self.epoch())
            .field("state", &self.state())
            .field("slots", &self.slots())
            .finish()
    }
}

impl State {
    #[inline]
    const fn tag(self) -> u64 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::ForcedOpen => 3,
            State::Disabled => 4,
            State::MetricsOnly => 5,
        }
    }

    #[inline]
    const fn from_tag(tag: u64) -> State {
        match tag {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            4 => State::Disabled,
            _ => State::MetricsOnly,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_packs_epoch_state_and_slots_without_overlap() {
        for state in [
            State::Closed,
            State::Open,
            State::HalfOpen,
            State::ForcedOpen,
            State::Disabled,
            State::MetricsOnly,
        ] {
            let w = Word::new((1 << 36) - 1, state, MAX_PROBE_SLOTS);
            assert_eq!(w.state(), state);
            assert_eq!(w.slots(), MAX_PROBE_SLOTS);
            assert_eq!(w.epoch(), (1 << 36) - 1);
            let taken = w.take_slot();
            assert_eq!((taken.state(), taken.slots()), (state, MAX_PROBE_SLOTS - 1));
            assert_eq!(taken.return_slot(), w);
        }
    }

    const ALL: [State; 6] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
        State::MetricsOnly,
    ];

    #[test]
    fn the_transition_table_refuses_exactly_resilience4js_three_missing_pairs() {
        let refused: Vec<(State, State)> = ALL
            .iter()
            .flat_map(|&from| ALL.iter().map(move |&to| (from, to)))
            .filter(|&(from, to)| !from.can_transition_to(to))
            .collect();
        assert_eq!(
            refused,
            [
                (State::Closed, State::HalfOpen),
                (State::MetricsOnly, State::Open),
                (State::MetricsOnly, State::HalfOpen),
            ]
        );
    }

    #[test]
    fn an_illegal_transition_displays_and_debugs_in_a_pinned_format() {
        let e = IllegalTransition::new("inventory", State::MetricsOnly, State::Open);
        assert_eq!(
            e.to_string(),
            "circuit breaker 'inventory' cannot move from METRICS_ONLY to OPEN"
        );
        assert_eq!(
            format!("{e:?}"),
            "IllegalTransition { name: \"inventory\", from: MetricsOnly, to: Open }"
        );
        assert_eq!(e.name(), "inventory");
    }

    #[test]
    fn states_display_as_resilience4j_names() {
        assert_eq!(State::HalfOpen.to_string(), "HALF_OPEN");
        assert_eq!(State::MetricsOnly.as_str(), "METRICS_ONLY");
        assert!(!State::ForcedOpen.allows_calls());
    }
}
