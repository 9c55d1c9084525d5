"""Results dirs written file by file, in exactly the layout `cloudai run` leaves (see DESIGN.md, Outputs),
and ``Page``: what the tests read back from a report (parsed with ``html.parser``)."""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

TRAJECTORY_HEADER = ["step", "episode", "action", "reward", "observation", "status", "elapsed_s"]
T0 = 1_790_000_000.0


def entry(test_id: str, *, agent: str | None = None, live: bool = False, env: list[str] | None = None) -> dict:
    return {
        "id": test_id,
        "test_name": f"{test_id.lower()}-test",
        "workload": "Sleep",
        "iterations": 1,
        "agent_driven": agent is not None,
        "live_rl": live,
        "agent": agent,
        "agent_metrics": ["default"],
        "reward_function": "inverse",
        "env_params": env or [],
    }


def write_manifest(run_dir: Path, entries: list[dict], scenario: str = "sleep-scenario") -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"scenario": scenario, "started_at": T0, "system": "standalone", "entries": entries}
    (run_dir / "run.json").write_text(json.dumps(manifest, indent=1))


def write_job(job_dir: Path, status: str = "ok", metric: float | None = None, duration: float = 2.0) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    record = {"name": job_dir.name, "job_id": "123", "status": status, "returncode": 0 if status == "ok" else 1,
              "reason": "" if status == "ok" else "exit code 1", "submitted_at": T0, "started_at": T0,
              "ended_at": T0 + duration, "argv": ["sleep", "1"]}  # fmt: skip
    (job_dir / "job.json").write_text(json.dumps(record))
    if metric is not None:
        (job_dir / "metrics.json").write_text(json.dumps({"default": metric, "other": 1.0}))
    (job_dir / "stdout.txt").write_text("done\n")
    (job_dir / "stderr.txt").write_text("")
    (job_dir / "cmd.sh").write_text("sleep 1\n")


# Configurations the fake agent tries. 'ring' with 128 threads wins at no load but collapses under load:
# the trap the regimes section must call out; 'tree' with 128 threads is the robust choice.
POOL = [
    {"threads": 128, "algo": "ring", "chunk": 4.0},
    {"threads": 128, "algo": "tree", "chunk": 1.0},
    {"threads": 64, "algo": "tree", "chunk": 2.0},
    {"threads": 32, "algo": "tree", "chunk": 0.5},
    {"threads": 16, "algo": "tree", "chunk": 2.0},
    {"threads": 8, "algo": "tree", "chunk": 3.0},
    {"threads": 64, "algo": "ring", "chunk": 1.0},
    {"threads": 32, "algo": "ring", "chunk": 3.0},
    {"threads": 16, "algo": "ring", "chunk": 0.0},
]


def dse_reward(action: dict, load: float) -> float:
    """Threads and the 'tree' algorithm help; background load hurts; 'ring' collapses under load."""
    algo = 2.0 if action["algo"] == "tree" else 2.5 - 6.0 * load
    return math.log2(action["threads"]) + algo - 2.0 * load + 0.1 * action["chunk"]


