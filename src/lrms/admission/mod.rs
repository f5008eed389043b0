//! Admission control of external requests in an LRMS (paper 002): how many external requests
//! may wait in a cluster's queue.
//!
//! * **CACP** admits everything (an M/G/1/∞ queue);
//! * **AACP** holds one external request at a time;
//! * **RACP** (Sharifian et al.) allows N_q = μ_e / λ waiting (times `lrms.racp_scale`, a
//!   sensitivity setting, 1 by default);
//! * **PACP** (Algorithm 1) models the cluster's external queue as M/G/1/K with the service
//!   time of an external request stretched by preemptions (eqs. 4–5), gamma-distributed by
//!   moment matching (eqs. 11–12), and grows K until the expected response time (eq. 6)
//!   reaches the expected deadline D (eq. 13).
//!
//! The models' parameters are **measured online** by each LRMS ([`Monitor`]) from the
//! requests it has seen, as the paper says an LRM can ("by analysing the cluster's
//! workload"): Λ_j from the external requests offered to it, ω from the service times of those
//! it admitted, λ_j, 1/μ_l and θ_j from its local requests. Until it has seen
//! [`WARM_UP`] external and local requests, every request is admitted; the limit is recomputed
//! after every [`RECOMPUTE_EVERY`] new observations.
//!
//! Choices where the paper's text is ambiguous (written down as the papers' README asks):
//! the number of arrivals during a service (eq. 10) uses the external arrival rate of the
//! queue being modelled (M/G/1/K theory; the extraction shows λ_j); with gamma service times
//! it has the closed negative-binomial form. P_∞,k follows the standard M/G/1 embedded-chain
//! recursion (the extracted eq. 9 is garbled). Eqs. 5 and 11 are read with μ_l where the
//! extraction prints μ_e (`service_moments`). Service times are those of a cluster-wide
//! (moldable) request: VM-seconds over the cluster's cores, as the paper's single-server
//! assumption implies. A request's response E(R) = E(W) + E(T) adds to the wait the time
//! the request itself spends in service — its run time on the VMs it holds — and eq. 13's
//! deadline ratios are of that run time ("deadlineRatio = deadline/runtime"); the two are
//! the cluster's service time when a request holds the whole cluster (`lrms.moldable`
//! `spread` or `single-server`) and shorter under `per-task` (`pacp_queue_length`).

//!
//! A policy implements [`AdmissionControl`]: it sees the request as the cluster would run it,
//! the cluster's external queue ([`QueueCounts`]) and what its [`Monitor`] has measured, and
//! answers with a [`Verdict`]: admit, refuse (with the reason), or admit under a queue limit
//! (admitted if it starts at once or fewer than `k` external requests wait — the form every
//! policy of paper 002 takes). Each shipped policy is a type of its own in this folder.

mod aacp;
mod cacp;
mod fixed;
mod pacp;
mod racp;

pub use aacp::Aacp;
pub use cacp::Cacp;
pub use fixed::Fixed;
pub use pacp::Pacp;
pub use racp::Racp;

use super::super::workload::math::ln_gamma;
use super::scheduler::Refusal;
use crate::model::LeaseRequest;
use crate::time::{EmuDuration, EmuTime};

named_enum! {
    /// Where PACP takes Algorithm 1's ω from (`lrms.pacp_omega`, paper 002).
    PacpOmega {
        /// The mean service time of the external requests admitted, as the cluster runs them
        /// (a moldable one: its run time under `lrms.moldable`).
        Measured => "measured",
        /// The mean work of the external requests admitted, tasks × task duration at this
        /// cluster's speed, however they run — §V-B: "ω, which is needed in algorithm 1, is
        /// ω = meanNumberofTasks ∗ meanTaskDuration".
        Work => "work",
    }
}

