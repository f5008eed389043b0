//! The decision protocol against hostile answers and against an independent reader: decoders
//! never panic on any JSON and accept only answers of their shape; the question of a
//! preemption carries what a policy needs to count room itself — the Python module's `room`,
//! fed igemu's questions on random contentions, agrees with igemu's count for every set.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};

use super::protocol::{self as p, Names};
use crate::igg::negotiation::{ContractView, OfferAsk, PlanAsk};
use crate::lrms::contention::tests::arb_contention;
use crate::lrms::preemption::Ask;
use crate::model::{GridId, LeaseRequest, LeaseType, Origin, RequestId};
use crate::time::{EmuDuration, EmuTime};

fn request(id: u32) -> LeaseRequest {
    LeaseRequest {
        id: RequestId(id),
        origin: Origin::Local,
        grid: GridId(0),
        cluster: None,
        arrival: EmuTime::ZERO,
        start: None,
        vms: 2,
        cores_per_vm: 1,
        mem_mb: 512,
        duration: EmuDuration::from_secs(100),
        lease_type: LeaseType::DeadlineNonPreemptable,
        deadline: None,
        moldable: false,
        deadline_ratio: None,
    }
}

fn names() -> Names {
    Names {
        requests: (0..8).map(|i| format!("r{i}")).collect(),
        grids: vec!["g0".to_string(), "g1".to_string()].into(),
    }
}

/// JSON values of every kind, with the keys and words answers use most.
fn arb_json() -> impl Strategy<Value = Value> {
    let word = prop::sample::select(vec![
        "preempt",
        "order",
        "admit",
        "limit",
        "reason",
        "verdict",
        "price",
        "offers",
        "peer",
        "exact",
        "accept",
        "counter",
        "reject",
        "queue-limit",
        "r1",
        "r7",
        "g1",
        "c0",
        "",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| json!(x)),
        word.clone().prop_map(Value::from),
        ".*".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((word.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::proptest_cases(500), failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever a process answers, reading it gives an answer or an error — never a panic —
    /// and an accepted preemption set names candidates only.
    #[test]
    fn decoders_take_any_json_without_panicking(answer in arb_json(), c in arb_contention()) {
        let names = names();
        if let Ok(Some(choice)) = p::preemption_answer(&answer, &c, &names) {
            prop_assert!(choice.set.iter().all(|&i| i < c.candidates.len()));
        }
        let setup = crate::igg::DispatchSetup {
            grid: "g0".into(),
            clusters: vec!["c0".into(), "c1".into()],
            models: Vec::new(),
            rate: 0.0,
            seed: 1,
        };
        if let Ok(order) = p::dispatch_answer(&answer, &setup) {
            prop_assert!(order.iter().all(|&j| j < 2));
        }
        let _ = p::admission_answer(&answer);
        let req = request(1);
        let offer = OfferAsk {
            now: EmuTime::ZERO, from: GridId(1), negotiation: 1, request: &req, units: 10.0,
            price: 1.0, max: 2.0, load: 0.5, capacity: 100.0, held: 0.0, cost: 5.0, unit_cost: 1.0,
        };
        let _ = p::answer_answer(&answer, &offer);
        let contracts = [ContractView { peer: GridId(1), min: 1.0, max: 2.0, tried: false }];
        let plan = PlanAsk { now: EmuTime::ZERO, request: &req, units: 10.0, home_cost: 20.0, contracts: &contracts };
        if let Ok(steps) = p::offer_answer(&answer, &plan, &names) {
            prop_assert!(steps.iter().all(|s| s.peer.0 < 2));
        }
    }
}

/// The Python module's `room` on igemu's own preemption questions (from the hosts, and from
/// the additive figures where room is additive) agrees with igemu's count for every set of
/// candidates, on 300 random contentions.
#[test]
fn the_python_module_counts_room_as_igemu_does() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let mut runner = TestRunner::deterministic();
    let (names, local) = (names(), request(7));
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    for _ in 0..300 {
        let c = arb_contention()
            .new_tree(&mut runner)
            .expect("a case")
            .current();
        let ask = Ask {
            now: EmuTime::ZERO,
            local: &local,
            seed: 1,
            budget: 100,
        };
        let q = p::preemption_question(&c, &ask, &names, true);
        let n = c.candidates.len();
        let sets: Vec<Vec<usize>> = (0..1u32 << n)
            .map(|m| (0..n).filter(|&i| m & (1 << i) != 0).collect())
            .collect();
        expected.push(sets.iter().map(|s| c.room(s)).collect::<Vec<u64>>());
        cases.push(json!({"q": q, "sets": sets}));
    }
    let script = r#"
import json, sys
sys.path.insert(0, "examples/policies")
from igemu_policy import room
out = []
for line in sys.stdin:
    case = json.loads(line)
    q = case["q"]
    by_hosts = dict(q, additive=False)
    rooms = [room(by_hosts, s) for s in case["sets"]]
    if q["additive"]:
        assert rooms == [room(q, s) for s in case["sets"]], "additive figures disagree"
    out.append(rooms)
print(json.dumps(out))
"#;
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("python3 ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<Vec<u64>> = serde_json::from_slice(&out.stdout).expect("rooms as json");
    assert_eq!(got, expected);
}
