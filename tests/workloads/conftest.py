"""Workload tests: the stand-in binaries on PATH (Slurm tests use the session's Slurm of ``tests/conftest.py``)."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
CONF = HERE / "cloudai_conf"


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tests/workloads/bin`` first on PATH (inherited by standalone jobs and by sbatch's jobs)."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return BIN


# --- the Dynamo serving stack, installed once per machine -------------------------------------------------------

MOCKER_CONF = HERE / "cloudai_conf_dynamo" / "dynamo_mocker"  # CloudAI's conf/experimental/dynamo_mocker
STACK_CACHE = HERE.parents[1] / ".cache" / "install"  # ignored by git; .ci/run fills it first
TINY = "./install/dynamo-tiny-model"


def mocker_tests_dir(directory: Path, **replace: str) -> Path:
    """CloudAI's DynamoMocker test file with ``model_path`` at the tiny local model (its only change), and
    ``replace``: other whole lines (``key = value``) swapped by key."""
    text = (MOCKER_CONF / "test" / "dynamo_mocker.toml").read_text()
    lines = []
    for line in text.splitlines():
        key = line.strip().partition(" = ")[0]
        if key == "model_path":
            line = f'model_path = "{TINY}"'
        elif key in replace:
            line = f"{line[: len(line) - len(line.lstrip())]}{key} = {replace[key]}"
        lines.append(line)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dynamo_mocker.toml").write_text("\n".join(lines) + "\n")
    return directory


def _registry_unreachable() -> str | None:
    """Why the package index cannot be reached (uv's ``UV_INDEX_URL``, else PyPI), or None when it answers."""
    url = os.environ.get("UV_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/ai-dynamo/"
    try:
        with urllib.request.urlopen(url, timeout=15):
            return None
    except OSError as exc:
        return f"{url}: {exc}"


@pytest.fixture(scope="session")
def dynamo_stack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dir whose ``install`` is ``<repo>/.cache/install`` holding the Dynamo stack and the tiny model, put there
    by ``cloudai install`` with CloudAI's own system file (a no-op when ``.ci/run`` or an earlier session did it):
    run CloudAI's files from it. Skipped, with the one reason, only when the package index is unreachable."""
    from cloudai.cli import cli
    from cloudai.workloads.dynamo_mocker.stack import ENV, TINY_MODEL

    where = tmp_path_factory.mktemp("dynamo-stack")
    STACK_CACHE.mkdir(parents=True, exist_ok=True)
    (where / "install").symlink_to(STACK_CACHE, target_is_directory=True)
    tests = mocker_tests_dir(where / "test")
    args = ["install", "--system-config", str(MOCKER_CONF / "system" / "standalone_system.toml"), "--tests-dir",
            str(tests), "--test-scenario", str(MOCKER_CONF / "test_scenario" / "dynamo_mocker.toml")]  # fmt: skip
    before = Path.cwd()
    os.chdir(where)
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(before)
    if result.exit_code != 0 or not (ENV.installed(STACK_CACHE) and TINY_MODEL.installed(STACK_CACHE)):
        unreachable = _registry_unreachable()
        if unreachable:
            pytest.skip(f"the Dynamo stack cannot be installed: the package index is unreachable ({unreachable})")
        pytest.fail(f"`cloudai install` of the Dynamo stack into {STACK_CACHE} failed (exit {result.exit_code}) "
                    f"with the package index reachable: {result.output[-600:]}")  # fmt: skip
    return where
