"""Machine models: flat clusters and partitioned (Mira) machines."""
from __future__ import annotations

from rtsched.machines.base import Machine, MachineState
from rtsched.machines.flat import FLAT, FlatCluster
from rtsched.machines.mira import AlignedMira, load_cobalt_partitions
from rtsched.machines.partitions import Partition, PartitionedMachine

__all__ = ["Machine", "MachineState", "FLAT", "FlatCluster", "AlignedMira", "load_cobalt_partitions",
           "Partition", "PartitionedMachine", "machine_from_spec"]


def machine_from_spec(spec: str) -> Machine:
    """Build a machine from a short text spec.

    ``mira`` (aligned 96 blocks), ``mira:16`` (aligned, 16 blocks), ``flat:256``, or the path of a
    Cobalt partition XML file (``*.xml``).
    """
    s = spec.strip()
    if s.endswith(".xml"):
        return load_cobalt_partitions(s)
    kind, _, arg = s.partition(":")
    kind = kind.lower()
    if kind in ("mira", "aligned"):
        return AlignedMira(int(arg) if arg else 96)
    if kind == "flat":
        if not arg:
            raise ValueError("flat machine needs a size: flat:N")
        return FlatCluster(int(arg))
    raise ValueError(f"unknown machine {spec!r}; use mira, mira:BLOCKS, flat:N or a partition .xml file")
