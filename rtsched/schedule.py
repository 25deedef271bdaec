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

import struct
from array import array
from typing import Iterable, Iterator, Literal, NamedTuple

import numpy as np

from rtsched.errors import InputError
from rtsched.files import atomic_write

SegmentKind = Literal["run", "ckpt", "restart"]
RUN: SegmentKind = "run"
CKPT: SegmentKind = "ckpt"
RESTART: SegmentKind = "restart"
KINDS: tuple[SegmentKind, ...] = (RUN, CKPT, RESTART)  # a segment's kind code is its index here
KIND_CODE = {kind: code for code, kind in enumerate(KINDS)}


class Segment(NamedTuple):
    """One segment (module docstring).  A named tuple: built from the schedule's columns on
    demand, and a tuple is built about 4x faster than a frozen dataclass."""

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
_INT_COLUMNS = ("job_id", "start", "end", "partition", "nodes", "progress_from", "progress_to")


# One segment's fields as the bytes of its row: ``rows.frombytes(pack_row(...))`` records a segment
# in about 40 % of the time ``rows.extend`` of a tuple takes (which converts and grows item by item).
pack_row = struct.Struct("@8q").pack


class SegmentList:
    """The segments of a schedule, stored as machine integers (``rows``: 8 a segment, in
    ``SEGMENT_COLUMNS`` order, the kind as its code in ``KINDS``): 64 bytes a segment instead of a
    Python object and its integers, about 190.  The core records a segment with one
    ``rows.frombytes(pack_row(...))`` (two C calls, against eight appends to separate columns).

    A sequence of ``Segment``s to its readers: ``len``, indexing, iteration and ``==`` build the
    named tuples on demand; ``append``/``extend``/``sort`` keep the rows.  ``column(name)`` is
    one field as a NumPy array (kind: the codes of ``KINDS``, int8), for the validator and the metrics.
    """

    __slots__ = ("rows",)
    WIDTH = len(SEGMENT_COLUMNS)

    def __init__(self, segments: Iterable[Segment] = ()) -> None:
        self.rows = array("q")
        self.extend(segments)

    def append(self, seg: Segment) -> None:
        job_id, start, end, kind, partition, nodes, p_from, p_to = seg
        self.rows.frombytes(pack_row(job_id, start, end, KIND_CODE[kind], partition, nodes, p_from, p_to))

    def add(self, job_id: int, start: int, end: int, kind_code: int, partition: int, nodes: int, p_from: int,
            p_to: int) -> None:
        """Append one segment given as fields (``kind_code``: index in ``KINDS``)."""
        self.rows.frombytes(pack_row(job_id, start, end, kind_code, partition, nodes, p_from, p_to))

    def extend(self, segments: Iterable[Segment]) -> None:
        for seg in segments:
            self.append(seg)

    def __len__(self) -> int:
        return len(self.rows) // 8

    def _at(self, i: int) -> Segment:
        job_id, start, end, kind, partition, nodes, p_from, p_to = self.rows[8 * i:8 * i + 8]
        return Segment(job_id, start, end, KINDS[kind], partition, nodes, p_from, p_to)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("segment index out of range")
        return self._at(index)

    def __iter__(self) -> Iterator[Segment]:
        kinds = KINDS
        r = self.rows
        return map(Segment._make, zip(r[0::8], r[1::8], r[2::8], (kinds[k] for k in r[3::8]), r[4::8], r[5::8],
                                      r[6::8], r[7::8]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SegmentList):
            return self.rows == other.rows
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"SegmentList({list(self)!r})"

    def sort(self, *, key=None, reverse: bool = False) -> None:
        segs = sorted(self, key=key, reverse=reverse)
        self.__init__(segs)

    def column(self, name: str) -> np.ndarray:
        """Field ``name`` of every segment, in order, as a NumPy array (a copy)."""
        col = np.frombuffer(self.rows, dtype=np.int64)[SEGMENT_COLUMNS.index(name)::8] if self.rows else \
            np.zeros(0, dtype=np.int64)
        return col.astype(np.int8) if name == "kind" else col.copy()


class Schedule:
    """All segments of one run, in the order they were produced (``segments``: a ``SegmentList``)."""

    __slots__ = ("segments", "machine_name")

    def __init__(self, segments: Iterable[Segment] = (), machine_name: str = "") -> None:
        self.segments = segments if isinstance(segments, SegmentList) else SegmentList(segments)
        self.machine_name = machine_name

    def __repr__(self) -> str:
        return f"Schedule({len(self.segments)} segments, machine_name={self.machine_name!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return self.machine_name == other.machine_name and self.segments == other.segments

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
        data = {name: segs.column(name) for name in _INT_COLUMNS}
        data["kind"] = np.array(KINDS, dtype=object)[segs.column("kind")]
        return pd.DataFrame(data, columns=list(SEGMENT_COLUMNS))

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
