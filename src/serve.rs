//! The live view (`igemu run --mode realtime --serve ADDR`): a page that shows the federation
//! as it runs, served over HTTP with server-sent events.
//!
//! The emulation never waits for a browser. Its clock calls `publish_frame` about every
//! [`FRAME_EVERY`] of wall time (`Clock::every_wall`); that builds one JSON frame — per-cluster
//! cores in use, queues, preemptions, negotiations in flight, the last messages — and puts it
//! in the [`Feed`], replacing the one before (a `tokio::sync::watch` channel: the swap holds
//! its lock for a moment, as a stream reading it does to clone an `Arc`, and wakes the
//! streams; nothing the server does can make it wait longer).
//!
//! The server is actix-web on a thread of its own, with its own actix `System` (never the
//! emulation's) and one worker thread: `/` is the page, `/frame` the newest frame, `/events`
//! a stream of server-sent events that sends the newest frame each time it is polled after a
//! change. A browser that reads slowly is polled less often and so misses frames (what it
//! gets is always the newest), queues nothing, and holds nothing the emulation needs. Connections are tasks, not threads, so
//! idle ones cost little: at most [`MAX_CONNECTIONS`] at once, of which [`MAX_STREAMS`]
//! event streams (more get 503); a request head must be whole within [`REQUEST_TIMEOUT`]
//! (else 408 and the connection is closed); one request per connection (no keep-alive).
//! Parsing HTTP is actix's. When the run ends the last frame says so and the streams end
//! with `event: end`; [`LiveServer::stop`] then closes whatever is still open.
//!
//! It listens where `--serve` says; the command line refuses an address that is not
//! loopback unless `--serve-public` is given ([`not_loopback`]).

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::header::CACHE_CONTROL;
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};
use serde::Serialize;
use tokio::sync::watch;

use crate::actors::Emu;
use crate::model::{ClusterId, GridId, RequestState};
use crate::time::EmuTime;
use crate::topology::Topology;

/// How often (wall time) the emulation publishes a frame.
pub const FRAME_EVERY: Duration = Duration::from_millis(250);
/// The most connections open at once; past it new ones wait in the kernel's backlog until
/// one closes.
pub const MAX_CONNECTIONS: usize = 512;
/// Connections the kernel may hold for the server before it takes them.
pub const BACKLOG: i32 = 1024;
/// The most event streams open at once (more get 503).
pub const MAX_STREAMS: usize = 256;
/// How long a connection may take to send its whole request head (then 408, and closed).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a connection whose response is sent may take to close.
pub const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long [`LiveServer::stop`] waits for the event streams to send their last frame.
pub const STOP_GRACE: Duration = Duration::from_secs(1);
/// The last messages a frame shows.
pub const RECENT_MESSAGES: usize = 12;

/// What the feed holds: the newest frame and where the run is.
#[derive(Debug, Clone, Default)]
struct Newest {
    /// Frames published so far (a stream sends when it changes).
    published: u64,
    frame: Arc<str>,
    /// The run is over: the last frame has been published.
    ended: bool,
    /// The server is stopping: streams send the newest frame if they have not, and end.
    stopping: bool,
}

/// The newest frame, shared between the emulation (which replaces it) and the server.
#[derive(Debug)]
pub struct Feed {
    newest: watch::Sender<Newest>,
}

impl Default for Feed {
    fn default() -> Feed {
        Feed {
            newest: watch::Sender::new(Newest::default()),
        }
    }
}

impl Feed {
    /// Replaces the frame and wakes the streams. Never waits for a reader beyond the moment
    /// one holds the lock to clone the frame's `Arc`.
    pub fn publish(&self, frame: String, last: bool) {
        let mut frame: Arc<str> = frame.into();
        self.newest.send_modify(|n| {
            std::mem::swap(&mut n.frame, &mut frame);
            n.published += 1;
            n.ended |= last;
        });
        // The frame replaced is freed here, outside the lock.
        drop(frame);
    }

    /// The newest frame.
    fn newest(&self) -> Arc<str> {
        Arc::clone(&self.newest.borrow().frame)
    }

    /// Tells the streams to end.
    fn stop(&self) {
        self.newest.send_modify(|n| n.stopping = true);
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
    let recent = recent_messages(emu);
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

/// The last messages of the run, as a frame shows them.
fn recent_messages(emu: &Emu) -> Vec<MessageFrame> {
    emu.tracer
        .recent()
        .into_iter()
        .map(|m| MessageFrame {
            t_s: m.at.as_secs_f64(),
            from: emu.tracer.name(m.from),
            to: emu.tracer.name(m.to),
            kind: m.kind,
        })
        .collect()
}

/// Every address `addr` (`HOST:PORT`) resolves to.
pub fn resolve(addr: &str) -> std::io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "it resolves to no address",
        ));
    }
    Ok(addrs)
}

