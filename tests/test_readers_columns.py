"""The SWF reader's column store (issue 25): the whole-number block parser, ``JobColumns`` and the
lazy ``Workload``.  Every job the columns give is the ``Job`` that ``Job(...)`` builds, a bad line
deep in a large file still names its file, line and field, and a workload answers its length,
span and columns without building a ``Job`` per job."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtsched.errors import InputError
from rtsched.io import read_swf
from rtsched.io.numbers import NUMBER, parse_block
from rtsched.io.swf import SWF_FIELDS
from rtsched.jobs import BATCH, MAX_TIME_S, RT, Job, JobColumns, Workload

# Tokens of digits and signs only: the whole-number path's input, malformed ones included
# ("-", "1-2", "+-3", "--", "4+").
SIGNED = st.text("0123456789+-", min_size=1, max_size=5)


def reference(text: str, ncols: int) -> np.ndarray | None:
    """What a block must parse to: ``float`` of each token when every line is ``ncols`` numbers."""
    lines = text.split("\n")[:-1]
    if not lines or any(len(line.split()) != ncols for line in lines):
        return None
    if not all(NUMBER.fullmatch(t.encode()) for line in lines for t in line.split()):
        return None
    return np.array([[float(t) for t in line.split()] for line in lines])


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(SIGNED, min_size=2, max_size=4), min_size=1, max_size=12),
       sep=st.sampled_from([" ", "  ", "\t"]), end=st.sampled_from(["\n", " \n", "\r\n"]))
def test_whole_number_blocks_match_float_or_are_refused(rows, sep, end):
    text = "".join(sep.join(r) + end for r in rows)
    values = parse_block(text.encode(), 3)
    expected = reference(text, 3)
    if expected is None:
        assert values is None
    else:
        assert values is not None and np.array_equal(values, expected)


@pytest.mark.parametrize("block", [b"1 2 -\n", b"- 1 2\n", b"1 +- 2\n", b"1 2 3\n4 5\n", b"1 2\n3 4 5 6\n",
                                   b"1 2 3\n\n", b"1 2 3-\n", b"1 2+3 4\n"])
def test_whole_number_parser_refuses(block):
    """A lone sign is 0 to NumPy's text reader: the checks before it must refuse these."""
    assert parse_block(block, 3) is None


def test_whole_number_parser_leaves_long_numbers_to_float():
    """10^15 and more in magnitude: exactly what ``float`` reads (the general path)."""
    values = parse_block(b"123456789012345678 -1 2\n", 3)
    assert values is not None and values.tolist() == [[float("123456789012345678"), -1.0, 2.0]]


# ------------------------------------------------------------------------- JobColumns
def columns_of(rows: list[tuple[int, int, int, int, int, bool]]) -> JobColumns:
    a = np.array([r[:5] for r in rows], dtype=np.int64).reshape(len(rows), 5)
    n = len(rows)
    return JobColumns(a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy(), a[:, 3].copy(), a[:, 4].copy(),
                      np.arange(n, dtype=np.int64) % 3 - 1, np.full(n, 7, dtype=np.int64),
                      np.array([str(i % 2) if i % 3 else "" for i in range(n)], dtype=object),
                      np.array([r[5] for r in rows], dtype=bool), np.array([i % 4 != 0 for i in range(n)], dtype=bool))


ROWS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, MAX_TIME_S), st.integers(1, MAX_TIME_S),
                          st.integers(1, 70000), st.integers(1, 5000), st.booleans()), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(rows=ROWS)
def test_columns_build_the_jobs_job_builds(rows):
    cols = columns_of(rows)
    jobs = cols.jobs()
    expected = [Job(r[0], r[1], r[2], r[3], r[4], RT if r[5] else BATCH, i % 3 - 1, 7, str(i % 2) if i % 3 else "",
                    i % 4 != 0) for i, r in enumerate(rows)]
    assert jobs == expected
    assert all(type(j.id) is int and type(j.user) is int and type(j.checkpointable) is bool for j in jobs)
    assert cols.jobs() is jobs  # built once


@pytest.mark.parametrize("row, message", [
    ((1, 0, 0, 5, 1, False), "runtime must be > 0 s"),
    ((1, 0, 5, 0, 1, False), "walltime must be >= 1 s"),
    ((1, 0, 5, 5, 0, False), "nodes must be >= 1"),
    ((1, -3, 5, 5, 1, False), "submit must be >= 0 s"),
    ((1, MAX_TIME_S + 1, 5, 5, 1, False), "must be <= MAX_TIME_S"),
])
def test_columns_refuse_what_job_refuses(row, message):
    cols = columns_of([(9, 0, 1, 1, 1, False), row])
    with pytest.raises(ValueError, match=message) as err:
        cols.jobs()
    assert str(err.value).startswith("job 1:")


