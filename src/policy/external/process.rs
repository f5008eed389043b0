//! One external policy process: started with its command's words (no shell), greeted with
//! the protocol's handshake, asked one question at a time over its stdin and answered over
//! its stdout, one JSON object per line, and ended with the run.
//!
//! Nothing it does can hang or crash igemu: every wait for it has the run's timeout (a read
//! timeout on the socket it answers over); a line longer than [`MAX_LINE`] ends the reading;
//! its stderr is kept (the last lines, each cut short, control characters escaped) to say why
//! it failed; it is killed if it does not exit when the run ends, and when dropped.
//!
//! Its stdin and its stdout are each one end of a Unix socket pair (written with the timeout
//! too, so a process that stops reading cannot block a long question); stdout is read
//! straight on the emulation's thread: for the first [`SPIN`] of a wait the reads do not block, so the
//! thread stays awake for an answer that comes soon. On a virtual machine, waking a thread that slept
//! costs as much as the rest of a round trip (measured on the 2-vCPU machine of
//! docs/performance.md: 68 µs per round trip blocking, 29 µs spinning).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::protocol::{excerpt, VERSION};
use crate::policy::Point;

/// The longest line a process may write (an answer is a few hundred bytes).
pub(crate) const MAX_LINE: usize = 1 << 20;
/// Lines of a process's stderr kept to explain a failure.
const STDERR_LINES: usize = 8;
/// How long a wait for an answer polls before it sleeps.
pub(crate) const SPIN: Duration = Duration::from_micros(500);

/// A line read from the process's stdout, or why none came.
enum Line {
    Text(String),
    TooLong,
    TimedOut,
    Eof,
    Failed(String),
}

/// A running external policy process.
pub struct Process {
    command: String,
    name: String,
    child: std::cell::RefCell<Child>,
    /// igemu's end of the socket the process reads as its stdin.
    stdin: std::cell::RefCell<Option<UnixStream>>,
    /// igemu's end of the socket the process writes its stdout to.
    socket: std::cell::RefCell<Option<UnixStream>>,
    /// Bytes read and not yet taken as lines.
    pending: std::cell::RefCell<Vec<u8>>,
    /// Whether the socket's reads poll (`Some(true)`) or sleep: changed only when a wait
    /// moves from one to the other (each change is a system call).
    polling: std::cell::Cell<Option<bool>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    timeout: Duration,
    next: std::cell::Cell<u64>,
    /// Once it has failed it stays failed: every later question gets this.
    broken: std::cell::RefCell<Option<String>>,
    /// In realtime runs, the answers its reading thread has collected.
    answers: std::cell::RefCell<Option<Arc<Answers>>>,
}

/// Answers read in the background (realtime runs): by question id, or why no more come.
#[derive(Default)]
pub(crate) struct Answers {
    state: Mutex<AnswersState>,
    came: std::sync::Condvar,
}

#[derive(Default)]
struct AnswersState {
    by_id: std::collections::BTreeMap<u64, Value>,
    /// Questions sent and not yet answered (an answer to another id breaks the protocol).
    asked: std::collections::BTreeSet<u64>,
    /// Questions given up on (their deadline passed): a late answer is dropped.
    expired: std::collections::BTreeSet<u64>,
    /// Why reading stopped (the process exited, or wrote what is not an answer).
    ended: Option<String>,
}

impl Answers {
    /// The answer to `id`, if it came (`Some(Err)` once reading has stopped).
    fn take(&self, id: u64) -> Option<Result<Value, String>> {
        let mut s = self.state.lock().ok()?;
        match s.by_id.remove(&id) {
            Some(v) => Some(Ok(v)),
            None => s.ended.clone().map(Err),
        }
    }

    /// Waits at most `timeout` for the answer to `id`.
    fn wait(&self, id: u64, timeout: Duration) -> Result<Value, String> {
        let deadline = Instant::now() + timeout;
        let Ok(mut s) = self.state.lock() else {
            return Err("could not be read".into());
        };
        loop {
            if let Some(v) = s.by_id.remove(&id) {
                return Ok(v);
            }
            if let Some(why) = &s.ended {
                return Err(why.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "did not answer within {timeout:?} ([external] timeout)"
                ));
            }
            s = match self.came.wait_timeout(s, left) {
                Ok((s, _)) => s,
                Err(_) => return Err("could not be read".into()),
            };
        }
    }

    /// Question `id` is being sent.
    fn asking(&self, id: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.asked.insert(id);
        }
    }

    /// Question `id` is given up on: its answer, if it comes, is dropped.
    fn forget(&self, id: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.by_id.remove(&id);
            if s.asked.remove(&id) {
                s.expired.insert(id);
            }
        }
    }

    fn put(&self, what: Result<(u64, Value), String>) {
        if let Ok(mut s) = self.state.lock() {
            match what {
                Ok((id, v)) if s.asked.remove(&id) => {
                    s.by_id.insert(id, v);
                }
                Ok((id, _)) if s.expired.remove(&id) => {}
                Ok((id, _)) => {
                    let why = format!("answered id {id}, which no question waiting has");
                    s.ended.get_or_insert(why);
                }
                Err(why) => {
                    s.ended.get_or_insert(why);
                }
            }
        }
        self.came.notify_all();
    }
}

