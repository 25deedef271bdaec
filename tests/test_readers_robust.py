"""Trace readers on bad input: values out of range, corrupt files and encodings, empty traces,
standard input, streaming (the first bad line is reported without reading the rest)."""
from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from rtsched.errors import InputError
from rtsched.io import (MAX_ID, MAX_SIZE, MAX_TIME_S, SWF_FIELDS, cleaning_counts, read_alcf, read_cobalt,
                        read_swf, read_workload, write_swf)
from rtsched.io import source as source_module
from rtsched.io.cobalt import parse_walltime
from rtsched.jobs import Job
from rtsched.traces_stats import trace_statistics

FIELDS = ["1", "0", "-1", "100", "4", "-1", "-1", "4", "200", "-1", "1", "1", "1", "-1", "1", "-1", "-1", "-1"]


def swf_row(jid: int, **changes: str) -> str:
    """One SWF job line; ``changes`` set fields by SWF name with spaces as underscores."""
    f = list(FIELDS)
    f[0] = str(jid)
    f[1] = str(10 * jid)
    for key, value in changes.items():
        f[SWF_FIELDS.index(key.replace("_", " "))] = value
    return " ".join(f)


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def error_of(fn, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as err:
        fn(*args, **kwargs)
    assert "\n" not in str(err.value)  # one line
    return err.value


GOOD = "; MaxProcs: 64\n" + "\n".join(swf_row(i) for i in (1, 2, 3)) + "\n"
COBALT = ("01/18/2018 19:46:07;E;{jid};qtime=1000100.0 Resource_List.nodect=512 Resource_List.walltime={wall} "
          "start=1000200.0 end=1001000.0 runtime=800.0\n")
ALCF_HEAD = "COBALT_JOBID,START_TIMESTAMP,WALLTIME_SECONDS,RUNTIME_SECONDS,NODES_REQUESTED,ELIGIBLE_WAIT_SECONDS\n"
ALCF_ROW = "{jid},{start},7200,3600,512,{wait}\n"


def cobalt_log(jid: int = 1, wall: str = "01:00:00", stamp: str = "01/18/2018 19:46:07") -> str:
    return COBALT.format(jid=jid, wall=wall).replace("01/18/2018 19:46:07", stamp)


def alcf_csv(rows: list[tuple]) -> str:
    return ALCF_HEAD + "".join(ALCF_ROW.format(jid=j, start=s, wait=w) for j, s, w in rows)


# ------------------------------------------------------------------------------ SWF values
class TestSwfValues:
    def test_fractional_size_refused(self, tmp_path):
        p = write(tmp_path, "t.swf", GOOD + swf_row(4, allocated_processors="12.5") + "\n")
        e = error_of(read_swf, p)
        assert (e.line, e.field) == (5, "allocated processors") and "'12.5' is not a whole number" in str(e)
        e = error_of(read_swf, write(tmp_path, "r.swf", swf_row(1, requested_processors="3.0001") + "\n"))
        assert e.field == "requested processors"

    def test_whole_float_size_accepted(self, tmp_path):
        wl = read_swf(write(tmp_path, "t.swf", swf_row(1, requested_processors="8.0", allocated_processors="8.")
                            + "\n"))
        assert wl[0].nodes == 8

    @pytest.mark.parametrize("field", [f for f in SWF_FIELDS if f not in ("job number", "submit time")])
    def test_minus_one_is_the_only_negative(self, tmp_path, field):
        ok = swf_row(2, **{field.replace(" ", "_"): "-1"})
        # -1 is "unknown" everywhere but the job number and the submit time: the line reads
        # (it may then be dropped by cleaning, e.g. a run time of -1).
        p = write(tmp_path, "ok.swf", swf_row(1) + "\n" + ok + "\n")
        assert len(read_swf(p)) >= 1
        bad = write(tmp_path, "bad.swf", swf_row(1) + "\n" + swf_row(2, **{field.replace(" ", "_"): "-2"}) + "\n")
        e = error_of(read_swf, bad)
        assert (e.line, e.field) == (2, field) and "only negative value allowed is -1" in str(e)

    @pytest.mark.parametrize("field", ["job number", "submit time"])
    def test_no_unknown_job_number_or_submit(self, tmp_path, field):
        p = write(tmp_path, "t.swf", swf_row(1) + "\n" + swf_row(2, **{field.replace(" ", "_"): "-1"}) + "\n")
        assert error_of(read_swf, p).field == field

    @pytest.mark.parametrize("field, value, bound", [
        ("submit time", "1e30", "MAX_TIME_S"), ("run time", "10000000001", "MAX_TIME_S"),
        ("requested time", "1e11", "MAX_TIME_S"), ("wait time", "1e300", "MAX_TIME_S"),
        ("requested processors", str(MAX_SIZE + 1), "MAX_SIZE"), ("user id", "1e16", "MAX_ID"),
        ("requested memory", "1e16", "MAX_ID"), ("job number", "1152921504606846976", "MAX_ID"),
    ])
    def test_values_above_the_documented_maxima(self, tmp_path, field, value, bound):
        p = write(tmp_path, "t.swf", GOOD + swf_row(9, **{field.replace(" ", "_"): value}) + "\n")
        e = error_of(read_swf, p)
        assert (e.line, e.field) == (5, field) and bound in str(e)

    def test_values_at_the_maxima_are_read(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_row(MAX_ID, submit_time=str(MAX_TIME_S - 10), run_time="10",
                                            requested_time=str(MAX_TIME_S), requested_processors=str(MAX_SIZE),
                                            user_id=str(MAX_ID)) + "\n")
        (job,) = read_swf(p).jobs
        assert (job.id, job.submit, job.walltime, job.nodes, job.user) == (MAX_ID, MAX_TIME_S - 10, MAX_TIME_S,
                                                                          MAX_SIZE, MAX_ID)

    @pytest.mark.parametrize("token, what", [("1e999", "finite"), ("nan", "not a number"), ("inf", "not a number"),
                                             ("1_000", "not a number"), ("\u0661\u0662", "not a number"),
                                             ("0x10", "not a number"), ("1.2.3", "not a number"),
                                             ("--1", "not a number"), ("5-", "not a number")])
    def test_not_numbers(self, tmp_path, token, what):
        p = write(tmp_path, "t.swf", swf_row(1) + "\n" + swf_row(2, run_time=token) + "\n")
        e = error_of(read_swf, p)
        assert (e.line, e.field) == (2, "run time") and what in str(e)

    @pytest.mark.parametrize("n", [1, 17, 19, 30])
    def test_exactly_18_fields(self, tmp_path, n):
        tokens = (FIELDS * 2)[:n]
        p = write(tmp_path, "t.swf", GOOD + " ".join(tokens) + "\n")
        e = error_of(read_swf, p)
        assert e.line == 5 and f"expected 18 SWF fields, found {n}" in str(e)
        assert e.field == (SWF_FIELDS[n] if n < 18 else "field 19")

    def test_numbers_in_every_form(self, tmp_path):
        # signs, leading zeros, points, exponents and padding all read as float() reads them
        line = "  0007\t+15  -1 100.4  4  1e1 -1 +4. 2.5e2 -1.0 1 001 1 -1 1 -1 -1 .5 \r\n"
        wl = read_swf(write(tmp_path, "t.swf", line))
        (job,) = wl.jobs
        assert (job.id, job.submit, job.runtime, job.walltime, job.nodes, job.user) == (7, 15, 100, 250, 4, 1)
        assert wl.header.records[7] == tuple(line.split())

    def test_fractional_times_round(self, tmp_path):
        wl = read_swf(write(tmp_path, "t.swf", swf_row(1, submit_time="9.99", run_time="99.5",
                                                       requested_time="200.49") + "\n"))
        assert (wl[0].submit, wl[0].runtime, wl[0].walltime) == (9, 100, 200)  # floor, halves up, nearest

    def test_machine_keys_after_the_first_job(self, tmp_path):
        p = write(tmp_path, "t.swf", GOOD + "; MaxNodes: 4\n")
        e = error_of(read_swf, p)
        assert (e.line, e.field) == (5, "MaxNodes") and "before the first job line" in str(e)
        later_note = read_swf(write(tmp_path, "n.swf", GOOD + "; Note: fine\n"))
        assert later_note.header["Note"] == "fine" and len(later_note) == 3

    def test_header_numbers(self, tmp_path):
        for value, what in (("inf", "not a number"), ("1e12", "MAX_SIZE"), ("many", "not a number")):
            e = error_of(read_swf, write(tmp_path, "t.swf", f"; MaxProcs: {value}\n" + swf_row(1) + "\n"))
            assert (e.line, e.field) == (1, "MaxProcs") and what in str(e)


class TestSwfErrorOrder:
    """The error is the first bad line's, whatever the rule (parse, value, cleaning, size)."""

    def test_value_error_before_a_later_parse_error(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_row(1) + "\n" + swf_row(2, wait_time="-3") + "\n1 2 3\n")
        assert error_of(read_swf, p).line == 2

    def test_cleaning_error_before_a_later_value_error(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_row(1, run_time="300", requested_time="100") + "\n"
                  + swf_row(2, wait_time="-3") + "\n")
        e = error_of(read_swf, p, runtime_above_walltime="raise")
        assert (e.line, e.field) == (1, "run time")

    def test_size_error_before_a_later_runtime_error(self, tmp_path):
        p = write(tmp_path, "t.swf", "; MaxProcs: 8\n" + swf_row(1, requested_processors="9") + "\n"
                  + swf_row(2, run_time="300", requested_time="100") + "\n")
        e = error_of(read_swf, p, runtime_above_walltime="raise")
        assert (e.line, e.field) == (2, "requested processors")

    def test_parse_error_before_a_later_duplicate(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_row(1) + "\n" + "x\n" + swf_row(1) + "\n")
        assert error_of(read_swf, p).line == 2

    def test_duplicates_in_and_out_of_order(self, tmp_path):
        rows = [swf_row(j) for j in (5, 6, 7, 3, 8, 6)]
        e = error_of(read_swf, write(tmp_path, "t.swf", "\n".join(rows) + "\n"))
        assert (e.line, e.field) == (6, "job number") and "duplicate job number 6 (first on line 2)" in str(e)


# -------------------------------------------------------------------------- blocks, streaming
@pytest.fixture
def tiny_blocks(monkeypatch):
    """Read 64 bytes at a time, so that small files exercise every path between blocks."""
    monkeypatch.setattr(source_module, "BLOCK_BYTES", 64)


def _mixed_swf(n: int = 60) -> str:
    lines = ["; Version: 2.2", "; MaxProcs: 64", "; Note: a", ";   continued", ""]
    for j in range(1, n + 1):
        lines.append(swf_row(j, run_time=str(j % 7 - 1), requested_time=str(j % 5 - 1) if j % 3 else "300",
                             requested_processors=str(1 + j % 64), average_CPU_time="1.25" if j % 4 else "-1"))
        if j % 17 == 0:
            lines += ["", "   ", "; a comment between jobs"]
    return "\n".join(lines) + "\n"


class TestStreaming:
    def test_small_blocks_read_the_same(self, tmp_path, monkeypatch):
        p = write(tmp_path, "t.swf", _mixed_swf())
        whole = read_swf(p)
        monkeypatch.setattr(source_module, "BLOCK_BYTES", 64)
        pieces = read_swf(p)
        assert pieces.jobs == whole.jobs and len(whole) > 20
        assert cleaning_counts(pieces) == cleaning_counts(whole)
        assert pieces.header.lines == whole.header.lines and dict(pieces.header) == dict(whole.header)
        assert dict(pieces.header.records) == dict(whole.header.records)

    def test_error_lines_across_blocks(self, tmp_path, tiny_blocks):
        rows = [swf_row(j) for j in range(1, 40)]
        rows[25] = swf_row(26, requested_processors="2.5")
        e = error_of(read_swf, write(tmp_path, "t.swf", "\n".join(rows) + "\n"))
        assert (e.line, e.field) == (26, "requested processors")
        rows[25] = swf_row(3)
        assert "first on line 3" in str(error_of(read_swf, write(tmp_path, "d.swf", "\n".join(rows) + "\n")))

    def test_first_bad_line_reported_without_reading_the_rest(self, monkeypatch):
        # A 200 MB trace on stdin whose 4th line is bad: the error comes after the first block.
        head = (swf_row(1) + "\n" + swf_row(2) + "\n" + swf_row(3) + "\n" + swf_row(4, run_time="x") + "\n").encode()
        stream = _CountingStream(head, swf_row(5).encode() + b"\n", total=200 << 20)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(stream)))
        e = error_of(read_workload, "-", "swf")
        assert (e.path, e.line, e.field) == ("<stdin>", 4, "run time")
        assert stream.served <= 4 * source_module.BLOCK_BYTES


