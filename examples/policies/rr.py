#!/usr/bin/env python3
"""Round-robin dispatch (paper 000 eq. 25) as an external igemu policy: each request of a
Grid starts one cluster further than the last, then tries the others in turn. igemu's own
`rr`, re-implemented; they give byte-identical outputs (tests/policies/external.rs).

    igemu run topologies/paper000-three-clusters.toml \\
        --set 'igg.dispatch=external:python3 examples/policies/rr.py'
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igemu_policy import Policy, serve  # noqa: E402


class RoundRobin(Policy):
    name = "rr (python)"

    def __init__(self):
        self.next = {}  # per Grid: the cluster its next request starts at

    def dispatch(self, q, now):
        names = [c["name"] for c in q["clusters"]]
        n = len(names)
        if n == 0:
            return []
        first = self.next.get(q["grid"], 0) % n
        self.next[q["grid"]] = (first + 1) % n
        return [names[(first + i) % n] for i in range(n)]


if __name__ == "__main__":
    serve(RoundRobin())
