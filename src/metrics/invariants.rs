//! The invariants a run must keep, as the online checker reports their violations: no
//! request served by two Grids or confirmed twice, none ended twice, no host over capacity,
//! no VM taking a step its state machine forbids, nothing the LRMS core finds inconsistent,
//! and at the end every offer settled and the money conserved.

use std::fmt;

use crate::model::{GridId, RequestId, RequestState};
use crate::time::EmuTime;

/// One broken invariant; its text (`Display`) is what `summary.json` lists.
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// Two Grids started the same request.
    ServedTwice {
        /// The request.
        request: RequestId,
        /// The Grid that started it first.
        first: GridId,
        /// The other.
        then: GridId,
    },
    /// A provider's ticket for one request was confirmed twice.
    ConfirmedTwice {
        /// The request.
        request: RequestId,
        /// The first confirmation: Grid and negotiation.
        first: (GridId, u64),
        /// The second.
        then: (GridId, u64),
    },
    /// A request reached a second terminal state.
    EndedTwice {
        /// The request.
        request: RequestId,
        /// Its first terminal state.
        first: RequestState,
        /// The second.
        then: RequestState,
    },
    /// At the end of a run where every request ended, an offer was still open.
    OfferOpen {
        /// The negotiation.
        negotiation: u64,
        /// The requester.
        grid: GridId,
    },
    /// What the Grids paid differs from what their peers received.
    MoneyNotConserved {
        /// Paid in total.
        paid: f64,
        /// Received in total.
        received: f64,
    },
    /// A host holds more cores (or memory, where enforced) than it has.
    HostOverCapacity {
        /// The host's trace name.
        host: String,
        /// When.
        at: EmuTime,
        /// Cores used and held.
        cores: (u64, u32),
        /// Memory used and held, MB.
        memory_mb: (u64, u64),
    },
    /// A VM was told to take a step its state forbids.
    VmStep {
        /// The VM's trace name.
        vm: String,
        /// What the state machine said.
        error: String,
    },
    /// The LRMS core found its own state inconsistent.
    Lrms {
        /// The LRMS's trace name.
        lrms: String,
        /// What it found.
        what: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::ServedTwice {
                request,
                first,
                then,
            } => write!(
                f,
                "request #{} served by grids #{} and #{}",
                request.0, first.0, then.0
            ),
            Violation::ConfirmedTwice {
                request,
                first,
                then,
            } => write!(
                f,
                "request #{} confirmed twice (grid #{} negotiation {}, then grid #{} negotiation {})",
                request.0, first.0 .0, first.1, then.0 .0, then.1
            ),
            Violation::EndedTwice {
                request,
                first,
                then,
            } => write!(
                f,
                "request #{} ended twice ({} then {})",
                request.0,
                first.as_str(),
                then.as_str()
            ),
            Violation::OfferOpen { negotiation, grid } => write!(
                f,
                "offer {negotiation} of grid #{} never answered, expired or retried",
                grid.0
            ),
            Violation::MoneyNotConserved { paid, received } => write!(
                f,
                "money not conserved: grids paid {paid:.6}, peers received {received:.6}"
            ),
            Violation::HostOverCapacity {
                host,
                at,
                cores,
                memory_mb,
            } => write!(
                f,
                "{host} over capacity at {at}: {} / {} cores, {} / {} MB",
                cores.0, cores.1, memory_mb.0, memory_mb.1
            ),
            Violation::VmStep { vm, error } => write!(f, "{vm}: {error}"),
            Violation::Lrms { lrms, what } => write!(f, "{lrms}: {what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_read_as_before() {
        let ended = Violation::EndedTwice {
            request: RequestId(4),
            first: RequestState::Completed,
            then: RequestState::Rejected,
        };
        assert_eq!(
            ended.to_string(),
            "request #4 ended twice (completed then rejected)"
        );
        let confirmed = Violation::ConfirmedTwice {
            request: RequestId(1),
            first: (GridId(0), 7),
            then: (GridId(2), 9),
        };
        assert_eq!(
            confirmed.to_string(),
            "request #1 confirmed twice (grid #0 negotiation 7, then grid #2 negotiation 9)"
        );
    }
}
