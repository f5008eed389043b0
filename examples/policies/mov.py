#!/usr/bin/env python3
"""MOV preemption (paper 003 eq. 9) as an external igemu policy: the minimal candidate set
that costs least by igemu's one cost function (each operation's cost, plus the reschedule
cost once if the set reschedules work); ties go to the set whose most recently submitted
lease is the oldest, compared lease by lease from the newest down (paper 003 Table III keeps
{5, 2, 3} over the equally cheap {5, 6}). igemu's own `mov`, re-implemented from the paper;
they give byte-identical outputs (tests/policies/external.rs).

It searches every set by branch and bound, newest leases first: exact, and fast for the
dozen or so leases a testbed has in play; not meant for hundreds.

    igemu run topologies/paper003-testbed.toml \\
        --set 'lrms.preemption=external:python3 examples/policies/mov.py'
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igemu_policy import Policy, makes_room, serve, set_cost  # noqa: E402


def better(a, b):
    """Whether set `a` (cost, newest-first indices) beats `b`."""
    return b is None or a[0] < b[0] or (a[0] == b[0] and a[1] < b[1])


class Mov(Policy):
    name = "mov (python)"

    def preemption(self, q, now):
        n = len(q["candidates"])
        everything = list(range(n))
        if not makes_room(q, everything):
            return None
        best = None
        # Candidates come in arrival order: deciding the newest first makes the sets found
        # first the ones the tie-break prefers.
        order = list(reversed(everything))
        cands = q["candidates"]

        def walk(k, chosen):
            nonlocal best
            cost = set_cost(q, chosen)
            if best is not None and cost > best[0]:
                return  # costs only grow as leases are added
            if makes_room(q, chosen):
                key = (cost, sorted(chosen, reverse=True))
                if better(key, best):
                    best = key
                return  # a superset costs as much or more and loses the tie-break
            if k == n:
                return
            i = order[k]
            walk(k + 1, chosen)  # without lease i
            walk(k + 1, chosen + [i])  # with it

        walk(0, [])
        return [cands[i]["lease"] for i in sorted(best[1])]


if __name__ == "__main__":
    serve(Mov())
