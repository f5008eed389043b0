//! A trace selection in the Chrome trace-event format, laid out as a Gantt chart for
//! Perfetto (ui.perfetto.dev) and `chrome://tracing`: one process per Grid, one thread per
//! actor of the Grid (its IGG, user agents, LRMSs and local users) and per host, and each
//! VM's states as duration slices on the track of the host it is on. Messages are instants
//! on their receiver's track with a flow arrow from their sender's.
//!
//! [`Chrome`] writes the JSON array as the lines come, one event at a time; it remembers
//! only the tracks (bounded by the actors that are not VMs), the hosts' lanes and the open
//! state of each VM that is alive or suspended, never the messages.
//!
//! A host runs several VMs at once, and slices on one thread must nest, so a host's track
//! has lanes: a VM takes the host's first free lane while it holds the host (booting,
//! running, paused, suspending, resuming) and keeps it until it leaves; lane 0 is the thread
//! `host <grid>/<cluster>/<i>`, lane k the thread `host <grid>/<cluster>/<i> (k+1)`. A VM
//! whose image is on shared storage (suspended, migrating) is on a lane of its cluster's
//! `storage <grid>/<cluster>` track the same way. A VM's consecutive states are contiguous
//! slices on one lane while it stays on one host.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::render::{Event, Line};
use crate::model::{VmEvent, VmState};

/// Where a thread sorts within its process: the IGG and user agents first, then per cluster
/// its LRMS, local users, hosts by index (and lane), and storage.
type SortKey = (u8, String, u8, u64, u32);

struct Track {
    pid: u32,
    tid: u32,
    name: String,
    sort: SortKey,
}

/// A VM as the trace has shown it so far.
#[derive(Default)]
struct VmLife {
    /// Its state and since when (µs); `None` before its first step.
    state: Option<(VmState, u64)>,
    /// The lane it is on: (place, lane), a place being a host's actor name or `storage:<grid>/<cluster>`.
    place: Option<(String, u32)>,
    /// Its cluster, `<grid>/<cluster>`.
    cluster: Option<String>,
    request: Option<String>,
    vm: Option<u32>,
}

/// Writes Chrome trace-event JSON to `out`, one event at a time (see the module's doc).
pub struct Chrome<W: Write> {
    out: W,
    first: bool,
    /// Process name → pid.
    pids: BTreeMap<String, u32>,
    /// Track key (an actor's name, or a host's or storage's lane) → its thread.
    tracks: BTreeMap<String, Track>,
    /// Each place's lanes: whether each is taken.
    lanes: BTreeMap<String, Vec<bool>>,
    vms: BTreeMap<String, VmLife>,
    /// The latest time seen, µs: where states still open at the end are closed.
    last_us: u64,
}

/// The Grid and the rest of an actor's name: `lrms:g/c` → (`lrms`, `g`, `c`).
fn parts(actor: &str) -> Option<(&str, &str, &str)> {
    let (kind, rest) = actor.split_once(':')?;
    let (grid, rest) = rest.split_once('/').unwrap_or((rest, ""));
    Some((kind, grid, rest))
}

/// The process an actor's track belongs to: its Grid's, or `emulation` (the director).
fn process_of(actor: &str) -> String {
    match parts(actor) {
        Some(("igg" | "dve" | "lrms" | "users" | "host" | "storage", grid, _)) => {
            format!("grid {grid}")
        }
        _ => "emulation".to_string(),
    }
}

/// The thread name and sort key of the track `key` (lane `lane` of a place, or an actor).
fn describe(key: &str, lane: u32) -> (String, SortKey) {
    let lane_suffix = if lane > 0 {
        format!(" ({})", lane + 1)
    } else {
        String::new()
    };
    match parts(key) {
        Some(("igg", _, _)) => (key.to_string(), (0, String::new(), 0, 0, 0)),
        Some(("dve", _, _)) => (key.to_string(), (1, String::new(), 0, 0, 0)),
        Some(("lrms", _, c)) => (key.to_string(), (2, c.to_string(), 0, 0, 0)),
        Some(("users", _, c)) => (key.to_string(), (2, c.to_string(), 1, 0, 0)),
        Some(("host", g, rest)) => {
            let (c, i) = rest.rsplit_once('/').unwrap_or((rest, ""));
            let index = i.parse().unwrap_or(u64::MAX);
            let name = format!("host {g}/{rest}{lane_suffix}");
            (name, (2, c.to_string(), 2, index, lane))
        }
        Some(("storage", g, c)) => {
            let name = format!("storage {g}/{c}{lane_suffix}");
            (name, (2, c.to_string(), 3, 0, lane))
        }
        _ => (key.to_string(), (3, key.to_string(), 0, 0, 0)),
    }
}

