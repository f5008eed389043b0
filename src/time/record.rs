//! The order of deliveries as a record file holds it (`--record`, `igemu replay`): one line
//! per delivery, in the order the run made them, each naming the emulated instant and the
//! lane (see [`Lane`]) it was delivered on:
//!
//! ```text
//! 3600000000 4 9        a message (or timer) from actor 4 to actor 9 at t = 3600 s
//! 3600000000 task 17    the 18th task the run spawned started at t = 3600 s
//! ```
//!
//! The last line, `end <deliveries> <hash>` (the count, and the FNV-1a hash of the header line
//! and every delivery line, newlines included, in hex), says the record is whole: a record cut
//! short, edited (its header too: the overrides it names are what a replay runs) or with lines
//! after it is damaged, whatever a replay makes of its deliveries.
//!
//! Actor numbers are trace ids (registration order, the same in every run of a topology),
//! task numbers count the spawns. Per receiver, the lines in order are the order it received
//! its messages and timers. [`OrderLog`] writes them as the run goes; [`OrderScript`] reads
//! them back for a replay, which delivers in exactly that order (or, for a run that delivered
//! as it went, checks that it does) and says where it first differs.

use std::io::{BufRead, Write};

use super::interleave::Lane;

/// Writes the deliveries of a run as they happen.
pub struct OrderLog {
    out: Box<dyn Write>,
    written: u64,
    /// Hash of the delivery lines written so far.
    hash: Fnv,
    /// The first write error (the run goes on; the record is then reported unwritten).
    error: Option<std::io::Error>,
}

impl OrderLog {
    /// A log writing to `out` after the caller wrote `header` (its first line, newline
    /// included), which the end line's hash covers too.
    pub fn new(out: Box<dyn Write>, header: &[u8]) -> OrderLog {
        let mut hash = Fnv::new();
        hash.add(header);
        OrderLog {
            out,
            written: 0,
            hash,
            error: None,
        }
    }

    /// Appends one delivery.
    pub fn log(&mut self, at_us: u64, lane: Lane) {
        if self.error.is_some() {
            return;
        }
        let line = match lane {
            Lane::Channel { from, to } => format!("{at_us} {from} {to}\n"),
            Lane::Task(n) => format!("{at_us} task {n}\n"),
        };
        self.hash.add(line.as_bytes());
        match self.out.write_all(line.as_bytes()) {
            Ok(()) => self.written += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Ends the log with its end line and flushes it: the deliveries written, or the first
    /// error.
    pub fn finish(mut self) -> std::io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        writeln!(self.out, "end {} {:016x}", self.written, self.hash.0)?;
        self.out.flush()?;
        Ok(self.written)
    }
}

/// FNV-1a, 64 bits: what a record's end line says of its deliveries.
#[derive(Clone, Copy, Debug)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Reads a record's deliveries back, one at a time (the file is streamed: any length will do).
pub struct OrderScript {
    input: Box<dyn BufRead>,
    /// Line number of the next line (1-based, counting the lines before the deliveries).
    line: u64,
    /// Deliveries read so far.
    read: u64,
    /// Hash of the delivery lines read so far.
    hash: Fnv,
    /// Whether the end line has been read (and matched).
    ended: bool,
    buf: String,
}

/// The longest line a record may have (a delivery line is under 70 bytes).
const MAX_LINE: u64 = 256;

impl OrderScript {
    /// A script reading deliveries from `input`, whose first line is line `first_line`, after
    /// `header` (the lines before, newlines included), which the end line's hash covers too.
    pub fn new(input: Box<dyn BufRead>, first_line: u64, header: &[u8]) -> OrderScript {
        let mut hash = Fnv::new();
        hash.add(header);
        OrderScript {
            input,
            line: first_line,
            read: 0,
            hash,
            ended: false,
            buf: String::new(),
        }
    }

