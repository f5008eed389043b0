//! An independent reference for the LRMS's preemption decisions, written from the papers'
//! definitions and not from `src/lrms`: it enumerates every subset of the leases in play on a
//! small testbed, checks each against the hosts' real capacities over the local request's
//! interval, and applies each policy's definition to the candidate sets.
//!
//! * Leases in play (paper 003 §2, Fig. 2): external leases holding a host during the
//!   interval, running or reserved; non-preemptable and local leases are never candidates.
//! * What preempting a lease does and costs (paper 003 §5): a reservation not started is
//!   moved (no cost); a cancellable lease is stopped (its shutdowns); a suspendable lease (or
//!   a migratable one with no other cluster) is paused, suspended and resumed — eq. 7,
//!   `2v·t_p + Σ(mem/s + mem/r)`; a running lease that would end before it could be vacated is
//!   waited for (no cost); a running migratable lease of a Grid with another cluster is
//!   migrated — suspended here as a suspension is, priced by eq. 8 (`Σ t_copy + t_s +
//!   Σ_{j<v} max(t_s, t_r) + t_r + 2v·t_p`). A migratable lease is in play only if it still
//!   finishes by its deadline (§4.2, "either on the same resource or on another resource"):
//!   resumed here after the local lease, or, migrated, on another cluster whose published
//!   slots have its cores free from when it begins to be vacated until it would finish there.
//!   δ is added once when the set suspends or migrates anything (the reading under
//!   which Table III's 27.8 s comes out for both a 3-lease and a 2-lease set). The policies rank
//!   by these per-lease costs; what is charged is the cost of what is done, where a lease whose
//!   suspension, queued behind the set's others on the shared storage, could only end after
//!   it would have finished is left to finish instead (no cost).
//! * A candidate set (eq. 1–2) leaves room for every local VM on the hosts, over the whole
//!   interval; a minimal one has no lease whose removal still leaves room.
//! * MLIP (eq. 10): fewest leases; MOV (eq. 9): least cost; MOML (Algorithm 1): α = median
//!   cost of the minimal sets, then fewest leases among sets costing at most α, then least
//!   cost; least-valuable (paper 000 §4.2): fewest migratable VMs preempted, then suspendable,
//!   then cancellable, then least cost, then fewest leases. Remaining ties (documented in
//!   `policy.rs`): MLIP prefers more VMs; then every policy prefers the set whose newest lease
//!   is oldest (compared lease by lease from the newest down).
//! * The local lease starts at its requested start, or, when the VMs preempted for it cannot
//!   be off their hosts by then, as soon as they are — pauses one VM after another, suspensions
//!   one VM at a time on the shared storage (§5), leases in arrival order. If that lateness
//!   carries it into a lease that begins holding a host after its interval, the decision is
//!   made again over the interval it will really hold (at most four times), else it is
//!   rejected (paper 001 §3: in its interval or rejected). If the set chosen over a widened
//!   interval vacates sooner, so that the lease holds less than that interval, the decision
//!   is made once more over the interval it holds, among the leases chosen, until the set no
//!   longer changes: what is carried out is minimal for the interval finally used.
//! * MWT, paper 001's MOV (`mov-score`) and CP(α) (paper 001 §4.3.1, Haizea's mapper): leases
//!   sorted by a preemptability score (MWT: least waited first; mov-score: eq. 1, cheapest
//!   first; CP: α·v + (1 − α)·w with v = cheapest positive cost / cost and w = 1 − waiting /
//!   longest waiting; a lease that costs nothing has v = 1 and an infinitesimal edge over paid
//!   leases, so for α > 0 ties on the score go to the cheaper lease), then ties to the younger
//!   lease; the shortest prefix that leaves room, then leases made redundant dropped, least
//!   preemptable first.

use std::collections::BTreeMap;

