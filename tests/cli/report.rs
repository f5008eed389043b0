//! `igemu report`: self-contained pages whose charts draw in a browser, and refusals of outputs
//! igemu never writes.

use super::*;

/// Headless Chromium when this machine has it: `IGEMU_CHROMIUM`, else `chromium` or
/// `chromium-browser` on the PATH (CI installs Debian's `chromium`).
pub(super) fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IGEMU_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Loads `page` in headless Chromium, saves a screenshot to `screenshot`, and returns the
/// `<body>` tag of the DOM after the page's load event (where the report's self-check writes
/// what it found) and Chromium's log.
pub(super) fn load_in_chromium(chrome: &Path, page: &Path, screenshot: &Path) -> (String, String) {
    let profile = tempfile::tempdir().expect("temporary directory");
    let url = format!("file://{}", page.display());
    let base = |extra: &[String]| {
        std::process::Command::new(chrome)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium starts")
    };
    let dom = base(&["--dump-dom".into()]);
    assert!(dom.status.success(), "chromium failed: {}", stderr(&dom));
    let dom_text = String::from_utf8_lossy(&dom.stdout).into_owned();
    let body = dom_text
        .find("<body")
        .and_then(|at| {
            dom_text[at..]
                .find('>')
                .map(|end| dom_text[at..=at + end].to_string())
        })
        .unwrap_or_default();
    let shot = base(&[
        "--window-size=1200,2400".into(),
        format!("--screenshot={}", screenshot.display()),
    ]);
    assert!(shot.status.success(), "chromium failed: {}", stderr(&shot));
    (body, stderr(&dom))
}

/// A report must open offline: nothing fetched at view time.
pub(super) fn assert_self_contained(html: &str) {
    for needle in ["<script src", "<link", "@import", "url(http", "src=\"http"] {
        assert!(!html.contains(needle), "the report loads `{needle}`");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(at, _)| &html[at..(at + 40).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "addresses in the report: {outside:?}");
}

/// Checks what the report's self-check wrote on `<body>`: every chart drew, `charts` of them,
/// and no script error; and that Chromium logged no uncaught error.
pub(super) fn assert_drew(body: &str, log: &str, charts: usize) {
    assert!(
        body.contains("data-checked=\"yes\""),
        "the page never loaded: {body}"
    );
    assert!(
        body.contains(&format!("data-charts=\"{charts}\"")),
        "expected {charts} charts: {body}"
    );
    assert!(
        body.contains("data-empty-charts=\"\""),
        "empty charts: {body}"
    );
    assert!(body.contains("data-errors=\"\""), "script errors: {body}");
    assert!(!log.contains("Uncaught"), "console errors:\n{log}");
    // Every in-page link (the navigation, the Gantt bars) has its target on the page.
    assert!(
        body.contains("data-broken-links=\"\"") && !body.contains("data-links=\"0\""),
        "links without a target: {body}"
    );
}

/// The `<body>` tag of the DOM of the page at `url` in headless Chromium, after its load
/// event (where the self-check writes what it found).
pub(super) fn body_at(chrome: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().expect("temporary directory");
    let dom = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .output()
        .expect("chromium starts");
    assert!(dom.status.success(), "chromium failed: {}", stderr(&dom));
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    let at = text.find("<body").expect("a body");
    text[at..at + text[at..].find('>').expect("its end") + 1].to_string()
}

/// The peering charts a report of a traced run of Grids that negotiated draws.
const PEERING_CHARTS: [&str; 4] = [
    "negotiations per grid",
    "money between grids",
    "offers over time",
    "prices over time",
];

#[test]
fn a_runs_report_is_one_self_contained_page_whose_charts_draw_in_a_browser() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("run");
    let o = igemu(&[
        "run",
        "topologies/peering-small.toml",
        "--trace",
        "--report",
        "--quiet",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html written");
    assert_self_contained(&html);
    // What a reader must find: provenance, a Gantt chart per cluster that ran a VM, three
    // utilisation charts per Grid, and the negotiation list from the trace.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary"))
            .expect("json");
    report_shows_every_clusters_hosts_and_the_provenance(&html, &summary);
    report_lists_every_negotiation_and_draws_peering(&html, &out);
    let clusters = summary["clusters"].as_object().expect("clusters").len();
    let grids = summary["grids"].as_object().expect("grids").len();
    let charts = clusters + 3 * grids + 4;
    assert_eq!(html.matches("<svg class=\"chart\"").count(), charts);
    let windowed = a_windowed_report_counts_the_window(dir.path(), &out, &summary);
    // The report is the same from `igemu report`, byte for byte.
    let again = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&page).expect("report"), html);
    each_preempted_vm_is_marked_and_one_grid_has_no_peering(dir.path());
    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    the_run_and_window_pages_draw_in_chromium(&chrome, &html, &page, &windowed, charts);
}

