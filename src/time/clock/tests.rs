//! Tests of the clock: virtual and realtime drive, timers, recorded and replayed orders.

use super::*;

fn us(n: u64) -> std::time::Duration {
    std::time::Duration::from_micros(n)
}

/// At ×1e9 a timer a wall second late is 1e15 emulated µs late: the p99 says so, within
/// the histogram's 3 significant figures, instead of a one-day top bucket.
#[test]
fn lateness_beyond_a_day_is_kept_not_clamped() {
    let mut h = lateness_histogram();
    (0..98).for_each(|_| record_lateness(&mut h, 1_000));
    (0..2).for_each(|_| record_lateness(&mut h, 1_000_000_000_000_000));
    let l = Lateness::of(&h);
    assert!((l.p50 - 1.0).abs() < 0.01, "{l:?}");
    assert!((l.p99 / 1e12 - 1.0).abs() < 0.001, "{l:?}");
    assert!((l.max / 1e12 - 1.0).abs() < 0.001, "{l:?}");
    let mut merged = lateness_histogram();
    merged.add(&h).expect("histograms that grow add up");
    assert_eq!(Lateness::of(&merged).samples, 100);
}

#[test]
fn the_spin_margin_covers_how_late_naps_end_within_its_bounds() {
    let mut o = Oversleep::default();
    assert_eq!(o.margin(), REALTIME_BLOCKING_SPIN, "nothing seen yet");
    // Prompt wake-ups keep the least margin.
    (0..5_000).for_each(|_| o.record(us(90)));
    assert_eq!(o.margin(), REALTIME_BLOCKING_SPIN);
    // 0.5 % of naps 2 ms late: the 99.9th percentile is among them.
    (0..25).for_each(|_| o.record(us(2_000)));
    assert!(
        (us(2_026)..=us(2_050)).contains(&o.margin()),
        "{:?}",
        o.margin()
    );
    // Later than the longest spin: the longest spin.
    (0..100).for_each(|_| o.record(us(40_000)));
    assert_eq!(o.margin(), REALTIME_BLOCKING_SPIN_MAX);
}

#[test]
fn the_spin_margin_forgets_a_machine_that_was_slower_long_ago() {
    let mut o = Oversleep::default();
    (0..1_000).for_each(|_| o.record(us(3_000)));
    assert!(o.margin() >= us(3_000));
    // Each halving of the counts halves the old samples: after enough prompt naps they
    // are under 0.1 %.
    (0..Oversleep::AGE_AT * 4).for_each(|_| o.record(us(10)));
    assert_eq!(o.margin(), REALTIME_BLOCKING_SPIN);
}

proptest::proptest! {
    #[test]
    fn the_spin_margin_is_the_sorted_samples_999th_permille_to_within_its_buckets(
        body in proptest::collection::vec(0u64..4_500, 1..3_000),
        tail in proptest::collection::vec(0u64..9_000, 0..12),
    ) {
        // Naps mostly under the longest spin, and a few anywhere.
        let samples: Vec<u64> = body.iter().chain(&tail).copied().collect();
        let mut o = Oversleep::default();
        samples.iter().for_each(|&s| o.record(us(s)));
        // Reference: sort, and take the value with at most 0.1 % of the samples (and at
        // least one) above it; the margin ends that value's 25 µs bucket, one bucket on.
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        let allowed = (sorted.len() / 1000).max(1);
        let (lo, hi) = match sorted.len().checked_sub(allowed + 1) {
            Some(i) => (us(sorted[i] + OVERSLEEP_BUCKET_US + 1), us(sorted[i] + 2 * OVERSLEEP_BUCKET_US)),
            None => (us(0), us(0)),
        };
        let clamp = |d: std::time::Duration| d.clamp(REALTIME_BLOCKING_SPIN, REALTIME_BLOCKING_SPIN_MAX);
        proptest::prop_assert!(
            (clamp(lo)..=clamp(hi)).contains(&o.margin()),
            "margin {:?}, want {:?}..={:?}", o.margin(), lo, hi
        );
    }
}

#[test]
fn a_wait_never_ends_before_its_deadline_and_learns_from_its_naps() {
    let oversleep = RefCell::new(Some(Oversleep::default()));
    for _ in 0..20 {
        // Longer than the least margin, so each wait naps before it spins.
        let deadline = std::time::Instant::now() + us(1_000);
        assert!(!wait_blocking(deadline, &oversleep, || {}, || false));
        assert!(std::time::Instant::now() >= deadline);
    }
    let seen = oversleep.borrow().as_ref().map_or(0, |o| o.total);
    assert!(seen > 0, "no nap was recorded");
    // Without a margin (threads sharing cores) it never spins and learns nothing.
    let none = RefCell::new(None);
    let deadline = std::time::Instant::now() + us(1_000);
    assert!(!wait_blocking(deadline, &none, || {}, || false));
    assert!(std::time::Instant::now() >= deadline);
    assert_eq!(wait_lateness_probe([us(1_000); 3]).len(), 3);
}

