"""Write igemu decision policies in Python: no dependencies, protocol version 1.

A policy is a class with one method per decision point it serves; igemu runs the script as
a long-lived child process (``external:python3 my_policy.py`` wherever a topology names a
policy) and asks it each decision over stdin/stdout, one JSON object per line
(docs/policies.md has the protocol and its schema)::

    from igemu_policy import Policy, serve

    class FirstFit(Policy):
        name = "first-fit"

        def dispatch(self, q, now):
            # q["clusters"]: name, cores, busy, earliest_start, model...; try them in order
            return [c["name"] for c in q["clusters"]]

    serve(FirstFit())

Each method gets the question (a dict) and the emulated time ``now`` (microseconds), and
returns the answer: the dict the protocol describes, or the shorthand below.

========== ============================================ =====================================
method     question                                     answer (shorthand)
========== ============================================ =====================================
preemption local request, need, window, candidates,     list of lease ids, or None to preempt
           room (additive) or hosts                     nothing
dispatch   request, clusters (model, busy, start)       list of cluster names, in order
admission  request, service, waiting, held, measured    True, False, "deadline" (refused for
                                                        that reason) or ("limit", k)
answer     request, units, price, max, cost, load ...   "accept", "reject" or ("counter", p)
offer      request, units, home_cost, contracts         list of (peer, price[, limit])
gateway    grid, clusters, offer_timeout, input         list of effects
========== ============================================ =====================================

Raise ``Decline("why")`` when the policy cannot decide: igemu lets the topology's fallback
decide (or stops the run, naming the policy and the reason).
"""

import json
import os
import select
import sys
import time

PROTOCOL = 1
POINTS = ("preemption", "dispatch", "admission", "answer", "offer", "gateway")


class Decline(Exception):
    """The policy cannot decide this question (igemu's fallback decides, if any)."""


class Policy:
    """Base class: override the methods of the decision points the policy serves."""

    name = "python policy"

    def hello(self, info):
        """Called once with igemu's greeting (mode, seed, topology, points asked)."""

    def end(self):
        """Called when the run is over."""


def serves(policy):
    """The decision points `policy` overrides."""
    return [p for p in POINTS if getattr(type(policy), p, None) is not getattr(Policy, p, None)]


def _answer(point, value):
    """The protocol's answer object for a handler's return value."""
    if isinstance(value, dict):
        return value
    if point == "preemption":
        return {"preempt": None if value is None else list(value)}
    if point == "dispatch":
        return {"order": list(value)}
    if point == "admission":
        if value is True:
            return {"admit": True}
        if value is False:
            return {"admit": False}
        if isinstance(value, str):
            return {"admit": False, "reason": value}
        kind, k = value
        if kind != "limit":
            raise ValueError("an admission answer is True, False, a reason or ('limit', k)")
        return {"limit": int(k)}
    if point == "answer":
        if value in ("accept", "reject"):
            return {"verdict": value}
        kind, price = value
        return {"verdict": kind, "price": float(price)}
    if point == "gateway":
        return {"effects": list(value)}
    if point == "offer":
        offers = []
        for step in value:
            peer, price = step[0], step[1]
            o = {"peer": peer, "price": float(price)}
            if len(step) > 2:
                o["limit"] = float(step[2])
            offers.append(o)
        return {"offers": offers}
    raise ValueError("unknown decision point " + repr(point))


def _write(out, obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
    out.flush()


class _Lines:
    """Lines from file descriptor `fd`, polled for `spin` seconds before each read sleeps:
    the next question usually comes within microseconds, and on a virtual machine waking a
    process that slept costs more than the question takes to answer."""

    def __init__(self, fd, spin):
        self.fd, self.spin, self.buf = fd, spin, b""
        os.set_blocking(fd, False)

    def readline(self):
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line, self.buf = self.buf[: end + 1], self.buf[end + 1:]
                return line.decode()
            data = self._read()
            if not data:
                line, self.buf = self.buf, b""
                return line.decode()
            self.buf += data

    def _read(self):
        until = time.monotonic() + self.spin
        while True:
            try:
                return os.read(self.fd, 1 << 16)
            except BlockingIOError:
                if time.monotonic() > until:
                    select.select([self.fd], [], [])


def serve(policy, stdin=None, stdout=None, spin=0.002):
    """Answers igemu's questions with `policy` until igemu ends the run. Reading stdin, it
    polls `spin` seconds (default 2 ms) for the next question before it sleeps; 0 never
    polls."""
    stdout = stdout or sys.stdout
    if stdin is None:
        stdin = _Lines(sys.stdin.fileno(), spin) if spin > 0 else sys.stdin
    while True:
        line = stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            policy.hello(msg)
            _write(stdout, {"type": "hello", "protocol": PROTOCOL,
                            "serves": serves(policy), "name": policy.name})
        elif kind == "question":
            point = msg["point"]
            reply = {"type": "answer", "id": msg["id"]}
            try:
                handler = getattr(policy, point)
                reply["answer"] = _answer(point, handler(msg["question"], msg["now"]))
            except Decline as e:
                reply["error"] = str(e) or "declined"
            _write(stdout, reply)
        elif kind == "end":
            policy.end()
            return


# ---- help for preemption policies: room as igemu computes it ----

def _host_room(host, removed, cores, mem):
    """Local VMs of `cores` and `mem` MB that fit on `host` over the window once the
    candidates in `removed` are gone: its capacity less the peak of what still holds it."""
    c, m = max(cores, 1), max(mem, 1)
    host_mem = host["mem_mb"]
    if c > host["cores"] or (host_mem is not None and m > host_mem):
        return 0
    holds = [h for h in host["fixed"]] + [h[1:] for h in host["held"] if h[0] not in removed]
    events = []
    for start, end, hc, hm in holds:
        events.append((start, 1, hc, hm))
        events.append((end, 0, hc, hm))
    events.sort(key=lambda e: (e[0], e[1]))  # at one instant, ends before starts
    uc = um = pc = pm = 0
    for _, rise, dc, dm in events:
        if rise:
            uc += dc
            um += dm
            pc = max(pc, uc)
            pm = max(pm, um)
        else:
            uc -= dc
            um -= dm
    by_cores = max(host["cores"] - pc, 0) // c
    if host_mem is None:
        return by_cores
    return min(by_cores, max(host_mem - pm, 0) // m)


def room(q, removed):
    """How many of the local request's VMs fit once the candidates with indices in
    `removed` are preempted (exactly as igemu counts it)."""
    removed = set(removed)
    if q["additive"]:
        return q["room"] + sum(q["candidates"][i]["frees"] for i in removed)
    vm = q["vm"]
    return q["idle_room"] + sum(_host_room(h, removed, vm["cores"], vm["mem_mb"]) for h in q["hosts"])


def makes_room(q, removed):
    """Whether preempting the candidates with indices in `removed` makes room."""
    return room(q, removed) >= q["need"]


def set_cost(q, indices):
    """The cost igemu charges for preempting these candidates: each operation's cost, plus the
    reschedule cost once if any operation reschedules work (µs)."""
    cands = q["candidates"]
    cost = sum(cands[i]["cost"] for i in indices)
    if any(cands[i]["reschedules"] for i in indices):
        cost += q["reschedule"]
    return cost
