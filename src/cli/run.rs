//! `igemu run`: its flags, the checks before a run (speed-up, wall-time bound, trace filter,
//! live view), the lines it prints, and its outputs.

use super::*;

/// `--speedup`: a number, or `auto`.
#[derive(Clone, Copy, Debug)]
pub(super) enum SpeedupArg {
    /// Chosen by [`crate::choose_speedup`].
    Auto,
    /// As given.
    Fixed(f64),
}

pub(super) fn parse_speedup(text: &str) -> Result<SpeedupArg, String> {
    if text == "auto" {
        return Ok(SpeedupArg::Auto);
    }
    match text.parse::<f64>() {
        Ok(_) => parse_speedup_number(text).map(SpeedupArg::Fixed),
        Err(_) => Err(format!("`{text}` is neither a number nor `auto`")),
    }
}

/// A speed-up given as a flag: a finite number in the range `emulation.speedup` takes (the
/// flag becomes that override, and NaN or infinity could not be written as one).
pub(super) fn parse_speedup_number(text: &str) -> Result<f64, String> {
    let (lo, hi) = (topology::MIN_SPEEDUP, topology::MAX_SPEEDUP);
    match text.parse::<f64>() {
        Ok(x) if (lo..=hi).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "`{text}` is not in {lo:e} ..= {hi:e} (emulated seconds per wall second)"
        )),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// `--max-wall`: a wall-clock duration above zero (`30s`, `10m`, `2h`, `1h30m`).
pub(super) fn parse_max_wall(text: &str) -> Result<std::time::Duration, String> {
    let d = crate::time::parse_duration(text)?;
    if d.as_micros() == 0 {
        return Err(format!(
            "`{text}` is no time at all: give a wall time above zero, such as 10m"
        ));
    }
    Ok(std::time::Duration::from_micros(d.as_micros()))
}