/// The admission policy of an LRMS, as configured: which shipped policy, with its
/// parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdmissionPolicy {
    /// Admit everything.
    Cacp,
    /// One external lease in the cluster at a time.
    Aacp,
    /// Queue length μ_e / λ, times `scale`.
    Racp {
        /// What N_q is multiplied by (1: the paper's formula).
        scale: f64,
    },
    /// Queue length from the M/G/1/K model (Algorithm 1), with eq. 13's deadline model.
    Pacp {
        /// rate_l: share of low-urgency requests.
        low_urgency: f64,
        /// u_l: their mean deadline ratio.
        low_ratio: f64,
        /// u_h: the high-urgency requests' mean deadline ratio.
        high_ratio: f64,
        /// Where ω comes from.
        omega: PacpOmega,
    },
    /// At most this many external leases waiting, always (a static baseline).
    Fixed(usize),
}

/// The shipped policy an [`AdmissionPolicy`] value names.
pub fn builtin(policy: AdmissionPolicy) -> Box<dyn AdmissionControl> {
    match policy {
        AdmissionPolicy::Cacp => Box::new(Cacp),
        AdmissionPolicy::Aacp => Box::new(Aacp),
        AdmissionPolicy::Racp { scale } => Box::new(Racp::scaled(scale)),
        AdmissionPolicy::Pacp {
            low_urgency,
            low_ratio,
            high_ratio,
            omega,
        } => Box::new(Pacp::new(low_urgency, low_ratio, high_ratio).with_omega(omega)),
        AdmissionPolicy::Fixed(k) => Box::new(Fixed(k)),
    }
}

/// The external requests a cluster holds, counted when a policy asks (a walk over every
/// lease, so only policies that need them pay for it).
pub trait QueueCounts {
    /// (waiting and never started, held in any phase).
    fn external(&self) -> (usize, usize);
}

/// What an admission decision is asked.
#[derive(Clone, Copy)]
pub struct AdmissionAsk<'a> {
    /// When.
    pub now: EmuTime,
    /// The request as this cluster would run it (a moldable one spread over its VMs).
    pub request: &'a LeaseRequest,
    /// The time it would take the whole cluster (what the monitor learns service times in).
    pub service: EmuDuration,
    /// What the cluster has measured of its workload.
    pub monitor: &'a Monitor,
    /// The cluster's external queue.
    pub queue: &'a dyn QueueCounts,
}

/// An admission policy's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Admit it (it is then scheduled, and refused only if it would miss its deadline).
    Admit,
    /// Refuse it, for this reason.
    Refuse(Refusal),
    /// Admit it if it starts at once or fewer than this many external requests wait.
    Limit(usize),
}

/// An admission policy of an LRMS: whether an external request the IGG assigns may join
/// the cluster's queue.
pub trait AdmissionControl {
    /// The policy's name as outputs show it.
    fn name(&self) -> String;

    /// The verdict on one request. Called once per request offered, after the monitor has
    /// counted it as offered.
    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict;
}

/// Observations before a model-based limit applies (external and local requests each).
pub const WARM_UP: u64 = 10;
/// New observations between two computations of the limit.
pub const RECOMPUTE_EVERY: u64 = 25;

/// Count, mean and variance of a stream of service times (Welford's online update).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stream {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Stream {
    fn add(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }
    fn cv(&self) -> f64 {
        if self.n < 2 || self.mean <= 0.0 {
            return 0.0;
        }
        (self.m2 / (self.n - 1) as f64).sqrt() / self.mean
    }
}

/// What an LRMS has learnt about its workload online (paper 002: "by analysing the
/// cluster's workload").
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    first: Option<EmuTime>,
    offered: u64,
    admitted: Stream,
    /// The run time of the requests admitted, each on the VMs it holds.
    run: Stream,
    /// The work (tasks × task duration) of the requests admitted.
    work: Stream,
    local: Stream,
}