class _CountingStream(io.RawIOBase):
    """``head`` then ``filler`` repeated up to ``total`` bytes, generated on demand; counts what was read."""

    def __init__(self, head: bytes, filler: bytes, total: int) -> None:
        self.head, self.filler, self.total, self.served = head, filler, total, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        if self.served >= self.total:
            return 0
        n = min(len(buf), self.total - self.served)
        reps = n // len(self.filler) + 2
        data = (self.head + self.filler * reps) if self.served == 0 else self.filler * reps
        chunk = data[:n]
        buf[:n] = chunk
        self.served += n
        return n


# ------------------------------------------------------------------------------ corrupt input
READERS = {"swf": (GOOD, "t.swf"), "cobalt": (cobalt_log(), "t.log"),
           "alcf": (alcf_csv([(1, "2018-01-01 01:00:00", 10)]), "t.csv")}


@pytest.mark.parametrize("fmt", list(READERS))
class TestCorruptInput:
    def test_good_file_and_gzip(self, tmp_path, fmt):
        text, name = READERS[fmt]
        plain = read_workload(write(tmp_path, name, text))
        packed = read_workload(write(tmp_path, name + ".gz", gzip.compress(text.encode())))
        assert plain.jobs == packed.jobs and len(plain) >= 1
        hidden = read_workload(write(tmp_path, "other.dat", gzip.compress(text.encode())), fmt)  # by magic bytes
        assert hidden.jobs == plain.jobs

    def test_truncated_gzip(self, tmp_path, fmt):
        text, name = READERS[fmt]
        data = gzip.compress((text * 50).encode())
        e = error_of(read_workload, write(tmp_path, name + ".gz", data[: len(data) // 2]))
        assert name + ".gz" in str(e) and "truncated" in str(e)

    def test_corrupt_gzip(self, tmp_path, fmt):
        text, name = READERS[fmt]
        data = bytearray(gzip.compress(text.encode()))
        data[-6] ^= 0xFF  # the CRC no longer matches
        e = error_of(read_workload, write(tmp_path, name + ".gz", bytes(data)))
        assert "gzip" in str(e)

    def test_fake_gz(self, tmp_path, fmt):
        text, name = READERS[fmt]
        e = error_of(read_workload, write(tmp_path, name + ".gz", text))
        assert "not gzip" in str(e) and name + ".gz" in str(e)

    @pytest.mark.parametrize("encoding, what", [("utf-16", "UTF-16"), ("utf-32", "UTF-32"), ("utf-16-le", "NUL"),
                                                ("utf-16-be", "NUL")])
    def test_wide_encodings(self, tmp_path, fmt, encoding, what):
        text, name = READERS[fmt]
        e = error_of(read_workload, write(tmp_path, name, text.encode(encoding)))
        assert "encoding" in str(e) and what in str(e) and e.line == 1

    def test_utf8_bom_is_skipped(self, tmp_path, fmt):
        text, name = READERS[fmt]
        assert read_workload(write(tmp_path, name, text.encode("utf-8-sig"))).jobs == \
            read_workload(write(tmp_path, "plain" + name, text)).jobs

    def test_not_utf8(self, tmp_path, fmt):
        text, name = READERS[fmt]
        data = text.encode() + b"\xe9t\xe9\n"
        e = error_of(read_workload, write(tmp_path, name, data))
        assert "encoding" in str(e) and "0xe9" in str(e) and e.line == text.count("\n") + 1

    def test_binary_garbage(self, tmp_path, fmt):
        _, name = READERS[fmt]
        data = bytes(np.random.default_rng(7).integers(0, 256, 5000, dtype=np.uint8))
        e = error_of(read_workload, write(tmp_path, name, data))
        assert "encoding" in str(e)

    @pytest.mark.parametrize("content", ["", "\n\n  \n"])
    def test_empty(self, tmp_path, fmt, content):
        _, name = READERS[fmt]
        e = error_of(read_workload, write(tmp_path, name, content))
        assert "no jobs" in str(e) and e.path.endswith(name)

    def test_stdin(self, tmp_path, fmt, monkeypatch):
        text, name = READERS[fmt]
        for data in (text.encode(), gzip.compress(text.encode())):
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
            wl = read_workload("-", fmt)
            assert wl.jobs == read_workload(write(tmp_path, name, text)).jobs and wl.name == "stdin"
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))  # a text-only stdin (notebooks)
        assert len(read_workload("-", fmt)) >= 1
        e = error_of(read_workload, "-")
        assert "--format" in str(e) and e.path == "<stdin>"


def test_header_only_and_all_dropped(tmp_path):
    e = error_of(read_workload, write(tmp_path, "h.swf", "; Version: 2.2\n; MaxProcs: 8\n"))
    assert "no jobs: the trace has only header lines" in str(e)
    e = error_of(read_workload, write(tmp_path, "d.swf", swf_row(1, run_time="0") + "\n" + swf_row(2, run_time="-1")
                                     + "\n"))
    assert "no jobs left" in str(e) and "dropped_nonpositive_runtime 2" in str(e)
    e = error_of(read_workload, write(tmp_path, "q.log", "01/18/2018 19:46:07;Q;1;queue=default\n"))
    assert "no jobs left" in str(e) and "dropped_never_started 1" in str(e)
    csv_only_header = write(tmp_path, "h.csv", ALCF_HEAD)
    assert "no jobs" in str(error_of(read_workload, csv_only_header))


def test_first_n_must_keep_a_job(tmp_path):
    with pytest.raises(ValueError, match="first_n must be an integer >= 1"):
        read_workload(write(tmp_path, "t.swf", GOOD), first_n=0)
    assert len(read_workload(write(tmp_path, "t.swf", GOOD), first_n=1)) == 1


def test_missing_and_unreadable(tmp_path):
    assert "cannot read trace" in str(error_of(read_workload, str(tmp_path / "nope.swf")))
    assert "cannot read trace" in str(error_of(read_workload, str(tmp_path), "swf"))  # a folder


# ------------------------------------------------------------------------------ Cobalt, ALCF
class TestCobaltTimes:
    @pytest.mark.parametrize("wall", ["00:99:99", "01:60:00", "01:00:60", "1h", "01:00", "-1:00:00",
                                      "99999999:00:00"])
    def test_impossible_walltimes(self, tmp_path, wall):
        e = error_of(read_cobalt, write(tmp_path, "t.log", cobalt_log(wall=wall)))
        assert (e.line, e.field) == (1, "Resource_List.walltime")

    def test_parse_walltime(self):
        assert parse_walltime("48:00:00") == 172800 and parse_walltime("00:59:59.6") == 3600
        with pytest.raises(ValueError, match="below 60"):
            parse_walltime("00:99:99")

    @pytest.mark.parametrize("stamp", ["13/45/2018 99:01:47", "02/30/2018 10:00:00", "01/18/2018 24:00:00",
                                       "01/18/2018 23:60:00", "00/10/2018 10:00:00"])
    def test_impossible_timestamps(self, tmp_path, stamp):
        e = error_of(read_cobalt, write(tmp_path, "t.log", cobalt_log(stamp=stamp)))
        assert (e.line, e.field) == (1, "timestamp") and "impossible date-time" in str(e)

    def test_leap_day_is_fine(self, tmp_path):
        assert len(read_cobalt(write(tmp_path, "t.log", cobalt_log(stamp="02/29/2016 23:59:59")))) == 1

    @pytest.mark.parametrize("key, value, what", [("qtime", "1e30", "MAX_TIME_S"), ("qtime", "-5", "negative"),
                                                  ("start", "1e11", "MAX_TIME_S"), ("runtime", "1e300", "MAX_TIME_S"),
                                                  ("Resource_List.nodect", "1e9", "MAX_SIZE"),
                                                  ("qtime", "nan", "not a number")])
    def test_values_out_of_range(self, tmp_path, key, value, what):
        text = cobalt_log().replace(f"{key}=", f"{key}={value} x{key}=", 1)
        e = error_of(read_cobalt, write(tmp_path, "t.log", text))
        assert (e.line, e.field) == (1, key) and what in str(e)

    @pytest.mark.parametrize("jid", ["99999999999999999999", "\u0661", "-4"])
    def test_job_ids(self, tmp_path, jid):
        text = cobalt_log().replace(";E;1;", f";E;{jid};")
        assert error_of(read_cobalt, write(tmp_path, "t.log", text)).field == "jobid"


class TestAlcfTimes:
    @pytest.mark.parametrize("start", ["2018-13-45 00:00:00", "2018-02-30 10:00:00", "2018-01-01 25:00:00",
                                       "1e30", "-100", "9999-12-31T23:59:59-14:00", "yesterday"])
    def test_bad_start_timestamps(self, tmp_path, start):
        e = error_of(read_alcf, write(tmp_path, "t.csv", alcf_csv([(1, "2018-01-01 01:00:00", 0), (2, start, 0)])))
        assert (e.line, e.field) == (3, "START_TIMESTAMP")

    @pytest.mark.parametrize("col, value", [("ELIGIBLE_WAIT_SECONDS", "1e30"), ("RUNTIME_SECONDS", "1e11"),
                                            ("WALLTIME_SECONDS", "inf"), ("NODES_REQUESTED", "1e9"),
                                            ("NODES_REQUESTED", "2.5"), ("COBALT_JOBID", str(MAX_ID + 1))])
    def test_values_out_of_range(self, tmp_path, col, value):
        head = ALCF_HEAD.strip().split(",")
        row = ["7", "2018-01-01 01:00:00", "7200", "3600", "512", "10"]
        row[head.index(col)] = value
        e = error_of(read_alcf, write(tmp_path, "t.csv", ALCF_HEAD + ",".join(row) + "\n"))
        assert (e.line, e.field) == (2, col)

    def test_wait_before_1970(self, tmp_path):
        e = error_of(read_alcf, write(tmp_path, "t.csv", alcf_csv([(1, "1970-01-01 00:01:00", 61)])))
        assert e.field == "ELIGIBLE_WAIT_SECONDS" and "1970" in str(e)

    def test_odd_ids_are_unknown_not_errors(self, tmp_path):
        text = (ALCF_HEAD.strip() + ",USERNAME_GENID,NODES_USED\n"
                "7,2018-01-01 01:00:00,7200,3600,512,0,\u0661\u0662,1e999\n")
        wl = read_alcf(write(tmp_path, "t.csv", text))
        assert wl[0].user == -1 and wl.header.extras[7].nodes_used is None

    def test_csv_errors(self, tmp_path):
        text = ALCF_HEAD + '7,"2018-01-01 01:00:00\n'  # a quote never closed
        assert "CSV" in str(error_of(read_alcf, write(tmp_path, "t.csv", text)))


# ------------------------------------------------------------------------------ time bound
def test_job_refuses_times_beyond_the_bound():
    Job(1, MAX_TIME_S, MAX_TIME_S, MAX_TIME_S, 1)
    for bad in ({"submit": MAX_TIME_S + 1}, {"runtime": MAX_TIME_S + 1}, {"walltime": MAX_TIME_S + 1}):
        fields = {"id": 1, "submit": 0, "runtime": 1, "walltime": 1, "nodes": 1, **bad}
        with pytest.raises(ValueError, match="MAX_TIME_S"):
            Job(**fields)


# ------------------------------------------------------------------------------ records, stats
def test_records_and_as_read_after_first_n(tmp_path):
    p = write(tmp_path, "t.swf", GOOD)
    wl = read_swf(p, first_n=2)
    assert list(wl.header.records) == [1, 2] and len(wl.header.as_read) == 2
    assert 3 not in wl.header.records and 1 in wl.header.records and "x" not in wl.header.records
    assert wl.header.records[2] == tuple(swf_row(2).split()) and wl.header.as_read[2] is wl.by_id()[2]
    out = tmp_path / "out.swf"
    write_swf(wl, out)
    assert out.read_text().splitlines()[1:] == [swf_row(1), swf_row(2)]


def test_trace_statistics_show_the_cleaning_counts(tmp_path):
    p = write(tmp_path, "t.swf", GOOD + swf_row(4, run_time="0") + "\n" + swf_row(5, run_time="900") + "\n")
    stats = trace_statistics(read_swf(p))
    assert stats["jobs"] == 4
    assert stats["cleaning"] == {"records": 5, "dropped_nonpositive_runtime": 1, "clipped_runtime": 1}
