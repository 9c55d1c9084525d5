"""A headless Chromium driven over the DevTools protocol, for tests that move the mouse over a page.

``--remote-debugging-pipe``: the protocol runs over two pipes (the browser reads commands on fd 3 and writes
replies and events on fd 4, each message JSON ended by a NUL byte), so no port is opened. Every read waits on
the pipe itself (``select`` with a deadline, never a sleep). ``Input.dispatchMouseEvent`` is a real mouse
event to the page: its handlers run as they would for a user's mouse.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

DEADLINE_S = 60.0


def _above_4(fd: int) -> int:
    """``fd`` moved to a number above 4 (the old one closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 5)
    os.close(fd)
    return moved


class Chromium:
    """One browser with one page: ``open(url)``, ``evaluate(js)``, ``move(x, y)``; a context manager."""

    def __init__(self, chromium: str, profile: Path, width: int = 1280, height: int = 1000) -> None:
        commands_r, commands_w = os.pipe()
        replies_r, replies_w = os.pipe()
        commands_r, replies_w = _above_4(commands_r), _above_4(replies_w)
        argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]  # fmt: skip
        # The browser expects the pipes at fds 3 and 4: bash (dash takes one-digit fds only) moves them there
        # (from above 4: no clash) and execs it.
        move = f'exec "$0" "$@" 3<&{commands_r} 4>&{replies_w} {commands_r}<&- {replies_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", move, *argv], pass_fds=(commands_r, replies_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(commands_r)
        os.close(replies_w)
        self._out, self._in = commands_w, replies_r
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self._out)
        os.close(self._in)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> dict[str, Any]:
        """Run one protocol command and return its result; events that arrive meanwhile go to ``events``."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        reply = self._until(lambda m: m.get("id") == self._next)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def open(self, url: str) -> None:
        """Navigate and wait for the page's load event (its scripts have run)."""
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=True)
        if not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self._until(lambda m: m.get("method") == "Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able); a thrown error fails here."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def move(self, x: float, y: float) -> None:
        """The mouse to (x, y) of the viewport, as a user moves it."""
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)

    def console(self) -> list[str]:
        """What the page logged (console API calls and uncaught exceptions) since it was opened."""
        lines = []
        for e in self.events:
            if e.get("method") == "Runtime.consoleAPICalled":
                lines.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"]))
            elif e.get("method") == "Runtime.exceptionThrown":
                lines.append(str(e["params"]["exceptionDetails"]))
        return lines

    def _until(self, wanted: Any) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if wanted(message):
                    return message
                self.events.append(message)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError(f"no answer from Chromium in {DEADLINE_S} s")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
