"""Image sizes from file headers, for each format the icon check reads."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from devportal.manifest.images import image_size
from tests.manifest.manifest_helpers import png_bytes


def _jpeg(width: int, height: int) -> bytes:
    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    exif = b"Exif\x00\x00" + b"\xff" * 40  # 0xFF bytes inside a segment must not confuse it
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x01\x03\x11\x01"
    return (
        b"\xff\xd8"
        + b"\xff\xe0" + struct.pack(">H", len(app0) + 2) + app0
        + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif
        + b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" * 65
        + b"\xff\xff\xc2" + struct.pack(">H", len(sof) + 2) + sof
        + b"\xff\xda\x00\x08" + b"\x00" * 6 + b"\xff\xd9"
    )  # fmt: skip


def _riff(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _webp_lossy(width: int, height: int) -> bytes:
    return _riff(b"VP8 ", b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height))


def _webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return _riff(b"VP8L", b"\x2f" + struct.pack("<I", bits))


def _webp_extended(width: int, height: int) -> bytes:
    return _riff(
        b"VP8X",
        b"\x00" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little"),
    )


def _bmp(width: int, height: int) -> bytes:
    dib = struct.pack("<IiiHH", 40, width, -height, 1, 24) + b"\x00" * 24
    return b"BM" + struct.pack("<IHHI", 14 + len(dib), 0, 0, 14 + len(dib)) + dib


def _ico(*sizes: int) -> bytes:
    entries = b"".join(struct.pack("<BBBBHHII", s % 256, s % 256, 0, 0, 1, 32, 0, 0) for s in sizes)
    return struct.pack("<HHH", 0, 1, len(sizes)) + entries


def _gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


CASES = [
    ("png", png_bytes(300, 200), (300, 200)),
    ("jpeg-progressive-with-exif", _jpeg(512, 384), (512, 384)),
    ("gif", _gif(256, 256), (256, 256)),
    ("webp-lossy", _webp_lossy(640, 480), (640, 480)),
    ("webp-lossless", _webp_lossless(257, 1000), (257, 1000)),
    ("webp-extended", _webp_extended(4000, 3000), (4000, 3000)),
    ("bmp-top-down", _bmp(256, 128), (256, 128)),
    ("ico-largest-entry", _ico(16, 48, 256, 32), (256, 256)),
    ("svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
    ("truncated-png", png_bytes(10, 10)[:20], None),
    ("jpeg-without-frame", b"\xff\xd8\xff\xd9", None),
    ("truncated-jpeg", _jpeg(10, 10)[:30], None),
    ("empty", b"", None),
]


@pytest.mark.parametrize(("data", "size"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_image_size(data: bytes, size: tuple[int, int] | None, tmp_path: Path) -> None:
    path = tmp_path / "image"
    path.write_bytes(data)
    assert image_size(path) == size


def test_missing_file_has_no_size(tmp_path: Path) -> None:
    assert image_size(tmp_path / "nope.png") is None
