//! Realtime runs: the speed-up, `--speedup auto` and `--max-wall`, timer lateness, and the live
//! view.

use super::*;

#[test]
fn speedup_in_virtual_mode_is_an_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = igemu(&["run", "--speedup", "100", "--out", &tmp_str(&tmp, "o")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--speedup applies to realtime mode only"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
    // A speed-up that is no finite number in range is refused as a flag, saying so (NaN was
    // passed on as an override that is not TOML: "must be a number, found a string").
    for bad in ["nan", "inf", "0", "1e10"] {
        for cmd in [
            &["run", "--mode", "realtime"][..],
            &["stress", "topologies/quickstart.toml", "--mode", "realtime"],
        ] {
            let o = igemu(&[cmd, &["--speedup", bad, "--out", &tmp_str(&tmp, "o")]].concat());
            assert_eq!(o.status.code(), Some(2), "{cmd:?} {bad}");
            let err = stderr(&o);
            assert!(
                err.contains(&format!("`{bad}` is not in 1e-3 ..= 1e9")),
                "{err}"
            );
        }
    }
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn speedup_auto_measures_a_virtual_run_and_runs_at_what_it_chose() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Two emulated minutes: on a machine that wakes late (a virtual machine's vCPU: ms-long
    // stops), auto chooses x100 or less, and the whole quickstart would take minutes.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "auto",
        "--set",
        "emulation.end=120s",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("speed-up auto: x"))
        .unwrap_or_else(|| panic!("no choice printed: {stdout}"));
    let chosen: f64 = line
        .strip_prefix("speed-up auto: x")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no speed-up in {line}"));
    // It says how long the run will take, before it runs.
    assert!(
        line.contains(" chosen: 2.0 emulated minutes in ~") && line.contains(" of wall time"),
        "{line}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("o/summary.json")).expect("written"),
    )
    .expect("JSON");
    let ran = summary["speedup"].as_f64().expect("a realtime speed-up");
    assert!((ran - chosen).abs() <= 0.5, "printed x{chosen}, ran x{ran}");
    // summary.json records the choice and its prediction: the run's emulated end (known
    // exactly, the realtime run repeating the virtual one) over the speed-up.
    let auto = &summary["speedup_auto"];
    assert_eq!(auto["speedup"].as_f64(), Some(ran), "{auto}");
    assert_eq!(auto["emulated_end_s"].as_f64(), Some(120.0), "{auto}");
    assert_eq!(auto["end_exact"].as_bool(), Some(true), "{auto}");
    assert_eq!(auto["max_wall_s"].as_f64(), Some(600.0), "{auto}");
    let wall = auto["predicted_wall_s"].as_f64().expect("a prediction");
    assert!((wall - 120.0 / ran).abs() < 1e-9, "{auto}");
    assert!(
        auto["predicted_p99_ms"]
            .as_f64()
            .is_some_and(|p| p <= 500.0),
        "{auto}"
    );
    // The provenance names the speed-up that ran, not a placeholder.
    let overrides = summary["provenance"]["overrides"].to_string();
    assert!(
        // (serde_json's float parsing may differ in the last digit: compare the whole part.)
        overrides.contains(&format!("emulation.speedup={}.", ran.trunc() as u64))
            && !overrides.contains("speedup=1.0\""),
        "{overrides}"
    );
    // Auto is a realtime speed-up too, and other words are no speed-up.
    let virt = igemu(&["run", "--speedup", "auto", "--out", &tmp_str(&tmp, "v")]);
    assert_eq!(virt.status.code(), Some(2), "{}", stderr(&virt));
    let word = igemu(&["run", "--mode", "realtime", "--speedup", "fast"]);
    assert_eq!(word.status.code(), Some(2));
    assert!(
        stderr(&word).contains("neither a number nor `auto`"),
        "{}",
        stderr(&word)
    );
}

#[test]
fn speedup_auto_refuses_a_run_longer_than_max_wall_and_names_its_prediction() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The quickstart's 4.1 emulated hours: auto never chooses more than x100 000 (a wake of
    // at least 5 us must stay under 0.5 s of lateness), so the run takes at least 0.149 s.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "auto",
        "--max-wall",
        "100ms",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--speedup auto: x")
            && err.contains("the run's 4.1 emulated hours take ~")
            && err.contains("of wall time, more than --max-wall 0.100s allows")
            && err.contains("--max-wall")
            && err.contains("drop --mode realtime: the same results")
            && err.contains("--set emulation.end="),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn max_wall_takes_a_wall_time_above_zero_and_only_with_speedup_auto() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let o = tmp_str(&tmp, "o");
    for (bad, says) in [
        ("0s", "no time at all"),
        ("soon", "is not a duration"),
        ("-5m", "is not a duration"),
        ("10 parsecs", "unknown time unit"),
        ("", "empty duration"),
    ] {
        let flag = format!("--max-wall={bad}");
        let out = igemu(&[
            "run",
            "--mode",
            "realtime",
            "--speedup",
            "auto",
            &flag,
            "--out",
            &o,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&out).contains(says), "{bad:?}: {}", stderr(&out));
    }
    let fixed = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "3600",
        "--max-wall",
        "10m",
        "--out",
        &o,
    ]);
    assert_eq!(fixed.status.code(), Some(2));
    assert!(
        stderr(&fixed).contains("--max-wall bounds the wall time --speedup auto may choose"),
        "{}",
        stderr(&fixed)
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn a_realtime_run_says_how_long_it_will_take_before_it_starts() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Its end known from a virtual run of the same topology (the realtime run repeats it).
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e6",
        "--out",
        &tmp_str(&tmp, "a"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("realtime at x1000000: 4.1 emulated hours in ~0.015s of wall time (the end from a virtual run of the same topology, "),
        "{stdout}"
    );
    // A fixed end needs no virtual run.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e6",
        "--set",
        "emulation.end=2h",
        "--out",
        &tmp_str(&tmp, "b"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("realtime at x1000000: 2.0 emulated hours (the topology's end) in ~0.007s of wall time\n"),
        "{stdout}"
    );
}