/// `igemu run`'s arguments.
#[derive(Args)]
pub(super) struct RunArgs {
    /// Topology file (TOML).
    pub(super) topology: Option<PathBuf>,
    /// Directory for requests.csv, decisions.csv, intervals.csv, utilization.csv,
    /// leases.csv, summary.json and (with --trace) trace.jsonl.
    #[arg(long, default_value = "out")]
    pub(super) out: PathBuf,
    /// Seed of every random stream (overrides emulation.seed).
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Time mode (overrides emulation.mode).
    #[arg(long, value_enum)]
    pub(super) mode: Option<Mode>,
    /// Emulated seconds per wall second in realtime mode (overrides emulation.speedup), or
    /// `auto`: the highest this machine sustains, measured on a virtual run of the same
    /// topology first (p99 timer lateness predicted at most 0.5 s), with the wall time the
    /// run will take at it; refused when that is more than --max-wall.
    #[arg(long, value_parser = parse_speedup)]
    pub(super) speedup: Option<SpeedupArg>,
    /// With --speedup auto: the longest wall time the run may take (30s, 10m, 2h; 10m if not
    /// given). When the speed-up this machine sustains would take longer, nothing runs: the
    /// message names the wall time it would take and the options.
    #[arg(long, value_name = "DURATION", value_parser = parse_max_wall)]
    pub(super) max_wall: Option<std::time::Duration>,
    /// Write every message to trace.jsonl.
    #[arg(long)]
    pub(super) trace: bool,
    /// With --trace: write only messages of these kinds, e.g. PeerOffer,PeerAnswer (the
    /// `kind` field; docs/trace-format.md lists them).
    #[arg(long, value_name = "KIND,...", requires = "trace")]
    pub(super) trace_kinds: Option<String>,
    /// With --trace: write only messages whose sender or receiver matches one of these
    /// patterns: an exact name (igg:das2), or a prefix ending in `:`, `/` or `*` (igg:,
    /// host:das2/, lrms:das2/fs*).
    #[arg(long, value_name = "PATTERN,...", requires = "trace")]
    pub(super) trace_actors: Option<String>,
    /// With --trace: write only messages sent in this window of emulated time, FROM..TO
    /// with either end optional (1h..2h, ..6h, 30m..).
    #[arg(
        long,
        value_name = "FROM..TO",
        requires = "trace",
        allow_hyphen_values = true
    )]
    pub(super) trace_window: Option<String>,
    /// Show no progress (shown on stderr for runs longer than two seconds).
    #[arg(long)]
    pub(super) quiet: bool,
    /// Also write report.html (as `igemu report` does) into --out.
    #[arg(long)]
    pub(super) report: bool,
    /// Replace the outputs of an earlier run in --out (without it, a directory that holds
    /// another run's outputs is refused, so two runs never mix).
    #[arg(long)]
    pub(super) overwrite: bool,
    /// Override any topology key: --set lrms.preemption=nop (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(super) sets: Vec<String>,
    /// Run a deliberately broken variant (what `stress --broken-protocol` ran; its reproduce
    /// lines pass this).
    #[arg(long, hide = true, value_name = "FLAW", num_args = 0..=1, require_equals = true, default_missing_value = "late-ack")]
    pub(super) broken_protocol: Option<FlawArg>,
    /// Record the order in which every actor received its messages, timers and tasks to
    /// this file, for `igemu replay` (docs/architecture.md, "Record and replay").
    #[arg(long, value_name = "FILE")]
    pub(super) record: Option<PathBuf>,
    /// Realtime mode: serve a live view of the run at this address (e.g. 127.0.0.1:8080;
    /// port 0 picks a free one): per-cluster utilisation, queues, preemptions, negotiations
    /// in flight and the last messages, updated four times a second. A loopback address
    /// only (127.0.0.1, ::1, localhost) unless --serve-public is given; it stops with the
    /// run.
    #[arg(long, value_name = "ADDR")]
    pub(super) serve: Option<String>,
    /// Let --serve listen on an address that is not loopback (0.0.0.0, ::, a LAN address):
    /// anyone who can reach it can watch the run (no password, no encryption).
    /// Without it such an address is refused (exit 2); with it a warning is printed.
    #[arg(long, requires = "serve")]
    pub(super) serve_public: bool,
    /// Realtime mode: run the Grids on N threads (each Grid with its clusters, hosts and VMs
    /// on one; at most one per Grid: N above the number of Grids runs one thread per Grid, as
    /// summary.json's `threads` then says), so that handlers run in parallel and messages
    /// between Grids cross threads. Not deterministic; not with --trace, --record or --serve.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) threads: u16,
    /// Set by `igemu replay`: follow the order recorded in this file.
    #[arg(skip)]
    pub(super) replay: Option<PathBuf>,
}

/// The trace filter `run`'s flags ask for (checked before anything runs).
pub(super) fn trace_filter(args: &RunArgs) -> Result<crate::trace::TraceFilter, Error> {
    use crate::trace::TraceFilter;
    let flag = |name: &'static str| move |e: String| Error::Usage(format!("--{name}: {e}"));
    let mut f = TraceFilter::default();
    if let Some(k) = &args.trace_kinds {
        f.kinds = Some(TraceFilter::parse_kinds(k).map_err(flag("trace-kinds"))?);
    }
    if let Some(a) = &args.trace_actors {
        f.actors = TraceFilter::parse_actors(a).map_err(flag("trace-actors"))?;
    }
    if let Some(w) = &args.trace_window {
        (f.from, f.to) = TraceFilter::parse_window(w).map_err(flag("trace-window"))?;
    }
    Ok(f)
}

/// Refuses `--trace-actors` patterns that name no actor of the run of `topo`.
pub(super) fn check_trace_actors(
    filter: &crate::trace::TraceFilter,
    topo: &Topology,
) -> Result<(), Error> {
    if filter.actors.is_empty() {
        return Ok(());
    }
    crate::trace::check_actor_patterns(&filter.actors, &topo.actor_catalogue())
        .map_err(|e| Error::Usage(format!("--trace-actors: {e}")))
}

