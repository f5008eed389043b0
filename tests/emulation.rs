//! End-to-end emulations through the library: the quickstart flow, determinism, realtime
//! mode, the IGG post office's interleaving, and invariants on random topologies checked
//! independently from the trace.

mod common;
use common::{capacity_breaches, quickstart, run_traced, trace};
use igemu::topology::{Federation, Hosts, Request, Users};

use igemu::model::RequestState;
use igemu::{run, RunOptions};
use proptest::prelude::*;

#[test]
fn quickstart_runs_every_request_to_a_terminal_state_within_host_capacity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let result = run_traced(quickstart(&[]), dir.path());
    let s = &result.summary;
    assert_eq!(s.requests.total, 10);
    assert_eq!(
        s.requests.local.completed + s.requests.external.completed,
        10,
        "{s:?}"
    );
    assert_eq!(s.invariant_violations, 0, "{:?}", s.violation_examples);
    assert!(s.metrics.utilization_pct > 0.0 && s.metrics.utilization_pct <= 100.0);
    let events = trace(dir.path());
    assert_eq!(events.len() as u64, s.messages);
    assert_eq!(
        events.iter().filter(|e| e["kind"] == "Occupy").count(),
        66,
        "one per VM placed"
    );
    assert!(capacity_breaches(&result, &events).is_empty());
    // A completed lease holds its hosts for exactly boot + its duration at the cluster's
    // speed (boot is 0 here): durations are stated at the core-weighted mean speed of the
    // topology's hosts, 2366.7 MIPS, so the 3000-MIPS cluster a2 runs an hour in 2840 s.
    let topo = &result.topology;
    for (req, rec) in topo.requests.iter().zip(&result.records) {
        assert_eq!(rec.state, Some(RequestState::Completed));
        let (start, end) = (rec.start.expect("started"), rec.end.expect("ended"));
        assert!(start >= req.arrival);
        let cluster = rec.cluster.expect("ran somewhere");
        let mips = f64::from(topo.cluster(cluster).hosts[0].mips);
        let expected = req.duration.as_secs_f64() * 2366.666667 / mips;
        assert!(
            ((end - start).as_secs_f64() - expected).abs() < 1e-3,
            "{}: {} vs {expected}",
            topo.label(req.id),
            (end - start).as_secs_f64()
        );
        assert_eq!(end - start, topo.speed_of(cluster).local(req.duration));
    }
}

/// The records of the CSV file `name` in `dir`.
fn csv_records(dir: &std::path::Path, name: &str) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(dir.join(name))
        .expect(name)
        .records()
        .map(|r| r.expect("a row"))
        .collect()
}

#[test]
fn intervals_are_each_vms_states_end_to_end_within_host_capacity() {
    // intervals.csv's spans, checked against the requests and the hosts they ran on (an
    // independent view of the same run: not the trace's Occupy/Vacate pairs).
    let dir = tempfile::tempdir().expect("temp dir");
    let options = RunOptions {
        intervals: true,
        ..RunOptions::default()
    };
    let result = run(quickstart(&[]), &options).expect("runs");
    result.write_outputs(dir.path()).expect("written");
    let rows = csv_records(dir.path(), "intervals.csv");
    assert_eq!(rows.len(), result.intervals.len());
    each_vms_spans_run_back_to_back_for_its_duration(&result);
    requests_csv_names_the_hosts_held_and_the_grid_that_served(&result, dir.path());
    utilization_integrates_to_the_cores_the_spans_held(&result, dir.path());
    cores_held_on_each_host_never_exceed_its_cores(&result);
}

