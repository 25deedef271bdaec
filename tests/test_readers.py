"""Trace readers and the SWF writer (rtsched.io): parsing, cleaning rules, errors, real files."""
from __future__ import annotations

import os
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from rtsched.errors import InputError
from rtsched.io import (AlcfOptions, CobaltExtra, SwfOptions, TraceHeader, cleaning_counts, detect_format,
                        normalize_sizes, normalize_to_mira, parse_walltime, read_alcf, read_cobalt, read_swf,
                        read_workload, trace_extras, write_swf)
from rtsched.io import swf as swf_module
from rtsched.io.alcf import parse_timestamp
from rtsched.io.normalize import CEA_CURIE_PROCS, nearest_size, scale_size
from rtsched.jobs import Job, Workload

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared(*parts: str) -> Path:
    """A file under ../shared/data; the test skips, saying so, when it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (tests reading ../shared/data skip without it)")
    return path


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def swf_line(jid, submit=0, run=100, alloc=4, req=4, reqtime=200, wait=-1, user=1, group=2, queue=1,
             status=1) -> str:
    f = [jid, submit, wait, run, alloc, -1, -1, req, reqtime, -1, status, user, group, 7, queue, 1, -1, -1]
    return " ".join(str(x) for x in f)


HEADER = "; Version: 2.2\n; Computer: Toy\n; MaxJobs: 3\n; MaxNodes: 16\n; MaxProcs: 64\n; UnixStartTime: 1000000\n"


# ------------------------------------------------------------------------------------------- SWF
class TestSwfParsing:
    def test_header_and_fields(self, tmp_path):
        p = write(tmp_path, "t.swf", HEADER + "; Note: first\n; Note: second\n; a remark: not a key\n"
                  + "; Information: http://a.example/\n;      http://b.example/\n;\n;   stray comment\n"
                  + swf_line(1, submit=5, run=100, alloc=8, req=8, reqtime=300, user=3, group=4, queue=2) + "\n"
                  + swf_line(2, submit=0, run=50) + "\n\n")
        wl = read_swf(p)
        assert wl.max_nodes == 64  # sizes are processors: the machine is MaxProcs
        assert wl.start_time == 1000000
        assert wl.header["Computer"] == "Toy"
        assert wl.header["Note"] == "first\nsecond"
        assert "a remark" not in wl.header and "http" not in wl.header
        assert wl.header["Information"] == "http://a.example/\nhttp://b.example/"  # indented continuation
        assert len(wl.header.lines) == 13  # every ; line kept, comments included
        assert [j.id for j in wl] == [2, 1]  # by submit
        j = wl.by_id()[1]
        assert (j.submit, j.runtime, j.walltime, j.nodes, j.user, j.group, j.queue) == (5, 100, 300, 8, 3, 4, "2")
        assert isinstance(wl.header, TraceHeader) and wl.header.records[1][10] == "1"

    def test_max_nodes_from_maxnodes_when_no_maxprocs(self, tmp_path):
        p = write(tmp_path, "t.swf", "; MaxNodes: 256\n" + swf_line(1) + "\n")
        assert read_swf(p).max_nodes == 256

    def test_no_header_means_unknown_machine(self, tmp_path):
        wl = read_swf(write(tmp_path, "t.swf", swf_line(1) + "\n"))
        assert wl.max_nodes is None and wl.start_time is None

    def test_procs_per_node(self, tmp_path):
        p = write(tmp_path, "t.swf", HEADER + swf_line(1, req=5) + "\n" + swf_line(2, req=64) + "\n")
        by4 = read_swf(p, procs_per_node=4)
        assert by4.max_nodes == 16 and by4.by_id()[1].nodes == 2 and by4.by_id()[2].nodes == 16
        hdr = read_swf(p, procs_per_node="header")  # 64 / 16 = 4 processors a node
        assert [j.nodes for j in hdr] == [2, 16] and hdr.max_nodes == 16

    def test_gzip(self, tmp_path):
        wl = read_swf(write(tmp_path, "t.swf", HEADER + swf_line(1) + "\n"))
        write_swf(wl, tmp_path / "t.swf.gz")
        back = read_workload(tmp_path / "t.swf.gz")
        assert back.jobs == wl.jobs and back.header.lines == wl.header.lines


class TestSwfMalformed:
    def test_wrong_field_count(self, tmp_path):
        p = write(tmp_path, "bad.swf", HEADER + swf_line(1) + "\n" + "2 10 -1 100 4\n")
        with pytest.raises(InputError) as err:
            read_swf(p)
        e = err.value
        assert (e.path, e.line, e.field) == (p, 8, "average CPU time")
        assert "expected 18 SWF fields, found 5" in str(e) and "line 8" in str(e) and p in str(e)

    def test_too_many_fields(self, tmp_path):
        p = write(tmp_path, "bad.swf", swf_line(1) + " 5\n")
        with pytest.raises(InputError, match="found 19") as err:
            read_swf(p)
        assert err.value.line == 1

    def test_non_numeric_run_time(self, tmp_path):
        p = write(tmp_path, "bad.swf", swf_line(1) + "\n" + swf_line(2).replace(" 100 ", " 1x0 ", 1) + "\n")
        with pytest.raises(InputError) as err:
            read_swf(p)
        assert (err.value.line, err.value.field) == (2, "run time")
        assert "'run time'" in str(err.value) and "'1x0'" in str(err.value)

    def test_non_numeric_requested_time(self, tmp_path):
        p = write(tmp_path, "bad.swf", swf_line(1, reqtime="abc") + "\n")  # type: ignore[arg-type]
        with pytest.raises(InputError) as err:
            read_swf(p)
        assert (err.value.line, err.value.field) == (1, "requested time")

    def test_duplicate_job_number(self, tmp_path):
        p = write(tmp_path, "bad.swf", swf_line(1) + "\n" + swf_line(1, submit=3) + "\n")
        with pytest.raises(InputError, match="duplicate job number 1 .first on line 1.") as err:
            read_swf(p)
        assert (err.value.line, err.value.field) == (2, "job number")

    def test_negative_submit(self, tmp_path):
        p = write(tmp_path, "bad.swf", swf_line(1, submit=-4) + "\n")
        with pytest.raises(InputError) as err:
            read_swf(p)
        assert err.value.field == "submit time"

    def test_bad_header_number(self, tmp_path):
        p = write(tmp_path, "bad.swf", "; MaxNodes: many\n" + swf_line(1) + "\n")
        with pytest.raises(InputError) as err:
            read_swf(p)
        assert (err.value.line, err.value.field) == (1, "MaxNodes")

    def test_missing_file(self, tmp_path):
        with pytest.raises(InputError, match="cannot read trace"):
            read_swf(tmp_path / "nope.swf")


class TestSwfCleaning:
    def test_nonpositive_runtime_dropped_and_counted(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_line(1, run=0) + "\n" + swf_line(2, run=-1) + "\n" + swf_line(3) + "\n")
        wl = read_swf(p)
        assert [j.id for j in wl] == [3]
        assert cleaning_counts(wl)["dropped_nonpositive_runtime"] == 2
        kept = read_swf(p, drop_nonpositive_runtime=False)
        assert [j.runtime for j in kept] == [1, 1, 100]
        assert cleaning_counts(kept)["runtime_raised_to_1"] == 2

    def test_unknown_requested_time_becomes_runtime(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_line(1, run=77, reqtime=-1) + "\n" + swf_line(2, run=5, reqtime=9) + "\n")
        wl = read_swf(p)
        assert [(j.runtime, j.walltime) for j in wl] == [(77, 77), (5, 9)]
        assert cleaning_counts(wl)["walltime_from_runtime"] == 1
        with pytest.raises(InputError) as err:
            read_swf(p, walltime_from_runtime=False)
        assert (err.value.line, err.value.field) == (1, "requested time")

    def test_procs_rules(self, tmp_path):
        p = write(tmp_path, "t.swf", "\n".join([swf_line(1, alloc=8, req=4), swf_line(2, alloc=8, req=-1),
                                                swf_line(3, alloc=-1, req=2), swf_line(4, alloc=-1, req=-1)]) + "\n")
        req = read_swf(p)
        assert [j.nodes for j in req] == [4, 8, 2]  # requested, else allocated
        assert cleaning_counts(req)["dropped_no_processors"] == 1
        assert [j.nodes for j in read_swf(p, procs="allocated")] == [8, 8, 2]
        assert [j.nodes for j in read_swf(p, procs="max")] == [8, 8, 2]

    @pytest.mark.parametrize("rule, expected", [("clip", 200), ("keep", 300)])
    def test_runtime_above_walltime(self, tmp_path, rule, expected):
        p = write(tmp_path, "t.swf", swf_line(1, run=300, reqtime=200) + "\n")
        wl = read_swf(p, runtime_above_walltime=rule)
        assert (wl[0].runtime, wl[0].walltime) == (expected, 200)
        key = "clipped_runtime" if rule == "clip" else "kept_runtime_above_walltime"
        assert cleaning_counts(wl)[key] == 1

    def test_runtime_above_walltime_raise(self, tmp_path):
        p = write(tmp_path, "t.swf", swf_line(1) + "\n" + swf_line(2, run=300, reqtime=200) + "\n")
        with pytest.raises(InputError, match="exceeds the walltime") as err:
            read_swf(p, runtime_above_walltime="raise")
        assert (err.value.line, err.value.field) == (2, "run time")

    def test_first_n_after_cleaning(self, tmp_path):
        p = write(tmp_path, "t.swf", "\n".join([swf_line(1, submit=0, run=0), swf_line(2, submit=10),
                                                swf_line(3, submit=20), swf_line(4, submit=30)]) + "\n")
        wl = read_swf(p, first_n=2)
        assert [j.id for j in wl] == [2, 3]
        assert cleaning_counts(wl)["cut_by_first_n"] == 1
        assert set(wl.header.records) == {2, 3}

    def test_job_bigger_than_machine(self, tmp_path):
        p = write(tmp_path, "big.swf", "; MaxProcs: 64\n" + swf_line(1) + "\n" + swf_line(2, req=65) + "\n")
        with pytest.raises(InputError) as err:
            read_swf(p)
        e = err.value
        assert (e.path, e.line, e.field) == (p, 3, "requested processors")
        assert "job 2 asks for 65 nodes, more than the machine's 64" in str(e)
        dropped = read_swf(p, oversize="drop")
        assert [j.id for j in dropped] == [1] and cleaning_counts(dropped)["dropped_oversize"] == 1

    def test_bad_options(self):
        with pytest.raises(ValueError):
            SwfOptions(runtime_above_walltime="trim")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            SwfOptions(procs_per_node=0)


class TestSwfWriter:
    def tiny(self, tmp_path) -> str:
        lines = [swf_line(1, submit=0, run=100, reqtime=-1), swf_line(2, submit=3, run=0),
                 "3   7  12  50  4  1.5  -1  4  60  -1 5 1 1 7 0 1 -1 -1", swf_line(4, submit=9, run=400, reqtime=300)]
        return write(tmp_path, "tiny.swf", HEADER + "; Note: kept\n" + "\n".join(lines) + "\n")

    def test_round_trip(self, tmp_path):
        src = self.tiny(tmp_path)
        wl = read_swf(src)
        out = tmp_path / "out.swf"
        write_swf(wl, out)
        text = out.read_text().splitlines()
        assert text[:7] == (HEADER + "; Note: kept").splitlines()  # header lines verbatim
        # kept job lines field for field (job 2 was dropped: runtime 0), including -1 and 1.5
        originals = [line.split() for line in Path(src).read_text().splitlines() if line and line[0] != ";"]
        assert [line.split() for line in text[7:]] == [originals[0], originals[2], originals[3]]
        back = read_swf(out)
        assert back.jobs == wl.jobs
        assert dict(back.header) == dict(wl.header) and back.header.lines == wl.header.lines
        assert (back.max_nodes, back.start_time, back.header.records) == (wl.max_nodes, wl.start_time,
                                                                           wl.header.records)

    def test_edited_job_written_from_job_fields(self, tmp_path):
        wl = read_swf(self.tiny(tmp_path))
        edited = Workload([replace(j, nodes=2) if j.id == 3 else j for j in wl.jobs], max_nodes=wl.max_nodes,
                          start_time=wl.start_time, header=wl.header)
        out = tmp_path / "edited.swf"
        write_swf(edited, out)
        line3 = next(l for l in out.read_text().splitlines() if l.startswith("3 "))
        # Job fields (size 2, wait/CPU/memory unknown) over the record's status, executable, partition, ...
        assert line3.split() == "3 7 -1 50 2 -1 -1 2 60 -1 5 1 1 7 0 1 -1 -1".split()
        assert read_swf(out).by_id()[3].nodes == 2

    def test_synthesised_header_for_other_workloads(self, tmp_path):
        wl = Workload([Job(5, 10, 30, 60, 4, user=2, queue="3"), Job(6, 0, 5, 5, 1, queue="prod")],
                      name="gen", max_nodes=8, start_time=1234, header={"Computer": "Gen", "MaxNodes": "999"})
        out = tmp_path / "gen.swf"
        write_swf(wl, out)
        text = out.read_text().splitlines()
        assert text[:7] == ["; Version: 2.2", "; Computer: Gen", "; MaxJobs: 2", "; MaxRecords: 2", "; MaxNodes: 8",
                            "; MaxProcs: 8", "; UnixStartTime: 1234"]
        assert text[7].split() == "6 0 -1 5 1 -1 -1 1 5 -1 -1 -1 -1 -1 -1 -1 -1 -1".split()
        assert text[8].split() == "5 10 -1 30 4 -1 -1 4 60 -1 -1 2 -1 -1 3 -1 -1 -1".split()
        back = read_swf(out)
        assert [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in back] == \
               [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in wl]
        assert (back.max_nodes, back.start_time) == (8, 1234)

    def test_head_drops_side_tables(self, tmp_path):
        wl = read_swf(self.tiny(tmp_path)).head(1)
        out = tmp_path / "head.swf"
        write_swf(wl, out)
        assert "; MaxJobs: 1" in out.read_text().splitlines()

    def test_atomic_write_leaves_nothing_half_written(self, tmp_path, monkeypatch):
        wl = read_swf(self.tiny(tmp_path))
        out = tmp_path / "out.swf"
        out.write_text("old content\n")
        calls = {"n": 0}

        def boom(job, record):
            calls["n"] += 1
            raise RuntimeError("disk on fire")

        edited = Workload([replace(j, walltime=j.walltime + 1) for j in wl.jobs], header=wl.header)
        monkeypatch.setattr(swf_module, "_job_fields", boom)
        with pytest.raises(RuntimeError, match="disk on fire"):
            write_swf(edited, out)
        assert calls["n"] == 1
        assert out.read_text() == "old content\n"
        assert sorted(os.listdir(tmp_path)) == ["out.swf", "tiny.swf"]  # no temporary file left
        with pytest.raises(RuntimeError):
            write_swf(edited, tmp_path / "new.swf")
        assert not (tmp_path / "new.swf").exists()


# ---------------------------------------------------------------------------------------- Cobalt
def cobalt_rec(kind: str, jid: int, **kv) -> str:
    body = " ".join(f"{k.replace('__', '.')}={v}" for k, v in kv.items())
    return f"01/18/2018 19:46:07;{kind};{jid};{body}"


E = dict(queue="default", qtime="1000100.0", Resource_List__nodect=512, Resource_List__walltime="01:00:00",
         start="1000200.0", end="1001000.0", exec_host="MIR-00000-33331-512", runtime="800.0",
         queue_name="prod-short")


class TestCobalt:
    def test_parse_walltime(self):
        assert parse_walltime("48:00:00") == 172800
        assert parse_walltime("00:20:30") == 1230
        assert parse_walltime("100:00:00") == 360000
        for bad in ("1:00", "ab:00:00", "01:00:xx", "-1:00:00"):
            with pytest.raises(ValueError):
                parse_walltime(bad)

    def test_records_to_jobs(self, tmp_path):
        lines = [
            "01/18/2018 19:46:07;Q;1;queue=default",
            cobalt_rec("S", 1, **{k: v for k, v in E.items() if k not in ("end", "runtime")}),
            cobalt_rec("E", 1, **E),
            cobalt_rec("S", 2, **{**E, "qtime": "1000000.5", "Resource_List__walltime": "48:00:00",
                                  "start": "1000050.0", "exec_host": "10"}),
            cobalt_rec("E", 2, **{**E, "qtime": "1000000.5", "Resource_List__walltime": "48:00:00",
                                  "start": "1000050.0", "end": "1000100.4", "exec_host": "10", "runtime": "50.4"}),
            cobalt_rec("S", 3, **{k: v for k, v in E.items() if k not in ("end", "runtime")}),  # never ends
            "01/18/2018 19:50:00;Q;4;queue=default",  # never starts
            cobalt_rec("E", 5, **{k: v for k, v in E.items() if k not in ("runtime", "queue_name")}),  # no S, no runtime
            cobalt_rec("E", 6, **{**E, "runtime": "0.0"}),  # zero runtime
        ]
        p = write(tmp_path, "t.log", "\n".join(lines) + "\n")
        wl = read_cobalt(p)
        assert wl.start_time == 1000000  # earliest qtime, floored
        assert [j.id for j in wl] == [2, 1, 5]
        j1, j2, j5 = (wl.by_id()[i] for i in (1, 2, 5))
        assert (j1.submit, j1.runtime, j1.walltime, j1.nodes, j1.queue) == (100, 800, 3600, 512, "prod-short")
        assert (j2.submit, j2.runtime, j2.walltime) == (0, 50, 172800)  # 50.4 s -> 50 s; 48 h walltime
        assert (j5.runtime, j5.queue) == (800, "default")  # end - start; queue when no queue_name
        ex = trace_extras(wl)
        assert ex[1] == CobaltExtra(start=200, end=1000, exec_host="MIR-00000-33331-512", ended=True, line=3)
        assert ex[2].exec_host == "10" and ex[2].start == 50
        c = cleaning_counts(wl)
        assert (c["job_ids"], c["queued"], c["started"], c["ended"]) == (6, 2, 3, 4)
        assert (c["dropped_not_ended"], c["dropped_never_started"], c["dropped_nonpositive_runtime"]) == (1, 1, 1)

        kept = read_cobalt(p, incomplete="walltime")
        assert [j.id for j in kept] == [2, 1, 3, 5]
        j3 = kept.by_id()[3]
        assert (j3.runtime, j3.walltime) == (3600, 3600) and trace_extras(kept)[3].ended is False
        assert trace_extras(kept)[3].end is None

    def test_runtime_above_walltime_clipped(self, tmp_path):
        p = write(tmp_path, "t.log", cobalt_rec("E", 1, **{**E, "runtime": "3650.0"}) + "\n")
        assert read_cobalt(p)[0].runtime == 3600
        assert read_cobalt(p, runtime_above_walltime="keep")[0].runtime == 3650
        with pytest.raises(InputError) as err:
            read_cobalt(p, runtime_above_walltime="raise")
        assert (err.value.line, err.value.field) == (1, "runtime")

    @pytest.mark.parametrize("line, field", [
        ("01/18/2018 19:46:07;E;1", "key=value list"),
        ("01/18/2018 19:46:07;X;1;qtime=1", "record type"),
        ("2018-01-18 19:46:07;E;1;qtime=1", "timestamp"),
        ("01/18/2018 19:46:07;E;abc;qtime=1", "jobid"),
        ("01/18/2018 19:46:07;E;1;qtime=1 oops", "oops"),
        (cobalt_rec("E", 1, **{**E, "Resource_List__walltime": "1h"}), "Resource_List.walltime"),
        (cobalt_rec("E", 1, **{**E, "Resource_List__walltime": "00:00:00"}), "Resource_List.walltime"),
        (cobalt_rec("E", 1, **{**E, "Resource_List__nodect": "lots"}), "Resource_List.nodect"),
        (cobalt_rec("E", 1, **{**E, "Resource_List__nodect": "0"}), "Resource_List.nodect"),
        (cobalt_rec("E", 1, **{k: v for k, v in E.items() if k != "qtime"}), "qtime"),
        (cobalt_rec("E", 1, **{k: v for k, v in E.items() if k not in ("runtime", "end")}), "runtime"),
        (cobalt_rec("E", 1, **{**E, "runtime": "fast"}), "runtime"),
    ])
    def test_malformed(self, tmp_path, line, field):
        p = write(tmp_path, "bad.log", cobalt_rec("E", 99, **E) + "\n\n" + line + "\n")
        with pytest.raises(InputError) as err:
            read_cobalt(p)
        assert (err.value.path, err.value.line, err.value.field) == (p, 3, field)
        assert "line 3" in str(err.value)

    def test_duplicate_record(self, tmp_path):
        p = write(tmp_path, "bad.log", cobalt_rec("E", 1, **E) + "\n" + cobalt_rec("E", 1, **E) + "\n")
        with pytest.raises(InputError, match="second E record for job 1 .first on line 1.") as err:
            read_cobalt(p)
        assert err.value.line == 2

    def test_job_bigger_than_machine(self, tmp_path):
        p = write(tmp_path, "big.log", cobalt_rec("E", 1, **E) + "\n"
                  + cobalt_rec("E", 2, **{**E, "Resource_List__nodect": 65536}) + "\n")
        with pytest.raises(InputError, match="65536 nodes, more than the machine's 49152") as err:
            read_cobalt(p)
        assert (err.value.line, err.value.field) == (2, "Resource_List.nodect")
        assert [j.id for j in read_cobalt(p, oversize="drop")] == [1]
        assert len(read_cobalt(p, max_nodes=None)) == 2


# ------------------------------------------------------------------------------------------ ALCF
ALCF_COLS = ("JOB_NAME,COBALT_JOBID,MACHINE_NAME,QUEUED_TIMESTAMP,START_TIMESTAMP,END_TIMESTAMP,USERNAME_GENID,"
             "PROJECT_NAME_GENID,QUEUE_NAME,WALLTIME_SECONDS,RUNTIME_SECONDS,NODES_USED,NODES_REQUESTED,LOCATION,"
             "EXIT_STATUS,ELIGIBLE_WAIT_SECONDS")
ALCF_ROWS = [
    "a,101,mira,2018-01-01 00:00:00.000000,2018-01-01 01:00:00.000000,2018-01-01 02:00:00.000000,17,4,prod-short,"
    "7200.000000,3600.000000,1024,1000,MIR-48840-7BB71-512,0,1800.000000",
    "b,102,mira,2018-01-01 00:10:00.000000,2018-01-01 00:20:30.500000,2018-01-01 00:30:30.000000,u9,p1,prod-long,"
    "1800,600,512,512,MIR-00040-33371-512,143,0",
    "c,103,mira,2018-01-01 00:05:00.000000,2018-01-01 00:06:00.000000,2018-01-01 00:06:00.000000,1,1,default,"
    "600,0,512,512,MIR-X,0,0",
]


def alcf_csv(tmp_path, rows=ALCF_ROWS, cols=ALCF_COLS, name="jobs.csv") -> str:
    return write(tmp_path, name, cols + "\n" + "\n".join(rows) + "\n")


class TestAlcf:
    def test_parse_timestamp(self):
        assert parse_timestamp("2018-01-01 00:08:17.000000") == 1514765297.0
        assert parse_timestamp("2018-01-01T00:08:17Z") == 1514765297.0
        assert parse_timestamp("2018-01-01 01:08:17+01:00") == 1514765297.0
        assert parse_timestamp(" 1514765297 ") == 1514765297.0

    def test_default_submit_is_start_minus_eligible_wait(self, tmp_path):
        wl = read_alcf(alcf_csv(tmp_path))
        # job 102: 00:20:30.5 - 0 s, floored, is the earliest submit (job 101: 01:00:00 - 1800 s = 00:30:00)
        assert wl.start_time == 1514766030  # 2018-01-01 00:20:30 UTC
        assert cleaning_counts(wl)["dropped_nonpositive_runtime"] == 1  # job 103
        j101, j102 = wl.by_id()[101], wl.by_id()[102]
        assert (j101.submit, j101.runtime, j101.walltime, j101.nodes, j101.queue) == (570, 3600, 7200, 1000,
                                                                                      "prod-short")
        assert (j101.user, j101.group) == (17, 4)
        assert (j102.submit, j102.runtime, j102.user, j102.group) == (0, 600, -1, -1)  # "u9", "p1": not numeric
        ex = trace_extras(wl)[101]
        assert (ex.location, ex.start, ex.end, ex.nodes_used, ex.exit_status, ex.line) == \
               ("MIR-48840-7BB71-512", 570 + 1800, 570 + 1800 + 3600, 1024, "0", 2)

    def test_submit_from_queued_and_nodes_used(self, tmp_path):
        wl = read_alcf(alcf_csv(tmp_path), AlcfOptions(submit_from="queued", nodes_from="used"))
        assert wl.start_time == 1514764800  # 2018-01-01 00:00:00, job 101's QUEUED_TIMESTAMP
        assert [(j.id, j.submit, j.nodes) for j in wl] == [(101, 0, 1024), (102, 600, 512)]

    def test_dispatch_and_first_n(self, tmp_path):
        wl = read_workload(alcf_csv(tmp_path), first_n=1)
        assert [j.id for j in wl] == [102]

    def test_repeated_header_row_skipped(self, tmp_path):
        wl = read_alcf(alcf_csv(tmp_path, rows=[ALCF_ROWS[0], ALCF_COLS, ALCF_ROWS[1]]))
        assert len(wl) == 2

    def test_missing_column(self, tmp_path):
        cols = ALCF_COLS.replace(",ELIGIBLE_WAIT_SECONDS", "")
        p = alcf_csv(tmp_path, rows=[r.rsplit(",", 1)[0] for r in ALCF_ROWS], cols=cols)
        with pytest.raises(InputError) as err:
            read_alcf(p)
        assert (err.value.line, err.value.field) == (1, "ELIGIBLE_WAIT_SECONDS")
        assert len(read_alcf(p, submit_from="queued")) == 2  # not needed then

    @pytest.mark.parametrize("old, new, field", [
        ("2018-01-01 00:20:30.500000", "yesterday", "START_TIMESTAMP"),
        (",600,512,512,", ",ten,512,512,", "RUNTIME_SECONDS"),
        (",1800,600,", ",0,600,", "WALLTIME_SECONDS"),
        (",512,512,MIR-0", ",512,-2,MIR-0", "NODES_REQUESTED"),
        ("102,", "10x,", "COBALT_JOBID"),
        (",143,0", ",143,-5", "ELIGIBLE_WAIT_SECONDS"),
    ])
    def test_bad_values(self, tmp_path, old, new, field):
        assert old in ALCF_ROWS[1]
        p = alcf_csv(tmp_path, rows=[ALCF_ROWS[0], ALCF_ROWS[1].replace(old, new, 1)])
        with pytest.raises(InputError) as err:
            read_alcf(p)
        assert (err.value.path, err.value.line, err.value.field) == (p, 3, field)

    def test_duplicate_id_and_oversize(self, tmp_path):
        with pytest.raises(InputError, match="duplicate job id 101") as err:
            read_alcf(alcf_csv(tmp_path, rows=[ALCF_ROWS[0], ALCF_ROWS[0]]))
        assert err.value.line == 3
        p = alcf_csv(tmp_path, rows=[ALCF_ROWS[0]], name="one.csv")
        with pytest.raises(InputError, match="more than the machine's 512") as err:
            read_alcf(p, max_nodes=512)
        assert (err.value.line, err.value.field) == (2, "NODES_REQUESTED")


# ------------------------------------------------------------------------------------- normalise
class TestNormalize:
    def test_eq59_hand_values(self):
        # Curie -> Mira: 49152 / 93312 = 128 / 243
        assert scale_size(2048, CEA_CURIE_PROCS) == Fraction(2048 * 128, 243)  # 1078.85...
        assert nearest_size(scale_size(2048, CEA_CURIE_PROCS)) == 1024  # 1078.85: nearer 1024 than 2048
        assert nearest_size(scale_size(10000, CEA_CURIE_PROCS)) == 4096  # 5267.5 -> 4096
        assert nearest_size(scale_size(1458, CEA_CURIE_PROCS)) == 512  # exactly 768: a tie goes down
        assert nearest_size(scale_size(1459, CEA_CURIE_PROCS)) == 1024  # 768.53
        assert nearest_size(scale_size(100, CEA_CURIE_PROCS)) == 512  # 52.7, below the smallest
        assert nearest_size(scale_size(93312, CEA_CURIE_PROCS)) == 49152

    def test_workload(self):
        jobs = [Job(1, 0, 10, 20, 2048), Job(2, 5, 10, 20, 10000), Job(3, 9, 10, 20, 100), Job(4, 9, 10, 20, 93312)]
        wl = Workload(jobs, name="curie", max_nodes=CEA_CURIE_PROCS, start_time=77, header={"Computer": "Curie"})
        mira = normalize_to_mira(wl)
        assert [j.nodes for j in mira] == [1024, 4096, 512, 49152]
        assert (mira.max_nodes, mira.start_time, mira.name) == (49152, 77, "curie")
        assert [(j.id, j.submit, j.runtime, j.walltime) for j in mira] == [(j.id, j.submit, j.runtime, j.walltime)
                                                                          for j in wl]
        assert mira.header["Computer"] == "Curie" and "eq. 59" in mira.header["Normalization"]
        assert [j.nodes for j in normalize_to_mira(wl, rounding="up")] == [2048, 8192, 512, 49152]
        assert [j.nodes for j in normalize_to_mira(wl, rounding="none")] == [1079, 5268, 53, 49152]
        assert [j.id for j in normalize_to_mira(wl, min_source_nodes=257)] == [1, 2, 4]
        small = normalize_sizes(wl, target_nodes=8192, rounding="nearest")  # an 8k-node Mira: 16 blocks
        # 2048 -> 179.8 -> 512; 10000 -> 877.9 -> 1024 (146 away, 512 is 366 away)
        assert [j.nodes for j in small] == [512, 1024, 512, 8192] and small.max_nodes == 8192
        assert [j.nodes for j in normalize_to_mira(wl, source_nodes=186624)] == [512, 2048, 512, 24576]

    def test_errors(self):
        wl = Workload([Job(1, 0, 10, 20, 300)])
        with pytest.raises(ValueError, match="source machine size is unknown"):
            normalize_to_mira(wl)
        with pytest.raises(ValueError, match="more than the source"):
            normalize_to_mira(wl, source_nodes=256)


# --------------------------------------------------------------------------------------- dispatch
def test_read_workload_dispatch(tmp_path):
    assert [detect_format(n) for n in ("a.swf", "a.SWF.gz", "wk1.log", "x.csv")] == ["swf", "swf", "cobalt", "alcf"]
    with pytest.raises(InputError, match="cannot tell the trace format"):
        read_workload(write(tmp_path, "t.txt", swf_line(1) + "\n"))
    wl = read_workload(write(tmp_path, "t.txt", swf_line(1) + "\n"), "swf", name="toy", first_n=1)
    assert wl.name == "toy" and len(wl) == 1
    with pytest.raises(TypeError, match="unknown swf reader option"):
        read_workload(write(tmp_path, "u.swf", swf_line(1) + "\n"), incomplete="drop")
    with pytest.raises(ValueError, match="unknown trace format"):
        read_workload(write(tmp_path, "v.swf", swf_line(1) + "\n"), "pbs")


# ------------------------------------------------------------------------------------- real data
@pytest.mark.needs_data
class TestRealFiles:
    @pytest.mark.parametrize("name", ["lublin_256.swf", "lublin_256_new2.swf"])
    def test_lublin(self, name, tmp_path):
        path = shared("traces", "swf", name)
        wl = read_swf(path)
        assert len(wl) == 10_000 and wl.max_nodes == 256
        assert all(j.walltime == j.runtime for j in wl)  # requested time -1: perfect estimates
        out = tmp_path / name
        write_swf(wl, out)
        assert out.read_text().split("\n") == [" ".join(l.split()) if l[:1] != ";" else l
                                                for l in path.read_text().split("\n")]
        back = read_swf(out)
        assert back.jobs == wl.jobs and back.header.lines == wl.header.lines

    def test_sdsc_sp2(self, tmp_path):
        path = shared("traces", "swf", "sdsc-sp2-1998-first4961.swf")
        wl = read_swf(path)
        c = cleaning_counts(wl)
        assert c["records"] == 4961
        dropped = sum(v for k, v in c.items() if k.startswith("dropped_"))
        assert len(wl) == 4961 - dropped
        assert (wl.max_nodes, wl.start_time) == (128, 893466664)
        assert wl.header["Queue"].split("\n")[3] == "3 normal" and "http" not in wl.header
        write_swf(wl, tmp_path / "sdsc.swf")
        back = read_swf(tmp_path / "sdsc.swf")
        assert back.jobs == wl.jobs and back.header.lines == wl.header.lines

    @pytest.mark.parametrize("name, jobs", [("wk1.log", 2147), ("wk2.log", 1511), ("wk1-10.log", 1531)])
    def test_mira_weeks(self, name, jobs):
        wl = read_workload(shared("traces", "mira", name))
        c = cleaning_counts(wl)
        assert len(wl) == jobs and c["started"] == c["ended"] == c["job_ids"] == jobs and c["queued"] == 0
        assert wl[0].submit == 0 and wl.start_time > 1.5e9  # 2017-12 / 2018
        assert all(j.runtime <= j.walltime for j in wl)  # clipped
        assert all(trace_extras(wl)[j.id].exec_host.startswith("MIR-") for j in wl)

    def test_mira_dec_wk1(self):
        path = shared("traces", "mira", "mira_dec_wk1.log")
        wl = read_cobalt(path)
        c = cleaning_counts(wl)
        assert (c["queued"], c["started"], c["ended"]) == (1041, 969, 943)
        assert len(wl) == 943
        assert (c["dropped_not_ended"], c["dropped_never_started"]) == (26, 72)
        assert len(read_cobalt(path, incomplete="walltime")) == 969

    def test_curie(self):
        wl = read_workload(shared("traces", "curie", "cea-curie-cobalt.log"))
        assert len(wl) == 2658
        assert wl.start_time < 10**8  # 1971
        assert {j.nodes for j in wl} <= {512, 1024, 2048, 4096, 8192, 16384, 32768}
        assert all(trace_extras(wl)[j.id].exec_host.isdigit() for j in wl)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def test_bad_reader_options_are_rtsched_option_errors(tmp_path):
    from rtsched.errors import OptionError
    from rtsched.pipeline import RunSpec, execute

    path = write(tmp_path, "w.swf", swf_line(1) + "\n")
    with pytest.raises(OptionError, match="unknown swf reader option.*frist_n"):
        read_workload(path, frist_n=1)
    with pytest.raises(OptionError, match="first_n must be an integer >= 1, got 0"):
        read_workload(path, first_n=0)
    with pytest.raises(OptionError, match="oversize must be 'raise' or 'drop'"):
        read_workload(path, oversize="clip")
    # through the run pipeline too (the Python API a notebook uses)
    with pytest.raises(OptionError, match="frist_n"):
        execute(RunSpec(trace=str(path), machine="flat:4", reader_options={"frist_n": 1}))


def test_swf_jobs_out_of_file_order_come_sorted(tmp_path):
    """Lines out of (submit, id) order, equal submit times among them: the workload is in
    (submit, id) order all the same (the reader's column check finds the file unordered)."""
    text = "\n".join(swf_line(jid, submit=s) for jid, s in [(5, 10), (2, 0), (9, 10), (3, 10), (1, 20)]) + "\n"
    wl = read_swf(write(tmp_path, "unordered.swf", text))
    assert [(j.submit, j.id) for j in wl.jobs] == [(0, 2), (10, 3), (10, 5), (10, 9), (20, 1)]
    ordered = "\n".join(swf_line(jid, submit=s) for jid, s in [(2, 0), (3, 10), (5, 10), (1, 20)]) + "\n"
    assert [j.id for j in read_swf(write(tmp_path, "ordered.swf", ordered)).jobs] == [2, 3, 5, 1]