pub(super) fn run_one(args: RunArgs, registry: &Registry) -> Result<(), Error> {
    let trace_filter = trace_filter(&args)?;
    let mut sets = run_sets(&args);
    check_max_wall_flag(&args)?;
    let (topo, auto) = load_run_topology(&args, &mut sets, registry)?;
    check_run_flags(&args, &topo)?;
    check_trace_actors(&trace_filter, &topo)?;
    let serve_at = live_view_addresses(&args)?;
    let (end, foresight) = run_end(&args, &topo, auto.as_ref(), &sets, registry)?;
    let provenance = crate::Provenance {
        speedup_auto: matches!(args.speedup, Some(SpeedupArg::Auto)),
        ..crate::Provenance::of(args.topology.as_deref(), &sets)
    };
    let out = &args.out;
    // Held until the outputs (and the report) are in place.
    let _held = prepare_out(out, args.overwrite, &provenance)?;
    let dir = out.display().to_string();
    interrupt::keeps(move || {
        format!(
            "the run stopped before writing its outputs; {dir} holds what it held before \
             (the next run into it removes the temporary files left)"
        )
    });
    let server = start_live_view(serve_at)?;
    if let Some(line) = foresight {
        say!("{line}");
    }
    let speedup = match topo.emulation.mode {
        crate::time::ClockMode::Realtime { speedup } => Some(speedup),
        crate::time::ClockMode::Virtual => None,
    };
    let watch = crate::progress::RunWatch::start(end, speedup, Style::detect(args.quiet));
    let options = RunOptions {
        trace_dir: args.trace.then(|| out.clone()),
        stage_trace: true,
        trace_filter,
        intervals: true,
        lease_log: true,
        provenance: Some(provenance),
        progress: Some(watch.now()),
        broken: broken(args.broken_protocol),
        record_load: false,
        record: args.record.clone(),
        replay: args.replay.clone(),
        live: server.as_ref().map(crate::serve::LiveServer::feed),
        threads: usize::from(args.threads),
    };
    let result = run(topo, &options);
    watch.finish();
    if let Some(server) = server {
        server.stop();
    }
    let mut result = result?;
    result.summary.speedup_auto = auto;
    write_run_outputs(&result, out, args.overwrite)?;
    let dir = out.display().to_string();
    interrupt::keeps(move || format!("the run's outputs are whole in {dir}/"));
    tell_run_results(&result, &args)
}

/// `--max-wall` only bounds what `--speedup auto` chooses: refused with any other speed-up.
pub(super) fn check_max_wall_flag(args: &RunArgs) -> Result<(), Error> {
    if args.max_wall.is_some() && !matches!(args.speedup, Some(SpeedupArg::Auto)) {
        return Err(Error::Usage(
            "--max-wall bounds the wall time --speedup auto may choose to take; with a fixed --speedup S a realtime run takes its emulated length / S, which it prints before it starts".into(),
        ));
    }
    Ok(())
}

/// After a run's outputs are written: its summary on stdout (with how `--speedup auto`'s
/// prediction came out), where the outputs are, the record, the report; exit 1 on an
/// invariant violation.
pub(super) fn tell_run_results(result: &crate::RunResult, args: &RunArgs) -> Result<(), Error> {
    let out = &args.out;
    say!("{}", result.human_summary());
    if let (Some(c), Some(l)) = (
        &result.summary.speedup_auto,
        &result.summary.timer_lateness_ms,
    ) {
        say!("{}", auto_outcome(c, l));
    }
    say!("  outputs in {}/", out.display());
    tell_record_and_replay(result, args)?;
    if args.report {
        say!(
            "  report: {}",
            crate::report::write(out, &crate::report::Options::default())?.display()
        );
    }
    if result.summary.invariant_violations > 0 {
        return Err(Error::Failed(format!(
            "invariant violations: {:?}",
            result.summary.violation_examples
        )));
    }
    Ok(())
}

