//! Workloads: the published models the papers used to generate requests — DAS-2 (paper 000
//! Table 2), Lublin & Feitelson 1999 (papers 003 §7.2, 004 §6.1), the GWA-based model (paper
//! 002 Table II) — and readers for the Standard Workload Format of the Parallel Workloads
//! Archive ([`swf`]) and the Grid Workload Format of the Grid Workloads Archive ([`gwf`]),
//! which share one mapping of jobs to leases. Everything here is pure and seeded: the same
//! parameters and seed give the same jobs. Turning jobs into lease requests (types,
//! deadlines, memory) is [`assign`]'s work.

pub mod gwf;
pub(crate) mod math;
pub mod swf;
pub mod tracefile;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma, LogNormal, Normal, Weibull};

use crate::model::LeaseType;
use crate::time::EmuDuration;

/// One generated job: when it arrives (offset from the workload's start), how many VMs, how long.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Offset of its arrival from the workload's start.
    pub arrival: EmuDuration,
    /// Number of VMs.
    pub vms: u32,
    /// Run time.
    pub duration: EmuDuration,
}

/// The DAS-2 model (Li, Groep & Wolters 2005) as parameterised in paper 000 Table 2: Weibull
/// inter-arrival, two-stage log-uniform sizes with probabilities of serial and power-of-two
/// jobs, log-normal durations.
#[derive(Clone, Debug, PartialEq)]
pub struct Das2 {
    /// Probability of a one-VM job.
    pub p_one: f64,
    /// Probability of a power-of-two job.
    pub p_pow2: f64,
    /// Two-stage uniform of log2(size): lower bound l.
    pub size_l: f64,
    /// Middle m.
    pub size_m: f64,
    /// Upper bound h.
    pub size_h: f64,
    /// Probability q of the first stage [l, m].
    pub size_q: f64,
    /// Log-normal duration: mean a of ln(seconds).
    pub duration_a: f64,
    /// Log-normal duration: standard deviation b of ln(seconds).
    pub duration_b: f64,
    /// Longest duration kept, seconds (longer draws are redrawn).
    pub duration_max_s: f64,
    /// Weibull inter-arrival scale α, seconds.
    pub arrival_scale: f64,
    /// Weibull inter-arrival shape β.
    pub arrival_shape: f64,
}

impl Default for Das2 {
    /// Paper 000 Table 2's DAS-2 parameters (Li, Groep & Wolters 2005).
    fn default() -> Self {
        Das2 {
            p_one: 0.024,
            p_pow2: 0.78,
            size_l: 0.8,
            size_m: 4.5,
            size_h: 7.0,
            size_q: 0.9,
            duration_a: 4.40,
            duration_b: 1.7,
            duration_max_s: 162_754.0,
            arrival_scale: 23.375,
            arrival_shape: 0.522,
        }
    }
}

impl Das2 {
    /// Paper 000 eq. 29: the mean of the two-stage uniform of log2(size).
    pub fn mean_exponent(&self) -> f64 {
        (self.size_q * self.size_l + self.size_m + (1.0 - self.size_q) * self.size_h) / 2.0
    }

    /// Paper 000 eq. 28: the paper's approximation of the mean number of VMs,
    /// P_one + 2^⌈r⌉ P_pow2 + 2^r (1 − P_one − P_pow2).
    pub fn mean_vms_eq28(&self) -> f64 {
        let r = self.mean_exponent();
        self.p_one
            + 2f64.powf(r.ceil()) * self.p_pow2
            + 2f64.powf(r) * (1.0 - self.p_one - self.p_pow2)
    }

    /// Paper 000 eq. 30: the mean duration e^{a + b²/2} (untruncated).
    pub fn mean_duration_eq30(&self) -> f64 {
        (self.duration_a + self.duration_b * self.duration_b / 2.0).exp()
    }

