//! The availability profile of a cluster (paper 004 §4, after Mu'alem & Feitelson): which
//! cores and memory of each host are taken, when. Reservations are kept per host, so
//! placement is host-level: a lease's VMs may span hosts, and no host ever exceeds its cores
//! or memory at any instant — memory only where it is enforced (`lrms.enforce_memory`; the
//! testbed of paper 001 let KVM overcommit it).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::HostSpec;
use crate::model::RequestId;
use crate::time::{EmuDuration, EmuTime};

/// One VM-sized slice of a host, taken for `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    lease: RequestId,
    vm: u32,
    start: EmuTime,
    end: EmuTime,
    cores: u32,
    /// As the request gives it (u32): a slot is 32 bytes, and a long queue holds hundreds
    /// of thousands.
    mem_mb: u32,
}

/// Where a slot sorts on its host: start, lease, VM.
type SlotKey = (EmuTime, RequestId, u32);

fn key_of(s: &Slot) -> SlotKey {
    (s.start, s.lease, s.vm)
}

/// A vector that inserts and removes by shifting the shorter side of the index, as a ring
/// buffer does, yet stays one slice: the front side shifts into room kept before the first
/// element. A host's slots are sorted by start, the running ones first and the reservations
/// a long queue leaves (hundreds) behind them; the running ones come and go.
#[derive(Clone, Debug)]
struct TwoEnded<T> {
    /// `buf[head..]` are the elements; what is before `head` is spare room.
    buf: Vec<T>,
    head: usize,
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
    fn as_slice(&self) -> &[T] {
        &self.buf[self.head..]
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.head..]
    }

    fn insert(&mut self, i: usize, value: T) {
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

    fn remove(&mut self, i: usize) -> T {
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
struct HostSlots {
    slots: TwoEnded<Slot>,
    /// `max_end[i]` is the latest end among `slots[..=i]` (so it never decreases): the slots
    /// before the first one past an instant all ended by it. Kept apart, dense, for the
    /// binary search every window begins with.
    max_end: TwoEnded<EmuTime>,
}

impl HostSlots {
    fn find(&self, key: &SlotKey) -> Result<usize, usize> {
        self.slots
            .as_slice()
            .binary_search_by(|s| key_of(s).cmp(key))
    }

    /// The slots that may overlap `[start, end)`, by key: from the first that may not have
    /// ended by `start`, while they start before `end`.
    #[inline]
    fn window(&self, start: EmuTime, end: EmuTime) -> impl Iterator<Item = &Slot> {
        let from = self.max_end.as_slice().partition_point(|&m| m <= start);
        self.slots.as_slice()[from..]
            .iter()
            .take_while(move |s| s.start < end)
    }

    /// The slots that start before `t`.
    fn starting_before(&self, t: EmuTime) -> &[Slot] {
        let slots = self.slots.as_slice();
        &slots[..slots.partition_point(|s| s.start < t)]
    }

    /// Puts `slot` at index `i`, where its key sorts among the others (none equal to it).
    fn insert_at(&mut self, i: usize, slot: Slot) {
        self.slots.insert(i, slot);
        self.max_end.insert(i, EmuTime::ZERO);
        self.refresh_max_end(i);
    }

    fn remove(&mut self, key: &SlotKey) -> Option<Slot> {
        let i = self.find(key).ok()?;
        let slot = self.slots.remove(i);
        self.max_end.remove(i);
        self.refresh_max_end(i);
        Some(slot)
    }

    /// Recomputes `max_end` from index `i` on, up to where it no longer changes (every
    /// later entry depends only on the one before and its own slot).
    fn refresh_max_end(&mut self, i: usize) {
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

    fn values(&self) -> impl Iterator<Item = &Slot> {
        self.slots.as_slice().iter()
    }
}

/// A slot as [`Availability::holds`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// Host index.
    pub host: usize,
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
    /// From.
    pub start: EmuTime,
    /// Until.
    pub end: EmuTime,
    /// Cores.
    pub cores: u32,
    /// Memory, MB.
    pub mem_mb: u64,
}

/// Per host, a span throughout which it was found too full for one more VM of a shape: see
/// [`Availability::place_skipping`]. Only valid for one shape; a span stays true while
/// slots are added (they only fill the host), and is dropped when the host gives capacity
/// back ([`Availability::unblock`], on every removal but of forgotten slots).
///
/// The span of host `h` is `[from[h], until[h])` (µs), `until[h]` 0 where there is none:
/// two plain arrays, so a placement tests each host it passes over with two comparisons and
/// no branch. Most hosts a placement passes over are skipped (paper 000 at 4× load: 2.1 G
/// skips against 107 M hosts looked at).
#[derive(Clone, Debug, Default)]
struct Blocked {
    from: Vec<u64>,
    until: Vec<u64>,
}

/// What one VM of a request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmShape {
    /// Cores per VM.
    pub cores: u32,
    /// Memory per VM, MB.
    pub mem_mb: u32,
}

/// The future use of every host of a cluster.
#[derive(Clone, Debug)]
pub struct Availability {
    /// Cores and memory per host; memory is `u64::MAX` where it is not enforced.
    capacity: Vec<(u32, u64)>,
    enforce_memory: bool,
    /// Per host, its slots by (start, lease, VM).
    slots: Vec<HostSlots>,
    /// Where each lease's slots are: (start, host, VM).
    owned: BTreeMap<RequestId, BTreeSet<(EmuTime, u16, u32)>>,
    /// Intervals of slots removed or cut since last taken, when tracked (for compression).
    freed: Option<Vec<(EmuTime, EmuTime)>>,
    /// Cluster-wide change in cores used at each instant (a quick necessary check).
    deltas: BTreeMap<EmuTime, i64>,
    /// How many slots end at each instant (the candidate start times).
    ends: BTreeMap<EmuTime, u32>,
    /// Slots that ended by this instant were forgotten without dropping the spans found too
    /// full: a span ending by it may have rested on one of them.
    forgotten: EmuTime,
    /// Per shape (memory left out where it is not enforced), the spans found too full by
    /// earlier placements: a placement skips the hosts they still block, whichever lease
    /// found them.
    blocks: RefCell<Vec<(VmShape, Blocked)>>,
}

/// Cores used cluster-wide from each change point on, ascending: a step function.
pub struct UsageSteps(Vec<(EmuTime, i64)>);

impl UsageSteps {
    /// Cores used at instant `t`.
    pub fn used_at(&self, t: EmuTime) -> u64 {
        let i = self.0.partition_point(|&(x, _)| x <= t);
        if i == 0 {
            0
        } else {
            self.0[i - 1].1.max(0) as u64
        }
    }

    /// The change points and the cores used from each on.
    pub fn points(&self) -> impl Iterator<Item = (EmuTime, u64)> + '_ {
        self.0.iter().map(|&(t, u)| (t, u.max(0) as u64))
    }

    /// Whether `cores` more cores are free throughout `[start, end)` given `total` cores.
    pub fn fits(&self, start: EmuTime, end: EmuTime, cores: u64, total: u64) -> bool {
        let first = self.0.partition_point(|&(t, _)| t <= start);
        fits_from(&self.0, first, end, total as i64 - cores as i64)
    }

    /// [`UsageSteps::fits`] for a search that asks about starts in ascending order.
    pub fn walk(&self) -> StepsWalk<'_> {
        StepsWalk {
            steps: &self.0,
            first: 0,
            last_start: EmuTime::ZERO,
        }
    }
}

