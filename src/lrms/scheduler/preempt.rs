//! Preemption for a local request: which leases are candidates and what each frees, the
//! contention handed to the policy, and the decision carried out, narrowed to the interval
//! finally used.

use super::*;

impl Core {
    /// What preempting `l` for a local request needing `[start, end)` would do, or `None` if
    /// it cannot be preempted (local, non-preemptable, not at work by the time it would have
    /// to be vacated, being vacated already, or a migratable lease whose deadline would not
    /// survive).
    pub(super) fn candidacy(
        &self,
        l: &Lease,
        start: EmuTime,
        end: EmuTime,
        now: EmuTime,
    ) -> Option<Operation> {
        if l.is_local() || !l.req.lease_type.preemptable() {
            return None;
        }
        let res = l.res.as_ref()?;
        let running_op = OverheadModel::operation_for(l.req.lease_type, self.cfg.can_migrate)?;
        let op = match l.phase {
            Phase::Waiting => Operation::Displace,
            // Told to start this very instant: its VMs are recalled before they do anything.
            Phase::Running if res.start == now => Operation::Displace,
            Phase::Running => {
                let vacate = self.vacate_time(l, running_op);
                // The latest it can begin vacating and still be off its hosts by `start`.
                let latest = start.earlier_by(vacate).max(now);
                if res.run_from > latest {
                    // Booting or resuming: only preempted once at work.
                    return None;
                }
                if res.end <= latest + vacate {
                    // It ends before it could be vacated: the local lease waits for it.
                    Operation::Wait
                } else {
                    running_op
                }
            }
            _ => return None,
        };
        if l.req.lease_type == LeaseType::DeadlineMigratable && op != Operation::Wait {
            let begin = start.earlier_by(self.vacate_time(l, op)).max(now);
            return self.keeps_deadline(l, op, (begin, end), now).then_some(op);
        }
        Some(op)
    }

    /// Whether migratable lease `l`, preempted by `op` from `begin` on for a local lease
    /// ending at `end`, still finishes by its deadline: resumed here after `end` (suspended
    /// now), or — migrating — on another cluster whose published slots show room ([`Route`],
    /// paper 003 §4.2: "either on the same resource or on another resource").
    pub(super) fn keeps_deadline(
        &self,
        l: &Lease,
        op: Operation,
        (begin, end): (EmuTime, EmuTime),
        now: EmuTime,
    ) -> bool {
        let m = &self.cfg.overhead;
        let (vms, mem) = (l.req.vms, l.req.mem_mb);
        let deadline = l.req.deadline.unwrap_or(EmuTime::NEVER);
        let remaining = l.duration.saturating_sub(self.done_by(l, now));
        let resume_at = end.max(now + m.suspend_lease(vms, mem));
        if resume_at + m.resume_lease(vms, mem) + remaining <= deadline {
            return true;
        }
        let route = Route {
            begin,
            migration: m.migrate_lease(vms, mem),
            remaining,
            cores: u64::from(vms) * u64::from(l.req.cores_per_vm),
            deadline,
        };
        op == Operation::Migrate && route.open(&self.elsewhere)
    }

    /// The contention of local lease `local` needing `[start, end)`: every lease holding a
    /// host then, as a candidate (in arrival order; only those of `among`, if given) or as a
    /// fixed hold.
    pub(super) fn contention(
        &self,
        local: RequestId,
        start: EmuTime,
        end: EmuTime,
        now: EmuTime,
        among: Option<&[RequestId]>,
    ) -> Contention {
        let l = &self.leases[&local];
        let m = &self.cfg.overhead;
        let mut c = Contention::new(
            l.shape(),
            l.req.vms,
            (start, end),
            m.reschedule,
            &self.avail.capacities(),
        );
        let holds = self.avail.holds(start, end);
        let mut in_play: Vec<RequestId> = holds.iter().map(|h| h.lease).collect();
        in_play.sort_unstable();
        in_play.dedup();
        let mut cands: Vec<(EmuTime, u64, RequestId, Operation)> = in_play
            .iter()
            .filter(|id| **id != local && among.is_none_or(|ids| ids.contains(id)))
            .filter_map(|id| {
                let x = self.leases.get(id)?;
                let op = self.candidacy(x, start, end, now)?;
                Some((x.req.arrival, x.order, *id, op))
            })
            .collect();
        cands.sort_unstable();
        let mut index: BTreeMap<RequestId, (usize, EmuTime)> = BTreeMap::new();
        for (arrival, _, id, op) in cands {
            let x = &self.leases[&id];
            let res_start = x.res.as_ref().map_or(EmuTime::ZERO, |r| r.start);
            let waited = now
                .since(x.req.arrival)
                .saturating_sub(self.done_by(x, now));
            let i = c.add_candidate(Candidate {
                lease: id,
                op,
                lease_type: x.req.lease_type,
                vms: x.req.vms,
                mem_mb: x.req.mem_mb,
                preempted_vms: if op.preempts_vms() { x.req.vms } else { 0 },
                cost: m.operation_cost(op, x.req.vms, x.req.mem_mb),
                waiting: waited,
                arrival,
            });
            index.insert(id, (i, res_start));
        }
        for h in holds {
            let (cores, mem) = (u64::from(h.cores), h.mem_mb);
            match index.get(&h.lease) {
                // Only the lease's current episode or reservation goes with it; slots of an
                // earlier episode still being vacated stay.
                Some(&(i, from)) if h.start >= from => {
                    c.add_held(h.host, i, h.start, h.end, cores, mem)
                }
                _ if h.lease == local => {}
                _ => c.add_fixed(h.host, h.start, h.end, cores, mem),
            }
        }
        c
    }