/// A cluster's workload as its monitor measured it (paper 002 Table I, without the deadline).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Λ_j: arrival rate of external requests offered to the cluster, per second.
    pub external_rate: f64,
    /// ω: mean service time of an admitted external request without preemption, seconds.
    pub external_service: f64,
    /// Mean run time of an admitted external request on the VMs it holds, without
    /// preemption, seconds: its service time when it holds the whole cluster.
    pub external_run: f64,
    /// Mean work of an admitted external request (tasks × task duration here), seconds.
    pub external_work: f64,
    /// λ_j: arrival rate of local requests, per second.
    pub local_rate: f64,
    /// 1/μ_l: mean service time of a local request, seconds.
    pub local_service: f64,
    /// θ_j: coefficient of variation of local service times.
    pub local_cv: f64,
}

impl Monitor {
    /// A monitor that has seen nothing.
    pub fn new() -> Monitor {
        Monitor::default()
    }

    fn seen(&mut self, now: EmuTime) {
        self.first.get_or_insert(now);
    }

    /// An external request was offered at `now`.
    pub fn offered(&mut self, now: EmuTime) {
        self.seen(now);
        self.offered += 1;
    }

    /// An external request was admitted; it needs `service` of the whole cluster, runs for
    /// `run` on the VMs it holds, and is `work` VM-time (tasks × task duration, at this
    /// cluster's speed).
    pub fn admitted(&mut self, service: EmuDuration, run: EmuDuration, work: EmuDuration) {
        self.admitted.add(service.as_secs_f64());
        self.run.add(run.as_secs_f64());
        self.work.add(work.as_secs_f64());
    }

    /// A local request arrived at `now`, needing `service` of the whole cluster.
    pub fn local(&mut self, now: EmuTime, service: EmuDuration) {
        self.seen(now);
        self.local.add(service.as_secs_f64());
    }

    /// External requests offered and local requests seen so far.
    pub fn observations(&self) -> u64 {
        self.offered + self.local.n
    }

    /// External requests offered, local requests seen, external requests admitted.
    pub fn counts(&self) -> (u64, u64, u64) {
        (self.offered, self.local.n, self.admitted.n)
    }

    /// The workload as measured by `now`, once warmed up ([`WARM_UP`] external and local
    /// requests, one admitted).
    pub fn measured(&self, now: EmuTime) -> Option<Measured> {
        if self.offered < WARM_UP || self.local.n < WARM_UP || self.admitted.n == 0 {
            return None;
        }
        let elapsed = now.since(self.first?).as_secs_f64().max(1.0);
        Some(Measured {
            external_rate: self.offered as f64 / elapsed,
            external_service: self.admitted.mean,
            external_run: self.run.mean,
            external_work: self.work.mean,
            local_rate: self.local.n as f64 / elapsed,
            local_service: self.local.mean,
            local_cv: self.local.cv(),
        })
    }
}

/// A queue limit learnt from the monitor, recomputed after every [`RECOMPUTE_EVERY`] new
/// observations (what RACP and PACP share).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Learnt {
    observed_at: u64,
    limit: Option<usize>,
}

impl Learnt {
    /// The limit now: recomputed by `compute` from the measured workload when enough new
    /// requests have been seen; none (admit everything) until the monitor has warmed up.
    pub(crate) fn limit(
        &mut self,
        ask: &AdmissionAsk<'_>,
        compute: impl FnOnce(&Measured) -> usize,
    ) -> Verdict {
        let observed = ask.monitor.observations();
        if observed >= self.observed_at + RECOMPUTE_EVERY {
            if let Some(m) = ask.monitor.measured(ask.now) {
                self.observed_at = observed;
                self.limit = Some(compute(&m));
                tracing::debug!(?m, limit = ?self.limit, "admission limit");
            }
        }
        self.limit.map_or(Verdict::Admit, Verdict::Limit)
    }
}

