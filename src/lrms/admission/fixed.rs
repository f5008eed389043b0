//! A fixed queue limit (a static baseline beside paper 002's policies, `lrms.queue_limit`).

use super::{AdmissionAsk, AdmissionControl, Verdict};

/// At most `.0` external requests waiting, always.
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub usize);

impl AdmissionControl for Fixed {
    fn name(&self) -> String {
        "fixed".into()
    }

    fn admit(&mut self, _: &AdmissionAsk<'_>) -> Verdict {
        Verdict::Limit(self.0)
    }
}