/// One lease as the reference sees it.
#[derive(Clone, Debug)]
pub struct Lease {
    /// Its id.
    pub id: u32,
    /// "cancellable", "suspendable", "migratable" or "non-preemptable"; locals are
    /// "non-preemptable" with `local` set.
    pub kind: &'static str,
    /// Whether it is a local lease.
    pub local: bool,
    /// VMs.
    pub vms: u32,
    /// Memory per VM, MB.
    pub mem_mb: u64,
    /// Submission time, s.
    pub arrival: f64,
    /// Running now (else a reservation that has not started).
    pub running: bool,
    /// End of its current episode or reservation, s.
    pub end: f64,
    /// Time it has waited so far, s.
    pub waiting: f64,
    /// Its holds: (host, start s, end s, cores, mem MB).
    pub holds: Vec<(usize, f64, f64, u64, u64)>,
    /// Its cores (VMs × cores per VM).
    pub cores: u64,
    /// Work it has left, s.
    pub remaining: f64,
    /// Its deadline, s (infinite if none).
    pub deadline: f64,
}

/// The testbed and the request.
pub struct Scene {
    /// Hosts: (cores, memory MB).
    pub hosts: Vec<(u64, u64)>,
    /// Every lease holding anything.
    pub leases: Vec<Lease>,
    /// Local request: VMs, cores per VM, memory per VM.
    pub local: (u32, u64, u64),
    /// The interval it needs, s.
    pub window: (f64, f64),
    /// Now, s.
    pub now: f64,
    /// Pause per VM t_p, suspend rate s, resume rate r (MB/s), shutdown per VM, δ (s).
    pub timings: (f64, f64, f64, f64, f64),
    /// Rate of copying a suspended VM to another cluster, MB/s.
    pub copy_rate: f64,
    /// Whether the Grid has another cluster: running migratable leases are migrated.
    pub migrate: bool,
    /// The other clusters' published free slots: (from s, free cores) steps, and the end of
    /// the horizon, s.
    pub elsewhere: Vec<(Vec<(f64, u64)>, f64)>,
}

/// Arrival-order tie-break: positions from the newest down, smaller first.
fn newest(s: &[usize]) -> Vec<usize> {
    let mut v = s.to_vec();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

/// Seconds in whole microseconds.
fn micros(x: f64) -> i64 {
    (x * 1e6).round() as i64
}

/// What the reference decides.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The chosen leases' ids, ascending; `None` if no set leaves room.
    pub set: Option<Vec<u32>>,
    /// The set's cost, s.
    pub cost: f64,
    /// When the last VM of the set is off its host if vacating begins now, s.
    pub vacated_by: f64,
}

impl Scene {
    /// The leases in play that may be preempted (only those of `among`, if given).
    fn candidates(&self, among: Option<&[u32]>) -> Vec<&Lease> {
        let (ws, we) = self.window;
        let mut c: Vec<&Lease> = self
            .leases
            .iter()
            .filter(|l| !l.local && l.kind != "non-preemptable")
            .filter(|l| among.is_none_or(|ids| ids.contains(&l.id)))
            .filter(|l| self.keeps_deadline(l))
            .filter(|l| l.holds.iter().any(|h| h.1 < we && h.2 > ws))
            .collect();
        c.sort_by(|a, b| a.arrival.total_cmp(&b.arrival).then(a.id.cmp(&b.id)));
        c
    }

