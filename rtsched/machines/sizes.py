"""Mira's partition sizes (seed 002 §5.2; DESIGN.md)."""
from __future__ import annotations

BLOCK_NODES = 512  # nodes in one Mira block (a midplane)
MIRA_BLOCKS = 96  # 49,152 nodes
MIRA_NODES = MIRA_BLOCKS * BLOCK_NODES
# Partition sizes in blocks; a size of k blocks sits on aligned ranges [i*k, (i+1)*k).
PARTITION_BLOCKS: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96)
MIRA_PARTITION_NODES: tuple[int, ...] = tuple(k * BLOCK_NODES for k in PARTITION_BLOCKS)


def partition_blocks_for(nodes: int, machine_blocks: int = MIRA_BLOCKS) -> int:
    """Smallest partition size (in blocks) holding ``nodes`` nodes on a machine of that many blocks.

    Raises ValueError when the job is bigger than the machine.
    """
    for k in PARTITION_BLOCKS:
        if k > machine_blocks:
            break
        if k * BLOCK_NODES >= nodes:
            return k
    raise ValueError(f"{nodes} nodes do not fit on a {machine_blocks}-block ({machine_blocks * BLOCK_NODES}-node) machine")


def round_up_to_partition(nodes: int, machine_blocks: int = MIRA_BLOCKS) -> int:
    """Nodes of the smallest partition holding ``nodes`` nodes."""
    return partition_blocks_for(nodes, machine_blocks) * BLOCK_NODES
