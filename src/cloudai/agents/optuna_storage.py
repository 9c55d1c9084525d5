"""Where the ``optuna`` agent keeps its study: a journal file Optuna's own tools open.

``<iteration dir>/optuna_journal.log`` (``JournalFileBackend``), study name ``<test id>/<iteration>``:

    optuna.load_study(study_name="<test id>/<iteration>",
                      storage=JournalStorage(JournalFileBackend("<dir>/optuna_journal.log")))
    optuna-dashboard <dir>/optuna_journal.log

trajectory.csv stays the source of truth: each agent start rebuilds the journal, replaying the recorded
steps into it (``add_trial``), so a missing, stale or half-written journal after ``--resume`` is rebuilt.
The rebuild goes to ``optuna_journal.log.new`` and replaces the journal in one ``rename`` once the replay is
done (``publish``): a kill during the replay leaves the previous journal whole, never an empty one. Each
trial carries user attrs ``step`` and ``status`` (trajectory.csv's). An env without a record dir (tests, dry
runs) gets an in-memory study.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

JOURNAL_FILE = "optuna_journal.log"
NEW_SUFFIX = ".new"  # the journal being rebuilt, until publish


def study_name(record_dir: Path | None) -> str:
    """``<test id>/<iteration>`` from ``<run dir>/<test id>/<iteration>``; "cloudai" without a dir."""
    return f"{record_dir.parent.name}/{record_dir.name}" if record_dir is not None else "cloudai"


def fresh_storage(record_dir: Path | None) -> tuple[JournalStorage | None, Callable[[], None]]:
    """A new, empty journal for ``record_dir``, written beside the old one, and the call that puts it in the old
    one's place (one ``rename``; later appends go to it); ``(None, no-op)``: in memory."""
    if record_dir is None:
        return None, lambda: None
    record_dir.mkdir(parents=True, exist_ok=True)
    path = record_dir / JOURNAL_FILE
    building = path.with_name(path.name + NEW_SUFFIX)
    building.unlink(missing_ok=True)
    for stale in record_dir.glob(f"{JOURNAL_FILE}.lock*"):
        stale.unlink(missing_ok=True)
    backend = _UnsyncedJournal(str(building), lock_obj=JournalFileOpenLock(str(path)))
    return JournalStorage(backend), backend.publish


class _UnsyncedJournal(JournalFileBackend):
    """Optuna's journal file format, written without a lock and an fsync per operation.

    This run is the journal's only writer, and trajectory.csv (fsync'ed per step) is the durable
    record the journal is rebuilt from; Optuna's per-append fsync cost ~6 ms per step.
    """

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        text = "\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n"
        with open(self._file_path, "ab") as fh:
            fh.write(text.encode("utf-8"))

    def publish(self) -> None:
        """Rename the rebuilt journal over the old one (once; later calls do nothing)."""
        if self._file_path.endswith(NEW_SUFFIX):
            final = self._file_path.removesuffix(NEW_SUFFIX)
            os.replace(self._file_path, final)
            self._file_path = final


def load_study(record_dir: Path) -> optuna.Study:
    """The study a run left in ``record_dir``, as ``optuna.load_study`` reads it (for tests and users)."""
    storage = JournalStorage(JournalFileBackend(str(record_dir / JOURNAL_FILE)))
    return optuna.load_study(study_name=study_name(record_dir), storage=storage)


def dashboard_command(record_dir: Path) -> str:
    return f"optuna-dashboard {(record_dir / JOURNAL_FILE).resolve()}"