    /// The mean inter-arrival time α·Γ(1 + 1/β).
    pub fn mean_interarrival(&self) -> f64 {
        self.arrival_scale * math::gamma(1.0 + 1.0 / self.arrival_shape)
    }

    fn size(&self, rng: &mut StdRng) -> f64 {
        let u: f64 = rng.random();
        if u < self.p_one {
            return 1.0;
        }
        let x = two_stage_uniform(rng, self.size_l, self.size_m, self.size_h, self.size_q);
        if u < self.p_one + self.p_pow2 {
            2f64.powf(x.round())
        } else {
            2f64.powf(x).round().max(1.0)
        }
    }
}

/// A draw from [l, m] with probability q, else from [m, h].
fn two_stage_uniform(rng: &mut StdRng, l: f64, m: f64, h: f64, q: f64) -> f64 {
    if rng.random::<f64>() < q {
        l + (m - l) * rng.random::<f64>()
    } else {
        m + (h - m) * rng.random::<f64>()
    }
}

/// The Lublin & Feitelson (1999) rigid-job model, one job type, with its daily arrival cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct Lublin99 {
    /// Probability of a serial job.
    pub serial_prob: f64,
    /// Probability of a power-of-two job.
    pub pow2_prob: f64,
    /// Two-stage uniform of log2(size): low.
    pub u_low: f64,
    /// Middle.
    pub u_med: f64,
    /// High.
    pub u_hi: f64,
    /// Probability of the first stage.
    pub u_prob: f64,
    /// Runtime gamma 1 (of ln seconds): shape.
    pub a1: f64,
    /// Runtime gamma 1: scale.
    pub b1: f64,
    /// Runtime gamma 2: shape.
    pub a2: f64,
    /// Runtime gamma 2: scale.
    pub b2: f64,
    /// Mix probability pa·nodes + pb of gamma 1.
    pub pa: f64,
    /// See `pa`.
    pub pb: f64,
    /// Inter-arrival gamma (of ln seconds): shape.
    pub a_arr: f64,
    /// Inter-arrival gamma: scale.
    pub b_arr: f64,
    /// Daily-cycle gamma: shape.
    pub a_num: f64,
    /// Daily-cycle gamma: scale.
    pub b_num: f64,
    /// Arrival-rate multiplier applied to `a_arr`.
    pub arar: f64,
    /// Whether arrivals follow the daily cycle.
    pub daily_cycle: bool,
    /// Parameters drawn afresh for each run instead of fixed.
    pub per_run: LublinPerRun,
}

/// The Lublin99 parameters a topology may give as a range `[low, high]`, each drawn uniformly
/// once per run from the workload's stream (paper 004 §6.1 draws a cluster's medium job size
/// and arrival scale this way, and its seed changes at each round). `None`: the fixed value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LublinPerRun {
    /// Range of `u_med`.
    pub u_med: Option<(f64, f64)>,
    /// Range of `b_arr`.
    pub b_arr: Option<(f64, f64)>,
}

impl Default for Lublin99 {
    /// The published "one type" defaults.
    fn default() -> Self {
        Lublin99 {
            serial_prob: 0.244,
            pow2_prob: 0.576,
            u_low: 0.8,
            u_med: 4.5,
            u_hi: 7.0,
            u_prob: 0.86,
            a1: 4.2,
            b1: 0.94,
            a2: 312.0,
            b2: 0.03,
            pa: -0.0054,
            pb: 0.78,
            a_arr: 10.2303,
            b_arr: 0.4871,
            a_num: 8.1737,
            b_num: 3.9631,
            arar: 1.0225,
            daily_cycle: true,
            per_run: LublinPerRun::default(),
        }
    }
}

const BUCKET_S: f64 = 1800.0;
const CYCLIC_DAY_START: usize = 11;