/// A message's arguments: its ends, ids and what a peer message says.
fn message_args(e: &Event) -> Value {
    let mut args = json!({"from": e.from, "to": e.to, "request": e.request, "vm": e.vm, "negotiation": e.negotiation});
    if let Some(p) = e.price {
        args["price"] = p.into();
    }
    if let Some(v) = &e.verdict {
        args["verdict"] = v.as_str().into();
    }
    if let Some(c) = e.contract {
        args["contract"] = json!({"min": c.min, "max": c.max});
    }
    if !e.items.is_empty() {
        args["items"] = serde_json::to_value(&e.items).unwrap_or_default();
    }
    args
}

impl<W: Write> Chrome<W> {
    /// A writer to `out`; nothing is written until the first line (or [`Chrome::finish`]).
    pub fn new(out: W) -> Self {
        Chrome {
            out,
            first: true,
            pids: BTreeMap::new(),
            tracks: BTreeMap::new(),
            lanes: BTreeMap::new(),
            vms: BTreeMap::new(),
            last_us: 0,
        }
    }

    fn emit(&mut self, event: &Value) -> io::Result<()> {
        if self.first {
            self.out
                .write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
            self.first = false;
        } else {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, event).map_err(io::Error::from)
    }

    /// The (pid, tid) of track `key`, lane `lane`, made on first use.
    fn track(&mut self, key: &str, lane: u32) -> (u32, u32) {
        let full = if lane == 0 {
            key.to_string()
        } else {
            format!("{key}#{lane}")
        };
        if let Some(t) = self.tracks.get(&full) {
            return (t.pid, t.tid);
        }
        let process = process_of(key);
        let next_pid = self.pids.len() as u32 + 1;
        let pid = *self.pids.entry(process).or_insert(next_pid);
        let tid = self.tracks.len() as u32 + 1;
        let (name, sort) = describe(key, lane);
        self.tracks.insert(
            full,
            Track {
                pid,
                tid,
                name,
                sort,
            },
        );
        (pid, tid)
    }

    /// The track of actor `a`: a VM is drawn on its lane, or, before it has one, on its
    /// cluster's LRMS; `None` for a VM the selection has not placed (or that has ended),
    /// whose messages go on the other end's track, so that VMs never make tracks of their own.
    fn actor_track(&mut self, a: &str) -> Option<(u32, u32)> {
        if !a.starts_with("vm:") {
            return Some(self.track(a, 0));
        }
        match self.vms.get(a) {
            Some(VmLife {
                place: Some((place, lane)),
                ..
            }) => {
                let (place, lane) = (place.clone(), *lane);
                Some(self.track(&place, lane))
            }
            Some(VmLife {
                cluster: Some(c), ..
            }) => {
                let lrms = format!("lrms:{c}");
                Some(self.track(&lrms, 0))
            }
            _ => None,
        }
    }

    /// The tracks of a message's sender and receiver (see [`Chrome::actor_track`]).
    fn ends(&mut self, from: &str, to: &str) -> ((u32, u32), (u32, u32)) {
        match (self.actor_track(from), self.actor_track(to)) {
            (Some(f), Some(t)) => (f, t),
            (Some(f), None) => (f, f),
            (None, Some(t)) => (t, t),
            // Two unplaced VMs (a VM's step outside any placement the selection shows).
            (None, None) => {
                let t = self.track(from, 0);
                (t, t)
            }
        }
    }

    /// Takes the first free lane of `place`.
    fn take_lane(&mut self, place: &str) -> u32 {
        let lanes = self.lanes.entry(place.to_string()).or_default();
        match lanes.iter().position(|busy| !busy) {
            Some(i) => {
                lanes[i] = true;
                i as u32
            }
            None => {
                lanes.push(true);
                lanes.len() as u32 - 1
            }
        }
    }

