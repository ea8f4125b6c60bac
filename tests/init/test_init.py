"""`devportal init [DIR]` through the real CLI: the files it writes parse and list every key, a
second run never overwrites anything (a user's edits stay byte for byte), the secrets' `.gitignore`
entry is added once, and a sync with nothing but the written config and a token in the
environment fills a warehouse from the sandbox."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from dlt.common.configuration.specs.base_configuration import is_secret_hint

from tests.helpers import current_rows, run_devportal, truth_rows
from tests.test_config_file import SECTIONS, listed_keys

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
WRITTEN = [".dlt/config.toml", ".dlt/secrets.toml", ".gitignore"] + [
    f"notebooks/{name}" for name in NOTEBOOKS
]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under FOLDER (relative path -> bytes)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def set_values(table: dict[str, Any]) -> list[str]:
    """The keys of TABLE (nested) that hold a value, not a table."""
    return [
        key
        for key, value in table.items()
        for key in ([f"{key}.{k}" for k in set_values(value)] if isinstance(value, dict) else [key])
    ]


def said(out: str) -> dict[str, str]:
    """The CLI's `wrote|kept|added PATH (...)` lines: path -> action."""
    actions = {}
    for line in out.splitlines():
        action, _, rest = line.partition(" ")
        if action in ("wrote", "kept", "added"):
            actions[rest.split(" (")[0]] = action
    return actions


def test_init_writes_every_file_and_each_parses(tmp_path: Path, devportal: Any) -> None:
    folder = tmp_path / "new" / "project"  # created, parents too
    result = devportal("init", str(folder))
    assert result.code == 0, result.err
    assert said(result.out) == {f"{folder}/{path}": "wrote" for path in WRITTEN}
    assert sorted(snapshot(folder)) == sorted(WRITTEN)

    config = folder / ".dlt" / "config.toml"
    parsed = tomllib.loads(config.read_text("utf-8"))
    assert parsed["sources"]["devportal"] == {}  # every setting commented: the code's defaults
    listed = listed_keys(config)
    for section, spec in SECTIONS.items():
        keys = {item.key for item in listed if item.section == section}
        missing = set(spec.get_resolvable_fields()) - keys
        assert not missing, f"[{section}] of the written config lacks {sorted(missing)}"

    secrets = folder / ".dlt" / "secrets.toml"
    tables = tomllib.loads(secrets.read_text("utf-8"))
    assert {"sources", "destination"} <= set(tables)
    assert not set_values(tables)  # nothing set, so nothing overrides the environment by accident
    in_secrets = {(item.section, item.key) for item in listed_keys(secrets)}
    assert ("destination.postgres", "credentials") in in_secrets
    for section, spec in SECTIONS.items():  # every secret of a section the config lists
        for name, hint in spec.get_resolvable_fields().items():
            if is_secret_hint(hint):
                assert (section, name) in in_secrets, f"[{section}] {name} is a secret"
    assert ("sources.devportal", "access_token") in in_secrets
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert (folder / ".gitignore").read_text("utf-8") == ".dlt/secrets.toml\n"

    # the notebooks and the config are the ones this checkout has (one source, packaged)
    assert config.read_bytes() == (REPO / ".dlt" / "config.toml").read_bytes()
    for name in NOTEBOOKS:
        assert (folder / "notebooks" / name).read_bytes() == (
            REPO / "notebooks" / name
        ).read_bytes()
    assert "base_url" in result.out and "/api/v1" in result.out  # what to set, and how


def test_a_second_init_never_overwrites(tmp_path: Path, devportal: Any) -> None:
    assert devportal("init", str(tmp_path)).code == 0
    config = tmp_path / ".dlt" / "config.toml"
    secrets = tmp_path / ".dlt" / "secrets.toml"
    config.write_text('[sources.devportal]\nbase_url = "https://mine.example"\n', "utf-8")
    secrets.write_bytes(b'[sources.devportal]\naccess_token = "users-own-token-123"\n')
    (tmp_path / "notebooks" / NOTEBOOKS[0]).write_bytes(b'{"edited": true}')
    removed = tmp_path / "notebooks" / NOTEBOOKS[-1]
    removed.unlink()
    before = snapshot(tmp_path)

    result = devportal("init", str(tmp_path))
    assert result.code == 0, result.err
    after = snapshot(tmp_path)
    removed_name = f"notebooks/{removed.name}"
    assert {k: v for k, v in after.items() if k != removed_name} == before  # byte for byte
    assert after[removed_name] == (REPO / "notebooks" / removed.name).read_bytes()
    actions = said(result.out)
    assert actions == {
        **{f"{tmp_path}/{path}": "kept" for path in WRITTEN},
        f"{tmp_path}/{removed_name}": "wrote",
    }
    assert "next:" not in result.out  # nothing to set up: the config was there


