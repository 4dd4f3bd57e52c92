"""`grse demo`'s probe sizes: they shrink the repair's probe and nothing else, and are refused
(a usage error, before any engine starts) where there is no probe to size."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.cli.train_cmd import _demo_config
from grse_graph.tasks.planted import demo_planted

LOOP = {"iterations": 1, "batch_size": 1, "test_limit": 2}


def test_probe_sizes_shrink_the_repair_s_probe_only() -> None:
    planted = demo_planted()
    default, _ = _demo_config(planted, probe=True, **LOOP)
    sized, limit = _demo_config(
        planted, probe=True, probe_sizes={"questions": 2, "budget": 10}, **LOOP
    )
    assert default.probe is not None and sized.probe is not None
    assert (sized.probe.questions, sized.probe.budget) == (2, 10)
    assert (default.probe.questions, default.probe.budget) == (24, 120)
    unchanged = {"questions", "budget"}
    assert sized.probe.model_dump(exclude=unchanged) == default.probe.model_dump(exclude=unchanged)
    assert sized.model_dump(exclude={"probe"}) == default.model_dump(exclude={"probe"})
    assert limit == 2


@pytest.mark.parametrize("probe, from_empty", [(False, False), (True, True)])
def test_probe_sizes_without_a_probe_are_refused(probe: bool, from_empty: bool) -> None:
    planted = None if from_empty else demo_planted()
    with pytest.raises(typer.BadParameter, match="size the repair's probe"):
        _demo_config(planted, probe=probe, probe_sizes={"budget": 10}, **LOOP)


def test_the_command_refuses_them_with_no_probe_before_starting_anything() -> None:
    result = CliRunner().invoke(build_app(), ["demo", "--no-probe", "--probe-budget", "10"])
    assert result.exit_code == 2
    assert "size the repair's probe" in result.output


@pytest.mark.parametrize("flag, value", [("--probe-questions", "1"), ("--probe-budget", "1")])
def test_a_probe_too_small_to_read_is_a_usage_error(flag: str, value: str) -> None:
    # A bootstrap over questions needs two of them; a probe needs a full and a masked run.
    result = CliRunner().invoke(build_app(), ["demo", flag, value])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert flag in result.output
