"""The sync client's WebSocket connection (``cloudai.gymserver.wsconn``): read in the caller's thread, so what
websockets' reader thread did between calls is its own job: a server's ping while the caller is away (a long policy
update) is answered, and a reply the server sends in fragments arrives whole."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from websockets.sync.server import ServerConnection, serve

from cloudai.gymserver import wsconn
from cloudai.gymserver.wire import Wire


def test_a_ping_between_calls_is_answered_and_a_fragmented_reply_arrives_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wsconn, "IDLE_S", 0.05)  # the idle reader's period (5 s by default)
    idle, ponged = threading.Event(), threading.Event()
    seen: list[Any] = []

    def handler(connection: ServerConnection) -> None:
        for frame in connection:
            seen.append(json.loads(frame)["type"])
            observation = json.dumps({"observation": {"y": 1.5, "pad": "x" * 5000}})
            connection.send(iter(['{"type": "observation", "data": ', observation, "}"]))  # 3 frames, one message
            # once the client has its reply and is idle, only its idle reader can answer a ping
            if len(seen) == 1 and idle.wait(10) and connection.ping().wait(10):
                ponged.set()

    with serve(handler, "127.0.0.1", 0, ping_interval=None) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        wire = Wire(f"http://127.0.0.1:{server.socket.getsockname()[1]}", token_var="NO_SUCH_TOKEN_VAR",
                    timeout_s=10, health_timeout_s=1, retries=1)  # fmt: skip
        try:
            wire.connect()
            first = wire.exchange({"type": "reset", "data": {}}, "reset", "observation")
            assert first["observation"]["y"] == 1.5 and len(first["observation"]["pad"]) == 5000
            idle.set()
            assert ponged.wait(10), "the server's ping between two calls was not answered"
            second = wire.exchange({"type": "step", "data": {"x": 1}}, "step", "observation")
            assert second == first and seen == ["reset", "step"]
        finally:
            wire.close()
            server.shutdown()
            thread.join(30)
