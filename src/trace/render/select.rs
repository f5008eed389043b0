//! Selecting from a trace as it streams by: the messages about one request, and the causes of a
//! message in a trace already in memory.

use super::*;

/// A selection made in one pass, in trace order: keeps what `owner` assigns an owner to; a
/// record that names nothing of its own and was sent while handling a kept one follows it
/// (same owner). Causes come before their effects, so one pass sees every kept cause first.
/// Remembers the kept records' numbers only.
pub(super) struct Select<O> {
    pub(super) kept: BTreeMap<u64, O>,
}

impl<O: Copy> Select<O> {
    pub(super) fn new() -> Self {
        Select {
            kept: BTreeMap::new(),
        }
    }

    /// The owner of `e` (its own, or that of the kept record that caused it), if it is kept.
    pub(super) fn offer(&mut self, e: &Event, own: Option<O>) -> Option<O> {
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
    pub(super) request: String,
    pub(super) select: Select<()>,
    pub(super) matched: bool,
    pub(super) seen: BTreeSet<String>,
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
