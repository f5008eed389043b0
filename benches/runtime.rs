//! Runtime benchmarks: the numbers the clock's and the send path's design decide.
//!
//! * immediate actor messages per second through the traced send path (`Emu::send`), tracing
//!   off and on, on a ring of relay actors;
//! * timed deliveries per second in virtual mode with 10 k and 1 M pending timers;
//! * memory per VM actor (resident set growth) at 100 k and 1 M VMs.
//!
//! Run with `cargo bench --bench runtime` (add `-- quick` for a smoke run). Each throughput
//! figure is the median of several repetitions; results go to `docs/performance.md`.
//! `-- timers pressure` measures the timed deliveries with another thread streaming through
//! 64 MiB meanwhile: the cache pressure a busy neighbour puts on a shared machine, made
//! repeatable (the bare loop's heap stays in its core's own cache; igemu's actors do not).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use actix::{Actor, AsyncContext, Context, Handler, Message};
use igemu::actors::graph::Graph;
use igemu::actors::messages::VmRef;
use igemu::actors::vm::{Vm, VmSpec};
use igemu::actors::{Emu, Own, Peer};
use igemu::model::{RequestId, VmState};
use igemu::time::{Clock, ClockMode, EmuDuration};
use igemu::topology::{self, Overrides, Topology};
use igemu::trace::{ActorId, Traced, Tracer};

fn system() -> actix::SystemRunner {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime builds")
    })
}

fn quickstart() -> Topology {
    topology::load_str(topology::QUICKSTART, "q", "q", None, &Overrides::default())
        .expect("quickstart is valid")
}

fn emu(tracer: Tracer) -> Rc<Emu> {
    let topo = quickstart();
    Rc::new(Emu::new(
        Clock::new(ClockMode::Virtual),
        tracer,
        topo.requests.into(),
        igemu::fault::Faults::new(Default::default(), 1),
    ))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The system allocator, counting allocations: allocations per timed delivery is a figure the
/// machine's noise does not move (the rates below swing by ×3 with the host's cache traffic).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counter only observes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with this layout; the caller upholds `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---- immediate messages on a ring ----

#[derive(Message)]
#[rtype(result = "()")]
struct Token(u32);
impl Traced for Token {
    const KIND: &'static str = "Token";
}

#[derive(Message)]
#[rtype(result = "()")]
struct SetNext(Peer<Relay>);

struct Relay {
    emu: Rc<Emu>,
    id: ActorId,
    next: Option<Peer<Relay>>,
    open: Rc<Cell<u64>>,
    done: Rc<tokio::sync::Notify>,
}

impl Actor for Relay {
    type Context = Context<Self>;
}

igemu::emu_shell!(Relay);
igemu::handles_caused!(Relay; Token);

impl Handler<SetNext> for Relay {
    type Result = ();
    fn handle(&mut self, msg: SetNext, _: &mut Context<Self>) {
        self.next = Some(msg.0);
    }
}

impl Handler<Token> for Relay {
    type Result = ();
    fn handle(&mut self, msg: Token, _: &mut Context<Self>) {
        match (&self.next, msg.0) {
            (_, 0) | (None, _) => {
                self.open.set(self.open.get() - 1);
                if self.open.get() == 0 {
                    self.done.notify_one();
                }
            }
            (Some(next), hops) => self.emu.send(self.id, next, Token(hops - 1)),
        }
    }
}

/// Messages per second: `actors` relays in a ring, `actors` tokens each making `hops` hops.
fn ring(actors: usize, hops: u32, traced: bool) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let sys = system();
    sys.block_on(async {
        let tracer = if traced {
            Tracer::to_file(&dir.path().join("trace.jsonl"), Vec::new()).expect("trace file")
        } else {
            Tracer::counting(Vec::new())
        };
        let emu = emu(tracer);
        let open = Rc::new(Cell::new(actors as u64));
        let done = Rc::new(tokio::sync::Notify::new());
        let peers: Vec<Peer<Relay>> = (0..actors)
            .map(|i| {
                let id = emu.tracer().register(format!("relay:{i}"));
                let r = Relay {
                    emu: Rc::clone(&emu),
                    id,
                    next: None,
                    open: Rc::clone(&open),
                    done: Rc::clone(&done),
                };
                Peer {
                    id,
                    addr: r.start(),
                }
            })
            .collect();
        for (i, p) in peers.iter().enumerate() {
            p.addr.do_send(SetNext(peers[(i + 1) % actors].clone()));
        }
        tokio::task::yield_now().await;
        let start = Instant::now();
        let before = emu.tracer().messages();
        for p in &peers {
            emu.send(p.id, p, Token(hops));
        }
        done.notified().await;
        let sent = emu.tracer().messages() - before;
        emu.tracer().finish().expect("trace flushes");
        sent as f64 / start.elapsed().as_secs_f64()
    })
}

