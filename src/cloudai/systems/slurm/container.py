"""The pyxis/enroot part of an ``srun`` line: which image, which mounts, as CloudAI renders them.

CloudAI's order (``SlurmCommandGenStrategy.gen_srun_prefix`` / ``container_mounts``)::

    srun --export=ALL --mpi=pmix --container-image=IMG \\
        --container-mounts=JOB:/cloudai_run_results,INSTALL:/cloudai_install,JOB[,extra...] \\
        --no-container-mount-home ...

``JOB`` is the job's own directory (CloudAI's test-run output dir), ``INSTALL`` the system's
``install_path``; both absolute. ``extra`` are the test's ``extra_container_mounts``.
``--no-container-mount-home`` is there unless the system sets ``container_mount_home = true``.

A job without an image, or a system with ``container_runtime = "none"``, gets no flags: its argv
runs on the host (the image is then named in a comment, so a dry-run shows what was dropped).
"""

from __future__ import annotations

import re

from cloudai.config.fields import shown
from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.base import JobSpec
from cloudai.systems.shell import quote

# Text a double-quoted word may hold: $NAME / ${NAME} references and path characters, nothing that runs.
_EXPANDABLE = re.compile(r"(?:[A-Za-z0-9_./:,=+@%-]|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*)*")
RESULTS_MOUNT = "/cloudai_run_results"
INSTALL_MOUNT = "/cloudai_install"


def container_mounts(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    """The ``--container-mounts`` entries, in CloudAI's order."""
    job_dir = spec.job_dir.absolute()
    if "," in str(job_dir):
        raise ConfigError(
            f"results path {str(job_dir)!r} holds a ',', which would split the container mounts",
            field="--output-dir",
            hint="use an output directory (and scenario name) without a comma",
        )
    extra = spec.container.mounts if spec.container else ()
    return [
        f"{job_dir}:{RESULTS_MOUNT}",
        f"{config.install_path.absolute()}:{INSTALL_MOUNT}",
        str(job_dir),
        *extra,
    ]


def container_flags(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    """The srun flags that run ``spec`` in its container; none when it has none or the system runs none."""
    if spec.container is None or config.container_runtime == "none":
        return []
    flags = [
        quote(f"--container-image={spec.container.image}"),
        mounts_word(container_mounts(spec, config)),
    ]
    if not config.container_mount_home:
        flags.append("--no-container-mount-home")
    return flags


def mounts_word(mounts: list[str]) -> str:
    """``--container-mounts=...`` as one shell word: literal, except that an extra mount starting with ``$VAR`` /
    ``${VAR}`` (CloudAI's ``$PWD``, which its scripts leave to the batch shell) is double-quoted so the batch shell
    expands it; a mount with anything else after a ``$`` stays literal."""
    words = [quote("--container-mounts=")]
    for index, mount in enumerate(mounts):
        text = ("," if index else "") + mount
        words.append(f'"{text}"' if mount.startswith("$") and _EXPANDABLE.fullmatch(text) else quote(text))
    return "".join(words) if any(w.startswith('"') for w in words) else quote(f"--container-mounts={','.join(mounts)}")


def container_note(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    """A comment line for the script when the job's image is dropped (``container_runtime = "none"``)."""
    if spec.container is None or config.container_runtime != "none":
        return []
    image = spec.container.image
    return [f"# container_runtime = none: runs on the host, not in {image if image.isprintable() else shown(image)}"]
