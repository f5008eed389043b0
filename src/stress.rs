//! Stress-testing the peering protocol: one topology over many seeds and fault settings, run
//! in parallel; every run's online invariant report is collected, and every violation comes
//! with the exact command that reproduces it (deterministically in virtual mode; in realtime
//! mode on threads, the command that runs it the same way, under the machine's own order).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::progress::{Progress, Style};
use crate::topology::{self, Overrides, Topology};
use crate::{run, Broken, RunOptions};

/// What a stress test ran, as `stress.json` records it (`inputs`): a stress test into a
/// folder holding the results of the [same](StressInputs::same_test) one replaces them, and
/// refuses another's without `--overwrite`, as a run does.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct StressInputs {
    /// The topology file, its hash and the `--set` overrides (as a run records them).
    pub provenance: crate::Provenance,
    /// `--first-seed`.
    pub first_seed: u64,
    /// `--seeds`.
    pub seeds: u64,
    /// The fault settings run, in order.
    pub faults: Vec<String>,
    /// `--interleavings`.
    pub interleavings: u64,
    /// `virtual` or `realtime`.
    pub mode: String,
    /// Realtime: emulated seconds per wall second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Realtime: threads per run.
    pub threads: usize,
    /// The deliberately broken variant run (`none` for the protocols as they are).
    pub broken: String,
}

impl StressInputs {
    /// Whether `self` and `other` are the same stress test: the same run of the topology
    /// ([`crate::Provenance::same_run`]: its contents and overrides, however spelled) over
    /// the same seeds, fault settings, schedules, pace and protocol variant.
    pub fn same_test(&self, other: &StressInputs) -> bool {
        self.provenance.same_run(&other.provenance)
            && (
                self.first_seed,
                self.seeds,
                &self.faults,
                self.interleavings,
            ) == (
                other.first_seed,
                other.seeds,
                &other.faults,
                other.interleavings,
            )
            && (&self.mode, self.speedup, self.threads, &self.broken)
                == (&other.mode, other.speedup, other.threads, &other.broken)
    }
}

/// The most seeds one stress test takes (each is a run per fault setting).
pub const MAX_SEEDS: u64 = 100_000;

/// Why `--first-seed S --seeds N` is refused, with the stress tests to run instead.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedRangeError {
    /// The whole message, advice included.
    pub message: String,
    /// The advice as `(--first-seed, --seeds)` pairs, each a range [`seed_range`] accepts.
    pub advice: Vec<(u64, u64)>,
}

impl std::fmt::Display for SeedRangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The seeds of `--first-seed first --seeds count`: `first` to `first + count − 1`, at least
/// one and at most [`MAX_SEEDS`], none past `u64::MAX`. A refusal advises only ranges that are
/// themselves accepted (it advised `--first-seed 18446744073709551615 --seeds 100000` once):
/// the range cut at the largest seed, the same count ending there, or the range split in
/// stress tests of [`MAX_SEEDS`].
pub fn seed_range(first: u64, count: u64) -> Result<std::ops::RangeInclusive<u64>, SeedRangeError> {
    // The first stress tests of at most MAX_SEEDS that cover `total` seeds from `start`.
    let split = |start: u64, total: u64| -> Vec<(u64, u64)> {
        let head = (start, total.min(MAX_SEEDS));
        let mut parts = vec![head];
        if total > MAX_SEEDS {
            // start + MAX_SEEDS ≤ start + total − 1, which the caller checked fits.
            parts.push((start + MAX_SEEDS, (total - MAX_SEEDS).min(MAX_SEEDS)));
        }
        parts
    };
    let commands = |parts: &[(u64, u64)], total: u64| {
        let each: Vec<String> = parts
            .iter()
            .map(|(s, n)| format!("--first-seed {s} --seeds {n}"))
            .collect();
        let more = if total > 2 * MAX_SEEDS {
            ", and so on"
        } else {
            ""
        };
        format!("{}{more}", each.join(", then "))
    };
    if count == 0 {
        return Err(SeedRangeError {
            message: format!("--seeds must be at least 1 (e.g. --first-seed {first} --seeds 1)"),
            advice: vec![(first, 1)],
        });
    }
    let Some(last) = first.checked_add(count - 1) else {
        // count − 1 > u64::MAX − first, so first ≥ 1 and `room` fits.
        let room = u64::MAX - first + 1;
        let mut advice = split(first, room);
        let cut = commands(&advice, room);
        let there = if room == 1 {
            "is 1 seed".to_string()
        } else {
            format!("are {room} seeds")
        };
        let mut message = format!(
            "--first-seed {first} --seeds {count} goes past the largest seed, {}: from {first} \
             there {there}. Give {cut}",
            u64::MAX
        );
        if count <= MAX_SEEDS {
            let end = u64::MAX - (count - 1);
            message += &format!(" (up to the largest), or --first-seed {end} --seeds {count} (the last {count} seeds)");
            advice.push((end, count));
        }
        return Err(SeedRangeError { message, advice });
    };
    if count > MAX_SEEDS {
        let advice = split(first, count);
        return Err(SeedRangeError {
            message: format!(
                "--seeds {count} is more than {MAX_SEEDS}; split the seeds over several stress \
                 tests with --first-seed: {}",
                commands(&advice, count)
            ),
            advice,
        });
    }
    Ok(first..=last)
}

