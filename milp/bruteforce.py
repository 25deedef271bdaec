"""An independent exhaustive enumerator for tiny instances (<= 4 jobs, <= 4 blocks by default).

It shares no modelling code with the MILP or CP-SAT models: partitions, overheads and split bounds
are recomputed here from offline-model.md, and the search is plain enumeration with exact integer
arithmetic.

Why it is exact.  Fix every job's partition and split (a split job is two *parts*, part 1 before
part 2).  Take any feasible schedule and list its parts by start time; left-justifying that list
(each part starts at the maximum of its release — submit, or the end of the job's part 1 — and the
ends of the earlier parts on conflicting partitions) gives a feasible schedule in which no part
starts later, so no slowdown is larger.  Hence enumerating, for every assignment of partitions
and splits, every order of the parts (with part 1 before part 2) and left-justifying it reaches a
schedule that is at least as good as the optimum on both criteria (RTJ sum and BJ sum).

* Without preemption this is the exact optimum.
* With preemption it is exact over the splits enumerated: ``splits="all"`` tries every integer w
  in [ceil(0.1 p), floor(0.9 p)] (exact for the integer-time problem, affordable only for short
  runtimes or few splittable jobs); ``"bounds"`` tries the two bounds; a list or a callable
  job -> list gives any discrete candidate set (then it is the optimum restricted to that set).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Callable, Iterable

from rtsched.errors import InputError
from rtsched.jobs import Job

from milp.plan import Placement

_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96)


def _partitions(blocks: int) -> list[tuple[int, int, int]]:
    """(index, size k, first block), in the aligned model's order."""
    out = []
    for k in _SIZES:
        if k > blocks:
            break
        for i in range(blocks // k):
            out.append((len(out), k, i * k))
    return out


def _k_of(nodes: int, blocks: int) -> int:
    for k in _SIZES:
        if k <= blocks and 512 * k >= nodes:
            return k
    raise ValueError(f"job of {nodes} nodes does not fit on {blocks} blocks")


def _overhead(k: int) -> int:
    n = 512 * k
    bandwidth = min(Fraction(n * 4, 128), Fraction(216))
    return math.ceil(Fraction(16 * n) / bandwidth)


def _split_range(p: int) -> tuple[int, int]:
    return math.ceil(Fraction(p, 10)), math.floor(Fraction(9 * p, 10))


# The largest instance the enumeration takes by default (``bruteforce(max_jobs=, max_blocks=)``).
MAX_JOBS = 4
MAX_BLOCKS = 4


def check_tiny(n_jobs: int, blocks: int, max_jobs: int = MAX_JOBS, max_blocks: int = MAX_BLOCKS,
               path: str | None = None) -> None:
    """Refuse an instance larger than the enumeration takes (an ``InputError``, a ValueError,
    naming ``path`` when given), before any work starts."""
    if n_jobs > max_jobs or blocks > max_blocks:
        raise InputError(f"brute force is for tiny instances (<= {max_jobs} jobs, <= {max_blocks} blocks); "
                         f"got {n_jobs} jobs on {blocks} blocks: use another method (cpsat, milp-disjunctive)",
                         path=path)


@dataclass
class BruteResult:
    status: str  # "optimal" | "infeasible"
    theta_used: Fraction | None
    theta_star: Fraction | None  # min achievable mean RTJ slowdown (over the enumerated space)
    rt_sum: Fraction | None
    bj_sum: Fraction | None
    sd: dict[int, Fraction] | None
    placements: list[Placement] | None
    leaves: int
    # Σ RTJ SD of the BJ-optimal schedules within θ_used (those enumerated), ascending: more than one
    # value means the optimum's RTJ mean is a tie-break; the plan returned has the least (rt_sum).
    rt_sums_tied: tuple[Fraction, ...] = ()


def bruteforce(blocks: int, jobs: list[Job], *, theta: float | Fraction = Fraction(6, 5), preempt: bool = False,
               splits: str | Iterable[int] | Callable[[Job], Iterable[int]] = "all", lexicographic: bool = True,
               max_jobs: int = MAX_JOBS, max_blocks: int = MAX_BLOCKS, max_leaves: int = 5_000_000) -> BruteResult:
    """Exact optimum by enumeration (see the module docstring).  θ is made exact with
    ``Fraction(str(theta))`` for floats (1.2 -> 6/5).

    Among the schedules with the least Σ BJ SD within θ_used it returns one with the least Σ RTJ
    SD (the RTJ tie-break of ``milp.solve(..., rtj_tiebreak=True)``; always, so brute force is the
    independent check of that stage); ``rt_sums_tied`` lists the RTJ sums of the others."""
    check_tiny(len(jobs), blocks, max_jobs, max_blocks)
    theta = Fraction(str(theta)) if isinstance(theta, float) else Fraction(theta)
    parts = _partitions(blocks)
    conflict = [[a[2] < b[2] + b[1] and b[2] < a[2] + a[1] for b in parts] for a in parts]
    ks = [_k_of(j.nodes, blocks) for j in jobs]
    cands = [[q for q, k, _ in parts if k == kj] for kj in ks]
    opts = [_split_options(j, preempt, splits) for j in jobs]
    ovh = [_overhead(k) for k in ks]
    scores = _Scores(jobs, max_leaves)
    for assign in itertools.product(*cands):
        for split in itertools.product(*opts):
            tasks = _tasks(jobs, assign, split, ovh)
            _orders(tasks, jobs, conflict, partial(scores.leaf, tasks, assign, split))
    best, L_rt, L_bj = scores.best, scores.L_rt, scores.L_bj
    n_rt = len(scores.rt_idx)
    theta_star = Fraction(min(best), L_rt * n_rt) if n_rt else None
    if n_rt:
        theta_used = max(theta, theta_star) if lexicographic else theta
        limit = theta_used * n_rt * L_rt
        feasible = [(v[0], rt, v[1]) for rt, v in best.items() if rt <= limit]
    else:
        theta_used = None
        feasible = [(v[0], rt, v[1]) for rt, v in best.items()]
    if not feasible:
        return BruteResult("infeasible", theta_used, theta_star, None, None, None, None, scores.leaves)
    bj, rt, (assign, split, starts) = min(feasible, key=lambda x: (x[0], x[1]))
    tied = tuple(sorted(Fraction(r, L_rt) for b, r, _ in feasible if b == bj)) if n_rt else ()
    placements, sd = _placements(jobs, assign, split, starts, ovh)
    return BruteResult("optimal", theta_used, theta_star, Fraction(rt, L_rt), Fraction(bj, L_bj), sd, placements,
                       scores.leaves, tied)


def _split_options(j: Job, preempt: bool, splits) -> list[int | None]:
    """A job's choices: None (one part) and, for a preemptible BJ, the first part's lengths to try."""
    o: list[int | None] = [None]
    lo, hi = _split_range(j.runtime)
    if preempt and j.kind == "batch" and j.checkpointable and lo <= hi:
        if splits == "all":
            o += list(range(lo, hi + 1))
        elif splits == "bounds":
            o += sorted({lo, hi})
        elif callable(splits):
            o += sorted({w for w in splits(j) if lo <= w <= hi})
        else:
            o += sorted({w for w in splits if lo <= w <= hi})
    return o


def _tasks(jobs: list[Job], assign, split, ovh: list[int]) -> list[tuple[int, int, int, int]]:
    """The parts to place: (job index, part 0/1, partition, duration in seconds)."""
    tasks = []
    for i, j in enumerate(jobs):
        w = split[i]
        if w is None:
            tasks.append((i, 0, assign[i], j.runtime))
        else:
            tasks.append((i, 0, assign[i], w + ovh[i]))
            tasks.append((i, 1, assign[i], j.runtime - w + ovh[i]))
    return tasks


def _orders(tasks: list[tuple[int, int, int, int]], jobs: list[Job], conflict: list[list[bool]],
            leaf: Callable[[list[int], list[int]], None]) -> None:
    """Every order of the tasks (a job's second part after its first), each task started as early
    as its submit time and the conflicting tasks placed before it allow: ``leaf(starts, ends)``."""
    m, n = len(tasks), len(jobs)
    starts = [0] * m
    ends = [0] * m
    done = [False] * m
    end_of_first: list[int | None] = [None] * n
    index_of = {(t[0], t[1]): x for x, t in enumerate(tasks)}
    order: list[int] = []

    def dfs(depth: int) -> None:
        if depth == m:
            leaf(starts, ends)
            return
        for x in range(m):
            if done[x]:
                continue
            i, part, q, dur = tasks[x]
            if part == 1 and not done[index_of[(i, 0)]]:
                continue
            t = jobs[i].submit if part == 0 else end_of_first[i]
            for y in order:
                if conflict[q][tasks[y][2]] and ends[y] > t:
                    t = ends[y]
            starts[x], ends[x] = t, t + dur
            done[x] = True
            order.append(x)
            if part == 0:
                end_of_first[i] = t + dur
            dfs(depth + 1)
            order.pop()
            done[x] = False

    dfs(0)


class _Scores:
    """The leaves seen: per Σ RTJ slowdown (scaled by L_rt, the LCM of the RTJ runtimes, to an
    integer) the least Σ BJ slowdown (scaled by L_bj) and its (assignment, splits, starts)."""

    def __init__(self, jobs: list[Job], max_leaves: int):
        self.jobs, self.max_leaves = jobs, max_leaves
        self.rt_idx = [i for i, j in enumerate(jobs) if j.kind == "rt"]
        self.bj_idx = [i for i, j in enumerate(jobs) if j.kind != "rt"]
        self.L_rt = math.lcm(*(jobs[i].runtime for i in self.rt_idx)) if self.rt_idx else 1
        self.L_bj = math.lcm(*(jobs[i].runtime for i in self.bj_idx)) if self.bj_idx else 1
        self.best: dict[int, tuple[int, tuple]] = {}  # rt numerator -> (bj numerator, (assign, split, starts))
        self.leaves = 0

    def leaf(self, tasks, assign, split, starts: list[int], ends: list[int]) -> None:
        self.leaves += 1
        if self.leaves > self.max_leaves:
            raise InputError(f"brute force exceeded {self.max_leaves:,} leaves; use a smaller instance, "
                             "a smaller split set or another method (cpsat, milp-disjunctive)")
        jobs = self.jobs
        comp = [0] * len(jobs)
        for x in range(len(tasks)):
            comp[tasks[x][0]] = max(comp[tasks[x][0]], ends[x])
        rt = sum((self.L_rt // jobs[i].runtime) * (comp[i] - jobs[i].submit) for i in self.rt_idx)
        bj = sum((self.L_bj // jobs[i].runtime) * (comp[i] - jobs[i].submit) for i in self.bj_idx)
        cur = self.best.get(rt)
        if cur is None or bj < cur[0]:
            self.best[rt] = (bj, (assign, split, tuple(starts)))


def _placements(jobs: list[Job], assign, split, starts, ovh: list[int]) -> tuple[list[Placement], dict]:
    """The plan of one leaf and its exact slowdowns (job id -> Fraction)."""
    placements = []
    x = 0
    sd = {}
    for i, j in enumerate(jobs):
        w = split[i]
        if w is None:
            placements.append(Placement(j.id, assign[i], starts[x]))
            c = starts[x] + j.runtime
            x += 1
        else:
            placements.append(Placement(j.id, assign[i], starts[x], w, starts[x + 1]))
            c = starts[x + 1] + j.runtime - w + ovh[i]
            x += 2
        sd[j.id] = Fraction(c - j.submit, j.runtime)
    return placements, sd
