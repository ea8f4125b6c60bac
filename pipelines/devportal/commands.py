"""Wires every feature's sub-command into the CLI. Feature modules own their own arguments."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

# module path -> each exposes `register(subparsers)`; order is the order in `--help`.
COMMAND_MODULES = (
    "devportal.sync_cli",
    "devportal.models_cli",
    "devportal.packages_cli",
    "devportal.report",
    "devportal.manifest.cli",
    "devportal.sandbox.cli",
)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    # A module that fails to import is an error, never a silently missing command.
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
