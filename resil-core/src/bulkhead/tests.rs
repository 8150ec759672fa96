//! Unit tests of the semaphore's state machine against a simple model.

use std::collections::VecDeque;
use std::sync::Arc;

use proptest::prelude::*;

use super::semaphore::{Enqueued, Semaphore, Waiter, Wake};

/// What the semaphore should do, written the obvious way.
#[derive(Debug, Default)]
struct Model {
    max: u32,
    fair: bool,
    /// Slots held (by holders and granted waiters alike).
    in_use: u32,
    /// Waiter ids in arrival order.
    queue: VecDeque<usize>,
    /// Waiters granted a slot they have not given back yet.
    granted: Vec<usize>,
}

impl Model {
    fn may_take(&self) -> bool {
        self.in_use < self.max && (self.queue.is_empty() || !self.fair)
    }

    fn grant(&mut self) {
        while self.in_use < self.max {
            let Some(w) = self.queue.pop_front() else {
                break;
            };
            self.in_use += 1;
            self.granted.push(w);
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    TryAcquire,
    Release(usize),
    Enqueue,
    Cancel(usize),
    Resize(u32),
    SetFair(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::TryAcquire),
        4 => any::<usize>().prop_map(Op::Release),
        3 => Just(Op::Enqueue),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => (1u32..6).prop_map(Op::Resize),
        1 => any::<bool>().prop_map(Op::SetFair),
    ]
}

fn new_waiter(sem: &Semaphore) -> Enqueued {
    sem.enqueue(Wake::Task(None))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every sequence of acquires, releases, waits, cancellations and resizes
    /// leaves the atomic word, the queue and the grants exactly where the model
    /// says, and returning every slot at the end restores the full limit.
    #[test]
    fn the_semaphore_matches_a_simple_model(
        max in 1u32..5,
        fair in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let sem = Semaphore::new(max, fair);
        let mut model = Model { max, fair, ..Model::default() };
        // Plain holders (count) and waiters (id -> node) on the real side.
        let mut holders = 0u32;
        let mut waiters: Vec<(usize, Arc<Waiter>)> = Vec::new();
        let mut next_id = 0usize;

        for op in ops {
            match op {
                Op::TryAcquire => {
                    let expect = model.may_take();
                    prop_assert_eq!(sem.try_acquire(), expect);
                    if expect {
                        model.in_use += 1;
                        holders += 1;
                    }
                }
                Op::Release(pick) => {
                    // Release either a plain holder or a granted waiter.
                    let granted: Vec<usize> = model.granted.clone();
                    let total = holders as usize + granted.len();
                    if total == 0 {
                        continue;
                    }
                    let k = pick % total;
                    if k < holders as usize {
                        holders -= 1;
                    } else {
                        let id = granted[k - holders as usize];
                        model.granted.retain(|&g| g != id);
                        let at = waiters.iter().position(|(w, _)| *w == id).unwrap();
                        waiters.remove(at);
                    }
                    sem.release();
                    model.in_use -= 1;
                    model.grant();
                }
                Op::Enqueue => {
                    let expect_take = model.may_take();
                    match new_waiter(&sem) {
                        Enqueued::Acquired => {
                            prop_assert!(expect_take, "took a slot the model says was not free");
                            model.in_use += 1;
                            holders += 1;
                        }
                        Enqueued::Queued(node) => {
                            prop_assert!(!expect_take, "queued although a slot was free");
                            model.queue.push_back(next_id);
                            waiters.push((next_id, node));
                            next_id += 1;
                        }
                    }
                }
                Op::Cancel(pick) => {
                    // Only waiters still queued or granted-but-unclaimed can cancel.
                    let queued: Vec<usize> = model.queue.iter().copied().collect();
                    let candidates: Vec<usize> =
                        queued.iter().chain(model.granted.iter()).copied().collect();
                    if candidates.is_empty() {
                        continue;
                    }
                    let id = candidates[pick % candidates.len()];
                    let at = waiters.iter().position(|(w, _)| *w == id).unwrap();
                    let (_, node) = waiters.remove(at);
                    let was_granted = model.granted.contains(&id);
                    prop_assert_eq!(sem.cancel(&node), was_granted);
                    if was_granted {
                        // A dropped future passes its slot on.
                        model.granted.retain(|&g| g != id);
                        sem.release();
                        model.in_use -= 1;
                        model.grant();
                    } else {
                        model.queue.retain(|&q| q != id);
                    }
                }
                Op::Resize(n) => {
                    sem.resize(n);
                    model.max = n;
                    model.grant();
                }
                Op::SetFair(f) => {
                    sem.set_fair(f);
                    model.fair = f;
                }
            }
            let (in_use, max) = sem.snapshot();
            prop_assert_eq!((in_use, max), (model.in_use, model.max));
            prop_assert_eq!(sem.waiting(), model.queue.len());
            prop_assert_eq!(sem.has_waiters_flag(), !model.queue.is_empty());
            for (id, node) in &waiters {
                prop_assert_eq!(node.is_granted(), model.granted.contains(id));
            }
        }

        // Drain: cancel every waiter (releasing grants), then every holder.
        for (_, node) in waiters.drain(..) {
            if sem.cancel(&node) {
                sem.release();
            }
        }
        for _ in 0..holders {
            sem.release();
        }
        let (in_use, max) = sem.snapshot();
        prop_assert_eq!(in_use, 0);
        prop_assert_eq!(max, model.max);
        prop_assert_eq!(sem.waiting(), 0);
        prop_assert!(!sem.has_waiters_flag());
    }
}

#[test]
fn a_release_hands_the_slot_to_the_longest_waiting_caller() {
    let sem = Semaphore::new(1, true);
    assert!(sem.try_acquire());
    let Enqueued::Queued(first) = new_waiter(&sem) else {
        panic!("must queue")
    };
    let Enqueued::Queued(second) = new_waiter(&sem) else {
        panic!("must queue")
    };
    sem.release();
    assert!(first.is_granted());
    assert!(!second.is_granted());
    assert_eq!(
        sem.snapshot(),
        (1, 1),
        "the slot moved without ever being free"
    );
    assert!(!sem.try_acquire(), "a newcomer cannot overtake the queue");
}

#[test]
fn lowering_the_limit_revokes_nothing_and_waiters_wait_until_in_flight_drops_below_it() {
    let sem = Semaphore::new(3, true);
    for _ in 0..3 {
        assert!(sem.try_acquire());
    }
    sem.resize(1);
    assert_eq!(sem.snapshot(), (3, 1));
    let Enqueued::Queued(waiter) = new_waiter(&sem) else {
        panic!("must queue")
    };
    sem.release();
    sem.release();
    assert!(
        !waiter.is_granted(),
        "one held slot still fills the new limit"
    );
    sem.release();
    assert!(waiter.is_granted());
    assert_eq!(sem.snapshot(), (1, 1));
}

#[test]
fn raising_the_limit_wakes_as_many_waiters_as_there_is_new_room() {
    let sem = Semaphore::new(1, true);
    assert!(sem.try_acquire());
    let nodes: Vec<_> = (0..40)
        .map(|_| match new_waiter(&sem) {
            Enqueued::Queued(n) => n,
            Enqueued::Acquired => panic!("must queue"),
        })
        .collect();
    // More than one wake batch at once.
    sem.resize(35);
    let granted = nodes.iter().filter(|n| n.is_granted()).count();
    assert_eq!(granted, 34);
    assert!(
        nodes[..34].iter().all(|n| n.is_granted()),
        "in arrival order"
    );
    assert_eq!(sem.waiting(), 6);
}

#[test]
fn only_an_unfair_newcomer_may_take_a_slot_in_the_instant_before_it_is_handed_off() {
    for fair in [true, false] {
        let sem = Semaphore::new(1, fair);
        assert!(sem.try_acquire());
        let Enqueued::Queued(waiter) = new_waiter(&sem) else {
            panic!("must queue")
        };
        sem.release_before_hand_off();
        assert_eq!(sem.try_acquire(), !fair, "fair = {fair}");
        sem.finish_hand_off();
        assert_eq!(waiter.is_granted(), fair, "fair = {fair}");
        assert_eq!(
            sem.snapshot(),
            (1, 1),
            "exactly one slot is held either way"
        );
        assert_eq!(sem.waiting(), usize::from(!fair));
    }
}

#[test]
fn a_limit_above_two_to_the_thirty_takes_slots_without_overshooting_the_field() {
    let max = super::MAX_CONCURRENT_CALLS;
    let sem = Semaphore::new(max, true);
    for _ in 0..3 {
        assert!(sem.try_acquire());
    }
    assert_eq!(sem.snapshot(), (3, max));
    sem.resize(2);
    assert!(
        !sem.try_acquire(),
        "3 held, limit 2: no room, and no overshoot left behind"
    );
    assert_eq!(sem.snapshot(), (3, 2));
    sem.release();
    sem.release();
    assert!(sem.try_acquire());
    assert_eq!(sem.snapshot(), (2, 2));
}

#[test]
fn a_refused_fetch_add_is_undone_and_hands_the_room_to_a_waiter() {
    let sem = Semaphore::new(1, true);
    assert!(sem.try_acquire());
    let Enqueued::Queued(waiter) = new_waiter(&sem) else {
        panic!("the only slot is held")
    };
    assert!(
        !sem.try_acquire(),
        "fair: a newcomer never overtakes a waiter"
    );
    assert_eq!(sem.snapshot(), (1, 1), "the refused add was undone");
    sem.release();
    assert!(waiter.is_granted());
    assert_eq!(sem.snapshot(), (1, 1));
}
