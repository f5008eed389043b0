//! `igemu trace`: selections, caps, the Chrome export, filters and what reaches a terminal.

use super::*;

#[test]
fn tracing_an_unknown_request_is_an_error_naming_it_with_a_suggestion() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp_str(&tmp, "run");
    let out = igemu(&["run", "--trace", "--out", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = format!("{dir}/trace.jsonl");
    let text = std::fs::read_to_string(&trace).expect("trace written");
    assert!(
        text.contains("\"request\":\"ext-1\""),
        "quickstart names ext-1"
    );

    let out = igemu(&["trace", &trace, "--request", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no message names request `nosuch`; its requests include"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing printed for an unknown request"
    );

    let mmd = tmp_str(&tmp, "x.mmd");
    let out = igemu(&["trace", &trace, "--request", "ext-1x", "--mermaid", &mmd]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `ext-1`?"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&mmd).exists(), "no empty diagram written");

    let out = igemu(&["trace", &trace, "--request", "ext-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.is_empty());
}

#[test]
fn trace_lines_are_capped_and_a_trace_out_of_order_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cap = igemu::trace::render::MAX_LINE;
    let message = format!(":1: longer than {cap} bytes; not a trace record");
    // Before: an abort (exit 134) after allocating gigabytes.
    if Path::new("/dev/zero").exists() {
        let chrome = tmp_str(&tmp, "c.json");
        for args in [
            &["--request", "x"][..],
            &["--negotiations"][..],
            &["--negotiation", "1"][..],
            &["--chrome", &chrome][..],
        ] {
            let o = igemu(&[&["trace", "/dev/zero"][..], args].concat());
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(&message), "{args:?}: {}", stderr(&o));
        }
    }
    // Backwards, one line without a newline: before, quadratic in its length (minutes).
    let long = tmp_str(&tmp, "long.jsonl");
    std::fs::write(&long, vec![b'a'; cap + 1]).expect("written");
    let (code, err) = igemu_within(&["trace", &long, "--why", "0"], 60).expect("ends");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("long.jsonl{message}")), "{err}");
    why_refuses_a_trace_out_of_order_or_a_cause_after_its_effect(&tmp);
    every_reader_refuses_two_traces_concatenated(&tmp);
}

/// A trace record of message `seq` caused by message `cause`.
fn trace_record(seq: u64, cause: u64) -> String {
    format!(
        r#"{{"seq":{seq},"t_us":0,"t":"0","from":"a","to":"b","kind":"Arrive","cause":{cause}}}"#
    )
}

/// `--why` refuses records out of seq order, and a cause after its effect, at their line.
fn why_refuses_a_trace_out_of_order_or_a_cause_after_its_effect(tmp: &tempfile::TempDir) {
    // Two records numbered 5 then a 3: before, "has no message 5".
    let dup = tmp_str(tmp, "dup.jsonl");
    let text = [trace_record(5, 3), trace_record(5, 4), trace_record(3, 5)].join("\n");
    std::fs::write(&dup, text).expect("written");
    let o = igemu(&["trace", &dup, "--why", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "dup.jsonl:3: seq 3 after 5: the trace is not in seq order (two traces concatenated?)"
        ),
        "{}",
        stderr(&o)
    );
    // A cause after its effect is an error at its line, not a chain cut short in silence.
    let cycle = tmp_str(tmp, "cycle.jsonl");
    std::fs::write(&cycle, [trace_record(1, 0), trace_record(2, 7)].join("\n")).expect("written");
    let o = igemu(&["trace", &cycle, "--why", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cycle.jsonl:2: message 2 gives 7 as its cause"),
        "{}",
        stderr(&o)
    );
}

/// Every reader refuses two traces concatenated, not only --why: before, each negotiation
/// and request counted twice.
fn every_reader_refuses_two_traces_concatenated(tmp: &tempfile::TempDir) {
    let run = tmp_str(tmp, "run");
    let ran = igemu(&[
        "run",
        "topologies/peering-small.toml",
        "--out",
        &run,
        "--trace",
        "--quiet",
    ]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let one = std::fs::read(format!("{run}/trace.jsonl")).expect("trace");
    let lines = one.iter().filter(|&&b| b == b'\n').count();
    std::fs::write(format!("{run}/trace.jsonl"), [&one[..], &one[..]].concat()).expect("written");
    let twice = format!("{run}/trace.jsonl");
    for args in [
        vec!["trace", &twice, "--negotiations"],
        vec!["trace", &twice, "--request", "busy-users-6"],
        vec!["report", &run],
    ] {
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("the trace is not in seq order"),
            "{args:?}: {err}"
        );
        if args[0] == "trace" {
            let at = format!("trace.jsonl:{}: seq", lines + 1);
            assert!(err.contains(&at), "{args:?}: {err}");
        }
    }
}

/// Audit N12's trace findings: read errors of `igemu trace` lacked the `igemu:` prefix;
/// `--why` on `/dev/zero` said "has no message 0" (a device seeks as if empty) and on a pipe
/// "line 0: cannot read: Illegal seek". --why reads backwards, so it now refuses what it
/// cannot seek in, saying so; the other selections still read a pipe.
#[cfg(unix)]
#[test]
fn trace_errors_are_prefixed_and_why_refuses_a_pipe_or_device_saying_why() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let record = |seq: u64, cause: Option<u64>| {
        let cause = cause.map_or("null".to_string(), |c| c.to_string());
        format!(
            r#"{{"seq":{seq},"t_us":0,"t":"0","from":"a","to":"b","kind":"Arrive","request":"r","cause":{cause}}}"#
        )
    };
    let trace = tmp_str(&tmp, "t.jsonl");
    let text = [record(0, None), record(1, Some(0)), record(2, Some(1))].join("\n");
    std::fs::write(&trace, text + "\n").expect("written");
    let bad = tmp_str(&tmp, "bad.jsonl");
    std::fs::write(&bad, "{\"seq\": 0}\nnot json\n").expect("written");
    let starts = |args: &[&str], prefix: &str| {
        let o = igemu(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(prefix), "{args:?}: {}", stderr(&o));
    };
    starts(&["trace", &bad], &format!("igemu: {bad}:1: missing field"));
    starts(&["trace", &bad, "--why", "0"], &format!("igemu: {bad}:2: "));
    let missing = tmp_str(&tmp, "missing.jsonl");
    starts(
        &["trace", &missing, "--request", "r"],
        &format!("igemu: {missing}: cannot read the file"),
    );
    let regular = "so it needs a regular file, not a pipe or a device";
    let folder = tmp.path().to_str().expect("utf-8");
    starts(
        &["trace", folder, "--why", "0"],
        &format!("igemu: {folder}: that is a folder; give its trace.jsonl"),
    );
    if Path::new("/dev/zero").exists() {
        let long = format!(
            "igemu: /dev/zero:1: longer than {} bytes",
            igemu::trace::render::MAX_LINE
        );
        starts(&["trace", "/dev/zero"], &long);
        let (code, err) = igemu_within(&["trace", "/dev/zero", "--why", "0"], 30).expect("ends");
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.starts_with("igemu: /dev/zero: --why reads the trace backwards"),
            "{err}"
        );
        assert!(
            err.contains(regular) && !err.contains("no message"),
            "{err}"
        );
    }
    // A pipe: refused with the reason, not "line 0: Illegal seek"; --request reads it.
    let piped = |args: &str| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg(format!("cat \"$1\" | exec \"$0\" trace /dev/stdin {args}"))
            .arg(env!("CARGO_BIN_EXE_igemu"))
            .arg(&trace);
        within(cmd, 30).expect("ends")
    };
    let (code, err) = piped("--why 2");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("igemu: /dev/stdin: --why reads"), "{err}");
    assert!(
        err.contains(regular) && !err.contains("Illegal seek"),
        "{err}"
    );
    let (code, err) = piped("--request r");
    assert_eq!(code, Some(0), "{err}");
    // The same trace as a regular file answers --why.
    let o = igemu(&["trace", &trace, "--why", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
}

/// The Chrome export of a run with suspensions (Table III's testbed under MOML) as Perfetto
/// shows it: a process per Grid, a track per host that held a VM, and each VM's states as
/// slices that follow one another without overlapping, on host lanes that never hold two
/// slices at once.
#[test]
fn a_chrome_export_is_a_gantt_of_vm_states_on_host_tracks() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp_str(&tmp, "run");
    let out = igemu(&[
        "run",
        "topologies/paper003-testbed.toml",
        "--set",
        "lrms.preemption=moml",
        "--trace",
        "--quiet",
        "--out",
        &dir,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = format!("{dir}/trace.jsonl");
    let json = tmp_str(&tmp, "gantt.json");
    let out = igemu(&["trace", &trace, "--chrome", &json]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&json).expect("export written");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("an array");
    let threads = the_export_has_a_process_per_grid_and_a_track_per_host(events, &trace);
    let slices: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "vm")
        .collect();
    let per_vm = vm_states_follow_one_another_without_overlapping(&slices, &threads);
    a_suspended_vms_states_run_on_without_a_gap(&slices, &per_vm);
    // Same trace, same export.
    let again = tmp_str(&tmp, "again.json");
    igemu(&["trace", &trace, "--chrome", &again]);
    assert_eq!(std::fs::read(&again).expect("written"), text.as_bytes());
    assert!(
        !Path::new(&format!("{json}.tmp")).exists(),
        "no temporary file left"
    );
}

/// A Chrome export's metadata events named `what`: (pid, tid, name) each.
fn metadata_names(events: &[serde_json::Value], what: &str) -> Vec<(u64, u64, String)> {
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == what)
        .map(|e| {
            let id = |k: &str| e[k].as_u64().unwrap_or(u64::MAX);
            let name = e["args"]["name"].as_str().unwrap_or("").to_string();
            (id("pid"), id("tid"), name)
        })
        .collect()
}

