"""The ``run.sh`` CloudAI writes for a JaxToolbox test (its ``tests/ref_data/{gpt,grok}.run``), as pure text.

One block per stage: ``profile`` (when PGLE is on: Paxml under ``nsys`` on rank 0 with the profile XLA flags,
its output appended to ``profile_stderr_<rank>.txt``) then ``perf``. Each block exports the job's variables,
``PER_GPU_COMBINE_THRESHOLD`` (``COMBINE_THRESHOLD / (gpus_per_node * num_nodes)``) and the stage's
``XLA_FLAGS`` (the three combine thresholds and every ``xla_*`` field of the stage, sorted; booleans in lower
case), runs ``python3 -u -m paxml.main`` with the launcher flags and the sorted ``--fdl.NAME=value`` overrides,
then converts rank 0's nsys profile to a PGLE profile. Lines, indentation and order are CloudAI's.

GPT's XLA flags never reach ``XLA_FLAGS``: CloudAI looks them up under ``GPT.perf.XLA_FLAGS`` while GPT keeps
them under ``GPT.XLA_FLAGS``; we render what CloudAI renders (its reference ``gpt.run`` shows the same).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from cloudai.workloads.jax_toolbox.args import SetupFlags

THRESHOLDS = (
    "--xla_gpu_all_reduce_combine_threshold_bytes=$COMBINE_THRESHOLD",
    "--xla_gpu_all_gather_combine_threshold_bytes=$COMBINE_THRESHOLD",
    "--xla_gpu_reduce_scatter_combine_threshold_bytes=$PER_GPU_COMBINE_THRESHOLD",
)
_RANK0 = 'if [ "$SLURM_NODEID" -eq 0 ] && [ "$SLURM_PROCID" -eq 0 ]; then'
_NEXT = " \\\n    "
WORKSPACE = "/opt/paxml/workspace"  # CloudAI writes these paths verbatim, whatever docker_workspace_dir says


@dataclass(frozen=True)
class Stage:
    name: str  # "profile" or "perf"
    xla_flags: str  # the stage's XLA_FLAGS value


@dataclass(frozen=True)
class Paxml:
    """What every stage's command shares."""

    fdl_config: str
    fdl: Sequence[str]  # --fdl.NAME=value words, sorted
    setup: SetupFlags
    extra: Sequence[str]  # extra_cmd_args as CloudAI appends them (already shell-safe words)
    env: Sequence[tuple[str, str]]  # exported as written, in order


def xla_flags(flags: BaseModel | None, overrides: Mapping[str, str] | None = None) -> str:
    """The thresholds plus every ``xla_*`` field of ``flags`` (``overrides`` replace values), sorted."""
    words: list[str] = list(THRESHOLDS)
    values = {**(flags.model_dump() if flags is not None else {}), **(overrides or {})}
    for name, value in values.items():
        if name.startswith("xla_"):
            words.append(f"--{name.lower()}={str(value).lower() if isinstance(value, bool) else value}")
    return " ".join(sorted(words))


def per_gpu_threshold(combine_threshold: int, gpus_per_node: int, num_nodes: int) -> int:
    return int(combine_threshold / (gpus_per_node * num_nodes))


def render(paxml: Paxml, stages: Sequence[Stage]) -> str:
    """The whole ``run.sh`` (no trailing newline, as CloudAI writes it)."""
    lines: list[str] = []
    for stage in stages:
        env = [f"export {name}={value}" for name, value in paxml.env]
        env.append(f'export XLA_FLAGS="{stage.xla_flags}"')
        lines += ["#!/bin/bash" if stage.name == "profile" else "", "", "\n".join(env), ""]
        lines += [_paxml_block(paxml, stage.name), _converter(stage.name)]
    return "\n".join(lines)


def _paxml_block(paxml: Paxml, stage: str) -> str:
    setup = paxml.setup
    parts = [
        "python3 -u -m paxml.main",
        "--num_hosts=$SLURM_NTASKS",
        "--server_addr=$SLURM_JOB_MASTER_NODE:12345",
        "--host_idx=$SLURM_PROCID",
        f"--job_log_dir={setup.docker_workspace_dir}",
        f"--tfds_data_dir={setup.tfds_data_dir}",
        f"--enable_checkpoint_saving={setup.enable_checkpoint_saving}",
        "--multiprocess_gpu",
        "--alsologtostderr",
        f'--fdl_config="{paxml.fdl_config}"',
        *paxml.fdl,
    ]
    if paxml.extra:
        parts.append(" ".join(paxml.extra))
    command = _NEXT.join(parts)
    if stage == "profile":
        command += f" >> {WORKSPACE}/profile_stderr_${{SLURM_PROCID}}.txt 2>&1"
    nsys = _NEXT.join(
        [
            "nsys profile",
            "-s none",
            f"-o {WORKSPACE}/nsys_profile_{stage}",
            "--force-overwrite true",
            "--capture-range=cudaProfilerApi",
            "--capture-range-end=stop",
            "--cuda-graph-trace=node",
            "",
        ]
    )
    return f"{_RANK0}\n    {nsys}{command}\nelse\n    {command}\nfi"


def _converter(stage: str) -> str:
    command = _NEXT.join(
        [
            "python /opt/jax/jax/tools/pgo_nsys_converter.py",
            f"--profile_path {WORKSPACE}/nsys_profile_{stage}.nsys-rep",
            "--post_process",
            f"--pgle_output_path {WORKSPACE}/pgle_output_{stage}.pbtxt",
        ]
    )
    return "\n".join(["", _RANK0, f"    {command} > /dev/null 2>&1", "fi"])


def extra_words(extra: Mapping[str, object] | str) -> list[str]:
    """``extra_cmd_args`` as CloudAI appends them to Paxml's command: ``key=value`` (``key`` when empty) for a
    table, the words of a string; each quoted when it needs it (CloudAI pastes them raw)."""
    if isinstance(extra, str):
        words = shlex.split(extra)
    else:
        words = [f"{key}={value}" if value not in ("", None) else str(key) for key, value in extra.items()]
    return [shlex.quote(word) for word in words]
