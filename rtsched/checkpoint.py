"""Checkpoint/restart overheads and checkpoint models (seed 002, eqs. 1-20 and 34; DESIGN.md).

Overheads: each node holds ``data_per_node_gb`` (16 GB) of checkpoint data; a job's I/O
bandwidth is one I/O node (``gbps_per_io_node`` = 4 GB/s) per ``nodes_per_io_node`` (128) compute
nodes, capped by the file system's ``pfs_cap_gbps`` (216 GB/s = 90 % of Mira's 240 GB/s).
Write time = read time = ceil(data / bandwidth) seconds.

The four models differ in *when* a running job writes checkpoints and what a preemption loses:

* ``NO``: never checkpoints; a preempted job restarts from zero (lost work = its progress).
* ``SYS``: checkpoints every ``interval`` s of work (3600 s); a preemption loses the work since the
  last completed checkpoint; restart reads the checkpoint.
* ``APP``: the largest number n of checkpoints with n * write <= x % of the walltime, spread evenly
  over the walltime (every walltime / (n + 1) s of work); losses and restarts as SYS.
* ``JIT``: no periodic checkpoints; at preemption the job writes a checkpoint (holding its nodes);
  the preempting job starts only when the slowest write ends; no work is lost; restart reads it.

Checkpoints are placed at work progress points strictly below the runtime: a checkpoint at the
very end of a job saves nothing, so it is not taken (eq. 6 counts one more when the runtime is an
exact multiple of the interval; that difference is documented in docs/semantics.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True, slots=True)
class IOModel:
    """Parameters of the checkpoint I/O cost (units in the names)."""

    data_per_node_gb: float = 16.0
    gbps_per_io_node: float = 4.0
    nodes_per_io_node: int = 128
    pfs_cap_gbps: float = 216.0

    def bandwidth_gbps(self, nodes: int) -> float:
        return min(nodes / self.nodes_per_io_node * self.gbps_per_io_node, self.pfs_cap_gbps)

    def write_seconds(self, nodes: int) -> int:
        """Seconds to write one checkpoint of a job on ``nodes`` nodes (eq. 34, rounded up)."""
        # Round away float noise before the ceiling: 16*8192/216 is 606.81..., 16*512/16 is exactly 512.
        return int(math.ceil(round(self.data_per_node_gb * nodes / self.bandwidth_gbps(nodes), 9)))

    def read_seconds(self, nodes: int) -> int:
        """Restart read time; the model uses the same bandwidth for reads and writes."""
        return self.write_seconds(nodes)


DEFAULT_IO = IOModel()


class CheckpointKind(str, Enum):
    NO = "no"
    SYS = "sys"
    APP = "app"
    JIT = "jit"


@dataclass(frozen=True, slots=True)
class CheckpointModel:
    """A checkpoint model: kind plus its parameter (SYS interval in s, APP overhead fraction)."""

    kind: CheckpointKind = CheckpointKind.NO
    sys_interval: int = 3600  # s of work between SYS checkpoints
    app_fraction: float = 0.10  # APP: total write time <= this fraction of the walltime
    io: IOModel = DEFAULT_IO

    @classmethod
    def parse(cls, text: str, io: IOModel = DEFAULT_IO) -> "CheckpointModel":
        """Parse ``no``, ``sys``, ``sys:1800``, ``app-5``, ``app:10``, ``jit`` (case-insensitive)."""
        t = text.strip().lower().replace("-ckpt", "").replace("_", "-")
        if t in ("no", "none"):
            return cls(CheckpointKind.NO, io=io)
        if t == "jit":
            return cls(CheckpointKind.JIT, io=io)
        if t.startswith("sys"):
            rest = t[4:] if t[3:4] in (":", "-") else t[3:]  # one separator: "sys:-5" is not "sys:5"
            try:
                interval = int(rest) if rest else 3600
            except ValueError:
                raise ValueError(f"checkpoint model {text!r}: sys:SECONDS needs whole seconds, got {rest!r} "
                                 "(use no, sys[:SECONDS], app-PCT or jit)") from None
            if not 1 <= interval <= 10**10:
                raise ValueError(f"checkpoint model {text!r}: the SYS interval must be in [1, 10**10] s, "
                                 f"got {interval}")
            return cls(CheckpointKind.SYS, sys_interval=interval, io=io)
        if t.startswith("app"):
            rest = (t[4:] if t[3:4] in (":", "-") else t[3:]).removesuffix("%")
            try:
                pct = float(rest) if rest else 10.0
            except ValueError:
                raise ValueError(f"checkpoint model {text!r}: app-PCT needs a percentage, got {rest!r} "
                                 "(use no, sys[:SECONDS], app-PCT or jit)") from None
            if not (math.isfinite(pct) and 0 < pct <= 100):
                raise ValueError(f"checkpoint model {text!r}: the APP percentage must be in (0, 100], got {rest}")
            return cls(CheckpointKind.APP, app_fraction=pct / 100.0, io=io)
        raise ValueError(f"unknown checkpoint model {text!r}; use no, sys[:SECONDS], app-PCT or jit")

    @property
    def label(self) -> str:
        if self.kind is CheckpointKind.SYS:
            return f"SYS-CKPT({self.sys_interval}s)"
        if self.kind is CheckpointKind.APP:
            return f"APP-CKPT-{self.app_fraction * 100:g}%"
        return f"{self.kind.value.upper()}-CKPT"

    def app_checkpoints(self, walltime: int, nodes: int) -> tuple[int, int]:
        """APP model: (number of checkpoints, work interval between them in s) for a job."""
        write = self.io.write_seconds(nodes)
        count = int(math.floor(self.app_fraction * walltime / write + 1e-9))
        if count <= 0:
            return 0, 0
        return count, walltime // (count + 1)

    def checkpoint_interval(self, walltime: int, nodes: int) -> int:
        """Work seconds between periodic checkpoints; 0 means no periodic checkpoints."""
        if self.kind is CheckpointKind.SYS:
            return self.sys_interval
        if self.kind is CheckpointKind.APP:
            return self.app_checkpoints(walltime, nodes)[1]
        return 0

    def checkpoint_limit(self, walltime: int, nodes: int) -> int:
        """Most periodic checkpoints a job takes in its life (APP: n; SYS: unbounded)."""
        if self.kind is CheckpointKind.APP:
            return self.app_checkpoints(walltime, nodes)[0]
        if self.kind is CheckpointKind.SYS:
            return 1 << 60
        return 0

    def checkpoint_points(self, runtime: int, walltime: int, nodes: int) -> list[int]:
        """Work progress points (s) at which a job running alone takes periodic checkpoints."""
        interval = self.checkpoint_interval(walltime, nodes)
        if interval <= 0:
            return []
        limit = self.checkpoint_limit(walltime, nodes)
        points = []
        k = 1
        while k * interval < runtime and k <= limit:
            points.append(k * interval)
            k += 1
        return points

    @property
    def periodic(self) -> bool:
        return self.kind in (CheckpointKind.SYS, CheckpointKind.APP)
