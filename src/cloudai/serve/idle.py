"""``cloudai serve --exit-when-idle S``: a server nobody uses for S seconds stops itself (as on SIGTERM).

For a sandbox that runs as a Slurm job (``cloudai.serve.slurm_sandbox``): if its control plane and everything that
watched the job are gone (SIGKILL, a lost login node), nobody would ``scancel`` it, so the job ends itself once no
client has used it for S seconds (the job's time limit is the last backstop).

Idle means no HTTP request in flight, no WebSocket connection open, and none ended within S seconds. An open but
silent WebSocket session counts as use until ``--session-idle-timeout`` closes it. Stopping sends this process
SIGTERM: ``serve.run`` then stops as on any SIGTERM (a trial still running is cancelled), but returns (exit 0).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

log = logging.getLogger("cloudai.serve")


class IdleExit:
    """ASGI middleware counting HTTP requests and WebSocket connections in flight; ``watch`` stops the process once
    none was in flight for ``idle_s`` (see the module docstring)."""

    def __init__(self, app: Any, idle_s: float) -> None:
        self.app, self.idle_s = app, idle_s
        self._lock = threading.Lock()
        self._busy = 0
        self._last = time.monotonic()
        self.fired = False  # set before the SIGTERM it sends: ``serve.run`` then exits 0, not 130

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        with self._lock:
            self._busy += 1
        try:
            return await self.app(scope, receive, send)
        finally:
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last request or connection ended; 0 while one is in flight."""
        with self._lock:
            return 0.0 if self._busy else time.monotonic() - self._last

    def watch(self) -> threading.Thread:
        """A daemon thread that sends this process SIGTERM once it has been idle for ``idle_s``."""

        def loop() -> None:
            while (idle := self.idle_for()) < self.idle_s:
                time.sleep(max(0.05, min(1.0, self.idle_s - idle)))
            log.warning("no client for %gs (--exit-when-idle): stopping", self.idle_s)
            self.fired = True
            os.kill(os.getpid(), signal.SIGTERM)

        thread = threading.Thread(target=loop, name="cloudai-serve-idle", daemon=True)
        thread.start()
        return thread
