"""A small stock ``openenv-core`` environment server for ``RemoteGymServer``'s tests and benchmark.

    python -m tests.gym.openenv_app [--port 0] [--max-sessions 4] [--token-var NAME] [--step-delay-ms MS]

Binds 127.0.0.1 (port 0: a free one), prints ``PORT <n>`` once the socket listens, then serves
OpenEnv's own FastAPI app (``create_app``) under uvicorn. With ``--token-var``, a bearer-token
middleware guards every HTTP route and the WebSocket handshake (401 without the token).

The action has bounded fields of each kind a schema can describe (an enum, a bool, a float
and an int range) and an optional unbounded one (``note``); ``note = "hang"`` makes the step
block for 30 s, ``ratio = 0`` gives a ``null`` reward. With ``--die-at N`` the server process
exits abruptly (no reply, no close frame) on the N-th step it receives: a server killed mid-run.
The observation has two scalar metrics, a fixed-length list and a string, and echoes the seed
and the ``load_scale`` env_param reset got.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from typing import Any, Literal

sys.modules.setdefault("gradio", None)  # type: ignore[arg-type]  # web UI off: skip its ~10 s import

from openenv.core.env_server.http_server import create_app  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import Action, Observation, State  # noqa: E402
from pydantic import Field  # noqa: E402

HANG_S = 30.0
DIE_AT = [0]  # --die-at: the process exits on this step (counted over all sessions); 0: never
STEP_DELAY_S = [0.0]  # --step-delay-ms: each step takes this long (a simulator's work; benchmarks only)
STEPS = [0]


class KnobAction(Action):
    batch: Literal[1, 2, 4, 8]
    use_cache: bool
    ratio: float = Field(ge=0.0, le=1.0)
    threads: int = Field(ge=1, le=16)
    note: str = ""


class KnobObservation(Observation):
    throughput: float = 0.0
    latency_ms: float = 0.0
    per_gpu: list[float] = Field(default_factory=lambda: [0.0, 0.0], min_length=2, max_length=2)
    label: str = ""
    seed: int = -1
    load_scale: float = 1.0


class KnobEnvironment(Environment[KnobAction, KnobObservation, State]):
    """``horizon`` steps per episode; throughput grows with batch * threads * ratio (halved without cache)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    horizon = 3

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self._seed = -1
        self._load_scale = 1.0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> KnobObservation:
        options = kwargs.get("options") or {}
        self._seed = -1 if seed is None else seed
        self._load_scale = float(options.get("env_params", {}).get("load_scale", 1.0))
        self._state = State(episode_id=episode_id or f"ep-{self._seed}", step_count=0)
        return KnobObservation(seed=self._seed, load_scale=self._load_scale, label="reset")

    def step(self, action: KnobAction, timeout_s: float | None = None, **kwargs: Any) -> KnobObservation:
        STEPS[0] += 1
        if STEPS[0] == DIE_AT[0]:
            os._exit(1)  # killed mid-run: the client sees the connection drop during its step
        if action.note == "hang":
            threading.Event().wait(HANG_S)  # a step that outlives the client's timeout
        if STEP_DELAY_S[0]:
            time.sleep(STEP_DELAY_S[0])
        self._state.step_count += 1
        throughput = action.batch * action.threads * action.ratio * (1.0 if action.use_cache else 0.5)
        done = self._state.step_count >= self.horizon
        return KnobObservation(
            throughput=throughput * self._load_scale,
            latency_ms=10.0 + action.batch,
            per_gpu=[throughput / 2, throughput / 2],
            label="step",
            seed=self._seed,
            load_scale=self._load_scale,
            reward=None if action.ratio == 0 else throughput,
            done=done,
        )

    @property
    def state(self) -> State:
        return self._state


class BearerGuard:
    """ASGI middleware: 401 for HTTP requests and WebSocket handshakes without the bearer token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and dict(scope["headers"]).get(b"authorization") != self.expected:
            from starlette.responses import PlainTextResponse

            if scope["type"] == "websocket":
                await receive()  # websocket.connect; the response below goes out as the handshake's answer
            await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def make_app(max_sessions: int = 4, token: str | None = None) -> Any:
    app = create_app(KnobEnvironment, KnobAction, KnobObservation, max_concurrent_envs=max_sessions)
    return BearerGuard(app, token) if token else app


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-sessions", type=int, default=4)
    parser.add_argument("--token-var")
    parser.add_argument("--die-at", type=int, default=0)
    parser.add_argument("--step-delay-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    DIE_AT[0] = args.die_at
    STEP_DELAY_S[0] = args.step_delay_ms / 1000
    token = os.environ[args.token_var] if args.token_var else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)  # connections queue until uvicorn accepts: clients never race the start-up
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(make_app(args.max_sessions, token), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
