"""Bad input: exit 2, the file and field named, no traceback, no output dir created."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import cloudai

SLEEP = 'name = "sleep"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n'
OK_SCENARIO = 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n'

# (case id, {relative path: content}, extra CLI args, fragments the message must contain)
CASES: list[tuple[str, dict[str, str], list[str], list[str]]] = [
    ("toml syntax", {"s.toml": 'name = "s"\n[[Tests]\n'}, [], ["s.toml", "line 2"]),
    (
        "unknown scenario field",
        {"s.toml": OK_SCENARIO + "iteratons = 2\n"},
        [],
        ["s.toml", "Tests[0].iteratons", "did you mean 'iterations'"],
    ),
    ("unknown top-level field", {"s.toml": 'nme = "s"\n' + OK_SCENARIO}, [], ["s.toml", "nme"]),
    ("wrong type", {"s.toml": OK_SCENARIO + 'iterations = "many"\n'}, [], ["s.toml", "Tests[0].iterations"]),
    ("zero iterations", {"s.toml": OK_SCENARIO + "iterations = 0\n"}, [], ["Tests[0].iterations"]),
    (
        "missing test",
        {"s.toml": 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "slep"\n'},
        [],
        ["s.toml", "Tests[0].test_name", "did you mean 'sleep'"],
    ),
    (
        "unknown dependency id",
        {"s.toml": OK_SCENARIO + '[[Tests.dependencies]]\ntype = "start_post_comp"\nid = "b"\n'},
        [],
        ["Tests[0].dependencies[0].id", "unknown test id 'b'"],
    ),
    (
        "bad dependency type",
        {"s.toml": OK_SCENARIO + '[[Tests.dependencies]]\ntype = "after"\nid = "a"\n'},
        [],
        ["Tests[0].dependencies[0].type"],
    ),
    (
        "self dependency",
        {"s.toml": OK_SCENARIO + '[[Tests.dependencies]]\ntype = "start_post_comp"\nid = "a"\n'},
        [],
        ["depends on itself"],
    ),
    (
        "dependency cycle",
        {
            "s.toml": 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n'
            '[[Tests.dependencies]]\ntype = "start_post_comp"\nid = "b"\n'
            '[[Tests]]\nid = "b"\ntest_name = "sleep"\n'
            '[[Tests.dependencies]]\ntype = "start_post_comp"\nid = "a"\n'
        },
        [],
        ["dependency cycle", "a -> b -> a"],
    ),
    ("duplicate id", {"s.toml": OK_SCENARIO + OK_SCENARIO.split("\n", 1)[1]}, [], ["Tests[1].id", "duplicate id 'a'"]),
    (
        "bad time_limit",
        {"s.toml": OK_SCENARIO + 'time_limit = "ten minutes"\n'},
        [],
        ["Tests[0].time_limit", "HH:MM:SS"],
    ),
    ("zero time_limit", {"s.toml": OK_SCENARIO + 'time_limit = "00:00:00"\n'}, [], ["Tests[0].time_limit"]),
    (
        "unknown workload",
        {
            "tests/x.toml": 'name = "x"\ntest_template_name = "Slep"\n',
            "s.toml": 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "x"\n',
        },
        [],
        ["x.toml", "test_template_name", "did you mean 'Sleep'"],
    ),
    ("empty scenario", {"s.toml": 'name = "s"\nTests = []\n'}, [], ["s.toml", "Tests"]),
    ("scenario without name", {"s.toml": '[[Tests]]\nid = "a"\ntest_name = "sleep"\n'}, [], ["s.toml", "name"]),
    ("missing scenario file", {}, [], ["missing.toml", "file not found"]),
    ("scenario is a directory", {"sdir/keep.txt": ""}, ["--test-scenario-dir"], ["sdir", "is a directory"]),
    ("tests dir is a file", {"s.toml": OK_SCENARIO}, ["--tests-dir-file"], ["s.toml", "expected a directory"]),
    (
        "unknown cmd_arg",
        {"s.toml": OK_SCENARIO + "[Tests.cmd_args]\nsecnds = 1\n"},
        [],
        ["Tests[0].cmd_args.secnds", "did you mean 'seconds'"],
    ),
    ("negative sleep", {"s.toml": OK_SCENARIO + "[Tests.cmd_args]\nseconds = -1\n"}, [], ["Tests[0].cmd_args.seconds"]),
    (
        "shell in sleep seconds",
        {"s.toml": OK_SCENARIO + '[Tests.cmd_args]\nseconds = "1; touch pwned"\n'},
        [],
        ["Tests[0].cmd_args.seconds"],
    ),
    (
        "empty list",
        {"s.toml": OK_SCENARIO + "[Tests.cmd_args]\nseconds = []\n"},
        [],
        ["Tests[0].cmd_args.seconds", "empty list"],
    ),
    (
        "range low >= high",
        {"s.toml": OK_SCENARIO + "[Tests.cmd_args]\nseconds = { low = 2, high = 1 }\n"},
        [],
        ["Tests[0].cmd_args.seconds", "less than high"],
    ),
    (
        "unsafe id",
        {"s.toml": 'name = "s"\n[[Tests]]\nid = "../../etc"\ntest_name = "sleep"\n'},
        [],
        ["Tests[0].id", "not allowed"],
    ),
    ("duplicate test names", {"tests/again.toml": SLEEP}, [], ["again.toml", "also used by"]),
    (
        "test file unknown field",
        {"tests/x.toml": SLEEP.replace("[cmd_args]", 'descripton = "x"\n[cmd_args]')},
        [],
        ["x.toml", "descripton", "did you mean 'description'"],
    ),
    (
        "unknown scheduler",
        {"sys.toml": 'name = "x"\nscheduler = "pbs"\n', "s.toml": OK_SCENARIO},
        ["--system-config", "sys.toml"],
        ["sys.toml", "scheduler", "unknown scheduler 'pbs'"],
    ),
    (
        "system unknown field",
        {"sys.toml": 'name = "x"\nscheduler = "standalone"\noutput_pth = "x"\n', "s.toml": OK_SCENARIO},
        ["--system-config", "sys.toml"],
        ["sys.toml", "output_pth", "did you mean 'output_path'"],
    ),
    ("not utf-8", {"s.toml": 'name = "\udcff"\n'}, [], ["s.toml", "UTF-8"]),
]


@pytest.mark.parametrize(("files", "extra", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_exit_2_with_file_and_field(
    tmp_path: Path, files: dict[str, str], extra: list[str], fragments: list[str]
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/sleep.toml").write_text(SLEEP)
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    scenario = tmp_path / ("s.toml" if "s.toml" in files else "missing.toml")
    tests_dir = tmp_path / "tests"
    args = list(extra)
    if "--test-scenario-dir" in args:
        args.remove("--test-scenario-dir")
        scenario = tmp_path / "sdir"
    if "--tests-dir-file" in args:
        args.remove("--tests-dir-file")
        tests_dir = tmp_path / "s.toml"
    args = [str(tmp_path / a) if a.endswith(".toml") else a for a in args]
    out = tmp_path / "out"
    result = cloudai("run", "--tests-dir", tests_dir, "--test-scenario", scenario, "--output-dir", out, *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    assert not out.exists()


def test_at_least_twenty_distinct_cases() -> None:
    assert len({c[0] for c in CASES}) >= 20
