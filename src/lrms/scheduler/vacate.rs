//! Vacating leases for a local request: how much work a lease has done, how long its operation
//! takes, the plans of cancellations, suspensions and migrations on shared storage, and
//! carrying them out.

use super::*;

impl Core {
    /// Work a lease has done by `t` (its current episode counted up to `t`).
    pub(super) fn done_by(&self, l: &Lease, t: EmuTime) -> EmuDuration {
        match (&l.phase, &l.res) {
            (Phase::Running, Some(r)) => l.work_done + t.since(r.run_from),
            _ => l.work_done,
        }
    }

    /// How long vacating a running lease takes on idle storage.
    pub(super) fn vacate_time(&self, l: &Lease, op: Operation) -> EmuDuration {
        let m = &self.cfg.overhead;
        match op {
            Operation::Stop => m.shutdown * u64::from(l.req.vms),
            Operation::Suspend | Operation::Migrate => m.suspend_lease(l.req.vms, l.req.mem_mb),
            Operation::Displace | Operation::Wait => EmuDuration::ZERO,
        }
    }
}

impl Core {
    /// Carries out a vacating plan: reservations dropped, VMs stopped or paused and
    /// suspended at their planned times, the suspended leases queued (or offered elsewhere),
    /// each lease charged its operation's cost.
    pub(super) fn apply_vacating(
        &mut self,
        plans: &[Vacating],
        now: EmuTime,
        out: &mut Vec<Action>,
    ) {
        let mut plans = plans.to_vec();
        // Reservations are moved first, so the storage is as the plan assumed; then the rest
        // in arrival order, the order the suspensions were planned in.
        plans.sort_by_key(|p| (p.op != Operation::Displace, self.leases[&p.id].req.arrival));
        for p in plans {
            let l = &self.leases[&p.id];
            let (vms, mem, lease_type) = (l.req.vms, l.req.mem_mb, l.req.lease_type);
            let cost = self.cfg.overhead.operation_cost(p.op, vms, mem);
            let Some(res) = l.res.clone() else { continue };
            match p.op {
                Operation::Wait => continue,
                Operation::Displace => self.displace_now(p.id, &res, now, out),
                Operation::Stop => self.stop_for(&p, &res, out),
                Operation::Suspend | Operation::Migrate => self.suspend_for(&p, &res, now, out),
            }
            out.push(Action::Charge {
                lease: p.id,
                overhead: cost,
                preempted: true,
                vms: if p.op.preempts_vms() { vms } else { 0 },
                displaced: if p.op == Operation::Displace { vms } else { 0 },
                lease_type,
            });
        }
    }

    /// Moves a reservation out of the way; VMs told to start this very instant are recalled.
    pub(super) fn displace_now(
        &mut self,
        id: RequestId,
        res: &Reservation,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) {
        if self.leases[&id].phase == Phase::Running {
            // Recall VMs that were told to start this instant: they stop before doing
            // anything, and the lease waits again.
            let plans = res
                .hosts
                .iter()
                .enumerate()
                .map(|(vm, &host)| VmPlan {
                    vm: vm as u32,
                    host,
                    initial: VmState::Pending,
                    steps: [(now, VmEvent::Stop)].into(),
                })
                .collect();
            // Every step of theirs is called off, even one due this instant (a resumption
            // would otherwise begin and could not be stopped).
            out.push(Action::CommandVms {
                lease: id,
                after: None,
                plans,
            });
            self.waits_again(id);
        }
        self.drop_reservation(id);
    }

    /// Stops a cancellable lease's VMs at their planned times.
    pub(super) fn stop_for(&mut self, p: &Vacating, res: &Reservation, out: &mut Vec<Action>) {
        let id = p.id;
        let l = &self.leases[&id];
        let done = self.done_by(l, p.from);
        let worked = done.saturating_sub(l.work_done);
        let mut vm_plans = Vec::with_capacity(p.vms.len());
        for (vm, &(stop, _, off)) in p.vms.iter().enumerate() {
            self.avail.end_vm(id, vm as u32, res.start, off);
            vm_plans.push(VmPlan {
                vm: vm as u32,
                host: res.hosts[vm],
                initial: VmState::Running,
                steps: [(stop, VmEvent::Stop)].into(),
            });
        }
        vacating_actions(id, p.from, vm_plans, worked, out);
        let off = p.vms.iter().map(|v| v.2).max().unwrap_or(p.from);
        self.charge_until(id, off);
        let l = self.leases.get_mut(&id).expect("known lease");
        l.phase = Phase::Cancelling;
        l.work_done = done;
        l.reported = 0;
        self.sync(id);
    }