/// Every VM of every completed lease: pending → booting → running, back to back, and
/// running for exactly the lease's duration at its cluster's speed.
fn each_vms_spans_run_back_to_back_for_its_duration(result: &igemu::RunResult) {
    let topo = &result.topology;
    for (req, rec) in topo.requests.iter().zip(&result.records) {
        let cluster = rec.cluster.expect("ran somewhere");
        for vm in 0..req.vms {
            let mut spans: Vec<_> = result
                .intervals
                .iter()
                .filter(|s| s.lease == req.id && s.vm == vm)
                .collect();
            spans.sort_by_key(|s| s.start);
            assert!(!spans.is_empty(), "{} vm {vm}", topo.label(req.id));
            for w in spans.windows(2) {
                assert_eq!(
                    w[0].end,
                    w[1].start,
                    "{} vm {vm}: a gap",
                    topo.label(req.id)
                );
            }
            let running: u64 = spans
                .iter()
                .filter(|s| s.state == igemu::model::VmState::Running)
                .map(|s| (s.end - s.start).as_micros())
                .sum();
            let expected = topo.speed_of(cluster).local(req.duration).as_micros();
            assert_eq!(running, expected, "{} vm {vm}", topo.label(req.id));
        }
    }
}

/// requests.csv (in `dir`) names the hosts the VMs held and the Grid that served each
/// request.
fn requests_csv_names_the_hosts_held_and_the_grid_that_served(
    result: &igemu::RunResult,
    dir: &std::path::Path,
) {
    let requests = csv_records(dir, "requests.csv");
    for (row, req) in requests.iter().zip(&result.topology.requests) {
        let mut held: Vec<u16> = result
            .intervals
            .iter()
            .filter(|s| s.lease == req.id && s.state.holds_host())
            .map(|s| s.host)
            .collect();
        held.sort_unstable();
        held.dedup();
        let listed: Vec<u16> = row[16]
            .split(' ')
            .map(|h| h.parse().expect("a host index"))
            .collect();
        assert_eq!(listed, held, "{}", &row[0]);
        assert_eq!(&row[15], &row[1], "served at home: {}", &row[0]);
        assert_eq!(
            row[13].parse::<f64>().expect("seconds"),
            req.duration.as_secs_f64()
        );
    }
}

/// utilization.csv (in `dir`): never over a cluster's cores, and its time integral of cores
/// in use is the cores × time of the spans that hold hosts.
fn utilization_integrates_to_the_cores_the_spans_held(
    result: &igemu::RunResult,
    dir: &std::path::Path,
) {
    let rows = csv_records(dir, "utilization.csv");
    assert!(!rows.is_empty());
    let num = |r: &csv::StringRecord, i: usize| r[i].parse::<f64>().expect("a number");
    let mut integral = 0.0;
    for w in rows.windows(2) {
        assert!(num(&w[0], 3) <= num(&w[0], 4), "{:?}", w[0]);
        if w[0][2] == w[1][2] {
            integral += num(&w[0], 3) * (num(&w[1], 0) - num(&w[0], 0));
        }
    }
    let held: f64 = result
        .intervals
        .iter()
        .filter(|s| s.state.holds_host())
        .map(|s| {
            f64::from(result.topology.requests[s.lease.0 as usize].cores_per_vm)
                * (s.end - s.start).as_secs_f64()
        })
        .sum();
    assert!(
        (integral - held).abs() < 1e-3 * held.max(1.0),
        "{integral} vs {held}"
    );
}

/// Cores held on each host, by the spans that hold hosts, never exceed its cores.
fn cores_held_on_each_host_never_exceed_its_cores(result: &igemu::RunResult) {
    let topo = &result.topology;
    let mut events: std::collections::BTreeMap<(u16, u16), Vec<(u64, i64)>> = Default::default();
    for s in result.intervals.iter().filter(|s| s.state.holds_host()) {
        let cores = i64::from(topo.requests[s.lease.0 as usize].cores_per_vm);
        let host = events.entry((s.cluster.0, s.host)).or_default();
        host.push((s.start.as_micros(), cores));
        host.push((s.end.as_micros(), -cores));
    }
    assert!(!events.is_empty());
    for ((c, h), mut ev) in events {
        ev.sort();
        let cap = i64::from(topo.cluster(igemu::model::ClusterId(c)).hosts[usize::from(h)].cores);
        let mut used = 0;
        for (_, d) in ev {
            used += d;
            assert!(
                used <= cap,
                "host {h} of cluster {c}: {used} of {cap} cores"
            );
        }
    }
}

