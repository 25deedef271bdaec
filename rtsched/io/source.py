"""Opening a trace: a file, a gzip file or standard input ("-"), as blocks of whole UTF-8 lines.

Every problem with the bytes themselves becomes a one-line ``InputError`` naming the file (and
the line, when there is one): a missing or unreadable file, a file named ``.gz`` that is not
gzip data, a truncated or corrupt gzip stream, UTF-16 or UTF-32 text, NUL bytes (binary data, or
UTF-16 without a byte-order mark) and bytes that are not UTF-8.  Messages about the text's
encoding say "encoding".  A UTF-8 byte-order mark is skipped.  Gzip data is recognised by its
first two bytes, so a compressed trace is also read from stdin or under another name.
"""
from __future__ import annotations

import codecs
import gzip
import io
import os
import sys
import zlib
from typing import BinaryIO, Iterator

import numpy as np

from rtsched.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
BLOCK_BYTES = 1 << 20  # bytes read at a time: whole lines of about 1 MiB make one block
MAX_LINE_BYTES = 64 << 20  # a longer "line" is not a trace
_GZIP_MAGIC = b"\x1f\x8b"
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
)
_CONVERT = "convert it to UTF-8 first (e.g. iconv -t UTF-8)"


def display_name(path: str | os.PathLike[str]) -> str:
    """The name errors give a trace: the path, or ``<stdin>`` for "-"."""
    p = os.fspath(path)
    return STDIN_NAME if p == STDIN else p


class TraceInput:
    """A trace's bytes as blocks of whole lines (a context manager; stdin is never closed).

    ``blocks()`` yields ``(first line number, bytes)``: each block holds whole lines, the last
    one ending in ``\\n`` too (one is added to an unterminated last line), and is valid UTF-8
    without NUL bytes or a byte-order mark.  ``lines()`` yields the decoded lines one by one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.name = display_name(self.path)
        self._stream: BinaryIO | None = None
        self._owned: list[BinaryIO] = []

    # ------------------------------------------------------------------------- opening
    def __enter__(self) -> "TraceInput":
        raw = self._open_raw()
        head = self._peek(raw, 2)
        if head[:2] == _GZIP_MAGIC:
            gz = gzip.GzipFile(fileobj=raw, mode="rb")
            self._owned.append(gz)  # type: ignore[arg-type]
            self._stream = gz  # type: ignore[assignment]
        elif self.path.lower().endswith(".gz") and head:
            raise InputError(f"the name ends in .gz but the file is not gzip data (it starts with {head!r}); "
                             f"rename it or compress it", path=self.name)
        else:
            self._stream = raw
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in reversed(self._owned):
            try:
                stream.close()
            except (OSError, EOFError, zlib.error):
                pass
        self._owned.clear()

    def _open_raw(self) -> BinaryIO:
        if self.path == STDIN:
            stdin = sys.stdin
            if stdin is None:
                raise InputError("there is no standard input to read", path=self.name)
            raw = getattr(stdin, "buffer", None)
            if raw is None:  # a text-only stdin (e.g. io.StringIO in a notebook)
                return io.BytesIO(stdin.read().encode("utf-8"))
            return raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise InputError(f"cannot read trace: {exc.strerror or exc}", path=self.name) from None
        self._owned.append(fh)
        return fh

    def _peek(self, raw: BinaryIO, n: int) -> bytes:
        try:
            return raw.peek(n)[:n] if hasattr(raw, "peek") else b""  # type: ignore[attr-defined]
        except OSError as exc:
            raise InputError(f"cannot read trace: {exc.strerror or exc}", path=self.name) from None

    # ------------------------------------------------------------------------- reading
    def _read(self, line: int) -> bytes:
        assert self._stream is not None, "use TraceInput as a context manager"
        try:
            return self._stream.read(BLOCK_BYTES)
        except EOFError:
            raise InputError("the gzip data ends early: the file is truncated", path=self.name,
                             line=line) from None
        except (OSError, zlib.error) as exc:
            what = "corrupt gzip data" if self._owned and isinstance(self._stream, gzip.GzipFile) else "read error"
            raise InputError(f"cannot read trace ({what}): {exc}", path=self.name, line=line) from None

    def blocks(self) -> Iterator[tuple[int, bytes]]:
        """``(number of the block's first line, block)`` for each block of whole lines."""
        line = 1
        pending = b""
        first = True
        while True:
            data = self._read(line)
            if first:
                data = self._check_start(data)
                first = False
            if not data:
                if pending:
                    yield line, self._checked(pending + b"\n", line)
                return
            data = pending + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if b"\x00" in data:
                    self._checked(data, line)  # raises
                if len(data) > MAX_LINE_BYTES:
                    raise InputError(f"line longer than {MAX_LINE_BYTES >> 20} MiB: not a trace", path=self.name,
                                     line=line)
                pending = data
                continue
            block, pending = data[:cut], data[cut:]
            yield line, self._checked(block, line)
            line += int(np.count_nonzero(np.frombuffer(block, np.uint8) == 10))  # 3x bytes.count

    def lines(self) -> Iterator[str]:
        """The decoded lines, each ending in ``\\n``."""
        for _, block in self.blocks():
            text = block.decode("utf-8")
            start = 0
            while True:
                end = text.find("\n", start)
                if end < 0:
                    break
                yield text[start:end + 1]
                start = end + 1

    def _check_start(self, data: bytes) -> bytes:
        for bom, encoding in _WIDE_BOMS:
            if data.startswith(bom):
                raise InputError(f"encoding: the file is {encoding} text (it starts with a {encoding} "
                                 f"byte-order mark); traces are read as UTF-8: {_CONVERT}", path=self.name, line=1)
        if data.startswith(codecs.BOM_UTF8):
            return data[len(codecs.BOM_UTF8):]
        return data

    def _checked(self, block: bytes, line: int) -> bytes:
        """``block`` when it is UTF-8 text without NUL bytes; else an encoding error at its line."""
        nul = block.find(b"\x00")
        if nul >= 0:
            at = line + block.count(b"\n", 0, nul)
            start = block.rfind(b"\n", 0, nul) + 1
            sample = block[start:start + 8]
            wide = len(sample) >= 4 and (sample[1::2].count(0) >= 2 or sample[0::2].count(0) >= 2)
            what = "UTF-16 text without a byte-order mark?" if wide else "binary data?"
            raise InputError(f"encoding: NUL byte in the text ({what}); traces are read as UTF-8: {_CONVERT}",
                             path=self.name, line=at)
        if not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError as exc:
                at = line + block.count(b"\n", 0, exc.start)
                start = block.rfind(b"\n", 0, exc.start) + 1
                raise InputError(f"encoding: byte 0x{block[exc.start]:02x} at column {exc.start - start + 1} is not "
                                 f"UTF-8; traces are read as UTF-8: {_CONVERT}", path=self.name, line=at) from None
        return block
