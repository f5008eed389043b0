//! Promises a Grid can keep. Paper 004's provider answers an offer on its cost model and load
//! alone (§5.2); an accept or a counter-offer is a promise to run the request, so before it
//! answers the broker checks the request against what the provider's clusters published: a
//! request with a deadline is promised only if some cluster's free slots give it a start from
//! which it ends by its deadline, counting the slots promised earlier in the same evaluation.
//! The requester side keeps the other half: it offers no request whose deadline nobody can
//! meet any more (too little time is left to run it even if it started now).
//!
//! What the check cannot see is the time a cluster's admission adds to a run (deploying the
//! VMs) and what changes between the answer and the redirection's arrival (local requests
//! taking the slot, a publication that has grown stale): a request redirected all the same and
//! then refused by every cluster of the provider stays its own outcome,
//! `rejected-after-redirect`.

use super::slots::SlotStore;
use crate::model::LeaseRequest;
use crate::time::{EmuDuration, EmuTime};

/// When `req` must end, if it has a deadline: only a deadline-constrained request has one; a
/// deadline given as a ratio of its run time is its arrival plus that many run times (as the
/// IGG's cost window reads it).
pub(crate) fn deadline_of(req: &LeaseRequest) -> Option<EmuTime> {
    if !req.lease_type.deadline_constrained() {
        return None;
    }
    req.deadline.or_else(|| {
        req.deadline_ratio
            .map(|r| req.arrival + EmuDuration::from_secs_f64(req.duration.as_secs_f64() * r))
    })
}

/// Whether anyone can still run `req` by its deadline if it started at `at`: a request without
/// a deadline always can.
pub(crate) fn still_possible(req: &LeaseRequest, at: EmuTime) -> bool {
    deadline_of(req).is_none_or(|d| at + req.duration <= d)
}

/// What a provider's published slots say of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// The slots cannot tell: a cluster has not published (or the request has no deadline
    /// and fits nowhere within the horizon: nothing to check).
    Unknown,
    /// The earliest start a cluster's free slots give it.
    From(EmuTime),
    /// No cluster's free slots give it a start by which it ends in time.
    None,
}

/// The acceptance check: whether a provider can promise to run `req`, whose redirection
/// would arrive at `at`, by its deadline, given what its slots say (`room`). A request
/// without a deadline can always be promised; one with a deadline must end by it when run
/// from its earliest start (`at` itself where the slots cannot tell).
pub(crate) fn can_promise(req: &LeaseRequest, at: EmuTime, room: Room) -> bool {
    let Some(deadline) = deadline_of(req) else {
        return true;
    };
    match room {
        Room::Unknown => at + req.duration <= deadline,
        Room::From(start) => start.max(at) + req.duration <= deadline,
        Room::None => false,
    }
}

/// A slot a promise took: on a cluster (by index), from a start, so many cores, for so long.
pub(crate) type Booking = (usize, EmuTime, u64, EmuDuration);

/// A provider's clusters as one evaluation of offers sees them: their published slots as of
/// the time the redirections would arrive, less what was promised since they published
/// (this evaluation's promises and the earlier ones its clusters have not published yet).
pub(crate) struct Promises {
    slots: SlotStore,
    clusters: usize,
    at: EmuTime,
    booked: Vec<Booking>,
}

impl Promises {
    /// The promises `clusters` clusters publishing `slots` can make for redirections
    /// arriving at `at`, after the slots `earlier` promises took (a copy: what is promised
    /// here is not booked in the IGG's store, whose loads price the requests).
    pub(crate) fn new(
        slots: &SlotStore,
        clusters: usize,
        at: EmuTime,
        earlier: &[Booking],
    ) -> Promises {
        let mut slots = slots.clone();
        for &(j, start, cores, length) in earlier {
            slots.book(j, start, cores, length);
        }
        Promises {
            slots,
            clusters,
            at,
            booked: Vec::new(),
        }
    }

    /// The slots this evaluation's promises took.
    pub(crate) fn booked(self) -> Vec<Booking> {
        self.booked
    }

    /// What the slots say of `req`, and the cluster of its earliest start. A request whose
    /// deadline lies past the nearest horizon is searched for with each cluster's last
    /// published step holding on past it ([`SlotStore::earliest_past_horizon_on`], as the
    /// loads read the time past the horizon); otherwise nothing past the horizon is free.
    fn room(&self, req: &LeaseRequest) -> (Room, Option<usize>) {
        if !(0..self.clusters).all(|j| self.slots.knows(j)) {
            return (Room::Unknown, None);
        }
        let (cores, run, at) = (req.cores(), req.duration, self.at);
        let past =
            deadline_of(req).is_some_and(|d| self.slots.horizon_end().is_some_and(|end| d > end));
        let earliest = (0..self.clusters)
            .filter_map(|j| {
                let start = match past {
                    true => self.slots.earliest_past_horizon_on(j, at, cores, run),
                    false => self.slots.earliest_on(j, at, cores, run),
                };
                Some((start?, j))
            })
            .min();
        match (earliest, deadline_of(req)) {
            (Some((start, j)), _) => (Room::From(start), Some(j)),
            (None, Some(_)) => (Room::None, None),
            (None, None) => (Room::Unknown, None),
        }
    }

