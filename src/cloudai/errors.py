"""Every error cloudai raises on purpose, and the exit code each one maps to.

Deep code raises; only ``cli`` turns an error into a message and an exit code.

    CloudAIError                 exit 1, base of everything below
    ├── ConfigError              exit 2, bad input: names the file, the TOML field and a fix
    ├── WorkloadError            exit 1, a workload could not build or read a job
    ├── SystemError_             exit 1, the system could not run jobs (e.g. Slurm unreachable)
    │   └── SubmissionError      exit 1, one job could not be submitted
    ├── GymServerError           exit 1, a live environment failed; names the URL/class and the call
    ├── AgentError               exit 1, an agent broke its contract or crashed
    ├── InstallError             exit 1, `cloudai install` could not install something (registry, uv, disk)
    └── Interrupted              exit 130, Ctrl-C / SIGTERM: started jobs were cancelled

``Stopped`` is not one of them: it is the ``KeyboardInterrupt`` a SIGTERM handler raises where Ctrl-C raises
Python's own, so every ``except KeyboardInterrupt`` stops the run the same way and the messages can say which.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from cloudai.untrusted import printable

MAX_MESSAGE = 4000  # characters of a GymServerError: its server-given parts are cut to far less at their source


class CloudAIError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with when this reaches it."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input: where it is, what is wrong, how to fix it."""

    file: str | None
    field: str | None
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.field) if part)
        text = f"{where}: {self.message}" if where else self.message
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class ConfigError(CloudAIError):
    """Bad input. Carries every problem found, so one run can report them all."""

    exit_code = 2

    def __init__(
        self,
        message: str = "",
        *,
        file: object | None = None,
        field: str | None = None,
        hint: str | None = None,
        problems: Iterable[Problem] = (),
    ) -> None:
        self.problems: list[Problem] = list(problems)
        if message:
            self.problems.insert(0, Problem(None if file is None else str(file), field, message, hint))
        super().__init__("\n".join(str(p) for p in self.problems))

    def with_file(self, file: object) -> ConfigError:
        """The same problems, attributed to ``file`` where they named none."""
        return ConfigError(
            problems=[p if p.file else Problem(str(file), p.field, p.message, p.hint) for p in self.problems]
        )


class WorkloadError(CloudAIError):
    """A workload could not build its command or read its results."""


class SystemError_(CloudAIError):
    """The system could not run jobs at all."""


class SubmissionError(SystemError_):
    """One job could not be submitted."""


class GymServerError(CloudAIError):
    """A live environment failed. ``where`` is the URL or class, ``call`` the method that failed.

    Its message quotes a server (its error, its reply): it is made printable and cut (``cloudai.untrusted``), so
    what a server sent cannot flood, forge a line on or drive the terminal, nor reach a file raw."""

    def __init__(self, message: str, *, where: str = "", call: str = "") -> None:
        self.where = where
        self.call = call
        prefix = " ".join(part for part in (call, where and f"({where})") if part)
        super().__init__(printable(f"{prefix}: {message}" if prefix else message, MAX_MESSAGE))


class AgentError(CloudAIError):
    """An agent crashed or broke its contract."""


class InstallError(CloudAIError):
    """An install step failed (the package registry, uv, the disk); says which and the tool's own last lines."""


class Interrupted(CloudAIError):
    """The user interrupted the run (SIGINT/SIGTERM); what was started has been stopped.

    Raised while handling a ``Stopped`` (a SIGTERM), a message that starts with "interrupted" (Ctrl-C's word)
    says "stopped by SIGTERM" instead: whoever sent it (``kill``, a scheduler, systemd) sees their signal.
    """

    exit_code = 130

    def __init__(self, message: str) -> None:
        handling = sys.exc_info()[1]
        if isinstance(handling, Stopped) and message.startswith("interrupted"):
            message = f"stopped by {handling.signal_name}{message.removeprefix('interrupted')}"
        super().__init__(message)


class Stopped(KeyboardInterrupt):
    """A stop signal other than SIGINT (SIGTERM), raised as ``KeyboardInterrupt``; ``signal_name`` names it."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def raise_stopped(signum: int, frame: object) -> None:
    """A signal handler: ``Stopped`` for SIGTERM (``KeyboardInterrupt`` itself for SIGINT)."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signal.Signals(signum).name)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A hint listing the known choices, leading with the closest one when there is one."""
    import difflib  # here: only a misspelt name needs it, and every command imports this module

    known = sorted(choices)
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.7)  # 0.6 offered agent_steps for git_repos
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known: {', '.join(known)}" if known else "none are known"
