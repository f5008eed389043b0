//! The Grid Workload Format (GWF) of the Grid Workloads Archive (GWA), text flavour: one job
//! per line, 29 whitespace-separated fields (tabs in the archive's files), −1 for a missing
//! value, `#` comment lines (`# Key: value` lines are kept as headers).
//!
//! Sources: the archive's format page, <http://gwa.ewi.tudelft.nl/grid-workload-format/>, and
//! A. Iosup, H. Li, M. Jan, S. Anoep, C. Dumitrescu, L. Wolters and D. Epema, "The Grid
//! Workloads Archive", Future Generation Computer Systems 24(7), 2008. GWF extends the
//! Standard Workload Format of the Parallel Workloads Archive: its first eleven fields are
//! SWF's (times in seconds; SubmitTime since the Unix epoch), then come grid fields:
//!
//! | # | field | # | field | # | field |
//! | --- | --- | --- | --- | --- | --- |
//! | 1 | JobID | 11 | Status | 21 | UsedNetwork |
//! | 2 | SubmitTime | 12 | UserID | 22 | UsedLocalDiskSpace |
//! | 3 | WaitTime | 13 | GroupID | 23 | UsedResources |
//! | 4 | RunTime | 14 | ExecutableID | 24 | ReqPlatform |
//! | 5 | NProcs | 15 | QueueID | 25 | ReqNetwork |
//! | 6 | AverageCPUTimeUsed | 16 | PartitionID | 26 | ReqLocalDiskSpace |
//! | 7 | UsedMemory | 17 | OrigSiteID | 27 | ReqResources |
//! | 8 | ReqNProcs | 18 | LastRunSiteID | 28 | VOID |
//! | 9 | ReqTime | 19 | JobStructure | 29 | ProjectID |
//! | 10 | ReqMemory | 20 | JobStructureParams | | |
//!
//! igemu uses SubmitTime, RunTime, NProcs, ReqNProcs and ReqTime (read strictly: a value
//! that is not a number is an error naming the line and the field) and OrigSiteID (for the
//! `site` filter, as text). Real traces write text in other fields (user and queue names,
//! site names, job structures such as `UNITARY`, platforms): any token is accepted there.
//!
//! Mapping to lease requests: exactly SWF's ([`swf::leases`]). Arrival = submit time minus
//! the first submit time in the file; VMs = NProcs, or ReqNProcs if missing; duration =
//! RunTime, or ReqTime if missing. Jobs with no positive size or no positive duration cannot
//! be leases and are skipped (and counted).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::swf::{self, Summary, SwfJob};
use super::tracefile::{self, LineError, OutOfMemory, Parsed, Reading, TraceFile};
use super::Job;

/// GWF's 29 fields, in file order.
pub const FIELDS: [&str; 29] = [
    "JobID",
    "SubmitTime",
    "WaitTime",
    "RunTime",
    "NProcs",
    "AverageCPUTimeUsed",
    "UsedMemory",
    "ReqNProcs",
    "ReqTime",
    "ReqMemory",
    "Status",
    "UserID",
    "GroupID",
    "ExecutableID",
    "QueueID",
    "PartitionID",
    "OrigSiteID",
    "LastRunSiteID",
    "JobStructure",
    "JobStructureParams",
    "UsedNetwork",
    "UsedLocalDiskSpace",
    "UsedResources",
    "ReqPlatform",
    "ReqNetwork",
    "ReqLocalDiskSpace",
    "ReqResources",
    "VOID",
    "ProjectID",
];

/// One parsed job line.
#[derive(Clone, Debug, PartialEq)]
pub struct GwfJob {
    /// The fields GWF shares with SWF (1 to 11) that igemu keeps, and the line number.
    /// JobID and Status are −1 where the trace writes something other than a number.
    pub swf: SwfJob,
    /// Field 17, OrigSiteID: the site the job was submitted at; `None` if missing (−1). One
    /// string per site, shared by its jobs.
    pub orig_site: Option<Arc<str>>,
}

/// A parsed trace.
pub type GwfTrace = TraceFile<GwfJob>;

/// A malformed line.
pub type GwfError = LineError;

/// What to write instead of a bad value in field `n` (1-based).
fn fix(n: usize) -> String {
    let name = FIELDS[n - 1];
    match n {
        2 => "SubmitTime cannot be missing: write the submission time in seconds since the Unix \
              epoch"
            .to_string(),
        5 | 8 => format!("write a whole number of processors in {name}, or -1 if it is unknown"),
        _ => format!("write a number of seconds in {name}, or -1 if it is unknown"),
    }
}

