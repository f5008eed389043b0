//! The live view (`igemu run --mode realtime --serve ADDR`): a page that shows the federation
//! as it runs, served over HTTP with server-sent events.
//!
//! The emulation never waits for a browser. Its clock calls `publish_frame` about every
//! [`FRAME_EVERY`] of wall time (`Clock::every_wall`); that builds one JSON frame — per-cluster
//! cores in use, queues, preemptions, negotiations in flight, the last messages — and puts it
//! in the [`Feed`], replacing the one before. The server runs on its own threads: an acceptor
//! and one thread per connection (at most [`MAX_CLIENTS`]), each sending the newest frame when
//! it changes. A slow browser blocks only its own thread (for at most [`WRITE_TIMEOUT`], then
//! it is dropped) and misses frames, never events. Requests are read with a size cap and a
//! timeout. When the run ends the last frame says so, and [`LiveServer::stop`] closes
//! everything.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::actors::Emu;
use crate::model::{ClusterId, GridId, RequestState};
use crate::time::EmuTime;
use crate::topology::Topology;

/// How often (wall time) the emulation publishes a frame.
pub const FRAME_EVERY: Duration = Duration::from_millis(250);
/// The most browsers served at once (more get 503).
pub const MAX_CLIENTS: usize = 16;
/// How long a write to a browser may block before the browser is dropped.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the server waits for a request's head.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest request head read.
const MAX_HEAD: u64 = 8 * 1024;
/// The last messages a frame shows.
pub const RECENT_MESSAGES: usize = 12;

/// The newest frame, shared between the emulation (which replaces it) and the server.
#[derive(Debug, Default)]
pub struct Feed {
    frame: Mutex<Arc<str>>,
    /// Frames published so far (a client sends when it changes).
    published: AtomicU64,
    /// The run is over: the last frame has been published.
    ended: AtomicBool,
}

impl Feed {
    /// Replaces the frame.
    pub fn publish(&self, frame: String, last: bool) {
        if let Ok(mut f) = self.frame.lock() {
            *f = frame.into();
        }
        self.published.fetch_add(1, Ordering::SeqCst);
        if last {
            self.ended.store(true, Ordering::SeqCst);
        }
    }

    /// The newest frame and its number.
    fn newest(&self) -> (u64, Arc<str>) {
        let n = self.published.load(Ordering::SeqCst);
        let f = self
            .frame
            .lock()
            .map(|f| Arc::clone(&f))
            .unwrap_or_else(|_| Arc::from("{}"));
        (n, f)
    }
}

/// One cluster in a frame.
#[derive(Serialize)]
struct ClusterFrame {
    name: String,
    cores: u64,
    cores_in_use: u64,
    utilisation_pct: f64,
    /// Local requests arrived and not yet started or ended.
    waiting_local: usize,
    vm_preemptions: u64,
    lease_preemptions: u64,
}

/// One Grid in a frame.
#[derive(Serialize)]
struct GridFrame {
    name: String,
    /// External requests arrived and not yet started or ended.
    waiting_external: usize,
    /// Offers sent by this Grid and not yet answered.
    offers_in_flight: usize,
}

/// One of the last messages.
#[derive(Serialize)]
struct MessageFrame {
    t_s: f64,
    from: String,
    to: String,
    kind: &'static str,
}

/// What the page shows at one moment.
#[derive(Serialize)]
struct Frame<'a> {
    topology: &'a str,
    /// Emulated time of the events being handled, s.
    t_s: f64,
    /// Emulated time by the wall clock, s (ahead of `t_s` by the lateness).
    wall_t_s: f64,
    speedup: f64,
    done: bool,
    messages: u64,
    requests: usize,
    ended: usize,
    violations: usize,
    clusters: Vec<ClusterFrame>,
    grids: Vec<GridFrame>,
    recent: Vec<MessageFrame>,
}