    /// Deliveries read so far.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The next delivery: `Ok(None)` at the end of the record, `Err` naming the line if it
    /// cannot be read.
    pub fn next_delivery(&mut self) -> Result<Option<(u64, Lane)>, String> {
        self.buf.clear();
        let n = std::io::Read::take(self.input.as_mut(), MAX_LINE + 1)
            .read_line(&mut self.buf)
            .map_err(|e| format!("line {}: {e}", self.line))?;
        let at = self.line;
        if n == 0 {
            return match self.ended {
                true => Ok(None),
                false => Err(format!(
                    "line {at}: the record stops before its end line: it was cut short"
                )),
            };
        }
        self.line += 1;
        if n as u64 > MAX_LINE {
            return Err(format!(
                "line {at}: longer than {MAX_LINE} bytes; not a delivery"
            ));
        }
        let text = self.buf.trim_end();
        if self.ended {
            return Err(format!("line {at}: after the record's end line"));
        }
        if let Some(end) = text.strip_prefix("end ") {
            let whole = format!("{} {:016x}", self.read, self.hash.0);
            if end != whole {
                return Err(format!(
                    "line {at}: the end line says `{end}`, its header and deliveries make `{whole}` (deliveries, hash): the record was edited or damaged"
                ));
            }
            self.ended = true;
            // Nothing may follow it.
            return self.next_delivery();
        }
        let delivery = parse_line(text).map_err(|e| format!("line {at}: {e}"))?;
        self.hash.add(text.as_bytes());
        self.hash.add(b"\n");
        self.read += 1;
        Ok(Some(delivery))
    }
}

/// One delivery line: `<us> <from> <to>` or `<us> task <n>`.
fn parse_line(line: &str) -> Result<(u64, Lane), String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let number = |s: &str, what: &str| {
        s.parse::<u64>().map_err(|_| {
            format!("`{s}` is not {what} (expected `<us> <from> <to>` or `<us> task <n>`)")
        })
    };
    let actor = |s: &str| {
        number(s, "an actor number")
            .and_then(|n| u32::try_from(n).map_err(|_| format!("actor {n} is out of range")))
    };
    match fields.as_slice() {
        [at, "task", n] => Ok((
            number(at, "a time in µs")?,
            Lane::Task(number(n, "a task number")?),
        )),
        [at, from, to] => Ok((
            number(at, "a time in µs")?,
            Lane::Channel {
                from: actor(from)?,
                to: actor(to)?,
            },
        )),
        _ => Err(format!(
            "`{line}` is not a delivery (expected `<us> <from> <to>` or `<us> task <n>`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_log_reads_back_as_written() {
        let lanes = [
            (0, Lane::Channel { from: 0, to: 3 }),
            (5, Lane::Task(0)),
            (
                u64::MAX,
                Lane::Channel {
                    from: u32::MAX,
                    to: 7,
                },
            ),
            (7, Lane::Task(u64::MAX)),
        ];
        let buf = Shared::default();
        let mut log = OrderLog::new(Box::new(buf.clone()), b"");
        for &(t, l) in &lanes {
            log.log(t, l);
        }
        assert_eq!(log.finish().ok(), Some(4));
        let bytes = buf.0.borrow().clone();
        let mut script = OrderScript::new(Box::new(std::io::Cursor::new(bytes)), 2, b"");
        for &want in &lanes {
            assert_eq!(script.next_delivery(), Ok(Some(want)));
        }
        assert_eq!(script.next_delivery(), Ok(None));
        assert_eq!(script.read(), 4);
    }

    #[test]
    fn a_record_cut_edited_or_extended_is_damaged_whatever_its_lines_say() {
        let buf = Shared::default();
        let mut log = OrderLog::new(Box::new(buf.clone()), b"");
        for t in 0..6u64 {
            log.log(
                t,
                Lane::Channel {
                    from: 1,
                    to: 2 + t as u32 % 2,
                },
            );
        }
        assert_eq!(log.finish().ok(), Some(6));
        let text = String::from_utf8(buf.0.borrow().clone()).expect("text");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[6].starts_with("end 6 "), "{text}");
        let read_all = |body: &str| -> Result<u64, String> {
            let mut s = OrderScript::new(
                Box::new(std::io::Cursor::new(body.as_bytes().to_vec())),
                2,
                b"",
            );
            while s.next_delivery()?.is_some() {}
            Ok(s.read())
        };
        assert_eq!(read_all(&text), Ok(6));
        // CRLF line ends read the same.
        assert_eq!(read_all(&text.replace('\n', "\r\n")), Ok(6));
        let join = |ls: &[&str]| ls.join("\n") + "\n";
        // Cut at a line's end: every line reads, the end line is missing.
        let cut = read_all(&join(&lines[..4])).expect_err("cut");
        assert!(cut.contains("cut short"), "{cut}");
        // Two deliveries swapped: each line is a delivery, the hash is not theirs.
        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        let edited = read_all(&join(&swapped)).expect_err("swapped");
        assert!(edited.contains("edited or damaged"), "{edited}");
        // Another header than the one the log was written after.
        let mut s = OrderScript::new(
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            2,
            b"{\"seed\":2}\n",
        );
        let header = (|| -> Result<u64, String> {
            while s.next_delivery()?.is_some() {}
            Ok(s.read())
        })()
        .expect_err("another header");
        assert!(header.contains("edited or damaged"), "{header}");
        // Anything after the end line.
        let mut longer = lines.clone();
        longer.push(lines[0]);
        let after = read_all(&join(&longer)).expect_err("longer");
        assert!(after.contains("after the record's end line"), "{after}");
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        for (text, says) in [
            ("1 2 3\n1 two 3\n", "line 11: `two` is not an actor number"),
            ("1 2 3\n1 2\n", "line 11: `1 2` is not a delivery"),
            (
                "1 2 3\n1 2 99999999999\n",
                "line 11: actor 99999999999 is out of range",
            ),
            ("1 2 3\n-1 task 3\n", "line 11: `-1` is not a time in µs"),
        ] {
            let mut s = OrderScript::new(
                Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
                10,
                b"",
            );
            assert!(s.next_delivery().is_ok());
            let err = s.next_delivery().expect_err(text);
            assert!(err.starts_with(says), "{err}");
        }
        let long = format!("1 2 {}\n", "3".repeat(1000));
        let mut s = OrderScript::new(Box::new(std::io::Cursor::new(long.into_bytes())), 1, b"");
        assert!(s.next_delivery().expect_err("long").contains("longer than"));
    }
}
