"""Nested knobs: ``cmd_args.args.*`` of a fio test are dimensions named by their dotted path."""

from __future__ import annotations

from pathlib import Path

from tests.dse.conftest import invoke

from cloudai.space import Categorical, Range, entry_knobs, parse_space, split_knobs
from cloudai.workloads.base import JobContext
from cloudai.workloads.fio import Fio

CMD_ARGS = {
    "fio_binary": "fio",
    "args": {
        "name": "j",
        "bs": ["4k", "1m"],
        "rw": "randread",
        "iodepth": {"low": 1, "high": 32, "log": True, "dtype": "int"},
        "numjobs": [1, 2],
    },
    "metric_name": "bw",
}


def test_nested_lists_and_ranges_are_dotted_dimensions() -> None:
    space = parse_space(entry_knobs(CMD_ARGS, {}, 1))
    assert space.names == ("args.bs", "args.iodepth", "args.numjobs")
    assert space.dim("args.bs") == Categorical("args.bs", ("4k", "1m"))
    assert space.dim("args.iodepth") == Range("args.iodepth", 1.0, 32.0, log=True, dtype="int")
    assert space.fixed["args.rw"] == "randread" and space.fixed["fio_binary"] == "fio"


def test_a_trial_is_the_nested_table_back_in_the_tomls_order() -> None:
    space = parse_space(entry_knobs(CMD_ARGS, {}, 1))
    values = space.full({"args.numjobs": 2, "args.iodepth": 8, "args.bs": "1m"})
    cmd_args, env, nodes = split_knobs(values)
    assert (env, nodes) == ({}, 1)
    assert list(cmd_args) == ["fio_binary", "args", "metric_name"]
    assert cmd_args["args"] == {"name": "j", "bs": "1m", "rw": "randread", "iodepth": 8, "numjobs": 2}
    assert list(cmd_args["args"]) == ["name", "bs", "rw", "iodepth", "numjobs"]  # --name first: one fio job
    assert Fio().argv(cmd_args, JobContext(job_dir=Path("/tmp/j"))) == [
        "fio", "--name=j", "--bs=1m", "--rw=randread", "--iodepth=8", "--numjobs=2", "--output-format=json",
    ]  # fmt: skip


def test_without_keeps_the_order() -> None:
    space = parse_space(entry_knobs(CMD_ARGS, {}, 1)).without({"args.bs"})
    assert space.names == ("args.iodepth", "args.numjobs")
    point = {"args.numjobs": 1, "args.iodepth": 2, "args.bs": "4k"}  # bs, e.g. sampled as an env_param
    assert list(space.full(point))[:5] == ["fio_binary", "args.name", "args.bs", "args.rw", "args.iodepth"]


def test_bad_nested_knobs_are_exit_2_naming_the_dotted_field(tmp_path: Path) -> None:
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "b.toml").write_text(
        'name = "b"\ntest_template_name = "Fio"\nagent = "optuna"\nagent_steps = 2\n[cmd_args]\n'
        'metric_name = ["bw", "speed"]\n[cmd_args.args]\nbs = []\niodepth = { low = 8, high = 2 }\n'
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "b"\n')
    result = invoke(["verify-configs", "--tests-dir", str(tests), str(tmp_path / "s.toml")])
    assert result.exit_code == 2
    assert "cmd_args.args.bs: empty list" in result.output
    assert "cmd_args.args.iodepth: low (8) must be less than high (2)" in result.output
    (tests / "b.toml").write_text((tests / "b.toml").read_text().replace("bs = []", 'bs = "4k"').replace("8", "1"))
    result = invoke(["verify-configs", "--tests-dir", str(tests), str(tmp_path / "s.toml")])
    assert result.exit_code == 2
    assert 'cmd_args.metric_name: "speed" is not one of "bw"' in result.output