    /// Makes room for local request `id` asking for `start` by preempting, or refuses it.
    pub(super) fn preempt_for(
        &mut self,
        id: RequestId,
        start: EmuTime,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) -> Result<(), Refusal> {
        if !self.preemption.preempts() {
            return Err(Refusal::NoRoom);
        }
        let length = {
            let l = &self.leases[&id];
            self.plan(l, start).end.since(start)
        };
        let seed = stream_seed(self.cfg.seed, &format!("decision-{}", self.decisions));
        self.decisions += 1;
        let mut end = start + length;
        for _ in 0..MAX_WINDOW_EXTENSIONS {
            let c = self.contention(id, start, end, now, None);
            let choice = self.ask_policy(id, &c, now, seed).ok_or(Refusal::NoRoom)?;
            let (vacating, done) = self.plan_vacating(&c, &choice.set, start, now);
            let set_ids: Vec<RequestId> = vacating.iter().map(|v| v.id).collect();
            let latest_end = done.max(start) + length;
            if latest_end > end && self.tail_taken(id, &set_ids, end, latest_end) {
                // Late by its preemption, the lease would run into leases after its interval:
                // decide again over the interval it will really hold.
                end = latest_end;
                continue;
            }
            let decided = Decided {
                vacating,
                done,
                end,
                exact: choice.exact,
            };
            let decided = match latest_end < end {
                true => self.narrowed(id, (start, length), now, seed, decided),
                false => decided,
            };
            return self.carry_out(id, start, now, decided, out);
        }
        Err(Refusal::NoRoom)
    }
}

impl Core {
    /// The preemption policy's answer for local request `id` on contention `c`.
    pub(super) fn ask_policy(
        &mut self,
        id: RequestId,
        c: &Contention,
        now: EmuTime,
        seed: u64,
    ) -> Option<crate::lrms::policy::Choice> {
        let ask = preemption::Ask {
            now,
            local: &self.leases[&id].req,
            seed,
            budget: self.cfg.search_budget,
        };
        self.preemption.choose(c, &ask)
    }

    /// A decision made over an interval widened for its lateness whose set vacates sooner
    /// than that interval assumed: made again over the interval the local lease will hold
    /// (`start` to the end of its run of `length` once the set is vacated), among the leases
    /// chosen, until the set no longer changes — so what is carried out is minimal for the
    /// interval finally used. The set only shrinks, and vacating fewer leases never ends
    /// later, so the interval only narrows and the leases kept still leave room.
    pub(super) fn narrowed(
        &mut self,
        id: RequestId,
        (start, length): (EmuTime, EmuDuration),
        now: EmuTime,
        seed: u64,
        mut d: Decided,
    ) -> Decided {
        for _ in 0..=d.vacating.len() {
            let end = d.done.max(start) + length;
            let ids: Vec<RequestId> = d.vacating.iter().map(|v| v.id).collect();
            let c = self.contention(id, start, end, now, Some(&ids));
            let Some(choice) = self.ask_policy(id, &c, now, seed) else {
                // Cannot happen with a policy that answers as it should (the leases chosen
                // leave room over the narrower interval); keep the wider decision.
                return d;
            };
            if choice.set.len() == ids.len() {
                return Decided { end, ..d };
            }
            let (vacating, done) = self.plan_vacating(&c, &choice.set, start, now);
            d = Decided {
                vacating,
                done,
                end,
                exact: d.exact && choice.exact,
            };
        }
        d
    }

    /// Carries out decision `d` for local request `id` asking for `start`: vacates its set,
    /// charges it, and reserves the local lease by the time its hosts are free.
    pub(super) fn carry_out(
        &mut self,
        id: RequestId,
        start: EmuTime,
        now: EmuTime,
        d: Decided,
        out: &mut Vec<Action>,
    ) -> Result<(), Refusal> {
        // The cost of what is done: the policy's operations, except for leases the busy
        // storage turned into waits.
        let decision_cost = self.cfg.overhead.set_cost(d.vacating.iter().map(|v| {
            let l = &self.leases[&v.id];
            (v.op, l.req.vms, l.req.mem_mb)
        }));
        self.apply_vacating(&d.vacating, now, out);
        let reschedule = if d.vacating.iter().any(|v| v.op.reschedules()) {
            self.cfg.overhead.reschedule
        } else {
            EmuDuration::ZERO
        };
        let allowed = start.max(d.done);
        // The decision is carried out: its commands are in `out` and must reach the VMs
        // whatever follows, so the request is not refused now. Should the hosts not hold it
        // by `allowed` (the decision saw them; so does a local request's placement), it is
        // reported and the request reserved at its earliest start.
        let found = self.find_slot(id, start);
        if found.as_ref().is_none_or(|(s, _, _)| *s > allowed) {
            out.push(Action::Violation(format!(
                "local request #{} found no room by {} after its preemption decision",
                id.0, allowed
            )));
        }
        let Some((s, plan, hosts)) = found else {
            // Unreachable: a request no placement could ever hold was refused at intake.
            self.place_waiting(now, out);
            return Ok(());
        };
        self.commit(id, s, plan, hosts, out);
        out.push(Action::Decision(Decision {
            local: id,
            window: (start, d.end),
            set: d.vacating.iter().map(|v| (v.id, v.op)).collect(),
            cost: decision_cost,
            reschedule,
            vacated_by: d.done,
            local_start: s,
            exact: d.exact,
        }));
        self.place_waiting(now, out);
        Ok(())
    }
}
