"""CloudAI's LMCache and SGLang HiCache config files for an AIDynamo job (``cmd_args.lmcache``, ``cmd_args.hicache``).

Both tables are data, passed whole to the tool (a list inside one is swept like any other ``cmd_args`` list unless
``dse_excluded_args`` names it, as in CloudAI). What CloudAI does with them, and what the job script does here:

* ``lmcache``: dumped as YAML (``yaml.safe_dump``, keys in TOML order) to ``lmcache-config.yaml`` in the job dir,
  with an untouched copy ``lmcache-config.original.yaml``; ``LMCACHE_CONFIG_FILE`` names it and
  ``ENABLE_LMCACHE=1`` is exported. Before any worker starts, the placeholders ``{frontend_node}``,
  ``{frontend_ip}``, ``{results_dir}`` and ``{storage_cache_dir}`` are filled in place (any other ``{name}`` ends
  the job), ``{storage_cache_dir}`` being ``<storage_cache_dir>/$USER/<frontend node>/lmcache/cache``, created on
  every node (CloudAI's ``render_lmcache_config``); ``storage_cache_dir`` is mounted at itself, as CloudAI does.
  With any LMCache config (also ``LMCACHE_CONFIG_FILE`` from ``extra_env_vars``), CloudAI's ``cufile.json`` is
  written too and named by ``CUFILE_ENV_PATH_JSON`` (its ``setup_lmcache``).
* ``hicache``: dumped as TOML (``toml.dumps``) to ``hicache-config.toml``; ``HICACHE_CONFIG_FILE`` names it and
  both workers get ``--hicache-storage-backend-extra-config @<file>`` (CloudAI's ``setup_hicache``), whatever the
  backend. A ``HICACHE_CONFIG_FILE`` set in ``extra_env_vars`` instead is passed the same way.

The files are written the way every cloudai workload writes a job's extra files: by the job script (a quoted
heredoc in its first step, ``cloudai.workloads.heredoc``), so ``dry-run``'s script holds each file verbatim.
Paths are the job dir's own (mounted at itself; CloudAI writes ``/cloudai_run_results``, the same directory).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import toml
import yaml

from cloudai.steps import Run
from cloudai.workloads.ai_dynamo.args import AIDynamoArgs
from cloudai.workloads.heredoc import write_lines

LMCACHE_FILE, LMCACHE_ORIGINAL = "lmcache-config.yaml", "lmcache-config.original.yaml"
HICACHE_FILE, CUFILE = "hicache-config.toml", "cufile.json"
DEFAULT_CACHE_BASE = "/cloudai_install/storage_cache"  # CloudAI's when storage_cache_dir is empty
_CUFILE_PROPERTIES = {  # CloudAI's cufile.json
    "allow_compat_mode": True,
    "max_direct_io_size_kb": 16384,
    "max_device_cache_size_kb": 2097152,
    "per_buffer_cache_size_kb": 16384,
    "max_device_pinned_mem_size_kb": 33554432,
    "posix_pool_slab_size_kb": [4, 1024, 16384],
    "posix_pool_slab_count": [512, 512, 512],
}
_CACHE_DIR = "CLOUDAI_LMCACHE_CACHE_DIR"  # {storage_cache_dir}, as the batch shell computes it
_END = "CLOUDAI_CONFIG_EOF"


def lmcache_yaml(table: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(table), sort_keys=False)


def hicache_toml(table: Mapping[str, Any]) -> str:
    return toml.dumps(dict(table))


def hicache_file(model: AIDynamoArgs, job_dir: Path, env: Mapping[str, str]) -> str | None:
    """The HiCache config the workers read: the job's own file, else ``extra_env_vars``' ``HICACHE_CONFIG_FILE``."""
    return str(job_dir / HICACHE_FILE) if model.hicache is not None else env.get("HICACHE_CONFIG_FILE") or None


def worker_flags(model: AIDynamoArgs, job_dir: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    path = hicache_file(model, job_dir, env)
    return ("--hicache-storage-backend-extra-config", f"@{path}") if path else ()


def lmcache_config(model: AIDynamoArgs, env: Mapping[str, str]) -> bool:
    """An LMCache config is given (the table, or ``LMCACHE_CONFIG_FILE`` in ``extra_env_vars``): CloudAI then
    exports ``ENABLE_LMCACHE=1`` (as for the ``lmcache`` connector) and writes ``cufile.json``."""
    return model.lmcache is not None or bool(env.get("LMCACHE_CONFIG_FILE"))


def cufile_lines(job_dir: Path) -> list[str]:
    """CloudAI's ``setup_cufile``: ``cufile.json`` in the job dir (cuFile's POSIX compat mode on, CloudAI's buffer
    sizes, cuFile's log in the job dir at ``$CUFILE_LOG_LEVEL``, default INFO), named by ``CUFILE_ENV_PATH_JSON``."""
    config = {"properties": _CUFILE_PROPERTIES, "logging": {"dir": str(job_dir), "level": "@LEVEL@"}}
    text = re.sub(r"([\\$`])", r"\\\1", json.dumps(config, indent=2))  # literal in an unquoted heredoc
    text = text.replace("@LEVEL@", "${CUFILE_LOG_LEVEL:-INFO}")
    end = "CLOUDAI_CUFILE_EOF"
    return [f"export CUFILE_ENV_PATH_JSON={shlex.quote(str(job_dir / CUFILE))}",
            f'cat > "$CUFILE_ENV_PATH_JSON" <<{end}', text, end]  # fmt: skip