// ---- timed deliveries ----

#[derive(Message)]
#[rtype(result = "()")]
struct Wake;
impl Traced for Wake {
    const KIND: &'static str = "Wake";
}

struct Sleeper {
    emu: Rc<Emu>,
    id: ActorId,
    rng: u64,
    left: Rc<Cell<u64>>,
    done: Rc<tokio::sync::Notify>,
}

impl Sleeper {
    fn delay(&mut self) -> EmuDuration {
        // xorshift64: deterministic, no allocation.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        EmuDuration::from_micros(1 + self.rng % 1_000_000_000)
    }
}

impl Actor for Sleeper {
    type Context = Context<Self>;
}

igemu::emu_shell!(Sleeper);
igemu::handles_caused!(Sleeper; Wake);

impl Handler<Wake> for Sleeper {
    type Result = ();
    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        let left = self.left.get();
        if left == 0 {
            return;
        }
        self.left.set(left - 1);
        if left == 1 {
            self.done.notify_one();
            return;
        }
        // A fresh address to itself per timed send, inline in the pending event: with 10 k
        // actors each with many timers pending, one shared address (an LRMS's `OwnCell`) is
        // one more cold read per delivery, and costs 12-15 % of the rate at 1 M pending.
        let me = Own::new(self, self.id, ctx.address());
        let due = self.emu.now() + self.delay();
        self.emu.send_at(due, self.id, me, Wake);
    }
}

/// Timed deliveries per second with `pending` timers always outstanding, over `deliveries`,
/// and the allocations made per delivery.
fn timers(pending: usize, deliveries: u64) -> (f64, f64) {
    let sys = system();
    sys.block_on(async {
        let emu = emu(Tracer::counting(Vec::new()));
        let left = Rc::new(Cell::new(deliveries));
        let done = Rc::new(tokio::sync::Notify::new());
        let actors = pending.min(10_000);
        let peers: Vec<Peer<Sleeper>> = (0..actors)
            .map(|i| {
                let id = emu.tracer().register(format!("sleeper:{i}"));
                let s = Sleeper {
                    emu: Rc::clone(&emu),
                    id,
                    rng: 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1),
                    left: Rc::clone(&left),
                    done: Rc::clone(&done),
                };
                Peer {
                    id,
                    addr: s.start(),
                }
            })
            .collect();
        let mut rng = 88_172_645_463_325_252u64;
        for k in 0..pending {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let p = &peers[k % actors];
            emu.send_at(
                emu.now() + EmuDuration::from_micros(1 + rng % 1_000_000_000),
                p.id,
                p.clone(),
                Wake,
            );
        }
        actix::spawn(emu.clock().clone().drive());
        let (start, allocated) = (Instant::now(), ALLOCATIONS.load(Ordering::Relaxed));
        done.notified().await;
        let rate = deliveries as f64 / start.elapsed().as_secs_f64();
        let per_delivery =
            (ALLOCATIONS.load(Ordering::Relaxed) - allocated) as f64 / deliveries as f64;
        if std::env::var_os("BENCH_VERBOSE").is_some() {
            let (counted, asked) = emu.clock().step_counts();
            eprintln!("  {rate:.0}/s: {counted} steps on the count of work, {asked} asking tokio");
        }
        (rate, per_delivery)
    })
    // The system (and with it the clock's driver, which frees the pending events, and every
    // actor) is dropped here: nothing of the run may outlive it.
}

