//! Message-flow records. Every message an actor sends goes through one path
//! ([`crate::actors::Emu::send`] and friends) that counts it and, when tracing is on, writes a
//! record as one JSON line (schema in `docs/trace-format.md`). Tracing that is off
//! costs one branch and one counter increment per message; a [`TraceFilter`] limits what a
//! traced run writes (every message is still counted and numbered).

pub mod chrome;
mod decision;
pub mod render;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use decision::Note;

use crate::model::RequestId;
use crate::time::EmuTime;

/// Every message kind a trace can hold, as its records' `kind` field writes it (the VM steps
/// are [`crate::model::VmEvent`] names, checked by a test).
pub const KINDS: &[&str] = &[
    "Arrive",
    "SubmitExternal",
    "SubmitLocal",
    "AssignLease",
    "AssignAnswer",
    "ProbeStart",
    "StartOffer",
    "LeaseStarted",
    "LeaseEnded",
    "RequestDone",
    "Tick",
    "VmCommand",
    "VmReport",
    "Occupy",
    "Vacate",
    "CapacityCheck",
    "Deploy",
    "Booted",
    "Completed",
    "Stop",
    "Pause",
    "Unpause",
    "Suspend",
    "Suspended",
    "Resume",
    "Resumed",
    "Migrate",
    "Migrated",
    "RelocateLease",
    "AdoptLease",
    "AdoptAnswer",
    "RelocationOutcome",
    "PublishTick",
    "FreeSlots",
    "GridSlots",
    "SlotsRequest",
    "Reallocate",
    "NegotiationTick",
    "PeerOffer",
    "PeerAnswer",
    "PeerDecline",
    "PeerRedirect",
    "PeerRedirectAck",
    "OfferTimeout",
    "RedirectTimeout",
    "RemoteLease",
    "RemoteLeaseAck",
    "RemoteLeaseTimeout",
    "PriceUpdate",
    "Crash",
    "Restart",
    "EndOfRun",
    "Decision",
    "PolicyAnswer",
    "PolicyDeadline",
];

/// Which messages a traced run writes to `trace.jsonl`: those that pass every part given
/// (parts combine with AND; an empty filter keeps all). Messages left out are still counted
/// and numbered, so the records kept have the `seq` and `cause` of the full run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// Message kinds to keep (see [`KINDS`]); `None` keeps every kind.
    pub kinds: Option<BTreeSet<String>>,
    /// Actor patterns: a message is kept when its sender or its receiver matches one (see
    /// [`actor_matches`]). Empty keeps every actor.
    pub actors: Vec<String>,
    /// Keep messages sent at or after this time.
    pub from: Option<EmuTime>,
    /// Keep messages sent before this time.
    pub to: Option<EmuTime>,
}

/// Whether actor `name` matches `pattern`: a pattern ending in `:` or `/` is a prefix
/// (`igg:` every IGG, `host:das2/` every host of Grid `das2`), one ending in `*` is the prefix
/// before it (`lrms:das2/fs*`), any other is an exact name (`igg:das2`).
pub fn actor_matches(pattern: &str, name: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix('*') {
        name.starts_with(prefix)
    } else if pattern.ends_with(':') || pattern.ends_with('/') {
        name.starts_with(pattern)
    } else {
        name == pattern
    }
}

/// Refuses a `--trace-actors` pattern that names no actor of the run (it kept nothing, and
/// the run said nothing), with the closest name the run has.
pub fn check_actor_patterns(patterns: &[String], catalogue: &[String]) -> Result<(), String> {
    for p in patterns {
        let narrowed = p.strip_suffix('*').unwrap_or(p);
        let hit = catalogue.iter().any(|name| {
            // A VM's name is its request's prefix and a number: a pattern within one is
            // taken as naming a VM of it.
            actor_matches(p, name) || (name.starts_with("vm:") && narrowed.starts_with(name))
        });
        if hit {
            continue;
        }
        let shown = crate::input::diag::shown(p);
        let hint = match crate::input::diag::did_you_mean(p, catalogue.iter().map(String::as_str)) {
            Some(c) => format!("did you mean `{c}`? "),
            None => String::new(),
        };
        return Err(format!(
            "`{shown}` names no actor of this run; {hint}actors are named director, igg:GRID, \
             dve:GRID, lrms:GRID/CLUSTER, users:GRID/CLUSTER, host:GRID/CLUSTER/N and \
             vm:REQUEST/N; end a pattern with `:`, `/` or `*` to match a prefix (`igg:`, \
             `host:das2/`, `lrms:das2/fs*`)"
        ));
    }
    Ok(())
}

