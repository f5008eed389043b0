//! The models behind PAP, LRF and BCF (paper 000 §3–5): what the IGG knows of each cluster
//! (Table 1), PAP's arrival rates Λ̂_j that minimise the mean response time of external
//! requests across M/G/1 clusters with preemptive local load (Algorithm 1, eqs. 3–19, by
//! bisection on the Lagrange multiplier z), and RTDP's billiard sequences (Algorithm 2).
//!
//! Eq. 11 as extracted from the paper lost its square root and a parenthesis; we use
//! φ_j(z) = (1/θ_j)·√[(1−ρ_j)(ω_j(1−ρ_j) + θ_jλ_jμ_j) / (2θ_j(1−ρ_j)z + ω_j − 2θ_j²)], the form
//! that solves the Lagrange conditions of eq. 6 (derivation in the tests, which check both
//! the constraint Σ Λ̂_j = Λ and equal marginal costs numerically).

use crate::model::LeaseType;

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