#[test]
fn an_external_request_flows_dve_igg_lrms_host_vm_and_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    run_traced(quickstart(&[]), dir.path());
    let kinds: Vec<(String, String, String)> = trace(dir.path())
        .into_iter()
        .filter(|e| e["request"] == "ext-1")
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("kind"), s("from"), s("to"))
        })
        .collect();
    let expected_prefix = [
        ("Arrive", "dve:alpha", "dve:alpha"),
        ("SubmitExternal", "dve:alpha", "igg:alpha"),
        ("AssignLease", "igg:alpha", "lrms:alpha/a1"),
    ];
    for (i, (k, f, t)) in expected_prefix.iter().enumerate() {
        assert_eq!(
            (
                kinds[i].0.as_str(),
                kinds[i].1.as_str(),
                kinds[i].2.as_str()
            ),
            (*k, *f, *t)
        );
    }
    let count = |k: &str| kinds.iter().filter(|x| x.0 == k).count();
    for kind in [
        "VmCommand",
        "Deploy",
        "Occupy",
        "Booted",
        "Completed",
        "Vacate",
        "VmReport",
    ] {
        assert_eq!(count(kind), 4, "one {kind} per VM");
    }
    let tail: Vec<&str> = kinds.iter().rev().take(3).map(|x| x.0.as_str()).collect();
    assert_eq!(
        tail,
        ["RequestDone", "LeaseEnded", "LeaseEnded"],
        "LRMS → IGG → DVE → director"
    );
}

#[test]
fn two_virtual_runs_give_identical_bytes() {
    let outputs: Vec<(Vec<u8>, Vec<u8>, String)> = (0..2)
        .map(|_| {
            let dir = tempfile::tempdir().expect("temp dir");
            let r = run_traced(quickstart(&["emulation.seed=99"]), dir.path());
            let mut summary = r.summary.clone();
            summary.wall_s = 0.0;
            (
                std::fs::read(dir.path().join("requests.csv")).expect("csv"),
                std::fs::read(dir.path().join("trace.jsonl")).expect("trace"),
                serde_json::to_string(&summary).expect("json"),
            )
        })
        .collect();
    assert!(outputs[0].0 == outputs[1].0, "requests.csv differs");
    assert!(outputs[0].1 == outputs[1].1, "trace.jsonl differs");
    assert_eq!(outputs[0].2, outputs[1].2);
}

#[test]
fn realtime_mode_finishes_a_known_length_run_in_sane_wall_time_and_reports_lateness() {
    // The quickstart's last lease ends at 12 600 emulated seconds: 0.126 s of wall time at
    // a speed-up of 10^5.
    let topo = quickstart(&["emulation.mode=\"realtime\"", "emulation.speedup=100000.0"]);
    let result = run(topo, &RunOptions::default()).expect("runs");
    let s = &result.summary;
    assert_eq!(s.mode, "realtime");
    assert_eq!(
        s.requests.local.completed + s.requests.external.completed,
        10
    );
    assert!(
        s.wall_s >= 0.126 * 0.95,
        "ran faster than the wall clock allows: {}",
        s.wall_s
    );
    assert!(s.wall_s < 10.0, "took {} s", s.wall_s);
    assert!(
        s.emulated_end_s >= 12_600.0 && s.emulated_end_s < 12_600.0 + 5_000.0,
        "{}",
        s.emulated_end_s
    );
    let late = s
        .timer_lateness_ms
        .as_ref()
        .expect("realtime reports lateness");
    assert!(late.samples > 0 && late.p50 <= late.p99 && late.p99 <= late.max);
    // The virtual summary has no lateness section at all.
    let v = run(quickstart(&[]), &RunOptions::default()).expect("runs");
    assert!(v.summary.timer_lateness_ms.is_none());
}

