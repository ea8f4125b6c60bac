"""Image dimensions read from the file header (PNG, JPEG, GIF, WebP, BMP, ICO).

Only the width and height are needed for the icon check, and each format stores them in its
first bytes; parsing them with `struct` avoids an imaging dependency for a few dozen lines.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

# Headers of every format below fit in this many bytes (ICO: 31 directory entries), except JPEG,
# which is scanned segment by segment.
_HEAD = 512

# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def image_size(path: Path) -> tuple[int, int] | None:
    """(width, height) in pixels, or None when the format is unknown or the header is broken."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD)
            if head.startswith(b"\xff\xd8"):
                return _jpeg_size(fh)
            return _header_size(head)
    except OSError:
        return None


def _header_size(head: bytes) -> tuple[int, int] | None:
    try:
        if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
            width, height = struct.unpack(">II", head[16:24])
            return width, height
        if head[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", head[6:10])
            return width, height
        if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
            return _webp_size(head)
        if head.startswith(b"BM"):
            (dib_size,) = struct.unpack("<I", head[14:18])
            if dib_size == 12:  # OS/2 BITMAPCOREHEADER: 16-bit sizes
                width, height = struct.unpack("<HH", head[18:22])
                return width, height
            width, height = struct.unpack("<ii", head[18:26])
            return abs(width), abs(height)  # negative height means top-down rows
        if head[:4] == b"\x00\x00\x01\x00":
            return _ico_size(head)
    except struct.error:
        return None
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20:21] == b"\x2f":
        (bits,) = struct.unpack("<I", head[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    return None


def _ico_size(head: bytes) -> tuple[int, int] | None:
    (count,) = struct.unpack("<H", head[4:6])
    best: tuple[int, int] | None = None
    # Entries of 16 bytes follow the 6-byte header; the largest image is the one shown.
    for index in range(min(count, (_HEAD - 6) // 16)):
        entry = head[6 + 16 * index : 6 + 16 * (index + 1)]
        # A stored 0 means 256 (one byte cannot hold it).
        width, height = entry[0] or 256, entry[1] or 256
        if best is None or width * height > best[0] * best[1]:
            best = (width, height)
    return best


def _jpeg_size(fh: BinaryIO) -> tuple[int, int] | None:
    fh.seek(2)
    while True:
        byte = fh.read(1)
        while byte and byte != b"\xff":
            byte = fh.read(1)  # skip entropy-coded or garbage bytes up to the next marker
        while byte == b"\xff":
            byte = fh.read(1)  # markers may be padded with fill bytes
        if not byte:
            return None
        marker = byte[0]
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            continue  # stand-alone markers carry no length
        if marker in (0xD9, 0xDA):
            return None  # end of image or start of scan before any frame header
        length_bytes = fh.read(2)
        if len(length_bytes) < 2:
            return None
        (length,) = struct.unpack(">H", length_bytes)
        if marker in _JPEG_SOF:
            frame = fh.read(5)
            if len(frame) < 5:
                return None
            height, width = struct.unpack(">HH", frame[1:5])
            return width, height
        if length < 2:
            return None
        fh.seek(length - 2, 1)
