"""The manifest in an app developer's workflow: the schema an editor uses, GitHub Actions
annotations, the pre-commit hook, and the example CI workflows.

Everything runs for real: the CLI in process (`devportal.cli.main`), jsonschema's own
Draft 2020-12 validator over the printed schema, the `pre-commit` package on a git repository
made in a temp folder (installing this repository's working tree as the hook), and actionlint
on examples/ci/ (tests/manifest/workflow_tools.py says which actionlint and how it is had).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from devportal.cli import main
from devportal.manifest.output import escape_data, escape_property
from devportal.manifest.schema import load_schema
from tests.manifest.manifest_helpers import FIXTURES, Bundle
from tests.manifest.test_manifest_rules import CASES, Case
from tests.manifest.workflow_tools import (
    REPO_ROOT,
    ToolMissing,
    actionlint,
    git,
    snapshot_repository,
)

DEMO_APP = REPO_ROOT / "examples" / "demo-app"
EXAMPLE_WORKFLOWS = sorted((REPO_ROOT / "examples" / "ci").glob("*.yml"))


@pytest.fixture(autouse=True)
def _outside_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """Annotation paths are relative to GITHUB_WORKSPACE when set: a test sets it itself."""
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["manifest", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def printed_schema(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = _run(capsys, "schema")
    assert (code, err) == (0, "")
    schema: dict[str, Any] = json.loads(out)
    return schema


# --- manifest schema ------------------------------------------------------------------------


def _property_nodes(node: Any, where: str = "#") -> Iterator[tuple[str, Any]]:
    """Every schema under a `properties` keyword, anywhere in the schema (with its location)."""
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            yield f"{where}/properties/{name}", sub
        for key, value in node.items():
            yield from _property_nodes(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _property_nodes(value, f"{where}/{i}")


def test_schema_command_prints_the_schema_validate_checks(printed_schema: dict[str, Any]) -> None:
    assert printed_schema == load_schema()  # one schema: what the editor flags, validate flags
    assert printed_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(printed_schema)
    assert printed_schema["$id"] and printed_schema["title"] and printed_schema["description"]
    nodes = list(_property_nodes(printed_schema))
    assert len(nodes) >= 33  # every property of the spec and `$schema`, nested ones included
    undescribed = [where for where, node in nodes if not str(node.get("description", "")).strip()]
    assert undescribed == []


def _manifests_in_fixtures() -> list[Path]:
    return [DEMO_APP / "manifest.json", *sorted(FIXTURES.glob("*/manifest.json"))]


@pytest.mark.parametrize("manifest", _manifests_in_fixtures(), ids=lambda p: p.parent.name)
def test_schema_and_validate_accept_the_demo_app_and_the_fixtures(
    manifest: Path, printed_schema: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(manifest.read_text("utf-8"))
    assert list(Draft202012Validator(printed_schema).iter_errors(doc)) == []
    code, out, _ = _run(capsys, "validate", str(manifest))
    assert code == 0 and out.endswith("valid: 0 errors, 0 warnings\n")


def _schema_level(findings: list[dict[str, str]]) -> list[dict[str, str]]:
    """validate's findings that come from the schema: its keywords, and unknown properties
    (`additionalProperties: false`, a warning in validate because the client ignores them)."""
    return [
        f for f in findings if f["rule"].startswith("schema.") or f["rule"] == "unknown-property"
    ]


def _pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


EXTRA_CASES = [
    # the editor's `$schema` key is part of the manifest's vocabulary, at the top level only
    Case("schema-key", lambda b: b.edit(lambda d: d.update({"$schema": "./m.json"})), []),
    Case(
        "schema-key-not-a-string",
        lambda b: b.edit(lambda d: d.update({"$schema": 7})),
        [("error", "/$schema", "schema.type")],
    ),
    Case(
        "schema-key-nested",
        lambda b: b.edit(lambda d: d["sources"][0].update({"$schema": "./m.json"})),
        [("warning", "/sources/0/$schema", "unknown-property")],
    ),
]


@pytest.mark.parametrize("case", CASES + EXTRA_CASES, ids=[c.id for c in CASES + EXTRA_CASES])
def test_schema_rejects_a_manifest_where_validate_finds_it_broken_by_the_schema(
    case: Case,
    complete: Bundle,
    printed_schema: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every validation case of test_manifest_rules (and the `$schema` key): the printed schema,
    run by jsonschema itself, rejects the manifest exactly when validate reports a schema-level
    finding, at the same place; the rules a schema cannot say (files, unique ids, sizes) are
    validate's alone."""
    case.change(complete)
    code, out, _ = _run(capsys, "validate", "--format", "json", str(complete.root))
    findings = json.loads(out)
    assert [(f["severity"], f["pointer"], f["rule"]) for f in findings] == case.expected
    schema_level = _schema_level(findings)
    doc = complete.doc()
    errors = list(Draft202012Validator(printed_schema).iter_errors(doc))
    assert bool(errors) == bool(schema_level), (errors, findings)
    if any(f["rule"].startswith("schema.") for f in findings):
        assert code == 1
    # each schema error sits at (or holds) a finding's pointer: the editor marks that place
    for error in errors:
        at = _pointer(error.absolute_path)
        assert any(f["pointer"] == at or f["pointer"].startswith(at + "/") for f in schema_level)


