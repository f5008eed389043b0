//! Local requests: reserved on arrival (preempting external leases if they must) or queued, and
//! the local usage a provider publishes around.

use super::*;

impl Core {
    /// Cores local leases hold (running or reserved) from each change point on, over
    /// `[now, until)`: the local partition's actual use.
    pub fn local_usage(&self, now: EmuTime, until: EmuTime) -> BTreeMap<EmuTime, u64> {
        let mut deltas: BTreeMap<EmuTime, i64> = BTreeMap::new();
        for l in self.leases.values().filter(|l| l.is_local()) {
            if let Some(r) = &l.res {
                let (s, e) = (r.start.max(now), r.end.min(until));
                if s < e {
                    *deltas.entry(s).or_default() += l.req.cores() as i64;
                    *deltas.entry(e).or_default() -= l.req.cores() as i64;
                }
            }
        }
        let mut used = 0i64;
        let mut steps = BTreeMap::new();
        steps.insert(now, 0);
        for (t, d) in deltas {
            used += d;
            steps.insert(t, used.max(0) as u64);
        }
        steps
    }

    /// Gives every waiting lease a reservation, as conservative backfilling would (paper
    /// 004 Algorithm 1, lines 3–5: the load-forecast policy schedules its queue with an
    /// unbounded number of pivots before it publishes, then returns to EASY).
    pub fn reserve_all(&mut self, now: EmuTime) -> Vec<Action> {
        let easy = self.cfg.backfilling;
        self.cfg.backfilling = Backfilling::Conservative;
        let mut out = Vec::new();
        self.place_waiting(now, &mut out);
        self.cfg.backfilling = easy;
        out
    }

    // ---- local requests ----

    /// A local request, decided now: reserved in its interval, or after preempting external
    /// leases, or refused — or, where locals are queued, scheduled like any waiting lease
    /// (not before its requested start).
    pub fn submit_local(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        let (reshaped, req) = self.taken_in(req)?;
        self.monitor.local(now, self.cluster_service(&req));
        let start = req.start.unwrap_or(req.arrival).max(now);
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if self.cfg.locals == LocalRequests::Queued {
            if let Some(l) = self.leases.get_mut(&id) {
                l.not_before = start;
            }
            // Scheduled like any waiting lease; with partitions, locals come first only among
            // the leases backfilled without a reservation (`place_waiting`).
            if !self.schedule_waiting(id, now, &mut out) {
                self.forget(id);
                return Err(Refusal::Deadline);
            }
            self.terms(id, reshaped, &mut out);
            out.extend(self.tick(now));
            return Ok(out);
        }
        if let Some((plan, hosts)) = self.fits_at(id, start) {
            self.commit(id, start, plan, hosts, &mut out);
            self.terms(id, reshaped, &mut out);
            out.extend(self.tick(now));
            return Ok(out);
        }
        match self.preempt_for(id, start, now, &mut out) {
            Ok(()) => {
                self.terms(id, reshaped, &mut out);
                out.extend(self.tick(now));
                Ok(out)
            }
            Err(r) => {
                self.forget(id);
                Err(r)
            }
        }
    }
}
