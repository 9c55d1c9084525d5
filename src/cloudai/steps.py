"""A job of several steps, described without a system: what a serving or multi-process workload runs.

Most workloads are one command (``Workload.argv``). Some are several: start a server in the background,
wait until it answers, run a benchmark client against it, stop the server (vLLM, SGLang, Dynamo, Triton);
start etcd, then two benchmark processes on two nodes (NIXL); run a launcher in the batch shell itself
(NeMo-Launcher, Megatron-Bridge). A workload describes such a job as a sequence of steps and each system
renders them its way: the Slurm system as ``srun`` steps of one batch script (with the job's container,
``--overlap`` for concurrent steps, ``--nodelist`` for a node of the allocation), the standalone system as
child processes of one bash script. Workloads never name ``srun``, containers or the scheduler.

Contract of a rendered script, on every system:

* steps run in order; a ``background`` step's process id is ``$<NAME>_PID`` and every background step is
  stopped (SIGTERM, then SIGKILL after a grace) when the script exits, however it exits;
* a foreground step's non-zero exit ends the script with that exit code (the job has failed);
* a ``WaitHttp`` that times out ends the script with exit code 1 and a line saying which URL never answered;
* ``$CLOUDAI_HEAD_NODE`` (and CloudAI's name for it, ``$SLURM_JOB_MASTER_NODE``) is the host name of the
  first node of the job, the one ``node=0`` runs on (standalone: this machine); the bash array
  ``CLOUDAI_NODES`` holds every node's name in the job's order (``${CLOUDAI_NODES[1]}`` is where ``node=1`` runs);
* words of an ``argv`` are passed verbatim (quoted by the system), except ``Var`` words, which the batch shell
  expands: they may reference variables (``Var("http://${CLOUDAI_HEAD_NODE}:8000")``), nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# A Var may hold ${NAME} / $NAME references and literal text; no command substitution, backticks or quotes.
_VAR_SAFE = re.compile(r"(?:[^$`\"\\]|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*)*")
STEP_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


def var_safe(text: str) -> bool:
    """``text`` may be a ``Var``: text and ``$NAME`` / ``${NAME}`` references, no control character."""
    return bool(_VAR_SAFE.fullmatch(text)) and not any(c < " " or c == "\x7f" for c in text)


class Var(str):
    """An argv word the batch shell expands (``$NAME`` / ``${NAME}`` references only); rendered in double quotes."""

    __slots__ = ()

    def __new__(cls, text: str) -> Var:
        if not var_safe(text):
            raise ValueError(f"Var {text!r} may hold only text and $NAME / ${{NAME}} references")
        return super().__new__(cls, text)


@dataclass(frozen=True)
class Run:
    """One command of the job.

    ``ntasks``/``ntasks_per_node``/``num_nodes``: how many processes on how many nodes (None: the job's own:
    one srun task per allocated task on Slurm, one process on standalone). ``node``: the index of the node of
    the job to run on (0: the head node). ``background``: start it and go on (``$<NAME>_PID``, stopped at the
    end). ``output``: a file name in the job dir for its stdout and stderr (default: the job's own streams).
    With ``node`` and ``num_nodes`` both set, it runs on the nodes ``node .. node+num_nodes-1``.
    ``name``: the step's name (``[a-z][a-z0-9_]*``; Slurm's step name is ``cloudai-<name>``), required for a
    background step. ``batch_shell``: run it in the batch script's own shell, once, not as a step of the
    allocation (a launcher that submits its own jobs; CloudAI's BashCmd). ``container``: run it in the job's
    container image when the system runs containers. ``image``: run it in this image instead of the job's (a
    benchmark client shipped in its own image: Triton's genai-perf SDK image). ``mounts``: ``src:dst[:flags]``
    mounts for this step beyond the job's (a file the job wrote, mounted where the image expects it). Systems
    without containers ignore both. ``env``: variables for this step only.
    """

    argv: tuple[str, ...]
    name: str | None = None
    background: bool = False
    output: str | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    num_nodes: int | None = None
    node: int | None = None
    batch_shell: bool = False
    container: bool = True
    image: str | None = None
    mounts: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.argv:
            raise ValueError("a Run needs a command")
        if self.name is not None and not STEP_NAME.fullmatch(self.name):
            raise ValueError(f"step name {self.name!r} must match {STEP_NAME.pattern}")
        if self.background and self.name is None:
            raise ValueError("a background Run needs a name (its process id is $<NAME>_PID)")
        if self.output is not None and ("/" in self.output or self.output in ("", ".", "..")):
            raise ValueError(f"output {self.output!r} must be a file name in the job dir")
        if any("," in mount or not mount.isprintable() for mount in self.mounts):
            raise ValueError(f"mounts {self.mounts!r}: one src:dst per entry, no ',' or control character")

    @property
    def pid_var(self) -> str:
        return f"{(self.name or 'step').upper()}_PID"


@dataclass(frozen=True)
class WaitHttp:
    """Wait until ``url`` answers 2xx (``curl -sf``), polling every ``interval_s``, at most ``timeout_s``."""

    url: str
    timeout_s: int = 300
    interval_s: int = 5


@dataclass(frozen=True)
class Shell:
    """Lines of bash run in the batch shell between steps (an ``echo``, a ``sleep``, a file to write).

    System-agnostic by contract: no ``srun``, no scheduler commands; ``$CLOUDAI_HEAD_NODE`` is available.
    """

    text: str


Step = Run | WaitHttp | Shell

# A job this process can run itself instead of its argv (a model-backed trial: ``Workload.evaluate``): called with
# the job's time limit (None: none), it writes the job dir's files as the argv would and returns the exit code,
# stdout and stderr the argv would have; or None: it cannot here (no warm worker to ask), run the argv as a process.
Evaluation = Callable[[float | None], tuple[int, str, str] | None]
