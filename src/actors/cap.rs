//! A cap on the messages a run sends (`emulation.max_messages`): the run is stopped when it
//! passes it, with an error saying so, rather than left to run for hours or out of memory.
//! Settings that explode a run are refused by validation where they can be foreseen; the cap
//! is the backstop for what cannot (and what a property test drives through random settings).

use std::cell::Cell;
use std::rc::Rc;

use crate::time::EmuTime;

/// The cap and whether the run passed it.
pub(crate) struct MessageCap {
    limit: Cell<u64>,
    passed: Cell<Option<EmuTime>>,
    /// Woken when the run passes the cap.
    stop: Rc<tokio::sync::Notify>,
}

impl Default for MessageCap {
    fn default() -> Self {
        MessageCap {
            limit: Cell::new(u64::MAX),
            passed: Cell::new(None),
            stop: Rc::new(tokio::sync::Notify::new()),
        }
    }
}

impl MessageCap {
    /// Caps the run at `limit` messages.
    pub(crate) fn set(&self, limit: u64) {
        self.limit.set(limit);
    }

    /// The run has sent `sent` messages by `now`: true the first time that passes the cap
    /// (the caller then stops the run), waking whoever waits on [`MessageCap::stopped`].
    #[inline]
    pub(crate) fn passes(&self, sent: u64, now: EmuTime) -> bool {
        if sent <= self.limit.get() || self.passed.get().is_some() {
            return false;
        }
        self.passed.set(Some(now));
        self.stop.notify_one();
        true
    }

    /// When the run passed the cap, and the cap, if it did.
    pub(crate) fn passed(&self) -> Option<(EmuTime, u64)> {
        self.passed.get().map(|t| (t, self.limit.get()))
    }

    /// Resolves when the run passes the cap.
    pub(crate) fn stopped(&self) -> Rc<tokio::sync::Notify> {
        Rc::clone(&self.stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_passed_once() {
        let cap = MessageCap::default();
        assert!(!cap.passes(u64::MAX, EmuTime::ZERO), "no cap by default");
        cap.set(10);
        assert!(!cap.passes(10, EmuTime::from_secs(1)));
        assert!(cap.passes(11, EmuTime::from_secs(2)));
        assert!(!cap.passes(12, EmuTime::from_secs(3)), "told once");
        assert_eq!(cap.passed(), Some((EmuTime::from_secs(2), 10)));
    }
}