/// A Gantt chart per cluster, every host its row (idle or not), and the topology's hash.
fn report_shows_every_clusters_hosts_and_the_provenance(html: &str, summary: &serde_json::Value) {
    let clusters = summary["clusters"].as_object().expect("clusters");
    for (c, figures) in clusters {
        assert!(
            html.contains(&format!("data-chart=\"gantt {c}\"")),
            "no Gantt chart of {c}"
        );
        // Every host has its row, idle or not.
        let hosts = figures["hosts"].as_u64().expect("hosts");
        assert!(
            html.contains(&format!("{c} — {hosts} hosts (")),
            "{c}: not {hosts} hosts"
        );
    }
    let rows = html.matches(">host ").count() as u64;
    let all_hosts = summary["hosts"].as_u64().expect("hosts");
    assert!(
        rows > 0 && rows <= all_hosts,
        "{rows} host labels for {all_hosts} hosts"
    );
    assert!(html.contains("topology_hash") || html.contains("topology hash"));
    assert!(html.contains(
        summary["provenance"]["topology_hash"]
            .as_str()
            .expect("hash")
    ));
}

/// The report lists every negotiation of the trace in `out`, and draws peering: the counters
/// per Grid, the money between Grids, and (traced) the offers by outcome and the prices over
/// time, each axis with its unit.
fn report_lists_every_negotiation_and_draws_peering(html: &str, out: &Path) {
    let negotiations = igemu(&[
        "trace",
        out.join("trace.jsonl").to_str().expect("utf-8"),
        "--negotiations",
    ]);
    let offered = String::from_utf8_lossy(&negotiations.stdout)
        .lines()
        .count()
        - 1;
    assert!(offered > 0, "the topology negotiates");
    assert!(
        html.contains(&format!("{offered} offered request(s) in negotiations")),
        "the report lists every negotiation"
    );
    assert!(html.contains(&format!(
        "<h3>Negotiations ({offered} offers of a request)</h3>"
    )));
    for chart in PEERING_CHARTS {
        assert!(
            html.contains(&format!("data-chart=\"{chart}\"")),
            "no {chart} chart"
        );
    }
    assert!(html.contains(">price (currency units/core-s)"));
    assert!(html.contains("paid to peers (currency units)"));
    assert!(html.contains("<a href=\"#peering\">Peering</a>"));
}