/// VM `vm` of `lease`, of `shape`, over `[start, end)`.
fn slot_of(lease: RequestId, vm: u32, shape: VmShape, start: EmuTime, end: EmuTime) -> Slot {
    Slot {
        lease,
        vm,
        start,
        end,
        cores: shape.cores,
        mem_mb: shape.mem_mb,
    }
}

/// Whether use stays at most `limit` from the step in force at a start (`steps[first - 1]`,
/// the last at or before it; none: nothing used) through every step before `end`.
fn fits_from(steps: &[(EmuTime, i64)], first: usize, end: EmuTime, limit: i64) -> bool {
    over_limit(steps, first, end, limit).is_none()
}

/// Where use first goes over `limit` in [`fits_from`]'s window: the index just after the
/// step that does (`first` when it is the one in force at the start, or when nothing used
/// already is), or `None` if use stays within the limit.
fn over_limit(steps: &[(EmuTime, i64)], first: usize, end: EmuTime, limit: i64) -> Option<usize> {
    let at_start = first.checked_sub(1).map_or(0, |i| steps[i].1);
    if at_start > limit {
        return Some(first);
    }
    (steps[first..].iter())
        .take_while(|&&(t, _)| t < end)
        .position(|&(_, used)| used > limit)
        .map(|i| first + i + 1)
}

/// Answers [`UsageSteps::fits`] for starts that only go up (a search over candidate starts):
/// it finds the step in force at each start by walking on from the previous one instead of
/// searching all the steps again (hundreds of candidates per search in a long queue).
pub struct StepsWalk<'a> {
    steps: &'a [(EmuTime, i64)],
    /// The number of steps at or before `last_start`.
    first: usize,
    last_start: EmuTime,
}

impl StepsWalk<'_> {
    /// [`UsageSteps::fits`]; a start earlier than the last one asked is searched for afresh.
    pub fn fits(&mut self, start: EmuTime, end: EmuTime, cores: u64, total: u64) -> bool {
        self.seek(start);
        fits_from(self.steps, self.first, end, total as i64 - cores as i64)
    }

    /// [`StepsWalk::fits`], or else the first instant from which a window as long could fit:
    /// every start from `start` until then meets a step over the limit (the first one inside
    /// its window, or one of those after it in force at it), so a search can pass over them
    /// untried.
    pub fn fits_or_next(
        &mut self,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        total: u64,
    ) -> Result<(), EmuTime> {
        self.seek(start);
        let limit = total as i64 - cores as i64;
        match over_limit(self.steps, self.first, end, limit) {
            None => Ok(()),
            Some(after) => Err((self.steps[after..].iter())
                .find(|&&(_, used)| used <= limit)
                .map_or(EmuTime::NEVER, |&(t, _)| t)),
        }
    }

    /// Moves to the step in force at `start`.
    fn seek(&mut self, start: EmuTime) {
        if start < self.last_start {
            self.first = self.steps.partition_point(|&(t, _)| t <= start);
        } else {
            while self.steps.get(self.first).is_some_and(|&(t, _)| t <= start) {
                self.first += 1;
            }
        }
        self.last_start = start;
    }
}

impl UsageSteps {
    /// Like [`UsageSteps::fits`], as if `own` (`[start, end)` taking `cores`) were released.
    pub fn fits_excluding(
        &self,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        total: u64,
        own: (EmuTime, EmuTime, u64),
    ) -> bool {
        let limit = total as i64 - cores as i64;
        let own_at = |t: EmuTime| {
            if own.0 <= t && t < own.1 {
                own.2 as i64
            } else {
                0
            }
        };
        let first = self.0.partition_point(|&(t, _)| t <= start);
        let at_start = if first == 0 { 0 } else { self.0[first - 1].1 };
        if at_start - own_at(start) > limit {
            return false;
        }
        // Where `own` ends the use may not change (another slot starting there), yet what it
        // leaves counts in full from then on.
        if start < own.1 && own.1 < end && self.used_at(own.1) as i64 > limit {
            return false;
        }
        self.0[first..]
            .iter()
            .take_while(|&&(t, _)| t < end)
            .all(|&(t, used)| used - own_at(t) <= limit)
    }
}

/// [`UsageSteps::fits_excluding`] for many windows before `own`: each as long as `own`,
/// starting at or after a floor and before `own`'s start, answered in O(log n) from an index
/// prepared once — a compression tests a lease's earlier starts by the dozen, and scanning
/// each window's steps was a sixth of an overloaded run.
pub struct EarlierFits<'a> {
    steps: &'a [(EmuTime, i64)],
    /// First step after the floor: the windows' steps are from here on.
    base: usize,
    /// `next_over[j - base]`: the first step at or after `j` using too much for the window
    /// (more than the limit, `own`'s cores not counted within `own`'s time), or the first
    /// step at or after `own`'s end if none is.
    next_over: Vec<usize>,
    limit: i64,
    len: EmuDuration,
}

impl UsageSteps {
    /// Prepares [`EarlierFits`] for `cores` more cores over windows as long as `own`
    /// (`[start, end)` taking its cores), starting in `[floor, own.0)`, with `own` released.
    pub fn earlier_fits(
        &self,
        floor: EmuTime,
        cores: u64,
        total: u64,
        own: (EmuTime, EmuTime, u64),
    ) -> EarlierFits<'_> {
        let steps = &self.0[..];
        let limit = total as i64 - cores as i64;
        let base = steps.partition_point(|&(t, _)| t <= floor);
        let own_to = steps.partition_point(|&(t, _)| t < own.1).max(base);
        let mut next_over = vec![own_to; own_to - base + 1];
        for j in (base..own_to).rev() {
            let (at, used) = steps[j];
            let released = if at >= own.0 { own.2 as i64 } else { 0 };
            next_over[j - base] = if used - released > limit {
                j
            } else {
                next_over[j + 1 - base]
            };
        }
        EarlierFits {
            steps,
            base,
            next_over,
            limit,
            len: own.1.since(own.0),
        }
    }
}

