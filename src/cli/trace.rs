//! `igemu trace`: reads a run's `trace.jsonl` back (one request, one negotiation, the causes of
//! a message, every negotiation) and writes text, Mermaid or Chrome trace-event views.

use super::*;

/// `igemu trace`'s arguments.
#[derive(Args)]
pub(super) struct TraceArgs {
    /// The trace (trace.jsonl from `run --trace`).
    pub(super) file: PathBuf,
    /// Keep the messages about this request id (the offers and answers it was part of too);
    /// an id the trace does not name is an error (exit 2) with the closest one it does.
    #[arg(long, conflicts_with = "negotiation")]
    pub(super) request: Option<String>,
    /// Keep the messages of this negotiation between IGGs and, for each request it
    /// redirected, one line for what followed (where the lease ran and how it ended).
    #[arg(long)]
    pub(super) negotiation: Option<u64>,
    /// With --negotiation: every message that followed a redirection instead of one line
    /// per lease (the LRMS's and the VMs' steps).
    #[arg(long, requires = "negotiation")]
    pub(super) vm_steps: bool,
    /// Write a Mermaid sequence diagram here.
    #[arg(long)]
    pub(super) mermaid: Option<PathBuf>,
    /// In the diagram, one lane per VM (default: one per lease's VMs). With --mermaid (alone
    /// it changed nothing, silently).
    #[arg(long, requires = "mermaid")]
    pub(super) vm_lanes: bool,
    /// Write Chrome trace-event JSON here: a Gantt chart for ui.perfetto.dev (a process per
    /// Grid, a track per host, VM states as slices; docs/trace-format.md).
    #[arg(long)]
    pub(super) chrome: Option<PathBuf>,
    /// Print the chain of messages that caused message SEQ (by the trace's `cause` links).
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["request", "negotiation"])]
    pub(super) why: Option<u64>,
    /// List every negotiation as CSV, one row per offered request: negotiation, requester,
    /// provider, request, outcome, redirect, price, contract, messages, duration.
    #[arg(long, conflicts_with_all = ["request", "negotiation", "why", "mermaid", "chrome"])]
    pub(super) negotiations: bool,
    /// With --negotiations: write the CSV to this file instead of standard output.
    #[arg(long, requires = "negotiations")]
    pub(super) out: Option<PathBuf>,
}

/// Where `igemu trace` sends the lines of a selection, as they come: standard output, or a
/// Mermaid diagram and a Chrome export, each written through a temporary file beside its
/// path and renamed at the end, so that an error never leaves half a file behind.
pub(super) struct LineSink {
    pub(super) print: bool,
    /// Standard output went away (`| head`): not an error, but nothing more to print.
    pub(super) closed: bool,
    /// The diagram so far, its body in a temporary file, and where it goes.
    pub(super) mermaid: Option<(crate::trace::render::Mermaid, TempOut, PathBuf)>,
    /// The export so far, where it goes, and its temporary file.
    pub(super) chrome: Option<(crate::trace::chrome::Chrome<TempOut>, PathBuf, PathBuf)>,
    pub(super) messages: usize,
    pub(super) leases: usize,
    pub(super) collapsed: usize,
}

/// A buffered temporary file beside a path, of its own ([`crate::create_temp_beside`]).
pub(super) struct TempOut {
    pub(super) tmp: PathBuf,
    pub(super) w: std::io::BufWriter<std::fs::File>,
}

impl std::io::Write for TempOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

impl TempOut {
    fn beside(path: &Path) -> Result<TempOut, Error> {
        let (tmp, file) = crate::create_temp_beside(path).map_err(Error::output(path))?;
        Ok(TempOut {
            tmp,
            w: std::io::BufWriter::with_capacity(1 << 16, file),
        })
    }
}

impl LineSink {
    fn new(args: &TraceArgs) -> Result<LineSink, Error> {
        let mut sink = LineSink {
            print: args.mermaid.is_none() && args.chrome.is_none(),
            closed: false,
            mermaid: None,
            chrome: None,
            messages: 0,
            leases: 0,
            collapsed: 0,
        };
        if let Some(p) = &args.mermaid {
            let body = TempOut::beside(p)?;
            let m = crate::trace::render::Mermaid::new(args.vm_lanes);
            sink.mermaid = Some((m, body, p.clone()));
        }
        if let Some(p) = &args.chrome {
            let out = TempOut::beside(p)?;
            let tmp = out.tmp.clone();
            sink.chrome = Some((crate::trace::chrome::Chrome::new(out), p.clone(), tmp));
        }
        Ok(sink)
    }

    /// Whether more lines are wanted (not when only standard output wanted them and it went
    /// away).
    fn wants_more(&self) -> bool {
        !(self.print && self.closed)
    }

