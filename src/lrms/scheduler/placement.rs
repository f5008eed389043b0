//! Finding a lease's slot: the plan of its VMs from a start (boot, run, the operations it
//! owes), and the earliest start that fits on the hosts, before a bound or among candidate
//! starts.

use super::*;

impl Core {
    /// The timed plan for running `l` from `start`: boot a fresh lease, or resume its images
    /// one VM at a time on the shared storage and unpause them one after another.
    pub(super) fn plan(&self, l: &Lease, start: EmuTime) -> Plan {
        let v = l.req.vms as usize;
        let remaining = l.remaining();
        match &l.images_ready {
            None => {
                let run_from = start + self.cfg.boot;
                let end = run_from + remaining;
                let steps: Steps = [
                    (start, VmEvent::Deploy),
                    (run_from, VmEvent::Booted),
                    (end, VmEvent::Completed),
                ]
                .into();
                Plan {
                    end,
                    run_from,
                    steps: vec![(VmState::Pending, steps); v],
                    bookings: Vec::new(),
                }
            }
            Some(images) => {
                let m = &self.cfg.overhead;
                let tr = m.resume_vm(l.req.mem_mb);
                let mut bookings = Vec::with_capacity(v);
                let mut cursor = start;
                let mut per_vm: Vec<(VmState, Vec<(EmuTime, VmEvent)>)> = Vec::with_capacity(v);
                for &ready in images.iter().take(v) {
                    // Each VM's resumption starts after the previous one's ends, so the
                    // plan's own bookings never overlap what is asked of the storage.
                    let not_before = cursor.max(ready).max(start);
                    let r = self.storage.earliest(not_before, tr);
                    bookings.push((r, tr));
                    cursor = r + tr;
                    let mut steps = Vec::new();
                    let initial = if l.migrated_in {
                        steps.push((ready.max(start), VmEvent::Migrated));
                        VmState::Migrating
                    } else {
                        VmState::Suspended
                    };
                    steps.push((r, VmEvent::Resume));
                    steps.push((r + tr, VmEvent::Resumed));
                    per_vm.push((initial, steps));
                }
                let resumed = cursor;
                for (j, (_, steps)) in per_vm.iter_mut().enumerate() {
                    steps.push((resumed + m.pause * (j as u64 + 1), VmEvent::Unpause));
                }
                let run_from = resumed + m.pause * v as u64;
                let end = run_from + remaining;
                for (_, steps) in per_vm.iter_mut() {
                    steps.push((end, VmEvent::Completed));
                }
                Plan {
                    end,
                    run_from,
                    steps: (per_vm.into_iter())
                        .map(|(initial, steps)| (initial, steps.into()))
                        .collect(),
                    bookings,
                }
            }
        }
    }

    /// The earliest reservation for `id` at or after `not_before` (hosts held from the start
    /// of the plan to its end).
    pub(super) fn find_slot(
        &self,
        id: RequestId,
        not_before: EmuTime,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        self.find_slot_for(&self.leases[&id], not_before)
    }

    pub(super) fn find_slot_for(
        &self,
        l: &Lease,
        not_before: EmuTime,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        self.find_slot_before(l, not_before, EmuTime::NEVER)
    }

    /// [`Core::find_slot_for`] among the starts before `before` only.
    pub(super) fn find_slot_before(
        &self,
        l: &Lease,
        not_before: EmuTime,
        before: EmuTime,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        let candidates = self.avail.start_candidates(not_before);
        self.find_slot_among(l, candidates.take_while(|&t| t < before))
    }

    /// The first of `candidates` (ascending starts) at which `l` can be reserved.
    pub(super) fn find_slot_among(
        &self,
        l: &Lease,
        candidates: impl Iterator<Item = EmuTime>,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        let steps = self.avail.usage_steps();
        self.first_placement(l, candidates, Some(&steps))
    }

    /// [`Core::find_slot_among`], testing each start on the cluster-wide use `quick` first
    /// (`None`: the caller has, for the window the placement takes).
    pub(super) fn first_placement(
        &self,
        l: &Lease,
        candidates: impl Iterator<Item = EmuTime>,
        quick: Option<&UsageSteps>,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        if !self.avail.could_ever_fit(l.req.vms, l.shape()) {
            return None;
        }
        let (cores, total) = (l.req.cores(), self.avail.total_cores());
        let mut quick = quick.map(UsageSteps::walk);
        // With partitions, their use cumulated once for every start tried.
        let parts = self.ruled(l).then(|| self.parts.profile());
        let k = self.partition(l);
        // Starts before this one fail the quick test (a step over the limit that every
        // window as long from them meets), so they are passed over untried.
        let mut untried_before = EmuTime::ZERO;
        // Hosts found too full at some instant (by this search or an earlier one) are
        // skipped for the starts whose windows hold it.
        for t in candidates {
            if t < untried_before {
                continue;
            }
            // The plan's length only depends on t through storage waits, which only make it
            // longer: the plain length is a valid quick test.
            if let Some(steps) = quick.as_mut() {
                if let Err(next) = steps.fits_or_next(t, t + l.remaining(), cores, total) {
                    untried_before = next;
                    continue;
                }
            }
            // A fresh lease's plan is only built for the start it gets.
            let end = match l.images_ready {
                None => t + self.cfg.boot + l.remaining(),
                Some(_) => self.plan(l, t).end,
            };
            if quick
                .as_mut()
                .is_some_and(|steps| !steps.fits(t, end, cores, total))
                || parts
                    .as_ref()
                    .is_some_and(|p| p.take(k, cores, (t, end)).is_none())
            {
                continue;
            }
            let placed = self.avail.place(l.req.vms, l.shape(), t, end);
            if let Some(hosts) = placed {
                return Some((t, self.plan(l, t), hosts));
            }
        }
        None
    }

    /// Whether `id` can start exactly at `t`.
    pub(super) fn fits_at(&self, id: RequestId, t: EmuTime) -> Option<(Plan, Vec<u16>)> {
        let l = &self.leases[&id];
        let plan = self.plan(l, t);
        self.partition_take(l, t, plan.end)?;
        self.avail
            .place(l.req.vms, l.shape(), t, plan.end)
            .map(|hosts| (plan, hosts))
    }
}