/// The `--set` overrides with `run`'s own flags (seed, mode, speed-up) added after them.
pub(super) fn run_sets(args: &RunArgs) -> Vec<String> {
    let mut sets = args.sets.clone();
    // Explicit flags are overrides like any other, applied last so they win.
    if let Some(s) = args.seed {
        sets.push(crate::topology::seed_override(s));
    }
    if let Some(m) = args.mode {
        let name = match m {
            Mode::Virtual => "virtual",
            Mode::Realtime => "realtime",
        };
        sets.push(format!("emulation.mode=\"{name}\""));
    }
    match args.speedup {
        Some(SpeedupArg::Fixed(x)) => sets.push(format!("emulation.speedup={x:?}")),
        // A placeholder until the mode is known to be realtime and the speed-up chosen.
        Some(SpeedupArg::Auto) => sets.push("emulation.speedup=1.0".into()),
        None => {}
    }
    sets
}

/// Loads the run's topology; `--speedup auto` replaces its placeholder in `sets` first, with
/// the speed-up it chose (and what it predicted), or refuses when the run would take longer
/// than `--max-wall`.
pub(super) fn load_run_topology(
    args: &RunArgs,
    sets: &mut Vec<String>,
    registry: &Registry,
) -> Result<(Topology, Option<crate::SpeedupChoice>), Error> {
    let topo = load(args.topology.as_ref(), &overrides(sets.clone(), registry))?;
    if args.speedup.is_some() && topo.emulation.mode == crate::time::ClockMode::Virtual {
        return Err(Error::Usage(
            "--speedup applies to realtime mode only, and this run is in virtual mode; add --mode realtime, or drop --speedup".into(),
        ));
    }
    let Some(SpeedupArg::Auto) = args.speedup else {
        return Ok((topo, None));
    };
    let mut calibration = sets.clone();
    calibration.push("emulation.mode=\"virtual\"".into());
    let calibration = load_quiet(args.topology.as_ref(), &overrides(calibration, registry))?;
    let mut choice = crate::choose_speedup(calibration, broken(args.broken_protocol))?;
    choice.end_exact = crate::realtime_repeats_virtual(&topo, usize::from(args.threads)).is_ok();
    let max_wall = args.max_wall.unwrap_or(crate::AUTO_MAX_WALL);
    choice.max_wall_s = Some(max_wall.as_secs_f64());
    check_max_wall(&choice, max_wall, args.max_wall.is_some())?;
    say!("{}", auto_line(&choice));
    sets.pop(); // the placeholder
    sets.push(format!("emulation.speedup={:?}", choice.speedup));
    let topo = load_quiet(args.topology.as_ref(), &overrides(sets.clone(), registry))?;
    Ok((topo, Some(choice)))
}

/// What `--speedup auto` says it chose: `speed-up auto: x115 chosen: 66.6 emulated hours in
/// ~34m45s of wall time (...)`.
pub(super) fn auto_line(c: &crate::SpeedupChoice) -> String {
    format!(
        "speed-up auto: x{:.0} chosen: {} in {}{} of wall time (predicted p99 timer lateness {:.3} s; from a virtual run of {:.2} s and this machine's waits, {:.3} ms late at p99.5, {:.3} ms at the latest)",
        c.speedup,
        emulated_span(c.emulated_end_s),
        if c.end_exact { "~" } else { "an estimated ~" },
        wall_span(c.predicted_wall_s),
        c.predicted_p99_ms / 1000.0,
        c.calibration_wall_s,
        c.wake_ms,
        c.wake_latest_ms,
    )
}

/// How a `--speedup auto` run's lateness `l` came out against what `c` predicted: when it
/// was too fast, how late the run met its deadlines in wall time against how late the machine
/// met them when measured (a machine busier during the run than then).
pub(super) fn auto_outcome(c: &crate::SpeedupChoice, l: &crate::TimerLateness) -> String {
    let head = format!(
        "  speed-up auto: predicted p99 timer lateness {:.3} s, measured {:.3} s",
        c.predicted_p99_ms / 1000.0,
        l.p99 / 1000.0
    );
    if l.p99 <= crate::SUSTAINABLE_P99_LATENESS_MS {
        return head;
    }
    format!(
        "{head}: its timers fired {:.1} ms late at p99 in wall time, where this machine met deadlines {:.1} ms late (p99.5) when measured just before — it kept a slower pace during the run than then (busier){}",
        l.p99 / c.speedup,
        c.wake_ms,
        if c.end_exact {
            "; the figures are still the virtual run's"
        } else {
            ""
        }
    )
}

