"""A multi-step job (``cloudai.steps``) as bash lines: the part every system renders the same way.

A system supplies one function, ``launch(run, command) -> str``: the line that starts one ``Run`` whose
quoted argv is ``command`` (the Slurm system wraps it in ``srun`` with its flags, the standalone system runs
it as it is). Everything else — the head node variable, background steps and their cleanup on any exit,
waiting for a URL, a failed foreground step ending the script — is written here, once, so the contract in
``cloudai.steps`` holds on every system.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cloudai.steps import Run, Shell, Step, Var, WaitHttp
from cloudai.systems.shell import export_line, quote

Launch = Callable[[Run, str], str]

# Background steps get SIGTERM on the way out, then SIGKILL after a grace (vLLM's own shutdown takes seconds).
_PROLOGUE = """\
cloudai_bg_pids=()
cloudai_cleanup() {  # stop every background step, whatever ended the script
    local rc=$? pid i
    for pid in "${cloudai_bg_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for i in $(seq 1 30); do
        local alive=0
        for pid in "${cloudai_bg_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 1
    done
    for pid in "${cloudai_bg_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    return "$rc"
}
trap cloudai_cleanup EXIT
cloudai_wait_http() {  # URL TIMEOUT_S INTERVAL_S
    local end=$(( $(date +%s) + $2 ))
    while [ "$(date +%s)" -lt "$end" ]; do
        if curl -sf "$1" >/dev/null 2>&1; then echo "cloudai: $1 answers"; return 0; fi
        sleep "$3"
    done
    echo "cloudai: $1 did not answer within $2 s" >&2
    return 1
}"""


def word(text: str) -> str:
    """One argv word as shell text: quoted verbatim, or a ``Var`` in double quotes (its references expand)."""
    return f'"{text}"' if isinstance(text, Var) else quote(text)


def command_line(argv: Sequence[str]) -> str:
    return " ".join(word(w) for w in argv)


def render_steps(
    steps: Sequence[Step], head_node: str, launch: Launch, nodes: str = '"$CLOUDAI_HEAD_NODE"'
) -> list[str]:
    """The body of a script running ``steps``; ``head_node`` is the shell expression of the first node's name,
    ``nodes`` the words of every node's name, in the job's order (the ``CLOUDAI_NODES`` array)."""
    lines = [f"export CLOUDAI_HEAD_NODE={head_node}", 'export SLURM_JOB_MASTER_NODE="$CLOUDAI_HEAD_NODE"']
    lines += [f"CLOUDAI_NODES=( {nodes} )", _PROLOGUE]
    for step in steps:
        lines.append("")
        if isinstance(step, Shell):
            lines.append(step.text.rstrip("\n"))
        elif isinstance(step, WaitHttp):
            lines.append(f"cloudai_wait_http {word(step.url)} {int(step.timeout_s)} {int(step.interval_s)} || exit 1")
        else:
            lines += _run_lines(step, launch)
    return lines


def _run_lines(run: Run, launch: Launch) -> list[str]:
    env = " ".join(export_line(name, value).removeprefix("export ") for name, value in run.env.items())
    line = launch(run, command_line(run.argv))
    if env:
        line = f"{env} {line}"
    if run.background:
        return [f"{line} &", f"{run.pid_var}=$!", f'cloudai_bg_pids+=("${run.pid_var}")']
    return [f"{line} || exit $?"]


def has_background(steps: Sequence[Step]) -> bool:
    return any(isinstance(step, Run) and step.background for step in steps)
