"""`grse train`'s option groups: what each turns into in the run's config, how they merge over
the TOML's [train] table, the one-line refusal of a GRSE flag under another method, and the
option-group mechanism that hands the groups' flags to Typer in the order --help lists them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import typer
from pydantic import Field
from typer.testing import CliRunner

from grse_graph.checkpointing import CheckpointerSpec
from grse_graph.cli.option_groups import OptionGroup, typer_command
from grse_graph.cli.train_options import (
    EngineOptions,
    GateOptions,
    GrseOptions,
    LibraryOptions,
    LoopOptions,
    OutputOptions,
    PaperModeOptions,
    ProbeOptions,
    TaskOptions,
    read_train_table,
)
from grse_graph.cli.train_setup import TrainOptions
from grse_graph.errors import ConfigError
from grse_graph.methods.grse.method import GrseSettings
from grse_graph.tasks.protocol import protocol_defaults
from grse_graph.training.config import TrainConfig
from grse_graph.training.session import load_training_task

HELP_ORDER = [
    *("task", "data", "method", "topology", "tool_protocol", "category"),
    *("iterations", "batch_size", "validation_size", "validation_repeats", "library_limit"),
    *("concurrency", "seed", "skill_mode", "init_library", "init_pack", "delta", "review"),
    *("probe_credit", "probe_questions", "probe_budget", "probe_confidence"),
    *("group_size", "no_structure", "dapo_filter", "with_labels", "no_first_agent_n"),
    *("paper_mode", "out", "resume", "export", "bookkeeping", "config", "model", "checkpointer"),
]
"""Every `grse train` flag's parameter name, in the order `--help` has always listed them."""


def _toml(tmp_path: Path, train: str) -> Path:
    path = tmp_path / "grse.toml"
    path.write_text('[actor]\nmodel = "fake"\n[train]\n' + train, encoding="utf-8")
    return path


def _refusal(options: TrainOptions) -> str:
    with pytest.raises(ConfigError) as refused:
        options.new_run_config()
    message = str(refused.value)
    assert "\n" not in message
    return message


# -- each group's settings ---------------------------------------------------------------------


def test_groups_give_only_the_flags_that_were_given() -> None:
    for group in (
        TaskOptions(),
        LoopOptions(),
        LibraryOptions(),
        GateOptions(),
        ProbeOptions(),
        GrseOptions(),
        PaperModeOptions(),
    ):
        assert group.settings({}) == {}, type(group).__name__


def test_task_options_name_what_is_trained() -> None:
    task = TaskOptions(task="locomo", data="d.json", category="temporal", topology="hybrid")
    assert task.settings({}) == {
        "task": "locomo",
        "data": "d.json",
        "category": "temporal",
        "topology": "hybrid",
    }
    assert TaskOptions(tool_protocol="text").settings({}) == {"tool_protocol": "text"}


def test_method_keeps_the_tomls_section_when_it_names_the_same_method() -> None:
    section = {"method": {"name": "maskills", "utility_keep": 0.5}}
    assert TaskOptions(method="maskills").settings(section) == {}
    assert TaskOptions(method="grse").settings(section) == {"method": "grse"}
    # A section without a name is GRSE's.
    assert TaskOptions(method="grse").settings({"method": {"group_size": 2}}) == {}
    assert TaskOptions(method="skillmas").settings({"method": "grse"}) == {"method": "skillmas"}


def test_an_unknown_method_is_refused_naming_the_known_ones() -> None:
    TaskOptions(method="skillmas").check_method()
    with pytest.raises(ConfigError, match=r"unknown training method 'nosuch' \(known: grse"):
        TaskOptions(method="nosuch").check_method()


def test_loop_options_are_the_settings_of_their_names() -> None:
    loop = LoopOptions(
        iterations=2,
        batch_size=3,
        validation_size=4,
        validation_repeats=2,
        library_limit=5,
        concurrency=1,
        seed=0,
    )
    assert loop.settings({}) == {
        "iterations": 2,
        "batch_size": 3,
        "validation_size": 4,
        "validation_repeats": 2,
        "library_limit": 5,
        "concurrency": 1,
        "seed": 0,
    }


def test_switches_left_off_leave_the_tomls_value() -> None:
    assert GateOptions(delta=0.1).settings({}) == {"delta": 0.1}
    assert GateOptions(review=True).settings({}) == {"review": True}
    assert PaperModeOptions(paper_mode=True).settings({}) == {"paper_mode": True}
    assert LibraryOptions(skill_mode="path").settings({}) == {"skill_mode": "path"}


