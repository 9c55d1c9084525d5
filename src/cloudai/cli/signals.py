"""How ``cloudai run`` takes Ctrl-C and SIGTERM: the first ends the run cleanly, later ones cannot cut it short."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from cloudai.errors import raise_stopped


@contextlib.contextmanager
def interrupts_end_the_run() -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM raise ``KeyboardInterrupt`` once; later ones only say the stop is
    under way. The previous handlers come back when the block ends: a caller that runs the CLI in its own process
    (click's CliRunner, a script calling ``main``) keeps its own Ctrl-C.

    A second Ctrl-C (or ``uv run`` forwarding the terminal's SIGINT a second time) must not cut the
    clean-up short: the running jobs are cancelled, trajectory.csv/env.csv closed whole, the report
    and summary written and the resume command printed, whatever the number of interrupts.
    """
    seen = {"n": 0}

    def handler(signum: int, frame: object) -> None:
        seen["n"] += 1
        what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        if seen["n"] == 1:
            os.write(2, f"{what}: stopping the running jobs, then the summary and how to resume\n".encode())
            raise_stopped(signum, frame)
        os.write(2, f"{what} again: still stopping (the records stay whole); please wait\n".encode())

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