    /// Pauses and suspends a lease's VMs to the shared storage one after another; a migrating
    /// lease is then offered to the IGG, a suspended one waits to be resumed here.
    pub(super) fn suspend_for(
        &mut self,
        p: &Vacating,
        res: &Reservation,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) {
        let id = p.id;
        let l = &self.leases[&id];
        let done = self.done_by(l, p.from);
        let worked = done.saturating_sub(l.work_done);
        let ts = self.cfg.overhead.suspend_vm(l.req.mem_mb);
        // Bookings of this lease not begun yet belong to an episode it leaves.
        self.storage.cancel(id, p.from);
        let mut vm_plans = Vec::with_capacity(p.vms.len());
        let mut images = Vec::with_capacity(p.vms.len());
        for (vm, &(pause, planned, _)) in p.vms.iter().enumerate() {
            let s = self.storage.book(id, planned, ts);
            let off = s + ts;
            images.push(off);
            self.avail.end_vm(id, vm as u32, res.start, off);
            vm_plans.push(VmPlan {
                vm: vm as u32,
                host: res.hosts[vm],
                initial: VmState::Running,
                steps: [
                    (pause, VmEvent::Pause),
                    (s, VmEvent::Suspend),
                    (off, VmEvent::Suspended),
                ]
                .into(),
            });
        }
        vacating_actions(id, p.from, vm_plans, worked, out);
        let last = images.iter().copied().max().unwrap_or(p.from);
        // Its partitions' cores are held as its slots are: until its VMs are off.
        self.charge_until(id, last);
        let migrate = p.op == Operation::Migrate;
        let (speed, reschedule) = (self.cfg.speed, self.cfg.overhead.reschedule);
        let l = self.leases.get_mut(&id).expect("known lease");
        l.work_done = done;
        l.res = None;
        l.images_ready = Some(images.clone());
        l.migrated_in = false;
        l.not_before = last.max(now + reschedule);
        l.phase = if migrate {
            Phase::Relocating
        } else {
            Phase::Waiting
        };
        if migrate {
            out.push(Action::Relocate(Relocation {
                req: l.req.clone(),
                work_done: speed.reference(done),
                images_ready: images,
            }));
        }
        self.sync(id);
    }
}

impl Core {
    /// Plans vacating `set` of `c` so that every VM is off its host by `start` if the notice
    /// allows (suspensions begin as late as they can), else as soon as possible. Books nothing.
    pub(super) fn plan_vacating(
        &self,
        c: &Contention,
        set: &[usize],
        start: EmuTime,
        now: EmuTime,
    ) -> (Vec<Vacating>, EmuTime) {
        let m = &self.cfg.overhead;
        let mut plans = Vec::with_capacity(set.len());
        let mut suspensions = Vec::new();
        for &i in set {
            let cand = &c.candidates[i];
            let l = &self.leases[&cand.lease];
            let v = l.req.vms;
            match cand.op {
                Operation::Displace => plans.push(Vacating {
                    id: cand.lease,
                    op: cand.op,
                    from: now,
                    vms: Vec::new(),
                }),
                Operation::Wait => {
                    let end = l.res.as_ref().map_or(now, |r| r.end);
                    plans.push(Vacating {
                        id: cand.lease,
                        op: cand.op,
                        from: end,
                        vms: vec![(end, end, end); v as usize],
                    });
                }
                Operation::Stop => {
                    let run_from = l.res.as_ref().map_or(now, |r| r.run_from);
                    let from = start
                        .earlier_by(m.shutdown * u64::from(v))
                        .max(now)
                        .max(run_from);
                    // VMs are stopped one after another; each is off its host when stopped.
                    let vms = (0..v)
                        .map(|j| {
                            let off = from + m.shutdown * (u64::from(j) + 1);
                            (off, off, off)
                        })
                        .collect();
                    plans.push(Vacating {
                        id: cand.lease,
                        op: cand.op,
                        from,
                        vms,
                    });
                }
                Operation::Suspend | Operation::Migrate => suspensions.push(i),
            }
        }
        if !suspensions.is_empty() {
            plans.extend(self.plan_suspensions(c, set, &suspensions, start, now));
        }
        let done = plans
            .iter()
            .flat_map(|p| p.vms.iter().map(|v| v.2))
            .max()
            .unwrap_or(now)
            .max(now);
        (plans, done)
    }