    fn push(&mut self, line: &crate::trace::render::Line) -> Result<(), Error> {
        use crate::trace::render::{text_line, Line};
        use std::io::Write;
        match line {
            Line::Message(_) => self.messages += 1,
            Line::Lease(l) => {
                (self.leases, self.collapsed) = (self.leases + 1, self.collapsed + l.messages)
            }
        }
        if self.print && !self.closed {
            let text = text_line(line);
            if let Err(e) = writeln!(std::io::stdout().lock(), "{text}") {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(Error::output("standard output")(e));
                }
                self.closed = true; // the reader went away (e.g. `| head`)
            }
        }
        if let Some((m, body, path)) = &mut self.mermaid {
            body.write_all(m.body_line(line).as_bytes())
                .map_err(Error::output(&*path))?;
        }
        if let Some((c, path, _)) = &mut self.chrome {
            c.push(line).map_err(Error::output(&*path))?;
        }
        Ok(())
    }

    /// Completes the files: the diagram's head then its body, the Chrome array's end; each
    /// renamed to its path.
    fn finish(mut self) -> Result<(), Error> {
        use std::io::Write;
        if self.print && !self.closed {
            if let Err(e) = std::io::stdout().lock().flush() {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(Error::output("standard output")(e));
                }
            }
        }
        if let Some((m, body, path)) = self.mermaid.take() {
            let body_tmp = body.tmp.clone();
            let done = (|| -> Result<(), Error> {
                let body = body
                    .w
                    .into_inner()
                    .map_err(|e| Error::output(&path)(e.into_error()))?;
                drop(body);
                let mut out = TempOut::beside(&path)?;
                let tmp = out.tmp.clone();
                let copied = out
                    .write_all(m.head().as_bytes())
                    .and_then(|_| std::io::copy(&mut std::fs::File::open(&body_tmp)?, &mut out))
                    .and_then(|_| out.flush())
                    .and_then(|_| std::fs::rename(&tmp, &path));
                if copied.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                copied.map_err(Error::output(&path))
            })();
            let _ = std::fs::remove_file(&body_tmp);
            done?;
        }
        if let Some((c, path, tmp)) = self.chrome.take() {
            let done = c
                .finish()
                .map(drop)
                .and_then(|_| std::fs::rename(&tmp, &path));
            if done.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            done.map_err(Error::output(&path))?;
        }
        if self.leases > 0 {
            tell!(
                "{} message(s) and {} lease line(s) standing for {} more (--vm-steps shows them)",
                self.messages,
                self.leases,
                self.collapsed
            );
        } else {
            tell!("{} message(s)", self.messages);
        }
        Ok(())
    }

    /// Removes the temporary files (after an error).
    fn abandon(mut self) {
        if let Some((_, body, _)) = self.mermaid.take() {
            let _ = std::fs::remove_file(&body.tmp);
        }
        if let Some((c, _, tmp)) = self.chrome.take() {
            drop(c); // closes the file
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Opens the trace for reading, one line at a time.
pub(super) fn open_trace(file: &Path) -> Result<std::io::BufReader<std::fs::File>, Error> {
    std::fs::File::open(file)
        .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
        .map_err(|e| {
            Error::Input(format!(
                "igemu: {}: cannot read the file: {e}",
                file.display()
            ))
        })
}

pub(super) fn trace(args: TraceArgs) -> Result<(), Error> {
    use crate::trace::render::Line;
    check_trace_outputs(&args)?;
    let file = args.file.as_path();
    if args.negotiations {
        return trace_negotiations(file, args.out.as_deref());
    }
    let mut sink = LineSink::new(&args)?;
    let selected = match (args.why, args.negotiation, args.request.as_deref()) {
        (Some(seq), _, _) => trace_why(file, seq, &mut sink),
        (None, Some(n), _) => trace_negotiation(file, n, args.vm_steps, &mut sink),
        (None, None, Some(r)) => trace_request(file, r, &mut sink),
        (None, None, None) => (|| {
            for e in crate::trace::render::events(open_trace(file)?) {
                sink.push(&Line::Message(e.map_err(trace_error(file))?))?;
                if !sink.wants_more() {
                    break;
                }
            }
            Ok(())
        })(),
    };
    match selected {
        Ok(()) => sink.finish(),
        Err(e) => {
            sink.abandon();
            Err(e)
        }
    }
}

/// Refuses an output file of `igemu trace` that would overwrite its input or a file that is
/// not one of its own kind.
pub(super) fn check_trace_outputs(args: &TraceArgs) -> Result<(), Error> {
    let inputs = [args.file.clone()];
    let outputs: [(&str, &Option<PathBuf>, crate::OutputKind); 3] = [
        (
            "--mermaid",
            &args.mermaid,
            ("a Mermaid diagram", |h| h.starts_with(b"sequenceDiagram")),
        ),
        (
            "--chrome",
            &args.chrome,
            ("a Chrome trace export", |h| {
                h.starts_with(b"{\"displayTimeUnit\"")
            }),
        ),
        (
            "--out",
            &args.out,
            ("a negotiations CSV", |h| h.starts_with(b"negotiation,")),
        ),
    ];
    for (option, path, kind) in outputs {
        if let Some(path) = path {
            crate::check_output_file(option, path, &inputs, kind)?;
        }
    }
    Ok(())
}

/// `igemu: file:line: problem`, prefixed as the CLI's plain errors are (a file's
/// diagnostics, `file:line: error:`, are not); line 0 is the file as a whole (it could not
/// be read), so no line is named.
pub(super) fn trace_error(file: &Path) -> impl Fn(crate::trace::render::ReadError) -> Error + '_ {
    move |e| {
        let place = match e.line {
            0 => file.display().to_string(),
            n => format!("{}:{n}", file.display()),
        };
        Error::Input(format!(
            "igemu: {place}: {} (each line of a trace is one JSON record; see docs/trace-format.md)",
            e.message
        ))
    }
}

/// `igemu trace --negotiations`: one CSV row per offered request, to `out` or stdout.
pub(super) fn trace_negotiations(file: &Path, out: Option<&Path>) -> Result<(), Error> {
    use crate::trace::render;
    let mut tally = render::NegotiationTally::new();
    for e in render::events(open_trace(file)?) {
        tally.push(&e.map_err(trace_error(file))?);
    }
    let rows = match out {
        Some(path) => {
            let out = TempOut::beside(path)?;
            let tmp = out.tmp.clone();
            let written = render::write_negotiations_csv(tally.rows(), out)
                .map_err(std::io::Error::from)
                .and_then(|(out, n)| {
                    drop(out);
                    std::fs::rename(&tmp, path).map(|_| n)
                });
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written.map_err(Error::output(path))?
        }
        None => {
            let stdout = std::io::BufWriter::new(std::io::stdout().lock());
            match render::write_negotiations_csv(tally.rows(), stdout) {
                Ok((_, n)) => n,
                Err(e) => match e.kind() {
                    // The reader went away (`| head`): not an error.
                    csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
                        return Ok(())
                    }
                    _ => return Err(Error::output("standard output")(e.into())),
                },
            }
        }
    };
    tell!("{rows} offered request(s) in negotiations");
    Ok(())
}

