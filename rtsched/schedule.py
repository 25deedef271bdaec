"""The schedule record: what ran where and when, as a list of segments.

A segment is one contiguous occupation of an allocation by one job.  Three kinds exist:

* ``run``: useful (or later lost) computation, advancing the job's progress from
  ``progress_from`` to ``progress_to`` seconds of work (duration == progress_to - progress_from);
* ``ckpt``: a checkpoint write that saves ``progress_to`` seconds of work (progress_from == progress_to);
* ``restart``: a restart read that restores ``progress_from`` seconds of work.

``partition`` is the partition index on a partitioned machine (Mira) and -1 on a flat cluster;
``nodes`` is the number of nodes (processors) the segment occupies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal

from rtsched.errors import InputError
from rtsched.files import atomic_write

SegmentKind = Literal["run", "ckpt", "restart"]
RUN: SegmentKind = "run"
CKPT: SegmentKind = "ckpt"
RESTART: SegmentKind = "restart"


@dataclass(frozen=True, slots=True)
class Segment:
    job_id: int
    start: int  # s
    end: int  # s, exclusive
    kind: SegmentKind
    partition: int  # partition index, -1 on a flat cluster
    nodes: int  # nodes occupied
    progress_from: int = 0  # s of work done before the segment
    progress_to: int = 0  # s of work done after it

    @property
    def duration(self) -> int:
        return self.end - self.start


SEGMENT_COLUMNS = ("job_id", "start", "end", "kind", "partition", "nodes", "progress_from", "progress_to")


@dataclass(slots=True)
class Schedule:
    """All segments of one run, in the order they were produced."""

    segments: list[Segment] = field(default_factory=list)
    machine_name: str = ""

    def add(self, segment: Segment) -> None:
        if segment.end > segment.start:
            self.segments.append(segment)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.segments)

    def __len__(self) -> int:
        return len(self.segments)

    def by_job(self) -> dict[int, list[Segment]]:
        out: dict[int, list[Segment]] = {}
        for seg in self.segments:
            out.setdefault(seg.job_id, []).append(seg)
        for segs in out.values():
            segs.sort(key=lambda s: (s.start, s.end))
        return out

    def to_frame(self):  # -> pandas.DataFrame
        import pandas as pd

        segs = self.segments
        return pd.DataFrame({name: [getattr(s, name) for s in segs] for name in SEGMENT_COLUMNS},
                            columns=list(SEGMENT_COLUMNS))

    @classmethod
    def from_frame(cls, frame, machine_name: str = "") -> "Schedule":
        segs = [
            Segment(int(r.job_id), int(r.start), int(r.end), str(r.kind), int(r.partition), int(r.nodes),
                    int(r.progress_from), int(r.progress_to))
            for r in frame.itertuples(index=False)
        ]
        return cls(segs, machine_name)

    @classmethod
    def read(cls, path: str, machine_name: str = "") -> "Schedule":
        """Read a schedule written by ``write`` (CSV, or Parquet when the name ends in ``.parquet``);
        a missing column is an ``InputError`` naming the file and the column."""
        import pandas as pd

        frame = pd.read_parquet(path) if str(path).lower().endswith(".parquet") else pd.read_csv(path)
        missing = [c for c in SEGMENT_COLUMNS if c not in frame.columns]
        if missing:
            raise InputError(f"not a schedule file: no column(s) {missing}", path=str(path))
        return cls.from_frame(frame, machine_name)

    def write(self, path: str, partition_names: list[str] | None = None) -> None:
        """Write as CSV, or as Parquet when ``path`` ends in ``.parquet``.  Written atomically."""
        frame = self.to_frame()
        if partition_names is not None:
            frame["partition_name"] = [partition_names[p] if p >= 0 else "" for p in frame["partition"]]
        if str(path).lower().endswith(".parquet"):
            atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
        else:
            atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