impl TraceFilter {
    /// Whether the filter keeps everything.impl TraceFilter {
    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        *self == TraceFilter::default()
    }

    /// Kinds from a comma-separated list (`PeerOffer,PeerAnswer`); an unknown kind is an
    /// error with the closest known one, or the list of them.
    pub fn parse_kinds(text: &str) -> Result<BTreeSet<String>, String> {
        let mut kinds = BTreeSet::new();
        for k in text.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            if !KINDS.contains(&k) {
                let hint = match crate::input::diag::did_you_mean(k, KINDS.iter().copied()) {
                    Some(c) => format!("did you mean `{c}`? "),
                    None => String::new(),
                };
                return Err(format!(
                    "unknown message kind `{k}`; {hint}the kinds are: {}",
                    KINDS.join(", ")
                ));
            }
            kinds.insert(k.to_string());
        }
        if kinds.is_empty() {
            return Err(format!(
                "no message kind given; name some, e.g. `PeerOffer,PeerAnswer` (the kinds are: {})",
                KINDS.join(", ")
            ));
        }
        Ok(kinds)
    }

    /// Actor patterns from a comma-separated list (`igg:,host:das2/`).
    pub fn parse_actors(text: &str) -> Result<Vec<String>, String> {
        let actors: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        if actors.is_empty() {
            return Err(
                "no actor pattern given; e.g. `igg:` (every IGG), `host:das2/` (the hosts of Grid das2) or `lrms:das2/fs0`".into(),
            );
        }
        Ok(actors)
    }

    /// A window of emulated time `FROM..TO`, either end optional (`1h..2h`, `..6h`, `30m..`),
    /// durations as in topologies; kept are messages sent at `FROM` or later and before `TO`.
    pub fn parse_window(text: &str) -> Result<(Option<EmuTime>, Option<EmuTime>), String> {
        let example =
            "write FROM..TO with durations as in topologies, e.g. `1h..2h`, `..6h` or `30m..`";
        let Some((from, to)) = text.split_once("..") else {
            return Err(format!("`{text}` is no time window; {example}"));
        };
        let at = |side: &str| -> Result<Option<EmuTime>, String> {
            let side = side.trim();
            if side.is_empty() {
                return Ok(None);
            }
            crate::time::parse_duration(side)
                .map(|d| Some(EmuTime::ZERO + d))
                .map_err(|e| format!("`{text}`: {e}; {example}"))
        };
        let (from, to) = (at(from)?, at(to)?);
        if let (Some(f), Some(t)) = (from, to) {
            if t <= f {
                return Err(format!(
                    "`{text}` is an empty window: its end is not after its start; {example}"
                ));
            }
        }
        Ok((from, to))
    }

    /// Whether a message sent at `t` is in the window.
    fn in_window(&self, t: EmuTime) -> bool {
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|e| t < e)
    }

    /// Whether actor `name` is one the filter keeps messages of.
    fn keeps_actor(&self, name: &str) -> bool {
        self.actors.is_empty() || self.actors.iter().any(|p| actor_matches(p, name))
    }

    /// Whether messages of `kind` are kept.
    fn keeps_kind(&self, kind: &str) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(kind))
    }
}

/// A compact handle for an actor's name in traces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId(pub u32);

/// Correlation ids carried by a message.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Correlation {
    /// The request (lease) the message is about.
    pub request: Option<RequestId>,
    /// The VM within the lease (0-based).
    pub vm: Option<u32>,
    /// The negotiation the message belongs to.
    pub negotiation: Option<u64>,
}

impl Correlation {
    /// About one request.
    pub fn request(id: RequestId) -> Self {
        Correlation {
            request: Some(id),
            ..Self::default()
        }
    }
    /// About one VM of one request.
    pub fn vm(id: RequestId, vm: u32) -> Self {
        Correlation {
            request: Some(id),
            vm: Some(vm),
            negotiation: None,
        }
    }
}

