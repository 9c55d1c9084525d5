"""The leases a control plane holds (``Board``), each a sandbox: its own environment server in its own process.

A sandbox is a child process started by ``argv`` (``cloudai serve --lease``: ``cloudai serve`` of the named test
on a free loopback port). It is ``pending`` until the child printed the URL it serves (a line containing
``http://host:port``) and that URL's ``GET /health`` answers 200, then ``ready``; ``failed`` (with the child's
last words) when it exits first or is not ready within ``start_timeout_s``, or when a ready one's process
has exited by the next ``get``. Starting runs in a thread of its
own, so the control plane answers while a sandbox starts.

Limits: at most ``max_leases`` pending or ready sandboxes (``Full`` beyond: HTTP 429); a lease with no request
naming it for ``idle_timeout_s`` is released by ``expire`` (the control plane calls it periodically); ``stop_all``
releases every lease (the control plane's exit). Releasing stops the child's process group: SIGTERM, then SIGKILL
after ``STOP_S``. Every method is thread-safe.

A sandbox dies with its control plane, however that ends (SIGKILL included): each child is started with a
parent-death signal (Linux ``prctl(PR_SET_PDEATHSIG, SIGTERM)``, set between fork and exec; SIGTERM, so a
``cloudai serve`` child stops its trial and its jobs on its usual way out). The kernel sends it
when the *thread* that forked the child ends, so every child is forked by one long-lived thread of the board
(``_spawner``), never by the short-lived thread that waits for the sandbox to start.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)
STOP_S = 5.0  # how long a sandbox's process gets to stop on SIGTERM before SIGKILL
_URL = re.compile(r"(https?://[^\s/]+:\d+)")

Argv = Callable[[str | None, Mapping[str, Any]], list[str]]  # (environment, options) -> the child's argv


class Full(Exception):
    """The control plane holds ``max_leases`` live leases already."""


@dataclass
class Sandbox:
    """One lease: its status, its child process and when a request last named it."""

    id: str
    environment: str | None
    status: str = "pending"
    url: str = ""
    error: str = ""
    touched: float = field(default_factory=time.monotonic)
    proc: subprocess.Popen[str] | None = None
    released: bool = False
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=20))

    def to_json(self, idle_timeout_s: float) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "status": self.status, "idle_timeout_s": idle_timeout_s}
        if self.environment:
            body["environment"] = self.environment
        if self.url:
            body["url"] = self.url
        if self.error:
            body["error"] = self.error
        return body


class Board:
    """The live leases of one control plane (see the module docstring)."""

    def __init__(
        self,
        argv: Argv,
        *,
        max_leases: int = 4,
        idle_timeout_s: float = 600.0,
        start_timeout_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``headers`` go on the health checks (the bearer token a sandbox wants)."""
        self._argv, self.max_leases, self._headers = argv, max_leases, dict(headers or {})
        self.idle_timeout_s, self.start_timeout_s = idle_timeout_s, start_timeout_s
        self._lock = threading.Lock()
        self._sandboxes: dict[str, Sandbox] = {}
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="sandbox-spawner")  # the children's parent thread

    def lease(self, environment: str | None, options: Mapping[str, Any]) -> Sandbox:
        """Take a lease and start its sandbox in the background (``argv`` errors are raised here, as given)."""
        argv = self._argv(environment, options)
        with self._lock:
            live = sum(s.status != "failed" for s in self._sandboxes.values())
            if live >= self.max_leases:
                raise Full(f"{live} live lease(s), the limit (--max-leases {self.max_leases}); release one first")
            sandbox = Sandbox(uuid.uuid4().hex[:12], environment)
            self._sandboxes[sandbox.id] = sandbox
        threading.Thread(target=self._start, args=(sandbox, argv), name=f"sandbox-{sandbox.id}", daemon=True).start()
        return sandbox

    def get(self, lease_id: str) -> Sandbox | None:
        """The lease, renewed (its idle clock restarts); None if there is no such lease. A ready sandbox whose
        process has exited since is ``failed`` from now on (the lease stays until it is released)."""
        with self._lock:
            sandbox = self._sandboxes.get(lease_id)
            if sandbox is None:
                return None
            sandbox.touched = time.monotonic()
            code = sandbox.proc.poll() if sandbox.proc is not None else None
            if sandbox.status == "ready" and code is not None:
                sandbox.status, sandbox.error = "failed", f"the environment server exited ({code}) after it started"
            return sandbox

    def leases(self) -> list[Sandbox]:
        with self._lock:
            return list(self._sandboxes.values())

    def release(self, lease_id: str) -> bool:
        """Stop the sandbox and forget the lease; False if there was none. Returns once the process is gone."""
        with self._lock:
            sandbox = self._sandboxes.pop(lease_id, None)
            if sandbox is None:
                return False
            sandbox.released = True
            proc = sandbox.proc
        if proc is not None:
            _stop(proc)
        return True

    def expire(self) -> list[str]:
        """Release every lease idle for longer than ``idle_timeout_s``; their ids."""
        now = time.monotonic()
        with self._lock:
            idle = [s.id for s in self._sandboxes.values() if now - s.touched > self.idle_timeout_s]
        for lease_id in idle:
            log.warning("lease %s idle for over %gs: released", lease_id, self.idle_timeout_s)
            self.release(lease_id)
        return idle

    def stop_all(self) -> None:
        for sandbox in self.leases():
            self.release(sandbox.id)

    # -- one sandbox's start ---------------------------------------------------------------------

    def _start(self, sandbox: Sandbox, argv: list[str]) -> None:
        try:
            self._spawn(sandbox, argv)
            url = self._await_url(sandbox)
            self._await_health(sandbox, url)
        except _StartFailed as exc:
            self._fail(sandbox, str(exc))
            return
        with self._lock:
            if not sandbox.released:
                sandbox.url, sandbox.status = url, "ready"

    def _spawn(self, sandbox: Sandbox, argv: list[str]) -> None:
        with self._lock:  # a release racing the start either sees the process or stops it here
            if sandbox.released:
                raise _StartFailed("released before it started")
            try:
                sandbox.proc = self._spawner.submit(_popen, argv).result()
            except OSError as exc:
                raise _StartFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from None

    def _await_url(self, sandbox: Sandbox) -> str:
        """Read the child's output until it names its URL (then keep draining it in a thread)."""
        proc = sandbox.proc
        assert proc is not None and proc.stdout is not None
        timer = threading.Timer(self.start_timeout_s, _stop, args=(proc,))  # a silent child must not hang us
        timer.start()
        try:
            for line in proc.stdout:
                sandbox.lines.append(line.rstrip())
                found = _URL.search(line)
                if found:
                    threading.Thread(target=_drain, args=(proc, sandbox.lines), daemon=True).start()
                    return found.group(1)
        finally:
            timer.cancel()
        _stop(proc)
        last = " | ".join(list(sandbox.lines)[-3:]) or "no output"
        raise _StartFailed(f"the environment server exited ({proc.returncode}) before serving: {last}")

    def _await_health(self, sandbox: Sandbox, url: str) -> None:
        import httpx

        deadline, delay = time.monotonic() + self.start_timeout_s, 0.02
        with httpx.Client(timeout=2.0, headers=self._headers) as client:
            while time.monotonic() < deadline and not sandbox.released:
                try:
                    if client.get(f"{url}/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if sandbox.proc is not None and sandbox.proc.poll() is not None:
                    raise _StartFailed(f"the environment server exited ({sandbox.proc.returncode}) before healthy")
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        raise _StartFailed(f"{url}/health did not answer 200 within {self.start_timeout_s:g}s")

    def _fail(self, sandbox: Sandbox, error: str) -> None:
        with self._lock:
            proc, sandbox.status, sandbox.error = sandbox.proc, "failed", error
        if proc is not None:
            _stop(proc)


class _StartFailed(Exception):
    pass


def _popen(argv: list[str]) -> subprocess.Popen[str]:
    """Start a sandbox's process (in the spawner thread: see the module docstring)."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopping it stops whatever it started
        preexec_fn=_die_with_parent(),
    )


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """The child's preexec: SIGTERM it when its parent thread ends; exit at once if the parent already ended (the
    signal is set too late to come). None where there is no ``prctl`` (not Linux): children may then outlive a
    SIGKILLed control plane."""
    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None) if sys.platform == "linux" else None
    if prctl is None:
        return None
    parent, kill = os.getpid(), int(signal.SIGTERM)

    def preexec() -> None:  # between fork and exec: nothing but two system calls
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def _drain(proc: subprocess.Popen[str], lines: deque[str]) -> None:
    """Keep reading a child's output (a full pipe would block it); the last lines stay for error messages."""
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the child's process group, SIGKILL it after ``STOP_S``; reap it."""
    for sig, wait_s in ((signal.SIGTERM, STOP_S), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
