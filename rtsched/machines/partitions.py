"""Partitioned machines (Mira): partitions, conflicts as bitsets, and occupancy.

A partition is a fixed set of hardware (blocks or node cards).  Two partitions conflict when
they share hardware; a partition is free when no busy partition conflicts with it.  Conflicts are
kept as Python-int bitsets over partition indices, so "is p free" is one AND, and choosing a
partition is a popcount per candidate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rtsched.machines.base import Machine, MachineState


@dataclass(frozen=True, slots=True)
class Partition:
    index: int
    name: str
    nodes: int
    hardware: int  # bitset over hardware units (blocks or node cards)
    first_block: int = -1  # aligned model: first block; -1 for XML partitions


class PartitionState(MachineState):
    """Occupancy: which partitions are busy, and for each partition how many busy partitions block it.

    ``free_mask`` has bit p set iff partition p is free (no busy partition conflicts with it).
    A partition may briefly carry two owners (a JIT checkpoint write finishing while the RT job
    that preempted it is already bound to the same hardware); counters keep that exact.
    """

    __slots__ = ("machine", "blocked", "free_mask", "busy_count", "free_nodes", "busy", "busy_hw")

    def __init__(self, machine: "PartitionedMachine") -> None:
        self.machine = machine
        self.blocked = [0] * len(machine.partitions)
        self.free_mask = (1 << len(machine.partitions)) - 1
        self.busy_count = [0] * len(machine.partitions)
        self.free_nodes = machine.total_nodes
        self.busy: set[int] = set()  # partitions with at least one owner
        self.busy_hw = 0  # union of the busy partitions' hardware

    def find(self, nodes: int) -> int | None:
        """Best-fit choice: among free partitions of the job's size, the one whose allocation
        removes the fewest other free partitions (keeps large partitions available); ties → lowest
        index."""
        return self.find_among(self.machine.candidates_for(nodes))

    def find_among(self, candidates: list[int]) -> int | None:
        """Best-fit choice among the given partitions (only free ones count)."""
        free = self.free_mask
        conflict = self.machine.conflict_mask
        best = None
        best_cost = 1 << 30
        for p in candidates:
            if (free >> p) & 1:
                cost = (conflict[p] & free).bit_count()
                if cost < best_cost:
                    best, best_cost = p, cost
        return best

    def is_free(self, alloc: int, nodes: int) -> bool:
        return alloc >= 0 and bool((self.free_mask >> alloc) & 1) and self.machine.partitions[alloc].nodes >= nodes

    def allocate(self, alloc: int, nodes: int = 0) -> None:
        m = self.machine
        if not (self.free_mask >> alloc) & 1:
            raise ValueError(f"partition {m.partitions[alloc].name} is not free")
        self.force_allocate(alloc)

    def force_allocate(self, alloc: int, nodes: int = 0) -> None:
        """Bind ``alloc`` even if busy hardware overlaps it (JIT hand-over); keeps counters exact."""
        m = self.machine
        self.busy_count[alloc] += 1
        if self.busy_count[alloc] == 1:
            blocked = self.blocked
            mask = 0
            for q in m.conflict_list[alloc]:
                blocked[q] += 1
                if blocked[q] == 1:
                    mask |= 1 << q
            self.free_mask &= ~mask
            self.busy.add(alloc)
            hw = m.partitions[alloc].hardware
            self.free_nodes -= (hw & ~self.busy_hw).bit_count() * m.hardware_nodes
            self.busy_hw |= hw

    def release(self, alloc: int, nodes: int = 0) -> None:
        m = self.machine
        if self.busy_count[alloc] <= 0:
            raise ValueError(f"partition {m.partitions[alloc].name} is not busy")
        self.busy_count[alloc] -= 1
        if self.busy_count[alloc] == 0:
            blocked = self.blocked
            mask = 0
            for q in m.conflict_list[alloc]:
                blocked[q] -= 1
                if blocked[q] == 0:
                    mask |= 1 << q
            self.free_mask |= mask
            self.busy.discard(alloc)
            parts = m.partitions
            busy_hw = 0
            for p in self.busy:
                busy_hw |= parts[p].hardware
            self.busy_hw = busy_hw
            self.free_nodes = (m.all_hardware & ~busy_hw).bit_count() * m.hardware_nodes

    def copy(self) -> "PartitionState":
        other = PartitionState.__new__(PartitionState)
        other.machine = self.machine
        other.blocked = list(self.blocked)
        other.free_mask = self.free_mask
        other.busy_count = list(self.busy_count)
        other.free_nodes = self.free_nodes
        other.busy = set(self.busy)
        other.busy_hw = self.busy_hw
        return other


class PartitionedMachine(Machine):
    """A machine whose jobs run on predefined partitions.

    Args:
        partitions: the partitions, indexed 0..P-1 in a stable order.
        hardware_nodes: nodes in one hardware unit of the ``hardware`` bitsets (512 per block,
            32 per node card).
    """

    partitioned = True

    def __init__(self, name: str, partitions: Sequence[Partition], hardware_nodes: int) -> None:
        self.name = name
        self.partitions = list(partitions)
        self.hardware_nodes = hardware_nodes
        all_hw = 0
        for p in self.partitions:
            all_hw |= p.hardware
        self.all_hardware = all_hw
        self.total_nodes = all_hw.bit_count() * hardware_nodes
        n = len(self.partitions)
        self.conflict_mask: list[int] = [0] * n
        for a in range(n):
            hw = self.partitions[a].hardware
            mask = 0
            for b in range(n):
                if self.partitions[b].hardware & hw:
                    mask |= 1 << b
            self.conflict_mask[a] = mask
        self.conflict_list: list[list[int]] = [
            [b for b in range(n) if (self.conflict_mask[a] >> b) & 1] for a in range(n)
        ]
        self.sizes: list[int] = sorted({p.nodes for p in self.partitions})
        self._by_size: dict[int, list[int]] = {}
        for p in self.partitions:
            self._by_size.setdefault(p.nodes, []).append(p.index)
        self._candidates_cache: dict[int, list[int]] = {}
        self._mask_cache: dict[int, int] = {}
        self._by_name = {p.name: p.index for p in self.partitions}

    # --- sizes -------------------------------------------------------------------------------
    def allocated_nodes(self, nodes: int) -> int:
        for size in self.sizes:
            if size >= nodes:
                return size
        raise ValueError(f"a job of {nodes} nodes does not fit on {self.name} ({self.total_nodes} nodes)")

    def fits(self, nodes: int) -> bool:
        return 1 <= nodes <= self.sizes[-1]

    def candidates_for(self, nodes: int) -> list[int]:
        """Partitions of the smallest size that holds ``nodes`` nodes."""
        cached = self._candidates_cache.get(nodes)
        if cached is None:
            cached = self._by_size[self.allocated_nodes(nodes)]
            self._candidates_cache[nodes] = cached
        return cached

    def candidate_mask(self, nodes: int) -> int:
        """Bitset of ``candidates_for(nodes)``."""
        size = self.allocated_nodes(nodes)
        mask = self._mask_cache.get(size)
        if mask is None:
            mask = 0
            for p in self._by_size[size]:
                mask |= 1 << p
            self._mask_cache[size] = mask
        return mask

    def index_of(self, name: str) -> int:
        return self._by_name[name]

    def partition_names(self) -> list[str]:
        return [p.name for p in self.partitions]

    def conflicts(self, alloc_a: int, alloc_b: int) -> bool:
        return bool((self.conflict_mask[alloc_a] >> alloc_b) & 1)

    def new_state(self) -> PartitionState:
        return PartitionState(self)