# --- validate --format github ---------------------------------------------------------------

_ANNOTATION = re.compile(r"^::(error|warning) ([^:]*)::(.*)$")


def _unescape(text: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def _annotations(out: str) -> list[dict[str, str]]:
    """The workflow commands in OUT as dicts: command, message and each property, unescaped."""
    found = []
    for line in out.splitlines():
        match = _ANNOTATION.match(line)
        if match:
            command, properties, message = match.groups()
            parsed = dict(part.split("=", 1) for part in properties.split(","))
            found.append(
                {"command": command, "message": _unescape(message)}
                | {key: _unescape(value) for key, value in parsed.items()}
            )
    return found


# Hand-written so each bad field's line and column can be read off the text.
BROKEN = """\
{
  "name": "Stream Widgets",
  "version": "",
  "supportedPlatforms": ["twitch", "myspace"],
  "sources": [
    {
      "id": "alert-box",
      "type": "browser_source",
      "name": "Alert Box",
      "file": "source.html"
    }
  ],
  "pages": [
    { "slot": "top_nav", "file": "settings.html", "persistant": true }
  ]
}
"""


def test_github_annotations_carry_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "app"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(BROKEN, "utf-8")
    (bundle / "settings.html").write_text("<p>settings</p>")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "validate", "--format", "github", "app")
    assert code == 1 and err == ""
    got = [
        (a["command"], a["file"], int(a["line"]), int(a["col"]), a["title"], a["message"])
        for a in _annotations(out)
    ]
    assert got == [
        # a missing property has no place of its own: the enclosing object's
        ("error", "app/manifest.json", 6, 5, "manifest schema.required",
         "/sources/0/about: required property 'about' is missing"),
        ("error", "app/manifest.json", 10, 7, "manifest file-exists",
         "/sources/0/file: 'source.html' does not exist in the bundle; add the file or fix "
         "the path"),
        ("error", "app/manifest.json", 4, 36, "manifest schema.enum",
         "/supportedPlatforms/1: 'myspace' is not allowed; allowed values: twitch, youtube, "
         "facebook, mixer"),
        ("error", "app/manifest.json", 3, 3, "manifest schema.minLength",
         "/version: must not be empty"),
        ("warning", "app/manifest.json", 14, 51, "manifest unknown-property",
         "/pages/0/persistant: unknown property 'persistant' is ignored by the desktop client "
         "(did you mean 'persistent'?); "
         "known properties here: allowPopout, file, persistent, popOutSize, slot"),
        # missing at the top level: the document's own line
        ("warning", "app/manifest.json", 1, 1, "manifest client-requires-property",
         got[5][5]),
    ]  # fmt: skip
    assert got[5][5].startswith("/permissions: the spec makes 'permissions' optional")
    # every line of the output is an annotation but the last, the log's own summary
    assert len(out.splitlines()) == len(got) + 1
    assert out.splitlines()[-1].startswith("app/manifest.json: Stream Widgets")
    assert out.splitlines()[-1].endswith(": invalid: 4 errors, 2 warnings")


