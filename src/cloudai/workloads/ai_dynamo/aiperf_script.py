"""``aiperf.sh``: the aiperf phases of an AIDynamo job as one bash script, text for text as CloudAI generates it.

Each phase (``[[cmd_args.aiperf_phases]]``, or one phase named ``aiperf`` from ``[cmd_args.aiperf]``) is
``[cmd_args.aiperf]`` with the phase's fields on top; it runs ``aiperf profile --model M --endpoint-type chat
--streaming --url "$FRONTEND_URL" <args> --artifact-dir <dir> ...``, its CSV export is copied to its report,
and between phases the script runs ``between-phase-cmd``, checks the failure marker and probes the frontend.
``results`` is where the job's files are as the client sees them (CloudAI: ``/cloudai_run_results``).
The script expects ``FRONTEND_URL`` and ``AIPERF_SERVER_METRICS_URLS`` in its environment.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath
from typing import Any

from cloudai.workloads.ai_dynamo.args import AIDynamoArgs, AIPerf, AIPerfPhase

SCRIPT = "aiperf.sh"
FAILURE_MARKER = "failure-marker.txt"
_PROBE = (
    '  if ! curl -fsS -X POST "${FRONTEND_URL}/${AIPERF_ENDPOINT}" '
    "-H 'Content-Type: application/json' "
    '-d "{\\"model\\":\\"${AIPERF_MODEL}\\",\\"messages\\":[{\\"role\\":\\"user\\",'
    '\\"content\\":\\"ping\\"}],\\"stream\\":false,\\"max_tokens\\":1}" '
    ">/dev/null; then"
)


def flags(args: dict[str, Any]) -> str:
    """``--key value`` words (``True``: a bare flag; ``None``/``False``: left out), values shell-quoted."""
    words: list[str] = []
    for key, value in args.items():
        if value is None or value is False:
            continue
        if isinstance(value, list | tuple | dict):
            raise ValueError(f"aiperf argument {key!r} must be one value (write several as one CLI string)")
        words.append(f"--{key}")
        if value is not True:
            words.append(shlex.quote(str(value)))
    return " ".join(words)


def resolved(cmd_args: AIDynamoArgs, phase: AIPerfPhase, single: bool) -> AIPerf:
    """``[cmd_args.aiperf]`` with the phase's fields (and its args, key by key) on top."""
    data = cmd_args.aiperf.model_dump(by_alias=True, exclude_none=True)
    top = phase.model_dump(by_alias=True, exclude_none=True, exclude_unset=True)
    if not single:
        top.setdefault("artifact-dir-name", f"{cmd_args.aiperf.artifact_dir_name}/{phase.name}")
        top.setdefault("report-name", f"aiperf_{phase.name}_report.csv")
    args = {**data.pop("args", {}), **top.pop("args", {})}
    top.pop("name", None)
    return AIPerf.model_validate({**data, **top, "args": args})


def _path(results: str, name: str) -> str:
    return name if PurePosixPath(name).is_absolute() else f"{results}/{name}"


def phase_command(cmd_args: AIDynamoArgs, phase: AIPerf, artifact_dir: str) -> str:
    args: dict[str, Any] = {"model": cmd_args.dynamo.model, "endpoint-type": "chat", "streaming": True}
    args |= phase.args.model_dump(by_alias=True, exclude_none=True)
    args["artifact-dir"] = artifact_dir
    if "server-metrics" not in args and "no-server-metrics" not in args:
        args["no-server-metrics"] = True
    url = args.pop("url", None)
    auto = args.get("server-metrics") == "auto"
    if auto:
        args.pop("server-metrics")
    head = [flags({key: args.pop(key)}) for key in ("model", "endpoint-type", "streaming") if key in args]
    parts = [shlex.join(shlex.split(phase.cmd)), *head, flags({"url": url}) if url else '--url "$FRONTEND_URL"']
    extra = shlex.join(shlex.split(phase.extra_args or ""))  # split as CloudAI's script splits it, each word data
    parts += [flags(args), '--server-metrics "$AIPERF_SERVER_METRICS_URLS"' if auto else "", extra]
    return " ".join(part for part in parts if part)


def _setup(message: str, cmd: str | None) -> list[str]:
    if not cmd:
        return []
    argv = shlex.join(["bash", "-lc", cmd])
    return [f"log {shlex.quote(f'{message}: {argv}')}", argv]


