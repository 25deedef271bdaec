"""The machine interface the simulator and policies share.

A machine hands out *allocations*: a partition index on a partitioned machine (Mira), or -1 on
a flat cluster where only the number of processors matters.  ``MachineState`` is the mutable
occupancy; it is cheap to ``copy()`` so that policies can plan several starts in one pass.
"""
from __future__ import annotations

from abc import ABC, abstractmethod


class MachineState(ABC):
    """Mutable occupancy of a machine.  ``free_nodes`` counts nodes no allocation holds."""

    free_nodes: int

    @abstractmethod
    def find(self, nodes: int) -> int | None:
        """An allocation for a job of ``nodes`` nodes that is free now, or None."""

    @abstractmethod
    def is_free(self, alloc: int, nodes: int) -> bool:
        """Whether ``alloc`` can take a job of ``nodes`` nodes now."""

    @abstractmethod
    def allocate(self, alloc: int, nodes: int) -> None: ...

    @abstractmethod
    def release(self, alloc: int, nodes: int) -> None: ...

    @abstractmethod
    def copy(self) -> "MachineState": ...


class Machine(ABC):
    """A machine model: capacity, how a request maps onto it, and a fresh occupancy state."""

    name: str
    total_nodes: int
    partitioned: bool

    @abstractmethod
    def allocated_nodes(self, nodes: int) -> int:
        """Nodes a job requesting ``nodes`` actually occupies (its partition size on Mira)."""

    @abstractmethod
    def fits(self, nodes: int) -> bool:
        """Whether a job of ``nodes`` nodes can ever run on this machine."""

    def allocated_sizes(self, nodes: list[int]) -> list[int] | None:
        """``allocated_nodes`` of each request in ``nodes`` (a new list), or None when one of them
        does not ``fit``."""
        distinct = set(nodes)
        sizes = {n: self.allocated_nodes(n) for n in distinct if self.fits(n)}
        if len(sizes) != len(distinct):
            return None
        return list(map(sizes.__getitem__, nodes))

    @abstractmethod
    def new_state(self) -> MachineState: ...

    def conflicts(self, alloc_a: int, alloc_b: int) -> bool:
        """Whether two allocations share hardware (always False on a flat cluster: capacity rules)."""
        return False

    def describe(self) -> str:
        return f"{self.name} ({self.total_nodes} nodes)"
