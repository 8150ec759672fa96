//! Task-scoped end-to-end deadlines (beyond Resilience4j).
//!
//! Per-call timeouts compose badly: three layers of "800 ms, three attempts"
//! add up to seconds the user stopped waiting for long ago. A deadline is one
//! budget for the whole logical request, set once with [`within`] and respected
//! by every primitive running inside it:
//!
//! * a time limiter waits at most the remaining budget;
//! * a retry does not start an attempt, or a backoff, that cannot finish in it;
//! * bulkhead and rate-limiter waits are cut to it.
//!
//! When the budget is spent the work fails with
//! [`Error::DeadlineExceeded`](crate::Error::DeadlineExceeded).
//!
//! Deadlines nest: an inner `within` can only shorten the budget, never extend
//! it. Time is tokio's, so `tokio::time::pause()` drives deadlines in tests.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::deadline;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let out = deadline::within(Duration::from_millis(300), async {
//!     assert!(deadline::remaining().unwrap() <= Duration::from_millis(300));
//!     tokio::time::sleep(Duration::from_secs(1)).await;
//! })
//! .await;
//! assert!(out.is_err());
//! # }
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::DeadlineExceeded;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Whether any [`within`] future was ever made in this process. Until one is,
/// no task can be inside a deadline's scope, so every primitive's deadline
/// check costs one load of this flag (written once, so it stays cached on
/// every core) instead of a task-local look-up through a function pointer
/// and a `RefCell`. Once a process uses deadlines, every check looks up the
/// task-local as before: a count of live scopes would spare that too, but
/// would make each request using a deadline write a line every core reads.
///
/// A scope exists only while its `within` future is polled, after the flag
/// was set when the future was made: on the same thread in program order, or
/// on another after the runtime handed the task over (which synchronises).
static USED: AtomicBool = AtomicBool::new(false);

/// Runs `fut` with an end-to-end budget of `budget` (or the enclosing deadline,
/// whichever ends first). Resolves to `Err(DeadlineExceeded)` if the budget runs
/// out first; `fut` is then dropped.
pub fn within<F: Future>(
    budget: Duration,
    fut: F,
) -> impl Future<Output = Result<F::Output, DeadlineExceeded>> {
    if !USED.load(Ordering::Relaxed) {
        USED.store(true, Ordering::Relaxed);
    }
    scoped(budget, fut)
}

async fn scoped<F: Future>(budget: Duration, fut: F) -> Result<F::Output, DeadlineExceeded> {
    let mut at = Instant::now()
        .checked_add(budget)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365 * 30));
    if let Some(outer) = current() {
        at = at.min(outer);
    }
    DEADLINE
        .scope(at, tokio::time::timeout_at(at, fut))
        .await
        .map_err(|_| DeadlineExceeded::new())
}

/// The current task's deadline, if it runs inside [`within`].
#[inline]
pub fn current() -> Option<Instant> {
    if !USED.load(Ordering::Relaxed) {
        return None;
    }
    DEADLINE.try_with(|at| *at).ok()
}

/// The budget left for the current task: `None` outside any [`within`],
/// `Some(Duration::ZERO)` once it is spent.
#[inline]
pub fn remaining() -> Option<Duration> {
    current().map(|at| at.saturating_duration_since(Instant::now()))
}

/// Cuts a wait of `wait` to the remaining budget. Returns the wait to perform and
/// whether it was cut (a cut wait ends at the deadline, so the work after it
/// would not fit).
#[inline]
pub fn cap(wait: Duration) -> (Duration, bool) {
    match remaining() {
        Some(left) if left < wait => (left, true),
        _ => (wait, false),
    }
}

/// Whether work expected to take `needs` fits in the remaining budget (always
/// true outside any [`within`]).
#[inline]
pub fn fits(needs: Duration) -> bool {
    remaining().is_none_or(|left| needs <= left && !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_made_on_one_thread_is_seen_where_it_is_polled() {
        // Made (and the flag set) outside any runtime, polled on a worker
        // thread, which must see the flag.
        let fut = within(Duration::from_secs(60), async { current().is_some() });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let seen = rt.block_on(async move { tokio::spawn(fut).await.unwrap() });
        assert_eq!(seen, Ok(true));
        assert_eq!(current(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn outside_a_deadline_nothing_is_limited() {
        assert_eq!(current(), None);
        assert_eq!(remaining(), None);
        assert!(fits(Duration::from_secs(3600)));
        assert_eq!(cap(Duration::from_secs(5)), (Duration::from_secs(5), false));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_counts_down_and_fails_the_work_when_spent() {
        let out = within(Duration::from_millis(500), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(remaining(), Some(Duration::from_millis(300)));
            assert!(fits(Duration::from_millis(300)));
            assert!(!fits(Duration::from_millis(301)));
            assert_eq!(
                cap(Duration::from_secs(1)),
                (Duration::from_millis(300), true)
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
            "finished"
        })
        .await;
        assert_eq!(out, Err(DeadlineExceeded::new()));
    }

    #[tokio::test(start_paused = true)]
    async fn an_inner_deadline_can_shorten_but_never_extend_the_outer_one() {
        within(Duration::from_millis(100), async {
            within(Duration::from_secs(10), async {
                assert_eq!(remaining(), Some(Duration::from_millis(100)));
            })
            .await
            .unwrap();
            within(Duration::from_millis(10), async {
                assert_eq!(remaining(), Some(Duration::from_millis(10)));
            })
            .await
            .unwrap();
        })
        .await
        .unwrap();
    }
}