/// The addresses of `addrs` that are not loopback (127.0.0.0/8, ::1, or IPv4 loopback
/// mapped into IPv6): listening there makes the page reachable from other machines. The
/// unspecified addresses (`0.0.0.0`, `::`) listen on every interface, so they are here.
pub fn not_loopback(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    addrs
        .iter()
        .filter(|a| !a.ip().to_canonical().is_loopback())
        .copied()
        .collect()
}

/// A listening socket on the first of `addrs` that can be bound, with a backlog of
/// [`BACKLOG`] (std's is 128: a burst of connections would have some dropped by the kernel
/// before the server could take them).
fn listen(addrs: &[SocketAddr]) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mut failed = None;
    for &addr in addrs {
        let bound = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
            .and_then(|s| {
                s.set_reuse_address(true)?;
                s.bind(&addr.into())?;
                s.listen(BACKLOG)?;
                Ok(s)
            });
        match bound {
            Ok(s) => return Ok(s.into()),
            Err(e) => failed = Some(e),
        }
    }
    Err(failed.unwrap_or_else(|| std::io::Error::other("no address to listen on")))
}

/// What the handlers share.
struct Shared {
    feed: Arc<Feed>,
    /// Event streams open.
    streams: Arc<AtomicUsize>,
}

/// The live view's HTTP server.
pub struct LiveServer {
    addr: SocketAddr,
    feed: Arc<Feed>,
    streams: Arc<AtomicUsize>,
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveServer {
    /// Listens on the first of `addrs` that can be bound (port 0 picks a free one) and
    /// serves the page and its events from a thread of its own. The caller decides whether
    /// the addresses may be other than loopback ([`not_loopback`]).
    pub fn start(addrs: &[SocketAddr]) -> std::io::Result<LiveServer> {
        let listener = listen(addrs)?;
        let addr = listener.local_addr()?;
        let feed = Arc::new(Feed::default());
        let streams = Arc::new(AtomicUsize::new(0));
        let shared = web::Data::new(Shared {
            feed: Arc::clone(&feed),
            streams: Arc::clone(&streams),
        });
        let (started, handle) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("igemu-serve".into())
            .spawn(move || {
                // Its own System and runtime: nothing here runs on the emulation's.
                actix_web::rt::System::new().block_on(async move {
                    match server(listener, shared) {
                        Ok(server) => {
                            let _ = started.send(Ok(server.handle()));
                            let _ = server.await;
                        }
                        Err(e) => {
                            let _ = started.send(Err(e));
                        }
                    }
                });
            })?;
        let handle = handle
            .recv()
            .map_err(|_| std::io::Error::other("the live view's thread ended"))??;
        Ok(LiveServer {
            addr,
            feed,
            streams,
            handle,
            thread: Some(thread),
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

    /// Stops serving: each open event stream sends the newest frame (if it has not) and
    /// ends — waiting at most [`STOP_GRACE`] for them — then every connection still open
    /// is closed and the server's threads end.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.feed.stop();
        let start = Instant::now();
        while self.streams.load(Ordering::SeqCst) > 0 && start.elapsed() < STOP_GRACE {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Not graceful: a graceful stop would wait for the slowest connection (a request
        // head still trickling in) and look at them only once a second.
        drop(self.handle.stop(false));
        let _ = thread.join();
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The server, listening on `listener`, with its limits.
fn server(
    listener: TcpListener,
    shared: web::Data<Shared>,
) -> std::io::Result<actix_web::dev::Server> {
    let app = move || {
        // Each route answers GET; another method there gets 405, another path 404.
        let get = |paths: &[&'static str], route: actix_web::Route| {
            web::resource(paths.to_vec())
                .route(route)
                .default_service(web::to(get_only))
        };
        App::new()
            .app_data(shared.clone())
            .service(get(&["/", "/index.html"], web::get().to(page)))
            .service(get(&["/frame"], web::get().to(frame)))
            .service(get(&["/events"], web::get().to(events)))
            .default_service(web::to(not_found))
    };
    Ok(HttpServer::new(app)
        .workers(1)
        .max_connections(MAX_CONNECTIONS)
        .client_request_timeout(REQUEST_TIMEOUT)
        .client_disconnect_timeout(DISCONNECT_TIMEOUT)
        .keep_alive(actix_web::http::KeepAlive::Disabled)
        .tcp_nodelay(true)
        .disable_signals()
        .listen(listener)?
        .run())
}

/// A plain-text answer.
fn plain(status: actix_web::http::StatusCode, body: &'static str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((CACHE_CONTROL, "no-store"))
        .content_type("text/plain")
        .body(body)
}

async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CACHE_CONTROL, "no-store"))
        .content_type("text/html; charset=utf-8")
        .body(PAGE)
}

async fn frame(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CACHE_CONTROL, "no-store"))
        .content_type("application/json")
        .body(shared.feed.newest().to_string())
}

async fn get_only() -> HttpResponse {
    plain(
        actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
        "GET only\n",
    )
}

async fn not_found() -> HttpResponse {
    plain(actix_web::http::StatusCode::NOT_FOUND, "not found\n")
}

/// One of the [`MAX_STREAMS`] places for an event stream, given back when it is dropped.
struct StreamSlot(Arc<AtomicUsize>);

impl StreamSlot {
    fn take(streams: &Arc<AtomicUsize>) -> Option<StreamSlot> {
        streams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_STREAMS).then_some(n + 1)
            })
            .ok()
            .map(|_| StreamSlot(Arc::clone(streams)))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where one event stream is.
struct Stream {
    newest: watch::Receiver<Newest>,
    /// The frame number last sent.
    sent: u64,
    started: bool,
    done: bool,
    _slot: StreamSlot,
}

/// Sends the newest frame whenever it changes, until the run's last frame is sent or the
/// server stops.
async fn events(shared: web::Data<Shared>) -> HttpResponse {
    let Some(slot) = StreamSlot::take(&shared.streams) else {
        return plain(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            "too many viewers\n",
        );
    };
    let stream = Stream {
        newest: shared.feed.newest.subscribe(),
        sent: 0,
        started: false,
        done: false,
        _slot: slot,
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        let chunk = next_chunk(&mut s).await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), s))
    });
    HttpResponse::Ok()
        .insert_header((CACHE_CONTROL, "no-store"))
        .content_type("text/event-stream")
        .streaming(body)
}