/// Refuses a `--speedup auto` run predicted to take longer than `max_wall` (`given`: by
/// `--max-wall`, else the default), naming the prediction and the options.
pub(super) fn check_max_wall(
    c: &crate::SpeedupChoice,
    max_wall: std::time::Duration,
    given: bool,
) -> Result<(), Error> {
    let bound = max_wall.as_secs_f64();
    if c.predicted_wall_s <= bound {
        return Ok(());
    }
    let fits = bound * c.speedup;
    Err(Error::Usage(format!(
        "--speedup auto: x{:.0} is the highest speed-up this machine keeps up with now (predicted p99 timer lateness {:.3} s), and at x{:.0} the run's {} take {}~{} of wall time, more than --max-wall {}{} allows. Give a larger --max-wall (--max-wall {}), run it in virtual time (drop --mode realtime: {} in about {:.1} s), or shorten the run (--set emulation.end={}: what fits in {} at x{:.0})",
        c.speedup,
        c.predicted_p99_ms / 1000.0,
        c.speedup,
        emulated_span(c.emulated_end_s),
        if c.end_exact { "" } else { "an estimated " },
        wall_span(c.predicted_wall_s),
        wall_span(bound),
        if given { "" } else { " (the default)" },
        crate::progress::clock(c.predicted_wall_s * 1.1 + 60.0),
        if c.end_exact { "the same results" } else { "results without the wall clock's pacing" },
        c.calibration_wall_s.max(0.1),
        emulated_end_text(fits),
        wall_span(bound),
        c.speedup,
    )))
}

/// Wall seconds as `0.150s`, `4.1s`, `3m07s` or `2h05m`.
pub(super) fn wall_span(secs: f64) -> String {
    if secs < 1.0 {
        format!("{secs:.3}s")
    } else if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        crate::progress::clock(secs)
    }
}

/// Emulated seconds as words: `66.6 emulated hours`, `12.5 emulated minutes`, `45.0
/// emulated seconds`.
pub(super) fn emulated_span(secs: f64) -> String {
    if secs >= 7200.0 {
        format!("{:.1} emulated hours", secs / 3600.0)
    } else if secs >= 120.0 {
        format!("{:.1} emulated minutes", secs / 60.0)
    } else {
        format!("{secs:.1} emulated seconds")
    }
}

/// An `emulation.end` value of at most `secs` (rounded down): `5.3h`, `45m`, `30s`.
pub(super) fn emulated_end_text(secs: f64) -> String {
    if secs >= 7200.0 {
        format!("{:.1}h", (secs / 360.0).floor() / 10.0)
    } else if secs >= 120.0 {
        format!("{}m", (secs / 60.0).floor())
    } else {
        format!("{}s", secs.floor().max(1.0))
    }
}