    fn free_lane(&mut self, (place, lane): &(String, u32)) {
        if let Some(slot) = self
            .lanes
            .get_mut(place)
            .and_then(|l| l.get_mut(*lane as usize))
        {
            *slot = false;
        }
    }

    /// A slice for VM `name`'s state `state` from `start` to `end` on its lane (or, without
    /// one, where its messages go).
    fn state_slice(&mut self, name: &str, state: VmState, start: u64, end: u64) -> io::Result<()> {
        if end <= start {
            return Ok(()); // a state left the instant it was entered is no span
        }
        let (pid, tid) = self.ends(name, name).0;
        let life = self.vms.get(name);
        let args = json!({
            "vm": name,
            "request": life.and_then(|l| l.request.as_deref()),
            "index": life.and_then(|l| l.vm),
            "place": life.and_then(|l| l.place.as_ref()).map(|p| p.0.as_str()),
        });
        self.emit(&json!({"name": state.as_str(), "cat": "vm", "ph": "X", "ts": start, "dur": end - start, "pid": pid, "tid": tid, "args": args}))
    }

    /// A VM's step: closes the state it leaves (a slice) and enters the next one.
    fn step(&mut self, e: &Event, event: VmEvent) -> io::Result<()> {
        let name = e.to.as_str();
        let after = event.state_after();
        let life = self.vms.entry(name.to_string()).or_default();
        life.request = life.request.take().or_else(|| e.request.clone());
        life.vm = life.vm.or(e.vm);
        let before = life.state;
        if let Some((state, since)) = before {
            if state == after {
                return Ok(()); // not a change (an invalid step the VM refused)
            }
            self.state_slice(name, state, since, e.t_us)?;
        }
        let Some(life) = self.vms.get_mut(name) else {
            return Ok(());
        };
        let moves =
            after.is_terminal() || before.map(|(s, _)| s.holds_host()) != Some(after.holds_host());
        let left = if moves { life.place.take() } else { None };
        life.state = Some((after, e.t_us));
        let storage = (!after.holds_host() && life.place.is_none())
            .then(|| life.cluster.as_ref().map(|c| format!("storage:{c}")))
            .flatten();
        if let Some(left) = left {
            self.free_lane(&left);
        }
        if after.is_terminal() {
            self.vms.remove(name);
        } else if let Some(place) = storage {
            let lane = self.take_lane(&place);
            if let Some(life) = self.vms.get_mut(name) {
                life.place = Some((place, lane));
            }
        }
        Ok(())
    }

    /// A VM taking cores on a host: its host-holding state is drawn on a lane of that host.
    fn occupy(&mut self, vm: &str, host: &str) {
        let Some(life) = self.vms.get_mut(vm) else {
            return;
        };
        if let Some((_, grid, rest)) = parts(host) {
            if let Some((c, _)) = rest.rsplit_once('/') {
                life.cluster = Some(format!("{grid}/{c}"));
            }
        }
        let holds = life.state.is_some_and(|(s, _)| s.holds_host());
        if holds && life.place.is_none() {
            let lane = self.take_lane(host);
            if let Some(life) = self.vms.get_mut(vm) {
                life.place = Some((host.to_string(), lane));
            }
        }
    }

