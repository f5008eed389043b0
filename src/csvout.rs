//! The run's csv outputs written a row at a time from bytes already in csv form.
//!
//! `intervals.csv` has a row per VM span (millions in a long run) and `requests.csv` one per
//! request: each field is appended to one in-memory chunk as bytes, numbers and seconds
//! without allocating, and the chunk goes to the file when full. A csv writer's pass over
//! every field, and then a `write_all` per field and separator, were most of what writing
//! them cost; the bytes are the csv writer's own (names it would quote are quoted by it).

use std::io::Write;

use crate::time;

/// How many bytes gather before they go to the file.
const CHUNK: usize = 1 << 16;

/// A csv file being written. Each field goes into the chunk followed by a comma, and
/// [`CsvOut::end_row`] turns the row's last comma into its line end; rows have at least two
/// fields (a csv writer quotes a row's only field when it is empty).
pub(crate) struct CsvOut<W: Write> {
    out: W,
    chunk: Vec<u8>,
}

impl<W: Write> CsvOut<W> {
    /// Writes to `out`, which needs no buffer of its own.
    pub(crate) fn new(out: W) -> Self {
        CsvOut {
            out,
            chunk: Vec::with_capacity(CHUNK + 1024),
        }
    }

    /// A field already in csv form: quoted where it needs it ([`csv_field`]) or plain.
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.chunk.extend_from_slice(bytes);
        self.chunk.push(b',');
    }

    /// A field of text, quoted as the csv writer quotes it.
    pub(crate) fn text(&mut self, text: &str) {
        if needs_quotes(text) {
            self.raw(&csv_field(text));
        } else {
            self.raw(text.as_bytes());
        }
    }

    /// A field per column name: the header.
    pub(crate) fn header(&mut self, columns: &[&str]) -> std::io::Result<()> {
        for name in columns {
            self.text(name);
        }
        self.end_row()
    }

    /// An unsigned integer in decimal.
    pub(crate) fn uint(&mut self, n: u64) {
        let mut buf = [0u8; 20];
        let at = time::write_digits(n, &mut buf, 20);
        self.raw(&buf[at..]);
    }

    /// A signed integer in decimal.
    pub(crate) fn int(&mut self, n: i64) {
        let mut buf = [0u8; 21];
        let mut at = time::write_digits(n.unsigned_abs(), &mut buf, 21);
        if n < 0 {
            at -= 1;
            buf[at] = b'-';
        }
        self.raw(&buf[at..]);
    }

    /// Seconds as every output writes them ([`time::format_secs`]).
    pub(crate) fn secs(&mut self, micros: u64) {
        self.raw(time::write_secs_ascii(micros, &mut [0u8; 32]));
    }

    /// Seconds, or an empty field for none.
    pub(crate) fn opt_secs(&mut self, t: Option<time::EmuTime>) {
        match t {
            Some(t) => self.secs(t.as_micros()),
            None => self.raw(b""),
        }
    }

    /// Seconds computed from whole microseconds (a difference of two times), as
    /// [`CsvOut::secs`] writes them, or an empty field for none.
    pub(crate) fn opt_secs_f64(&mut self, secs: Option<f64>) {
        match secs {
            Some(s) => self.secs((s * 1e6).round().max(0.0) as u64),
            None => self.raw(b""),
        }
    }

    /// A ratio with six decimals, trailing zeros dropped (`1.5`, `2`), or an empty field for
    /// none (or one not finite).
    pub(crate) fn ratio(&mut self, x: Option<f64>) {
        match x.filter(|x| x.is_finite()) {
            // Millionths written as seconds are (a formatter's pass cost 1 200 instructions a
            // value, most of what the metric columns cost).
            Some(x) if (0.0..9e18).contains(&(x * 1e6)) => self.secs((x * 1e6).round() as u64),
            Some(x) => {
                let text = format!("{x:.6}");
                let text = text.trim_end_matches('0').trim_end_matches('.');
                self.raw(text.as_bytes());
            }
            None => self.raw(b""),
        }
    }

    /// `true` or `false`, as serde writes a bool.
    pub(crate) fn bool(&mut self, b: bool) {
        self.raw(if b { b"true" } else { b"false" });
    }

    /// Ends the row; hands the chunk to the file once it is full.
    pub(crate) fn end_row(&mut self) -> std::io::Result<()> {
        if let Some(last) = self.chunk.last_mut() {
            *last = b'\n';
        }
        if self.chunk.len() >= CHUNK {
            self.out.write_all(&self.chunk)?;
            self.chunk.clear();
        }
        Ok(())
    }

    /// Writes what is left and flushes.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        self.out.write_all(&self.chunk)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Whether the csv writer quotes `text` as one of several fields of a record: where it holds
