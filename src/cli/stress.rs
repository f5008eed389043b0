//! `igemu stress`: many seeds, fault settings and schedules of one topology, checked for
//! invariant violations.

use super::*;

/// The most schedules `stress --interleavings` explores per seed.
pub(super) const MAX_STRESS_INTERLEAVINGS: u64 = 10_000;

/// The most runs one stress test makes (fault settings × seeds × schedules).
pub(super) const MAX_STRESS_RUNS: u64 = 1_000_000;

/// A stress test's results in `dir`, `stress.json` first: removed in this order, a folder
/// without it holds no whole stress test.
pub(super) fn stress_files(dir: &Path) -> Vec<&'static str> {
    ["stress.json", "stress.csv"]
        .into_iter()
        .filter(|f| dir.join(f).exists())
        .collect()
}

/// Refuses a folder holding a stress test's results for a run's or a sweep's outputs unless
/// `overwrite` (a folder holds one run, sweep or stress test); says which files to remove
/// once the new outputs are whole.
pub(super) fn stress_results_in(dir: &Path, overwrite: bool) -> Result<Vec<&'static str>, Error> {
    let found = stress_files(dir);
    if found.is_empty() || overwrite {
        return Ok(found);
    }
    Err(Error::Usage(format!(
        "{} holds a stress test's results ({}), and a folder holds one run, sweep or stress \
         test; pass --overwrite to replace them, or choose another --out",
        dir.display(),
        found.join(", ")
    )))
}

/// What a stress test replaces in its `--out` folder once its results are whole.
#[derive(Default)]
pub(super) struct Replaced {
    /// A run's or a sweep's files (`--overwrite`), records first.
    pub(super) others: Vec<String>,
    /// Whether `stress.json` is another stress test's (`--overwrite`), removed before the
    /// new results are written.
    pub(super) their_record: bool,
}

/// Makes `dir` ready for the results of the stress test `inputs` describes: the results of
/// the same stress test there are replaced; another's — a `stress.json` of other inputs, or
/// results with none saying what made them — and a run's or a sweep's outputs are refused
/// unless `overwrite`, as `run` and `sweep` refuse each other's. Nothing is removed yet.
pub(super) fn prepare_stress_out(
    dir: &Path,
    inputs: &crate::stress::StressInputs,
    overwrite: bool,
) -> Result<Replaced, Error> {
    create_dir(dir)?;
    owned::refuse_foreign(dir)?;
    let others: Vec<String> = (sweep_files(dir).into_iter())
        .chain(run_files(dir).into_iter().map(str::to_string))
        .collect();
    let found = stress_files(dir);
    let record = dir.join("stress.json");
    // Why the results there are another stress test's, if they are.
    let theirs = if found.is_empty() {
        None
    } else if !found.contains(&"stress.json") {
        Some("stress.csv without the stress.json saying what made it".to_string())
    } else {
        // Capped: a stress.json that is no stress test's (a link to /dev/zero) is another's.
        let old = crate::input::read_capped(&record, crate::input::MAX_JSON_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                serde_json::from_value::<crate::stress::StressInputs>(v["inputs"].clone()).ok()
            });
        match old {
            Some(old) if old.same_test(inputs) => None,
            Some(_) => Some("stress.json: made from other inputs".to_string()),
            None => Some("stress.json without the inputs that made it".to_string()),
        }
    };
    if !overwrite {
        if !others.is_empty() {
            return Err(Error::Usage(format!(
                "{} holds a run's or a sweep's outputs ({}), and a folder holds one run, sweep \
                 or stress test; pass --overwrite to replace them, or choose another --out",
                dir.display(),
                others.join(", ")
            )));
        }
        if let Some(why) = theirs {
            return Err(Error::Usage(format!(
                "{} holds another stress test's results ({why}); pass --overwrite to replace \
                 them, or choose another --out",
                dir.display()
            )));
        }
    }
    Ok(Replaced {
        others,
        their_record: theirs.is_some() && found.contains(&"stress.json"),
    })
}

/// What `stress` runs: (first seed, seeds), fault settings, interleavings, `--jobs`, and the
/// `--set` overrides.
pub(super) type StressRuns<'a> = ((u64, u64), &'a [String], u64, Option<usize>, &'a [String]);