#[test]
fn a_realtime_run_gives_the_virtual_runs_results_whatever_its_lateness() {
    // Logical time: the wall clock decides when events run, not what time they see, so a
    // realtime run (even one too fast for its timers) decides exactly as the virtual run.
    let v = run(quickstart(&[]), &RunOptions::default()).expect("runs");
    for speedup in ["20000.0", "1e9"] {
        let r = run(
            quickstart(&[
                "emulation.mode=\"realtime\"",
                &format!("emulation.speedup={speedup}"),
            ]),
            &RunOptions::default(),
        )
        .expect("runs");
        let (a, b) = (&v.summary, &r.summary);
        assert_eq!(a.messages, b.messages, "x{speedup}");
        assert_eq!(a.timed_events, b.timed_events, "x{speedup}");
        assert_eq!(a.metrics, b.metrics, "x{speedup}");
        assert_eq!(a.emulated_end_s, b.emulated_end_s, "x{speedup}");
        let starts = |x: &igemu::RunResult| -> Vec<_> {
            x.records.iter().map(|r| (r.start, r.end)).collect()
        };
        assert_eq!(starts(&v), starts(&r), "x{speedup}");
    }
}

#[test]
fn a_fixed_end_time_leaves_open_requests_unfinished() {
    let result = run(
        quickstart(&["emulation.end=\"1h\""]),
        &RunOptions::default(),
    )
    .expect("runs");
    let s = &result.summary;
    assert_eq!(s.emulated_end_s, 3600.0);
    let unfinished = s.requests.local.unfinished + s.requests.external.unfinished;
    assert!(unfinished > 0);
    assert_eq!(
        s.requests.local.completed + s.requests.external.completed + unfinished,
        10
    );
    for rec in &result.records {
        if rec.state == Some(RequestState::Unfinished) {
            assert!(rec.end.is_none());
        }
    }
}

#[test]
fn a_finished_run_frees_its_state_even_with_timers_pending() {
    // Stopped at a fixed end, the run leaves timed events pending whose closures hold the
    // actors' shared state; a sweep runs thousands of runs in one process, so that state
    // must still be freed: no run context may outlive its run.
    let before = igemu::actors::live_contexts();
    for end in ["\"1h\"", "\"all-done\""] {
        run(
            quickstart(&[&format!("emulation.end={end}")]),
            &RunOptions::default(),
        )
        .expect("runs");
        assert_eq!(igemu::actors::live_contexts(), before, "end = {end}");
    }
}

