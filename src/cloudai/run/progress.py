"""Progress of an agent-driven run: a rich bar on a terminal, one plain line per step otherwise.

``StepProgress`` is fed every completed step (``update``) by the env's ``on_step`` hook.
On a TTY it shows ``step/total``, the best reward so far and the ETA (rich's estimate
over completed steps); in a pipe or a log file it prints ``[test] step 3/40 ok reward=...
best=...`` lines, which grep and CI logs handle better than redrawn bars.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from cloudai.recordfiles import SCORED, UNBUDGETED

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from cloudai.envs.base import Feedback


class StepProgress:
    """A context manager; ``done`` steps were already recorded (``--resume``), ``best`` their best reward."""

    def __init__(
        self,
        label: str,
        total: int,
        echo: Callable[[str], None],
        *,
        done: int = 0,
        best: float | None = None,
        tty: bool | None = None,
    ) -> None:
        self.label, self.total, self.echo = label, total, echo
        self.done, self.best = done, best
        self.tty = sys.stdout.isatty() if tty is None else tty
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> StepProgress:
        if self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("best {task.fields[best]}"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[note]}"),
            )
            self._bar.start()
            self._task = self._bar.add_task(
                self.label, total=self.total, completed=self.done, best=self._best_text(), note=""
            )
        return self

    def update(self, feedback: Feedback) -> None:
        self.done += feedback.status not in UNBUDGETED  # the budget counts measurements (see BaseAgent.run)
        if feedback.status in SCORED and math.isfinite(feedback.reward):
            self.best = feedback.reward if self.best is None else max(self.best, feedback.reward)
        reason = str(feedback.info.get("reason") or "") if feedback.status not in SCORED else ""
        if self._bar is not None and self._task is not None:
            note = f"last: step {feedback.step} {feedback.status}" + (f" ({reason})" if reason else "")
            self._bar.update(self._task, completed=self.done, best=self._best_text(), note=note)
            return
        self.echo(
            f"[{self.label}] step {feedback.step} ({self.done}/{self.total}) {feedback.status} "
            f"reward={feedback.reward:.6g} best={self._best_text()}" + (f" ({reason})" if reason else "")
        )

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _best_text(self) -> str:
        return "-" if self.best is None else f"{self.best:.6g}"
