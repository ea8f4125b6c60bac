"""Reading one body: by the attempt's deadline, one socket read at a time; within its cap
(`max_body_mb`; by default 64 KiB per row of the list's `per_page`, between 16 and 64 MiB, and
16 MiB where `per_page` is not known yet); gzip/deflate undone 256 KiB at a time whatever the
ratio, so a small bomb cannot grow past the cap; and at most `LARGE_BODIES` bodies past
`LARGE_BODY` read at once, so the bodies in flight stay bounded in memory."""

from __future__ import annotations

import ctypes
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import requests
import urllib3

from devportal.base.coercion import to_int
from devportal.base.errors import server_text

READ_CHUNK = 256 * 1024  # one socket read at most; the deadline is checked between reads
MIB = 1024 * 1024
# the cap on one decoded body when `max_body_mb` is not set: ROW_BYTES per row of the list's
# `per_page` (a subscription is ~150 bytes, a settings entry a few KB), within these bounds;
# BODY_FLOOR also where `per_page` is not known yet (page 1, an account, an error body)
BODY_ROW_BYTES = 64 * 1024
BODY_FLOOR = 16 * MIB
BODY_CEILING = 64 * MIB
LARGE_BODY = 1 * MIB  # a body past this waits for one of LARGE_BODIES turns to read on
LARGE_BODIES = 2
ENCODINGS = ("gzip", "deflate")  # what the client asks for and undoes itself


def format_size(nbytes: int) -> str:
    """Bytes for messages: 16 MiB, 1.5 GiB, 300 KiB."""
    for unit, scale in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} bytes"


class DeadlinePassed(Exception):
    """The attempt's deadline passed while its body was still arriving."""


class TooLarge(Exception):
    """The body is past its cap; the message says how large it is or claims to be."""


class BadEncoding(Exception):
    """A Content-Encoding the client did not ask for and cannot undo."""


class Undecodable(Exception):
    """A compressed body that does not decompress; `body` fingerprints what came."""

    def __init__(self, message: str, body: int) -> None:
        super().__init__(message)
        self.body = body


def read_body(
    resp: requests.Response, deadline: float, cap: int, large: threading.BoundedSemaphore
) -> bytes:
    """The whole decoded body by `deadline`, at most `cap` bytes (`TooLarge` beyond).

    One socket read at a time, each waiting at most what is left, so a server dripping bytes
    cannot stretch the attempt. The Content-Encoding is undone here (`_Inflater`), at most
    READ_CHUNK decoded bytes per step whatever the compression ratio, so a small compressed
    body that expands to gigabytes is refused at `cap` without ever being held. A body past
    LARGE_BODY first takes one of the client's LARGE_BODIES turns (`large`), waiting for it
    within the deadline: the bodies in flight hold at most workers x LARGE_BODY plus
    LARGE_BODIES x cap, whatever the server sends.
    """
    raw = resp.raw
    declared = to_int(resp.headers.get("Content-Length"))
    if declared is not None and declared > cap:  # refused before a byte of it is read
        raise TooLarge(f"declares {format_size(declared)} (Content-Length)")
    decode = _decoder(resp.headers.get("Content-Encoding"))
    conn = getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    chunks: list[bytes] = []
    size = 0
    turn = False
    chunk = b""
    pieces: Iterable[bytes] = ()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlinePassed
            if sock is not None:
                sock.settimeout(left)
            try:
                chunk = raw.read1(READ_CHUNK, decode_content=False)
            except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as err:
                raise DeadlinePassed from err
            pieces = decode(chunk) if decode is not None else ([chunk] if chunk else [])
            for piece in pieces:
                size += len(piece)
                if size > cap:
                    raise TooLarge("is larger")
                if size > LARGE_BODY and not turn:
                    turn = large.acquire(timeout=max(0.0, deadline - time.monotonic()))
                    if not turn:
                        raise DeadlinePassed
                chunks.append(piece)
            if not chunk:
                body = b"".join(chunks)
                chunks.clear()
                return body
    except BaseException:
        # the error's traceback keeps this frame alive (in a future, a log record, the error
        # the user sees): it must not keep what was read with it
        chunks.clear()
        chunk, pieces = b"", ()
        if turn:  # a large body dropped (a bomb, most likely): its memory goes back too
            _trim_heap()
        raise
    finally:
        if turn:
            large.release()


