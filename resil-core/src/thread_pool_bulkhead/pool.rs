//! The worker threads and their queue: Java's `ThreadPoolExecutor` admission
//! rules (core threads first, then the queue, then threads up to the maximum,
//! then rejection) over one mutex and two condition variables.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::event::{ThreadPoolBulkheadEvent, ThreadPoolBulkheadEventKind};
use super::metrics::ThreadPoolBulkheadMetrics;
use super::ThreadPoolBulkheadConfig;
use crate::error::SharedName;
use crate::event::EventPublisher;

/// A unit of work as the pool sees it. The job receives its [`Slot`] and must
/// let go of it (drop it) before it reports its result to the caller, so the
/// caller never sees a result while the pool still counts the thread as busy.
pub(super) type Job = Box<dyn FnOnce(Slot<'_>) + Send + 'static>;

pub(super) struct Pool {
    pub(super) name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    pub(super) refusal_name: SharedName,
    pub(super) config: ThreadPoolBulkheadConfig,
    state: Mutex<State>,
    /// Signalled when a job is queued and when the pool shuts down.
    work: Condvar,
    /// Signalled when a worker thread exits.
    exited: Condvar,
    pub(super) events: EventPublisher<ThreadPoolBulkheadEvent>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Worker threads alive (or reserved and about to start).
    threads: usize,
    /// Workers running a job. `threads - active` workers are idle: waiting for
    /// work, or about to look at the queue again.
    active: usize,
    /// Threads ever started, for the `<name>-<n>` thread names.
    started: u64,
    shutdown: bool,
    handles: Vec<JoinHandle<()>>,
    permitted: u64,
    rejected: u64,
    finished: u64,
    abandoned: u64,
}

impl State {
    #[inline]
    fn idle(&self) -> usize {
        debug_assert!(
            self.active <= self.threads,
            "a job runs on a worker thread, so active workers never outnumber threads"
        );
        self.threads - self.active
    }
}

/// Which way a submission went.
enum Admission {
    Rejected,
    Queued,
    NewThread(u64),
}

impl Pool {
    pub(super) fn new(
        name: Arc<str>,
        config: ThreadPoolBulkheadConfig,
        events: EventPublisher<ThreadPoolBulkheadEvent>,
    ) -> Self {
        Pool {
            refusal_name: SharedName::new(Arc::clone(&name)),
            name,
            config,
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            exited: Condvar::new(),
            events,
        }
    }

    /// Runs `job` on a pool thread, or gives it back untouched when there is no
    /// capacity (or the pool is shut down).
    pub(super) fn submit(self: &Arc<Self>, job: Job) -> Result<(), Job> {
        let mut st = self.state.lock();
        let admission = if st.shutdown {
            Admission::Rejected
        } else if st.threads < self.config.core_thread_pool_size() {
            Admission::NewThread(Self::reserve_thread(&mut st))
        } else if st.queue.len() < self.config.queue_capacity().saturating_add(st.idle()) {
            // Room for one more: a queue slot, or an idle thread to take it at
            // once (the only room a zero-capacity, hand-off queue has).
            Admission::Queued
        } else if st.threads < self.config.max_thread_pool_size() {
            Admission::NewThread(Self::reserve_thread(&mut st))
        } else {
            Admission::Rejected
        };
        match admission {
            Admission::Rejected => {
                st.rejected += 1;
                drop(st);
                self.publish(ThreadPoolBulkheadEventKind::CallRejected);
                Err(job)
            }
            Admission::Queued => {
                st.permitted += 1;
                st.queue.push_back(job);
                // Published under the lock, so CALL_PERMITTED always precedes
                // the task's CALL_FINISHED.
                self.publish(ThreadPoolBulkheadEventKind::CallPermitted);
                drop(st);
                self.work.notify_one();
                Ok(())
            }
            Admission::NewThread(n) => {
                st.permitted += 1;
                self.publish(ThreadPoolBulkheadEventKind::CallPermitted);
                drop(st);
                self.start_thread(n, job)
            }
        }
    }

    /// Counts a thread that will start with a job of its own.
    fn reserve_thread(st: &mut State) -> u64 {
        st.threads += 1;
        st.active += 1;
        st.started += 1;
        st.started
    }

    fn start_thread(self: &Arc<Self>, n: u64, job: Job) -> Result<(), Job> {
        // The job travels through a slot we can take back: if the OS refuses a
        // thread, `spawn` drops its closure, and the job must not die with it.
        let first = Arc::new(Mutex::new(Some(job)));
        let pool = Arc::clone(self);
        let handed = Arc::clone(&first);
        let spawned = std::thread::Builder::new()
            .name(thread_name(&self.name, n))
            .spawn(move || {
                let job = handed.lock().take();
                drop(handed);
                pool.work_loop(job);
            });
        let mut st = self.state.lock();
        match spawned {
            Ok(handle) => {
                st.handles.retain(|h| !h.is_finished());
                st.handles.push(handle);
                Ok(())
            }
            Err(err) => {
                st.threads -= 1;
                st.active -= 1;
                st.permitted -= 1;
                st.rejected += 1;
                drop(st);
                tracing::warn!(
                    bulkhead = %self.name,
                    "thread-pool bulkhead '{}' could not start a thread ({err}); the task was rejected",
                    self.name
                );
                self.publish(ThreadPoolBulkheadEventKind::CallRejected);
                // A thread that failed to spawn never ran, so its job is still here.
                let job = first.lock().take();
                debug_assert!(
                    job.is_some(),
                    "the job of a thread that never started is still in its slot"
                );
                job.map_or(Ok(()), Err)
            }
        }
    }

    /// A worker's life: run the job it was started with, then take jobs from
    /// the queue until the pool shuts down (and the queue is empty) or, above
    /// the core size, until no job came for `keep_alive_duration`.
    fn work_loop(&self, mut next: Option<Job>) {
        loop {
            if let Some(job) = next.take() {
                self.run(job);
            }
            let mut st = self.state.lock();
            next = Some(loop {
                if let Some(job) = st.queue.pop_front() {
                    st.active += 1;
                    break job;
                }
                if st.shutdown {
                    return self.exit(st);
                }
                if st.threads > self.config.core_thread_pool_size() {
                    let timed_out = self
                        .work
                        .wait_for(&mut st, self.config.keep_alive_duration())
                        .timed_out();
                    if timed_out
                        && st.queue.is_empty()
                        && st.threads > self.config.core_thread_pool_size()
                    {
                        return self.exit(st);
                    }
                } else {
                    self.work.wait(&mut st);
                }
            });
        }
    }

    /// Runs one job so that no panic from user values can reach the worker's
    /// loop. The task itself runs under its own `catch_unwind` (its panic goes
    /// to the caller); what is left are values dropped on the worker: the
    /// result of a caller who has gone, the captured state of a skipped task.
    /// Their panics are caught here; the job's [`Slot`] has been released by
    /// then (on unwind too), so the counts stay true, and the thread goes on.
    fn run(&self, job: Job) {
        let slot = Slot {
            pool: self,
            ran: false,
        };
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| job(slot))) {
            tracing::warn!(
                bulkhead = %self.name,
                "thread-pool bulkhead '{}': a value dropped on a worker panicked; the worker goes on",
                self.name
            );
            discard(payload);
        }
    }

    fn exit(&self, mut st: MutexGuard<'_, State>) {
        st.threads -= 1;
        drop(st);
        self.exited.notify_all();
    }

    /// Stops accepting tasks; workers finish the queue, then exit.
    pub(super) fn shutdown(&self) {
        self.state.lock().shutdown = true;
        self.work.notify_all();
    }

    /// Blocks until every worker has exited and been joined, or `until` passes.
    pub(super) fn await_termination(&self, until: Instant) -> bool {
        let mut st = self.state.lock();
        while st.threads > 0 {
            if self.exited.wait_until(&mut st, until).timed_out() && st.threads > 0 {
                return false;
            }
        }
        let handles = std::mem::take(&mut st.handles);
        drop(st);
        for handle in handles {
            // A worker never panics (every job runs under `catch_unwind`), and it
            // has already left its loop: joining only waits for its last return.
            let _ = handle.join();
        }
        true
    }

    /// Blocks until `done` holds for the pool's metrics, re-checking each time
    /// a worker exits, or until `until` passes.
    #[cfg(test)]
    pub(super) fn wait_for_exit(
        &self,
        until: Instant,
        mut done: impl FnMut(&ThreadPoolBulkheadMetrics) -> bool,
    ) -> bool {
        let mut st = self.state.lock();
        loop {
            if done(&self.snapshot(&st)) {
                return true;
            }
            if self.exited.wait_until(&mut st, until).timed_out() {
                return done(&self.snapshot(&st));
            }
        }
    }

    pub(super) fn metrics(&self) -> ThreadPoolBulkheadMetrics {
        self.snapshot(&self.state.lock())
    }

    fn snapshot(&self, st: &State) -> ThreadPoolBulkheadMetrics {
        ThreadPoolBulkheadMetrics {
            core_thread_pool_size: self.config.core_thread_pool_size(),
            max_thread_pool_size: self.config.max_thread_pool_size(),
            thread_pool_size: st.threads,
            active_thread_count: st.active,
            queue_depth: st.queue.len().saturating_sub(st.idle()),
            queue_capacity: self.config.queue_capacity(),
            permitted_calls: st.permitted,
            rejected_calls: st.rejected,
            finished_calls: st.finished,
            abandoned_calls: st.abandoned,
        }
    }

    #[inline]
    fn publish(&self, kind: ThreadPoolBulkheadEventKind) {
        self.events
            .publish_with(|| ThreadPoolBulkheadEvent::of(&self.name, kind));
    }
}

/// A worker's claim on "busy": dropping it marks the worker idle again and
/// counts the job as finished (if it ran) or abandoned (if it was skipped).
/// Release on every path, panics included, is this one `Drop`.
pub(super) struct Slot<'a> {
    pool: &'a Pool,
    ran: bool,
}

impl Slot<'_> {
    /// The job ran its task (rather than skipping it).
    pub(super) fn ran(&mut self) {
        self.ran = true;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut st = self.pool.state.lock();
        debug_assert!(
            st.active > 0,
            "a slot exists only while its worker counts as active"
        );
        st.active -= 1;
        if self.ran {
            st.finished += 1;
        } else {
            st.abandoned += 1;
        }
        drop(st);
        if self.ran {
            self.pool.publish(ThreadPoolBulkheadEventKind::CallFinished);
        }
    }
}

/// Drops a panic payload; a payload whose own `Drop` panics is forgotten
/// rather than allowed to unwind out of the worker.
fn discard(payload: Box<dyn Any + Send>) {
    if let Err(nested) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(nested);
    }
}

/// `<name>-<n>`; a NUL byte (which an OS thread name cannot hold) becomes `?`.
fn thread_name(name: &str, n: u64) -> String {
    format!("{}-{n}", name.replace('\0', "?"))
}