/// The export of the trace at `trace` has a process per Grid (IGG) and a track per host VMs
/// occupied, as the trace itself says. Returns the tracks (thread names).
fn the_export_has_a_process_per_grid_and_a_track_per_host(
    events: &[serde_json::Value],
    trace: &str,
) -> Vec<(u64, u64, String)> {
    let records = igemu::trace::render::parse(&std::fs::read_to_string(trace).expect("trace"))
        .expect("valid trace");
    let grids: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|e| e.from.strip_prefix("igg:"))
        .collect();
    let hosts: std::collections::BTreeSet<String> = records
        .iter()
        .filter(|e| e.kind == "Occupy")
        .filter_map(|e| e.to.strip_prefix("host:").map(|h| format!("host {h}")))
        .collect();
    assert!(!grids.is_empty() && !hosts.is_empty());
    let processes = metadata_names(events, "process_name");
    for g in &grids {
        assert!(
            processes.iter().any(|p| p.2 == format!("grid {g}")),
            "no process for Grid {g}: {processes:?}"
        );
    }
    let threads = metadata_names(events, "thread_name");
    for h in &hosts {
        assert!(
            threads.iter().any(|t| &t.2 == h),
            "no track for {h}: {threads:?}"
        );
    }
    threads
}

/// Each VM's state slices, of known states and on named tracks (`threads`), follow one
/// another without overlapping, and no host track holds two at once. Returns each VM's
/// spans.
fn vm_states_follow_one_another_without_overlapping(
    slices: &[&serde_json::Value],
    threads: &[(u64, u64, String)],
) -> std::collections::BTreeMap<String, Vec<(u64, u64)>> {
    const STATES: [&str; 8] = [
        "pending",
        "booting",
        "running",
        "paused",
        "suspending",
        "suspended",
        "resuming",
        "migrating",
    ];
    let kinds: std::collections::BTreeSet<&str> =
        slices.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(
        kinds.contains("running") && kinds.contains("suspended"),
        "{kinds:?}"
    );
    let mut per_vm: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    let mut per_track: std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> = Default::default();
    for s in slices {
        let name = s["name"].as_str().unwrap_or("");
        assert!(STATES.contains(&name), "{s}");
        let (ts, dur) = (
            s["ts"].as_u64().expect("ts"),
            s["dur"].as_u64().expect("dur"),
        );
        assert!(dur > 0, "{s}");
        let vm = s["args"]["vm"].as_str().expect("the VM").to_string();
        per_vm.entry(vm).or_default().push((ts, ts + dur));
        let track = (
            s["pid"].as_u64().unwrap_or(0),
            s["tid"].as_u64().unwrap_or(0),
        );
        assert!(
            threads.iter().any(|t| (t.0, t.1) == track),
            "slice on an unnamed track: {s}"
        );
        per_track.entry(track).or_default().push((ts, ts + dur));
    }
    let mut contiguous = 0;
    let tracks = per_track
        .into_iter()
        .map(|((pid, tid), spans)| (format!("track {pid}/{tid}"), spans));
    for (what, mut spans) in per_vm.clone().into_iter().chain(tracks) {
        spans.sort_unstable();
        for w in spans.windows(2) {
            assert!(w[1].0 >= w[0].1, "{what}: {:?} overlaps {:?}", w[0], w[1]);
            contiguous += usize::from(w[1].0 == w[0].1);
        }
    }
    assert!(contiguous > 0, "a VM's states follow one another");
    per_vm
}