#[test]
fn the_igg_post_office_interleaves_handlers() {
    // Two external requests arrive together: the second is sent to the LRMS before the
    // answer to the first comes back, because each is handled in its own task.
    let topo = Federation::new("post-office")
        .grid("g", &[("c", Hosts::new(2, 4, 8192))])
        .workload(
            Users::external("dve", "g")
                .request(Request::new("a", 0, 1, 512, 600))
                .request(Request::new("b", 0, 1, 512, 600)),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("temp dir");
    run_traced(topo, dir.path());
    let order: Vec<String> = trace(dir.path())
        .into_iter()
        .filter(|e| e["kind"] == "AssignLease" || e["kind"] == "AssignAnswer")
        .map(|e| {
            format!(
                "{}:{}",
                e["kind"].as_str().unwrap_or_default(),
                e["request"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "AssignLease:a",
            "AssignLease:b",
            "AssignAnswer:a",
            "AssignAnswer:b"
        ]
    );
}

/// A random single-Grid topology whose requests all fit cluster `c0` (so local requests
/// are valid and external ones fit somewhere).
fn random_topology(hosts: &[(u8, u8, u16)], requests: &[(u16, u8, u16, u16, bool)]) -> Federation {
    let names: Vec<String> = (0..hosts.len()).map(|i| format!("c{i}")).collect();
    let clusters: Vec<(&str, Hosts)> = names
        .iter()
        .zip(hosts)
        .map(|(n, &(count, cores, gb))| {
            let hosts = Hosts::new(u32::from(count), u32::from(cores), u64::from(gb) * 1024);
            (n.as_str(), hosts)
        })
        .collect();
    let (n0, cores0, gb0) = hosts[0];
    let mut external = Users::external("external", "g");
    let mut local = Users::local("local", "g", "c0");
    for (i, &(arrival, vms, mem, dur, is_local)) in requests.iter().enumerate() {
        let mem_mb = 64 + u32::from(mem) % 960;
        let per_host = u32::from(cores0).min(u32::from(gb0) * 1024 / mem_mb);
        let vms = u32::from(vms) % (u32::from(n0) * per_host) + 1;
        let (arrival, dur) = (u64::from(arrival), u64::from(dur));
        if is_local {
            local = local.request(Request::new(
                &format!("local-{i}"),
                arrival,
                vms,
                mem_mb,
                dur,
            ));
        } else {
            let id = format!("external-{i}");
            external = external.request(Request::new(&id, arrival, vms, mem_mb, dur));
        }
    }
    Federation::new("random")
        .seed(5)
        .grid("g", &clusters)
        .workload(external)
        .workload(local)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(24), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_topologies_end_every_request_once_and_never_overfill_a_host(
        hosts in prop::collection::vec((1u8..5, 1u8..9, 1u16..9), 1..4),
        requests in prop::collection::vec((0u16..3600, any::<u8>(), any::<u16>(), 1u16..7200, any::<bool>()), 1..40),
    ) {
        let topo = random_topology(&hosts, &requests).build().unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().expect("temp dir");
        let result = run_traced(topo, dir.path());
        let s = &result.summary;
        prop_assert_eq!(s.invariant_violations, 0, "{:?}", s.violation_examples);
        // Until all done: nothing is left open, and each request has exactly one state.
        prop_assert_eq!(s.requests.local.unfinished + s.requests.external.unfinished, 0);
        let ended: u64 = [&s.requests.local, &s.requests.external].iter()
            .map(|c| c.completed + c.rejected + c.cancelled).sum();
        prop_assert_eq!(ended, s.requests.total);
        let breaches = capacity_breaches(&result, &trace(dir.path()));
        prop_assert!(breaches.is_empty(), "{:?}", breaches);
    }
}

#[test]
fn a_suspension_is_traced_back_to_the_local_request_that_caused_it() {
    // Table III's testbed under MOML: local request 7 arrives at 720 s and preempts leases.
    // Every suspension's chain of causes leads back to that request's submission, and every
    // record's cause is an earlier record.
    let dir = tempfile::tempdir().expect("temp dir");
    let topo = common::load(
        "topologies/paper003-testbed.toml",
        &["lrms.preemption=moml"],
    );
    run_traced(topo, dir.path());
    let text = std::fs::read_to_string(dir.path().join("trace.jsonl")).expect("trace");
    let events = igemu::trace::render::parse(&text).expect("valid trace");
    assert!(events.iter().all(|e| e.cause.is_none_or(|c| c < e.seq)));
    let suspensions: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == "Suspend")
        .map(|e| e.seq)
        .collect();
    assert!(
        !suspensions.is_empty(),
        "MOML suspends leases for request 7"
    );
    for s in suspensions {
        let chain = igemu::trace::render::causes(&events, s);
        assert!(
            chain
                .iter()
                .any(|e| e.kind == "SubmitLocal" && e.request.as_deref() == Some("7")),
            "{chain:?}"
        );
    }
    // The command line walks the same chain.
    let file = dir.path().join("trace.jsonl");
    let first = events
        .iter()
        .find(|e| e.kind == "Suspend")
        .expect("a suspension");
    let out = common::igemu(&[
        "trace",
        file.to_str().expect("utf-8"),
        "--why",
        &first.seq.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("SubmitLocal request=7"));
}

#[test]
fn a_run_past_its_message_cap_stops_with_an_error_saying_so() {
    let full = run(quickstart(&[]), &RunOptions::default()).expect("runs");
    let sent = full.summary.messages;
    // A cap at what the run sends lets it finish as before.
    let cap = format!("emulation.max_messages={sent}");
    let same = run(quickstart(&[&cap]), &RunOptions::default()).expect("runs");
    assert_eq!(same.summary.messages, sent);
    let dir = tempfile::tempdir().expect("temp dir");
    let options = RunOptions {
        trace_dir: Some(dir.path().to_path_buf()),
        ..RunOptions::default()
    };
    let cap = format!("emulation.max_messages={}", sent / 2);
    let Err(err) = run(quickstart(&[&cap]), &options) else {
        panic!("a run past its cap was not stopped");
    };
    assert_eq!(err.exit_code(), 2);
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "the run sent more than {} messages (emulation.max_messages)",
            sent / 2
        )),
        "{text}"
    );
    // The partial trace is not left behind.
    assert!(!dir.path().join("trace.jsonl").exists());
}

