"""`devportal manifest validate`: output shapes and exit codes, run through the real CLI entry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devportal.cli import main
from tests.manifest.manifest_helpers import Bundle


def _break(d: dict[str, Any]) -> None:
    d["sources"][1]["id"] = "alert-box"  # error
    d["permissions"].append("slobs.teleport")  # warning
    d["pages"][1]["slot"] = "top_nav"  # error


def test_valid_manifest_exits_0(complete: Bundle, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifest", "validate", str(complete.manifest_path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{complete.manifest_path}: Stream Widgets 1.4.0\nvalid: 0 errors, 0 warnings\n"
    assert err == ""


def test_warnings_only_exits_0(complete: Bundle, capsys: pytest.CaptureFixture[str]) -> None:
    complete.edit(lambda d: d["permissions"].append("slobs.teleport"))
    assert main(["manifest", "validate", str(complete.root)]) == 0
    out = capsys.readouterr().out
    assert "warnings (1):\n  /permissions/9: permission 'slobs.teleport'" in out
    assert out.endswith("valid: 0 errors, 1 warning\n")


def test_human_output_groups_errors_before_warnings(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    complete.edit(_break)
    assert main(["manifest", "validate", str(complete.root)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "errors (2):",
        "  /pages/1/slot: slot 'top_nav' already holds the page /pages/0; the client allows one "
        "page per slot [one-page-per-slot]",
        "  /sources/1/id: source id 'alert-box' is already used by /sources/0/id; give each "
        "source its own id [unique-source-id]",
        "warnings (1):",
        "  /permissions/9: permission 'slobs.teleport' is not known to the desktop client; "
        "known permissions: slobs.scenes-sources, slobs.obs-settings, slobs.streaming, "
        "slobs.authorization, slobs.scene-collections, slobs.scene-transitions, "
        "slobs.external-links, slobs.notifications, slobs.hotkeys [unknown-permission]",
        "invalid: 2 errors, 1 warning",
    ]


def test_json_output_is_a_list_of_findings(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    complete.edit(_break)
    assert main(["manifest", "validate", "--json", str(complete.root)]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert isinstance(findings, list)
    assert all(set(f) == {"severity", "pointer", "rule", "message"} for f in findings)
    assert [(f["severity"], f["pointer"], f["rule"]) for f in findings] == [
        ("error", "/pages/1/slot", "one-page-per-slot"),
        ("error", "/sources/1/id", "unique-source-id"),
        ("warning", "/permissions/9", "unknown-permission"),
    ]


def test_json_output_of_a_valid_manifest_is_an_empty_list(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifest", "validate", "--json", str(complete.root)]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_document_level_finding_is_labelled(
    complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    complete.manifest_path.write_bytes(b"\xef\xbb\xbf" + complete.manifest_path.read_bytes())
    assert main(["manifest", "validate", str(complete.root)]) == 0
    assert "  (document): the file starts with a UTF-8 byte order mark" in capsys.readouterr().out


def test_missing_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["manifest"])
    assert exc.value.code == 2
    assert "validate" in capsys.readouterr().err
