//! Policies in external processes over the decision protocol: the shipped policies re-
//! implemented give their outputs byte for byte, every decision is traced, every failure and
//! impossible answer is a clear error within seconds (or a named fallback decides, counted),
//! and every message follows the protocol's JSON schema.

use super::*;

#[test]
fn python_rr_and_mov_give_the_built_ins_outputs_byte_for_byte() {
    if !python() {
        return;
    }
    // An external dispatch policy may read the clusters' free slots, so they publish them,
    // and the IGG passes them on for the migration route of preemptions, which `rr` never
    // has: paper 000 is compared without migratable leases (their share to non-preemptable).
    let no_migratable: &[&str] = &[
        "workload.0.mix.migratable=0",
        "workload.0.mix.non_preemptable=0.5",
    ];
    for (topology, key, builtin, external, sets) in [
        (
            "topologies/paper003-testbed.toml",
            "lrms.preemption",
            "mov",
            MOV_PY,
            &[][..],
        ),
        (
            "topologies/paper000-three-clusters.toml",
            "igg.dispatch",
            "rr",
            RR_PY,
            no_migratable,
        ),
    ] {
        let ours = format!("{key}={builtin}");
        let theirs = format!("{key}={external}");
        let (a, code_a, err_a) = run_cli(topology, &[&[ours.as_str()][..], sets].concat());
        let (b, code_b, err_b) = run_cli(topology, &[&[theirs.as_str()][..], sets].concat());
        assert_eq!((code_a, code_b), (0, 0), "{err_a}\n{err_b}");
        for file in ["requests.csv", "decisions.csv"] {
            assert!(
                output(&a, file) == output(&b, file),
                "{topology}: {file} differs between {builtin} and {external}"
            );
        }
        // The external one is named among the plug-ins, with the decisions it made.
        let summary: serde_json::Value =
            serde_json::from_slice(&output(&b, "summary.json")).expect("json");
        let plugins = summary["plugins"].as_array().expect("plugins listed");
        assert_eq!(plugins.len(), 1, "{plugins:?}");
        assert_eq!(plugins[0]["policy"], external);
        assert!(plugins[0]["decisions"].as_u64() > Some(0));
        assert_eq!(plugins[0]["fallbacks"], 0);
    }
}

