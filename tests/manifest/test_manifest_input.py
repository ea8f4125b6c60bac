"""Bad input never crashes: each unreadable input is one clear line on stderr and exit code 2;
oddities the parser survives (byte order mark, repeated keys) are warnings."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devportal.cli import main
from devportal.manifest.findings import ManifestReport
from devportal.manifest.resource import build_rows
from devportal.manifest.validate import validate_document
from devportal.warehouse.target import Target
from tests.manifest.manifest_helpers import Bundle

VALID = '{\n  "name": "A",\n  "version": "1",\n  "supportedPlatforms": ["twitch"]\n}\n'


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "manifest.json"
    path.write_bytes(data)
    return path


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "manifest.json"
    os.mkfifo(path)
    return path


BAD_INPUTS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("missing", lambda t: t / "nope" / "manifest.json", "does not exist; pass a manifest.json"),
    ("folder-without-manifest", lambda t: t, "is a folder without manifest.json"),
    (
        "invalid-json",
        lambda t: _write(t, b'{\n  "name": "A",\n  "version" "1"\n}'),
        "is not valid JSON: Expecting ':' delimiter at line 3, column 13; fix the syntax there",
    ),
    (
        "trailing-comma",
        lambda t: _write(t, b'{"name": "A",}'),
        "at line 1, column 14",
    ),
    ("empty", lambda t: _write(t, b"  \n"), "is empty; a manifest is a JSON object"),
    (
        "array-top-level",
        lambda t: _write(t, b'[{"name": "A"}]'),
        "holds an array at the top level; a manifest is a JSON object",
    ),
    ("string-top-level", lambda t: _write(t, b'"manifest"'), "holds a string at the top level"),
    (
        "over-one-mib",
        lambda t: _write(t, b'{"name": "' + b"x" * (1024 * 1024) + b'"}'),
        "is over the 1 MiB limit for a manifest",
    ),
    (
        "latin-1",
        lambda t: _write(t, '{"name": "Caf\u00e9"}'.encode("latin-1")),
        "is not UTF-8 text (byte 0xe9 at line 1, byte offset 13); save it as UTF-8",
    ),
    (
        "utf-16-with-bom",
        lambda t: _write(t, VALID.encode("utf-16")),
        "is UTF-16 encoded; save it as UTF-8",
    ),
    (
        "utf-16-without-bom",
        lambda t: _write(t, VALID.encode("utf-16-le")),
        "contains NUL bytes",
    ),
    ("nan", lambda t: _write(t, b'{"name": NaN}'), "NaN is not a JSON value"),
    ("too-deep", lambda t: _write(t, b"[" * 200_000 + b"]" * 200_000), "nests arrays or objects"),
    ("fifo", _fifo, "is not a regular file"),
]


@pytest.mark.parametrize(
    ("make", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
@pytest.mark.parametrize("action", ["validate", "load"])
def test_unreadable_input_exits_2_with_one_line(
    action: str,
    make: Callable[[Path], Path],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = make(tmp_path)
    extra = ["--warehouse", str(tmp_path / "wh" / "warehouse.duckdb")] if action == "load" else []
    assert main(["manifest", action, str(path), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("devportal: error: ") and err.count("\n") == 1, err
    assert message in err
    # Nothing was written for unreadable input: no warehouse, no dlt folder, no lock.
    assert not (tmp_path / "wh").exists()


def test_folder_input_reads_its_manifest(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifest", "validate", str(complete.root)]) == 0
    assert str(complete.manifest_path) in capsys.readouterr().out


def test_exactly_one_mib_is_accepted(tmp_path: Path) -> None:
    head = b'{"name": "A", "version": "1", "supportedPlatforms": ["twitch"], "pad": "'
    body = head + b"x" * (1024 * 1024 - len(head) - 2) + b'"}'
    assert len(body) == 1024 * 1024
    _write(tmp_path, body)
    assert main(["manifest", "validate", str(tmp_path)]) == 0


def test_utf8_bom_is_accepted_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path, codecs.BOM_UTF8 + VALID.encode())
    assert main(["manifest", "validate", "--json", str(tmp_path)]) == 0
    findings = json.loads(capsys.readouterr().out)
    rules = [(f["severity"], f["pointer"], f["rule"]) for f in findings]
    assert ("warning", "", "utf8-bom") in rules


def test_repeated_key_is_a_warning_at_its_pointer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        '{"name": "A", "version": "1", "version": "2", "supportedPlatforms": ["twitch"],'
        ' "pages": [{"slot": "top_nav", "slot": "chat", "file": "x"}]}'
    )
    _write(tmp_path, text.encode())
    (tmp_path / "x").write_text("x")
    assert main(["manifest", "validate", "--json", str(tmp_path)]) == 0
    findings = json.loads(capsys.readouterr().out)
    repeated = [(f["pointer"], f["severity"]) for f in findings if f["rule"] == "duplicate-key"]
    assert repeated == [("/pages/0/slot", "warning"), ("/version", "warning")]


# --- no input shaped like a manifest crashes validation or row building --------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_keys = st.sampled_from(
    [
        "name", "version", "buildPath", "permissions", "sources", "pages", "authorizationUrls",
        "supportedPlatforms", "mediaDomains", "icon", "id", "type", "about", "file", "slot",
        "initialSize", "popOutSize", "width", "height", "minWidth", "minHeight", "description",
        "bannerImage", "bullets", "persistent", "allowPopout", "redirectPropertiesToTopNavSlot",
    ]
) | st.text(max_size=5)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=st.dictionaries(_keys, _json, max_size=10))
def test_validation_never_crashes(document: dict[str, Any]) -> None:
    bundle = Path(__file__).parent / "fixtures" / "complete"
    findings = validate_document(document, bundle, previous_platforms={"twitch"})
    for finding in findings:
        assert finding.severity in ("error", "warning")
        assert finding.pointer == "" or finding.pointer.startswith("/")
        assert finding.rule and finding.message
    # The warehouse rows of any such document are built without error, too.
    report = ManifestReport(bundle / "manifest.json", bundle, b"{}", document, "0" * 64, findings)
    rows = build_rows(report)
    assert rows["app_manifests"][0]["error_count"] == len(report.errors)


def test_a_nul_escape_is_warned_about_and_recorded_as_u_fffd_on_postgres(
    complete: Bundle, postgres: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """U+0000 is valid JSON but no PostgreSQL text (nor jsonb) can hold it: validated as
    written, said in a warning, recorded as U+FFFD (as in API answers), on PostgreSQL too."""
    complete.edit(lambda doc: doc.update(name="Stream\u0000Widgets"))
    assert "\\u0000" in complete.manifest_path.read_text("utf-8")
    assert main(["manifest", "validate", "--json", str(complete.root)]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert [(f["severity"], f["rule"]) for f in findings if f["rule"] == "nul-character"] == [
        ("warning", "nul-character")
    ]
    warehouse = tmp_path / "pg" / "warehouse.duckdb"
    args = ["manifest", "load", str(complete.root), "--warehouse", str(warehouse)]
    assert main([*args, "--destination", "postgres"]) == 0
    from devportal.warehouse.engines import connect

    with connect(Target.of(warehouse, "postgres"), read_only=True) as engine:
        names = engine.execute("SELECT name FROM devportal.app_manifests")
    assert names == [("Stream\ufffdWidgets",)]