def test_probe_options_give_the_probe_section() -> None:
    assert ProbeOptions(probe_credit=True).settings({}) == {"probe": {}}
    assert ProbeOptions(probe_questions=4).settings({"probe": {"budget": 60}}) == {
        "probe": {"budget": 60, "questions": 4}
    }
    with pytest.raises(ConfigError, match="only with --probe-credit"):
        ProbeOptions(probe_budget=10).settings({})


def test_grse_options_feed_grses_section_and_the_first_agents_call() -> None:
    grse = GrseOptions(
        group_size=2, no_structure=True, dapo_filter=True, with_labels=True, no_first_agent_n=True
    )
    knobs = {"group_size": 2, "structured": False, "dapo_filter": True, "with_labels": True}
    assert grse.section_knobs() == knobs
    assert grse.settings({}) == {**knobs, "first_agent_n": False}
    config = TrainOptions(task=TaskOptions(task="demo"), grse=grse).new_run_config()
    assert config.method == GrseSettings(**knobs)
    assert config.first_agent_n is False


def test_output_options_check_the_pack_before_training(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--no-bookkeeping: only with --export PACK"):
        OutputOptions(bookkeeping=False).check()
    OutputOptions(export=tmp_path / "pack", bookkeeping=False).check()
    assert OutputOptions(out=tmp_path / "run").run_folder("demo").path == tmp_path / "run"
    assert OutputOptions().run_folder("demo").path.name.startswith("demo-")


def test_engine_options_read_the_toml_and_the_model(tmp_path: Path) -> None:
    config = _toml(tmp_path, 'task = "demo"\niterations = 2\n')
    engine = EngineOptions(config=config, model="small", checkpointer="sqlite")
    assert engine.train_table() == {"task": "demo", "iterations": 2}
    assert engine.origin() == str(config)
    assert engine.llm_config().engine.model == "small"
    assert engine.checkpointer_spec() == CheckpointerSpec()
    assert EngineOptions().train_table() == {}
    assert EngineOptions().origin() == "flags"
    assert EngineOptions().checkpointer_spec() is None


def test_a_file_of_bare_training_keys_reads_as_the_train_table(tmp_path: Path) -> None:
    bare = tmp_path / "train.toml"
    bare.write_text('task = "demo"\n[actor]\nmodel = "fake"\n', encoding="utf-8")
    assert read_train_table(bare) == {"task": "demo"}
    with pytest.raises(ConfigError, match="config file not found"):
        read_train_table(tmp_path / "none.toml")


def test_starting_libraries_are_checked_against_the_tasks_team(tmp_path: Path) -> None:
    config = TrainConfig(task="demo")
    task = load_training_task(config)
    assert LibraryOptions().with_starting_libraries(config, task) is config
    library = tmp_path / "reasoner"
    library.mkdir()
    started = LibraryOptions(init_library=[f"reasoner={library}"])
    assert started.with_starting_libraries(config, task).init_libraries == {
        "reasoner": str(library.resolve())
    }
    stranger = LibraryOptions(init_library=[f"nobody={library}"])
    with pytest.raises(ConfigError, match="agent 'nobody' is not in the team"):
        stranger.with_starting_libraries(config, task)


# -- the merge -----------------------------------------------------------------------------------


def test_flags_override_the_toml_over_the_tasks_protocol_values(tmp_path: Path) -> None:
    toml = _toml(tmp_path, 'task = "demo"\niterations = 3\ndelta = 0.05\n')
    options = TrainOptions(
        loop=LoopOptions(iterations=2),
        gate=GateOptions(review=True),
        engine=EngineOptions(config=toml),
    )
    config = options.new_run_config()
    assert (config.task, config.iterations, config.delta, config.review) == ("demo", 2, 0.05, True)
    # Neither gives the library limit: the task's protocol value stands.
    assert config.library_limit == protocol_defaults("demo").library_limit


def test_every_group_that_gives_settings_is_merged() -> None:
    names = [type(group).__name__ for group in TrainOptions().settings_groups()]
    assert names == [
        "TaskOptions",
        "LoopOptions",
        "LibraryOptions",
        "GateOptions",
        "ProbeOptions",
        "GrseOptions",
        "PaperModeOptions",
    ]


def test_a_new_run_needs_a_task() -> None:
    assert _refusal(TrainOptions()) == "grse train: --task is required (or task in --config)"


@pytest.mark.parametrize(
    ("method", "grse", "expected"),
    [
        (
            "maskills",
            GrseOptions(group_size=2),
            "method.maskills.group_size: Extra inputs are not permitted (got 2)",
        ),
        (
            "skillmas",
            GrseOptions(no_structure=True),
            "method.skillmas.structured: Extra inputs are not permitted (got False)",
        ),
        (
            "maskills",
            GrseOptions(with_labels=True),
            "method.maskills.with_labels: Extra inputs are not permitted (got True)",
        ),
    ],
)
def test_a_grse_flag_under_another_method_is_refused_in_one_line(
    method: str, grse: GrseOptions, expected: str
) -> None:
    options = TrainOptions(task=TaskOptions(task="demo", method=method), grse=grse)
    assert _refusal(options) == f"flags: {expected}"


def test_a_grse_flag_under_the_tomls_method_names_the_toml(tmp_path: Path) -> None:
    toml = _toml(tmp_path, 'task = "demo"\nmethod = "skillmas"\n')
    options = TrainOptions(grse=GrseOptions(dapo_filter=True), engine=EngineOptions(config=toml))
    assert _refusal(options) == (
        f"{toml}: method.skillmas.dapo_filter: Extra inputs are not permitted (got True)"
    )


def test_the_first_agents_call_is_refused_where_no_group_shares_it() -> None:
    options = TrainOptions(
        task=TaskOptions(task="demo", method="maskills"), grse=GrseOptions(no_first_agent_n=True)
    )
    assert _refusal(options) == (
        "method maskills does not read setting 'first_agent_n' (remove --no-first-agent-n)"
    )


def test_prepare_checks_a_new_run_without_an_engine(tmp_path: Path) -> None:
    options = TrainOptions(
        task=TaskOptions(task="demo"), output=OutputOptions(out=tmp_path / "run")
    )
    prepared = options.prepare()
    assert prepared.run.path == tmp_path / "run" and not prepared.resumed
    assert prepared.task.name == "demo" and prepared.config.task == "demo"
    assert not (tmp_path / "run").exists()


# -- option groups as Typer options ----------------------------------------------------------


class Greeting(OptionGroup):
    """Who is greeted and how."""

    name: Annotated[str, typer.Option(help="who")] = "world"
    loud: Annotated[bool, typer.Option("--loud", help="shout")] = False


class Greetings(OptionGroup):
    """A greeting, repeated."""

    greeting: Greeting = Field(default_factory=Greeting)
    times: Annotated[int, typer.Option(help="how often")] = 1


def greet(options: Greetings, end: Annotated[str, typer.Option(help="last mark")] = ".") -> None:
    """Say hello."""
    text = f"hello {options.greeting.name}{end}"
    typer.echo(" ".join([text.upper() if options.greeting.loud else text] * options.times))


def test_a_command_takes_its_groups_built_from_the_flags() -> None:
    app = typer.Typer()
    app.command()(typer_command(greet))
    result = CliRunner().invoke(app, ["--name", "you", "--loud", "--times", "2", "--end", "!"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "HELLO YOU! HELLO YOU!"
    assert CliRunner().invoke(app, []).stdout.strip() == "hello world."
    help_text = CliRunner().invoke(app, ["--help"], terminal_width=200).stdout
    assert "Say hello." in help_text
    assert help_text.index("--name") < help_text.index("--loud") < help_text.index("--times")


class Again(OptionGroup):
    """A second group with a flag the first already has."""

    name: Annotated[str, typer.Option(help="who, again")] = "x"


class Untyped(OptionGroup):
    """A field without its typer.Option."""

    name: str = "x"


def twice(first: Greeting, second: Again) -> None:
    """Two groups, one flag name."""


def untyped(options: Untyped) -> None:
    """A group whose field is no option."""


def test_a_flag_two_groups_share_or_a_field_without_an_option_is_refused() -> None:
    with pytest.raises(ValueError, match="duplicate parameter name: 'name'"):
        typer_command(twice)
    with pytest.raises(TypeError, match=r"needs exactly one typer\.Option"):
        typer_command(untyped)


def test_train_lists_its_flags_in_the_order_help_always_had() -> None:
    assert [p.name for p in TrainOptions.cli_parameters()] == HELP_ORDER
    values = {p.name: p.default for p in TrainOptions.cli_parameters()}
    assert TrainOptions.from_flags(values) == TrainOptions()
    assert TrainOptions.from_flags({**values, "seed": 3}).loop == LoopOptions(seed=3)