impl Lublin99 {
    /// This model for one run: each parameter given as a range drawn from `rng` (in the
    /// order `u_med`, `b_arr`), the others as they are. Draws nothing when no range is given,
    /// so a model of fixed values generates the same jobs as before ranges existed.
    pub fn for_run(&self, rng: &mut StdRng) -> Lublin99 {
        let mut m = self.clone();
        let mut draw = |r: Option<(f64, f64)>, v: &mut f64| {
            if let Some((lo, hi)) = r {
                *v = lo + (hi - lo) * rng.random::<f64>();
            }
        };
        draw(self.per_run.u_med, &mut m.u_med);
        draw(self.per_run.b_arr, &mut m.b_arr);
        m.per_run = LublinPerRun::default();
        m
    }

    fn size(&self, rng: &mut StdRng) -> f64 {
        let u: f64 = rng.random();
        if u <= self.serial_prob {
            return 1.0;
        }
        let mut x = two_stage_uniform(rng, self.u_low, self.u_med, self.u_hi, self.u_prob);
        if u <= self.serial_prob + self.pow2_prob {
            x = x.round();
        }
        2f64.powf(x).round().max(1.0)
    }

    /// Probability that a job of `nodes` takes its runtime from gamma 1.
    pub fn gamma1_prob(&self, nodes: f64) -> f64 {
        (self.pa * nodes + self.pb).clamp(0.0, 1.0)
    }

    fn log_runtime(&self, rng: &mut StdRng, nodes: f64) -> Result<f64, String> {
        let (g1, g2) = (gamma_dist(self.a1, self.b1), gamma_dist(self.a2, self.b2));
        let p1 = self.gamma1_prob(nodes);
        let draw = |r: &mut StdRng| {
            if r.random::<f64>() < p1 {
                g1.sample(r)
            } else {
                g2.sample(r)
            }
        };
        rejection_sample(rng, draw, |v| v <= 12.0).ok_or_else(|| {
            format!(
                "no log run time ≤ 12 in {MAX_REJECTIONS} draws from the gammas (a1 = {:?}, b1 = {:?}; a2 = {:?}, b2 = {:?}); lower them",
                self.a1, self.b1, self.a2, self.b2
            )
        })
    }

    /// The 48 half-hour weights of the daily cycle (mean 1), from 00:00.
    pub fn bucket_weights(&self) -> Vec<f64> {
        let cdf = |x: f64| math::gamma_p(self.a_num, x / self.b_num);
        // Buckets 11..=58 of the gamma, the first one at 11:00 (bucket 22 of the day).
        let raw: Vec<f64> = (CYCLIC_DAY_START..CYCLIC_DAY_START + 48)
            .map(|i| (cdf(i as f64 + 1.0) - cdf(i as f64)).max(1e-9))
            .collect();
        let mean = raw.iter().sum::<f64>() / 48.0;
        let mut w = vec![0.0; 48];
        for (k, r) in raw.iter().enumerate() {
            w[(2 * CYCLIC_DAY_START + k) % 48] = r / mean;
        }
        w
    }
}

fn gamma_dist(shape: f64, scale: f64) -> Gamma<f64> {
    // Invariant: parameters were validated positive when the topology was read; fall back to
    // a degenerate-but-valid distribution rather than panic if called otherwise.
    Gamma::new(shape.max(1e-9), scale.max(1e-9))
        .unwrap_or_else(|_| Gamma::new(1.0, 1.0).expect("1, 1 is a valid gamma"))
}

/// The GWA-based bag-of-tasks model of paper 002 Table II: Weibull inter-arrival, Weibull
/// number of tasks, normal task duration. A request is a lease of one VM per task, each
/// running one task's duration.
#[derive(Clone, Debug, PartialEq)]
pub struct Gwa {
    /// Weibull inter-arrival scale α, seconds.
    pub arrival_scale: f64,
    /// Weibull inter-arrival shape β.
    pub arrival_shape: f64,
    /// Weibull number of tasks: scale.
    pub tasks_scale: f64,
    /// Weibull number of tasks: shape.
    pub tasks_shape: f64,
    /// Mean task duration, seconds.
    pub duration_mean: f64,
    /// Standard deviation of task duration, seconds.
    pub duration_sd: f64,
}

