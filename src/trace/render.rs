//! Reading a `trace.jsonl` back, selecting from it (one request, one negotiation, the causes
//! of one message), listing its negotiations, and rendering a selection as text, as a
//! Mermaid sequence diagram or in the Chrome trace-event format (see [`super::chrome`]).
//!
//! A trace can be many gigabytes, so everything here streams: [`events`] reads one line at a
//! time, and each selection ([`RequestFilter`], [`NegotiationView`], [`why`]) and each
//! rendering ([`Mermaid`], [`NegotiationTally`]) is fed one event at a time and keeps only what
//! its output needs. The slice functions ([`filter`], [`negotiation`], [`causes`],
//! [`negotiations`], [`mermaid`]) are the same over a trace already in memory.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use super::Terms;

/// One line of `trace.jsonl` (see `docs/trace-format.md`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Event {
    /// Position in the run.
    pub seq: u64,
    /// Emulated time, µs.
    pub t_us: u64,
    /// Sender.
    pub from: String,
    /// Receiver.
    pub to: String,
    /// Message kind.
    pub kind: String,
    /// Request id, if any.
    #[serde(default)]
    pub request: Option<String>,
    /// VM index, if any.
    #[serde(default)]
    pub vm: Option<u32>,
    /// Negotiation id, if any.
    #[serde(default)]
    pub negotiation: Option<u64>,
    /// The record whose handling sent this one.
    #[serde(default)]
    pub cause: Option<u64>,
    /// Unit price carried (peer messages).
    #[serde(default)]
    pub price: Option<f64>,
    /// The negotiation's contract (peer messages of a negotiation).
    #[serde(default)]
    pub contract: Option<Terms>,
    /// What the message says of its request (peer messages).
    #[serde(default)]
    pub verdict: Option<String>,
    /// Per request, for a batch (an offer, an answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Item>,
}

/// One request of a batch message.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Item {
    /// Request id.
    pub request: String,
    /// Resource units offered (in an offer).
    #[serde(default)]
    pub units: Option<f64>,
    /// The provider's verdict (in an answer): `accept`, `counter` or `reject`.
    #[serde(default)]
    pub verdict: Option<String>,
    /// The verdict's unit price.
    #[serde(default)]
    pub price: Option<f64>,
}

impl Event {
    /// The first text field holding a control or invisible character, if one does: igemu's
    /// names hold none, and such a character read from a trace would act in a terminal (an
    /// escape sequence), add lines to a Mermaid diagram (a newline) or hide (a bidirectional
    /// control).
    pub fn unshowable(&self) -> Option<&'static str> {
        let bad = |s: &str| s.chars().any(crate::input::diag::acts_invisibly);
        let fields = [
            ("from", Some(&self.from)),
            ("to", Some(&self.to)),
            ("kind", Some(&self.kind)),
            ("request", self.request.as_ref()),
            ("verdict", self.verdict.as_ref()),
        ];
        if let Some((name, _)) = fields.iter().find(|(_, v)| v.is_some_and(|v| bad(v))) {
            return Some(name);
        }
        self.items
            .iter()
            .any(|i| bad(&i.request) || i.verdict.as_deref().is_some_and(bad))
            .then_some("items")
    }

    /// Whether the record is about request `r`: by its own id or as one of its batch.
    pub fn mentions(&self, r: &str) -> bool {
        self.request.as_deref() == Some(r) || self.items.iter().any(|i| i.request == r)
    }

    /// Whether the record names no request, VM or negotiation of its own (a timer, a
    /// publication, a price update).
    fn anonymous(&self) -> bool {
        self.request.is_none() && self.negotiation.is_none() && self.items.is_empty()
    }

    /// Every request id the record names: its own and its batch's.
    fn request_ids(&self) -> impl Iterator<Item = &str> {
        self.request
            .as_deref()
            .into_iter()
            .chain(self.items.iter().map(|i| i.request.as_str()))
    }
}

/// A line of a trace that could not be read or is no record: its 1-based number and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The line's number (1-based).
    pub line: u64,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The longest trace line read, in bytes. Most records are under 300 bytes; a batch offer
/// or answer lists every request of its batch (about 50 bytes each), so this admits batches of
/// over 300 000 requests while keeping one line's memory bounded (`/dev/zero` as a trace).
pub const MAX_LINE: usize = 16 << 20;

/// The events of a trace, read one line at a time (blank lines skipped): memory stays that
/// of one line (at most [`MAX_LINE`] bytes) however long the trace is. Made by [`events`].
pub struct Events<R> {
    reader: R,
    buf: Vec<u8>,
    line: u64,
    failed: bool,
    max_line: usize,
    /// The last record's number: each must come after it.
    last_seq: Option<u64>,
}

/// Reads the events of the trace `reader` holds, lazily, in file order. The first line that
/// cannot be read or parsed, is longer than [`MAX_LINE`], or numbers its record no later
/// than the one before (two traces concatenated: counts and selections would mix two runs)
/// ends the iteration with a [`ReadError`] naming it.
pub fn events<R: BufRead>(reader: R) -> Events<R> {
    Events {
        reader,
        buf: Vec::new(),
        line: 0,
        failed: false,
        max_line: MAX_LINE,
        last_seq: None,
    }
}

/// What is wrong with record `seq` coming after record `before` (not a larger number): the
/// trace is out of order, most likely two traces concatenated.
pub fn out_of_order(seq: u64, before: u64) -> String {
    format!("seq {seq} after {before}: the trace is not in seq order (two traces concatenated?)")
}

/// The error for a line longer than `max` bytes.
fn too_long(line: u64, max: usize) -> ReadError {
    ReadError {
        line,
        message: format!("longer than {max} bytes; not a trace record"),
    }
}

impl<R: BufRead> Iterator for Events<R> {
    type Item = Result<Event, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            self.buf.clear();
            self.line += 1;
            // One byte past the cap tells a line that is too long from one that fits.
            let read = (&mut self.reader)
                .take(self.max_line as u64 + 1)
                .read_until(b'\n', &mut self.buf);
            let result = match read {
                Ok(0) => return None,
                Ok(n) if n > self.max_line && self.buf.last() != Some(&b'\n') => {
                    Err(too_long(self.line, self.max_line))
                }
                Ok(_) if self.buf.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(_) => serde_json::from_slice::<Event>(&self.buf)
                    .map_err(|e| ReadError {
                        line: self.line,
                        message: e.to_string(),
                    })
                    .and_then(|e| match self.last_seq.replace(e.seq) {
                        Some(before) if e.seq <= before => Err(ReadError {
                            line: self.line,
                            message: out_of_order(e.seq, before),
                        }),
                        _ => Ok(e),
                    })
                    .and_then(|e| match e.unshowable() {
                        Some(field) => Err(ReadError {
                            line: self.line,
                            message: format!(
                                "`{field}` holds a control or invisible character, which no \
                                 trace igemu writes holds (it would act in a terminal or add \
                                 lines to a diagram instead of showing)"
                            ),
                        }),
                        None => Ok(e),
                    }),
                Err(e) => Err(ReadError {
                    line: self.line,
                    message: format!("cannot read: {e}"),
                }),
            };
            self.failed = result.is_err();
            return Some(result);
        }
        None
    }
}

