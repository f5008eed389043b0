//! The causes of one message, read backwards from the end of a trace file (`igemu trace
//! --why`): only the lines on the chain are parsed.

use super::*;

/// What [`RevLines::prev`] found.
pub(super) enum Rev {
    /// A line (without its newline) and the byte offset it starts at.
    Line(u64, Vec<u8>),
    /// A line longer than the cap; the offset of one of its bytes.
    TooLong(u64),
}

/// The lines of a file from its last to its first, read in blocks from the end: memory is
/// one block and one line (at most `max_line` bytes). Each block is scanned for newlines once
/// and a line spanning blocks is joined once, so the cost is linear in the bytes read.
pub(super) struct RevLines<R> {
    pub(super) reader: R,
    /// Where the bytes not read yet end (they are `0..pos`).
    pub(super) pos: u64,
    /// Bytes read but not yet given out: those at `pos..pos + buf.len()`, followed by the
    /// blocks of `tail`. A final newline of the file is left out, so every newline here
    /// ends a line that has yet to be given out.
    pub(super) buf: Vec<u8>,
    /// Blocks read before `buf` (so later in the file) that hold no newline: the rest of the
    /// line being read, in reverse file order (the last one pushed comes first in the file).
    pub(super) tail: Vec<Vec<u8>>,
    /// Their total length.
    pub(super) tail_len: usize,
    /// Whether the first line has been given out.
    pub(super) done: bool,
    pub(super) max_line: usize,
}

impl<R: Read + Seek> RevLines<R> {
    pub(super) fn new(mut reader: R, max_line: usize) -> std::io::Result<Self> {
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
    pub(super) fn prev(&mut self) -> std::io::Result<Option<Rev>> {
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
pub(super) struct SeqOnly {
    pub(super) seq: u64,
}

/// [`why`] with lines of at most `max_line` bytes.
pub(super) fn why_capped<R: Read + Seek>(
    reader: R,
    seq: u64,
    max_line: usize,
) -> Result<Chain, ReadError> {
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
pub(super) fn unreadable(e: std::io::Error) -> ReadError {
    ReadError {
        line: 0,
        message: format!("cannot read: {e}"),
    }
}

/// The 1-based number of the line starting at byte `offset`.
pub(super) fn line_number<R: Read + Seek>(reader: &mut R, offset: u64) -> std::io::Result<u64> {
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