/// A named set of fault overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSetting {
    /// Its name.
    pub name: String,
    /// `--set` overrides.
    pub sets: Vec<String>,
}

/// The built-in fault settings for a topology (names: none, lossy, slow, late, partition,
/// crash, chaos). Partitions and crashes involve the topology's first two Grids, one hour in; the
/// table in `docs/outputs.md` says what each injects.
pub fn presets(topo: &Topology) -> Vec<FaultSetting> {
    let g = |i: usize| {
        topo.grids
            .get(i)
            .or(topo.grids.first())
            .map_or("?".to_string(), |g| g.name.clone())
    };
    let (a, b) = (g(0), g(1));
    let lossy = vec![
        "fault.drop=0.1".to_string(),
        "fault.duplicate=0.1".to_string(),
        "fault.reorder=0.2".to_string(),
        "fault.reorder_window=\"20s\"".to_string(),
    ];
    let slow = vec!["fault.delay={ kind = \"exponential\", mean = \"10s\" }".to_string()];
    // Delays as long as a negotiation's own timeouts and rounds: answers to one exchange
    // arrive during the next.
    let late = vec!["fault.delay={ kind = \"exponential\", mean = \"300s\" }".to_string()];
    let partition = vec![format!(
        "fault.partition=[{{ between = [\"{a}\", \"{b}\"], from = \"1h\", until = \"2h\" }}]"
    )];
    let crash = vec![format!("fault.crash=[{{ grid = \"{b}\", at = \"1h\", down_for = \"20m\" }}, {{ grid = \"{a}\", at = \"3h\", down_for = \"10m\" }}]")];
    let mut chaos = lossy.clone();
    chaos.extend(slow.iter().cloned());
    chaos.extend(partition.iter().cloned());
    chaos.extend(crash.iter().cloned());
    [
        ("none", vec![]),
        ("lossy", lossy),
        ("slow", slow),
        ("late", late),
        ("partition", partition),
        ("crash", crash),
        ("chaos", chaos),
    ]
    .into_iter()
    .map(|(n, sets)| FaultSetting {
        name: n.to_string(),
        sets,
    })
    .collect()
}

/// One stress run's result.
#[derive(Clone, Debug)]
pub struct StressRun {
    /// The fault setting's name.
    pub fault: String,
    /// The seed.
    pub seed: u64,
    /// All `--set` overrides of the run (user's, fault setting's, seed).
    pub sets: Vec<String>,
    /// Invariant violations (count and first examples), or the error that stopped the run.
    pub outcome: Result<(u64, Vec<String>), String>,
    /// Requests that ended (not unfinished) of all requests.
    pub ended: (u64, u64),
    /// Messages the fault injector dropped, duplicated, reordered, cut.
    pub faults: crate::fault::FaultCounts,
    /// The deliberately broken variant the run used (its reproduce line must too).
    pub broken: Broken,
    /// The order same-time deliveries ran in: 0 FIFO, k > 0 the k-th perturbed schedule
    /// (`emulation.interleaving`; its override is among `sets`).
    pub schedule: u64,
    /// How it was paced (its mode and speed-up are among `sets`).
    pub pace: Pace,
}