def _phase_block(cmd_args: AIDynamoArgs, raw: AIPerfPhase, results: str, index: int, count: int) -> list[str]:
    phase, single, last = resolved(cmd_args, raw, count == 1), count == 1, index == count - 1
    artifacts, report = _path(results, phase.artifact_dir_name), _path(results, phase.report_name or "")
    cmd = phase_command(cmd_args, phase, artifacts)
    run = cmd if single else f"{cmd} > {shlex.quote(_path(results, f'aiperf_{raw.name}.log'))} 2>&1"
    setup = raw.setup_cmd if "setup_cmd" in raw.model_fields_set else None
    lines = _setup(f"Running AIPerf phase setup for {raw.name}", setup)
    lines += [f"rm -rf {shlex.quote(artifacts)}", f"mkdir -p {shlex.quote(artifacts)}"]
    lines += [f"log {shlex.quote(f'Running {raw.name}: {cmd}')}", "phase_status=0", "set +e", run, "phase_status=$?"]
    lines += [
        "set -e",
        'if [[ "$phase_status" -ne 0 ]]; then',
        f"  log {shlex.quote(f'AIPerf phase {raw.name} failed')}",
    ]
    lines += [] if phase.continue_on_phase_failure else ['  exit "$phase_status"']
    lines += [
        "fi",
        'if [[ "$phase_status" -eq 0 ]]; then',
        f"  mkdir -p {shlex.quote(str(PurePosixPath(report).parent))}",
    ]
    source = f"{artifacts}/profile_export_aiperf.csv"
    lines += [f"  cp {shlex.quote(source)} {shlex.quote(report)}"] if source != report else []
    lines += [f"  log {shlex.quote(f'AIPerf report saved to {report}')}"]
    if not single and last:
        final = _path(results, "aiperf_report.csv")
        lines += [f"  mkdir -p {shlex.quote(results)}"]
        lines += [f"  cp {shlex.quote(report)} {shlex.quote(final)}"] if report != final else []
        lines += [f"  log {shlex.quote(f'Final AIPerf report saved to {final}')}"]
    if not single and not last:
        lines += ["  " + line for line in _setup(f"Running AIPerf between-phase command after {raw.name}",
                                                 phase.between_phase_cmd)]  # fmt: skip
        if phase.health_check_between_phases:
            lines += ['  if [[ -f "$AIPERF_FAILURE_MARKER" ]]; then', "    log 'FATAL: failure marker found between "
                      "AIPerf phases'", "    exit 1", "  fi", _PROBE, "    log 'FATAL: frontend health probe failed "
                      "between AIPerf phases'", "    exit 1", "  fi"]  # fmt: skip
    return [*lines, "fi"]


_EXPANDS = re.compile(r'[$`"\\\x00-\x1f\x7f]')  # what a double-quoted ${NAME:=word} would not keep as written


def default(name: str, value: str) -> str:
    """``NAME=value`` unless the environment sets it: CloudAI's ``: "${NAME:=value}"`` when that keeps ``value`` as
    written, else the same with the value shell-quoted (``$(...)``, backticks, quotes stay data)."""
    if not _EXPANDS.search(value):
        return f': "${{{name}:={value}}}"'
    return f'[[ -n "${{{name}:-}}" ]] || {name}={shlex.quote(value)}'


def render(cmd_args: AIDynamoArgs, results: str) -> str:
    """The whole script (no final newline), for the job's files at ``results``."""
    head = [
        "#!/usr/bin/env bash",
        "set -Eeuo pipefail",
        "",
        'log() { echo "[$(date +%F\\ %T) $(hostname)]: $*"; }',
        "",
        ': "${FRONTEND_URL:?FRONTEND_URL is not set}"',
        default("AIPERF_MODEL", cmd_args.dynamo.model),
        default("AIPERF_ENDPOINT", cmd_args.dynamo.endpoint),
        default("AIPERF_FAILURE_MARKER", f"{results}/{FAILURE_MARKER}"),
    ]
    setup = _setup("Running aiperf setup", cmd_args.aiperf.setup_cmd)  # a block of its own, as in CloudAI
    blocks = ["\n".join(head), *(["\n".join(setup)] if setup else [])]
    phases = cmd_args.aiperf_phases or [AIPerfPhase(name="aiperf")]
    blocks += ["\n".join(_phase_block(cmd_args, phase, results, i, len(phases))) for i, phase in enumerate(phases)]
    return "\n\n".join(blocks)