/// A windowed report of the run in `out` counts the window in its headings, and draws the
/// window. Returns its page's path (in `dir`).
fn a_windowed_report_counts_the_window(
    dir: &Path,
    out: &Path,
    summary: &serde_json::Value,
) -> PathBuf {
    let windowed = dir.join("window.html");
    let o = igemu(&[
        "report",
        out.to_str().expect("utf-8"),
        "--window",
        "1h..3h",
        "--out",
        windowed.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let window = std::fs::read_to_string(&windowed).expect("written");
    let redirected = summary["requests"]["total"].as_u64().expect("total");
    assert!(window.contains(&format!(
        " submitted in the window, of {redirected} in the run)</h2>"
    )));
    assert!(window.contains("Redirected requests (") && window.contains("in the window, of "));
    assert!(window.contains("offers of a request in the window, of "));
    assert!(window.contains("hosts; in the window: "));
    assert!(window.contains("Key figures (the whole run)"));
    windowed
}

/// Every VM a preemption hit is marked once on its host (paper 001's testbed suspends); with
/// one Grid, no peering section, nor its link (it was an all-zero table).
fn each_preempted_vm_is_marked_and_one_grid_has_no_peering(dir: &Path) {
    let preempting = dir.join("p001");
    let o = igemu(&[
        "run",
        "topologies/paper001-testbed.toml",
        "--report",
        "--quiet",
        "--out",
        preempting.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p001: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(preempting.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let marked = std::fs::read_to_string(preempting.join("report.html"))
        .expect("report")
        .matches("class=\"mark\"")
        .count();
    assert!(marked > 0);
    assert_eq!(
        marked as u64,
        p001["vm_preemptions"].as_u64().expect("count")
    );
    let p001_page = std::fs::read_to_string(preempting.join("report.html")).expect("report");
    assert!(!p001_page.contains("id=\"peering\"") && !p001_page.contains("#peering"));
}

/// The run's page (`html`, at `page`) and its windowed page draw all their `charts` in
/// headless Chromium, the peering charts among them; a Gantt bar's link, followed, lands on
/// its lease's table of events; the screenshot is not blank.
fn the_run_and_window_pages_draw_in_chromium(
    chrome: &Path,
    html: &str,
    page: &Path,
    windowed: &Path,
    charts: usize,
) {
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-run.png");
    let (body, log) = load_in_chromium(chrome, page, &screenshot);
    assert_drew(&body, &log, charts);
    let drawn = body
        .split("data-drawn=\"")
        .nth(1)
        .and_then(|d| d.split('"').next())
        .unwrap_or_default();
    for chart in PEERING_CHARTS {
        assert!(
            drawn.split('|').any(|c| c == chart),
            "{chart} did not draw: {drawn}"
        );
    }
    // The windowed page draws too (its charts over the window).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-window.png");
    let (body, log) = load_in_chromium(chrome, windowed, &shot);
    assert_drew(&body, &log, charts);
    // A Gantt bar's link, followed, lands on its lease's table of events.
    let at = html
        .find("<a href=\"#lease-")
        .expect("a bar linked to its lease's events");
    let link = &html[at + "<a href=\"#".len()..];
    let link = &link[..link.find('"').expect("a quote")];
    let landed = body_at(chrome, &format!("file://{}#{link}", page.display()));
    assert!(
        landed.contains(&format!("data-target=\"{link} h4\"")),
        "#{link} leads nowhere: {landed}"
    );
    let png = std::fs::read(&screenshot).expect("screenshot saved");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a blank screenshot"
    );
    eprintln!("screenshot: {}", screenshot.display());
}

#[test]
fn a_sweeps_report_plots_each_metric_against_the_varied_key_with_intervals() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let sweep = dir.path().join("s.toml");
    let topo = common::path("topologies/peering-small.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 3\nmetrics = [\"makespan_s\", \"awrt_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\", \"bcf\"]\n\"workload.0.das2.arrival_scale\" = [40, 80]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let out = dir.path().join("sweep");
    let o = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The terminal gets the points as a table: a header, a row per point, two lines after.
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    let table: Vec<&str> = printed.lines().skip(1).collect();
    assert_eq!(table.len(), 1 + 4 + 2, "{printed}");
    assert!(
        table[0].contains("dispatch") && table[0].contains("arrival_scale"),
        "{printed}"
    );
    assert!(table[0].contains("makespan_s") && table[0].contains("awrt_s"));
    assert!(table.iter().all(|l| l.chars().count() <= 100), "{printed}");
    assert!(table[1].contains(" ± "), "{printed}");
    let o = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html written");
    assert_self_contained(&html);
    // One chart per metric, the numeric key on the x axis and one line per policy, a point
    // per (policy, value) with its interval.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 2);
    // The arrival scale is drawn as the rate it gives (the topology's shape known), named
    // with its unit; the raw key is the label's tooltip, and the y axes have units.
    assert!(html.contains(
        "Metrics against arrival rate of external requests of workload busy-users (requests/h)"
    ));
    assert!(html.contains("<title>workload.0.das2.arrival_scale: the Weibull scale"));
    assert!(html.contains(">makespan (d)</text>") || html.contains(">makespan (h)</text>"));
    assert_eq!(html.matches("<g class=\"point\">").count(), 2 * 2 * 2);
    assert!(html.contains(">dispatch: rr</text>") && html.contains(">dispatch: bcf</text>"));
    assert!(html.contains("<title>igg.dispatch=rr</title>"));
    // The table behind it is wide: a row per point, a column per metric.
    let points = std::fs::read_to_string(out.join("points.csv")).expect("points");
    assert_eq!(points.lines().count() - 1, 8);
    let table = &html[html.find("id=\"table\"").expect("table")..];
    let table = &table[..table.find("</table>").expect("end")];
    assert_eq!(table.matches("<tr>").count(), 1 + 4);
    assert!(table.contains("<th>makespan_s</th><th>awrt_s</th>"));
    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sweep.png");
    let (body, log) = load_in_chromium(&chrome, &page, &screenshot);
    assert_drew(&body, &log, 2);
}

#[test]
fn reporting_a_directory_with_no_outputs_or_bad_ones_exits_2() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("neither a run's outputs"),
        "{}",
        stderr(&o)
    );
    let o = igemu(&["report", "no/such/dir"]);
    assert_eq!(o.status.code(), Some(2));
    // A malformed intervals.csv is named with its line, and no report is left behind.
    let summary = run_summary(0.0, &[("g/c", 1)], &[]);
    std::fs::write(dir.path().join("summary.json"), &summary).expect("written");
    std::fs::write(
        dir.path().join("intervals.csv"),
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,0,cancellable,running,5,x\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("intervals.csv:2"), "{}", stderr(&o));
    assert!(!dir.path().join("report.html").exists());
    // Negative or infinite times are refused, not drawn.
    std::fs::write(
        dir.path().join("intervals.csv"),
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,4294967295,cancellable,running,5,inf\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("finite seconds"), "{}", stderr(&o));
    // And times past emulated time's end, or a span ending before it starts: no run's, and
    // drawn as nothing (the chart's scale ran to 1e300 s) without a word.
    for (row, says) in [
        ("5,1e300", "finite seconds from 0 to"),
        ("5,1", "ends (end_s 1) before it starts (start_s 5)"),
    ] {
        std::fs::write(
            dir.path().join("intervals.csv"),
            format!("request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,0,cancellable,running,{row}\n"),
        )
        .expect("written");
        let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("intervals.csv:2"), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    // And a summary whose end is no run's (the page said "from 0 s to 1157...0 d").
    std::fs::write(
        dir.path().join("summary.json"),
        run_summary(1e300, &[("g/c", 1)], &[]),
    )
    .expect("written");
    std::fs::remove_file(dir.path().join("intervals.csv")).expect("removed");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("summary.json: error: `emulated_end_s` is 1e300"),
        "{}",
        stderr(&o)
    );
    std::fs::write(dir.path().join("summary.json"), &summary).expect("written");
    std::fs::write(dir.path().join("intervals.csv"), "").expect("written");
    // So are amounts that are not numbers (they would draw as nothing, or break the SVG).
    std::fs::remove_file(dir.path().join("intervals.csv")).expect("removed");
    std::fs::write(
        dir.path().join("utilization.csv"),
        "time_s,grid,cluster,cores_used,cores_total,mem_mb_used,mem_mb_total,queued\n0,g,c,5,8,1,2,NaN\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("utilization.csv:2"), "{}", stderr(&o));
}

/// The run of the embedded quickstart, written into `dir`.
pub(super) fn quickstart_run(dir: &Path) -> PathBuf {
    let out = dir.join("run");
    let o = igemu(&["run", "--out", out.to_str().expect("utf-8"), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Replaces the first `from` in line `line` (1-based) of the file at `path` by `to`.
pub(super) fn edit_line(path: &Path, line: usize, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("readable");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert!(
        lines[line - 1].contains(from),
        "{}: {}",
        path.display(),
        lines[line - 1]
    );
    lines[line - 1] = lines[line - 1].replacen(from, to, 1);
    std::fs::write(path, lines.join("\n") + "\n").expect("written");
}

/// `igemu report` on `dir` must exit 2 with `expect`, leaving no page behind.
pub(super) fn report_refused(dir: &Path, expect: &[&str]) {
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for e in expect {
        assert!(err.contains(e), "expected `{e}` in: {err}");
    }
    assert!(!dir.join("report.html").exists());
}

/// A `summary.json` that is not a run's (empty, a key missing or of the wrong type) is
/// refused naming the key, what was expected and the fix: it drew "0 of 0 requests
/// completed" beside a table of requests.
#[test]
fn a_summary_missing_a_key_or_holding_the_wrong_type_is_refused_with_the_key_and_the_fix() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = quickstart_run(tmp.path());
    let summary = run.join("summary.json");
    let whole = std::fs::read_to_string(&summary).expect("summary");
    let original: serde_json::Value = serde_json::from_str(&whole).expect("json");
    let fix = "re-run it (same topology and seed) to rewrite the run's directory";
    std::fs::write(&summary, "{}").expect("written");
    report_refused(
        &run,
        &[
            "summary.json: error: `topology` is missing; the report expects a string there",
            fix,
        ],
    );
    let edits: [(&str, serde_json::Value, &str); 4] = [
        (
            "/requests/total",
            "10".into(),
            "`requests.total` is \"10\" (a string); the report expects a whole number ≥ 0 there",
        ),
        (
            "/requests/local/completed",
            serde_json::Value::Null,
            "`requests.local.completed` is null (null); the report expects a whole number ≥ 0",
        ),
        (
            "/utilization_pct",
            "high".into(),
            "`utilization_pct` is \"high\" (a string); the report expects a finite number there",
        ),
        (
            "/clusters/alpha~1a1/hosts",
            (-4).into(),
            "`clusters.alpha/a1.hosts` is -4 (a number); the report expects a whole number ≥ 0",
        ),
    ];
    for (pointer, value, says) in edits {
        let mut edited = original.clone();
        *edited.pointer_mut(pointer).expect(pointer) = value;
        std::fs::write(&summary, edited.to_string()).expect("written");
        report_refused(&run, &["summary.json: error: ", says, fix]);
    }
    // A key the page reads, gone; and counts that do not add up to the total.
    let mut edited = original.clone();
    edited["requests"]
        .as_object_mut()
        .expect("requests")
        .remove("external");
    std::fs::write(&summary, edited.to_string()).expect("written");
    report_refused(
        &run,
        &["`requests.external` is missing; the report expects an object"],
    );
    let mut edited = original.clone();
    edited["requests"]["total"] = 11.into();
    std::fs::write(&summary, edited.to_string()).expect("written");
    report_refused(
        &run,
        &["`requests.total` is 11, but `requests.local` and `requests.external` count 10 requests"],
    );
    std::fs::write(&summary, whole).expect("written");
    assert!(igemu(&["report", run.to_str().expect("utf-8")])
        .status
        .success());
}

/// Files of an output folder as they were, to restore after each edit.
struct KeptFiles {
    dir: PathBuf,
    files: Vec<(String, String)>,
}

impl KeptFiles {
    /// Keeps the files `names` of folder `dir`.
    fn keep(dir: &Path, names: &[&str]) -> Self {
        let files = names
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    std::fs::read_to_string(dir.join(n)).expect("readable"),
                )
            })
            .collect();
        KeptFiles {
            dir: dir.to_path_buf(),
            files,
        }
    }

    /// The kept text of file `name`.
    fn text(&self, name: &str) -> &str {
        let kept = self.files.iter().find(|(n, _)| n == name);
        &kept.expect("a kept file").1
    }

    /// Writes every kept file back as it was.
    fn restore(&self) {
        for (name, text) in &self.files {
            std::fs::write(self.dir.join(name), text).expect("written");
        }
    }
}

/// An edit of a run's file: in line `line` of file `name`, `from` becomes `to`, and the
/// report is refused saying each of the last strings.
type Edit = (
    &'static str,
    usize,
    &'static str,
    &'static str,
    &'static [&'static str],
);

/// Edits of a quickstart run's CSVs that give a value igemu never writes, a row of another
/// run, rows out of time order, or counts that disagree with `summary.json`.
fn run_file_edits() -> [Edit; 7] {
    [
        (
            "requests.csv",
            2,
            ",completed,",
            ",rejected,",
            &[
                "requests.csv: error: it holds 6 external requests completed, but",
                "summary.json's `requests.external.completed` is 7",
            ],
        ),
        (
            "requests.csv",
            3,
            ",completed,",
            ",done,",
            &["requests.csv:3: error: `state` is `done`; igemu writes one of completed, rejected, cancelled, unfinished"],
        ),
        (
            "intervals.csv",
            2,
            "suspendable",
            "spot",
            &["intervals.csv:2: error: `lease_type` is `spot`; igemu writes one of cancellable"],
        ),
        (
            "intervals.csv",
            3,
            "alpha,a1,0,",
            "alpha,a9,0,",
            &["intervals.csv:3: error: cluster `alpha/a9` is not one of summary.json's `clusters`"],
        ),
        (
            "intervals.csv",
            4,
            "alpha,a1,0,",
            "alpha,a1,4,",
            &["intervals.csv:4: error: host 4 of alpha/a1, which has 4 hosts in summary.json"],
        ),
        (
            "intervals.csv",
            2,
            ",300,",
            ",soon,",
            &["intervals.csv:2: error: `start_s` is `soon`, not what igemu writes there"],
        ),
        (
            "utilization.csv",
            4,
            "600,alpha,a1,",
            "100,alpha,a1,",
            &["utilization.csv:4: error: `time_s` 100 comes after 300 for alpha/a1"],
        ),
    ]
}

/// A run's CSV files with a value igemu never writes (a state, a lease type), a row of
/// another run (a cluster or host its summary does not have), rows out of time order, or
/// counts that disagree with `summary.json` are refused at file:line, with both numbers.
#[test]
fn a_runs_files_that_disagree_or_hold_values_igemu_never_writes_are_refused_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = quickstart_run(tmp.path());
    let file = |name: &str| run.join(name);
    let keep = KeptFiles::keep(&run, &["requests.csv", "intervals.csv", "utilization.csv"]);
    // The page drew "7 of 10 requests completed" from the summary beside a table of 9.
    let cut: Vec<&str> = keep.text("requests.csv").lines().collect();
    std::fs::write(file("requests.csv"), cut[..cut.len() - 1].join("\n") + "\n").expect("cut");
    report_refused(
        &run,
        &[
            "requests.csv: error: it holds 9 requests, but",
            "summary.json's `requests.total` is 10; the two files are not of one run",
        ],
    );
    keep.restore();
    for (name, line, from, to, says) in run_file_edits() {
        edit_line(&file(name), line, from, to);
        report_refused(&run, says);
        keep.restore();
    }
    assert!(igemu(&["report", run.to_str().expect("utf-8")])
        .status
        .success());
}

