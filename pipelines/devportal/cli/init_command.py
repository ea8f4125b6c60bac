"""`devportal init [DIR]`: write `.dlt/config.toml`, `.dlt/secrets.toml`, the notebooks and the
secrets' `.gitignore` entry into DIR (default: here), never overwriting a file (`devportal.starter.init`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

# what each written file is for, said once when it is written
PURPOSE = {
    ".dlt/config.toml": "every setting, commented, with its default",
    ".dlt/secrets.toml": "your access token; readable by you only",
}


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "init",
        help="write .dlt/config.toml, .dlt/secrets.toml and the notebooks into a folder",
        description=(
            "Write into DIR what running devportal there needs: .dlt/config.toml (every "
            "setting, commented, with its default), .dlt/secrets.toml (the access token and "
            "PostgreSQL credentials, commented), notebooks/*.ipynb, and a .gitignore entry for "
            ".dlt/secrets.toml. An existing file is never overwritten: it is kept as it is."
        ),
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="default: this folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # deferred: the handler's own imports; the parser (every command) stays light
    from devportal.starter.init import init

    folder = Path(args.dir)
    here = folder.resolve() == Path.cwd().resolve()
    written = init(folder)
    for item in written:
        shown = item.path if here else str(folder / item.path)
        if item.action == "kept":
            note = item.note or "already there; not changed"
        else:
            note = item.note or PURPOSE.get(item.path, "")
        print(f"{item.action} {shown}" + (f" ({note})" if note else ""))
    new = {item.path for item in written if item.action == "wrote"}
    if new & set(PURPOSE):
        print(
            "next: set base_url (the API's address, without /api/v1) in .dlt/config.toml and "
            "access_token in .dlt/secrets.toml (or SOURCES__DEVPORTAL__ACCESS_TOKEN)"
        )
        sync = "devportal sync" if here else f"cd {shlex.quote(str(folder))} && devportal sync"
        print(f"then: `{sync}` (devportal reads .dlt/ from the folder it runs in)")
    if any(path.startswith("notebooks/") for path in new):
        print(
            "notebooks: `jupyter lab notebooks/` (after `pip install jupyterlab`) reads the "
            "warehouse `devportal sync` writes"
        )
    return 0
