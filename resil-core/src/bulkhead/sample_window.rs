//! Samples gathered into windows before they reach the limit estimator
//! (Netflix concurrency-limits' `WindowedLimit` with its average window).
//!
//! Feeding every call's latency straight to Vegas makes the limit swing: a
//! sample reports the queue as it was when its call was admitted, one round
//! trip ago, while dozens of other samples have moved the limit since. A
//! window collects calls for `clamp(2 × its smallest latency, min_window,
//! max_window)` and at least `window_size` calls, then hands the estimator
//! one sample: the window's *average* latency, the most calls that were in
//! flight, and whether any was dropped. Latencies below `min_rtt_threshold`
//! (answers from a cache, say) are left out: they say nothing about the
//! downstream's queue.

/// The window being filled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SampleWindow {
    min_rtt: u64,
    sum: u64,
    count: u32,
    max_inflight: u32,
    dropped: bool,
}

impl Default for SampleWindow {
    fn default() -> Self {
        SampleWindow {
            min_rtt: u64::MAX,
            sum: 0,
            count: 0,
            max_inflight: 0,
            dropped: false,
        }
    }
}

/// One window's worth of samples, as the estimator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) avg_rtt: u64,
    pub(crate) max_inflight: u32,
    pub(crate) dropped: bool,
}

/// The windowing rule's settings (nanoseconds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windowing {
    pub(crate) min_window: u64,
    pub(crate) max_window: u64,
    pub(crate) window_size: u32,
    pub(crate) min_rtt_threshold: u64,
}

/// The window and when it closes.
#[derive(Debug)]
pub(crate) struct Windows {
    rule: Windowing,
    current: SampleWindow,
    next_update: u64,
}

impl Windows {
    pub(crate) fn new(rule: Windowing) -> Self {
        Windows {
            rule,
            current: SampleWindow::default(),
            next_update: 0,
        }
    }

    /// Adds a call that ended at `end` after `rtt`; returns the window's
    /// summary when this call closed a window that had enough samples.
    pub(crate) fn add(
        &mut self,
        end: u64,
        rtt: u64,
        inflight: u32,
        dropped: bool,
    ) -> Option<Summary> {
        if rtt < self.rule.min_rtt_threshold {
            return None;
        }
        let w = &mut self.current;
        w.min_rtt = w.min_rtt.min(rtt);
        w.sum = w.sum.saturating_add(rtt);
        w.count += 1;
        w.max_inflight = w.max_inflight.max(inflight);
        w.dropped |= dropped;
        if end <= self.next_update {
            return None;
        }
        let closed = std::mem::take(&mut self.current);
        let span = closed
            .min_rtt
            .saturating_mul(2)
            .clamp(self.rule.min_window, self.rule.max_window);
        self.next_update = end.saturating_add(span);
        (closed.count >= self.rule.window_size).then(|| Summary {
            avg_rtt: closed.sum / u64::from(closed.count),
            max_inflight: closed.max_inflight,
            dropped: closed.dropped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn windows() -> Windows {
        Windows::new(Windowing {
            min_window: 100 * MS,
            max_window: 1000 * MS,
            window_size: 3,
            min_rtt_threshold: MS / 10,
        })
    }

    #[test]
    fn a_window_closes_after_its_time_with_enough_samples_and_reports_the_average() {
        let mut w = windows();
        // The very first sample closes the empty initial window, too small.
        assert_eq!(w.add(10 * MS, 10 * MS, 1, false), None);
        // The next window lasts 100 ms (2 × 10 ms, raised to the minimum).
        assert_eq!(w.add(50 * MS, 10 * MS, 4, false), None);
        assert_eq!(w.add(60 * MS, 30 * MS, 7, true), None);
        assert_eq!(w.add(90 * MS, 20 * MS, 2, false), None);
        assert_eq!(
            w.add(111 * MS, 20 * MS, 3, false),
            Some(Summary {
                avg_rtt: 20 * MS,
                max_inflight: 7,
                dropped: true
            })
        );
    }

    #[test]
    fn a_window_with_too_few_samples_is_discarded_and_fast_answers_are_left_out() {
        let mut w = windows();
        w.add(10 * MS, 10 * MS, 1, false);
        assert_eq!(w.add(200 * MS, 10 * MS, 1, false), None, "1 sample of 3");
        for i in 0..10 {
            assert_eq!(
                w.add(210 * MS + i, MS / 20, 1, false),
                None,
                "below the threshold"
            );
        }
        assert_eq!(w.add(250 * MS, 10 * MS, 1, false), None);
        assert_eq!(w.add(260 * MS, 10 * MS, 1, false), None);
        assert_eq!(
            w.add(301 * MS, 10 * MS, 1, false),
            Some(Summary {
                avg_rtt: 10 * MS,
                max_inflight: 1,
                dropped: false
            }),
            "three samples, the fast answers not among them"
        );
    }
}
