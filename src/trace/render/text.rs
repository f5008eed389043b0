//! One negotiation with what followed its redirections (a line per lease), and every selection
//! as text lines.

use super::*;

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
    pub(super) fn add(&mut self, e: &Event) {
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
    pub(super) n: u64,
    pub(super) vm_steps: bool,
    /// Each redirected request, from its first redirection on, and where it went.
    pub(super) redirected: Vec<(String, u64, String)>,
    /// Owners: `None` for the conversation, `Some(i)` for what followed redirection `i`.
    pub(super) select: Select<Option<usize>>,
    pub(super) lines: Vec<Line>,
    /// The line of each redirection's lease.
    pub(super) lease_at: BTreeMap<usize, usize>,
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

pub(super) fn secs(us: u64) -> String {
    crate::time::format_secs(us)
}

/// A unit price for people: three decimals, trailing zeros dropped (`3.227`, `1.5`).
pub fn price(p: f64) -> String {
    let s = format!("{p:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// One request of a batch in a label: `ext-3`, `ext-3 accept 0.93`, `ext-7 reject`.
pub(super) fn item_text(i: &Item) -> String {
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
pub(super) fn terms(e: &Event) -> String {
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
