//! The dispatch decision point: how an IGG distributes external requests over its clusters
//! (paper 000 §3–5). A policy implements [`Dispatch`]: given an external request and what the
//! IGG knows of its clusters (their models, the loads and earliest starts their published
//! slots show), it returns the order in which to try them. Each shipped policy is a type of
//! its own in this folder, built by name through [`crate::policy::Registry`]:
//!
//! * **RR** — round robin (eq. 25, [`RoundRobin`]);
//! * **LRF** — least rate first, random with P_j ∝ 1 − λ_j / Σλ (eq. 26, [`Lrf`]);
//! * **BCF** — biggest cluster first, random with P_j ∝ Σ_i s_ij (eq. 27, [`Bcf`]);
//! * **PAP** — the preemption-aware workload allocation of Algorithm 1 (`pap.rs`), dispatched
//!   either at random (**PAP-RND**, [`PapRnd`]) or with the billiard sequence per request type
//!   of Algorithm 2 (**PAP-RTDP**, [`PapRtdp`]);
//! * **least-load** — the cluster with the fewest cores taken ([`LeastLoad`]);
//! * **earliest-start** — the cluster whose LRMS offers the earliest start ([`EarliestStart`]).
//!
//! Every shipped policy tries its choice first, then the others round-robin after it.

mod bcf;
mod earliest_start;
mod least_load;
mod lrf;
mod pap;
mod pap_rnd;
mod pap_rtdp;
mod rr;

pub use bcf::Bcf;
pub use earliest_start::EarliestStart;
pub use least_load::LeastLoad;
pub use lrf::Lrf;
pub use pap::{pap_rates, ClusterModel};
pub(crate) use pap::{Billiard, CV_EXTERNAL, CV_LOCAL};
pub use pap_rnd::PapRnd;
pub use pap_rtdp::PapRtdp;
pub use rr::RoundRobin;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::model::LeaseRequest;
use crate::time::EmuTime;

named_enum! {
    /// The IGG's shipped policies for placing external requests on its clusters (paper 000
    /// §4–5).
    DispatchName {
        /// Round-robin over the Grid's clusters.
        RoundRobin => "rr",
        /// Least rate (of local requests) first, random dispatch.
        Lrf => "lrf",
        /// Biggest (computing power) cluster first, random dispatch.
        Bcf => "bcf",
        /// Preemption-aware allocation, random dispatch.
        PapRnd => "pap-rnd",
        /// Preemption-aware allocation, request-type billiard dispatch.
        PapRtdp => "pap-rtdp",
        /// The cluster with the fewest cores taken by this IGG's leases.
        LeastLoad => "least-load",
        /// The cluster whose LRMS offers the earliest start.
        EarliestStart => "earliest-start",
    }
}

/// What the IGG knows about its clusters' loads right now.
#[derive(Clone, Debug, Default)]
pub struct Loads {
    /// Cores taken per cluster: by everything, as the clusters' published slots show, when
    /// every cluster has published; otherwise by this IGG's running leases.
    pub busy: Vec<u64>,
    /// Cores of each cluster.
    pub cores: Vec<u64>,
}

/// What a dispatch decision is asked.
#[derive(Clone, Copy, Debug)]
pub struct DispatchAsk<'a> {
    /// When.
    pub now: EmuTime,
    /// The external request to place.
    pub request: &'a LeaseRequest,
    /// How many clusters the Grid has.
    pub clusters: usize,
    /// The clusters' loads (empty when not known at this decision).
    pub loads: &'a Loads,
    /// Per cluster, the earliest start it offers for the request (µs; `None` where it would
    /// refuse it); empty unless the policy [`Dispatch::wants_starts`].
    pub starts: &'a [Option<u64>],
}

/// What a dispatch policy is built from: the Grid's clusters as the IGG models them.
#[derive(Clone, Debug)]
pub struct DispatchSetup {
    /// The Grid's name.
    pub grid: String,
    /// Its clusters' names, in the order answers index them.
    pub clusters: Vec<String>,
    /// Each cluster's model (paper 000 Table 1), from its hosts and local workload.
    pub models: Vec<ClusterModel>,
    /// The Grid's external arrival rate Λ (per second).
    pub rate: f64,
    /// A seed for the policy's random choices (derived from the run's seed and the Grid).
    pub seed: u64,
}

/// A dispatch policy: in which order an IGG tries its clusters for an external request.
///
/// A policy that is not one igemu ships has its answers checked: an index out of range or
/// one named twice stops the run with an error naming the policy (or falls back to a named
/// built-in, when the topology says so).
pub trait Dispatch {
    /// The policy's name as outputs show it.
    fn name(&self) -> String;

    /// The clusters to try, in order (indices into the Grid's clusters, each at most once):
    /// the first is tried; the others, in turn, if it refuses and `igg.retry` allows. An
    /// empty order places the request nowhere.
    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize>;

