#!/usr/bin/env python3
"""A whole InterGrid gateway as an external process (`igg.implementation`): igemu sends it
every input its IGG gets — requests, free slots, timers, peers' messages, leases started and
ended — and carries out the effects it answers with (docs/policies.md, "A whole gateway").

A deliberately simple gateway, written to be read:

* its own requests go to its clusters round robin (each tried in turn), and one no cluster
  takes is rejected — it never offers requests to peers;
* as a provider it accepts every offer at the offered price, takes each redirected request
  once (a duplicate redirection is acknowledged again, never served twice), serves it on its
  clusters like its own, and reports its start and end to the Grid it came from, resending an
  end report until it is acknowledged;
* it keeps no tickets and sets no rounds.

    igemu run topologies/paper004-three-grids.toml \\
        --set 'grid.2.igg.implementation=external:python3 examples/policies/gateway.py'

`--broken` adds a bug for the checker to find: a duplicate redirection (a retry after a lost
acknowledgement, or a duplicated message) is acknowledged as *refused* — so the requester
serves the request itself while this Grid is already running it. With no faults nothing shows;
`igemu stress` with lossy links finds it (tests/policies/external.rs).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igemu_policy import Policy, serve  # noqa: E402


def units(req):
    """A request's resource units: cores × seconds (as igemu prices it)."""
    return req["vms"] * req["cores_per_vm"] * req["duration"] / 1e6


class Grid:
    """One Grid's gateway state."""

    def __init__(self, broken):
        self.broken = broken
        self.next = 0  # round robin: the cluster the next request starts at
        self.taken = set()  # (negotiation, lease) of redirections taken
        self.origin = {}  # lease served for a peer -> that peer
        self.reports = {}  # lease -> (origin, state, attempt): end reports not acknowledged

    def place(self, req, clusters):
        n = len(clusters)
        first = self.next % n
        self.next = (first + 1) % n
        order = [clusters[(first + i) % n] for i in range(n)]
        return [{"kind": "place", "request": req["id"], "order": order, "tries": n}]

    def on(self, q, now):
        x, clusters = q["input"], q["clusters"]
        kind = x["kind"]
        if kind in ("submit", "probed"):
            return self.place(x["request"], clusters)
        if kind == "peer":
            return self.peer(x["from"], x["message"], clusters)
        if kind == "lease_started":
            return self.started(x["lease"], x["cluster"])
        if kind == "lease_ended":
            return self.ended(x["lease"], x["state"], now + q["offer_timeout"])
        if kind == "report_timeout":
            return self.report_again(x["lease"], now + q["offer_timeout"])
        if kind == "unplaced":
            return self.unplaced(x["request"], x["refusal"], now + q["offer_timeout"])
        if kind == "relocate":  # the Grid's other clusters, in turn after the one it leaves
            i = clusters.index(x["from"])
            others = [clusters[(i + k) % len(clusters)] for k in range(1, len(clusters))]
            return [{"kind": "relocate", "lease": x["lease"], "to_try": others, "source": x["from"]}]
        return []  # peers, free_slots, ticks, crashes, timeouts of offers never made

    def peer(self, sender, m, clusters):
        kind = m["kind"]
        if kind == "offer":
            answers = [{"lease": it["request"]["id"], "verdict": "accept", "price": m["price"]}
                       for it in m["items"]]
            answer = {"kind": "answer", "negotiation": m["negotiation"], "answers": answers}
            return [{"kind": "send", "to": sender, "message": answer}]
        if kind == "redirect":
            req, n = m["request"], m["negotiation"]
            ack = {"kind": "redirect_ack", "negotiation": n, "lease": req["id"], "accepted": True}
            if (n, req["id"]) in self.taken:
                if self.broken:
                    ack["accepted"] = False  # the bug: "refused", though it is being served
                return [{"kind": "send", "to": sender, "message": ack}]
            self.taken.add((n, req["id"]))
            self.origin[req["id"]] = sender
            received = {"from": sender, "lease": req["id"], "negotiation": n,
                        "amount": m["price"] * units(req)}
            return [{"kind": "observe", "observation": {"received": received}},
                    {"kind": "send", "to": sender, "message": ack}] + self.place(req, clusters)
        if kind == "lease_report":  # never sent here (it redirects nothing); acknowledged
            return [{"kind": "send", "to": sender,
                     "message": {"kind": "lease_report_ack", "lease": m["lease"]}}]
        if kind == "lease_report_ack":
            self.reports.pop(m["lease"], None)
            return [{"kind": "cancel", "timer": {"kind": "report", "lease": m["lease"]}}]
        return []  # answers, acknowledgements, declines, prices: it offers nothing

    def started(self, lease, cluster):
        if lease in self.origin:
            report = {"kind": "lease_report", "lease": lease, "ended": None, "attempt": 0}
            return [{"kind": "send", "to": self.origin[lease], "message": report}]
        return [{"kind": "dve", "note": {"started": {"lease": lease, "cluster": cluster}},
                 "posted": True}]

    def ended(self, lease, state, retry_at):
        if lease in self.origin:
            self.reports[lease] = (self.origin.pop(lease), state, 0)
            return self.report(lease, retry_at)
        return [{"kind": "dve", "note": {"ended": {"lease": lease, "state": state}},
                 "posted": True}]

    def report(self, lease, retry_at):
        origin, state, attempt = self.reports[lease]
        report = {"kind": "lease_report", "lease": lease, "ended": state, "attempt": attempt}
        return [{"kind": "send", "to": origin, "message": report},
                {"kind": "timer", "at": retry_at, "timer": {"kind": "report", "lease": lease}}]

    def report_again(self, lease, retry_at):
        if lease not in self.reports:
            return []
        origin, state, attempt = self.reports[lease]
        self.reports[lease] = (origin, state, attempt + 1)
        return self.report(lease, retry_at)

    def unplaced(self, req, refusal, retry_at):
        lease = req["id"]
        rejected = {"rejected": {"lease": lease, "reason": refusal or "no-cluster"}}
        effects = [{"kind": "observe", "observation": rejected}]
        if lease in self.origin:  # a peer's request: its Grid learns it ended
            return effects + self.ended(lease, "rejected", retry_at)
        return effects + [{"kind": "dve", "note": {"ended": {"lease": lease, "state": "rejected"}},
                           "posted": False}]


class SimpleGateway(Policy):
    name = "simple gateway (python)"

    def __init__(self, broken=False):
        self.broken = broken
        self.grids = {}

    def gateway(self, q, now):
        if self.broken:
            self.name = "simple gateway (python, broken)"
        return self.grids.setdefault(q["grid"], Grid(self.broken)).on(q, now)


if __name__ == "__main__":
    serve(SimpleGateway(broken="--broken" in sys.argv[1:]))