impl Default for Gwa {
    /// Paper 002's external stream at its reference point (αe = 1.7, Me = 90 s).
    fn default() -> Self {
        Gwa {
            arrival_scale: 1.7,
            arrival_shape: 7.86,
            tasks_scale: 1.76,
            tasks_shape: 2.11,
            duration_mean: 90.0,
            duration_sd: 6.1,
        }
    }
}

impl Gwa {
    /// The mean inter-arrival time α·Γ(1 + 1/β).
    pub fn mean_interarrival(&self) -> f64 {
        self.arrival_scale * math::gamma(1.0 + 1.0 / self.arrival_shape)
    }
}

/// A workload model with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// DAS-2.
    Das2(Das2),
    /// Lublin & Feitelson 1999.
    Lublin99(Lublin99),
    /// GWA-based bag of tasks.
    Gwa(Gwa),
}

fn weibull(scale: f64, shape: f64) -> Weibull<f64> {
    Weibull::new(scale.max(1e-12), shape.max(1e-12))
        .unwrap_or_else(|_| Weibull::new(1.0, 1.0).expect("1, 1 is a valid Weibull"))
}

/// Draws a rejection sampler makes for one value before it gives up: the shipped models
/// accept nearly every draw, so running out means the parameters leave (almost) nothing to
/// accept — an error naming them, not an endless loop.
pub const MAX_REJECTIONS: usize = 10_000;

/// Draws from `draw` until `accept` takes one, at most [`MAX_REJECTIONS`] times.
fn rejection_sample(
    rng: &mut StdRng,
    mut draw: impl FnMut(&mut StdRng) -> f64,
    accept: impl Fn(f64) -> bool,
) -> Option<f64> {
    (0..MAX_REJECTIONS).map(|_| draw(rng)).find(|v| accept(*v))
}

/// Generates the jobs arriving within `span`, at most `max_jobs`, with sizes capped at
/// `max_vms`, from the random stream seeded with `seed`. Parameters under which a sampler
/// accepts no draw in [`MAX_REJECTIONS`] tries are an error saying which.
pub fn generate(
    model: &Model,
    span: EmuDuration,
    max_vms: u32,
    max_jobs: usize,
    seed: u64,
) -> Result<Vec<Job>, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let limits = Limits {
        span_s: span.as_secs_f64(),
        max_vms: max_vms.max(1),
        max_jobs,
    };
    match model {
        Model::Das2(m) => das2_jobs(m, &limits, &mut rng),
        Model::Lublin99(m) => lublin_jobs(m, &limits, &mut rng),
        Model::Gwa(m) => gwa_jobs(m, &limits, &mut rng),
    }
}

/// What a generated trace may hold.
struct Limits {
    span_s: f64,
    max_vms: u32,
    max_jobs: usize,
}

impl Limits {
    /// A job size, rounded and within [1, max_vms].
    fn cap(&self, v: f64) -> u32 {
        (v.round() as u32).clamp(1, self.max_vms)
    }
}

fn das2_jobs(m: &Das2, limits: &Limits, rng: &mut StdRng) -> Result<Vec<Job>, String> {
    let (span_s, max_jobs) = (limits.span_s, limits.max_jobs);
    let cap = |v: f64| limits.cap(v);
    let mut jobs = Vec::new();
    let mut t = 0.0f64;
    let gap = weibull(m.arrival_scale, m.arrival_shape);
    let dur = LogNormal::new(m.duration_a, m.duration_b.max(1e-12))
        .unwrap_or_else(|_| LogNormal::new(0.0, 1.0).expect("valid"));
    while jobs.len() < max_jobs {
        t += gap.sample(rng);
        if t >= span_s {
            break;
        }
        let vms = cap(m.size(rng));
        let d = rejection_sample(rng, |r| dur.sample(r), |d| d <= m.duration_max_s).ok_or_else(
            || {
                format!(
                    "no run time ≤ duration_max_s = {:?} s in {MAX_REJECTIONS} draws from the log-normal (duration_a = {:?}, duration_b = {:?}); raise duration_max_s or lower duration_a",
                    m.duration_max_s, m.duration_a, m.duration_b
                )
            },
        )?;
        jobs.push(Job {
            arrival: EmuDuration::from_secs_f64(t),
            vms,
            duration: EmuDuration::from_secs_f64(d.max(1.0)),
        });
    }
    Ok(jobs)
}

