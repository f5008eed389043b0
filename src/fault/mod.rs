//! Fault injection on the links between IGGs, as data: message delay (a distribution), drop,
//! duplication and reordering probabilities (globally or per link), partitions between Grids
//! for a time window, and IGG crashes with a restart after a delay. One random stream, seeded
//! from the run's seed, decides every fault, so a run with faults is as reproducible as one
//! without.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

use crate::model::GridId;
use crate::time::{EmuDuration, EmuTime};

/// How long a message takes on a link.
#[derive(Clone, Debug, PartialEq)]
pub enum Delay {
    /// Always this long.
    Fixed(EmuDuration),
    /// Uniform in [min, max].
    Uniform(EmuDuration, EmuDuration),
    /// Exponential with this mean.
    Exponential(EmuDuration),
}

impl Default for Delay {
    fn default() -> Self {
        Delay::Fixed(EmuDuration::ZERO)
    }
}

/// The faults of a link.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkFaults {
    /// Delay of each message.
    pub delay: Delay,
    /// Probability a message is lost.
    pub drop: f64,
    /// Probability a message is delivered twice.
    pub duplicate: f64,
    /// Probability a message is held back by up to `reorder_window` (so later ones overtake).
    pub reorder: f64,
    /// How long a reordered message may be held back.
    pub reorder_window: EmuDuration,
}

/// Two Grids cut off from each other during `[from, until)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// One side.
    pub a: GridId,
    /// The other side.
    pub b: GridId,
    /// Start of the window.
    pub from: EmuTime,
    /// End of the window.
    pub until: EmuTime,
}

/// An IGG that crashes at `at` and restarts `down_for` later.
#[derive(Clone, Debug, PartialEq)]
pub struct Crash {
    /// The Grid whose IGG crashes.
    pub grid: GridId,
    /// When.
    pub at: EmuTime,
    /// How long it stays down.
    pub down_for: EmuDuration,
}

/// Every fault of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Faults of every link without its own.
    pub global: LinkFaults,
    /// Per-link faults (from, to).
    pub links: Vec<(GridId, GridId, LinkFaults)>,
    /// Partitions.
    pub partitions: Vec<Partition>,
    /// Crashes.
    pub crashes: Vec<Crash>,
}

impl FaultConfig {
    /// Whether any fault is configured.
    pub fn any(&self) -> bool {
        *self != FaultConfig::default()
    }
}

/// The fault injector of a run.
#[derive(Debug)]
pub struct Faults {
    cfg: FaultConfig,
    rng: StdRng,
    /// Messages dropped, duplicated, and cut by partitions or crashes so far.
    pub counts: FaultCounts,
}

/// What the injector did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FaultCounts {
    /// Messages lost to the drop probability.
    pub dropped: u64,
    /// Messages delivered twice.
    pub duplicated: u64,
    /// Messages held back.
    pub reordered: u64,
    /// Messages lost to partitions.
    pub partitioned: u64,
    /// Messages lost because the receiving IGG was down.
    pub to_crashed: u64,
}

impl FaultCounts {
    /// Adds `o`'s counts to these (the shards of a run on several threads).
    pub fn add(&mut self, o: &FaultCounts) {
        self.dropped += o.dropped;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.partitioned += o.partitioned;
        self.to_crashed += o.to_crashed;
    }
}