/// Parses a whole trace in memory; a malformed line is reported with its number.
pub fn parse(text: &str) -> Result<Vec<Event>, String> {
    events(text.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// A selection made in one pass, in trace order: keeps what `owner` assigns an owner to; a
/// record that names nothing of its own and was sent while handling a kept one follows it
/// (same owner). Causes come before their effects, so one pass sees every kept cause first.
/// Remembers the kept records' numbers only.
struct Select<O> {
    kept: BTreeMap<u64, O>,
}

impl<O: Copy> Select<O> {
    fn new() -> Self {
        Select {
            kept: BTreeMap::new(),
        }
    }

    /// The owner of `e` (its own, or that of the kept record that caused it), if it is kept.
    fn offer(&mut self, e: &Event, own: Option<O>) -> Option<O> {
        let follows = || e.cause.and_then(|c| self.kept.get(&c).copied());
        let o = own.or_else(|| e.anonymous().then(follows).flatten());
        if let Some(o) = o {
            self.kept.insert(e.seq, o);
        }
        o
    }
}

/// The events about one request, chosen as the trace streams by: its own messages and the
/// batches (offers, answers) it is part of and, by causes, every message that names nothing
/// of its own and was sent while handling a kept one. Until the first match it notes the
/// request ids the trace names (at most one entry per request), to say at the end what the
/// user may have meant ([`RequestFilter::unknown`]).
pub struct RequestFilter {
    request: String,
    select: Select<()>,
    matched: bool,
    seen: BTreeSet<String>,
}

impl RequestFilter {
    /// A filter for request `request`.
    pub fn new(request: &str) -> Self {
        RequestFilter {
            request: request.to_string(),
            select: Select::new(),
            matched: false,
            seen: BTreeSet::new(),
        }
    }

    /// Whether `e` is kept.
    pub fn keep(&mut self, e: &Event) -> bool {
        let own = e.mentions(&self.request);
        if own && !self.matched {
            self.matched = true;
            self.seen = BTreeSet::new(); // no longer needed: free it
        } else if !self.matched {
            for r in e.request_ids() {
                if !self.seen.contains(r) {
                    self.seen.insert(r.to_string());
                }
            }
        }
        self.select.offer(e, own.then_some(())).is_some()
    }

    /// After the whole trace: why the request selected nothing, with a fix (the closest id
    /// the trace names if it looks like a typo, else a few of its ids); `None` when the trace
    /// names the request.
    pub fn unknown(&self) -> Option<String> {
        if self.matched {
            return None;
        }
        let ids = &self.seen;
        let request = &self.request;
        let hint = match crate::input::diag::did_you_mean(request, ids.iter().map(String::as_str)) {
            Some(c) => format!("did you mean `{c}`?"),
            None if ids.is_empty() => "the trace names no request at all".to_string(),
            None => {
                let shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
                format!(
                    "its requests include {}{} ({} in all)",
                    shown.join(", "),
                    if ids.len() > shown.len() { ", ..." } else { "" },
                    ids.len()
                )
            }
        };
        Some(format!("no message names request `{request}`; {hint}"))
    }
}

/// Keeps the events about request `request` (as [`RequestFilter`] does).
pub fn filter<'a>(events: &'a [Event], request: &str) -> Vec<&'a Event> {
    let mut f = RequestFilter::new(request);
    events.iter().filter(|e| f.keep(e)).collect()
}

/// Why `request` selects nothing in `events`, with a fix (see [`RequestFilter::unknown`]).
pub fn unknown_request(events: &[Event], request: &str) -> Option<String> {
    let mut f = RequestFilter::new(request);
    events.iter().for_each(|e| {
        f.keep(e);
    });
    f.unknown()
}

/// The chain of causes that led to event `seq`, oldest first, ending with it.
pub fn causes(events: &[Event], seq: u64) -> Vec<&Event> {
    let by_seq: BTreeMap<u64, &Event> = events.iter().map(|e| (e.seq, e)).collect();
    let mut chain = Vec::new();
    let mut next = Some(seq);
    while let Some(s) = next {
        let Some(e) = by_seq.get(&s) else { break };
        chain.push(*e);
        // A cause precedes its effect, so the walk ends.
        next = e.cause.filter(|c| *c < s);
    }
    chain.reverse();
    chain
}

/// What [`RevLines::prev`] found.
enum Rev {
    /// A line (without its newline) and the byte offset it starts at.
    Line(u64, Vec<u8>),
    /// A line longer than the cap; the offset of one of its bytes.
    TooLong(u64),
}

/// The lines of a file from its last to its first, read in blocks from the end: memory is
/// one block and one line (at most `max_line` bytes). Each block is scanned for newlines once
/// and a line spanning blocks is joined once, so the cost is linear in the bytes read.
struct RevLines<R> {
    reader: R,
    /// Where the bytes not read yet end (they are `0..pos`).
    pos: u64,
    /// Bytes read but not yet given out: those at `pos..pos + buf.len()`, followed by the
    /// blocks of `tail`. A final newline of the file is left out, so every newline here
    /// ends a line that has yet to be given out.
    buf: Vec<u8>,
    /// Blocks read before `buf` (so later in the file) that hold no newline: the rest of the
    /// line being read, in reverse file order (the last one pushed comes first in the file).
    tail: Vec<Vec<u8>>,
    /// Their total length.
    tail_len: usize,
    /// Whether the first line has been given out.
    done: bool,
    max_line: usize,
}

impl<R: Read + Seek> RevLines<R> {
    fn new(mut reader: R, max_line: usize) -> std::io::Result<Self> {
        let size = reader.seek(SeekFrom::End(0))?;
        let mut pos = size;
        if pos > 0 {
            reader.seek(SeekFrom::Start(pos - 1))?;
            let mut last = [0];
            reader.read_exact(&mut last)?;
            if last[0] == b'\n' {
                pos -= 1;
            }
        }
        Ok(RevLines {
            done: size == 0,
            reader,
            pos,
            buf: Vec::new(),
            tail: Vec::new(),
            tail_len: 0,
            max_line,
        })
    }

    /// The previous line, or `None` at the start.
    fn prev(&mut self) -> std::io::Result<Option<Rev>> {
        const BLOCK: u64 = 1 << 16;
        if self.done {
            return Ok(None);
        }
        loop {
            // Only `buf` may hold a newline: `tail` was scanned when it was `buf`.
            let found = self.buf.iter().rposition(|b| *b == b'\n');
            if found.is_some() || self.pos == 0 {
                let start = found.map_or(0, |i| i + 1);
                let offset = self.pos + start as u64;
                if self.buf.len() - start + self.tail_len > self.max_line {
                    return Ok(Some(Rev::TooLong(offset)));
                }
                let mut line = Vec::with_capacity(self.buf.len() - start + self.tail_len);
                line.extend_from_slice(&self.buf[start..]);
                for block in self.tail.drain(..).rev() {
                    line.extend_from_slice(&block);
                }
                self.tail_len = 0;
                match found {
                    Some(i) => self.buf.truncate(i),
                    None => {
                        self.buf.clear();
                        self.done = true;
                    }
                }
                return Ok(Some(Rev::Line(offset, line)));
            }
            if self.buf.len() + self.tail_len > self.max_line {
                return Ok(Some(Rev::TooLong(self.pos)));
            }
            let n = self.pos.min(BLOCK);
            self.pos -= n;
            self.reader.seek(SeekFrom::Start(self.pos))?;
            let mut block = vec![0; n as usize];
            self.reader.read_exact(&mut block)?;
            let held = std::mem::replace(&mut self.buf, block);
            if !held.is_empty() {
                self.tail_len += held.len();
                self.tail.push(held);
            }
        }
    }
}

/// The chain of causes that led to a message, as [`why`] found it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chain {
    /// The messages, oldest first, ending with the one asked about (empty if the trace does
    /// not hold it).
    pub events: Vec<Event>,
    /// The cause the chain stops at because the trace does not hold it (a trace written with
    /// filters), if any.
    pub cut_at: Option<u64>,
}

/// The chain of causes that led to message `seq` (as [`causes`]), in constant memory: the
/// trace is read backwards from its end, keeping only the chain. Records must be in
/// increasing `seq` order and each cause must come before its effect: the whole file is read
/// to check that, since a trace out of order (two traces concatenated, say) would answer
/// from the wrong records. A malformed line, a line out of order, a cause not before its
/// effect or a line longer than [`MAX_LINE`] is reported with its number (found by counting
/// the lines before it).
pub fn why<R: Read + Seek>(reader: R, seq: u64) -> Result<Chain, ReadError> {
    why_capped(reader, seq, MAX_LINE)
}

/// Only the `seq` of a record: what the order check reads of the lines outside the chain.
#[derive(Deserialize)]
struct SeqOnly {
    seq: u64,
}

