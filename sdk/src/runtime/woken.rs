//! [`WokenOnly`]: a future polled only after it has woken.
//!
//! The serve loop polls its endings (`shutdown` answered, the stop signal, output failed) with
//! every frame, first, so that none is ever delayed behind frames that are always ready. Polled
//! directly, each of their tokio waiters takes its lock on every poll; wrapped, a poll that
//! finds no wake since the last one costs a pointer compare and an atomic load, and the inner
//! future is polled, with its own waker, only when one of its waiters has fired. Unlike a task
//! of its own, it runs in the loop the moment it is woken, not after the tasks queued before it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Whether the inner future woke since it was last polled, and whom to tell when it does.
#[derive(Debug)]
struct Flag {
    woken: AtomicBool,
    outer: Mutex<Option<Waker>>,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        let outer = self.outer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = outer.as_ref() {
            w.wake_by_ref();
        }
    }
}

/// Polls its inner future only when that future has woken since its last poll (and on the
/// first poll); see the module docs.
pub(crate) struct WokenOnly<F> {
    inner: Pin<Box<F>>,
    flag: Arc<Flag>,
    /// The waker the inner future is polled with (it sets the flag, then wakes `outer`).
    inner_waker: Waker,
    /// The outer waker last stored in the flag, to see cheaply whether it changed.
    outer: Option<Waker>,
}

impl<F: Future> WokenOnly<F> {
    pub(crate) fn new(future: F) -> Self {
        let flag = Arc::new(Flag { woken: AtomicBool::new(true), outer: Mutex::new(None) });
        WokenOnly {
            inner: Box::pin(future),
            inner_waker: Waker::from(flag.clone()),
            flag,
            outer: None,
        }
    }
}

impl<F: Future> Future for WokenOnly<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        // The outer waker is stored before the flag is read, so a wake that lands after the
        // read finds it.
        if !this.outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            let waker = cx.waker().clone();
            *this.flag.outer.lock().unwrap_or_else(|p| p.into_inner()) = Some(waker.clone());
            this.outer = Some(waker);
        }
        if !this.flag.woken.load(Ordering::Acquire) {
            return Poll::Pending;
        }
        this.flag.woken.store(false, Ordering::Release);
        this.inner.as_mut().poll(&mut Context::from_waker(&this.inner_waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Counts its polls; ready once `open` is notified.
    async fn counted(polls: Arc<AtomicUsize>, open: Arc<tokio::sync::Notify>) -> &'static str {
        let notified = open.notified();
        tokio::pin!(notified);
        std::future::poll_fn(|cx| {
            polls.fetch_add(1, Ordering::SeqCst);
            notified.as_mut().poll(cx)
        })
        .await;
        "done"
    }

    #[tokio::test]
    async fn the_inner_future_is_polled_only_after_a_wake_and_its_wake_reaches_the_poller() {
        let (polls, open) = (Arc::new(AtomicUsize::new(0)), Arc::new(tokio::sync::Notify::new()));
        let mut gated = WokenOnly::new(counted(polls.clone(), open.clone()));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..1_000 {
            assert!(Pin::new(&mut gated).poll(&mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::SeqCst), 1, "polled once, then left alone until woken");
        // A wake from elsewhere reaches the task polling the wrapper, and the next poll
        // completes.
        let poller = tokio::spawn(gated);
        tokio::time::sleep(Duration::from_millis(20)).await;
        open.notify_waiters();
        let out = tokio::time::timeout(Duration::from_secs(300), poller).await.unwrap().unwrap();
        assert_eq!(out, "done");
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }
}