/// Field `n` (1-based) of `fields` as a number (a whole one for processors); the error names
/// the field and says what to write instead.
fn number(fields: &[&str], n: usize) -> Result<f64, (String, String)> {
    let (name, text) = (FIELDS[n - 1], fields[n - 1]);
    let whole = matches!(n, 5 | 8);
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && (!whole || v.fract() == 0.0) => Ok(v),
        Ok(v) if v.is_finite() => Err((
            format!("field {n} ({name}) is `{text}`, not a whole number"),
            fix(n),
        )),
        _ => Err((
            format!("field {n} ({name}) is `{text}`, not a number"),
            fix(n),
        )),
    }
}

/// A field igemu does not compute with, as a number if it is one (−1 otherwise).
fn tolerant(text: &str) -> i64 {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map_or(-1, |v| v as i64)
}

/// One job line.
pub(crate) fn job(sites: &mut Sites, fields: &[&str], line: usize) -> Parsed<GwfJob> {
    // A line of column titles, as some exports start with, is not a job.
    if fields
        .first()
        .is_some_and(|f| f.eq_ignore_ascii_case("JobID"))
    {
        return Ok(None);
    }
    if fields.len() != FIELDS.len() {
        let fix = if fields.len() == 18 {
            "the line has the 18 fields of an SWF trace (Parallel Workloads Archive): read it \
             with model = \"swf\""
        } else {
            "a GWF job line has 29 whitespace-separated fields, JobID to ProjectID, with -1 for \
             a missing value (a value may not contain spaces)"
        };
        return Err((
            format!("expected 29 fields, found {}", fields.len()),
            fix.to_string(),
        ));
    }
    let submit = number(fields, 2)?;
    if submit < 0.0 {
        return Err((
            format!(
                "field 2 (SubmitTime) is `{}`: missing or negative",
                fields[1]
            ),
            fix(2),
        ));
    }
    let run = number(fields, 4)?;
    let alloc_procs = number(fields, 5)? as i64;
    let req_procs = number(fields, 8)? as i64;
    let req_time = number(fields, 9)?;
    for (v, n) in [(submit, 2), (run, 4), (req_time, 9)] {
        super::swf::check_secs(v, n)?;
    }
    let site = fields[16];
    let orig_site = match site {
        "-1" => None,
        _ => Some(sites.intern(site)?),
    };
    Ok(Some(GwfJob {
        swf: SwfJob {
            line,
            number: tolerant(fields[0]),
            submit,
            run,
            alloc_procs,
            req_procs,
            req_time,
            status: tolerant(fields[10]),
        },
        orig_site,
    }))
}

/// The most distinct OrigSiteIDs a trace may name: real traces name a few dozen sites.
pub const MAX_SITES: usize = 10_000;

/// The longest OrigSiteID, bytes: real ones are short names or numbers.
pub const MAX_SITE_LEN: usize = 256;

/// The sites a trace names, each held once and shared by its jobs, so that a job costs no
/// allocation of its own and an endless trace of one site costs its jobs only.
#[derive(Default)]
pub(crate) struct Sites(HashSet<Arc<str>>);

impl Sites {
    /// The shared string of `site`, or why it cannot be held.
    fn intern(&mut self, site: &str) -> Result<Arc<str>, (String, String)> {
        if let Some(known) = self.0.get(site) {
            return Ok(Arc::clone(known));
        }
        if site.len() > MAX_SITE_LEN {
            return Err((
                format!("field 17 (OrigSiteID) is longer than {MAX_SITE_LEN} bytes"),
                "write the site as a short name or number".to_string(),
            ));
        }
        if self.0.len() == MAX_SITES {
            return Err((
                format!("more than {MAX_SITES} sites (field 17, OrigSiteID)"),
                "a Grid trace names a few dozen sites; check the trace, or write -1 where the \
                 site is unknown"
                    .to_string(),
            ));
        }
        let shared: Arc<str> = Arc::from(site);
        self.0.insert(Arc::clone(&shared));
        Ok(shared)
    }
}

/// Parses a whole trace in memory; returns every malformed line (at most 20) if any.
pub fn parse(text: &str) -> Result<GwfTrace, Vec<GwfError>> {
    let mut sites = Sites::default();
    tracefile::read(text, '#', |f, l| job(&mut sites, f, l))
}

/// Reads a trace from `reader` (a file opened with [`tracefile::open`]) one line at a time,
/// at most [`MAX_TRACE_BYTES`](crate::input::MAX_TRACE_BYTES): memory holds the jobs, not
/// the file (see [`tracefile`]).
pub fn read(reader: impl std::io::Read) -> Reading<GwfJob> {
    let mut sites = Sites::default();
    tracefile::read_from(reader, tracefile::Limits::TRACE, '#', |f, l| {
        job(&mut sites, f, l)
    })
}

