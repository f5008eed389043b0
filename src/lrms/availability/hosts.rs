//! One host's reservations: its slots (lease, VM, shape, interval) kept in order from both
//! ends, so that finding when a VM fits and taking or freeing a slot stay cheap.

use super::*;

/// One VM-sized slice of a host, taken for `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    pub(super) lease: RequestId,
    pub(super) vm: u32,
    pub(super) start: EmuTime,
    pub(super) end: EmuTime,
    pub(super) cores: u32,
    /// As the request gives it (u32): a slot is 32 bytes, and a long queue holds hundreds
    /// of thousands.
    pub(super) mem_mb: u32,
}

/// Where a slot sorts on its host: start, lease, VM.
pub(super) type SlotKey = (EmuTime, RequestId, u32);

pub(super) fn key_of(s: &Slot) -> SlotKey {
    (s.start, s.lease, s.vm)
}

/// A vector that inserts and removes by shifting the shorter side of the index, as a ring
/// buffer does, yet stays one slice: the front side shifts into room kept before the first
/// element. A host's slots are sorted by start, the running ones first and the reservations
/// a long queue leaves (hundreds) behind them; the running ones come and go.
#[derive(Clone, Debug)]
pub(super) struct TwoEnded<T> {
    /// `buf[head..]` are the elements; what is before `head` is spare room.
    pub(super) buf: Vec<T>,
    pub(super) head: usize,
}

impl<T> Default for TwoEnded<T> {
    fn default() -> Self {
        TwoEnded {
            buf: Vec::new(),
            head: 0,
        }
    }
}

impl<T: Copy> TwoEnded<T> {
    /// Spare room made at the front at most once per this many elements moved.
    const ROOM_PER: usize = 4;

    #[inline]
    pub(super) fn as_slice(&self) -> &[T] {
        &self.buf[self.head..]
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.head..]
    }

    pub(super) fn insert(&mut self, i: usize, value: T) {
        let len = self.buf.len() - self.head;
        if i >= len / 2 {
            self.buf.insert(self.head + i, value);
            return;
        }
        if self.head == 0 {
            // Room for a quarter of the elements (filled with copies of `value`, unread):
            // one shift of all now for as many cheap inserts at the front.
            let room = (len / Self::ROOM_PER).max(1);
            self.buf.splice(0..0, std::iter::repeat_n(value, room));
            self.head = room;
        }
        let head = self.head;
        self.buf.copy_within(head..head + i, head - 1);
        self.head -= 1;
        self.buf[self.head + i] = value;
    }

    pub(super) fn remove(&mut self, i: usize) -> T {
        let (head, len) = (self.head, self.buf.len() - self.head);
        let value = self.buf[head + i];
        if i >= len / 2 {
            self.buf.remove(head + i);
            return value;
        }
        self.buf.copy_within(head..head + i, head + 1);
        self.head += 1;
        if self.head > Self::ROOM_PER * (len - 1).max(8) {
            // Mostly room: give it back (one shift, after as many removals).
            self.buf.drain(..self.head);
            self.head = 0;
        }
        value
    }
}

/// One host's slots, sorted by key: a sorted array, as every placement query looks up a
/// window on every host (a search is cache-bound on this).
#[derive(Clone, Debug, Default)]
pub(super) struct HostSlots {
    pub(super) slots: TwoEnded<Slot>,
    /// `max_end[i]` is the latest end among `slots[..=i]` (so it never decreases): the slots
    /// before the first one past an instant all ended by it. Kept apart, dense, for the
    /// binary search every window begins with.
    pub(super) max_end: TwoEnded<EmuTime>,
}

impl HostSlots {
    pub(super) fn find(&self, key: &SlotKey) -> Result<usize, usize> {
        self.slots
            .as_slice()
            .binary_search_by(|s| key_of(s).cmp(key))
    }

    /// The slots that may overlap `[start, end)`, by key: from the first that may not have
    /// ended by `start`, while they start before `end`.
    #[inline]
    pub(super) fn window(&self, start: EmuTime, end: EmuTime) -> impl Iterator<Item = &Slot> {
        let from = self.max_end.as_slice().partition_point(|&m| m <= start);
        self.slots.as_slice()[from..]
            .iter()
            .take_while(move |s| s.start < end)
    }

    /// The slots that start before `t`.
    pub(super) fn starting_before(&self, t: EmuTime) -> &[Slot] {
        let slots = self.slots.as_slice();
        &slots[..slots.partition_point(|s| s.start < t)]
    }

    /// Puts `slot` at index `i`, where its key sorts among the others (none equal to it).
    pub(super) fn insert_at(&mut self, i: usize, slot: Slot) {
        self.slots.insert(i, slot);
        self.max_end.insert(i, EmuTime::ZERO);
        self.refresh_max_end(i);
    }

    pub(super) fn remove(&mut self, key: &SlotKey) -> Option<Slot> {
        let i = self.find(key).ok()?;
        let slot = self.slots.remove(i);
        self.max_end.remove(i);
        self.refresh_max_end(i);
        Some(slot)
    }

    /// Recomputes `max_end` from index `i` on, up to where it no longer changes (every
    /// later entry depends only on the one before and its own slot).
    pub(super) fn refresh_max_end(&mut self, i: usize) {
        let (slots, max_end) = (self.slots.as_slice(), self.max_end.as_mut_slice());
        let mut before = match i {
            0 => EmuTime::ZERO,
            _ => max_end[i - 1],
        };
        for j in i..slots.len() {
            let m = before.max(slots[j].end);
            if j > i && max_end[j] == m {
                break;
            }
            max_end[j] = m;
            before = m;
        }
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Slot> {
        self.slots.as_slice().iter()
    }
}

/// VM `vm` of `lease`, of `shape`, over `[start, end)`.
pub(super) fn slot_of(
    lease: RequestId,
    vm: u32,
    shape: VmShape,
    start: EmuTime,
    end: EmuTime,
) -> Slot {
    Slot {
        lease,
        vm,
        start,
        end,
        cores: shape.cores,
        mem_mb: shape.mem_mb,
    }
}
