"""A reader at a terminal: how the doc test runs a snippet, so that it works for whoever copies it.

* **Where**: a fresh ``bash`` (``-e``: a reader stops at the first failing command) in the repository root.
* **What**: the block's text as it is, ``uv run`` and all; a Python block is pasted into ``uv run python -``.
* **Environment**: the one pytest was started from, less what ``uv run`` and the suite put there (the venv's
  ``bin`` first on PATH, ``VIRTUAL_ENV``, ``UV``, ``UV_RUN_RECURSION_DEPTH``, ``CLOUDAI_*``, ``PYTEST_*``,
  ``PYTHONPATH``): a reader's shell has not activated the venv, which is how ``PATH=stand-in:$PATH cloudai run``
  passed here and failed for readers. ``PYTHONPYCACHEPREFIX`` stays (where bytecode is cached, not what runs).
* **Servers**: a block after ``<!-- docs: server -->`` is a server the reader leaves running in one terminal
  while the next blocks run in another. It runs in a private network namespace (``unshare -n``: the documented
  port, 8000, is free there and nobody else's), is up once its output names ``127.0.0.1:<port>``, and the client
  blocks run in the same namespace; Ctrl-C (SIGINT to its process group) stops it.

What the snippets leave in the repository (``results/<run>``, a ``runs/`` directory) is listed in
``created_record()`` and removed when the test session ends (``tests/conftest.py``), not in the test: another
worker's snippet may be writing beside it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 180
_DROPPED = {"UV", "UV_RUN_RECURSION_DEPTH", "VIRTUAL_ENV", "PYTHONPATH"}  # what `uv run pytest` adds, and sys.path
_DROPPED_PREFIXES = ("CLOUDAI_", "PYTEST_")  # the suite's own (CLOUDAI_REPORT=inline, the session id, xdist's)


def reader_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a reader's fresh shell (see the module docstring)."""
    environ = dict(os.environ if environ is None else environ)
    venv_bins = {str(Path(sys.prefix) / "bin"), str(REPO / ".venv" / "bin")}
    uv = environ.get("UV")  # `uv run pytest`: the reader has that uv (the README's first step)
    env = {k: v for k, v in environ.items() if k not in _DROPPED and not k.startswith(_DROPPED_PREFIXES)}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p.rstrip("/") not in venv_bins]
    if uv and shutil.which("uv", path=os.pathsep.join(path)) is None:
        path.append(str(Path(uv).parent))
    env["PATH"] = os.pathsep.join(path)
    return env


def created_record() -> Path:
    """Where this session lists what the snippets created in the repository (one path a line)."""
    return Path(tempfile.gettempdir()) / f"cloudai-tests-docs-{os.environ['CLOUDAI_TEST_SESSION']}.created"


def _entries() -> set[Path]:
    results = REPO / "results"
    return set(REPO.iterdir()) | (set(results.iterdir()) if results.is_dir() else set())


@contextmanager
def recording_what_it_creates() -> Iterator[None]:
    before = _entries()
    try:
        yield
    finally:
        new = sorted(str(p) for p in _entries() - before if p.name != "results")
        if new:
            with created_record().open("a") as record:
                record.write("".join(f"{p}\n" for p in new))


def remove_created() -> None:
    """Remove what the session's snippets created (called once, as the session ends)."""
    record = created_record()
    if not record.exists():
        return
    for line in set(record.read_text().splitlines()):
        path = Path(line)
        if path.parent in (REPO, REPO / "results") and path.name != ".venv":
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    results = REPO / "results"
    if results.is_dir() and not any(results.iterdir()):
        results.rmdir()
    record.unlink()


def argv(lang: str, text: str) -> tuple[list[str], str | None]:
    """How a reader runs a block of ``lang``: the command and its stdin."""
    if lang == "python":
        return ["uv", "run", "python", "-"], text
    return ["bash", "-e", "-c", text], None


def run(lang: str, text: str, netns: int | None = None) -> subprocess.CompletedProcess[str]:
    command, stdin = argv(lang, text)
    if netns is not None:
        command = ["nsenter", "-t", str(netns), "-n", "--", *command]
    with recording_what_it_creates():
        return subprocess.run(command, input=stdin, cwd=REPO, env=reader_env(), capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)  # fmt: skip


@contextmanager
def network_namespace() -> Iterator[int]:
    """A private network namespace with loopback up: the pid of the process holding it open."""
    setup = "ip link set lo up && echo up && exec cat"  # cat: holds the namespace until its stdin closes
    command = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-r", "-n"]
    try:
        holder = subprocess.Popen([*command, "sh", "-c", setup], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)  # fmt: skip
    except OSError as exc:
        raise RuntimeError(f"cannot make a network namespace ({' '.join(command)}): {exc}") from exc
    assert holder.stdout is not None and holder.stdin is not None and holder.stderr is not None
    if holder.stdout.readline().strip() != "up":
        holder.wait(30)
        raise RuntimeError(f"cannot make a network namespace ({' '.join(command)}): {holder.stderr.read().strip()}")
    try:
        yield holder.pid
    finally:
        holder.stdin.close()
        holder.wait(30)


class Server:
    """A server block running in its own terminal (process group) inside ``netns``."""

    def __init__(self, lang: str, text: str, netns: int, address: str) -> None:
        command, stdin = argv(lang, text)
        self.output: list[str] = []
        self._recording = recording_what_it_creates()
        self._recording.__enter__()
        self.proc = subprocess.Popen(["nsenter", "-t", str(netns), "-n", "--", *command], cwd=REPO, env=reader_env(),
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        if stdin and self.proc.stdin:
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # up once it names its address (printed after the port is bound)
            self.output.append(line)
            if address in line:
                break
        else:
            self.proc.wait(TIMEOUT)
            self._recording.__exit__(None, None, None)
            raise AssertionError(f"the server exited ({self.proc.returncode}) before naming {address}:\n"
                                 + "".join(self.output))  # fmt: skip
        self._drain = threading.Thread(target=lambda: self.output.extend(self.proc.stdout or ()), daemon=True)
        self._drain.start()

    def stop(self) -> int:
        """Ctrl-C, as the reader stops it; its exit code."""
        os.killpg(self.proc.pid, signal.SIGINT)
        code = self.proc.wait(TIMEOUT)
        self._drain.join(TIMEOUT)
        self._recording.__exit__(None, None, None)
        return code