impl Faults {
    /// An injector for `cfg`, seeded with `seed`.
    pub fn new(cfg: FaultConfig, seed: u64) -> Faults {
        Faults {
            cfg,
            rng: StdRng::seed_from_u64(seed),
            counts: FaultCounts::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Whether Grid `g`'s IGG is down at `now`.
    pub fn is_down(&self, g: GridId, now: EmuTime) -> bool {
        self.cfg
            .crashes
            .iter()
            .any(|c| c.grid == g && now >= c.at && now < c.at + c.down_for)
    }

    /// When a message sent now from `from` to `to` arrives: no entry if it is lost, two if
    /// duplicated; each an offset from now.
    pub fn deliveries(&mut self, from: GridId, to: GridId, now: EmuTime) -> Vec<EmuDuration> {
        let cut = self.cfg.partitions.iter().any(|p| {
            ((p.a == from && p.b == to) || (p.a == to && p.b == from))
                && now >= p.from
                && now < p.until
        });
        if cut {
            self.counts.partitioned += 1;
            return Vec::new();
        }
        let link = self
            .cfg
            .links
            .iter()
            .find(|(f, t, _)| *f == from && *t == to)
            .map_or(&self.cfg.global, |(_, _, l)| l)
            .clone();
        if link.drop > 0.0 && self.rng.random::<f64>() < link.drop {
            self.counts.dropped += 1;
            return Vec::new();
        }
        let copies = if link.duplicate > 0.0 && self.rng.random::<f64>() < link.duplicate {
            self.counts.duplicated += 1;
            2
        } else {
            1
        };
        (0..copies)
            .map(|_| {
                let mut d = match &link.delay {
                    Delay::Fixed(d) => *d,
                    Delay::Uniform(lo, hi) => EmuDuration::from_micros(
                        self.rng
                            .random_range(lo.as_micros()..=hi.as_micros().max(lo.as_micros())),
                    ),
                    Delay::Exponential(mean) => {
                        let e = Exp::new(1.0 / mean.as_secs_f64().max(1e-9))
                            .map(|e| e.sample(&mut self.rng))
                            .unwrap_or(0.0);
                        EmuDuration::from_secs_f64(e)
                    }
                };
                if link.reorder > 0.0 && self.rng.random::<f64>() < link.reorder {
                    self.counts.reordered += 1;
                    d += EmuDuration::from_micros(
                        self.rng.random_range(0..=link.reorder_window.as_micros()),
                    );
                }
                d
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_faults_deliver_once_at_once() {
        let mut f = Faults::new(FaultConfig::default(), 1);
        assert_eq!(
            f.deliveries(GridId(0), GridId(1), EmuTime::ZERO),
            vec![EmuDuration::ZERO]
        );
    }

    #[test]
    fn drop_and_duplicate_rates_are_respected() {
        let global = LinkFaults {
            drop: 0.2,
            duplicate: 0.1,
            ..LinkFaults::default()
        };
        let mut f = Faults::new(
            FaultConfig {
                global,
                ..FaultConfig::default()
            },
            7,
        );
        let n = 100_000;
        let delivered: usize = (0..n)
            .map(|_| f.deliveries(GridId(0), GridId(1), EmuTime::ZERO).len())
            .sum();
        // E[copies] = 0.8 · 1.1 = 0.88.
        assert!((delivered as f64 / n as f64 - 0.88).abs() < 0.01);
    }

    #[test]
    fn partitions_and_crashes_are_time_windows() {
        let t = EmuTime::from_secs;
        let cfg = FaultConfig {
            partitions: vec![Partition {
                a: GridId(0),
                b: GridId(1),
                from: t(10),
                until: t(20),
            }],
            crashes: vec![Crash {
                grid: GridId(2),
                at: t(5),
                down_for: EmuDuration::from_secs(5),
            }],
            ..FaultConfig::default()
        };
        let mut f = Faults::new(cfg, 1);
        assert!(f.deliveries(GridId(1), GridId(0), t(15)).is_empty());
        assert_eq!(f.deliveries(GridId(1), GridId(0), t(20)).len(), 1);
        assert_eq!(f.deliveries(GridId(0), GridId(2), t(15)).len(), 1);
        assert!(f.is_down(GridId(2), t(7)) && !f.is_down(GridId(2), t(10)));
    }

    #[test]
    fn per_link_faults_override_the_global_ones() {
        let cfg = FaultConfig {
            links: vec![(
                GridId(0),
                GridId(1),
                LinkFaults {
                    drop: 1.0,
                    ..LinkFaults::default()
                },
            )],
            ..FaultConfig::default()
        };
        let mut f = Faults::new(cfg, 1);
        assert!(f.deliveries(GridId(0), GridId(1), EmuTime::ZERO).is_empty());
        assert_eq!(f.deliveries(GridId(1), GridId(0), EmuTime::ZERO).len(), 1);
    }
}
