#!/usr/bin/env python3
"""A deliberately misbehaving external igemu policy, for the tests: `misbehave.py MODE`.

Modes: no-hello (exits before the handshake), old-protocol, serves-nothing; then, at the
first question: exit, hang, garbage, wrong-id, decline, stderr (says why on stderr, exits),
impossible (an answer of the right shape that cannot be carried out), shapeless (an answer
of the wrong shape). `good` answers every decision point sensibly (serves them all; the
gateway as examples/policies/gateway.py plays it); `record FILE` answers as `good` and
appends every line igemu writes to FILE, then every line it answers. As a gateway,
`place-twice` places each of its users' requests twice, `place-offered` places a request a
peer only offered."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "policies"))
from gateway import SimpleGateway  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
# `slow` answers like `good` after SLOW seconds (wall time) per decision.
SLOW = float(sys.argv[2]) if MODE == "slow" and len(sys.argv) > 2 else 0.0

IMPOSSIBLE = {
    "preemption": {"preempt": []},
    "dispatch": {"order": ["nowhere"]},
    "admission": {"limit": -1},
    "answer": {"verdict": "counter", "price": -1},
}


def impossible(point, q):
    if point == "offer":  # a contract's peer, at a price below its range
        return {"offers": [{"peer": q["contracts"][0]["peer"], "price": -1.0}]}
    return IMPOSSIBLE[point]


GATEWAY = SimpleGateway()
RECORD = open(sys.argv[2], "a") if MODE == "record" else None


def good(point, q, now=0):
    if point == "gateway":
        effects = GATEWAY.gateway(q, now)
        x = q["input"]
        if MODE == "place-twice" and x["kind"] == "submit":
            effects += [e for e in effects if e["kind"] == "place"]
        if MODE == "place-offered" and x["kind"] == "peer" and x["message"]["kind"] == "offer":
            item = x["message"]["items"][0]["request"]
            effects = [{"kind": "place", "request": item["id"], "order": q["clusters"]}]
        return {"effects": effects}
    if point == "preemption":
        return {"preempt": [c["lease"] for c in q["candidates"]]}
    if point == "dispatch":
        return {"order": [c["name"] for c in q["clusters"]]}
    if point == "admission":
        return {"admit": True}
    if point == "answer":
        return {"verdict": "reject"}
    return {"offers": [{"peer": c["peer"], "price": c["min"]} for c in q["contracts"] if not c["tried"]]}


def send(obj):
    line = obj if isinstance(obj, str) else json.dumps(obj)
    if RECORD:
        RECORD.write(line + "\n")
        RECORD.flush()
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


first = sys.stdin.readline()
if RECORD:
    RECORD.write(first)
hello = json.loads(first)
if MODE == "no-hello":
    sys.exit(3)
serves = hello["points"]
if MODE == "serves-nothing":
    serves = []
send({"type": "hello", "protocol": 99 if MODE == "old-protocol" else 1, "serves": serves,
      "name": "misbehave " + MODE})
for line in sys.stdin:
    if RECORD:
        RECORD.write(line)
    msg = json.loads(line)
    if msg["type"] == "end":
        break
    point, qid = msg["point"], msg["id"]
    if MODE == "exit":
        sys.exit(0)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "garbage":
        send("this is not json \x1b[31m")
        continue
    if MODE == "wrong-id":
        send({"type": "answer", "id": qid + 7, "answer": good(point, msg["question"])})
        continue
    if MODE == "decline":
        send({"type": "answer", "id": qid, "error": "no idea"})
        continue
    if MODE == "stderr":
        sys.stderr.write("Traceback: something broke\n")
        sys.stderr.flush()
        sys.exit(1)
    if MODE == "impossible":
        send({"type": "answer", "id": qid, "answer": impossible(point, msg["question"])})
        continue
    if MODE == "shapeless":
        send({"type": "answer", "id": qid, "answer": [1, 2, 3]})
        continue
    if MODE == "slow":
        time.sleep(SLOW)
    send({"type": "answer", "id": qid, "answer": good(point, msg["question"], msg["now"])})
