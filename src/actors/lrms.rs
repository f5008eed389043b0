//! The LRMS actor: receives local requests from its users and external leases from its IGG,
//! asks the pure scheduler (`crate::lrms`) what to do, and carries out its decisions by
//! starting VMs on hosts and reporting lease starts and ends.

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, Context, Handler, MessageResult};

use super::host::Host;
use super::igg::Igg;
use super::messages::{
    AssignAnswer, AssignLease, LeaseEnded, LeaseStarted, StartVm, SubmitLocal, VmReleased,
};
use super::users::Users;
use super::{Emu, Peer};
use crate::lrms::{Decision, Scheduler};
use crate::model::{ClusterId, LeaseRequest, Origin, RequestId, RequestState};
use crate::trace::ActorId;

struct Lease {
    req: LeaseRequest,
    vms_running: u32,
}

/// A cluster's local resource management system.
pub struct Lrms {
    emu: Rc<Emu>,
    id: ActorId,
    cluster: ClusterId,
    igg: Peer<Igg>,
    users: Option<Peer<Users>>,
    hosts: Vec<Peer<Host>>,
    scheduler: Scheduler,
    leases: BTreeMap<RequestId, Lease>,
}

impl Lrms {
    /// The LRMS of `cluster`, with its hosts, its IGG and (if any) its local users.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        cluster: ClusterId,
        igg: Peer<Igg>,
        users: Option<Peer<Users>>,
        hosts: Vec<Peer<Host>>,
    ) -> Lrms {
        let scheduler = Scheduler::new(&emu.topo.cluster(cluster).hosts);
        Lrms {
            emu,
            id,
            cluster,
            igg,
            users,
            hosts,
            scheduler,
            leases: BTreeMap::new(),
        }
    }

    fn notify_started(&self, lease: RequestId, origin: Origin) {
        let msg = LeaseStarted {
            lease,
            cluster: self.cluster,
        };
        match (origin, &self.users) {
            (Origin::External, _) => self.emu.send(self.id, &self.igg, msg),
            (Origin::Local, Some(u)) => self.emu.send(self.id, u, msg),
            (Origin::Local, None) => {}
        }
    }

    fn notify_ended(&self, lease: RequestId, origin: Origin, state: RequestState) {
        self.emu
            .metrics
            .borrow_mut()
            .ended(lease, state, self.emu.now());
        let msg = LeaseEnded { lease, state };
        match (origin, &self.users) {
            (Origin::External, _) => self.emu.send(self.id, &self.igg, msg),
            (Origin::Local, Some(u)) => self.emu.send(self.id, u, msg),
            (Origin::Local, None) => {}
        }
    }

    /// Carries out one scheduler decision.
    fn apply(&mut self, decision: Decision) {
        match decision {
            Decision::Start { lease, hosts } => {
                let Some(entry) = self.leases.get_mut(&lease) else {
                    return;
                };
                entry.vms_running = hosts.len() as u32;
                let req = entry.req.clone();
                self.emu
                    .metrics
                    .borrow_mut()
                    .started(lease, self.cluster, self.emu.now());
                let boot = self
                    .emu
                    .topo
                    .cluster(self.cluster)
                    .lrms
                    .profile
                    .timings
                    .boot;
                for (vm, h) in hosts.into_iter().enumerate() {
                    let msg = StartVm {
                        lease,
                        vm: vm as u32,
                        cores: req.cores_per_vm,
                        mem_mb: req.mem_mb,
                        boot,
                        work: req.duration,
                    };
                    self.emu.send(self.id, &self.hosts[usize::from(h)], msg);
                }
                self.notify_started(lease, req.origin);
            }
            Decision::Queued(_) => {}
            Decision::Reject { lease, reason } => {
                tracing::debug!(lease = lease.0, reason, "LRMS rejects");
                if let Some(entry) = self.leases.remove(&lease) {
                    self.notify_ended(lease, entry.req.origin, RequestState::Rejected);
                }
            }
        }
    }

    fn admit(&mut self, req: LeaseRequest) -> bool {
        self.leases.insert(
            req.id,
            Lease {
                req: req.clone(),
                vms_running: 0,
            },
        );
        let decision = self.scheduler.submit(&req);
        let accepted = !matches!(decision, Decision::Reject { .. });
        if accepted {
            self.apply(decision);
        } else {
            // The IGG learns of the refusal from the answer and may try elsewhere.
            self.leases.remove(&req.id);
        }
        accepted
    }
}

impl Actor for Lrms {
    type Context = Context<Self>;
}

impl Handler<AssignLease> for Lrms {
    type Result = MessageResult<AssignLease>;
    fn handle(&mut self, msg: AssignLease, _: &mut Context<Self>) -> Self::Result {
        let lease = msg.0.id;
        let accepted = self.admit(msg.0);
        MessageResult(AssignAnswer { lease, accepted })
    }
}

impl Handler<SubmitLocal> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: SubmitLocal, _: &mut Context<Self>) {
        let id = msg.0.id;
        if !self.admit(msg.0) {
            self.notify_ended(id, Origin::Local, RequestState::Rejected);
        }
    }
}

impl Handler<VmReleased> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: VmReleased, _: &mut Context<Self>) {
        let Some(entry) = self.leases.get_mut(&msg.lease) else {
            return;
        };
        entry.vms_running = entry.vms_running.saturating_sub(1);
        if entry.vms_running > 0 {
            return;
        }
        let origin = entry.req.origin;
        self.leases.remove(&msg.lease);
        self.notify_ended(msg.lease, origin, RequestState::Completed);
        for d in self.scheduler.finish(msg.lease) {
            self.apply(d);
        }
    }
}