/// The cells of line `line` (from 1) of CSV `text`.
fn csv_row(text: &str, line: usize) -> Vec<String> {
    text.lines()
        .nth(line - 1)
        .expect("a row")
        .split(',')
        .map(String::from)
        .collect()
}

/// A sweep's files with a NaN where a number must be, text in a numeric cell, a run twice
/// or a seed twice at a point, `n` that do not add up to the runs, or a `sweep.json` that is
/// not JSON are refused at file:line (the page drew them as nothing, or not at all).
#[test]
fn a_sweeps_files_that_disagree_or_hold_nan_are_refused_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(tmp.path(), "2h");
    let out = tmp.path().join("out");
    let o = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = |name: &str| out.join(name);
    let names = ["points.csv", "runs.csv", "paired.csv", "sweep.json"];
    let keep = KeptFiles::keep(&out, &names);
    a_sweeps_points_with_nan_text_or_wrong_n_are_refused(&out, &keep);
    a_sweeps_runs_twice_or_missing_are_refused(&out, &keep);
    let diff = csv_row(keep.text("paired.csv"), 2)[6].clone();
    edit_line(&file("paired.csv"), 2, &diff, "x");
    report_refused(
        &out,
        &["paired.csv:2: error: `mean_diff` is `x`, not a number"],
    );
    keep.restore();
    std::fs::write(file("sweep.json"), "{").expect("written");
    report_refused(&out, &["sweep.json:1: error: not JSON"]);
    keep.restore();
    let o = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// points.csv (set:igg.dispatch,metric,n,mean,ci95_low,ci95_high) of the sweep in `out`
