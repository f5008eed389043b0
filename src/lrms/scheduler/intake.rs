//! External requests taken in: probed for a start, shaped as this cluster runs them (moldable
//! requests, deadline ratios), admitted by the admission policy, and queued or refused.

use super::*;

impl Core {
    /// External leases waiting here (not started) and held here at all.
    /// The earliest start this cluster could give `req` now, booking nothing (for the IGG's
    /// earliest-start dispatch); `None` if it would refuse it.
    pub fn probe(&self, req: &LeaseRequest, now: EmuTime) -> Option<EmuTime> {
        let req = self.shaped(req.clone());
        let l = Lease::waiting(req, self.cfg.speed, self.next_order, now);
        let (start, plan, _) = self.find_slot_for(&l, now)?;
        l.deadline().is_none_or(|d| plan.end <= d).then_some(start)
    }

    /// The request as this cluster runs it: a moldable one on the VMs and for the run time
    /// `lrms.moldable` gives it here ([`moldable_run`]), and a deadline given as a
    /// ratio of the run time resolved with the run time here. The result is rigid.
    pub(super) fn shaped(&self, mut req: LeaseRequest) -> LeaseRequest {
        if req.moldable {
            let vms = self.avail.capacity_for(shape_of(&req));
            let reading = match (req.origin, self.cfg.moldable) {
                (Origin::External, reading) | (Origin::Local, reading @ Moldable::PerTask) => {
                    reading
                }
                (Origin::Local, _) => Moldable::Spread,
            };
            (req.vms, req.duration) = moldable_run(reading, req.vms, req.duration, vms);
            req.moldable = false;
        }
        if let Some(ratio) = req.deadline_ratio.take() {
            let run = self.cfg.boot + self.cfg.speed.local(req.duration);
            req.deadline =
                Some(req.arrival + EmuDuration::from_secs_f64(run.as_secs_f64() * ratio));
        }
        req
    }

    /// How long a request occupies the whole cluster: its VM-time here over the VMs the
    /// cluster can hold (paper 002's single-server view of a cluster).
    pub(super) fn cluster_service(&self, req: &LeaseRequest) -> EmuDuration {
        let cap = self.avail.capacity_for(shape_of(req)).max(1);
        let run = self.cfg.speed.local(req.duration);
        EmuDuration::from_secs_f64(run.as_secs_f64() * f64::from(req.vms) / cap as f64)
    }

    /// Reports the VMs and deadline a reshaped (moldable or ratio-deadline) lease got here.
    pub(super) fn terms(&self, id: RequestId, reshaped: bool, out: &mut Vec<Action>) {
        let l = &self.leases[&id];
        if reshaped {
            out.push(Action::Terms {
                lease: id,
                vms: l.req.vms,
                deadline: l.req.deadline,
            });
        }
    }

    /// Refuses a request no placement could ever hold, even on an empty cluster.
    pub(super) fn fits_ever(&self, req: &LeaseRequest) -> Result<(), Refusal> {
        if self.avail.could_ever_fit(req.vms, shape_of(req)) {
            Ok(())
        } else {
            Err(Refusal::TooLarge)
        }
    }

    /// A request as this cluster runs it (shaped to its VMs and deadline ratio), and whether
    /// that reshaped it, if it could ever fit here.
    pub(super) fn taken_in(&self, req: LeaseRequest) -> Result<(bool, LeaseRequest), Refusal> {
        let reshaped = req.moldable || req.deadline_ratio.is_some();
        let req = self.shaped(req);
        self.fits_ever(&req)?;
        Ok((reshaped, req))
    }

    /// An external lease assigned by the IGG: accepted (started or queued) or refused.
    pub fn submit_external(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        if self.leases.contains_key(&req.id) {
            // Only a gateway that is not igemu's assigns a lease its cluster holds already:
            // the checker is told, and the lease held stays as it is.
            let what = format!(
                "lease #{} assigned again while this cluster holds it",
                req.id.0
            );
            return Ok(vec![Action::Violation(what)]);
        }
        // Its work, tasks × task duration here, however it is shaped (PACP's ω by `work`).
        let work = self.cfg.speed.local(req.duration) * u64::from(req.vms);
        let (reshaped, req) = self.taken_in(req)?;
        self.monitor.offered(now);
        let service = self.cluster_service(&req);
        let verdict = self.admission.admit(&AdmissionAsk {
            now,
            request: &req,
            service,
            monitor: &self.monitor,
            queue: &ExternalQueue(&self.leases),
        });
        let limit = match verdict {
            Verdict::Refuse(why) => return Err(why),
            Verdict::Admit => None,
            Verdict::Limit(k) => Some(k),
        };
        // Counted only under a limit (a walk over every lease).
        let waiting = match limit {
            Some(_) => ExternalQueue(&self.leases).external().0,
            None => 0,
        };
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if !self.schedule_waiting(id, now, &mut out) {
            self.forget(id);
            return Err(Refusal::Deadline);
        }
        if let Some(k) = limit {
            // At most k external requests wait: one that starts at once does not wait.
            let starts_now = self.leases[&id]
                .res
                .as_ref()
                .is_some_and(|r| r.start <= now);
            if !starts_now && waiting >= k {
                self.drop_reservation(id);
                self.forget(id);
                // Wakes it asked for were new (`wake` reports only those): take them back.
                for a in &out {
                    if let Action::Wake(t) = a {
                        self.wakes.remove(t);
                    }
                }
                return Err(Refusal::QueueFull);
            }
        }
        let run = self.leases[&id].duration;
        self.monitor.admitted(service, run, work);
        self.terms(id, reshaped, &mut out);
        out.extend(self.tick(now));
        Ok(out)
    }
}