impl EarlierFits<'_> {
    /// Whether the window from `t` (in `[floor, own.0)`) fits — what
    /// `fits_excluding(t, t + len, cores, total, own)` answers — and if it does not, the first instant
    /// after `t` from which one might (`EmuTime::NEVER` if none): every window starting in
    /// between holds the step over the limit that this one does, or starts in it.
    pub fn fits_or_next(&self, t: EmuTime) -> Result<(), EmuTime> {
        let steps = self.steps;
        let after = |j: usize| steps.get(j).map_or(EmuTime::NEVER, |s| s.0);
        // The step in force at `t` (before `own`, so unreduced), then every step in
        // `(t, t + len)`; the window ends before `own` does.
        let k = steps.partition_point(|&(x, _)| x <= t);
        let at_t = if k == 0 { 0 } else { steps[k - 1].1 };
        if at_t > self.limit {
            // In force until the next step.
            return Err(after(k));
        }
        let reach = steps.partition_point(|&(x, _)| x < t + self.len);
        // `t` is at or after the floor, so `k >= base`.
        let over = self.next_over[k.max(self.base) - self.base];
        match over >= reach {
            true => Ok(()),
            // Later windows meet step `over` until they start after it ends (before `own`,
            // where every start lies, it is unreduced too).
            false => Err(after(over + 1)),
        }
    }
}

impl Availability {
    /// An empty profile for these hosts; with `enforce_memory` false, VMs may overcommit
    /// memory and only cores limit placement.
    pub fn new(hosts: &[HostSpec], enforce_memory: bool) -> Availability {
        Availability {
            capacity: hosts
                .iter()
                .map(|h| {
                    (
                        h.cores,
                        if enforce_memory {
                            h.memory_mb
                        } else {
                            u64::MAX
                        },
                    )
                })
                .collect(),
            enforce_memory,
            slots: vec![HostSlots::default(); hosts.len()],
            owned: BTreeMap::new(),
            freed: None,
            deltas: BTreeMap::new(),
            ends: BTreeMap::new(),
            forgotten: EmuTime::ZERO,
            blocks: RefCell::new(Vec::new()),
        }
    }

    /// Starts recording the interval of every slot removed or cut (see
    /// [`Availability::take_freed`]).
    pub fn track_freed(&mut self) {
        self.freed.get_or_insert_with(Vec::new);
    }

    /// The intervals whose capacity was freed since the last call (a cut slot reports its
    /// whole old interval), ending after `now`; empty when not tracked.
    pub fn take_freed(&mut self, now: EmuTime) -> Vec<(EmuTime, EmuTime)> {
        match &mut self.freed {
            Some(f) => {
                let mut taken = std::mem::take(f);
                taken.retain(|&(_, e)| e > now);
                taken
            }
            None => Vec::new(),
        }
    }

    /// Records `[start, end)` as freed (when tracked).
    pub fn note_freed(&mut self, start: EmuTime, end: EmuTime) {
        if let Some(f) = &mut self.freed {
            f.push((start, end));
        }
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.capacity.len()
    }

    /// Each host's cores and memory (`None` where memory is not enforced).
    pub fn capacities(&self) -> Vec<(u64, Option<u64>)> {
        self.capacity
            .iter()
            .map(|&(c, m)| (u64::from(c), self.enforce_memory.then_some(m)))
            .collect()
    }

    /// Every slot overlapping `[start, end)`: (host, lease, VM, slot start, slot end, cores,
    /// memory).
    pub fn holds(&self, start: EmuTime, end: EmuTime) -> Vec<Held> {
        self.slots
            .iter()
            .enumerate()
            .flat_map(|(h, _)| {
                self.window(h, start, end)
                    .filter(move |s| s.start < end && s.end > start)
                    .map(move |s| Held {
                        host: h,
                        lease: s.lease,
                        vm: s.vm,
                        start: s.start,
                        end: s.end,
                        cores: s.cores,
                        mem_mb: u64::from(s.mem_mb),
                    })
            })
            .collect()
    }

    /// Takes VM `vm` of `lease` on `host` for `[start, end)`.
    pub fn reserve_vm(
        &mut self,
        host: u16,
        lease: RequestId,
        vm: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) {
        if end > start {
            self.insert(usize::from(host), slot_of(lease, vm, shape, start, end));
        }
    }

    /// Host `h`'s slots that may overlap `[start, end)`, by start.
    #[inline]
    fn window(&self, h: usize, start: EmuTime, end: EmuTime) -> impl Iterator<Item = &Slot> {
        self.slots[h].window(start, end)
    }

    /// Adds a slot to host `h`, keeping the indexes right.
    fn insert(&mut self, h: usize, slot: Slot) {
        self.count(slot.start, slot.end, i64::from(slot.cores), 1);
        self.insert_uncounted(h, slot);
    }

    /// [`Availability::insert`] but for counting the new slot in the cluster-wide use
    /// ([`Availability::count`]), which the caller does (a slot it replaces is uncounted
    /// here).
    fn insert_uncounted(&mut self, h: usize, slot: Slot) {
        let key = key_of(&slot);
        // One search finds both an old slot under the same key and where the new one goes
        // (a placement inserts a slot per VM: the search is most of the cost).
        let at = match self.slots[h].find(&key) {
            Ok(i) => {
                // A slot taken again under the same key replaces the old one as a removal
                // would (its use uncounted, its capacity given back), not silently; the new
                // one then goes where the old one was.
                self.remove_key(h, key);
                i
            }
            Err(i) => i,
        };
        self.owned
            .entry(slot.lease)
            .or_default()
            .insert((slot.start, h as u16, slot.vm));
        self.slots[h].insert_at(at, slot);
    }

    /// Removes host `h`'s slot `key`, keeping the indexes right; the host's spans found too
    /// full are stale from now on.
    fn remove_key(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_key_uncounted(h, key)?;
        self.count(slot.start, slot.end, -i64::from(slot.cores), -1);
        Some(slot)
    }

    /// [`Availability::remove_key`] but for the cluster-wide count, which the caller makes.
    fn remove_key_uncounted(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_quietly_uncounted(h, key)?;
        self.unblock(h);
        Some(slot)
    }

    /// Host `h`'s spans found too full are stale: it gave something back.
    fn unblock(&mut self, h: usize) {
        for (_, blocked) in self.blocks.get_mut().iter_mut() {
            if let Some(until) = blocked.until.get_mut(h) {
                *until = 0;
            }
        }
    }

    /// [`Availability::remove_key`] keeping the spans found too full: for a slot that ended
    /// by [`Availability::forgotten`] (a span it held up ends by then too).
    fn remove_quietly(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_quietly_uncounted(h, key)?;
        self.count(slot.start, slot.end, -i64::from(slot.cores), -1);
        Some(slot)
    }

    /// [`Availability::remove_quietly`] but for the cluster-wide count.
    fn remove_quietly_uncounted(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.take_slot(h, key)?;
        if let Some(mine) = self.owned.get_mut(&slot.lease) {
            mine.remove(&(slot.start, h as u16, slot.vm));
            if mine.is_empty() {
                self.owned.remove(&slot.lease);
            }
        }
        Some(slot)
    }