/// A suspended VM's states run on: suspending, then suspended, then resuming, without a gap.
fn a_suspended_vms_states_run_on_without_a_gap(
    slices: &[&serde_json::Value],
    per_vm: &std::collections::BTreeMap<String, Vec<(u64, u64)>>,
) {
    let suspended = slices
        .iter()
        .find(|s| s["name"] == "suspended")
        .expect("a suspension");
    let vm = suspended["args"]["vm"].as_str().expect("the VM");
    let mut spans = per_vm[vm].clone();
    spans.sort_unstable();
    let at = spans
        .iter()
        .position(|s| Some(s.0) == suspended["ts"].as_u64())
        .expect("its span");
    assert!(at > 0 && at + 1 < spans.len(), "{vm}: {spans:?}");
    assert_eq!(spans[at - 1].1, spans[at].0, "{vm}: {spans:?}");
    assert_eq!(spans[at].1, spans[at + 1].0, "{vm}: {spans:?}");
}

/// `run --trace` of the small peering topology into `tmp`'s folder `name`, with `extra`
/// arguments: its trace and summary.
fn traced_peering_run(
    tmp: &tempfile::TempDir,
    name: &str,
    extra: &[&str],
) -> (String, serde_json::Value) {
    let dir = tmp_str(tmp, name);
    let mut args = vec![
        "run",
        "topologies/peering-small.toml",
        "--trace",
        "--quiet",
        "--out",
        &dir,
    ];
    args.extend_from_slice(extra);
    let out = igemu(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = std::fs::read_to_string(format!("{dir}/trace.jsonl")).expect("trace");
    let summary = std::fs::read_to_string(format!("{dir}/summary.json")).expect("summary");
    (trace, serde_json::from_str(&summary).expect("JSON"))
}

/// `run --trace` with filters writes exactly the full trace's lines that pass all of them
/// (byte for byte, with the full run's numbers) and counts every message as before; a bad
/// filter is a usage error before anything runs.
#[test]
fn a_filtered_trace_holds_only_matching_lines_and_the_same_count() {
    use igemu::trace::{actor_matches, KINDS};
    let tmp = tempfile::tempdir().expect("temp dir");
    let (full, full_summary) = traced_peering_run(&tmp, "full", &[]);
    let (kinds, actors, window) = (
        "PeerOffer,PeerAnswer,AssignLease,Tick",
        "igg:,lrms:busy/",
        "1000s..2d",
    );
    let (cut, cut_summary) = traced_peering_run(
        &tmp,
        "cut",
        &[
            "--trace-kinds",
            kinds,
            "--trace-actors",
            actors,
            "--trace-window",
            window,
        ],
    );
    assert_eq!(full_summary["messages"], cut_summary["messages"]);
    let records = igemu::trace::render::parse(&full).expect("valid trace");
    for e in &records {
        assert!(
            KINDS.contains(&e.kind.as_str()),
            "{} is not in KINDS",
            e.kind
        );
    }
    let patterns: Vec<&str> = actors.split(',').collect();
    let (from, to) = (1_000_000_000, 2 * 86_400_000_000);
    let expected: Vec<&str> = full
        .lines()
        .zip(&records)
        .filter(|(_, e)| {
            kinds.split(',').any(|k| k == e.kind)
                && patterns
                    .iter()
                    .any(|p| actor_matches(p, &e.from) || actor_matches(p, &e.to))
                && (from..to).contains(&e.t_us)
        })
        .map(|(l, _)| l)
        .collect();
    let got: Vec<&str> = cut.lines().collect();
    assert!(got.len() > 10, "a few messages pass: {}", got.len());
    assert!(got.len() < records.len() / 4, "most do not");
    assert_eq!(got, expected);
    let kept_kinds: std::collections::BTreeSet<&str> = igemu::trace::render::parse(&cut)
        .expect("valid")
        .iter()
        .map(|e| {
            kinds
                .split(',')
                .find(|k| *k == e.kind)
                .expect("a kept kind")
        })
        .collect();
    assert_eq!(kept_kinds.len(), 4, "{kept_kinds:?}");
    bad_trace_filters_are_usage_errors_before_anything_runs(&tmp);
}

/// A bad `--trace-kinds`, `--trace-window` or `--trace-actors` is a usage error naming the
/// flag, before anything runs.
fn bad_trace_filters_are_usage_errors_before_anything_runs(tmp: &tempfile::TempDir) {
    for (flag, value, says) in [
        ("--trace-kinds", "PeerOfer", "did you mean `PeerOffer`?"),
        ("--trace-window", "1h-2h", "e.g. `1h..2h`"),
        ("--trace-window", "2h..1h", "empty window"),
        ("--trace-actors", ",", "e.g. `igg:`"),
    ] {
        let dir = tmp_str(tmp, "bad");
        let out = igemu(&[
            "run",
            "topologies/peering-small.toml",
            "--trace",
            "--out",
            &dir,
            flag,
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = stderr(&out);
        assert!(err.contains(says) && err.contains(flag), "{err}");
        assert!(!Path::new(&dir).exists(), "nothing ran");
    }
}

/// Text from input reached the terminal and diagrams raw: a newline in a trace record's `kind`
/// added lines to a Mermaid diagram, and an escape sequence in a trace or in a topology's
/// `name` (a file's or an override's) set the window title and cleared the screen. Such
/// records and values are refused, at their place, shown escaped; nothing raw is printed.
#[test]
fn control_characters_from_traces_and_topologies_never_reach_a_terminal_or_diagram() {
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = |o: &Output| {
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(o));
        all.chars()
            .find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    let trace = dir.path().join("t.jsonl");
    for (line, field) in [
        (
            r#"{"seq":0,"t_us":0,"from":"igg:a","to":"igg:b","kind":"PeerOffer\nparticipant X","negotiation":1}"#,
            "kind",
        ),
        (
            r#"{"seq":0,"t_us":0,"from":"igg:a","to":"igg:b\u001b]0;pwned\u0007","kind":"PeerOffer","negotiation":1}"#,
            "to",
        ),
    ] {
        std::fs::write(&trace, format!("{line}\n")).expect("written");
        let mermaid = dir.path().join("m.mmd");
        for args in [
            vec!["trace", s(&trace)],
            vec![
                "trace",
                s(&trace),
                "--negotiation",
                "1",
                "--mermaid",
                s(&mermaid),
            ],
            vec!["trace", s(&trace), "--negotiations"],
        ] {
            let o = igemu(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("t.jsonl:1: `{field}` holds a control")),
                "{}",
                stderr(&o)
            );
            assert_eq!(raw(&o), None, "{args:?}");
            assert!(!mermaid.exists(), "no diagram written");
        }
    }
    let o = igemu(&[
        "run",
        "--set",
        "name=\"x\u{1b}[2J\"",
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("U+001B"), "{}", stderr(&o));
    assert_eq!(raw(&o), None);
    let o = igemu(&[
        "run",
        "--set",
        "name=x\u{7}",
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(raw(&o), None);
}

/// `--trace-actors igg:alpa` ran with exit 0 and an empty trace, where `--trace-kinds` said
/// "did you mean". A pattern naming no actor of the run is refused before it, with the closest
/// name; and every actor a traced run names is in the catalogue the check uses, so no real
/// actor is ever refused.
#[test]
fn trace_actor_patterns_that_name_no_actor_are_refused_with_the_closest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("o");
    let o = igemu(&[
        "run",
        "--trace",
        "--trace-actors",
        "igg:alpha,igg:alpa",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`igg:alpa` names no actor of this run; did you mean `igg:alpha`?"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing ran");
    for topology in [
        "topologies/quickstart.toml",
        "topologies/peering-small.toml",
    ] {
        let o = igemu(&[
            "run",
            topology,
            "--trace",
            "--out",
            s(&out),
            "--overwrite",
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let topo = igemu::topology::load_file(
            &common::path(topology),
            &igemu::topology::Overrides::default(),
        )
        .expect("loads");
        let catalogue = topo.actor_catalogue();
        let trace = std::fs::read_to_string(out.join("trace.jsonl")).expect("trace");
        let mut names = std::collections::BTreeSet::new();
        for line in trace.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            names.extend(["from", "to"].map(|k| v[k].as_str().unwrap_or_default().to_string()));
        }
        assert!(names.len() > 5, "{names:?}");
        for name in names {
            igemu::trace::check_actor_patterns(std::slice::from_ref(&name), &catalogue)
                .unwrap_or_else(|e| panic!("{topology}: {name}: {e}"));
        }
        for p in ["igg:", "host:", "vm:", "director", "lrms:*"] {
            igemu::trace::check_actor_patterns(&[p.to_string()], &catalogue).expect(p);
        }
    }
}