/// How a stress test's runs are paced.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Pace {
    /// Virtual time: deterministic, as fast as the CPU allows.
    #[default]
    Virtual,
    /// Realtime at `speedup`, the Grids on `threads` threads (true concurrency).
    Realtime {
        /// Emulated seconds per wall second.
        speedup: f64,
        /// Threads per run (`--threads`).
        threads: usize,
    },
}

/// What a stress test runs: every fault setting × seed × schedule.
pub struct StressPlan<'a> {
    /// How the runs are paced.
    pub pace: Pace,
    /// Fault settings.
    pub settings: &'a [FaultSetting],
    /// Seeds.
    pub seeds: &'a [u64],
    /// Orders of same-time deliveries: 0 is FIFO, k > 0 the k-th perturbed schedule
    /// (`emulation.interleaving = k`; see [`crate::time::interleave`]).
    pub schedules: &'a [u64],
    /// The policies the runs may name.
    pub registry: &'a crate::policy::Registry,
}

impl StressPlan<'_> {
    /// Runs the plan makes.
    pub fn runs(&self) -> usize {
        self.settings.len() * self.seeds.len() * self.schedules.len()
    }
}

impl StressRun {
    /// The command that reproduces this run.
    pub fn command(&self, topology: &Path) -> String {
        let mut c = match self.pace {
            Pace::Virtual => format!("igemu run {} --mode virtual", topology.display()),
            Pace::Realtime { threads, .. } => format!(
                "igemu run {} --mode realtime --threads {threads}",
                topology.display()
            ),
        };
        for s in &self.sets {
            c += &format!(" --set '{s}'");
        }
        match self.broken {
            Broken::None => {}
            Broken::LateAck => c += " --broken-protocol",
            other => c += &format!(" --broken-protocol={}", other.name()),
        }
        c
    }
}

/// Runs `topology` for every fault setting, seed and schedule of `plan` on `jobs` threads
/// (with `user_sets` applied to all), showing progress on stderr in `style` (runs done,
/// elapsed time, time left). `broken` is the test-only broken variant.
pub fn stress(
    topology: &Path,
    user_sets: &[String],
    plan: &StressPlan<'_>,
    jobs: usize,
    broken: Broken,
    style: Style,
) -> Vec<StressRun> {
    let settings = plan.settings;
    let todo = planned_runs(user_sets, plan);
    let total = todo.len();
    let (pace, threads) = match plan.pace {
        Pace::Virtual => (Pace::Virtual, 1),
        p @ Pace::Realtime { threads, .. } => (p, threads),
    };
    let queue = Mutex::new(todo.into_iter());
    let done = AtomicUsize::new(0);
    let progress = Mutex::new(Progress::new(style));
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let next = queue.lock().map(|mut q| q.next()).unwrap_or(None);
                let Some((fault, seed, schedule, sets)) = next else {
                    break;
                };
                let (outcome, ended, faults) = stress_one(topology, &sets, plan, broken, threads);
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                if let Ok(mut p) = progress.lock() {
                    let fraction = n as f64 / total.max(1) as f64;
                    p.update(&format!("stress: {n}/{total} runs"), Some(fraction));
                }
                if let Ok(mut r) = results.lock() {
                    r.push(StressRun {
                        fault,
                        seed,
                        sets,
                        outcome,
                        ended,
                        faults,
                        broken,
                        schedule,
                        pace,
                    });
                }
            });
        }
    });
    if let Ok(mut p) = progress.lock() {
        p.finish();
    }
    let mut out = results.into_inner().unwrap_or_default();
    let place = |r: &StressRun| (settings.iter().position(|s| s.name == r.fault), r.seed);
    out.sort_by_key(|r| (place(r), r.schedule));
    out
}

/// Every run `plan` makes, in order: its fault setting's name, seed, schedule and the
/// overrides that make it (`user_sets` first).
fn planned_runs(
    user_sets: &[String],
    plan: &StressPlan<'_>,
) -> Vec<(String, u64, u64, Vec<String>)> {
    let mut todo = Vec::new();
    for s in plan.settings {
        for &seed in plan.seeds {
            for &schedule in plan.schedules {
                let mut sets = user_sets.to_vec();
                sets.extend(s.sets.iter().cloned());
                sets.push(crate::topology::seed_override(seed));
                match plan.pace {
                    Pace::Virtual => sets.push("emulation.mode=\"virtual\"".to_string()),
                    Pace::Realtime { speedup, .. } => {
                        sets.push("emulation.mode=\"realtime\"".to_string());
                        sets.push(format!("emulation.speedup={speedup:?}"));
                    }
                }
                // Always set, so that schedule 0 is FIFO whatever the topology or the
                // user's overrides say.
                sets.push(format!("emulation.interleaving={schedule}"));
                todo.push((s.name.clone(), seed, schedule, sets));
            }
        }
    }
    todo
}

