"""Env calls of ``cloudai serve``, one at a time, in submission order, in whichever thread runs ``work()``.

The env is not thread-safe and a trial must be interruptible by Ctrl-C, so every HTTP/WebSocket handler
submits its env call here instead of calling the env: ``serve.run`` runs ``EnvCalls.work`` in the main
thread (where signals land), in-process use (tests, ``create_app`` under any ASGI server) in a worker
thread. ``ShuttingDown`` is how a refused or cancelled call answers (503 / ``SESSION_ERROR``).
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import Any

MAX_BODY = 1 << 20  # bytes: HTTP bodies and WebSocket frames


class ShuttingDown(Exception):
    """The server stops: the request was refused or its trial cancelled (503 / ``SESSION_ERROR``)."""


class EnvCalls:
    """Env calls, run one at a time, in submission order, in whichever thread runs ``work()``.

    ``create_app`` starts a worker thread for it (in-process use, tests); ``run`` runs ``work()``
    in the main thread instead, where signals land, so Ctrl-C interrupts the trial itself.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._current: Future[Any] | None = None
        self.stopped = False

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        if self.stopped:
            future.set_exception(ShuttingDown("the server is shutting down"))
        else:
            self._queue.put((fn, future))
        return future

    def stop(self) -> None:
        """``work()`` returns once the calls submitted so far ran; later ones fail with ``ShuttingDown``."""
        self.stopped = True
        self._queue.put(None)

    def work(self) -> None:
        """Run calls until ``stop()``. A KeyboardInterrupt propagates (see ``abandon``)."""
        while (item := self._queue.get()) is not None:
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            self._current = future
            try:
                result = fn()
            except Exception as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
            self._current = None

    def abandon(self, reason: str) -> bool:
        """After an interrupt: fail the running call and every queued one; accept no more. Was one running?"""
        self.stopped = True
        running, self._current = self._current, None
        pending = [running] if running is not None else []
        with suppress(queue.Empty):
            while True:
                item = self._queue.get_nowait()
                if item is not None:
                    pending.append(item[1])
        for future in pending:
            if not future.done():
                future.set_exception(ShuttingDown(reason))
        return running is not None