    /// Whether the policy reads the clusters' earliest starts ([`DispatchAsk::starts`]): the
    /// IGG then asks its LRMSs for them before each decision, unless their published slots
    /// tell.
    fn wants_starts(&self) -> bool {
        false
    }

    /// Whether the policy reads the clusters' earliest starts where their published slots
    /// tell them (every cluster has published), without the IGG asking or booking them.
    fn reads_starts(&self) -> bool {
        false
    }
}

/// The shipped policy `name` stands for, built for `setup`.
pub fn builtin(name: DispatchName, setup: &DispatchSetup) -> Box<dyn Dispatch> {
    match name {
        DispatchName::RoundRobin => Box::new(RoundRobin::default()),
        DispatchName::Lrf => Box::new(Lrf::new(setup)),
        DispatchName::Bcf => Box::new(Bcf::new(setup)),
        DispatchName::PapRnd => Box::new(PapRnd::new(setup)),
        DispatchName::PapRtdp => Box::new(PapRtdp::new(setup)),
        DispatchName::LeastLoad => Box::new(LeastLoad),
        DispatchName::EarliestStart => Box::new(EarliestStart),
    }
}

/// `first`, then every other of `n` clusters round-robin after it.
pub(crate) fn rotation(first: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| (first + i) % n).collect()
}

/// Fractions summing to one, or equal ones when the weights do not.
fn normalise(w: Vec<f64>) -> Vec<f64> {
    let n = w.len();
    let s: f64 = w.iter().sum();
    if s > 0.0 {
        w.into_iter().map(|x| x / s).collect()
    } else {
        vec![1.0 / n.max(1) as f64; n]
    }
}

/// Random dispatch by fixed routing fractions P_j (what LRF, BCF and PAP-RND share).
#[derive(Clone, Debug)]
pub(crate) struct Weighted {
    fractions: Vec<f64>,
    rng: StdRng,
}