def cache_base(model: AIDynamoArgs) -> str:
    base = model.storage_cache_dir
    return base if isinstance(base, str) and base else DEFAULT_CACHE_BASE


def _write(path: Path, text: str) -> list[str]:
    """Batch-shell lines that write ``text`` (a YAML or TOML dump: it ends with a newline) to ``path`` byte for byte."""
    return write_lines(path, text.removesuffix("\n"), _END)


def shell_lines(model: AIDynamoArgs, job_dir: Path, env: Mapping[str, str]) -> list[str]:
    """The config files written, their variables exported and LMCache's placeholders filled (before any worker);
    with any LMCache config, CloudAI's ``cufile.json`` too (its ``setup_lmcache``)."""
    lines = cufile_lines(job_dir) if lmcache_config(model, env) else []
    if model.hicache is not None:
        path = job_dir / HICACHE_FILE
        lines += [*_write(path, hicache_toml(model.hicache)), f"export HICACHE_CONFIG_FILE={shlex.quote(str(path))}"]
    if model.lmcache is not None:
        path, text = job_dir / LMCACHE_FILE, lmcache_yaml(model.lmcache)
        lines += [*_write(path, text), *_write(job_dir / LMCACHE_ORIGINAL, text)]
        cache_dir = f'{shlex.quote(cache_base(model))}"/${{USER:-}}/${{CLOUDAI_HEAD_NODE}}/lmcache/cache"'
        lines += [f"export LMCACHE_CONFIG_FILE={shlex.quote(str(path))}", f"export {_CACHE_DIR}={cache_dir}",
                  _RENDER.replace("@RESULTS@", shlex.quote(str(job_dir)))]  # fmt: skip
    return lines


# CloudAI's ``render_lmcache_config`` in bash (``@RESULTS@``: the job dir, shell-quoted): any other ``{name}``
# ends the job, the known ones are filled in place; ``{frontend_ip}`` is resolved only where it is used.
_RENDER = r"""cloudai_render_lmcache() {  # {placeholders} of $LMCACHE_CONFIG_FILE filled in place
    local file="$LMCACHE_CONFIG_FILE" text unknown ip=""
    unknown=$(grep -oE '\{[A-Za-z_][A-Za-z0-9_]*\}' "$file" | tr -d '{}' | sort -u \
        | grep -vxE 'frontend_node|frontend_ip|results_dir|storage_cache_dir' | paste -sd ' ' - || true)
    if [ -n "$unknown" ]; then
        echo "cloudai: unknown LMCache config placeholders: $unknown" >&2; return 1
    fi
    text=$(<"$file")
    if [[ "$text" == *"{frontend_ip}"* ]]; then
        ip=$(getent ahosts "$CLOUDAI_HEAD_NODE" | awk '/STREAM/ && ip == "" {ip = $1} END {print ip}' || true)
        [ -n "$ip" ] || { echo "cloudai: cannot resolve $CLOUDAI_HEAD_NODE for {frontend_ip}" >&2; return 1; }
    fi
    text=${text//"{frontend_node}"/"$CLOUDAI_HEAD_NODE"}
    text=${text//"{frontend_ip}"/"$ip"}
    text=${text//"{results_dir}"/@RESULTS@}
    text=${text//"{storage_cache_dir}"/"$CLOUDAI_LMCACHE_CACHE_DIR"}
    printf '%s\n' "$text" > "$file.tmp" && mv "$file.tmp" "$file"
}
cloudai_render_lmcache || exit 1"""


def cache_dir_steps(model: AIDynamoArgs, num_nodes: int) -> list[Run]:
    """``{storage_cache_dir}`` created on every node, in the job's container (CloudAI's ``render_lmcache_config``)."""
    if model.lmcache is None:
        return []
    make = f'mkdir -p "${_CACHE_DIR}" && chmod 755 "${_CACHE_DIR}"'
    n = num_nodes
    return [Run(("bash", "-c", make), name="lmcache_cache_dir", num_nodes=n, ntasks=n, ntasks_per_node=1)]


def container_mounts(model: AIDynamoArgs) -> list[str]:
    """``storage_cache_dir`` at itself (CloudAI's mount), where ``{storage_cache_dir}`` lives."""
    base = model.storage_cache_dir
    return [f"{base}:{base}"] if model.lmcache is not None and isinstance(base, str) and base else []
