"""The guard in front of ``cloudai serve`` (``cloudai.serve.guard``): wrong tokens answered ever later, per source
and without holding up anyone else; an oversized body answered with a readable 413. Real uvicorn on 127.0.0.1."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import httpx
import pytest
from tests.gym_adapter.knob_gym import KnobGym, mixed_space
from tests.serve.serving import served

from cloudai.serve.app import create_app
from cloudai.serve.guard import Throttle, delay

TOKEN = "guard-tok-5521"


def test_400_wrong_tokens_take_over_a_minute_per_source() -> None:
    """The schedule: 50 ms doubling to 2 s, so 400 guesses in a row wait ~790 s; sent in parallel they queue (each
    answer is due after the one before), another source starts at 50 ms, and a right token forgets the count."""
    assert delay(1) == 0.05 and delay(2) == 0.1 and delay(7) == delay(400) == 2.0
    assert sum(delay(n) for n in range(1, 401)) >= 60
    now = [100.0]
    throttle = Throttle(lambda: now[0])
    waits = [throttle.refused("10.0.0.9") for _ in range(400)]  # all at once
    assert waits[0] == pytest.approx(0.05) and waits[-1] >= 60 and waits == sorted(waits)
    assert throttle.refused("10.0.0.7") == pytest.approx(0.05)  # another source is not held up
    throttle.accepted("10.0.0.9")
    assert throttle.refused("10.0.0.9") == pytest.approx(0.05)
    now[0] += 10_000  # a source quiet long enough starts over
    assert throttle.refused("10.0.0.7") == pytest.approx(0.05)


def test_a_wrong_token_waits_while_a_right_one_is_served() -> None:
    app = create_app(KnobGym(mixed_space()), name="t", token=TOKEN)
    app.throttle = Throttle(base_s=2.0, cap_s=2.0)  # this source's next wrong token waits 2 s
    with served(app, TOKEN) as url:
        wrong: list[httpx.Response] = []
        started = time.monotonic()
        nope = {"Authorization": "Bearer nope"}
        guess = threading.Thread(target=lambda: wrong.append(httpx.get(f"{url}/state", headers=nope, timeout=30)))
        guess.start()
        right = httpx.get(f"{url}/state", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200 and guess.is_alive()  # served while the guess waits
        guess.join(30)
        assert time.monotonic() - started >= 1.9  # the guess was answered after its wait, not before
        assert wrong[0].status_code == 401 and wrong[0].json() == {"detail": "missing or wrong bearer token"}


def test_an_oversized_body_gets_a_readable_413() -> None:
    """A 32 MB body: the answer came while the client was still sending (urllib: "Broken pipe"); now the body is
    read and dropped first."""
    with served(create_app(KnobGym(mixed_space()), name="t", token=TOKEN), TOKEN) as url:
        request = urllib.request.Request(f"{url}/step", data=b"x" * (32 << 20),
                                         headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        try:
            urllib.request.urlopen(request, timeout=60)
            raise AssertionError("accepted")
        except urllib.error.HTTPError as exc:
            assert exc.code == 413 and exc.read() == b'{"detail":"request body over 1048576 bytes"}'
