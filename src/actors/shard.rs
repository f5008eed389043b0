//! Shards of a realtime run on several threads (`--threads N`): each shard runs some Grids
//! (each IGG with its clusters, hosts, VMs and users) on its own actix arbiter, with its own
//! clock, tracer, observations and faults. What crosses shards is what crosses Grids: the
//! messages on the links between IGGs, posted to the receiving shard's clock with their due
//! time ([`crate::time::remote::Mailbox`]), and the end of the run, when every shard's own
//! requests are done. A post runs on the receiving thread with that thread's run context
//! (`with_shard`), so its message is counted as work there, as any other.

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::director::Director;
use super::messages::EndOfRun;
use super::{Emu, Peer};
use crate::model::GridId;
use crate::time::remote::Mailbox;

/// How a shard is reached from the others.
pub struct Door {
    /// Its clock's mailbox.
    pub mailbox: Arc<Mailbox>,
    /// Its director (told when the whole run ends).
    pub director: Peer<Director>,
}

/// What the shards of a run share: where each Grid runs, how to reach each shard, and how
/// many shards still have requests of their own open.
pub struct Federation {
    shards: usize,
    shard_of: Vec<usize>,
    doors: OnceLock<Vec<Door>>,
    busy: AtomicUsize,
}

impl Federation {
    /// A federation of `shards` shards, Grid `g` running on shard `shard_of[g]`.
    pub fn new(shard_of: Vec<usize>, shards: usize) -> Federation {
        Federation {
            shards,
            shard_of,
            doors: OnceLock::new(),
            busy: AtomicUsize::new(shards),
        }
    }

    /// How many shards the run has.
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The shard Grid `g` runs on.
    pub fn shard_of(&self, g: GridId) -> usize {
        self.shard_of.get(usize::from(g.0)).copied().unwrap_or(0)
    }

    /// Sets how each shard is reached, once every shard is built (before any runs).
    pub fn open(&self, doors: Vec<Door>) {
        let _ = self.doors.set(doors);
    }

    /// The mailbox of shard `shard`.
    pub fn mailbox(&self, shard: usize) -> Option<&Arc<Mailbox>> {
        self.doors.get()?.get(shard).map(|d| &d.mailbox)
    }

    /// A shard's own requests are all done; when it is the last, every shard is told the
    /// run is over (each ends at its own current instant).
    pub fn shard_done(&self) {
        if self.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.end_all();
        }
    }

    /// Tells every shard the run is over (the last shard done; or a shard that panicked, so
    /// that the others do not wait for it forever).
    pub fn end_all(&self) {
        // Invariant: the doors are opened before any actor runs, and this is called from an
        // actor, so they are set.
        let Some(doors) = self.doors.get() else {
            return;
        };
        for door in doors {
            let director = door.director.clone();
            door.mailbox.post_now(Box::new(move || {
                with_shard(|emu| emu.send(director.id, &director, EndOfRun));
            }));
        }
    }
}

thread_local! {
    /// The run context of the shard running on this thread.
    static SHARD: RefCell<Weak<Emu>> = const { RefCell::new(Weak::new()) };
}

/// Makes `emu` the context posts to this thread run with.
pub(super) fn enter(emu: &Rc<Emu>) {
    SHARD.with(|s| *s.borrow_mut() = Rc::downgrade(emu));
}

/// Runs `f` with this thread's shard context; nothing if its run is over.
pub(super) fn with_shard(f: impl FnOnce(&Rc<Emu>)) {
    let emu = SHARD.with(|s| s.borrow().upgrade());
    if let Some(emu) = emu {
        f(&emu);
    }
}