/// What the queueing model of one cluster needs (paper 002 Table I).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueModel {
    /// Λ_j: arrival rate of external requests to the cluster, per second.
    pub external_rate: f64,
    /// ω: mean service time of an external request without preemption, seconds: the time
    /// it needs of the whole cluster seen as one server.
    pub external_service: f64,
    /// Mean run time of an external request without preemption on the VMs it holds,
    /// seconds: the time it spends in service, which E(R) adds to its wait and the deadline
    /// ratios multiply (eq. 13). The same as `external_service` when a request holds the
    /// whole cluster; shorter than it when it holds a part.
    pub external_run: f64,
    /// λ_j: arrival rate of local requests, per second.
    pub local_rate: f64,
    /// 1/μ_l: mean service time of a local request, seconds.
    pub local_service: f64,
    /// θ_j: coefficient of variation of local service times.
    pub local_cv: f64,
    /// D: the expected deadline (eq. 13), seconds.
    pub deadline: f64,
}

impl QueueModel {
    /// The model of a measured workload with expected deadline `deadline` (seconds).
    pub fn of(m: &Measured, deadline: f64) -> QueueModel {
        QueueModel {
            external_rate: m.external_rate,
            external_service: m.external_service,
            external_run: m.external_run,
            local_rate: m.local_rate,
            local_service: m.local_service,
            local_cv: m.local_cv,
            deadline,
        }
    }
}

/// Eq. 13: D = rate_l·u_l·ω + (1 − rate_l)·u_h·ω.
pub(crate) fn expected_deadline(
    low_urgency: f64,
    low_ratio: f64,
    high_ratio: f64,
    omega: f64,
) -> f64 {
    low_urgency * low_ratio * omega + (1.0 - low_urgency) * high_ratio * omega
}

/// RACP's queue length N_q = `scale` · μ_e / λ (at least 1; the cast saturates, so a huge
/// limit is no limit).
pub(crate) fn racp_queue_length(m: &QueueModel, scale: f64) -> usize {
    if m.local_rate <= 0.0 || m.external_service <= 0.0 {
        return usize::MAX;
    }
    // `scale / ω` is the paper's `1 / ω` exactly when scale = 1.
    ((scale / m.external_service) / m.local_rate)
        .floor()
        .max(1.0) as usize
}

/// The longest queue PACP considers.
pub(crate) const MAX_QUEUE: usize = 2_000;

/// Expected service time (eq. 4) and its variance (eq. 5) of an external request:
/// E(T) = ω/(1 − ρ_l) and V(T) = ρ_l/(1 − ρ_l)³ · (θ² + 1)/μ_l · ω — the variance of Gong
/// et al. (paper 002's ref. 7): the number of local busy periods during ω (Poisson, mean
/// λω) times their second moment (θ² + 1)/(μ_l²(1 − ρ_l)³). The extraction prints μ_e where
/// μ_l stands, in eq. 5 and eq. 11; only μ_l makes eq. 11's gamma parameters match eqs. 4–5
/// (αβ = E(T), α²β = V(T)).
pub(crate) fn service_moments(m: &QueueModel) -> (f64, f64) {
    let rho_l = (m.local_rate * m.local_service).min(0.999_999);
    let omega = m.external_service;
    let mean = omega / (1.0 - rho_l);
    let second = m.local_cv * m.local_cv + 1.0;
    let var = rho_l / (1.0 - rho_l).powi(3) * second * m.local_service * omega;
    (mean, var)
}

/// a_k (eq. 10) for k = 0..n: the probability of k external arrivals during one gamma
/// service (negative binomial), or Poisson when the service time does not vary.
fn arrivals_during_service(rate: f64, mean: f64, var: f64, n: usize) -> Vec<f64> {
    if var <= 1e-12 * mean * mean {
        let l = rate * mean;
        return (0..n)
            .map(|k| (k as f64 * l.ln() - l - ln_gamma(k as f64 + 1.0)).exp())
            .collect();
    }
    let (scale, shape) = (var / mean, mean * mean / var);
    let p = rate * scale / (1.0 + rate * scale);
    (0..n)
        .map(|k| {
            let k = k as f64;
            (ln_gamma(k + shape) - ln_gamma(k + 1.0) - ln_gamma(shape)
                + k * p.ln()
                + shape * (1.0 - p).ln())
            .exp()
        })
        .collect()
}