    /// Whether `req` can be promised ([`can_promise`] on the slots left).
    pub(crate) fn can_keep(&self, req: &LeaseRequest) -> bool {
        can_promise(req, self.at, self.room(req).0)
    }

    /// `req` was promised (accepted or counter-offered): its earliest slot is taken for the
    /// rest of the evaluation.
    pub(crate) fn promise(&mut self, req: &LeaseRequest) {
        if let (Room::From(start), Some(j)) = self.room(req) {
            self.slots.book(j, start, req.cores(), req.duration);
            self.booked.push((j, start, req.cores(), req.duration));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::igg::broker::tests::req;
    use crate::igg::slots::Published;
    use crate::model::LeaseType;
    use proptest::prelude::*;

    fn with_deadline(duration: u64, deadline: u64) -> LeaseRequest {
        let mut r = req(1);
        r.lease_type = LeaseType::DeadlineNonPreemptable;
        r.vms = 2;
        r.cores_per_vm = 2;
        r.duration = EmuDuration::from_secs(duration);
        r.deadline = Some(EmuTime::from_secs(deadline));
        r
    }

    /// One 8-core cluster with `busy` cores taken until `until_busy`, published to 10 000 s.
    fn one_cluster(busy: u64, until_busy: u64) -> SlotStore {
        let mut s = SlotStore::default();
        s.publish(
            0,
            Published {
                free: vec![
                    (EmuTime::ZERO, 8 - busy),
                    (EmuTime::from_secs(until_busy), 8),
                ],
                until: EmuTime::from_secs(10_000),
                cores: 8,
                price: 1.0,
            },
        );
        s
    }

    proptest! {
        #[test]
        fn a_request_is_promised_exactly_when_the_slots_fit_it_by_its_deadline(
            busy in 0u64..=8,
            until_busy in 1u64..5_000,
            at in 0u64..3_000,
            duration in 1u64..3_000,
            slack in 0u64..6_000,
        ) {
            // The request takes 4 cores; with `busy` taken until `until_busy` it starts at
            // `at` if 4 are free then, else when the busy ones end.
            let deadline = at + duration + slack;
            let r = with_deadline(duration, deadline);
            let p = Promises::new(&one_cluster(busy, until_busy), 1, EmuTime::from_secs(at), &[]);
            // Within the horizon (10 000 s) the slots say; a deadline past it is searched
            // for with the last step (all 8 free) holding on; a run ending past the horizon
            // but by a deadline within it finds no room.
            let start = if busy <= 4 || at >= until_busy { at } else { until_busy };
            let fits = start + duration <= deadline.min(10_000) || deadline > 10_000 && start + duration <= deadline;
            prop_assert_eq!(p.can_keep(&r), fits, "start {}", start);
            // Without a deadline it is always promised; without a publication, only the
            // time left counts.
            let mut best_effort = r.clone();
            best_effort.lease_type = LeaseType::BestEffortSuspendable;
            prop_assert!(p.can_keep(&best_effort));
            let blind = Promises::new(&SlotStore::default(), 1, EmuTime::from_secs(at), &[]);
            prop_assert!(blind.can_keep(&r));
            prop_assert_eq!(still_possible(&r, EmuTime::from_secs(at + slack)), true);
            prop_assert_eq!(still_possible(&r, EmuTime::from_secs(at + slack + 1)), false);
        }

        #[test]
        fn a_promise_takes_its_slot_from_the_next_request_of_the_evaluation(
            duration in 1u64..3_000,
            slack in 0u64..3_000,
        ) {
            // An idle 8-core cluster fits two 4-core requests side by side, not a third.
            let r = with_deadline(duration, duration + slack);
            let mut p = Promises::new(&one_cluster(0, 1), 1, EmuTime::ZERO, &[]);
            for _ in 0..2 {
                prop_assert!(p.can_keep(&r));
                p.promise(&r);
            }
            prop_assert_eq!(p.can_keep(&r), slack >= duration);
            // The next evaluation, before the cluster publishes again, sees them taken too.
            let next = Promises::new(&one_cluster(0, 1), 1, EmuTime::ZERO, &p.booked());
            prop_assert_eq!(next.can_keep(&r), slack >= duration);
        }
    }

    #[test]
    fn past_the_published_horizon_the_last_step_holds_on() {
        // Busy until 5 000 s, free after, published to 10 000 s: a run of 8 000 s from
        // 5 000 s outlasts the publication, and is promised if its deadline lies past it.
        let p = Promises::new(&one_cluster(8, 5_000), 1, EmuTime::ZERO, &[]);
        assert!(p.can_keep(&with_deadline(4_000, 9_000)));
        assert!(!p.can_keep(&with_deadline(4_000, 8_999)));
        assert!(p.can_keep(&with_deadline(8_000, 13_000)));
        assert!(!p.can_keep(&with_deadline(8_000, 12_999)));
        // Busy up to the horizon: a step at the horizon is not published free, so nothing
        // is known to be free past it either.
        let p = Promises::new(&one_cluster(8, 10_000), 1, EmuTime::ZERO, &[]);
        assert!(!p.can_keep(&with_deadline(100, 20_000)));
    }
}
