//! How an IGG distributes external requests over its clusters (paper 000 §3–5):
//!
//! * **RR** — round robin (eq. 25);
//! * **LRF** — least rate first, random with P_j ∝ 1 − λ_j / Σλ (eq. 26);
//! * **BCF** — biggest cluster first, random with P_j ∝ Σ_i s_ij (eq. 27);
//! * **PAP** — the preemption-aware workload allocation of Algorithm 1: the arrival rates
//!   Λ̂_j that minimise the mean response time of external requests across M/G/1 clusters
//!   with preemptive local load (eqs. 3–19), found by bisection on the Lagrange multiplier z,
//!   dispatched either at random (**PAP-RND**) or with the billiard sequence per request type
//!   of Algorithm 2 (**PAP-RTDP**);
//! * **least-load** — the cluster with the fewest cores taken by this IGG's leases;
//! * **earliest-start** — the cluster whose LRMS offers the earliest start (the IGG asks).
//!
//! Eq. 11 as extracted from the paper lost its square root and a parenthesis; we use
//! φ_j(z) = (1/θ_j)·√[(1−ρ_j)(ω_j(1−ρ_j) + θ_jλ_jμ_j) / (2θ_j(1−ρ_j)z + ω_j − 2θ_j²)], the form
//! that solves the Lagrange conditions of eq. 6 (derivation in the tests, which check both
//! the constraint Σ Λ̂_j = Λ and equal marginal costs numerically).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::model::{LeaseRequest, LeaseType};

named_enum! {
    /// The IGG's policy for placing external requests on its clusters (paper 000 §4–5).
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

/// What PAP and the baselines know about one cluster (paper 000 Table 1).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterModel {
    /// Number of processing elements M_j.
    pub cores: f64,
    /// Computing power Σ_i s_ij, in 1000-MIPS cores.
    pub speed: f64,
    /// Arrival rate of local requests λ_j (per second).
    pub local_rate: f64,
    /// Mean service time of local requests τ_j (eq. 17).
    pub tau: f64,
    /// Second moment of local service time μ_j (eq. 19).
    pub mu: f64,
    /// Mean service time of external requests θ_j (eq. 16).
    pub theta: f64,
    /// Second moment of external service time ω_j (eq. 18).
    pub omega: f64,
}

impl ClusterModel {
    /// ρ_j = τ_j λ_j.
    pub fn rho(&self) -> f64 {
        self.tau * self.local_rate
    }
    /// ψ_j (eq. 14).
    pub fn psi(&self) -> f64 {
        let r = self.rho();
        self.local_rate * self.mu / (2.0 * (1.0 - r).powi(2)) + self.theta / (1.0 - r)
    }
    /// φ_j(z) (eq. 11, see the module doc).
    pub fn phi(&self, z: f64) -> f64 {
        let r = self.rho();
        let num = (1.0 - r) * (self.omega * (1.0 - r) + self.theta * self.local_rate * self.mu);
        let den = 2.0 * self.theta * (1.0 - r) * z + self.omega - 2.0 * self.theta * self.theta;
        (num / den).max(0.0).sqrt() / self.theta
    }
    /// (1 − ρ_j)/θ_j: the rate at which φ_j would vanish.
    fn cap(&self) -> f64 {
        (1.0 - self.rho()) / self.theta
    }
    /// Mean response time of external requests at external rate x (eq. 4), times x: the
    /// cluster's share of the objective of eq. 3.
    pub fn cost(&self, x: f64) -> f64 {
        let r = self.rho();
        let u = self.theta * x + r;
        if u >= 1.0 {
            // An unstable queue: the response time is unbounded.
            return f64::INFINITY;
        }
        let km = x * self.omega + self.local_rate * self.mu;
        x * (self.theta + km / (2.0 * (1.0 - u))) / (1.0 - r)
    }
}

/// Coefficients of variation of service times used for second moments (paper 000 §5.2).
pub(crate) const CV_EXTERNAL: f64 = 0.5;
/// See [`CV_EXTERNAL`].
pub(crate) const CV_LOCAL: f64 = 0.1;

/// The most halvings PAP's bisection makes: more than any pair of finite f64 bounds needs.
const MAX_BISECTIONS: usize = 2_200;