#[test]
fn an_external_policy_gives_the_same_outputs_run_after_run() {
    if !python() {
        return;
    }
    let set = format!("lrms.preemption={MOV_PY}");
    let traced = |dir: &Path| {
        let out = dir.join("out");
        let o = igemu(&[
            "run",
            "topologies/paper001-testbed.toml",
            "--set",
            &set,
            "--trace",
            "--quiet",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        ["requests.csv", "decisions.csv", "trace.jsonl"]
            .map(|f| std::fs::read(out.join(f)).expect("written"))
    };
    let (a, b) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    assert!(traced(a.path()) == traced(b.path()));
}

#[test]
fn each_decision_of_a_plugin_is_a_trace_record_naming_its_cause() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let set = format!("lrms.preemption={MOV_PY}");
    let out = dir.path().join("out");
    let o = igemu(&[
        "run",
        "topologies/paper003-testbed.toml",
        "--set",
        &set,
        "--trace",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = common::trace(&out);
    let decisions: Vec<&serde_json::Value> =
        trace.iter().filter(|r| r["kind"] == "Decision").collect();
    assert_eq!(decisions.len(), 1, "one preemption decision in Table III");
    let d = decisions[0];
    assert_eq!(d["from"], "lrms:igg1/rp");
    assert_eq!(d["request"], "7");
    assert_eq!(d["decision"]["point"], "preemption");
    assert_eq!(d["decision"]["question"]["need"], 5);
    assert_eq!(
        d["decision"]["question"]["candidates"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    assert_eq!(
        d["decision"]["answer"]["preempt"],
        serde_json::json!(["2", "3", "5"])
    );
    // Its cause is the local request's arrival at the LRMS.
    let cause = d["cause"].as_u64().expect("a cause");
    let caused_by = trace
        .iter()
        .find(|r| r["seq"] == cause)
        .expect("the cause is traced");
    assert_eq!(caused_by["kind"], "SubmitLocal");
    // The decision is a record, not a message: the count of messages is the built-in's.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary"))
            .expect("json");
    let builtin = run(
        load("topologies/paper003-testbed.toml", &["lrms.preemption=mov"]),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(summary["messages"], builtin.summary.messages);
}

/// An external policy in `mode` at `key` on `topology` fails the run with exit code 2, an
/// error holding each of `says`, within `within`, and nothing written: no outputs, no trace,
/// no record, no temporary file.
pub(super) fn fails(topology: &str, key: &str, mode: &str, says: &[&str], within: Duration) {
    let set = format!("{key}={}", misbehave(mode));
    let dir = tempfile::tempdir().expect("a temp dir");
    let (out, record) = (dir.path().join("out"), dir.path().join("run.rec"));
    let started = Instant::now();
    let o = igemu(&[
        "run",
        topology,
        "--set",
        &set,
        "--set",
        "external.timeout=\"1s\"",
        "--trace",
        "--record",
        record.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{mode}: {stderr}");
    assert!(took < within, "{mode}: took {took:?}");
    for s in says.iter().chain(&["misbehave.py"]) {
        assert!(stderr.contains(s), "{mode}: `{s}` not in: {stderr}");
    }
    assert!(
        !stderr.contains('\x1b'),
        "{mode}: escapes reach the terminal: {stderr:?}"
    );
    let left: Vec<String> = walk(dir.path());
    assert!(left.is_empty(), "{mode}: left behind: {left:?}");
}

/// Every file under `dir`.
pub(super) fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p.display().to_string());
        }
    }
    files
}

#[test]
fn every_failure_of_an_external_process_is_a_clear_error_within_seconds() {
    if !python() {
        return;
    }
    let t3 = "topologies/paper003-testbed.toml";
    let key = "lrms.preemption";
    let soon = Duration::from_secs(20);
    fails(t3, key, "no-hello", &["exited"], soon);
    fails(t3, key, "old-protocol", &["protocol 99"], soon);
    fails(
        t3,
        key,
        "serves-nothing",
        &["preemption decision", "serves only: nothing"],
        soon,
    );
    let decision = "preemption for local request 7";
    fails(t3, key, "exit", &["exited", decision], soon);
    fails(
        t3,
        key,
        "hang",
        &["did not answer within 1s", decision],
        soon,
    );
    fails(
        t3,
        key,
        "garbage",
        &["not JSON", "this is not json", decision],
        soon,
    );
    fails(
        t3,
        key,
        "wrong-id",
        &["answered id 8 to question 1", decision],
        soon,
    );
    fails(
        t3,
        key,
        "decline",
        &["could not decide: no idea", decision],
        soon,
    );
    fails(
        t3,
        key,
        "stderr",
        &["Traceback: something broke", decision],
        soon,
    );
    fails(
        t3,
        key,
        "shapeless",
        &["must be a JSON object", decision],
        soon,
    );
    fails(
        t3,
        key,
        "impossible",
        &["leaves room for 0 of the 5 VMs", decision],
        soon,
    );
    // A program that is not there is refused before anything runs.
    stops_saying(
        t3,
        &["lrms.preemption=external:no-such-program-here x"],
        "`no-such-program-here` is not found",
    );
}

#[test]
fn policy_names_with_control_characters_are_refused_shown_escaped() {
    // A command is named in messages, traces and summaries: an escape sequence or a
    // right-to-left override in it is refused, and the refusal shows it escaped.
    for (set, says) in [
        (
            "lrms.preemption=external:py\x1b[31mthon3 x",
            "holds the character \\u{1b}",
        ),
        (
            "igg.dispatch=external:python3 \u{202e}rr.py",
            "holds the character \\u{202e}",
        ),
        (
            "igg.dispatch=\x1b[31mrr",
            "`\\u{1b}[31mrr` is not a valid `dispatch`",
        ),
        (
            "igg.dispatch_fallback=\x1b[2Jrr",
            "`\\u{1b}[2Jrr` is not a valid",
        ),
        (
            "lrms.scheduler=\x1b[31m",
            "`\\u{1b}[31m` is not a valid `scheduler`",
        ),
    ] {
        let stderr = stops_saying("topologies/paper003-testbed.toml", &[set], says);
        assert!(
            !stderr.contains('\x1b') && !stderr.contains('\u{202e}'),
            "{stderr:?}"
        );
    }
}

#[test]
fn impossible_answers_are_refused_at_every_decision_point() {
    if !python() {
        return;
    }
    let soon = Duration::from_secs(30);
    let t3 = "topologies/paper003-testbed.toml";
    fails(
        t3,
        "igg.dispatch",
        "impossible",
        &["cluster `nowhere`", "igg.dispatch"],
        soon,
    );
    fails(
        t3,
        "lrms.admission",
        "impossible",
        &["`limit` must be a whole number", "lrms.admission"],
        soon,
    );
    let peers = "topologies/peering-small.toml";
    fails(
        peers,
        "igg.answer",
        "impossible",
        &["counter-offers at unit price -1", "igg.answer"],
        soon,
    );
    fails(
        peers,
        "igg.offer",
        "impossible",
        &["outside the contract's range", "igg.offer"],
        soon,
    );
}

#[test]
fn a_named_fallback_decides_instead_and_is_counted() {
    if !python() {
        return;
    }
    let t3 = "topologies/paper003-testbed.toml";
    let bad = format!("lrms.preemption={}", misbehave("impossible"));
    let (a, code, stderr) = run_cli(t3, &[&bad, "lrms.preemption_fallback=mov"]);
    assert_eq!(code, 0, "{stderr}");
    let (b, _, _) = run_cli(t3, &["lrms.preemption=mov"]);
    assert!(output(&a, "decisions.csv") == output(&b, "decisions.csv"));
    let summary: serde_json::Value =
        serde_json::from_slice(&output(&a, "summary.json")).expect("json");
    let p = &summary["plugins"][0];
    assert_eq!(
        (p["decisions"].as_u64(), p["fallbacks"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(p["fallback"], "mov");
    // A process that fails for good leaves every later decision to the fallback too.
    let gone = format!("igg.dispatch={}", misbehave("exit"));
    let (c, code, stderr) = run_cli(t3, &[&gone, "igg.dispatch_fallback=rr"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&output(&c, "summary.json")).expect("json");
    let p = &summary["plugins"][0];
    assert_eq!(p["decisions"].as_u64(), Some(6), "one per external request");
    assert_eq!(p["fallbacks"], p["decisions"]);
    // A fallback is a policy igemu has, never a process.
    stops_saying(
        t3,
        &[&bad, &format!("lrms.preemption_fallback={MOV_PY}")],
        "a fallback is a policy igemu ships",
    );
}

/// What `value` breaks of `schema` (a subset of JSON Schema: `$ref` to `#/$defs/…`,
/// `anyOf`, `type`, `const`, `enum`, `required`, `properties`, `items`, `minimum`), each with
/// its place.
pub(super) fn schema_errors(
    root: &serde_json::Value,
    schema: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    use serde_json::Value;
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let def = r.trim_start_matches("#/$defs/");
        return schema_errors(root, &root["$defs"][def], value, at);
    }
    if let Some(alts) = schema.get("anyOf").and_then(Value::as_array) {
        let all: Vec<Vec<String>> = alts
            .iter()
            .map(|a| schema_errors(root, a, value, at))
            .collect();
        if all.iter().any(Vec::is_empty) {
            return Vec::new();
        }
        return vec![format!(
            "{at}: matches no alternative ({})",
            all.concat().join("; ")
        )];
    }
    let mut errors = leaf_errors(schema, value, at);
    if let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for (k, s) in props {
            if let Some(v) = obj.get(k) {
                errors.extend(schema_errors(root, s, v, &format!("{at}.{k}")));
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            errors.extend(schema_errors(root, items, v, &format!("{at}[{i}]")));
        }
    }
    errors
}

/// What `value` breaks of `schema`'s own constraints (`type`, `const`, `enum`, `minimum`,
/// `required`), not its members'.
pub(super) fn leaf_errors(
    schema: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    use serde_json::Value;
    let mut errors = Vec::new();
    let kind = |v: &Value, t: &str| match t {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    };
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| kind(value, t)) {
        errors.push(format!("{at}: not one of {types:?}"));
    }
    if schema.get("const").is_some_and(|c| c != value) {
        errors.push(format!("{at}: not {}", schema["const"]));
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            errors.push(format!("{at}: {value} not among {e:?}"));
        }
    }
    if let (Some(min), Some(v)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if v < min {
            errors.push(format!("{at}: {v} below {min}"));
        }
    }
    if let (Some(req), Some(obj)) = (
        schema.get("required").and_then(Value::as_array),
        value.as_object(),
    ) {
        let missing = req
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !obj.contains_key(*k));
        errors.extend(missing.map(|k| format!("{at}: `{k}` missing")));
    }
    errors
}

#[test]
fn every_message_of_a_real_exchange_follows_the_protocols_json_schema() {
    if !python() {
        return;
    }
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(path("docs/policy-protocol.schema.json")).expect("the schema"),
    )
    .expect("the schema is JSON");
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("exchange.jsonl");
    let record = misbehave(&format!("record {}", log.display()));
    // Every decision point: preemption and dispatch on Table III's testbed, admission too;
    // answer, offer and a whole gateway on peering-small.
    for (topology, keys) in [
        (
            "topologies/paper003-testbed.toml",
            vec!["lrms.preemption", "lrms.admission", "igg.dispatch"],
        ),
        (
            "topologies/peering-small.toml",
            vec!["igg.answer", "igg.offer"],
        ),
        (
            "topologies/peering-small.toml",
            vec!["grid.2.igg.implementation"],
        ),
    ] {
        let sets: Vec<String> = keys.iter().map(|k| format!("{k}={record}")).collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (_, code, stderr) = run_cli(topology, &sets);
        assert_eq!(code, 0, "{stderr}");
    }
    let text = std::fs::read_to_string(&log).expect("the exchange was recorded");
    let mut points = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if let Some(p) = v["point"].as_str() {
            points.insert(p.to_string());
        }
        let errors = schema_errors(&schema, &schema, &v, "$");
        assert!(
            errors.is_empty(),
            "line {}: {line}\n{}",
            i + 1,
            errors.join("\n")
        );
    }
    let all: Vec<String> = [
        "admission",
        "answer",
        "dispatch",
        "gateway",
        "offer",
        "preemption",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(points.into_iter().collect::<Vec<_>>(), all);
}
