//! The order of deliveries: recording it (`run --record`), replaying it (`igemu replay`), and
//! exploring other interleavings of what is delivered at one instant (`--interleavings`).

use super::*;

impl Clock {
    /// From now on, writes every delivery (instant and lane) to `log`, in the order made:
    /// what `--record` keeps for `igemu replay`.
    pub fn record_order(&self, log: OrderLog) {
        *self.inner.log.borrow_mut() = Some(log);
        self.inner.tracking.set(true);
    }

    /// From now on, follows `script`, a recorded order of deliveries: with `held` (the
    /// recorded run held its deliveries and chose their order) deliveries are held and handed
    /// out in the record's order; without, they are made as they come and checked against
    /// it. Either way the first difference is kept ([`Clock::finish_order`]).
    pub fn replay_order(&self, script: OrderScript, held: bool) {
        *self.inner.script.borrow_mut() = Some(script);
        if held {
            *self.inner.held.borrow_mut() = Some(Interleaver::new(0));
        }
        self.inner.tracking.set(true);
    }

    /// Whether deliveries must go through [`Clock::deliver`] (held back, recorded or checked
    /// against a record); otherwise a sender may put them in the mailbox itself.
    #[inline]
    pub fn tracks_deliveries(&self) -> bool {
        self.inner.tracking.get()
    }

    /// Ends recording and replay: how each went. A replay whose record holds deliveries the
    /// run did not make has left it too.
    pub fn finish_order(&self) -> OrderOutcome {
        let recorded = self.inner.log.borrow_mut().take().map(OrderLog::finish);
        let replayed = self.inner.script.borrow_mut().take().map(|mut script| {
            if let Some(d) = self.inner.divergence.borrow_mut().take() {
                return Err(d);
            }
            let followed = script.read();
            match script.next_delivery() {
                Ok(None) => Ok(followed),
                Ok(Some((at, lane))) => Err(format!(
                    "the run ended after {followed} deliveries, but the record goes on (at {} µs, {})",
                    at,
                    lane_text(lane)
                )),
                Err(e) => Err(e),
            }
        });
        OrderOutcome { recorded, replayed }
    }

    /// Notes a delivery made now on `lane`: logs it, and checks it against the record a
    /// replay follows (deliveries made as they come).
    pub(super) fn note_delivery(&self, lane: Lane) {
        let now = self.inner.logical_now.get().as_micros();
        if let Some(log) = self.inner.log.borrow_mut().as_mut() {
            log.log(now, lane);
        }
        let following = self.inner.divergence.borrow().is_none();
        let mut script = self.inner.script.borrow_mut();
        if let (Some(s), true) = (script.as_mut(), following) {
            let n = s.read() + 1;
            let left = match s.next_delivery() {
                Ok(Some(want)) if want == (now, lane) => None,
                Ok(Some((at, want))) => Some(format!(
                    "delivery {n}: the record has {} at {at} µs, the run made {} at {now} µs",
                    lane_text(want),
                    lane_text(lane)
                )),
                Ok(None) => Some(format!(
                    "delivery {n}: the record ends, the run made {} at {now} µs",
                    lane_text(lane)
                )),
                Err(e) => Some(e),
            };
            drop(script);
            if let Some(d) = left {
                *self.inner.divergence.borrow_mut() = Some(d);
            }
        }
    }

    /// The next held delivery: the one the record names when a replay follows one (while it
    /// can), else the interleaver's choice; noted as made.
    pub(super) fn next_held(&self) -> Option<Callback> {
        let now = self.inner.logical_now.get().as_micros();
        let mut held = self.inner.held.borrow_mut();
        let queue = held.as_mut()?;
        let mut scripted = None;
        let following = self.inner.divergence.borrow().is_none();
        if let (Some(s), true) = (self.inner.script.borrow_mut().as_mut(), following) {
            let n = s.read() + 1;
            let taken = match s.next_delivery() {
                Ok(Some((at, lane))) if at == now => queue.pop_lane(lane).map(|f| (lane, f)).ok_or_else(|| {
                    format!("delivery {n}: the record has {} at {at} µs, where the run has nothing to deliver", lane_text(lane))
                }),
                Ok(Some((at, lane))) => Err(format!(
                    "delivery {n}: the record has {} at {at} µs, the run is at {now} µs",
                    lane_text(lane)
                )),
                Ok(None) => Err(format!("delivery {n}: the record ends, the run goes on at {now} µs")),
                Err(e) => Err(e),
            };
            match taken {
                Ok(t) => scripted = Some(t),
                Err(d) => *self.inner.divergence.borrow_mut() = Some(d),
            }
        }
        let (lane, deliver) = scripted.or_else(|| queue.pop_with_lane())?;
        drop(held);
        if let Some(log) = self.inner.log.borrow_mut().as_mut() {
            log.log(now, lane);
        }
        Some(deliver)
    }

    /// Turns interleaving exploration on (either mode):
    /// from now on, what is handed to [`Clock::deliver`] is held back and delivered one at a
    /// time, each once the actors have settled from the last and nothing else is due at the
    /// current instant, in the order [`Interleaver`] draws from `seed`.
    pub fn interleave(&self, seed: u64) {
        *self.inner.held.borrow_mut() = Some(Interleaver::new(seed));
        self.inner.tracking.set(true);
    }

    /// Whether deliveries are held back and perturbed (see [`Clock::interleave`]).
    #[inline]
    pub fn interleaves(&self) -> bool {
        self.inner.held.borrow().is_some()
    }

    /// Runs `deliver` now, or, with interleaving on, holds it back in `lane` until the
    /// interleaver's order reaches it (still at the current emulated time). Recorded, or
    /// checked against a record, when it is made.
    pub fn deliver(&self, lane: Lane, deliver: impl FnOnce() + 'static) {
        let mut held = self.inner.held.borrow_mut();
        let Some(queue) = held.as_mut() else {
            drop(held);
            self.note_delivery(lane);
            deliver();
            return;
        };
        let was_idle = queue.is_empty() && self.inner.heap.borrow().is_empty();
        queue.push(lane, Box::new(deliver));
        drop(held);
        if was_idle {
            // The driver may be waiting for anything at all to happen.
            self.inner.wake.notify_one();
        }
    }

    /// Whether deliveries are being held back now.
    pub(super) fn holding(&self) -> bool {
        self.inner
            .held
            .borrow()
            .as_ref()
            .is_some_and(|q| !q.is_empty())
    }
}