def write_trajectory(
    it_dir: Path,
    steps: int,
    *,
    seed: int = 0,
    env: bool = True,
    episodes: int = 1,
    torn: bool = False,
) -> None:
    """``steps`` trials drawn from ``POOL`` (every 7th failed, every 11th cached); env.csv when ``env``."""
    rng = random.Random(seed)
    it_dir.mkdir(parents=True, exist_ok=True)
    per_episode = max(1, steps // episodes)
    with (it_dir / "trajectory.csv").open("w", newline="") as tf, (it_dir / "env.csv").open("w", newline="") as ef:
        traj, envw = csv.writer(tf), csv.writer(ef)
        traj.writerow(TRAJECTORY_HEADER)
        envw.writerow(["step", "background_load", "latency_ms"])
        previous: dict | None = None
        for step in range(1, steps + 1):
            action = POOL[0] if step == 1 else rng.choice(POOL)
            load, latency = (0.0 if step == 1 else rng.choice([0.0, 0.5, 0.9])), round(rng.uniform(1, 100), 2)
            status = "failed" if step % 7 == 0 else "cached" if step % 11 == 0 and previous else "ok"
            if status == "cached" and previous is not None:
                action = previous
            noise = rng.uniform(-0.05, 0.05)
            reward = (
                -1.0 if status == "failed" else dse_reward(action, load) + noise + 0.5 * ((step - 1) // per_episode)
            )
            episode = min(episodes, 1 + (step - 1) // per_episode)
            traj.writerow([step, episode, json.dumps(action), reward, json.dumps([reward]), status, 0.5])
            envw.writerow([step, load, latency])
            previous = action
    if not env:
        (it_dir / "env.csv").unlink()
    if torn:
        with (it_dir / "trajectory.csv").open("a") as fh:
            fh.write(f'{steps + 1},1,"{{""threads"": 4, ""al')
    (it_dir / "best.toml").write_text('name = "best"\ntest_template_name = "Sleep"\n')
    for step in (1, 2):
        write_job(it_dir / str(step), metric=1.0)


@dataclass
class Page(HTMLParser):
    """What the tests look at in a report: sections, charts and their data, images, external references, table
    cell text, and what the page would load from elsewhere (``loads``: a script or image with a ``src``, a
    ``link``, ``iframe`` or ``object``; a self-contained page has none)."""

    sections: dict[str, str] = field(default_factory=dict)  # id -> data-section
    charts: dict[str, dict] = field(default_factory=dict)  # chart id -> its spec (parsed data-spec)
    rows: dict[str, dict] = field(default_factory=dict)  # an agent run's table of charted steps, by name
    images: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    loads: int = 0
    _script: str | None = None  # inside a script: "" or, for an agent run's table of charted steps, its name

    def __post_init__(self) -> None:
        HTMLParser.__init__(self)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections[a.get("id") or ""] = a.get("data-section") or ""
        if tag == "div" and a.get("class") == "chart":
            self.charts[a.get("id") or ""] = json.loads(a.get("data-spec") or "")
        if tag == "script":
            self._script = (a.get("data-rows") or "") if a.get("class") == "rows" else ""
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag in ("link", "iframe", "object") or (tag in ("script", "img") and a.get("src") is not None):
            self.loads += 1
        for attr in ("src", "href"):
            if (a.get(attr) or "").startswith(("http:", "https:", "//", "file:")):
                self.external.append(a[attr] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script:
            self.rows[self._script] = json.loads(data)
        if self._script is not None:
            return  # a table, uPlot, report.js: not the page's text
        self.text.append(data)
        if self.lasttag in ("td", "th"):
            self.cells.append(data)

    def points(self, chart: str) -> int:
        """How many points the chart draws (its series' rows or explicit xs)."""
        return sum(len(s.get("xs") or s.get("rows") or []) for s in self.charts[chart]["series"])

    def drawn(self, chart: str, series: str) -> list[dict[str, object]]:
        """Each point of ``series`` (by label) in ``chart`` given as a row of its table: that row, as a dict."""
        spec = self.charts[chart]
        table = self.rows[spec["rows"]]
        (found,) = [s for s in spec["series"] if s["label"] == series]
        return [{name: col[r] for name, col in table["cols"].items()} for r in found["rows"]]

    def kinds(self) -> set[str]:
        return set(self.sections.values())

    @property
    def all_text(self) -> str:
        return " ".join(self.text)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text())
    return page


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.sections.append(dict(attrs).get("id") or "")
        elif tag == "tr" and self.sections:
            self.tables.setdefault(self.sections[-1], []).append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.sections.pop()
        elif tag in ("td", "th") and self.cell is not None:
            self.tables[self.sections[-1]][-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def tables(path: Path) -> dict[str, list[list[str]]]:
    """Section id -> the rows (header first) of the tables directly in that section, cells as text."""
    parser = _Tables()
    parser.feed(path.read_text())
    return parser.tables
