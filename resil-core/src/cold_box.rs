//! A boxed future that most calls never make (a wait for a permit, a timer),
//! whose drop stays out of line.
//!
//! A `Pin<Box<F>>` field's drop glue holds all of `F`'s drop inline, so every
//! future with such a field (the bulkhead's and rate limiter's wait, the time
//! limiter's timer) carried that code on its own drop, although it runs only
//! for the rare call that waited. Here the glue is a null check and, on that
//! rare path, a call taking the box's pointer. Measured (instructions per
//! `call_async` of a ready future): a rate limiter 132 → 110, a bulkhead 79 →
//! 53; the five-aspect stack 623 → 603.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `Pin<Box<F>>`, dropped through a cold, out-of-line call: for a state
/// that a future enters only on a rare path (a wait), so that the drop of
/// every future holding it stays a null check.
///
/// ```
/// use resil_core::cold_box::ColdBox;
///
/// let mut waiting = ColdBox::pin(async { 7 });
/// let _ = waiting.as_mut(); // the pinned future
/// # let _ = waiting;
/// ```
pub struct ColdBox<F>(ManuallyDrop<Pin<Box<F>>>);

impl<F> ColdBox<F> {
    /// Boxes and pins `fut`.
    pub fn pin(fut: F) -> Self {
        ColdBox(ManuallyDrop::new(Box::pin(fut)))
    }

    /// The pinned box, to hand on (a timed-out future detached to a task).
    pub fn into_pin(self) -> Pin<Box<F>> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: taken once; `this` is never dropped, so the box is not
        // dropped here as well.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }

    /// The contents.
    pub fn get_ref(&self) -> &F {
        &self.0
    }

    /// The pinned contents.
    pub fn as_mut(&mut self) -> Pin<&mut F> {
        self.0.as_mut()
    }
}

impl<F> std::fmt::Debug for ColdBox<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ColdBox")
    }
}

impl<F> Drop for ColdBox<F> {
    #[inline]
    fn drop(&mut self) {
        #[cold]
        #[inline(never)]
        fn drop_box<F>(boxed: Pin<Box<F>>) {
            drop(boxed);
        }
        // SAFETY: taken once, in the drop; the field is not used again.
        drop_box(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

impl<F: Future> Future for ColdBox<F> {
    type Output = F::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.as_mut().get_mut().as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Waker;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn drops_its_contents_once_and_polls_them() {
        let before = DROPS.load(Ordering::Relaxed);
        let counted = Counted;
        let mut boxed = ColdBox::pin(async move {
            let _counted = &counted;
            7
        });
        let polled = Pin::new(&mut boxed).poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(polled, Poll::Ready(7));
        drop(boxed);
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 1);

        let handed_on = ColdBox::pin(Counted).into_pin();
        assert_eq!(
            DROPS.load(Ordering::Relaxed) - before,
            1,
            "handed on, not dropped"
        );
        drop(handed_on);
        assert_eq!(DROPS.load(Ordering::Relaxed) - before, 2);
    }
}
