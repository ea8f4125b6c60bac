"""Helpers shared by the manifest tests: real PNG files, JSON pointer edits, bundle copies."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def png_bytes(width: int, height: int) -> bytes:
    """A real, decodable 8-bit RGB PNG: a dark square with a lighter disc (an app icon)."""
    rows = []
    cx, cy, r2 = width / 2, height / 2, (min(width, height) / 2.2) ** 2
    for y in range(height):
        row = bytearray(b"\x00")  # filter type 0 (None) for every scanline
        for x in range(width):
            inside = (x - cx) ** 2 + (y - cy) ** 2 <= r2
            row += b"\x91\x46\xff" if inside else b"\x17\x14\x1f"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def write_png(path: Path, width: int, height: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(width, height))
    return path


def _split(ptr: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]


def _parent(doc: Any, ptr: str) -> tuple[Any, str | int]:
    parts = _split(ptr)
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    return node, int(last) if isinstance(node, list) and last != "-" else last


def set_at(doc: Any, ptr: str, value: Any) -> None:
    """Set (or append with a trailing `-`) the value at a JSON pointer."""
    node, key = _parent(doc, ptr)
    if isinstance(node, list) and key == "-":
        node.append(value)
    else:
        node[key] = value


def remove_at(doc: Any, ptr: str) -> None:
    node, key = _parent(doc, ptr)
    del node[key]


class Bundle:
    """A copied bundle folder with helpers to read and rewrite its manifest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest_path = root / "manifest.json"

    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.manifest_path.read_text("utf-8"))
        return doc

    def write(self, doc: Any) -> None:
        self.manifest_path.write_text(json.dumps(doc, indent=2), "utf-8")

    def edit(self, change: Callable[[dict[str, Any]], None]) -> None:
        doc = self.doc()
        change(doc)
        self.write(doc)
