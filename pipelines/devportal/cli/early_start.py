"""The early start of `devportal sync` (a speed-up: `cli.speedups`): the subscription list is
read while dlt and DuckDB import.

Importing dlt, DuckDB and pyarrow and opening the pipeline take about a second; the API can be
read meanwhile. The fields read are `client.settings.HttpSettings`'s, with their types and
defaults (the one definition); their values are looked up here without dlt, where dlt itself
would find them for `[sources.devportal]`: the environment (`SOURCES__DEVPORTAL__<FIELD>`),
then `.dlt/secrets.toml` and `.dlt/config.toml` in the working folder, then `~/.dlt/`, each
under `[sources.devportal]`, `[sources]` or the top level. The sync resolves its settings with
dlt afterwards and adopts this client only if they agree in every HTTP setting, the API and
the token (`client.adopt`); otherwise it is closed and its pages are never used. So a lookup
that misses something costs a few wasted requests, never a wrong setting.

A signal that ends a run (SIGTERM, SIGHUP, Ctrl-C) while the early read runs ahead is held by
the client (`http.paging.HeldSignals`, from the moment it is made): the run is then importing
dlt or setting up its load, code that cannot take an exception at any line. The early read
ends at once, and the run meets the signal where its own read waits first, as it would meet
one sent while it reads: the same line, record and exit code.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args, get_type_hints

SECTION = ("sources", "devportal")


def _files() -> list[Path]:
    found = []
    for folder in (Path.cwd() / ".dlt", Path.home() / ".dlt"):
        for name in ("secrets.toml", "config.toml"):
            path = folder / name
            if path.is_file():
                found.append(path)
    return found


def _tables() -> list[dict[str, Any]]:
    tables = []
    for path in _files():
        try:
            tables.append(tomllib.loads(path.read_text("utf-8")))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # dlt will say what is wrong with it
    return tables


def _lookup(name: str, tables: list[dict[str, Any]]) -> Any:
    env = os.environ.get(f"{SECTION[0]}__{SECTION[1]}__{name}".upper())
    if env is not None:
        return env
    for table in tables:
        for where in (SECTION, SECTION[:1], ()):
            node: Any = table
            for key in where:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and name in node and not isinstance(node[name], dict):
                return node[name]
    return None


def _coerce(value: Any, default: Any, kind: Any) -> Any:
    """VALUE as the field's type KIND (`int | None`, `float`, `bool`, ...), as dlt coerces it."""
    if value is None:
        return default
    kinds = set(get_args(kind)) or {kind}
    if bool in kinds:
        return value if isinstance(value, bool) else str(value).strip().lower() == "true"
    for number in (int, float):
        if number in kinds:
            return number(value)
    return str(value)


def start(base_url: str | None, workers: int | None, max_workers: int | None) -> Any:
    """A client already paging the subscription list, or None when the API, the token or a
    setting cannot be known without dlt (the sync then starts as usual)."""
    # deferred: the early start runs before dlt imports; the parser (every command) stays light
    from devportal.base.errors import DevportalError
    from devportal.http import SUBSCRIPTIONS_PATH, ApiClient, HttpSettings

    tables = _tables()
    base_url = base_url or _lookup("base_url", tables)
    token = _lookup("access_token", tables)
    if not (isinstance(base_url, str) and base_url and isinstance(token, str) and token):
        return None
    given = {"workers": workers, "max_workers": max_workers}
    values: dict[str, Any] = {}
    try:
        kinds = get_type_hints(HttpSettings)
        for f in fields(HttpSettings):
            if f.name in ("base_url", "access_token"):
                continue
            found = given.get(f.name)
            if found is None:
                found = _lookup(f.name, tables)
            values[f.name] = _coerce(found, f.default, kinds[f.name])
        client = ApiClient(HttpSettings(base_url=base_url, access_token=token, **values))
    except (ValueError, TypeError, DevportalError):
        return None
    client.prefetch(SUBSCRIPTIONS_PATH)
    return client
