//! The counts of the keys a family evicted, in bounded memory: a
//! Space-Saving summary (Metwally, Agrawal and El Abbadi, *Efficient
//! computation of frequent and top-k elements in data streams*, 2005).
//!
//! A key's counts live with the key while the family holds it. When the key
//! is evicted (idle, or to make room), its counts are folded in here, so a
//! noisy tenant that comes and goes between evictions, or hides among a
//! flood of one-shot keys, still ranks in the top-keys report. The summary
//! keeps at most `capacity` keys: a key not held replaces the one with the
//! smallest count and inherits that count as its possible overestimate. Its
//! guarantees, for a total `N` folded in: each estimate is at least the
//! key's true count and at most that plus `N / capacity`, and every key
//! whose true count exceeds `N / capacity` is held.
//!
//! Only eviction and the report touch it, never a call.

/// One summary: keys, their estimated counts, their possible overestimates.
#[derive(Debug, Clone)]
pub(crate) struct Sketch {
    capacity: usize,
    slots: Vec<Slot>,
}

#[derive(Debug, Clone)]
struct Slot {
    key: String,
    count: u64,
    /// How much of `count` may belong to the keys it replaced.
    error: u64,
}

impl Sketch {
    /// An empty summary of at most `capacity` keys (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Sketch {
            capacity: capacity.max(1),
            slots: Vec::new(),
        }
    }

    /// Adds `count` to `key`'s estimate (nothing for a zero count).
    pub(crate) fn add(&mut self, key: &str, count: u64) {
        if count == 0 {
            return;
        }
        if let Some(slot) = self.slots.iter_mut().find(|s| s.key == key) {
            slot.count = slot.count.saturating_add(count);
            return;
        }
        if self.slots.len() < self.capacity {
            self.slots.push(Slot {
                key: key.to_owned(),
                count,
                error: 0,
            });
            return;
        }
        // Full: the smallest estimate makes room and leaves its count behind
        // as the newcomer's possible overestimate.
        let min = self
            .slots
            .iter_mut()
            .min_by_key(|s| s.count)
            .expect("a full summary holds capacity >= 1 slots");
        min.key.clear();
        min.key.push_str(key);
        min.error = min.count;
        min.count = min.count.saturating_add(count);
    }

    /// The estimate for `key` (0 if it is not held).
    pub(crate) fn estimate(&self, key: &str) -> u64 {
        self.slots
            .iter()
            .find(|s| s.key == key)
            .map_or(0, |s| s.count)
    }

    /// Every key held with its estimate.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, u64)> {
        self.slots.iter().map(|s| (s.key.as_str(), s.count))
    }

    /// A key's possible overestimate (0 if it is not held).
    #[cfg(test)]
    fn error(&self, key: &str) -> u64 {
        self.slots
            .iter()
            .find(|s| s.key == key)
            .map_or(0, |s| s.error)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::Sketch;

    #[test]
    fn under_capacity_the_counts_are_exact() {
        let mut s = Sketch::new(4);
        s.add("a", 3);
        s.add("b", 1);
        s.add("a", 2);
        s.add("c", 0);
        assert_eq!(
            (s.estimate("a"), s.estimate("b"), s.estimate("c")),
            (5, 1, 0)
        );
        assert_eq!(s.entries().count(), 2);
    }

    #[test]
    fn a_heavy_key_survives_a_flood_of_one_shot_keys() {
        let mut s = Sketch::new(8);
        for i in 0..10_000u32 {
            s.add(&format!("flood-{i}"), 1);
            if i % 10 == 0 {
                s.add("noisy-tenant", 5);
            }
        }
        // 5 000 true; at most N / 8 over (N = 15 000).
        let noisy = s.estimate("noisy-tenant");
        assert!((5_000..=5_000 + 15_000 / 8).contains(&noisy), "{noisy}");
        assert_eq!(s.entries().count(), 8, "never more than its capacity");
    }

    proptest! {
        /// Against the exact counts: every estimate bounds the true count
        /// from above, by at most N / capacity, and every key whose count is
        /// above N / capacity is held.
        #[test]
        fn the_space_saving_bounds_hold(
            capacity in 1usize..8,
            stream in prop::collection::vec((0u8..20, 1u64..50), 0..300),
        ) {
            let mut s = Sketch::new(capacity);
            let mut exact: HashMap<String, u64> = HashMap::new();
            let mut total = 0u64;
            for (key, count) in &stream {
                let key = format!("k{key}");
                s.add(&key, *count);
                *exact.entry(key).or_default() += count;
                total += count;
            }
            let bound = total / capacity as u64;
            prop_assert!(s.entries().count() <= capacity);
            for (key, &truth) in &exact {
                let estimate = s.estimate(key);
                if estimate > 0 {
                    prop_assert!(estimate >= truth, "{key}: {estimate} < {truth}");
                    prop_assert!(estimate <= truth + bound, "{key}: {estimate} > {truth} + {bound}");
                    prop_assert!(estimate - s.error(key) <= truth);
                }
                if truth > bound {
                    prop_assert!(estimate > 0, "{key} ({truth} > {bound}) is not held");
                }
            }
        }
    }
}
