//! Reading `[emulation]`: mode, speed-up, seed (and the overrides that set it), end,
//! interleaving and the message cap.

use super::*;

/// `emulation.seed`: a whole number from 0 to 2^64 − 1. TOML integers stop at 2^63 − 1, so
/// larger seeds are written as strings of digits (`seed = "18446744073709551615"`); `--seed`
/// takes them as digits too ([`seed_override`]).
pub(super) fn read_seed(t: &Table<'_>) -> Option<u64> {
    let node = t.get("seed")?;
    let seed = match &node.kind {
        node::NodeKind::Int(v) => u64::try_from(*v).ok(),
        node::NodeKind::Str(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    if seed.is_none() {
        t.diags.error(
            &node.loc,
            format!(
                "`seed` in {} must be a whole number from 0 to 18446744073709551615 (2^64 − 1), \
                 found {}",
                t.what,
                node.toml_text().unwrap_or_default(),
            ),
            Some(
                "write a seed above 9223372036854775807 (TOML's largest integer) as a string, \
                 e.g. seed = \"18446744073709551615\""
                    .into(),
            ),
        );
    }
    seed
}

/// The `--set` override that sets the run's seed (`emulation.seed=N`; a seed above TOML's
/// integers, 2^63 − 1, is read from the override as digits).
pub fn seed_override(seed: u64) -> String {
    format!("emulation.seed={seed}")
}

/// Whether the override `assignment` (`key=value`) sets `emulation.seed`, however the key is
/// spelled (whitespace around its segments, or `emulation={ seed = 3 }`): commands that set
/// each run's seed themselves refuse such an override rather than ignore it.
pub fn override_sets_seed(assignment: &str) -> bool {
    override_sets(assignment, SEED_KEY)
}

/// Whether the override `assignment` (`key=value`) sets `key` (dotted, without spaces) or a
/// key inside it, however it is spelled: for commands that set some keys in every run
/// themselves and refuse an override they would ignore.
pub fn override_sets(assignment: &str, key: &str) -> bool {
    node::override_sets_key(assignment, key)
}

pub(super) fn read_emulation(t: Option<Table<'_>>) -> Option<Emulation> {
    let Some(t) = t else {
        return Some(Emulation {
            mode: ClockMode::Virtual,
            seed: 1,
            end: EndCondition::AllDone {
                horizon: EmuTime::ZERO + DEFAULT_HORIZON,
            },
            reference_mips: None,
            interleaving: 0,
            max_messages: None,
        });
    };
    let mode = t.named::<ModeName>("mode").map(|(m, _)| m);
    let speedup = t.number_in("speedup", MIN_SPEEDUP, MAX_SPEEDUP);
    let seed = read_seed(&t).unwrap_or(1);
    let reference_mips = t.positive("reference_mips", 1 << 30).map(|(v, _)| v as u32);
    let interleaving = t.uint("interleaving", i64::MAX as u64);
    let max_messages = t.positive("max_messages", i64::MAX as u64).map(|(v, _)| v);
    let mut ok = true;
    let end = match t.get("end") {
        None => Some(EndCondition::AllDone {
            horizon: EmuTime::ZERO + DEFAULT_HORIZON,
        }),
        Some(node) if matches!(&node.kind, node::NodeKind::Str(s) if s == "all-done") => {
            let horizon = t.duration("horizon").map_or(DEFAULT_HORIZON, |(d, _)| d);
            Some(EndCondition::AllDone {
                horizon: EmuTime::ZERO + horizon,
            })
        }
        Some(_) => t.duration("end").and_then(|(d, loc)| {
            if d == EmuDuration::ZERO {
                t.diags.error(
                    loc,
                    "`end` must be after the start",
                    Some("use \"all-done\" or a positive duration like \"2d\"".into()),
                );
                None
            } else {
                Some(EndCondition::At(EmuTime::ZERO + d))
            }
        }),
    };
    if matches!(end, Some(EndCondition::At(_))) && t.get("horizon").is_some() {
        t.get("horizon").inspect(|n| {
            t.diags.error(
                &n.loc,
                "`horizon` only applies with end = \"all-done\"",
                Some("remove it, or set end = \"all-done\"".into()),
            )
        });
        ok = false;
    }
    t.finish();
    let mode = match (mode, speedup) {
        (Some(ModeName::Realtime), Some((s, _))) => ClockMode::Realtime { speedup: s },
        (Some(ModeName::Realtime), None) => {
            if t.get("speedup").is_none() {
                t.missing(
                    "speedup",
                    "realtime mode needs speedup = N (emulated seconds per wall second)",
                );
            }
            return None;
        }
        _ => ClockMode::Virtual,
    };
    if !ok {
        return None;
    }
    Some(Emulation {
        mode,
        seed,
        end: end?,
        reference_mips,
        interleaving: interleaving.map_or(0, |(k, _)| k),
        max_messages,
    })
}