fn lublin_jobs(m: &Lublin99, limits: &Limits, rng: &mut StdRng) -> Result<Vec<Job>, String> {
    let m = &m.for_run(rng);
    let (span_s, max_jobs) = (limits.span_s, limits.max_jobs);
    let cap = |v: f64| limits.cap(v);
    let mut jobs = Vec::new();
    let mut t = 0.0f64;
    let weights = m.bucket_weights();
    let arr = gamma_dist(m.a_arr * m.arar, m.b_arr);
    while jobs.len() < max_jobs {
        let g = rejection_sample(rng, |r| arr.sample(r), |v| v <= 13.0)
            .ok_or_else(|| {
                format!(
                    "no log inter-arrival time ≤ 13 in {MAX_REJECTIONS} draws from the gamma (a_arr × arar = {:?}, b_arr = {:?}); lower a_arr, arar or b_arr",
                    m.a_arr * m.arar,
                    m.b_arr
                )
            })?
            .exp();
        t = if m.daily_cycle {
            advance_cyclic(t, g, &weights)
        } else {
            t + g
        };
        if t >= span_s {
            break;
        }
        let nodes = m.size(rng);
        let runtime = m.log_runtime(rng, nodes)?.exp();
        jobs.push(Job {
            arrival: EmuDuration::from_secs_f64(t),
            vms: cap(nodes),
            duration: EmuDuration::from_secs_f64(runtime.max(1.0)),
        });
    }
    Ok(jobs)
}

fn gwa_jobs(m: &Gwa, limits: &Limits, rng: &mut StdRng) -> Result<Vec<Job>, String> {
    let (span_s, max_jobs) = (limits.span_s, limits.max_jobs);
    let cap = |v: f64| limits.cap(v);
    let mut jobs = Vec::new();
    let mut t = 0.0f64;
    let gap = weibull(m.arrival_scale, m.arrival_shape);
    let tasks = weibull(m.tasks_scale, m.tasks_shape);
    let dur = Normal::new(m.duration_mean, m.duration_sd.max(0.0))
        .unwrap_or_else(|_| Normal::new(1.0, 0.0).expect("valid"));
    while jobs.len() < max_jobs {
        t += gap.sample(rng);
        if t >= span_s {
            break;
        }
        let vms = cap(tasks.sample(rng).max(1.0));
        let d = dur.sample(rng).max(1.0);
        jobs.push(Job {
            arrival: EmuDuration::from_secs_f64(t),
            vms,
            duration: EmuDuration::from_secs_f64(d),
        });
    }
    Ok(jobs)
}

/// Spends an inter-arrival "work" of `gap` seconds across half-hour buckets whose weights say
/// how busy each is: a busy bucket (weight 2) uses the gap up twice as fast.
fn advance_cyclic(t: f64, gap: f64, weights: &[f64]) -> f64 {
    let (mut t, mut g) = (t, gap);
    loop {
        let bucket = ((t / BUCKET_S).floor() as usize) % weights.len();
        let w = weights[bucket].max(1e-9);
        let left = BUCKET_S - t.rem_euclid(BUCKET_S);
        if g / w <= left {
            return t + g / w;
        }
        g -= left * w;
        t += left;
    }
}

/// Fractions of the four external lease types.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeMix {
    /// Weights of cancellable, suspendable, migratable, non-preemptable.
    pub weights: [f64; 4],
}

