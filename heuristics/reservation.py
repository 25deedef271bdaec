"""The head job's reservation (EASY's "shadow time"), computed from walltime estimates only.

``busy`` is a list of (expected_end s, alloc, nodes) for every job holding resources, including
those a policy has just decided to start in this pass (end = now + walltime).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Reservation:
    shadow: int  # s: earliest time the head job can start
    extra: int  # flat: processors free at the shadow time beyond the head's need
    alloc: int  # partitioned: the partition reserved for the head (-1 on a flat cluster)


def flat_reservation(nodes: int, free_now: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """Walk running jobs by expected end until ``nodes`` processors are free."""
    free = free_now
    for end, _alloc, n in sorted(busy):
        free += n
        if free >= nodes:
            return Reservation(max(end, now), free - nodes, -1)
    # More than the whole machine can never happen (checked at load); be safe.
    return Reservation(1 << 62, 0, -1)


def partition_reservation(machine, nodes: int, busy: list[tuple[int, int, int]], now: int) -> Reservation:
    """Earliest-free partition for the head job on a partitioned machine.

    A candidate partition is free once every busy partition that conflicts with it has ended, so
    its free time is the latest end among those.  Sweeping busy jobs by *descending* end, the
    first hit of a candidate gives that latest end; the smallest such time is the shadow time, and
    the lowest-index candidate reaching it is reserved.
    """
    remaining = machine.candidate_mask(nodes)
    conflict = machine.conflict_mask
    last_end = now
    last_hit = 0
    for end, alloc, _n in sorted(busy, reverse=True):
        hit = conflict[alloc] & remaining
        if hit:
            remaining &= ~hit
            last_end, last_hit = end, hit
    if remaining:  # some candidate has no conflicting busy job: free now (e.g. hand-overs)
        return Reservation(now, 0, (remaining & -remaining).bit_length() - 1)
    return Reservation(max(last_end, now), 0, (last_hit & -last_hit).bit_length() - 1)
