//! The cluster's shared storage as a timeline: suspensions and resumptions write and read VM
//! memory one VM at a time (paper 003 §5: sequential to avoid contention), so each operation
//! books the earliest free interval of its length.

use crate::model::RequestId;
use crate::time::{EmuDuration, EmuTime};

/// Bookings of the shared storage, kept sorted by start.
#[derive(Clone, Debug, Default)]
pub(crate) struct Storage {
    bookings: Vec<(EmuTime, EmuTime, RequestId)>,
}

impl Storage {
    /// Books `length` for `lease` at the earliest free time at or after `not_before`; returns
    /// the start.
    pub(crate) fn book(
        &mut self,
        lease: RequestId,
        not_before: EmuTime,
        length: EmuDuration,
    ) -> EmuTime {
        let start = self.earliest(not_before, length);
        if length > EmuDuration::ZERO {
            let pos = self.bookings.partition_point(|b| b.0 <= start);
            self.bookings.insert(pos, (start, start + length, lease));
        }
        start
    }

    /// The earliest free start at or after `not_before` for `length`, without booking.
    pub(crate) fn earliest(&self, not_before: EmuTime, length: EmuDuration) -> EmuTime {
        let mut t = not_before;
        for &(s, e, _) in &self.bookings {
            if e <= t {
                continue;
            }
            if s >= t + length {
                break;
            }
            t = t.max(e);
        }
        t
    }

    /// Cancels `lease`'s bookings that start at or after `from`.
    pub(crate) fn cancel(&mut self, lease: RequestId, from: EmuTime) {
        self.bookings.retain(|b| !(b.2 == lease && b.0 >= from));
    }

    /// Forgets bookings that ended by `now`.
    pub(crate) fn forget_before(&mut self, now: EmuTime) {
        self.bookings.retain(|b| b.1 > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_queue_one_after_another_and_fill_gaps() {
        let mut s = Storage::default();
        let t = EmuTime::from_secs;
        let d = EmuDuration::from_secs;
        assert_eq!(s.book(RequestId(1), t(0), d(10)), t(0));
        assert_eq!(s.book(RequestId(2), t(0), d(10)), t(10));
        assert_eq!(s.book(RequestId(3), t(50), d(10)), t(50));
        // A 5 s job fits in the gap 20..50; a 40 s one must wait until 60.
        assert_eq!(s.earliest(t(0), d(5)), t(20));
        assert_eq!(s.earliest(t(0), d(40)), t(60));
        s.cancel(RequestId(3), t(0));
        assert_eq!(s.earliest(t(0), d(40)), t(20));
    }
}
