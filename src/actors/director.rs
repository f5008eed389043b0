//! The director: ends the run when every request is terminal (or at the end time / horizon)
//! and hands control back to the library, which collects the results.

use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};
use tokio::sync::oneshot;

use super::messages::{EndOfRun, RequestDone};
use super::{Emu, Peer};
use crate::time::EmuTime;
use crate::topology::EndCondition;
use crate::trace::ActorId;

/// Starts and ends the run.
pub struct Director {
    emu: Rc<Emu>,
    id: ActorId,
    outstanding: usize,
    end: EndCondition,
    done: Option<oneshot::Sender<EmuTime>>,
}

impl Director {
    /// A director for a run with `requests` requests; `done` receives the end time.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        requests: usize,
        end: EndCondition,
        done: oneshot::Sender<EmuTime>,
    ) -> Director {
        Director {
            emu,
            id,
            outstanding: requests,
            end,
            done: Some(done),
        }
    }

    fn finish(&mut self) {
        if let Some(tx) = self.done.take() {
            // Nothing may move between the end and the collection of the results.
            self.emu.clock().halt();
            // The receiver only goes away if the run was abandoned; nothing to report then.
            let _ = tx.send(self.emu.now());
        }
    }
}

emu_shell!(Director);

handles_caused!(Director; EndOfRun, RequestDone);

impl Actor for Director {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let me = Peer {
            id: self.id,
            addr: ctx.address(),
        };
        self.emu.send_at(self.end.limit(), self.id, me, EndOfRun);
        if self.outstanding == 0 && matches!(self.end, EndCondition::AllDone { .. }) {
            self.finish();
        }
    }
}

impl Handler<RequestDone> for Director {
    type Result = ();
    fn handle(&mut self, _: RequestDone, _: &mut Context<Self>) {
        self.outstanding = self.outstanding.saturating_sub(1);
        if self.outstanding == 0 && matches!(self.end, EndCondition::AllDone { .. }) {
            self.finish();
        }
    }
}

impl Handler<EndOfRun> for Director {
    type Result = ();
    fn handle(&mut self, _: EndOfRun, _: &mut Context<Self>) {
        self.finish();
    }
}