    /// Writes one line of a selection: a message (and what it tells of a VM's state), or a
    /// collapsed lease as a span on its LRMS's track.
    pub fn push(&mut self, line: &Line) -> io::Result<()> {
        match line {
            Line::Message(e) => {
                self.last_us = self.last_us.max(e.t_us);
                if e.kind == "VmCommand" && e.to.starts_with("vm:") {
                    // The LRMS that commands a VM names its cluster: the VM's messages go on
                    // the LRMS's track until it is on a host, and its storage lane is there.
                    if let Some((_, grid, c)) = parts(&e.from).filter(|p| p.0 == "lrms") {
                        let life = self.vms.entry(e.to.clone()).or_default();
                        life.cluster.get_or_insert_with(|| format!("{grid}/{c}"));
                    }
                }
                let (from, to) = self.ends(&e.from, &e.to);
                let instant = json!({"name": e.kind, "cat": "message", "ph": "i", "s": "t", "ts": e.t_us, "pid": to.0, "tid": to.1, "args": message_args(e)});
                self.emit(&instant)?;
                if from != to {
                    self.emit(&json!({"name": e.kind, "cat": "flow", "ph": "s", "id": e.seq, "ts": e.t_us, "pid": from.0, "tid": from.1}))?;
                    self.emit(&json!({"name": e.kind, "cat": "flow", "ph": "f", "bp": "e", "id": e.seq, "ts": e.t_us, "pid": to.0, "tid": to.1}))?;
                }
                let vm_step = (e.from == e.to && e.to.starts_with("vm:"))
                    .then(|| VmEvent::from_name(&e.kind))
                    .flatten();
                if let Some(event) = vm_step {
                    self.step(e, event)?;
                } else if e.kind == "Occupy" && e.from.starts_with("vm:") {
                    self.occupy(&e.from, &e.to);
                }
                Ok(())
            }
            Line::Lease(l) => {
                let (pid, tid) = self.track(l.lrms.as_deref().unwrap_or(&l.by), 0);
                let start = l.started_us.unwrap_or(l.t_us);
                let end = l.ended_us.unwrap_or(start).max(start);
                self.last_us = self.last_us.max(end);
                let args = json!({"text": l.text(), "messages": l.messages});
                self.emit(&json!({"name": format!("lease {}", l.request), "cat": "lease", "ph": "X", "ts": start, "dur": end - start, "pid": pid, "tid": tid, "args": args}))
            }
        }
    }