/// What is known ahead of the run's emulated end, for its progress, and for a realtime run
/// (but `--speedup auto`'s, which says it itself) the line that says it with the wall time
/// that makes, to print before it starts. A realtime run that repeats its
/// virtual run ([`crate::realtime_repeats_virtual`]) ends where that run ends: known from
/// `--speedup auto`'s calibration, or else from a virtual run first (cheap beside the
/// realtime run: the same work, without the waits — paper 000's 66 hours take 0.5 s). Any
/// other ends when it ends: unknown ahead, at least its last arrival.
pub(super) fn run_end(
    args: &RunArgs,
    topo: &Topology,
    auto: Option<&crate::SpeedupChoice>,
    sets: &[String],
    registry: &Registry,
) -> Result<(crate::progress::RunEnd, Option<String>), Error> {
    use crate::progress::RunEnd;
    let own = RunEnd::of(topo);
    let crate::time::ClockMode::Realtime { speedup } = topo.emulation.mode else {
        return Ok((own, None));
    };
    let repeats = crate::realtime_repeats_virtual(topo, usize::from(args.threads));
    let end = match (own, auto, repeats) {
        (RunEnd::AfterArrivals(_), Some(c), Ok(())) => RunEnd::Known(micros(c.emulated_end_s)),
        (RunEnd::AfterArrivals(_), None, Ok(())) => {
            let mut virtual_sets = sets.to_vec();
            virtual_sets.push("emulation.mode=\"virtual\"".into());
            let twin = load_quiet(args.topology.as_ref(), &overrides(virtual_sets, registry))?;
            let options = RunOptions {
                broken: broken(args.broken_protocol),
                ..RunOptions::default()
            };
            let ran = crate::run(twin, &options)?.summary;
            let line = format!(
                "realtime at x{speedup}: {} in ~{} of wall time (the end from a virtual run of the same topology, {:.2} s)",
                emulated_span(ran.emulated_end_s),
                wall_span(crate::predicted_wall_s(ran.emulated_end_s, speedup)),
                ran.wall_s
            );
            return Ok((RunEnd::Known(micros(ran.emulated_end_s)), Some(line)));
        }
        _ => own,
    };
    let line = auto
        .is_none()
        .then(|| realtime_line(speedup, end, repeats.err()));
    Ok((end, line))
}

/// Emulated seconds as whole µs.
pub(super) fn micros(secs: f64) -> u64 {
    (secs * 1e6).round() as u64
}

/// What a realtime run at `speedup` toward `end` will take, said before it starts (`why`: why
/// its end is not its virtual run's, when it is not).
pub(super) fn realtime_line(
    speedup: f64,
    end: crate::progress::RunEnd,
    why: Option<&str>,
) -> String {
    use crate::progress::RunEnd;
    let wall = |us: u64| wall_span(crate::predicted_wall_s(us as f64 / 1e6, speedup));
    match end {
        RunEnd::Known(us) => format!(
            "realtime at x{speedup}: {} (the topology's end) in ~{} of wall time",
            emulated_span(us as f64 / 1e6),
            wall(us)
        ),
        RunEnd::AfterArrivals(us) => format!(
            "realtime at x{speedup}: the end is not known ahead ({}), only that it comes after the last arrival, at {}: at least {} of wall time",
            why.unwrap_or("the run ends when its last lease ends"),
            emulated_span(us as f64 / 1e6),
            wall(us)
        ),
    }
}

/// Refuses flags the run's mode cannot honour (`--serve`, `--threads`) and a bad `--record`.
pub(super) fn check_run_flags(args: &RunArgs, topo: &Topology) -> Result<(), Error> {
    if args.serve.is_some() && topo.emulation.mode == crate::time::ClockMode::Virtual {
        return Err(Error::Usage(
            "--serve shows a realtime run as it goes, and this run is in virtual mode; add --mode realtime".into(),
        ));
    }
    crate::federation::threads::check(
        usize::from(args.threads),
        topo.emulation.mode,
        &[
            (args.trace, "--trace", why::TRACE),
            (args.record.is_some(), "--record", why::RECORD),
            (args.serve.is_some(), "--serve", why::SERVE),
            (
                topo.emulation.interleaving > 0,
                "emulation.interleaving",
                why::INTERLEAVING,
            ),
        ],
    )?;
    if let Some(record) = &args.record {
        let inputs: Vec<PathBuf> = args.topology.iter().cloned().collect();
        check_record_path(record, &args.out, &inputs)?;
    }
    Ok(())
}

