//! Algorithm 1 of paper 002 written again from its equations, independently of
//! [`pacp_queue_length`], and the two compared over random workloads. The reference takes
//! eq. 11's gamma parameters as printed (with μ_l), integrates eq. 10 numerically over
//! eq. 12's density, and obtains P_d,k as the stationary distribution of the queue left
//! behind by departures in an M/G/1/K queue, solved as a finite Markov chain — not by the
//! M/G/1 recursion and truncation (eqs. 8–9) the policy uses. E(R) is eq. 6's E(W) plus the
//! request's own time in service (eq. 4 on its run time), and K grows as the algorithm's
//! loop does.

use super::{pacp_queue_length, QueueModel, MAX_QUEUE};
use crate::workload::math::ln_gamma;

/// The longest queue the reference solves for.
const REF_MAX: usize = 48;

/// a_k, k < n (eq. 10): ∫ (tΛ)^k/k! e^{−tΛ} b(t) dt with b the gamma density of eq. 12 of
/// scale `alpha` and shape `beta`, by Simpson's rule over ±14 standard deviations.
fn a_by_integration(rate: f64, alpha: f64, beta: f64, n: usize) -> Vec<f64> {
    let (mean, sd) = (alpha * beta, alpha * beta.sqrt());
    let (lo, hi) = ((mean - 14.0 * sd).max(0.0), mean + 14.0 * sd);
    let steps = 6000usize;
    let h = (hi - lo) / steps as f64;
    let density = |t: f64| -> f64 {
        if t <= 0.0 {
            return 0.0;
        }
        ((beta - 1.0) * (t / alpha).ln() - t / alpha - alpha.ln() - ln_gamma(beta)).exp()
    };
    let poisson = |k: usize, t: f64| -> f64 {
        if t <= 0.0 {
            return if k == 0 { 1.0 } else { 0.0 };
        }
        let l = rate * t;
        (k as f64 * l.ln() - l - ln_gamma(k as f64 + 1.0)).exp()
    };
    (0..n)
        .map(|k| {
            let f = |t: f64| poisson(k, t) * density(t);
            let inner: f64 = (1..steps)
                .map(|i| {
                    let w = if i % 2 == 1 { 4.0 } else { 2.0 };
                    w * f(lo + i as f64 * h)
                })
                .sum();
            (f(lo) + inner + f(hi)) * h / 3.0
        })
        .collect()
}

/// The stationary distribution of the number an M/G/1/K departure leaves behind (states
/// 0..K−1; arrivals finding K in the system are lost), by Gaussian elimination.
fn departure_distribution(a: &[f64], k: usize) -> Vec<f64> {
    // P[n][m]: from n left behind, the next departure leaves m.
    let p = |n: usize, m: usize| -> f64 {
        let base = n.saturating_sub(1);
        if m + 1 == k {
            1.0 - (0..k - 1)
                .map(|j| if j >= base { a[j - base] } else { 0.0 })
                .sum::<f64>()
        } else if m >= base {
            a[m - base]
        } else {
            0.0
        }
    };
    // π (P − I) = 0 and Σ π = 1: rows of (P − I)ᵀ, the last replaced by the sum.
    let mut rows: Vec<Vec<f64>> = (0..k)
        .map(|m| {
            let mut r: Vec<f64> = (0..k).map(|n| p(n, m) - f64::from(n == m)).collect();
            r.push(0.0);
            r
        })
        .collect();
    rows[k - 1] = vec![1.0; k + 1];
    for c in 0..k {
        let piv = (c..k)
            .max_by(|&x, &y| rows[x][c].abs().total_cmp(&rows[y][c].abs()))
            .unwrap_or(c);
        rows.swap(c, piv);
        let pivot = rows[c].clone();
        if pivot[c] == 0.0 {
            continue;
        }
        for (r, row) in rows.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    (0..k).map(|n| rows[n][k] / rows[n][n]).collect()
}

/// Algorithm 1 from the equations: (K, E(R) for every queue length tried).
fn reference(m: &QueueModel) -> (usize, Vec<f64>) {
    let rho_l = m.local_rate * m.local_service;
    let mu_l = 1.0 / m.local_service;
    let second = m.local_cv * m.local_cv + 1.0;
    let (alpha, beta) = (
        rho_l * second / (mu_l * (1.0 - rho_l).powi(2)),
        (1.0 - rho_l) * mu_l * m.external_service / (rho_l * second),
    );
    let t = m.external_service / (1.0 - rho_l);
    let own = m.external_run / (1.0 - rho_l);
    let rho_e = m.external_rate * t;
    let a = a_by_integration(m.external_rate, alpha, beta, REF_MAX + 1);
    let (mut k, mut response, mut tried) = (0usize, 0.0, Vec::new());
    while response < m.deadline && k <= REF_MAX {
        if k > 0 {
            let pd = departure_distribution(&a, k);
            let sigma: f64 = pd.iter().enumerate().map(|(n, p)| n as f64 * p).sum();
            let wait =
                sigma / m.external_rate + k as f64 / m.external_rate * (pd[0] + rho_e - 1.0) - t;
            response = wait + own;
        }
        tried.push(response);
        k += 1;
    }
    (k, tried)
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(48))]
    /// PACP's K is the reference's over random workloads — overloaded or not, requests
    /// holding the whole cluster or a part of it (run time below the service time) —
    /// except where an E(R) lies within 10⁻⁶ of D (the two sums round differently).
    #[test]
    fn pacp_queue_length_is_algorithm_1(
        rate in 0.02f64..2.0, service in 0.5f64..40.0, run_share in 0.05f64..1.0,
        rho_l in 0.05f64..0.7, local_service in 0.2f64..20.0, cv in 0.0f64..1.5,
        ratio in 1.0f64..5.0,
    ) {
        let run = if run_share > 0.5 { service } else { service * run_share * 40.0 };
        let m = QueueModel {
            external_rate: rate,
            external_service: service,
            external_run: run,
            local_rate: rho_l / local_service,
            local_service,
            local_cv: cv,
            deadline: ratio * run,
        };
        let shape = (1.0 - rho_l) * service / (rho_l * (cv * cv + 1.0) * local_service);
        // Smooth densities only (Simpson's rule), and queues the reference can solve.
        proptest::prop_assume!(shape >= 1.5);
        let (want, tried) = reference(&m);
        let got = pacp_queue_length(&m);
        if want > REF_MAX {
            proptest::prop_assert!(got > REF_MAX && got <= MAX_QUEUE, "got {got}");
        } else {
            let near = tried.iter().any(|r| (r - m.deadline).abs() <= 1e-6 * m.deadline);
            proptest::prop_assert!(got == want || near, "got {got}, want {want}: {tried:?}");
        }
    }
}
