//! The waiting queue: committing and dropping reservations, waking at instants, the FCFS floor,
//! the backfill depth, and scheduling one waiting lease in queue order.

use super::*;

impl Core {
    pub(super) fn commit(
        &mut self,
        id: RequestId,
        start: EmuTime,
        plan: Plan,
        hosts: Vec<u16>,
        out: &mut Vec<Action>,
    ) {
        let shape = self.leases[&id].shape();
        let pass = self.passes;
        if let Some(l) = self.leases.get_mut(&id) {
            l.examined = pass;
        }
        self.avail.reserve(id, &hosts, shape, start, plan.end);
        self.charge(id, start, plan.end);
        for (t, d) in &plan.bookings {
            self.storage.book(id, *t, *d);
        }
        let plans = plan
            .steps
            .into_iter()
            .enumerate()
            .map(|(vm, (initial, steps))| VmPlan {
                vm: vm as u32,
                host: hosts[vm],
                initial,
                steps,
            })
            .collect();
        let l = self.leases.get_mut(&id).expect("committing a known lease");
        if let Some(old) = &l.res {
            self.starts.remove(&(old.start, id));
        }
        self.starts.insert((start, id));
        l.res = Some(Reservation {
            start,
            end: plan.end,
            run_from: plan.run_from,
            hosts,
            plans,
        });
        self.sync(id);
        self.wake(start, out);
    }

    /// Drops a lease's reservation: its slots and its storage bookings from the reservation's
    /// start (bookings before it belong to an earlier episode still being vacated).
    pub(super) fn drop_reservation(&mut self, id: RequestId) {
        self.uncharge(id);
        if let Some(l) = self.leases.get_mut(&id) {
            if let Some(res) = l.res.take() {
                self.starts.remove(&(res.start, id));
                self.avail.release_from(id, res.start);
                self.storage.cancel(id, res.start);
            }
            self.sync(id);
        }
    }

    pub(super) fn wake(&mut self, t: EmuTime, out: &mut Vec<Action>) {
        if self.wakes.insert(t) {
            out.push(Action::Wake(t));
        }
    }

    // ---- external leases ----

    /// The start FCFS allows: not before any earlier waiting lease's reservation. Read
    /// from the queue's counts when no later lease holds a reservation (a lease just
    /// submitted), else found by a walk.
    pub(super) fn fcfs_floor(&self, order: u64) -> EmuTime {
        let walk = || {
            (self.leases.values())
                .filter(|l| l.order < order && l.phase == Phase::Waiting && l.queued)
                .filter_map(|l| l.res.as_ref().map(|r| r.start))
                .max()
                .unwrap_or(EmuTime::ZERO)
        };
        match self.queue.latest_start_before(order) {
            Some(t) => {
                debug_assert_eq!(t, walk(), "the queue's latest start before #{order}");
                t
            }
            None => walk(),
        }
    }

    /// Checks the queue against a walk over every lease (debug builds: once a pass).
    pub(super) fn check_queue(&self) {
        if cfg!(debug_assertions) {
            let mut n = [0; 2];
            let mut waiting: Vec<(Rank, RequestId)> = Vec::new();
            for (id, l) in &self.leases {
                if l.phase == Phase::Waiting && l.queued {
                    n[self.partition(l)] += usize::from(l.res.is_some());
                    waiting.push((self.rank(*id, l), *id));
                }
            }
            waiting.sort_unstable();
            let listed: Vec<RequestId> = self.queue.in_order().map(|(id, _)| id).collect();
            debug_assert_eq!(n, self.queue.reserved(), "reservations the queue counts");
            debug_assert!(
                waiting.iter().map(|w| w.1).eq(listed.iter().copied()),
                "the queue lists the waiting leases in order"
            );
        }
    }

    /// Whether lease `id` is further back in the queue than a pass looks
    /// ([`Config::backfill_depth`]).
    pub(super) fn beyond_depth(&self, id: RequestId) -> bool {
        let Some(depth) = self.cfg.backfill_depth else {
            return false;
        };
        let Some(listed) = self.leases.get(&id).and_then(|l| l.listed) else {
            return false;
        };
        self.queue.at_least_before(&listed.rank, depth)
    }

    /// Schedules one waiting lease of the queue by the backfilling policy — unless it is
    /// beyond the backfill depth, where it waits unscheduled for a later pass. Returns false
    /// only for a deadline lease that cannot meet its deadline.
    pub(super) fn schedule_waiting(
        &mut self,
        id: RequestId,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.beyond_depth(id) {
            return true;
        }
        // Only EASY counts the reservations held (a walk over every lease); the others
        // reserve for every lease.
        let reserved = match self.cfg.backfilling {
            Backfilling::Easy { .. } => self.reserved_waiting()[self.partition(&self.leases[&id])],
            Backfilling::Fcfs | Backfilling::Conservative => 0,
        };
        self.schedule_in_queue(id, now, out, (reserved, None))
    }

    /// [`Core::schedule_waiting`] given the number of waiting leases of its partition holding
    /// reservations
    /// and, if known, the cores free cluster-wide now (a lease EASY would only start now
    /// cannot if it needs more: a quick test before searching the hosts).
    pub(super) fn schedule_in_queue(
        &mut self,
        id: RequestId,
        now: EmuTime,
        out: &mut Vec<Action>,
        (reserved, free_now): (usize, Option<u64>),
    ) -> bool {
        let l = &self.leases[&id];
        let not_before = now.max(l.not_before);
        let deadline = l.deadline();
        let must_reserve = deadline.is_some()
            || match self.cfg.backfilling {
                Backfilling::Fcfs | Backfilling::Conservative => true,
                Backfilling::Easy { pivots } => reserved < pivots as usize,
            };
        let slot = if must_reserve {
            let floor = match self.cfg.backfilling {
                Backfilling::Fcfs => self.fcfs_floor(l.order).max(not_before),
                _ => not_before,
            };
            self.find_slot(id, floor)
        } else if not_before == now && free_now.is_some_and(|f| l.req.cores() > f) {
            None
        } else {
            self.fits_at(id, not_before)
                .map(|(p, h)| (not_before, p, h))
        };
        match slot {
            Some((start, plan, hosts)) => {
                if deadline.is_some_and(|d| plan.end > d) && !self.leases[&id].started_once {
                    return false;
                }
                self.commit(id, start, plan, hosts, out);
                true
            }
            None => !must_reserve || deadline.is_none(),
        }
    }
}