impl GwfTrace {
    /// The OrigSiteIDs in the trace, in order, with their numbers of jobs.
    pub fn sites(&self) -> Vec<(&str, usize)> {
        let mut sites = BTreeMap::new();
        for s in self.jobs.iter().filter_map(|j| j.orig_site.as_deref()) {
            *sites.entry(s).or_insert(0) += 1;
        }
        sites.into_iter().collect()
    }

    /// The jobs submitted at `site` (every job if `None`).
    fn at<'a>(&'a self, site: Option<&'a str>) -> impl Iterator<Item = &'a SwfJob> + 'a {
        self.jobs
            .iter()
            .filter(move |j| site.is_none() || j.orig_site.as_deref() == site)
            .map(|j| &j.swf)
    }
}

/// The trace's jobs submitted at `site` (all of them if `None`) as generated jobs, mapped as
/// SWF's are ([`swf::leases`]); also the number skipped. Arrivals count from the first
/// submission in the whole file, so that Grids replaying different sites of one trace keep
/// its timing. An error if they do not fit in memory.
pub fn to_jobs(
    trace: &GwfTrace,
    site: Option<&str>,
    max_vms: u32,
    max_jobs: usize,
    procs_per_vm: u32,
) -> Result<(Vec<Job>, usize), OutOfMemory> {
    let first = swf::first_submit(trace.jobs.iter().map(|j| &j.swf));
    swf::leases(trace.at(site), first, max_vms, max_jobs, procs_per_vm)
}

