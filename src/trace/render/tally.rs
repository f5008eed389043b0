//! Every negotiation of a trace, one row per request and provider (`igemu trace
//! --negotiations`): what was offered, answered, redirected and reported, tallied as the run's
//! negotiation counters are.

use super::*;

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
pub(super) fn grid(actor: &str) -> String {
    actor.strip_prefix("igg:").unwrap_or(actor).to_string()
}

/// What the records of one negotiation say about one request (or, for the records that name
/// no request, about all of them): enough to make its row, never the records themselves.
#[derive(Clone, Debug, Default)]
pub(super) struct Facts {
    pub(super) messages: usize,
    /// First and last record: (seq, time µs).
    pub(super) first: Option<(u64, u64)>,
    pub(super) last: Option<(u64, u64)>,
    /// The first contract, offer price, redirection price and declined price, by seq.
    pub(super) contract: Option<(u64, Terms)>,
    pub(super) offer: Option<(u64, Option<f64>)>,
    pub(super) redirect: Option<(u64, Option<f64>)>,
    pub(super) decline: Option<(u64, Option<f64>)>,
    /// The answers' verdicts and prices for the request, in order.
    pub(super) answers: Vec<(Option<String>, Option<f64>)>,
    /// Whether an acknowledgement said `redirected`, and whether one said `refused`.
    pub(super) acked: bool,
    pub(super) refused: bool,
}

/// The earlier of two (seq, value) pairs.
pub(super) fn earliest<T: Copy>(a: Option<(u64, T)>, b: Option<(u64, T)>) -> Option<(u64, T)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, y) => x.or(y),
    }
}

impl Facts {
    /// Notes record `e` (about `request`, if it names one).
    pub(super) fn add(&mut self, e: &Event, request: Option<&str>) {
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
    pub(super) fn merge(&self, other: &Facts) -> Facts {
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
pub(super) struct Talk {
    /// Requester and provider, from its first peer message.
    pub(super) ends: Option<(String, String)>,
    /// Each request it names, in order of first mention, with what was said of it.
    pub(super) requests: Vec<(String, Facts)>,
    /// What its records naming no request said (part of every request's story).
    pub(super) anonymous: Facts,
    pub(super) timed_out: bool,
}

/// Every negotiation of a trace fed one event at a time, to list one row per offered request
/// ([`NegotiationTally::rows`]). Keeps a few numbers per (negotiation, request), never the
/// records.
#[derive(Default)]
pub struct NegotiationTally {
    pub(super) talks: BTreeMap<u64, Talk>,
    /// What providers reported of each request redirected to them (`RemoteLease`), by
    /// request: the last end state reported, else whether it was reported started.
    pub(super) reported: BTreeMap<String, &'static str>,
}

/// A `RemoteLease` record's verdict, as a row's `at_provider`.
pub(super) fn reported(verdict: Option<&str>) -> Option<&'static str> {
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
    pub(super) fn row(
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
