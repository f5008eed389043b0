//! The Standard Workload Format (SWF) of the Parallel Workloads Archive (v2.2): one job per
//! line, 18 whitespace-separated numeric fields, −1 for missing, `;` comment lines with
//! `; Key: value` headers.
//!
//! Mapping to lease requests (documented in `docs/topology.md`): arrival = submit time minus
//! the first job's submit time; VMs = allocated processors, or requested processors if
//! missing; duration = run time, or requested time if missing. Jobs with neither a positive
//! size nor a positive duration cannot be leases and are skipped (and counted). The GWF
//! reader ([`super::gwf`]) maps its jobs through the same [`leases`].

use super::tracefile::{self, LineError, OutOfMemory, Parsed, Reading, TraceFile};
use super::Job;
use crate::time::EmuDuration;

/// One parsed job line (the fields igemu uses).
#[derive(Clone, Debug, PartialEq)]
pub struct SwfJob {
    /// Line number in the file (1-based).
    pub line: usize,
    /// Field 1: job number.
    pub number: i64,
    /// Field 2: submit time, seconds.
    pub submit: f64,
    /// Field 4: run time, seconds (−1 missing).
    pub run: f64,
    /// Field 5: allocated processors (−1 missing).
    pub alloc_procs: i64,
    /// Field 8: requested processors (−1 missing).
    pub req_procs: i64,
    /// Field 9: requested time, seconds (−1 missing).
    pub req_time: f64,
    /// Field 11: status (1 completed, 0 failed, 5 cancelled, ...).
    pub status: i64,
}

/// A parsed trace.
pub type SwfTrace = TraceFile<SwfJob>;

/// A malformed line.
pub type SwfError = LineError;

/// What to do about any malformed SWF line.
const FIX: &str = "each job line needs 18 numeric fields (SWF v2.2)";

/// One job line.
pub(crate) fn job(fields: &[&str], line: usize) -> Parsed<SwfJob> {
    if fields.len() != 18 {
        let fix = if fields.len() == super::gwf::FIELDS.len() {
            "the line has the 29 fields of a GWF trace (Grid Workloads Archive): read it with \
             model = \"gwf\""
        } else {
            FIX
        };
        return Err((
            format!("expected 18 fields, found {}", fields.len()),
            fix.into(),
        ));
    }
    let mut nums = [0f64; 18];
    for (k, f) in fields.iter().enumerate() {
        match f.parse::<f64>() {
            Ok(v) if v.is_finite() => nums[k] = v,
            _ => {
                return Err((
                    format!("field {} (`{f}`) is not a number", k + 1),
                    FIX.into(),
                ))
            }
        }
    }
    if nums[1] < 0.0 {
        return Err(("submit time (field 2) is negative".into(), FIX.into()));
    }
    for k in [1, 3, 8] {
        check_secs(nums[k], k + 1)?;
    }
    Ok(Some(SwfJob {
        line,
        number: nums[0] as i64,
        submit: nums[1],
        run: nums[3],
        alloc_procs: nums[4] as i64,
        req_procs: nums[7] as i64,
        req_time: nums[8],
        status: nums[10] as i64,
    }))
}

/// A time field (`n`, 1-based) past [`MAX_SECS`](crate::time::MAX_SECS) is an error: emulated
/// time could not hold it (the fields of both formats at these places are times).
pub(crate) fn check_secs(v: f64, n: usize) -> Result<(), (String, String)> {
    let max = crate::time::MAX_SECS;
    if v > max as f64 {
        return Err((
            format!("field {n} is {v} s, past the latest time igemu takes ({max} s, 10^12)"),
            "times and durations in a trace run up to 10^12 s; check the field order".into(),
        ));
    }
    Ok(())
}

/// Parses a whole trace in memory; returns every malformed line (at most 20) if any.
pub fn parse(text: &str) -> Result<SwfTrace, Vec<SwfError>> {
    tracefile::read(text, ';', job)
}

