//! The IGG actor and its post office. Every inbound message is handled in its own task (the
//! Java IGG spawns a thread per message), so handlers interleave at their await points — for
//! example while one request waits for an LRMS's answer, the next is already being placed.
//! The placement decision itself comes from the pure dispatcher in `crate::igg`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::lrms::Lrms;
use super::messages::{
    AdoptLease, AssignLease, LeaseEnded, LeaseStarted, ProbeStart, RelocateLease,
    RelocationOutcome, SubmitExternal,
};
use super::users::Users;
use super::{Emu, Peer};
use crate::igg::{Dispatcher, Loads};
use crate::model::{ClusterId, RequestId, RequestState};
use crate::trace::ActorId;

/// What this IGG's leases take: per-cluster loads, and each lease's cluster and cores.
type LoadBook = (Loads, BTreeMap<RequestId, (usize, u64)>);

/// A Grid's InterGrid Gateway.
pub struct Igg {
    emu: Rc<Emu>,
    id: ActorId,
    clusters: Vec<(ClusterId, Peer<Lrms>)>,
    dve: Option<Peer<Users>>,
    dispatcher: Dispatcher,
    /// Whether a request refused by the chosen cluster is offered to the others.
    retry: bool,
    /// Cores this IGG's leases take on each cluster (for least-load), and where each runs.
    loads: Rc<RefCell<LoadBook>>,
}

impl Igg {
    /// The IGG of a Grid with these clusters' LRMSs and (if any) its DVE manager.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        clusters: Vec<(ClusterId, Peer<Lrms>)>,
        dve: Option<Peer<Users>>,
        dispatcher: Dispatcher,
        retry: bool,
    ) -> Igg {
        let cores = clusters
            .iter()
            .map(|(c, _)| emu.topo.cluster(*c).cores())
            .collect();
        let loads = Loads {
            busy: vec![0; clusters.len()],
            cores,
        };
        Igg {
            emu,
            id,
            clusters,
            dve,
            dispatcher,
            retry,
            loads: Rc::new(RefCell::new((loads, BTreeMap::new()))),
        }
    }

    /// The post office: run `handler` as its own task.
    fn post(&self, handler: impl Future<Output = ()> + 'static) {
        actix::spawn(handler);
    }

    fn index_of(&self, cluster: ClusterId) -> Option<usize> {
        self.clusters.iter().position(|(c, _)| *c == cluster)
    }
}

impl Actor for Igg {
    type Context = Context<Self>;
}

impl Handler<SubmitExternal> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SubmitExternal, _: &mut Context<Self>) {
        let req = msg.0;
        let (emu, me, dve, retry) = (Rc::clone(&self.emu), self.id, self.dve.clone(), self.retry);
        let peers: Vec<Peer<Lrms>> = self.clusters.iter().map(|(_, p)| p.clone()).collect();
        // Policies that need no answers decide now, in arrival order; earliest-start asks
        // every LRMS for its offer first (inside the task, so other messages go on).
        let decided = (!self.dispatcher.asks_for_offers())
            .then(|| self.dispatcher.order(&req, &self.loads.borrow().0, &[]));
        let mut dispatcher = self.dispatcher.clone();
        self.post(async move {
            let order = match decided {
                Some(order) => order,
                None => {
                    let mut offers = Vec::with_capacity(peers.len());
                    for lrms in &peers {
                        let offer = emu.call(me, lrms, ProbeStart(req.clone())).await;
                        offers.push(offer.and_then(|o| o.start).map(|t| t.as_micros()));
                    }
                    dispatcher.order(&req, &Loads::default(), &offers)
                }
            };
            let tries = if retry { order.len() } else { 1 };
            for &j in order.iter().take(tries) {
                let answer = emu.call(me, &peers[j], AssignLease(req.clone())).await;
                if answer.is_some_and(|a| a.accepted) {
                    return;
                }
            }
            emu.metrics
                .borrow_mut()
                .ended(req.id, RequestState::Rejected, emu.now());
            if let Some(dve) = dve {
                emu.send(
                    me,
                    &dve,
                    LeaseEnded {
                        lease: req.id,
                        state: RequestState::Rejected,
                    },
                );
            }
        });
    }
}

impl Handler<LeaseStarted> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseStarted, _: &mut Context<Self>) {
        if let Some(j) = self.index_of(msg.cluster) {
            let cores = self.emu.topo.requests[msg.lease.0 as usize].cores();
            let mut l = self.loads.borrow_mut();
            l.0.busy[j] += cores;
            l.1.insert(msg.lease, (j, cores));
        }
        let (emu, me, dve) = (Rc::clone(&self.emu), self.id, self.dve.clone());
        self.post(async move {
            if let Some(dve) = dve {
                emu.send(me, &dve, msg);
            }
        });
    }
}

impl Handler<LeaseEnded> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseEnded, _: &mut Context<Self>) {
        {
            let mut l = self.loads.borrow_mut();
            if let Some((j, cores)) = l.1.remove(&msg.lease) {
                l.0.busy[j] -= cores;
            }
        }
        let (emu, me, dve) = (Rc::clone(&self.emu), self.id, self.dve.clone());
        self.post(async move {
            if let Some(dve) = dve {
                emu.send(me, &dve, msg);
            }
        });
    }
}

impl Handler<RelocateLease> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RelocateLease, _: &mut Context<Self>) {
        // Offer the lease to the Grid's other clusters in order after its source; the first
        // that can resume it by its deadline takes it over.
        let n = self.clusters.len();
        let from = self.index_of(msg.from).unwrap_or(0);
        let others: Vec<(ClusterId, Peer<Lrms>)> = (1..n)
            .map(|k| self.clusters[(from + k) % n].clone())
            .collect();
        let source = self.clusters.get(from).map(|(_, p)| p.clone());
        let (emu, me, loads) = (Rc::clone(&self.emu), self.id, Rc::clone(&self.loads));
        let index: Vec<ClusterId> = self.clusters.iter().map(|(c, _)| *c).collect();
        self.post(async move {
            let lease = msg.relocation.req.id;
            let mut to = None;
            for (cluster, lrms) in &others {
                let answer = emu.call(me, lrms, AdoptLease(msg.relocation.clone())).await;
                if answer.is_some_and(|a| a.accepted) {
                    to = Some(*cluster);
                    break;
                }
            }
            if let Some(dest) = to.and_then(|t| index.iter().position(|c| *c == t)) {
                // The lease's cores move with it.
                let mut l = loads.borrow_mut();
                if let Some((j, cores)) = l.1.get(&lease).copied() {
                    l.0.busy[j] -= cores;
                    l.0.busy[dest] += cores;
                    l.1.insert(lease, (dest, cores));
                }
            }
            if let Some(source) = source {
                emu.send(me, &source, RelocationOutcome { lease, to });
            }
        });
    }
}