/// [`why`] with lines of at most `max_line` bytes.
fn why_capped<R: Read + Seek>(reader: R, seq: u64, max_line: usize) -> Result<Chain, ReadError> {
    let mut lines = RevLines::new(reader, max_line).map_err(unreadable)?;
    let mut chain = Chain::default();
    // The message the chain needs next; `None` once it is complete or cut.
    let mut wanted = Some(seq);
    // The record read before this one (the next in the file): its seq and offset.
    let mut later: Option<(u64, u64)> = None;
    while let Some(found) = lines.prev().map_err(unreadable)? {
        let (offset, line) = match found {
            Rev::Line(offset, line) => (offset, line),
            Rev::TooLong(offset) => {
                let line = line_number(&mut lines.reader, offset).map_err(unreadable)?;
                return Err(too_long(line, max_line));
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = |lines: &mut RevLines<R>, offset, message: String| match line_number(
            &mut lines.reader,
            offset,
        ) {
            Ok(line) => ReadError { line, message },
            Err(e) => unreadable(e),
        };
        // Off the chain only the order matters, so only `seq` is read.
        let this = match serde_json::from_slice::<SeqOnly>(&line) {
            Ok(e) => e.seq,
            Err(err) => return Err(at(&mut lines, offset, err.to_string())),
        };
        if let Some((next, next_offset)) = later.filter(|(next, _)| this >= *next) {
            return Err(at(&mut lines, next_offset, out_of_order(next, this)));
        }
        later = Some((this, offset));
        match wanted {
            Some(w) if this == w => {
                let e: Event = serde_json::from_slice(&line)
                    .map_err(|err| at(&mut lines, offset, err.to_string()))?;
                if let Some(c) = e.cause.filter(|c| *c >= e.seq) {
                    let message = format!(
                        "message {} gives {c} as its cause, but a cause comes before its effect (a smaller seq)",
                        e.seq
                    );
                    return Err(at(&mut lines, offset, message));
                }
                wanted = e.cause;
                chain.events.push(e);
            }
            Some(w) if this < w => {
                // Passed the one wanted: the trace does not hold it.
                chain.cut_at = Some(w).filter(|_| !chain.events.is_empty());
                wanted = None;
            }
            _ => {}
        }
    }
    if wanted.is_some() && !chain.events.is_empty() {
        chain.cut_at = wanted;
    }
    chain.events.reverse();
    Ok(chain)
}

/// The error for a trace that cannot be read.
fn unreadable(e: std::io::Error) -> ReadError {
    ReadError {
        line: 0,
        message: format!("cannot read: {e}"),
    }
}

/// The 1-based number of the line starting at byte `offset`.
fn line_number<R: Read + Seek>(reader: &mut R, offset: u64) -> std::io::Result<u64> {
    reader.seek(SeekFrom::Start(0))?;
    let mut before = std::io::BufReader::new(reader.take(offset));
    let mut lines = 1;
    loop {
        let buf = before.fill_buf()?;
        if buf.is_empty() {
            return Ok(lines);
        }
        lines += buf.iter().filter(|b| **b == b'\n').count() as u64;
        let n = buf.len();
        before.consume(n);
    }
}

/// A line of a rendered selection: a message, or one line standing for every message about
/// a lease after its redirection.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A message as recorded.
    Message(Event),
    /// A redirected lease's placement and end, collapsed.
    Lease(Lease),
}

/// What became of a lease after its redirection, from the messages about it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lease {
    /// The request.
    pub request: String,
    /// The first message it stands for.
    pub seq: u64,
    /// Its time, µs.
    pub t_us: u64,
    /// The IGG that placed it (or, if none asked a cluster, the one it was redirected to).
    pub by: String,
    /// The LRMSs asked to take it, in order.
    pub tried: Vec<String>,
    /// The LRMS it started on.
    pub lrms: Option<String>,
    /// When that LRMS was asked to take it, µs.
    pub placed_us: Option<u64>,
    /// When it started, µs.
    pub started_us: Option<u64>,
    /// When it ended, µs.
    pub ended_us: Option<u64>,
    /// How it ended, as its provider reported it (`completed`, `rejected`, ...).
    pub state: Option<String>,
    /// How many messages the line stands for.
    pub messages: usize,
}

impl Lease {
    fn add(&mut self, e: &Event) {
        if self.messages == 0 {
            self.seq = e.seq;
            self.t_us = e.t_us;
        }
        self.messages += 1;
        let from_lrms = e.from.starts_with("lrms:");
        match e.kind.as_str() {
            "AssignLease" if e.to.starts_with("lrms:") => {
                if self.tried.is_empty() {
                    self.by.clone_from(&e.from);
                }
                if !self.tried.contains(&e.to) {
                    self.tried.push(e.to.clone());
                }
                if self.lrms.is_none() {
                    self.placed_us = Some(e.t_us);
                }
            }
            "LeaseStarted" if from_lrms && self.lrms.is_none() => {
                self.lrms = Some(e.from.clone());
                self.started_us = Some(e.t_us);
            }
            "LeaseEnded" if self.ended_us.is_none() => self.ended_us = Some(e.t_us),
            "RemoteLease" => {
                if let Some(v) = e.verdict.as_deref().filter(|v| *v != "started") {
                    self.state.get_or_insert_with(|| v.to_string());
                    self.ended_us.get_or_insert(e.t_us);
                }
            }
            _ => {}
        }
    }

    /// The line's text, e.g. `lease ext-3 placed on lrms:b/c1 at 600s, ended at 4200s
    /// (completed)`.
    pub fn text(&self) -> String {
        let at = |us: u64| format!("{}s", secs(us));
        let mut s = format!("lease {}", self.request);
        match (&self.lrms, self.placed_us) {
            (Some(lrms), placed) => {
                let started = self.started_us.unwrap_or_default();
                let placed = placed.unwrap_or(started);
                s += &format!(" placed on {lrms} at {}", at(placed));
                if started != placed {
                    s += &format!(", started at {}", at(started));
                }
            }
            (None, _) if self.tried.is_empty() => s += " not placed",
            (None, _) => s += &format!(" not placed (asked {})", self.tried.join(", ")),
        }
        match self.ended_us {
            Some(t) => s += &format!(", ended at {}", at(t)),
            None => s += ", not ended in the trace",
        }
        if let Some(state) = &self.state {
            s += &format!(" ({state})");
        }
        s
    }
}

/// Negotiation `n`, chosen as the trace streams by: the messages between its IGGs (offer,
/// answers, redirections, acknowledgements, declines, their timers) and, for each request it
/// redirected, what followed the redirection — every message about the request from then on
/// and, by causes, the messages naming nothing of their own they led to. Unless `vm_steps`,
/// what followed one redirection is collapsed into one [`Lease`] line, placed where its first
/// message was. Keeps those lines only (a lease's line is complete at the end of the trace).
pub struct NegotiationView {
    n: u64,
    vm_steps: bool,
    /// Each redirected request, from its first redirection on, and where it went.
    redirected: Vec<(String, u64, String)>,
    /// Owners: `None` for the conversation, `Some(i)` for what followed redirection `i`.
    select: Select<Option<usize>>,
    lines: Vec<Line>,
    /// The line of each redirection's lease.
    lease_at: BTreeMap<usize, usize>,
}

impl NegotiationView {
    /// The view of negotiation `n`.
    pub fn new(n: u64, vm_steps: bool) -> Self {
        NegotiationView {
            n,
            vm_steps,
            redirected: Vec::new(),
            select: Select::new(),
            lines: Vec::new(),
            lease_at: BTreeMap::new(),
        }
    }

    /// Takes the next event of the trace.
    pub fn push(&mut self, e: Event) {
        let own = if e.negotiation == Some(self.n) {
            if let (Some(r), "PeerRedirect") = (&e.request, e.kind.as_str()) {
                if !self.redirected.iter().any(|(q, _, _)| q == r) {
                    self.redirected.push((r.clone(), e.seq, e.to.clone()));
                }
            }
            Some(None)
        } else {
            e.request.as_deref().and_then(|r| {
                let i = self.redirected.iter().position(|(q, _, _)| q == r)?;
                (e.seq > self.redirected[i].1).then_some(Some(i))
            })
        };
        match self.select.offer(&e, own) {
            Some(Some(i)) if !self.vm_steps => {
                let lines = &mut self.lines;
                let (request, _, provider) = &self.redirected[i];
                let at = *self.lease_at.entry(i).or_insert_with(|| {
                    lines.push(Line::Lease(Lease {
                        request: request.clone(),
                        by: provider.clone(),
                        ..Lease::default()
                    }));
                    lines.len() - 1
                });
                if let Line::Lease(lease) = &mut self.lines[at] {
                    lease.add(&e);
                }
            }
            Some(_) => self.lines.push(Line::Message(e)),
            None => {}
        }
    }

    /// The lines, in trace order.
    pub fn finish(self) -> Vec<Line> {
        self.lines
    }
}

/// Negotiation `n` of a trace in memory (as [`NegotiationView`] chooses it).
pub fn negotiation(events: &[Event], n: u64, vm_steps: bool) -> Vec<Line> {
    let mut view = NegotiationView::new(n, vm_steps);
    for e in events {
        view.push(e.clone());
    }
    view.finish()
}

fn secs(us: u64) -> String {
    crate::time::format_secs(us)
}

