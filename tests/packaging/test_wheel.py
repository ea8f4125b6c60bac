"""A built wheel, installed (not editable) into a fresh virtual environment, works on its own.

The models (sql/), the manifest schema and the demo app are package data: from a folder far from
this checkout, `devportal demo`, `models --check` and `manifest validate` of the shipped demo app
must run. Dependencies come from this project's environment (no network), devportal itself only
from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from devportal.models.project import load_models

REPO = Path(__file__).resolve().parents[2]


def run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(600)
def test_wheel_in_a_fresh_venv_runs_demo_models_and_manifest(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", wheels, REPO, cwd=tmp_path,
    )  # fmt: skip
    wheel = next(wheels.glob("devportal-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # this environment's pip installs into it
    python = env_dir / "bin" / "python"
    site = run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
    )
    # the locked dependencies from this environment; devportal itself only from the wheel
    (Path(site.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        "--no-index", wheel, cwd=tmp_path,
    )  # fmt: skip

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = run(python, "-c", "import devportal; print(devportal.__file__)", cwd=elsewhere, env=env)
    assert where.startswith(str(env_dir)), where  # not this checkout
    devportal = env_dir / "bin" / "devportal"
    demo = run(
        devportal, "demo", "--subscriptions", "400", "--users", "40", "--syncs", "2",
        "--warehouse", "w/demo.duckdb", cwd=elsewhere, env=env,
    )  # fmt: skip
    # every model of this checkout's sql/: the wheel carries them all
    assert f"models ok: {len(load_models())} built" in demo
    assert "manifest Stream Widgets 1.4.0 recorded" in demo
    models = run(
        devportal, "models", "--warehouse", "w/demo.duckdb", "--check", cwd=elsewhere, env=env
    )
    assert "data tests passed" in models
    shipped = Path(where.strip()).parent / "starter" / "demo_app"
    assert (shipped / "manifest.json").is_file() and not shipped.is_symlink()
    run(devportal, "manifest", "validate", shipped, cwd=elsewhere, env=env)
    # `devportal init` from the wheel writes this checkout's config, secrets template, notebooks
    run(devportal, "init", "project", cwd=elsewhere, env=env)
    sources = {
        ".dlt/config.toml": ".dlt/config.toml",
        ".dlt/secrets.toml": ".dlt/secrets.toml.example",
    }
    sources |= {
        f"notebooks/{p.name}": f"notebooks/{p.name}" for p in REPO.glob("notebooks/*.ipynb")
    }
    for written, source in sources.items():
        assert (elsewhere / "project" / written).read_bytes() == (REPO / source).read_bytes()
