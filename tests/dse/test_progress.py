"""Progress: one plain line per step off a terminal; a rich bar on one (here: it starts, updates, stops)."""

from __future__ import annotations

from dataclasses import fields, replace

from cloudai.envs.base import Feedback
from cloudai.run.progress import StepProgress
from cloudai.run.tally import slim


def _fb(step: int, reward: float, status: str = "ok") -> Feedback:
    return Feedback(step, 1, {"x": step}, reward, [reward], status)


def test_plain_lines_show_step_total_and_best() -> None:
    lines: list[str] = []
    with StepProgress("t/0", 4, lines.append, done=1, best=2.0, tty=False) as progress:
        progress.update(_fb(2, 5.0))
        progress.update(_fb(3, 9.0, "failed"))  # a penalty is never "best"
    assert lines == ["[t/0] step 2 (2/4) ok reward=5 best=5", "[t/0] step 3 (3/4) failed reward=9 best=5"]


def test_the_bar_tracks_steps_and_best() -> None:
    lines: list[str] = []
    with StepProgress("t/0", 3, lines.append, tty=True) as progress:
        progress.update(_fb(1, 1.5))
        progress.update(_fb(2, 0.5))
        assert progress.done == 2 and progress.best == 1.5
    assert lines == []  # the bar, not lines


def test_slim_keeps_every_field_but_the_info_it_drops() -> None:
    """``slim`` builds the kept step field by field (``dataclasses.replace`` cost 5x, every step): a field added to
    ``Feedback`` must be added there too, or slim steps would silently lose it."""
    names = [f.name for f in fields(Feedback)]
    assert names == ["step", "episode", "action", "reward", "observation", "status", "done", "info"], "see slim"
    feedback = Feedback(7, 2, {"x": 1}, 0.5, [0.5, 3.0], "ok", True, {"job_dir": "/d", "env_params": {"e": 1}})
    assert slim(feedback, ("m",)) == replace(feedback, info={"env_params": {"e": 1}})
