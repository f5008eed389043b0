//! How fast a realtime run can go: the timer lateness a run would meet at a speed-up, predicted
//! from the handling time of each of its instants in a virtual run (what `--speedup auto`
//! chooses with).
//!
//! The model is the realtime clock's (see [`super::Clock`]): instant `i`, due at emulated
//! time `tᵢ`, starts at wall time `max(tᵢ / s + wakeᵢ, end of instant i − 1)` — `wakeᵢ` when
//! the clock waited for it: how late this machine meets a deadline it waits for — and takes
//! its measured handling time times [`COLD_FACTOR`]; each of its timers is late by
//! (start − tᵢ / s) × s of emulated time.
//!
//! The wakes are the machine's, as measured ([`super::wait_lateness_probe`]): each waited
//! instant draws one of the measured lateness values, [`DRAWS`] times over with different
//! draws, and the prediction is the [`DRAW_QUANTILE`] of those draws' p99. Drawn rather than
//! one value for all: a machine that now and then does not run the thread for milliseconds
//! or more (a busy one) delays every timer due in that stretch, and where a workload's timers come in clusters (paper 004: 99 in one
//! instant) one such stall can make 1 % of them late by seconds, which a typical wake does
//! not show.

use hdrhistogram::Histogram;

use super::InstantLoad;

/// How much longer an instant's handling takes in a realtime run than in the virtual run it
/// was measured on: after the thread has slept, caches and branch predictors are cold (paper
/// 000 to 12 h at ×3600: 394 ms of handling against 150 ms for the whole virtual run).
pub const COLD_FACTOR: f64 = 3.0;

/// The least the model takes the clock to start an instant late when it waited for it. The OS
/// wakes a sleeping thread 0.09 ms late at the median and 0.18 ms at p99 (the 2-core machine
/// of 2026-11-23), but the clock sleeps only to 0.4 ms or more before the deadline and spins
/// the rest, so what is left is the spin's own step: timers of paper 000 at ×3600 were 0.7 µs
/// late at the median. A machine whose running thread the host stops now and then (a virtual
/// machine's vCPU: the latest of 200 waits 0.007-3.8 ms late on 2026-11-26, 0.5 ms or more in
/// 9 probes of 10), or a busy one, is later: `--speedup auto` measures it
/// ([`super::wait_lateness_probe`]) and the model takes each measured value, at least this.
pub const WAKE_NS: u64 = 5_000;

/// How many draws of the wakes the prediction is made over.
pub const DRAWS: usize = 20;

/// The quantile of the draws' p99 lateness that is the prediction: the 18th of 20, so that a
/// stall the probe met counts where it would fall on a cluster of timers in one run of ten.
pub const DRAW_QUANTILE: f64 = 0.9;

/// The p99 timer lateness, emulated milliseconds, of a realtime run at `speedup` whose instants
/// take what `load` says (in due order), on a machine that starts an instant it waited for as
/// late as one of `wakes_ns` (wall ns, each taken as at least [`WAKE_NS`]; none: [`WAKE_NS`]);
/// 0 without timers. One value is a fixed wake; more are drawn from, [`DRAWS`] times (the
/// same draw for an instant at every speed-up), and the prediction is the [`DRAW_QUANTILE`]
/// of the draws' p99.
pub fn predicted_p99_ms(load: &[InstantLoad], speedup: f64, wakes_ns: &[u64]) -> f64 {
    match wakes_ns {
        [] => p99_ms(load, speedup, |_| WAKE_NS),
        [w] => p99_ms(load, speedup, |_| (*w).max(WAKE_NS)),
        many => {
            let mut p99s: Vec<f64> = (0..DRAWS as u64)
                .map(|draw| {
                    p99_ms(load, speedup, |i| {
                        let pick = splitmix(draw << 40 ^ i as u64) % many.len() as u64;
                        many[pick as usize].max(WAKE_NS)
                    })
                })
                .collect();
            p99s.sort_by(f64::total_cmp);
            let at = ((DRAW_QUANTILE * DRAWS as f64).ceil() as usize).clamp(1, DRAWS) - 1;
            p99s[at]
        }
    }
}