/// Summarises a trace (as `igemu workload inspect` prints it); an error if its jobs do not
/// fit in memory twice (as parsed and as leases).
pub fn summarize(trace: &GwfTrace) -> Result<Summary, OutOfMemory> {
    let (jobs, _) = to_jobs(trace, None, u32::MAX, usize::MAX, 1)?;
    Ok(Summary::of(&jobs, trace.jobs.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::EmuDuration;

    /// Three sites; text in fields igemu does not use (users, queues, sites, structure,
    /// platform); tabs and spaces; missing values.
    const TRACE: &str = "\
# Synthetic test trace: prose, not a header
# Version: 1.0
# JobID SubmitTime WaitTime RunTime ...
1\t1136070024\t0\t3600\t4\t-1\t-1\t4\t7200\t-1\t1\tU1\tG1\tapp1\tdefault\t-1\tnancy\tnancy\tUNITARY\t-1\t-1\t-1\t-1\tx86\t-1\t-1\t-1\t-1\t-1
2 1136070084 5 -1 -1 -1 -1 8 600 -1 1 U2 G1 -1 q2 -1 rennes rennes UNITARY -1 -1 -1 -1 -1 -1 -1 -1 -1 -1
3 1136070144 2 0 0 -1 -1 -1 -1 -1 0 U3 G2 -1 -1 -1 nancy nancy -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1

J4 1136070174.5 1 50.5 1 -1 -1 1 60 -1 done U1 G1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1
";

    #[test]
    fn fields_missing_values_and_comments() {
        let t = parse(TRACE).expect("valid");
        assert_eq!(t.header, vec![("Version".into(), "1.0".into())]);
        assert_eq!(t.jobs.len(), 4);
        let j = &t.jobs[0];
        assert_eq!(
            (j.swf.line, j.swf.number, j.swf.submit, j.swf.run),
            (4, 1, 1_136_070_024.0, 3600.0)
        );
        assert_eq!(
            (j.swf.alloc_procs, j.swf.req_procs, j.swf.req_time),
            (4, 4, 7200.0)
        );
        assert_eq!(j.orig_site.as_deref(), Some("nancy"));
        // Text where GWF has numbers igemu does not use: −1.
        assert_eq!((t.jobs[3].swf.number, t.jobs[3].swf.status), (-1, -1));
        assert_eq!(t.jobs[3].orig_site, None);
        assert_eq!(
            t.sites(),
            vec![("nancy", 2), ("rennes", 1)],
            "jobs per OrigSiteID"
        );
    }

    #[test]
    fn jobs_map_to_leases_as_swf_jobs_do() {
        let t = parse(TRACE).expect("valid");
        let (jobs, skipped) = to_jobs(&t, None, 64, usize::MAX, 1).expect("fits");
        assert_eq!(skipped, 1, "job 3 has no size and no duration");
        // (arrival s, VMs, duration s); job 2 lacks RunTime and NProcs: ReqTime, ReqNProcs.
        let got: Vec<(f64, u32, f64)> = jobs
            .iter()
            .map(|j| (j.arrival.as_secs_f64(), j.vms, j.duration.as_secs_f64()))
            .collect();
        assert_eq!(
            got,
            vec![(0.0, 4, 3600.0), (60.0, 8, 600.0), (150.5, 1, 50.5)]
        );
        let s = summarize(&t).expect("fits");
        assert_eq!((s.jobs, s.usable), (4, 3));
        // Two processors per VM, at most 4 VMs.
        let sizes: Vec<u32> = to_jobs(&t, None, 4, 10, 2)
            .expect("fits")
            .0
            .iter()
            .map(|j| j.vms)
            .collect();
        assert_eq!(sizes, vec![2, 4, 1]);
    }

    #[test]
    fn a_site_keeps_its_jobs_and_the_trace_s_clock() {
        let t = parse(TRACE).expect("valid");
        let (rennes, skipped) = to_jobs(&t, Some("rennes"), 64, usize::MAX, 1).expect("fits");
        assert_eq!(skipped, 0);
        assert_eq!(rennes.len(), 1);
        assert_eq!(
            rennes[0].arrival,
            EmuDuration::from_secs(60),
            "arrivals count from the file's first submission, not the site's"
        );
        let (nancy, skipped) = to_jobs(&t, Some("nancy"), 64, usize::MAX, 1).expect("fits");
        assert_eq!((nancy.len(), skipped), (1, 1));
        assert!(to_jobs(&t, Some("lyon"), 64, usize::MAX, 1)
            .expect("fits")
            .0
            .is_empty());
    }

    #[test]
    fn bad_lines_are_reported_with_their_numbers_fields_and_fixes() {
        let ok =
            "1 100 0 60 2 -1 -1 2 60 -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1";
        let bad = [
            "# header",
            ok,
            "2 100 0 1h 2 -1 -1 2 60 -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
            "3 100 0 60 2",
            "4 100 0 60 2.5 -1 -1 2 60 -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
            "5 -1 0 60 2 -1 -1 2 60 -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
            "6 100 0 60 2 -1 -1 two 60 -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
            "7 100 0 60 2 -1 -1 2 NaN -1 1 -1 -1 -1 -1 -1 s1 s1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
        ]
        .join("\n");
        let errs = parse(&bad).expect_err("six bad lines");
        let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![3, 4, 5, 6, 7, 8]);
        assert_eq!(
            errs[0].to_string(),
            "line 3: field 4 (RunTime) is `1h`, not a number"
        );
        assert_eq!(
            errs[0].fix,
            "write a number of seconds in RunTime, or -1 if it is unknown"
        );
        assert_eq!(errs[1].to_string(), "line 4: expected 29 fields, found 5");
        assert!(
            errs[1].fix.contains("29 whitespace-separated fields"),
            "{}",
            errs[1].fix
        );
        assert_eq!(
            errs[2].message,
            "field 5 (NProcs) is `2.5`, not a whole number"
        );
        assert!(
            errs[3].message.contains("field 2 (SubmitTime)"),
            "{}",
            errs[3]
        );
        assert!(errs[3].fix.contains("cannot be missing"), "{}", errs[3].fix);
        assert!(
            errs[4].message.contains("field 8 (ReqNProcs) is `two`"),
            "{}",
            errs[4]
        );
        assert!(errs[5].message.contains("field 9 (ReqTime)"), "{}", errs[5]);
        // An SWF line: the fix names the other format.
        let swf_line = "1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1";
        let errs = parse(swf_line).expect_err("an SWF line");
        assert!(errs[0].fix.contains("model = \"swf\""), "{}", errs[0].fix);
        // Reading stops after 20 bad lines.
        let many = "x\n".repeat(50);
        assert_eq!(
            parse(&many).expect_err("all bad").len(),
            tracefile::MAX_ERRORS
        );
    }

    #[test]
    fn sites_are_held_once_and_bounded_in_number_and_length() {
        let line = |site: &str| {
            format!("1 10 0 60 1 -1 -1 1 60 -1 1 -1 -1 -1 -1 -1 {site} -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n")
        };
        let t = parse(&[line("a"), line("b"), line("a")].concat()).expect("three jobs");
        let site = |i: usize| t.jobs[i].orig_site.clone().expect("a site");
        assert!(Arc::ptr_eq(&site(0), &site(2)), "one string per site");
        assert!(!Arc::ptr_eq(&site(0), &site(1)));
        let long = "s".repeat(MAX_SITE_LEN + 1);
        let e = parse(&[line("a"), line(&long)].concat()).expect_err("a long site");
        assert_eq!(e[0].line, 2);
        assert!(
            e[0].message.contains("longer than 256 bytes"),
            "{}",
            e[0].message
        );
        assert!(parse(&line(&long[1..])).is_ok(), "a site at the limit");
        let many: String = (0..=MAX_SITES).map(|i| line(&format!("s{i}"))).collect();
        let e = parse(&many).expect_err("one site too many");
        assert_eq!(e[0].line, MAX_SITES + 1);
        assert!(
            e[0].message.starts_with("more than 10000 sites"),
            "{}",
            e[0].message
        );
    }
}