/// What the stream sends next (waiting for a change), or `None` once it has ended. Asked only
/// when the connection can take more, so a slow reader gets the newest frame, not a queue.
async fn next_chunk(s: &mut Stream) -> Option<Bytes> {
    if !s.started {
        s.started = true;
        return Some(Bytes::from_static(b"retry: 1000\n\n"));
    }
    loop {
        if s.done {
            return None;
        }
        let newest = s.newest.borrow_and_update().clone();
        let mut out = String::new();
        if newest.published != s.sent {
            // A frame is one line of JSON: one `data:` field.
            out = format!("data: {}\n\n", newest.frame);
            s.sent = newest.published;
        }
        if newest.ended {
            out.push_str("event: end\ndata: {}\n\n");
            s.done = true;
        } else if newest.stopping {
            s.done = true;
        }
        if !out.is_empty() {
            return Some(Bytes::from(out));
        }
        if !s.done && s.newest.changed().await.is_err() {
            // The feed is gone: nothing more will come.
            return None;
        }
    }
}

/// The page: no external resources; connects to `/events` and redraws each frame.
const PAGE: &str = include_str!("serve_page.html");

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn local() -> LiveServer {
        LiveServer::start(&resolve("127.0.0.1:0").expect("an address")).expect("binds")
    }

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // The server may close before it has all of a request it refuses.
        let _ = s.write_all(request.as_bytes());
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn loopback_addresses_are_told_from_the_others() {
        let loopback = [
            "127.0.0.1:0",
            "127.0.1.1:80",
            "[::1]:0",
            "[::ffff:127.0.0.1]:0",
            "localhost:0",
        ];
        for a in loopback {
            assert!(not_loopback(&resolve(a).unwrap()).is_empty(), "{a}");
        }
        for a in [
            "0.0.0.0:0",
            "[::]:0",
            "0:0",
            "192.168.1.2:80",
            "[fe80::1]:80",
        ] {
            assert!(!not_loopback(&resolve(a).unwrap()).is_empty(), "{a}");
        }
        // Mixed: one that is not is enough.
        let mixed = [
            resolve("127.0.0.1:1").unwrap(),
            resolve("10.0.0.1:1").unwrap(),
        ]
        .concat();
        assert_eq!(not_loopback(&mixed).len(), 1);
        assert!(resolve("no port").is_err());
    }

    #[test]
    fn the_server_answers_the_page_the_frame_and_refuses_the_rest() {
        let server = local();
        let addr = server.addr();
        server.feed().publish("{\"t_s\":1}".into(), false);
        let page = get(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            page.starts_with("HTTP/1.1 200 OK") && page.contains("EventSource"),
            "{page}"
        );
        let frame = get(addr, "GET /frame HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(frame.ends_with("{\"t_s\":1}"), "{frame}");
        assert!(
            frame.to_lowercase().contains("connection: close"),
            "{frame}"
        );
        assert!(get(addr, "POST / HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 404"));
        // HTTP/1.1 without a Host (no browser sends that): 400, as the standard says.
        assert!(get(addr, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400"));
        // A head past actix's cap, garbage, or none at all: an answer or a close, never a
        // hang or a panic; the server answers afterwards.
        let huge = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(200_000));
        let _ = get(addr, &huge);
        let _ = get(addr, "\x00\x01 nonsense\r\n\r\n");
        let _ = get(addr, "");
        assert!(get(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 200"));
        server.stop();
    }

    #[test]
    fn events_carry_each_new_frame_and_end_with_the_run() {
        let server = local();
        let feed = server.feed();
        feed.publish("{\"t_s\":1}".into(), false);
        let mut s = TcpStream::connect(server.addr()).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        feed.publish("{\"t_s\":2}".into(), false);
        std::thread::sleep(Duration::from_millis(300));
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
        let server = local();
        let mut s = TcpStream::connect(server.addr()).expect("connects");
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        // One byte every half second: the head as a whole is not in by REQUEST_TIMEOUT.
        let mut closed_after = None;
        for i in 0..40u32 {
            if s.write_all(b"G").is_err() {
                closed_after = Some(i);
                break;
            }
            let mut buf = [0u8; 64];
            match s.read(&mut buf) {
                Ok(0) => {
                    closed_after = Some(i);
                    break;
                }
                // 408, then the close.
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => {
                    closed_after = Some(i);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        // Cut off once REQUEST_TIMEOUT (2 s) had passed, not after 40 bytes (20 s).
        let n = closed_after.expect("the server closed the connection");
        assert!(n <= 10, "held for {n} bytes");
        server.stop();
    }

    #[test]
    fn streams_past_the_cap_are_turned_away_and_stalled_ones_hold_nothing_else() {
        let server = local();
        let feed = server.feed();
        feed.publish("{}".into(), false);
        // Viewers that never read.
        let mut idle = Vec::new();
        for _ in 0..MAX_STREAMS {
            let mut s = TcpStream::connect(server.addr()).expect("connects");
            s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            idle.push(s);
        }
        let start = Instant::now();
        while server.streams.load(Ordering::SeqCst) < MAX_STREAMS {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "streams not open"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let turned_away = get(server.addr(), "GET /events HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(turned_away.starts_with("HTTP/1.1 503"), "{turned_away}");
        // Publishing goes on meanwhile (it only swaps the frame), and so do pages.
        for i in 0..1000 {
            feed.publish(format!("{{\"n\":{i}}}"), false);
        }
        let frame = get(server.addr(), "GET /frame HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            frame.starts_with("HTTP/1.1 200") && frame.ends_with("{\"n\":999}"),
            "{frame}"
        );
        assert!(get(server.addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 200"));
        // Stopping does not wait for them beyond STOP_GRACE.
        let start = Instant::now();
        server.stop();
        assert!(
            start.elapsed() < STOP_GRACE + Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        drop(idle);
    }

    #[test]
    fn stop_ends_the_streams_with_the_newest_frame_and_closes_everything_promptly() {
        let server = local();
        let addr = server.addr();
        let feed = server.feed();
        feed.publish("{\"t_s\":1}".into(), false);
        let mut viewer = TcpStream::connect(addr).expect("connects");
        viewer
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        viewer
            .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        // Half a request head, held open.
        let mut slow = TcpStream::connect(addr).expect("connects");
        slow.write_all(b"GET /fr").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        feed.publish("{\"t_s\":2}".into(), false);
        let start = Instant::now();
        server.stop();
        let took = start.elapsed();
        assert!(took < Duration::from_millis(900), "stop took {took:?}");
        let mut out = String::new();
        let _ = viewer.read_to_string(&mut out);
        assert!(out.contains("data: {\"t_s\":2}"), "{out}");
        assert!(!out.contains("event: end"), "the run did not end: {out}");
        slow.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(
            matches!(slow.read(&mut [0u8; 64]), Ok(0) | Err(_)),
            "the half-open connection was closed"
        );
        assert!(TcpStream::connect(addr).is_err(), "still listening");
    }
}
