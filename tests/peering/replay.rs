//! Records and replays of realtime runs, and runs with Grids on several threads.

use super::*;

/// A scratch directory under target/tmp, empty.
pub(super) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(format!("target/tmp/replay-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

pub(super) fn summary_of(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

#[test]
fn a_violation_caught_in_a_realtime_run_is_reproduced_by_replaying_its_record() {
    // Realtime, with same-time deliveries in an explored order (the concurrency a realtime
    // run explores), and hosts that assume FIFO order: caught while it runs.
    let dir = scratch("realtime");
    let (rec, live, again) = (dir.join("run.rec"), dir.join("live"), dir.join("again"));
    let s = arg;
    let ran = igemu(&[
        "run",
        SMALL,
        "--mode",
        "realtime",
        "--speedup",
        "2000000",
        "--set",
        "emulation.interleaving=1",
        "--broken-protocol=eager-capacity",
        "--record",
        &s(&rec),
        "--out",
        &s(&live),
        "--quiet",
    ]);
    assert_eq!(ran.status.code(), Some(1), "{ran:?}");
    let first = summary_of(&live);
    assert!(first["invariant_violations"].as_u64() > Some(0));
    assert_eq!(first["mode"], "realtime");
    // The replay runs in virtual time, in the recorded order, with a trace to study.
    let replayed = igemu(&[
        "replay",
        &s(&rec),
        "--out",
        &s(&again),
        "--trace",
        "--quiet",
    ]);
    assert_eq!(replayed.status.code(), Some(1), "{replayed:?}");
    let said = String::from_utf8_lossy(&replayed.stdout);
    assert!(
        said.contains("deliveries, each in the recorded order"),
        "{said}"
    );
    let second = summary_of(&again);
    assert_eq!(second["mode"], "virtual");
    for key in [
        "invariant_violations",
        "violation_examples",
        "messages",
        "requests",
    ] {
        assert_eq!(first[key], second[key], "{key}");
    }
    let csv = |d: &std::path::Path| std::fs::read(d.join("requests.csv")).expect("requests.csv");
    assert!(csv(&live) == csv(&again), "the replay's requests differ");
    assert!(again.join("trace.jsonl").exists());
    the_replay_follows_the_record_not_the_schedule_it_names(&dir, &rec, &live);
    // Without the record, the same run in FIFO order keeps every invariant: the violation
    // is the order's.
    let fifo = igemu(&[
        "run",
        SMALL,
        "--broken-protocol=eager-capacity",
        "--out",
        &s(&dir.join("fifo")),
        "--quiet",
    ]);
    assert_eq!(fifo.status.code(), Some(0), "{fifo:?}");
}

/// The order comes from the record (`rec`, of the run whose outputs are in `live`), not from
/// the schedule's number: with the header edited to name another schedule, the replay still
/// gives the recorded run — and says the record was edited (the end line's hash covers the
/// header), exit 2.
fn the_replay_follows_the_record_not_the_schedule_it_names(
    dir: &std::path::Path,
    rec: &std::path::Path,
    live: &std::path::Path,
) {
    let s = arg;
    let csv = |d: &std::path::Path| std::fs::read(d.join("requests.csv")).expect("requests.csv");
    let text = std::fs::read_to_string(rec).expect("record");
    let (header, body) = text.split_once('\n').expect("a header line");
    assert!(header.contains("emulation.interleaving=1"), "{header}");
    let other = dir.join("other-schedule.rec");
    let edited = header.replace("emulation.interleaving=1", "emulation.interleaving=7");
    std::fs::write(&other, format!("{edited}\n{body}")).expect("write");
    let by_record = dir.join("by-record");
    let followed = igemu(&["replay", &s(&other), "--out", &s(&by_record), "--quiet"]);
    assert_eq!(followed.status.code(), Some(2), "{followed:?}");
    assert!(
        String::from_utf8_lossy(&followed.stderr).contains("edited or damaged"),
        "{followed:?}"
    );
    assert!(
        csv(live) == csv(&by_record),
        "the replay followed the schedule, not the record"
    );
}

/// `p` as a string for a command line.
fn arg(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn a_record_the_replay_does_not_follow_is_refused_at_its_first_difference() {
    let dir = scratch("differ");
    let s = arg;
    // A copy of the topology, to change after recording.
    let topo = dir.join("small.toml");
    std::fs::copy(SMALL, &topo).expect("copy");
    let rec = dir.join("fifo.rec");
    let ran = igemu(&[
        "run",
        &s(&topo),
        "--record",
        &s(&rec),
        "--out",
        &s(&dir.join("a")),
        "--quiet",
    ]);
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    // A FIFO run's record replays as it is, every delivery checked.
    let ok = igemu(&["replay", &s(&rec), "--out", &s(&dir.join("b")), "--quiet"]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    let csv = |d: &str| std::fs::read(dir.join(d).join("requests.csv")).expect("csv");
    assert!(csv("a") == csv("b"));
    // The replay's summary says what it followed; the run's says nothing of a replay.
    let replay = &summary_of(&dir.join("b"))["replay"];
    assert!(
        replay["followed"].as_u64().is_some_and(|n| n > 0),
        "{replay}"
    );
    assert!(replay["diverged"].is_null());
    assert!(summary_of(&dir.join("a"))["replay"].is_null());
    let text = std::fs::read_to_string(&rec).expect("record");
    let lines: Vec<&str> = text.lines().collect();
    changed_deliveries_are_refused_naming_the_first_difference(&dir, &lines);
    edited_headers_are_refused(&dir, &lines);
    // A record given as a pipe: read twice, so refused as what it is, before anything runs.
    #[cfg(unix)]
    {
        let fifo = dir.join("pipe.rec");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let out = igemu(&["replay", &s(&fifo), "--out", &s(&dir.join("p")), "--quiet"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("save the record to a file first"), "{err}");
        assert!(!dir.join("p").exists());
    }
    a_junk_header_or_a_changed_or_missing_topology_is_refused(&dir, &topo, &rec);
}

/// Of the record `lines`: two deliveries swapped (of different lanes), a record cut short,
/// one with a line after its end line — each refused at its first difference, its outputs
/// saying they are not the record's run; actors are named in the difference.
fn changed_deliveries_are_refused_naming_the_first_difference(
    dir: &std::path::Path,
    lines: &[&str],
) {
    let s = arg;
    let at = (2..lines.len() - 1)
        .find(|&i| lines[i] != lines[i + 1])
        .expect("two different deliveries");
    let mut swapped = lines.to_vec();
    swapped.swap(at, at + 1);
    let cut = &lines[..lines.len() / 2];
    let mut longer = lines.to_vec();
    longer.push(lines[lines.len() - 1]);
    for (name, body, says) in [
        ("swapped", swapped, format!("delivery {at}: the record has")),
        ("cut", cut.to_vec(), "it was cut short".to_string()),
        ("longer", longer, "after the record's end line".to_string()),
    ] {
        let file = dir.join(format!("{name}.rec"));
        std::fs::write(&file, body.join("\n") + "\n").expect("write");
        let out = igemu(&["replay", &s(&file), "--out", &s(&dir.join(name)), "--quiet"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&says), "{name}: {err}");
        // Its outputs say they are not the record's run.
        let replay = &summary_of(&dir.join(name))["replay"];
        let diverged = replay["diverged"].as_str().unwrap_or_default();
        assert!(diverged.contains(&says), "{name}: {replay}");
    }
    // Actors are named in the difference.
    let out = igemu(&[
        "replay",
        &s(&dir.join("swapped.rec")),
        "--out",
        &s(&dir.join("n")),
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let named = [
        "igg:", "lrms:", "host:", "vm:", "users:", "dve:", "director",
    ]
    .iter()
    .any(|prefix| err.contains(&format!(" ({prefix}")));
    assert!(named, "{err}");
}

/// Replays the record `lines` with its header replaced by `header`, saved as `NAME.rec` in
/// `dir`, into the folder `name`: the exit code, standard error and standard output.
fn replay_with_header(
    dir: &std::path::Path,
    lines: &[&str],
    name: &str,
    header: &str,
) -> (Option<i32>, String, String) {
    let mut edited = lines.to_vec();
    edited[0] = header;
    let file = dir.join(format!("{name}.rec"));
    std::fs::write(&file, edited.join("\n") + "\n").expect("write");
    let out = igemu(&[
        "replay",
        &arg(&file),
        "--out",
        &arg(&dir.join(name)),
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), err, said)
}

/// Headers edited (of the record `lines`) are refused: to another seed, to another override,
/// to hold an escape sequence.
fn edited_headers_are_refused(dir: &std::path::Path, lines: &[&str]) {
    // A header edited to another seed: not in the end line's hash, yet not the run it names
    // (the replay said "seed 4" and ran seed 3, exit 0).
    let (from, to) = ("\"seed\":3,", "\"seed\":4,");
    assert!(lines[0].contains(from), "{}", lines[0]);
    let (code, err, _) = replay_with_header(dir, lines, "seed", &lines[0].replace(from, to));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("line 1 says seed 4, but the run it names"),
        "{err}"
    );
    assert!(err.contains("has seed 3"), "{err}");
    // A header edited to name another override (one that changes nothing this run does): the
    // replay ran it, exit 0, "each in the recorded order"; the end line's hash covers the
    // header now.
    let from = "\"overrides\":[";
    assert!(lines[0].contains(from), "{}", lines[0]);
    let header = if lines[0].contains("\"overrides\":[]") {
        lines[0].replace("\"overrides\":[]", "\"overrides\":[\"lrms.cp_alpha=0.5\"]")
    } else {
        lines[0].replace(from, "\"overrides\":[\"lrms.cp_alpha=0.5\",")
    };
    let (code, err, _) = replay_with_header(dir, lines, "sets", &header);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("edited or damaged"), "{err}");
    // Its outputs say they are not the record's run.
    let replay = &summary_of(&dir.join("sets"))["replay"];
    let diverged = replay["diverged"].as_str().unwrap_or_default();
    assert!(diverged.contains("edited or damaged"), "{replay}");
    // A header whose strings hold an escape sequence: refused before any is shown (the
    // replay printed its mode before the hash was checked).
    let header = lines[0].replacen("\"mode\":\"", "\"mode\":\"\\u001b]0;pwned\\u0007", 1);
    assert_ne!(header, lines[0]);
    let (code, err, said) = replay_with_header(dir, lines, "esc", &header);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`.mode` holds a control"), "{err}");
    assert!(!err.contains('\u{1b}') && !said.contains('\u{1b}'));
}

/// A header that is not one, and the record `rec`'s topology `topo` changed since, or gone
/// (it cannot be read from where the replay runs: said to be that, not changed).
fn a_junk_header_or_a_changed_or_missing_topology_is_refused(
    dir: &std::path::Path,
    topo: &std::path::Path,
    rec: &std::path::Path,
) {
    let s = arg;
    std::fs::write(dir.join("junk.rec"), "not a record\n").expect("write");
    let junk = igemu(&["replay", &s(&dir.join("junk.rec")), "--quiet"]);
    assert_eq!(junk.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&junk.stderr).contains("not an igemu record header"));
    std::fs::write(
        topo,
        std::fs::read_to_string(SMALL).unwrap() + "\n# changed\n",
    )
    .unwrap();
    let changed = igemu(&["replay", &s(rec), "--quiet"]);
    assert_eq!(changed.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&changed.stderr).contains("has changed since the record was made")
    );
    std::fs::remove_file(topo).expect("remove");
    let gone = igemu(&["replay", &s(rec), "--quiet"]);
    assert_eq!(gone.status.code(), Some(2));
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(err.contains("cannot be read from here"), "{err}");
}

#[test]
fn grids_on_threads_keep_every_invariant_and_the_broken_protocol_is_still_caught() {
    // Each Grid on its own thread: handlers run in parallel and peering messages cross
    // threads, in whatever order (and with whatever lateness) the machine makes; the checker
    // judges the merged run. The first 20 000 s (the busy Grid's first negotiations, the
    // partition and the crashes) at x20 000: about a second of wall time per run.
    let window = ["emulation.end=\"20000s\""];
    let topo = small(&window);
    let settings = presets_named(&topo, &["none", "lossy", "late", "partition", "crash"]);
    let plan = StressPlan {
        registry: &igemu::policy::Registry::builtin(),
        pace: Pace::Realtime {
            speedup: 20_000.0,
            threads: 3,
        },
        settings: &settings,
        seeds: &[1],
        schedules: &[0],
    };
    let sets: Vec<String> = window.iter().map(|s| s.to_string()).collect();
    let sound = stress(&path(SMALL), &sets, &plan, 1, Broken::None, Style::Quiet);
    assert_eq!(sound.len(), 5);
    for r in &sound {
        let command = r.command(&path(SMALL));
        // Invariants hold however late a thread runs: that is the protocol's claim.
        assert_eq!(r.outcome.as_ref().map(|o| o.0), Ok(0), "{command}");
        assert!(r.ended.1 > 0, "{command}");
        assert!(command.contains("--mode realtime --threads 3"), "{command}");
    }
    let slow = presets_named(&topo, &["slow"]);
    let plan = StressPlan {
        settings: &slow,
        seeds: &[1, 2, 3, 4],
        ..plan
    };
    let broken = stress(&path(SMALL), &sets, &plan, 1, Broken::LateAck, Style::Quiet);
    let caught = broken
        .iter()
        .filter(|r| r.outcome.as_ref().is_ok_and(|o| o.0 > 0))
        .count();
    assert!(caught > 0, "the broken protocol went uncaught on threads");
}

#[test]
fn a_run_on_threads_runs_every_grid_and_merges_what_each_thread_saw() {
    let speedup = ["emulation.mode=\"realtime\"", "emulation.speedup=1000000.0"];
    let threaded = run(
        small(&speedup),
        &RunOptions {
            threads: 3,
            ..RunOptions::default()
        },
    )
    .expect("runs on threads");
    let alone = run(small(&[]), &RunOptions::default()).expect("runs");
    let (t, a) = (&threaded.summary, &alone.summary);
    assert_eq!(t.threads, Some(3), "three shards on three threads");
    assert_eq!(t.requests.total, a.requests.total);
    assert_eq!(
        t.requests.local.unfinished + t.requests.external.unfinished,
        0
    );
    // Every Grid's peering shows up once merged (each Grid's negotiations are counted on
    // its own thread), and money received is money paid across threads.
    assert_eq!(t.grids.len(), a.grids.len());
    let offers: u64 = t.grids.values().map(|g| g.negotiations.offers).sum();
    assert!(offers > 0, "no negotiation seen");
    // (How much is redirected depends on how late each thread ran: offers from a Grid
    // that falls far behind time out before their answers come.)
    let paid: f64 = t.grids.values().map(|g| g.paid).sum();
    let received: f64 = t.grids.values().map(|g| g.received).sum();
    assert!(
        (paid - received).abs() <= 1e-6 * paid.max(1.0),
        "{paid} vs {received}"
    );
    assert_eq!(t.invariant_violations, 0, "{:?}", t.violation_examples);
    assert!(t.timer_lateness_ms.as_ref().is_some_and(|l| l.samples > 0));
    // Each request's record is whole: one terminal state, and a start for those that ran.
    for (i, r) in threaded.records.iter().enumerate() {
        assert!(r.state.is_some(), "request {i}");
        if r.state == Some(igemu::model::RequestState::Completed) {
            assert!(r.start.is_some() && r.cluster.is_some(), "request {i}");
        }
    }
}

#[test]
fn a_record_is_whole_or_refused_before_the_run_never_lost_or_mixed() {
    let dir = scratch("record-paths");
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let refused = |args: &[&str], says: &str| {
        let out = igemu(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let out_dir = dir.join("out");
    let out_s = s(&out_dir);
    // A directory, one of the run's own outputs, a file that is not a record: refused before
    // the run, nothing written, the file untouched.
    refused(
        &["run", SMALL, "--record", &s(&dir), "--out", &out_s],
        "directory",
    );
    let own = s(&out_dir.join("summary.json"));
    refused(
        &["run", SMALL, "--record", &own, "--out", &out_s],
        "writes its own",
    );
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "mine\n").expect("write");
    refused(
        &["run", SMALL, "--record", &s(&notes), "--out", &out_s],
        "not an igemu record",
    );
    assert_eq!(std::fs::read_to_string(&notes).expect("notes"), "mine\n");
    assert!(!out_dir.exists());
    // Two runs recording to one file at once: each writes its own temporary file, the last
    // to finish replaces the record whole, and it replays.
    let rec = dir.join("same.rec");
    let spawn = |seed: &str, out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
            .args([
                "run",
                SMALL,
                "--quiet",
                "--seed",
                seed,
                "--record",
                &s(&rec),
                "--out",
                out,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .spawn()
            .expect("igemu starts")
    };
    let (a, b) = (s(&dir.join("a")), s(&dir.join("b")));
    let mut runs = [spawn("1", &a), spawn("2", &b)];
    for r in &mut runs {
        assert!(r.wait().expect("waits").success());
    }
    let replayed = igemu(&["replay", &s(&rec), "--out", &s(&dir.join("r")), "--quiet"]);
    assert_eq!(replayed.status.code(), Some(0), "{replayed:?}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // And an old record is replaced by a new one.
    let again = igemu(&[
        "run",
        SMALL,
        "--quiet",
        "--record",
        &s(&rec),
        "--out",
        &a,
        "--overwrite",
    ]);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
}
