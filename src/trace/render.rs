//! Reading a `trace.jsonl` back, filtering it to one request or one negotiation, and
//! rendering it as a Mermaid sequence diagram or in the Chrome trace-event format (which
//! Perfetto and `chrome://tracing` open: one track per actor, an arrow per message).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
}

/// Parses a trace; a malformed line is reported with its number.
pub fn parse(text: &str) -> Result<Vec<Event>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// Keeps the events about request `request` (by its id) and/or negotiation `negotiation`.
/// For a negotiation, the messages about the requests it redirected follow too. Then, by
/// causes: every message that names no request or negotiation of its own (a timer, a
/// publication, a price update) and was sent while handling a kept one is kept as well.
pub fn filter(events: &[Event], request: Option<&str>, negotiation: Option<u64>) -> Vec<Event> {
    let mut requests: Vec<String> = request.map(str::to_string).into_iter().collect();
    if let Some(n) = negotiation {
        for e in events.iter().filter(|e| e.negotiation == Some(n)) {
            if let Some(r) = &e.request {
                if !requests.contains(r) {
                    requests.push(r.clone());
                }
            }
        }
    }
    let about = |e: &Event| {
        negotiation.is_some_and(|n| e.negotiation == Some(n))
            || e.request.as_ref().is_some_and(|r| requests.contains(r))
    };
    // Causes come before their effects, so one pass in order sees every kept cause first.
    let mut kept = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let anonymous = e.request.is_none() && e.negotiation.is_none();
        let follows = anonymous && e.cause.is_some_and(|c| kept.contains(&c));
        if about(e) || follows {
            kept.insert(e.seq);
            out.push(e.clone());
        }
    }
    out
}

/// The chain of causes that led to event `seq`, oldest first, ending with it.
pub fn causes(events: &[Event], seq: u64) -> Vec<Event> {
    let by_seq: BTreeMap<u64, &Event> = events.iter().map(|e| (e.seq, e)).collect();
    let mut chain = Vec::new();
    let mut next = Some(seq);
    while let Some(s) = next {
        let Some(e) = by_seq.get(&s) else { break };
        chain.push((*e).clone());
        // A cause precedes its effect, so the walk ends.
        next = e.cause.filter(|c| *c < s);
    }
    chain.reverse();
    chain
}

fn secs(us: u64) -> String {
    crate::time::format_secs(us)
}

/// The lane of actor `a` in a diagram: with `vm_lanes` false, the VMs of one lease
/// (`vm:<request>/<i>`) share the lane `vm:<request>/*` (labels keep the VM index), so a
/// lease of many VMs does not make the diagram unreadably wide.
fn lane(a: &str, vm_lanes: bool) -> String {
    match a.strip_prefix("vm:").and_then(|r| r.rsplit_once('/')) {
        Some((request, _)) if !vm_lanes => format!("vm:{request}/*"),
        _ => a.to_string(),
    }
}

/// A Mermaid `sequenceDiagram` of the events, participants in order of appearance; one lane
/// per VM with `vm_lanes`, else one per lease's VMs.
pub fn mermaid(events: &[Event], vm_lanes: bool) -> String {
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for e in events {
        for a in [&e.from, &e.to] {
            let a = lane(a, vm_lanes);
            if !ids.contains_key(&a) {
                ids.insert(a.clone(), order.len());
                order.push(a);
            }
        }
    }
    let mut out = String::from("sequenceDiagram\n");
    for (i, a) in order.iter().enumerate() {
        out += &format!("    participant P{i} as {a}\n");
    }
    for e in events {
        let mut label = format!("{} t={}s", e.kind, secs(e.t_us));
        if let Some(vm) = e.vm {
            label += &format!(" vm {vm}");
        }
        if let Some(n) = e.negotiation {
            label += &format!(" neg {n}");
        }
        // Every lane was inserted in the loop above.
        let (f, t) = (ids[&lane(&e.from, vm_lanes)], ids[&lane(&e.to, vm_lanes)]);
        out += &format!("    P{f}->>P{t}: {}\n", label.replace([';', '#'], " "));
    }
    out
}

