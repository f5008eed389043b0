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

mod backwards;
mod diagram;
mod select;
mod tally;
mod text;

pub use backwards::*;
pub use diagram::*;
pub use select::*;
pub use tally::*;
pub use text::*;

#[cfg(test)]
mod tests;

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
