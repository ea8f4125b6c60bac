"""Text from the API or a manifest, made safe for the formats that interpret it.

Statuses, platform names, manifest names and keys are whatever the other side sent. Printed
as they are, they act on what shows them: a terminal obeys ESC and BEL sequences (colours,
cursor moves, a changed window title, a carriage return that overwrites the line), a
spreadsheet runs a CSV cell starting with `=` `+` `-` `@` as a formula (OWASP: CSV injection),
Markdown renders raw HTML, links and emphasis and ends a table row at a line break, matplotlib
parses `$...$` as mathematics (and fails on a bad formula). One function per destination:

- `terminal`: one line of text: line breaks and tabs become spaces, every other control
  character (C0, DEL, C1) and the bidirectional controls (which reorder what is shown, as in
  "Trojan Source") are removed;
- `csv_cell`: a text cell as `terminal` gives it, and prefixed with `'` when it would start a
  formula (OWASP's guidance); numbers, and text that is just a number such as `-3`, stay;
- `markdown_cell`: `terminal`, then Markdown's active characters (pipes, HTML, emphasis,
  links, code, maths) backslash-escaped;
- `chart_label`: `terminal`, `$` escaped for matplotlib, and shortened past `CHART_LABEL_MAX`;
- `json_document`: a JSON text written with `ensure_ascii=False`, with what `terminal` would
  remove written as `\\uXXXX` escapes: the same data, exact, and harmless on a terminal.

The HTML page escapes with `html.escape`; JSON written with `ensure_ascii=True` (the default)
escapes every such character already.
"""

from __future__ import annotations

import re
from typing import Any

from devportal.base.errors import BIDI_CONTROLS

# Line breaks (LF, VT, FF, CR, NEL, LINE and PARAGRAPH SEPARATOR) and the tab: a space.
_BREAKS = "\t\n\x0b\x0c\r\x85\u2028\u2029"
_BIDI = BIDI_CONTROLS  # the scrub's list (errors.py): one place decides what reorders text
# Other control characters (C0, DEL, C1) and the bidirectional ones: removed.
_CONTROLS = "\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f" + _BIDI
_BREAK = re.compile(f"[{_BREAKS}]")
_CONTROL = re.compile(f"[{_CONTROLS}]")
# What `terminal` changes that JSON leaves as it is (JSON escapes all of C0 in strings).
_JSON_UNESCAPED = re.compile(f"[\x7f-\x9f\u2028\u2029{_BIDI}]")

# A cell starting with one of these (after any spaces) is a formula to a spreadsheet.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
# Markdown's (CommonMark and GitHub's) active characters inside a table cell.
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]<>&|~$])")
CHART_LABEL_MAX = 40


def terminal(text: str) -> str:
    """TEXT as one line a terminal only shows: breaks and tabs a space, controls removed."""
    return _CONTROL.sub("", _BREAK.sub(" ", text))


def csv_cell(value: Any) -> Any:
    """VALUE for a CSV cell: non-text values as they are; text one line (`terminal`), with a
    `'` before it when it would start a formula, unless it is just a number (`-3`)."""
    if not isinstance(value, str):
        return value
    text = terminal(value)
    if _NUMBER.fullmatch(text.strip()):
        return text
    if value.lstrip(" ").startswith(FORMULA_STARTS) or text.lstrip().startswith(FORMULA_STARTS):
        return "'" + text
    return text


def markdown_cell(text: str) -> str:
    """TEXT as the content of a Markdown table cell: one line, shown literally."""
    return _MARKDOWN_ACTIVE.sub(r"\\\1", terminal(text))


def chart_label(text: str) -> str:
    """TEXT as a matplotlib label: one line, no mathematics, at most CHART_LABEL_MAX characters."""
    line = terminal(text)
    if len(line) > CHART_LABEL_MAX:
        line = line[: CHART_LABEL_MAX - 1] + "\u2026"
    return line.replace("$", r"\$")


def json_document(text: str) -> str:
    """A JSON TEXT (written with `ensure_ascii=False`) with every character `terminal` would
    change written as its `\\uXXXX` escape. JSON escapes C0 in strings itself; the others can
    only stand inside strings, so the data read back is the same."""
    return _JSON_UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