/// Extends the unnormalised stationary probabilities π_0, π_1, … of the M/G/1 queue length
/// left behind by a departure to `n` of them, from a_0 and the tails Ā_m = P(more than m
/// arrivals during a service) = 1 − a_0 − … − a_m (eq. 10): by the balance of crossings
/// between n and n + 1, π_{n+1}·a_0 = π_0·Ā_n + Σ_{i=1..n} π_i·Ā_{n−i+1}. Every term is
/// positive, so nothing cancels however loaded the queue (the textbook recursion subtracts
/// and is lost once ρ_e is a few tens); the probabilities only matter relative to each other
/// (eq. 8), so they are scaled down together when they grow large.
fn extend_chain(pi: &mut Vec<f64>, a0: f64, tail: &[f64], n: usize) {
    if pi.is_empty() {
        pi.push(1.0);
    }
    while pi.len() < n {
        let j = pi.len() - 1;
        let mut v = pi[0] * tail[j];
        for i in 1..=j {
            v += pi[i] * tail[j - i + 1];
        }
        let next = v / a0.max(1e-300);
        pi.push(next);
        if next > 1e150 {
            pi.iter_mut().for_each(|p| *p /= next);
        }
    }
}

/// Algorithm 1's step 9 for a queue of length `k` ≥ 1 from the M/G/1 probabilities `pi`
/// (at least `k` of them): E(Rj) = (1/Λ)·Σ n·P_d,n + (K/Λ)·(P_d,0 + ρ_e − 1), i.e. eq. 6's
/// E(W) plus the service time E(T).
fn algorithm_response(pi: &[f64], k: usize, rate: f64, rho_e: f64) -> f64 {
    let total: f64 = pi[..k].iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let sigma: f64 = pi[..k]
        .iter()
        .enumerate()
        .map(|(n, p)| n as f64 * p / total)
        .sum();
    sigma / rate + k as f64 / rate * (pi[0] / total + rho_e - 1.0)
}

/// PACP (Algorithm 1): the queue length K for the cluster. K grows from 0 while the
/// expected response E(R) = E(W) + E(T) of a queue of length K is below D, and is returned
/// one past the first K whose E(R) reached D, as the algorithm's loop does. E(W) is eq. 6
/// on the cluster seen as one server (service `external_service`, eqs. 4–5); E(T) is the
/// request's own time in service, eq. 4 on its run time `external_run` — the server's
/// service time when a request holds the whole cluster.
pub(crate) fn pacp_queue_length(m: &QueueModel) -> usize {
    if m.external_rate <= 0.0 {
        return MAX_QUEUE;
    }
    let (mean, var) = service_moments(m);
    let rho_e = m.external_rate * mean;
    let own = service_moments(&QueueModel {
        external_service: m.external_run,
        ..m.clone()
    })
    .0;
    let a = arrivals_during_service(m.external_rate, mean, var, MAX_QUEUE + 1);
    let tail: Vec<f64> = a
        .iter()
        .scan(1.0, |left, p| {
            *left -= p;
            Some(left.max(0.0))
        })
        .collect();
    let mut pi = Vec::new();
    let mut k = 0usize;
    let mut response = 0.0;
    while response < m.deadline && k < MAX_QUEUE {
        if k > 0 {
            extend_chain(&mut pi, a[0], &tail, k);
            let wait = algorithm_response(&pi, k, m.external_rate, rho_e) - mean;
            response = wait + own;
        }
        k += 1;
    }
    tracing::debug!(k, response, deadline = m.deadline, own, "pacp model");
    k
}