impl Default for TypeMix {
    /// 25 % of each (paper 000 §5.2).
    fn default() -> Self {
        TypeMix { weights: [0.25; 4] }
    }
}

impl TypeMix {
    /// The same mix with best-effort leases (cancellable and suspendable) making up `share`
    /// of the requests, each group keeping its own proportions (paper 003 §7.2 varies it);
    /// a group with no weight is split evenly.
    pub fn with_best_effort_share(&self, share: f64) -> TypeMix {
        let share = share.clamp(0.0, 1.0);
        let split = |a: f64, b: f64, total: f64| {
            let s = a + b;
            if s > 0.0 {
                (total * a / s, total * b / s)
            } else {
                (total / 2.0, total / 2.0)
            }
        };
        let [c, s, m, n] = self.weights;
        let (c, s) = split(c, s, share);
        let (m, n) = split(m, n, 1.0 - share);
        TypeMix {
            weights: [c, s, m, n],
        }
    }
}

/// Deadlines from a deadline ratio (deadline = arrival + ratio × duration), normal per
/// urgency class (paper 002 §V-B: N(4, 1) low urgency, N(2, 1) high urgency).
#[derive(Clone, Debug, PartialEq)]
pub struct Deadlines {
    /// Fraction of low-urgency requests.
    pub low_urgency: f64,
    /// Mean deadline ratio of low-urgency requests.
    pub low_mean: f64,
    /// Its standard deviation.
    pub low_sd: f64,
    /// Mean deadline ratio of high-urgency requests.
    pub high_mean: f64,
    /// Its standard deviation.
    pub high_sd: f64,
    /// Ratios are clamped at least to this (a ratio below 1 can never be met).
    pub min_ratio: f64,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            low_urgency: 0.5,
            low_mean: 4.0,
            low_sd: 1.0,
            high_mean: 2.0,
            high_sd: 1.0,
            min_ratio: 1.0,
        }
    }
}

