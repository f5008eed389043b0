//! Lawson and Smirni's partitions in the scheduler: what a lease would take from each
//! partition, charging and uncharging reservations, and resizing the local partition.

use super::*;

impl Core {
    /// With partitions, the cores lease `l` would take from each over `[start, end)` by
    /// Lawson and Smirni's rule ([`Partitions::take`]), or `None` if the rule does not let
    /// it run then. Without partitions, or
    /// for a local request decided on arrival (outside the rule), no limit.
    pub(super) fn partition_take(
        &self,
        l: &Lease,
        start: EmuTime,
        end: EmuTime,
    ) -> Option<[u64; 2]> {
        if !self.ruled(l) {
            return Some([0, 0]);
        }
        self.parts
            .take(self.partition(l), l.req.cores(), (start, end))
    }

    /// Whether Lawson and Smirni's rule decides where lease `l` may start: with partitions,
    /// for every lease that waits in the queue. A local request decided on arrival
    /// (`lrms.locals = "reserved"`) is placed on the hosts alone, preempting Grid leases if
    /// it must — the preemption decision sees the hosts, so must its placement — and is
    /// charged all the same, its own partition's idle cores first.
    pub(super) fn ruled(&self, l: &Lease) -> bool {
        self.cfg.partitions && l.queued
    }

    /// Records lease `id`'s charge for a reservation over `[start, end)` (with partitions),
    /// replacing the one it had.
    pub(super) fn charge(&mut self, id: RequestId, start: EmuTime, end: EmuTime) {
        if !self.cfg.partitions {
            return;
        }
        self.uncharge(id);
        let l = &self.leases[&id];
        let taken = (self.parts).take_anyway(self.partition(l), l.req.cores(), (start, end));
        let c = Charge { start, end, taken };
        self.parts.add(&c);
        if let Some(l) = self.leases.get_mut(&id) {
            l.charge = Some(c);
        }
    }

    /// Cuts lease `id`'s charge to end at `end` (its VMs off their hosts by then: a
    /// suspension or a cancellation), as its slots are cut.
    pub(super) fn charge_until(&mut self, id: RequestId, end: EmuTime) {
        let Some(mut c) = self.leases.get(&id).and_then(|l| l.charge) else {
            return;
        };
        self.uncharge(id);
        c.end = c.end.min(end).max(c.start);
        self.parts.add(&c);
        if let Some(l) = self.leases.get_mut(&id) {
            l.charge = Some(c);
        }
    }

    /// Takes lease `id`'s charge out of its partitions.
    pub(super) fn uncharge(&mut self, id: RequestId) {
        if let Some(c) = self.leases.get_mut(&id).and_then(|l| l.charge.take()) {
            self.parts.remove(&c);
        }
    }

    /// Sizes the local partition at `local` cores, the Grid's at the rest (paper 004 §4.2:
    /// at each publication, by the forecast or the mean local load; at a reallocation, by
    /// the load seen). Charges made before stay.
    pub fn resize_partitions(&mut self, local: u64) {
        self.parts.resize(local);
    }

    /// Each partition's size in cores: (Grid, local).
    pub fn partition_sizes(&self) -> (u64, u64) {
        let [g, l] = self.parts.limits();
        (g, l)
    }
}

impl Core {
    /// The EASY partition a lease waits in: with partitions, local leases have their own
    /// pivots, as each of Lawson and Smirni's partitions does (paper 004 §4.2); without, one.
    pub(super) fn partition(&self, l: &Lease) -> usize {
        usize::from(self.cfg.partitions && l.is_local())
    }

    /// Waiting leases holding reservations, per partition (kept by the queue).
    pub(super) fn reserved_waiting(&self) -> [usize; 2] {
        self.queue.reserved()
    }
}
