"""Hostile ``cloudai serve`` clients (issue 17, item 8): each bad frame gets an error frame and the session
stays; refusals are logged once per client per minute; an idle session gives its slot back.

In-process (Starlette's TestClient) except where uvicorn's own logging is the subject.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from tests.gym_adapter.knob_gym import KnobGym, mixed_space
from tests.serve.serving import served
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from cloudai.serve.app import create_app

POINT = {"algo": "tree", "use_cuda": False, "chunk_kb": 128, "ratio": 0.25}


@pytest.fixture
def gym() -> KnobGym:
    return KnobGym(mixed_space())


@pytest.fixture
def client(gym: KnobGym) -> Iterator[TestClient]:
    with TestClient(create_app(gym, name="t")) as client:
        yield client


def _reply(ws: Any) -> dict[str, Any]:
    return json.loads(ws.receive_text())


@pytest.mark.parametrize(
    ("send", "code"),
    [
        (lambda ws: ws.send_bytes(b"\x00\x01binary"), "INVALID_FRAME"),
        (lambda ws: ws.send_text('{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}"), "INVALID_JSON"),
        (lambda ws: ws.send_text('{"type": "step", "data": ' + "[" * 100_000 + "]" * 100_000 + "}"), "INVALID_JSON"),
        (lambda ws: ws.send_text(json.dumps({"type": "reset", "data": [1]})), "VALIDATION_ERROR"),
        (lambda ws: ws.send_text(json.dumps({"type": "reset", "data": {"seed": 2**32}})), "VALIDATION_ERROR"),
        (lambda ws: ws.send_text(json.dumps({"type": "reset", "data": "x"})), "VALIDATION_ERROR"),
    ],
    ids=["binary", "5000-digit-int", "100000-deep-array", "reset-data-list", "seed-too-big", "reset-data-string"],
)
def test_bad_frame_gets_an_error_and_the_session_stays(client: TestClient, gym: KnobGym, send: Any, code: str) -> None:
    with client.websocket_connect("/ws") as ws:
        send(ws)
        reply = _reply(ws)
        assert reply["type"] == "error" and reply["data"]["code"] == code, reply
        ws.send_text(json.dumps({"type": "step", "data": POINT}))
        assert _reply(ws)["type"] == "observation"  # the same session goes on
    assert len(gym.rows) == 1


def test_idle_session_is_closed_and_frees_its_slot(gym: KnobGym) -> None:
    with TestClient(create_app(gym, name="t", session_idle_timeout_s=0.05)) as client:
        with client.websocket_connect("/ws") as idle:
            reply = _reply(idle)  # the server speaks first: the session was idle too long
            assert reply["data"]["code"] == "SESSION_IDLE_TIMEOUT"
            with pytest.raises(WebSocketDisconnect):
                idle.receive_text()
        with client.websocket_connect("/ws") as ws:  # max_sessions = 1: the slot is free again
            ws.send_text(json.dumps({"type": "step", "data": POINT}))
            assert _reply(ws)["type"] == "observation"


def test_refusals_are_logged_once_per_client_per_minute(gym: KnobGym, caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    app = create_app(gym, name="t", token="s3cret")
    app.refusals.clock = lambda: now[0]
    with caplog.at_level(logging.WARNING, logger="cloudai.serve"), TestClient(app) as client:
        for _ in range(3):
            with pytest.raises(WebSocketDisconnect), client.websocket_connect("/ws"):
                pass
        assert client.get("/schema").status_code == 401
        assert len([r for r in caplog.records if "refused" in r.getMessage()]) == 1
        now[0] += 61
        with pytest.raises(WebSocketDisconnect), client.websocket_connect("/ws"):
            pass
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 2 and all("s3cret" not in m for m in refusals)


def test_uvicorn_logs_no_error_per_refused_handshake(gym: KnobGym, caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(gym, name="t", token="s3cret")
    with caplog.at_level(logging.INFO), served(app, "s3cret") as url:
        for _ in range(3):
            with pytest.raises(InvalidStatus) as refused:
                connect(url.replace("http", "ws") + "/ws")
            assert refused.value.response.status_code == 401
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert len([r for r in caplog.records if "refused WebSocket handshake" in r.getMessage()]) == 1