/// Builds the frame for `emu` running `topo` now (`wall`: emulated time by the wall clock)
/// and publishes it to `feed`.
pub(crate) fn publish_frame(
    feed: &Feed,
    (emu, topo): (&Emu, &Topology),
    (now, wall, speedup): (EmuTime, EmuTime, f64),
    done: bool,
) {
    let metrics = emu.metrics.borrow();
    let records = metrics.records();
    let waiting = |r: &crate::metrics::RequestRecord, arrival: EmuTime| {
        arrival <= now && r.start.is_none() && r.state.is_none()
    };
    let mut waiting_local = std::collections::BTreeMap::<ClusterId, usize>::new();
    let mut waiting_external = std::collections::BTreeMap::<GridId, usize>::new();
    let mut ended = 0;
    for (req, r) in topo.requests.iter().zip(records) {
        if r.state.is_some_and(|s| s != RequestState::Unfinished) {
            ended += 1;
        }
        if waiting(r, req.arrival) {
            match req.cluster {
                Some(c) => *waiting_local.entry(c).or_default() += 1,
                None => *waiting_external.entry(req.grid).or_default() += 1,
            }
        }
    }
    let counters = metrics.cluster_counters();
    let clusters = topo
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = ClusterId(i as u16);
            let cores = c.cores();
            let in_use = metrics.cores_in_use(id);
            let k = counters.get(&id);
            ClusterFrame {
                name: c.qualified_name(topo),
                cores,
                cores_in_use: in_use,
                utilisation_pct: 100.0 * in_use as f64 / cores.max(1) as f64,
                waiting_local: waiting_local.get(&id).copied().unwrap_or(0),
                vm_preemptions: k.map_or(0, |k| k.vm_preemptions),
                lease_preemptions: k.map_or(0, |k| k.lease_preemptions),
            }
        })
        .collect();
    let offers = metrics.open_offers_by_grid();
    let grids = topo
        .grids
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let id = GridId(i as u16);
            GridFrame {
                name: g.name.clone(),
                waiting_external: waiting_external.get(&id).copied().unwrap_or(0),
                offers_in_flight: offers.get(&id).copied().unwrap_or(0),
            }
        })
        .collect();
    let recent = emu
        .tracer
        .recent()
        .into_iter()
        .map(|m| MessageFrame {
            t_s: m.at.as_secs_f64(),
            from: emu.tracer.name(m.from),
            to: emu.tracer.name(m.to),
            kind: m.kind,
        })
        .collect();
    let frame = Frame {
        topology: &topo.name,
        t_s: now.as_secs_f64(),
        wall_t_s: wall.as_secs_f64(),
        speedup,
        done,
        messages: emu.tracer.messages(),
        requests: records.len(),
        ended,
        violations: metrics.violations().len(),
        clusters,
        grids,
        recent,
    };
    // Invariant: the frame is plain data; serialising it cannot fail.
    let json = serde_json::to_string(&frame).expect("a frame serialises");
    drop(metrics);
    feed.publish(json, done);
}

/// The live view's HTTP server.
pub struct LiveServer {
    addr: SocketAddr,
    feed: Arc<Feed>,
    stop: Arc<AtomicBool>,
    /// Connections being served.
    clients: Arc<AtomicUsize>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl LiveServer {
    /// Listens on `addr` (e.g. `127.0.0.1:8080`; port 0 picks a free one) and serves the page
    /// and its events from threads of its own.
    pub fn start(addr: &str) -> std::io::Result<LiveServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let feed = Arc::new(Feed::default());
        let stop = Arc::new(AtomicBool::new(false));
        let clients = Arc::new(AtomicUsize::new(0));
        let (f, s, c) = (Arc::clone(&feed), Arc::clone(&stop), Arc::clone(&clients));
        let acceptor = std::thread::Builder::new()
            .name("igemu-serve".into())
            .spawn(move || accept(&listener, &f, &s, &c))?;
        Ok(LiveServer {
            addr,
            feed,
            stop,
            clients,
            acceptor: Some(acceptor),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The feed the emulation publishes frames to.
    pub fn feed(&self) -> Arc<Feed> {
        Arc::clone(&self.feed)
    }

    /// Stops serving: no new connections; each open one gets the last frame published (if
    /// it has not) and is closed. Waits at most [`STOP_GRACE`] for them.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let start = std::time::Instant::now();
        while self.clients.load(Ordering::SeqCst) > 0 && start.elapsed() < STOP_GRACE {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// How long [`LiveServer::stop`] waits for open connections to take the last frame.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// How often a connection looks for a new frame.
pub const FRAME_POLL: Duration = Duration::from_millis(100);

fn accept(
    listener: &TcpListener,
    feed: &Arc<Feed>,
    stop: &Arc<AtomicBool>,
    clients: &Arc<AtomicUsize>,
) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if clients.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
                    clients.fetch_sub(1, Ordering::SeqCst);
                    let _ = busy(stream);
                    continue;
                }
                let (f, s, c) = (Arc::clone(feed), Arc::clone(stop), Arc::clone(clients));
                let spawned = std::thread::Builder::new()
                    .name("igemu-serve-client".into())
                    .spawn(move || {
                        let _ = serve(stream, &f, &s);
                        c.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    clients.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // A connection that failed before it was accepted: the next one may not.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn busy(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    respond(
        &mut stream,
        "503 Service Unavailable",
        "text/plain",
        b"too many viewers\n",
    )
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

/// A stream read until a deadline for the whole, not per read: a client trickling its
/// request head a byte at a time would otherwise hold its place for hours.
struct ReadBy {
    stream: TcpStream,
    deadline: std::time::Instant,
}

impl Read for ReadBy {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self
            .deadline
            .checked_duration_since(std::time::Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut))?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Reads one request and answers it: the page, its event stream, or the newest frame.
fn serve(mut stream: TcpStream, feed: &Feed, stop: &AtomicBool) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut head = String::new();
    let head_by = std::time::Instant::now() + READ_TIMEOUT;
    let mut reader = BufReader::new(
        ReadBy {
            stream: stream.try_clone()?,
            deadline: head_by,
        }
        .take(MAX_HEAD),
    );
    reader.read_line(&mut head)?;
    // The rest of the head (headers) is not needed; read it so the browser is not reset.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = head.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method != "GET" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET only\n",
        );
    }
    match path {
        "/" | "/index.html" => respond(
            &mut stream,
            "200 OK",
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
        ),
        "/frame" => {
            let (_, frame) = feed.newest();
            respond(&mut stream, "200 OK", "application/json", frame.as_bytes())
        }
        "/events" => events(stream, feed, stop),
        _ => respond(&mut stream, "404 Not Found", "text/plain", b"not found\n"),
    }
}

/// Sends the newest frame whenever it changes, until the run's last frame is sent or the
/// server stops.
fn events(mut stream: TcpStream, feed: &Feed, stop: &AtomicBool) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nretry: 1000\n\n"
    )?;
    stream.flush()?;
    let mut sent = 0;
    loop {
        let ended = feed.ended.load(Ordering::SeqCst);
        let (n, frame) = feed.newest();
        if n != sent {
            // A frame is one line of JSON: one `data:` field.
            write!(stream, "data: {frame}\n\n")?;
            stream.flush()?;
            sent = n;
        }
        if ended {
            write!(stream, "event: end\ndata: {{}}\n\n")?;
            return stream.flush();
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        std::thread::sleep(FRAME_POLL);
    }
}

/// The page: no external resources; connects to `/events` and redraws each frame.
const PAGE: &str = include_str!("serve_page.html");

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn the_server_answers_the_page_the_frame_and_refuses_the_rest() {
        let server = LiveServer::start("127.0.0.1:0").expect("binds");
        let addr = server.addr();
        server.feed().publish("{\"t_s\":1}".into(), false);
        let page = get(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            page.starts_with("HTTP/1.1 200 OK") && page.contains("EventSource"),
            "{page}"
        );
        let frame = get(addr, "GET /frame HTTP/1.1\r\n\r\n");
        assert!(frame.ends_with("{\"t_s\":1}"), "{frame}");
        assert!(get(addr, "POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        // A head past the cap, or none at all: an answer or a close, never a hang or a panic.
        let huge = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(20_000));
        let _ = get(addr, &huge);
        let _ = get(addr, "");
        server.stop();
    }

    #[test]
    fn events_carry_each_new_frame_and_end_with_the_run() {
        let server = LiveServer::start("127.0.0.1:0").expect("binds");
        let feed = server.feed();
        feed.publish("{\"t_s\":1}".into(), false);
        let mut s = TcpStream::connect(server.addr()).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(FRAME_POLL * 3);
        feed.publish("{\"t_s\":2}".into(), false);
        std::thread::sleep(FRAME_POLL * 3);
        feed.publish("{\"t_s\":3,\"done\":true}".into(), true);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        assert!(out.contains("text/event-stream"), "{out}");
        let frames: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("data: {\"t_s"))
            .collect();
        assert_eq!(
            frames,
            [
                "data: {\"t_s\":1}",
                "data: {\"t_s\":2}",
                "data: {\"t_s\":3,\"done\":true}"
            ]
        );
        assert!(out.contains("event: end"));
        server.stop();
    }