#[test]
fn a_realtime_run_too_fast_for_its_timers_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e9",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("o/summary.json")).expect("written"),
    )
    .expect("JSON");
    assert_eq!(summary["speedup_sustainable"], false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("speed-up: too fast: p99 timer lateness")
            && stdout.contains("try a lower --speedup"),
        "{stdout}"
    );
}

#[test]
fn the_lateness_verdict_has_its_threshold_at_one_emulated_second() {
    let l = |p99: f64| igemu::time::Lateness {
        p50: 0.0,
        p99,
        max: p99,
        samples: 10,
    };
    assert_eq!(igemu::lateness_verdict(&l(430.0)), "sustainable");
    assert_eq!(
        igemu::lateness_verdict(&l(2500.0)),
        "too fast: p99 timer lateness 2.500 s, over 1 s: this machine did not keep the pace — try a lower --speedup"
    );
}

/// `GET path` from a server at `addr`; the whole response.
pub(super) fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("the live view listens");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("request sent");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The JSON body of an HTTP response.
pub(super) fn json_body(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn the_live_view_shows_a_realtime_run_as_it_goes_and_stops_with_it() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("live");
    let (mut child, addr) = fast_live_run(&out);
    // A browser, meanwhile, for as long as the run lasts.
    let browser = chromium().map(|chrome| browser_following(chrome, &addr));
    let page = http_get(&addr, "/");
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("EventSource(\"/events\")"));
    frames_change_while_the_run_proceeds(&addr);
    let last = the_event_stream_ends_with_a_done_frame(&addr);
    let status = child.wait().expect("igemu ends");
    assert!(status.success(), "{status:?}");
    // Done with the run: nothing listens any more.
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still serving"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary"))
            .expect("json");
    assert_eq!(
        last["messages"], summary["messages"],
        "the last frame is the run's end"
    );

    let Some(browser) = browser else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    the_browser_followed_the_run(browser.join().expect("browser thread"));
}

/// A realtime run of the small peering topology (about 5 s of wall time) serving its live
/// view on a free loopback port, into `out`: the child and the address it serves at.
fn fast_live_run(out: &Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["run", "topologies/peering-small.toml", "--mode", "realtime"])
        .args([
            "--speedup",
            "100000",
            "--serve",
            "127.0.0.1:0",
            "--quiet",
            "--out",
        ])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .strip_prefix("live view: http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address: {first}"))
        .to_string();
    (child, addr)
}

/// Headless Chromium `chrome` on the live view at `addr`, in a thread: its output once the
/// page's event stream closes.
fn browser_following(chrome: PathBuf, addr: &str) -> std::thread::JoinHandle<std::process::Output> {
    let url = format!("http://{addr}/");
    std::thread::spawn(move || {
        let profile = tempfile::tempdir().expect("temporary directory");
        std::process::Command::new(chrome)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--disable-background-networking",
                "--disable-component-update",
            ])
            .args(["--disable-sync", "--enable-logging=stderr"])
            // Waits while the page's event stream is open: until the run ends.
            .args(["--virtual-time-budget=3000", "--dump-dom"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(url)
            .output()
            .expect("chromium starts")
    })
}

