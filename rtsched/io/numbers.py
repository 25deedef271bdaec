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

import numpy as np

# A number as the readers accept it: optional sign, digits with at most one decimal point,
# optional exponent.  ASCII only (no "inf", "nan", "1_000" or non-ASCII digits).
NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ALLOWED = b"0123456789.+-eE \t\r\n"
_MAX_DIGITS = 15  # up to 10^15 - 1: exact in float64, and so is every partial sum below
_POW10 = 10.0 ** np.arange(_MAX_DIGITS + 1)


def parse_block(block: bytes, ncols: int) -> np.ndarray | None:
    """``(lines, ncols)`` float64 values of ``block``, or None when some line is not exactly
    ``ncols`` numbers (or holds a token the fast path leaves to ``float``, badly formed).

    ``block`` holds whole lines, the last ending in ``\\n``.
    """
    if not block or ncols < 1 or block.translate(None, _ALLOWED):
        return None
    b = np.frombuffer(block, np.uint8)
    # t[i + 1] tells whether byte i is inside a token (t[0]: nothing before the block).
    t = np.empty(len(b) + 1, dtype=bool)
    t[0] = False
    np.greater(b, 32, out=t[1:])
    starts = np.flatnonzero(t[1:] > t[:-1])
    ends = np.flatnonzero(t[:-1] > t[1:])
    newlines = np.flatnonzero(b == 10)
    n = len(newlines)
    if n == 0 or len(starts) != n * ncols or len(ends) != len(starts):
        return None
    by_line = starts.reshape(n, ncols)
    # Tokens never span a newline, so these two checks put exactly ncols tokens on each line.
    if (by_line[:, -1] > newlines).any() or (by_line[1:, 0] < newlines[:-1]).any():
        return None

    first = b[starts]
    signed = ((first == 45) | (first == 43)).astype(np.int64)
    n_nondigit, n_point = _counts(b, t[1:], starts)
    lengths = ends - starts - signed  # without the sign
    simple = (n_nondigit == signed + n_point) & (n_point <= 1) & (lengths - n_point >= 1) & \
        (lengths - n_point <= _MAX_DIGITS)

    values = np.empty(len(starts))
    body = starts + signed
    # One group per (length, with a point or not): each is parsed as one matrix of digits.
    all_simple = bool(simple.all())
    chosen = None if all_simple else np.flatnonzero(simple)
    key = lengths * 2 + n_point if all_simple else lengths[chosen] * 2 + n_point[chosen]
    order = np.argsort(key.astype(np.int16), kind="stable")
    if chosen is not None:
        order = chosen[order]
    sizes = np.bincount(key)
    upper = np.cumsum(sizes)
    for k in np.flatnonzero(sizes).tolist():
        sel = order[upper[k] - sizes[k]:upper[k]]
        values[sel] = _decimal(b, body[sel], k // 2, bool(k % 2))
    values[first == 45] *= -1.0

    other = np.flatnonzero(~simple)
    if len(other):
        tokens = [block[s:e] for s, e in zip(starts[other].tolist(), ends[other].tolist())]
        if not all(NUMBER.fullmatch(t) for t in tokens):
            return None
        values[other] = [float(t) for t in tokens]
    return values.reshape(n, ncols)


def _counts(b: np.ndarray, in_token: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(non-digit bytes, decimal points) in each token (tokens start at ``starts``)."""
    where = np.flatnonzero(((b - np.uint8(48)) > 9) & in_token)  # few: signs and points
    token = np.searchsorted(starts, where, side="right") - 1
    n = len(starts)
    return np.bincount(token, minlength=n), np.bincount(token[b[where] == 46], minlength=n)


def _decimal(b: np.ndarray, starts: np.ndarray, length: int, has_point: bool) -> np.ndarray:
    """|value| of tokens of ``length`` bytes (no sign): digits, with one decimal point if
    ``has_point``.  The digits form an exact integer, then one division by a power of ten."""
    if length == 1:
        return (b[starts] - np.uint8(48)).astype(np.float64)
    chars = b[starts[:, None] + np.arange(length)]
    digits = (chars - np.uint8(48)).astype(np.float64)
    if not has_point:
        return digits @ _POW10[length - 1::-1]
    is_point = chars == 46
    point = np.argmax(is_point, axis=1)
    digits[is_point] = 0.0
    k = np.arange(length)
    exponent = (length - 1 - k) - (k < point[:, None])
    return (digits * _POW10[exponent]).sum(axis=1) / _POW10[length - 1 - point]
