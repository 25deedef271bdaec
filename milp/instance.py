"""Offline instances: a machine of M 512-node blocks plus a list of jobs, their JSON format, and
the seeded generators of seed 002's Table 2 and Table 3 settings.

JSON format (times in integer seconds)::

    {"blocks": 16,
     "jobs": [{"id": 1, "kind": "rt", "submit": 0, "runtime": 600, "nodes": 1024, "walltime": 900},
              ...]}

``walltime`` is optional (default: the runtime).  The offline model ignores it (offline solvers
use the actual runtime) but it is carried so that heuristics can run the same instance.  It is
the limit the job never runs past, so it is at least the runtime: a walltime below the runtime
is refused (unlike an SWF trace, whose killed jobs can log a runtime past their request and
whose readers clip it: docs/formats.md).

Partition convention (identical to :class:`rtsched.machines.mira.AlignedMira`): partitions are
enumerated by size k in (1, 2, 4, 8, 16, 24, 32, 48, 64, 96) ascending with k <= M, then by offset
i = 0, 1, ... while (i + 1)·k <= M; partition p covers blocks [i·k, (i+1)·k) and has 512·k nodes.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence


from rtsched.checkpoint import DEFAULT_IO, IOModel
from rtsched.errors import InputError
from rtsched.files import atomic_write_text
from rtsched.generators.smallmix import TABLE3_SIZES, random_jobs
from rtsched.io.cleaning import MAX_ID
from rtsched.jobs import BATCH, MAX_TIME_S, RT, Job, Workload
from rtsched.machines.mira import aligned_partitions as machine_partitions
from rtsched.machines.sizes import BLOCK_NODES, MIRA_BLOCKS, PARTITION_BLOCKS, partition_blocks_for

# ---------------------------------------------------------------------------------------------
# Partitions of the aligned block model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlockPartition:
    """One aligned partition: index (AlignedMira's order), size k in blocks, first block."""

    index: int
    k: int
    first: int

    @property
    def blocks(self) -> range:
        return range(self.first, self.first + self.k)

    @property
    def nodes(self) -> int:
        return self.k * BLOCK_NODES

    def conflicts(self, other: "BlockPartition") -> bool:
        return self.first < other.first + other.k and other.first < self.first + self.k


def aligned_partitions(blocks: int) -> list[BlockPartition]:
    """All aligned partitions of a machine of ``blocks`` blocks: AlignedMira's own, same indices."""
    return [BlockPartition(p.index, p.nodes // BLOCK_NODES, p.first_block) for p in machine_partitions(blocks)]


def size_blocks(nodes: int, blocks: int) -> int:
    """k_j: the smallest partition size (blocks) with 512·k >= nodes and k <= M; ValueError if none."""
    return partition_blocks_for(nodes, blocks)


# ---------------------------------------------------------------------------------------------
# Instance
# ---------------------------------------------------------------------------------------------


@dataclass(slots=False)
class Instance:
    """An offline instance: ``blocks`` 512-node blocks and ``jobs``.

    ``io`` is the checkpoint I/O model giving the preemption overhead o_j (write = read time for
    N_j = 512·k_j nodes, offline-model.md).
    """

    blocks: int
    jobs: list[Job]
    name: str = "instance"
    io: IOModel = field(default=DEFAULT_IO, repr=False)

    def __post_init__(self) -> None:
        if self.blocks < 1:
            raise ValueError("an instance needs at least one block")
        self.jobs = list(self.jobs)
        seen: set[int] = set()
        for j in self.jobs:
            if j.id in seen:
                raise ValueError(f"{self.name}: duplicate job id {j.id}")
            seen.add(j.id)
            size_blocks(j.nodes, self.blocks)  # raises when the job does not fit

    # -- derived data --------------------------------------------------------------------------
    @cached_property
    def partitions(self) -> list[BlockPartition]:
        return aligned_partitions(self.blocks)

    def k(self, job: Job) -> int:
        """Partition size of ``job`` in blocks."""
        return size_blocks(job.nodes, self.blocks)

    def alloc_nodes(self, job: Job) -> int:
        return self.k(job) * BLOCK_NODES

    def overhead(self, job: Job) -> int:
        """o_j: checkpoint write (= restart read) seconds for the job's partition (N_j = 512·k_j)."""
        return self.io.write_seconds(self.alloc_nodes(job))

    def candidates(self, job: Job) -> list[BlockPartition]:
        k = self.k(job)
        return [p for p in self.partitions if p.k == k]

    def preemptible(self, job: Job) -> bool:
        """A BJ that may be split: checkpointable and with ceil(0.1 p) <= floor(0.9 p)."""
        lo, hi = split_bounds(job.runtime)
        return job.kind == BATCH and job.checkpointable and lo <= hi

    @property
    def rt_jobs(self) -> list[Job]:
        return [j for j in self.jobs if j.kind == RT]

    @property
    def batch_jobs(self) -> list[Job]:
        return [j for j in self.jobs if j.kind == BATCH]

    def job(self, job_id: int) -> Job:
        by_id = self.__dict__.get("_by_id")
        if by_id is None or len(by_id) != len(self.jobs):  # built once (jobs are not edited after that)
            by_id = self.__dict__["_by_id"] = {j.id: j for j in self.jobs}
        if job_id not in by_id:
            raise KeyError(job_id)
        return by_id[job_id]

    def horizon(self, preempt: bool = True) -> int:
        """Upper bound on every completion time of some optimal schedule.

        In a left-justified schedule every segment starts at its release or at the end of another
        segment, so nothing ends after max submit + the sum of all segment durations (each BJ that
        may be preempted counts 2·o_j more).
        """
        if not self.jobs:
            return 0
        total = sum(j.runtime for j in self.jobs)
        if preempt:
            total += sum(2 * self.overhead(j) for j in self.jobs if self.preemptible(j))
        return max(j.submit for j in self.jobs) + total

    def machine(self):
        """The core's machine for this instance (AlignedMira with the same partition indices)."""
        from rtsched.machines.mira import AlignedMira

        return AlignedMira(self.blocks)

    def workload(self) -> Workload:
        return Workload(list(self.jobs), name=self.name, max_nodes=self.blocks * BLOCK_NODES)

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": self.blocks,
            "jobs": [{"id": j.id, "kind": j.kind, "submit": j.submit, "runtime": j.runtime, "nodes": j.nodes,
                      "walltime": j.walltime} for j in self.jobs],
        }

    @classmethod
    def from_dict(cls, data: Any, path: str | None = None, name: str | None = None) -> "Instance":
        return _parse(data, path, name)


def split_bounds(runtime: int) -> tuple[int, int]:
    """Integer work bounds of the first part of a split job: ceil(0.1 p) <= w <= floor(0.9 p)."""
    return (runtime + 9) // 10, (9 * runtime) // 10


# ---------------------------------------------------------------------------------------------
# Loading and saving
# ---------------------------------------------------------------------------------------------

_REQUIRED = ("id", "kind", "submit", "runtime", "nodes")
_OPTIONAL = ("walltime",)


def _parse(data: Any, path: str | None, name: str | None) -> Instance:
    def fail(msg: str, fld: str | None = None) -> InputError:
        return InputError(msg, path=path, field=fld)

    if not isinstance(data, dict):
        raise fail(f"the top level must be a JSON object with 'blocks' and 'jobs', got {type(data).__name__}")
    for key in ("blocks", "jobs"):
        if key not in data:
            raise fail(f"missing required field {key!r}", key)
    unknown = sorted(set(data) - {"blocks", "jobs", "name"})
    if unknown:
        raise fail(f"unknown top-level field(s) {unknown}; allowed: blocks, jobs, name")
    blocks = data["blocks"]
    if not _is_int(blocks) or blocks < 1:
        raise fail(f"'blocks' must be a positive integer (512-node blocks), got {blocks!r}", "blocks")
    if blocks > MIRA_BLOCKS:
        raise fail(f"'blocks' is at most {MIRA_BLOCKS} (Mira, {MIRA_BLOCKS * BLOCK_NODES:,} nodes), got {blocks}",
                   "blocks")
    jobs_raw = data["jobs"]
    if not isinstance(jobs_raw, list):
        raise fail(f"'jobs' must be a list of job objects, got {type(jobs_raw).__name__}", "jobs")
    if not jobs_raw:
        raise fail("no jobs: 'jobs' is empty", "jobs")
    jobs: list[Job] = []
    seen: dict[int, int] = {}
    for idx, raw in enumerate(jobs_raw):
        where = f"jobs[{idx}]"
        if not isinstance(raw, dict):
            raise fail(f"job index {idx}: must be a JSON object, got {type(raw).__name__}", where)
        jid_txt = f" (id {raw['id']})" if _is_int(raw.get("id")) else ""
        for key in _REQUIRED:
            if key not in raw:
                raise fail(f"job index {idx}{jid_txt}: missing required field {key!r}", f"{where}.{key}")
        extra = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
        if extra:
            raise fail(f"job index {idx}{jid_txt}: unknown field(s) {extra}", f"{where}.{extra[0]}")
        for key in ("id", "submit", "runtime", "nodes") + (("walltime",) if "walltime" in raw else ()):
            if not _is_int(raw[key]):
                raise fail(f"job index {idx}{jid_txt}: {key!r} must be an integer, got {raw[key]!r}",
                           f"{where}.{key}")
        if not 0 <= raw["id"] <= MAX_ID:
            raise fail(f"job index {idx}: 'id' must be in 0 .. MAX_ID = 2**53 - 1, got {raw['id']}", f"{where}.id")
        kind = raw["kind"]
        if kind not in (RT, BATCH):
            raise fail(f"job index {idx}{jid_txt}: 'kind' must be \"rt\" or \"batch\", got {kind!r}", f"{where}.kind")
        if raw["submit"] < 0:
            raise fail(f"job index {idx}{jid_txt}: 'submit' must be >= 0 s, got {raw['submit']}", f"{where}.submit")
        if raw["runtime"] <= 0:
            raise fail(f"job index {idx}{jid_txt}: 'runtime' must be > 0 s, got {raw['runtime']}",
                       f"{where}.runtime")
        if raw["nodes"] < 1:
            raise fail(f"job index {idx}{jid_txt}: 'nodes' must be >= 1, got {raw['nodes']}", f"{where}.nodes")
        if raw["nodes"] > blocks * BLOCK_NODES:
            raise fail(f"job index {idx}{jid_txt}: {raw['nodes']} nodes is larger than the machine "
                       f"({blocks} blocks = {blocks * BLOCK_NODES} nodes)", f"{where}.nodes")
        try:
            size_blocks(raw["nodes"], blocks)
        except ValueError:
            raise fail(f"job index {idx}{jid_txt}: no partition of a {blocks}-block machine holds "
                       f"{raw['nodes']} nodes (sizes: 512·k for k in {[k for k in PARTITION_BLOCKS if k <= blocks]})",
                       f"{where}.nodes") from None
        walltime = raw.get("walltime", raw["runtime"])
        if walltime < 1:
            raise fail(f"job index {idx}{jid_txt}: 'walltime' must be >= 1 s, got {walltime}", f"{where}.walltime")
        if walltime < raw["runtime"]:  # an instance's walltime is the limit its job never passes (module docstring)
            raise fail(f"job index {idx}{jid_txt}: 'walltime' {walltime} s is below the runtime {raw['runtime']} s; "
                       "give a walltime >= the runtime, or leave it out (it is then the runtime)", f"{where}.walltime")
        for key, value in (("submit", raw["submit"]), ("runtime", raw["runtime"]), ("walltime", walltime)):
            if value > MAX_TIME_S:
                raise fail(f"job index {idx}{jid_txt}: {key!r} {value} is larger than the largest accepted value, "
                           f"MAX_TIME_S = {MAX_TIME_S} s", f"{where}.{key}")
        if raw["id"] in seen:
            raise fail(f"job index {idx}: duplicate id {raw['id']} (also job index {seen[raw['id']]})",
                       f"{where}.id")
        seen[raw["id"]] = idx
        jobs.append(Job(raw["id"], raw["submit"], raw["runtime"], walltime, raw["nodes"], kind))
    inst_name = name or data.get("name") or (os.path.splitext(os.path.basename(path))[0] if path else "instance")
    return Instance(blocks, jobs, name=str(inst_name))


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def load_instance(path: str | os.PathLike) -> Instance:
    """Load an instance JSON file; InputError names the file, the job index and the field at fault."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read instance file: {exc}", path=path) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from exc
    return _parse(data, path, None)


def save_instance(instance: Instance, path: str | os.PathLike) -> None:
    """Write ``instance`` as JSON (one job per line, stable key order)."""
    d = instance.to_dict()
    lines = ["{", f'  "blocks": {d["blocks"]},', '  "jobs": [']
    for i, job in enumerate(d["jobs"]):
        lines.append("    " + json.dumps(job) + ("," if i + 1 < len(d["jobs"]) else ""))
    lines += ["  ]", "}"]
    atomic_write_text(path, "\n".join(lines) + "\n")  # atomic, and the mode a plain write gives


# ---------------------------------------------------------------------------------------------
# Generators (seed 002 Table 2 and Table 3 settings)
# ---------------------------------------------------------------------------------------------

# Table 2 rows: (#BJ, #RTJ, blocks), the paper's order.
TABLE2_ROWS: tuple[tuple[int, int, int], ...] = tuple(
    (nb, nr, m) for nb, nr in ((2, 2), (3, 2), (4, 3)) for m in (4, 8, 16))


def random_instance(seed: int, n_bj: int, n_rt: int, blocks: int, *, sizes: Sequence[int] | None = None,
                    submit_window: int = 3600, runtime_min: int = 600, runtime_max: int = 7200,
                    runtime_step: int = 60, walltime_factor: tuple[float, float] = (1.0, 2.0),
                    name: str | None = None) -> Instance:
    """A seeded random instance: the jobs of ``rtsched.generators.smallmix.random_jobs`` (its
    docstring gives the draws; the RL environment ``rtsched/RtMix-v0`` draws the same jobs)."""
    jobs = random_jobs(seed, n_bj, n_rt, blocks, sizes=sizes, submit_window=submit_window, runtime_min=runtime_min,
                       runtime_max=runtime_max, runtime_step=runtime_step, walltime_factor=walltime_factor)
    return Instance(blocks, jobs, name=name or f"random-{n_bj}bj-{n_rt}rt-{blocks}b-s{seed}")


def table3_instance(seed: int, *, n_bj: int = 5, n_rt: int = 2, blocks: int = 16,
                    sizes: Sequence[int] = TABLE3_SIZES, **kwargs: Any) -> Instance:
    """Seed 002 Table 3 setting: 5 BJs + 2 RTJs on 16 blocks (8,192 nodes), sizes 512..8192.

    Every parameter of :func:`random_instance` may be overridden.
    """
    return random_instance(seed, n_bj, n_rt, blocks, sizes=sizes, name=kwargs.pop("name", f"table3-{seed:02d}"),
                           **kwargs)


def table3_set(count: int = 20, first_seed: int = 0, **kwargs: Any) -> list[Instance]:
    """The Table 3 set: seeds first_seed .. first_seed + count − 1."""
    return [table3_instance(s, **kwargs) for s in range(first_seed, first_seed + count)]


def table2_instance(n_bj: int, n_rt: int, blocks: int, seed: int = 0, **kwargs: Any) -> Instance:
    """A Table 2 row instance: ``n_bj`` BJs + ``n_rt`` RTJs on ``blocks`` blocks (sizes up to the machine)."""
    return random_instance(seed, n_bj, n_rt, blocks,
                           name=kwargs.pop("name", f"table2-{n_bj}bj-{n_rt}rt-{blocks}b-s{seed}"), **kwargs)


def table2_set(seed: int = 0, rows: Iterable[tuple[int, int, int]] = TABLE2_ROWS, **kwargs: Any) -> list[Instance]:
    return [table2_instance(nb, nr, m, seed, **kwargs) for nb, nr, m in rows]


# ---------------------------------------------------------------------------------------------
# The instance set shipped in traces/instances/ (the default of ``rtsched compare``)
# ---------------------------------------------------------------------------------------------

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "traces" / "instances"
SHIPPED_SEEDS: tuple[int, ...] = tuple(range(8))  # table3_instance seeds: the Table 3 setting


def shipped_instances() -> list[Instance]:
    """The instances of ``traces/instances/`` as generated (``rtsched instances generate --shipped``
    rewrites them byte for byte): the Table 3 setting, 5 BJs + 2 RTJs on 16 blocks, seeds 0-7."""
    return [table3_instance(seed) for seed in SHIPPED_SEEDS]


def write_shipped_instances(out_dir: str | os.PathLike | None = None) -> list[str]:
    """Write ``shipped_instances()`` as ``NAME.json`` into ``out_dir`` (default ``traces/instances``)."""
    out = Path(out_dir) if out_dir is not None else SHIPPED_DIR
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for inst in shipped_instances():
        path = out / f"{inst.name}.json"
        save_instance(inst, path)
        paths.append(str(path))
    return paths

