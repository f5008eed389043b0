//! Telling the files igemu writes into an output folder from files that only share their
//! names, so that `--overwrite` replaces or removes igemu's own and nothing else: a user's
//! `points.csv` or `stress.json` in the folder is refused, named, and left alone.

use std::path::Path;

use super::Error;

/// How a file of one of igemu's output names is recognised as igemu's.
enum Sign {
    /// The first line starts with these columns (ones every igemu version wrote first).
    Columns(&'static str),
    /// The first line ends with these columns (those after the varied keys).
    EndColumns(&'static str),
    /// The first line is a sweep's run file header: `run,seed,…,error`.
    RunFile,
    /// A JSON object with a string at one of these paths of keys (a number indexes an array).
    JsonString(&'static [&'static [&'static str]]),
    /// A trace: the first line is a JSON object with `seq` and `kind`.
    Trace,
    /// A report page: an HTML document whose title begins `igemu `.
    Report,
}

/// The sign of igemu's own file called `name`, if igemu writes a file of that name into an
/// output folder.
fn sign(name: &str) -> Option<Sign> {
    use Sign::*;
    Some(match name {
        "summary.json" => JsonString(&[&["provenance", "igemu"]]),
        "requests.csv" => Columns("request_id,grid,cluster,origin,lease_type,vms,"),
        "decisions.csv" => Columns("at_s,cluster,local_request,"),
        "intervals.csv" => Columns("request_id,vm,grid,cluster,host,"),
        "utilization.csv" => Columns("time_s,grid,cluster,cores_used,"),
        "leases.csv" => Columns("time_s,request_id,event,grid,cluster,"),
        "trace.jsonl" => Trace,
        "report.html" => Report,
        "points.csv" => EndColumns("metric,n,mean,ci95_low,ci95_high"),
        "paired.csv" => Columns("key,a,b,"),
        "stress.csv" => Columns("faults,seed,schedule,violations,"),
        // Older stress tests recorded no inputs; their results' reproduce lines are igemu's.
        "stress.json" => JsonString(&[
            &["inputs", "provenance", "igemu"],
            &["results", "0", "reproduce"],
        ]),
        "sweep.json" => JsonString(&[&["igemu"]]),
        "runs.csv" => RunFile,
        _ if super::shard_file(name) && name.ends_with(".json") => JsonString(&[&["igemu"]]),
        _ if super::shard_file(name) => RunFile,
        _ => return None,
    })
}

/// Whether the file `dir/name` may be replaced as igemu's: it is recognisably igemu's, or
/// empty (nothing to lose; a trace filtered to nothing is empty). A name igemu does not
/// write is not.
pub(super) fn is_igemus(dir: &Path, name: &str) -> bool {
    let path = dir.join(name);
    let Some(sign) = sign(name) else {
        return false;
    };
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return true;
    }
    if let Sign::JsonString(keys) = sign {
        // Capped: a summary.json that is a link to /dev/zero is no run's.
        let Ok(text) = crate::input::read_capped(&path, crate::input::MAX_JSON_BYTES) else {
            return false;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            return false;
        };
        let at = |path: &[&str]| {
            path.iter().try_fold(&v, |v, k| match k.parse::<usize>() {
                Ok(i) => v.get(i),
                Err(_) => v.get(k),
            })
        };
        return keys
            .iter()
            .any(|path| at(path).is_some_and(serde_json::Value::is_string));
    }
    // The first 64 KiB: enough for any first line igemu writes, whatever the file's size.
    let mut head = Vec::new();
    let read = std::fs::File::open(&path).and_then(|f| {
        std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 * 1024), &mut head)
    });
    if read.is_err() {
        return false;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    let first = first.trim_end_matches('\r');
    match sign {
        Sign::Columns(columns) => first.starts_with(columns),
        Sign::EndColumns(columns) => first.ends_with(columns),
        Sign::RunFile => first.starts_with("run,seed,") && first.ends_with(",error"),
        Sign::Trace => serde_json::from_str::<serde_json::Value>(first)
            .is_ok_and(|v| v.get("seq").is_some() && v.get("kind").is_some()),
        Sign::Report => {
            let text = String::from_utf8_lossy(&head);
            text.starts_with("<!DOCTYPE html>") && text.contains("<title>igemu ")
        }
        Sign::JsonString(_) => false, // handled above
    }
}

/// Refuses the folder `dir` if a file there has the name of one of igemu's outputs but is
/// not igemu's: whatever the command and `--overwrite`, igemu replaces or removes only its
/// own files.
pub(super) fn refuse_foreign(dir: &Path) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(()); // a folder not there yet holds nothing
    };
    let mut foreign: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| sign(n).is_some() && !is_igemus(dir, n))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    Err(Error::Usage(format!(
        "{} holds {} with the name of igemu's outputs but not written by igemu; igemu \
         replaces or removes only its own files, even with --overwrite: move {} away, or \
         choose another --out",
        dir.display(),
        foreign
            .iter()
            .map(|n| crate::input::diag::shown(n).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        if foreign.len() == 1 { "it" } else { "them" }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each output name is recognised by its own sign, and the same name holding something
    /// else (text, another CSV, JSON without igemu's keys) is not; an empty file holds
    /// nothing to lose.
    #[test]
    fn igemus_files_are_told_from_files_that_share_their_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        let write = |name: &str, text: &str| std::fs::write(d.join(name), text).expect("write");
        let cases: [(&str, &str, &str); 10] = [
            (
                "summary.json",
                r#"{"provenance": {"igemu": "0.1.0"}}"#,
                r#"{"provenance": {}}"#,
            ),
            (
                "requests.csv",
                "request_id,grid,cluster,origin,lease_type,vms,mem_mb\n",
                "id,grid\n",
            ),
            (
                "leases.csv",
                "time_s,request_id,event,grid,cluster,hosts,vms,cause,operation,planned_s\n",
                "time_s,request_id,event\n",
            ),
            (
                "points.csv",
                "set:igg.dispatch,metric,n,mean,ci95_low,ci95_high\n",
                "x,metric,n,mean\n",
            ),
            (
                "runs.csv",
                "run,seed,set:a,m,error\n0,1,x,2,\n",
                "run,seed,m\n",
            ),
            ("runs-0-of-2.csv", "run,seed,error\n", "run,error\n"),
            (
                "sweep-1-of-2.json",
                r#"{"igemu": "0.1.0"}"#,
                r#"{"igemu": 1}"#,
            ),
            (
                "stress.json",
                r#"{"inputs": {"provenance": {"igemu": "0"}}}"#,
                "{}",
            ),
            (
                "trace.jsonl",
                "{\"seq\":0,\"kind\":\"Arrive\"}\n",
                "{\"seq\":0}\n",
            ),
            (
                "report.html",
                "<!DOCTYPE html>\n<html><head><title>igemu run: x</title>",
                "<!DOCTYPE html>\n<html><head><title>My notes</title>",
            ),
        ];
        for (name, ours, theirs) in cases {
            write(name, ours);
            assert!(is_igemus(d, name), "{name}: {ours}");
            assert!(refuse_foreign(d).is_ok(), "{name}");
            write(name, theirs);
            assert!(!is_igemus(d, name), "{name}: {theirs}");
            let e = refuse_foreign(d).expect_err(name).to_string();
            assert!(
                e.contains(name) && e.contains("not written by igemu"),
                "{e}"
            );
            write(name, "");
            assert!(is_igemus(d, name), "{name}: empty, nothing to lose");
            std::fs::remove_file(d.join(name)).expect("remove");
        }
        // A large file is told by its first line (a whole read was capped, and failed).
        let big = "{\"seq\":0,\"kind\":\"Arrive\"}\n".repeat(10_000);
        write("trace.jsonl", &big);
        assert!(is_igemus(d, "trace.jsonl"));
        std::fs::remove_file(d.join("trace.jsonl")).expect("remove");
        // Names igemu does not write are none of its business.
        write("notes.txt", "anything");
        write("points.txt", "anything");
        assert!(refuse_foreign(d).is_ok());
    }
}