/// A run's invariant violations and examples of them, or why it could not run.
type Violations = Result<(u64, Vec<String>), String>;

/// What one stress run of `topology` with `sets` found: its violations (or why it could
/// not run), the requests that ended of all, and the faults injected.
fn stress_one(
    topology: &Path,
    sets: &[String],
    plan: &StressPlan<'_>,
    broken: Broken,
    threads: usize,
) -> (Violations, (u64, u64), crate::fault::FaultCounts) {
    let overrides = Overrides {
        sets: sets.to_vec(),
        registry: plan.registry.clone(),
    };
    let options = RunOptions {
        broken,
        threads,
        ..RunOptions::default()
    };
    let ran = topology::load_file(topology, &overrides)
        .map_err(|r| r.to_string())
        .and_then(|t| run(t, &options).map_err(|e| e.to_string()));
    match ran {
        Ok(r) => {
            let s = &r.summary;
            let unfinished = s.requests.local.unfinished + s.requests.external.unfinished;
            (
                Ok((s.invariant_violations, s.violation_examples.clone())),
                (s.requests.total - unfinished, s.requests.total),
                s.faults.clone(),
            )
        }
        Err(e) => (Err(e), (0, 0), Default::default()),
    }
}

/// The report `igemu stress` prints.
pub fn report(topology: &Path, runs: &[StressRun]) -> String {
    let mut s = format!(
        "{:<10} {:>6} {:>8} {:>11} {:>8} {:>8} {:>8} {:>8} {:>10}\n",
        "faults", "seed", "schedule", "violations", "dropped", "dup", "reorder", "cut", "ended"
    );
    for r in runs {
        let v = match &r.outcome {
            Ok((n, _)) => n.to_string(),
            Err(_) => "error".to_string(),
        };
        let f = &r.faults;
        s += &format!(
            "{:<10} {:>6} {:>8} {:>11} {:>8} {:>8} {:>8} {:>8} {:>5}/{:<5}\n",
            r.fault,
            r.seed,
            schedule_name(r.schedule),
            v,
            f.dropped,
            f.duplicated,
            f.reordered,
            f.partitioned + f.to_crashed,
            r.ended.0,
            r.ended.1
        );
    }
    let bad: Vec<&StressRun> = runs
        .iter()
        .filter(|r| !matches!(r.outcome, Ok((0, _))))
        .collect();
    s += &format!(
        "\n{} runs, {} with violations or errors\n",
        runs.len(),
        bad.len()
    );
    for r in bad {
        match &r.outcome {
            Ok((n, examples)) => {
                s += &format!(
                    "\n{n} violation(s) with faults `{}`, seed {}, schedule {}:\n",
                    r.fault,
                    r.seed,
                    schedule_name(r.schedule)
                );
                for e in examples.iter().take(3) {
                    s += &format!("  - {e}\n");
                }
            }
            Err(e) => {
                s += &format!(
                    "\nerror with faults `{}`, seed {}, schedule {}: {}\n",
                    r.fault,
                    r.seed,
                    schedule_name(r.schedule),
                    e.lines().next().unwrap_or_default()
                )
            }
        }
        s += &format!("  reproduce: {}\n", r.command(topology));
        if let Pace::Realtime { .. } = r.pace {
            s += "  (realtime on threads: the order of deliveries was the machine's; a re-run may differ)\n";
        }
    }
    s
}

/// How a schedule reads in reports: `fifo`, or its number.
fn schedule_name(schedule: u64) -> String {
    if schedule == 0 {
        "fifo".into()
    } else {
        schedule.to_string()
    }
}

/// The columns of `stress.csv`, one row per run.
pub const CSV_COLUMNS: [&str; 12] = [
    "faults",
    "seed",
    "schedule",
    "violations",
    "error",
    "dropped",
    "duplicated",
    "reordered",
    "cut",
    "ended",
    "requests",
    "reproduce",
];