    /// The suspensions (and migrations) `suspensions` of a decision's set, started as late as they
    /// can be and still end by `start`.
    pub(super) fn plan_suspensions(
        &self,
        c: &Contention,
        set: &[usize],
        suspensions: &[usize],
        start: EmuTime,
        now: EmuTime,
    ) -> Vec<Vacating> {
        // The latest common start of the suspensions that still ends by `start`; they
        // only end later when they start later, so bisect.
        // The storage as it will be: the resumptions booked for reservations this decision
        // moves are gone.
        let mut base = self.storage.clone();
        for &i in set {
            let x = &c.candidates[i];
            if x.op == Operation::Displace {
                if let Some(r) = self.leases.get(&x.lease).and_then(|l| l.res.as_ref()) {
                    base.cancel(x.lease, r.start);
                }
            }
        }
        let schedule = |t0: EmuTime| self.schedule_suspensions(c, suspensions, t0, &base);
        let (_, end_now) = schedule(now);
        let t0 = if end_now > start {
            now
        } else {
            let (mut lo, mut hi) = (now.as_micros(), start.as_micros());
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if schedule(EmuTime::from_micros(mid)).1 <= start {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            EmuTime::from_micros(lo)
        };
        schedule(t0).0
    }

    /// Pauses and suspensions of the leases `which` of `c`, beginning at `t0` (or when each is
    /// at work, if later), one VM at a time on the shared storage, in arrival order. A lease
    /// whose suspension could only end when it would have finished anyway (the storage is
    /// busy) is left to finish instead: it becomes a [`Operation::Wait`], off its hosts at its
    /// end, and takes no storage time.
    pub(super) fn schedule_suspensions(
        &self,
        c: &Contention,
        which: &[usize],
        t0: EmuTime,
        base: &Storage,
    ) -> (Vec<Vacating>, EmuTime) {
        let m = &self.cfg.overhead;
        let mut storage = base.clone();
        let mut out = Vec::with_capacity(which.len());
        let mut last = t0;
        for &i in which {
            let cand = &c.candidates[i];
            let l = &self.leases[&cand.lease];
            let (run_from, end) = l
                .res
                .as_ref()
                .map_or((t0, EmuTime::NEVER), |r| (r.run_from, r.end));
            let from = t0.max(run_from);
            let mut trial = storage.clone();
            // Bookings of this lease not begun yet belong to the episode it leaves.
            trial.cancel(cand.lease, from);
            let (v, ts) = (l.req.vms, m.suspend_vm(l.req.mem_mb));
            let mut cursor = from + m.pause * u64::from(v);
            let mut slots = Vec::with_capacity(v as usize);
            for _ in 0..v {
                let s = trial.book(cand.lease, cursor, ts);
                cursor = s + ts;
                slots.push((s, cursor));
            }
            // The lease keeps working until its pauses must begin for its first suspension:
            // a lease queued behind others on the storage is not left paused meanwhile.
            let first = slots.first().map_or(cursor, |x| x.0);
            let from = first.earlier_by(m.pause * u64::from(v)).max(from);
            let vms: Vec<(EmuTime, EmuTime, EmuTime)> = slots
                .iter()
                .enumerate()
                .map(|(j, &(s, off))| (from + m.pause * j as u64, s, off))
                .collect();
            if cursor >= end {
                last = last.max(end);
                out.push(Vacating {
                    id: cand.lease,
                    op: Operation::Wait,
                    from: end,
                    vms: vec![(end, end, end); v as usize],
                });
                continue;
            }
            storage = trial;
            last = last.max(cursor);
            out.push(Vacating {
                id: cand.lease,
                op: cand.op,
                from,
                vms,
            });
        }
        (out, last)
    }

    /// Whether a lease not in the chosen set begins holding a host in `[from, until)`: the
    /// local lease's lateness would run into it.
    pub(super) fn tail_taken(
        &self,
        local: RequestId,
        set: &[RequestId],
        from: EmuTime,
        until: EmuTime,
    ) -> bool {
        from < until
            && self
                .avail
                .holds(from, until)
                .iter()
                .any(|h| h.start >= from && h.lease != local && !set.contains(&h.lease))
    }
}

/// What vacating a running lease tells the shell: the VMs' new plans (replacing their steps
/// from `from` on) and the work the lease did until then.
pub(super) fn vacating_actions(
    id: RequestId,
    from: EmuTime,
    plans: Vec<VmPlan>,
    worked: EmuDuration,
    out: &mut Vec<Action>,
) {
    out.push(Action::CommandVms {
        lease: id,
        after: Some(from),
        plans,
    });
    out.push(Action::Worked {
        lease: id,
        work: worked,
    });
}