    /// Closes the states still open at the end of the selection (at its last time), writes
    /// the names and order of the processes and threads, ends the array, flushes, and gives
    /// the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let open: Vec<(String, VmState, u64)> = self
            .vms
            .iter()
            .filter_map(|(name, l)| l.state.map(|(s, since)| (name.clone(), s, since)))
            .collect();
        for (name, state, since) in open {
            self.state_slice(&name, state, since, self.last_us)?;
        }
        let pids: Vec<(String, u32)> = self.pids.iter().map(|(n, p)| (n.clone(), *p)).collect();
        for (name, pid) in pids {
            self.emit(&json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}))?;
            // Grids in order of name, the emulation's own actors last.
            let sort = if name == "emulation" { u32::MAX } else { pid };
            self.emit(&json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": sort}}))?;
        }
        let mut tracks: Vec<(u32, SortKey, u32, String)> = self
            .tracks
            .values()
            .map(|t| (t.pid, t.sort.clone(), t.tid, t.name.clone()))
            .collect();
        tracks.sort();
        for (i, (pid, _, tid, name)) in tracks.into_iter().enumerate() {
            self.emit(&json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}))?;
            self.emit(&json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": i}}))?;
        }
        if self.first {
            self.out
                .write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")?;
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::render::parse;

    /// Two VMs of one lease on host 0 of cluster g/c, one suspended and resumed on host 1.
    const LIFE: &str = r#"{"seq":0,"t_us":0,"from":"lrms:g/c","to":"vm:r/0","kind":"VmCommand","request":"r","vm":0}
{"seq":1,"t_us":0,"from":"lrms:g/c","to":"vm:r/1","kind":"VmCommand","request":"r","vm":1}
{"seq":2,"t_us":10,"from":"vm:r/0","to":"vm:r/0","kind":"Deploy","request":"r","vm":0}
{"seq":3,"t_us":10,"from":"vm:r/0","to":"host:g/c/0","kind":"Occupy","request":"r","vm":0}
{"seq":4,"t_us":10,"from":"vm:r/1","to":"vm:r/1","kind":"Deploy","request":"r","vm":1}
{"seq":5,"t_us":10,"from":"vm:r/1","to":"host:g/c/0","kind":"Occupy","request":"r","vm":1}
{"seq":6,"t_us":40,"from":"vm:r/0","to":"vm:r/0","kind":"Booted","request":"r","vm":0}
{"seq":7,"t_us":40,"from":"vm:r/1","to":"vm:r/1","kind":"Booted","request":"r","vm":1}
{"seq":8,"t_us":100,"from":"vm:r/1","to":"vm:r/1","kind":"Pause","request":"r","vm":1}
{"seq":9,"t_us":101,"from":"vm:r/1","to":"vm:r/1","kind":"Suspend","request":"r","vm":1}
{"seq":10,"t_us":150,"from":"vm:r/1","to":"vm:r/1","kind":"Suspended","request":"r","vm":1}
{"seq":11,"t_us":150,"from":"vm:r/1","to":"host:g/c/0","kind":"Vacate","request":"r","vm":1}
{"seq":12,"t_us":200,"from":"vm:r/1","to":"vm:r/1","kind":"Resume","request":"r","vm":1}
{"seq":13,"t_us":200,"from":"vm:r/1","to":"host:g/c/1","kind":"Occupy","request":"r","vm":1}
{"seq":14,"t_us":300,"from":"vm:r/0","to":"vm:r/0","kind":"Completed","request":"r","vm":0}
"#;

    fn export(text: &str) -> Vec<Value> {
        let lines: Vec<Line> = parse(text)
            .expect("valid")
            .into_iter()
            .map(Line::Message)
            .collect();
        let v = super::super::render::chrome(&lines);
        v["traceEvents"].as_array().cloned().expect("an array")
    }

    #[test]
    fn vm_states_are_contiguous_slices_on_lanes_of_their_hosts() {
        let events = export(LIFE);
        let thread = |tid: &Value| {
            events
                .iter()
                .find(|e| e["name"] == "thread_name" && e["tid"] == *tid)
                .map(|e| e["args"]["name"].as_str().unwrap_or("").to_string())
        };
        let slices: Vec<(String, String, u64, u64)> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (
                    e["args"]["vm"].as_str().unwrap_or("").to_string(),
                    format!(
                        "{} on {}",
                        e["name"].as_str().unwrap_or(""),
                        thread(&e["tid"]).unwrap_or_default()
                    ),
                    e["ts"].as_u64().unwrap_or(0),
                    e["dur"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        let of = |vm: &str| -> Vec<(String, u64, u64)> {
            slices
                .iter()
                .filter(|s| s.0 == vm)
                .map(|s| (s.1.clone(), s.2, s.3))
                .collect()
        };
        assert_eq!(
            of("vm:r/0"),
            [
                ("booting on host g/c/0".to_string(), 10, 30),
                ("running on host g/c/0".to_string(), 40, 260),
            ]
        );
        // The second VM shares the host on a second lane, waits on storage, and resumes on
        // host 1; the state it is in at the end is closed there.
        assert_eq!(
            of("vm:r/1"),
            [
                ("booting on host g/c/0 (2)".to_string(), 10, 30),
                ("running on host g/c/0 (2)".to_string(), 40, 60),
                ("paused on host g/c/0 (2)".to_string(), 100, 1),
                ("suspending on host g/c/0 (2)".to_string(), 101, 49),
                ("suspended on storage g/c".to_string(), 150, 50),
                ("resuming on host g/c/1".to_string(), 200, 100),
            ]
        );
        let processes: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "process_name")
            .filter_map(|e| e["args"]["name"].as_str())
            .collect();
        assert_eq!(processes, ["grid g"]);
        // Threads sort by cluster, then host and lane, storage last.
        let mut order: Vec<(u64, String)> = events
            .iter()
            .filter(|e| e["name"] == "thread_sort_index")
            .map(|e| {
                let i = e["args"]["sort_index"].as_u64().unwrap_or(0);
                (i, thread(&e["tid"]).unwrap_or_default())
            })
            .collect();
        order.sort();
        let names: Vec<&str> = order.iter().map(|o| o.1.as_str()).collect();
        assert_eq!(
            names,
            [
                "lrms:g/c",
                "host g/c/0",
                "host g/c/0 (2)",
                "host g/c/1",
                "storage g/c"
            ]
        );
    }

    #[test]
    fn an_empty_selection_is_an_empty_array() {
        let out = Chrome::new(Vec::new()).finish().expect("written");
        let v: Value = serde_json::from_slice(&out).expect("valid JSON");
        assert_eq!(v["traceEvents"].as_array().map(Vec::len), Some(0));
    }
}