def test_init_run_here_by_default_and_in_the_checkout_changes_nothing(tmp_path: Path) -> None:
    """DIR defaults to the current folder; in this checkout (config, .gitignore and the
    notebooks there) only the secrets file would be new: everything else is kept."""
    copy = tmp_path / "checkout"
    (copy / ".dlt").mkdir(parents=True)
    (copy / "notebooks").mkdir()
    for path in (".dlt/config.toml", ".gitignore", *(f"notebooks/{n}" for n in NOTEBOOKS)):
        (copy / path).write_bytes((REPO / path).read_bytes())
    before = snapshot(copy)
    result = run_devportal("init", cwd=copy)
    assert result.code == 0, result.err
    after = snapshot(copy)
    assert set(after) - set(before) == {".dlt/secrets.toml"}
    assert {k: after[k] for k in before} == before
    assert said(result.out)[".dlt/secrets.toml"] == "wrote"
    assert said(result.out)[".gitignore"] == "kept"
    assert "then: `devportal sync`" in result.out


def test_a_link_in_the_way_is_kept_not_followed(tmp_path: Path, devportal: Any) -> None:
    elsewhere = tmp_path / "elsewhere.toml"
    (tmp_path / "p" / ".dlt").mkdir(parents=True)
    (tmp_path / "p" / ".dlt" / "secrets.toml").symlink_to(elsewhere)  # dangling
    result = devportal("init", str(tmp_path / "p"))
    assert result.code == 0, result.err
    assert not elsewhere.exists()
    assert said(result.out)[f"{tmp_path}/p/.dlt/secrets.toml"] == "kept"


@pytest.mark.parametrize(
    ("existing", "expected", "action"),
    [
        ("build/\n*.pyc", "build/\n*.pyc\n.dlt/secrets.toml\n", "added"),  # no final newline
        ("build/\n", "build/\n.dlt/secrets.toml\n", "added"),
        ("", ".dlt/secrets.toml\n", "added"),
        ("# mine\n/.dlt/\n", "# mine\n/.dlt/\n", "kept"),
        ("*.log\n.dlt/secrets.toml\n", "*.log\n.dlt/secrets.toml\n", "kept"),
        ("**/secrets.toml\n", "**/secrets.toml\n", "kept"),
        (  # an exception after the entry lets the file in again: the entry goes last
            ".dlt/\n!.dlt/secrets.toml\n",
            ".dlt/\n!.dlt/secrets.toml\n.dlt/secrets.toml\n",
            "added",
        ),
        ("# .dlt/secrets.toml\n", "# .dlt/secrets.toml\n.dlt/secrets.toml\n", "added"),
    ],
)
def test_gitignore_gets_the_entry_once(
    tmp_path: Path, devportal: Any, existing: str, expected: str, action: str
) -> None:
    gitignore = tmp_path / ".gitignore"
    gitignore.write_text(existing, "utf-8")
    result = devportal("init", str(tmp_path))
    assert result.code == 0, result.err
    assert gitignore.read_text("utf-8") == expected
    assert said(result.out)[f"{tmp_path}/.gitignore"] == action
    again = devportal("init", str(tmp_path))
    assert gitignore.read_text("utf-8") == expected  # never twice
    assert said(again.out)[f"{tmp_path}/.gitignore"] == "kept"


def test_init_under_a_file_is_one_line(tmp_path: Path, devportal: Any) -> None:
    (tmp_path / "a-file").write_text("x", "utf-8")
    result = devportal("init", str(tmp_path / "a-file" / "project"))
    assert result.code == 2
    assert result.err.count("\n") == 1 and "a-file is a file, not a folder" in result.err
    assert not (tmp_path / "a-file" / "project").exists()


def test_a_sync_with_only_the_written_config_and_a_token(
    tmp_path: Path, sandbox_factory: Any
) -> None:
    """What the README's first real sync does: `devportal init`, base_url set in the written
    config, the token in the environment, `devportal sync` from that folder."""
    sb = sandbox_factory(subscriptions=120, users=30, seed=7)
    assert run_devportal("init", cwd=tmp_path).code == 0
    config = tmp_path / ".dlt" / "config.toml"
    text = config.read_text("utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("# base_url = "))
    config.write_text(text.replace(line, f'base_url = "{sb.base_url}"'), "utf-8")
    env: dict[str, str | None] = {
        key: None for key in os.environ if key.startswith(("SOURCES__", "DEVPORTAL_"))
    }
    env["SOURCES__DEVPORTAL__ACCESS_TOKEN"] = sb.token
    result = run_devportal("sync", cwd=tmp_path, env=env, timeout=300)
    assert result.code == 0, result.err
    warehouse = tmp_path / "warehouse" / "warehouse.duckdb"
    assert current_rows(warehouse, is_test=False) == truth_rows(sb)
