//! Tests of the observer: per-request records, counters and the online invariant checks.

use super::*;

fn over(host: &str, cores: u64) -> Violation {
    Violation::HostOverCapacity {
        host: host.to_string(),
        at: EmuTime::from_secs(9),
        cores: (cores, 4),
        memory_mb: (0, 1024),
    }
}

/// One observation, by the Grid that makes it (an index into a small federation whose
/// cluster `c` belongs to Grid `c % GRIDS`).
#[derive(Clone, Debug)]
enum Event {
    Started(u32, u16),
    Ended(u32, u8, u8),
    Received(u8, u8, u32, u64, u32),
    Paid(u8, u8, u32, u32),
    Charge(u16, u32, u32, Option<(u32, u32)>),
    OfferSent(u64, u8),
    OfferSettled(u64),
    Message(u8),
}

const GRIDS: u8 = 3;
const REQUESTS: u32 = 12;

fn event() -> impl proptest::strategy::Strategy<Value = Event> {
    use proptest::prelude::*;
    let g = 0..GRIDS;
    let r = 0..REQUESTS;
    prop_oneof![
        (r.clone(), 0u16..6).prop_map(|(r, c)| Event::Started(r, c)),
        (r.clone(), 0u8..3, g.clone()).prop_map(|(r, s, g)| Event::Ended(r, s, g)),
        (g.clone(), g.clone(), r.clone(), 0u64..4, 0u32..50)
            .prop_map(|(t, f, r, n, a)| Event::Received(t, f, r, n, a)),
        (g.clone(), g.clone(), 0u32..9, 0u32..50).prop_map(|(f, t, u, a)| Event::Paid(f, t, u, a)),
        (
            0u16..6,
            r.clone(),
            0u32..1000,
            proptest::option::of((0u32..4, 0u32..3))
        )
            .prop_map(|(c, r, o, p)| Event::Charge(c, r, o, p)),
        (0u64..8, g.clone()).prop_map(|(n, g)| Event::OfferSent(n, g)),
        (0u64..8).prop_map(Event::OfferSettled),
        g.prop_map(Event::Message),
    ]
}

/// Observes `e` at `t` on `m`.
fn observe(m: &mut Metrics, e: &Event, t: EmuTime) {
    let grid = |g: u8| GridId(u16::from(g));
    let state = |s: u8| {
        [
            RequestState::Completed,
            RequestState::Rejected,
            RequestState::Cancelled,
        ][usize::from(s)]
    };
    match *e {
        Event::Started(r, c) => m.started(
            RequestId(r),
            ClusterId(c),
            grid((c % u16::from(GRIDS)) as u8),
            t,
        ),
        Event::Ended(r, s, _) => m.ended(RequestId(r), state(s), t),
        Event::Received(to, from, r, n, a) => {
            m.received(grid(to), grid(from), RequestId(r), n, f64::from(a))
        }
        Event::Paid(from, to, u, a) => m.paid(grid(from), grid(to), f64::from(u), f64::from(a)),
        Event::Charge(c, r, o, p) => m.charge(
            ClusterId(c),
            RequestId(r),
            EmuDuration::from_micros(u64::from(o)),
            p.map(|(v, d)| (v, d, LeaseType::BestEffortSuspendable)),
        ),
        Event::OfferSent(n, g) => m.offer_sent(n, grid(g)),
        Event::OfferSettled(n) => m.offer_settled(n),
        Event::Message(g) => m.peering_message(grid(g)),
    }
}

/// The Grid whose shard makes observation `e` (`offers`: who sent each offer).
fn owner(e: &Event, offers: &BTreeMap<u64, u8>) -> u8 {
    match *e {
        Event::Started(_, c) | Event::Charge(c, ..) => (c % u16::from(GRIDS)) as u8,
        Event::Ended(_, _, g) | Event::Message(g) | Event::OfferSent(_, g) => g,
        Event::Received(to, ..) => to,
        Event::Paid(from, ..) => from,
        Event::OfferSettled(n) => offers.get(&n).copied().unwrap_or(0),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]

    /// Shards that each observe their own Grids, merged, hold what one observer of
    /// everything holds: the same records and counters, and the same violations of the
    /// invariants that span Grids (which no shard alone can see).
    #[test]
    fn merged_shards_observe_what_one_observer_does(
        events in proptest::collection::vec(event(), 0..60),
        shard_of in proptest::collection::vec(0usize..3, GRIDS as usize),
    ) {
        let mut one = Metrics::new(REQUESTS as usize);
        let mut shards: Vec<Metrics> = (0..3).map(|_| Metrics::new(REQUESTS as usize)).collect();
        let mut offers = BTreeMap::new();
        for (i, e) in events.iter().enumerate() {
            let t = EmuTime::from_secs(i as u64);
            let by = owner(e, &offers);
            if let Event::OfferSent(n, g) = *e {
                offers.insert(n, g);
            }
            observe(&mut one, e, t);
            observe(&mut shards[shard_of[usize::from(by)]], e, t);
        }
        let mut shards = shards.into_iter();
        let mut merged = shards.next().expect("three shards");
        for s in shards {
            merged.merge(s);
        }
        proptest::prop_assert_eq!(merged.terminal(), one.terminal());
        let (a, b) = (one.finish(), merged.finish());
        let kinds = |f: &Finished| {
            let mut k: Vec<String> = f
                .violations
                .iter()
                .map(|v| {
                    let name = format!("{v:?}");
                    let request = match v {
                        Violation::ServedTwice { request, .. }
                        | Violation::ConfirmedTwice { request, .. }
                        | Violation::EndedTwice { request, .. } => Some(request.0),
                        _ => None,
                    };
                    format!("{} {request:?}", &name[..name.find(' ').unwrap_or(name.len())])
                })
                .collect();
            k.sort();
            k
        };
        proptest::prop_assert_eq!(kinds(&a), kinds(&b));
        let served_twice: Vec<u32> = a
            .violations
            .iter()
            .filter_map(|v| match v {
                Violation::ServedTwice { request, .. } => Some(request.0),
                _ => None,
            })
            .collect();
        for (i, (x, y)) in a.records.iter().zip(&b.records).enumerate() {
            let mut y = y.clone();
            // Which of two Grids that served a request holds it last is a matter of
            // order between shards; it is reported as a violation either way.
            if served_twice.contains(&(i as u32)) {
                y.cluster = x.cluster;
            }
            proptest::prop_assert_eq!(x, &y, "request {}", i);
        }
        proptest::prop_assert_eq!(&a.clusters, &b.clusters);
        proptest::prop_assert_eq!(&a.grids, &b.grids);
    }
}

#[test]
fn a_host_over_capacity_when_the_run_ends_is_a_violation_and_one_back_under_is_not() {
    let mut m = Metrics::new(0);
    m.over_capacity_now(1, Some(over("h1", 5)));
    m.over_capacity_now(1, Some(over("h1", 6)));
    m.over_capacity_now(2, Some(over("h2", 5)));
    m.over_capacity_now(2, None);
    let done = m.finish();
    assert_eq!(done.violations, vec![over("h1", 6)]);
}
