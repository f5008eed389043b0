//! Workloads, dispatch and admission through the whole emulation and the CLI: generated and
//! replayed workloads run, every dispatch and admission policy keeps the invariants, AACP
//! really holds one external lease at a time, and sweeps (with shards and merge) produce the
//! same results as one run.

mod common;
use common::{igemu, load};

use std::path::{Path, PathBuf};

use igemu::model::{Origin, RequestState};
use igemu::{run, RunOptions};

#[test]
fn every_dispatch_policy_runs_the_paper_000_scenario_cleanly() {
    for policy in [
        "rr",
        "lrf",
        "bcf",
        "pap-rnd",
        "pap-rtdp",
        "least-load",
        "earliest-start",
    ] {
        let set = format!("igg.dispatch={policy}");
        let topo = load(
            "topologies/paper000-three-clusters.toml",
            &[
                &set,
                "workload.0.span=\"4h\"",
                "workload.1.span=\"4h\"",
                "workload.2.span=\"4h\"",
                "workload.3.span=\"4h\"",
            ],
        );
        let n = topo.requests.len();
        let r = run(topo, &RunOptions::default()).expect("runs");
        let s = &r.summary;
        assert_eq!(
            s.invariant_violations, 0,
            "{policy}: {:?}",
            s.violation_examples
        );
        assert_eq!(s.requests.total as usize, n);
        assert_eq!(
            s.requests.local.unfinished + s.requests.external.unfinished,
            0,
            "{policy}"
        );
        // Each policy actually spreads external leases over the three clusters.
        let used: std::collections::BTreeSet<_> = r
            .topology
            .requests
            .iter()
            .zip(&r.records)
            .filter(|(q, rec)| q.origin == Origin::External && rec.cluster.is_some())
            .map(|(_, rec)| rec.cluster)
            .collect();
        assert!(used.len() >= 2, "{policy} used {used:?}");
    }
}

/// paper002-admission.toml's four workloads over 20 minutes, rigid (one VM per task), which
/// keeps the admission tests quick.
const RIGID_20_MINUTES: [&str; 8] = [
    "workload.0.span=\"20m\"",
    "workload.1.span=\"20m\"",
    "workload.2.span=\"20m\"",
    "workload.3.span=\"20m\"",
    "workload.0.moldable=false",
    "workload.1.moldable=false",
    "workload.2.moldable=false",
    "workload.3.moldable=false",
];

#[test]
fn aacp_holds_one_external_lease_per_cluster_at_a_time() {
    // Rigid requests (one VM per task) keep this quick; moldable ones are exercised below.
    let mut sets = RIGID_20_MINUTES.to_vec();
    sets.push("workload.0.gwa.arrival_scale=0.6");
    let mut outcomes = Vec::new();
    for policy in ["cacp", "aacp", "racp", "pacp"] {
        let set = format!("lrms.admission={policy}");
        let mut all = sets.to_vec();
        all.push(&set);
        let r = run(
            load("topologies/paper002-admission.toml", &all),
            &RunOptions::default(),
        )
        .expect("runs");
        assert_eq!(r.summary.invariant_violations, 0);
        if policy == "aacp" {
            // External leases on one cluster never overlap in time.
            for c in 0..r.topology.clusters.len() {
                let mut spans: Vec<(u64, u64)> = r
                    .topology
                    .requests
                    .iter()
                    .zip(&r.records)
                    .filter(|(q, rec)| {
                        q.origin == Origin::External
                            && rec.cluster.map(|x| usize::from(x.0)) == Some(c)
                            && rec.state == Some(RequestState::Completed)
                    })
                    .map(|(q, rec)| (q.arrival.as_micros(), rec.end.expect("ended").as_micros()))
                    .collect();
                spans.sort_unstable();
                assert!(
                    spans.windows(2).all(|w| w[0].1 <= w[1].0),
                    "overlap on cluster {c}"
                );
            }
        }
        outcomes.push((
            policy,
            r.summary.metrics.completed_external_pct,
            r.summary.metrics.dvr_pct,
        ));
    }
    // CACP completes every external request; AACP the fewest.
    assert_eq!(outcomes[0].1, 100.0);
    assert!(
        outcomes[1].1 < outcomes[0].1
            && outcomes[1].1 <= outcomes[2].1
            && outcomes[1].1 <= outcomes[3].1,
        "{outcomes:?}"
    );
}

