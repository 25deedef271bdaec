"""A flat cluster of N interchangeable processors (the SWF traces of the RL papers)."""
from __future__ import annotations

from rtsched.limits import MAX_FLAT_NODES
from rtsched.machines.base import Machine, MachineState

FLAT = -1  # the allocation id on a flat cluster


class FlatState(MachineState):
    __slots__ = ("free_nodes", "total")

    def __init__(self, total: int, free: int | None = None) -> None:
        self.total = total
        self.free_nodes = total if free is None else free

    def find(self, nodes: int) -> int | None:
        return FLAT if nodes <= self.free_nodes else None

    def is_free(self, alloc: int, nodes: int) -> bool:
        return nodes <= self.free_nodes

    def allocate(self, alloc: int, nodes: int) -> None:
        if nodes > self.free_nodes:
            raise ValueError(f"allocating {nodes} processors with only {self.free_nodes} free")
        self.free_nodes -= nodes

    def force_allocate(self, alloc: int, nodes: int) -> None:
        """Take ``nodes`` even if fewer are free now (JIT hand-over: the draining jobs free them soon)."""
        self.free_nodes -= nodes

    def release(self, alloc: int, nodes: int) -> None:
        self.free_nodes += nodes

    def copy(self) -> "FlatState":
        return FlatState(self.total, self.free_nodes)


class FlatCluster(Machine):
    """N processors; a job needs ``nodes`` of them, any of them."""

    partitioned = False

    def __init__(self, nodes: int, name: str | None = None) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one processor")
        if nodes > MAX_FLAT_NODES:
            raise ValueError(f"a cluster of {nodes:,} processors: at most {MAX_FLAT_NODES:,} are allowed "
                             "(rtsched.limits.MAX_FLAT_NODES)")
        self.total_nodes = nodes
        self.name = name or f"flat-{nodes}"

    def allocated_nodes(self, nodes: int) -> int:
        return nodes

    def fits(self, nodes: int) -> bool:
        return 1 <= nodes <= self.total_nodes

    def allocated_sizes(self, nodes: list[int]) -> list[int] | None:
        """The requests themselves (a copy), checked at C level (a simulator per RL episode)."""
        if nodes and (min(nodes) < 1 or max(nodes) > self.total_nodes):
            return None
        return list(nodes)

    def new_state(self) -> FlatState:
        return FlatState(self.total_nodes)