/// A Grid's hosts (count, cores) and external workload (arrival scale as a power of ten of
/// seconds, how many requests, mean ln run time).
type GridSettings = ((u8, u8), (f64, u16, f64));

/// Settings of a random federation for [`random_settings_topology`], drawn over wide ranges
/// (absurd values included): per Grid its hosts (count, cores) and external workload
/// (arrival scale as a power of ten of seconds, how many requests, mean ln run time); the
/// contracts (0 none, 1 fixed-price, 2 price-range); peering's offer timeout and link delays
/// (powers of ten of microseconds: 1 µs to about an hour), ticket lifetime (a multiple of the
/// timeout; 0 is invalid), round interval, retries and load threshold; faults (delay kind
/// 0 none, 1 fixed, 2 uniform, 3 exponential; drop and duplicate probabilities); the LRMS
/// (scheduler 0 FCFS, 1 conservative, 2 EASY; backfill depth; compression); the seed.
#[derive(Clone, Debug)]
struct Settings {
    grids: Vec<GridSettings>,
    contracts: u8,
    timeout_exp: f64,
    ttl_factor: u8,
    interval_s: u16,
    retries: u8,
    threshold: f64,
    delay: (u8, f64, f64),
    drop_dup: (f64, f64),
    lrms: (u8, Option<u16>, bool),
    seed: u64,
}

fn micros(exponent: f64) -> u64 {
    10f64.powf(exponent) as u64
}