    /// What preempting `l` does: "displace", "wait", "stop", "suspend" or "migrate".
    fn op(&self, l: &Lease) -> &'static str {
        let (tp, s, _, shutdown, _) = self.timings;
        if !l.running {
            return "displace";
        }
        let vacate = match l.kind {
            "cancellable" => shutdown * f64::from(l.vms),
            _ => f64::from(l.vms) * (tp + l.mem_mb as f64 / s),
        };
        let latest = (self.window.0 - vacate).max(self.now);
        if l.end <= latest + vacate + 1e-9 {
            "wait"
        } else if l.kind == "cancellable" {
            "stop"
        } else if l.kind == "migratable" && self.migrate {
            "migrate"
        } else {
            "suspend"
        }
    }

    fn lease_cost(&self, l: &Lease) -> f64 {
        let (tp, s, r, shutdown, _) = self.timings;
        let v = f64::from(l.vms);
        match self.op(l) {
            "stop" => shutdown * v,
            "suspend" => 2.0 * v * tp + v * (l.mem_mb as f64 / s + l.mem_mb as f64 / r),
            "migrate" => self.migration(l),
            _ => 0.0,
        }
    }

    /// Eq. 8 without δ: copies one after another; the first suspension and the last
    /// resumption alone, each VM's suspension overlapping the previous one's resumption;
    /// a pause and an unpause per VM.
    fn migration(&self, l: &Lease) -> f64 {
        let (tp, s, r, _, _) = self.timings;
        let mem = l.mem_mb as f64;
        let (ts, tr, tc) = (mem / s, mem / r, mem / self.copy_rate);
        let v = f64::from(l.vms);
        v * tc + ts + (v - 1.0) * ts.max(tr) + tr + 2.0 * v * tp
    }

    /// Whether `l`, if preempted, still finishes by its deadline (paper 003 §4.2: "either on
    /// the same resource or on another resource"): suspended now at the latest and resumed
    /// here once the local lease ends; or, migrating, on another cluster whose published
    /// slots have its cores free from the moment it begins to be vacated until it would
    /// finish there, within their horizon.
    fn keeps_deadline(&self, l: &Lease) -> bool {
        let op = self.op(l);
        if l.kind != "migratable" || op == "wait" {
            return true;
        }
        let (tp, s, r, _, _) = self.timings;
        let (v, mem) = (f64::from(l.vms), l.mem_mb as f64);
        let suspended = self.now + v * (tp + mem / s);
        let here = self.window.1.max(suspended) + v * (tp + mem / r) + l.remaining;
        if here <= l.deadline + 1e-9 {
            return true;
        }
        if op != "migrate" {
            return false;
        }
        let begin = (self.window.0 - v * (tp + mem / s)).max(self.now);
        let finish = begin + self.migration(l) + l.remaining;
        let free_at = |steps: &[(f64, u64)], until: f64, t: f64| -> u64 {
            if t >= until {
                return 0;
            }
            steps
                .iter()
                .rev()
                .find(|x| x.0 <= t)
                .map_or(u64::MAX, |x| x.1)
        };
        finish <= l.deadline + 1e-9
            && self.elsewhere.iter().any(|(steps, until)| {
                finish <= *until + 1e-9
                    && std::iter::once(begin)
                        .chain(
                            steps
                                .iter()
                                .map(|x| x.0)
                                .filter(|&t| t > begin && t < finish),
                        )
                        .all(|t| free_at(steps, *until, t) >= l.cores)
            })
    }

    fn set_cost(&self, set: &[&Lease]) -> f64 {
        let sum: f64 = set.iter().map(|l| self.lease_cost(l)).sum();
        if set
            .iter()
            .any(|l| matches!(self.op(l), "suspend" | "migrate"))
        {
            sum + self.timings.4
        } else {
            sum
        }
    }

    /// Local VMs that fit on host `h` over the window with the leases `removed` gone.
    fn host_room(&self, h: usize, removed: &[u32]) -> u64 {
        let (cores, mem) = self.hosts[h];
        let (_, c, m) = self.local;
        let (ws, we) = self.window;
        let holds: Vec<(f64, f64, u64, u64)> = self
            .leases
            .iter()
            .filter(|l| !removed.contains(&l.id))
            .flat_map(|l| l.holds.iter())
            .filter(|x| x.0 == h && x.1 < we && x.2 > ws)
            .map(|x| (x.1.max(ws), x.2.min(we), x.3, x.4))
            .collect();
        // Use is highest at some hold's start (or the window's).
        let mut peak = (0u64, 0u64);
        for t in holds.iter().map(|x| x.0).chain([ws]) {
            let used = holds
                .iter()
                .filter(|x| x.0 <= t && x.1 > t)
                .fold((0, 0), |a, x| (a.0 + x.2, a.1 + x.3));
            peak = (peak.0.max(used.0), peak.1.max(used.1));
        }
        let by_cores = cores.saturating_sub(peak.0) / c;
        let by_mem = mem.saturating_sub(peak.1) / m;
        by_cores.min(by_mem)
    }

    fn room(&self, removed: &[u32]) -> u64 {
        (0..self.hosts.len())
            .map(|h| self.host_room(h, removed))
            .sum()
    }

    fn leaves_room(&self, set: &[&Lease]) -> bool {
        let ids: Vec<u32> = set.iter().map(|l| l.id).collect();
        self.room(&ids) >= u64::from(self.local.0)
    }

    fn minimal(&self, set: &[&Lease]) -> bool {
        self.leaves_room(set)
            && (0..set.len()).all(|k| {
                let rest: Vec<&Lease> = set
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != k)
                    .map(|(_, l)| *l)
                    .collect();
                !self.leaves_room(&rest)
            })
    }

    /// Vacating `ids` beginning now (suspensions one VM at a time on the shared storage,
    /// leases in arrival order; a lease whose suspension would end only after it ends is left
    /// to finish): when the last VM is off its host, s, and the cost of what is done.
    fn vacating(&self, ids: &[u32]) -> (f64, f64) {
        let (tp, s, r, shutdown, delta) = self.timings;
        let mut leases: Vec<&Lease> = self.leases.iter().filter(|l| ids.contains(&l.id)).collect();
        leases.sort_by(|a, b| a.arrival.total_cmp(&b.arrival).then(a.id.cmp(&b.id)));
        let mut done = self.now;
        let mut storage = self.now;
        let (mut cost, mut suspended) = (0.0, false);
        for l in leases {
            let v = f64::from(l.vms);
            let op = self.op(l);
            match op {
                "wait" => done = done.max(l.end),
                "stop" => {
                    // Stopped as late as still leaves the host by the start, else at once.
                    done = done.max(self.window.0.max(self.now + shutdown * v));
                    cost += shutdown * v;
                }
                "suspend" | "migrate" => {
                    // A migration is suspended here as a suspension is (eq. 8's t_s terms).
                    let first = storage.max(self.now + v * tp);
                    let off = first + v * (l.mem_mb as f64 / s);
                    if off >= l.end - 1e-9 {
                        done = done.max(l.end);
                    } else {
                        storage = off;
                        done = done.max(off);
                        cost += match op {
                            "migrate" => self.migration(l),
                            _ => 2.0 * v * tp + v * (l.mem_mb as f64 / s + l.mem_mb as f64 / r),
                        };
                        suspended = true;
                    }
                }
                _ => {}
            }
        }
        (done, if suspended { cost + delta } else { cost })
    }

    /// The whole decision as paper 001 §3 rules it: the policy's choice over the requested
    /// interval, made again over a longer interval when the preemption's lateness would
    /// carry the local lease into a lease beginning after it.
    pub fn serve(&self, policy: &str, alpha: f64) -> (Verdict, (f64, f64)) {
        let (start, mut end) = self.window;
        let length = end - start;
        if self.fits_as_is() {
            // No decision is made: it is served in its interval.
            let verdict = Verdict {
                set: None,
                cost: 0.0,
                vacated_by: self.now,
            };
            return (verdict, (start, end));
        }
        for _ in 0..4 {
            let scene = self.over((start, end));
            let verdict = scene.decide(policy, alpha);
            let Some(ids) = &verdict.set else {
                return (verdict, (start, end));
            };
            let (done, performed) = scene.vacating(ids);
            let latest_end = done.max(start) + length;
            let tail = self
                .leases
                .iter()
                .filter(|l| !ids.contains(&l.id))
                .flat_map(|l| l.holds.iter())
                .any(|h| h.1 >= end && h.1 < latest_end);
            if latest_end > end + 1e-9 && tail {
                end = latest_end;
                continue;
            }
            if latest_end < end - 1e-9 {
                // Decided over a wider interval than the one it will hold: the set carried
                // out is the policy's choice among these leases over the interval used.
                return self.narrowed(policy, alpha, ids.clone(), (start, latest_end));
            }
            let verdict = Verdict {
                cost: performed,
                vacated_by: done,
                ..verdict
            };
            return (verdict, (start, end));
        }
        (
            Verdict {
                set: None,
                cost: 0.0,
                vacated_by: self.now,
            },
            (start, end),
        )
    }

    /// The scene for a local request needing `window`.
    fn over(&self, window: (f64, f64)) -> Scene {
        Scene {
            hosts: self.hosts.clone(),
            leases: self.leases.clone(),
            local: self.local,
            window,
            now: self.now,
            timings: self.timings,
            copy_rate: self.copy_rate,
            migrate: self.migrate,
            elsewhere: self.elsewhere.clone(),
        }
    }

    /// A decision over an interval wider than the local lease will hold, made again over
    /// the interval it holds (from its start to the end of its run after the vacating of
    /// `ids`) among `ids`, until the set no longer changes: the set carried out is then
    /// minimal for the interval it holds.
    fn narrowed(
        &self,
        policy: &str,
        alpha: f64,
        mut ids: Vec<u32>,
        (start, mut end): (f64, f64),
    ) -> (Verdict, (f64, f64)) {
        let length = self.window.1 - self.window.0;
        loop {
            let scene = self.over((start, end));
            let again = scene.decide_among(policy, alpha, Some(&ids));
            // The leases chosen leave room over the wider interval, so over this one too,
            // and something must go (the request did not fit in its own interval).
            let chosen = again
                .set
                .clone()
                .expect("the leases chosen still leave room");
            let (done, performed) = scene.vacating(&chosen);
            if chosen == ids {
                let verdict = Verdict {
                    set: Some(chosen),
                    cost: performed,
                    vacated_by: done,
                };
                return (verdict, (start, end));
            }
            ids = chosen;
            end = done.max(start) + length;
        }
    }

    /// Whether the local request fits without preempting anything.
    pub fn fits_as_is(&self) -> bool {
        self.room(&[]) >= u64::from(self.local.0)
    }

    /// Every subset of the leases in play (of `among`, if given) that leaves room, as
    /// positions in arrival order.
    fn valid_sets(&self, among: Option<&[u32]>) -> (Vec<&Lease>, Vec<Vec<usize>>) {
        let c = self.candidates(among);
        let n = c.len();
        assert!(n <= 14, "too many leases in play for the reference: {n}");
        let mut valid = Vec::new();
        for mask in 1u32..(1 << n) {
            let set: Vec<usize> = (0..n).filter(|&i| mask & (1 << i) != 0).collect();
            let leases: Vec<&Lease> = set.iter().map(|&i| c[i]).collect();
            if self.leaves_room(&leases) {
                valid.push(set);
            }
        }
        (c, valid)
    }

    /// The policy's choice by its definition.
    pub fn decide(&self, policy: &str, alpha: f64) -> Verdict {
        self.decide_among(policy, alpha, None)
    }

    /// The policy's choice by its definition, among the leases `among` (all in play if
    /// `None`; the others then hold their hosts as if they could not be preempted).
    fn decide_among(&self, policy: &str, alpha: f64, among: Option<&[u32]>) -> Verdict {
        let (c, valid) = self.valid_sets(among);
        let leases = |s: &[usize]| s.iter().map(|&i| c[i]).collect::<Vec<_>>();
        let cost = |s: &[usize]| self.cost_of(&c, s);
        let minimal: Vec<&Vec<usize>> = valid.iter().filter(|s| self.minimal(&leases(s))).collect();
        let chosen: Option<Vec<usize>> = match policy {
            "mlip" => minimal
                .iter()
                .min_by_key(|s| {
                    let vms: u32 = s.iter().map(|&i| c[i].vms).sum();
                    (s.len(), std::cmp::Reverse(vms), newest(s))
                })
                .map(|s| s.to_vec()),
            "mov" => valid
                .iter()
                .min_by_key(|s| (micros(cost(s)), newest(s)))
                .cloned(),
            "moml" => self.moml_choice(&c, &minimal),
            "least-valuable" => self.least_valuable_choice(&c, &valid),
            "mwt" | "mov-score" | "cp" => {
                let a = match policy {
                    "mwt" => 0.0,
                    "mov-score" => 1.0,
                    _ => alpha,
                };
                self.score_order(&c, a)
            }
            other => panic!("no reference for policy {other}"),
        };
        match chosen {
            Some(s) if !valid.is_empty() => {
                let mut ids: Vec<u32> = s.iter().map(|&i| c[i].id).collect();
                ids.sort_unstable();
                Verdict {
                    cost: cost(&s),
                    set: Some(ids),
                    vacated_by: self.now,
                }
            }
            _ => Verdict {
                set: None,
                cost: 0.0,
                vacated_by: self.now,
            },
        }
    }

    /// The leases of positions `s` among the candidates `c`: their cost.
    fn cost_of(&self, c: &[&Lease], s: &[usize]) -> f64 {
        self.set_cost(&s.iter().map(|&i| c[i]).collect::<Vec<_>>())
    }

    /// MOML's choice among the `minimal` sets of candidates `c`: the fewest leases, then the
    /// cheapest, of those that cost at most the median.
    fn moml_choice(&self, c: &[&Lease], minimal: &[&Vec<usize>]) -> Option<Vec<usize>> {
        let cost = |s: &[usize]| self.cost_of(c, s);
        let mut costs: Vec<i64> = minimal.iter().map(|s| micros(cost(s))).collect();
        costs.sort_unstable();
        let n = costs.len();
        let median = if n == 0 {
            0.0
        } else if n % 2 == 1 {
            costs[n / 2] as f64
        } else {
            (costs[n / 2 - 1] + costs[n / 2]) as f64 / 2.0
        };
        minimal
            .iter()
            .filter(|s| micros(cost(s)) as f64 <= median)
            .min_by_key(|s| (s.len(), micros(cost(s)), newest(s)))
            .map(|s| s.to_vec())
    }

    /// The least-valuable choice among the `valid` sets of candidates `c`: the fewest VMs
    /// of migratable, then suspendable, then cancellable leases operated on, then the
    /// cheapest, then the fewest leases.
    fn least_valuable_choice(&self, c: &[&Lease], valid: &[Vec<usize>]) -> Option<Vec<usize>> {
        let cost = |s: &[usize]| self.cost_of(c, s);
        valid
            .iter()
            .min_by_key(|s| {
                let class = |kind: &str| -> u32 {
                    s.iter()
                        .filter(|&&i| {
                            c[i].kind == kind
                                && matches!(self.op(c[i]), "stop" | "suspend" | "migrate")
                        })
                        .map(|&i| c[i].vms)
                        .sum()
                };
                (
                    class("migratable"),
                    class("suspendable"),
                    class("cancellable"),
                    micros(cost(s)),
                    s.len(),
                    newest(s),
                )
            })
            .cloned()
    }

    fn score_order(&self, c: &[&Lease], alpha: f64) -> Option<Vec<usize>> {
        let costs: Vec<f64> = c.iter().map(|l| self.lease_cost(l)).collect();
        let min_pos = costs
            .iter()
            .copied()
            .filter(|&h| h > 0.0)
            .fold(f64::INFINITY, f64::min);
        let max_wait = c.iter().map(|l| l.waiting).fold(0.0, f64::max);
        let score = |i: usize| {
            let v = if min_pos.is_finite() {
                min_pos / costs[i].max(min_pos)
            } else {
                1.0
            };
            let w = if max_wait > 0.0 {
                1.0 - c[i].waiting / max_wait
            } else {
                1.0
            };
            if alpha <= 0.0 {
                w
            } else if alpha >= 1.0 {
                v
            } else {
                alpha * v + (1.0 - alpha) * w
            }
        };
        // A lease that costs nothing scores 1 plus an infinitesimal edge over a paid lease of
        // score 1 (eq. 1's 1 / 0 above every 1 / h): where the overhead counts, ties on the
        // score go to the cheaper lease.
        let edge = |a: usize, b: usize| {
            if alpha > 0.0 {
                costs[a].total_cmp(&costs[b])
            } else {
                std::cmp::Ordering::Equal
            }
        };
        let mut order: Vec<usize> = (0..c.len()).collect();
        order.sort_by(|&a, &b| {
            score(b)
                .total_cmp(&score(a))
                .then(edge(a, b))
                .then(c[b].arrival.total_cmp(&c[a].arrival))
                .then(b.cmp(&a))
        });
        let mut prefix = Vec::new();
        for &i in &order {
            prefix.push(i);
            if self.leaves_room(&prefix.iter().map(|&k| c[k]).collect::<Vec<_>>()) {
                break;
            }
        }
        if !self.leaves_room(&prefix.iter().map(|&k| c[k]).collect::<Vec<_>>()) {
            return None;
        }
        // Drop what became redundant, least preemptable first (the last taken is needed).
        let Some(last) = prefix.len().checked_sub(1) else {
            return Some(Vec::new());
        };
        let mut keep: BTreeMap<usize, bool> = prefix.iter().map(|&i| (i, true)).collect();
        for k in (0..last).rev() {
            let i = prefix[k];
            keep.insert(i, false);
            let rest: Vec<&Lease> = keep
                .iter()
                .filter(|(_, &on)| on)
                .map(|(&j, _)| c[j])
                .collect();
            if !self.leaves_room(&rest) {
                keep.insert(i, true);
            }
        }
        Some(
            keep.into_iter()
                .filter(|(_, on)| *on)
                .map(|(i, _)| i)
                .collect(),
        )
    }
}
