//! Counting grants in time windows, shared by the Redis tests that check a
//! quota's bound across processes, a cluster and a failover.

use std::time::{SystemTime, UNIX_EPOCH};

/// The most grant times of `sorted` in any window `[t, t + window)` starting
/// at a grant, or `[t, t + window]` when `closed`.
#[allow(dead_code)]
pub fn max_in_any_window(sorted: &[u64], window: u64, closed: bool) -> usize {
    let mut most = 0;
    let mut end = 0;
    for (start, &t) in sorted.iter().enumerate() {
        while end < sorted.len()
            && (sorted[end] < t + window || (closed && sorted[end] == t + window))
        {
            end += 1;
        }
        most = most.max(end - start);
    }
    most
}

/// The wall clock in microseconds (to line grants up with a server's events).
#[allow(dead_code)]
pub fn micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_micros() as u64
}