    /// Takes host `h`'s slot `key` off the host, noting where capacity was freed; the
    /// lease's own list and the cluster-wide counts are the caller's.
    fn take_slot(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.slots[h].remove(&key)?;
        if let Some(f) = &mut self.freed {
            f.push((slot.start, slot.end));
        }
        Some(slot)
    }

    /// Removes `lease`'s slots that start at or after `from`.
    fn remove_owned_from(&mut self, lease: RequestId, from: EmuTime) {
        let Some(mine) = self.owned.get_mut(&lease) else {
            return;
        };
        // Taken off the lease's list at once, then off their hosts.
        let doomed = mine.split_off(&(from, 0, 0));
        if mine.is_empty() {
            self.owned.remove(&lease);
        }
        // Counted by window: a lease's VMs mostly share theirs.
        let mut window: Option<((EmuTime, EmuTime), i64, i64)> = None;
        for (start, h, vm) in doomed {
            let Some(slot) = self.take_slot(usize::from(h), (start, lease, vm)) else {
                continue;
            };
            self.unblock(usize::from(h));
            let cores = i64::from(slot.cores);
            match &mut window {
                Some((at, used, vms)) if *at == (slot.start, slot.end) => {
                    *used += cores;
                    *vms += 1;
                }
                _ => {
                    if let Some(((start, end), used, vms)) = window {
                        self.count(start, end, -used, -vms);
                    }
                    window = Some(((slot.start, slot.end), cores, 1));
                }
            }
        }
        if let Some(((start, end), used, vms)) = window {
            self.count(start, end, -used, -vms);
        }
    }

    /// Counts `slots` slots over `[start, end)` using `cores` cores in all in the
    /// cluster-wide indexes: added, or removed when both are negative.
    fn count(&mut self, start: EmuTime, end: EmuTime, cores: i64, slots: i64) {
        let (deltas, ends) = (&mut self.deltas, &mut self.ends);
        for (t, d) in [(start, cores), (end, -cores)] {
            let e = deltas.entry(t).or_insert(0);
            *e += d;
            if *e == 0 {
                deltas.remove(&t);
            }
        }
        let n = ends.entry(end).or_insert(0);
        if slots > 0 {
            *n += slots as u32;
        } else {
            *n = n.saturating_sub(slots.unsigned_abs() as u32);
            if *n == 0 {
                ends.remove(&end);
            }
        }
    }

    /// Takes VM `i` of `lease` on `hosts[i]` for `[start, end)`.
    pub fn reserve(
        &mut self,
        lease: RequestId,
        hosts: &[u16],
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) {
        if end <= start {
            return;
        }
        for (i, &h) in hosts.iter().enumerate() {
            let slot = slot_of(lease, i as u32, shape, start, end);
            self.insert_uncounted(usize::from(h), slot);
        }
        // The lease's VMs share their window: counted together.
        let vms = hosts.len() as i64;
        self.count(start, end, i64::from(shape.cores) * vms, vms);
    }

    /// Frees everything `lease` holds or will hold.
    pub fn release(&mut self, lease: RequestId) {
        self.remove_owned_from(lease, EmuTime::ZERO);
    }

    /// Frees `lease`'s slots that start at or after `from` (a reservation not yet begun),
    /// keeping earlier ones (VMs still being vacated).
    pub fn release_from(&mut self, lease: RequestId, from: EmuTime) {
        self.remove_owned_from(lease, from);
    }

    /// Makes `lease`'s VM `vm` slot that began at `start` end at `end` instead — earlier
    /// when a VM is stopped, possibly later when vacating it (a suspension) outlasts the plan.
    pub fn end_vm(&mut self, lease: RequestId, vm: u32, start: EmuTime, end: EmuTime) {
        let host = self.owned.get(&lease).and_then(|mine| {
            mine.range((start, 0, 0)..=(start, u16::MAX, u32::MAX))
                .find(|&&(_, _, v)| v == vm)
                .map(|&(_, h, _)| usize::from(h))
        });
        let Some(h) = host else { return };
        let Some(old) = self.remove_key(h, (start, lease, vm)) else {
            return;
        };
        if end > old.start {
            self.insert(h, Slot { end, ..old });
        }
    }

    /// Forgets everything that ended by `now` (keeps the profile small).
    pub fn forget_before(&mut self, now: EmuTime) {
        self.forgotten = self.forgotten.max(now);
        if self.ends.keys().next().is_none_or(|&first| first > now) {
            // No slot has ended yet: nothing to look for on every host.
            return;
        }
        for h in 0..self.slots.len() {
            // Only slots that began before `now` can have ended by it.
            let ended: Vec<SlotKey> = self.slots[h]
                .starting_before(now)
                .iter()
                .filter(|s| s.end <= now)
                .map(key_of)
                .collect();
            for k in ended {
                self.remove_quietly(h, k);
            }
        }
    }

    /// How many VMs of `shape` host `h` can hold throughout `[start, end)`.
    pub fn room(&self, h: usize, shape: VmShape, start: EmuTime, end: EmuTime) -> u64 {
        self.room_and_block(h, shape, start, end).0
    }

