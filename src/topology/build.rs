//! Building a topology in code: [`Federation`] describes Grids, clusters and workloads the way
//! a topology file does, and [`Federation::build`] reads the description through the same
//! reader, so every rule a file is held to (names, capacities, deadlines) holds here too and a
//! problem comes back as the same [`Report`].
//!
//! ```
//! use igemu::topology::{Federation, Hosts, Request, Users};
//!
//! let topo = Federation::new("two-clusters")
//!     .lrms("preemption", "mov")
//!     .grid("g", &[("c1", Hosts::new(1, 4, 8192)), ("c2", Hosts::new(1, 4, 8192))])
//!     .workload(
//!         Users::external("ext", "g")
//!             .request(Request::new("victim", 0, 2, 1024, 7200).kind("cancellable")),
//!     )
//!     .workload(
//!         Users::local("users", "g", "c1").request(Request::new("local", 1800, 4, 1024, 3600)),
//!     )
//!     .build()
//!     .expect("a valid federation");
//! assert_eq!(topo.clusters.len(), 2);
//! assert_eq!(topo.requests.len(), 2);
//! ```

use toml::{Table, Value};

use super::{load_str, Overrides, Topology};
use crate::input::Report;

/// A federation of Grids described in code.
#[derive(Clone, Debug, Default)]
pub struct Federation {
    doc: Table,
    sets: Vec<String>,
    registry: crate::policy::Registry,
}

/// A group of identical hosts.
#[derive(Clone, Copy, Debug)]
pub struct Hosts {
    count: u32,
    cores: u32,
    memory_mb: u64,
    mips: Option<u32>,
}

impl Hosts {
    /// `count` hosts of `cores` cores and `memory_mb` MB each.
    pub fn new(count: u32, cores: u32, memory_mb: u64) -> Hosts {
        Hosts {
            count,
            cores,
            memory_mb,
            mips: None,
        }
    }

    /// The hosts' core speed, MIPS.
    pub fn mips(mut self, mips: u32) -> Hosts {
        self.mips = Some(mips);
        self
    }

    fn value(self) -> Value {
        let mut t = Table::new();
        t.insert("count".into(), i64::from(self.count).into());
        t.insert("cores".into(), i64::from(self.cores).into());
        t.insert("memory_mb".into(), clamp(self.memory_mb).into());
        if let Some(m) = self.mips {
            t.insert("mips".into(), i64::from(m).into());
        }
        Value::Table(t)
    }
}

/// A workload: who submits requests (a Grid's external users or a cluster's local users),
/// and which.
#[derive(Clone, Debug)]
pub struct Users {
    table: Table,
    requests: Vec<Value>,
}

impl Users {
    /// External requests from Grid `grid`'s users, to its IGG.
    pub fn external(name: &str, grid: &str) -> Users {
        Users::of(name, "external", grid, None)
    }

    /// Local requests from the users of cluster `cluster` of Grid `grid`, to its LRMS.
    pub fn local(name: &str, grid: &str, cluster: &str) -> Users {
        Users::of(name, "local", grid, Some(cluster))
    }

    fn of(name: &str, origin: &str, grid: &str, cluster: Option<&str>) -> Users {
        let mut table = Table::new();
        table.insert("name".into(), name.into());
        table.insert("origin".into(), origin.into());
        table.insert("grid".into(), grid.into());
        if let Some(c) = cluster {
            table.insert("cluster".into(), c.into());
        }
        Users {
            table,
            requests: Vec::new(),
        }
    }

    /// Sets any other workload key (a model and its settings, a type mix, ...), as in a file.
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Users {
        self.table.insert(key.into(), value.into());
        self
    }

    /// Adds a listed request.
    pub fn request(mut self, r: Request) -> Users {
        self.requests.push(Value::Table(r.0));
        self
    }

    fn value(mut self) -> Value {
        if !self.requests.is_empty() {
            self.table
                .insert("request".into(), Value::Array(self.requests));
        }
        Value::Table(self.table)
    }
}

/// One listed request; times are seconds from the start of the run.
#[derive(Clone, Debug)]
pub struct Request(Table);

impl Request {
    /// Request `id`, arriving at `arrival_s`, for `vms` VMs of `mem_mb` MB, for `duration_s`.
    pub fn new(id: &str, arrival_s: u64, vms: u32, mem_mb: u32, duration_s: u64) -> Request {
        let mut t = Table::new();
        t.insert("id".into(), id.into());
        t.insert("arrival".into(), seconds(arrival_s));
        t.insert("vms".into(), i64::from(vms).into());
        t.insert("mem_mb".into(), i64::from(mem_mb).into());
        t.insert("duration".into(), seconds(duration_s));
        Request(t)
    }

    /// Its lease type (`"cancellable"`, `"suspendable"`, `"migratable"`, `"non-preemptable"`).
    pub fn kind(mut self, kind: &str) -> Request {
        self.0.insert("type".into(), kind.into());
        self
    }

    /// A local request's requested start.
    pub fn start(mut self, start_s: u64) -> Request {
        self.0.insert("start".into(), seconds(start_s));
        self
    }

    /// A deadline lease's absolute deadline.
    pub fn deadline(mut self, deadline_s: u64) -> Request {
        self.0.insert("deadline".into(), seconds(deadline_s));
        self
    }
}

impl Federation {
    /// An empty federation called `name`.
    pub fn new(name: &str) -> Federation {
        let mut doc = Table::new();
        doc.insert("name".into(), name.into());
        Federation {
            doc,
            sets: Vec::new(),
            registry: crate::policy::Registry::builtin(),
        }
    }

