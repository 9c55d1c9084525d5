"""What ``cloudai install`` puts under a system's ``install_path`` for the workloads that need more than a binary.

A workload lists its needs with ``Workload.installables(args)``: a ``PythonEnv``, a virtual environment managed
by uv, holding pinned packages that must not become cloudai's own dependencies (NVIDIA's aiconfigurator pulls
~850 MB). A test's CloudAI ``git_repos`` are ``GitRepo`` clones. Contract:

* ``install`` is idempotent: an environment whose marker file says it holds exactly these packages is left
  alone. The marker is written last, atomically, so an install cut short (Ctrl-C, a full disk, a registry
  that went away) is never taken as done: the next ``install`` starts that environment over.
* Two ``cloudai install`` at once on one ``install_path`` take turns (an ``flock`` on a file beside the
  environments), so neither sees the other's half-built environment.
* ``uninstall`` removes the environment; nothing else under ``install_path`` is touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError, InstallError

MARKER = ".cloudai-installed.json"
LOCK = ".cloudai-install.lock"


class _Marked:
    """What every installable shares: a directory ``install_path / name`` that counts as installed only when its
    marker (written last, atomically) records exactly what ``_wanted`` says; ``_build`` fills the directory."""

    name: str

    def path(self, install_path: Path) -> Path:
        return install_path / self.name

    def describe(self) -> str:
        raise NotImplementedError

    def _wanted(self) -> dict[str, object]:
        raise NotImplementedError

    def _build(self, target: Path) -> None:
        raise NotImplementedError

    def installed(self, install_path: Path) -> bool:
        """True only when a finished install of exactly this is there."""
        try:
            return json.loads((self.path(install_path) / MARKER).read_text()) == self._wanted()
        except (OSError, ValueError):
            return False

    def install(self, install_path: Path) -> bool:
        """Build it unless it is installed already; True when this call installed it."""
        with _locked(install_path):
            if self.installed(install_path):
                return False
            target = self.path(install_path)
            shutil.rmtree(target, ignore_errors=True)  # a half-finished one, or another version: start over
            self._build(target)
            atomic_write(target / MARKER, json.dumps(self._wanted()) + "\n")
            return True

    def uninstall(self, install_path: Path) -> bool:
        """Remove it; True when there was one. Nothing else under ``install_path`` is touched."""
        with _locked(install_path):
            target = self.path(install_path)
            if not target.exists():
                return False
            shutil.rmtree(target)
            return True


@dataclass(frozen=True)
class PythonEnv(_Marked):
    """A uv-managed virtual environment at ``install_path / name`` with ``packages`` (pinned requirements), then
    ``no_deps`` installed without their dependencies: a package whose declared requirements cannot all be met
    (ai-dynamo 1.6.1 requires ``aisimulate``, a PyPI stub that downloads from another index at build time) gets
    the ones it needs listed in ``packages`` instead."""

    name: str
    packages: tuple[str, ...]
    no_deps: tuple[str, ...] = ()

    def python(self, install_path: Path) -> Path:
        """The environment's interpreter (run workload code with it, never with cloudai's own)."""
        return self.path(install_path) / "bin" / "python"

    def describe(self) -> str:
        pinned = [p for p in (*self.no_deps, *self.packages) if "==" in p]
        rest = len(self.no_deps) + len(self.packages) - len(pinned)
        return f"Python environment '{self.name}' ({', '.join(pinned)}{f' and {rest} more' if rest else ''})"

    def _wanted(self) -> dict[str, object]:
        wanted: dict[str, object] = {"packages": list(self.packages)}
        wanted |= {"no_deps": list(self.no_deps)} if self.no_deps else {}  # an existing marker stays valid
        return wanted | {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}

    def installed(self, install_path: Path) -> bool:
        return super().installed(install_path) and self.python(install_path).exists()

    def _build(self, target: Path) -> None:
        uv = _uv()
        # The real path: the scripts' shebangs (bin/aiperf) hold it, and an install_path reached through a link
        # (CloudAI's "./install" in a dir linked to a shared cache) may be gone when they run.
        target = target.resolve()
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(target)], self.name)
        if self.packages:
            python = str(target / "bin" / "python")
            _run([uv, "pip", "install", "--quiet", "--python", python, *self.packages], self.name)
        if self.no_deps:
            python = str(target / "bin" / "python")
            _run([uv, "pip", "install", "--quiet", "--no-deps", "--python", python, *self.no_deps], self.name)


@dataclass(frozen=True)
class Generated(_Marked):
    """A directory at ``install_path / name`` that ``script`` writes when run by ``env``'s interpreter with the
    directory as its one argument (a tiny local model made with the environment's ``transformers``). ``env``
    must be installed first: list it before this in ``Workload.installables``. A changed script is redone."""

    name: str
    env: PythonEnv
    script: Path

    def describe(self) -> str:
        return f"'{self.name}' (written by {self.script.name} with the '{self.env.name}' environment)"

    def _wanted(self) -> dict[str, object]:
        digest = hashlib.sha256(self.script.read_bytes()).hexdigest()[:16]
        return {"script": self.script.name, "sha256": digest, "env": self.env.name}

    def _build(self, target: Path) -> None:
        python = self.env.python(target.parent)
        if not python.exists():
            raise InstallError(f"{self.describe()} needs {self.env.describe()} installed first")
        _run([str(python), str(self.script), str(target)], self.name)


@dataclass(frozen=True)
class GitRepo(_Marked):
    """A clone of ``url`` at ``commit`` in ``install_path / name`` (CloudAI's ``<repo>__<commit>``), for a test's
    ``git_repos``; a containerized job mounts it (``cloudai.jobs.spec.repo_mounts``)."""

    name: str
    url: str
    commit: str
    init_submodules: bool = False

    def describe(self) -> str:
        return f"git repository {self.url} at {self.commit}"

    def _wanted(self) -> dict[str, object]:
        return {"url": self.url, "commit": self.commit, "init_submodules": self.init_submodules}

    def _build(self, target: Path) -> None:
        _run(["git", "clone", "--quiet", "--", self.url, str(target)], self.describe())  # never an option
        _run(["git", "-C", str(target), "checkout", "--quiet", self.commit], self.describe())
        if self.init_submodules:
            _run(["git", "-C", str(target), "submodule", "update", "--init", "--recursive"], self.describe())


Installable = PythonEnv | GitRepo | Generated


def _uv() -> str:
    """The uv that runs cloudai (``uv run`` sets ``UV``), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        raise InstallError("uv is not installed, and cloudai installs Python environments with it: pip install uv")
    return found


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise InstallError(f"installing {what}: `{' '.join(argv[:3])} ...` exited with {done.returncode}: {tail}")


@contextlib.contextmanager
def _locked(install_path: Path) -> Iterator[None]:
    try:
        install_path.mkdir(parents=True, exist_ok=True)
        lock = open(install_path / LOCK, "a")  # noqa: SIM115 (held for the block)
    except OSError as exc:
        raise ConfigError(
            f"cannot write there: {exc.strerror}", field="install_path", file=install_path, hint="set a writable path"
        ) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
