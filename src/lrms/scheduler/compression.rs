//! Placing the waiting queue again after capacity frees: conservative backfilling's schedule
//! compression, each reservation moved earlier only where it keeps its order.

use super::*;

impl Core {
    /// Places every waiting external lease that has no reservation (preempted, displaced,
    /// not a pivot, or beyond the backfill depth at an earlier pass): deadline leases first
    /// (earliest deadline), then submission order. With a backfill depth, only the first
    /// that many waiting leases are looked at.
    /// Without compression existing reservations are kept, so this costs only the affected
    /// leases. With it, every future reservation is taken out and placed again in the same
    /// order (GridSim's conservative backfilling on a cancellation): a lease's old slot is
    /// free when it is placed again, so none starts later than it was promised.
    ///
    /// Compression skips, exactly, the leases that cannot move: a lease booting fresh and
    /// looked at in the pass before (not beyond the backfill depth then) was placed (or last
    /// compressed) at its earliest start, its plan's length does not depend
    /// on when it starts, and capacity only ever grows where slots were removed or cut — so
    /// an earlier start it fits now has a window meeting capacity freed since, and its
    /// earliest such start is "now" or a slot end. Only those candidates are tested, on the
    /// cluster-wide cores (a necessary condition); a lease passing is placed again in full.
    /// Leases resuming from images (their plan depends on the storage) and FCFS queues (the
    /// floor depends on other leases) are always placed again.
    pub(super) fn place_waiting(&mut self, now: EmuTime, out: &mut Vec<Action>) {
        self.check_queue();
        self.passes += 1;
        let pass = self.passes;
        let compress = self.cfg.compress;
        // The first `backfill_depth` waiting leases, in queue order: those without a
        // reservation and, with compression, those whose reservation is still to come.
        let depth = self.cfg.backfill_depth.unwrap_or(usize::MAX);
        let waiting: Vec<RequestId> = (self.queue.in_order().take(depth))
            .filter(|(_, start)| start.is_none_or(|s| compress && s > now))
            .map(|(id, _)| id)
            .collect();
        let mut freed = Freed::new(self.avail.take_freed(now));
        let mut moved = Vec::new();
        // Cluster-wide use, rebuilt only after a change that moves it.
        let mut steps: Option<UsageSteps> = None;
        let total = self.avail.total_cores();
        // Waiting leases holding reservations, kept up to date through the pass; the cores
        // free now, recomputed after a placement.
        let mut reserved = self.reserved_waiting();
        let mut free_now: Option<u64> = None;
        let (queue, mut reexamined) = (waiting.len(), 0usize);
        for id in waiting {
            if self.leases[&id].res.is_some() {
                reexamined += 1;
                let cluster = (&mut freed, &mut steps, total);
                if let Some(interval) = self.compress_one(id, now, cluster, out) {
                    moved.push(interval);
                    free_now = None;
                }
                if let Some(l) = self.leases.get_mut(&id) {
                    l.examined = pass;
                }
                continue;
            }
            steps = None;
            let free = *free_now
                .get_or_insert_with(|| total.saturating_sub(self.avail.usage_steps().used_at(now)));
            let k = self.partition(&self.leases[&id]);
            let placed = self.schedule_in_queue(id, now, out, (reserved[k], Some(free)));
            if self.leases[&id].res.is_some() {
                reserved[k] += 1;
                free_now = None;
            }
            // A deadline lease that can no longer meet its deadline still gets the earliest
            // slot; its lateness shows in the outputs.
            if !placed {
                let floor = now.max(self.leases[&id].not_before);
                if let Some((start, plan, hosts)) = self.find_slot(id, floor) {
                    self.commit(id, start, plan, hosts, out);
                    reserved[k] += 1;
                    free_now = None;
                }
            }
        }
        // The policy's own work, for measuring how it grows with load (`RUST_LOG=
        // igemu::lrms::work=trace`; `scripts/scenario-cpu --load` sums it).
        tracing::trace!(
            target: "igemu::lrms::work",
            queue,
            reexamined,
            moved = moved.len(),
            "placement pass"
        );
        if compress {
            // This pass's own take-outs are accounted for; the slots leases left may still
            // serve leases earlier in the queue, at the next pass.
            self.avail.take_freed(now);
            for (start, end) in moved {
                self.avail.note_freed(start, end);
            }
        }
    }

    /// Compression of one reserved lease: placed again if it might start earlier (its old
    /// slot given up first, so it is never promised a later start). Returns the interval it
    /// left if it moved; records it in `freed` and forgets the usage `steps` then.
    pub(super) fn compress_one(
        &mut self,
        id: RequestId,
        now: EmuTime,
        (freed, steps, total): (&mut Freed, &mut Option<UsageSteps>, u64),
        out: &mut Vec<Action>,
    ) -> Option<(EmuTime, EmuTime)> {
        let l = &self.leases[&id];
        let res = l.res.as_ref()?;
        let (promised, end) = (res.start, res.end);
        let floor = now.max(l.not_before);
        // With sized partitions a start may open without capacity freed (a partition may
        // have been resized): every lease is placed again.
        let skippable = l.images_ready.is_none()
            && self.cfg.backfilling != Backfilling::Fcfs
            && !self.cfg.partitions
            && l.examined + 1 >= self.passes;
        // Only starts whose windows meet capacity freed since are worth trying: every other
        // one did not fit before and still does not.
        let mut only = None;
        if skippable {
            let starts = self.earlier_starts(l, (promised, end), floor, freed, steps, total);
            if starts.is_empty() {
                debug_assert!(
                    self.stays_put(id, promised, now),
                    "compression skipped lease #{} that could move",
                    id.0
                );
                return None;
            }
            only = Some(starts);
        }
        let hosts = res.hosts.clone();
        self.drop_reservation(id);
        self.reserve_again(id, (promised, hosts.clone()), now, only, out);
        // Placed again at the same start on other hosts (or, resuming, ending at another
        // time), it still frees what it held.
        let same = self.leases[&id]
            .res
            .as_ref()
            .is_some_and(|r| r.start == promised && r.end == end && r.hosts == hosts);
        if same {
            return None;
        }
        freed.add(promised, end);
        *steps = None;
        Some((promised, end))
    }

