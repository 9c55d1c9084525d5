"""What the installed aiconfigurator release ships, and the checks of a test's ``cmd_args`` against it.

The release, not cloudai, knows its systems, backends, database versions and model configs, and asking it costs
an import of the package (~1-3 s): ``runner.py catalog`` is run once per environment and its answer kept beside
the environment (``cloudai-catalog.json``, written atomically; a file from another package version is redone).
"""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path
from typing import Any

from cloudai.atomicfile import atomic_write
from cloudai.errors import WorkloadError
from cloudai.installables import PythonEnv
from cloudai.workloads.aiconfigurator.args import LEGACY_MODELS, AiconfiguratorArgs

VERSION = "0.12.0"
ENV = PythonEnv(f"aiconfigurator-{VERSION}", (f"aiconfigurator=={VERSION}",))
RUNNER = Path(__file__).with_name("runner.py")
CATALOG_FILE = "cloudai-catalog.json"


def catalog(install_path: Path) -> dict[str, Any]:
    """The release's catalog (see the module docstring); ``WorkloadError`` when the package cannot answer."""
    path = ENV.path(install_path) / CATALOG_FILE
    try:
        known = json.loads(path.read_text())
        if known.get("aiconfigurator") == VERSION and "quant_modes" in known:  # an older cloudai's file: redone
            return known
    except (OSError, ValueError):
        pass
    done = subprocess.run(
        [str(ENV.python(install_path)), str(RUNNER), "catalog"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        where = ENV.path(install_path)
        raise WorkloadError(f"aiconfigurator {VERSION} at {where} could not list its databases: {tail}")
    atomic_write(path, done.stdout)
    return json.loads(done.stdout)


def problem(args: AiconfiguratorArgs, known: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, message)`` for the first of model_name, system, backend, version and quantisation mode the release
    does not ship."""
    models: list[str] = known["models"]
    if args.model not in models:
        shown = f"{args.model_name!r}" + (f" ({args.model})" if args.model != args.model_name else "")
        legacy = [name for name, model in LEGACY_MODELS.items() if model in models]
        listed = _choices(args.model_name, [*models, *legacy])
        return "model_name", f"{shown} is not a model aiconfigurator {VERSION} ships; {listed}"
    databases: dict[str, dict[str, list[str]]] = known["databases"]
    if args.system not in databases:
        listed = _choices(args.system, databases)
        return "system", f"{args.system!r} is not a system of aiconfigurator {VERSION}; {listed}"
    backends = databases[args.system]
    if args.backend not in backends:
        return "backend", f"{args.backend!r} has no database for {args.system}; {_choices(args.backend, backends)}"
    versions = backends[args.backend]
    if args.version is not None and args.version not in versions:
        default = known["defaults"][args.system][args.backend]
        return "version", (
            f"{args.version!r}: aiconfigurator {VERSION} ships no {args.backend} database of that version for "
            f"{args.system}; {_choices(args.version, versions)} (left out: {default}, the release's default)"
        )
    for field, names in known.get("quant_modes", {}).items():
        for where, value in ((field, getattr(args, field)), (f"{args.mode or _mode(args)}.{field}",
                                                               getattr(args.chosen, field))):  # fmt: skip
            if value is not None and value not in names:
                return where, f"{value!r} is not a {field} of aiconfigurator {VERSION}; {_choices(value, names)}"
    return None


def _mode(args: AiconfiguratorArgs) -> str:
    return "agg" if args.agg is not None else "disagg"


def default_version(args: AiconfiguratorArgs, known: dict[str, Any]) -> str:
    return args.version or known["defaults"][args.system][args.backend]


SHOWN = 5  # names a message lists; the release ships ~90 models, which on one line help nobody


def _choices(word: str, choices: Any) -> str:
    """The closest few of ``choices`` (all of them when there are few), and how many there are."""
    names = sorted(choices)
    if len(names) <= SHOWN:
        close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        return (f"did you mean {close[0]!r}? " if close else "") + f"available: {', '.join(names)}"
    close = difflib.get_close_matches(word, names, n=SHOWN, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), names, n=SHOWN, cutoff=0.0)
        return f"closest of the {len(names)} it ships: {', '.join(close)}"
    return f"did you mean {close[0]!r}? closest of the {len(names)} it ships: {', '.join(close)}"