#[cfg(test)]
mod reference_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// An external best-effort request for one VM of one core, running `duration`.
    fn one_vm_request(duration: EmuDuration) -> crate::model::LeaseRequest {
        crate::model::LeaseRequest {
            id: crate::model::RequestId(0),
            origin: crate::model::Origin::External,
            grid: crate::model::GridId(0),
            cluster: None,
            arrival: EmuTime::ZERO,
            start: None,
            vms: 1,
            cores_per_vm: 1,
            mem_mb: 1,
            duration,
            lease_type: crate::model::LeaseType::BestEffortCancellable,
            deadline: None,
            moldable: false,
            deadline_ratio: None,
        }
    }

    fn model(deadline: f64) -> QueueModel {
        QueueModel {
            external_rate: 0.05,
            external_service: 20.0,
            external_run: 20.0,
            local_rate: 0.01,
            local_service: 30.0,
            local_cv: 0.1,
            deadline,
        }
    }

    #[test]
    fn service_time_grows_with_local_load_as_eq_4() {
        let (mean, var) = service_moments(&model(100.0));
        assert!((mean - 20.0 / 0.7).abs() < 1e-9);
        assert!(var > 0.0);
    }

    #[test]
    fn arrival_probabilities_sum_to_one() {
        let (mean, var) = service_moments(&model(100.0));
        let a = arrivals_during_service(0.05, mean, var, 400);
        assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Mean arrivals during a service: Λ·E(T).
        let m: f64 = a.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
        assert!((m - 0.05 * mean).abs() < 1e-6);
    }

    #[test]
    fn a_stable_queue_needs_no_limit() {
        // ρ_e = 0.01 · 28.6 s < 1: the response time converges below a 4ω deadline.
        let m = QueueModel {
            external_rate: 0.01,
            ..model(80.0)
        };
        assert_eq!(pacp_queue_length(&m), MAX_QUEUE);
    }

    #[test]
    fn a_looser_deadline_admits_a_longer_queue() {
        // ρ_e = 0.05 · 28.6 s ≈ 1.4: the queue grows without bound unless limited.
        let tight = pacp_queue_length(&model(2.0 * 20.0));
        let loose = pacp_queue_length(&model(4.0 * 20.0));
        assert!(tight >= 1 && loose > tight, "{tight} {loose}");
        assert!(loose < MAX_QUEUE);
    }

    struct NoQueue;
    impl QueueCounts for NoQueue {
        fn external(&self) -> (usize, usize) {
            (0, 0)
        }
    }

    #[test]
    fn pacp_takes_omega_from_the_work_when_told() {
        // External requests every 20 s running 2 s (ρ_e ≈ 0.13, stable) but of 30 s of work
        // (tasks × task duration), locals every 100 s of 20 s.
        let mut m = Monitor::new();
        let (t, s) = (EmuTime::from_secs, EmuDuration::from_secs);
        for k in 0..100u64 {
            m.offered(t(20 * k));
            m.admitted(s(2), s(2), s(30));
            if k % 5 == 0 {
                m.local(t(20 * k), EmuDuration::from_secs(20));
            }
        }
        let req = one_vm_request(EmuDuration::from_secs(2));
        let verdict = |omega| {
            let mut pacp = Pacp::new(0.5, 4.0, 2.0).with_omega(omega);
            pacp.admit(&AdmissionAsk {
                now: t(2000),
                request: &req,
                service: EmuDuration::from_secs(2),
                monitor: &m,
                queue: &NoQueue,
            })
        };
        assert_eq!(verdict(PacpOmega::Measured), Verdict::Limit(MAX_QUEUE));
        // With ω = 30 s, ρ_e = 0.05 · 30 / 0.8 > 1: the limit of that model, D = 3ω.
        let mut work = m.measured(t(2000)).expect("warmed up");
        (work.external_service, work.external_run) = (30.0, 30.0);
        let k = pacp_queue_length(&QueueModel::of(&work, 90.0));
        assert!(k < MAX_QUEUE);
        assert_eq!(verdict(PacpOmega::Work), Verdict::Limit(k));
    }

    #[test]
    fn the_monitor_learns_rates_and_service_times_online() {
        let mut m = Monitor::new();
        let mut pacp = Pacp::new(0.5, 4.0, 2.0);
        let t = EmuTime::from_secs;
        let req = one_vm_request(EmuDuration::from_secs(30));
        let mut verdict = |m: &Monitor, now| {
            pacp.admit(&AdmissionAsk {
                now,
                request: &req,
                service: EmuDuration::from_secs(30),
                monitor: m,
                queue: &NoQueue,
            })
        };
        // Before it has seen enough, everything is admitted.
        assert_eq!(verdict(&m, t(0)), Verdict::Admit);
        // An external request every 20 s needing 30 s of the cluster (ρ_e > 1), a local one
        // every 100 s needing 20 s (alternately 10 and 30: CV 0.5).
        let s = EmuDuration::from_secs;
        for k in 0..100u64 {
            m.offered(t(20 * k));
            m.admitted(s(30), s(30), s(30));
            if k % 5 == 0 {
                m.local(
                    t(20 * k),
                    EmuDuration::from_secs(if k % 10 == 0 { 10 } else { 30 }),
                );
            }
        }
        let measured = m.measured(t(2000)).expect("warmed up");
        let q = QueueModel::of(&measured, expected_deadline(0.5, 4.0, 2.0, 30.0));
        assert!((q.external_rate - 0.05).abs() < 1e-9);
        assert!((q.external_service - 30.0).abs() < 1e-9);
        assert!((q.local_rate - 0.01).abs() < 1e-9);
        assert!((q.local_service - 20.0).abs() < 1e-9);
        // Twenty locals alternating 10 s and 30 s: sample standard deviation √(20·100/19).
        assert!((q.local_cv - (2000.0f64 / 19.0).sqrt() / 20.0).abs() < 1e-9);
        assert!((q.deadline - 90.0).abs() < 1e-9);
        // An overloaded queue gets a finite limit.
        assert!(matches!(verdict(&m, t(2000)), Verdict::Limit(k) if k < MAX_QUEUE));
    }

    #[test]
    fn racp_is_service_rate_over_local_rate() {
        // μ_e = 1/20 per s, λ = 0.01 per s: N_q = 5.
        assert_eq!(racp_queue_length(&model(0.0), 1.0), 5);
        // Scaled: 30 · 5, and never under 1 however small the scale.
        assert_eq!(racp_queue_length(&model(0.0), 30.0), 150);
        assert_eq!(racp_queue_length(&model(0.0), 1e-6), 1);
        assert_eq!(racp_queue_length(&model(0.0), 1e300), usize::MAX);
        assert!((expected_deadline(0.5, 4.0, 2.0, 10.0) - 30.0).abs() < 1e-12);
    }
}

