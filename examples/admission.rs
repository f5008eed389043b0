//! An admission policy of one's own: admit a request only if the cluster could run it in
//! the time it would wait — refuse long requests while more than `k` external requests
//! wait, and cap the queue at `4k` for everything else.
//!
//! ```sh
//! cargo run --release --example admission -- run topologies/paper002-admission.toml \
//!     --set lrms.admission=short-first
//! ```

use igemu::lrms::admission::{AdmissionAsk, AdmissionControl, Verdict};
use igemu::lrms::Refusal;
use igemu::policy::Registry;
use igemu::time::EmuDuration;

/// Short requests first when the queue is long.
pub struct ShortFirst {
    /// Waiting requests above which long ones are refused.
    pub k: usize,
    /// Run time (on the whole cluster) from which a request is long.
    pub long: EmuDuration,
}

impl AdmissionControl for ShortFirst {
    fn name(&self) -> String {
        "short-first".into()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let (waiting, _) = ask.queue.external();
        if ask.service >= self.long && waiting > self.k {
            return Verdict::Refuse(Refusal::QueueFull);
        }
        Verdict::Limit(4 * self.k)
    }
}

/// The registry with this example's policy.
pub fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.admission("short-first", |_| {
        Box::new(ShortFirst {
            k: 5,
            long: EmuDuration::from_secs(600),
        })
    });
    r
}

#[allow(dead_code)] // the tests use `registry` alone
fn main() -> std::process::ExitCode {
    igemu::cli::main_with(registry())
}