/// Runs `test` on a fresh virtual clock (promising counted work when `counted`) in a
/// paused current-thread runtime, and returns what it returns.
fn on_virtual_clock<T, F: std::future::Future<Output = T>>(
    counted: bool,
    test: impl FnOnce(Clock) -> F,
) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let clock = Clock::new(ClockMode::Virtual);
        if counted {
            clock.count_work();
        }
        test(clock).await
    })
}

/// Drives `clock` until no event is left.
async fn run_out(clock: &Clock) {
    tokio::task::spawn_local(clock.clone().drive());
    while clock.pending() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[test]
fn virtual_clock_fires_in_time_order_with_fifo_ties() {
    let order = on_virtual_clock(false, |clock| async move {
        let log = Rc::new(RefCell::new(Vec::new()));
        for (i, secs) in [(0u32, 5u64), (1, 1), (2, 5), (3, 3), (4, 1)] {
            let (log, c) = (log.clone(), clock.clone());
            clock.at(EmuTime::from_secs(secs), move || {
                log.borrow_mut().push((i, c.now().as_micros()))
            });
        }
        tokio::task::spawn_local(clock.clone().drive());
        while clock.pending() > 0 {
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let v = log.borrow().clone();
        v
    });
    assert_eq!(
        order,
        vec![
            (1, 1_000_000),
            (4, 1_000_000),
            (3, 3_000_000),
            (0, 5_000_000),
            (2, 5_000_000)
        ]
    );
}

#[test]
fn virtual_clock_takes_earlier_events_scheduled_while_waiting() {
    let seen = on_virtual_clock(false, |clock| async move {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = log.clone();
        let c = clock.clone();
        clock.at(EmuTime::from_secs(100), move || {
            l.borrow_mut().push(c.now())
        });
        tokio::task::spawn_local(clock.clone().drive());
        tokio::task::yield_now().await;
        // Scheduled after the driver started waiting for t=100: must still fire first.
        let l = log.clone();
        let c = clock.clone();
        clock.at(EmuTime::from_micros(3), move || {
            l.borrow_mut().push(c.now())
        });
        while clock.pending() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let v = log.borrow().clone();
        v
    });
    assert_eq!(seen, vec![EmuTime::from_micros(3), EmuTime::from_secs(100)]);
}

/// Yields to the back of the run queue `n` times (a task that is busy, but not counted
/// by itself).
async fn busy(n: usize) {
    for _ in 0..n {
        ToBack(false).await;
    }
}

#[test]
fn counted_work_holds_the_step_and_quiet_steps_skip_tokio() {
    let (seen, steps) = on_virtual_clock(true, |clock| async move {
        let log = Rc::new(RefCell::new(Vec::new()));
        for secs in [100, 200, 300] {
            let (l, c) = (log.clone(), clock.clone());
            clock.at(EmuTime::from_secs(secs), move || {
                l.borrow_mut().push(c.now())
            });
        }
        // Work in flight from before the first step: it schedules an earlier event only
        // after being polled more times than the clock lets ready tasks run, and the
        // clock must wait for it (asking tokio).
        let work = Work::begin();
        let (l, c) = (log.clone(), clock.clone());
        tokio::task::spawn_local(async move {
            busy(3 * COUNTED_ROUNDS as usize).await;
            let c2 = c.clone();
            c.at(EmuTime::from_micros(3), move || {
                l.borrow_mut().push(c2.now())
            });
            drop(work);
        });
        run_out(&clock).await;
        let v = log.borrow().clone();
        (v, clock.step_counts())
    });
    assert_eq!(
        seen,
        vec![
            EmuTime::from_micros(3),
            EmuTime::from_secs(100),
            EmuTime::from_secs(200),
            EmuTime::from_secs(300)
        ]
    );
    // The first look found work in flight and asked tokio; later steps did not need to.
    assert!(steps.0 >= 3, "steps on the count: {steps:?}");
    assert!(steps.1 >= 1, "steps after asking tokio: {steps:?}");
}

#[test]
fn events_scheduled_in_the_past_fire_at_now_in_due_then_sequence_order() {
    let seen = on_virtual_clock(true, |clock| async move {
        let log = Rc::new(RefCell::new(Vec::new()));
        let note = |name: &'static str| {
            let (l, c) = (log.clone(), clock.clone());
            move || l.borrow_mut().push((name, c.now().as_micros()))
        };
        let (c, past, now_too) = (clock.clone(), note("past"), note("now-too"));
        let (earlier, later) = (note("past-but-earlier"), note("later"));
        let a = note("a");
        clock.at(EmuTime::from_micros(10), move || {
            a();
            // At 10 µs: two events in the past, one at now, one later.
            c.at(EmuTime::from_micros(5), past);
            c.at(EmuTime::from_micros(10), now_too);
            c.at(EmuTime::from_micros(3), earlier);
            c.at(EmuTime::from_micros(11), later);
        });
        clock.at(EmuTime::from_micros(10), note("b"));
        run_out(&clock).await;
        let v = log.borrow().clone();
        v
    });
    // Time never goes back: past events fire at now, earliest due first, and before
    // events due now (as a priority queue on (due, sequence) pops them).
    assert_eq!(
        seen,
        vec![
            ("a", 10),
            ("past-but-earlier", 10),
            ("past", 10),
            ("b", 10),
            ("now-too", 10),
            ("later", 11)
        ]
    );
}

#[test]
fn cancelled_events_count_as_fired_but_run_nothing() {
    let (ran, fired, now) = on_virtual_clock(true, |clock| async move {
        let ran = Rc::new(Cell::new(0u32));
        let r = ran.clone();
        let h = clock.at_cancellable(EmuTime::from_secs(1), move || r.set(r.get() + 1));
        let r = ran.clone();
        clock.at(EmuTime::from_secs(2), move || r.set(r.get() + 10));
        h.cancel();
        run_out(&clock).await;
        (ran.get(), clock.fired(), clock.now())
    });
    assert_eq!((ran, fired, now), (10, 2, EmuTime::from_secs(2)));
}

/// Events of a group: each notes its number and when it ran.
struct Noted(Rc<RefCell<Vec<(u32, u64)>>>, Clock);

impl Members for Noted {
    fn fire(&self, member: u32) {
        self.0.borrow_mut().push((member, self.1.now().as_micros()));
    }
}

#[test]
fn a_groups_events_fire_in_order_with_the_others_until_called_off() {
    let (ran, fired, held) = on_virtual_clock(true, |clock| async move {
        let ran = Rc::new(RefCell::new(Vec::new()));
        let s = EmuTime::from_secs;
        let group = Rc::new(Group::new(Noted(Rc::clone(&ran), clock.clone())));
        let other = Rc::new(Group::new(Noted(Rc::clone(&ran), clock.clone())));
        let g: Rc<Group<dyn Members>> = group.clone();
        let o: Rc<Group<dyn Members>> = other.clone();
        clock.at_member(s(1), Near::NONE, Rc::clone(&g), 0);
        clock.at_member(s(2), Near::NONE, Rc::clone(&g), 1);
        // Between two of the group's events due at the same time: in the order scheduled.
        let (r, c) = (Rc::clone(&ran), clock.clone());
        clock.at(s(2), move || r.borrow_mut().push((99, c.now().as_micros())));
        clock.at_member(s(2), Near::NONE, Rc::clone(&g), 2);
        clock.at_member(s(3), Near::NONE, Rc::clone(&g), 3);
        clock.at_member(s(4), Near::NONE, g, 4);
        clock.at_member(s(1), Near::NONE, o, 7);
        // The group's events after 3 s are off, and all of the other's.
        group.cancel_after(s(5));
        group.cancel_after(s(3));
        other.cancel();
        run_out(&clock).await;
        let ran = ran.borrow().clone();
        // The clock let go of both groups with their last events.
        let held = Rc::strong_count(&group) + Rc::strong_count(&other);
        (ran, clock.fired(), held)
    });
    let at = |m: u32, secs: u64| (m, secs * 1_000_000);
    assert_eq!(ran, vec![at(0, 1), at(1, 2), at(99, 2), at(2, 2), at(3, 3)]);
    assert_eq!(fired, 7, "called-off events count as fired");
    assert_eq!(held, 2);
}

#[test]
fn a_shared_handle_calls_off_its_events_from_an_instant_or_all() {
    let ran = on_virtual_clock(true, |clock| async move {
        let ran = Rc::new(RefCell::new(Vec::new()));
        let (group, other) = (TimerHandle::new(), TimerHandle::new());
        for (s, handle) in [
            (1, &group),
            (2, &group),
            (3, &group),
            (2, &other),
            (4, &other),
        ] {
            let r = ran.clone();
            clock.at_with(
                EmuTime::from_secs(s),
                Near::NONE,
                move || r.borrow_mut().push(s),
                handle,
            );
        }
        // The group's events after 2 s are off, and then all of the other's.
        group.cancel_after(EmuTime::from_secs(2));
        group.cancel_after(EmuTime::from_secs(5));
        other.cancel();
        assert!(fires(&group.0, EmuTime::from_secs(2)) && !fires(&group.0, EmuTime::from_secs(3)));
        run_out(&clock).await;
        let ran = ran.borrow().clone();
        ran
    });
    assert_eq!(ran, vec![1, 2]);
}
