"""Machine models: flat clusters and partitioned (Mira) machines."""
from __future__ import annotations

from rtsched.limits import MAX_FLAT_NODES
from rtsched.machines.base import Machine, MachineState
from rtsched.machines.flat import FLAT, FlatCluster
from rtsched.machines.mira import AlignedMira, load_cobalt_partitions
from rtsched.machines.partitions import Partition, PartitionedMachine

__all__ = ["Machine", "MachineState", "FLAT", "FlatCluster", "AlignedMira", "load_cobalt_partitions",
           "Partition", "PartitionedMachine", "MACHINE_SPECS", "check_machine_spec", "machine_from_spec"]


MACHINE_SPECS = "mira, mira:BLOCKS, flat:N or a Cobalt partition .xml file"


def check_machine_spec(spec: str) -> tuple[str, int | None]:
    """(kind, size) of a machine spec, or ValueError naming what is wrong: ``mira`` (aligned 96
    blocks), ``mira:BLOCKS`` (1-96 blocks of 512 nodes), ``flat:N`` (N >= 1 processors), or a
    partition file ``*.xml`` (kind ``"xml"``, size None)."""
    s = str(spec).strip()
    if s.lower().endswith(".xml"):
        return "xml", None
    kind, sep, arg = s.partition(":")
    kind = kind.lower()
    if kind in ("mira", "aligned"):
        if not sep:
            return "mira", 96
        if not arg.isdigit() or not 1 <= int(arg) <= 96:
            raise ValueError(f"machine {spec!r}: mira:BLOCKS needs a whole number of 512-node blocks in 1..96")
        return "mira", int(arg)
    if kind == "flat":
        if not sep or not arg:
            raise ValueError(f"machine {spec!r}: a flat machine needs a size: flat:N (N processors)")
        if not arg.isdigit() or int(arg) < 1:
            raise ValueError(f"machine {spec!r}: flat:N needs a whole number N >= 1")
        if int(arg) > MAX_FLAT_NODES:
            raise ValueError(f"machine {spec!r}: flat:N allows at most {MAX_FLAT_NODES:,} processors "
                             "(rtsched.limits.MAX_FLAT_NODES, ten times the largest machine built)")
        return "flat", int(arg)
    raise ValueError(f"unknown machine {spec!r}; use {MACHINE_SPECS}")


def machine_from_spec(spec: str) -> Machine:
    """Build a machine from a short text spec (``check_machine_spec``)."""
    kind, size = check_machine_spec(spec)
    if kind == "xml":
        return load_cobalt_partitions(str(spec).strip())
    if kind == "mira":
        return AlignedMira(size)
    return FlatCluster(size)