/// The topology text `s` describes (ending at 6 h of emulated time).
fn random_settings_topology(s: &Settings) -> String {
    let mut t = format!("[emulation]\nseed = {}\nend = \"6h\"\n", s.seed);
    let scheduler = ["fcfs", "conservative", "easy"][usize::from(s.lrms.0 % 3)];
    t += &format!(
        "[lrms]\nscheduler = \"{scheduler}\"\ncompress = {}\n",
        s.lrms.2
    );
    if let Some(depth) = s.lrms.1 {
        t += &format!("backfill_depth = {depth}\n");
    }
    let timeout = micros(s.timeout_exp).max(1);
    t += &format!(
        "[peering]\noffer_timeout = \"{timeout}us\"\nticket_ttl = \"{}us\"\ninterval = \"{}s\"\n\
         publish_interval = \"{}s\"\nretries = {}\nload_threshold = {}\n",
        timeout * u64::from(s.ttl_factor),
        s.interval_s,
        s.interval_s,
        s.retries,
        s.threshold
    );
    let (kind, a, b) = s.delay;
    let (a, b) = (micros(a.min(b)), micros(a.max(b)));
    t += &format!(
        "[fault]\ndrop = {}\nduplicate = {}\n{}",
        s.drop_dup.0,
        s.drop_dup.1,
        match kind % 4 {
            1 => format!("delay = \"{a}us\"\n"),
            2 => format!("delay = {{ kind = \"uniform\", min = \"{a}us\", max = \"{b}us\" }}\n"),
            3 => format!("delay = {{ kind = \"exponential\", mean = \"{b}us\" }}\n"),
            _ => String::new(),
        }
    );
    for (g, &((count, cores), (scale, requests, duration))) in s.grids.iter().enumerate() {
        t += &format!(
            "[[grid]]\nname = \"g{g}\"\n[[grid.cluster]]\nname = \"c\"\n\
             hosts = {{ count = {count}, cores = {cores}, memory_mb = 65536 }}\n\
             [[workload]]\nname = \"w{g}\"\norigin = \"external\"\ngrid = \"g{g}\"\n\
             model = \"das2\"\nspan = \"6h\"\nmax_requests = {requests}\n\
             [workload.das2]\narrival_scale = {}\nduration_a = {duration}\n",
            10f64.powf(scale),
        );
    }
    let kinds = ["", "fixed-price", "price-range"];
    for g in 1..s.grids.len() {
        let kind = kinds[usize::from(s.contracts % 3)];
        if !kind.is_empty() {
            t += &format!(
                "[[contract]]\nfrom = \"g{}\"\nto = \"g{g}\"\nkind = \"{kind}\"\n",
                g - 1
            );
        }
    }
    t
}

/// At most how many messages a run of `topo` may send if every retry loop is bounded: a
/// constant per request, per VM, per retry of each peer and per periodic timer event.
fn message_bound(topo: &igemu::topology::Topology) -> u64 {
    let requests = topo.requests.len() as u64;
    let vms: u64 = topo.requests.iter().map(|r| u64::from(r.vms)).sum();
    let peers = topo.grids.len() as u64 - 1;
    let retries = u64::from(topo.peering.retries);
    // A redirection and a lease report are resent with back-off: at most 64 times each.
    let peering = requests * (peers * (retries + 2) * 8 + 4 * 65);
    let periodic = topo.periodic_events() as u64;
    2_000 + 40 * (requests + vms) + 2 * peering + 20 * periodic
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(32), failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the settings, validation refuses them or the run ends within a bound on its
    /// messages: "validation accepted it, the run exploded" is found here, not by a user.
    #[test]
    fn accepted_settings_never_make_a_run_explode(
        grids in prop::collection::vec(((1u8..5, 1u8..9), (-3.0f64..4.0, 1u16..60, 0.0f64..9.0)), 2..4),
        contracts in 0u8..3,
        timeout_exp in 0.0f64..9.6,
        ttl_factor in 0u8..20,
        interval_s in 10u16..3600,
        retries in 0u8..=100,
        threshold in 0.0f64..1.0,
        delay in (0u8..4, 0.0f64..9.6, 0.0f64..9.6),
        drop_dup in (0.0f64..0.3, 0.0f64..0.3),
        lrms in (0u8..3, prop::option::of(1u16..1000), any::<bool>()),
        seed in any::<u32>(),
    ) {
        let s = Settings { grids, contracts, timeout_exp, ttl_factor, interval_s, retries, threshold, delay, drop_dup, lrms, seed: u64::from(seed) };
        let text = random_settings_topology(&s);
        let overrides = igemu::topology::Overrides::default();
        let topo = match igemu::topology::load_str(&text, "random.toml", "random", None, &overrides) {
            Ok(t) => t,
            Err(report) => {
                // Refused: for a reason, never for a key the generator got wrong.
                let text = report.to_string();
                prop_assert!(!text.contains("unknown key"), "{}", text);
                return Ok(());
            }
        };
        let bound = message_bound(&topo);
        let mut topo = topo;
        topo.emulation.max_messages = Some(bound);
        let result = run(topo, &RunOptions::default());
        let result = result.map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(result.summary.messages <= bound, "{} > {bound}\n{text}", result.summary.messages);
    }
}