pub(super) fn stress(
    path: &Path,
    ((first_seed, seeds), faults, interleavings, jobs, sets): StressRuns<'_>,
    (mode, speedup, threads): (Mode, Option<f64>, u16),
    out: Option<(&Path, bool)>,
    quiet: bool,
    broken: crate::Broken,
    registry: &Registry,
) -> Result<(), Error> {
    let threads = usize::from(threads);
    // Checked first, so that a bad --jobs wastes no loading.
    let jobs = match jobs {
        Some(j) => jobs_or_cores(Some(j))?,
        // Realtime runs each take `threads` threads (paced by the wall, so not all busy).
        None => (jobs_or_cores(None)? / threads).max(1),
    };
    // Every run's seed is set last, from --first-seed and --seeds: a seed among the overrides
    // would be ignored while the report and its reproduce lines claimed it.
    if let Some(set) = sets.iter().find(|s| topology::override_sets_seed(s)) {
        return Err(Error::Usage(format!(
            "--set {set}: stress sets each run's seed itself (--first-seed S --seeds N runs \
             seeds S to S+N-1), so this seed would be ignored; drop it and give --first-seed \
             (e.g. --first-seed 7 --seeds 1 runs seed 7 alone)"
        )));
    }
    let pace = stress_pace(mode, speedup, threads)?;
    let topo = load_stress_topology(path, sets, (pace, threads), interleavings, registry)?;
    let chosen = chosen_faults(&crate::stress::presets(&topo), faults)?;
    check_stress_sets(sets, &chosen)?;
    let count = seeds;
    let seeds =
        crate::stress::seed_range(first_seed, seeds).map_err(|e| Error::Usage(e.message))?;
    let schedules = stress_schedules(interleavings)?;
    let seeds: Vec<u64> = seeds.collect();
    let plan = crate::stress::StressPlan {
        pace,
        settings: &chosen,
        seeds: &seeds,
        schedules: &schedules,
        registry,
    };
    if plan.runs() as u64 > MAX_STRESS_RUNS {
        return Err(Error::Usage(format!(
            "{} runs ({} fault settings x {} seeds x {} schedules) is more than {MAX_STRESS_RUNS}; ask for fewer",
            plan.runs(),
            chosen.len(),
            seeds.len(),
            schedules.len()
        )));
    }
    let inputs = stress_inputs(
        (path, sets),
        (first_seed, count),
        &chosen,
        interleavings,
        (pace, threads),
        broken,
    );
    // Before the runs, so that a bad directory wastes none.
    let replaced = match out {
        Some((dir, overwrite)) => prepare_stress_out(dir, &inputs, overwrite)?,
        None => Replaced::default(),
    };
    interrupt::keeps(|| STRESS_INTERRUPTED.into());
    let style = Style::detect(quiet);
    let runs = crate::stress::stress(path, sets, &plan, jobs, broken, style);
    print!("{}", crate::stress::report(path, &runs));
    if let Some((dir, _)) = out {
        write_stress_out(dir, path, &inputs, &runs, &replaced)?;
    }
    if runs.iter().all(|r| matches!(r.outcome, Ok((0, _)))) {
        Ok(())
    } else {
        Err(Error::Failed(
            "invariant violations or failed runs (report above)".into(),
        ))
    }
}

/// What an interrupted stress test keeps.
pub(super) const STRESS_INTERRUPTED: &str =
    "a stress test prints its table and writes its results once \
    every run has ended, so none was kept; ask for fewer runs, or split them with --first-seed";

/// What stress.json records as the inputs of a stress test.
pub(super) fn stress_inputs(
    (path, sets): (&Path, &[String]),
    (first_seed, count): (u64, u64),
    chosen: &[crate::stress::FaultSetting],
    interleavings: u64,
    (pace, threads): (crate::stress::Pace, usize),
    broken: crate::Broken,
) -> crate::stress::StressInputs {
    let (mode_name, speedup) = match pace {
        crate::stress::Pace::Virtual => ("virtual", None),
        crate::stress::Pace::Realtime { speedup, .. } => ("realtime", Some(speedup)),
    };
    crate::stress::StressInputs {
        provenance: crate::Provenance::of(Some(path), sets),
        first_seed,
        seeds: count,
        faults: chosen.iter().map(|p| p.name.clone()).collect(),
        interleavings,
        mode: mode_name.into(),
        speedup,
        threads,
        broken: broken.name().into(),
    }
}

/// The topology with the runs' own mode and speed-up, checked once here rather than failing
/// every run; with `--threads`, checked against what needs one thread.
pub(super) fn load_stress_topology(
    path: &Path,
    sets: &[String],
    (pace, threads): (crate::stress::Pace, usize),
    interleavings: u64,
    registry: &Registry,
) -> Result<Topology, Error> {
    let mut checked = sets.to_vec();
    if let crate::stress::Pace::Realtime { speedup, .. } = pace {
        checked.push("emulation.mode=\"realtime\"".into());
        checked.push(format!("emulation.speedup={speedup:?}"));
    }
    let topo = topology::load_file(path, &overrides(checked, registry))?;
    let virtual_mode = matches!(pace, crate::stress::Pace::Virtual);
    let mode_of_runs = if virtual_mode {
        crate::time::ClockMode::Virtual
    } else {
        topo.emulation.mode
    };
    crate::federation::threads::check(
        threads,
        mode_of_runs,
        &[(
            interleavings > 0 || topo.emulation.interleaving > 0,
            "--interleavings (or emulation.interleaving)",
            why::INTERLEAVING,
        )],
    )?;
    Ok(topo)
}