/// Algorithm 1 (PAP): the arrival rate Λ̂_j for each cluster, given the total Λ, bisecting z
/// to precision `eps`. Heavily loaded clusters (largest ψ) may get zero.
pub fn pap_rates(clusters: &[ClusterModel], total: f64, eps: f64) -> Vec<f64> {
    let n = clusters.len();
    if n == 0 || total <= 0.0 {
        return vec![0.0; n];
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| clusters[a].psi().total_cmp(&clusters[b].psi()));
    let sum_phi = |k: usize, z: f64| order[..k].iter().map(|&j| clusters[j].phi(z)).sum::<f64>();
    let target = |k: usize| order[..k].iter().map(|&j| clusters[j].cap()).sum::<f64>() - total;
    // Steps 4–10: a cluster only gets load once z passes its ψ (its marginal cost at zero
    // load), so use the next cluster only if the first k cannot take Λ before z reaches
    // ψ_{k+1} — the KKT condition; the extracted pseudo-code tests at ψ_k.
    let mut k = 1;
    while k < n && sum_phi(k, clusters[order[k]].psi()) > target(k) {
        k += 1;
    }
    let mut lb = clusters[order[k - 1]].psi();
    let mut ub = if k < n {
        clusters[order[k]].psi()
    } else {
        2.0 * lb.max(eps)
    };
    let mut guard = 0;
    while sum_phi(k, ub) > target(k) && guard < 200 {
        ub *= 2.0;
        guard += 1;
    }
    // Bounded: f64 halves at most ~2 100 times between any two finite numbers, and a
    // midpoint that no longer moves (eps below the numbers' resolution), or bounds that are
    // not finite (an overloaded cluster: ρ ≥ 1), end the search with the best z found.
    for _ in 0..MAX_BISECTIONS {
        if (ub - lb).partial_cmp(&eps) != Some(std::cmp::Ordering::Greater) {
            break;
        }
        let z = (lb + ub) / 2.0;
        if !(z > lb && z < ub) {
            break;
        }
        if sum_phi(k, z) >= target(k) {
            lb = z;
        } else {
            ub = z;
        }
    }
    let z = (lb + ub) / 2.0;
    let mut rates = vec![0.0; n];
    for &j in &order[..k] {
        rates[j] = (clusters[j].cap() - clusters[j].phi(z)).max(0.0);
    }
    rates
}

/// Algorithm 2 (RTDP): a billiard sequence per request type over the routing fractions.
#[derive(Clone, Debug)]
pub(crate) struct Billiard {
    fractions: Vec<f64>,
    fastest: usize,
    sent: Vec<[u64; 4]>,
}

impl Billiard {
    /// A sequence over `fractions` (P_j), with X = 1 on cluster `fastest` (smallest θ).
    pub(crate) fn new(fractions: Vec<f64>, fastest: usize) -> Billiard {
        let n = fractions.len();
        Billiard {
            fractions,
            fastest,
            sent: vec![[0; 4]; n],
        }
    }

    /// The cluster for the next request of type `t`: argmin_j (X_j + Y_jᵗ) / P_jᵗ.
    pub(crate) fn next(&mut self, t: LeaseType) -> Option<usize> {
        let ti = LeaseType::ALL.iter().position(|x| *x == t).unwrap_or(0);
        let mut best: Option<(f64, usize)> = None;
        for (j, &p) in self.fractions.iter().enumerate() {
            if p <= 0.0 {
                continue;
            }
            let x = if j == self.fastest { 1.0 } else { 0.0 };
            let d = (x + self.sent[j][ti] as f64) / p;
            if best.is_none_or(|(b, _)| d < b) {
                best = Some((d, j));
            }
        }
        let (_, j) = best?;
        self.sent[j][ti] += 1;
        Some(j)
    }
}

/// The IGG's dispatch policy with its state.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    policy: DispatchName,
    next: usize,
    fractions: Vec<f64>,
    billiard: Option<Billiard>,
    rng: StdRng,
}

/// What the IGG knows about its clusters right now (for least-load).
#[derive(Clone, Debug, Default)]
pub struct Loads {
    /// Cores taken by this IGG's running leases, per cluster.
    pub busy: Vec<u64>,
    /// Cores of each cluster.
    pub cores: Vec<u64>,
}

