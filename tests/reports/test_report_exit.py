"""What ``cloudai generate-report`` costs besides the report: no pydantic, and no collector's walk at exit (nor
over the records once ``paused`` ends).

The command's process leaves the report's records to the OS at exit (``report_cmd._leave_to_the_os``:
``gc.freeze`` from an atexit handler) rather than have the collector's last passes walk and free them one by
one (10^5 steps: ~0.3 s of CPU); a process that runs the command and goes on collects as before. The knob
columns of the page's table take a whole list at once when JSON shows its values as they are
(``chartdata.scalars``): the same values as ``scalar`` of each.
"""

from __future__ import annotations

import enum
import gc
import math
import subprocess
import sys
import weakref
from pathlib import Path

from click.testing import CliRunner
from pydantic import BaseModel

from cloudai.cli import cli
from cloudai.display import toml_text
from cloudai.reports.chartdata import scalar, scalars
from cloudai.reports.collector import paused

AT_EXIT = """
import atexit, gc, sys
# registered before the command's handler, so it runs after it (atexit runs the last registered first)
atexit.register(lambda: print("frozen" if gc.get_freeze_count() else "not frozen", sorted(
    m for m in ("pydantic", "rich", "matplotlib", "pandas") if m in sys.modules)))
sys.argv = ["cloudai", "generate-report", sys.argv[1]]
from cloudai.cli import main
main()
"""


def test_the_command_imports_no_pydantic_and_leaves_its_records_to_the_os_at_exit(dse_run: Path) -> None:
    done = subprocess.run([sys.executable, "-c", AT_EXIT, str(dse_run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "frozen []"
    assert (dse_run / "report.html").is_file()


class Node:
    other: Node | None = None


def test_leaving_a_pause_puts_what_was_allocated_in_the_oldest_generation() -> None:
    """The first young-generation pass after ``paused`` walks what is young, not all that was allocated inside;
    a cycle made inside is collected by a full collection (nothing stays frozen)."""
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    young: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            young.append(len(gc.get_objects(generation=0)))

    gc.callbacks.append(watch)
    try:
        with paused():
            held = [[i] for i in range(50_000)]  # records: 50 000 tracked objects
            a, b = Node(), Node()
            a.other, b.other = b, a
            cycle = weakref.ref(a)
            del a, b
        _ = [[] for _ in range(3000)]  # allocations after it: young-generation passes start
    finally:
        gc.callbacks.remove(watch)
    assert young and max(young) < 10_000  # on the records: 50 000 and more
    assert len(held) == 50_000 and gc.get_freeze_count() == 0 and gc.isenabled()
    gc.collect()
    assert cycle() is None


def test_a_process_that_goes_on_after_the_command_still_collects(dse_run: Path) -> None:
    before = gc.get_freeze_count()
    result = CliRunner().invoke(cli, ["generate-report", str(dse_run)])
    assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == before


class Color(enum.IntEnum):
    RED = 1


class Model(BaseModel):
    a: int = 1
    b: str | None = None


def test_scalars_of_a_column_are_scalar_of_each_value() -> None:
    columns = [
        [1, 2, None, True, "ring"],
        [0.6000000000000001, 1, None],
        [math.nan, math.inf, 2.5],
        [Color.RED, 3],
        [{"b": 1, "a": [1, 2]}, [0.1, 0.2], "x"],
        [],
    ]
    for values in columns:
        assert scalars(list(values)) == [scalar(v) for v in values]
        assert list(map(type, scalars(list(values)))) == [type(scalar(v)) for v in values]


def test_toml_text_shows_a_model_without_the_module_importing_pydantic() -> None:
    assert toml_text(Model()) == "{ a = 1 }"
    assert toml_text({"m": Model(b="x")}) == '{ m = { a = 1, b = "x" } }'
    code = "import sys, cloudai.display; print('pydantic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
