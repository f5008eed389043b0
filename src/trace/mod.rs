//! Message-flow records. Every message an actor sends goes through one path
//! ([`crate::actors::Emu::send`] and friends) that counts it and, when tracing is on, writes a
//! record as one JSON line (schema in `docs/trace-format.md`). Tracing that is off
//! costs one branch and one counter increment per message.

pub mod chrome;
pub mod render;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::RequestId;
use crate::time::EmuTime;

/// A compact handle for an actor's name in traces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
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

/// What a message between IGGs says about its negotiation, written only in its trace record.
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
    /// Peering detail (messages between IGGs only); computed only when the record is written.
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
}

/// Counts messages and, when enabled, writes them to `trace.jsonl`.
pub struct Tracer {
    sink: Option<RefCell<BufWriter<File>>>,
    failed: RefCell<Option<String>>,
    messages: Cell<u64>,
    names: RefCell<Vec<String>>,
    labels: Vec<String>,
    /// The record being handled right now (every actor runs on one thread).
    current: Cell<Option<u64>>,
    /// Each negotiation's contract, from its offer, for the later messages of it.
    contracts: RefCell<BTreeMap<u64, Terms>>,
}

impl Tracer {
    /// A tracer that only counts.
    pub fn counting(labels: Vec<String>) -> Tracer {
        Tracer {
            sink: None,
            failed: RefCell::new(None),
            messages: Cell::new(0),
            names: RefCell::new(Vec::new()),
            labels,
            current: Cell::new(None),
            contracts: RefCell::new(BTreeMap::new()),
        }
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
        let mut names = self.names.borrow_mut();
        names.push(name);
        ActorId((names.len() - 1) as u32)
    }

    /// The name of actor `id`.
    pub fn name(&self, id: ActorId) -> String {
        self.names.borrow()[id.0 as usize].clone()
    }

    /// The label of request `id` (as in the topology and the outputs).
    pub fn label(&self, id: RequestId) -> &str {
        &self.labels[id.0 as usize]
    }

    /// Whether events are written.
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Messages recorded so far.
    pub fn messages(&self) -> u64 {
        self.messages.get()
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
        if let Some(sink) = &self.sink {
            self.write(sink, (seq, t), (from, to), what(), cause);
        }
        seq
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
            from: &names[from.0 as usize],
            to: &names[to.0 as usize],
            kind,
            request: corr.request.map(|r| self.labels[r.0 as usize].as_str()),
            vm: corr.vm,
            negotiation: corr.negotiation,
            cause,
            price: peer.price,
            contract,
            verdict: peer.verdict,
            items,
        };
        let mut w = sink.borrow_mut();
        let res = serde_json::to_writer(&mut *w, &line)
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