def _trim_heap() -> None:
    """Give the memory freed in malloc's arenas back to the system (glibc's `malloc_trim`;
    elsewhere nothing). After a large body is dropped: glibc keeps what a thread freed for that
    thread's next use, so workers taking turns at refused bodies would each keep one's worth
    resident (measured: a client refusing nine 512 MiB gzip bombs fetched at once, in a 58 MB
    process, peaked at 209 MB without this and 96 MB with it). Not after a body that is kept:
    a legitimately large page is reused memory, and trimming costs a walk of every arena."""
    trim = _MALLOC_TRIM
    if trim is not None:
        trim(0)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return cast(Callable[[int], int], ctypes.CDLL(None).malloc_trim)
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl, Windows)
        return None


_MALLOC_TRIM = _malloc_trim()


def _decoder(header: str | None) -> Callable[[bytes], Iterator[bytes]] | None:
    """What undoes a Content-Encoding header (None: nothing to undo): the codings in the order
    the server applied them, undone last first; an empty chunk means the body has ended."""
    codings = [c.strip().lower() for c in (header or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
    if unknown or len(codings) > 4:
        shown = server_text(header, 60)
        raise BadEncoding(
            f"the API sent a body encoded as {shown!r}, which devportal did not ask for "
            f"(it asks for {', '.join(ENCODINGS)}) and cannot read"
        )
    stages = [_Inflater(c) for c in reversed(codings)]

    def decode(chunk: bytes) -> Iterator[bytes]:
        def through(i: int, data: bytes) -> Iterator[bytes]:
            if i == len(stages):
                if data:
                    yield data
                return
            for piece in stages[i].feed(data):
                yield from through(i + 1, piece)
            if not data:  # the end: what each stage still holds, then the end downstream
                yield from through(i + 1, b"")

        yield from through(0, chunk)

    return decode


class _Inflater:
    """One gzip or deflate coding undone, READ_CHUNK decoded bytes at a time at most (zlib's
    `max_length`): input not consumed yet waits in `unconsumed_tail`, never expanded ahead.

    As browsers and urllib3 do: concatenated gzip members are read on, bytes after the last
    one (or after a deflate stream) are ignored, and "deflate" without zlib's header (raw
    deflate, which some servers send) is read too. A stream cut short is an error."""

    HEAD = READ_CHUNK  # deflate input kept until the first output, to read again as raw

    def __init__(self, coding: str) -> None:
        self.gzip = coding in ("gzip", "x-gzip")
        self._raw = False
        self._obj = self._new()
        self._head = b""
        self._fed = self._out = self._ended = self._ignore = False
        self._members = 0  # gzip members read to their end
        self._crc = 0  # of all input: which body it was, for the retry policy

    def _new(self) -> Any:
        if self.gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if self._raw else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes DATA yields, in pieces of READ_CHUNK at most; b"": the end."""
        self._crc = zlib.crc32(data, self._crc)
        if not data:
            if self._fed and not (self._ended or self._ignore):
                raise Undecodable(self._what("is cut short"), self._crc)
            return
        self._fed = True
        if not (self.gzip or self._out or self._raw) and len(self._head) <= self.HEAD:
            self._head += data  # zlib's header is 2 bytes: its error comes within the first read
        more = False  # the last call filled READ_CHUNK: output may still be pending
        while not self._ignore and (data or more):
            if self._ended:  # bytes after the end of a stream
                if not self.gzip:
                    self._ignore = True
                    break
                self._obj, self._ended = self._new(), False
            try:
                out = self._obj.decompress(data, READ_CHUNK)
            except zlib.error as err:
                if self.gzip and self._members:  # no further member: trailing bytes, ignored
                    self._ignore = True
                    break
                if self.gzip or self._out or self._raw or len(self._head) > self.HEAD:
                    raise Undecodable(self._what("does not decompress"), self._crc) from err
                self._raw = True  # raw deflate: read what came so far again
                self._obj, data, self._head = self._new(), self._head, b""
                continue
            if out:
                self._out = True
                yield out
            more = len(out) == READ_CHUNK
            if self._obj.eof:
                self._ended, more = True, False
                self._members += 1
                data = self._obj.unused_data
            else:
                data = self._obj.unconsumed_tail

    def _what(self, problem: str) -> str:
        return f"a {'gzip' if self.gzip else 'deflate'}-encoded body that {problem}"