/// `igemu trace --why SEQ`: the chain of messages that led to message `seq`.
pub(super) fn trace_why(file: &Path, seq: u64, sink: &mut LineSink) -> Result<(), Error> {
    use crate::trace::render::{self, Line};
    // --why reads backwards from the end, seeking: a pipe cannot seek (it said
    // "line 0: Illegal seek") and a device reads as empty (`/dev/zero` had "no
    // message 0"), so only a regular file is read.
    let meta = std::fs::metadata(file);
    if meta.as_ref().is_ok_and(|m| m.is_dir()) {
        return Err(Error::Usage(format!(
            "{}: that is a folder; give its trace.jsonl",
            file.display()
        )));
    }
    if meta.is_ok_and(|m| !m.is_file()) {
        return Err(Error::Usage(format!(
            "{}: --why reads the trace backwards from its end, so it needs a regular file, not a pipe or a device; save the trace to a file first (--request, --negotiation and --negotiations read a pipe)",
            file.display()
        )));
    }
    let chain = render::why(open_trace(file)?, seq).map_err(trace_error(file))?;
    if chain.events.is_empty() {
        return Err(Error::Usage(format!(
            "{} has no message {seq} (messages are numbered by `seq`)",
            file.display()
        )));
    }
    if let Some(c) = chain.cut_at {
        tell!(
            "the chain goes on with message {c}, which {} does not hold (a trace written with --trace-kinds, --trace-actors or --trace-window)",
            file.display()
        );
    }
    chain
        .events
        .into_iter()
        .try_for_each(|e| sink.push(&Line::Message(e)))
}

/// `igemu trace --negotiation N`: its messages and one line per redirected lease.
pub(super) fn trace_negotiation(
    file: &Path,
    n: u64,
    vm_steps: bool,
    sink: &mut LineSink,
) -> Result<(), Error> {
    use crate::trace::render;
    let mut view = render::NegotiationView::new(n, vm_steps);
    for e in render::events(open_trace(file)?) {
        view.push(e.map_err(trace_error(file))?);
    }
    let lines = view.finish();
    if lines.is_empty() {
        return Err(Error::Usage(format!(
            "{} has no negotiation {n} (`igemu trace {} --negotiations` lists them)",
            file.display(),
            file.display()
        )));
    }
    lines.iter().try_for_each(|l| sink.push(l))
}

/// `igemu trace --request ID`: the messages about one request.
pub(super) fn trace_request(file: &Path, request: &str, sink: &mut LineSink) -> Result<(), Error> {
    use crate::trace::render::{self, Line};
    let mut filter = render::RequestFilter::new(request);
    for e in render::events(open_trace(file)?) {
        let e = e.map_err(trace_error(file))?;
        if filter.keep(&e) {
            sink.push(&Line::Message(e))?;
            if !sink.wants_more() {
                return Ok(());
            }
        }
    }
    match filter.unknown() {
        Some(why) => Err(Error::Usage(format!("{}: {why}", file.display()))),
        None => Ok(()),
    }
}