/// A unit price for people: three decimals, trailing zeros dropped (`3.227`, `1.5`).
pub fn price(p: f64) -> String {
    let s = format!("{p:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// One request of a batch in a label: `ext-3`, `ext-3 accept 0.93`, `ext-7 reject`.
fn item_text(i: &Item) -> String {
    let mut s = i.request.clone();
    if let Some(v) = &i.verdict {
        s += &format!(" {v}");
    }
    if let Some(p) = i.price {
        s += &format!(" {}", price(p));
    }
    s
}

/// What a message says beyond its kind, compactly: its request (and VM), its batch, its
/// verdict and price; an offer's price with the contract's maximum. E.g. ` [ext-3, ext-7]
/// @0.93 max 1.1`, ` ext-3 counter 1.02, ext-7 reject`, ` ext-3 @1.02`, ` ext-3 redirected`.
pub fn detail(e: &Event) -> String {
    let mut s = String::new();
    if let Some(r) = &e.request {
        s += &format!(" {r}");
    }
    if let Some(vm) = e.vm {
        s += &format!(" vm {vm}");
    }
    s + &terms(e)
}

/// The peering part of [`detail`]: batch, verdict, price.
fn terms(e: &Event) -> String {
    let mut s = String::new();
    if !e.items.is_empty() {
        let items: Vec<String> = e.items.iter().map(item_text).collect();
        if e.items
            .iter()
            .all(|i| i.verdict.is_none() && i.price.is_none())
        {
            s += &format!(" [{}]", items.join(", "));
        } else {
            s += &format!(" {}", items.join(", "));
        }
    }
    if let Some(v) = &e.verdict {
        s += &format!(" {v}");
    }
    if let Some(p) = e.price {
        s += &format!(" @{}", price(p));
        if e.kind == "PeerOffer" {
            if let Some(c) = e.contract {
                s += &format!(" max {}", price(c.max));
            }
        }
    }
    s
}

/// One line of text per line of a selection: number, time, sender, receiver, kind, request
/// and VM, what a peer message says (batch, verdict, price, as in [`detail`]), contract,
/// negotiation and cause; a collapsed lease as `lease ...` with the number of messages it
/// stands for.
pub fn text_line(line: &Line) -> String {
    match line {
        Line::Message(e) => {
            let mut extra = String::new();
            if let Some(r) = &e.request {
                extra += &format!(" request={r}");
            }
            if let Some(vm) = e.vm {
                extra += &format!(" vm={vm}");
            }
            extra += &terms(e);
            if let Some(c) = e.contract.filter(|_| e.kind != "PeerOffer") {
                extra += &format!(" contract={}..{}", price(c.min), price(c.max));
            }
            if let Some(n) = e.negotiation {
                extra += &format!(" negotiation={n}");
            }
            if let Some(c) = e.cause {
                extra += &format!(" cause=#{c}");
            }
            format!(
                "#{:<8} {:>14}s  {:<28} -> {:<28} {}{extra}",
                e.seq,
                secs(e.t_us),
                e.from,
                e.to,
                e.kind
            )
        }
        Line::Lease(l) => format!(
            "#{:<8} {:>14}s  {:<28} -> {:<28} {} [{} message(s); --vm-steps shows them]",
            l.seq,
            secs(l.t_us),
            l.by,
            l.lrms.as_deref().unwrap_or(""),
            l.text(),
            l.messages
        ),
    }
}

/// The lane of actor `a` in a diagram: with `vm_lanes` false, the VMs of one lease
/// (`vm:<request>/<i>`) share the lane `vm:<request>/*` (labels keep the VM index), so a
/// lease of many VMs does not make the diagram unreadably wide.
fn lane(a: &str, vm_lanes: bool) -> String {
    match a.strip_prefix("vm:").and_then(|r| r.rsplit_once('/')) {
        Some((request, _)) if !vm_lanes => format!("vm:{request}/*"),
        _ => a.to_string(),
    }
}

/// The actors a line is drawn between: sender and receiver; a lease from the IGG that placed
/// it to its LRMS (or on the IGG alone, if none took it).
fn ends(line: &Line) -> (&str, Option<&str>) {
    match line {
        Line::Message(e) => (&e.from, Some(&e.to)),
        Line::Lease(l) => (&l.by, l.lrms.as_deref()),
    }
}

/// A Mermaid `sequenceDiagram`, made one line at a time: participants in order of
/// appearance; one lane per VM with `vm_lanes`, else one per lease's VMs. Labels name the
/// requests (a batch's verdicts and prices too); a collapsed lease is an arrow from the IGG
/// that placed it to its LRMS, or a note over the IGG if none took it. The diagram is
/// [`Mermaid::head`] followed by every [`Mermaid::body_line`]; only the participants are
/// remembered, so the body can go to a file as it is made.
pub struct Mermaid {
    vm_lanes: bool,
    ids: BTreeMap<String, usize>,
    order: Vec<String>,
}

impl Mermaid {
    /// A diagram with one lane per VM if `vm_lanes`.
    pub fn new(vm_lanes: bool) -> Self {
        Mermaid {
            vm_lanes,
            ids: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    fn id(&mut self, a: &str) -> usize {
        let a = lane(a, self.vm_lanes);
        if let Some(i) = self.ids.get(&a) {
            return *i;
        }
        self.ids.insert(a.clone(), self.order.len());
        self.order.push(a);
        self.order.len() - 1
    }

    /// The diagram's text for `line` (with its newline).
    pub fn body_line(&mut self, line: &Line) -> String {
        let (from, to) = ends(line);
        let (f, t) = (self.id(from), to.map(|t| self.id(t)));
        let label = match line {
            Line::Message(e) => {
                let mut label = format!("{}{} t={}s", e.kind, detail(e), secs(e.t_us));
                if let Some(n) = e.negotiation {
                    label += &format!(" neg {n}");
                }
                label
            }
            Line::Lease(l) => l.text(),
        };
        let label = diagram_text(&label);
        match t {
            Some(t) => format!("    P{f}->>P{t}: {label}\n"),
            None => format!("    Note over P{f}: {label}\n"),
        }
    }

    /// What comes before the body: the diagram's type and its participants.
    pub fn head(&self) -> String {
        let mut out = String::from("sequenceDiagram\n");
        for (i, a) in self.order.iter().enumerate() {
            out += &format!("    participant P{i} as {}\n", diagram_text(a));
        }
        out
    }
}

/// Text as a Mermaid statement may hold it: `;` and `#` (which end a statement and begin an
/// entity) and any control or invisible character (a newline would begin a statement of its
/// own) become spaces. The trace reader refuses such characters already; this holds for
/// lines made any other way too.
fn diagram_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == ';' || c == '#' || crate::input::diag::acts_invisibly(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A Mermaid `sequenceDiagram` of the lines (see [`Mermaid`]).
pub fn mermaid(lines: &[Line], vm_lanes: bool) -> String {
    let mut m = Mermaid::new(vm_lanes);
    let body: String = lines.iter().map(|l| m.body_line(l)).collect();
    m.head() + &body
}

/// The lines in Chrome trace-event JSON, in memory (see [`super::chrome::Chrome`]).
pub fn chrome(lines: &[Line]) -> serde_json::Value {
    let mut c = super::chrome::Chrome::new(Vec::new());
    let written = lines
        .iter()
        .try_for_each(|l| c.push(l))
        .and_then(|_| c.finish());
    written
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// One offered request of one negotiation, as `igemu trace --negotiations` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct NegotiationRow {
    /// The negotiation id.
    pub negotiation: u64,
    /// The requester's Grid.
    pub requester: String,
    /// The provider's Grid.
    pub provider: String,
    /// The request.
    pub request: String,
    /// `accepted`, `countered-taken`, `countered-declined`, `rejected`, `timed-out` (no answer
    /// the requester acted on, and the offer timed out) or `pending` (neither, by the end).
    pub outcome: &'static str,
    /// For a redirected request: `redirected`, `refused` or `unacknowledged`.
    pub redirect: Option<&'static str>,
    /// For a request the provider took over (`redirect` is `redirected`): what the provider
    /// last reported of it (`RemoteLease`) — `completed`, `cancelled`, `rejected` (every
    /// cluster of the provider refused it: rejected after redirect) or `started` (no end
    /// reported by the end of the trace); `None` if the trace holds no report.
    pub at_provider: Option<&'static str>,
    /// The unit price it ended at: redirected at, declined, answered or offered.
    pub price: Option<f64>,
    /// The contract's price range.
    pub contract: Option<Terms>,
    /// Records of the negotiation about this request or its batch.
    pub messages: usize,
    /// When the first of those records was, µs of emulated time.
    pub start_us: u64,
    /// From the first of those records to the last, µs.
    pub duration_us: u64,
    /// The unit price it was offered at (its offer's opening price).
    pub offered: Option<f64>,
}

/// The Grid of an IGG's actor name (`igg:busy` → `busy`).
fn grid(actor: &str) -> String {
    actor.strip_prefix("igg:").unwrap_or(actor).to_string()
}

/// What the records of one negotiation say about one request (or, for the records that name
/// no request, about all of them): enough to make its row, never the records themselves.
#[derive(Clone, Debug, Default)]
struct Facts {
    messages: usize,
    /// First and last record: (seq, time µs).
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
    /// The first contract, offer price, redirection price and declined price, by seq.
    contract: Option<(u64, Terms)>,
    offer: Option<(u64, Option<f64>)>,
    redirect: Option<(u64, Option<f64>)>,
    decline: Option<(u64, Option<f64>)>,
    /// The answers' verdicts and prices for the request, in order.
    answers: Vec<(Option<String>, Option<f64>)>,
    /// Whether an acknowledgement said `redirected`, and whether one said `refused`.
    acked: bool,
    refused: bool,
}

/// The earlier of two (seq, value) pairs.
fn earliest<T: Copy>(a: Option<(u64, T)>, b: Option<(u64, T)>) -> Option<(u64, T)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, y) => x.or(y),
    }
}

impl Facts {
    /// Notes record `e` (about `request`, if it names one).
    fn add(&mut self, e: &Event, request: Option<&str>) {
        self.messages += 1;
        self.first.get_or_insert((e.seq, e.t_us));
        self.last = Some((e.seq, e.t_us));
        if let Some(c) = e.contract {
            self.contract.get_or_insert((e.seq, c));
        }
        let slot = match e.kind.as_str() {
            "PeerOffer" => Some(&mut self.offer),
            "PeerRedirect" => Some(&mut self.redirect),
            // A late answer's decline settles nothing: the offer had timed out already.
            "PeerDecline" if e.verdict.as_deref() != Some("late") => Some(&mut self.decline),
            _ => None,
        };
        if let Some(slot) = slot {
            slot.get_or_insert((e.seq, e.price));
        }
        match (e.kind.as_str(), request) {
            ("PeerAnswer", Some(r)) => self.answers.extend(
                e.items
                    .iter()
                    .filter(|i| i.request == r)
                    .map(|i| (i.verdict.clone(), i.price)),
            ),
            ("PeerRedirectAck", _) => match e.verdict.as_deref() {
                Some("redirected") => self.acked = true,
                Some("refused") => self.refused = true,
                _ => {}
            },
            _ => {}
        }
    }

    /// These facts and `other`'s, as if their records had been noted together.
    fn merge(&self, other: &Facts) -> Facts {
        let last = match (self.last, other.last) {
            (Some(x), Some(y)) => Some(if y.0 > x.0 { y } else { x }),
            (x, y) => x.or(y),
        };
        Facts {
            messages: self.messages + other.messages,
            first: earliest(self.first, other.first),
            last,
            contract: earliest(self.contract, other.contract),
            offer: earliest(self.offer, other.offer),
            redirect: earliest(self.redirect, other.redirect),
            decline: earliest(self.decline, other.decline),
            answers: self.answers.clone(),
            acked: self.acked || other.acked,
            refused: self.refused || other.refused,
        }
    }
}

/// One negotiation as the trace goes by.
#[derive(Default)]
struct Talk {
    /// Requester and provider, from its first peer message.
    ends: Option<(String, String)>,
    /// Each request it names, in order of first mention, with what was said of it.
    requests: Vec<(String, Facts)>,
    /// What its records naming no request said (part of every request's story).
    anonymous: Facts,
    timed_out: bool,
}

/// Every negotiation of a trace fed one event at a time, to list one row per offered request
/// ([`NegotiationTally::rows`]). Keeps a few numbers per (negotiation, request), never the
/// records.
#[derive(Default)]
pub struct NegotiationTally {
    talks: BTreeMap<u64, Talk>,
    /// What providers reported of each request redirected to them (`RemoteLease`), by
    /// request: the last end state reported, else whether it was reported started.
    reported: BTreeMap<String, &'static str>,
}

/// A `RemoteLease` record's verdict, as a row's `at_provider`.
fn reported(verdict: Option<&str>) -> Option<&'static str> {
    Some(match verdict? {
        "started" => "started",
        "completed" => "completed",
        "cancelled" => "cancelled",
        "rejected" => "rejected",
        "unfinished" => "unfinished",
        _ => return None,
    })
}

impl NegotiationTally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event of the trace.
    pub fn push(&mut self, e: &Event) {
        if e.kind == "RemoteLease" {
            if let (Some(r), Some(v)) = (&e.request, reported(e.verdict.as_deref())) {
                // An end reported stands; a (resent) start report does not undo it.
                let entry = self.reported.entry(r.clone()).or_insert(v);
                if v != "started" {
                    *entry = v;
                }
            }
            return;
        }
        let Some(n) = e.negotiation else { return };
        let talk = self.talks.entry(n).or_default();
        if talk.ends.is_none() && e.kind.starts_with("Peer") {
            // The requester speaks first; an answer or an acknowledgement is the provider's.
            talk.ends = Some(match e.kind.as_str() {
                "PeerAnswer" | "PeerRedirectAck" => (e.to.clone(), e.from.clone()),
                _ => (e.from.clone(), e.to.clone()),
            });
        }
        talk.timed_out |= e.kind == "OfferTimeout";
        if e.request.is_none() && e.items.is_empty() {
            talk.anonymous.add(e, None);
            return;
        }
        let mut noted: Vec<&str> = Vec::new();
        let named = e.items.iter().map(|i| i.request.as_str());
        for r in named.chain(e.request.as_deref()) {
            if noted.contains(&r) {
                continue; // a record counts once per request
            }
            noted.push(r);
            let i = match talk.requests.iter().position(|(q, _)| q == r) {
                Some(i) => i,
                None => {
                    talk.requests.push((r.to_string(), Facts::default()));
                    talk.requests.len() - 1
                }
            };
            talk.requests[i].1.add(e, Some(r));
        }
    }

    /// One row per (negotiation, offered request), by negotiation id and then in offer order.
    /// Per request, the outcome counts as the summary's `negotiations` counters do (one answer
    /// acted on per request): a redirection taken after an accept or a counter-offer, a
    /// decline, a rejection, or a timeout.
    pub fn rows(&self) -> impl Iterator<Item = NegotiationRow> + '_ {
        self.talks.iter().flat_map(move |(&n, talk)| {
            talk.requests.iter().filter_map(move |(r, facts)| {
                let reported = self.reported.get(r).copied();
                talk.row(n, r, facts, reported)
            })
        })
    }
}