/// The same pattern without actors, runtime or boxing: a plain `BinaryHeap` of `(due, seq,
/// sleeper)` with FIFO ties, each delivery scheduling the sleeper's next wake with the same
/// xorshift delays. The baseline the timed-delivery figure is held against.
fn bare_timers(pending: usize, deliveries: u64) -> f64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let actors = pending.min(10_000);
    let mut rngs: Vec<u64> = (0..actors)
        .map(|i| 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1))
        .collect();
    let mut heap = BinaryHeap::with_capacity(pending);
    let mut seq = 0u64;
    let mut rng = 88_172_645_463_325_252u64;
    for k in 0..pending {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        heap.push(Reverse((1 + rng % 1_000_000_000, seq, (k % actors) as u32)));
        seq += 1;
    }
    let start = Instant::now();
    let mut now = 0u64;
    let mut checksum = 0u64;
    for left in (1..=deliveries).rev() {
        let Some(Reverse((due, _, who))) = heap.pop() else {
            break;
        };
        now = now.max(due);
        checksum = checksum.wrapping_add(u64::from(who));
        if left == 1 {
            break;
        }
        let r = &mut rngs[who as usize];
        *r ^= *r << 13;
        *r ^= *r >> 7;
        *r ^= *r << 17;
        heap.push(Reverse((now + 1 + *r % 1_000_000_000, seq, who)));
        seq += 1;
    }
    std::hint::black_box((checksum, now));
    deliveries as f64 / start.elapsed().as_secs_f64()
}

// ---- memory per VM actor ----

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Resident bytes per VM actor when `n` idle VM actors exist.
fn vm_memory(n: u32) -> f64 {
    let sys = system();
    sys.block_on(async {
        let emu = emu(Tracer::counting(Vec::new()));
        // The quickstart's actors, built as a run builds them (its clock is not driven, so
        // nothing moves); the VMs are added on its first cluster's first host.
        let (done, _) = tokio::sync::oneshot::channel();
        let graph = Graph::build(
            &emu,
            &igemu::plan::compile(&quickstart()),
            done,
            igemu::Broken::None,
        )
        .unwrap_or_else(|e| panic!("the quickstart's policies are shipped ones: {e}"));
        // Shared as a run's LRMS shares them among its VMs.
        let lrms = Rc::new(Own::of_peer(graph.lrms[0].1.clone()));
        let host = Rc::new(graph.hosts[0].1[0].clone());
        tokio::task::yield_now().await;
        let before = rss_bytes();
        let mut vms = Vec::with_capacity(n as usize);
        for i in 0..n {
            let spec = VmSpec {
                owner: Rc::clone(&lrms),
                host: Rc::clone(&host),
                vm: VmRef {
                    lease: RequestId(0),
                    vm: i,
                },
                cores: 1,
                mem_mb: 512,
                place: (igemu::model::ClusterId(0), 0),
                me: std::rc::Weak::new(),
            };
            let vm = Vm::new(Rc::clone(&emu), ActorId(i), spec, VmState::Pending);
            vms.push(vm.start());
        }
        tokio::task::yield_now().await;
        let after = rss_bytes();
        let per_vm = (after.saturating_sub(before)) as f64 / f64::from(n);
        drop(vms);
        // The clock was never driven: free its pending events here.
        emu.clock().discard_pending();
        per_vm
    })
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    // `-- timers` runs only the timed-delivery comparison (for measuring the clock).
    let only_timers = std::env::args().any(|a| a == "timers");
    let reps = if quick { 1 } else { 5 };
    println!("igemu runtime benchmarks (median of {reps})");
    // Memory first: the runs after it free what they allocate (nothing is left behind), and
    // memory freed earlier in the process would be reused by the VMs measured here.
    if !only_timers {
        memory(quick);
        immediate(reps, quick);
    }
    timed(reps, quick);
}

fn immediate(reps: usize, quick: bool) {
    let (ring_actors, hops) = if quick { (100, 1_000) } else { (1_000, 5_000) };
    let off = median((0..reps).map(|_| ring(ring_actors, hops, false)).collect());
    println!(
        "immediate messages, tracing off: {:>12.0} msg/s  ({ring_actors} actors x {hops} hops)",
        off
    );
    let traced_hops = hops / 5;
    let on = median(
        (0..reps)
            .map(|_| ring(ring_actors, traced_hops, true))
            .collect(),
    );
    println!(
        "immediate messages, tracing on:  {:>12.0} msg/s  (JSONL to a file)",
        on
    );
}

