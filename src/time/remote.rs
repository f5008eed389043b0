//! A clock's door for other threads: with `--threads N`, each shard of a realtime run has its
//! own [`super::Clock`] on its own thread, and what another shard sends it (a message on a
//! link between Grids, the end of the run) is posted here with its due time. The clock's
//! driver takes the posts into its own queue of events, so the receiving shard handles them
//! at their time (or, if it is already past it, at once), never at whatever instant it last
//! handled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;

use super::EmuTime;

/// What a post runs, on the receiving clock's thread, when its time comes.
pub type Posted = Box<dyn FnOnce() + Send>;

/// Posts from other threads to one clock (see the module's doc).
pub struct Mailbox {
    /// Posts: due time (`None`: at once, not a timer) and what to run.
    queue: Mutex<Vec<(Option<EmuTime>, Posted)>>,
    /// Set when there is something to take (read without the lock by the waiting clock).
    pending: AtomicBool,
    /// Set when the clock has halted: posts are dropped.
    closed: AtomicBool,
    /// Wakes the clock's driver when it waits in tokio.
    wake: Arc<tokio::sync::Notify>,
    /// Wakes the clock's thread when it sleeps itself waiting for a deadline.
    thread: Thread,
}

impl Mailbox {
    /// A mailbox for the clock driven on the current thread, woken through `wake`.
    pub(super) fn new(wake: Arc<tokio::sync::Notify>) -> Mailbox {
        Mailbox {
            queue: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            wake,
            thread: std::thread::current(),
        }
    }

    /// Has `run` run on the clock's thread at emulated time `due` (at once if the clock is
    /// past it). Returns whether it was taken: a clock that has halted takes nothing.
    pub fn post(&self, due: EmuTime, run: Posted) -> bool {
        self.put(Some(due), run)
    }

    /// Has `run` run on the clock's thread at once, at whatever instant it is at (not a
    /// timer: no lateness is measured). Returns whether it was taken.
    pub fn post_now(&self, run: Posted) -> bool {
        self.put(None, run)
    }

    fn put(&self, due: Option<EmuTime>, run: Posted) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        // A poisoned lock means a shard panicked; the run is ending with that panic.
        let Ok(mut queue) = self.queue.lock() else {
            return false;
        };
        queue.push((due, run));
        self.pending.store(true, Ordering::Release);
        drop(queue);
        self.wake.notify_one();
        self.thread.unpark();
        true
    }

    /// Whether posts are waiting to be taken.
    pub(super) fn has_posts(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Takes the posts waiting, in the order they came.
    pub(super) fn take(&self) -> Vec<(Option<EmuTime>, Posted)> {
        if !self.has_posts() {
            return Vec::new();
        }
        let Ok(mut queue) = self.queue.lock() else {
            return Vec::new();
        };
        self.pending.store(false, Ordering::Release);
        std::mem::take(&mut *queue)
    }

    /// Takes no more posts, and drops those waiting (the clock has halted).
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let waiting = self.queue.lock().map(|mut q| std::mem::take(&mut *q));
        drop(waiting);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_come_out_in_order_and_a_closed_mailbox_takes_none() {
        let m = Mailbox::new(Arc::new(tokio::sync::Notify::new()));
        assert!(!m.has_posts());
        let hits = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3u64 {
            let h = Arc::clone(&hits);
            let post = Box::new(move || h.lock().unwrap().push(i));
            assert!(m.post(EmuTime::from_micros(10 - i), post));
        }
        assert!(m.has_posts());
        let taken = m.take();
        assert!(!m.has_posts());
        let dues: Vec<u64> = taken
            .iter()
            .map(|(d, _)| d.map_or(0, |d| d.as_micros()))
            .collect();
        assert_eq!(dues, vec![10, 9, 8]);
        for (_, run) in taken {
            run();
        }
        assert_eq!(*hits.lock().unwrap(), vec![0, 1, 2]);
        m.close();
        assert!(!m.post(EmuTime::ZERO, Box::new(|| {})));
        assert!(!m.post_now(Box::new(|| {})));
        assert!(m.take().is_empty());
    }

    #[test]
    fn a_post_from_another_thread_wakes_a_parked_clock_thread() {
        let m = Arc::new(Mailbox::new(Arc::new(tokio::sync::Notify::new())));
        let poster = Arc::clone(&m);
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            poster.post(EmuTime::ZERO, Box::new(|| {}))
        });
        let start = std::time::Instant::now();
        // Parks at most 10 s; the post unparks it.
        while !m.has_posts() && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::park_timeout(std::time::Duration::from_secs(10));
        }
        assert!(t.join().unwrap());
        assert!(m.has_posts());
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