/// A contract's price range per resource unit, as traces write it.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Terms {
    /// The least the requester pays (its opening offer).
    pub min: f64,
    /// The most it pays.
    pub max: f64,
}

/// One request of a batch (an offer or an answer) in a trace record.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PeerItem {
    /// The request.
    pub request: RequestId,
    /// Its resource units (in an offer).
    pub units: Option<f64>,
    /// The provider's verdict (in an answer): `accept`, `counter` or `reject`.
    pub verdict: Option<&'static str>,
    /// The unit price of that verdict (accepted or counter-offered).
    pub price: Option<f64>,
}

/// What a message between IGGs says about its negotiation (and a cluster's refusal of an
/// assignment, as a verdict), written only in its trace record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerDetail {
    /// The unit price it carries.
    pub price: Option<f64>,
    /// The contract's price range (an offer carries it; the tracer writes it on every later
    /// message of the same negotiation).
    pub contract: Option<Terms>,
    /// What it says of its one request: `decline`, `redirected`, `refused`, a lease report's
    /// `started` or end state.
    pub verdict: Option<&'static str>,
    /// Per request, for a batch (offer, answer).
    pub items: Vec<PeerItem>,
}

/// A message that can be traced: its kind and correlation ids.
pub trait Traced {
    /// The message kind as written in traces.
    const KIND: &'static str;
    /// The kind of this message (for messages whose kind depends on their content).
    fn kind(&self) -> &'static str {
        Self::KIND
    }
    /// Correlation ids.
    fn correlation(&self) -> Correlation {
        Correlation::default()
    }
    /// Peering detail (messages between IGGs; a refused assignment's reason); computed only
    /// when the record is written.
    fn peer(&self) -> Option<PeerDetail> {
        None
    }
}

/// What a record says beyond its ends and cause: kind, correlation ids and peering detail.
pub type About = (&'static str, Correlation, Option<PeerDetail>);

#[derive(Serialize)]
struct ItemLine<'a> {
    request: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    units: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    price: Option<f64>,
}

#[derive(Serialize)]
struct Line<'a> {
    seq: u64,
    t_us: u64,
    t: &'a str,
    from: &'a str,
    to: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    negotiation: Option<u64>,
    /// The record whose handling sent this message (or set its timer).
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    contract: Option<Terms>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    items: Vec<ItemLine<'a>>,
    /// A plug-in's decision (kind `Decision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'a Note>,
}

/// An actor's name as registered: 16 bytes, as a run registers one per VM instance (with a
/// `String` it took 32).
enum ActorName {
    Text(Box<str>),
    /// VM `.1` of lease `.0`, registered while nothing is written.
    Vm(RequestId, u32),
}

const _: () = assert!(std::mem::size_of::<ActorName>() == 16);

impl ActorName {
    /// The name as written: with a sink every name is registered as text.
    fn text(&self) -> &str {
        match self {
            ActorName::Text(name) => name,
            ActorName::Vm(..) => "vm",
        }
    }
}

/// Counts messages and, when enabled, writes them to `trace.jsonl`.
pub struct Tracer {
    sink: Option<RefCell<BufWriter<File>>>,
    failed: RefCell<Option<String>>,
    messages: Cell<u64>,
    /// Records that are plug-ins' decisions, not messages (numbered among them).
    decisions: Cell<u64>,
    names: RefCell<Vec<ActorName>>,
    labels: Vec<String>,
    /// The record being handled right now (every actor runs on one thread).
    current: Cell<Option<u64>>,
    /// Each negotiation's contract, from its offer, for the later messages of it.
    contracts: RefCell<BTreeMap<u64, Terms>>,
    /// What is written, if not every message.
    filter: Option<TraceFilter>,
    /// Per actor, whether the filter's actor patterns match it (decided once, when the actor
    /// is registered).
    actor_kept: RefCell<Vec<bool>>,
    /// The last messages (time, sender, receiver, kind), when kept ([`Tracer::keep_recent`]).
    recent: RefCell<VecDeque<Recent>>,
    /// How many of the last messages are kept (0: none).
    keep: Cell<usize>,
}

