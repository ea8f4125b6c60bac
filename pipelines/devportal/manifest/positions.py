"""Where each JSON pointer of a manifest is written: line and column in its text, for output that
points into the file (`validate --format github` annotations).

The standard `json` parser keeps no positions, and a finding is keyed by its JSON pointer, so
this module walks the already parsed text once more and notes where every member and element
starts. It relies on the text being valid JSON (reader.parse accepted it): scalars, keys and
strings are read by the standard decoder (`JSONDecoder.raw_decode`), so escapes and numbers are
read exactly as the parser read them; only the structure (`{ } [ ] : ,` and whitespace) is
walked here, with an explicit stack, so no nesting depth can exhaust the recursion limit. A
library that parses with positions would be one more dependency for about sixty lines, and
would have to agree with the stdlib parser on every input the reader accepts; this cannot
disagree, since the same decoder reads every value.

An object member is placed at its key (the line a reader looks for: `"width": ...`), an array
element and the document at their first character. A pointer the text does not hold (a missing
required property, a key repeated later in its object) is placed at its nearest ancestor that
is written: the enclosing object.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass

from devportal.manifest.findings import pointer

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based, in characters


class Positions:
    """Line and column of every member and element of the JSON text TEXT (see the module doc)."""

    def __init__(self, text: str) -> None:
        self._offsets = _offsets(text)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def of(self, ptr: str) -> Position:
        """Where the value at pointer PTR is written, or its nearest written ancestor."""
        while ptr not in self._offsets and ptr:
            ptr = ptr[: ptr.rindex("/")]
        offset = self._offsets.get(ptr, 0)
        line = bisect_right(self._line_starts, offset)
        return Position(line, offset - self._line_starts[line - 1] + 1)


def _skip(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _offsets(text: str) -> dict[str, int]:
    """Pointer -> offset of the member's key, or of the element's (document's) first character.

    A key repeated in one object keeps its last occurrence, the one the parser keeps."""
    found: dict[str, int] = {}
    # One frame per open container: [pointer, is_object, next array index].
    stack: list[tuple[str, bool, list[int]]] = []
    pos = _skip(text, 0)
    current = ""
    found[current] = pos
    while True:
        char = text[pos] if pos < len(text) else ""
        if char in ("{", "["):
            pos = _skip(text, pos + 1)
            if text[pos] in "}]":  # an empty container: the value ends here
                pos += 1
            else:
                stack.append((current, char == "{", [0]))
                current, pos = _next_item(text, pos, stack[-1], found)
                continue
        else:
            _, pos = _DECODER.raw_decode(text, pos)  # a string, number, true, false or null
        # After a value: close the containers it ends, or step to the next item.
        while stack:
            pos = _skip(text, pos)
            if text[pos] == ",":
                current, pos = _next_item(text, _skip(text, pos + 1), stack[-1], found)
                break
            stack.pop()  # `}` or `]`
            pos += 1
        else:
            return found


def _next_item(
    text: str, pos: int, frame: tuple[str, bool, list[int]], found: dict[str, int]
) -> tuple[str, int]:
    """The pointer of the item starting at POS in the container FRAME, and where its value
    starts; notes the item's position in FOUND."""
    parent, is_object, index = frame
    if is_object:
        key, after_key = _DECODER.raw_decode(text, pos)
        item = parent + pointer([key])
        found[item] = pos
        colon = _skip(text, after_key)
        return item, _skip(text, colon + 1)
    item = parent + pointer([index[0]])
    index[0] += 1
    found[item] = pos
    return item, pos
