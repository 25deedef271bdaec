"""Which hardware each schedule segment occupied, as ranges of resource units (for Gantt charts and
for exporting schedules to other tools).

* Partitioned machine (Mira): a segment occupies its partition's hardware — 512-node blocks on the
  aligned model, 32-node node cards on a real Cobalt partition file — given as the contiguous runs
  of the partition's hardware bits (unit = one block or one node card).
* Flat cluster: processors are interchangeable, so the simulator records only how many a segment
  holds.  ``segment_ranges`` assigns concrete processor ids afterwards: segments in time order,
  ends before starts at equal times, each taking the lowest free ids (first fit); a segment that
  continues its job's previous one at the same instant keeps that one's ids when they are free.
  Capacity is never exceeded in a valid schedule, so the assignment always succeeds and no two
  segments that overlap in time share an id.
"""
from __future__ import annotations

from dataclasses import dataclass

from rtsched.machines.base import Machine
from rtsched.schedule import Schedule

Ranges = list[tuple[int, int]]  # [lo, hi) unit ranges


@dataclass(frozen=True)
class ResourceMap:
    """Per-segment unit ranges (aligned with ``schedule.segments``), the number of units and the
    nodes per unit."""

    ranges: list[Ranges]
    units: int
    unit_nodes: int
    unit_name: str


def bit_runs(mask: int) -> Ranges:
    """Contiguous runs of set bits of ``mask`` as [lo, hi) ranges, ascending."""
    out: Ranges = []
    i = 0
    while mask:
        if mask & 1:
            lo = i
            while mask & 1:
                mask >>= 1
                i += 1
            out.append((lo, i))
        else:
            low = (mask & -mask).bit_length() - 1
            mask >>= low
            i += low
    return out


def _take(free: Ranges, n: int) -> Ranges:
    """Take the ``n`` lowest ids of the sorted free ranges ``free`` (edited in place)."""
    got: Ranges = []
    while n > 0:
        lo, hi = free[0]
        k = min(n, hi - lo)
        got.append((lo, lo + k))
        n -= k
        if lo + k == hi:
            free.pop(0)
        else:
            free[0] = (lo + k, hi)
    return got


def _give(free: Ranges, ranges: Ranges) -> None:
    """Return ``ranges`` to the sorted free list, merging neighbours."""
    merged = sorted(free + ranges)
    free.clear()
    for lo, hi in merged:
        if free and free[-1][1] == lo:
            free[-1] = (free[-1][0], hi)
        else:
            free.append((lo, hi))


def _all_free(free: Ranges, ranges: Ranges) -> bool:
    return all(any(flo <= lo and hi <= fhi for flo, fhi in free) for lo, hi in ranges)


def _remove(free: Ranges, ranges: Ranges) -> None:
    for lo, hi in ranges:
        for i, (flo, fhi) in enumerate(free):
            if flo <= lo and hi <= fhi:
                free[i:i + 1] = [r for r in ((flo, lo), (hi, fhi)) if r[1] > r[0]]
                break


def segment_ranges(schedule: Schedule, machine: Machine) -> ResourceMap:
    """The unit ranges of every segment of ``schedule`` on ``machine`` (module docstring)."""
    segs = schedule.segments
    if machine.partitioned:
        parts = machine.partitions
        runs = {}
        ranges = []
        for s in segs:
            r = runs.get(s.partition)
            if r is None:
                r = runs[s.partition] = bit_runs(parts[s.partition].hardware)
            ranges.append(r)
        unit_nodes = machine.hardware_nodes
        units = machine.all_hardware.bit_length()
        return ResourceMap(ranges, units, unit_nodes, "block" if unit_nodes == 512 else "node card")
    total = machine.total_nodes
    free: Ranges = [(0, total)]
    out: list[Ranges] = [[] for _ in segs]
    events = sorted([(s.end, 0, i) for i, s in enumerate(segs)] + [(s.start, 1, i) for i, s in enumerate(segs)])
    last: dict[int, tuple[int, Ranges]] = {}  # job -> (end of its latest segment, its ranges)
    for t, is_start, i in events:
        s = segs[i]
        if not is_start:
            _give(free, out[i])
            continue
        prev = last.get(s.job_id)
        if prev is not None and prev[0] == t and sum(h - lo for lo, h in prev[1]) == s.nodes \
                and _all_free(free, prev[1]):
            _remove(free, prev[1])
            out[i] = list(prev[1])
        else:
            if sum(h - lo for lo, h in free) < s.nodes:
                raise ValueError(f"t={t}: segment of job {s.job_id} needs {s.nodes} processors, more than are free: "
                                 "not a valid schedule")
            out[i] = _take(free, s.nodes)
        last[s.job_id] = (s.end, out[i])
    return ResourceMap(out, total, 1, "processor")


def ranges_text(ranges: Ranges) -> str:
    """``0-3 8-11`` (inclusive bounds, evalys' / Batsim's interval-set notation)."""
    return " ".join(f"{lo}-{hi - 1}" if hi - lo > 1 else f"{lo}" for lo, hi in ranges)


__all__ = ["ResourceMap", "bit_runs", "ranges_text", "segment_ranges"]