/// Reads a trace from `reader` (a file opened with [`tracefile::open`]) one line at a time,
/// at most [`MAX_TRACE_BYTES`](crate::input::MAX_TRACE_BYTES): memory holds the jobs, not
/// the file (see [`tracefile`]).
pub fn read(reader: impl std::io::Read) -> Reading<SwfJob> {
    tracefile::read_from(reader, tracefile::Limits::TRACE, ';', job)
}

impl SwfJob {
    /// The job as a lease: (VMs, duration), or `None` if it has no usable size or duration.
    pub fn as_lease(&self) -> Option<(u32, EmuDuration)> {
        let procs = if self.alloc_procs > 0 {
            self.alloc_procs
        } else {
            self.req_procs
        };
        let secs = if self.run > 0.0 {
            self.run
        } else {
            self.req_time
        };
        (procs > 0 && secs > 0.0).then(|| {
            (
                procs.min(i64::from(u32::MAX)) as u32,
                EmuDuration::from_secs_f64(secs),
            )
        })
    }
}

/// The trace's jobs as generated jobs, one VM per `procs_per_vm` processors (rounded up) and
/// sizes capped at `max_vms`; also the number skipped. An error if they do not fit in memory.
pub fn to_jobs(
    trace: &SwfTrace,
    max_vms: u32,
    max_jobs: usize,
    procs_per_vm: u32,
) -> Result<(Vec<Job>, usize), OutOfMemory> {
    let first = first_submit(&trace.jobs);
    leases(&trace.jobs, first, max_vms, max_jobs, procs_per_vm)
}

/// The earliest submit time of `jobs`: the zero of their arrivals (infinite if there are
/// none).
pub fn first_submit<'a>(jobs: impl IntoIterator<Item = &'a SwfJob>) -> f64 {
    jobs.into_iter()
        .map(|j| j.submit)
        .fold(f64::INFINITY, f64::min)
}

/// The mapping every trace format shares: `jobs` as generated jobs in arrival order, each
/// arriving at its submit time minus `first`, with one VM per `procs_per_vm` processors
/// (rounded up) and sizes capped at `max_vms`; at most `max_jobs` of them, in trace order.
/// Also the number skipped because they cannot be leases ([`SwfJob::as_lease`]), counted up
/// to the last job taken. An error if they do not fit in memory: the buffer is reserved
/// fallibly, as its size comes from the trace.
pub fn leases<'a>(
    jobs: impl IntoIterator<Item = &'a SwfJob>,
    first: f64,
    max_vms: u32,
    max_jobs: usize,
    procs_per_vm: u32,
) -> Result<(Vec<Job>, usize), OutOfMemory> {
    let jobs = jobs.into_iter();
    let mut skipped = 0;
    let mut out: Vec<Job> = Vec::new();
    // The jobs there are sure to be (a site's jobs are a filter: none sure), not as many as
    // there could be, which reserved a whole trace for one site.
    let bound = jobs.size_hint().0.min(max_jobs);
    out.try_reserve_exact(bound)
        .map_err(|_| OutOfMemory { jobs: bound })?;
    for j in jobs {
        if out.len() == max_jobs {
            break;
        }
        match j.as_lease() {
            Some((procs, duration)) => {
                out.try_reserve(1).map_err(|_| OutOfMemory {
                    jobs: out.len() + 1,
                })?;
                out.push(Job {
                    arrival: EmuDuration::from_secs_f64(j.submit - first),
                    vms: procs.div_ceil(procs_per_vm.max(1)).clamp(1, max_vms.max(1)),
                    duration,
                });
            }
            None => skipped += 1,
        }
    }
    // A stable sort borrows a buffer of up to half the jobs, which cannot be reserved
    // fallibly; archive traces are in submit order, so it is only needed (and only taken)
    // for a trace that is not.
    if !out.is_sorted_by_key(|j| j.arrival) {
        out.sort_by_key(|j| j.arrival);
    }
    Ok((out, skipped))
}

