//! The IGG actor and its post office. Every inbound message is handled in its own task (the
//! Java IGG spawns a thread per message), so handlers interleave at their await points — for
//! example while one request waits for an LRMS's answer, the next is already being placed.
//! The placement decision itself comes from the pure dispatcher in `crate::igg`.

use std::future::Future;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::lrms::Lrms;
use super::messages::{AssignLease, LeaseEnded, LeaseStarted, SubmitExternal};
use super::users::Users;
use super::{Emu, Peer};
use crate::igg::Dispatcher;
use crate::model::RequestState;
use crate::trace::ActorId;

/// A Grid's InterGrid Gateway.
pub struct Igg {
    emu: Rc<Emu>,
    id: ActorId,
    clusters: Vec<Peer<Lrms>>,
    dve: Option<Peer<Users>>,
    dispatcher: Dispatcher,
    handlers_in_flight: Rc<std::cell::Cell<u32>>,
}

impl Igg {
    /// The IGG of a Grid with these clusters' LRMSs and (if any) its DVE manager.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        clusters: Vec<Peer<Lrms>>,
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
            .map(|i| self.clusters[i].clone())
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