impl Talk {
    /// The row of request `r` of this negotiation (numbered `n`); none if it has no peer
    /// message, so no requester and provider. `reported`: what a provider reported of `r`.
    fn row(
        &self,
        n: u64,
        r: &str,
        facts: &Facts,
        reported: Option<&'static str>,
    ) -> Option<NegotiationRow> {
        let (requester, provider) = self.ends.as_ref()?;
        let f = facts.merge(&self.anonymous);
        let offered = f.offer.and_then(|o| o.1);
        let first_answer = f.answers.first();
        let verdict = first_answer.and_then(|a| a.0.as_deref());
        let answered_price = first_answer.and_then(|a| a.1);
        let (outcome, price) = if let Some((_, at)) = f.redirect {
            // The answer it acted on is the one at the price it redirected at.
            let countered = f
                .answers
                .iter()
                .any(|a| a.0.as_deref() == Some("counter") && a.1 == at);
            let outcome = if countered {
                "countered-taken"
            } else {
                "accepted"
            };
            (outcome, at)
        } else if let Some((_, at)) = f.decline {
            ("countered-declined", at)
        } else if verdict == Some("reject") {
            ("rejected", offered)
        } else if self.timed_out {
            ("timed-out", answered_price.or(offered))
        } else {
            ("pending", answered_price.or(offered))
        };
        let redirect = f.redirect.map(|_| {
            if f.acked {
                "redirected"
            } else if f.refused {
                "refused"
            } else {
                "unacknowledged"
            }
        });
        // Only the provider that took it over reports on it.
        let at_provider = reported.filter(|_| redirect == Some("redirected"));
        let t0 = f.first.map_or(0, |x| x.1);
        let t1 = f.last.map_or(0, |x| x.1);
        Some(NegotiationRow {
            negotiation: n,
            requester: grid(requester),
            provider: grid(provider),
            request: r.to_string(),
            outcome,
            redirect,
            at_provider,
            price,
            contract: f.contract.map(|c| c.1),
            messages: f.messages,
            start_us: t0,
            duration_us: t1.saturating_sub(t0),
            offered,
        })
    }
}

/// Every negotiation of a trace in memory (see [`NegotiationTally::rows`]).
pub fn negotiations(events: &[Event]) -> Vec<NegotiationRow> {
    let mut tally = NegotiationTally::new();
    events.iter().for_each(|e| tally.push(e));
    tally.rows().collect()
}

/// The rows as CSV, with a header: negotiation, requester, provider, request, outcome,
/// redirect, price, contract_min, contract_max, messages, duration_s, at_provider (last, so
/// that readers taking columns by position keep working).
pub fn negotiations_csv(rows: &[NegotiationRow]) -> Result<Vec<u8>, csv::Error> {
    write_negotiations_csv(rows.iter().cloned(), Vec::new()).map(|(bytes, _)| bytes)
}