#[cfg(test)]
mod racp_props {
    use super::{racp_queue_length, QueueModel};

    fn measured(service: f64, local_rate: f64) -> QueueModel {
        QueueModel {
            external_rate: 0.1,
            external_service: service,
            external_run: service,
            local_rate,
            local_service: 1.0,
            local_cv: 0.1,
            deadline: 0.0,
        }
    }

    proptest::proptest! {
        /// Over random ω, λ and scales: N_q is the whole part of scale·μ_e/λ (μ_e = 1/ω), at
        /// least 1, and never shorter for a larger scale.
        #[test]
        fn racp_is_the_whole_part_of_the_scaled_rate_ratio(
            service in 1e-3f64..1e4,
            local_rate in 1e-4f64..10.0,
            scale in 1e-3f64..1e3,
            more in 1.0f64..100.0,
        ) {
            let m = measured(service, local_rate);
            let n = racp_queue_length(&m, scale);
            let ratio = scale / (service * local_rate);
            proptest::prop_assert!(n >= 1);
            if ratio >= 1.0 {
                // n ≤ ratio < n + 1, to the rounding of the division.
                let tol = ratio * 1e-12;
                proptest::prop_assert!(n as f64 <= ratio + tol && ratio < n as f64 + 1.0 + tol,
                    "n {n}, ratio {ratio}");
            } else {
                proptest::prop_assert_eq!(n, 1);
            }
            proptest::prop_assert!(racp_queue_length(&m, scale * more) >= n);
        }
    }
}
