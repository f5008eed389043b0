//! The VM lifecycle as a pure state machine. The VM actor holds a [`VmState`] and feeds it
//! [`VmEvent`]s; an event that makes no sense in the current state is an error, never a panic.
//!
//! ```text
//! Pending -Deploy-> Booting -Booted-> Running -Completed-> Finished
//! Running -Pause-> Paused -Suspend-> Suspending -Suspended-> Suspended
//! Suspended -Migrate-> Migrating -Migrated-> Suspended        (image copied to another cluster)
//! Suspended -Resume-> Resuming -Resumed-> Paused -Unpause-> Running
//! any state but Finished and Suspending -Stop-> Cancelled
//! ```

use serde::Serialize;

/// Where a VM is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VmState {
    /// Created, waiting to be deployed on its host.
    Pending,
    /// Image being deployed and the guest booting.
    Booting,
    /// Doing the lease's work.
    Running,
    /// CPU access stopped (a few ms), before suspension or after resumption.
    Paused,
    /// Memory being written to shared storage.
    Suspending,
    /// Memory image on shared storage; holds no host resources.
    Suspended,
    /// Memory being read back from shared storage.
    Resuming,
    /// Memory image being copied to another cluster; holds no host resources.
    Migrating,
    /// Completed its work.
    Finished,
    /// Stopped before completing (cancelled lease).
    Cancelled,
}

/// What can happen to a VM.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum VmEvent {
    /// The host starts deploying the VM.
    Deploy,
    /// Boot finished.
    Booted,
    /// The work is done.
    Completed,
    /// Stop the VM now (cancellation).
    Stop,
    /// Stop CPU access.
    Pause,
    /// Give CPU access back.
    Unpause,
    /// Start writing memory to storage.
    Suspend,
    /// Memory written.
    Suspended,
    /// Start reading memory back.
    Resume,
    /// Memory read back (the VM is left paused, to be unpaused).
    Resumed,
    /// Start copying the memory image to another cluster.
    Migrate,
    /// Copy done; the VM resumes at the destination.
    Migrated,
}

impl VmEvent {
    /// The event's name, as written in traces.
    pub fn name(self) -> &'static str {
        match self {
            VmEvent::Deploy => "Deploy",
            VmEvent::Booted => "Booted",
            VmEvent::Completed => "Completed",
            VmEvent::Stop => "Stop",
            VmEvent::Pause => "Pause",
            VmEvent::Unpause => "Unpause",
            VmEvent::Suspend => "Suspend",
            VmEvent::Suspended => "Suspended",
            VmEvent::Resume => "Resume",
            VmEvent::Resumed => "Resumed",
            VmEvent::Migrate => "Migrate",
            VmEvent::Migrated => "Migrated",
        }
    }

    /// Every event, for reading trace records back by name.
    pub const ALL: [VmEvent; 12] = [
        VmEvent::Deploy,
        VmEvent::Booted,
        VmEvent::Completed,
        VmEvent::Stop,
        VmEvent::Pause,
        VmEvent::Unpause,
        VmEvent::Suspend,
        VmEvent::Suspended,
        VmEvent::Resume,
        VmEvent::Resumed,
        VmEvent::Migrate,
        VmEvent::Migrated,
    ];

    /// The event a trace record of kind `name` stands for (see [`VmEvent::name`]).
    pub fn from_name(name: &str) -> Option<VmEvent> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The state every valid transition by this event ends in: each event leads to one state
    /// whatever it came from, so a trace reader can follow a VM from its steps alone.
    pub fn state_after(self) -> VmState {
        use VmEvent as E;
        use VmState as S;
        match self {
            E::Deploy => S::Booting,
            E::Booted | E::Unpause => S::Running,
            E::Completed => S::Finished,
            E::Stop => S::Cancelled,
            E::Pause | E::Resumed => S::Paused,
            E::Suspend => S::Suspending,
            E::Suspended | E::Migrated => S::Suspended,
            E::Resume => S::Resuming,
            E::Migrate => S::Migrating,
        }
    }
}

impl VmState {
    /// Every state, in the order of a VM's life (the order `intervals.csv` readers index).
    pub const ALL: [VmState; 10] = [
        VmState::Pending,
        VmState::Booting,
        VmState::Running,
        VmState::Paused,
        VmState::Suspending,
        VmState::Suspended,
        VmState::Resuming,
        VmState::Migrating,
        VmState::Finished,
        VmState::Cancelled,
    ];