/// A thread streaming through 64 MiB, read and written, until the returned flag is set.
fn cache_pressure() -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<u64>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    let streamer = std::thread::spawn(move || {
        let mut block = vec![1u64; 8 << 20];
        let mut sum = 0u64;
        while !flag.load(Ordering::Relaxed) {
            // One word per cache line.
            for w in block.iter_mut().step_by(8) {
                *w = w.wrapping_add(sum);
                sum = sum.wrapping_add(*w);
            }
        }
        std::hint::black_box(sum)
    });
    (stop, streamer)
}

fn timed(reps: usize, quick: bool) {
    let alive = igemu::actors::live_contexts();
    let pressure = std::env::args()
        .any(|a| a == "pressure")
        .then(cache_pressure);
    if pressure.is_some() {
        println!("timed deliveries under cache pressure (a thread streaming through 64 MiB)");
    }
    // `-- pending=N` keeps one size (for profiling).
    let only: Option<usize> =
        std::env::args().find_map(|a| a.strip_prefix("pending=")?.parse().ok());
    for (pending, deliveries) in [(10_000usize, 2_000_000u64), (1_000_000, 3_000_000)] {
        if only.is_some_and(|n| n != pending) {
            continue;
        }
        let d = if quick { deliveries / 20 } else { deliveries };
        // igemu and the bare loop alternate, so machine noise (other builds on the two
        // cores) hits both alike; the ratio is the median of the per-pair ratios.
        let (mut ig, mut bare, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        let mut allocations = Vec::new();
        for _ in 0..reps {
            let ((i, a), b) = (timers(pending, d), bare_timers(pending, d));
            allocations.push(a);
            ig.push(i);
            bare.push(b);
            ratio.push(i / b);
        }
        if std::env::var_os("BENCH_VERBOSE").is_some() {
            eprintln!("  igemu {ig:.3?}\n  bare  {bare:.3?}");
        }
        println!(
            "timed-deliveries pending={pending} igemu={:.2} bare={:.2} ratio={:.2}  ({d} deliveries)",
            median(ig) / 1e6,
            median(bare) / 1e6,
            median(ratio)
        );
        // (The bare loop's heap is reserved up front: it allocates nothing per delivery.)
        println!(
            "timed-deliveries pending={pending} allocations per delivery: igemu={:.2}",
            median(allocations)
        );
    }
    if let Some((stop, streamer)) = pressure {
        stop.store(true, Ordering::Relaxed);
        let _ = streamer.join();
    }
    // Each run's pending events held its context; they go with the runtime now.
    println!(
        "timed-deliveries: run contexts left behind: {}",
        igemu::actors::live_contexts() - alive
    );
}

/// Resident MiB after each of `checkpoints` runs of the quickstart, all in this process (as
/// a sweep runs them): flat if no run leaves anything behind.
fn rss_after_runs(checkpoints: &[usize]) -> Vec<f64> {
    let mut out = Vec::new();
    let last = checkpoints.iter().copied().max().unwrap_or(0);
    for i in 1..=last {
        igemu::run(quickstart(), &igemu::RunOptions::default()).expect("quickstart runs");
        if checkpoints.contains(&i) {
            out.push(rss_bytes() as f64 / f64::from(1u32 << 20));
        }
    }
    out
}

fn memory(quick: bool) {
    for n in [100_000u32, 1_000_000] {
        let n = if quick { n / 10 } else { n };
        let bytes = vm_memory(n);
        println!(
            "memory per VM actor at {n:>9} VMs: {bytes:>8.0} B  (total {:.2} GiB)",
            bytes * f64::from(n) / f64::from(1u32 << 30)
        );
    }
    let before = igemu::actors::live_contexts();
    let rss = rss_after_runs(&[50, 200]);
    println!(
        "resident memory after 50 / 200 quickstart runs in one process: {:.1} / {:.1} MiB  (run contexts alive: {})",
        rss[0],
        rss[1],
        igemu::actors::live_contexts() - before
    );
}