/// Where `--serve ADDR` is to listen: every address ADDR resolves to, refused unless each is
/// loopback or `--serve-public` allows others (before anything is written).
pub(super) fn live_view_addresses(
    args: &RunArgs,
) -> Result<Option<(&str, Vec<SocketAddr>)>, Error> {
    let Some(addr) = args.serve.as_deref() else {
        return Ok(None);
    };
    let addrs = crate::serve::resolve(addr).map_err(|e| {
        Error::Usage(format!(
            "--serve {addr}: not an address to listen on ({e}); give one such as 127.0.0.1:8080 (port 0 picks a free port)"
        ))
    })?;
    let public = crate::serve::not_loopback(&addrs);
    if !public.is_empty() && !args.serve_public {
        let list: Vec<String> = public.iter().map(|a| a.ip().to_string()).collect();
        return Err(Error::Usage(format!(
            "--serve {addr}: {} is not a loopback address, so the live view would be reachable from other machines; \
             give 127.0.0.1:PORT (or [::1]:PORT, localhost:PORT), or add --serve-public to allow it",
            list.join(", ")
        )));
    }
    Ok(Some((addr, addrs)))
}

/// Starts the live view `--serve ADDR` asks for, and says where it is (and, when it is not
/// loopback, that other machines can reach it).
pub(super) fn start_live_view(
    at: Option<(&str, Vec<SocketAddr>)>,
) -> Result<Option<crate::serve::LiveServer>, Error> {
    let Some((addr, addrs)) = at else {
        return Ok(None);
    };
    let server = crate::serve::LiveServer::start(&addrs).map_err(|e| {
        Error::Usage(format!(
            "--serve {addr}: cannot listen there ({e}); give a free address such as 127.0.0.1:8080 (port 0 picks one)"
        ))
    })?;
    if !crate::serve::not_loopback(&[server.addr()]).is_empty() {
        tell!(
            "igemu: warning: the live view listens on {} (--serve-public), which is not loopback: \
             the page is reachable from other machines, and anyone who can reach it can watch \
             the run (no password, no encryption)",
            server.addr()
        );
    }
    say!("live view: http://{}/", server.addr());
    Ok(Some(server))
}

/// Writes the run's outputs into `out`, then removes what `--overwrite` replaces there.
pub(super) fn write_run_outputs(
    result: &crate::RunResult,
    out: &Path,
    overwrite: bool,
) -> Result<(), Error> {
    result.write_outputs(out)?;
    let theirs: Vec<String> = (sweep_files(out).into_iter())
        .chain(stress_files(out).into_iter().map(str::to_string))
        .collect();
    if overwrite && !theirs.is_empty() {
        // The run is whole: a sweep's files or a stress test's, which --overwrite replaces,
        // go (records first).
        remove_outputs(out, &theirs)?;
    }
    Ok(())
}

/// Says how the record (`--record`) and the replay (`igemu replay`) went; fails if either failed.
pub(super) fn tell_record_and_replay(
    result: &crate::RunResult,
    args: &RunArgs,
) -> Result<(), Error> {
    let out = &args.out;
    match (&result.recorded, &args.record) {
        (Some(Ok(n)), Some(path)) => say!(
            "  record: {n} deliveries in {} (igemu replay {0})",
            path.display()
        ),
        (Some(Err(e)), Some(path)) => {
            return Err(Error::Failed(format!(
                "the record {} could not be written whole, so there is none ({e}); the run's outputs are in {}",
                path.display(),
                out.display()
            )))
        }
        _ => {}
    }
    match (&result.replayed, &args.replay) {
        (Some(Ok(n)), _) => say!("  replay: {n} deliveries, each in the recorded order"),
        (Some(Err(d)), Some(path)) => {
            // A delivery that cannot be read is damage; one that differs, another origin.
            let why = if d.starts_with("line ") {
                "The record is damaged"
            } else {
                "The run did not repeat the record: it was made by another igemu or of another topology, or it was edited or cut (a record cut at a line's end reads whole), or igemu was not deterministic here — if none of these, please report it"
            };
            return Err(Error::Input(format!(
                "igemu: the replay left the record {}: {d}. {why} (outputs in {} are a run in its own order)",
                path.display(),
                out.display()
            )));
        }
        _ => {}
    }
    Ok(())
}