    #[test]
    fn a_request_head_trickled_a_byte_at_a_time_is_cut_off_whole() {
        let server = LiveServer::start("127.0.0.1:0").expect("binds");
        let mut s = TcpStream::connect(server.addr()).expect("connects");
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        // One byte every half second: each read is within the per-read timeout, but the
        // head as a whole is not.
        let mut closed_after = None;
        for i in 0..40u32 {
            if s.write_all(b"G").is_err() {
                closed_after = Some(i);
                break;
            }
            let mut buf = [0u8; 64];
            if matches!(s.read(&mut buf), Ok(0)) {
                closed_after = Some(i);
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        // Cut off once READ_TIMEOUT (2 s) had passed, not after 40 bytes (20 s).
        let n = closed_after.expect("the server closed the connection");
        assert!(n <= 10, "held for {n} bytes");
        server.stop();
    }

    #[test]
    fn viewers_past_the_cap_are_turned_away_and_a_stalled_one_does_not_hold_the_others() {
        let server = LiveServer::start("127.0.0.1:0").expect("binds");
        let feed = server.feed();
        feed.publish("{}".into(), false);
        // Viewers that never read: their threads block on writes, nobody else does.
        let mut idle = Vec::new();
        for _ in 0..MAX_CLIENTS {
            let mut s = TcpStream::connect(server.addr()).expect("connects");
            s.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
            idle.push(s);
        }
        std::thread::sleep(FRAME_POLL * 3);
        let turned_away = get(server.addr(), "GET / HTTP/1.1\r\n\r\n");
        assert!(turned_away.starts_with("HTTP/1.1 503"), "{turned_away}");
        // Publishing goes on meanwhile (it only swaps the frame under a lock no writer holds).
        for i in 0..1000 {
            feed.publish(format!("{{\"n\":{i}}}"), false);
        }
        assert!(get(server.addr(), "GET /frame HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 503"));
        drop(idle);
        server.stop();
    }
}