/// The interleaving schedules `--interleavings N` asks for: schedule 0 (the natural order)
/// without it, 1..=N with it.
pub(super) fn stress_schedules(interleavings: u64) -> Result<Vec<u64>, Error> {
    if interleavings > MAX_STRESS_INTERLEAVINGS {
        return Err(Error::Usage(format!(
            "--interleavings {interleavings} is more than {MAX_STRESS_INTERLEAVINGS}; run several stress tests with more seeds instead"
        )));
    }
    Ok(if interleavings == 0 {
        vec![0]
    } else {
        (1..=interleavings).collect()
    })
}

/// How stress runs are paced: `--mode` and `--speedup` must agree.
pub(super) fn stress_pace(
    mode: Mode,
    speedup: Option<f64>,
    threads: usize,
) -> Result<crate::stress::Pace, Error> {
    match (mode, speedup) {
        (Mode::Virtual, Some(_)) => {
            Err(Error::Usage(
                "--speedup applies to realtime mode only, and stress runs in virtual mode by default; add --mode realtime, or drop --speedup".into(),
            ))
        }
        (Mode::Virtual, None) => Ok(crate::stress::Pace::Virtual),
        (Mode::Realtime, Some(speedup)) => Ok(crate::stress::Pace::Realtime { speedup, threads }),
        (Mode::Realtime, None) => {
            Err(Error::Usage(
                "stress --mode realtime needs --speedup S (emulated seconds per wall second; each run takes its emulated length / S of wall time)".into(),
            ))
        }
    }
}

/// The fault settings `--faults` names, each once, in the order given.
pub(super) fn chosen_faults(
    presets: &[crate::stress::FaultSetting],
    faults: &[String],
) -> Result<Vec<crate::stress::FaultSetting>, Error> {
    let mut chosen = Vec::new();
    for f in faults {
        match presets.iter().find(|p| p.name == *f) {
            // A setting named twice would run the same runs twice.
            Some(p) if chosen.contains(p) => {}
            Some(p) => chosen.push(p.clone()),
            None => {
                let names: Vec<&str> = presets.iter().map(|p| p.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "unknown fault setting `{f}`; expected one of: {}",
                    names.join(", ")
                )));
            }
        }
    }
    Ok(chosen)
}

/// Refuses a `--set` of a key stress sets itself in every run after the user's overrides:
/// it would be ignored while the reproduce lines listed it.
pub(super) fn check_stress_sets(
    sets: &[String],
    chosen: &[crate::stress::FaultSetting],
) -> Result<(), Error> {
    let mut own: Vec<(String, String)> = [
        ("emulation.mode", "--mode"),
        ("emulation.speedup", "--speedup"),
        ("emulation.interleaving", "--interleavings"),
    ]
    .map(|(k, by)| (k.to_string(), by.to_string()))
    .to_vec();
    for p in chosen {
        for set in &p.sets {
            if let Some((key, _)) = set.split_once('=') {
                own.push((key.trim().to_string(), format!("--faults {}", p.name)));
            }
        }
    }
    for set in sets {
        if let Some((key, by)) = own.iter().find(|(k, _)| topology::override_sets(set, k)) {
            return Err(Error::Usage(format!(
                "--set {set}: stress sets {key} itself in the runs of {by}, so this \
                 override would be ignored there; drop it, or use {by} to choose"
            )));
        }
    }
    Ok(())
}

/// Writes stress.csv and stress.json into `dir`, then removes what `--overwrite` replaces.
pub(super) fn write_stress_out(
    dir: &Path,
    path: &Path,
    inputs: &crate::stress::StressInputs,
    runs: &[crate::stress::StressRun],
    replaced: &Replaced,
) -> Result<(), Error> {
    if replaced.their_record {
        // Another stress test's record goes first: a stress.csv never stands beside a
        // stress.json saying other inputs made it.
        remove_outputs(dir, &["stress.json"])?;
    }
    let csv = crate::stress::to_csv(path, runs).map_err(|e| Error::Failed(e.to_string()))?;
    write_atomically(&dir.join("stress.csv"), &csv)?;
    let json = crate::stress::to_json(path, inputs, runs).to_string() + "\n";
    write_atomically(&dir.join("stress.json"), json.as_bytes())?;
    if !replaced.others.is_empty() {
        // The results are whole: a run's or a sweep's files, which --overwrite replaces,
        // go (records first).
        remove_outputs(dir, &replaced.others)?;
    }
    say!("results in {}/stress.csv and stress.json", dir.display());
    Ok(())
}