    /// The state after `event`, or an error naming the impossible transition.
    pub fn next(self, event: VmEvent) -> Result<VmState, String> {
        use VmEvent as E;
        use VmState as S;
        let next = match (self, event) {
            (S::Pending, E::Deploy) => S::Booting,
            (S::Booting, E::Booted) => S::Running,
            (S::Running, E::Completed) => S::Finished,
            // A lease recalled the instant it started may be stopped while it boots or while
            // its memory is read back.
            (
                S::Pending
                | S::Booting
                | S::Running
                | S::Paused
                | S::Suspended
                | S::Resuming
                | S::Migrating,
                E::Stop,
            ) => S::Cancelled,
            (S::Running, E::Pause) => S::Paused,
            (S::Paused, E::Unpause) => S::Running,
            (S::Paused, E::Suspend) => S::Suspending,
            (S::Suspending, E::Suspended) => S::Suspended,
            (S::Suspended, E::Resume) => S::Resuming,
            (S::Resuming, E::Resumed) => S::Paused,
            (S::Suspended, E::Migrate) => S::Migrating,
            (S::Migrating, E::Migrated) => S::Suspended,
            (state, event) => return Err(format!("VM in state {state:?} cannot take {event:?}")),
        };
        Ok(next)
    }

    /// Whether the VM occupies cores and memory on a host in this state.
    pub fn holds_host(self) -> bool {
        !matches!(
            self,
            VmState::Pending
                | VmState::Suspended
                | VmState::Migrating
                | VmState::Finished
                | VmState::Cancelled
        )
    }

    /// Whether the VM's life is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, VmState::Finished | VmState::Cancelled)
    }

    /// The state's name in outputs (`intervals.csv`, trace exports): `booting`, `running`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            VmState::Pending => "pending",
            VmState::Booting => "booting",
            VmState::Running => "running",
            VmState::Paused => "paused",
            VmState::Suspending => "suspending",
            VmState::Suspended => "suspended",
            VmState::Resuming => "resuming",
            VmState::Migrating => "migrating",
            VmState::Finished => "finished",
            VmState::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use VmEvent as E;

    fn run(events: &[VmEvent]) -> Result<VmState, String> {
        events.iter().try_fold(VmState::Pending, |s, &e| s.next(e))
    }

    #[test]
    fn each_event_ends_in_one_state_whatever_it_came_from() {
        let states = VmState::ALL;
        for e in VmEvent::ALL {
            assert_eq!(VmEvent::from_name(e.name()), Some(e));
            for s in states {
                if let Ok(after) = s.next(e) {
                    assert_eq!(after, e.state_after(), "{s:?} -{e:?}->");
                }
            }
        }
        for s in states {
            let serde = serde_json::to_value(s).expect("serializes");
            assert_eq!(serde.as_str(), Some(s.as_str()), "as in intervals.csv");
        }
        assert_eq!(VmEvent::from_name("Occupy"), None);
    }

    #[test]
    fn normal_life_boots_runs_and_finishes() {
        assert_eq!(
            run(&[E::Deploy, E::Booted, E::Completed]),
            Ok(VmState::Finished)
        );
    }

    #[test]
    fn suspend_resume_cycle_returns_to_running() {
        let s = run(&[
            E::Deploy,
            E::Booted,
            E::Pause,
            E::Suspend,
            E::Suspended,
            E::Resume,
            E::Resumed,
            E::Unpause,
        ]);
        assert_eq!(s, Ok(VmState::Running));
    }

    #[test]
    fn migration_copies_a_suspended_image() {
        let s = run(&[
            E::Deploy,
            E::Booted,
            E::Pause,
            E::Suspend,
            E::Suspended,
            E::Migrate,
        ]);
        assert_eq!(s, Ok(VmState::Migrating));
        assert!(!VmState::Migrating.holds_host());
        let s = VmState::Migrating
            .next(E::Migrated)
            .and_then(|s| s.next(E::Resume));
        assert_eq!(s, Ok(VmState::Resuming));
    }

    #[test]
    fn impossible_transitions_are_errors() {
        assert!(run(&[E::Booted]).is_err());
        assert!(run(&[E::Deploy, E::Booted, E::Completed, E::Pause]).is_err());
        assert!(run(&[E::Deploy, E::Booted, E::Suspend]).is_err());
    }

    #[test]
    fn host_resources_are_held_only_while_on_a_host() {
        assert!(VmState::Running.holds_host());
        assert!(VmState::Suspending.holds_host());
        assert!(!VmState::Suspended.holds_host());
        assert!(VmState::Finished.is_terminal());
    }
}