/// Writes `jobs` as an SWF v2.2 trace (whole seconds; one processor per VM; every job
/// completed), after `; Key: value` header lines — what `igemu workload export` writes.
pub fn write(jobs: &[Job], header: &[(String, String)]) -> String {
    let mut out = String::from("; Version: 2.2\n");
    for (k, v) in header {
        out += &format!("; {k}: {v}\n");
    }
    let max_procs = jobs.iter().map(|j| j.vms).max().unwrap_or(0);
    out += &format!(
        "; MaxJobs: {}\n; MaxRecords: {}\n; MaxProcs: {max_procs}\n",
        jobs.len(),
        jobs.len()
    );
    for (i, j) in jobs.iter().enumerate() {
        let submit = j.arrival.as_secs_f64().round() as u64;
        let run = j.duration.as_secs_f64().round().max(1.0) as u64;
        // job submit wait run procs cpu mem req_procs req_time req_mem status user group
        // executable queue partition preceding think
        out += &format!(
            "{} {submit} -1 {run} {} -1 -1 {} {run} -1 1 -1 -1 -1 -1 -1 -1 -1\n",
            i + 1,
            j.vms,
            j.vms
        );
    }
    out
}

/// What `igemu workload inspect` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Job lines.
    pub jobs: usize,
    /// Jobs usable as leases.
    pub usable: usize,
    /// From the first to the last submission, seconds.
    pub span_s: f64,
    /// Usable jobs per hour.
    pub arrivals_per_hour: f64,
    /// Size (VMs): min, mean, max.
    pub size: (u32, f64, u32),
    /// Duration (s): min, mean, max.
    pub runtime: (f64, f64, f64),
    /// Share of one-VM jobs.
    pub serial_share: f64,
    /// Share of power-of-two sizes (above one).
    pub pow2_share: f64,
}

/// Summarises a trace; an error if its jobs do not fit in memory twice (as parsed and as
/// leases).
pub fn summarize(trace: &SwfTrace) -> Result<Summary, OutOfMemory> {
    let (jobs, _) = to_jobs(trace, u32::MAX, usize::MAX, 1)?;
    Ok(Summary::of(&jobs, trace.jobs.len()))
}