/// Writes the rows as CSV (as [`negotiations_csv`]) to `out` as they come; gives `out` back,
/// flushed, with the number of rows.
pub fn write_negotiations_csv<W: std::io::Write>(
    rows: impl IntoIterator<Item = NegotiationRow>,
    out: W,
) -> Result<(W, usize), csv::Error> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "negotiation",
        "requester",
        "provider",
        "request",
        "outcome",
        "redirect",
        "price",
        "contract_min",
        "contract_max",
        "messages",
        "duration_s",
        "at_provider",
    ])?;
    let num = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let mut n = 0;
    for r in rows {
        w.write_record([
            r.negotiation.to_string(),
            r.requester,
            r.provider,
            r.request,
            r.outcome.to_string(),
            r.redirect.unwrap_or_default().to_string(),
            num(r.price),
            num(r.contract.map(|c| c.min)),
            num(r.contract.map(|c| c.max)),
            r.messages.to_string(),
            secs(r.duration_us),
            r.at_provider.unwrap_or_default().to_string(),
        ])?;
        n += 1;
    }
    let out = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok((out, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const TRACE: &str = r#"{"seq":0,"t_us":0,"t":"0","from":"igg:a","to":"igg:b","kind":"PeerOffer","negotiation":7}
{"seq":1,"t_us":5,"t":"0.000005","from":"igg:b","to":"igg:a","kind":"PeerAnswer","negotiation":7}
{"seq":2,"t_us":9,"t":"0.000009","from":"igg:a","to":"igg:b","kind":"PeerRedirect","request":"r1","negotiation":7}
{"seq":3,"t_us":20,"t":"0.00002","from":"igg:b","to":"lrms:b/c","kind":"AssignLease","request":"r1"}
{"seq":4,"t_us":30,"t":"0.00003","from":"dve:a","to":"igg:a","kind":"SubmitExternal","request":"r2"}
"#;

    /// A negotiation of two requests: r1 countered and taken, run on lrms:b/c and reported;
    /// r2 rejected. r3 is another request's business.
    const NEGOTIATION: &str = r#"{"seq":0,"t_us":0,"t":"0","from":"dve:a","to":"igg:a","kind":"SubmitExternal","request":"r1"}
{"seq":1,"t_us":1000000,"t":"1","from":"igg:a","to":"igg:b","kind":"PeerOffer","negotiation":4,"price":0.93,"contract":{"min":0.93,"max":1.1},"items":[{"request":"r1","units":100.0},{"request":"r2","units":50.0}]}
{"seq":2,"t_us":1000000,"t":"1","from":"igg:b","to":"igg:a","kind":"PeerAnswer","negotiation":4,"cause":1,"contract":{"min":0.93,"max":1.1},"items":[{"request":"r1","verdict":"counter","price":1.02},{"request":"r2","verdict":"reject"}]}
{"seq":3,"t_us":1000000,"t":"1","from":"igg:a","to":"igg:b","kind":"PeerRedirect","request":"r1","negotiation":4,"cause":2,"price":1.02,"contract":{"min":0.93,"max":1.1}}
{"seq":4,"t_us":1000000,"t":"1","from":"igg:b","to":"igg:a","kind":"PeerRedirectAck","request":"r1","negotiation":4,"cause":3,"contract":{"min":0.93,"max":1.1},"verdict":"redirected"}
{"seq":5,"t_us":1000000,"t":"1","from":"igg:b","to":"lrms:b/c","kind":"AssignLease","request":"r1","cause":3}
{"seq":6,"t_us":1000000,"t":"1","from":"lrms:b/c","to":"igg:b","kind":"AssignAnswer","request":"r1","cause":5}
{"seq":7,"t_us":1000000,"t":"1","from":"lrms:b/c","to":"lrms:b/c","kind":"Tick","cause":5}
{"seq":8,"t_us":2000000,"t":"2","from":"lrms:b/c","to":"vm:r1/0","kind":"VmCommand","request":"r1","vm":0,"cause":7}
{"seq":9,"t_us":2000000,"t":"2","from":"lrms:b/c","to":"vm:r3/0","kind":"VmCommand","request":"r3","vm":0,"cause":7}
{"seq":10,"t_us":3000000,"t":"3","from":"lrms:b/c","to":"igg:b","kind":"LeaseStarted","request":"r1","cause":8}
{"seq":11,"t_us":3000000,"t":"3","from":"igg:b","to":"igg:a","kind":"RemoteLease","request":"r1","cause":10,"verdict":"started"}
{"seq":12,"t_us":90000000,"t":"90","from":"lrms:b/c","to":"igg:b","kind":"LeaseEnded","request":"r1"}
{"seq":13,"t_us":90000000,"t":"90","from":"igg:b","to":"igg:a","kind":"RemoteLease","request":"r1","cause":12,"verdict":"completed"}
{"seq":14,"t_us":90000000,"t":"90","from":"igg:a","to":"igg:b","kind":"RemoteLeaseAck","request":"r1","cause":13}
"#;

    fn seqs(events: &[&Event]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    fn line_seqs(lines: &[Line]) -> Vec<u64> {
        lines
            .iter()
            .map(|l| match l {
                Line::Message(e) => e.seq,
                Line::Lease(l) => l.seq,
            })
            .collect()
    }

    #[test]
    fn a_negotiation_brings_the_requests_it_redirected() {
        let ev = parse(TRACE).expect("valid");
        let neg = negotiation(&ev, 7, true);
        assert_eq!(line_seqs(&neg), vec![0, 1, 2, 3]);
        assert_eq!(filter(&ev, "r2").len(), 1);
    }

    #[test]
    fn messages_without_ids_follow_the_kept_ones_that_caused_them() {
        let text = r#"{"seq":0,"t_us":0,"t":"0","from":"dve:a","to":"igg:a","kind":"SubmitExternal","request":"r1"}
{"seq":1,"t_us":0,"t":"0","from":"igg:a","to":"lrms:a/c","kind":"AssignLease","request":"r1","cause":0}
{"seq":2,"t_us":0,"t":"0","from":"lrms:a/c","to":"lrms:a/c","kind":"Tick","cause":1}
{"seq":3,"t_us":9,"t":"0.000009","from":"lrms:a/c","to":"vm:r2/0","kind":"VmCommand","request":"r2","vm":0,"cause":2}
{"seq":4,"t_us":9,"t":"0.000009","from":"lrms:a/c","to":"lrms:a/c","kind":"PublishTick"}
"#;
        let ev = parse(text).expect("valid");
        // The tick r1's assignment set follows r1; what the tick did for r2 does not, and a
        // publication nothing kept caused does not either.
        assert_eq!(seqs(&filter(&ev, "r1")), vec![0, 1, 2]);
        assert_eq!(seqs(&causes(&ev, 3)), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_request_is_found_in_the_batches_it_was_offered_in() {
        let ev = parse(NEGOTIATION).expect("valid");
        assert_eq!(seqs(&filter(&ev, "r2")), vec![1, 2]);
        assert!(filter(&ev, "r1").iter().any(|e| e.kind == "PeerAnswer"));
    }

    #[test]
    fn what_follows_a_redirection_collapses_into_one_line_per_lease() {
        let ev = parse(NEGOTIATION).expect("valid");
        let lines = negotiation(&ev, 4, false);
        // The conversation, then one line for r1's lease at its first message (#5); r1's
        // submission came before the negotiation, and r3's VM is another lease's.
        assert_eq!(line_seqs(&lines), vec![1, 2, 3, 4, 5]);
        let Line::Lease(lease) = &lines[4] else {
            panic!("a lease line: {lines:?}")
        };
        assert_eq!(lease.messages, 9, "#5 to #14 but #9");
        assert_eq!(
            lease.text(),
            "lease r1 placed on lrms:b/c at 1s, started at 3s, ended at 90s (completed)"
        );
        assert_eq!(lease.by, "igg:b");
        // With --vm-steps, every message stays.
        let all = negotiation(&ev, 4, true);
        assert_eq!(
            line_seqs(&all),
            vec![1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14]
        );
        assert!(negotiation(&ev, 99, false).is_empty());
    }

    #[test]
    fn a_lease_no_cluster_took_says_so() {
        let mut lease = Lease {
            request: "r9".into(),
            by: "igg:b".into(),
            ..Lease::default()
        };
        for (seq, kind, from, to, verdict) in [
            (1, "AssignLease", "igg:b", "lrms:b/c1", None),
            (2, "AssignLease", "igg:b", "lrms:b/c2", None),
            (3, "RemoteLease", "igg:b", "igg:a", Some("rejected")),
        ] {
            lease.add(&Event {
                seq,
                t_us: 5_000_000,
                from: from.into(),
                to: to.into(),
                kind: kind.into(),
                request: Some("r9".into()),
                vm: None,
                negotiation: None,
                cause: None,
                price: None,
                contract: None,
                verdict: verdict.map(str::to_string),
                items: Vec::new(),
            });
        }
        assert_eq!(
            lease.text(),
            "lease r9 not placed (asked lrms:b/c1, lrms:b/c2), ended at 5s (rejected)"
        );
        let m = mermaid(&[Line::Lease(lease)], false);
        assert!(m.contains("Note over P0: lease r9 not placed"), "{m}");
    }

    #[test]
    fn labels_name_requests_verdicts_and_prices() {
        let ev = parse(NEGOTIATION).expect("valid");
        let m = mermaid(&negotiation(&ev, 4, false), false);
        assert!(m.starts_with("sequenceDiagram\n"));
        assert!(m.contains("participant P0 as igg:a"), "{m}");
        for label in [
            "P0->>P1: PeerOffer [r1, r2] @0.93 max 1.1 t=1s neg 4",
            "P1->>P0: PeerAnswer r1 counter 1.02, r2 reject t=1s neg 4",
            "P0->>P1: PeerRedirect r1 @1.02 t=1s neg 4",
            "P1->>P0: PeerRedirectAck r1 redirected t=1s neg 4",
            "P1->>P2: lease r1 placed on lrms:b/c at 1s, started at 3s, ended at 90s (completed)",
        ] {
            assert!(m.contains(label), "{label} missing from\n{m}");
        }
        assert_eq!(m.lines().filter(|l| l.contains("->>")).count(), 5);
        let text = text_line(&Line::Message(ev[3].clone()));
        assert!(
            text.ends_with(
                "PeerRedirect request=r1 @1.02 contract=0.93..1.1 negotiation=4 cause=#2"
            ),
            "{text}"
        );
        assert_eq!(price(3.0), "3");
        assert_eq!(price(0.1234), "0.123");
    }

    #[test]
    fn a_record_with_a_control_character_is_refused_and_diagrams_hold_none() {
        for (field, line) in [
            (
                "kind",
                r#"{"seq":0,"t_us":0,"from":"a","to":"b","kind":"X\nparticipant Z"}"#,
            ),
            (
                "to",
                r#"{"seq":0,"t_us":0,"from":"a","to":"b\u001b]0;title\u0007","kind":"X"}"#,
            ),
            (
                "request",
                r#"{"seq":0,"t_us":0,"from":"a","to":"b","kind":"X","request":"r\u202e1"}"#,
            ),
            (
                "items",
                r#"{"seq":0,"t_us":0,"from":"a","to":"b","kind":"X","items":[{"request":"r\r"}]}"#,
            ),
        ] {
            let e = parse(line).expect_err(line);
            assert!(e.contains(&format!("`{field}` holds a control")), "{e}");
        }
        // Lines made otherwise are made safe in the diagram: one statement each.
        let mut e = parse(r#"{"seq":0,"t_us":0,"from":"a","to":"c","kind":"k"}"#)
            .expect("valid")
            .remove(0);
        e.from = "a\nb".into();
        e.kind = "X\nparticipant Z as evil; #1".into();
        let m = mermaid(&[Line::Message(e)], false);
        assert_eq!(m.lines().count(), 4, "{m}");
        assert!(!m.contains(';') && !m.contains("#1"), "{m}");
    }

    #[test]
    fn mermaid_and_chrome_render_every_message() {
        let ev = parse(TRACE).expect("valid");
        let m = mermaid(&negotiation(&ev, 7, true), true);
        assert!(m.contains("participant P0 as igg:a"));
        assert!(m.contains("P0->>P1: PeerOffer t=0s neg 7"));
        assert_eq!(m.lines().filter(|l| l.contains("->>")).count(), 4);
        let all: Vec<Line> = ev.iter().cloned().map(Line::Message).collect();
        let c = chrome(&all);
        let events = c["traceEvents"].as_array().expect("array");
        assert_eq!(events.iter().filter(|e| e["ph"] == "i").count(), 5);
        let named = |what: &str| {
            let mut names: Vec<&str> = events
                .iter()
                .filter(|e| e["name"] == what)
                .filter_map(|e| e["args"]["name"].as_str())
                .collect();
            names.sort_unstable();
            names
        };
        assert_eq!(
            named("thread_name"),
            ["dve:a", "igg:a", "igg:b", "lrms:b/c"],
            "one named track per actor"
        );
        assert_eq!(named("process_name"), ["grid a", "grid b"], "one per Grid");
        // A collapsed lease is a span on its LRMS's track.
        let ev = parse(NEGOTIATION).expect("valid");
        let c = chrome(&negotiation(&ev, 4, false));
        let span = c["traceEvents"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["ph"] == "X").cloned())
            .expect("a span");
        assert_eq!(
            (span["ts"].as_u64(), span["dur"].as_u64()),
            (Some(3_000_000), Some(87_000_000))
        );
    }

    #[test]
    fn the_vms_of_a_lease_share_a_lane_unless_asked_otherwise() {
        let line = |vm: u32| {
            format!(
                r#"{{"seq":{vm},"t_us":0,"t":"0","from":"lrms:g/c","to":"vm:r1/{vm}","kind":"VmCommand","request":"r1","vm":{vm}}}"#
            )
        };
        let ev = parse(&format!("{}\n{}\n", line(0), line(1))).expect("valid");
        let lines: Vec<Line> = ev.iter().cloned().map(Line::Message).collect();
        let merged = mermaid(&lines, false);
        assert_eq!(merged.matches("participant").count(), 2, "{merged}");
        assert!(merged.contains("participant P1 as vm:r1/*"));
        assert!(merged.contains("P0->>P1: VmCommand r1 vm 1 t=0s"));
        assert_eq!(mermaid(&lines, true).matches("participant").count(), 3);
    }

    #[test]
    fn negotiations_list_each_offered_request_with_its_outcome() {
        let mut text = NEGOTIATION.to_string();
        // Negotiation 5: r4 accepted then refused; r5 countered and declined; negotiation 6
        // timed out unanswered; negotiation 7: r7 accepted, redirected, then rejected by the
        // provider's clusters.
        text += r#"{"seq":20,"t_us":100000000,"t":"100","from":"igg:a","to":"igg:c","kind":"PeerOffer","negotiation":5,"price":0.9,"contract":{"min":0.9,"max":1.0},"items":[{"request":"r4","units":1.0},{"request":"r5","units":1.0}]}
{"seq":21,"t_us":100000000,"t":"100","from":"igg:c","to":"igg:a","kind":"PeerAnswer","negotiation":5,"items":[{"request":"r4","verdict":"accept","price":0.9},{"request":"r5","verdict":"counter","price":0.99}]}
{"seq":22,"t_us":100000000,"t":"100","from":"igg:a","to":"igg:c","kind":"PeerRedirect","request":"r4","negotiation":5,"price":0.9}
{"seq":23,"t_us":100000000,"t":"100","from":"igg:a","to":"igg:c","kind":"PeerDecline","request":"r5","negotiation":5,"price":0.99,"verdict":"decline"}
{"seq":24,"t_us":101000000,"t":"101","from":"igg:c","to":"igg:a","kind":"PeerRedirectAck","request":"r4","negotiation":5,"verdict":"refused"}
{"seq":30,"t_us":200000000,"t":"200","from":"igg:a","to":"igg:c","kind":"PeerOffer","negotiation":6,"price":0.9,"items":[{"request":"r6","units":1.0}]}
{"seq":31,"t_us":230000000,"t":"230","from":"igg:a","to":"igg:a","kind":"OfferTimeout","negotiation":6}
{"seq":40,"t_us":300000000,"t":"300","from":"igg:a","to":"igg:c","kind":"PeerOffer","negotiation":7,"price":0.9,"items":[{"request":"r7","units":1.0}]}
{"seq":41,"t_us":300000000,"t":"300","from":"igg:c","to":"igg:a","kind":"PeerAnswer","negotiation":7,"items":[{"request":"r7","verdict":"accept","price":0.9}]}
{"seq":42,"t_us":300000000,"t":"300","from":"igg:a","to":"igg:c","kind":"PeerRedirect","request":"r7","negotiation":7,"price":0.9}
{"seq":43,"t_us":300000000,"t":"300","from":"igg:c","to":"igg:a","kind":"PeerRedirectAck","request":"r7","negotiation":7,"verdict":"redirected"}
{"seq":44,"t_us":300000000,"t":"300","from":"igg:c","to":"igg:a","kind":"RemoteLease","request":"r7","cause":43,"verdict":"rejected"}
"#;
        let ev = parse(&text).expect("valid");
        let rows = negotiations(&ev);
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                let (n, req, outcome) = (r.negotiation, &r.request, r.outcome);
                let (redirect, price, messages) = (r.redirect, r.price, r.messages);
                let at_provider = r.at_provider;
                format!("{n} {req} {outcome} {redirect:?} {at_provider:?} {price:?} {messages}")
            })
            .collect();
        assert_eq!(
            got,
            [
                "4 r1 countered-taken Some(\"redirected\") Some(\"completed\") Some(1.02) 4",
                "4 r2 rejected None None Some(0.93) 2",
                "5 r4 accepted Some(\"refused\") None Some(0.9) 4",
                "5 r5 countered-declined None None Some(0.99) 3",
                "6 r6 timed-out None None Some(0.9) 2",
                "7 r7 accepted Some(\"redirected\") Some(\"rejected\") Some(0.9) 4",
            ]
        );
        assert_eq!(
            (rows[0].requester.as_str(), rows[0].provider.as_str()),
            ("a", "b")
        );
        assert_eq!(rows[4].duration_us, 30_000_000);
        let csv = String::from_utf8(negotiations_csv(&rows).expect("csv")).expect("utf-8");
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("negotiation,requester,provider,request,outcome,redirect,price,contract_min,contract_max,messages,duration_s,at_provider")
        );
        assert_eq!(
            lines.next(),
            Some("4,a,b,r1,countered-taken,redirected,1.02,0.93,1.1,4,0,completed")
        );
        assert!(csv.contains("\n6,a,c,r6,timed-out,,0.9,,,2,30,\n"), "{csv}");
        assert_eq!(
            csv.lines().last(),
            Some("7,a,c,r7,accepted,redirected,0.9,,,4,0,rejected")
        );
    }

    /// A reader that fails: whatever comes after it is never reached.
    struct Broken;

    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }

    #[test]
    fn events_stream_one_line_at_a_time_and_errors_name_their_line() {
        use std::io::Read;
        let first = TRACE.lines().next().expect("a line").to_string() + "\n\n";
        // The first event comes out before the reader gets to the failing part: nothing is
        // read ahead of the line asked for.
        let reader = std::io::BufReader::new(first.as_bytes().chain(Broken));
        let mut it = events(reader);
        assert_eq!(it.next().map(|e| e.map(|e| e.seq)), Some(Ok(0)));
        let err = it.next().expect("an error").expect_err("the read fails");
        assert_eq!(err.line, 3, "after a blank line 2");
        assert!(err.message.contains("disk on fire"), "{err}");
        assert!(it.next().is_none(), "nothing after an error");
        // A malformed line stops the reading with its number; the lines before it were read.
        let text = format!("{}\n{{\"seq\":1}}\n", TRACE.lines().next().expect("a line"));
        let got: Vec<Result<u64, u64>> = events(text.as_bytes())
            .map(|e| e.map(|e| e.seq).map_err(|e| e.line))
            .collect();
        assert_eq!(got, [Ok(0), Err(2)]);
    }

    #[test]
    fn why_reads_the_trace_backwards_and_keeps_only_the_chain() {
        let ev = parse(NEGOTIATION).expect("valid");
        let chain = why(Cursor::new(NEGOTIATION), 8).expect("valid");
        let want: Vec<Event> = causes(&ev, 8).into_iter().cloned().collect();
        assert_eq!(chain.events, want);
        assert_eq!(
            chain.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3, 5, 7, 8]
        );
        assert_eq!(chain.cut_at, None, "#1 has no cause");
        assert_eq!(
            why(Cursor::new(TRACE), 99).expect("valid"),
            Chain::default()
        );
        // A chain whose cause the trace does not hold (a filtered trace) says where it stops.
        let cut: String = NEGOTIATION
            .lines()
            .filter(|l| !l.contains("\"seq\":5,"))
            .map(|l| format!("{l}\n"))
            .collect();
        let chain = why(Cursor::new(&cut), 8).expect("valid");
        assert_eq!(chain.events.len(), 2, "#7 and #8");
        assert_eq!(chain.cut_at, Some(5));
        // Every line is read (for the order check): a bad line before or after the chain is
        // named by its number; a file without a final newline and with blank lines reads
        // the same; blocks of 64 KiB join up.
        let tail = format!("{NEGOTIATION}not json\n");
        assert_eq!(why(Cursor::new(&tail), 8).map_err(|e| e.line), Err(16));
        let head = format!("\nnot json\n\n{}", NEGOTIATION.trim_end());
        assert_eq!(why(Cursor::new(&head), 8).map_err(|e| e.line), Err(2));
        let blank = format!("\n\n{}\n\n", NEGOTIATION.trim_end());
        assert_eq!(
            why(Cursor::new(&blank), 8).map(|c| c.events),
            Ok(want.clone())
        );
        let mut middle: Vec<&str> = NEGOTIATION.lines().collect();
        middle.insert(3, "not json");
        let middle = middle.join("\n");
        assert_eq!(why(Cursor::new(&middle), 8).map_err(|e| e.line), Err(4));
        let padded = format!("{}\n{NEGOTIATION}", " ".repeat(200_000));
        assert_eq!(why(Cursor::new(&padded), 8).map(|c| c.events), Ok(want));
    }

    #[test]
    fn lines_longer_than_the_cap_are_an_error_at_their_line() {
        let text = "\n12345678\n123456789\n";
        let mut it = events(text.as_bytes());
        it.max_line = 8;
        assert_eq!(
            it.next().map(|e| e.map_err(|e| e.line)),
            Some(Err(2)),
            "8 bytes fit"
        );
        let mut it = events(&b"\n\n123456789"[..]);
        it.max_line = 8;
        let err = it.next().expect("an error").expect_err("too long");
        assert_eq!(err, too_long(3, 8));
        assert_eq!(err.message, "longer than 8 bytes; not a trace record");
        assert!(it.next().is_none(), "nothing after an error");
        // An endless line stops at the cap, not at the end of memory.
        let mut it = events(std::io::BufReader::new(std::io::repeat(b'x')));
        it.max_line = 1 << 16;
        assert_eq!(it.next(), Some(Err(too_long(1, 1 << 16))));
        // Backwards too, wherever the long line is.
        let ok = NEGOTIATION.lines().map(str::len).max().unwrap_or(0);
        let long = format!("{}\n{NEGOTIATION}", "x".repeat(ok + 1));
        assert_eq!(why_capped(Cursor::new(&long), 8, ok), Err(too_long(1, ok)));
        let mut middle: Vec<String> = NEGOTIATION.lines().map(String::from).collect();
        middle.insert(5, " ".repeat(200_000));
        let middle = middle.join("\n");
        assert_eq!(
            why_capped(Cursor::new(&middle), 8, 100_000),
            Err(too_long(6, 100_000))
        );
        assert!(why_capped(Cursor::new(&middle), 8, 200_000).is_ok());
    }

    #[test]
    fn why_reads_a_long_line_in_linear_time() {
        // 64 MiB in one line: joined once, not once per 64 KiB block (that took minutes).
        let line = vec![b' '; 64 << 20];
        let started = std::time::Instant::now();
        let chain = why_capped(Cursor::new(&line), 8, 128 << 20).expect("blank");
        assert_eq!(chain, Chain::default());
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    #[test]
    fn why_refuses_a_trace_out_of_seq_order() {
        // The audit's case: #5 twice, then #3; the answer was "no message 5".
        let record = |seq: u64, cause: u64| {
            format!(
                r#"{{"seq":{seq},"t_us":0,"t":"0","from":"a","to":"b","kind":"Arrive","cause":{cause}}}"#
            )
        };
        let dup = [record(5, 3), record(5, 4), record(3, 5)].join("\n");
        let err = why(Cursor::new(&dup), 5).expect_err("out of order");
        assert_eq!(err.line, 3);
        assert_eq!(
            err.message,
            "seq 3 after 5: the trace is not in seq order (two traces concatenated?)"
        );
        // Two runs concatenated: the chain in the second would be answered from the wrong
        // run, or #12 said to be missing; both are refused at the first line of the second.
        let twice = format!("{NEGOTIATION}{NEGOTIATION}");
        for seq in [8, 12, 14] {
            let err = why(Cursor::new(&twice), seq).expect_err("concatenated");
            assert_eq!(err.line, 16, "{err}");
            assert!(err.message.starts_with("seq 0 after 14:"), "{err}");
        }
        // A cause that is not before its effect is named, not dropped from the chain.
        let cycle = [record(3, 1), record(4, 9)].join("\n");
        let err = why(Cursor::new(&cycle), 4).expect_err("a cause after its effect");
        assert_eq!(err.line, 2);
        assert!(err.message.contains("gives 9 as its cause"), "{err}");
    }

    #[test]
    fn a_request_filter_remembers_ids_only_until_it_matches() {
        let ev = parse(NEGOTIATION).expect("valid");
        let mut f = RequestFilter::new("r3");
        let kept: Vec<u64> = ev.iter().filter(|e| f.keep(e)).map(|e| e.seq).collect();
        assert_eq!(kept, [9]);
        assert!(f.seen.is_empty(), "ids dropped once the request is found");
        assert_eq!(f.unknown(), None);
        let msg = unknown_request(&ev, "r33").expect("not in the trace");
        assert!(msg.contains("did you mean `r3`?"), "{msg}");
    }

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(
            parse("{\"seq\":0}\n").unwrap_err().split(':').next(),
            Some("line 1")
        );
        let bad_item =
            r#"{"seq":0,"t_us":0,"from":"a","to":"b","kind":"PeerOffer","items":[{"units":1}]}"#;
        assert!(parse(&format!("\n{bad_item}\n"))
            .unwrap_err()
            .starts_with("line 2:"));
    }
}