/// The runs as `stress.csv` (columns [`CSV_COLUMNS`]): `violations` is empty and `error`
/// holds the first line of the error for a run that did not finish; `cut` counts messages
/// lost to partitions and to crashed IGGs.
pub fn to_csv(topology: &Path, runs: &[StressRun]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    for r in runs {
        let (violations, error) = match &r.outcome {
            Ok((n, _)) => (n.to_string(), String::new()),
            Err(e) => (String::new(), e.lines().next().unwrap_or_default().into()),
        };
        let f = &r.faults;
        w.write_record([
            r.fault.clone(),
            r.seed.to_string(),
            r.schedule.to_string(),
            violations,
            error,
            f.dropped.to_string(),
            f.duplicated.to_string(),
            f.reordered.to_string(),
            (f.partitioned + f.to_crashed).to_string(),
            r.ended.0.to_string(),
            r.ended.1.to_string(),
            r.command(topology),
        ])?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// The runs as `stress.json`: the topology, what the stress test ran (`inputs`), the count of
/// runs and of bad ones, and per run its fault preset, seed, overrides, violations (count and
/// first examples) or error, the fault counts, requests ended of all, and the command
/// reproducing it.
pub fn to_json(topology: &Path, inputs: &StressInputs, runs: &[StressRun]) -> serde_json::Value {
    let bad = runs
        .iter()
        .filter(|r| !matches!(r.outcome, Ok((0, _))))
        .count();
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let (violations, examples, error) = match &r.outcome {
                Ok((n, ex)) => (Some(*n), ex.clone(), None),
                Err(e) => (None, Vec::new(), Some(e.clone())),
            };
            serde_json::json!({
                "faults": r.fault,
                "seed": r.seed,
                "schedule": r.schedule,
                "sets": r.sets,
                "violations": violations,
                "violation_examples": examples,
                "error": error,
                "fault_counts": r.faults,
                "ended": r.ended.0,
                "requests": r.ended.1,
                "reproduce": r.command(topology),
            })
        })
        .collect();
    serde_json::json!({
        "topology": topology.display().to_string(),
        "inputs": inputs,
        "runs": runs.len(),
        "bad_runs": bad,
        "results": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every refusal advises only ranges that are accepted, near 0, near `u64::MAX` and
    /// around [`MAX_SEEDS`]; an accepted range is the seeds asked for.
    #[test]
    fn seed_range_advice_is_always_accepted() {
        let m = MAX_SEEDS;
        let counts = [
            0,
            1,
            2,
            m - 1,
            m,
            m + 1,
            2 * m,
            2 * m + 1,
            3 * m,
            u64::MAX - 1,
            u64::MAX,
        ];
        let firsts = [
            0,
            1,
            2,
            m,
            u64::MAX - 3 * m,
            u64::MAX - 2 * m,
            u64::MAX - m - 1,
            u64::MAX - m,
            u64::MAX - m + 1,
            18_446_744_073_709_551_000,
            u64::MAX - 1,
            u64::MAX,
        ];
        for first in firsts {
            for count in counts {
                match seed_range(first, count) {
                    Ok(r) => {
                        assert_eq!(*r.start(), first);
                        assert_eq!(r.end() - r.start(), count - 1);
                        assert!(count <= m);
                    }
                    Err(e) => {
                        assert!(!e.advice.is_empty(), "{first} {count}: {e}");
                        for &(s, n) in &e.advice {
                            assert!(
                                seed_range(s, n).is_ok(),
                                "{first} {count}: advised {s} {n}: {e}"
                            );
                            assert!(
                                e.message.contains(&format!("--first-seed {s} --seeds {n}")),
                                "{e}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_range_past_the_largest_seed_is_cut_there() {
        let e = seed_range(18_446_744_073_709_551_000, 100_001).expect_err("past u64::MAX");
        assert_eq!(e.advice, vec![(18_446_744_073_709_551_000, 616)]);
        assert!(e.message.contains("there are 616 seeds"), "{e}");
        let e = seed_range(u64::MAX, 2).expect_err("past u64::MAX");
        assert_eq!(e.advice, vec![(u64::MAX, 1), (u64::MAX - 1, 2)]);
        let e = seed_range(1, 250_000).expect_err("too many");
        assert_eq!(e.advice, vec![(1, 100_000), (100_001, 100_000)]);
        assert!(e.message.ends_with("and so on"), "{e}");
    }
}