/// Lease type and deadline ratio (deadline = arrival + ratio × run time) for each job, from
/// the mix and the urgency classes.
pub fn assign(
    jobs: &[Job],
    mix: &TypeMix,
    deadlines: &Deadlines,
    seed: u64,
) -> Vec<(LeaseType, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let total: f64 = mix.weights.iter().sum::<f64>().max(1e-12);
    let normal = |m: f64, s: f64| {
        Normal::new(m, s.max(0.0)).unwrap_or_else(|_| Normal::new(m, 0.0).expect("valid"))
    };
    let (low, high) = (
        normal(deadlines.low_mean, deadlines.low_sd),
        normal(deadlines.high_mean, deadlines.high_sd),
    );
    jobs.iter()
        .map(|_| {
            let mut u = rng.random::<f64>() * total;
            let mut kind = LeaseType::ALL[3];
            for (i, w) in mix.weights.iter().enumerate() {
                if u < *w {
                    kind = LeaseType::ALL[i];
                    break;
                }
                u -= w;
            }
            let ratio = if rng.random::<f64>() < deadlines.low_urgency {
                low.sample(&mut rng)
            } else {
                high.sample(&mut rng)
            };
            (kind, ratio.max(deadlines.min_ratio))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(v: impl Iterator<Item = f64>) -> f64 {
        let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        s / n as f64
    }

    #[test]
    fn das2_moments_match_paper_000_eqs_28_to_30() {
        // Paper 000 Table 2, cluster C128: l = 0.8, m = 3.5, h = 7, q = 0.9, a = 5.35, b = 1.7.
        let m = Das2 {
            p_one: 0.3,
            p_pow2: 0.6,
            size_m: 3.5,
            duration_a: 5.35,
            duration_max_s: f64::INFINITY,
            arrival_scale: 1.6,
            arrival_shape: 0.35,
            ..Das2::default()
        };
        let mut rng = StdRng::seed_from_u64(1);
        let n = 400_000;
        // Eq. 29: the mean exponent of the two-stage uniform.
        let exps = mean(
            (0..n).map(|_| two_stage_uniform(&mut rng, m.size_l, m.size_m, m.size_h, m.size_q)),
        );
        assert!(
            (exps - m.mean_exponent()).abs() < 0.01,
            "{exps} vs {}",
            m.mean_exponent()
        );
        // Eq. 30: log-normal mean (CV ≈ 4.1, so 0.4 M draws give a standard error near 0.7 %).
        let jobs = generate(
            &Model::Das2(m.clone()),
            EmuDuration::from_secs(10_000_000),
            4096,
            n,
            2,
        )
        .expect("the model is valid");
        let d = mean(jobs.iter().map(|j| j.duration.as_secs_f64()));
        assert!(
            (d / m.mean_duration_eq30() - 1.0).abs() < 0.05,
            "{d} vs {}",
            m.mean_duration_eq30()
        );
        // Weibull inter-arrival mean α Γ(1 + 1/β).
        let gaps: Vec<f64> = jobs
            .windows(2)
            .map(|w| w[1].arrival.as_secs_f64() - w[0].arrival.as_secs_f64())
            .collect();
        let g = mean(gaps.iter().copied());
        assert!(
            (g / m.mean_interarrival() - 1.0).abs() < 0.03,
            "{g} vs {}",
            m.mean_interarrival()
        );
        // Eq. 28 approximates E[2^X] by 2^E[X]: the sample mean is of its order, not equal.
        let v = mean(jobs.iter().map(|j| f64::from(j.vms)));
        assert!(
            v > 0.5 * m.mean_vms_eq28() && v < 2.0 * m.mean_vms_eq28(),
            "{v} vs {}",
            m.mean_vms_eq28()
        );
        let serial = jobs.iter().filter(|j| j.vms == 1).count() as f64 / jobs.len() as f64;
        assert!(serial >= m.p_one - 0.01, "{serial}");
    }

    #[test]
    fn lublin_sizes_and_runtimes_follow_the_model() {
        let m = Lublin99::default();
        // The one-type model averages ~1 000 s between jobs (E[e^X] for the gamma of ln gaps).
        let jobs = generate(
            &Model::Lublin99(m.clone()),
            EmuDuration::from_secs(5 * 365 * 86_400),
            1 << 20,
            100_000,
            3,
        )
        .expect("the model is valid");
        assert_eq!(jobs.len(), 100_000);
        let serial = jobs.iter().filter(|j| j.vms == 1).count() as f64 / jobs.len() as f64;
        // Serial jobs: the serial probability plus power-of-two draws that round to 2^0 (rare).
        assert!((serial - m.serial_prob).abs() < 0.02, "{serial}");
        // Serial jobs' ln(runtime) is the gamma mixture with p = pa + pb, below the cap of 12.
        let p = m.gamma1_prob(1.0);
        let expected = p * m.a1 * m.b1 + (1.0 - p) * m.a2 * m.b2;
        let got = mean(
            jobs.iter()
                .filter(|j| j.vms == 1)
                .map(|j| j.duration.as_secs_f64().max(1.0).ln()),
        );
        assert!((got - expected).abs() < 0.1, "{got} vs {expected}");
        // The daily cycle's weights average 1 and peak in the working day.
        let w = m.bucket_weights();
        assert!((w.iter().sum::<f64>() / 48.0 - 1.0).abs() < 1e-9);
        let busiest = w
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|x| x.0)
            .unwrap_or(0);
        assert!((16..40).contains(&busiest), "peak at bucket {busiest}");
    }

    #[test]
    fn gwa_moments_match_paper_002_table_ii() {
        let m = Gwa::default();
        let jobs = generate(
            &Model::Gwa(m.clone()),
            EmuDuration::from_secs(1_000_000),
            64,
            200_000,
            4,
        )
        .expect("the model is valid");
        let d = mean(jobs.iter().map(|j| j.duration.as_secs_f64()));
        assert!((d - m.duration_mean).abs() < 0.1, "{d}");
        let gaps = mean(
            jobs.windows(2)
                .map(|w| w[1].arrival.as_secs_f64() - w[0].arrival.as_secs_f64()),
        );
        assert!((gaps / m.mean_interarrival() - 1.0).abs() < 0.01, "{gaps}");
        // Weibull tasks (1.76, 2.11): mean 1.76·Γ(1 + 1/2.11) ≈ 1.56, rounded to whole VMs ≥ 1.
        let v = mean(jobs.iter().map(|j| f64::from(j.vms)));
        assert!((1.4..1.9).contains(&v), "{v}");
    }

    #[test]
    fn generation_is_deterministic_and_capped() {
        let model = Model::Das2(Das2::default());
        let a = generate(&model, EmuDuration::from_secs(86_400), 16, 10_000, 9).expect("valid");
        let b = generate(&model, EmuDuration::from_secs(86_400), 16, 10_000, 9).expect("valid");
        assert_eq!(a, b);
        assert!(a.iter().all(|j| (1..=16).contains(&j.vms)));
        assert!(a.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert!(a
            .last()
            .is_some_and(|j| j.arrival < EmuDuration::from_secs(86_400)));
    }

    #[test]
    fn types_follow_the_mix_and_deadlines_the_ratios() {
        let jobs: Vec<Job> = (0..40_000)
            .map(|i| Job {
                arrival: EmuDuration::from_secs(i),
                vms: 1,
                duration: EmuDuration::from_secs(100),
            })
            .collect();
        let out = assign(
            &jobs,
            &TypeMix {
                weights: [0.1, 0.2, 0.3, 0.4],
            },
            &Deadlines::default(),
            5,
        );
        for (i, want) in [0.1, 0.2, 0.3, 0.4].iter().enumerate() {
            let got = out.iter().filter(|(t, _)| *t == LeaseType::ALL[i]).count() as f64 / 40_000.0;
            assert!((got - want).abs() < 0.01, "{i}: {got}");
        }
        // Half low (mean 4), half high (mean 2), clamped at 1: mean ratio a little above 3.
        let ratio = mean(out.iter().map(|(_, r)| *r));
        assert!((3.0..3.2).contains(&ratio), "{ratio}");
        assert!(out.iter().all(|(_, r)| *r >= 1.0));
    }

    #[test]
    fn a_lublin_range_is_drawn_once_per_run_and_fixed_values_draw_nothing() {
        let ranged = Lublin99 {
            per_run: LublinPerRun {
                u_med: Some((3.5, 5.5)),
                b_arr: Some((0.4871, 0.55)),
            },
            ..Lublin99::default()
        };
        let drawn = |seed: u64| ranged.for_run(&mut StdRng::seed_from_u64(seed));
        let mut seen = Vec::new();
        for seed in 1..=50 {
            let m = drawn(seed);
            assert!((3.5..5.5).contains(&m.u_med), "{}", m.u_med);
            assert!((0.4871..0.55).contains(&m.b_arr), "{}", m.b_arr);
            assert_eq!(m.per_run, LublinPerRun::default(), "a run's model is fixed");
            assert_eq!(m, drawn(seed), "the same seed draws the same");
            seen.push(m.u_med);
        }
        // Uniform over the range: 50 draws spread over it (mean within 0.3 of the middle).
        let mid = seen.iter().sum::<f64>() / seen.len() as f64;
        assert!((mid - 4.5).abs() < 0.3, "{mid}");
        // A model of fixed values takes nothing from the stream: its jobs are the same.
        let fixed = Lublin99::default();
        let mut a = StdRng::seed_from_u64(9);
        assert_eq!(fixed.for_run(&mut a), fixed);
        assert_eq!(a.random::<u64>(), StdRng::seed_from_u64(9).random::<u64>());
    }
}
