"""Property tests of the readers: any bytes give a Workload or an InputError, never another
exception; the NumPy block parser agrees with ``float`` on every number it accepts."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtsched.errors import InputError
from rtsched.io import read_workload
from rtsched.io.numbers import NUMBER, parse_block
from rtsched.jobs import MAX_TIME_S, Workload

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NAMES = {"swf": "t.swf", "cobalt": "t.log", "alcf": "t.csv"}


def read_or_input_error(path: str, fmt: str) -> Workload | None:
    """The workload, or None when the reader refused the input with an InputError."""
    try:
        wl = read_workload(path, fmt)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc) and exc.path is not None
        return None
    assert len(wl) >= 1
    for job in wl:
        assert 0 <= job.submit <= MAX_TIME_S and 1 <= job.runtime <= MAX_TIME_S and 1 <= job.walltime <= MAX_TIME_S
        assert job.nodes >= 1
    return wl


# ----------------------------------------------------------------------------------- random bytes
@FUZZ
@given(data=st.binary(max_size=600), fmt=st.sampled_from(list(NAMES)), packed=st.booleans())
def test_random_bytes(tmp_path, data, fmt, packed):
    path = tmp_path / (NAMES[fmt] + (".gz" if packed else ""))
    path.write_bytes(data)
    read_or_input_error(str(path), fmt)


@FUZZ
@given(data=st.binary(min_size=1, max_size=400), fmt=st.sampled_from(list(NAMES)), cut=st.integers(0, 60))
def test_random_gzip_streams(tmp_path, data, fmt, cut):
    packed = gzip.compress(data)
    path = tmp_path / (NAMES[fmt] + ".gz")
    path.write_bytes(packed[: max(len(packed) - cut, 0)])
    read_or_input_error(str(path), fmt)


# ------------------------------------------------------------------------------------ random text
NUMBERS = st.one_of(
    st.integers(-3, 300).map(str), st.integers(0, 10**12).map(str), st.sampled_from(["-1", "0", "1e30", "1e999",
                                                                                      "12.5", ".5", "1.", "-0", "+7"]),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda x: f"{x:.3f}"),
)
PLAIN = st.integers(1, 5000).map(str)  # mostly valid values, so that rows get past the first checks
MOSTLY_PLAIN = st.one_of(PLAIN, PLAIN, PLAIN, NUMBERS)
JUNK = st.sampled_from(["x", "nan", "inf", ";", ":", "=", "1_0", "\u0661", "--", "e5", "1e", "\t", "\x0b", "é"])
TOKENS = st.one_of(NUMBERS, NUMBERS, NUMBERS, JUNK)


@st.composite
def swf_texts(draw) -> str:
    lines = draw(st.lists(st.sampled_from(["; MaxProcs: 64", "; MaxNodes: 16", "; UnixStartTime: 5", "; x", ""]),
                          max_size=3))
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.sampled_from([18, 18, 18, 17, 19]))
        lines.append(" ".join(draw(st.lists(TOKENS, min_size=n, max_size=n))))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))


@st.composite
def cobalt_texts(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        stamp = draw(st.sampled_from(["01/18/2018 19:46:07", "13/45/2018 99:01:47", "02/29/2017 00:00:00", "x"]))
        kind = draw(st.sampled_from(["E", "S", "Q", "X"]))
        jid = draw(st.sampled_from(["1", "2", "99999999999999999999", "a"]))
        keys = ["qtime", "Resource_List.nodect", "Resource_List.walltime", "runtime", "start", "end"]
        walltimes = st.sampled_from(["00:99:99", "01:00:00", "48:00:00", "1:2", "", "00:00:01.4"])
        values = {"Resource_List.walltime": st.one_of(walltimes, NUMBERS)}
        kv = " ".join(f"{k}={draw(values.get(k, MOSTLY_PLAIN))}" for k in keys if draw(st.integers(0, 5)))
        lines.append(f"{stamp};{kind};{jid};{kv}")
    return "\n".join(lines) + "\n"


@st.composite
def alcf_texts(draw) -> str:
    cols = ["COBALT_JOBID", "START_TIMESTAMP", "WALLTIME_SECONDS", "RUNTIME_SECONDS", "NODES_REQUESTED",
            "ELIGIBLE_WAIT_SECONDS", "NODES_USED", "USERNAME_GENID"]
    cols = draw(st.permutations(cols))
    stamps = st.sampled_from(["2018-01-01 00:08:17.000000"] * 4 + ["2018-13-45 00:00:00", "1e30", "", "0", '"x',
                                                                   "9999-12-31T23:59:59-14:00"])
    rows = [",".join(cols)]
    for _ in range(draw(st.integers(0, 4))):
        rows.append(",".join(draw(stamps) if "TIMESTAMP" in c else draw(MOSTLY_PLAIN) for c in cols))
    return "\n".join(rows) + "\n"


@FUZZ
@given(text=st.one_of(swf_texts().map(lambda t: ("swf", t)), cobalt_texts().map(lambda t: ("cobalt", t)),
                      alcf_texts().map(lambda t: ("alcf", t))))
def test_random_text(tmp_path, text):
    fmt, body = text
    path = tmp_path / NAMES[fmt]
    path.write_text(body, encoding="utf-8")
    read_or_input_error(str(path), fmt)


# ------------------------------------------------------------------ block parser against float()
NUMBER_TOKENS = st.one_of(
    st.integers(-10**15, 10**15).map(str),
    st.integers(-1, 10**6).map(lambda v: f"+{v}" if v >= 0 else str(v)),
    st.integers(0, 999).map(lambda v: f"{v:05d}"),  # leading zeros
    st.floats(-1e9, 1e9, allow_nan=False).map(lambda x: f"{x:.{abs(hash(x)) % 7}f}"),
    st.decimals(-10**6, 10**6, allow_nan=False, allow_infinity=False, places=4).map(str),
    st.sampled_from(["1.", ".5", "-.5", "+.25", "-0", "0.0", "1e5", "-2.5E-3", "123456789012345678", "9" * 16]),
)
SPACE = st.sampled_from([" ", "  ", "\t", " \t "])


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(NUMBER_TOKENS, min_size=4, max_size=4), min_size=1, max_size=30),
       sep=SPACE, lead=st.sampled_from(["", " ", "\t"]), end=st.sampled_from(["\n", " \n", "\r\n"]))
def test_block_parser_matches_float(rows, sep, lead, end):
    block = "".join(lead + sep.join(r) + end for r in rows).encode()
    values = parse_block(block, 4)
    assert values is not None
    expected = np.array([[float(t) for t in r] for r in rows])
    assert values.shape == expected.shape
    assert np.array_equal(values, expected)  # bit for bit (and -0.0 == 0.0)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(st.one_of(NUMBER_TOKENS, JUNK), min_size=0, max_size=6), min_size=1, max_size=10))
def test_block_parser_refuses_what_it_cannot_read_exactly(rows):
    text = "".join(" ".join(r) + "\n" for r in rows)
    values = parse_block(text.encode(), 4)
    # The fast path separates tokens by spaces and tabs only; other whitespace (a vertical tab, which
    # str.split also splits on) is left to the line-by-line path: None is its right answer there.
    exact = all(len(r.split()) == 4 for r in text.split("\n")[:-1]) and all(
        NUMBER.fullmatch(t.encode()) for t in text.split()) and not any(
        c.isspace() and c not in " \t\n" for c in text)
    if not exact:
        assert values is None
    else:
        assert values is not None
        assert np.array_equal(values, np.array([[float(t) for t in line.split()] for line in text.split("\n")[:-1]]))


@pytest.mark.parametrize("block", [b"", b"1 2 3 4", b"1 2 3 4\n5 6 7\n", b"1 2 3 4 5\n", b"1-2 3 4 5\n",
                                   b"1 2 3 4\n\n", b"1.2.3 2 3 4\n", b"e 2 3 4\n", b"1 2 3 4\x00\n"])
def test_block_parser_none(block):
    assert parse_block(block, 4) is None