    /// The starts at which fresh lease `l`, reserved at `own`, might start earlier than
    /// `own.0` now, ascending: the candidate starts in `[floor, own.0)` whose windows meet
    /// freed capacity and fit on the cluster-wide cores, its own reservation set aside.
    pub(super) fn earlier_starts(
        &self,
        l: &Lease,
        own: (EmuTime, EmuTime),
        floor: EmuTime,
        freed: &Freed,
        steps: &mut Option<UsageSteps>,
        total: u64,
    ) -> Vec<EmuTime> {
        let (promised, end) = own;
        let len = end.since(promised);
        let cores = l.req.cores();
        if floor >= promised {
            return Vec::new();
        }
        // The windows meeting each freed interval, before the promised start; prepared only
        // if there is one.
        let ranges: Vec<(EmuTime, EmuTime)> = freed
            .0
            .iter()
            .map(|&(fs, fe)| (floor.max(fs.earlier_by(len)), promised.min(fe)))
            .filter(|(from, to)| from < to)
            .collect();
        if ranges.is_empty() {
            return Vec::new();
        }
        let steps = steps.get_or_insert_with(|| self.avail.usage_steps());
        let earlier = steps.earlier_fits(floor, cores, total, (promised, end, cores));
        let fits = |t: EmuTime| {
            let fits = earlier.fits_or_next(t);
            debug_assert_eq!(
                fits.is_ok(),
                steps.fits_excluding(t, t + len, cores, total, (promised, end, cores))
            );
            fits
        };
        let mut starts = Vec::new();
        for (from, to) in ranges {
            if from <= floor && fits(floor).is_ok() {
                starts.push(floor);
            }
            // Slot ends in the range, skipping those a step over the limit rules out.
            let mut skip_to = EmuTime::ZERO;
            for t in self
                .avail
                .ends_in(from.max(floor + EmuDuration::from_micros(1)), to)
            {
                if t < skip_to {
                    continue;
                }
                match fits(t) {
                    Ok(()) => starts.push(t),
                    Err(next) => skip_to = next,
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        starts
    }

    /// Whether placing `id` again now would leave it at `promised` (checks the skip rule of
    /// [`Core::place_waiting`] on a copy; debug builds only).
    pub(super) fn stays_put(&self, id: RequestId, promised: EmuTime, now: EmuTime) -> bool {
        let mut copy = self.clone();
        let hosts = copy.leases[&id]
            .res
            .as_ref()
            .map(|r| r.hosts.clone())
            .unwrap_or_default();
        copy.drop_reservation(id);
        copy.reserve_again(id, (promised, hosts), now, None, &mut Vec::new());
        copy.leases[&id].res.as_ref().map(|r| r.start) == Some(promised)
    }

    /// Reserves again a lease whose reservation at `promised` on `hosts` was just taken
    /// out: at the earliest start the backfilling allows if that is earlier (and still meets
    /// its deadline), else back in its old slot, which nothing has taken since.
    pub(super) fn reserve_again(
        &mut self,
        id: RequestId,
        (promised, hosts): (EmuTime, Vec<u16>),
        now: EmuTime,
        only: Option<Vec<EmuTime>>,
        out: &mut Vec<Action>,
    ) {
        let l = &self.leases[&id];
        let floor = match self.cfg.backfilling {
            Backfilling::Fcfs => self.fcfs_floor(l.order).max(now.max(l.not_before)),
            _ => now.max(l.not_before),
        };
        let deadline = l.deadline();
        let found = match only {
            Some(starts) => {
                // They passed the cluster-wide test in `earlier_starts`, over the window a
                // fresh lease's reservation takes (boot and remaining work, as before).
                let found = self.first_placement(l, starts.into_iter(), None);
                debug_assert_eq!(
                    found.as_ref().map(|f| f.0),
                    self.find_slot_before(l, floor, promised).map(|f| f.0),
                    "lease #{}: the starts meeting freed capacity missed its earliest",
                    id.0
                );
                found
            }
            None => self.find_slot_before(l, floor, promised),
        };
        if let Some((start, plan, hosts)) =
            found.filter(|(_, plan, _)| deadline.is_none_or(|d| plan.end <= d))
        {
            self.commit(id, start, plan, hosts, out);
            return;
        }
        // Its old slot: the same hosts from the same start, for a plan no longer than before
        // (its storage bookings are free again too).
        let plan = self.plan(l, promised);
        let shape = l.shape();
        let mut per_host: BTreeMap<u16, u64> = BTreeMap::new();
        for &h in &hosts {
            *per_host.entry(h).or_default() += 1;
        }
        let old_fits = per_host
            .iter()
            .all(|(&h, &n)| self.avail.room(usize::from(h), shape, promised, plan.end) >= n);
        debug_assert!(old_fits, "a lease's own old slot is free");
        if old_fits {
            self.commit(id, promised, plan, hosts, out);
        } else if let Some((plan, hosts)) = self.fits_at(id, promised) {
            self.commit(id, promised, plan, hosts, out);
        } else {
            self.schedule_waiting(id, now, out);
        }
    }
}