/// a comma, a quote or a line break (by default it has no comment character).
fn needs_quotes(text: &str) -> bool {
    text.bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
}

/// `text` as the csv writer writes it as one of several fields of a record: quoted where it
/// holds a comma, a quote or a line break.
pub(crate) fn csv_field(text: &str) -> Vec<u8> {
    if !needs_quotes(text) {
        // Also the empty text: alone in a record the writer would quote it, among others not.
        return text.as_bytes().to_vec();
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing into memory cannot fail; the record's terminator is cut off below.
    let written = w
        .write_record([text])
        .and_then(|()| w.flush().map_err(csv::Error::from));
    let mut bytes = w.into_inner().unwrap_or_default();
    if written.is_err() {
        return text.as_bytes().to_vec();
    }
    bytes.pop();
    bytes
}

#[cfg(test)]
mod tests {
    use super::{csv_field, CsvOut};

    #[test]
    fn ratios_have_six_decimals_without_trailing_zeros() {
        let written = row(|w| {
            for x in [
                Some(1.5),
                Some(2.0),
                Some(1.0 / 3.0),
                Some(0.0),
                None,
                Some(f64::NAN),
            ] {
                w.ratio(x);
            }
            w.ratio(Some(1e20));
            w.ratio(Some(-2.25));
        });
        assert_eq!(
            String::from_utf8(written).expect("utf-8"),
            "1.5,2,0.333333,0,,,100000000000000000000,-2.25\n"
        );
    }

    /// The bytes `row` writes as a row of its own.
    fn row(fill: impl FnOnce(&mut CsvOut<Vec<u8>>)) -> Vec<u8> {
        let mut out = CsvOut::new(Vec::new());
        fill(&mut out);
        out.end_row().expect("writing to memory");
        out.finish().expect("writing to memory")
    }

    #[test]
    fn fields_are_quoted_as_the_csv_writer_quotes_them_among_others() {
        for text in [
            "",
            "site12",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\r",
            " spaced ",
            "é,ü",
        ] {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([text, "x"]).expect("writing to memory");
            let expected = w.into_inner().expect("flushing to memory");
            let mut ours = csv_field(text);
            ours.extend_from_slice(b",x\n");
            assert_eq!(ours, expected, "{text:?}");
            let ours = row(|r| {
                r.text(text);
                r.raw(b"x");
            });
            assert_eq!(ours, expected, "{text:?}");
        }
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        for n in [0, 1, -1, 9, -10, 1234567, i64::MAX, i64::MIN] {
            assert_eq!(row(|r| r.int(n)), format!("{n}\n").as_bytes());
        }
        for n in [0, 7, 10, 65535, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(row(|r| r.uint(n)), format!("{n}\n").as_bytes());
        }
    }

    #[test]
    fn rows_end_in_a_line_break_and_survive_many_chunks() {
        let mut out = CsvOut::new(Vec::new());
        let mut expected = Vec::new();
        for n in 0..20_000u64 {
            out.uint(n);
            out.secs(n * 1_500_000);
            out.opt_secs(None);
            out.bool(n % 2 == 0);
            out.end_row().expect("writing to memory");
            let secs = crate::time::format_secs(n * 1_500_000);
            expected.extend_from_slice(format!("{n},{secs},,{}\n", n % 2 == 0).as_bytes());
        }
        assert_eq!(out.finish().expect("writing to memory"), expected);
    }
}