/// with a NaN mean, text for `n`, or `n` that do not add up to the runs: refused.
fn a_sweeps_points_with_nan_text_or_wrong_n_are_refused(out: &Path, keep: &KeptFiles) {
    let file = |name: &str| out.join(name);
    let mean = csv_row(keep.text("points.csv"), 3)[3].clone();
    edit_line(&file("points.csv"), 3, &format!(",{mean},"), ",NaN,");
    report_refused(out, &["points.csv:3: error: `mean` is NaN, but `n` is 2: over 1 run or more it is a finite number"]);
    keep.restore();
    edit_line(&file("points.csv"), 2, ",2,", ",two,");
    report_refused(
        out,
        &["points.csv:2: error: `n` is `two`; it counts the runs behind the point"],
    );
    keep.restore();
    edit_line(&file("points.csv"), 2, ",2,", ",3,");
    report_refused(
        out,
        &[
            "points.csv: error: the `n` of metric `utilization_pct` add up to 5, but",
            "runs.csv holds 4 runs that measured it",
        ],
    );
    keep.restore();
}

/// runs.csv (run,seed,set:igg.dispatch,utilization_pct,makespan_s,error) of the sweep in
/// `out` with a run twice, a seed twice at a point, or a run missing: refused.
fn a_sweeps_runs_twice_or_missing_are_refused(out: &Path, keep: &KeptFiles) {
    let file = |name: &str| out.join(name);
    let runs = keep.text("runs.csv");
    let last = runs.lines().last().expect("a run").to_string();
    std::fs::write(file("runs.csv"), format!("{runs}{last}\n")).expect("written");
    report_refused(out, &["runs.csv:6: error: run 3 again (also at line 5)"]);
    let again = last.replacen("3,", "9,", 1);
    std::fs::write(file("runs.csv"), format!("{runs}{again}\n")).expect("written");
    report_refused(out, &["runs.csv:6: error: run 9 has the point (igg.dispatch=bcf) and seed 2 of the run at line 5"]);
    let cut: Vec<&str> = runs.lines().collect();
    std::fs::write(file("runs.csv"), cut[..cut.len() - 1].join("\n") + "\n").expect("cut");
    report_refused(
        out,
        &["add up to 4, but", "runs.csv holds 3 runs that measured it"],
    );
    keep.restore();
}