/// `lrms.racp_scale` multiplies RACP's N_q: at 1 (the formula) the overloaded cluster c64
/// refuses for its queue limit; with its own scale of 30 (a cluster's `[lrms]` table) it
/// refuses fewer; scaled past any queue, RACP admits what CACP admits and runs it the same.
/// Summaries name the scale only where it is set.
#[test]
fn racp_scale_multiplies_racps_queue_limit() {
    let mut sets = RIGID_20_MINUTES.to_vec();
    sets.push("workload.0.gwa.arrival_scale=1.7");
    let go = |policy: &str, scale: &str| {
        let a = format!("lrms.admission={policy}");
        let all: Vec<&str> = sets.iter().copied().chain([a.as_str(), scale]).collect();
        let r = run(
            load("topologies/paper002-admission.toml", &all),
            &RunOptions::default(),
        )
        .expect("runs");
        assert_eq!(r.summary.invariant_violations, 0);
        let limited = (r.records.iter())
            .filter(|x| x.reason.map(|x| x.as_str()) == Some("queue-limit"))
            .count();
        let outcomes: Vec<_> = r.records.iter().map(|x| (x.state, x.end)).collect();
        (limited, r.summary.policies, outcomes)
    };
    let (at_1, named_1, _) = go("racp", "lrms.racp_scale=1");
    let (at_30, named_30, _) = go("racp", "grid.0.cluster.0.lrms.racp_scale=30");
    let (at_huge, _, unlimited) = go("racp", "lrms.racp_scale=1e9");
    let (_, _, cacp) = go("cacp", "lrms.racp_scale=1");
    assert!(at_1 > 0, "c64, overloaded, limits its queue at scale 1");
    assert!(
        at_30 < at_1,
        "{at_30} refusals with c64 at 30 against {at_1} at 1"
    );
    assert_eq!(at_huge, 0);
    // RACP past any queue runs as CACP does: every request's outcome and end the same.
    let differ = unlimited.iter().zip(&cacp).filter(|(a, b)| a != b).count();
    assert_eq!((unlimited.len(), differ), (cacp.len(), 0));
    let named = |p: &std::collections::BTreeMap<String, String>, c: &str| {
        p.get(&format!("cluster:grid/{c}"))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        named(&named_1, "c64").contains("admission racp,"),
        "{named_1:?}"
    );
    assert!(
        named(&named_30, "c64").contains("admission racp { scale: 30.0 },"),
        "{named_30:?}"
    );
    assert!(
        named(&named_30, "c128").contains("admission racp,"),
        "{named_30:?}"
    );
}

