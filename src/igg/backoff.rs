//! How long a peering message waits for its answer before it is sent again: the timeout,
//! doubled at each resend (exponential back-off). Redirections and lease reports are resent
//! until acknowledged — giving up on them could make two Grids serve one request, or leave a
//! user never told its lease ended — so only the back-off bounds them: whatever the timeout
//! and the link's delay, one message is sent at most about log2(run length / timeout) + 1
//! times (at most 64, as a wait past the end of emulated time never fires).

use crate::time::EmuDuration;

/// The wait before resend number `attempt + 1` of a message first sent with `timeout`
/// (`attempt` 0: the first wait, `timeout` itself); saturates at the longest duration.
pub(crate) fn wait(timeout: EmuDuration, attempt: u32) -> EmuDuration {
    let factor = 1u64.checked_shl(attempt).unwrap_or(u64::MAX);
    EmuDuration::from_micros(timeout.as_micros().saturating_mul(factor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_and_saturate() {
        let t = EmuDuration::from_secs(30);
        let waits: Vec<u64> = (0..4).map(|k| wait(t, k).as_micros() / 1_000_000).collect();
        assert_eq!(waits, vec![30, 60, 120, 240]);
        assert_eq!(wait(t, 63).as_micros(), u64::MAX);
        assert_eq!(wait(t, 1000).as_micros(), u64::MAX);
        // A microsecond timeout reaches past a year of emulated time within 45 resends.
        let tiny = EmuDuration::from_micros(1);
        assert!(wait(tiny, 45) > EmuDuration::from_secs(365 * 86_400));
    }
}
