"""Small value coercions shared by the HTTP layer (page wrappers) and the transforms (rows)."""

from __future__ import annotations

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