#[test]
fn an_swf_trace_replays_and_inspect_summarises_it() {
    let r = run(
        load("topologies/swf-replay.toml", &[]),
        &RunOptions::default(),
    )
    .expect("runs");
    let external = r
        .topology
        .requests
        .iter()
        .filter(|q| q.origin == Origin::External)
        .count();
    assert_eq!(
        external, 300,
        "every job of the synthetic trace becomes a request"
    );
    assert_eq!(r.summary.invariant_violations, 0);
    let out = igemu(&["workload", "inspect", "topologies/traces/synthetic-64.swf"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("jobs            300"), "{text}");
    assert!(text.contains("MaxProcs: 64"), "{text}");
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.swf");
    std::fs::write(&bad, "; x\n1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n2 0 5 1e 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n").expect("written");
    let out = igemu(&["workload", "inspect", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.swf:3: error: field 4 (`1e`) is not a number"),
        "{err}"
    );
}

/// The usable jobs of a GWF file as (arrival s, VMs, duration s, OrigSiteID), in arrival
/// order — read here independently of igemu's reader: tab-separated fields, arrivals from the
/// file's first submission, NProcs else ReqNProcs, RunTime else ReqTime.
fn gwf_jobs(file: &str) -> Vec<(f64, u32, f64, String)> {
    let text = std::fs::read_to_string(common::path(file)).expect("readable");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    let num = |r: &[&str], i: usize| -> f64 { r[i - 1].parse().expect("a number") };
    let first = rows.iter().map(|r| num(r, 2)).fold(f64::INFINITY, f64::min);
    let mut jobs: Vec<_> = rows
        .iter()
        .filter_map(|r| {
            let procs = if num(r, 5) > 0.0 {
                num(r, 5)
            } else {
                num(r, 8)
            };
            let run = if num(r, 4) > 0.0 {
                num(r, 4)
            } else {
                num(r, 9)
            };
            (procs > 0.0 && run > 0.0)
                .then(|| (num(r, 2) - first, procs as u32, run, r[16].to_string()))
        })
        .collect();
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    jobs
}

/// The external requests of Grid `grid` as (arrival s, VMs, duration s), in arrival order.
fn external_jobs(t: &igemu::topology::Topology, grid: &str) -> Vec<(f64, u32, f64)> {
    let g = t.grids.iter().position(|g| g.name == grid).expect("grid");
    let mut jobs: Vec<_> = t
        .requests
        .iter()
        .filter(|r| r.origin == Origin::External && usize::from(r.grid.0) == g)
        .map(|r| (r.arrival.as_secs_f64(), r.vms, r.duration.as_secs_f64()))
        .collect();
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    jobs
}

const SAMPLE_GWF: &str = "topologies/traces/synthetic-grid.gwf";

#[test]
fn a_gwf_trace_replays_as_its_jobs_and_a_site_filter_keeps_its_own() {
    let expected = gwf_jobs(SAMPLE_GWF);
    assert_eq!(
        expected.len(),
        19,
        "20 jobs, one of which cannot be a lease"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(common::path(SAMPLE_GWF), dir.path().join("trace.gwf")).expect("copied");
    let topo_file = dir.path().join("gwf.toml");
    std::fs::write(
        &topo_file,
        r#"
[[grid]]
name = "g"
[[grid.cluster]]
name = "c"
hosts = { count = 16, cores = 4, memory_mb = 8192 }
[[workload]]
name = "grid-jobs"
origin = "external"
grid = "g"
model = "gwf"
mem_mb = 1024
[workload.gwf]
path = "trace.gwf"
"#,
    )
    .expect("written");
    let file = topo_file.to_str().expect("utf-8");
    let strip = |jobs: &[(f64, u32, f64, String)]| -> Vec<(f64, u32, f64)> {
        jobs.iter().map(|(a, v, d, _)| (*a, *v, *d)).collect()
    };
    let topo = load(file, &[]);
    assert_eq!(external_jobs(&topo, "g"), strip(&expected));
    let r = run(topo, &RunOptions::default()).expect("runs");
    assert_eq!(r.summary.invariant_violations, 0);
    assert_eq!(r.summary.requests.total, 19);
    assert_eq!(r.summary.requests.external.unfinished, 0);
    // Only site-b's jobs, on the trace's clock.
    let site_b: Vec<_> = expected
        .iter()
        .filter(|j| j.3 == "site-b")
        .cloned()
        .collect();
    assert!(!site_b.is_empty() && site_b.len() < expected.len());
    let topo = load(file, &["workload.0.gwf.site=\"site-b\""]);
    assert_eq!(external_jobs(&topo, "g"), strip(&site_b));
}

#[test]
fn a_paper_004_grid_replays_a_gwf_trace_as_the_docs_say() {
    // docs/topology.md: in the Grid's `[[workload]]`, model = "gwf" and [workload.gwf]
    // instead of the DAS-2 settings; its type mix still applies.
    let text = std::fs::read_to_string(common::path("topologies/paper004-three-grids.toml"))
        .expect("readable");
    let at = text
        .find("name = \"auvergrid-grid-jobs\"")
        .expect("the workload");
    let from = at + text[at..].find("model = \"das2\"").expect("its model");
    let to = at + text[at..].find("[workload.mix]").expect("its mix");
    let edited = format!(
        "{}model = \"gwf\"\nmem_mb = 1024\n[workload.gwf]\npath = \"traces/synthetic-grid.gwf\"\n{}",
        &text[..from],
        &text[to..]
    );
    let topo = igemu::topology::load_str(
        &edited,
        "paper004-gwf.toml",
        "paper004-gwf",
        Some(&common::path("topologies")),
        &igemu::topology::Overrides::default(),
    )
    .unwrap_or_else(|r| panic!("{r}"));
    let expected: Vec<_> = gwf_jobs(SAMPLE_GWF)
        .into_iter()
        .map(|(a, v, d, _)| (a, v, d))
        .collect();
    assert_eq!(external_jobs(&topo, "auvergrid"), expected);
    let auvergrid = topo.grids.iter().position(|g| g.name == "auvergrid");
    assert!(topo
        .requests
        .iter()
        .filter(|r| r.origin == Origin::External && Some(usize::from(r.grid.0)) == auvergrid)
        .all(|r| r.lease_type.preemptable()));
}

#[test]
fn inspect_summarises_a_gwf_trace_and_names_its_bad_lines() {
    let out = igemu(&["workload", "inspect", SAMPLE_GWF]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("jobs            20 (19 usable as leases, 1 skipped"),
        "{text}"
    );
    assert!(text.contains("site-a: 14 jobs, site-b: 6 jobs"), "{text}");
    let out = igemu(&["workload", "inspect", "tests/malformed/gwf-bad-line.gwf"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gwf-bad-line.gwf:3: error: field 4 (RunTime) is `1h`, not a number"),
        "{err}"
    );
    assert!(
        err.contains("gwf-bad-line.gwf:4: error: expected 29 fields, found 19"),
        "{err}"
    );
}

fn read(path: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(path).expect("csv");
    let mut rows = vec![r
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect()];
    rows.extend(
        r.records()
            .map(|x| x.expect("row").iter().map(str::to_string).collect()),
    );
    rows
}

#[test]
fn a_sweep_file_reports_every_problem_at_its_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("bad.toml");
    std::fs::write(
        &sweep,
        "topology = \"x.toml\"\nseed = 3\nseeds = \"ten\"\n[vary]\n\"lrms.cp_alpha\" = { from = 1.0, to = 0.0, step = 0.1 }\n",
    )
    .expect("written");
    let out = igemu(&["sweep", sweep.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let at = |line: u32| format!("bad.toml:{line}:");
    assert!(
        err.contains(&at(2)) && err.contains("unknown key `seed`"),
        "{err}"
    );
    assert!(err.contains("did you mean `seeds`"), "{err}");
    assert!(
        err.contains(&at(3)) && err.contains("`seeds` must be"),
        "{err}"
    );
    assert!(
        err.contains(&at(5)) && err.contains("needs step > 0 and to ≥ from"),
        "{err}"
    );
    assert!(err.contains("3 problems found"), "{err}");
}

/// Runs `igemu` with `args` and asserts it exits 0.
fn succeeds(args: &[&str]) {
    let out = igemu(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs shard `i` of `n` of `sweep` into `out`, one job.
fn run_shard(sweep: &Path, out: &Path, i: usize, n: usize) {
    let shard = format!("{i}/{n}");
    succeeds(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--shard",
        &shard,
        "--jobs",
        "1",
    ]);
}

/// `sweep merge --out out` of the run files `files`, in that order.
fn merge_runs(out: &Path, files: &[PathBuf]) {
    let mut args = vec!["sweep", "merge", "--out", out.to_str().expect("utf-8")];
    args.extend(files.iter().map(|p| p.to_str().expect("utf-8")));
    succeeds(&args);
}

/// The merge in `merged` wrote the unsharded sweep's (`whole`) results, byte for byte, as
/// docs/sweeps.md promises.
fn same_results_byte_for_byte(whole: &Path, merged: &Path, which: &str) {
    for f in ["runs.csv", "points.csv", "paired.csv"] {
        assert_eq!(
            std::fs::read(whole.join(f)).ok(),
            std::fs::read(merged.join(f)).ok(),
            "{f} of the {which} differs from the unsharded sweep's"
        );
    }
}

#[test]
fn a_sharded_sweep_merges_to_the_same_results_as_one_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("s.toml");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/quickstart.toml");
    std::fs::write(&sweep, format!("topology = {:?}\nseeds = 2\nmetrics = [\"utilization_pct\", \"makespan_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\", \"bcf\", \"least-load\"]\n", topo.display().to_string())).expect("written");
    let whole = dir.path().join("whole");
    succeeds(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        whole.to_str().expect("utf-8"),
        "--jobs",
        "2",
    ]);
    let runs = read(&whole.join("runs.csv"));
    assert_eq!(runs.len(), 1 + 6);
    assert_eq!(
        runs[0],
        [
            "run",
            "seed",
            "set:igg.dispatch",
            "utilization_pct",
            "makespan_s",
            "error"
        ]
    );
    let points = read(&whole.join("points.csv"));
    assert_eq!(points.len(), 1 + 3 * 2, "3 points × 2 metrics");
    let mut shards: Vec<PathBuf> = Vec::new();
    for i in 0..2 {
        let d = dir.path().join(format!("shard{i}"));
        run_shard(&sweep, &d, i, 2);
        assert!(
            !d.join("points.csv").exists(),
            "a shard writes no partial points.csv"
        );
        shards.push(d.join(format!("runs-{i}-of-2.csv")));
    }
    let merged = dir.path().join("merged");
    // In any order: the merge puts rows in run order.
    shards.reverse();
    merge_runs(&merged, &shards);
    assert_eq!(
        read(&merged.join("points.csv")),
        points,
        "merged shards give the same summary"
    );
    same_results_byte_for_byte(&whole, &merged, "merge");
    // Three shards sharing one folder, merged in a shuffled order: the same bytes again.
    let three = dir.path().join("three");
    for i in 0..3 {
        run_shard(&sweep, &three, i, 3);
    }
    let merged3 = dir.path().join("merged3");
    let files: Vec<PathBuf> = [1, 2, 0]
        .iter()
        .map(|i| three.join(format!("runs-{i}-of-3.csv")))
        .collect();
    merge_runs(&merged3, &files);
    same_results_byte_for_byte(&whole, &merged3, "three-shard merge");
    // Bad shard syntax and a bad sweep file exit 2.
    assert_eq!(
        igemu(&["sweep", sweep.to_str().expect("utf-8"), "--shard", "3/2"])
            .status
            .code(),
        Some(2)
    );
    std::fs::write(&sweep, "topology = \"nope.toml\"\n").expect("written");
    assert_eq!(
        igemu(&["sweep", sweep.to_str().expect("utf-8")])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn the_best_effort_share_and_the_rate_factor_shape_a_generated_workload() {
    let count = |sets: &[&str], pick: &dyn Fn(&igemu::model::LeaseRequest) -> bool| {
        let topo = load("topologies/paper003-simulation.toml", sets);
        topo.requests.iter().filter(|r| pick(r)).count()
    };
    let be = |r: &igemu::model::LeaseRequest| {
        r.origin == Origin::External && !r.lease_type.deadline_constrained()
    };
    let external = |r: &igemu::model::LeaseRequest| r.origin == Origin::External;
    for share in [0.1, 0.5, 0.9] {
        let set = format!("workload.0.mix.best_effort={share}");
        let got = count(&[&set], &be) as f64 / count(&[&set], &external) as f64;
        // 2000 leases: the binomial spread is under 1.2 points.
        assert!(
            (got - share).abs() < 0.04,
            "best-effort share {got} for {share}"
        );
    }
    // Twice the arrival rate over the same span: about twice the requests (GWA arrivals are
    // regular: Weibull shape 7.86).
    let gwa = |sets: &[&str]| {
        load("topologies/paper002-admission.toml", sets)
            .requests
            .iter()
            .filter(|r| r.origin == Origin::External)
            .count() as f64
    };
    let (base, doubled) = (gwa(&[]), gwa(&["workload.0.rate_factor=2.0"]));
    assert!((doubled / base - 2.0).abs() < 0.05, "{base} → {doubled}");
}

#[test]
fn an_exported_workload_replays_as_the_same_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let swf = dir.path().join("standin.swf");
    let export = |workload: &str, out: &Path| {
        igemu(&[
            "workload",
            "export",
            "topologies/paper001-testbed.toml",
            "--workload",
            workload,
            "--out",
            out.to_str().expect("utf-8"),
        ])
    };
    let out = export("sdsc", &swf);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // `--out -` is standard output: the same bytes, its count on standard error, and no
    // file named `-` (audit 3: there was one).
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .current_dir(dir.path())
        .args(["workload", "export"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/paper001-testbed.toml"))
        .args(["--workload", "sdsc", "--out", "-"])
        .output()
        .expect("igemu runs");
    assert_eq!(piped.status.code(), Some(0), "{piped:?}");
    let file = std::fs::read(&swf).expect("the export");
    // The file's header names the topology as given: compare the jobs after it.
    let jobs_of = |b: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.starts_with(';'))
            .map(String::from)
            .collect()
    };
    assert_eq!(jobs_of(&piped.stdout), jobs_of(&file));
    assert!(!jobs_of(&file).is_empty());
    assert!(String::from_utf8_lossy(&piped.stderr).contains("jobs written to standard output"));
    assert!(!dir.path().join("-").exists());
    // A FIFO as --out is refused with the way to it through standard output (not "leave
    // --out out": this command needs it).
    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let out = export("sdsc", &fifo);
            assert_eq!(out.status.code(), Some(2), "{out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("--out - >"), "{err}");
        }
    }
    let generated = load("topologies/paper001-testbed.toml", &[]);
    let path = format!("workload.0.swf.path=\"{}\"", swf.display());
    let replayed = load("topologies/paper001-trace.toml", &[&path]);
    let jobs = |t: &igemu::topology::Topology| -> Vec<(u32, u64)> {
        t.requests
            .iter()
            .filter(|r| r.origin == Origin::External)
            .map(|r| (r.vms, r.duration.as_secs_f64().round() as u64))
            .collect()
    };
    assert_eq!(jobs(&generated), jobs(&replayed));
    // The shipped stand-in is that export.
    assert_eq!(
        jobs(&load("topologies/paper001-trace.toml", &[])),
        jobs(&generated)
    );
    // An unknown workload is bad input.
    assert_eq!(export("nope", &swf).status.code(), Some(2));
}

#[test]
fn a_moldable_request_takes_every_vm_of_its_cluster_and_its_deadline_from_its_ratio() {
    // Spread over the cluster, with paper 000's costs (no preemption stretches a run).
    let r = run(
        load(
            "topologies/paper002-admission.toml",
            &[
                "lrms.moldable=\"spread\"",
                "lrms.profile=\"paper000-sim\"",
                "workload.0.span=\"2m\"",
                "workload.1.span=\"2m\"",
                "workload.2.span=\"2m\"",
                "workload.3.span=\"2m\"",
            ],
        ),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(
        r.summary.invariant_violations, 0,
        "{:?}",
        r.summary.violation_examples
    );
    let topo = &r.topology;
    let mut checked = 0;
    for (q, rec) in topo.requests.iter().zip(&r.records) {
        let (Some(c), Some(RequestState::Completed)) = (rec.cluster, rec.state) else {
            continue;
        };
        let cluster = topo.cluster(c);
        // Every VM of the cluster (one per core here), for work / VMs of run time there.
        assert_eq!(rec.vms, Some(cluster.cores() as u32));
        let run_time = rec.busy.as_secs_f64();
        let expected = topo
            .speed_of(c)
            .local(igemu::time::EmuDuration::from_secs_f64(
                q.duration.as_secs_f64() * f64::from(q.vms) / cluster.cores() as f64,
            ))
            .as_secs_f64();
        assert!(
            (run_time - expected).abs() < 1e-3,
            "{run_time} vs {expected}"
        );
        if q.origin == Origin::External {
            let ratio = q
                .deadline_ratio
                .expect("moldable external requests carry a ratio");
            let deadline = rec.deadline.expect("resolved by the cluster");
            let resolved = deadline.since(q.arrival).as_secs_f64() / run_time;
            assert!((resolved - ratio).abs() < 1e-3, "{resolved} vs {ratio}");
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

/// The metric names a sweep accepts are known from the topology alone, and every numeric key a
/// real run writes to `summary.json` is among them (so no valid metric is refused).
#[test]
fn sweep_metric_names_cover_every_numeric_summary_key() {
    let topo = load("topologies/peering-small.toml", &["emulation.seed=3"]);
    let names = igemu::sweep::metric_names(&topo);
    assert!(names.iter().any(|n| n == "grids.busy.awrt_grid_s"));
    assert!(names
        .iter()
        .any(|n| n == "clusters.calm/c1.utilization_pct"));
    assert!(names
        .iter()
        .any(|n| n == "vm_preemptions_by_type.migratable"));
    let result = run(topo, &RunOptions::default()).expect("runs");
    let summary = serde_json::to_value(&result.summary).expect("serialisable");
    let missing: Vec<String> = igemu::sweep::numeric(&summary)
        .into_keys()
        .filter(|k| !names.contains(k))
        .collect();
    // The summary's seed is the run file's own `seed` column, so no metric takes its name.
    assert_eq!(missing, ["seed"], "not in the schema");
    assert!(igemu::sweep::is_run_column("seed"));
}

#[test]
fn an_unknown_sweep_metric_is_an_input_error_with_a_suggestion() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("m.toml");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/peering-small.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 1\nmetrics = [\"utilization_pct\",\n  \"grids.busy.awrt_grid\", \"nonsense_xyz_metric\", \"utilization\"]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let out_dir = dir.path().join("out");
    let out = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("m.toml:4:3: error: unknown metric `grids.busy.awrt_grid`"),
        "{err}"
    );
    assert!(
        err.contains("did you mean `grids.busy.awrt_grid_s`?"),
        "{err}"
    );
    assert!(
        err.contains("m.toml:4:27: error: unknown metric `nonsense_xyz_metric`"),
        "{err}"
    );
    // A name from before every share became a percent points to its new name.
    assert!(
        err.contains("unknown metric `utilization`")
            && err.contains("did you mean `utilization_pct`?"),
        "{err}"
    );
    assert!(err.contains("3 problems found"), "{err}");
    assert!(!out_dir.exists(), "nothing ran");
}

/// The resume test's sweep over the quickstart topology: three seeds, dispatch `policies`.
fn resume_sweep_text(policies: &str) -> String {
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/quickstart.toml");
    format!(
        "topology = {:?}\nseeds = 3\nmetrics = [\"utilization_pct\", \"makespan_s\"]\n[vary]\n\"igg.dispatch\" = [{policies}]\n",
        topo.display().to_string()
    )
}

/// `sweep SWEEP --out OUT --jobs 2` and `extra`.
fn sweep_in(sweep: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--jobs",
        "2",
    ];
    args.extend(extra);
    igemu(&args)
}

/// `--resume` after an interrupted sweep runs only the runs missing from `runs.csv` (a failed
/// row and a row cut short count as missing) and gives the same `runs.csv` and `points.csv`
/// as a sweep that ran straight through; a file from another sweep is refused.
#[test]
fn a_resumed_sweep_runs_only_the_missing_runs_and_gives_the_same_points() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("s.toml");
    std::fs::write(&sweep, resume_sweep_text("\"rr\", \"bcf\"")).expect("written");
    let whole = dir.path().join("whole");
    let out = sweep_in(&sweep, &whole, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs_text = std::fs::read_to_string(whole.join("runs.csv")).expect("runs.csv");
    let lines: Vec<&str> = runs_text.lines().collect();
    assert_eq!(lines.len(), 1 + 6);
    // An interrupted sweep: runs 4 and 1 finished (out of order), run 2 failed, and run 5's
    // row was cut short.
    let part = dir.path().join("part");
    std::fs::create_dir(&part).expect("created");
    let failed = lines[3]
        .rsplit_once(',')
        .expect("error column")
        .0
        .to_string()
        + ",boom";
    let cut = &lines[6][..lines[6].len() / 2];
    std::fs::write(
        part.join("runs.csv"),
        format!("{}\n{}\n{}\n{failed}\n{cut}", lines[0], lines[5], lines[2]),
    )
    .expect("written");
    let out = sweep_in(&sweep, &part, &["--resume"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("4 runs (2 already done, kept)"),
        "runs 0, 2, 3 and 5 run again: {stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(part.join("runs.csv")).expect("runs.csv"),
        runs_text,
        "the same runs.csv"
    );
    assert_eq!(
        read(&part.join("points.csv")),
        read(&whole.join("points.csv")),
        "the same points.csv"
    );
    // Resuming a finished sweep runs nothing.
    let out = sweep_in(&sweep, &part, &["--resume"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 runs (6 already done, kept)"));
    another_sweeps_runs_file_is_refused_naming_it(&sweep, &part);
}

/// With the sweep file at `sweep` changed (other policies, other metrics), resuming into
/// `part` refuses the runs file there, naming it.
fn another_sweeps_runs_file_is_refused_naming_it(sweep: &Path, part: &Path) {
    std::fs::write(sweep, resume_sweep_text("\"rr\", \"least-load\"")).expect("written");
    let out = sweep_in(sweep, part, &["--resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("runs.csv: written for a different sweep"),
        "{err}"
    );
    std::fs::write(
        sweep,
        resume_sweep_text("\"rr\", \"bcf\"").replace("makespan_s", "awrt_s"),
    )
    .expect("written");
    let out = sweep_in(sweep, part, &["--resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("its columns are"), "{err}");
}

/// Asserts a command exited 0, showing its stderr otherwise.
fn assert_ok(out: &std::process::Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// With a policy varied over shared seeds, `paired.csv` holds the mean per-seed difference
/// between each pair of policies and its 95 % CI, computed here from `runs.csv` by hand.
#[test]
fn a_sweep_over_policies_writes_paired_differences_per_seed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = common::sweep_file(
        dir.path(),
        "topologies/quickstart.toml",
        "seeds = 4\nmetrics = [\"utilization_pct\", \"awrt_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\", \"bcf\", \"least-load\"]\n",
    );
    let out_dir = dir.path().join("out");
    assert_ok(&common::sweep(&sweep, &out_dir, &[]));
    let paired = read(&out_dir.join("paired.csv"));
    assert_eq!(
        paired[0],
        [
            "key",
            "a",
            "b",
            "set:igg.dispatch",
            "metric",
            "n",
            "mean_diff",
            "ci95_low",
            "ci95_high"
        ]
    );
    assert_eq!(paired.len(), 1 + 3 * 2, "3 pairs × 2 metrics");
    let runs = read(&out_dir.join("runs.csv"));
    let value = |policy: &str, seed: u64| -> f64 {
        let r = runs
            .iter()
            .find(|r| r[2] == policy && r[1] == seed.to_string())
            .expect("run present");
        r[4].parse().expect("awrt_s")
    };
    let row = paired
        .iter()
        .find(|r| r[1] == "rr" && r[2] == "bcf" && r[4] == "awrt_s")
        .expect("rr vs bcf");
    let diffs: Vec<f64> = (1..=4).map(|s| value("bcf", s) - value("rr", s)).collect();
    let mean = diffs.iter().sum::<f64>() / 4.0;
    let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    let half = 3.182446 * sd / 2.0; // t(0.975, 3) · sd / √4
    let got = |i: usize| row[i].parse::<f64>().expect("number");
    assert!(
        half > 0.0,
        "the seeds differ, so the interval is not a point"
    );
    assert_eq!(row[5], "4");
    assert!(
        (got(6) - mean).abs() < 1e-9 * mean.abs().max(1.0),
        "{row:?} vs {mean}"
    );
    assert!(
        (got(7) - (mean - half)).abs() < 1e-5 * half.max(1.0),
        "{row:?}"
    );
    assert!(
        (got(8) - (mean + half)).abs() < 1e-5 * half.max(1.0),
        "{row:?}"
    );
    // A sweep varying only numbers writes no paired.csv.
    let sweep = common::sweep_file(
        dir.path(),
        "topologies/quickstart.toml",
        "seeds = 2\nmetrics = [\"utilization_pct\"]\n[vary]\n\"lrms.cp_alpha\" = [0.1, 0.2]\n",
    );
    assert_ok(&common::sweep(&sweep, &out_dir, &["--overwrite"]));
    assert!(
        !out_dir.join("paired.csv").exists(),
        "the sweep --overwrite replaced leaves no paired.csv behind"
    );
}

/// `sweep merge` of a file that is not a run file (empty, or other columns) is an input error,
/// not a crash.
#[test]
fn merging_something_that_is_not_a_run_file_is_an_input_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in [("empty.csv", ""), ("other.csv", "a,b\n1,2\n")] {
        let f = dir.path().join(name);
        std::fs::write(&f, text).expect("written");
        let merged = dir.path().join("merged");
        let out = igemu(&[
            "sweep",
            "merge",
            "--out",
            merged.to_str().expect("utf-8"),
            f.to_str().expect("utf-8"),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("not a sweep's run file"), "{name}: {err}");
    }
}

/// The fuzz corpus (fuzz/corpus/<target>/, seeds and every input the fuzzers kept, crashes
/// they found included) through the fuzz targets' checks, on stable: a reader that panics or
/// breaks an invariant on an input the fuzzers met fails here. The fuzzers themselves run on
/// nightly (docs/fuzzing.md).
#[test]
fn the_fuzz_corpus_passes_every_reader_check() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    type Check = fn(&[u8]);
    let targets: [(&str, Check); 7] = [
        ("fuzz_topology", igemu::fuzzing::check_topology),
        ("fuzz_swf", igemu::fuzzing::check_swf),
        ("fuzz_sweep", igemu::fuzzing::check_sweep),
        ("fuzz_trace", igemu::fuzzing::check_trace),
        ("fuzz_record", igemu::fuzzing::check_record),
        ("fuzz_run_file", igemu::fuzzing::check_run_file),
        ("fuzz_report", igemu::fuzzing::check_report),
    ];
    for (target, check) in targets {
        let dir = corpus.join(target);
        let mut inputs = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a corpus entry").path();
            let data = std::fs::read(&path).expect("a corpus file");
            let caught = std::panic::catch_unwind(|| check(&data));
            assert!(caught.is_ok(), "{target} fails on {}", path.display());
            inputs += 1;
        }
        assert!(inputs >= 3, "{target}: a corpus of {inputs} inputs");
    }
}

/// One cluster's Lublin99 local jobs over a day with `u_med` as given, at `seed`: each job's
/// arrival, VMs and duration.
fn lublin_day(
    u_med: &str,
    seed: u64,
) -> Vec<(igemu::time::EmuTime, u32, igemu::time::EmuDuration)> {
    let text = format!(
        "[[grid]]\nname = \"g\"\n[[grid.cluster]]\nname = \"c\"\n\
         hosts = {{ count = 16, cores = 4, memory_mb = 16384 }}\n\
         [[workload]]\nname = \"l\"\norigin = \"local\"\ngrid = \"g\"\ncluster = \"c\"\n\
         model = \"lublin99\"\nspan = \"1d\"\n[workload.lublin99]\nu_med = {u_med}\n"
    );
    let sets = igemu::topology::Overrides::sets(vec![igemu::topology::seed_override(seed)]);
    let topo = igemu::topology::load_str(&text, "lublin.toml", "lublin", None, &sets)
        .unwrap_or_else(|r| panic!("{r}"));
    (topo.requests.iter())
        .map(|r| (r.arrival, r.vms, r.duration))
        .collect()
}

#[test]
fn a_lublin_parameter_given_as_a_range_is_drawn_again_for_each_seed() {
    // Paper 004 §6.1 draws a cluster's medium job size (and arrival scale) per round.
    // A range of one value is that value, and a number draws nothing: the same jobs.
    assert_eq!(lublin_day("[4.5, 4.5]", 3), lublin_day("4.5", 3));
    assert_eq!(lublin_day("[2.0, 6.0]", 3), lublin_day("[2.0, 6.0]", 3));
    // Over seeds, the mean log2 job size moves with the draw: its spread across seeds is
    // far wider with u_med drawn from [2, 6] than with u_med fixed at 4.
    let spread = |u_med: &str| {
        let means: Vec<f64> = (1..=12)
            .map(|seed| {
                let jobs = lublin_day(u_med, seed);
                jobs.iter().map(|j| f64::from(j.1).log2()).sum::<f64>() / jobs.len() as f64
            })
            .collect();
        let m = means.iter().sum::<f64>() / means.len() as f64;
        (means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / means.len() as f64).sqrt()
    };
    let (drawn, fixed) = (spread("[2.0, 6.0]"), spread("4.0"));
    assert!(
        drawn > 2.0 * fixed,
        "spread of mean log2 size: drawn {drawn}, fixed {fixed}"
    );
}

#[test]
fn paper_004s_local_workloads_draw_lublin_parameters_from_section_6_1s_ranges() {
    // §6.1: each cluster's local jobs follow Lublin99 with the medium job size log2(m) - h,
    // h ~ U[1.5, 3.5], m the cluster's processors, and the arrival gamma's b ~ U[0.4871,
    // 0.55], drawn for each round: in the shipped scenarios, ranges the run draws from.
    for file in [
        "topologies/paper004-three-grids.toml",
        "topologies/paper004-two-grids.toml",
    ] {
        let text = std::fs::read_to_string(common::path(file)).expect("readable");
        let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut cores = std::collections::HashMap::new();
        for grid in doc["grid"].as_array().expect("grids") {
            for c in grid["cluster"].as_array().expect("clusters") {
                let hosts = &c["hosts"];
                let m = hosts["count"].as_integer().expect("count")
                    * hosts["cores"].as_integer().expect("cores");
                cores.insert(c["name"].as_str().expect("name").to_string(), m as f64);
            }
        }
        let pair = |v: &toml::Value| -> (f64, f64) {
            let a = v
                .as_array()
                .unwrap_or_else(|| panic!("{file}: {v} is not a range"));
            (
                a[0].as_float().expect("low"),
                a[1].as_float().expect("high"),
            )
        };
        let mut seen = 0;
        for w in doc["workload"].as_array().expect("workloads") {
            let Some(l) = w.get("lublin99") else { continue };
            let cluster = w["cluster"].as_str().expect("a local workload's cluster");
            let log2m = cores[cluster].log2();
            let (lo, hi) = pair(&l["u_med"]);
            assert!(
                (lo - (log2m - 3.5)).abs() < 1e-3 && (hi - (log2m - 1.5)).abs() < 1e-3,
                "{file}, {cluster}: u_med [{lo}, {hi}] for m = {}",
                cores[cluster]
            );
            assert!((l["u_hi"].as_float().expect("u_hi") - log2m).abs() < 0.01);
            assert_eq!(pair(&l["b_arr"]), (0.4871, 0.55), "{file}, {cluster}");
            seen += 1;
        }
        assert_eq!(seen, cores.len(), "{file}: one local workload per cluster");
    }
}