    /// [`Availability::room`], and a span `[from, until)` meeting the window throughout
    /// which host `h` is too full for one more VM of `shape` — the one lasting longest
    /// (`None` if there is none). Any window meeting that span has no room on `h`: what lets
    /// a search over start times skip the host.
    fn room_and_block(
        &self,
        h: usize,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> (u64, Option<(EmuTime, EmuTime)>) {
        let (cores, mem) = self.capacity[h];
        if shape.cores > cores || u64::from(shape.mem_mb) > mem {
            return (0, None);
        }
        // Use above these leaves no room for one more VM.
        let full = (
            u64::from(cores - shape.cores),
            mem - u64::from(shape.mem_mb),
        );
        // Use only rises at a slot's start, and the window yields slots by start: sweep them
        // in order, dropping the slots that ended by each rise (ends before starts at the same
        // instant), and keep the peak. The slots alive at once are few (each takes a core), so
        // they stay in a small array; a host with more falls back to sorting all events.
        const INLINE: usize = 32;
        let mut alive = [(EmuTime::ZERO, 0u64, 0u64); INLINE];
        let mut n_alive = 0;
        let (mut c, mut m, mut peak) = (0u64, 0u64, (0u64, 0u64));
        let mut block: Option<(EmuTime, EmuTime)> = None;
        for s in self
            .window(h, start, end)
            .filter(|s| s.start < end && s.end > start)
        {
            let rise = s.start.max(start);
            let mut i = 0;
            while i < n_alive {
                if alive[i].0 <= rise {
                    c -= alive[i].1;
                    m -= alive[i].2;
                    n_alive -= 1;
                    alive[i] = alive[n_alive];
                } else {
                    i += 1;
                }
            }
            if n_alive == INLINE {
                return self.room_by_sorting(h, shape, start, end);
            }
            alive[n_alive] = (s.end, u64::from(s.cores), u64::from(s.mem_mb));
            n_alive += 1;
            c += u64::from(s.cores);
            m += u64::from(s.mem_mb);
            peak = (peak.0.max(c), peak.1.max(m));
            if c > full.0 || m > full.1 {
                // Too full from this rise until the first alive slot ends (slots starting
                // later only add).
                let until = alive[..n_alive].iter().map(|a| a.0).min().unwrap_or(rise);
                if block.is_none_or(|(_, u)| until > u) {
                    block = Some((rise, until));
                }
            }
        }
        (Self::vms_in(cores, mem, peak, shape), block)
    }

    /// [`Availability::room_and_block`] by sorting every start and end in the window (for a
    /// host with many slots alive at once).
    fn room_by_sorting(
        &self,
        h: usize,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> (u64, Option<(EmuTime, EmuTime)>) {
        let (cores, mem) = self.capacity[h];
        let full = (
            u64::from(cores - shape.cores),
            mem - u64::from(shape.mem_mb),
        );
        let mut events: Vec<(EmuTime, bool, u64, u64)> = Vec::new();
        for s in self
            .window(h, start, end)
            .filter(|s| s.start < end && s.end > start)
        {
            events.push((
                s.start.max(start),
                true,
                u64::from(s.cores),
                u64::from(s.mem_mb),
            ));
            if s.end < end {
                events.push((s.end, false, u64::from(s.cores), u64::from(s.mem_mb)));
            }
        }
        events.sort_unstable_by_key(|e| (e.0, e.1));
        let (mut c, mut m, mut peak) = (0u64, 0u64, (0u64, 0u64));
        let mut block = None;
        for (t, rise, dc, dm) in events {
            if rise {
                c += dc;
                m += dm;
                peak = (peak.0.max(c), peak.1.max(m));
                if c > full.0 || m > full.1 {
                    // The instant itself, at least.
                    block = Some((t, t + EmuDuration::from_micros(1)));
                }
            } else {
                c -= dc;
                m -= dm;
            }
        }
        (Self::vms_in(cores, mem, peak, shape), block)
    }

    /// How many VMs of `shape` fit beside a peak use of `peak` (cores, MB) on a host of
    /// `cores` and `mem`.
    fn vms_in(cores: u32, mem: u64, peak: (u64, u64), shape: VmShape) -> u64 {
        let free_c = u64::from(cores).saturating_sub(peak.0);
        let free_m = mem.saturating_sub(peak.1);
        (free_c / u64::from(shape.cores.max(1))).min(free_m / u64::from(shape.mem_mb.max(1)))
    }

    /// First-fit placement of `vms` VMs of `shape` for the whole of `[start, end)`. Hosts
    /// that earlier placements of the shape found too full somewhere in the window, and that
    /// gave nothing back since, are skipped (they have no room).
    pub fn place(
        &self,
        vms: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> Option<Vec<u16>> {
        let key = VmShape {
            cores: shape.cores,
            mem_mb: if self.enforce_memory { shape.mem_mb } else { 0 },
        };
        let mut blocks = self.blocks.borrow_mut();
        let i = match blocks.iter().position(|(s, _)| *s == key) {
            Some(i) => i,
            None => {
                blocks.push((key, Blocked::default()));
                blocks.len() - 1
            }
        };
        self.place_skipping(vms, shape, start, end, &mut blocks[i].1)
    }

    /// [`Availability::place`] with the spans found too full in `blocked` (for `shape`):
    /// hosts it knows to be too full somewhere in this window are skipped, and what the
    /// hosts looked at show is added to it.
    fn place_skipping(
        &self,
        vms: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
        blocked: &mut Blocked,
    ) -> Option<Vec<u16>> {
        let n = self.capacity.len();
        if blocked.until.len() != n {
            *blocked = Blocked {
                from: vec![0; n],
                until: vec![0; n],
            };
        }
        // A span blocks a window it overlaps, unless it may rest on a forgotten slot (it
        // ends by `forgotten`). Ending after both `start` and `forgotten` is ending after
        // the later of them.
        let (lo, hi) = (start.max(self.forgotten).as_micros(), end.as_micros());
        let mut hosts = Vec::with_capacity(vms as usize);
        for h0 in (0..n).step_by(64) {
            let h1 = (h0 + 64).min(n);
            let spans = blocked.from[h0..h1].iter().zip(&blocked.until[h0..h1]);
            // Bit k: host h0 + k is not known to be too full.
            let mut open = 0u64;
            for (k, (&from, &until)) in spans.enumerate() {
                let skip = (lo < until) & (from < hi);
                open |= u64::from(!skip) << k;
            }
            while open != 0 {
                let h = h0 + open.trailing_zeros() as usize;
                open &= open - 1;
                let (room, block) = self.room_and_block(h, shape, start, end);
                if let Some((from, until)) = block {
                    blocked.from[h] = from.as_micros();
                    blocked.until[h] = until.as_micros();
                }
                let take = room.min(u64::from(vms) - hosts.len() as u64);
                hosts.extend(std::iter::repeat_n(h as u16, take as usize));
                if hosts.len() == vms as usize {
                    return Some(hosts);
                }
            }
        }
        None
    }

    /// How many VMs of `shape` the empty cluster holds.
    pub fn capacity_for(&self, shape: VmShape) -> u64 {
        self.capacity
            .iter()
            .map(|&(c, m)| crate::model::vms_fitting(c, m, shape.cores, shape.mem_mb))
            .sum()
    }

    /// Whether the empty cluster could hold `vms` VMs of `shape`.
    pub fn could_ever_fit(&self, vms: u32, shape: VmShape) -> bool {
        self.capacity_for(shape) >= u64::from(vms)
    }

    /// The earliest start at or after `not_before` at which `vms` VMs of `shape` fit for
    /// `length`, with a first-fit placement. Availability only grows when a slot ends, so the
    /// candidates are `not_before` and the slot ends after it.
    pub fn earliest(
        &self,
        not_before: EmuTime,
        length: EmuDuration,
        vms: u32,
        shape: VmShape,
    ) -> Option<(EmuTime, Vec<u16>)> {
        if !self.could_ever_fit(vms, shape) {
            return None;
        }
        let mut candidates: Vec<EmuTime> = self
            .slots
            .iter()
            .flat_map(|host| host.values())
            .map(|s| s.end)
            .filter(|&e| e > not_before)
            .collect();
        candidates.push(not_before);
        candidates.sort_unstable();
        candidates.dedup();
        candidates.into_iter().find_map(|t| {
            self.place(vms, shape, t, t + length)
                .map(|hosts| (t, hosts))
        })
    }

    /// The instants at which a reservation could start, at or after `not_before`: it, and
    /// every slot end after it (availability only grows when a slot ends), ascending.
    pub fn start_candidates(&self, not_before: EmuTime) -> impl Iterator<Item = EmuTime> + '_ {
        use std::ops::Bound::{Excluded, Unbounded};
        std::iter::once(not_before).chain(
            self.ends
                .range((Excluded(not_before), Unbounded))
                .map(|(t, _)| *t),
        )
    }

    /// The slot ends in `[from, to)`, ascending.
    pub fn ends_in(&self, from: EmuTime, to: EmuTime) -> impl Iterator<Item = EmuTime> + '_ {
        self.ends.range(from..to.max(from)).map(|(t, _)| *t)
    }

    /// Total cores of the cluster.
    pub fn total_cores(&self) -> u64 {
        self.capacity.iter().map(|&(c, _)| u64::from(c)).sum()
    }

    /// The cluster-wide cores used over time, for quick rejection of start candidates.
    pub fn usage_steps(&self) -> UsageSteps {
        let mut used = 0i64;
        UsageSteps(
            self.deltas
                .iter()
                .map(|(t, d)| {
                    used += d;
                    (*t, used)
                })
                .collect(),
        )
    }

    /// Cores in use at instant `t`.
    pub fn cores_used_at(&self, t: EmuTime) -> u64 {
        let just_after = t + EmuDuration::from_micros(1);
        (0..self.slots.len())
            .flat_map(|h| self.window(h, t, just_after))
            .filter(|s| s.start <= t && s.end > t)
            .map(|s| u64::from(s.cores))
            .sum()
    }

    /// Every lease with a slot overlapping `[start, end)`, in id order.
    pub fn leases_overlapping(&self, start: EmuTime, end: EmuTime) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = (0..self.slots.len())
            .flat_map(|h| self.window(h, start, end))
            .filter(|s| s.start < end && s.end > start)
            .map(|s| s.lease)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Checks that no host is over its cores or memory at any instant (for tests).
    pub fn within_capacity(&self) -> bool {
        self.slots.iter().enumerate().all(|(h, slots)| {
            let (cores, mem) = self.capacity[h];
            slots.values().all(|p| {
                let (c, m) = slots
                    .values()
                    .filter(|s| s.start <= p.start && s.end > p.start)
                    .fold((0u64, 0u64), |(c, m), s| {
                        (c + u64::from(s.cores), m + u64::from(s.mem_mb))
                    });
                c <= u64::from(cores) && (!self.enforce_memory || m <= mem)
            })
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` identical hosts of `cores` cores and `mem` MB at 1000 MIPS.
    pub(crate) fn hosts(n: usize, cores: u32, mem: u64) -> Vec<HostSpec> {
        vec![
            HostSpec {
                cores,
                memory_mb: mem,
                mips: 1000
            };
            n
        ]
    }
    const VM: VmShape = VmShape {
        cores: 1,
        mem_mb: 512,
    };
    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    #[test]
    fn earliest_start_waits_for_the_slot_that_frees_room() {
        let mut a = Availability::new(&hosts(2, 2, 4096), true);
        a.reserve(RequestId(0), &[0, 0, 1], VM, t(0), t(100));
        // 2 VMs for 50 s: only one core is free until t=100.
        let (start, placed) = a
            .earliest(t(10), EmuDuration::from_secs(50), 2, VM)
            .unwrap();
        assert_eq!(start, t(100));
        assert_eq!(placed, vec![0, 0]);
        // 1 VM fits now on host 1.
        assert_eq!(
            a.earliest(t(10), EmuDuration::from_secs(50), 1, VM),
            Some((t(10), vec![1]))
        );
    }

    #[test]
    fn memory_limits_placement_per_host() {
        let a = Availability::new(&hosts(2, 8, 1024), true);
        let big = VmShape {
            cores: 1,
            mem_mb: 600,
        };
        assert_eq!(a.place(2, big, t(0), t(1)), Some(vec![0, 1]));
        assert_eq!(a.place(3, big, t(0), t(1)), None);
        assert!(!a.could_ever_fit(3, big));
        // Where memory is overcommitted, only cores count.
        let loose = Availability::new(&hosts(2, 8, 1024), false);
        assert_eq!(loose.place(3, big, t(0), t(1)), Some(vec![0, 0, 0]));
        assert_eq!(loose.capacities(), vec![(8, None), (8, None)]);
    }

    #[test]
    fn a_window_sees_the_peak_not_the_start() {
        let mut a = Availability::new(&hosts(1, 4, 8192), true);
        a.reserve(RequestId(0), &[0, 0, 0], VM, t(50), t(60));
        assert_eq!(a.room(0, VM, t(0), t(40)), 4);
        assert_eq!(a.room(0, VM, t(0), t(55)), 1);
        assert_eq!(a.room(0, VM, t(60), t(70)), 4);
    }

    /// A naive profile: every slot in one list, scanned in full.
    #[derive(Default)]
    struct Naive(Vec<(usize, RequestId, u32, EmuTime, EmuTime)>);

    impl Naive {
        fn room(&self, h: usize, cores: u64, start: EmuTime, end: EmuTime) -> u64 {
            // Peak use over the window: use only rises at a slot's start (or the window's).
            let mut points: Vec<EmuTime> = vec![start];
            points.extend(
                self.0
                    .iter()
                    .filter(|s| s.0 == h && s.3 > start && s.3 < end)
                    .map(|s| s.3),
            );
            let peak = points
                .iter()
                .map(|&t| {
                    self.0
                        .iter()
                        .filter(|s| s.0 == h && s.3 <= t && s.4 > t)
                        .count() as u64
                })
                .max()
                .unwrap_or(0);
            cores.saturating_sub(peak)
        }
    }

    /// The cluster-wide use after `deltas` (second, change in cores), summed per second.
    fn steps_of(deltas: &[(u64, i64)]) -> UsageSteps {
        let mut by_time: BTreeMap<u64, i64> = BTreeMap::new();
        for &(x, d) in deltas {
            *by_time.entry(x).or_default() += d;
        }
        let mut used = 0;
        UsageSteps(
            by_time
                .into_iter()
                .map(|(x, d)| {
                    used += d;
                    (t(x), used)
                })
                .collect(),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]

        /// A walk over the usage steps answers as the steps do, for starts in any order
        /// (ascending, as a search asks, with repeats and the odd step back).
        #[test]
        fn a_walk_over_the_steps_answers_as_the_steps(
            deltas in proptest::collection::vec((0u64..60, -3i64..4), 0..30),
            asks in proptest::collection::vec((0u64..70, 0u64..30, 0u64..5), 1..40),
            total in 1u64..9,
            ascending in proptest::bool::ANY,
        ) {
            let steps = steps_of(&deltas);
            let mut asks = asks;
            if ascending {
                asks.sort_unstable();
            }
            let (mut walk, mut skipping) = (steps.walk(), steps.walk());
            for (start, length, cores) in asks {
                let (start, end) = (EmuTime::from_secs(start), EmuTime::from_secs(start + length));
                let fits = steps.fits(start, end, cores, total);
                proptest::prop_assert_eq!(walk.fits(start, end, cores, total), fits);
                let next = skipping.fits_or_next(start, end, cores, total);
                proptest::prop_assert_eq!(next.is_ok(), fits);
                // No window as long starting before the instant it names fits (steps are at
                // whole seconds: half seconds between them stand for every instant).
                if let Err(next) = next {
                    proptest::prop_assert!(next > start);
                    let mut at = start;
                    while at < next && at < EmuTime::from_secs(80) {
                        let len = end.since(start);
                        proptest::prop_assert!(!steps.fits(at, at + len, cores, total), "{:?} fits", at);
                        at += EmuDuration::from_millis(500);
                    }
                }
            }
        }

        /// The two-ended vector holds what a plain vector given the same inserts and removals
        /// holds, wherever they fall (front side, back side, an empty one), through its spare
        /// room being made, used up and given back.
        #[test]
        fn a_two_ended_vector_keeps_the_order_of_a_plain_one(
            ops in proptest::collection::vec((proptest::bool::ANY, 0usize..1000, 0u32..1000), 0..400),
        ) {
            let (mut two, mut plain) = (TwoEnded::default(), Vec::new());
            for (insert, at, value) in ops {
                if insert || plain.is_empty() {
                    let i = at % (plain.len() + 1);
                    two.insert(i, value);
                    plain.insert(i, value);
                } else {
                    let i = at % plain.len();
                    proptest::prop_assert_eq!(two.remove(i), plain.remove(i));
                }
                proptest::prop_assert_eq!(two.as_slice(), plain.as_slice());
            }
        }

        /// The prepared maxima answer as a scan of each window's steps does.
        #[test]
        fn earlier_fits_answers_as_fits_excluding(
            deltas in proptest::collection::vec((0u64..60, -3i64..4), 0..30),
            own in (1u64..40, 1u64..25, 1u64..4),
            floor in 0u64..40,
            cores in 1u64..5,
            total in 1u64..9,
        ) {
            let steps = steps_of(&deltas);
            let own = (t(own.0), t(own.0 + own.1), own.2);
            let floor = t(floor);
            let len = own.1.since(own.0);
            let earlier = steps.earlier_fits(floor, cores, total, own);
            let mut at = floor;
            while at < own.0 {
                proptest::prop_assert_eq!(
                    earlier.fits_or_next(at).is_ok(),
                    steps.fits_excluding(at, at + len, cores, total, own),
                    "start {:?}", at
                );
                // No window starting before the next one it names fits (steps are at whole
                // seconds: half seconds between them stand for every instant).
                if let Err(next) = earlier.fits_or_next(at) {
                    proptest::prop_assert!(next > at);
                    let mut between = at + EmuDuration::from_millis(500);
                    while between < next.min(own.0) {
                        proptest::prop_assert!(
                            !steps.fits_excluding(between, between + len, cores, total, own),
                            "{:?} fits, but {:?} said nothing does before {:?}", between, at, next
                        );
                        between += EmuDuration::from_millis(500);
                    }
                }
                at += EmuDuration::from_secs(1);
            }
        }

        /// The cluster-wide use and the slot ends stay the sums over the slots held (each
        /// weighted by its cores), and each lease's list of its slots stays theirs, through
        /// leases of several VMs of several cores reserved,
        /// released from an instant on, cut, and forgotten.
        #[test]
        fn the_cluster_wide_indexes_follow_the_slots(
            ops in proptest::collection::vec((0u8..4, 0u32..5, 1u32..4, 0u64..200, 1u64..100, 1usize..4), 1..50),
        ) {
            let mut a = Availability::new(&hosts(3, 16, 1 << 30), true);
            for (op, lease, cores, at, len, vms) in ops {
                let (id, shape) = (RequestId(lease), VmShape { cores, mem_mb: 512 });
                let (s, e) = (t(at), t(at + len));
                match op {
                    0 | 1 => {
                        let on: Vec<u16> = (0..vms).map(|v| (v % 3) as u16).collect();
                        // A lease of this id at this start takes the place of its VMs there.
                        a.reserve(id, &on, shape, s, e);
                    }
                    2 => a.release_from(id, s),
                    _ => {
                        if let Some(x) = a.holds(EmuTime::ZERO, EmuTime::NEVER).into_iter().find(|x| x.lease == id) {
                            a.end_vm(id, x.vm, x.start, x.start + EmuDuration::from_secs(len / 2));
                        }
                        a.forget_before(t(at / 4));
                    }
                }
                let (mut deltas, mut ends) = (BTreeMap::new(), BTreeMap::new());
                for x in a.holds(EmuTime::ZERO, EmuTime::NEVER) {
                    *deltas.entry(x.start).or_insert(0i64) += i64::from(x.cores);
                    *deltas.entry(x.end).or_insert(0i64) -= i64::from(x.cores);
                    *ends.entry(x.end).or_insert(0u32) += 1;
                }
                deltas.retain(|_, d| *d != 0);
                proptest::prop_assert_eq!(&a.deltas, &deltas);
                proptest::prop_assert_eq!(&a.ends, &ends);
                // And each lease's list of where its slots are.
                let mut owned: BTreeMap<RequestId, BTreeSet<(EmuTime, u16, u32)>> = BTreeMap::new();
                for x in a.holds(EmuTime::ZERO, EmuTime::NEVER) {
                    owned.entry(x.lease).or_default().insert((x.start, x.host as u16, x.vm));
                }
                proptest::prop_assert_eq!(&a.owned, &owned);
            }
        }

        /// The indexed profile answers every room question as a full scan of its slots does,
        /// through reservations, cuts, releases and forgetting.
        #[test]
        fn indexed_room_matches_a_full_scan(
            ops in proptest::collection::vec((0u8..6, 0u32..6, 0u64..3, 0u64..400, 1u64..300), 1..60),
            probes in proptest::collection::vec((0u64..3, 0u64..700, 1u64..300), 1..20),
        ) {
            let mut a = Availability::new(&hosts(3, 4, 1 << 30), true);
            let mut naive = Naive::default();
            let mut now = EmuTime::ZERO;
            for (i, &(op, lease, host, at, len)) in ops.iter().enumerate() {
                let id = RequestId(lease);
                match op {
                    // Reserve one VM (index i keeps VMs distinct) where the host has room.
                    0 | 1 => {
                        let (s, e) = (t(at).max(now), t(at).max(now) + EmuDuration::from_secs(len));
                        if a.room(host as usize, VM, s, e) > 0 {
                            a.reserve_vm(host as u16, id, i as u32, VM, s, e);
                            naive.0.push((host as usize, id, i as u32, s, e));
                        }
                    }
                    // Cut or stretch a slot of this lease.
                    2 => {
                        if let Some(k) = naive.0.iter().position(|x| x.1 == id) {
                            let (h, _, vm, s, old_end) = naive.0[k];
                            let end = s + EmuDuration::from_secs(len / 2);
                            if end <= old_end || a.room(h, VM, old_end, end) > 0 {
                                a.end_vm(id, vm, s, end);
                                if end > s {
                                    naive.0[k].4 = end;
                                } else {
                                    naive.0.remove(k);
                                }
                            }
                        }
                    }
                    3 => {
                        // This lease, or one of those reserved two VMs at once.
                        let id = if host == 0 { RequestId(100 + (at % 60) as u32) } else { id };
                        let from = t(len);
                        a.release_from(id, from);
                        naive.0.retain(|x| !(x.1 == id && x.3 >= from));
                    }
                    // A lease of its own with VMs on two hosts at once (VM k on the k-th).
                    5 => {
                        let id = RequestId(100 + i as u32);
                        let (s, e) = (t(at).max(now), t(at).max(now) + EmuDuration::from_secs(len));
                        let pair = [host as u16, ((host + 1) % 3) as u16];
                        if pair.iter().all(|&h| a.room(usize::from(h), VM, s, e) > 0) {
                            a.reserve(id, &pair, VM, s, e);
                            for (vm, &h) in pair.iter().enumerate() {
                                naive.0.push((usize::from(h), id, vm as u32, s, e));
                            }
                        }
                    }
                    _ => {
                        now = now.max(t(at));
                        a.forget_before(now);
                        naive.0.retain(|x| x.4 > now);
                    }
                }
                proptest::prop_assert!(a.within_capacity());
                // The cluster-wide use and the slot ends, counted from the slots held.
                let (mut deltas, mut ends) = (BTreeMap::new(), BTreeMap::new());
                for &(_, _, _, s, e) in &naive.0 {
                    *deltas.entry(s).or_insert(0i64) += 1;
                    *deltas.entry(e).or_insert(0i64) -= 1;
                    *ends.entry(e).or_insert(0u32) += 1;
                }
                deltas.retain(|_, d| *d != 0);
                proptest::prop_assert_eq!(&a.deltas, &deltas, "after op {}", i);
                proptest::prop_assert_eq!(&a.ends, &ends, "after op {}", i);
                // Placements through the spans earlier placements found too full (kept
                // across every change, before and after what was forgotten) place as
                // fresh first-fit placements do.
                for &(_, at, len) in probes.iter().take(4) {
                    let (s, e) = (t(at), t(at) + EmuDuration::from_secs(len));
                    for shape in [VM, VmShape { cores: 3, mem_mb: 1024 }] {
                        for vms in [1, 3] {
                            proptest::prop_assert_eq!(
                                a.place(vms, shape, s, e),
                                a.place_skipping(vms, shape, s, e, &mut Blocked::default()),
                                "{} VMs of {:?} over {:?}..{:?} after op {}", vms, shape, s, e, i
                            );
                        }
                    }
                }
            }
            for &(h, at, len) in &probes {
                let (s, e) = (t(at), t(at) + EmuDuration::from_secs(len));
                proptest::prop_assert_eq!(a.room(h as usize, VM, s, e), naive.room(h as usize, 4, s, e));
            }
            // A search over rising starts with a shared `Blocked` places as fresh
            // first-fit placements do, for every shape.
            for shape in [VM, VmShape { cores: 2, mem_mb: 1024 }, VmShape { cores: 1, mem_mb: 1 << 29 }] {
                for vms in [1, 2, 5] {
                    let mut blocked = Blocked::default();
                    let mut starts: Vec<u64> = probes.iter().map(|p| p.1).collect();
                    starts.sort_unstable();
                    for (k, &at) in starts.iter().enumerate() {
                        // Lengths vary (as resuming plans' do) but windows only move later.
                        let len = EmuDuration::from_secs(probes[k].2);
                        let (s, e) = (t(at), t(at) + len);
                        proptest::prop_assert_eq!(
                            a.place_skipping(vms, shape, s, e, &mut blocked),
                            a.place(vms, shape, s, e),
                            "{} VMs of {:?} over {:?}..{:?}", vms, shape, s, e
                        );
                    }
                }
            }
            let mut held: Vec<_> = a.holds(EmuTime::ZERO, EmuTime::NEVER).iter().map(|x| (x.host, x.lease, x.vm, x.start, x.end)).collect();
            let mut expected = naive.0.clone();
            held.sort();
            expected.sort();
            proptest::prop_assert_eq!(held, expected);
        }
    }

    /// A host with more slots alive at once than the sweep keeps inline answers as the full
    /// scan does (the sorting fallback), on windows before, across and after the crowd.
    #[test]
    fn a_slot_taken_again_shorter_gives_its_capacity_back() {
        let mut a = Availability::new(&hosts(1, 1, 1 << 20), true);
        a.reserve_vm(0, RequestId(1), 0, VM, t(0), t(100));
        assert_eq!(a.place(1, VM, t(50), t(60)), None);
        // The same VM of the same lease from the same start, now ending earlier.
        a.reserve_vm(0, RequestId(1), 0, VM, t(0), t(10));
        assert_eq!(a.place(1, VM, t(50), t(60)), Some(vec![0]));
        assert_eq!(a.cores_used_at(t(5)), 1);
        assert_eq!(a.cores_used_at(t(50)), 0);
        assert_eq!(a.usage_steps().used_at(t(50)), 0);
        assert!(a.within_capacity());
    }

    #[test]
    fn a_crowded_host_is_measured_by_its_fallback() {
        let mut a = Availability::new(&hosts(1, 64, 1 << 30), true);
        let mut naive = Naive::default();
        for i in 0..50u32 {
            // Staggered: VM i from i s to 100 + 3i s, so up to 50 are alive at once.
            let (s, e) = (t(u64::from(i)), t(100 + 3 * u64::from(i)));
            a.reserve_vm(0, RequestId(i), 0, VM, s, e);
            naive.0.push((0, RequestId(i), 0, s, e));
        }
        for (from, to) in [
            (0, 10),
            (0, 400),
            (20, 60),
            (49, 50),
            (120, 200),
            (240, 300),
        ] {
            assert_eq!(
                a.room(0, VM, t(from), t(to)),
                naive.room(0, 64, t(from), t(to)),
                "window {from}..{to}"
            );
        }
        assert_eq!(a.room(0, VM, t(49), t(50)), 14, "50 alive of 64 cores");
    }

    #[test]
    fn cutting_and_releasing_give_room_back() {
        let mut a = Availability::new(&hosts(1, 2, 8192), true);
        a.reserve(RequestId(1), &[0, 0], VM, t(0), t(100));
        a.end_vm(RequestId(1), 0, t(0), t(10));
        assert_eq!(a.room(0, VM, t(20), t(30)), 1);
        a.release(RequestId(1));
        assert_eq!(a.room(0, VM, t(0), t(30)), 2);
        assert!(a.within_capacity());
    }
}