/// The events in Chrome trace-event JSON: a named thread per actor, an instant on the
/// receiver's track per message, and a flow arrow from sender to receiver.
pub fn chrome(events: &[Event]) -> serde_json::Value {
    let mut tids: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        for a in [&e.from, &e.to] {
            if !tids.contains_key(a) {
                let tid = tids.len() + 1;
                tids.insert(a.clone(), tid);
                out.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": a}}));
            }
        }
        let (from, to) = (tids[&e.from], tids[&e.to]);
        let args = serde_json::json!({"from": e.from, "to": e.to, "request": e.request, "vm": e.vm, "negotiation": e.negotiation});
        out.push(serde_json::json!({"name": e.kind, "cat": "message", "ph": "i", "s": "t", "ts": e.t_us, "pid": 1, "tid": to, "args": args}));
        if from != to {
            out.push(serde_json::json!({"name": e.kind, "cat": "flow", "ph": "s", "id": e.seq, "ts": e.t_us, "pid": 1, "tid": from}));
            out.push(serde_json::json!({"name": e.kind, "cat": "flow", "ph": "f", "bp": "e", "id": e.seq, "ts": e.t_us, "pid": 1, "tid": to}));
        }
    }
    serde_json::json!({"traceEvents": out, "displayTimeUnit": "ms"})
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"seq":0,"t_us":0,"t":"0","from":"igg:a","to":"igg:b","kind":"PeerOffer","negotiation":7}
{"seq":1,"t_us":5,"t":"0.000005","from":"igg:b","to":"igg:a","kind":"PeerAnswer","negotiation":7}
{"seq":2,"t_us":9,"t":"0.000009","from":"igg:a","to":"igg:b","kind":"PeerRedirect","request":"r1","negotiation":7}
{"seq":3,"t_us":20,"t":"0.00002","from":"igg:b","to":"lrms:b/c","kind":"AssignLease","request":"r1"}
{"seq":4,"t_us":30,"t":"0.00003","from":"dve:a","to":"igg:a","kind":"SubmitExternal","request":"r2"}
"#;

    #[test]
    fn a_negotiation_brings_the_requests_it_redirected() {
        let ev = parse(TRACE).expect("valid");
        let neg = filter(&ev, None, Some(7));
        assert_eq!(
            neg.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        let r2 = filter(&ev, Some("r2"), None);
        assert_eq!(r2.len(), 1);
    }

    #[test]
    fn messages_without_ids_follow_the_kept_ones_that_caused_them() {
        let text = r#"{"seq":0,"t_us":0,"t":"0","from":"dve:a","to":"igg:a","kind":"SubmitExternal","request":"r1"}
{"seq":1,"t_us":0,"t":"0","from":"igg:a","to":"lrms:a/c","kind":"AssignLease","request":"r1","cause":0}
{"seq":2,"t_us":0,"t":"0","from":"lrms:a/c","to":"lrms:a/c","kind":"Tick","cause":1}
{"seq":3,"t_us":9,"t":"0.000009","from":"lrms:a/c","to":"vm:r2/0","kind":"VmCommand","request":"r2","vm":0,"cause":2}
{"seq":4,"t_us":9,"t":"0.000009","from":"lrms:a/c","to":"lrms:a/c","kind":"PublishTick"}
"#;
        let ev = parse(text).expect("valid");
        // The tick r1's assignment set follows r1; what the tick did for r2 does not, and a
        // publication nothing kept caused does not either.
        let r1 = filter(&ev, Some("r1"), None);
        assert_eq!(r1.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![0, 1, 2]);
        let chain = causes(&ev, 3);
        assert_eq!(
            chain.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn mermaid_and_chrome_render_every_message() {
        let ev = parse(TRACE).expect("valid");
        let m = mermaid(&filter(&ev, None, Some(7)), true);
        assert!(m.starts_with("sequenceDiagram\n"));
        assert!(m.contains("participant P0 as igg:a"));
        assert!(m.contains("P0->>P1: PeerOffer t=0s neg 7"));
        assert_eq!(m.lines().filter(|l| l.contains("->>")).count(), 4);
        let c = chrome(&ev);
        let events = c["traceEvents"].as_array().expect("array");
        assert_eq!(events.iter().filter(|e| e["ph"] == "i").count(), 5);
        assert_eq!(
            events.iter().filter(|e| e["ph"] == "M").count(),
            4,
            "one named track per actor"
        );
    }

    #[test]
    fn the_vms_of_a_lease_share_a_lane_unless_asked_otherwise() {
        let line = |vm: u32| {
            format!(
                r#"{{"seq":{vm},"t_us":0,"t":"0","from":"lrms:g/c","to":"vm:r1/{vm}","kind":"VmCommand","request":"r1","vm":{vm}}}"#
            )
        };
        let ev = parse(&format!("{}\n{}\n", line(0), line(1))).expect("valid");
        let merged = mermaid(&ev, false);
        assert_eq!(merged.matches("participant").count(), 2, "{merged}");
        assert!(merged.contains("participant P1 as vm:r1/*"));
        assert!(merged.contains("P0->>P1: VmCommand t=0s vm 1"));
        assert_eq!(mermaid(&ev, true).matches("participant").count(), 3);
    }

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(
            parse("{\"seq\":0}\n").unwrap_err().split(':').next(),
            Some("line 1")
        );
    }
}