/// A run of 2.1 M spans (more than a page keeps one by one) on 4 000 busy hosts: the page
/// stays under its cap, draws that cluster merged per pixel and says so, and still draws a
/// small cluster span by span. Before, every span was kept (19 M of them took 2 GiB and
/// more) and this page took about a bar per pixel and host.
#[test]
fn a_run_with_millions_of_spans_gives_a_page_under_the_cap_that_says_it_merged() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let summary = run_summary(60_000.0, &[("g/big", 4_000), ("g/small", 8)], &[]);
    std::fs::write(dir.join("summary.json"), summary).expect("written");
    let file = std::fs::File::create(dir.join("intervals.csv")).expect("created");
    let mut w = std::io::BufWriter::new(file);
    writeln!(
        w,
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s"
    )
    .expect("written");
    let leases = [
        "cancellable",
        "suspendable",
        "migratable",
        "non-preemptable",
    ];
    for i in 0..2_100_000u32 {
        // Host by host, VMs of 50 s with gaps between them, lease types in turn.
        let (host, slot) = (i % 4_000, i / 4_000);
        let start = slot * 100 + host % 7;
        let lease = leases[(i % 4) as usize];
        writeln!(
            w,
            "r{i},0,g,big,{host},{lease},running,{start},{}",
            start + 50
        )
        .expect("written");
    }
    for i in 0..1_000u32 {
        let start = i * 50;
        writeln!(
            w,
            "s{i},0,g,small,{},suspendable,running,{start},{}",
            i % 8,
            start + 40
        )
        .expect("written");
    }
    w.flush().expect("flushed");
    drop(w);
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report");
    assert!(
        page.len() <= igemu::report::PAGE_CAP,
        "{} bytes",
        page.len()
    );
    assert!(
        page.contains("g/big — 4000 hosts (4000 held a VM), 2100000 VM spans, merged per pixel")
    );
    assert!(page.contains("Merged per pixel: the run has more spans than a page draws one by one (2000000 in all). Each row stands for 20 hosts"));
    assert!(page.contains("g/small — 8 hosts (8 held a VM), 1000 VM spans, 0 VMs preempted"));
    assert_eq!(page.matches("<svg class=\"chart\"").count(), 2);
}