/// One of the last messages a tracer keeps for a live view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recent {
    /// When it was sent.
    pub at: EmuTime,
    /// Sender.
    pub from: ActorId,
    /// Receiver.
    pub to: ActorId,
    /// Its kind (`trace.jsonl`'s `kind`).
    pub kind: &'static str,
}

impl Tracer {
    /// A tracer that only counts.
    pub fn counting(labels: Vec<String>) -> Tracer {
        Tracer {
            sink: None,
            failed: RefCell::new(None),
            messages: Cell::new(0),
            decisions: Cell::new(0),
            names: RefCell::new(Vec::new()),
            labels,
            current: Cell::new(None),
            contracts: RefCell::new(BTreeMap::new()),
            filter: None,
            actor_kept: RefCell::new(Vec::new()),
            recent: RefCell::new(VecDeque::new()),
            keep: Cell::new(0),
        }
    }

    /// From now on keeps the last `n` messages ([`Tracer::recent`]), for a live view.
    pub fn keep_recent(&self, n: usize) {
        self.keep.set(n);
    }

    /// The last messages kept, oldest first.
    pub fn recent(&self) -> Vec<Recent> {
        self.recent.borrow().iter().copied().collect()
    }

    /// Writes only what `filter` keeps (an empty filter keeps every message). Set before
    /// any actor is registered.
    pub fn with_filter(mut self, filter: TraceFilter) -> Tracer {
        self.filter = (!filter.is_empty()).then_some(filter);
        self
    }

    /// A tracer writing to `path`. `labels` names requests by [`RequestId`].
    pub fn to_file(path: &Path, labels: Vec<String>) -> std::io::Result<Tracer> {
        let file = File::create(path)?;
        let mut t = Tracer::counting(labels);
        t.sink = Some(RefCell::new(BufWriter::with_capacity(1 << 16, file)));
        Ok(t)
    }

    /// Registers an actor name and returns its handle.
    pub fn register(&self, name: String) -> ActorId {
        if let Some(f) = &self.filter {
            self.actor_kept.borrow_mut().push(f.keeps_actor(&name));
        }
        self.push_name(ActorName::Text(name.into_boxed_str()))
    }

    /// Registers VM `vm` of `lease` (named `vm:LEASE/VM`). Untraced, the name is only
    /// spelled out when asked for: a run starts a VM actor per VM, and formatting and
    /// keeping every name cost more than the rest of registering it.
    pub fn register_vm(&self, lease: RequestId, vm: u32) -> ActorId {
        if self.sink.is_some() || self.filter.is_some() {
            return self.register(self.vm_name(lease, vm));
        }
        self.push_name(ActorName::Vm(lease, vm))
    }

    fn push_name(&self, name: ActorName) -> ActorId {
        let mut names = self.names.borrow_mut();
        names.push(name);
        ActorId((names.len() - 1) as u32)
    }

    fn vm_name(&self, lease: RequestId, vm: u32) -> String {
        format!("vm:{}/{}", self.label(lease), vm)
    }

    /// The name of actor `id`.
    /// The trace name of actor `id`, if the run has one of that number.
    pub fn name_if_any(&self, id: ActorId) -> Option<String> {
        let known = (id.0 as usize) < self.names.borrow().len();
        known.then(|| self.name(id))
    }

    /// The trace name of actor `id` (one the run registered).
    pub fn name(&self, id: ActorId) -> String {
        match &self.names.borrow()[id.0 as usize] {
            ActorName::Text(name) => name.to_string(),
            ActorName::Vm(lease, vm) => self.vm_name(*lease, *vm),
        }
    }

    /// The label of request `id` (as in the topology and the outputs).
    pub fn label(&self, id: RequestId) -> &str {
        &self.labels[id.0 as usize]
    }