    /// The policies its names are looked up in (default: those igemu ships), e.g. a
    /// registry with a policy of the program's own.
    pub fn registry(mut self, registry: &crate::policy::Registry) -> Federation {
        self.registry = registry.clone();
        self
    }

    /// A topology-wide `[igg]` setting, e.g. `.igg("dispatch", "rr")`.
    pub fn igg(mut self, key: &str, value: impl Into<Value>) -> Federation {
        section(&mut self.doc, "igg").insert(key.into(), value.into());
        self
    }

    /// The run's seed.
    pub fn seed(self, seed: u64) -> Federation {
        self.override_key(&super::seed_override(seed))
    }

    /// A topology-wide `[lrms]` setting, e.g. `.lrms("preemption", "mov")`.
    pub fn lrms(mut self, key: &str, value: impl Into<Value>) -> Federation {
        section(&mut self.doc, "lrms").insert(key.into(), value.into());
        self
    }

    /// A Grid with these clusters (name, hosts).
    pub fn grid(mut self, name: &str, clusters: &[(&str, Hosts)]) -> Federation {
        let clusters = clusters
            .iter()
            .map(|(c, hosts)| {
                let mut t = Table::new();
                t.insert("name".into(), (*c).into());
                t.insert("hosts".into(), hosts.value());
                Value::Table(t)
            })
            .collect();
        let mut g = Table::new();
        g.insert("name".into(), name.into());
        g.insert("cluster".into(), Value::Array(clusters));
        array(&mut self.doc, "grid").push(Value::Table(g));
        self
    }

    /// A workload.
    pub fn workload(mut self, w: Users) -> Federation {
        array(&mut self.doc, "workload").push(w.value());
        self
    }

    /// Any key as `--set` takes it (`"peering.interval=\"5m\""`), applied when built.
    pub fn override_key(mut self, assignment: &str) -> Federation {
        self.sets.push(assignment.to_string());
        self
    }

    /// The topology, read and checked as a file would be.
    pub fn build(self) -> Result<Topology, Box<Report>> {
        let name = self
            .doc
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("federation")
            .to_string();
        let text = self.doc.to_string();
        let overrides = Overrides {
            sets: self.sets,
            registry: self.registry,
        };
        load_str(
            &text,
            &format!("<federation {name}>"),
            &name,
            None,
            &overrides,
        )
    }
}

/// The topology file this describes (what a failing test prints, to run it by hand).
impl std::fmt::Display for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.doc)?;
        for set in &self.sets {
            writeln!(f, "# --set {set}")?;
        }
        Ok(())
    }
}

fn seconds(s: u64) -> Value {
    format!("{s}s").into()
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The table under `key`, created if absent (replaced if it held something else).
fn section<'a>(doc: &'a mut Table, key: &str) -> &'a mut Table {
    let entry = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    if !entry.is_table() {
        *entry = Value::Table(Table::new());
    }
    match entry {
        Value::Table(t) => t,
        // Made a table just above.
        _ => unreachable!("a table was just put here"),
    }
}

/// The array under `key`, created if absent (replaced if it held something else).
fn array<'a>(doc: &'a mut Table, key: &str) -> &'a mut Vec<Value> {
    let entry = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    match entry {
        Value::Array(a) => a,
        // Made an array just above.
        _ => unreachable!("an array was just put here"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_federation_in_code_is_held_to_the_files_rules() {
        let ok = Federation::new("f")
            .seed(7)
            .grid("g", &[("c", Hosts::new(2, 4, 4096))])
            .workload(Users::external("e", "g").request(Request::new("r", 0, 8, 1024, 60)))
            .build()
            .expect("valid");
        assert_eq!(ok.emulation.seed, 7);
        assert_eq!(ok.requests[0].vms, 8);
        // Host speeds and any other workload key, as a file would set them.
        let generated = Federation::new("g")
            .grid("g", &[("c", Hosts::new(2, 4, 4096).mips(3000))])
            .workload(
                Users::external("e", "g")
                    .set("model", "das2")
                    .set("span", "1h"),
            )
            .build()
            .expect("valid");
        assert_eq!(generated.clusters[0].hosts[0].mips, 3000);
        assert!(
            !generated.requests.is_empty(),
            "a DAS-2 hour generates requests"
        );
        // 9 VMs do not fit on two 4-core hosts: the reader says so, as for a file.
        let too_big = Federation::new("f")
            .grid("g", &[("c", Hosts::new(2, 4, 4096))])
            .workload(Users::external("e", "g").request(Request::new("r", 0, 9, 1024, 60)))
            .build()
            .expect_err("too large");
        assert!(too_big.to_string().contains("needs 9 VMs"), "{too_big}");
    }

    #[test]
    fn an_easy_provider_takes_lrms_pivots_and_one_unless_set() {
        let provider = |pivots: Option<i64>| {
            let mut f = Federation::new("f")
                .grid("g", &[("c", Hosts::new(2, 4, 4096))])
                .igg("provider", "ebmf");
            if let Some(p) = pivots {
                f = f.lrms("pivots", p);
            }
            f.build().expect("valid").clusters[0].lrms.backfilling
        };
        assert_eq!(provider(None), crate::lrms::Backfilling::Easy { pivots: 1 });
        assert_eq!(
            provider(Some(4)),
            crate::lrms::Backfilling::Easy { pivots: 4 }
        );
        // A conservative provider has no pivots to take.
        let cb = Federation::new("f")
            .grid("g", &[("c", Hosts::new(2, 4, 4096))])
            .igg("provider", "cb")
            .lrms("pivots", 4)
            .build()
            .expect("valid");
        assert_eq!(
            cb.clusters[0].lrms.backfilling,
            crate::lrms::Backfilling::Conservative
        );
    }
}
