"""The RL traces go through the one SWF reader (rtsched.io) with RLScheduler's cleaning options."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_data
from rtsched.errors import InputError
from rtsched.io import read_swf_table
from rtsched.rl.trace import RL_CLEANING, load_trace, read_rl_trace


def write(tmp_path: Path, text: str, name: str = "t.swf") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def row(jid, submit=0, run=100, alloc=4, req=4, reqtime=200, reqmem=-1, user=1, group=2, exe=7, queue=1) -> str:
    f = [jid, submit, -1, run, alloc, -1, -1, req, reqtime, reqmem, 1, user, group, exe, queue, -1, -1, -1]
    return " ".join(str(x) for x in f)


def test_rl_cleaning_rules(tmp_path):
    text = "; MaxNodes: 8\n; MaxProcs: 16\n" + "\n".join([
        row(3, submit=5, run=50, reqtime=0),  # requested time 0 -> 1 s; runtime 50 > 1 is kept
        row(1, submit=9, run=100, alloc=4, req=6, reqtime=-1, reqmem=512),  # procs max(4, 6); walltime = runtime
        row(2, submit=1, run=-1),  # unknown runtime: dropped (or 10 s with negative_runtime=10)
        row(4, submit=2, run=0),  # never ran: dropped
    ]) + "\n"
    tr = read_rl_trace(write(tmp_path, text))
    assert [j.id for j in tr.jobs] == [1, 3]  # by job number, not by submit time
    assert [(j.runtime, j.walltime) for j in tr.jobs] == [(100, 100), (50, 1)]
    assert list(tr.procs) == [6, 4] and list(tr.nodes) == [3, 2]  # 2 processors a node
    assert list(tr.memory) == [512, -1] and list(tr.executable) == [7, 7]
    assert (tr.max_nodes, tr.max_procs) == (8, 16)
    with10 = read_rl_trace(write(tmp_path, text), negative_runtime=10)
    assert [(j.id, j.runtime, j.walltime) for j in with10.jobs] == [(1, 100, 100), (2, 10, 200), (3, 50, 1)]


def test_rl_machine_from_a_partial_header(tmp_path):
    procs_only = read_rl_trace(write(tmp_path, "; MaxProcs: 32\n" + row(1, alloc=5, req=3) + "\n"))
    assert [j.nodes for j in procs_only.jobs] == [5]  # no MaxNodes: processors are nodes
    assert (procs_only.max_nodes, procs_only.max_procs) == (5, 32)  # the authors' fallback: the largest job
    bare = read_rl_trace(write(tmp_path, row(1, alloc=5, req=3) + "\n" + row(2, alloc=9, req=2) + "\n"))
    assert (bare.max_nodes, bare.max_procs) == (9, 9)


@pytest.mark.parametrize("line, field", [
    (row(2) + " 0", "field 19"),  # the old parser took the first 14 of any >= 14 fields
    (row(2, alloc="12.5"), "allocated processors"),  # and truncated fractional sizes
    (row(2, req=-3), "requested processors"),
    (row(2, submit="1e30"), "submit time"),
])
def test_rl_traces_refuse_what_the_old_parser_accepted(tmp_path, line, field):
    with pytest.raises(InputError) as err:
        read_rl_trace(write(tmp_path, row(1) + "\n" + line + "\n", "bad.swf"))
    assert (err.value.line, err.value.field) == (2, field) and "bad.swf" in str(err.value)


def test_rl_trace_from_a_gzip_file_and_load_trace(tmp_path):
    import gzip

    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress((row(1) + "\n" + row(2, submit=3) + "\n").encode()))
    tr = load_trace(str(path))
    assert tr.name == "t" and len(tr) == 2


def _oracle(path: Path) -> dict[str, list[int]]:
    """RLScheduler's cleaning written out plainly, line by line (an independent check)."""
    head: dict[str, str] = {}
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith(";"):
            key, _, value = line[1:].partition(":")
            head.setdefault(key.strip(), value.strip())
        elif line.strip():
            rows.append([float(x) for x in line.split()])
    nodes_n, procs_n = int(head.get("MaxNodes", 0)), int(head.get("MaxProcs", 0))
    out: dict[str, list[int]] = {k: [] for k in ("id", "submit", "runtime", "walltime", "procs", "nodes", "memory")}
    for v in sorted(rows, key=lambda r: r[0]):
        run = int(v[3])
        if run <= 0:
            continue
        procs = max(int(v[4]), int(v[7]))
        nodes = math.ceil(procs * nodes_n / procs_n) if nodes_n and procs_n else procs
        for key, value in zip(out, (int(v[0]), int(v[1]), run, run if v[8] == -1 else max(int(v[8]), 1), procs,
                                    nodes, int(v[9]))):
            out[key].append(value)
    return out


@pytest.mark.needs_data
@pytest.mark.parametrize("name", ["lublin_256.swf", "lublin_256_new2.swf", "sdsc-sp2-1998-first4961.swf"])
def test_rl_trace_matches_a_plain_reading(name):
    path = shared_data("traces", "swf", name)
    tr = read_rl_trace(str(path))
    expected = _oracle(path)
    assert [j.id for j in tr.jobs] == expected["id"]
    for col in ("submit", "runtime", "walltime", "procs", "nodes", "memory"):
        assert getattr(tr, col).tolist() == expected[col], col
    table = read_swf_table(str(path), RL_CLEANING, fields=("run time",))
    assert sorted(np.round(table.columns["run time"]).astype(int).tolist()) == sorted(expected["runtime"])
