"""settings/files: the lookup the early start of `devportal sync` makes without dlt finds what
dlt finds. Each case runs in a fresh interpreter (dlt reads its folders' environment once), in a
temporary project folder, and compares with dlt's own resolution of `[sources.devportal]`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = r"""
import json, os, dataclasses
from pathlib import Path
import dlt
from devportal.settings.files import folders_without_dlt, lookup_without_dlt
from devportal.settings.http import HttpSettings
from devportal.settings.config import resolve

ctx = dlt.current.run_context()
theirs = [os.path.abspath(ctx.settings_dir), os.path.abspath(ctx.global_dir)]
ours = [str(p) for p in folders_without_dlt()]
early = HttpSettings.looked_up(lookup_without_dlt(("sources", "devportal")))
cfg = resolve()
names = [f.name for f in dataclasses.fields(HttpSettings)]
print(json.dumps({
    "theirs": theirs, "ours": ours,
    "early": {n: getattr(early, n) for n in names},
    "dlt": {n: getattr(cfg, n) for n in names},
}))
"""

CONFIG = """
[sources]
max_workers = 3
timeout_s = 9.5

[sources.devportal]
base_url = "http://127.0.0.1:9"
timeout_s = 12
allow_insecure_remote = true
"""
SECRETS = '[sources.devportal]\naccess_token = "from-secrets-0123456789"\n'


def _probe(cwd: Path, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DLT_"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".dlt").mkdir(parents=True)
    (folder / ".dlt" / "config.toml").write_text(CONFIG, encoding="utf-8")
    (folder / ".dlt" / "secrets.toml").write_text(SECRETS, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "case",
    ["plain", "DLT_PROJECT_DIR", "XDG_DATA_HOME", "HOME moved", "environment wins"],
)
def test_the_lookup_without_dlt_finds_what_dlt_finds(
    project: Path, tmp_path: Path, case: str
) -> None:
    env: dict[str, str] = {}
    cwd = project
    if case == "DLT_PROJECT_DIR":  # run from elsewhere: the project folder named by dlt's variable
        cwd = tmp_path
        env["DLT_PROJECT_DIR"] = str(project)
    elif case == "XDG_DATA_HOME":
        env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
        env["HOME"] = str(tmp_path / "home-without-dlt")
        (tmp_path / "home-without-dlt").mkdir()
    elif case == "HOME moved":
        env["HOME"] = str(tmp_path / "home")
        (tmp_path / "home" / ".dlt").mkdir(parents=True)
    elif case == "environment wins":
        env["SOURCES__DEVPORTAL__TIMEOUT_S"] = "3.25"
        env["SOURCES__DEVPORTAL__WORKERS"] = "2"
        env["SOURCES__DEVPORTAL__ALLOW_INSECURE_REMOTE"] = "false"
    seen = _probe(cwd, env)
    assert seen["ours"] == seen["theirs"], seen
    assert seen["early"] == seen["dlt"], seen
    early = seen["early"]
    assert isinstance(early, dict)
    assert early["access_token"] == "from-secrets-0123456789"  # secrets.toml read too
    assert early["max_workers"] == 3  # from [sources], the parent section
    if case == "environment wins":
        assert (early["timeout_s"], early["workers"]) == (3.25, 2)
        assert early["allow_insecure_remote"] is False
    else:
        assert (early["timeout_s"], early["allow_insecure_remote"]) == (12, True)