impl Dispatcher {
    /// A dispatcher for `clusters` clusters; `models` and `rate` feed PAP, LRF and BCF.
    pub fn new(policy: DispatchName, models: &[ClusterModel], rate: f64, seed: u64) -> Dispatcher {
        let n = models.len();
        let normalise = |w: Vec<f64>| {
            let s: f64 = w.iter().sum();
            if s > 0.0 {
                w.into_iter().map(|x| x / s).collect()
            } else {
                vec![1.0 / n.max(1) as f64; n]
            }
        };
        let fractions = match policy {
            DispatchName::Lrf => {
                let total: f64 = models.iter().map(|m| m.local_rate).sum();
                normalise(
                    models
                        .iter()
                        .map(|m| {
                            if total > 0.0 {
                                1.0 - m.local_rate / total
                            } else {
                                1.0
                            }
                        })
                        .collect(),
                )
            }
            DispatchName::Bcf => normalise(models.iter().map(|m| m.speed).collect()),
            DispatchName::PapRnd | DispatchName::PapRtdp => {
                normalise(pap_rates(models, rate, 1e-3))
            }
            _ => vec![1.0 / n.max(1) as f64; n],
        };
        let billiard = (policy == DispatchName::PapRtdp).then(|| {
            let fastest = (0..n)
                .min_by(|&a, &b| models[a].theta.total_cmp(&models[b].theta))
                .unwrap_or(0);
            Billiard::new(fractions.clone(), fastest)
        });
        Dispatcher {
            policy,
            next: 0,
            fractions,
            billiard,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The routing fractions P_j the policy works with.
    pub fn fractions(&self) -> &[f64] {
        &self.fractions
    }

    /// Whether the policy needs the LRMSs' earliest-start offers.
    pub fn asks_for_offers(&self) -> bool {
        self.policy == DispatchName::EarliestStart
    }

    fn random(&mut self) -> usize {
        let u: f64 = self.rng.random();
        let mut acc = 0.0;
        for (j, p) in self.fractions.iter().enumerate() {
            acc += p;
            if u < acc {
                return j;
            }
        }
        self.fractions.len().saturating_sub(1)
    }

    /// The order in which to try the clusters for `req`: the policy's choice first, then the
    /// others round-robin after it. `loads` feeds least-load; `offers` (earliest start per
    /// cluster, `None` if it cannot take it) feeds earliest-start.
    pub fn order(
        &mut self,
        req: &LeaseRequest,
        loads: &Loads,
        offers: &[Option<u64>],
    ) -> Vec<usize> {
        let n = self.fractions.len();
        if n == 0 {
            return Vec::new();
        }
        let first = match self.policy {
            DispatchName::RoundRobin => {
                let f = self.next % n;
                self.next = (f + 1) % n;
                f
            }
            DispatchName::Lrf | DispatchName::Bcf | DispatchName::PapRnd => self.random(),
            DispatchName::PapRtdp => self
                .billiard
                .as_mut()
                .and_then(|b| b.next(req.lease_type))
                .unwrap_or(0),
            DispatchName::LeastLoad => (0..n)
                .min_by(|&a, &b| {
                    let la = loads.busy.get(a).copied().unwrap_or(0) as f64
                        / loads.cores.get(a).copied().unwrap_or(1).max(1) as f64;
                    let lb = loads.busy.get(b).copied().unwrap_or(0) as f64
                        / loads.cores.get(b).copied().unwrap_or(1).max(1) as f64;
                    la.total_cmp(&lb)
                })
                .unwrap_or(0),
            DispatchName::EarliestStart => (0..n)
                .min_by_key(|&j| offers.get(j).copied().flatten().unwrap_or(u64::MAX))
                .unwrap_or(0),
        };
        (0..n).map(|i| (first + i) % n).collect()
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
    use crate::model::Origin;

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
        let mut rr = Dispatcher::new(DispatchName::RoundRobin, &c, 0.1, 1);
        let firsts: Vec<usize> = (0..4)
            .map(|_| rr.order(&req, &Loads::default(), &[])[0])
            .collect();
        assert_eq!(firsts, vec![0, 1, 2, 0]);
        let mut bcf = Dispatcher::new(DispatchName::Bcf, &c, 0.1, 7);
        let expected = bcf.fractions().to_vec();
        let mut hits = [0u32; 3];
        for _ in 0..30_000 {
            hits[bcf.order(&req, &Loads::default(), &[])[0]] += 1;
        }
        for j in 0..3 {
            assert!((f64::from(hits[j]) / 30_000.0 - expected[j]).abs() < 0.01);
        }
        // BCF routes by computing power: 256 × 2100 > 128 × 3000 > 64 × 2000.
        assert!(expected[2] > expected[1] && expected[1] > expected[0]);
        // LRF gives the cluster with the most local load the least.
        let lrf = Dispatcher::new(DispatchName::Lrf, &c, 0.1, 7);
        assert!(lrf.fractions()[0] > lrf.fractions()[2]);
        let ll = Dispatcher::new(DispatchName::LeastLoad, &c, 0.1, 7).order(
            &req,
            &Loads {
                busy: vec![60, 10, 200],
                cores: vec![64, 128, 256],
            },
            &[],
        );
        assert_eq!(ll[0], 1);
        let es = Dispatcher::new(DispatchName::EarliestStart, &c, 0.1, 7).order(
            &req,
            &Loads::default(),
            &[Some(50), None, Some(20)],
        );
        assert_eq!(es[0], 2);
    }
}
