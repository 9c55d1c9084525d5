"""How ``cloudai serve`` runs: env calls in one thread, uvicorn in another, and the shutdown on SIGINT/SIGTERM.

Env calls run in the main thread (``EnvCalls.work``) and uvicorn in a second one, so SIGINT and
SIGTERM interrupt a running trial exactly as in ``cloudai run``: ``KeyboardInterrupt`` is raised
inside the trial's wait, the env's ``close()`` cancels its job (the whole process group), every
finished step is already written and the files are closed; the request waiting on that trial
gets 503 / ``SESSION_ERROR``; ``run`` raises ``Interrupted`` (exit 130). In-process use (tests,
``create_app`` under any ASGI server) runs ``EnvCalls.work`` in a worker thread instead.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import TYPE_CHECKING

from cloudai.errors import CloudAIError, ConfigError, Interrupted, raise_stopped
from cloudai.serve.calls import MAX_BODY

if TYPE_CHECKING:
    from cloudai.serve.app import ServeApp

_STOP_S = 10.0  # how long ``run`` waits for uvicorn to close its connections after an interrupt


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), bound before anything is written."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field="--host/--port",
                          hint="pick a free --port (0 picks one)") from None  # fmt: skip
    return sock


def run(app: ServeApp, sock: socket.socket, *, max_body: int = MAX_BODY, exit_when_idle_s: float | None = None) -> None:
    """Serve on ``sock`` until SIGINT/SIGTERM; then raise ``Interrupted`` (see the module docstring).

    uvicorn runs in a thread (it installs no signal handlers there); env calls run here, in the
    main thread, so a signal raises ``KeyboardInterrupt`` inside the running trial, whose job
    ``env.close()`` then cancels, as ``cloudai run`` does. Further signals are ignored while the
    bounded cleanup runs. ``exit_when_idle_s``: stop as on SIGTERM once no client used the server that long
    (``cloudai.serve.idle``), then return.
    """
    import uvicorn

    from cloudai.serve.idle import IdleExit

    hub = app.hub
    app.calls_in_main_thread = True
    idle = IdleExit(app, exit_when_idle_s) if exit_when_idle_s is not None else None
    config = uvicorn.Config(
        idle or app, log_level="warning", ws_max_size=max_body, timeout_graceful_shutdown=5, lifespan="on"
    )
    server = uvicorn.Server(config)

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            hub.calls.stop()  # uvicorn ended on its own (e.g. a startup failure): so does the main loop

    previous = signal.signal(signal.SIGTERM, raise_stopped)
    thread = threading.Thread(target=serve, name="cloudai-serve-http", daemon=True)
    try:
        thread.start()
        if idle is not None:
            idle.watch()
        hub.calls.work()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        hub.closing = True
        was_running = hub.calls.abandon("the server was interrupted; the running trial was cancelled")
        hub.close_env()  # cancels the running trial's job, writes every finished step
        server.should_exit = True
        thread.join(_STOP_S)
        if idle is not None and idle.fired:
            return  # stopped on purpose: nobody used it for exit_when_idle_s
        cancelled = "; the running trial was cancelled" if was_running else ""
        raise Interrupted(f"interrupted{cancelled}; every finished step is in trajectory.csv") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    hub.close_env()
    raise CloudAIError("the HTTP server stopped on its own; run with -v for its log")