/// SplitMix64's output for `x`: a well-mixed pseudo-random number, the same for the same `x`.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The p99 timer lateness, emulated milliseconds, with instant `i` started `wake_ns(i)` late
/// when the clock waited for it.
fn p99_ms(load: &[InstantLoad], speedup: f64, wake_ns: impl Fn(usize) -> u64) -> f64 {
    // Invariant: 1 µs .. 10^15 µs with 2 significant figures is a valid histogram range.
    let mut late_us: Histogram<u64> =
        Histogram::new_with_bounds(1, 1_000_000_000_000_000, 2).expect("static bounds are valid");
    let mut free_at_ns = 0.0f64;
    for (k, i) in load.iter().enumerate() {
        let due_ns = i.due_us as f64 * 1e3 / speedup;
        let start_ns = if due_ns >= free_at_ns {
            due_ns + wake_ns(k) as f64
        } else {
            free_at_ns
        };
        let late = ((start_ns - due_ns) * speedup / 1e3).max(1.0) as u64;
        if i.timers > 0 {
            late_us.saturating_record_n(late, u64::from(i.timers));
        }
        free_at_ns = start_ns + i.busy_ns as f64 * COLD_FACTOR;
    }
    if late_us.is_empty() {
        0.0
    } else {
        late_us.value_at_quantile(0.99) as f64 / 1e3
    }
}

