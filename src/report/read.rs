//! Reading a run's or a sweep's files for the report: opening them capped, a row at a time,
//! and the errors that name a file, its line, what was found there and the fix.

use std::path::Path;

use crate::Error;

/// Reads a JSON file of a run or sweep whole, up to [`crate::input::MAX_JSON_BYTES`].
pub(super) fn read_text(path: &Path) -> Result<String, Error> {
    crate::input::read_capped(path, crate::input::MAX_JSON_BYTES)
        .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", path.display())))
}

/// A CSV file read a row at a time (lines capped at [`crate::input::MAX_CSV_LINE`]), its
/// header read first and each row's line counted.
pub(super) struct Rows {
    reader: csv::Reader<crate::input::LineCapped<std::fs::File>>,
    /// Its header.
    pub headers: csv::StringRecord,
    /// The line of the row last read (the header is line 1).
    pub line: usize,
    path: std::path::PathBuf,
}

impl Rows {
    /// Opens the CSV file at `path` and reads its header.
    pub(super) fn open(path: &Path) -> Result<Rows, Error> {
        let file = crate::input::open_csv(path)
            .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", path.display())))?;
        let mut reader = csv::Reader::from_reader(file);
        // Read here, not by `deserialize`, which would drop an error in them (a header line
        // too long) and find no rows.
        let headers = reader.headers().map_err(|e| csv_error(path, &e))?.clone();
        Ok(Rows {
            reader,
            headers,
            line: 1,
            path: path.to_path_buf(),
        })
    }

    /// Reads the next row into `record`; `false` at the end of the file.
    pub(super) fn next(&mut self, record: &mut csv::StringRecord) -> Result<bool, Error> {
        let more = (self.reader.read_record(record)).map_err(|e| malformed_row(&self.path, &e))?;
        // Counted here, not taken from the reader, whose count runs a line short on CRLF files.
        self.line += usize::from(more);
        Ok(more)
    }

    /// The column named `name`, or an error saying the file is not the one the report reads.
    pub(super) fn column(&self, name: &str, what: &str) -> Result<usize, Error> {
        self.headers.iter().position(|h| h == name).ok_or_else(|| {
            Error::Input(format!(
                "{}: error: not {what} (no `{name}` column)\n    {REGENERATE}",
                self.path.display()
            ))
        })
    }

    /// `record` deserialized by the header, an error at its line if it does not parse.
    pub(super) fn parse<'r, T: serde::Deserialize<'r>>(
        &'r self,
        record: &'r csv::StringRecord,
    ) -> Result<T, Error> {
        record
            .deserialize(Some(&self.headers))
            .map_err(|e| self.at_line(&format!("error: {}", self.problem(record, &e))))
    }

    /// What a row's deserialization error says, naming the column and its cell (the caller
    /// names the line).
    fn problem(&self, record: &csv::StringRecord, e: &csv::Error) -> String {
        let csv::ErrorKind::Deserialize { err, .. } = e.kind() else {
            return e.to_string();
        };
        match err.field().and_then(|i| usize::try_from(i).ok()) {
            Some(i) => format!(
                "`{}` is `{}`, not what igemu writes there ({})",
                self.headers.get(i).unwrap_or("?"),
                text_shown(record.get(i).unwrap_or_default()),
                err.kind()
            ),
            None => err.kind().to_string(),
        }
    }

    /// An input error at the row last read: `path:line: message`, then how to mend it.
    pub(super) fn at_line(&self, message: &str) -> Error {
        Error::Input(format!(
            "{}:{}: {message}\n    {REGENERATE}",
            self.path.display(),
            self.line
        ))
    }

    /// The file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// A CSV error as an input error at its place (see [`crate::input::csv_problem`]).
pub(super) fn csv_error(path: &Path, e: &csv::Error) -> Error {
    Error::Input(crate::input::csv_problem(path, e))
}

/// What a file that is no run's output can be mended by.
pub(super) const REGENERATE: &str =
    "hint: the report reads the files `igemu run` or `igemu sweep` writes; regenerate them with the same igemu";

/// A row that does not parse as the report expects, as an input error at its place.
pub(super) fn malformed_row(path: &Path, e: &csv::Error) -> Error {
    Error::Input(format!(
        "{}\n    {REGENERATE}",
        crate::input::csv_problem(path, e)
    ))
}

/// The latest time a run's outputs can hold: emulated time is a 64-bit count of
/// microseconds. A later one (`1e300`) is no run's, and drew every chart as one dot at 0.
pub(super) const LAST_SECS: f64 = u64::MAX as f64 / 1e6;

/// A number as a message shows it: huge ones in exponent form (`1e300`, not 301 digits).
pub(super) fn shown(value: f64) -> String {
    if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// A time read from a file: finite, not negative, and within emulated time.
pub(super) fn check_time(path: &Path, line: usize, what: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && (0.0..=LAST_SECS).contains(&value) {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{}:{line}: error: `{what}` is {}; times are finite seconds from 0 to {LAST_SECS:.4e} (emulated time's end)",
            path.display(),
            shown(value)
        )))
    }
}

/// A count or amount read from a file: finite and not negative.
pub(super) fn check_value(path: &Path, line: usize, what: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{}:{line}: error: `{what}` is {value}; it is a finite amount ≥ 0",
            path.display()
        )))
    }
}

/// The index of `value` among `names`, or an error at the row saying which names a cell of
/// `column` may hold.
pub(super) fn one_of(rows: &Rows, column: &str, value: &str, names: &[&str]) -> Result<u8, Error> {
    match names.iter().position(|n| *n == value) {
        // At most a dozen names.
        Some(i) => Ok(i as u8),
        None => Err(rows.at_line(&format!(
            "error: `{column}` is `{}`; igemu writes one of {}",
            text_shown(value),
            names.join(", ")
        ))),
    }
}

/// Text from a file as a message shows it: escaped, and cut after 60 characters.
pub(super) fn text_shown(text: &str) -> String {
    let cut: String = text.chars().take(60).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{more}", cut.escape_debug())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_lines_and_name_a_bad_cell_at_its_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.csv");
        std::fs::write(&path, "a,b\r\n1,2\r\n3,x\r\n").expect("written");
        #[derive(serde::Deserialize)]
        struct Row {
            #[allow(dead_code)]
            a: f64,
            #[allow(dead_code)]
            b: f64,
        }
        let mut rows = Rows::open(&path).expect("opens");
        let mut record = csv::StringRecord::new();
        assert!(rows.next(&mut record).expect("reads"));
        assert!(rows.parse::<Row>(&record).is_ok());
        assert!(rows.next(&mut record).expect("reads"));
        let Err(Error::Input(e)) = rows.parse::<Row>(&record) else {
            panic!("parsed text as a number");
        };
        assert!(
            e.contains(
                "x.csv:3: error: `b` is `x`, not what igemu writes there (invalid float literal)"
            ),
            "{e}"
        );
        assert!(!rows.next(&mut record).expect("reads"));
        let e = rows.column("c", "a test file").expect_err("no such column");
        assert!(e.to_string().contains("no `c` column"), "{e}");
    }
}