def test_lazy_workload_answers_from_its_columns():
    cols = columns_of([(3, 20, 5, 5, 2, True), (1, 10, 5, 6, 1, False), (2, 10, 7, 7, 4, False)])
    wl = Workload.of_columns(cols, name="w", max_nodes=8)
    assert len(wl) == 3 and wl.span == (10, 20) and wl.count(RT) == 1 and wl.count(BATCH) == 2
    assert wl.columns()["id"].tolist() == [1, 2, 3]  # sorted by (submit, id)
    assert wl.table is not None  # nothing above built a Job
    assert [j.id for j in wl.jobs] == [1, 2, 3] and wl.table is None
    eager = Workload(list(reversed(wl.jobs)), name="w", max_nodes=8)
    assert eager == wl and eager.columns()["nodes"].tolist() == wl.columns()["nodes"].tolist() == [1, 4, 2]


def test_released_columns_keep_their_jobs():
    cols = columns_of([(1, 10, 5, 5, 1, False), (2, 20, 5, 5, 1, True)])
    wl = Workload.of_columns(cols, name="w", release=True)
    jobs = wl.jobs
    assert cols.id is None and cols.submit is None and cols.jobs() == jobs == [Job(1, 10, 5, 5, 1, BATCH, -1, 7, "", False),
                                                                               Job(2, 20, 5, 5, 1, RT, 0, 7, "1")]
    kept = columns_of([(1, 10, 5, 5, 1, False)])
    Workload.of_columns(kept, name="w").jobs  # noqa: B018  (not released: the caller's columns stay)
    assert kept.id.tolist() == [1]


def test_lazy_workload_refuses_duplicate_ids():
    cols = columns_of([(1, 10, 5, 5, 1, False), (1, 20, 5, 5, 1, False)])
    with pytest.raises(ValueError, match="duplicate job id 1"):
        Workload.of_columns(cols, name="w")


# ------------------------------------------------------------------------- the reader, large files
def big_swf(n: int) -> list[str]:
    return [f"{j} {10 * j} -1 100 4 -1 -1 4 200 -1 1 {j % 5} 1 -1 {j % 3} -1 -1 -1" for j in range(1, n + 1)]


@pytest.mark.parametrize("token, field, message", [
    ("-", "requested time", "not a number: '-'"),
    ("4-2", "allocated processors", "not a number: '4-2'"),
    ("-7", "run time", "the only negative value allowed is -1"),
])
def test_a_bad_token_deep_in_a_large_file_names_line_and_field(tmp_path, token, field, message):
    lines = ["; MaxProcs: 64"] + big_swf(40_000)  # about 2.6 MB: many blocks on the fast path
    bad = 31_234
    fields = lines[bad].split()
    fields[SWF_FIELDS.index(field)] = token
    lines[bad] = " ".join(fields)
    path = tmp_path / "big.swf"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_swf(str(path))
    assert err.value.line == bad + 1 and err.value.field == field and err.value.path == str(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_large_file_jobs_equal_the_lines(tmp_path):
    lines = ["; MaxProcs: 64", "; UnixStartTime: 5"] + big_swf(30_000)
    lines[5000:5000] = ["; a comment between jobs", ""]
    path = tmp_path / "big.swf"
    path.write_text("\n".join(lines) + "\n")
    wl = read_swf(str(path))
    assert wl.table is not None and len(wl) == 30_000 and wl.start_time == 5
    expected = [Job(j, 10 * j, 100, 200, 4, BATCH, j % 5, 1, str(j % 3)) for j in range(1, 30_001)]
    assert wl.jobs == expected and wl.table is None
    assert wl.header.as_read[777] is wl.jobs[776]  # the columns are let go; the Job objects stay
    assert wl.header.records[30_000] == tuple(lines[-1].split())


def test_out_of_order_lines_with_first_n(tmp_path):
    """Lines out of (submit, id) order and a ``first_n`` cut: the first jobs by submit time, sorted,
    each the very object ``as_read`` maps its id to, with its own line's record."""
    rows = {j: f"{j} {submit} -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"
            for j, submit in [(1, 50), (2, 10), (3, 40), (4, 10), (5, 30)]}
    path = tmp_path / "shuffled.swf"
    path.write_text("; MaxProcs: 64\n" + "\n".join(rows.values()) + "\n")
    wl = read_swf(str(path), first_n=3)
    assert [(j.id, j.submit) for j in wl.jobs] == [(2, 10), (4, 10), (5, 30)]
    assert all(wl.header.as_read[j.id] is j for j in wl.jobs)
    assert all(wl.header.records[j.id] == tuple(rows[j.id].split()) for j in wl.jobs)
    assert wl.header.cleaning["cut_by_first_n"] == 2