impl Summary {
    /// The summary of `jobs` (in arrival order, as [`leases`] returns them) read from
    /// `lines` job lines.
    pub fn of(jobs: &[Job], lines: usize) -> Summary {
        let n = jobs.len().max(1) as f64;
        let span = jobs.last().map_or(0.0, |j| j.arrival.as_secs_f64());
        // Iterators over the jobs, not copies of their fields: no memory in proportion to
        // the trace. Sums run in the same (arrival) order, so they round as before.
        let sizes = || jobs.iter().map(|j| j.vms);
        let runs = || jobs.iter().map(|j| j.duration.as_secs_f64());
        Summary {
            jobs: lines,
            usable: jobs.len(),
            span_s: span,
            arrivals_per_hour: if span > 0.0 {
                jobs.len() as f64 / (span / 3600.0)
            } else {
                0.0
            },
            size: (
                sizes().min().unwrap_or(0),
                sizes().map(f64::from).sum::<f64>() / n,
                sizes().max().unwrap_or(0),
            ),
            runtime: (
                runs()
                    .fold(f64::INFINITY, f64::min)
                    .min(if jobs.is_empty() { 0.0 } else { f64::INFINITY }),
                runs().sum::<f64>() / n,
                runs().fold(0.0, f64::max),
            ),
            serial_share: sizes().filter(|&v| v == 1).count() as f64 / n,
            pow2_share: sizes().filter(|&v| v > 1 && v.is_power_of_two()).count() as f64 / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
; Version: 2.2
; MaxProcs: 64
; UnixStartTime: 1000000000
1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1
2 30 0 -1 -1 -1 -1 8 600 -1 1 1 1 1 1 1 -1 -1
3 60 2 0 0 -1 -1 -1 -1 -1 0 1 1 1 1 1 -1 -1
4 90.5 1 50.5 1 -1 -1 1 60 -1 1 2 1 1 1 1 -1 -1
";

    #[test]
    fn parses_headers_and_maps_jobs_to_leases() {
        let t = parse(TRACE).expect("valid");
        assert_eq!(t.header[1], ("MaxProcs".into(), "64".into()));
        assert_eq!(t.jobs.len(), 4);
        let (jobs, skipped) = to_jobs(&t, 64, usize::MAX, 1).expect("fits");
        assert_eq!(skipped, 1, "job 3 has no size and no duration");
        assert_eq!(
            jobs[0],
            Job {
                arrival: EmuDuration::ZERO,
                vms: 4,
                duration: EmuDuration::from_secs(100)
            }
        );
        // Missing run time and allocation: the requested ones are used.
        assert_eq!(
            jobs[1],
            Job {
                arrival: EmuDuration::from_secs(30),
                vms: 8,
                duration: EmuDuration::from_secs(600)
            }
        );
        assert_eq!(jobs[2].duration, EmuDuration::from_micros(50_500_000));
        let s = summarize(&t).expect("fits");
        assert_eq!((s.jobs, s.usable), (4, 3));
        assert_eq!(s.size, (1, 13.0 / 3.0, 8));
    }

    #[test]
    fn jobs_that_cannot_be_held_are_an_error_not_an_abort() {
        /// The jobs of a trace, claiming there are any number of them.
        struct Unbounded<'a>(std::slice::Iter<'a, SwfJob>);
        impl<'a> Iterator for Unbounded<'a> {
            type Item = &'a SwfJob;
            fn next(&mut self) -> Option<&'a SwfJob> {
                self.0.next()
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                (usize::MAX, Some(usize::MAX))
            }
        }
        let t = parse(TRACE).expect("valid");
        // More than memory can hold: the reservation fails, and says so.
        let e = leases(Unbounded(t.jobs.iter()), 0.0, 64, usize::MAX, 1).expect_err("too many");
        assert_eq!(e, OutOfMemory { jobs: usize::MAX });
        assert!(e.to_string().ends_with("jobs do not fit in memory"), "{e}");
        // The jobs taken are reserved, not the ones the iterator could give.
        let (jobs, skipped) = leases(Unbounded(t.jobs.iter()), 0.0, 64, 2, 1).expect("two");
        assert_eq!((jobs.len(), skipped), (2, 0));
    }

    #[test]
    fn malformed_lines_are_reported_with_their_numbers() {
        let bad = "; comment\n1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n2 x 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n3 1 2\n";
        let errs = parse(bad).expect_err("two bad lines");
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].line, 3);
        assert!(errs[0].message.contains("field 2"), "{}", errs[0]);
        assert_eq!(errs[1].to_string(), "line 4: expected 18 fields, found 3");
        assert_eq!(errs[1].fix, FIX);
        // A GWF line: the fix names the other format.
        let gwf_line = ["1"; 29].join(" ");
        let errs = parse(&gwf_line).expect_err("a GWF line");
        assert!(errs[0].fix.contains("model = \"gwf\""), "{}", errs[0].fix);
    }

    #[test]
    fn written_traces_read_back_and_processors_map_to_vms() {
        let jobs = vec![
            Job {
                arrival: EmuDuration::from_secs(0),
                vms: 16,
                duration: EmuDuration::from_secs(3600),
            },
            Job {
                arrival: EmuDuration::from_secs(90),
                vms: 3,
                duration: EmuDuration::from_secs(60),
            },
        ];
        let text = write(&jobs, &[("Note".into(), "test".into())]);
        let trace = parse(&text).expect("a written trace parses");
        assert_eq!(to_jobs(&trace, 64, 10, 1).expect("fits").0, jobs);
        // Eight processors per VM (one VM per 8-CPU node): 16 → 2 VMs, 3 → 1 VM.
        let by_node: Vec<u32> = to_jobs(&trace, 64, 10, 8)
            .expect("fits")
            .0
            .iter()
            .map(|j| j.vms)
            .collect();
        assert_eq!(by_node, vec![2, 1]);
    }
}