def _written_at(text: str, line: int, col: int) -> str:
    return text.splitlines()[line - 1][col - 1 :]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_annotation_points_at_its_field(
    case: Case, complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    """For every validation case: each annotation's line and column show the field its pointer
    names (the member's key, or the array element), or, for a field the file does not hold, the
    enclosing object."""
    case.change(complete)
    code, out, _ = _run(capsys, "validate", "--format", "github", str(complete.root))
    text = complete.manifest_path.read_text("utf-8")
    annotations = _annotations(out)
    assert len(annotations) == len(case.expected)
    assert code == (1 if any(sev == "error" for sev, _, _ in case.expected) else 0)
    doc = complete.doc()
    for annotation, (severity, ptr, _rule) in zip(annotations, case.expected, strict=True):
        assert annotation["command"] == severity
        assert annotation["file"] == complete.manifest_path.as_posix()  # outside the cwd
        at = _written_at(text, int(annotation["line"]), int(annotation["col"]))
        parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]
        # the deepest part of the pointer the document holds
        node: Any = doc
        held: list[str] = []
        for part in parts:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                break
            held.append(part)
        if not held:
            assert (annotation["line"], annotation["col"]) == ("1", "1")  # the document
            continue
        parent: Any = doc
        for part in held[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        if isinstance(parent, dict):
            assert at.startswith(json.dumps(held[-1]) + ":"), (ptr, at)
        else:
            assert at.startswith(json.dumps(node)[:1]), (ptr, at)


def test_repeated_key_is_annotated_where_it_is_repeated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "manifest.json").write_text(
        '{"name": "a", "version": "1", "permissions": [], "sources": [], "pages": [],\n'
        ' "supportedPlatforms": ["twitch"],\n'
        '    "name": "b"}\n',
        "utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "validate", "--format", "github", "manifest.json")
    assert code == 0
    [annotation] = _annotations(out)
    assert (annotation["title"], annotation["line"], annotation["col"]) == (
        "manifest duplicate-key",
        "3",
        "5",
    )


def test_github_annotation_of_unreadable_json_points_at_the_syntax_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "manifest.json").write_text('{\n  "name": "x",\n  "version": }\n', "utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "validate", "--format", "github", ".")
    assert code == 2
    [annotation] = _annotations(out)
    assert (annotation["command"], annotation["file"], annotation["line"], annotation["col"]) == (
        "error",
        "manifest.json",
        "3",
        "14",
    )
    assert annotation["title"] == "manifest unreadable"
    assert "is not valid JSON: Expecting value at line 3, column 14" in annotation["message"]
    assert err.startswith("devportal: error: ") and err.count("\n") == 1


def test_annotation_text_is_escaped_so_it_stays_one_command(
    complete: Bundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An author's key with GitHub's separators, a percent sign and line breaks: one command
    line, properties intact, the message decoding back to the text."""
    complete.edit(lambda d: d.update({"a,b:c%25\r\n::error::x": 1}))
    workspace = complete.root.parent
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    code, out, _ = _run(capsys, "validate", "--format", "github", str(complete.root))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("::warning file=")
    [annotation] = _annotations(out)
    assert annotation["file"] == f"{complete.root.name}/manifest.json"  # relative to workspace
    assert annotation["title"] == "manifest unknown-property"
    # the line break is shown as a space (display.terminal); the rest arrives as written
    assert annotation["message"].startswith(
        "/a,b:c%25  ::error::x: unknown property 'a,b:c%25\\r\\n::error::x' is ignored"
    )
    assert "%25" in lines[0] and "\r" not in out


def test_escaping_follows_github_rules() -> None:
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_several_paths_exit_with_the_worst(
    tmp_path: Path, complete: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(BROKEN, "utf-8")
    code, out, _ = _run(capsys, "validate", "--format", "github", str(complete.root), str(broken))
    assert code == 1
    assert {a["file"] for a in _annotations(out)} == {broken.as_posix()}
    assert out.count(": valid: 0 errors, 0 warnings\n") == 1
    code, _, err = _run(capsys, "validate", str(complete.root), str(tmp_path / "missing"))
    assert code == 2 and err.startswith("devportal: error: ") and "missing does not exist" in err
    code, _, err = _run(capsys, "validate", "--json", str(complete.root), str(broken))
    assert code == 2 and "--format json prints one manifest's findings" in err


# --- pre-commit -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This repository's working tree committed to a temp git repository (pre-commit clones a
    hook repository at a commit)."""
    root = tmp_path_factory.mktemp("hook-repo") / "devportal"
    return root, snapshot_repository(root)


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's own cache (its clones and hook environments), shared by this module."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _app_repository(root: Path, config: str) -> Path:
    """An app's git repository: the demo app's bundle, a .pre-commit-config.yaml, a commit."""
    shutil.copytree(DEMO_APP, root, symlinks=True)
    (root / "package.json").write_text('{"name": "stream-widgets"}\n')  # not a manifest
    (root / ".pre-commit-config.yaml").write_text(config)
    git(root, "init", "--quiet")
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--no-verify", "--message", "app")
    return root


def _pre_commit(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        # the console script of this environment's devportal, for the `language: system` hook
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("GITHUB_WORKSPACE", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--color", "never", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _break_manifest(repo: Path) -> None:
    manifest = repo / "manifest.json"
    doc = json.loads(manifest.read_text("utf-8"))
    doc["supportedPlatforms"] = ["twitch", "myspace"]
    manifest.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
    git(repo, "add", "manifest.json")


HOOK_CONFIGS: dict[str, Callable[[Path, str], str]] = {
    # what .pre-commit-hooks.yaml offers: pre-commit installs this repository with pip
    "hook-repository": lambda repo, rev: (
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: devportal-manifest\n"
    ),
    # docs/manifest.md's second way: the devportal already installed, no install by pre-commit
    "local-system": lambda repo, rev: (
        "repos:\n  - repo: local\n    hooks:\n      - id: devportal-manifest\n"
        "        name: devportal manifest\n        entry: devportal manifest validate\n"
        "        language: system\n        files: (^|/)manifest\\.json$\n"
    ),
}


@pytest.mark.parametrize("style", sorted(HOOK_CONFIGS))
def test_pre_commit_runs_the_hook_on_an_app_repository(
    style: str,
    hook_repository: tuple[Path, str],
    pre_commit_home: Path,
    tmp_path: Path,
) -> None:
    repo = _app_repository(tmp_path / "app", HOOK_CONFIGS[style](*hook_repository))
    good = _pre_commit(repo, pre_commit_home, "--all-files")
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"^devportal manifest\.+Passed$", good.stdout, re.M), good.stdout

    _break_manifest(repo)
    bad = _pre_commit(repo, pre_commit_home)  # the staged files, as on `git commit`
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"^devportal manifest\.+Failed$", bad.stdout, re.M), bad.stdout
    assert "- exit code: 1" in bad.stdout
    assert (
        "  /supportedPlatforms/1: 'myspace' is not allowed; allowed values: twitch, youtube, "
        "facebook, mixer [schema.enum]" in bad.stdout
    )
    assert "package.json" not in bad.stdout  # only manifest.json files are handed to the hook


# --- examples/ci and actionlint -------------------------------------------------------------


def _lint(paths: list[Path]) -> tuple[str, list[Any]]:
    try:
        return actionlint(paths)
    except ToolMissing as err:
        pytest.fail(str(err), pytrace=False)


def test_example_workflows_pass_actionlint() -> None:
    names = {p.name for p in EXAMPLE_WORKFLOWS}
    assert names == {"devportal-sync.yml", "manifest-validate.yml"}
    which, problems = _lint(EXAMPLE_WORKFLOWS)
    assert problems == [], which


def test_example_workflows_do_what_they_say() -> None:
    sync = (REPO_ROOT / "examples" / "ci" / "devportal-sync.yml").read_text()
    assert re.search(r"^\s+- cron: \"[^\"]+\"", sync, re.M)
    assert "${{ secrets.DEVPORTAL_ACCESS_TOKEN }}" in sync
    assert "DESTINATION__POSTGRES__CREDENTIALS: ${{ secrets." in sync
    assert sync.index("devportal sync --destination") < sync.index("devportal status --destination")
    validate = (REPO_ROOT / "examples" / "ci" / "manifest-validate.yml").read_text()
    assert re.search(r"^on:\n  push:", validate, re.M)
    assert "devportal manifest validate --format github" in validate


BROKEN_WORKFLOW = """\
name: broken
on: push
jobs:
  build:
    runs-on: ${{ matrix.os }}
    steps:
      - run: echo "${{ github.evnt.name }}"
"""


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    """The checker itself works: problems in a bad workflow come out, at their lines."""
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN_WORKFLOW)
    which, problems = _lint([broken])
    got = {(p.line, p.kind) for p in problems}
    assert {(5, "expression"), (7, "expression")} <= got, (which, problems)
    assert any('"evnt"' in p.message for p in problems)