/// Reads answers from `socket` (after the bytes `pending` already read) into `answers`,
/// calling `arrived` after each, until the process ends or breaks the protocol.
fn read_in_background(
    socket: UnixStream,
    pending: Vec<u8>,
    answers: Arc<Answers>,
    arrived: Arc<dyn Fn() + Send + Sync>,
) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(std::io::Cursor::new(pending).chain(socket));
        loop {
            let mut buf = Vec::new();
            let line = match (&mut r)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) => Err("exited".to_string()),
                Ok(_) if buf.len() > MAX_LINE => {
                    Err(format!("wrote a line longer than {MAX_LINE} bytes"))
                }
                Ok(_) => Ok(String::from_utf8_lossy(&buf).into_owned()),
                Err(e) => Err(format!("could not be read ({e})")),
            };
            if line.as_ref().is_ok_and(|t| t.trim().is_empty()) {
                continue;
            }
            let answer = line.and_then(|text| {
                let v: Value = serde_json::from_str(&text)
                    .map_err(|_| format!("wrote a line that is not JSON: `{}`", excerpt(&text)))?;
                let id = v.get("id").and_then(Value::as_u64).ok_or_else(|| {
                    format!("wrote `{}`, not an answer with an id", excerpt(&text))
                })?;
                Ok((id, v))
            });
            let last = answer.is_err();
            answers.put(answer);
            arrived();
            if last {
                return;
            }
        }
    });
}