/// A sweep of 200 000 points (5 000 values × 20 policies × 2 metrics): the page stays under
/// its cap, merges each line's points within a pixel and says so, and its table shows its
/// first rows and says where the rest are. Before, the page took 44 MB.
#[test]
fn a_sweep_of_200k_points_gives_a_page_under_the_cap_that_says_it_merged() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let file = std::fs::File::create(dir.join("points.csv")).expect("created");
    let mut w = std::io::BufWriter::new(file);
    writeln!(w, "set:x,set:policy,metric,n,mean,ci95_low,ci95_high").expect("written");
    for x in 0..5_000u32 {
        for p in 0..20u32 {
            for (m, metric) in ["awrt_s", "utilization_pct"].iter().enumerate() {
                let mean = f64::from(x * (p + 1)) / 7.0 + m as f64;
                writeln!(
                    w,
                    "{x},p{p},{metric},3,{mean},{},{}",
                    mean - 1.5,
                    mean + 1.5
                )
                .expect("written");
            }
        }
    }
    w.flush().expect("flushed");
    drop(w);
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report");
    assert!(
        page.len() <= igemu::report::PAGE_CAP,
        "{} bytes",
        page.len()
    );
    assert_eq!(page.matches("<svg class=\"chart\"").count(), 2);
    assert!(page.contains(
        "100000 points lie within a pixel of another of their line and are drawn merged"
    ));
    // A row per point: 100 000 of them.
    assert!(page.contains("300 of 100000 rows shown; the whole table is in points.csv."));
    // A point per pixel column and line at most.
    assert!(page.matches("<g class=\"point\">").count() <= 2 * 20 * 988);
}
