"""Mira (IBM Blue Gene/Q): the aligned block model and the real Cobalt partition file.

* ``AlignedMira(blocks=96)``: seed 002 §5's model.  A size of k blocks (512 nodes each) sits on
  aligned ranges [i*k, (i+1)*k) that fit in the machine; partitions conflict iff ranges overlap.
  Partition indices run by size ascending, then by offset i (the MILP uses the same order).
* ``load_cobalt_partitions(path)``: the real 294-block Mira configuration in Cobalt's XML; blocks
  are sets of node cards (32 nodes each) and conflict when they share a node card.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from rtsched.errors import InputError
from rtsched.machines.partitions import Partition, PartitionedMachine
from rtsched.machines.sizes import BLOCK_NODES, MIRA_BLOCKS, PARTITION_BLOCKS

NODE_CARD_NODES = 32


def aligned_partitions(blocks: int) -> list[Partition]:
    parts: list[Partition] = []
    for k in PARTITION_BLOCKS:
        if k > blocks:
            break
        i = 0
        while (i + 1) * k <= blocks:
            first = i * k
            hardware = ((1 << k) - 1) << first
            parts.append(Partition(len(parts), f"B{first:02d}-{first + k - 1:02d}-{k * BLOCK_NODES}", k * BLOCK_NODES,
                                   hardware, first))
            i += 1
    return parts


class AlignedMira(PartitionedMachine):
    """The aligned 512-node-block model of Mira (96 blocks) or of a smaller machine."""

    def __init__(self, blocks: int = MIRA_BLOCKS) -> None:
        if blocks < 1:
            raise ValueError("a Mira model needs at least one block")
        self.blocks = blocks
        super().__init__(f"mira-aligned-{blocks}", aligned_partitions(blocks), BLOCK_NODES)


def load_cobalt_partitions(path: str, name: str | None = None) -> PartitionedMachine:
    """Load a Cobalt BG/Q partition file (``<Partition name=...><NodeCard id=.../>``).

    Partition size = 32 nodes per listed node card.  Raises InputError naming the file (and the
    partition) on a malformed file or an empty partition.
    """
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        line = exc.position[0] if hasattr(exc, "position") else None
        raise InputError(f"not a valid partition XML file: {exc}", path=path, line=line) from exc
    except OSError as exc:
        raise InputError(f"cannot read partition file: {exc}", path=path) from exc
    card_index: dict[str, int] = {}
    raw: list[tuple[str, int]] = []
    seen: set[str] = set()
    for elem in tree.getroot().iter("Partition"):
        pname = elem.get("name")
        if not pname:
            raise InputError("a <Partition> has no name attribute", path=path, field="name")
        if pname in seen:  # schedules and logs name partitions: two of one name would be confused
            raise InputError(f"partition {pname} is defined twice", path=path, field="name")
        seen.add(pname)
        hw = 0
        for card in elem.iter("NodeCard"):
            cid = card.get("id")
            if cid is None:
                raise InputError(f"partition {pname}: a <NodeCard> has no id", path=path, field="NodeCard.id")
            hw |= 1 << card_index.setdefault(cid, len(card_index))
        if hw == 0:
            raise InputError(f"partition {pname} lists no node cards", path=path, field="NodeCard")
        raw.append((pname, hw))
    if not raw:
        raise InputError("no <Partition> elements found", path=path)
    # Stable order: by size, then name (so indices do not depend on XML order).
    raw.sort(key=lambda item: (item[1].bit_count(), item[0]))
    parts = [Partition(i, n, hw.bit_count() * NODE_CARD_NODES, hw) for i, (n, hw) in enumerate(raw)]
    return PartitionedMachine(name or os.path.splitext(os.path.basename(path))[0], parts, NODE_CARD_NODES)
