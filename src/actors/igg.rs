//! The IGG actor and its post office. Every inbound message is handled in its own task (the
//! Java IGG spawns a thread per message), so handlers interleave at their await points — for
//! example while one request waits for an LRMS's answer, the next is already being placed.
//! The placement decision itself comes from the pure dispatcher in `crate::igg`.

use std::future::Future;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::lrms::Lrms;
use super::messages::{
    AdoptLease, AssignLease, LeaseEnded, LeaseStarted, RelocateLease, RelocationOutcome,
    SubmitExternal,
};
use super::users::Users;
use super::{Emu, Peer};
use crate::igg::Dispatcher;
use crate::model::{ClusterId, RequestState};
use crate::trace::ActorId;

/// A Grid's InterGrid Gateway.
pub struct Igg {
    emu: Rc<Emu>,
    id: ActorId,
    clusters: Vec<(ClusterId, Peer<Lrms>)>,
    dve: Option<Peer<Users>>,
    dispatcher: Dispatcher,
    handlers_in_flight: Rc<std::cell::Cell<u32>>,
}

impl Igg {
    /// The IGG of a Grid with these clusters' LRMSs and (if any) its DVE manager.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        clusters: Vec<(ClusterId, Peer<Lrms>)>,
        dve: Option<Peer<Users>>,
        dispatcher: Dispatcher,
    ) -> Igg {
        Igg {
            emu,
            id,
            clusters,
            dve,
            dispatcher,
            handlers_in_flight: Rc::default(),
        }
    }

    /// The post office: run `handler` as its own task.
    fn post(&self, handler: impl Future<Output = ()> + 'static) {
        let in_flight = Rc::clone(&self.handlers_in_flight);
        in_flight.set(in_flight.get() + 1);
        actix::spawn(async move {
            handler.await;
            in_flight.set(in_flight.get() - 1);
        });
    }
}

impl Actor for Igg {
    type Context = Context<Self>;
}

impl Handler<SubmitExternal> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SubmitExternal, _: &mut Context<Self>) {
        let order = self.dispatcher.order(self.clusters.len());
        let candidates: Vec<Peer<Lrms>> = order
            .into_iter()
            .map(|i| self.clusters[i].1.clone())
            .collect();
        let (emu, me, dve) = (Rc::clone(&self.emu), self.id, self.dve.clone());
        let req = msg.0;
        self.post(async move {
            for lrms in &candidates {
                let answer = emu.call(me, lrms, AssignLease(req.clone())).await;
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
        let from = self
            .clusters
            .iter()
            .position(|(c, _)| *c == msg.from)
            .unwrap_or(0);
        let others: Vec<(ClusterId, Peer<Lrms>)> = (1..n)
            .map(|k| self.clusters[(from + k) % n].clone())
            .collect();
        let source = self.clusters.get(from).map(|(_, p)| p.clone());
        let (emu, me) = (Rc::clone(&self.emu), self.id);
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
            if let Some(source) = source {
                emu.send(me, &source, RelocationOutcome { lease, to });
            }
        });
    }
}
