"""The baseline of bench_core: a plain, minimal heap-based FCFS+EASY loop in pure Python.

No machine model, no policy interface, no schedule record: the floor a general core is measured
against.  Same rules as rtsched's FCFS+EASY on a flat cluster (all events at t, completions
first, then one pass; reservation from walltimes; extra-nodes rule), so its start times must
equal the core's — bench_core checks that.
"""
from __future__ import annotations

import heapq


def plain_fcfs_easy(jobs: list[tuple[int, int, int, int, int]], capacity: int) -> dict[int, int]:
    """jobs = [(id, submit, runtime, walltime, nodes)] sorted by (submit, id) -> {id: start time}."""
    free = capacity
    events: list[tuple[int, int, int]] = []  # (end time, nodes, id)
    running: dict[int, tuple[int, int]] = {}  # id -> (expected end, nodes)
    queue: list[tuple[int, int, int, int, int]] = []
    starts: dict[int, int] = {}
    i, n = 0, len(jobs)
    while i < n or events:
        t = events[0][0] if events else jobs[i][1]
        if i < n and jobs[i][1] < t:
            t = jobs[i][1]
        while events and events[0][0] == t:
            _, nodes, jid = heapq.heappop(events)
            free += nodes
            del running[jid]
        while i < n and jobs[i][1] == t:
            queue.append(jobs[i])
            i += 1
        if not queue:
            continue
        # FCFS: start the head while it fits.
        k = 0
        while k < len(queue) and queue[k][4] <= free:
            jid, _, rt, wt, nodes = queue[k]
            free -= nodes
            starts[jid] = t
            running[jid] = (t + wt, nodes)
            heapq.heappush(events, (t + rt, nodes, jid))
            k += 1
        del queue[:k]
        if not queue:
            continue
        head_nodes = queue[0][4]
        avail = free
        shadow, extra = 1 << 62, 0
        for end, nodes in sorted(running.values()):
            avail += nodes
            if avail >= head_nodes:
                shadow, extra = max(end, t), avail - head_nodes
                break
        keep = [queue[0]]
        for job in queue[1:]:
            jid, _, rt, wt, nodes = job
            if nodes <= free and (t + wt <= shadow or nodes <= extra):
                if t + wt > shadow:
                    extra -= nodes
                free -= nodes
                starts[jid] = t
                running[jid] = (t + wt, nodes)
                heapq.heappush(events, (t + rt, nodes, jid))
            else:
                keep.append(job)
        queue = keep
    return starts
