"""A manifest's own text (name, version, keys) printed by `devportal manifest validate | load`:
no control character reaches the terminal, and `--json` keeps every string exactly (its
escapes are terminal-safe). Through the real CLI entry, on a copied bundle."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from devportal.cli import main
from tests.manifest.manifest_helpers import Bundle

NAME = "Evil\x1b[2J\x07\u202eApp\u0085x\u2028y"
VERSION = "1.0\x9b31m"
KEY = "x\x1b[31m\u202e"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def controls(text: str) -> list[str]:
    """The control and bidirectional characters of TEXT, line breaks apart."""
    return [c for c in text if c != "\n" and (unicodedata.category(c) == "Cc" or c in BIDI)]


def hostile(doc: dict[str, Any]) -> None:
    doc["name"], doc["version"], doc[KEY] = NAME, VERSION, 1


def test_the_text_output_has_no_control_characters(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    complete.edit(hostile)
    assert main(["manifest", "validate", str(complete.root)]) == 0  # a warning only
    out = capsys.readouterr().out
    assert not controls(out)
    lines = out.splitlines()
    assert lines[0] == f"{complete.manifest_path}: Evil[2JApp x y 1.031m"
    assert lines[2].startswith(r"  /x[31m: unknown property 'x\x1b[31m\u202e' is ignored")


def test_json_keeps_the_text_exactly(complete: Bundle, capsys: pytest.CaptureFixture[str]) -> None:
    complete.edit(hostile)
    assert main(["manifest", "validate", "--json", str(complete.root)]) == 0
    out = capsys.readouterr().out
    assert not controls(out)
    [finding] = json.loads(out)
    assert finding["pointer"] == "/" + KEY and finding["rule"] == "unknown-property"


def test_the_load_summary_line_has_no_control_characters(
    complete: Bundle, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    complete.edit(hostile)
    warehouse = tmp_path / "warehouse.duckdb"
    assert main(["manifest", "load", str(complete.root), "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    assert not controls(out)
    assert out.splitlines()[-1].startswith("recorded Evil[2JApp x y 1.031m in ")
