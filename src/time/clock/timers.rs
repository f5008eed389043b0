//! Timer handles (a timer that can be cancelled or moved) and groups of them that fire
//! together.

use super::*;

/// Calls off timed events scheduled with [`Clock::at_cancellable`] or [`Clock::at_with`]:
/// one handle for one event or several, which fire while they are due by its cut-off
/// (`None`: none fire). (Events that share more than their cut-off, such as a VM's planned
/// steps, are a [`Group`].)
#[derive(Clone, Debug)]
pub struct TimerHandle(pub(super) Rc<Cell<Option<EmuTime>>>);

impl TimerHandle {
    /// A handle whose events all fire until called off.
    pub fn new() -> TimerHandle {
        TimerHandle(Rc::new(Cell::new(Some(EmuTime::NEVER))))
    }

    /// The events will not fire (a no-op for those that have).
    pub fn cancel(&self) {
        self.0.set(None);
    }

    /// The events due after `t` will not fire.
    pub fn cancel_after(&self, t: EmuTime) {
        self.0.set(self.0.get().min(Some(t)));
    }
}

impl Default for TimerHandle {
    fn default() -> Self {
        TimerHandle::new()
    }
}

/// What the events of a [`Group`] do: event `member` (as given to [`Clock::at_member`])
/// runs `fire(member)`.
pub trait Members {
    /// Runs event `member` of the group.
    fn fire(&self, member: u32);
}

/// Timed events scheduled together (a VM's planned steps), sharing one allocation: what they
/// need to run (`events`, a [`Members`]) and one cut-off, as a [`TimerHandle`] has, which
/// calls them off together or from an instant on. Where each event would box a closure of
/// its own (and clone the handle), a group's event in the queue holds only the group and its
/// number.
pub struct Group<E: ?Sized> {
    /// The latest due time that still fires (`None`: none fire).
    pub(super) cutoff: Cell<Option<EmuTime>>,
    pub(super) events: E,
}

impl<E> Group<E> {
    /// A group whose events all fire until called off.
    pub fn new(events: E) -> Group<E> {
        Group {
            cutoff: Cell::new(Some(EmuTime::NEVER)),
            events,
        }
    }
}

impl<E: ?Sized> Group<E> {
    /// The events will not fire (a no-op for those that have).
    pub fn cancel(&self) {
        self.cutoff.set(None);
    }

    /// The events due after `t` will not fire.
    pub fn cancel_after(&self, t: EmuTime) {
        self.cutoff.set(self.cutoff.get().min(Some(t)));
    }

    /// What the events do.
    pub fn events(&self) -> &E {
        &self.events
    }
}

/// Whether an event due at `due` fires under the cut-off `cutoff`.
pub(super) fn fires(cutoff: &Cell<Option<EmuTime>>, due: EmuTime) -> bool {
    cutoff.get().is_some_and(|last| due <= last)
}
