"""Small value coercions shared by the HTTP layer (page wrappers) and the transforms (rows)."""

from __future__ import annotations

import re
from typing import Any


def to_int(value: Any) -> int | None:
    """A 64-bit integer from an int, an integral float or a digit string; None otherwise.

    The API sends numbers as numbers or, on some deployments, as strings; a bool is not a number.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and len(text) < 20:
            return int(text)
    return None


# A `\u0000` escape in JSON text: its backslash follows an even run of backslashes (escaped
# ones). `\\u0000` is an escaped backslash then the text `u0000`, and stays; `\\\u0000` does not.
_NUL_ESCAPE_BYTES = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")
_NUL_ESCAPE_TEXT = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def replace_nul_escapes(content: bytes) -> tuple[bytes, int]:
    """JSON bytes with every `\\u0000` escape written `\\ufffd` (same length), and how many.

    NUL (U+0000) is valid in JSON and in DuckDB text, but PostgreSQL text cannot hold it (a load
    holding one fails whole), so devportal reads it as U+FFFD everywhere. JSON carries NUL only
    as this escape (a raw control byte is invalid JSON): replacing it before parsing is exact."""
    return _NUL_ESCAPE_BYTES.subn(rb"\1\\ufffd", content)


def replace_nul_escapes_text(text: str) -> tuple[str, int]:
    """`replace_nul_escapes` for JSON already decoded to text (a manifest file)."""
    return _NUL_ESCAPE_TEXT.subn(r"\1\\ufffd", text)


def json_type(value: Any) -> str:
    """The JSON type of a parsed VALUE: object, array, string, number, boolean or null."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"