/// Values change while the run proceeds (the first frame comes when it starts).
fn frames_change_while_the_run_proceeds(addr: &str) {
    let mut a = serde_json::Value::Null;
    for _ in 0..50 {
        let r = http_get(addr, "/frame");
        if !r.ends_with("\r\n\r\n") {
            a = json_body(&r);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    let b = json_body(&http_get(addr, "/frame"));
    assert!(
        b["t_s"].as_f64() > a["t_s"].as_f64() && b["messages"].as_u64() > a["messages"].as_u64(),
        "{a}\n{b}"
    );
    assert_eq!(b["clusters"].as_array().map(Vec::len), Some(4), "{b}");
    assert!(!b["recent"].as_array().expect("recent").is_empty(), "{b}");
}

/// The event stream: frames at least once a second, the last one (returned) saying the run
/// is done.
fn the_event_stream_ends_with_a_done_frame(addr: &str) -> serde_json::Value {
    let stream = http_get(addr, "/events");
    let frames: Vec<serde_json::Value> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: {\"topology\""))
        .map(|l| serde_json::from_str(&format!("{{\"topology\"{l}")).expect("a frame"))
        .collect();
    assert!(frames.len() >= 3, "{} frames", frames.len());
    let last = frames.last().expect("frames").clone();
    assert_eq!(last["done"], true, "{last}");
    assert!(stream.contains("event: end"));
    last
}

/// The browser's page (`shown`, its dumped DOM) followed the run to its end, its values
/// changing, with no script or console errors, and drew the clusters.
fn the_browser_followed_the_run(shown: std::process::Output) {
    assert!(
        shown.status.success(),
        "chromium failed: {}",
        stderr(&shown)
    );
    let dom = String::from_utf8_lossy(&shown.stdout);
    let body = dom
        .find("<body")
        .and_then(|at| {
            dom[at..]
                .find('>')
                .map(|end| dom[at..=at + end].to_string())
        })
        .unwrap_or_default();
    let attr = |name: &str| -> u64 {
        body.split(&format!("data-{name}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert!(
        body.contains("data-state=\"ended\""),
        "the page did not follow the run: {body}"
    );
    assert!(
        attr("frames") >= 3 && attr("times") >= 3,
        "values did not change: {body}"
    );
    assert!(body.contains("data-errors=\"0\""), "script errors: {body}");
    assert!(
        !stderr(&shown).contains("Uncaught"),
        "console errors:\n{}",
        stderr(&shown)
    );
    assert!(dom.contains("busy/b1"), "no clusters drawn");
}

/// A realtime run of the small peering topology serving its live view (`--serve ADDR` and
/// `extra`), started in the background: the child and the address it says it serves at.
pub(super) fn live_run(
    serve: &str,
    extra: &[&str],
    out: &Path,
) -> (std::process::Child, Option<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["run", "topologies/peering-small.toml", "--mode", "realtime"])
        // About 25 s of wall time: these tests end it sooner.
        .args(["--speedup", "20000", "--quiet", "--serve", serve])
        .args(extra)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .strip_prefix("live view: http://")
        .and_then(|a| a.strip_suffix('/'))
        .map(str::to_string);
    (child, addr)
}

/// Ends a child this test started and returns its standard error.
pub(super) fn end(mut child: std::process::Child) -> String {
    use std::io::Read;
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// `--serve` on an address that is not loopback is refused (exit 2, nothing written) unless
/// `--serve-public` says so; then it serves, with a warning that other machines can see it.
#[test]
fn the_live_view_listens_beyond_loopback_only_when_told_to_and_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("o");
    let out_s = out.to_str().expect("utf-8 path");
    for addr in ["0.0.0.0:0", "[::]:0", "0:0"] {
        let ran = refused(
            &[
                "run",
                "topologies/peering-small.toml",
                "--mode",
                "realtime",
                "--speedup",
                "1000",
                "--quiet",
                "--serve",
                addr,
                "--out",
                out_s,
            ],
            "--serve-public",
        );
        assert!(
            stderr(&ran).contains("not a loopback address"),
            "{addr}: {}",
            stderr(&ran)
        );
        assert!(!out.exists(), "{addr}: outputs written");
    }
    // The flag alone means nothing.
    let ran = igemu(&["run", "--serve-public", "--out", out_s]);
    assert_eq!(ran.status.code(), Some(2), "{}", stderr(&ran));
    assert!(!out.exists());
    // Told to: it listens on every interface (port 0: a free one), and warns.
    let (child, addr) = live_run("0.0.0.0:0", &["--serve-public"], &out);
    let port = addr
        .as_deref()
        .and_then(|a| a.strip_prefix("0.0.0.0:"))
        .map(str::to_string);
    // Reached here through loopback only.
    let page = port
        .as_ref()
        .map(|p| http_get(&format!("127.0.0.1:{p}"), "/"))
        .unwrap_or_default();
    let err = end(child);
    assert!(port.is_some(), "no address on 0.0.0.0: {addr:?}: {err}");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        err.contains("warning") && err.contains("reachable from other machines"),
        "{err}"
    );
    // Loopback needs no flag and gets no warning.
    let (child, addr) = live_run("localhost:0", &[], &tmp.path().join("o2"));
    let err = end(child);
    assert!(addr.is_some(), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// The first line of the answer to `GET path`, or what went wrong; bounded in time.
pub(super) fn http_status(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let timeout = std::time::Duration::from_secs(5);
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
        return "cannot connect".into();
    };
    let _ = s.set_read_timeout(Some(timeout));
    if write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
        return "cannot send".into();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    out.lines().next().unwrap_or("no answer").to_string()
}

/// `n` sockets holding connections to `addr` the slow way: each sends the start of a request
/// line, then a byte a second, and is opened again as soon as the server answers or closes
/// it. Says on `ready` how many are open at first; ends when `stop` is set or after 20 s.
/// Returns how many times a socket was opened again.
pub(super) fn slowloris(
    addr: std::net::SocketAddr,
    n: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ready: std::sync::mpsc::Sender<usize>,
) -> usize {
    use std::io::{ErrorKind, Read, Write};
    use std::time::{Duration, Instant};
    let open = || -> Option<std::net::TcpStream> {
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
        s.write_all(b"GET /").ok()?;
        s.set_nonblocking(true).ok()?;
        Some(s)
    };
    let mut sockets: Vec<(Option<std::net::TcpStream>, Instant)> =
        (0..n).map(|_| (open(), Instant::now())).collect();
    let _ = ready.send(sockets.iter().filter(|s| s.0.is_some()).count());
    let end = Instant::now() + Duration::from_secs(20);
    let mut reopened = 0;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < end {
        for (socket, last) in &mut sockets {
            let mut alive = socket.as_mut().is_some_and(|s| {
                // Any answer (503, 408) or a close ends this one.
                matches!(s.read(&mut [0u8; 512]), Err(e) if e.kind() == ErrorKind::WouldBlock)
            });
            if alive && last.elapsed() >= Duration::from_secs(1) {
                alive = socket.as_mut().is_some_and(|s| s.write(b"a").is_ok());
                *last = Instant::now();
            }
            if !alive {
                *socket = open();
                *last = Instant::now();
                reopened += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reopened
}

/// 200 slow sockets (slowloris) do not starve the live view: page loads and an event stream
/// are all answered while they are held. (The threaded server of before had 16 places, each
/// held 2 s by a slow socket: 0 to 2 of 40 page loads got through.)
#[test]
fn slow_sockets_do_not_starve_the_live_view() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    const SLOW: usize = 200;
    const LOADS: usize = 40;
    let tmp = tempfile::tempdir().expect("temp dir");
    let (child, addr) = live_run("127.0.0.1:0", &[], &tmp.path().join("o"));
    let Some(addr) = addr.and_then(|a| a.parse::<std::net::SocketAddr>().ok()) else {
        panic!("no address: {}", end(child));
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (ready, opened) = std::sync::mpsc::channel();
    let held = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || slowloris(addr, SLOW, stop, ready))
    };
    let opened = opened.recv().unwrap_or(0);
    // Let the server take them all in.
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let statuses: Vec<String> = (0..LOADS)
        .map(|_| {
            let s = http_status(addr, "/");
            std::thread::sleep(Duration::from_millis(20));
            s
        })
        .collect();
    let loads = start.elapsed();
    // An event stream: its head and a first frame.
    let mut events = String::new();
    if let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let by = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 4096];
        while Instant::now() < by && !events.contains("data: {") {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => events.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(_) => {}
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let reopened = held.join().expect("slow sockets");
    let err = end(child);
    let ok = statuses
        .iter()
        .filter(|s| s.starts_with("HTTP/1.1 200"))
        .count();
    eprintln!(
        "with {opened} slow sockets held ({reopened} reopened): {ok} of {LOADS} page loads answered 200 OK in {loads:?}"
    );
    assert_eq!(ok, LOADS, "{statuses:?}\n{err}");
    assert_eq!(opened, SLOW, "{err}");
    assert!(
        events.starts_with("HTTP/1.1 200")
            && events.contains("text/event-stream")
            && events.contains("data: {"),
        "{events}"
    );
}
