//! A snapshot of a thread-pool bulkhead's threads, queue and counts.

/// The state of a thread-pool bulkhead at one moment, named after
/// Resilience4j's `ThreadPoolBulkhead.Metrics`.
///
/// Every figure is read under one lock, so they agree with each other:
/// `remaining_queue_capacity() == queue_capacity() - queue_depth()` and
/// `permitted_calls() == finished_calls() + abandoned_calls() + in flight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPoolBulkheadMetrics {
    pub(super) core_thread_pool_size: usize,
    pub(super) max_thread_pool_size: usize,
    pub(super) thread_pool_size: usize,
    pub(super) active_thread_count: usize,
    pub(super) queue_depth: usize,
    pub(super) queue_capacity: usize,
    pub(super) permitted_calls: u64,
    pub(super) rejected_calls: u64,
    pub(super) finished_calls: u64,
    pub(super) abandoned_calls: u64,
}

impl ThreadPoolBulkheadMetrics {
    /// The configured core size.
    #[inline]
    pub fn core_thread_pool_size(&self) -> usize {
        self.core_thread_pool_size
    }

    /// The configured maximum size.
    #[inline]
    pub fn maximum_thread_pool_size(&self) -> usize {
        self.max_thread_pool_size
    }

    /// Threads alive now (started lazily, so 0 before the first task).
    #[inline]
    pub fn thread_pool_size(&self) -> usize {
        self.thread_pool_size
    }

    /// Threads running a task now.
    #[inline]
    pub fn active_thread_count(&self) -> usize {
        self.active_thread_count
    }

    /// Tasks waiting for a thread (not counting tasks an idle thread is
    /// already on its way to take).
    #[inline]
    pub fn queue_depth(&self) -> usize {
        self.queue_depth
    }

    /// The configured queue capacity.
    #[inline]
    pub fn queue_capacity(&self) -> usize {
        self.queue_capacity
    }

    /// Queue slots still free.
    #[inline]
    pub fn remaining_queue_capacity(&self) -> usize {
        self.queue_capacity - self.queue_depth
    }

    /// Tasks accepted (by a thread or the queue) since creation.
    #[inline]
    pub fn permitted_calls(&self) -> u64 {
        self.permitted_calls
    }

    /// Tasks refused with `BulkheadFull` since creation.
    #[inline]
    pub fn rejected_calls(&self) -> u64 {
        self.rejected_calls
    }

    /// Tasks a worker ran to the end (value, error or panic).
    #[inline]
    pub fn finished_calls(&self) -> u64 {
        self.finished_calls
    }

    /// Queued tasks skipped because their caller had stopped waiting before a
    /// worker reached them.
    #[inline]
    pub fn abandoned_calls(&self) -> u64 {
        self.abandoned_calls
    }
}