/// The highest speed-up in `[lo, hi]` whose predicted p99 lateness (with `wakes_ns`, see
/// [`predicted_p99_ms`]) is at most `target_ms` (to within 1 %); `lo` if none is.
pub fn highest_sustainable(
    load: &[InstantLoad],
    target_ms: f64,
    (lo, hi): (f64, f64),
    wakes_ns: &[u64],
) -> f64 {
    let ok = |s: f64| predicted_p99_ms(load, s, wakes_ns) <= target_ms;
    if ok(hi) {
        return hi;
    }
    if !ok(lo) {
        return lo;
    }
    // Bisect on the logarithm: lo is sustainable, hi is not.
    let (mut a, mut b) = (lo.ln(), hi.ln());
    while b - a > 0.01 {
        let m = (a + b) / 2.0;
        if ok(m.exp()) {
            a = m;
        } else {
            b = m;
        }
    }
    a.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_second(n: u64, busy_ns: u64) -> Vec<InstantLoad> {
        (1..=n)
            .map(|k| InstantLoad {
                due_us: k * 1_000_000,
                busy_ns,
                timers: 1,
            })
            .collect()
    }

    #[test]
    fn a_steady_load_is_sustainable_up_to_where_the_gap_meets_the_work() {
        // One timer a second, each instant measured at 1 ms, so 3 ms in realtime: the gap 1/s
        // must cover it (the wake is paid once, then the clock never waits), so s <= 333;
        // beyond, lateness grows without bound.
        let load = every_second(2_000, 1_000_000);
        let s = highest_sustainable(&load, 500.0, (1e-3, 1e9), &[WAKE_NS]);
        let limit = 1e9 / (1_000_000.0 * COLD_FACTOR);
        assert!((limit * 0.985..=limit * 1.001).contains(&s), "{s}");
        // Just below, timers are late only by the wake: 5 µs x s.
        let p99 = predicted_p99_ms(&load, 200.0, &[WAKE_NS]);
        assert!((p99 - 1.0).abs() < 0.05, "{p99}");
        assert!(predicted_p99_ms(&load, limit * 1.1, &[WAKE_NS]) > 10_000.0);
    }

    #[test]
    fn one_burst_delays_the_timers_after_it() {
        // At s = 1000 instants are 1 ms apart in wall time; a 10 ms burst (30 ms in realtime)
        // at the first makes the next ones late by about 29, 28, ... ms. Reference: the
        // recurrence in wall seconds, every lateness kept and sorted (no histogram).
        let mut load = every_second(100, 0);
        load[0].busy_ns = 10_000_000;
        let s = 1000.0;
        let mut free = 0.0f64;
        let mut lates = Vec::new();
        for i in &load {
            let due = i.due_us as f64 / 1e6 / s; // wall seconds
            let start = if due >= free {
                due + WAKE_NS as f64 / 1e9
            } else {
                free
            };
            lates.push((start - due) * s * 1e3); // emulated ms
            free = start + i.busy_ns as f64 * COLD_FACTOR / 1e9;
        }
        lates.sort_by(f64::total_cmp);
        let want = lates[(0.99 * lates.len() as f64) as usize - 1];
        let got = predicted_p99_ms(&load, s, &[WAKE_NS]);
        assert!((got - want).abs() <= want * 0.02 + 1.0, "{got} vs {want}");
    }

    #[test]
    fn more_speed_never_means_less_lateness_here() {
        let mut load = every_second(500, 200_000);
        for (k, i) in load.iter_mut().enumerate() {
            i.busy_ns = 50_000 + (k as u64 * 7_919 % 13) * 100_000;
        }
        let mut last = 0.0;
        for s in [1.0, 10.0, 100.0, 1000.0, 3000.0, 10_000.0] {
            let p = predicted_p99_ms(&load, s, &[WAKE_NS]);
            assert!(p >= last, "x{s}: {p} < {last}");
            last = p;
        }
    }

    #[test]
    fn a_machine_that_wakes_late_sustains_less_speed() {
        // Timers that never queue (1 µs of work a second) are late only by the wake: w x s.
        // So p99 <= 500 ms holds up to s = 500 ms / w: x100 000 at 5 µs, x1 000 at 0.5 ms.
        let load = every_second(1_000, 1_000);
        for wake_ns in [WAKE_NS, 50_000, 500_000] {
            let s = highest_sustainable(&load, 500.0, (1e-3, 1e9), &[wake_ns]);
            let limit = 500e6 / wake_ns as f64;
            assert!(
                (limit * 0.985..=limit * 1.01).contains(&s),
                "{wake_ns} ns: x{s}"
            );
        }
    }

    #[test]
    fn a_stall_the_probe_met_counts_where_timers_cluster() {
        // One timer a second, but every 100th second 100 at once (half the timers); the
        // machine wakes 10 us late but for one wait in 216, 100 ms. At x100 such a stall
        // delays every timer of the next 10 emulated seconds: in some runs a cluster's, 5 %
        // of all timers, by seconds. A wake fixed at its p99.5 (10 us) sees none of that.
        let mut load = every_second(1_000, 0);
        for i in load.iter_mut().step_by(100) {
            i.timers = 100;
        }
        let mut wakes = vec![10_000u64; 215];
        wakes.push(100_000_000);
        let drawn = predicted_p99_ms(&load, 100.0, &wakes);
        assert!(drawn >= 500.0, "{drawn}");
        assert!(predicted_p99_ms(&load, 100.0, &[10_000]) < 10.0);
        // The same draws every time, so the same prediction, and the same choice.
        assert_eq!(drawn, predicted_p99_ms(&load, 100.0, &wakes));
        let s = highest_sustainable(&load, 500.0, (1e-3, 1e9), &wakes);
        assert!(
            s < 100.0 && predicted_p99_ms(&load, s, &wakes) <= 500.0,
            "x{s}"
        );
        // Wakes all alike are one fixed wake.
        assert_eq!(
            predicted_p99_ms(&load, 100.0, &[20_000; 50]),
            predicted_p99_ms(&load, 100.0, &[20_000])
        );
    }

    #[test]
    fn more_speed_never_means_less_lateness_with_drawn_wakes_either() {
        let mut load = every_second(500, 200_000);
        for (k, i) in load.iter_mut().enumerate() {
            i.busy_ns = 50_000 + (k as u64 * 7_919 % 13) * 100_000;
            i.timers = 1 + (k as u32 * 31 % 7);
        }
        let wakes: Vec<u64> = (0..216u64)
            .map(|k| 5_000 + (k * 104_729 % 997) * 20_000)
            .collect();
        let mut last = 0.0;
        for s in [1.0, 10.0, 100.0, 1000.0, 3000.0, 10_000.0] {
            let p = predicted_p99_ms(&load, s, &wakes);
            assert!(p >= last, "x{s}: {p} < {last}");
            last = p;
        }
    }

    #[test]
    fn nothing_to_time_is_sustainable_at_any_speed() {
        assert_eq!(predicted_p99_ms(&[], 1e9, &[WAKE_NS]), 0.0);
        assert_eq!(
            highest_sustainable(&[], 500.0, (1e-3, 1e9), &[WAKE_NS]),
            1e9
        );
    }
}
