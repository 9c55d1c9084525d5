"""How ``cloudai run`` takes Ctrl-C and SIGTERM: the first ends the run cleanly, later ones cannot cut it short."""

from __future__ import annotations

import os
import signal


def interrupts_end_the_run() -> None:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` once; later ones only say the stop is under way.

    A second Ctrl-C (or ``uv run`` forwarding the terminal's SIGINT a second time) must not cut the
    clean-up short: the running jobs are cancelled, trajectory.csv/env.csv closed whole, the report
    and summary written and the resume command printed, whatever the number of interrupts.
    """
    seen = {"n": 0}

    def handler(signum: int, frame: object) -> None:
        seen["n"] += 1
        if seen["n"] == 1:
            os.write(2, b"interrupted: stopping the running jobs, then the summary and how to resume\n")
            raise KeyboardInterrupt
        os.write(2, b"interrupted again: still stopping (the records stay whole); please wait\n")

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