impl Process {
    /// Starts `words` (program, then arguments) and greets it: it must answer within
    /// `timeout` with the protocol's version and serve every point of `points`. `command` is
    /// how it is named in messages.
    pub fn start(
        command: &str,
        words: &[String],
        points: &[Point],
        hello: Value,
        timeout: Duration,
    ) -> Result<Process, String> {
        let (program, args) = words
            .split_first()
            .ok_or_else(|| format!("`{command}` names no program"))?;
        let io = |e: std::io::Error| format!("could not start `{command}`: {e}");
        let (ours, theirs) = UnixStream::pair().map_err(io)?;
        let (stdin, their_stdin) = UnixStream::pair().map_err(io)?;
        stdin.set_write_timeout(Some(timeout)).map_err(io)?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::from(OwnedFd::from(their_stdin)))
            .stdout(Stdio::from(OwnedFd::from(theirs)))
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io)?;
        let Some(stderr) = child.stderr.take() else {
            return Err(format!("could not connect to `{command}`'s stderr"));
        };
        let mut p = Process {
            command: command.to_string(),
            name: String::new(),
            child: std::cell::RefCell::new(child),
            stdin: std::cell::RefCell::new(Some(stdin)),
            socket: std::cell::RefCell::new(Some(ours)),
            pending: std::cell::RefCell::new(Vec::new()),
            polling: std::cell::Cell::new(None),
            stderr: keep_stderr(stderr),
            timeout,
            next: std::cell::Cell::new(1),
            broken: std::cell::RefCell::new(None),
            answers: std::cell::RefCell::new(None),
        };
        p.name = p.handshake(points, hello)?;
        Ok(p)
    }

    /// The command it runs, as the topology wrote it.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// What it called itself in the handshake.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn handshake(&self, points: &[Point], mut hello: Value) -> Result<String, String> {
        hello["type"] = json!("hello");
        hello["protocol"] = json!(VERSION);
        hello["points"] = json!(points.iter().map(|p| p.as_str()).collect::<Vec<_>>());
        self.write(&hello)?;
        let reply = self.read(|v| v.get("type").and_then(Value::as_str) == Some("hello"))?;
        let version = reply.get("protocol").and_then(Value::as_u64);
        if version != Some(VERSION) {
            return Err(self.explain(&format!(
                "speaks protocol {}, igemu speaks {VERSION}",
                reply
                    .get("protocol")
                    .map_or("(none)".into(), |v| excerpt(&v.to_string()))
            )));
        }
        let serves: Vec<&str> = reply
            .get("serves")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(p) = points.iter().find(|p| !serves.contains(&p.as_str())) {
            return Err(self.explain(&format!(
                "is named for the {} decision but its handshake serves only: {}",
                p.as_str(),
                if serves.is_empty() {
                    "nothing".into()
                } else {
                    serves.join(", ")
                }
            )));
        }
        Ok(reply
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| self.command.clone(), excerpt))
    }

    /// Asks one question and waits (at most the timeout) for its answer.
    pub fn ask(&self, point: Point, at: &str, now: u64, question: Value) -> Result<Value, String> {
        let id = self.send(point, at, now, question)?;
        let reply = match &*self.answers.borrow() {
            None => self.read(|v| {
                // A late answer to an earlier question (one that timed out) is passed over.
                !matches!(v.get("id").and_then(Value::as_u64), Some(old) if old < id)
            }),
            Some(a) => a.wait(id, self.timeout).map_err(|e| self.explain(&e)),
        };
        match reply.and_then(|r| self.interpret(&r, id)) {
            Ok(answer) => answer,
            Err(why) => {
                *self.broken.borrow_mut() = Some(why.clone());
                Err(why)
            }
        }
    }

    /// What `reply` to question `id` says: `Ok(Ok(answer))`, `Ok(Err(why))` when the process
    /// declined to decide (it may still decide others), `Err` when it broke the protocol.
    fn interpret(&self, reply: &Value, id: u64) -> Result<Result<Value, String>, String> {
        match reply.get("id").and_then(Value::as_u64) {
            Some(got) if got == id => {}
            _ => {
                return Err(self.explain(&format!(
                    "answered {} to question {id}",
                    reply.get("id").map_or("without an id".into(), |v| format!(
                        "id {}",
                        excerpt(&v.to_string())
                    ))
                )))
            }
        }
        if let Some(e) = reply.get("error") {
            return Ok(Err(format!(
                "the external policy `{}` could not decide: {}",
                self.command,
                excerpt(e.as_str().unwrap_or(&e.to_string()))
            )));
        }
        reply
            .get("answer")
            .cloned()
            .map(Ok)
            .ok_or_else(|| self.explain("answered with neither `answer` nor `error`"))
    }

    /// Switches to asking without waiting (realtime runs): a thread of its own reads the
    /// answers as they come and calls `arrived` after each; [`Process::send`] asks,
    /// [`Process::take`] collects. [`Process::ask`] still waits, for the answer to its own
    /// question.
    pub fn answer_in_background(&self, arrived: Arc<dyn Fn() + Send + Sync>) -> Result<(), String> {
        let socket = self.socket.borrow();
        let Some(s) = socket.as_ref() else {
            return Err(self.explain("is no longer read"));
        };
        let reader = s
            .try_clone()
            .and_then(|r| {
                r.set_nonblocking(false)
                    .and(r.set_read_timeout(None))
                    .map(|()| r)
            })
            .map_err(|e| self.explain(&format!("could not be read ({e})")))?;
        let answers = Arc::new(Answers::default());
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        read_in_background(reader, pending, Arc::clone(&answers), arrived);
        *self.answers.borrow_mut() = Some(answers);
        Ok(())
    }

    /// Sends question `question` without waiting for its answer; returns its id.
    pub fn send(&self, point: Point, at: &str, now: u64, question: Value) -> Result<u64, String> {
        if let Some(why) = self.broken.borrow().clone() {
            return Err(why);
        }
        let id = self.next.get();
        self.next.set(id + 1);
        let line = json!({"type": "question", "id": id, "now": now, "point": point.as_str(), "at": at, "question": question});
        if let Some(a) = &*self.answers.borrow() {
            a.asking(id);
        }
        self.write(&line)
            .inspect_err(|why| *self.broken.borrow_mut() = Some(why.clone()))?;
        Ok(id)
    }

    /// Gives question `id` up (its deadline passed): its answer, if it comes, is dropped.
    pub fn forget(&self, id: u64) {
        if let Some(a) = &*self.answers.borrow() {
            a.forget(id);
        }
    }

    /// The answer to question `id` if it has come (`Some(Err)` if it never will: the
    /// process broke the protocol or ended).
    pub fn take(&self, id: u64) -> Option<Result<Value, String>> {
        if let Some(why) = self.broken.borrow().clone() {
            return Some(Err(why));
        }
        let answers = self.answers.borrow();
        let got = answers.as_ref()?.take(id)?;
        let answer = match got.and_then(|r| self.interpret(&r, id)) {
            Ok(answer) => answer,
            Err(why) => {
                let why = self.explain(&why);
                *self.broken.borrow_mut() = Some(why.clone());
                Err(why)
            }
        };
        Some(answer)
    }

    fn write(&self, v: &Value) -> Result<(), String> {
        let mut stdin = self.stdin.borrow_mut();
        let Some(w) = stdin.as_mut() else {
            return Err(self.explain("is no longer asked (its input is closed)"));
        };
        let mut line = v.to_string();
        line.push('\n');
        w.write_all(line.as_bytes())
            .map_err(|e| self.explain(&format!("could not be asked ({e})")))
    }

    /// The next line that is a JSON object `wanted` accepts (others passed over), within the
    /// timeout.
    fn read(&self, wanted: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let started = Instant::now();
        loop {
            let text = match self.next_line(started) {
                Line::Text(t) => t,
                Line::TimedOut => {
                    return Err(self.explain(&format!(
                        "did not answer within {:?} ([external] timeout)",
                        self.timeout
                    )))
                }
                Line::TooLong => {
                    return Err(self.explain(&format!("wrote a line longer than {MAX_LINE} bytes")))
                }
                Line::Eof => return Err(self.explain("exited")),
                Line::Failed(e) => return Err(self.explain(&format!("could not be read ({e})"))),
            };
            if text.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&text).map_err(|_| {
                self.explain(&format!(
                    "wrote a line that is not JSON: `{}`",
                    excerpt(&text)
                ))
            })?;
            if !v.is_object() {
                return Err(self.explain(&format!("wrote `{}`, not a JSON object", excerpt(&text))));
            }
            if wanted(&v) {
                return Ok(v);
            }
        }
    }

    /// The next line from the process, waiting at most until the timeout after `started`:
    /// polling for the first [`SPIN`], then sleeping in the read.
    fn next_line(&self, started: Instant) -> Line {
        let mut socket = self.socket.borrow_mut();
        let Some(s) = socket.as_mut() else {
            return Line::Eof;
        };
        let mut pending = self.pending.borrow_mut();
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                return Line::Text(String::from_utf8_lossy(&line).into_owned());
            }
            if pending.len() > MAX_LINE {
                return Line::TooLong;
            }
            let waited = started.elapsed();
            if waited >= self.timeout {
                return Line::TimedOut;
            }
            let spinning = waited < SPIN;
            let set = match (spinning, self.polling.get()) {
                (true, Some(true)) => Ok(()),
                (true, _) => s.set_nonblocking(true),
                // A sleeping read's timeout is what is left of the wait.
                (false, _) => s
                    .set_nonblocking(false)
                    .and_then(|()| s.set_read_timeout(Some(self.timeout - waited))),
            };
            if let Err(e) = set {
                return Line::Failed(e.to_string());
            }
            self.polling.set(Some(spinning));
            match s.read(&mut chunk) {
                Ok(0) => return Line::Eof,
                Ok(n) => pending.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    std::hint::spin_loop();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Line::Failed(e.to_string()),
            }
        }
    }

    /// `what` happened to the process, with how it exited and its last words on stderr.
    fn explain(&self, what: &str) -> String {
        let mut text = format!("the external policy `{}` {what}", self.command);
        // Give a process that just closed its output a moment to be reaped.
        let status = (0..20).find_map(|_| {
            let s = self.child.borrow_mut().try_wait().ok().flatten();
            if s.is_none() {
                std::thread::sleep(Duration::from_millis(5));
            }
            s
        });
        if let Some(s) = status {
            text += &format!(" ({s})");
        }
        let said: Vec<String> = self
            .stderr
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default();
        if !said.is_empty() {
            text += &format!("; its last words on stderr: {}", said.join(" / "));
        }
        text
    }

    /// Tells the process the run is over, closes its input and waits (at most the timeout)
    /// for it to exit; kills it otherwise.
    pub fn end(&self) {
        if self.broken.borrow().is_some() {
            // It failed (maybe hangs): no second wait for it.
            let child = &mut *self.child.borrow_mut();
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        let _ = self.write(&json!({"type": "end"}));
        self.stdin.borrow_mut().take();
        self.socket.borrow_mut().take();
        let deadline = Instant::now() + self.timeout;
        let mut child = self.child.borrow_mut();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let child = self.child.get_mut();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Keeps the last lines of `err` (cut short, made printable) on a thread of its own.
fn keep_stderr(err: impl Read + Send + 'static) -> Arc<Mutex<VecDeque<String>>> {
    let kept = Arc::new(Mutex::new(VecDeque::new()));
    let k = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut r = BufReader::new(err);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match (&mut r).take(4096).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let text = excerpt(String::from_utf8_lossy(&buf).trim_end());
                    if let Ok(mut q) = k.lock() {
                        if q.len() == STDERR_LINES {
                            q.pop_front();
                        }
                        q.push_back(text);
                    }
                }
            }
        }
    });
    kept
}
