"""The pyxis/enroot part of an ``srun`` line: which image, which mounts, as CloudAI renders them.

CloudAI's order (``SlurmCommandGenStrategy.gen_srun_prefix`` / ``container_mounts``)::

    srun --export=ALL --mpi=pmix --container-image=IMG \\
        --container-mounts=JOB:/cloudai_run_results,INSTALL:/cloudai_install,JOB[,extra...] \\
        --no-container-mount-home ...

``JOB`` is the job's own directory (CloudAI's test-run output dir), ``INSTALL`` the system's
``install_path``; both absolute. ``extra`` are the test's ``extra_container_mounts``; one that starts with
``$VAR`` gets it from the batch shell, as CloudAI's unquoted line does, and ``$PWD`` (CloudAI's
``$PWD/conf/...``) is the directory cloudai runs in, which is what CloudAI's batch shell has there.
``--no-container-mount-home`` is there unless the system sets ``container_mount_home = true``.
The workload's own mounts come last (a serving job's: the system's ``hf_home_path``, CloudAI's Hugging Face cache).

A job without an image, or a system with ``container_runtime = "none"``, gets no flags: its argv
runs on the host (the image is then named in a comment, so a dry-run shows what was dropped).
"""

from __future__ import annotations

from pathlib import Path

from cloudai.config.fields import shown
from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.base import JobSpec
from cloudai.systems.shell import quote, quote_expanding

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
    extra = [_submit_dir(mount) for mount in spec.container.mounts] if spec.container else []
    return [
        f"{job_dir}:{RESULTS_MOUNT}",
        f"{config.install_path.absolute()}:{INSTALL_MOUNT}",
        str(job_dir),
        *extra,
    ]


def _submit_dir(mount: str) -> str:
    """A mount's leading ``$PWD`` as the directory cloudai runs in: CloudAI's batch shell starts there (it submits
    from it and never changes directory), ours changes into the job dir first, so its ``$PWD`` would be that."""
    for ref in ("${PWD}", "$PWD"):
        rest = mount.removeprefix(ref)
        if rest != mount and (not rest or not (rest[0].isalnum() or rest[0] == "_")):
            return f"{Path.cwd()}{rest}"
    return mount


def container_flags(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    """The srun flags that run ``spec`` in its container; none when it has none or the system runs none."""
    if spec.container is None or config.container_runtime == "none":
        return []
    flags = [
        quote(f"--container-image={spec.container.image}"),
        quote_expanding("--container-mounts=", container_mounts(spec, config)),
    ]
    if not config.container_mount_home:
        flags.append("--no-container-mount-home")
    return flags


def container_env(spec: JobSpec, config: SlurmSystemConfig) -> dict[str, str]:
    """The job's container-only variables (``Container.env``, e.g. AIDynamo's ``HF_HOME`` under its mount) when it
    runs in its container, but none the system's ``global_env_vars`` or the job's own environment set."""
    if not container_flags(spec, config) or spec.container is None:
        return {}
    return {k: v for k, v in spec.container.env if k not in config.global_env_vars and k not in spec.env}


def container_note(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    """A comment line for the script when the job's image is dropped (``container_runtime = "none"``)."""
    if spec.container is None or config.container_runtime != "none":
        return []
    image = spec.container.image
    return [f"# container_runtime = none: runs on the host, not in {image if image.isprintable() else shown(image)}"]
