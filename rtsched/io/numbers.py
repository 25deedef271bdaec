"""Whitespace-separated decimal numbers, a block of lines at a time, parsed with NumPy.

``parse_block`` turns a block of lines that each hold exactly ``ncols`` numbers into a float64
matrix without making one Python object per number, which is what makes reading a
million-line SWF file take seconds.  It only ever answers for blocks it can read exactly; for
any other block (a header line, a blank line, a wrong field count, a token that is not a
number) it returns None and the reader parses that block line by line, with ``NUMBER`` and
``float`` deciding, and reports the first bad line.  Both paths give the same values: a token
of at most 15 digits is an exact integer divided by a power of ten, which IEEE division rounds
correctly, exactly as ``float`` does; longer tokens and exponents go through ``float``.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

# A number as the readers accept it: optional sign, digits with at most one decimal point,
# optional exponent.  ASCII only (no "inf", "nan", "1_000" or non-ASCII digits).
NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ALLOWED = b"0123456789.+-eE \t\r\n"
_MAX_DIGITS = 15  # up to 10^15 - 1: exact in float64, and so is every partial sum below
_POW10 = 10.0 ** np.arange(_MAX_DIGITS + 1)
_INT_LIMIT = 10**_MAX_DIGITS  # |integer| below it: what the decimal path would have read exactly too


def parse_block(block: bytes, ncols: int) -> np.ndarray | None:
    """``(lines, ncols)`` float64 values of ``block``, or None when some line is not exactly
    ``ncols`` numbers (or holds a token the fast path leaves to ``float``, badly formed).

    ``block`` holds whole lines, the last ending in ``\\n``.  The arithmetic is done in place
    where it can: fresh arrays of a block's size cost page faults, which were half the time.
    """
    if not block or ncols < 1 or block.translate(None, _ALLOWED):
        return None
    if b"." not in block and b"e" not in block and b"E" not in block:
        whole = _integers(block, ncols)  # the usual trace: whole numbers only, parsed in C
        if whole is not None:
            return whole
    b = np.frombuffer(block, np.uint8)
    # t[i + 1] tells whether byte i is inside a token (t[0]: nothing before the block).
    t = np.empty(len(b) + 1, dtype=bool)
    t[0] = False
    np.greater(b, 32, out=t[1:])
    scratch = np.greater(t[1:], t[:-1])
    starts = np.flatnonzero(scratch).astype(np.int32)
    np.greater(t[:-1], t[1:], out=scratch)
    ends = np.flatnonzero(scratch).astype(np.int32)
    np.equal(b, 10, out=scratch)
    newlines = np.flatnonzero(scratch)
    n = len(newlines)
    if n == 0 or len(starts) != n * ncols or len(ends) != len(starts):
        return None
    by_line = starts.reshape(n, ncols)
    # Tokens never span a newline, so these two checks put exactly ncols tokens on each line.
    if (by_line[:, -1] > newlines).any() or (by_line[1:, 0] < newlines[:-1]).any():
        return None

    first = b[starts]
    negative = first == 45
    signed = first == 43
    signed |= negative
    # Bytes inside tokens that are not digits: signs and points, unless something is odd.
    digit = np.subtract(b, np.uint8(48))  # 0..9 for digits; "." is 254, "-" 253, ...
    np.greater(digit, 9, out=scratch)
    scratch &= t[1:]
    odd_bytes = np.flatnonzero(scratch)
    points = odd_bytes[b[odd_bytes] == 46]
    n_point = np.bincount(np.searchsorted(starts, points, side="right") - 1, minlength=len(starts))
    lengths = ends - starts
    lengths -= signed  # without the sign
    digits = lengths - n_point
    simple = digits >= 1
    simple &= digits <= _MAX_DIGITS
    simple &= n_point <= 1
    if len(odd_bytes) != np.count_nonzero(signed) + len(points):  # another byte somewhere: find its tokens
        at = np.searchsorted(starts, odd_bytes, side="right") - 1
        simple &= np.bincount(at, minlength=len(starts)) == signed + n_point

    values = np.empty(len(starts))
    all_simple = bool(simple.all())
    if not all_simple:  # exponents, long numbers or no number at all: float() decides
        other = np.flatnonzero(~simple)
        tokens = [block[s:e] for s, e in zip(starts[other].tolist(), ends[other].tolist())]
        if not all(NUMBER.fullmatch(tok) for tok in tokens):
            return None
        negative[other] = False
    body = starts
    body += signed
    # One group per (length, with a point or not): each is parsed with one pass per digit.
    key = lengths
    key *= 2
    key += n_point
    chosen = None if all_simple else np.flatnonzero(simple)
    if chosen is not None:
        key = key[chosen]
    order = np.argsort(key.astype(np.int16), kind="stable")
    if chosen is not None:
        order = chosen[order]
    sizes = np.bincount(key)
    upper = np.cumsum(sizes)
    for k in np.flatnonzero(sizes).tolist():
        sel = order[upper[k] - sizes[k]:upper[k]]
        values[sel] = _decimal(digit, body[sel], k // 2, bool(k % 2))
    np.negative(values, out=values, where=negative)
    if not all_simple:
        values[other] = [float(tok) for tok in tokens]
    return values.reshape(n, ncols)


def _decimal(digit: np.ndarray, starts: np.ndarray, length: int, has_point: bool) -> np.ndarray:
    """|value| of tokens of ``length`` bytes (no sign): digits, with one decimal point if
    ``has_point``.  ``digit`` is the block's bytes minus "0" (the point is 254).  The digits
    form an exact integer (Horner's rule), then one division by a power of ten."""
    at = starts.copy()
    acc = digit[at].astype(np.float64)
    if not has_point:
        for _ in range(length - 1):
            at += 1
            acc *= 10.0
            acc += digit[at]
        return acc
    frac = np.zeros(len(at), dtype=np.int64)
    seen = acc > 9  # the first byte may be the point (".5")
    acc[seen] = 0.0
    for _ in range(length - 1):
        at += 1
        d = digit[at]
        is_digit = d <= 9
        np.multiply(acc, 10.0, out=acc, where=is_digit)
        np.add(acc, d, out=acc, where=is_digit)
        frac += seen & is_digit
        seen |= ~is_digit
    return acc / _POW10[frac]


def _integers(block: bytes, ncols: int) -> np.ndarray | None:
    """``parse_block`` for a block of whole numbers only (no point, no exponent), parsed by NumPy's C
    text reader; None when some line is not ``ncols`` tokens of the form ``[+-]?[0-9]+`` or a
    value is 10^15 or more in magnitude (the general path decides those).

    NumPy's reader alone is not a check: it reads a lone "-" as 0.  So every sign must be
    followed by a digit (a sign after a digit, "1-2", stops its reader: the count falls short),
    and each line must hold ``ncols`` tokens; then every token is one number it reads in full.
    """
    b = np.frombuffer(block, np.uint8)
    if b[-1] != 10:
        return None
    sign = b == 45
    sign |= b == 43
    if sign.any():
        after = np.subtract(b[1:], np.uint8(48)) > 9  # the next byte is not a digit
        after &= sign[:-1]
        if after.any() or sign[-1]:
            return None
    inside = b > 32  # only digits, signs and whitespace here
    opens = np.empty(len(b), dtype=bool)  # a token starts at byte i
    opens[0] = inside[0]
    np.greater(inside[1:], inside[:-1], out=opens[1:])
    newlines = np.flatnonzero(b == 10)
    line_starts = np.empty(len(newlines), dtype=np.intp)
    line_starts[0] = 0
    line_starts[1:] = newlines[:-1] + 1
    per_line = np.add.reduceat(opens, line_starts, dtype=np.int32)  # tokens on each line
    if (per_line != ncols).any():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "could not be read to its end": not ours to decide
        try:
            values = np.fromstring(block, dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    if len(values) != len(newlines) * ncols or not (np.abs(values) < _INT_LIMIT).all():
        return None
    return values.astype(np.float64).reshape(len(newlines), ncols)