impl Weighted {
    /// Draws by `weights` (normalised), seeded by `seed`.
    fn new(weights: Vec<f64>, seed: u64) -> Weighted {
        Weighted {
            fractions: normalise(weights),
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The routing fractions.
    pub(crate) fn fractions(&self) -> &[f64] {
        &self.fractions
    }

    /// The order for one request: a cluster drawn by the fractions first.
    fn order(&mut self) -> Vec<usize> {
        let n = self.fractions.len();
        if n == 0 {
            return Vec::new();
        }
        let u: f64 = self.rng.random();
        let mut acc = 0.0;
        let mut first = n - 1;
        for (j, p) in self.fractions.iter().enumerate() {
            acc += p;
            if u < acc {
                first = j;
                break;
            }
        }
        rotation(first, n)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn pap_ends_on_overloaded_and_extreme_clusters() {
        // Hung before: local load alone at or past capacity (ρ ≥ 1), rates far beyond what
        // the cluster takes, and an eps below the numbers' resolution. Each must return, with
        // rates that are numbers ≥ 0.
        let model = |local_rate: f64, theta: f64| ClusterModel {
            cores: 4.0,
            speed: 4.0,
            local_rate,
            tau: 1.0,
            mu: 2.0,
            theta,
            omega: 2.0 * theta * theta,
        };
        for (clusters, total, eps) in [
            (vec![model(1.5, 10.0)], 0.5, 1e-9),
            (vec![model(0.9, 10.0)], 1e6, 1e-300),
            (vec![model(0.5, 1e-300), model(1.0, 1e300)], 1e300, 0.0),
            (vec![model(f64::MIN_POSITIVE, 1.0)], f64::MAX, 1e-12),
        ] {
            let rates = pap_rates(&clusters, total, eps);
            assert_eq!(rates.len(), clusters.len());
            assert!(rates.iter().all(|r| *r >= 0.0), "{rates:?}");
        }
    }

    use super::*;
    use crate::model::{LeaseType, Origin};

    /// Three clusters shaped like paper 000's (64, 128, 256 PEs at 2000, 3000, 2100 MIPS).
    fn clusters() -> Vec<ClusterModel> {
        let mk = |cores: f64, mips: f64, lrate: f64| {
            let speed = cores * mips / 1000.0;
            let theta = 5.0 * 420.0 / speed;
            let tau = 4.0 * 400.0 / speed;
            ClusterModel {
                cores,
                speed,
                local_rate: lrate,
                tau,
                mu: (0.1 * tau).powi(2) + tau * tau,
                theta,
                omega: (0.5 * theta).powi(2) + theta * theta,
            }
        };
        vec![
            mk(64.0, 2000.0, 0.03),
            mk(128.0, 3000.0, 0.04),
            mk(256.0, 2100.0, 0.05),
        ]
    }

    fn derivative(c: &ClusterModel, x: f64) -> f64 {
        let h = 1e-7;
        (c.cost(x + h) - c.cost(x - h)) / (2.0 * h)
    }

    #[test]
    fn pap_rates_meet_the_constraint_and_the_optimality_condition() {
        let c = clusters();
        for total in [0.05, 0.1, 0.15] {
            let rates = pap_rates(&c, total, 1e-9);
            let sum: f64 = rates.iter().sum();
            assert!(
                (sum - total).abs() < 1e-6 * total.max(1.0),
                "Σ Λ̂ = {sum}, Λ = {total}"
            );
            // Lagrange: every cluster that gets load has the same marginal cost of eq. 3, and
            // none that gets no load would be cheaper at the margin.
            let used: Vec<f64> = rates
                .iter()
                .zip(&c)
                .filter(|(r, _)| **r > 1e-9)
                .map(|(r, m)| derivative(m, *r))
                .collect();
            for d in &used {
                assert!(
                    (d - used[0]).abs() < 1e-4 * used[0].abs().max(1.0),
                    "{used:?}"
                );
            }
            for (r, m) in rates.iter().zip(&c) {
                if *r <= 1e-9 {
                    assert!(derivative(m, 0.0) >= used[0] - 1e-6);
                }
            }
            // And it beats an equal split.
            let cost = |rs: &[f64]| rs.iter().zip(&c).map(|(r, m)| m.cost(*r)).sum::<f64>();
            assert!(cost(&rates) <= cost(&[total / 3.0; 3]) + 1e-12);
        }
    }

    #[test]
    fn rtdp_follows_the_fractions_per_type_over_long_runs() {
        let fractions = vec![0.2, 0.3, 0.5];
        let mut b = Billiard::new(fractions.clone(), 1);
        let mut counts = [[0u32; 3]; 4];
        for k in 0..40_000 {
            let t = LeaseType::ALL[k % 4];
            let j = b.next(t).expect("a cluster");
            counts[k % 4][j] += 1;
        }
        for per_type in counts {
            for (j, p) in fractions.iter().enumerate() {
                let got = f64::from(per_type[j]) / 10_000.0;
                assert!((got - p).abs() < 0.001, "{got} vs {p}");
            }
        }
    }

    #[test]
    fn round_robin_rotates_and_random_policies_follow_their_fractions() {
        let c = clusters();
        let req = LeaseRequest {
            id: crate::model::RequestId(0),
            origin: Origin::External,
            grid: crate::model::GridId(0),
            cluster: None,
            arrival: crate::time::EmuTime::ZERO,
            start: None,
            vms: 1,
            cores_per_vm: 1,
            mem_mb: 1,
            duration: crate::time::EmuDuration::from_secs(1),
            lease_type: LeaseType::BestEffortSuspendable,
            deadline: None,
            moldable: false,
            deadline_ratio: None,
        };
        let setup = |seed| DispatchSetup {
            grid: "g".into(),
            clusters: vec!["a".into(), "b".into(), "c".into()],
            models: c.clone(),
            rate: 0.1,
            seed,
        };
        let none = Loads::default();
        let ask = |loads, starts| DispatchAsk {
            now: crate::time::EmuTime::ZERO,
            request: &req,
            clusters: 3,
            loads,
            starts,
        };
        let mut rr = builtin(DispatchName::RoundRobin, &setup(1));
        let firsts: Vec<usize> = (0..4).map(|_| rr.order(&ask(&none, &[]))[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2, 0]);
        let mut bcf = Bcf::new(&setup(7));
        let expected = bcf.fractions().to_vec();
        let mut hits = [0u32; 3];
        for _ in 0..30_000 {
            hits[bcf.order(&ask(&none, &[]))[0]] += 1;
        }
        for j in 0..3 {
            assert!((f64::from(hits[j]) / 30_000.0 - expected[j]).abs() < 0.01);
        }
        // BCF routes by computing power: 256 × 2100 > 128 × 3000 > 64 × 2000.
        assert!(expected[2] > expected[1] && expected[1] > expected[0]);
        // LRF gives the cluster with the most local load the least.
        let lrf = Lrf::new(&setup(7));
        assert!(lrf.fractions()[0] > lrf.fractions()[2]);
        let loads = Loads {
            busy: vec![60, 10, 200],
            cores: vec![64, 128, 256],
        };
        let ll = builtin(DispatchName::LeastLoad, &setup(7)).order(&ask(&loads, &[]));
        assert_eq!(ll, vec![1, 2, 0]);
        let es = builtin(DispatchName::EarliestStart, &setup(7))
            .order(&ask(&none, &[Some(50), None, Some(20)]));
        assert_eq!(es, vec![2, 0, 1]);
    }
}
