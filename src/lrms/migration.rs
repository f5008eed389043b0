//! The migration route of a preemption (paper 003 §4.2): whether a migratable lease that
//! cannot keep its deadline if it is suspended and resumed here after a local lease can keep
//! it by migrating to another cluster of its Grid, as the Grid's published free slots (paper
//! 004 §4.1, [`Published`]) show them.
//!
//! Paper 003 defines a migratable lease as one that, once preempted, "will be resumed and
//! finished before its deadline, either on the same resource or on another resource". The
//! LRMS sees the other resources through the slots they publish to their IGG; a cluster that
//! publishes nothing, or whose slots do not show room, offers no route (the lease is then not
//! a candidate, as when the Grid has no other cluster).
//!
//! The route is taken when some other cluster publishes at least the lease's cores free
//! throughout `[begin, begin + migration + remaining)` — from the moment its VMs begin to be
//! vacated here, through its migration (eq. 8 without δ) and the rest of its work at this
//! cluster's pace — and that ends by the lease's deadline. Cores only: the published slots
//! carry no memory. Time past a publication's horizon is not free. The check is conservative
//! (the destination is asked for the cores while the images are still on their way); whether
//! the lease really moves is decided when it is offered ([`super::Core::adopt`] there), and if
//! no cluster takes it, it resumes here as a suspended lease would.

use crate::model::Published;
use crate::time::{EmuDuration, EmuTime};

/// What a migration needs of another cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// When its VMs begin to be vacated here.
    pub begin: EmuTime,
    /// Eq. 8 without δ: suspension, copies and resumption, overlapped as the paper says.
    pub migration: EmuDuration,
    /// The work it has left.
    pub remaining: EmuDuration,
    /// Its cores (VMs × cores per VM).
    pub cores: u64,
    /// Its deadline.
    pub deadline: EmuTime,
}

impl Route {
    /// When it would finish elsewhere.
    pub fn finish(&self) -> EmuTime {
        self.begin + self.migration + self.remaining
    }

    /// Whether one of `elsewhere` (the other clusters' last publications) shows room for it
    /// and it would finish by its deadline there.
    pub fn open(&self, elsewhere: &[Published]) -> bool {
        let finish = self.finish();
        finish <= self.deadline && elsewhere.iter().any(|p| self.fits(p, finish))
    }

    /// Whether `p` publishes at least its cores free over `[begin, finish)`.
    fn fits(&self, p: &Published, finish: EmuTime) -> bool {
        if finish > p.until {
            return false;
        }
        let changes = p
            .free
            .iter()
            .filter(|&&(at, _)| at > self.begin && at < finish)
            .map(|&(at, _)| at);
        std::iter::once(self.begin)
            .chain(changes)
            .all(|t| p.free_at(t) >= self.cores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    fn published(free: &[(u64, u64)], until: u64, cores: u64) -> Published {
        Published {
            free: free.iter().map(|&(t, f)| (secs(t), f)).collect(),
            until: secs(until),
            cores,
            price: 1.0,
        }
    }

    fn route(begin: u64, migration: u64, remaining: u64, cores: u64, deadline: u64) -> Route {
        Route {
            begin: secs(begin),
            migration: EmuDuration::from_secs(migration),
            remaining: EmuDuration::from_secs(remaining),
            cores,
            deadline: secs(deadline),
        }
    }

    #[test]
    fn an_empty_cluster_takes_a_lease_that_finishes_by_its_deadline() {
        // Issue 40: a second cluster of the Grid, empty; the lease migrates in 86 s.
        let empty = published(&[(100, 8)], 100 + 3600, 8);
        assert!(route(100, 86, 600, 2, 800).open(std::slice::from_ref(&empty)));
        // Not by a deadline before the migration and the work left are done.
        assert!(!route(100, 86, 600, 2, 785).open(std::slice::from_ref(&empty)));
        // No publication, no route.
        assert!(!route(100, 86, 600, 2, 800).open(&[]));
    }

    #[test]
    fn a_cluster_busy_at_any_moment_of_the_run_or_past_its_horizon_is_no_route() {
        // 1 core free from 300 to 400 only.
        let busy = published(&[(0, 8), (300, 1), (400, 8)], 2000, 8);
        assert!(!route(100, 86, 600, 2, 5000).open(std::slice::from_ref(&busy)));
        assert!(route(400, 86, 600, 2, 5000).open(std::slice::from_ref(&busy)));
        assert!(route(0, 100, 200, 2, 5000).open(std::slice::from_ref(&busy)));
        // Past the horizon nothing is known to be free.
        let short = published(&[(0, 8)], 500, 8);
        assert!(!route(0, 100, 600, 2, 5000).open(std::slice::from_ref(&short)));
        // One of several clusters is enough.
        assert!(route(100, 86, 600, 2, 5000).open(&[busy, published(&[(0, 8)], 5000, 8)]));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        /// The route is open exactly when, second by second, some cluster has the cores
        /// free over the whole run elsewhere, within its horizon and by the deadline.
        #[test]
        fn open_agrees_with_a_second_by_second_walk(
            steps in prop::collection::vec((0u64..200, 0u64..6), 0..6),
            until in 50u64..300,
            (begin, migration, remaining, cores, deadline) in (0u64..150, 0u64..40, 0u64..100, 1u64..5, 0u64..400),
        ) {
            let mut free: Vec<(u64, u64)> = steps.clone();
            free.sort_unstable();
            free.dedup_by_key(|x| x.0);
            let p = published(&free, until, 5);
            let r = route(begin, migration, remaining, cores, deadline);
            let finish = begin + migration + remaining;
            // Free cores at second t, from the steps as written (before the first: all).
            let at = |t: u64| {
                if t >= until {
                    return 0;
                }
                free.iter().rev().find(|s| s.0 <= t).map_or(5, |s| s.1)
            };
            let expected = finish <= deadline && (begin..finish.max(begin + 1)).all(|t| at(t) >= cores) && finish <= until;
            prop_assert_eq!(r.open(std::slice::from_ref(&p)), expected);
        }
    }
}