    /// Whether events are written.
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Messages recorded so far (plug-ins' decisions, numbered among them, left out).
    pub fn messages(&self) -> u64 {
        self.messages.get() - self.decisions.get()
    }

    /// Records a plug-in's decision, made by actor `by` at `t` while the record under way is
    /// handled: a record of kind `Decision` (numbered among the messages, not counted as
    /// one), written when the run is traced and the filter keeps it.
    pub fn decision(&self, t: EmuTime, by: ActorId, note: &Note) {
        let seq = self.messages.get();
        self.messages.set(seq + 1);
        self.decisions.set(self.decisions.get() + 1);
        let Some(sink) = &self.sink else {
            return;
        };
        if let Some(f) = &self.filter {
            let kept = self
                .actor_kept
                .borrow()
                .get(by.0 as usize)
                .copied()
                .unwrap_or(false);
            if !(f.in_window(t) && f.keeps_kind("Decision") && kept) {
                return;
            }
        }
        let names = self.names.borrow();
        let mut buf = [0u8; 32];
        let line = Line {
            seq,
            t_us: t.as_micros(),
            t: crate::time::write_secs(t.as_micros(), &mut buf),
            from: names[by.0 as usize].text(),
            to: names[by.0 as usize].text(),
            kind: "Decision",
            request: note.request.map(|r| self.labels[r.0 as usize].as_str()),
            vm: None,
            negotiation: None,
            cause: self.current(),
            price: None,
            contract: None,
            verdict: None,
            items: Vec::new(),
            decision: Some(note),
        };
        self.emit(sink, &line);
    }

    /// The record whose handling is under way, if any: the cause of what is sent now.
    #[inline]
    pub fn current(&self) -> Option<u64> {
        self.current.get()
    }

    /// Makes `cause` the record under way; returns the one it replaces (to restore after).
    #[inline]
    pub fn enter(&self, cause: Option<u64>) -> Option<u64> {
        self.current.replace(cause)
    }

    /// Records one message caused by record `cause`; returns its sequence number.
    #[inline]
    pub fn record(
        &self,
        t: EmuTime,
        ends: (ActorId, ActorId),
        kind: &'static str,
        corr: Correlation,
        cause: Option<u64>,
    ) -> u64 {
        self.record_with(t, ends, cause, || (kind, corr, None))
    }

    /// Like [`Tracer::record`], computing what the record says (kind, correlation, peering
    /// detail) only when it is written (an untraced run only counts).
    #[inline]
    pub fn record_with(
        &self,
        t: EmuTime,
        (from, to): (ActorId, ActorId),
        cause: Option<u64>,
        what: impl FnOnce() -> About,
    ) -> u64 {
        let seq = self.messages.get();
        self.messages.set(seq + 1);
        if self.keep.get() > 0 {
            return self.record_kept(seq, t, (from, to), cause, what());
        }
        if let Some(sink) = &self.sink {
            match &self.filter {
                None => self.write(sink, (seq, t), (from, to), what(), cause),
                Some(f) => self.write_filtered(f, sink, (seq, t), (from, to), what, cause),
            }
        }
        seq
    }

    /// [`Tracer::record_with`] when the last messages are kept.
    #[cold]
    fn record_kept(
        &self,
        seq: u64,
        at: EmuTime,
        (from, to): (ActorId, ActorId),
        cause: Option<u64>,
        about: About,
    ) -> u64 {
        let mut recent = self.recent.borrow_mut();
        while recent.len() >= self.keep.get() {
            recent.pop_front();
        }
        recent.push_back(Recent {
            at,
            from,
            to,
            kind: about.0,
        });
        drop(recent);
        if let Some(sink) = &self.sink {
            match &self.filter {
                None => self.write(sink, (seq, at), (from, to), about, cause),
                Some(f) => self.write_filtered(f, sink, (seq, at), (from, to), || about, cause),
            }
        }
        seq
    }

    /// Writes the record if `f` keeps it. A kept record is the line the unfiltered trace
    /// has: a negotiation's contract is noted from its offer even when the offer is not
    /// written, for the later messages of the negotiation that are.
    #[cold]
    fn write_filtered(
        &self,
        f: &TraceFilter,
        sink: &RefCell<BufWriter<File>>,
        (seq, t): (u64, EmuTime),
        (from, to): (ActorId, ActorId),
        what: impl FnOnce() -> About,
        cause: Option<u64>,
    ) {
        if f.to.is_some_and(|end| t >= end) {
            return; // time only goes on: nothing later is written, contracts included
        }
        let about = what();
        if let Some(p) = &about.2 {
            self.contract(about.1.negotiation, p);
        }
        let actor_ok = || {
            let kept = self.actor_kept.borrow();
            let ok = |a: ActorId| kept.get(a.0 as usize).copied().unwrap_or(false);
            ok(from) || ok(to)
        };
        if f.in_window(t) && f.keeps_kind(about.0) && actor_ok() {
            self.write(sink, (seq, t), (from, to), about, cause);
        }
    }

    /// The contract of `peer`'s negotiation: the one it carries (remembered for the later
    /// messages of the negotiation), or the one its offer carried.
    fn contract(&self, negotiation: Option<u64>, peer: &PeerDetail) -> Option<Terms> {
        let n = negotiation?;
        let mut known = self.contracts.borrow_mut();
        match peer.contract {
            Some(terms) => {
                known.insert(n, terms);
                Some(terms)
            }
            None => known.get(&n).copied(),
        }
    }

    #[cold]
    fn write(
        &self,
        sink: &RefCell<BufWriter<File>>,
        (seq, t): (u64, EmuTime),
        (from, to): (ActorId, ActorId),
        (kind, corr, peer): About,
        cause: Option<u64>,
    ) {
        // Only messages between IGGs have a contract (timers of a negotiation do not).
        let contract = peer
            .as_ref()
            .and_then(|p| self.contract(corr.negotiation, p));
        let peer = peer.unwrap_or_default();
        let items = peer
            .items
            .iter()
            .map(|i| ItemLine {
                request: self.label(i.request),
                units: i.units,
                verdict: i.verdict,
                price: i.price,
            })
            .collect();
        let names = self.names.borrow();
        let mut buf = [0u8; 32];
        let ts = crate::time::write_secs(t.as_micros(), &mut buf);
        let line = Line {
            seq,
            t_us: t.as_micros(),
            t: ts,
            from: names[from.0 as usize].text(),
            to: names[to.0 as usize].text(),
            kind,
            request: corr.request.map(|r| self.labels[r.0 as usize].as_str()),
            vm: corr.vm,
            negotiation: corr.negotiation,
            cause,
            price: peer.price,
            contract,
            verdict: peer.verdict,
            items,
            decision: None,
        };
        self.emit(sink, &line);
    }

    /// Writes one record's line; the first write error is kept for [`Tracer::finish`].
    fn emit(&self, sink: &RefCell<BufWriter<File>>, line: &Line<'_>) {
        let mut w = sink.borrow_mut();
        let res = serde_json::to_writer(&mut *w, line)
            .map_err(std::io::Error::from)
            .and_then(|_| w.write_all(b"\n"));
        if let Err(e) = res {
            self.failed
                .borrow_mut()
                .get_or_insert_with(|| e.to_string());
        }
    }

    /// Flushes the trace file; reports the first write error, if any.
    pub fn finish(&self) -> Result<(), String> {
        if let Some(sink) = &self.sink {
            if let Err(e) = sink.borrow_mut().flush() {
                self.failed
                    .borrow_mut()
                    .get_or_insert_with(|| e.to_string());
            }
        }
        match self.failed.borrow().clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::VmEvent;

    #[test]
    fn actor_patterns_are_exact_names_or_prefixes() {
        assert!(actor_matches("igg:", "igg:das2"));
        assert!(actor_matches("host:das2/", "host:das2/fs0/3"));
        assert!(!actor_matches("host:das2/", "host:das20/fs0/3"));
        assert!(actor_matches("igg:das2", "igg:das2"));
        assert!(
            !actor_matches("igg:das2", "igg:das20"),
            "exact unless a prefix"
        );
        assert!(actor_matches("lrms:das2/fs*", "lrms:das2/fs1"));
        assert!(!actor_matches("lrms:das2/fs*", "users:das2/fs1"));
    }

    #[test]
    fn kinds_are_checked_with_a_suggestion() {
        let k = TraceFilter::parse_kinds("PeerOffer, PeerAnswer").expect("valid");
        assert_eq!(k.len(), 2);
        let err = TraceFilter::parse_kinds("PeerOfer").expect_err("unknown");
        assert!(err.contains("did you mean `PeerOffer`?"), "{err}");
        assert!(err.contains("EndOfRun"), "lists the kinds: {err}");
        assert!(TraceFilter::parse_kinds(" , ").is_err());
        for e in VmEvent::ALL {
            assert!(KINDS.contains(&e.name()), "{}", e.name());
        }
    }

    #[test]
    fn windows_take_durations_and_either_end() {
        let h = |n: u64| Some(EmuTime::from_secs(3600 * n));
        assert_eq!(TraceFilter::parse_window("1h..2h"), Ok((h(1), h(2))));
        assert_eq!(TraceFilter::parse_window("..6h"), Ok((None, h(6))));
        assert_eq!(
            TraceFilter::parse_window("30m.."),
            Ok((Some(EmuTime::from_secs(1800)), None))
        );
        for bad in ["1h", "1x..2h", "2h..1h", "1h..1h"] {
            let err = TraceFilter::parse_window(bad).expect_err(bad);
            assert!(err.contains("e.g. `1h..2h`"), "{err}");
        }
        let f = TraceFilter {
            from: h(1),
            to: h(2),
            ..TraceFilter::default()
        };
        assert!(!f.in_window(EmuTime::from_secs(3599)));
        assert!(f.in_window(EmuTime::from_secs(3600)));
        assert!(
            !f.in_window(EmuTime::from_secs(7200)),
            "the end is left out"
        );
    }

    fn traced(filter: TraceFilter) -> (String, u64) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("trace.jsonl");
        let labels = vec!["r1".to_string()];
        let t = Tracer::to_file(&path, labels)
            .expect("file")
            .with_filter(filter);
        let igg = t.register("igg:a".into());
        let peer = t.register("igg:b".into());
        let lrms = t.register("lrms:a/c".into());
        let offer = || {
            let peer = PeerDetail {
                price: Some(1.0),
                contract: Some(Terms { min: 1.0, max: 2.0 }),
                ..PeerDetail::default()
            };
            let corr = Correlation {
                negotiation: Some(7),
                ..Correlation::default()
            };
            ("PeerOffer", corr, Some(peer))
        };
        let answer = || {
            let corr = Correlation {
                negotiation: Some(7),
                ..Correlation::default()
            };
            ("PeerAnswer", corr, Some(PeerDetail::default()))
        };
        let s = EmuTime::from_secs;
        t.record(s(1), (igg, lrms), "Tick", Correlation::default(), None);
        t.record_with(s(10), (igg, peer), None, offer);
        t.record_with(s(20), (peer, igg), Some(1), answer);
        t.record(s(30), (lrms, lrms), "Tick", Correlation::default(), None);
        t.finish().expect("written");
        let text = std::fs::read_to_string(&path).expect("trace");
        (text, t.messages())
    }

    #[test]
    fn a_filter_writes_the_kept_lines_as_the_full_trace_has_them() {
        let (all, n) = traced(TraceFilter::default());
        assert_eq!((all.lines().count(), n), (4, 4));
        let only = |f: TraceFilter| {
            let (text, n) = traced(f);
            assert_eq!(n, 4, "every message is counted");
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            for l in &lines {
                assert!(
                    all.lines().any(|a| a == l),
                    "{l} is not as in the full trace"
                );
            }
            lines
        };
        // The answer keeps its contract (from the offer, left out) and its number.
        let kinds = TraceFilter {
            kinds: TraceFilter::parse_kinds("PeerAnswer").ok(),
            ..TraceFilter::default()
        };
        let lines = only(kinds);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("\"seq\":2,") && lines[0].contains("\"contract\""));
        let actors = TraceFilter {
            actors: vec!["lrms:".into()],
            ..TraceFilter::default()
        };
        assert_eq!(only(actors).len(), 2, "either end matching");
        let (from, to) = TraceFilter::parse_window("10s..30s").expect("valid");
        let window = TraceFilter {
            from,
            to,
            actors: vec!["igg:b".into()],
            ..TraceFilter::default()
        };
        assert_eq!(only(window).len(), 2, "10 s and 20 s, both with igg:b");
    }
}
